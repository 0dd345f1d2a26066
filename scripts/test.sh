#!/usr/bin/env bash
# Installs what the tests need (a virtualenv with hibase and its dev extras) and runs them.
# Usage: scripts/test.sh [pytest args...]
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
# The cache tests run real servers (Debian packages): redis-server, and ZooKeeper (with Java).
need=()
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
{ [ -f /usr/share/java/zookeeper.jar ] && command -v java >/dev/null 2>&1; } || need+=(zookeeper)
if [ ${#need[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "installing ${need[*]} (apt-get)" >&2
  $SUDO apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
    "${need[@]}" >/dev/null
fi
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip >/dev/null 2>&1 || true
.venv/bin/python -m pip install --quiet -e '.[dev]'
exec .venv/bin/python -m pytest -q "$@"
