package goworker

import (
	"errors"
	"net"
	"net/url"
	"time"
)

const (
	firstBackoff = 500 * time.Millisecond
	maxBackoff   = 5 * time.Second
	probeEvery   = 100 * time.Millisecond
)

// reconnect opens a new session, retrying with a backoff (0.5 s doubling to 5 s) until it
// succeeds or stop closes (nil). While nothing listens on the broker's port, the port is
// probed every 100 ms and a wait is cut short once it opens, so the worker consumes again
// promptly after an outage of any length. Failed attempts are not logged: the outage is one line.
func (w *Worker) reconnect(stop <-chan struct{}, steps []step) *session {
	backoff := firstBackoff
	wasDialError := false
	for {
		sess, err := openSession(w.settings, steps, w.logf)
		if err == nil {
			return sess
		}
		var dialErr *dialError
		isDialError := errors.As(err, &dialErr)
		if wasDialError && !isDialError {
			backoff = firstBackoff // the port just opened: the broker is starting up
		}
		wasDialError = isDialError
		if !w.pause(stop, backoff, isDialError) {
			return nil
		}
		backoff *= 2
		if backoff > maxBackoff {
			backoff = maxBackoff
		}
	}
}

// pause waits for d, or less when probing finds the broker's port open; false if stop closed.
func (w *Worker) pause(stop <-chan struct{}, d time.Duration, probe bool) bool {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	tick := time.NewTicker(probeEvery)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return false
		case <-deadline.C:
			return true
		case <-tick.C:
			if probe && portOpen(w.settings.url) {
				return true
			}
		}
	}
}

// portOpen tells whether something accepts TCP connections at the URL's host and port.
func portOpen(rawURL string) bool {
	u, err := url.Parse(rawURL)
	if err != nil {
		return false
	}
	port := u.Port()
	if port == "" {
		port = "5672"
		if u.Scheme == "amqps" {
			port = "5671"
		}
	}
	conn, err := net.DialTimeout("tcp", net.JoinHostPort(u.Hostname(), port), probeEvery)
	if err != nil {
		return false
	}
	conn.Close() //nolint:errcheck // only probing
	return true
}
