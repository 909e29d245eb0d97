package goworker

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestJoinedMembersAreEncodeJSONsText(t *testing.T) {
	for _, result := range []map[string]any{
		nil,
		{},
		{"b": 1, "a": []any{"x", nil}, "é": "<&>", "A\"q": map[string]any{"z": 1.5, "y": true}, "": ""},
	} {
		m, err := encodeMembers(result)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := encodeResult(result)
		if got := m.join(); string(got) != string(want) || m.size() != len(want) {
			t.Errorf("joined %s (size %d), encodeJSON gives %s", got, m.size(), want)
		}
	}
	if _, err := encodeMembers(map[string]any{"x": math.Inf(1)}); err == nil ||
		!strings.Contains(err.Error(), "not JSON-serialisable") {
		t.Errorf("an infinite number: %v", err)
	}
}

func TestOffloadOrderIsLargestFirstAndNeverSmall(t *testing.T) {
	got := offloadOrder(map[string]int{"small": 1024, "big": 5000, "bigger": 9000, "tie": 5000, "tiny": 3})
	if want := []string{"bigger", "big", "tie"}; !reflect.DeepEqual(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
}

func TestOffloadStoresLargestValuesUntilTheRestFits(t *testing.T) {
	ctx := context.Background()
	store := &fileStore{name: "main", dir: t.TempDir()}
	p := payloads{stores: []payloadStore{store}, threshold: 8000}
	result := map[string]any{
		"a": strings.Repeat("a", 6000), "b": strings.Repeat("b", 5000),
		"c": strings.Repeat("c", 1000), "n": 1,
	}
	out, err := p.replyBody(ctx, result, "3f2a9c4e:step")
	if err != nil {
		t.Fatal(err)
	}
	if len(out) > p.threshold {
		t.Errorf("the reply is still %d bytes", len(out))
	}
	reply := decodeJSON(t, string(out), false).(map[string]any)
	ref, isRef := asRef(reply["a"])
	if !isRef || ref.Store != "main" || !strings.HasPrefix(ref.Key, "3f2a9c4e/") {
		t.Fatalf("the largest value was not stored: %s", out)
	}
	// Storing "a" was enough: "b" stays inline, as do the small ones.
	if reply["b"] != result["b"] || reply["c"] != result["c"] || reply["n"] != 1.0 {
		t.Errorf("the other values changed: %.200s", out)
	}
	stored, err := store.get(ctx, ref)
	if err != nil || string(stored) != `"`+result["a"].(string)+`"` {
		t.Errorf("stored %.40q, %v", stored, err)
	}
	if result["a"] != strings.Repeat("a", 6000) {
		t.Error("the handler's result was changed")
	}
	if countRefMembers(out) != 1 {
		t.Errorf("%d $ref members", countRefMembers(out))
	}
}

func TestOffloadLeavesSmallRepliesAndStorelessWorkersAlone(t *testing.T) {
	ctx := context.Background()
	result := map[string]any{"a": strings.Repeat("a", 2000)}
	body, _ := encodeJSON(result)
	dir := t.TempDir()
	for name, p := range map[string]payloads{
		"under the threshold": {stores: []payloadStore{&fileStore{name: "main", dir: dir}}, threshold: len(body)},
		"no store":            {threshold: 10},
	} {
		out, err := p.replyBody(ctx, result, "job:step")
		if err != nil || string(out) != string(body) {
			t.Errorf("%s: the reply changed: %.80s, %v", name, out, err)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("something was stored: %v", entries)
	}
	// Only values of 1 KiB or less: nothing can be stored, the reply goes inline.
	small := map[string]any{"a": strings.Repeat("a", 1000), "b": strings.Repeat("b", 1000)}
	body, _ = encodeJSON(small)
	p := payloads{stores: []payloadStore{&fileStore{name: "main", dir: dir}}, threshold: 100}
	if out, err := p.replyBody(ctx, small, "job:step"); err != nil || string(out) != string(body) {
		t.Errorf("small values were stored: %.80s, %v", out, err)
	}
}

func TestOffloadFailureIsAPayloadRefError(t *testing.T) {
	file := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	p := payloads{stores: []payloadStore{&fileStore{name: "main", dir: file}}, threshold: 10}
	result := map[string]any{"a": strings.Repeat("a", 2000)}
	_, err := p.replyBody(context.Background(), result, "job:step")
	ref := refTo("main", "job", []byte(`"`+result["a"].(string)+`"`))
	wantRefError(t, err, ref.URI(), "cannot write to file://"+file)

	_, err = p.replyBody(context.Background(), result, "bad/job:step")
	wantRefError(t, err, "wm://main/", "not a valid key segment")
}
