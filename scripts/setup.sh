#!/usr/bin/env bash
# Idempotent set-up: a Docker daemon that answers, patcher installed in .venv, the sandbox image built.
set -euo pipefail
cd "$(dirname "$0")/.."

DOCKERD_LOG=/tmp/patcher-dockerd.log
# Every host program patcher and its tests call is listed once, in patcher/hostdeps.py (doctor reads it too).
mapfile -t packages < <(python3 -m patcher.hostdeps missing)
if docker info >/dev/null 2>&1; then  # a daemon already answers (DOCKER_HOST or a running dockerd)
  packages=("${packages[@]/docker.io}")
fi
[ -d .venv ] || python3 -c 'import ensurepip, venv' 2>/dev/null || packages+=(python3-venv)
packages=($(printf '%s\n' "${packages[@]}" | sed '/^$/d'))
if [ ${#packages[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "setup: missing ${packages[*]}; install them as root (apt-get install -y ${packages[*]})" >&2
    exit 3
  fi
  echo "setup: installing ${packages[*]}" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
fi
python3 -m patcher.hostdeps check  # fails with one line per program still missing

if ! docker info >/dev/null 2>&1; then
  echo "setup: starting dockerd (log: $DOCKERD_LOG)" >&2
  nohup dockerd </dev/null >"$DOCKERD_LOG" 2>&1 &
  for _ in $(seq 60); do
    docker info >/dev/null 2>&1 && break
    sleep 1
  done
  if ! docker info >/dev/null 2>&1; then
    echo "setup: dockerd did not answer within 60 s; last lines of $DOCKERD_LOG:" >&2
    tail -n 20 "$DOCKERD_LOG" >&2
    exit 3
  fi
fi

[ -d .venv ] || python3 -m venv .venv
stamp=.venv/.patcher-installed
wanted=$(sha256sum pyproject.toml | cut -d' ' -f1)
if [ ! -x .venv/bin/patcher ] || [ "$(cat "$stamp" 2>/dev/null)" != "$wanted" ]; then
  echo "setup: installing patcher into .venv" >&2
  .venv/bin/python -m pip install -q -e '.[dev]'
  echo "$wanted" >"$stamp"
fi

echo "setup: PostgreSQL for the store tests at $(bash scripts/postgres.sh)" >&2
.venv/bin/patcher image build
