package goworker

import (
	"encoding/json"
	"fmt"

	amqp "github.com/rabbitmq/amqp091-go"
)

// StepInfo is what a handler may want to know about the request it is handling.
type StepInfo struct {
	JobID         string         // the correlation id's part before the last ':'
	Step          string         // the step name (after the last ':'), else the queue name
	Attempt       int            // 1-based, from x-attempt (1 when absent)
	CorrelationID string         // "<job-id>:<step-name>", echoed in the reply
	Workflow      string         // the top-level workflow (x-workflow), "" when absent
	MessageID     string         // "<job-id>:<step-name>:<attempt>", "" when absent
	Queue         string         // the queue the request arrived on (prefix included)
	Redelivered   bool           // RabbitMQ delivered this request before (e.g. a worker died)
	Headers       map[string]any // every request header, a copy
	Traceparent   string         // the W3C trace context header, "" when absent
	Meta          map[string]any // the job metadata (x-meta) when present and a JSON object
}

// stepInfoOf builds the StepInfo of a delivered request.
func stepInfoOf(d amqp.Delivery, queue string) StepInfo {
	headers := make(map[string]any, len(d.Headers))
	for key, value := range d.Headers {
		headers[key] = value
	}
	jobID, step := splitCorrelationID(d.CorrelationId)
	if step == "" {
		step = queue
	}
	attempt := parseAttempt(headers[HeaderAttempt])
	if attempt == 0 {
		attempt = 1
	}
	return StepInfo{
		JobID:         jobID,
		Step:          step,
		Attempt:       attempt,
		CorrelationID: d.CorrelationId,
		Workflow:      headerText(headers[HeaderWorkflow]),
		MessageID:     d.MessageId,
		Queue:         queue,
		Redelivered:   d.Redelivered,
		Headers:       headers,
		Traceparent:   headerText(headers[HeaderTraceparent]),
		Meta:          metaOf(headers[HeaderMeta]),
	}
}

// metaOf reads x-meta: a JSON object as text, or an AMQP table; nil otherwise.
func metaOf(value any) map[string]any {
	switch v := value.(type) {
	case amqp.Table:
		return map[string]any(v)
	case string, []byte:
		var meta map[string]any
		if json.Unmarshal([]byte(headerText(v)), &meta) == nil {
			return meta
		}
	}
	return nil
}

// LogFields is "job=... step=... attempt=...", carried by every log line about the request.
func (i StepInfo) LogFields() string {
	job := i.JobID
	if job == "" {
		job = "-"
	}
	return fmt.Sprintf("job=%s step=%s attempt=%d", job, i.Step, i.Attempt)
}
