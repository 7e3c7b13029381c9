#!/usr/bin/env bash
# Installs what the CI examples' tests need beyond .venv, idempotently (nothing when present):
#   gitlab-ci-local (a pinned release, from the npm registry, cached per version under
#     $PATCHGATE_CI_TOOLS, default ~/.cache/patchgate/ci-tools: a fresh clone reuses it)
#     runs examples/ci/gitlab-ci.yml with its shell executor;
#   rsync (Debian), which gitlab-ci-local uses to copy the job's project directory.
# Node and npm come from Debian (`apt-get install nodejs npm` when absent). Prints the path of the
# gitlab-ci-local binary on stdout; progress on stderr. Unattended (CI, root, no stdin).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
version=${GITLAB_CI_LOCAL_VERSION:-4.60.1}
prefix=${PATCHGATE_CI_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/patchgate/ci-tools}/gitlab-ci-local-$version
bin=$prefix/node_modules/.bin/gitlab-ci-local
export DEBIAN_FRONTEND=noninteractive
missing=()
command -v rsync >/dev/null 2>&1 || missing+=(rsync)
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
if [ "${#missing[@]}" -gt 0 ]; then
  echo "ci-tools: installing ${missing[*]} (Debian)" >&2
  apt-get update -qq </dev/null
  apt-get install -y -qq --no-install-recommends "${missing[@]}" </dev/null >&2
fi
if [ ! -x "$bin" ] || [ "$("$bin" --version 2>/dev/null)" != "$version" ]; then
  echo "ci-tools: installing gitlab-ci-local $version into $prefix" >&2
  mkdir -p "$prefix"
  npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error \
    "gitlab-ci-local@$version" </dev/null >&2
fi
echo "$bin"
