#!/usr/bin/env bash
# Debian packages the tests need: chromium (Playwright drives it; it cannot download its own
# browser here) and rsyslog (a real syslog daemon receives the CEF forward). Idempotent.
set -euo pipefail
need=()
[ -x /usr/bin/chromium ] || need+=(chromium fonts-dejavu-core)
[ -x /usr/sbin/rsyslogd ] || need+=(rsyslog)
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ]; then echo "install_system_deps.sh: run as root, or install: ${need[*]}" >&2; exit 1; fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
