package main

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// The expected outputs were computed with examples/word-counts/wordcount.py's count_words.
func TestCountWordsMatchesThePythonWorker(t *testing.T) {
	cases := []struct{ text, want string }{
		{"Don\u2019t 'tis keeper's rock'n'roll ''", `{"don't": 1, "tis": 1, "keeper's": 1, "rock'n'roll": 1}`},
		{"x\u00b2 \u216b a_b 1887 lamp-room", `{"x²": 1, "ⅻ": 1, "a": 1, "b": 1, "lamp": 1, "room": 1}`},
		{"cafe\u0301 CAF\u00c9", `{"café": 2}`},
		{"\u039f\u0394\u039f\u03a3 \u039f\u0394\u039f\u03a3. \u03a3 \u0391\u03a3", `{"οδος": 2, "σ": 1, "ας": 1}`},
		{"\u0130stanbul", `{"i": 1, "stanbul": 1}`},
		{"The lamp. THE LAMP, the keeper!", `{"the": 3, "lamp": 2, "keeper": 1}`},
		{"", `{}`},
	}
	for _, tc := range cases {
		var want map[string]float64
		if err := json.Unmarshal([]byte(tc.want), &want); err != nil {
			t.Fatal(err)
		}
		got := countWords(tc.text)
		if len(got) != len(want) {
			t.Errorf("%q: got %v, want %v", tc.text, got, want)
			continue
		}
		for word, n := range want {
			if got[word] != int(n) {
				t.Errorf("%q: %q counted %v, want %v (all: %v)", tc.text, word, got[word], n, got)
			}
		}
	}
}

func TestSegmentWordCountsRefusesAMissingSection(t *testing.T) {
	for _, data := range []map[string]any{{}, {"section": 3.0}} {
		_, err := segmentWordCounts(data)
		var invalid *InvalidInput
		if !errors.As(err, &invalid) || !strings.Contains(err.Error(), `"section" must be a string`) {
			t.Errorf("%v: got %v", data, err)
		}
	}
	out, err := segmentWordCounts(map[string]any{"section": "a a"})
	if err != nil || out["section"].(map[string]any)["a"] != 2 {
		t.Errorf("got %v, %v", out, err)
	}
}
