#!/usr/bin/env bash
# Chromium for the browser tests (tests/browser/), from the distribution's
# packages. Idempotent: does nothing when /usr/bin/chromium exists.
# Needs root (or sudo) the first time; installs nothing else system-wide.
#
#   bash scripts/setup-browser.sh
set -euo pipefail

CHROMIUM=/usr/bin/chromium

if [ -x "$CHROMIUM" ]; then
  exit 0
fi

bash "$(dirname "$0")/apt-install.sh" setup-browser "$CHROMIUM" chromium

if [ ! -x "$CHROMIUM" ]; then
  echo "setup-browser: apt-get installed chromium but $CHROMIUM is not there" >&2
  exit 1
fi
"$CHROMIUM" --version >&2 || true
