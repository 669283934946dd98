#!/usr/bin/env bash
# nats-server for the scale-out tests (tests/scale-out/nats.test.mjs), from
# the distribution's package (Debian ships 2.9). Idempotent: does nothing
# when nats-server is found. Needs root (or sudo) the first time.
# The tests start their own nats-server on a free port (with its
# monitoring endpoint on another); the package's own service is not used.
#
#   bash scripts/setup-nats.sh
set -euo pipefail

# Debian installs it in /usr/sbin, which a user's PATH may lack.
if command -v nats-server >/dev/null 2>&1 || [ -x /usr/sbin/nats-server ]; then
  exit 0
fi

bash "$(dirname "$0")/apt-install.sh" setup-nats "nats-server" nats-server

if ! command -v nats-server >/dev/null 2>&1 && [ ! -x /usr/sbin/nats-server ]; then
  echo "setup-nats: apt-get installed nats-server but it is not where expected" >&2
  exit 1
fi
(command -v nats-server || echo /usr/sbin/nats-server) >&2
