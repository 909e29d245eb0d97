package goworker

import (
	"fmt"
	"log"
	"net/url"
	"os"
	"strings"
	"time"
)

// DefaultURL is the broker used when neither Options.URL nor $AMQP_URL / $AMQP_SERVER is set.
const DefaultURL = "amqp://guest:guest@localhost:5672/"

const (
	defaultPrefetch    = 10
	maxPrefetch        = 65535 // basic.qos prefetch-count is a 16-bit field
	defaultStopTimeout = 30 * time.Second
	maxQueueBytes      = 255
)

// Options configure a Worker. The zero value works: the URL and queue prefix come from the
// environment and the other fields have defaults.
type Options struct {
	// URL of the broker. Default: $AMQP_URL, then $AMQP_SERVER, then DefaultURL.
	URL string
	// QueuePrefix is prepended to every step's queue name (e.g. "staging."). Default: $QUEUE_PREFIX.
	QueuePrefix string
	// Prefetch is how many requests per step queue are handled at once. Default 10.
	Prefetch int
	// Name is the connection name shown by RabbitMQ. Default "goworker <host> pid=<pid>".
	Name string
	// StopTimeout is how long a stop waits for in-flight handlers before cancelling their
	// contexts and closing (their requests are then redelivered). Default 30 s.
	StopTimeout time.Duration
	// Logger receives one line per step outcome and per outage. Default: stderr.
	Logger *log.Logger
	// UseNumber decodes JSON numbers as json.Number, so big integers round-trip exactly.
	UseNumber bool
	// IgnoreSignals leaves SIGINT/SIGTERM alone: Run then stops only when its context ends.
	IgnoreSignals bool
	// PayloadStores names the payload stores, "NAME=URL NAME=URL" (file:///<dir> or
	// postgresql://...): references in requests are resolved from them, and a large reply's
	// values are stored in the first. Default: $WM_PAYLOAD_STORES (none: replies go inline).
	PayloadStores string
	// PayloadRefThreshold is the size in bytes of a reply's JSON text above which its large
	// values are stored by reference. Default: $WM_PAYLOAD_REF_THRESHOLD, else 262144 (256 KiB).
	PayloadRefThreshold int
	// Getenv reads the environment (default os.Getenv); for tests.
	Getenv func(string) string
}

// settings are Options resolved and checked once, when Run starts.
type settings struct {
	url         string
	prefix      string
	prefetch    int
	name        string
	stopTimeout time.Duration
	logger      *log.Logger
	useNumber   bool
	signals     bool
	payloads    payloads
}

// resolve checks the options and fills in defaults and environment values.
func (o Options) resolve() (settings, error) {
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	s := settings{
		prefetch: o.Prefetch, name: o.Name, stopTimeout: o.StopTimeout,
		logger: o.Logger, useNumber: o.UseNumber, signals: !o.IgnoreSignals,
	}
	var err error
	if s.url, err = resolveURL(o.URL, getenv); err != nil {
		return s, err
	}
	s.prefix = o.QueuePrefix
	if s.prefix == "" {
		s.prefix = strings.TrimSpace(getenv("QUEUE_PREFIX"))
	}
	if s.prefetch == 0 {
		s.prefetch = defaultPrefetch
	}
	if s.prefetch < 1 || s.prefetch > maxPrefetch {
		return s, &SettingsError{fmt.Sprintf(
			"Prefetch: %d is out of range (1..%d); it is how many requests per step queue "+
				"the worker handles at once", s.prefetch, maxPrefetch)}
	}
	if s.stopTimeout < 0 {
		return s, &SettingsError{fmt.Sprintf("StopTimeout: %s must not be negative", s.stopTimeout)}
	}
	if s.stopTimeout == 0 {
		s.stopTimeout = defaultStopTimeout
	}
	if s.payloads, err = resolvePayloads(o, getenv); err != nil {
		return s, err
	}
	if s.name == "" {
		host, _ := os.Hostname()
		s.name = fmt.Sprintf("goworker %s pid=%d", host, os.Getpid())
	}
	if s.logger == nil {
		s.logger = log.New(os.Stderr, "goworker ", log.LstdFlags|log.Lmsgprefix)
	}
	return s, nil
}

// resolveURL is `explicit`, else $AMQP_URL, else $AMQP_SERVER, else DefaultURL, checked.
func resolveURL(explicit string, getenv func(string) string) (string, error) {
	if explicit != "" {
		return explicit, checkURL(explicit, "Options.URL")
	}
	for _, name := range []string{"AMQP_URL", "AMQP_SERVER"} {
		if value := strings.TrimSpace(getenv(name)); value != "" {
			return value, checkURL(value, "environment variable "+name)
		}
	}
	return DefaultURL, nil
}

func checkURL(raw, source string) error {
	u, err := url.Parse(raw)
	if err == nil && (u.Scheme == "amqp" || u.Scheme == "amqps") && u.Hostname() != "" && u.Port() != "0" {
		return nil
	}
	return &SettingsError{fmt.Sprintf("%s: %q is not an AMQP URL (expected e.g. %q)",
		source, MaskURL(raw), DefaultURL)}
}

// MaskURL returns raw with its password replaced by "******", for logs and error messages.
func MaskURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		// Unparseable: hide everything between "://" and "@", where a password would be.
		if at := strings.LastIndex(raw, "@"); at >= 0 {
			if scheme := strings.Index(raw, "://"); scheme >= 0 && scheme < at {
				return raw[:scheme+3] + "******" + raw[at:]
			}
		}
		return raw
	}
	if _, has := u.User.Password(); !has {
		return raw
	}
	u.User = url.User(u.User.Username())
	masked := u.String() // scheme://user@host...: the first '@' ends the (escaped) user name
	at := strings.Index(masked, "@")
	return masked[:at] + ":******" + masked[at:]
}

// checkQueueName returns a StepDefinitionError unless queue is a usable RabbitMQ queue name.
func checkQueueName(queue string) error {
	switch {
	case strings.TrimSpace(queue) == "":
		return &StepDefinitionError{"step queue name must be a non-empty string " +
			`(use it as w.Step("my-step", handler))`}
	case strings.HasPrefix(queue, "amq."):
		return &StepDefinitionError{fmt.Sprintf(
			"step queue name %q: names starting 'amq.' are reserved by RabbitMQ", queue)}
	case len(queue) > maxQueueBytes:
		return &StepDefinitionError{fmt.Sprintf(
			"step queue name %.40q...: longer than %d bytes", queue, maxQueueBytes)}
	}
	return nil
}
