package goworker

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// payloads is a worker's configuration of payloads by reference.
type payloads struct {
	stores    []payloadStore // replies are stored in the first
	threshold int            // a reply whose JSON text is larger has its large values stored
}

// byName is the store references name `name`, or nil.
func (p payloads) byName(name string) payloadStore {
	for _, store := range p.stores {
		if store.storeName() == name {
			return store
		}
	}
	return nil
}

// close lets go of every store's connections.
func (p payloads) close() {
	for _, store := range p.stores {
		store.close() //nolint:errcheck // nothing to do about a failed close at the end
	}
}

// resolve replaces every reference in a request's data, at any depth, by the value it names;
// a PayloadRefError for the first that cannot be resolved. A reference met twice is read once.
func (p payloads) resolve(ctx context.Context, data map[string]any, useNumber bool) error {
	read := map[Ref][]byte{}
	resolveOne := func(ref Ref) (any, error) {
		text, ok := read[ref]
		if !ok {
			var err error
			if text, err = p.read(ctx, ref); err != nil {
				return nil, err
			}
			read[ref] = text
		}
		return decodeStored(ref, text, useNumber)
	}
	for key, value := range data {
		resolved, err := replaceRefs(value, resolveOne)
		if err != nil {
			return err
		}
		data[key] = resolved
	}
	return nil
}

// read fetches the bytes ref names from the store its name maps to, checked.
func (p payloads) read(ctx context.Context, ref Ref) ([]byte, error) {
	if problem := ref.problem(); problem != "" {
		return nil, &PayloadRefError{URI: ref.URI(), Reason: problem}
	}
	store := p.byName(ref.Store)
	if store == nil {
		return nil, &PayloadRefError{URI: ref.URI(), Reason: p.unknownStore(ref.Store)}
	}
	return store.get(ctx, ref)
}

// unknownStore explains a reference to a store this worker has no location for.
func (p payloads) unknownStore(name string) string {
	if len(p.stores) == 0 {
		return fmt.Sprintf("no store named %q: this worker has no payload store (set %s)",
			name, EnvPayloadStores)
	}
	names := make([]string, len(p.stores))
	for i, store := range p.stores {
		names[i] = store.storeName()
	}
	return fmt.Sprintf("no store named %q: this worker's stores are %s (%s)",
		name, strings.Join(names, ", "), EnvPayloadStores)
}

// decodeStored parses a stored value's JSON text.
func decodeStored(ref Ref, text []byte, useNumber bool) (any, error) {
	if !utf8.Valid(text) {
		return nil, &PayloadRefError{URI: ref.URI(), Reason: "the stored value is not valid UTF-8"}
	}
	decoder := json.NewDecoder(bytes.NewReader(text))
	if useNumber {
		decoder.UseNumber()
	}
	var value any
	err := decoder.Decode(&value)
	if err == nil && decoder.More() {
		err = fmt.Errorf("extra data after the JSON value")
	}
	if err != nil {
		return nil, &PayloadRefError{URI: ref.URI(), Reason: fmt.Sprintf(
			"the stored value is not JSON (%v)", err)}
	}
	return value, nil
}
