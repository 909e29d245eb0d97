# Word counts of the "section" string of a JSON object read on stdin (run by word-count.sh).
# A word is a run of letters with single apostrophes inside ("don't"); ASCII letters are
# lowercased; digits, '_', '-' and other ASCII punctuation separate words. Bytes of UTF-8
# characters count as letters, except common punctuation (U+0080-U+00BF but for the numerals
# and letters there, U+00D7, U+00F7 and U+2000-U+207F), and U+2019 (’) is an apostrophe.

function fail(message) {
    print "word-count.sh: " message > "/dev/stderr"
    failed = 1
    exit 1
}

function at() { return substr(doc, pos, 1) }

function skip_space() { while (pos <= n && index(" \t\r\n", at()) > 0) pos++ }

# The raw (still escaped) text of the JSON string starting at pos; pos moves past it.
function read_string(    start, c) {
    pos++
    start = pos
    while (pos <= n) {
        c = at()
        if (c == "\\") pos += 2
        else if (c == "\"") { pos++; return substr(doc, start, pos - 1 - start) }
        else pos++
    }
    fail("the input is not valid JSON: a string is not closed")
}

# Skip the JSON value at pos (a nested object or array by counting brackets outside strings).
function skip_value(    depth, c) {
    if (at() == "\"") { read_string(); return }
    depth = 0
    while (pos <= n) {
        c = at()
        if (c == "\"") { read_string(); continue }
        if (c == "{" || c == "[") depth++
        else if (c == "}" || c == "]") { if (depth == 0) return; depth-- }
        else if (c == "," && depth == 0) return
        pos++
        if (depth == 0 && (at() == "," || at() == "}")) return
    }
}

function section_of(    key, text, found) {
    pos = 1
    skip_space()
    if (at() != "{") fail("the input must be a JSON object")
    pos++
    while (1) {
        skip_space()
        if (at() == "}") break
        if (at() != "\"") fail("the input is not valid JSON (expected a key at byte " pos ")")
        key = read_string()
        skip_space()
        if (at() != ":") fail("the input is not valid JSON (expected ':' at byte " pos ")")
        pos++
        skip_space()
        if (key == "section") {
            if (at() != "\"") fail("\"section\" must be a string of text")
            text = read_string()
            found = 1
        } else skip_value()
        skip_space()
        if (at() == ",") { pos++; continue }
        if (at() == "}") break
        fail("the input is not valid JSON (expected ',' or '}' at byte " pos ")")
    }
    if (!found) fail("the input has no \"section\" (the text to count)")
    return text
}

# Whether code point cp separates words (see the top of the file); U+2019 is handled before.
function separates(cp) {
    if (cp < 128) return 0  # not used for ASCII
    if (cp <= 191) return !(cp == 170 || cp == 178 || cp == 179 || cp == 181 || cp == 185 \
                            || cp == 186 || (cp >= 188 && cp <= 190))
    return cp == 215 || cp == 247 || (cp >= 8192 && cp <= 8319)
}

function flush(    count_parts, parts, k, w) {
    if (token == "") return
    gsub(/''+/, " ", token)  # two apostrophes in a row end a word
    count_parts = split(token, parts, " ")
    for (k = 1; k <= count_parts; k++) {
        w = parts[k]
        sub(/^'+/, "", w)
        sub(/'+$/, "", w)
        if (w == "") continue
        if (!(w in counts)) order[++words] = w
        counts[w]++
    }
    token = ""
}

function letter(text) { token = token text }

function ascii(c) {
    if (c ~ /[A-Za-z]/) letter(tolower(c))
    else if (c == "'") letter(c)
    else flush()
}

# A \uXXXX escape at i: an apostrophe, an ASCII character, a separator or a letter (kept as is).
function escaped_unicode(hex,    cp) {
    cp = hex_value(hex)
    if (cp == 8217) letter("'")
    else if (cp < 128) ascii(sprintf("%c", cp))
    else if (separates(cp)) flush()
    else letter("\\u" hex)
}

function hex_value(hex,    k, v) {
    v = 0
    for (k = 1; k <= 4; k++) v = v * 16 + index("0123456789abcdef", tolower(substr(hex, k, 1))) - 1
    return v
}

# The code point of the UTF-8 sequence at i when it starts with 0xC2 or 0xE2, else 0.
function lead_code_point(i,    b1, b2, b3) {
    b1 = byte[substr(text, i, 1)]
    b2 = byte[substr(text, i + 1, 1)] % 64
    if (b1 == 194) return 128 + b2
    if (b1 == 195) return 192 + b2
    b3 = byte[substr(text, i + 2, 1)] % 64
    if (b1 == 226) return 8192 + (byte[substr(text, i + 1, 1)] - 128) * 64 + b3
    return 0
}

function count(    i, c, e, cp, size) {
    size = length(text)
    i = 1
    while (i <= size) {
        c = substr(text, i, 1)
        if (c == "\\") {
            e = substr(text, i + 1, 1)
            if (e == "u") { escaped_unicode(substr(text, i + 2, 4)); i += 6 }
            else { flush(); i += 2 }  # \n \t \" \\ \/ ...: none is a letter
        } else if (byte[c] >= 128) {
            cp = (c == "\302" || c == "\303" || c == "\342") ? lead_code_point(i) : 0
            if (cp == 8217) { letter("'"); i += 3 }
            else if (cp > 0 && separates(cp)) { flush(); i += (cp >= 2048 ? 3 : 2) }
            else { letter(c); i++ }
        } else { ascii(c); i++ }
    }
    flush()
}

BEGIN { for (b = 1; b < 256; b++) byte[sprintf("%c", b)] = b }
{ doc = doc $0 "\n" }
END {
    if (failed) exit 1
    n = length(doc)
    text = section_of()
    count()
    printf "{\"section\": {"
    for (k = 1; k <= words; k++) printf "%s\"%s\": %d", (k > 1 ? ", " : ""), order[k], counts[order[k]]
    print "}}"
}
