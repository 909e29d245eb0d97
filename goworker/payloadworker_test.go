package goworker

import (
	"context"
	"strings"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"
)

func TestWorkerResolvesRequestsAndOffloadsReplies(t *testing.T) {
	url := brokerURL(t)
	queue := uniqueName("gw-refs")
	c := newClient(t, url, queue)
	dir := t.TempDir()
	w, logs := newTestWorker(url, Options{PayloadStores: "main=file://" + dir, PayloadRefThreshold: 4096})
	seen := make(chan map[string]any, 1)
	w.Step(queue, func(_ context.Context, data map[string]any, _ StepInfo) (map[string]any, error) {
		seen <- data
		return data, nil
	})
	startWorker(t, w, logs)

	store := &fileStore{name: "main", dir: dir}
	value := []byte(`"` + strings.Repeat("x", 10000) + `"`)
	ref := refTo("main", "3f2a9c4e", value)
	if err := store.put(context.Background(), ref, value); err != nil {
		t.Fatal(err)
	}
	body, _ := encodeJSON(map[string]any{"data": ref.object(), "n": 1})
	c.send(queue, "3f2a9c4e:echo", string(body), amqp.Table{HeaderPayloadRefs: int32(1)})
	d, reply := c.replyBody()
	if data := <-seen; data["data"] != strings.Repeat("x", 10000) {
		t.Errorf("the handler saw %.80v", data["data"])
	}
	if got, ok := asRef(reply["data"]); !ok || got != ref || reply["n"] != 1.0 {
		t.Errorf("reply %s", d.Body)
	}
	if parseAttempt(d.Headers[HeaderPayloadRefs]) != 1 || d.Headers[HeaderError] != nil {
		t.Errorf("headers %v", d.Headers)
	}

	missing := refTo("main", "3f2a9c4e", []byte(`"absent"`))
	body, _ = encodeJSON(map[string]any{"data": missing.object()})
	c.send(queue, "3f2a9c4e:echo", string(body), amqp.Table{HeaderPayloadRefs: int32(1)})
	d = c.reply()
	want := "PayloadRefError: " + missing.URI() + ": not found in file://" + dir
	if d.Headers[HeaderError] != want || d.Headers[HeaderErrorType] != "PayloadRefError" {
		t.Errorf("headers %v; want x-error %q", d.Headers, want)
	}
	if n := c.messages(queue); n != 0 {
		t.Errorf("%d request(s) back in the queue; the failed request was not acked", n)
	}
}
