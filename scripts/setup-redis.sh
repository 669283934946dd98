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

bash "$(dirname "$0")/apt-install.sh" setup-redis "redis-server" redis-server redis-tools

if ! command -v redis-server >/dev/null 2>&1; then
  echo "setup-redis: apt-get installed redis-server but it is not on the PATH" >&2
  exit 1
fi
redis-server --version >&2 || true
