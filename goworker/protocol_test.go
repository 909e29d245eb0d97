package goworker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
)

func TestDecodeRequest(t *testing.T) {
	cases := []struct {
		name, body, wantErr string
	}{
		{"object", `{"a": 1}`, ""},
		{"empty object", `{}`, ""},
		{"list", `[1, 2]`, "must be a JSON object, got a list"},
		{"null", `null`, "must be a JSON object, got null"},
		{"string", `"x"`, "must be a JSON object, got a string"},
		{"not json", `{"a":`, "not valid JSON"},
		{"empty body", ``, "not valid JSON"},
		{"trailing data", `{} {}`, "extra data"},
		{"not utf-8", "{\"a\": \"\xff\"}", "not valid UTF-8"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			data, err := decodeRequest([]byte(tc.body), false)
			if tc.wantErr == "" {
				if err != nil || data == nil {
					t.Fatalf("want an object, got %v, %v", data, err)
				}
				return
			}
			var invalid *InvalidRequestError
			if !errors.As(err, &invalid) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("want InvalidRequestError containing %q, got %v", tc.wantErr, err)
			}
		})
	}
}

func TestDecodeRequestUseNumberKeepsBigIntegers(t *testing.T) {
	data, err := decodeRequest([]byte(`{"n": 12345678901234567890}`), true)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := encodeJSON(data)
	if string(body) != `{"n":12345678901234567890}` {
		t.Fatalf("big integer changed: %s", body)
	}
}

func TestResultReply(t *testing.T) {
	r, err := resultReply(nil, 2, nil)
	if err != nil || string(r.body) != `{}` || r.headers[HeaderAttempt] != int32(2) || r.isError() {
		t.Fatalf("nil result: %s %v %v", r.body, r.headers, err)
	}
	r, err = resultReply(map[string]any{"html": "<a&b>", "word": "café"}, 1, nil)
	if err != nil || string(r.body) != `{"html":"<a&b>","word":"café"}` {
		t.Fatalf("want unescaped UTF-8 JSON, got %s (%v)", r.body, err)
	}
	_, err = resultReply(map[string]any{"x": math.NaN()}, 1, nil)
	var invalid *InvalidResultError
	if !errors.As(err, &invalid) || !strings.Contains(err.Error(), "not JSON-serialisable") {
		t.Fatalf("NaN: want InvalidResultError, got %v", err)
	}
}

type ValueError struct{}

func (ValueError) Error() string { return "custom" }

func TestErrorReply(t *testing.T) {
	cases := []struct {
		err               error
		wantType, wantMsg string
	}{
		{errors.New("boom"), "Error", "Error: boom"},
		{fmt.Errorf("wrapped: %w", ValueError{}), "ValueError", "ValueError: wrapped: custom"},
		{Fail("NotFound", "no book %q", "x"), "NotFound", `NotFound: no book "x"`},
		{&PanicError{Value: "oops"}, "Panic", "Panic: oops"},
		{&InvalidRequestError{"bad"}, "InvalidRequest", "InvalidRequest: bad"},
		{errors.New("  "), "Error", "Error"},
	}
	for _, tc := range cases {
		r := errorReply(tc.err, 3)
		if r.headers[HeaderErrorType] != tc.wantType || r.headers[HeaderError] != tc.wantMsg {
			t.Errorf("%v: got %v / %v", tc.err, r.headers[HeaderErrorType], r.headers[HeaderError])
		}
		if r.headers[HeaderAttempt] != int32(3) {
			t.Errorf("%v: x-attempt %v, want 3", tc.err, r.headers[HeaderAttempt])
		}
		var body map[string]map[string]string
		if err := json.Unmarshal(r.body, &body); err != nil ||
			body["error"]["type"] != tc.wantType || body["error"]["message"] != tc.wantMsg {
			t.Errorf("%v: body %s", tc.err, r.body)
		}
	}
}

func TestErrorReplyTruncatesByCharacters(t *testing.T) {
	r := errorReply(errors.New(strings.Repeat("é", 5000)), 1)
	message := r.headers[HeaderError].(string)
	runes := []rune(message)
	if len(runes) != maxErrorChars || !strings.HasSuffix(message, "...") || !strings.HasPrefix(message, "Error: éé") {
		t.Fatalf("got %d characters ending %q", len(runes), string(runes[len(runes)-5:]))
	}
}

func TestUnexportedErrorTypeIsError(t *testing.T) {
	if got := errorTypeOf(fmt.Errorf("plain %d", 1)); got != "Error" {
		t.Fatalf("got %q", got)
	}
}

func TestParseAttempt(t *testing.T) {
	cases := []struct {
		value any
		want  int
	}{
		{int32(3), 3}, {int64(2), 2}, {int8(1), 1}, {uint8(4), 4}, {int16(5), 5},
		{"7", 7}, {[]byte("8"), 8}, {nil, 0}, {"x", 0}, {int32(0), 0}, {int64(-1), 0},
		{true, 0}, {1.5, 0},
	}
	for _, tc := range cases {
		if got := parseAttempt(tc.value); got != tc.want {
			t.Errorf("parseAttempt(%#v) = %d, want %d", tc.value, got, tc.want)
		}
	}
}

func TestSplitCorrelationID(t *testing.T) {
	cases := []struct{ in, job, step string }{
		{"3f2a:segment-word-counts", "3f2a", "segment-word-counts"},
		{"a:b:c", "a:b", "c"},
		{"nocolon", "nocolon", ""},
		{":step", ":step", ""},
		{"job:", "job:", ""},
		{"", "", ""},
	}
	for _, tc := range cases {
		if job, step := splitCorrelationID(tc.in); job != tc.job || step != tc.step {
			t.Errorf("%q: got (%q, %q), want (%q, %q)", tc.in, job, step, tc.job, tc.step)
		}
	}
}

func TestMaskURL(t *testing.T) {
	cases := []struct{ in, want string }{
		{"amqp://guest:secret@host:5672/", "amqp://guest:******@host:5672/"},
		{"amqp://host/", "amqp://host/"},
		{"amqp://u:p%40ss@host/vh", "amqp://u:******@host/vh"},
		{"amqp://u:pa ss@ho%zz/", "amqp://******@ho%zz/"},
	}
	for _, tc := range cases {
		if got := MaskURL(tc.in); got != tc.want {
			t.Errorf("MaskURL(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestResolveOptions(t *testing.T) {
	env := func(values map[string]string) func(string) string {
		return func(name string) string { return values[name] }
	}
	s, err := Options{Getenv: env(map[string]string{
		"AMQP_SERVER": "amqp://a:b@other/", "QUEUE_PREFIX": "staging.",
	})}.resolve()
	if err != nil || s.url != "amqp://a:b@other/" || s.prefix != "staging." || s.prefetch != 10 {
		t.Fatalf("env: %+v %v", s, err)
	}
	s, _ = Options{Getenv: env(nil)}.resolve()
	if s.url != DefaultURL {
		t.Fatalf("default URL: %q", s.url)
	}
	bad := []struct {
		options Options
		want    string
	}{
		{Options{URL: "http://x:secret@host/"}, `Options.URL: "http://x:******@host/" is not an AMQP URL`},
		{Options{Getenv: env(map[string]string{"AMQP_URL": "nope"})}, "environment variable AMQP_URL"},
		{Options{Prefetch: -1}, "Prefetch: -1 is out of range"},
		{Options{Prefetch: 70000}, "Prefetch: 70000 is out of range"},
		{Options{StopTimeout: -1}, "StopTimeout"},
	}
	for _, tc := range bad {
		_, err := tc.options.resolve()
		var settingsErr *SettingsError
		if !errors.As(err, &settingsErr) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: want SettingsError containing %q, got %v", tc.options, tc.want, err)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("the password leaked: %v", err)
		}
	}
}

func TestPatchMetaRidesOnTheResultReply(t *testing.T) {
	patch := map[string]any{}
	ctx := context.WithValue(context.Background(), metaPatchKey{}, patch)
	PatchMeta(ctx, map[string]any{"tenant": map[string]any{"plan": "pro"}})
	PatchMeta(context.Background(), map[string]any{"ignored": true}) // not a handler's context
	r, err := resultReply(map[string]any{}, 1, patch)
	if err != nil {
		t.Fatal(err)
	}
	var sent map[string]any
	if err := json.Unmarshal([]byte(r.headers[HeaderMetaPatch].(string)), &sent); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(sent) != "map[tenant:map[plan:pro]]" {
		t.Fatalf("x-meta-patch = %v", sent)
	}
	r, _ = resultReply(map[string]any{}, 1, map[string]any{})
	if _, ok := r.headers[HeaderMetaPatch]; ok {
		t.Fatal("an empty patch must send no x-meta-patch")
	}
	if _, err := resultReply(nil, 1, map[string]any{"x": math.NaN()}); err == nil {
		t.Fatal("a patch that is no JSON must fail the reply")
	}
}
