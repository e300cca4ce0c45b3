#!/usr/bin/env bash
# Set up (idempotent), lint and type-check, then run the test suite; pytest's exit code is the script's.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/ruff check .
.venv/bin/mypy patcher sandbox
exec .venv/bin/python -m pytest -q "$@"
