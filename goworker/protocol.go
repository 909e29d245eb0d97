package goworker

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Header names and the content type of the wire protocol (docs/protocol.md).
const (
	ContentType       = "application/json"
	HeaderAttempt     = "x-attempt"
	HeaderWorkflow    = "x-workflow"
	HeaderError       = "x-error"
	HeaderErrorType   = "x-error-type"
	HeaderTraceparent = "traceparent"
	HeaderMeta        = "x-meta"
	HeaderMetaPatch   = "x-meta-patch"
)

// maxErrorChars keeps x-error headers (and log lines) a readable size, as pyworker does.
const maxErrorChars = 4000

// reply is an encoded reply: the JSON body and the headers to send with it.
type reply struct {
	body    []byte
	headers map[string]any
}

// isError tells whether the reply reports a failure (carries x-error).
func (r reply) isError() bool {
	_, ok := r.headers[HeaderError]
	return ok
}

// decodeRequest parses a request body into its JSON object; InvalidRequestError otherwise.
func decodeRequest(body []byte, useNumber bool) (map[string]any, error) {
	if !utf8.Valid(body) {
		return nil, &InvalidRequestError{fmt.Sprintf(
			"request body is not valid UTF-8: %q", preview(body))}
	}
	decoder := json.NewDecoder(bytes.NewReader(body))
	if useNumber {
		decoder.UseNumber()
	}
	var data any
	err := decoder.Decode(&data)
	if err == nil && decoder.More() {
		err = fmt.Errorf("extra data after the JSON value")
	}
	if err != nil {
		return nil, &InvalidRequestError{fmt.Sprintf(
			"request body is not valid JSON (%v): %q", err, preview(body))}
	}
	object, ok := data.(map[string]any)
	if !ok {
		return nil, &InvalidRequestError{fmt.Sprintf(
			"request body must be a JSON object, got %s: %.80s", jsonKind(data), body)}
	}
	return object, nil
}

func preview(body []byte) string {
	if len(body) > 80 {
		body = body[:80]
	}
	return strings.ToValidUTF8(string(body), "\uFFFD")
}

func jsonKind(value any) string {
	switch value.(type) {
	case nil:
		return "null"
	case []any:
		return "a list"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	default:
		return "a number"
	}
}

// resultReply encodes a handler's result (nil is {}); InvalidResultError if it is not JSON.
// A non-empty metaPatch goes in the x-meta-patch header.
func resultReply(result map[string]any, attempt int, metaPatch map[string]any) (reply, error) {
	body, err := encodeResult(result)
	if err != nil {
		return reply{}, err
	}
	return successReply(body, attempt, metaPatch)
}

// encodeResult is a handler's result (nil is {}) as JSON text; InvalidResultError if it is not JSON.
func encodeResult(result map[string]any) ([]byte, error) {
	if result == nil {
		result = map[string]any{}
	}
	body, err := encodeJSON(result)
	if err != nil {
		return nil, invalidResult(err)
	}
	return body, nil
}

// invalidResult is the InvalidResultError for a result that encoding/json refused.
func invalidResult(err error) error {
	return &InvalidResultError{fmt.Sprintf("a step's result is not JSON-serialisable: %v", err)}
}

// successReply is the reply with the given body; a non-empty metaPatch goes in x-meta-patch,
// and a body holding references gets x-payload-refs.
func successReply(body []byte, attempt int, metaPatch map[string]any) (reply, error) {
	headers := map[string]any{HeaderAttempt: int32(attempt)}
	if len(metaPatch) > 0 {
		patch, err := encodeJSON(metaPatch)
		if err != nil {
			return reply{}, &InvalidResultError{fmt.Sprintf(
				"a metadata patch is not JSON-serialisable: %v", err)}
		}
		headers[HeaderMetaPatch] = string(patch)
	}
	if refs := countRefMembers(body); refs > 0 {
		headers[HeaderPayloadRefs] = int32(refs)
	}
	return reply{body: body, headers: headers}, nil
}

// metaPatchKey keys, in a handler's context, the patch PatchMeta adds to.
type metaPatchKey struct{}

// PatchMeta adds patch to the job's metadata (StepInfo.Meta): it is sent as x-meta-patch with
// the step's successful reply and deep-merged by the manager (later wins), so the job's later
// requests carry it. ctx is the handler's own; call it from the handler's goroutine.
func PatchMeta(ctx context.Context, patch map[string]any) {
	if into, ok := ctx.Value(metaPatchKey{}).(map[string]any); ok {
		for key, value := range patch {
			into[key] = value
		}
	}
}

// errorReply is the x-error reply for err: x-error "Type: message", x-error-type the type name,
// body {"error": {"type": ..., "message": ...}}.
func errorReply(err error, attempt int) reply {
	errorType := errorTypeOf(err)
	message := errorType
	if detail := strings.TrimSpace(err.Error()); detail != "" {
		message = errorType + ": " + detail
	}
	message = strings.ToValidUTF8(message, "\uFFFD")
	if utf8.RuneCountInString(message) > maxErrorChars {
		message = string([]rune(message)[:maxErrorChars-3]) + "..."
	}
	body, _ := encodeJSON(map[string]any{"error": map[string]any{"type": errorType, "message": message}})
	return reply{body: body, headers: map[string]any{
		HeaderAttempt: int32(attempt), HeaderError: message, HeaderErrorType: errorType,
	}}
}

// encodeJSON marshals value as compact UTF-8 JSON without HTML escaping (as Python's json does).
func encodeJSON(value any) ([]byte, error) {
	var buf bytes.Buffer
	encoder := json.NewEncoder(&buf)
	encoder.SetEscapeHTML(false)
	if err := encoder.Encode(value); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// headerText gives a header value as text (AMQP strings may arrive as bytes); "" when absent.
func headerText(value any) string {
	switch v := value.(type) {
	case nil:
		return ""
	case string:
		return v
	case []byte:
		return strings.ToValidUTF8(string(v), "\uFFFD")
	default:
		return fmt.Sprint(v)
	}
}

// parseAttempt reads the 1-based attempt from an x-attempt value; 0 when absent or not a number.
func parseAttempt(value any) int {
	var attempt int64
	switch v := value.(type) {
	case int8:
		attempt = int64(v)
	case uint8:
		attempt = int64(v)
	case int16:
		attempt = int64(v)
	case uint16:
		attempt = int64(v)
	case int32:
		attempt = int64(v)
	case uint32:
		attempt = int64(v)
	case int64:
		attempt = v
	case int:
		attempt = int64(v)
	case string, []byte:
		parsed, err := strconv.ParseInt(strings.TrimSpace(headerText(v)), 10, 64)
		if err != nil {
			return 0
		}
		attempt = parsed
	default:
		return 0
	}
	if attempt < 1 || attempt > 1<<31-1 {
		return 0
	}
	return int(attempt)
}

// splitCorrelationID splits "<job-id>:<step-name>" at its last ':'; step is "" without one.
func splitCorrelationID(correlationID string) (jobID, step string) {
	colon := strings.LastIndex(correlationID, ":")
	if colon <= 0 || colon == len(correlationID)-1 {
		return correlationID, ""
	}
	return correlationID[:colon], correlationID[colon+1:]
}
