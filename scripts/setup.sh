#!/usr/bin/env bash
# Prepare a machine: RabbitMQ running on 127.0.0.1:5672, Node.js for the JS worker,
# and a virtualenv in .venv with the project and its test tools installed.
set -euo pipefail
cd "$(dirname "$0")/.."

broker_up() { (exec 3<>/dev/tcp/127.0.0.1/5672) 2>/dev/null; }

apt_install() {
  if command -v apt-get >/dev/null 2>&1; then
    echo "setup: installing $* with apt-get" >&2
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
  else
    return 1
  fi
}

if ! broker_up; then
  if ! command -v rabbitmq-server >/dev/null 2>&1; then
    apt_install rabbitmq-server || {
      echo "setup: RabbitMQ is not installed and apt-get is not available." >&2
      echo "       Start one with: docker compose up -d rabbitmq" >&2
      exit 1
    }
  fi
  echo "setup: starting RabbitMQ" >&2
  rabbitmq-server -detached || true
  timeout 120 rabbitmqctl await_startup >/dev/null
  for _ in $(seq 60); do broker_up && break; sleep 1; done
  broker_up || { echo "setup: RabbitMQ did not come up on 127.0.0.1:5672" >&2; exit 1; }
fi

# PostgreSQL (for the PostgreSQL journal's tests) is provided, not installed: CI runs one on
# 127.0.0.1:5432 (trust auth, user postgres; TEST_PG_URL for another). Without it those tests skip.
if ! (exec 3<>/dev/tcp/127.0.0.1/5432) 2>/dev/null; then
  echo "setup: no PostgreSQL on 127.0.0.1:5432; the PostgreSQL journal tests will be skipped" >&2
fi

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  apt_install nodejs npm || echo "setup: Node.js missing; the JS worker and UI JavaScript tests will be skipped" >&2
fi
if ! command -v go >/dev/null 2>&1 \
  || [ ! -f /usr/share/gocode/src/github.com/rabbitmq/amqp091-go/go.mod ] \
  || [ ! -f /usr/share/gocode/src/golang.org/x/text/go.mod ] \
  || [ ! -f /usr/share/gocode/src/github.com/lib/pq/go.mod ]; then
  # goworker builds offline against Debian's Go toolchain and packaged libraries.
  apt_install golang-go golang-github-rabbitmq-amqp091-go-dev golang-golang-x-text-dev \
    golang-github-lib-pq-dev \
    || echo "setup: Go or its packaged libraries are missing; the Go worker tests will be skipped" >&2
fi
if [ ! -x /usr/bin/chromium ]; then
  # The web UI tests drive Debian's Chromium through Playwright (no browser download).
  apt_install chromium || echo "setup: Chromium missing; the web UI tests will be skipped" >&2
fi
if command -v npm >/dev/null 2>&1; then
  # jsworker, the example's JavaScript worker and the web UI's lint and tests (ui-tests: ESLint):
  # their locked dependencies, from the registry.
  for dir in jsworker examples/word-counts/js ui-tests; do
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error >/dev/null) || {
      echo "setup: npm ci failed in $dir" >&2
      exit 1
    }
  done
fi

PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
log=$(mktemp)
if ! { .venv/bin/python -m pip install -q --upgrade pip && .venv/bin/python -m pip install -q -e '.[test]'; } >"$log" 2>&1; then
  cat "$log" >&2
  echo "setup: installing the project into .venv failed (log above)" >&2
  exit 1
fi
rm -f "$log"
# An editable install compiles none of the project's modules. Where PYTHONDONTWRITEBYTECODE
# is set (as on this project's machines), each manager, worker and test process would compile
# them again at its start (a quarter of a second of CPU per manager); compiled once here, they
# are read instead. A module changed later is compiled again in memory, as usual.
.venv/bin/python -m compileall -q -j 0 workflow_manager pyworker amqp_outage payload_refs bench >/dev/null
