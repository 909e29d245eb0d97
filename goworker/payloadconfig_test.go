package goworker

import (
	"errors"
	"strings"
	"testing"
)

func envOf(values map[string]string) func(string) string {
	return func(name string) string { return values[name] }
}

func TestPayloadStoresFromTheEnvironment(t *testing.T) {
	s, err := Options{Getenv: envOf(map[string]string{
		EnvPayloadStores: " main=file:///srv/wm-payloads  pg=postgresql://wm:secret@db:5432/wm ",
	})}.resolve()
	if err != nil {
		t.Fatal(err)
	}
	p := s.payloads
	if len(p.stores) != 2 || p.threshold != DefaultPayloadRefThreshold {
		t.Fatalf("stores %d, threshold %d", len(p.stores), p.threshold)
	}
	if p.stores[0].storeName() != "main" || p.stores[0].where() != "file:///srv/wm-payloads" {
		t.Errorf("first store: %s at %s", p.stores[0].storeName(), p.stores[0].where())
	}
	if p.stores[1].storeName() != "pg" || strings.Contains(p.stores[1].where(), "secret") {
		t.Errorf("second store: %s at %s (the password must be masked)", p.stores[1].storeName(), p.stores[1].where())
	}
	p.close()
}

func TestPayloadOptionsWinOverTheEnvironment(t *testing.T) {
	s, err := Options{
		PayloadStores: "mine=file:///data", PayloadRefThreshold: 4096,
		Getenv: envOf(map[string]string{
			EnvPayloadStores: "env=file:///elsewhere", EnvPayloadRefThreshold: "10",
		}),
	}.resolve()
	if err != nil {
		t.Fatal(err)
	}
	if len(s.payloads.stores) != 1 || s.payloads.stores[0].storeName() != "mine" || s.payloads.threshold != 4096 {
		t.Errorf("got %d store(s), threshold %d", len(s.payloads.stores), s.payloads.threshold)
	}
	s, err = Options{Getenv: envOf(map[string]string{EnvPayloadRefThreshold: "1000"})}.resolve()
	if err != nil || len(s.payloads.stores) != 0 || s.payloads.threshold != 1000 {
		t.Errorf("no store, threshold from the environment: %+v, %v", s.payloads, err)
	}
}

func TestBadPayloadSettingsStopTheWorker(t *testing.T) {
	env := "environment variable " + EnvPayloadStores
	cases := []struct {
		options Options
		want    []string
	}{
		{Options{Getenv: envOf(map[string]string{EnvPayloadStores: "file:///srv/x"})},
			[]string{env, `entry "file:///srv/x"`, "not NAME=URL"}},
		{Options{Getenv: envOf(map[string]string{EnvPayloadStores: "main="})},
			[]string{env, `entry "main="`, "not NAME=URL"}},
		{Options{Getenv: envOf(map[string]string{EnvPayloadStores: "main=file:///a Big=file:///b"})},
			[]string{env, `entry "Big=file:///b"`, "store name"}},
		{Options{Getenv: envOf(map[string]string{EnvPayloadStores: "main=s3://bucket/x"})},
			[]string{env, `entry "main=s3://bucket/x"`, `unknown URL scheme "s3"`}},
		{Options{Getenv: envOf(map[string]string{EnvPayloadStores: "main=/srv/x"})},
			[]string{env, `unknown URL scheme "(none)"`}},
		{Options{Getenv: envOf(map[string]string{EnvPayloadStores: "main=file://srv/x"})},
			[]string{env, `entry "main=file://srv/x"`, "file:///<absolute directory>"}},
		{Options{Getenv: envOf(map[string]string{EnvPayloadStores: "main=file:relative/x"})},
			[]string{env, "file:///<absolute directory>"}},
		{Options{Getenv: envOf(map[string]string{EnvPayloadStores: "main=file:///a main=file:///b"})},
			[]string{env, `store "main" is named twice`}},
		{Options{Getenv: envOf(map[string]string{EnvPayloadStores: "pg=postgresql://u:secret@h:x/db"})},
			[]string{env, `entry "pg=postgresql://******@h:x/db"`, `not a URL (invalid port ":x" after host)`}},
		{Options{PayloadStores: "x=ftp://host/"},
			[]string{"Options.PayloadStores", `entry "x=ftp://host/"`, "unknown URL scheme"}},
		{Options{Getenv: envOf(map[string]string{EnvPayloadRefThreshold: "256k"})},
			[]string{"environment variable " + EnvPayloadRefThreshold, `"256k" is not a number of bytes`}},
		{Options{Getenv: envOf(map[string]string{EnvPayloadRefThreshold: "0"})},
			[]string{EnvPayloadRefThreshold, `"0" is not a number of bytes`}},
		{Options{PayloadRefThreshold: -5},
			[]string{"Options.PayloadRefThreshold: -5"}},
	}
	for _, tc := range cases {
		if tc.options.Getenv == nil {
			tc.options.Getenv = envOf(nil)
		}
		_, err := tc.options.resolve()
		var settingsErr *SettingsError
		if !errors.As(err, &settingsErr) {
			t.Errorf("%v: want a SettingsError, got %v", tc.want, err)
			continue
		}
		for _, want := range tc.want {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%q does not say %q", err, want)
			}
		}
		if strings.Contains(err.Error(), "secret") {
			t.Errorf("the password leaked: %v", err)
		}
	}
}
