#!/usr/bin/env bash
# Install everything and run the whole test suite against the local RabbitMQ.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
.venv/bin/ruff check workflow_manager pyworker amqp_outage payload_refs tests examples bench docs_gen
# The documentation site into site/ (mkdocs.yml); --strict fails on a broken link or anchor.
NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict --quiet
.venv/bin/mypy  # which files, and where strict: [tool.mypy] in pyproject.toml

# pytest, in two phases, each given the arguments. First every test but those marked
# stops_broker, on two pytest-xdist workers (most of a test's time is waiting on processes,
# the broker and timers; with --dist loadgroup, the tests named in tests/xdist_groups.py run on
# one worker, one test at a time). Then the stops_broker tests, alone: they stop RabbitMQ for
# every client. With a -m or -n of your own, pytest runs just once as you ask.
pytest=(.venv/bin/python -m pytest)
for arg in "$@"; do
  case "$arg" in
    -m | -m* | -n | -n* | --numprocesses*) exec "${pytest[@]}" "$@" ;;
  esac
done
parallel=0
"${pytest[@]}" -n "${WM_TEST_WORKERS:-2}" --dist loadgroup -m "not stops_broker" "$@" || parallel=$?
alone=0
"${pytest[@]}" -m stops_broker "$@" || alone=$?
# Exit code 5 is "no test selected": arguments that pick only one phase's tests (or none).
for code in "$parallel" "$alone"; do
  if [ "$code" -ne 0 ] && [ "$code" -ne 5 ]; then exit "$code"; fi
done
if [ "$parallel" -eq 5 ] && [ "$alone" -eq 5 ]; then exit 5; fi
