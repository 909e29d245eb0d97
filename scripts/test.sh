#!/usr/bin/env bash
# Install everything and run the whole test suite against the local RabbitMQ.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
.venv/bin/ruff check workflow_manager pyworker amqp_outage payload_refs tests examples bench docs_gen
# The documentation site into site/ (mkdocs.yml); --strict fails on a broken link or anchor.
NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict --quiet
.venv/bin/mypy  # which files, and where strict: [tool.mypy] in pyproject.toml
exec .venv/bin/python -m pytest "$@"
