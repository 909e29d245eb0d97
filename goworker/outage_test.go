package goworker

import (
	"context"
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"
)

// proxy forwards a local port to the broker and can be switched off: while off nothing
// listens on the port, as during a broker outage, without touching the shared broker.
type proxy struct {
	t      *testing.T
	addr   string
	target string
	mu     sync.Mutex
	ln     net.Listener
	conns  []net.Conn
}

func newProxy(t *testing.T, brokerURL string) *proxy {
	t.Helper()
	u, err := url.Parse(brokerURL)
	if err != nil {
		t.Fatal(err)
	}
	port := u.Port()
	if port == "" {
		port = "5672"
	}
	p := &proxy{t: t, target: net.JoinHostPort(u.Hostname(), port), addr: "127.0.0.1:0"}
	p.start()
	t.Cleanup(p.stop)
	return p
}

// url is brokerURL with the proxy's address instead of the broker's.
func (p *proxy) url(brokerURL string) string {
	u, _ := url.Parse(brokerURL)
	u.Host = p.addr
	return u.String()
}

func (p *proxy) start() {
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		p.t.Fatalf("proxy cannot listen on %s: %v", p.addr, err)
	}
	p.mu.Lock()
	p.ln, p.addr = ln, ln.Addr().String()
	p.mu.Unlock()
	go func() {
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			server, err := net.Dial("tcp", p.target)
			if err != nil {
				client.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, client, server)
			p.mu.Unlock()
			go func() { io.Copy(server, client); server.Close() }() //nolint:errcheck
			go func() { io.Copy(client, server); client.Close() }() //nolint:errcheck
		}
	}()
}

// stop closes the port and every forwarded connection.
func (p *proxy) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

func TestConsumesPromptlyAfterAnOutage(t *testing.T) {
	url := brokerURL(t)
	queue := uniqueName("gw-outage")
	c := newClient(t, url, queue)
	p := newProxy(t, url)
	w, logs := newTestWorker(p.url(url), Options{})
	w.Step(queue, func(_ context.Context, data map[string]any, _ StepInfo) (map[string]any, error) {
		return data, nil
	})
	startWorker(t, w, logs)

	p.stop()
	// The outage itself: attempts at 0, 0.5, 1.5 and 3.5 s fail, the next is due at 7.5 s.
	time.Sleep(4 * time.Second)
	c.send(queue, "job:during", `{}`, nil) // waits in the queue: nothing is lost
	p.start()
	back := time.Now()
	if d := c.reply(); d.CorrelationId != "job:during" {
		t.Fatalf("reply for %q", d.CorrelationId)
	}
	if took := time.Since(back); took > 1500*time.Millisecond {
		t.Errorf("answered %s after the broker was reachable again; want about 1 s at most", took)
	}
	if logs.count("lost the connection") != 1 || logs.count("reconnected to RabbitMQ") != 1 {
		t.Errorf("want one line for the outage and one for its end, got:\n%s", logs)
	}
}
