#!/usr/bin/env bash
# Compiles patchgate's own locks (exact versions with hashes) from pyproject.toml:
#   requirements/dev.txt      development and CI (.[dev] and the build backend); scripts/setup.sh
#                             installs it with --require-hashes
#   requirements/runtime.txt  the runtime dependencies and pytest, for the sandbox image
#                             (compose/build-images.sh) and the CI recipes; compiled against dev.txt,
#                             so both name the same versions
# Usage:
#   scripts/lock.sh                       add or drop what pyproject.toml changed; every other pin
#                                         stays as it is (the committed lock is the preference)
#   scripts/lock.sh --upgrade             every package to the newest the index serves
#   scripts/lock.sh --upgrade-package P   one package (repeatable), e.g. grpcio-tools: then run
#                                         scripts/gen_proto.sh and raise grpcio/protobuf's lower
#                                         bounds in pyproject.toml to what the new stubs stamp
#   scripts/lock.sh --check               exit 1 when the committed locks' pins differ from what
#                                         pyproject.toml now asks (hashes not compared: an index
#                                         may add a file to a release); writes nothing
# Needs .venv (scripts/setup.sh): uv comes from the dev lock. Resolves for Python 3.11 on every
# platform (--universal), so the lock's markers, not this machine, decide what a platform gets.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
uv=${UV:-$here/.venv/bin/uv}
[ -x "$uv" ] || { echo "lock.sh: $uv not found; run scripts/setup.sh first" >&2; exit 1; }

check=0
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --check) check=1 ;;
    --upgrade) extra+=(--upgrade) ;;
    --upgrade-package) [ $# -ge 2 ] || { echo "lock.sh: --upgrade-package needs a name" >&2; exit 64; }
      extra+=(--upgrade-package "$2"); shift ;;
    *) echo "lock.sh: unknown argument $1 (see the header of $0)" >&2; exit 64 ;;
  esac
  shift
done

out=requirements
if [ "$check" = 1 ]; then
  out=$(mktemp -d /tmp/patchgate-lock.XXXXXX)
  trap 'rm -rf "$out"' EXIT
  cp requirements/dev.txt requirements/runtime.txt "$out/"  # the committed pins are the preference
fi

compile() {  # compile OUTPUT INPUT...
  local target=$1
  shift
  "$uv" pip compile --quiet --universal --python-version 3.11 --generate-hashes \
    --custom-compile-command scripts/lock.sh "${extra[@]}" -o "$target" "$@"
}
compile "$out/dev.txt" --extra dev pyproject.toml requirements/build.in
compile "$out/runtime.txt" -c "$out/dev.txt" pyproject.toml requirements/runtime.in

if [ "$check" = 1 ]; then
  pins() { grep -E '^[A-Za-z0-9_.-]+==' "$1" | sed 's/ *\\$//' | sort; }
  status=0
  for f in dev.txt runtime.txt; do
    if ! diff <(pins "requirements/$f") <(pins "$out/$f") >"$out/$f.diff"; then
      echo "lock.sh: requirements/$f is not what pyproject.toml asks; run scripts/lock.sh:" >&2
      cat "$out/$f.diff" >&2
      status=1
    fi
  done
  [ "$status" = 0 ] && echo "lock.sh: requirements/dev.txt and runtime.txt match pyproject.toml" >&2
  exit "$status"
fi
echo "lock.sh: wrote requirements/dev.txt and requirements/runtime.txt" >&2
