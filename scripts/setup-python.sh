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
# interpreter to build the venv from, >= 3.10; default: the first 3.11 among
# python3.11, python3 and pyenv's versions).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
requirements="$root/tests/conformance/requirements.txt"
cache="${SB_CACHE:-$HOME/.cache/switchboard}"
venv="$cache/venv"
stamp_file="$venv/.sb-requirements.sha256"
want_minor="3.11"

log() { printf 'setup-python: %s\n' "$*" >&2; }

version_of() { "$1" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null; }

# Prints the real path of the interpreter to build the venv from: SB_PYTHON
# as given (kosoku needs >= 3.10), else the first Python 3.11 among
# python3.11, python3 and pyenv's installs. Shims (pyenv) are resolved so
# the venv does not follow a later change of the shim's version.
pick_python() {
  local candidate version
  if [ -n "${SB_PYTHON:-}" ]; then
    version="$(version_of "$SB_PYTHON")" || { log "SB_PYTHON=$SB_PYTHON does not run"; return 1; }
    case "$version" in
      3.1[0-9]) ;;
      *) log "SB_PYTHON=$SB_PYTHON is Python $version; kosoku needs >= 3.10"; return 1 ;;
    esac
    "$SB_PYTHON" -c 'import sys; print(sys.executable)'
    return 0
  fi
  for candidate in python3.11 python3 "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.11*/bin/python3.11; do
    command -v "$candidate" >/dev/null 2>&1 || continue
    if [ "$(version_of "$candidate")" = "$want_minor" ]; then
      "$candidate" -c 'import sys; print(sys.executable)'
      return 0
    fi
  done
  log "no Python $want_minor found (python3.11, python3, pyenv); set SB_PYTHON"
  return 1
}

mkdir -p "$cache"
exec 9>"$cache/venv.lock"
flock -w 600 9 || { log "timed out waiting for $cache/venv.lock"; exit 1; }

python="$(pick_python)" || exit 1
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
