#!/bin/sh
# The word-counts example's `segment-word-counts` step for `pyworker exec`, in sh and awk:
# reads {"section": "<text>", ...} on stdin, prints {"section": {"<word>": <count>, ...}}.
#   pyworker exec segment-word-counts -- examples/exec/word-count.sh
# The rules are those of examples/word-counts/wordcount.py; see README.md for the one place
# where this script differs (letters outside ASCII are not lowercased).
set -eu
LC_ALL=C  # awk works on bytes: a UTF-8 letter is kept whole, byte by byte
export LC_ALL
exec awk -f "$(dirname "$0")/wordcount.awk"
