#!/usr/bin/env bash
# Installs patchgate and its development tools into .venv (created if absent) from the hashed lock
# requirements/dev.txt. Idempotent.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
py=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv with $($py --version)" >&2
  "$py" -m venv .venv
fi
# Every package from the lock, exact versions, every file checked against its hash: the same
# environment on every fresh machine, whatever the index serves as newest (scripts/lock.sh refreshes
# the lock). Then patchgate itself, editable, built by the locked setuptools with nothing fetched.
pip=(.venv/bin/python -m pip install -q --disable-pip-version-check)
"${pip[@]}" --require-hashes -r requirements/dev.txt
"${pip[@]}" --no-deps --no-build-isolation -e .
.venv/bin/python -m pip check >/dev/null || { .venv/bin/python -m pip check >&2; exit 1; }
# An editable install leaves the project's own modules uncompiled, and with PYTHONDONTWRITEBYTECODE
# set (CI images often set it) every command would compile them again at each start: about 30 ms
# of a short command such as `patchgate digest`. Compile them once, as a wheel install would.
.venv/bin/python -m compileall -q patchgate client signerd executord
# The same for pytest's rewritten modules: a judge rewrites the asserts of every pytest plugin's
# distribution it imports (Hypothesis: ~0.8 s) and keeps them in pytest's own pyc cache, which
# a sandbox cannot write (the environment is mounted read-only). Write it once here, as the
# judge's zygote imports them. Without it everything still runs, each sandbox only starts slower.
if ! .venv/bin/python -I executord/inside/zygote.py warm; then
  echo "setup: pytest's rewrite cache not written (sandboxes start slower)" >&2
fi
echo "setup: installed patchgate into $here/.venv" >&2
