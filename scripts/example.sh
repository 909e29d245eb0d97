#!/usr/bin/env bash
# Run the word-counts example end to end against the local RabbitMQ: start the manager and
# the workers, submit one job with live progress, print the top words, stop everything.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export PATH="$PWD/.venv/bin:$PATH"

work=$(mktemp -d)
port=${PORT:-8080}
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

workflow-manager serve --config workflows.yaml --db "$work/wm.db" --port "$port" \
  >"$work/manager.log" 2>&1 &
pids+=($!)
pyworker examples/word-counts/workers.py:worker >"$work/workers.log" 2>&1 &
pids+=($!)

# Wait until the manager answers HTTP (it has declared its queues by then).
for _ in $(seq 100); do
  python -c "import urllib.request as u; u.urlopen('http://127.0.0.1:$port/healthz', timeout=1)" \
    2>/dev/null && break
  kill -0 "${pids[0]}" 2>/dev/null || { cat "$work/manager.log"; exit 1; }
  sleep 0.2
done

echo "submitting book-word-counts for examples/word-counts/book.txt"
workflow-manager submit book-word-counts --wait --api-url "http://127.0.0.1:$port" \
  --payload "{\"path\": \"$PWD/examples/word-counts/book.txt\"}" >"$work/result.json"

python - "$work/result.json" <<'PY'
import json, sys
outcome = json.load(open(sys.argv[1]))
result = outcome["result"]
print(f"\n{result.get('title', '?')}: {result['total_words']} words, "
      f"{result['distinct_words']} distinct\n\ntop words:")
for word, count in result["top_words"]:
    print(f"  {word:<12} {count}")
PY
