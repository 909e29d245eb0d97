package goworker

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// The environment variables that configure payloads by reference when Options leave them unset.
const (
	EnvPayloadStores       = "WM_PAYLOAD_STORES"
	EnvPayloadRefThreshold = "WM_PAYLOAD_REF_THRESHOLD"
)

// DefaultPayloadRefThreshold is the reply size (bytes of JSON) above which a worker with a
// payload store sends its large values by reference: 256 KiB.
const DefaultPayloadRefThreshold = 256 * 1024

// storeExample is shown in configuration errors.
const storeExample = "main=file:///srv/wm-payloads"

// storeSpec is one "NAME=URL" entry of the payload stores' configuration.
type storeSpec struct {
	name string
	url  string
}

// resolvePayloads reads the stores and the threshold from the options, else the environment,
// and opens the stores (a PostgreSQL store connects at its first use).
func resolvePayloads(o Options, getenv func(string) string) (payloads, error) {
	storesText, storesSource := o.PayloadStores, "Options.PayloadStores"
	if strings.TrimSpace(storesText) == "" {
		storesText, storesSource = getenv(EnvPayloadStores), "environment variable "+EnvPayloadStores
	}
	specs, err := parseStores(storesText, storesSource)
	if err != nil {
		return payloads{}, err
	}
	threshold, err := resolveThreshold(o.PayloadRefThreshold, getenv)
	if err != nil {
		return payloads{}, err
	}
	p := payloads{threshold: threshold}
	for _, spec := range specs {
		p.stores = append(p.stores, openStore(spec))
	}
	return p, nil
}

// resolveThreshold is explicit when set, else $WM_PAYLOAD_REF_THRESHOLD, else the default.
func resolveThreshold(explicit int, getenv func(string) string) (int, error) {
	if explicit < 0 {
		return 0, &SettingsError{fmt.Sprintf(
			"Options.PayloadRefThreshold: %d must be a number of bytes, 1 or more", explicit)}
	}
	if explicit > 0 {
		return explicit, nil
	}
	text := strings.TrimSpace(getenv(EnvPayloadRefThreshold))
	if text == "" {
		return DefaultPayloadRefThreshold, nil
	}
	threshold, err := strconv.Atoi(text)
	if err != nil || threshold < 1 {
		return 0, &SettingsError{fmt.Sprintf(
			"environment variable %s: %q is not a number of bytes, 1 or more (default %d)",
			EnvPayloadRefThreshold, text, DefaultPayloadRefThreshold)}
	}
	return threshold, nil
}

// parseStores reads "NAME=URL NAME=URL ..." (spaces between) in order; source names where the
// text came from, for the SettingsError that a bad entry gives.
func parseStores(text, source string) ([]storeSpec, error) {
	var specs []storeSpec
	seen := map[string]bool{}
	for _, entry := range strings.Fields(text) {
		spec, why := parseStore(entry)
		if why == "" && seen[spec.name] {
			why = fmt.Sprintf("store %q is named twice", spec.name)
		}
		if why != "" {
			return nil, &SettingsError{fmt.Sprintf("%s: entry %q: %s", source, maskEntry(entry), why)}
		}
		seen[spec.name] = true
		specs = append(specs, spec)
	}
	return specs, nil
}

// parseStore reads one "NAME=URL" entry; what is wrong with it, or "".
func parseStore(entry string) (storeSpec, string) {
	name, raw, found := strings.Cut(entry, "=")
	if !found || name == "" || raw == "" {
		return storeSpec{}, "not NAME=URL (e.g. " + storeExample + ")"
	}
	if !validStoreName(name) {
		return storeSpec{}, fmt.Sprintf(
			"store name %q must match [a-z0-9][a-z0-9_-]* (at most 63 characters)", name)
	}
	u, err := url.Parse(raw)
	if err != nil {
		var urlErr *url.Error // its message repeats the URL, password included: not shown
		if errors.As(err, &urlErr) {
			err = urlErr.Err
		}
		return storeSpec{}, fmt.Sprintf("not a URL (%v)", err)
	}
	switch u.Scheme {
	case "file":
		if (u.Host != "" && u.Host != "localhost") || u.Opaque != "" || !strings.HasPrefix(u.Path, "/") {
			return storeSpec{}, "a file store's URL must be file:///<absolute directory>, " +
				"e.g. file:///srv/wm-payloads"
		}
	case "postgresql", "postgres":
	default:
		scheme := u.Scheme
		if scheme == "" {
			scheme = "(none)"
		}
		return storeSpec{}, fmt.Sprintf(
			"unknown URL scheme %q; use file:///<directory> or postgresql://...", scheme)
	}
	return storeSpec{name: name, url: raw}, ""
}

// maskEntry hides the password of a "NAME=URL" entry's URL.
func maskEntry(entry string) string {
	if name, raw, found := strings.Cut(entry, "="); found {
		return name + "=" + MaskURL(raw)
	}
	return MaskURL(entry)
}

// openStore returns the store spec names (parseStore checked its URL).
func openStore(spec storeSpec) payloadStore {
	u, _ := url.Parse(spec.url)
	if u.Scheme == "file" {
		return &fileStore{name: spec.name, dir: u.Path}
	}
	return newPGStore(spec.name, spec.url)
}
