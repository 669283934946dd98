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

SUDO=()
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    SUDO=(sudo -n)
  else
    echo "setup-browser: $CHROMIUM is missing and installing it needs root" >&2
    exit 1
  fi
fi

if ! command -v apt-get >/dev/null 2>&1; then
  echo "setup-browser: $CHROMIUM is missing and there is no apt-get; install Chromium yourself" >&2
  exit 1
fi

echo "setup-browser: installing chromium with apt-get" >&2
export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" apt-get update -q </dev/null
"${SUDO[@]}" apt-get install -y -q --no-install-recommends chromium </dev/null

if [ ! -x "$CHROMIUM" ]; then
  echo "setup-browser: apt-get installed chromium but $CHROMIUM is not there" >&2
  exit 1
fi
"$CHROMIUM" --version >&2 || true
