// Command go is the Go worker for the word-counts example's `segment-word-counts` step,
// built on goworker. It serves the queue $QUEUE (default segment-word-counts) on the broker
// at $AMQP_URL, and drains and exits on SIGTERM or SIGINT.
//
//	AMQP_URL=amqp://guest:guest@localhost:5672/ QUEUE=segment-word-counts go run .
package main

import (
	"context"
	"fmt"
	"os"

	"workflow-manager/goworker"
)

func main() {
	queue := os.Getenv("QUEUE")
	if queue == "" {
		queue = "segment-word-counts"
	}
	w := goworker.New(goworker.Options{Prefetch: 10})
	w.Step(queue, func(_ context.Context, data map[string]any, _ goworker.StepInfo) (map[string]any, error) {
		return segmentWordCounts(data)
	})
	go func() {
		<-w.Ready()
		fmt.Printf("[segment-word-counts] listening on %s\n", queue)
	}()
	if err := w.Run(context.Background()); err != nil {
		fmt.Fprintf(os.Stderr, "[segment-word-counts] %v\n", err)
		os.Exit(1)
	}
}
