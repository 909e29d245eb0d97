package goworker

import (
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

const dialTimeout = 5 * time.Second

// errChannelClosed reports a reply whose confirm never came because the channel closed.
var errChannelClosed = errors.New("the channel closed before the broker confirmed the reply")

// consumer is one step queue being consumed on a session.
type consumer struct {
	queue      string
	tag        string
	handler    Handler
	deliveries <-chan amqp.Delivery
}

// session is one connection with one confirm-mode channel consuming every step queue.
type session struct {
	conn      *amqp.Connection
	ch        *amqp.Channel
	consumers []consumer
	confirms  *confirmer
	lost      chan error // receives why the session ended, once, unless it was closed by us
	lostFlag  atomic.Bool
}

// step is a handler and its queue as declared (prefix included).
type step struct {
	queue   string
	handler Handler
}

// dialError marks a failure to open the TCP connection (nothing listening), as opposed to a
// broker that answers but refuses: the reconnect loop probes the port after the former.
type dialError struct{ err error }

func (e *dialError) Error() string { return e.err.Error() }
func (e *dialError) Unwrap() error { return e.err }

// openSession connects, enables confirms, sets the prefetch, declares and consumes each queue.
func openSession(s settings, steps []step, logf func(string, ...any)) (*session, error) {
	config := amqp.Config{
		Properties: amqp.Table{"connection_name": s.name, "product": "goworker"},
		Dial:       amqp.DefaultDial(dialTimeout),
	}
	conn, err := amqp.DialConfig(s.url, config)
	if err != nil {
		var opErr *net.OpError
		if errors.As(err, &opErr) && opErr.Op == "dial" {
			return nil, &dialError{err}
		}
		return nil, err
	}
	sess := &session{conn: conn, lost: make(chan error, 1)}
	if err := sess.setUp(s, steps, logf); err != nil {
		conn.Close() //nolint:errcheck // already failing
		return nil, err
	}
	sess.watch()
	return sess, nil
}

func (sess *session) setUp(s settings, steps []step, logf func(string, ...any)) error {
	ch, err := sess.conn.Channel()
	if err != nil {
		return fmt.Errorf("opening a channel: %w", err)
	}
	sess.ch = ch
	if err := ch.Confirm(false); err != nil {
		return fmt.Errorf("enabling publisher confirms: %w", err)
	}
	sess.confirms = newConfirmer(ch)
	if err := ch.Qos(s.prefetch, 0, false); err != nil {
		return fmt.Errorf("setting the prefetch to %d: %w", s.prefetch, err)
	}
	returns := ch.NotifyReturn(make(chan amqp.Return, 16))
	go func() { // the library blocks until returns are read; each one is a lost reply
		for r := range returns {
			logf("reply to %q was returned (%s): no such queue; correlation_id=%s",
				r.RoutingKey, r.ReplyText, r.CorrelationId)
		}
	}()
	for _, st := range steps {
		if _, err := ch.QueueDeclare(st.queue, true, false, false, false, nil); err != nil {
			return fmt.Errorf("declaring queue %q: %w", st.queue, err)
		}
		tag := fmt.Sprintf("goworker-%s-%d", st.queue, time.Now().UnixNano())
		deliveries, err := ch.Consume(st.queue, tag, false, false, false, false, nil)
		if err != nil {
			return fmt.Errorf("consuming queue %q: %w", st.queue, err)
		}
		sess.consumers = append(sess.consumers, consumer{st.queue, tag, st.handler, deliveries})
	}
	return nil
}

// watch reports on sess.lost when the connection or channel closes, or the broker cancels a
// consumer (its queue was deleted).
func (sess *session) watch() {
	connClosed := sess.conn.NotifyClose(make(chan *amqp.Error, 1))
	chClosed := sess.ch.NotifyClose(make(chan *amqp.Error, 1))
	cancelled := sess.ch.NotifyCancel(make(chan string, len(sess.consumers)+1))
	go func() {
		var cause error
		select {
		case e, ok := <-connClosed:
			cause = closeCause("connection", e, ok)
		case e, ok := <-chClosed:
			cause = closeCause("channel", e, ok)
		case tag, ok := <-cancelled:
			if !ok {
				return
			}
			cause = fmt.Errorf("the broker cancelled consumer %s (queue deleted?)", tag)
		}
		if cause == nil {
			return // closed by us
		}
		sess.lostFlag.Store(true)
		sess.lost <- cause
	}()
}

func closeCause(what string, e *amqp.Error, ok bool) error {
	if !ok || e == nil {
		return nil
	}
	return fmt.Errorf("%s closed: %w", what, e)
}

// isLost tells whether the session ended without being closed by us.
func (sess *session) isLost() bool { return sess.lostFlag.Load() }

// publishConfirmed publishes on the default exchange (mandatory) and waits for the confirm:
// true when the broker acked it, false when it nacked it.
func (sess *session) publishConfirmed(routingKey string, msg amqp.Publishing) (bool, error) {
	return sess.confirms.publish(routingKey, msg)
}

// cancelConsumers stops the deliveries; each consumer's channel closes once its buffered
// deliveries have been handed over, so none is dropped.
func (sess *session) cancelConsumers(logf func(string, ...any)) {
	for _, c := range sess.consumers {
		if err := sess.ch.Cancel(c.tag, false); err != nil && !sess.isLost() {
			logf("could not cancel the consumer of %q: %v", c.queue, err)
		}
	}
}

// close closes the channel and the connection; a closed channel requeues unacked requests.
func (sess *session) close() {
	if sess.ch != nil {
		sess.ch.Close() //nolint:errcheck // the connection close below settles it anyway
	}
	sess.conn.Close() //nolint:errcheck // nothing to do about a failed close
}
