#!/usr/bin/env bash
# Install everything and run the whole test suite against the local RabbitMQ.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
.venv/bin/ruff check workflow_manager pyworker tests examples bench
exec .venv/bin/python -m pytest "$@"
