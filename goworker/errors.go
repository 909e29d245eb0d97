package goworker

import (
	"errors"
	"fmt"
	"reflect"
	"unicode"
)

// The errors goworker reports. Run returns SettingsError, StepDefinitionError or BrokerError;
// the others become x-error replies, never a crash:
//
//	SettingsError        an option (or environment variable) is invalid
//	StepDefinitionError  a Step registration is invalid (bad queue name, nil handler, duplicate)
//	BrokerError          RabbitMQ cannot be reached at start-up or refused a declaration
//	InvalidRequestError  a request body is not a JSON object        (x-error-type InvalidRequest)
//	InvalidResultError   a handler's result cannot be encoded as JSON (x-error-type InvalidResult)
//	PanicError           a handler panicked                           (x-error-type Panic)
//	PayloadRefError      a reference cannot be resolved or a value stored (x-error-type PayloadRefError)
//	StepError            returned by a handler to choose the x-error-type itself

// SettingsError reports an invalid option or environment variable.
type SettingsError struct{ Message string }

// Error returns the message.
func (e *SettingsError) Error() string { return e.Message }

// StepDefinitionError reports an invalid Step registration.
type StepDefinitionError struct{ Message string }

// Error returns the message.
func (e *StepDefinitionError) Error() string { return e.Message }

// BrokerError reports that RabbitMQ cannot be reached or refused an operation at start-up.
type BrokerError struct {
	Message string
	Err     error
}

// Error returns the message.
func (e *BrokerError) Error() string { return e.Message }

// Unwrap gives the AMQP or network error behind the BrokerError.
func (e *BrokerError) Unwrap() error { return e.Err }

// InvalidRequestError reports a request body that is not a UTF-8 JSON object.
type InvalidRequestError struct{ Message string }

// Error returns the message.
func (e *InvalidRequestError) Error() string { return e.Message }

// ErrorType names the error in the x-error-type header.
func (e *InvalidRequestError) ErrorType() string { return "InvalidRequest" }

// InvalidResultError reports a handler result that cannot be encoded as a JSON object.
type InvalidResultError struct{ Message string }

// Error returns the message.
func (e *InvalidResultError) Error() string { return e.Message }

// ErrorType names the error in the x-error-type header.
func (e *InvalidResultError) ErrorType() string { return "InvalidResult" }

// PanicError is the error a panicking handler is answered with; Stack is logged, not sent.
type PanicError struct {
	Value any
	Stack []byte
}

// Error returns the message.
func (e *PanicError) Error() string { return fmt.Sprint(e.Value) }

// ErrorType names the error in the x-error-type header.
func (e *PanicError) ErrorType() string { return "Panic" }

// PayloadRefError reports a reference in a request that cannot be resolved (no store of that
// name, a missing value, an unreachable store, bytes that do not match), or a reply's value
// that cannot be stored. URI is the reference, wm://<store>/<key>.
type PayloadRefError struct {
	URI    string
	Reason string
}

// Error returns "<uri>: <reason>".
func (e *PayloadRefError) Error() string { return e.URI + ": " + e.Reason }

// ErrorType names the error in the x-error-type header.
func (e *PayloadRefError) ErrorType() string { return "PayloadRefError" }

// StepError is an error whose x-error-type the handler chooses, e.g. Fail("NotFound", ...).
type StepError struct {
	Type    string
	Message string
}

// Error returns the message.
func (e *StepError) Error() string { return e.Message }

// ErrorType names the error in the x-error-type header.
func (e *StepError) ErrorType() string { return e.Type }

// Fail returns a StepError: the step fails with x-error-type `errorType` and the formatted message.
func Fail(errorType, format string, args ...any) error {
	return &StepError{Type: errorType, Message: fmt.Sprintf(format, args...)}
}

// errorTyper is implemented by errors that name their own x-error-type.
type errorTyper interface{ ErrorType() string }

// errorTypeOf names err for x-error-type: its ErrorType(), else the first exported Go type name
// along its Unwrap chain (errors.New and fmt.Errorf are unexported types), else "Error".
func errorTypeOf(err error) string {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if typer, ok := e.(errorTyper); ok && typer.ErrorType() != "" {
			return typer.ErrorType()
		}
		t := reflect.TypeOf(e)
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if name := t.Name(); name != "" && unicode.IsUpper([]rune(name)[0]) {
			return name
		}
	}
	return "Error"
}
