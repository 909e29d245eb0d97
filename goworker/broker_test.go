package goworker

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"log"
	"net"
	"os"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// Helpers for the tests against the real RabbitMQ ($AMQP_URL, default localhost). Without a
// broker the tests skip, unless $CI is set: then they fail.

const waitFor = 10 * time.Second

func brokerURL(t *testing.T) string {
	t.Helper()
	url := os.Getenv("AMQP_URL")
	if url == "" {
		url = DefaultURL
	}
	if !portOpen(url) {
		if os.Getenv("CI") != "" {
			t.Fatalf("RabbitMQ is not reachable at %s", MaskURL(url))
		}
		t.Skipf("RabbitMQ is not reachable at %s", MaskURL(url))
	}
	return url
}

func uniqueName(prefix string) string {
	b := make([]byte, 6)
	rand.Read(b) //nolint:errcheck // crypto/rand does not fail on Linux
	return prefix + "-" + hex.EncodeToString(b)
}

// lockedBuffer collects log lines from several goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *lockedBuffer) count(substr string) int { return strings.Count(b.String(), substr) }

// client is the test's own connection: it sends requests and reads replies.
type client struct {
	t       *testing.T
	ch      *amqp.Channel
	replyTo string
	replies <-chan amqp.Delivery
}

// newClient connects, declares the step queues and a reply queue; all deleted after the test.
func newClient(t *testing.T, url string, queues ...string) *client {
	t.Helper()
	conn, err := amqp.Dial(url)
	if err != nil {
		t.Fatalf("test client cannot connect: %v", err)
	}
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	replyTo := uniqueName("gw-test-replies")
	for _, q := range append([]string{replyTo}, queues...) {
		if _, err := ch.QueueDeclare(q, true, false, false, false, nil); err != nil {
			t.Fatal(err)
		}
	}
	replies, err := ch.Consume(replyTo, "", true, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, q := range append([]string{replyTo}, queues...) {
			ch.QueueDelete(q, false, false, false) //nolint:errcheck // best-effort clean-up
		}
		conn.Close()
	})
	return &client{t: t, ch: ch, replyTo: replyTo, replies: replies}
}

// send publishes a request to queue with the given body and headers.
func (c *client) send(queue, correlationID string, body string, headers amqp.Table) {
	c.t.Helper()
	err := c.ch.PublishWithContext(context.Background(), "", queue, false, false, amqp.Publishing{
		ContentType: ContentType, DeliveryMode: amqp.Persistent, CorrelationId: correlationID,
		ReplyTo: c.replyTo, Headers: headers, Body: []byte(body),
	})
	if err != nil {
		c.t.Fatal(err)
	}
}

// reply waits for the next reply.
func (c *client) reply() amqp.Delivery {
	c.t.Helper()
	select {
	case d := <-c.replies:
		return d
	case <-time.After(waitFor):
		c.t.Fatalf("no reply within %s", waitFor)
	}
	return amqp.Delivery{}
}

// replyBody waits for the next reply and decodes its body.
func (c *client) replyBody() (amqp.Delivery, map[string]any) {
	c.t.Helper()
	d := c.reply()
	var body map[string]any
	if err := json.Unmarshal(d.Body, &body); err != nil {
		c.t.Fatalf("reply body %q is not a JSON object: %v", d.Body, err)
	}
	return d, body
}

// messages is how many requests wait in queue (ready ones; unacked ones are not counted).
func (c *client) messages(queue string) int {
	c.t.Helper()
	q, err := c.ch.QueueInspect(queue)
	if err != nil {
		c.t.Fatal(err)
	}
	return q.Messages
}

// running is a worker started by a test.
type running struct {
	w      *Worker
	logs   *lockedBuffer
	cancel context.CancelFunc
	done   chan error
}

// startWorker runs w until the test ends (or stop is called) and waits until it consumes.
func startWorker(t *testing.T, w *Worker, logs *lockedBuffer) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{w: w, logs: logs, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- w.Run(ctx) }()
	t.Cleanup(func() { r.stop(t) })
	select {
	case <-w.Ready():
	case err := <-r.done:
		r.done <- err
		t.Fatalf("worker did not start: %v", err)
	case <-time.After(waitFor):
		t.Fatalf("worker not consuming within %s", waitFor)
	}
	return r
}

// stop cancels the worker's context and waits for Run to return nil.
func (r *running) stop(t *testing.T) {
	t.Helper()
	r.cancel()
	select {
	case err, ok := <-r.done:
		if ok && err != nil {
			t.Errorf("Run returned %v", err)
		}
		close(r.done)
	case <-time.After(waitFor):
		var stacks strings.Builder
		pprof.Lookup("goroutine").WriteTo(&stacks, 1) //nolint:errcheck // diagnostics only
		t.Errorf("worker did not stop within %s; logs:\n%s\ngoroutines:\n%s", waitFor, r.logs, stacks.String())
	}
}

// newTestWorker is a worker on url that logs into a buffer (and to the test log on failure).
func newTestWorker(url string, options Options) (*Worker, *lockedBuffer) {
	logs := &lockedBuffer{}
	options.URL = url
	options.IgnoreSignals = true
	options.Logger = log.New(logs, "", log.Lmicroseconds)
	return New(options), logs
}

// closedPort is a local TCP port with nothing listening.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}
