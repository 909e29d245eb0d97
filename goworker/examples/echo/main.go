// Command echo is the conformance "echo" worker: it serves the queue named by $QUEUE on the
// broker at $AMQP_URL, replies with its input unchanged, and fails with "asked to fail" when
// the input has "fail": true. It drains and exits 0 on SIGTERM or SIGINT.
//
//	QUEUE=echo go run ./examples/echo
package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"workflow-manager/goworker"
)

func main() {
	queue := os.Getenv("QUEUE")
	if queue == "" {
		fmt.Fprintln(os.Stderr, "echo: set QUEUE to the queue to serve, e.g. QUEUE=echo")
		os.Exit(2)
	}
	// UseNumber: numbers are echoed exactly as they came, big integers included.
	w := goworker.New(goworker.Options{UseNumber: true})
	w.Step(queue, echo)
	go func() {
		<-w.Ready()
		fmt.Printf("listening on %s\n", queue)
	}()
	if err := w.Run(context.Background()); err != nil {
		fmt.Fprintf(os.Stderr, "echo: %v\n", err)
		os.Exit(1)
	}
}

// echo replies with the input itself, or fails when asked to.
func echo(_ context.Context, data map[string]any, _ goworker.StepInfo) (map[string]any, error) {
	if fail, _ := data["fail"].(bool); fail {
		return nil, errors.New("asked to fail")
	}
	return data, nil
}
