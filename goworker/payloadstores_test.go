package goworker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// refTo is the reference a party storing data for job in store would write.
func refTo(store, job string, data []byte) Ref {
	digest := sha256.Sum256(data)
	hexDigest := hex.EncodeToString(digest[:])
	return Ref{Store: store, Key: job + "/" + hexDigest, SHA256: hexDigest, Size: int64(len(data))}
}

// wantRefError fails unless err is a PayloadRefError for uri whose reason contains want.
func wantRefError(t *testing.T, err error, uri, want string) {
	t.Helper()
	var refErr *PayloadRefError
	if !errors.As(err, &refErr) || refErr.URI != uri || !strings.Contains(refErr.Reason, want) {
		t.Fatalf("want PayloadRefError for %s saying %q, got %v", uri, want, err)
	}
	if errorTypeOf(err) != "PayloadRefError" {
		t.Errorf("x-error-type %q", errorTypeOf(err))
	}
}

func TestFileStorePutThenGet(t *testing.T) {
	ctx := context.Background()
	store := &fileStore{name: "main", dir: t.TempDir()}
	data := []byte(`{"pages": [1, 2, 3]}`)
	ref := refTo("main", "job-1", data)
	if err := store.put(ctx, ref, data); err != nil {
		t.Fatal(err)
	}
	got, err := store.get(ctx, ref)
	if err != nil || string(got) != string(data) {
		t.Fatalf("got %q, %v", got, err)
	}
	info, err := os.Stat(filepath.Join(store.dir, "job-1", ref.SHA256))
	if err != nil || info.Mode().Perm() != 0o644 {
		t.Errorf("the value's file: %v, %v", info, err)
	}
	leftovers, _ := filepath.Glob(filepath.Join(store.dir, "job-1", ".*"))
	if len(leftovers) != 0 {
		t.Errorf("temporary files left: %v", leftovers)
	}
	// The same key always holds the same bytes: a second put leaves the file alone.
	path := filepath.Join(store.dir, filepath.FromSlash(ref.Key))
	if err := os.WriteFile(path, []byte("left alone"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := store.put(ctx, ref, data); err != nil {
		t.Fatal(err)
	}
	if kept, _ := os.ReadFile(path); string(kept) != "left alone" {
		t.Errorf("an existing key was overwritten: %q", kept)
	}
}

func TestFileStoreGetFailures(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	store := &fileStore{name: "main", dir: dir}
	data := []byte(`"stored"`)
	ref := refTo("main", "job-1", data)

	_, err := store.get(ctx, ref)
	wantRefError(t, err, ref.URI(), "not found in file://"+dir)

	if err := os.MkdirAll(filepath.Join(dir, "job-1"), 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "job-1", ref.SHA256)
	if err := os.WriteFile(path, []byte(`"stored!"`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = store.get(ctx, ref)
	wantRefError(t, err, ref.URI(), "holds 9 bytes, not 8")

	if err := os.WriteFile(path, []byte(`"STORED"`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = store.get(ctx, ref)
	wantRefError(t, err, ref.URI(), "do not match its sha256")

	gone := &fileStore{name: "main", dir: filepath.Join(dir, "not-mounted")}
	_, err = gone.get(ctx, ref)
	wantRefError(t, err, ref.URI(), "is not a directory (not mounted?)")
}

func TestResolveReplacesReferencesWithStoredValues(t *testing.T) {
	ctx := context.Background()
	store := &fileStore{name: "main", dir: t.TempDir()}
	p := payloads{stores: []payloadStore{store}, threshold: DefaultPayloadRefThreshold}
	report := []byte(`{"title":"big","n":12345678901234567890}`)
	ref := refTo("main", "job-1", report)
	if err := store.put(ctx, ref, report); err != nil {
		t.Fatal(err)
	}
	data := map[string]any{
		"report":   ref.object(),
		"gathered": []any{map[string]any{"r": ref.object()}},
		"pages":    412,
	}
	if err := p.resolve(ctx, data, true); err != nil {
		t.Fatal(err)
	}
	got, _ := encodeJSON(data)
	want := `{"gathered":[{"r":{"n":12345678901234567890,"title":"big"}}],"pages":412,` +
		`"report":{"n":12345678901234567890,"title":"big"}}`
	if string(got) != want {
		t.Errorf("resolved to %s\nwant %s", got, want)
	}
}

func TestResolveFailuresNameTheReference(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	p := payloads{stores: []payloadStore{&fileStore{name: "main", dir: dir}, &fileStore{name: "b", dir: dir}}}
	missing := refTo("main", "job-1", []byte(`"absent"`))
	elsewhere := refTo("other", "job-1", []byte(`"x"`))
	malformed := Ref{Store: "main", Key: "job-1/../../etc/passwd", SHA256: testDigest, Size: 1}
	notJSON := refTo("main", "job-1", []byte(`{"open": `))
	if err := p.stores[0].put(ctx, notJSON, []byte(`{"open": `)); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		ref  Ref
		p    payloads
		want string
	}{
		{missing, p, "not found in file://" + dir},
		{elsewhere, p, `no store named "other": this worker's stores are main, b (WM_PAYLOAD_STORES)`},
		{elsewhere, payloads{}, `no store named "other": this worker has no payload store (set WM_PAYLOAD_STORES)`},
		{malformed, p, "the key must be"},
		{notJSON, p, "the stored value is not JSON"},
	} {
		err := tc.p.resolve(ctx, map[string]any{"deep": []any{tc.ref.object()}}, false)
		wantRefError(t, err, tc.ref.URI(), tc.want)
		message := errorReply(err, 1).headers[HeaderError]
		if message != "PayloadRefError: "+tc.ref.URI()+": "+err.(*PayloadRefError).Reason {
			t.Errorf("x-error %q", message)
		}
	}
}

func TestUnreachablePostgresStoreIsAPayloadRefError(t *testing.T) {
	store := newPGStore("pg", "postgresql://wm:secret@"+closedPort(t)+"/wm")
	defer store.close()
	ref := refTo("pg", "job-1", []byte(`"x"`))
	_, err := store.get(context.Background(), ref)
	wantRefError(t, err, ref.URI(), "cannot read postgresql://wm:******@")
	if !strings.Contains(err.Error(), "connection refused") || strings.Contains(err.Error(), "secret") {
		t.Errorf("%v: want the cause, without the password", err)
	}
}
