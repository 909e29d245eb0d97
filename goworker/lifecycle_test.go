package goworker

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// closeConnectionNamed closes, from the broker side, the one connection whose client-provided
// name is `name` (never anyone else's).
func closeConnectionNamed(t *testing.T, name string) {
	t.Helper()
	out, err := exec.Command("rabbitmqctl", "-q", "list_connections", "pid", "client_properties").Output()
	if err != nil {
		t.Skipf("rabbitmqctl is not usable here: %v", err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, fmt.Sprintf(`{"connection_name",%q}`, name)) {
			pid := strings.Fields(line)[0]
			if out, err := exec.Command("rabbitmqctl", "close_connection", pid, "goworker test").CombinedOutput(); err != nil {
				t.Fatalf("close_connection %s: %v\n%s", pid, err, out)
			}
			return
		}
	}
	t.Fatalf("no connection named %q in:\n%s", name, out)
}

func TestReconnectsAfterTheBrokerClosesTheConnection(t *testing.T) {
	url := brokerURL(t)
	queue := uniqueName("gw-reconnect")
	c := newClient(t, url, queue)
	name := uniqueName("goworker-test-conn")
	started := make(chan StepInfo, 4)
	release := make(chan struct{})
	w, logs := newTestWorker(url, Options{Name: name})
	w.Step(queue, func(ctx context.Context, data map[string]any, info StepInfo) (map[string]any, error) {
		started <- info
		if data["hold"] == true && !info.Redelivered {
			<-release // in flight while the connection drops: its reply cannot be sent
		}
		return data, nil
	})
	startWorker(t, w, logs)

	c.send(queue, "job:held", `{"hold": true}`, nil)
	<-started
	closeConnectionNamed(t, name)
	close(release)
	lost := time.Now()

	// The held request was not acked: RabbitMQ redelivers it once the worker is back.
	info := <-started
	if !info.Redelivered || info.CorrelationID != "job:held" {
		t.Errorf("want the held request redelivered, got %+v", info)
	}
	d, _ := c.replyBody()
	if d.CorrelationId != "job:held" {
		t.Errorf("reply for %q", d.CorrelationId)
	}
	if back := time.Since(lost); back > 3*time.Second {
		t.Errorf("consuming again only after %s", back)
	}
	c.send(queue, "job:after", `{}`, nil)
	if d := c.reply(); d.CorrelationId != "job:after" {
		t.Errorf("reply for %q after reconnecting", d.CorrelationId)
	}
	if logs.count("lost the connection") != 1 || logs.count("reconnected to RabbitMQ") != 1 ||
		logs.count("reply not sent") != 0 {
		t.Errorf("want one line for the outage and one for its end, got:\n%s", logs)
	}
}

func TestCancelDrainsInFlightRequests(t *testing.T) {
	url := brokerURL(t)
	queue := uniqueName("gw-drain")
	c := newClient(t, url, queue)
	const prefetch, sent = 4, 7
	started := make(chan struct{}, sent)
	release := make(chan struct{})
	w, logs := newTestWorker(url, Options{Prefetch: prefetch})
	w.Step(queue, func(ctx context.Context, data map[string]any, _ StepInfo) (map[string]any, error) {
		started <- struct{}{}
		<-release
		return data, nil
	})
	r := startWorker(t, w, logs)
	for i := 0; i < sent; i++ {
		c.send(queue, fmt.Sprintf("job-%d:s", i), fmt.Sprintf(`{"i": %d}`, i), nil)
	}
	for i := 0; i < prefetch; i++ {
		<-started
	}
	if n := w.InFlight(); n != prefetch {
		t.Fatalf("%d in flight, want the prefetch %d", n, prefetch)
	}
	r.cancel()
	// Stopping must wait for the handlers: Run has not returned while they are held.
	select {
	case err := <-r.done:
		t.Fatalf("Run returned %v with handlers still in flight", err)
	case <-time.After(200 * time.Millisecond):
	}
	close(release)
	select {
	case err := <-r.done:
		r.done <- err
		if err != nil {
			t.Fatalf("Run returned %v", err)
		}
	case <-time.After(waitFor):
		t.Fatalf("Run did not return after the handlers finished; logs:\n%s", logs)
	}
	seen := map[string]bool{}
	for i := 0; i < prefetch; i++ {
		seen[c.reply().CorrelationId] = true
	}
	// The requests never delivered stay in the queue, and no handled one went back to it.
	if n := c.messages(queue); n != sent-prefetch {
		t.Errorf("%d request(s) in the queue after the drain, want %d", n, sent-prefetch)
	}
	if len(seen) != prefetch || !strings.Contains(logs.String(), "worker stopped") {
		t.Errorf("replies %v; logs:\n%s", seen, logs)
	}
}
