#!/usr/bin/env bash
# Debian's Chromium for the Playwright browser tests (Playwright cannot download its own browser
# here). Idempotent: does nothing when /usr/bin/chromium exists.
set -euo pipefail
if [ -x /usr/bin/chromium ]; then exit 0; fi
if [ "$(id -u)" != 0 ]; then echo "install_browser.sh: run as root or install Debian's chromium yourself" >&2; exit 1; fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
