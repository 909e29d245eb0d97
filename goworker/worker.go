package goworker

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Worker serves step handlers: it consumes each step's queue and replies to the manager.
type Worker struct {
	options  Options
	settings settings
	steps    []step
	stepErr  error // the first bad registration, returned by Run

	mu      sync.Mutex
	running bool
	ready   chan struct{}
	once    sync.Once

	inFlight sync.WaitGroup
	count    atomic.Int64
}

// New returns a Worker with the given options; nothing is checked or connected until Run.
func New(options Options) *Worker {
	return &Worker{options: options, ready: make(chan struct{})}
}

// Step registers handler for the requests on queue (the step's name, or its `queue:` in the
// workflow YAML). A bad registration (empty or reserved name, nil handler, a queue registered
// twice, a worker already running) makes Run return a StepDefinitionError.
func (w *Worker) Step(queue string, handler Handler) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stepErr != nil {
		return
	}
	if w.stepErr = w.checkStep(queue, handler); w.stepErr == nil {
		w.steps = append(w.steps, step{queue, handler})
	}
}

// checkStep is why queue and handler cannot be registered, or nil.
func (w *Worker) checkStep(queue string, handler Handler) error {
	if w.running {
		return &StepDefinitionError{fmt.Sprintf("cannot add step %q: the worker is running", queue)}
	}
	if err := checkQueueName(queue); err != nil {
		return err
	}
	if handler == nil {
		return &StepDefinitionError{fmt.Sprintf("step %q: the handler is nil", queue)}
	}
	for _, st := range w.steps {
		if st.queue == queue {
			return &StepDefinitionError{fmt.Sprintf(
				"step %q is registered twice; each queue has one handler per worker", queue)}
		}
	}
	return nil
}

// Ready is closed once the worker consumes every step queue for the first time.
func (w *Worker) Ready() <-chan struct{} { return w.ready }

// InFlight is how many requests are being handled right now.
func (w *Worker) InFlight() int { return int(w.count.Load()) }

// Run connects, serves requests until ctx ends (or, unless Options.IgnoreSignals, SIGINT or
// SIGTERM arrives), then drains: stops consuming, lets in-flight handlers finish, publishes
// their replies, acks and disconnects. It reconnects by itself after a lost connection.
// It returns nil after a drain, or a SettingsError, StepDefinitionError or BrokerError when
// it cannot start (RabbitMQ unreachable at start-up included).
func (w *Worker) Run(ctx context.Context) error {
	steps, err := w.start()
	if err != nil {
		return err
	}
	defer w.finish()
	stop, abort, release := w.stopSignals(ctx)
	defer release()
	handlerCtx, cancelHandlers := context.WithCancel(context.Background())
	defer cancelHandlers()
	go func() {
		select {
		case <-abort:
			cancelHandlers()
		case <-handlerCtx.Done():
		}
	}()

	sess, err := openSession(w.settings, steps, w.logf)
	if err != nil {
		return &BrokerError{fmt.Sprintf("cannot start on RabbitMQ at %s: %v "+
			"(is it running? set the URL with Options.URL or $AMQP_URL)", MaskURL(w.settings.url), err), err}
	}
	w.logf("consuming %s on %s", queueList(steps), MaskURL(w.settings.url))
	w.once.Do(func() { close(w.ready) })
	for {
		cause := w.serve(stop, handlerCtx, sess)
		if cause == nil {
			w.drain(sess, cancelHandlers)
			return nil
		}
		sess.close()
		outage := time.Now()
		w.logf("lost the connection to RabbitMQ (%v); reconnecting", cause)
		if sess = w.reconnect(stop, steps); sess == nil {
			w.waitInFlight(cancelHandlers) // their replies cannot be sent; let them end
			w.logf("stopped while disconnected")
			return nil
		}
		w.logf("reconnected to RabbitMQ after %.1fs; consuming %s again",
			time.Since(outage).Seconds(), queueList(steps))
	}
}

// start resolves the settings and marks the worker running; the steps with their queue names.
func (w *Worker) start() ([]step, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stepErr != nil {
		return nil, w.stepErr
	}
	if w.running {
		return nil, &StepDefinitionError{"Run called while the worker is already running"}
	}
	if len(w.steps) == 0 {
		return nil, &StepDefinitionError{`no steps registered; add one with w.Step("queue", handler)`}
	}
	s, err := w.options.resolve()
	if err != nil {
		return nil, err
	}
	steps := make([]step, len(w.steps))
	for i, st := range w.steps {
		steps[i] = step{s.prefix + st.queue, st.handler}
		if err := checkQueueName(steps[i].queue); err != nil {
			return nil, &SettingsError{fmt.Sprintf("queue prefix %q makes a bad queue name: %v", s.prefix, err)}
		}
	}
	w.settings, w.running = s, true
	return steps, nil
}

// finish marks the worker stopped and lets go of its payload stores.
func (w *Worker) finish() {
	w.mu.Lock()
	w.settings.payloads.close()
	w.running = false
	w.mu.Unlock()
}

// stopSignals gives a channel closed when the worker should stop (ctx done or a first signal)
// and one closed on a second signal (abort: cancel the handlers' contexts).
func (w *Worker) stopSignals(ctx context.Context) (stop, abort <-chan struct{}, release func()) {
	stopCh, abortCh := make(chan struct{}), make(chan struct{})
	signals := make(chan os.Signal, 2)
	if w.settings.signals {
		signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
	}
	done := make(chan struct{})
	go func() {
		stopped := false
		for {
			select {
			case <-ctx.Done():
				if !stopped {
					stopped = true
					close(stopCh)
				}
				ctx = context.Background() // seen once; keep listening for signals
			case sig := <-signals:
				if !stopped {
					stopped = true
					w.logf("%s received: stopping after in-flight requests (again to abort)", signalName(sig))
					close(stopCh)
				} else {
					w.logf("%s received again: cancelling in-flight handlers", signalName(sig))
					close(abortCh)
					return
				}
			case <-done:
				return
			}
		}
	}()
	return stopCh, abortCh, func() {
		signal.Stop(signals)
		close(done)
	}
}

// serve hands deliveries to handlers until stop closes (nil) or the session is lost (its cause).
func (w *Worker) serve(stop <-chan struct{}, handlerCtx context.Context, sess *session) error {
	var dispatchers sync.WaitGroup
	for _, c := range sess.consumers {
		dispatchers.Add(1)
		go func(c consumer) {
			defer dispatchers.Done()
			for d := range c.deliveries {
				d := d
				w.inFlight.Add(1)
				w.count.Add(1)
				go func() {
					defer w.inFlight.Done()
					defer w.count.Add(-1)
					w.handleDelivery(handlerCtx, sess, c.handler, d, c.queue)
				}()
			}
		}(c)
	}
	select {
	case <-stop:
		sess.cancelConsumers(w.logf)
		dispatchers.Wait() // every delivery received before the cancel is now in flight
		return nil
	case cause := <-sess.lost:
		return cause
	}
}

// drain waits for the in-flight handlers (their replies and acks) and closes the session.
func (w *Worker) drain(sess *session, cancelHandlers context.CancelFunc) {
	if n := w.InFlight(); n > 0 {
		w.logf("waiting for %d in-flight request(s)", n)
	}
	w.waitInFlight(cancelHandlers)
	sess.close()
	w.logf("worker stopped")
}

// waitInFlight waits up to StopTimeout, then cancels the handlers' contexts: their requests
// stay unacked, so RabbitMQ redelivers them once the channel closes.
func (w *Worker) waitInFlight(cancelHandlers context.CancelFunc) {
	idle := make(chan struct{})
	go func() {
		w.inFlight.Wait()
		close(idle)
	}()
	select {
	case <-idle:
	case <-time.After(w.settings.stopTimeout):
		w.logf("%d request(s) still in flight after %s; cancelling them (they will be redelivered)",
			w.InFlight(), w.settings.stopTimeout)
		cancelHandlers()
	}
}

func queueList(steps []step) string {
	names := make([]string, len(steps))
	for i, st := range steps {
		names[i] = st.queue
	}
	return strings.Join(names, ", ")
}

func signalName(sig os.Signal) string {
	switch sig {
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGINT:
		return "SIGINT"
	}
	return sig.String()
}
