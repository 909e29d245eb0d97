// Package goworker serves workflow-manager steps from Go: it consumes each step's queue on
// RabbitMQ, runs the step's handler on the request's JSON object, publishes the reply (or an
// x-error reply) to the request's reply_to with publisher confirms, and acks the request only
// once the broker has confirmed the reply. See docs/protocol.md for the wire protocol.
//
// With payload stores configured (Options.PayloadStores, $WM_PAYLOAD_STORES) it also resolves
// the payload references in a request before the handler sees it, and stores a large reply's
// top-level values by reference (docs/protocol.md, "Payloads by reference").
//
//	w := goworker.New(goworker.Options{Prefetch: 4})
//	w.Step("greet", func(ctx context.Context, data map[string]any, info goworker.StepInfo) (map[string]any, error) {
//		return map[string]any{"greeting": fmt.Sprintf("hello %v", data["name"])}, nil
//	})
//	if err := w.Run(context.Background()); err != nil {
//		log.Fatal(err)
//	}
package goworker
