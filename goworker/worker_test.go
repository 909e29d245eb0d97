package goworker

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

func TestReplyCarriesTheProtocolFields(t *testing.T) {
	url := brokerURL(t)
	queue := uniqueName("gw-reply")
	c := newClient(t, url, queue)
	w, logs := newTestWorker(url, Options{})
	w.Step(queue, func(_ context.Context, data map[string]any, _ StepInfo) (map[string]any, error) {
		return map[string]any{"greeting": "hello " + data["name"].(string)}, nil
	})
	startWorker(t, w, logs)

	c.send(queue, "job-1:greet", `{"name": "Zoë"}`, amqp.Table{"x-attempt": int32(2)})
	d, body := c.replyBody()
	if body["greeting"] != "hello Zoë" {
		t.Errorf("body %v", body)
	}
	if d.CorrelationId != "job-1:greet" || d.ContentType != ContentType || d.DeliveryMode != amqp.Persistent {
		t.Errorf("properties: correlation_id=%q content_type=%q delivery_mode=%d",
			d.CorrelationId, d.ContentType, d.DeliveryMode)
	}
	if parseAttempt(d.Headers[HeaderAttempt]) != 2 || d.Headers[HeaderError] != nil {
		t.Errorf("headers %v", d.Headers)
	}
	if n := c.messages(queue); n != 0 {
		t.Errorf("%d request(s) back in the queue; the request was not acked", n)
	}
}

func TestNackedReplyLeavesTheRequestUnacked(t *testing.T) {
	// A reply queue that refuses every message: the broker nacks the reply, so the worker must
	// not ack the request (the ack waits for the confirm); it requeues it instead.
	url := brokerURL(t)
	queue := uniqueName("gw-nacked")
	c := newClient(t, url, queue)
	full := uniqueName("gw-full")
	args := amqp.Table{"x-max-length": int32(0), "x-overflow": "reject-publish"}
	if _, err := c.ch.QueueDeclare(full, false, true, false, false, args); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.ch.QueueDelete(full, false, false, false) }) //nolint:errcheck
	deliveries := make(chan StepInfo, 10)
	w, logs := newTestWorker(url, Options{})
	w.Step(queue, func(_ context.Context, _ map[string]any, info StepInfo) (map[string]any, error) {
		deliveries <- info
		return nil, nil
	})
	startWorker(t, w, logs)

	err := c.ch.PublishWithContext(context.Background(), "", queue, false, false, amqp.Publishing{
		CorrelationId: "job:s", ReplyTo: full, Body: []byte(`{}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, wantRedelivered := range []bool{false, true} {
		select {
		case info := <-deliveries:
			if info.Redelivered != wantRedelivered {
				t.Errorf("delivery %d: redelivered=%v", i+1, info.Redelivered)
			}
		case <-time.After(waitFor):
			t.Fatalf("delivery %d not seen; logs:\n%s", i+1, logs)
		}
	}
	if !strings.Contains(logs.String(), "broker refused the reply") {
		t.Errorf("no refusal logged:\n%s", logs)
	}
}

func TestFailuresBecomeErrorReplies(t *testing.T) {
	url := brokerURL(t)
	queue := uniqueName("gw-errors")
	c := newClient(t, url, queue)
	w, logs := newTestWorker(url, Options{})
	w.Step(queue, func(_ context.Context, data map[string]any, _ StepInfo) (map[string]any, error) {
		switch data["do"] {
		case "error":
			return nil, errors.New("boom")
		case "fail":
			return nil, Fail("NotFound", "no book %q", "x")
		case "panic":
			panic("kaboom")
		case "unencodable":
			return map[string]any{"x": func() {}}, nil
		}
		return data, nil
	})
	startWorker(t, w, logs)

	cases := []struct{ body, wantType, wantError string }{
		{`{"do": "error"}`, "Error", "Error: boom"},
		{`{"do": "fail"}`, "NotFound", `NotFound: no book "x"`},
		{`{"do": "panic"}`, "Panic", "Panic: kaboom"},
		{`{"do": "unencodable"}`, "InvalidResult", "InvalidResult: a step's result is not JSON-serialisable"},
		{`[1, 2]`, "InvalidRequest", "InvalidRequest: request body must be a JSON object, got a list"},
		{`{"do":`, "InvalidRequest", "InvalidRequest: request body is not valid JSON"},
	}
	for i, tc := range cases {
		c.send(queue, "job:s", tc.body, amqp.Table{"x-attempt": int32(i + 1)})
		d, body := c.replyBody()
		if d.Headers[HeaderErrorType] != tc.wantType ||
			!strings.HasPrefix(headerText(d.Headers[HeaderError]), tc.wantError) {
			t.Errorf("%s: x-error-type=%v x-error=%v", tc.body, d.Headers[HeaderErrorType], d.Headers[HeaderError])
		}
		if parseAttempt(d.Headers[HeaderAttempt]) != i+1 || d.CorrelationId != "job:s" {
			t.Errorf("%s: x-attempt=%v correlation_id=%q", tc.body, d.Headers[HeaderAttempt], d.CorrelationId)
		}
		detail, _ := body["error"].(map[string]any)
		if detail["type"] != tc.wantType || detail["message"] != d.Headers[HeaderError] {
			t.Errorf("%s: body %v", tc.body, body)
		}
	}
	if n := c.messages(queue); n != 0 {
		t.Errorf("%d failed request(s) requeued; failures must be answered and acked", n)
	}
}

func TestStepInfoFromTheRequest(t *testing.T) {
	url := brokerURL(t)
	prefix := uniqueName("gw-info") + "."
	queue := prefix + "count"
	c := newClient(t, url, queue)
	infos := make(chan StepInfo, 2)
	w, logs := newTestWorker(url, Options{QueuePrefix: prefix})
	w.Step("count", func(_ context.Context, _ map[string]any, info StepInfo) (map[string]any, error) {
		infos <- info
		return nil, nil
	})
	startWorker(t, w, logs)

	job := "3f2a9c4e-8b1d-4e0f-9a6b-2c7d5e1f0a93"
	traceparent := "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	err := c.ch.PublishWithContext(context.Background(), "", queue, false, false, amqp.Publishing{
		CorrelationId: job + ":segment-word-counts", ReplyTo: c.replyTo,
		MessageId: job + ":segment-word-counts:3", Body: []byte(`{}`),
		Headers: amqp.Table{
			"x-attempt": int32(3), "x-workflow": "book-word-counts", "traceparent": traceparent,
			"x-meta": `{"tenant": "acme"}`, "x-unknown": "kept",
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	c.reply()
	c.send(queue, "no-colon", `{}`, nil)
	c.reply()

	info := <-infos
	want := StepInfo{
		JobID: job, Step: "segment-word-counts", Attempt: 3, CorrelationID: job + ":segment-word-counts",
		Workflow: "book-word-counts", MessageID: job + ":segment-word-counts:3", Queue: queue,
		Traceparent: traceparent,
	}
	info.Headers, info.Meta = nil, map[string]any{"tenant": info.Meta["tenant"]}
	if info.JobID != want.JobID || info.Step != want.Step || info.Attempt != want.Attempt ||
		info.CorrelationID != want.CorrelationID || info.Workflow != want.Workflow ||
		info.MessageID != want.MessageID || info.Queue != want.Queue ||
		info.Traceparent != want.Traceparent || info.Meta["tenant"] != "acme" || info.Redelivered {
		t.Errorf("got %+v\nwant %+v", info, want)
	}
	bare := <-infos
	if bare.JobID != "no-colon" || bare.Step != queue || bare.Attempt != 1 || bare.Workflow != "" ||
		bare.Meta != nil || bare.Traceparent != "" || bare.LogFields() != "job=no-colon step="+queue+" attempt=1" {
		t.Errorf("defaults: %+v", bare)
	}
}

func TestRunRefusesBadSetUps(t *testing.T) {
	handler := func(context.Context, map[string]any, StepInfo) (map[string]any, error) { return nil, nil }
	cases := []struct {
		name  string
		setUp func(w *Worker)
		url   string
		check func(error) bool
		want  string
	}{
		{"no steps", func(*Worker) {}, "", isStepDefinitionError, "no steps registered"},
		{"twice", func(w *Worker) { w.Step("a", handler); w.Step("a", handler) }, "", isStepDefinitionError, `"a" is registered twice`},
		{"reserved", func(w *Worker) { w.Step("amq.x", handler) }, "", isStepDefinitionError, "reserved"},
		{"nil handler", func(w *Worker) { w.Step("a", nil) }, "", isStepDefinitionError, "nil"},
		{"bad url", func(w *Worker) { w.Step("a", handler) }, "http://u:secret@h/", isSettingsError, "not an AMQP URL"},
		{"no broker", func(w *Worker) { w.Step("a", handler) }, "amqp://u:secret@" + closedPort(t) + "/", isBrokerError, "cannot start on RabbitMQ"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := New(Options{URL: tc.url, IgnoreSignals: true, Getenv: func(string) string { return "" }})
			tc.setUp(w)
			ctx, cancel := context.WithTimeout(context.Background(), waitFor)
			defer cancel()
			err := w.Run(ctx)
			if err == nil || !tc.check(err) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want an error containing %q, got %T %v", tc.want, err, err)
			}
			if strings.Contains(err.Error(), "secret") {
				t.Errorf("the password leaked: %v", err)
			}
		})
	}
}

func isStepDefinitionError(err error) bool {
	var target *StepDefinitionError
	return errors.As(err, &target)
}

func isSettingsError(err error) bool {
	var target *SettingsError
	return errors.As(err, &target)
}

func isBrokerError(err error) bool {
	var target *BrokerError
	return errors.As(err, &target)
}
