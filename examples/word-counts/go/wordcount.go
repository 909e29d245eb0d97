package main

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// Word counting for the segment-word-counts step, with the Python worker's rule
// (examples/word-counts/wordcount.py): NFC-normalise, lowercase, read the typographic
// apostrophe (U+2019) as ', then a word is a run of letters of any alphabet with optional
// inner apostrophes. Python's `[^\W\d_]` is exactly the letters (L), letter numbers (Nl) and
// other numbers (No), as in the JavaScript worker.
var word = regexp.MustCompile(`[\p{L}\p{Nl}\p{No}]+(?:'[\p{L}\p{Nl}\p{No}]+)*`)

// countWords returns how many times each word occurs in text.
func countWords(text string) map[string]any {
	normal := strings.ReplaceAll(pythonLower(norm.NFC.String(text)), "\u2019", "'")
	counts := map[string]any{}
	for _, w := range word.FindAllString(normal, -1) {
		n, _ := counts[w].(int)
		counts[w] = n + 1
	}
	return counts
}

// segmentWordCounts is the step: {"section": text} in, {"section": {word: count}} out.
func segmentWordCounts(data map[string]any) (map[string]any, error) {
	section, ok := data["section"].(string)
	if !ok {
		got := "no \"section\" key"
		if value, present := data["section"]; present {
			got = fmt.Sprintf("a %T", value)
		}
		return nil, &InvalidInput{fmt.Sprintf(`"section" must be a string of text, got %s`, got)}
	}
	return map[string]any{"section": countWords(section)}, nil
}

// InvalidInput is an input the step cannot process; its message goes back in x-error.
type InvalidInput struct{ Message string }

// Error returns the message.
func (e *InvalidInput) Error() string { return e.Message }

// pythonLower lowercases as Python's str.lower() does where Go's strings.ToLower differs:
// 'İ' becomes "i̇" (two code points) and a final capital sigma becomes 'ς'.
func pythonLower(text string) string {
	runes := []rune(text)
	var out strings.Builder
	out.Grow(len(text))
	for i, r := range runes {
		switch {
		case r == 'İ':
			out.WriteString("i\u0307")
		case r == 'Σ' && isFinalSigma(runes, i):
			out.WriteRune('ς')
		default:
			out.WriteRune(unicode.ToLower(r))
		}
	}
	return out.String()
}

// isFinalSigma applies Unicode's Final_Sigma condition, as CPython does: a cased letter
// before (skipping case-ignorable ones) and none after.
func isFinalSigma(runes []rune, i int) bool {
	j := i - 1
	for j >= 0 && caseIgnorable(runes[j]) {
		j--
	}
	if j < 0 || !cased(runes[j]) {
		return false
	}
	k := i + 1
	for k < len(runes) && caseIgnorable(runes[k]) {
		k++
	}
	return k == len(runes) || !cased(runes[k])
}

func cased(r rune) bool {
	return unicode.IsUpper(r) || unicode.IsLower(r) || unicode.IsTitle(r) ||
		unicode.Is(unicode.Other_Lowercase, r) || unicode.Is(unicode.Other_Uppercase, r)
}

// caseIgnorable: Word_Break MidLetter/MidNumLet/Single_Quote, or Mn, Me, Cf, Lm, Sk.
func caseIgnorable(r rune) bool {
	switch r {
	case '\'', '.', ':', '\u00b7', '\u0387', '\u05f4', '\u2018', '\u2019', '\u2024', '\u2027',
		'\ufe13', '\ufe52', '\ufe55', '\uff07', '\uff0e', '\uff1a', '\u055f', '\u00ad':
		return true
	}
	return unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf, unicode.Lm, unicode.Sk)
}
