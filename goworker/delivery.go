package goworker

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// refusedReplyDelay is waited before requeueing a request whose reply the broker refused
// (nacked), so a persistent refusal does not become a hot redelivery loop.
const refusedReplyDelay = time.Second

// Handler does one step: it gets the request's JSON object and returns the reply's JSON object
// (nil means {}), or an error, which becomes an x-error reply. ctx is cancelled only when a
// stop gives up waiting (Options.StopTimeout) or the process is signalled twice.
type Handler func(ctx context.Context, data map[string]any, info StepInfo) (map[string]any, error)

// outcome runs the handler and decides the reply: the one place where "returned, failed or
// panicked" becomes what is sent.
func (w *Worker) outcome(ctx context.Context, handler Handler, d amqp.Delivery, info StepInfo) reply {
	started := time.Now()
	patch := map[string]any{}
	ctx = context.WithValue(ctx, metaPatchKey{}, patch)
	result, err := w.invoke(ctx, handler, d.Body, info)
	var r reply
	var body []byte
	if err == nil {
		body, err = w.settings.payloads.replyBody(ctx, result, info.CorrelationID)
	}
	if err == nil {
		r, err = successReply(body, info.Attempt, patch)
	}
	if err != nil {
		r = errorReply(err, info.Attempt)
		var panicked *PanicError
		if errors.As(err, &panicked) {
			w.logf("%s failed: %s\n%s", info.LogFields(), r.headers[HeaderError], panicked.Stack)
		} else {
			w.logf("%s failed: %s", info.LogFields(), r.headers[HeaderError])
		}
		return r
	}
	w.logf("%s done in %.3fs", info.LogFields(), time.Since(started).Seconds())
	return r
}

// invoke decodes the body, resolves its references (when x-payload-refs says it has some) and
// calls the handler, turning a panic into a PanicError.
func (w *Worker) invoke(ctx context.Context, handler Handler, body []byte, info StepInfo) (result map[string]any, err error) {
	data, err := decodeRequest(body, w.settings.useNumber)
	if err != nil {
		return nil, err
	}
	if _, hasRefs := info.Headers[HeaderPayloadRefs]; hasRefs {
		if err := w.settings.payloads.resolve(ctx, data, w.settings.useNumber); err != nil {
			return nil, err
		}
	}
	defer func() {
		if value := recover(); value != nil {
			result, err = nil, &PanicError{Value: value, Stack: debug.Stack()}
		}
	}()
	return handler(ctx, data, info)
}

// handleDelivery answers one request: run the handler, publish the reply to reply_to, wait for
// the broker's confirm, and only then ack. A reply that cannot be sent leaves the request
// unacked (it is redelivered when the channel closes); a nacked reply requeues it.
func (w *Worker) handleDelivery(ctx context.Context, s *session, handler Handler, d amqp.Delivery, queue string) {
	info := stepInfoOf(d, queue)
	if d.ReplyTo == "" {
		w.logf("%s request has no reply_to; nothing to answer, acking it", info.LogFields())
		w.settle(s, d, info, true)
		return
	}
	r := w.outcome(ctx, handler, d, info)
	confirmed, err := s.publishConfirmed(d.ReplyTo, amqp.Publishing{
		ContentType:   ContentType,
		DeliveryMode:  amqp.Persistent,
		CorrelationId: d.CorrelationId,
		Headers:       amqp.Table(r.headers),
		Body:          r.body,
	})
	switch {
	case err != nil:
		if !s.isLost() { // during an outage the one outage line says it all
			w.logf("%s reply not sent (%v); the request will be redelivered", info.LogFields(), err)
		}
		return
	case !confirmed:
		w.logf("%s broker refused the reply to %q; requeueing the request in %s",
			info.LogFields(), d.ReplyTo, refusedReplyDelay)
		time.Sleep(refusedReplyDelay)
		w.settle(s, d, info, false)
		return
	}
	w.settle(s, d, info, true)
}

// settle acks (or nacks with requeue) a request; a closed channel has requeued it already.
func (w *Worker) settle(s *session, d amqp.Delivery, info StepInfo, ack bool) {
	var err error
	if ack {
		err = d.Ack(false)
	} else {
		err = d.Nack(false, true)
	}
	if err != nil && !s.isLost() {
		w.logf("%s could not settle the request (%v); it will be redelivered", info.LogFields(), err)
	}
}

// logf writes one log line.
func (w *Worker) logf(format string, args ...any) {
	w.settings.logger.Output(2, fmt.Sprintf(format, args...)) //nolint:errcheck // best effort
}
