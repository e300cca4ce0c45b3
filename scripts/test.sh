#!/usr/bin/env bash
# Set up (idempotent), lint, type-check and check the import contracts, then run the test suite; pytest's exit code is the script's.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/ruff check .
.venv/bin/mypy patcher sandbox
.venv/bin/lint-imports  # the layer map, no import cycles, each stage entered through its face (pyproject.toml)
exec .venv/bin/python -m pytest -q "$@"
