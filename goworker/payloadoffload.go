package goworker

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
)

// minStoredBytes: a value this small or smaller is never stored (a reference is ~200 bytes).
const minStoredBytes = 1024

// member is one top-level member of a reply: its key and its value, each as JSON text.
type member struct {
	name  string
	key   []byte
	value []byte
}

// members are a reply's members in encoding/json's order for a map (keys sorted), so that
// joining them gives the very text encodeJSON gives for the map. Each value is encoded once,
// which matters for a reply of many megabytes.
type members []member

// replyBody is the JSON text of a handler's result (nil is {}). When the worker has a store
// and the text is larger than the threshold, its largest top-level values are stored first.
func (p payloads) replyBody(ctx context.Context, result map[string]any, correlationID string) ([]byte, error) {
	if len(p.stores) == 0 {
		return encodeResult(result)
	}
	m, err := encodeMembers(result)
	if err != nil {
		return nil, err
	}
	if m.size() > p.threshold {
		if err := p.offload(ctx, m, correlationID); err != nil {
			return nil, err
		}
	}
	return m.join(), nil
}

// encodeMembers encodes each member of result; InvalidResultError if one is not JSON.
func encodeMembers(result map[string]any) (members, error) {
	m := make(members, 0, len(result))
	for name, value := range result {
		key, _ := encodeJSON(name) // a string always encodes
		text, err := encodeJSON(value)
		if err != nil {
			return nil, invalidResult(err)
		}
		m = append(m, member{name: name, key: key, value: text})
	}
	sort.Slice(m, func(i, j int) bool { return m[i].name < m[j].name })
	return m, nil
}

// size is the length of join's text.
func (m members) size() int {
	size := 2 // {}
	if len(m) > 0 {
		size += 2*len(m) - 1 // a ':' per member, a ',' between two
	}
	for _, mem := range m {
		size += len(mem.key) + len(mem.value)
	}
	return size
}

// join is the JSON object of the members.
func (m members) join() []byte {
	out := bytes.NewBuffer(make([]byte, 0, m.size()))
	out.WriteByte('{')
	for i, mem := range m {
		if i > 0 {
			out.WriteByte(',')
		}
		out.Write(mem.key)
		out.WriteByte(':')
		out.Write(mem.value)
	}
	out.WriteByte('}')
	return out.Bytes()
}

// offload stores values of m in the first store, largest first and none of minStoredBytes or
// less, replacing each by its reference, until m's text is no larger than the threshold. The
// key is "<job>/<sha256>", the job being the correlation id's part before its first ':'.
func (p payloads) offload(ctx context.Context, m members, correlationID string) error {
	store := p.stores[0]
	job, err := jobSegment(correlationID)
	if err != nil {
		return &PayloadRefError{URI: refScheme + store.storeName() + "/",
			Reason: "cannot store a reply's value: " + err.Error()}
	}
	sizes := make(map[string]int, len(m))
	index := make(map[string]int, len(m))
	for i, mem := range m {
		sizes[mem.name], index[mem.name] = len(mem.value), i
	}
	total := m.size()
	for _, name := range offloadOrder(sizes) {
		if total <= p.threshold {
			break
		}
		mem := &m[index[name]]
		digest := sha256.Sum256(mem.value)
		hexDigest := hex.EncodeToString(digest[:])
		ref := Ref{Store: store.storeName(), Key: job + "/" + hexDigest, SHA256: hexDigest,
			Size: int64(len(mem.value))}
		if err := store.put(ctx, ref, mem.value); err != nil {
			return &PayloadRefError{URI: ref.URI(), Reason: fmt.Sprintf(
				"cannot write to %s: %v", store.where(), err)}
		}
		refText, _ := encodeJSON(ref.object())
		total -= len(mem.value) - len(refText)
		mem.value = refText
	}
	return nil
}

// offloadOrder lists the members whose values may be stored, largest value first (ties by
// name): those larger than minStoredBytes.
func offloadOrder(sizes map[string]int) []string {
	var names []string
	for name, size := range sizes {
		if size > minStoredBytes {
			names = append(names, name)
		}
	}
	sort.Slice(names, func(i, j int) bool {
		if sizes[names[i]] != sizes[names[j]] {
			return sizes[names[i]] > sizes[names[j]]
		}
		return names[i] < names[j]
	})
	return names
}
