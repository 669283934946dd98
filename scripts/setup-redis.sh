#!/usr/bin/env bash
# redis-server and redis-cli for the scale-out tests (tests/scale-out/),
# from the distribution's packages (Debian ships 7.0). Idempotent: does
# nothing when both are on the PATH. Needs root (or sudo) the first time.
# The tests start their own redis-server on a free port with a temporary
# directory and persistence off; the package's own service is not used.
#
#   bash scripts/setup-redis.sh
set -euo pipefail

if command -v redis-server >/dev/null 2>&1 && command -v redis-cli >/dev/null 2>&1; then
  exit 0
fi

SUDO=()
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    SUDO=(sudo -n)
  else
    echo "setup-redis: redis-server is missing and installing it needs root" >&2
    exit 1
  fi
fi

if ! command -v apt-get >/dev/null 2>&1; then
  echo "setup-redis: redis-server is missing and there is no apt-get; install Redis 7 yourself" >&2
  exit 1
fi

echo "setup-redis: installing redis-server with apt-get" >&2
export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" apt-get update -q </dev/null
"${SUDO[@]}" apt-get install -y -q --no-install-recommends redis-server redis-tools </dev/null

if ! command -v redis-server >/dev/null 2>&1; then
  echo "setup-redis: apt-get installed redis-server but it is not on the PATH" >&2
  exit 1
fi
redis-server --version >&2 || true
