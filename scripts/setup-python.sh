#!/usr/bin/env bash
# Creates (or reuses) the Python virtualenv the conformance and interop tests
# drive: ${SB_CACHE:-$HOME/.cache/switchboard}/venv, with the exact pins of
# tests/conformance/requirements.txt.
#
# Usage: scripts/setup-python.sh            # progress on stderr
#        PY=$(scripts/setup-python.sh | tail -n 1)   # the venv's python
#
# Idempotent and fast when nothing changed: a stamp (hash of the
# requirements, this script and the interpreter version) sits in the venv;
# when it matches, nothing is installed. Safe to run concurrently (flock),
# needs no stdin (CI=true). Env: SB_CACHE (cache root), SB_PYTHON (the
# interpreter to build the venv from; default python3.11, then python3).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
requirements="$root/tests/conformance/requirements.txt"
cache="${SB_CACHE:-$HOME/.cache/switchboard}"
venv="$cache/venv"
stamp_file="$venv/.sb-requirements.sha256"
want_minor="3.11"

log() { printf 'setup-python: %s\n' "$*" >&2; }

pick_python() {
  local candidate
  for candidate in ${SB_PYTHON:-} python3.11 python3; do
    command -v "$candidate" >/dev/null 2>&1 || continue
    if [ "$("$candidate" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)" = "$want_minor" ]; then
      # Resolve shims (pyenv) to the real interpreter so the venv does not
      # depend on the shim's version selection later.
      "$candidate" -c 'import sys; print(sys.executable)'
      return 0
    fi
  done
  return 1
}

mkdir -p "$cache"
exec 9>"$cache/venv.lock"
flock -w 600 9 || { log "timed out waiting for $cache/venv.lock"; exit 1; }

python="$(pick_python)" || {
  log "no Python $want_minor found (tried: ${SB_PYTHON:-} python3.11 python3); set SB_PYTHON"
  exit 1
}
stamp="$(
  {
    cat "$requirements" "${BASH_SOURCE[0]}"
    "$python" -c 'import sys; print(sys.version)'
  } | sha256sum | cut -d' ' -f1
)"

if [ -x "$venv/bin/python" ] && [ -f "$stamp_file" ] && [ "$(cat "$stamp_file")" = "$stamp" ] \
  && "$venv/bin/python" -c 'import kosoku, websockets' >/dev/null 2>&1; then
  log "up to date: $venv"
else
  log "creating $venv from $python"
  rm -f "$stamp_file"
  "$python" -m venv --clear "$venv"
  PIP_NO_INPUT=1 PIP_DISABLE_PIP_VERSION_CHECK=1 \
    "$venv/bin/python" -m pip install --quiet --no-input -r "$requirements" </dev/null >&2
  "$venv/bin/python" -c 'import kosoku, websockets' >&2
  printf '%s\n' "$stamp" >"$stamp_file"
  log "installed: $("$venv/bin/python" -m pip freeze --disable-pip-version-check | tr '\n' ' ')"
fi

printf '%s\n' "$venv/bin/python"
