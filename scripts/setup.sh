#!/usr/bin/env bash
# Installs patchgate and its development tools into .venv (created if absent). Idempotent.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
py=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv with $($py --version)" >&2
  "$py" -m venv .venv
fi
.venv/bin/python -m pip install -q --disable-pip-version-check -e '.[dev]'
echo "setup: installed patchgate into $here/.venv" >&2
