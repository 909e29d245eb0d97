package goworker

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

const testDigest = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"

func decodeJSON(t *testing.T, text string, useNumber bool) any {
	t.Helper()
	value, err := decodeStored(Ref{}, []byte(text), useNumber)
	if err != nil {
		t.Fatalf("%s: %v", text, err)
	}
	return value
}

func TestAsRefTakesExactlyTheThreeMembers(t *testing.T) {
	uri := "wm://main/job-1/" + testDigest
	cases := []struct {
		name, text string
		isRef      bool
	}{
		{"reference", `{"$ref": "` + uri + `", "sha256": "` + testDigest + `", "size": 12}`, true},
		{"malformed is still one", `{"$ref": "wm://Bad Store/..", "sha256": 1, "size": "x"}`, true},
		{"a fourth member", `{"$ref": "` + uri + `", "sha256": "` + testDigest + `", "size": 12, "x": 1}`, false},
		{"no size", `{"$ref": "` + uri + `", "sha256": "` + testDigest + `", "sizes": 12}`, false},
		{"another scheme", `{"$ref": "#/definitions/a", "sha256": "` + testDigest + `", "size": 12}`, false},
		{"$ref not a string", `{"$ref": 1, "sha256": "` + testDigest + `", "size": 12}`, false},
		{"a list", `["wm://main/a", "x", 1]`, false},
	}
	for _, tc := range cases {
		for _, useNumber := range []bool{false, true} {
			ref, ok := asRef(decodeJSON(t, tc.text, useNumber))
			if ok != tc.isRef {
				t.Errorf("%s (UseNumber %v): asRef says %v", tc.name, useNumber, ok)
			}
			if ok && tc.name == "reference" && (ref != Ref{"main", "job-1/" + testDigest, testDigest, 12}) {
				t.Errorf("%s: %+v", tc.name, ref)
			}
		}
	}
}

func TestRefProblems(t *testing.T) {
	good := Ref{"main", "job-1/" + testDigest, testDigest, 0}
	if problem := good.problem(); problem != "" {
		t.Fatalf("a good reference has a problem: %s", problem)
	}
	cases := []struct {
		ref  Ref
		want string
	}{
		{Ref{"Main", good.Key, testDigest, 1}, "store name"},
		{Ref{"", good.Key, testDigest, 1}, "store name"},
		{Ref{strings.Repeat("a", 64), good.Key, testDigest, 1}, "store name"},
		{Ref{"main", "job/../etc/passwd", testDigest, 1}, "the key"},
		{Ref{"main", "job/./x", testDigest, 1}, "the key"},
		{Ref{"main", "/abs", testDigest, 1}, "the key"},
		{Ref{"main", "a//b", testDigest, 1}, "the key"},
		{Ref{"main", "", testDigest, 1}, "the key"},
		{Ref{"main", strings.Repeat("a", 513), testDigest, 1}, "the key"},
		{Ref{"main", "job/x y", testDigest, 1}, "the key"},
		{Ref{"main", good.Key, strings.ToUpper(testDigest), 1}, "sha256"},
		{Ref{"main", good.Key, testDigest[:10], 1}, "sha256"},
		{Ref{"main", good.Key, testDigest, -1}, "size"},
	}
	for _, tc := range cases {
		if problem := tc.ref.problem(); !strings.Contains(problem, tc.want) {
			t.Errorf("%+v: want a problem with %q, got %q", tc.ref, tc.want, problem)
		}
	}
}

func TestReplaceRefsAtAnyDepth(t *testing.T) {
	ref := `{"$ref": "wm://main/j/` + testDigest + `", "sha256": "` + testDigest + `", "size": 3}`
	value := decodeJSON(t, `{"a": `+ref+`, "results": [{"x": `+ref+`}, 1, [`+ref+`]], "n": 1}`, false)
	calls := 0
	got, err := replaceRefs(value, func(r Ref) (any, error) {
		calls++
		return "resolved " + r.Store, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	text, _ := encodeJSON(got)
	want := `{"a":"resolved main","n":1,"results":[{"x":"resolved main"},1,["resolved main"]]}`
	if string(text) != want || calls != 3 {
		t.Errorf("got %s after %d calls; want %s after 3", text, calls, want)
	}
	failure := errors.New("cannot")
	if _, err := replaceRefs(decodeJSON(t, `[`+ref+`]`, false), func(Ref) (any, error) {
		return nil, failure
	}); err != failure {
		t.Errorf("the resolver's error was not returned: %v", err)
	}
}

func TestCountRefMembers(t *testing.T) {
	body, _ := encodeJSON(map[string]any{
		"a": Ref{"main", "j/" + testDigest, testDigest, 1}.object(),
		"b": []any{Ref{"main", "j/" + testDigest, testDigest, 1}.object()},
		"c": "a text mentioning \"$ref\": not a member",
	})
	if n := countRefMembers(body); n != 2 {
		t.Errorf("%d $ref members in %s, want 2", n, body)
	}
}

func TestJobSegment(t *testing.T) {
	for correlationID, want := range map[string]string{
		"3f2a9c4e-8b1d-4e0f-9a6b-2c7d5e1f0a93:fetch":    "3f2a9c4e-8b1d-4e0f-9a6b-2c7d5e1f0a93",
		"3f2a9c4e:fetch:2":                              "3f2a9c4e",
		"no-colon":                                      "no-colon",
		"3f2a9c4e-8b1d-4e0f-9a6b-2c7d5e1f0a93:a/b/step": "3f2a9c4e-8b1d-4e0f-9a6b-2c7d5e1f0a93",
	} {
		if got, err := jobSegment(correlationID); got != want || err != nil {
			t.Errorf("%q: got %q, %v; want %q", correlationID, got, err, want)
		}
	}
	for _, bad := range []string{"", ":step", "a/b:step", "..:step", "job id:step"} {
		if _, err := jobSegment(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestWholeNumber(t *testing.T) {
	for _, tc := range []struct {
		value any
		want  int64
		ok    bool
	}{
		{float64(104857612), 104857612, true},
		{json.Number("104857612"), 104857612, true},
		{1.5, 0, false},
		{json.Number("1.5"), 0, false},
		{"12", 0, false},
	} {
		if got, ok := wholeNumber(tc.value); got != tc.want || ok != tc.ok {
			t.Errorf("%#v: got %d, %v", tc.value, got, ok)
		}
	}
}
