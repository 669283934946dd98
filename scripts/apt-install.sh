#!/usr/bin/env bash
# Installs distribution packages with apt-get, as root or through sudo: the
# one way the setup scripts (setup-browser.sh, setup-redis.sh, setup-nats.sh) install what
# a test needs on a fresh machine.
#
#   bash scripts/apt-install.sh <who> <what> <package>...
#
# <who> names the caller in messages; <what> is what is missing, for them.
set -euo pipefail

WHO="$1"
WHAT="$2"
shift 2

SUDO=()
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    SUDO=(sudo -n)
  else
    echo "$WHO: $WHAT is missing and installing it needs root" >&2
    exit 1
  fi
fi

if ! command -v apt-get >/dev/null 2>&1; then
  echo "$WHO: $WHAT is missing and there is no apt-get; install it yourself" >&2
  exit 1
fi

echo "$WHO: installing $* with apt-get" >&2
export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" apt-get update -q </dev/null
"${SUDO[@]}" apt-get install -y -q --no-install-recommends "$@" </dev/null
