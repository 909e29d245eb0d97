#!/bin/sh
# An echo step for `pyworker exec` (and the conformance kit): prints its input unchanged,
# or fails with "asked to fail" when the input has "fail": true.
#   QUEUE=echo pyworker exec "$QUEUE" -- examples/exec/echo.sh
set -eu
input=$(cat)
if printf '%s' "$input" | grep -Eq '"fail"[[:space:]]*:[[:space:]]*true'; then
  echo "asked to fail" >&2
  exit 1
fi
printf '%s\n' "$input"
