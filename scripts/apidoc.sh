#!/usr/bin/env bash
# Writes the API reference (HTML, from the docstrings) to docs/api/: the public API that code
# outside the project relies on (shared/DESIGN.md's contract). Needs the dev extras (pdoc).
# Usage: scripts/apidoc.sh [python]
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${1:-${PYTHON:-.venv/bin/python}}
rm -rf docs/api
PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" "$PY" -m pdoc --docformat markdown --no-search --no-show-source -o docs/api \
  hibase.connection hibase.table hibase.errors hibase.store.base
echo "docs/api/index.html"
