package goworker

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Payloads by reference (docs/protocol.md, "Payloads by reference"): a large value is stored
// once in a payload store and travels as {"$ref": "wm://<store>/<key>", "sha256", "size"}.
// This file holds the reference format; payloadconfig.go reads the configuration,
// payloadstores.go and pgstore.go are the stores, payloadresolve.go resolves a request's
// references and payloadoffload.go stores a large reply's values.

// HeaderPayloadRefs is carried by a message whose body holds references: how many "$ref"s.
const HeaderPayloadRefs = "x-payload-refs"

const (
	refScheme   = "wm://"
	maxKeyChars = 512
)

var (
	storeNamePattern  = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)
	keySegmentPattern = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)
	sha256Pattern     = regexp.MustCompile(`^[0-9a-f]{64}$`)
	refMemberText     = []byte(`"$ref":`) // a member named $ref, as JSON encodes it
)

// Ref is a reference to Size bytes of JSON text with SHA-256 SHA256, under Key in Store.
type Ref struct {
	Store  string
	Key    string
	SHA256 string
	Size   int64
}

// URI is "wm://<store>/<key>": what a message carries and what errors name.
func (r Ref) URI() string { return refScheme + r.Store + "/" + r.Key }

// object is the reference object as a message carries it.
func (r Ref) object() map[string]any {
	return map[string]any{"$ref": r.URI(), "sha256": r.SHA256, "size": r.Size}
}

// asRef tells whether value is a reference object: exactly the members "$ref" (a string
// starting "wm://"), "sha256" and "size". A malformed one is still taken as a reference (it
// then fails to resolve, loudly, rather than reaching the handler as data); problem says why.
func asRef(value any) (Ref, bool) {
	object, ok := value.(map[string]any)
	if !ok || len(object) != 3 {
		return Ref{}, false
	}
	uri, ok := object["$ref"].(string)
	if !ok || !strings.HasPrefix(uri, refScheme) {
		return Ref{}, false
	}
	digest, hasDigest := object["sha256"]
	size, hasSize := object["size"]
	if !hasDigest || !hasSize {
		return Ref{}, false
	}
	store, key, _ := strings.Cut(strings.TrimPrefix(uri, refScheme), "/")
	ref := Ref{Store: store, Key: key, Size: -1}
	ref.SHA256, _ = digest.(string)
	if n, ok := wholeNumber(size); ok {
		ref.Size = n
	}
	return ref, true
}

// wholeNumber reads a JSON number decoded as float64 or json.Number (or a Go integer) as an int64.
func wholeNumber(value any) (int64, bool) {
	switch v := value.(type) {
	case int:
		return int64(v), true
	case int64:
		return v, true
	case float64:
		if v == float64(int64(v)) {
			return int64(v), true
		}
	case json.Number:
		n, err := strconv.ParseInt(string(v), 10, 64)
		return n, err == nil
	}
	return 0, false
}

// problem says what is malformed in ref (store name, key, digest, size), or "".
func (r Ref) problem() string {
	switch {
	case !validStoreName(r.Store):
		return "the store name must match [a-z0-9][a-z0-9_-]* (at most 63 characters)"
	case !validKey(r.Key):
		return "the key must be /-separated segments of [A-Za-z0-9._-], none '.' or '..', " +
			"at most 512 characters"
	case !sha256Pattern.MatchString(r.SHA256):
		return "sha256 must be 64 lowercase hex digits"
	case r.Size < 0:
		return "size must be a whole number of bytes, 0 or more"
	}
	return ""
}

// validStoreName tells whether name is a store name: [a-z0-9][a-z0-9_-]*, at most 63.
func validStoreName(name string) bool { return storeNamePattern.MatchString(name) }

// validKey tells whether key is /-joined segments of [A-Za-z0-9._-], none "." or "..", at most
// 512 characters: safe to map to a path under a file store's directory.
func validKey(key string) bool {
	if key == "" || len(key) > maxKeyChars {
		return false
	}
	for _, segment := range strings.Split(key, "/") {
		if !keySegmentPattern.MatchString(segment) || segment == "." || segment == ".." {
			return false
		}
	}
	return true
}

// replaceRefs returns value with every reference at any depth replaced by what resolve gives
// for it. Maps and lists are changed in place; the first error stops the walk.
func replaceRefs(value any, resolve func(Ref) (any, error)) (any, error) {
	if ref, ok := asRef(value); ok {
		return resolve(ref)
	}
	switch v := value.(type) {
	case map[string]any:
		for key, item := range v {
			replaced, err := replaceRefs(item, resolve)
			if err != nil {
				return nil, err
			}
			v[key] = replaced
		}
	case []any:
		for i, item := range v {
			replaced, err := replaceRefs(item, resolve)
			if err != nil {
				return nil, err
			}
			v[i] = replaced
		}
	}
	return value, nil
}

// countRefMembers is how many "$ref" members the JSON text body has: the x-payload-refs value.
// A byte count, not a parse (the header is a hint to look, so a "$ref" member that is not part
// of a reference counting too is harmless).
func countRefMembers(body []byte) int { return bytes.Count(body, refMemberText) }

// jobSegment is the key segment a stored value's job gets: the correlation id before its first
// ':' (the job's uuid), checked to be a valid key segment.
func jobSegment(correlationID string) (string, error) {
	job, _, _ := strings.Cut(correlationID, ":")
	if strings.Contains(job, "/") || !validKey(job) {
		return "", fmt.Errorf("job id %q (from correlation_id %q) is not a valid key segment",
			job, correlationID)
	}
	return job, nil
}
