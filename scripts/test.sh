#!/usr/bin/env bash
# Set up (idempotent), lint, then run the test suite; pytest's exit code is the script's.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/ruff check .
exec .venv/bin/python -m pytest -q "$@"
