#!/usr/bin/env bash
# Set up (idempotent), then run `patcher fix` on the bundled example: a pagination bug that crashes on the
# last page. The example is copied into a fresh git repository under /tmp so the checkout stays clean.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
work=$(mktemp -d /tmp/patcher-example-XXXXXX)
cp -r examples/shop/. "$work"
git -C "$work" init -q -b main
git -C "$work" add -A
git -C "$work" -c user.name=example -c user.email=example@localhost commit -qm "example shop"
echo "example repository: $work" >&2
exec .venv/bin/patcher fix "$work" --traceback examples/shop.traceback.txt \
  --test "python -m pytest -q tests/test_pagination.py" "$@"
