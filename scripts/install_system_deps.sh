#!/usr/bin/env bash
# Debian packages the tests need: chromium (Playwright drives it; it cannot download its own
# browser here), rsyslog (a real syslog daemon receives the CEF forward) and postgresql (the
# store tests start throw-away servers with its initdb/pg_ctl; Debian's default cluster is not
# wanted, so it is not created). Idempotent.
set -euo pipefail
need=()
[ -x /usr/bin/chromium ] || need+=(chromium fonts-dejavu-core)
[ -x /usr/sbin/rsyslogd ] || need+=(rsyslog)
compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || need+=(postgresql)
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ]; then echo "install_system_deps.sh: run as root, or install: ${need[*]}" >&2; exit 1; fi
export DEBIAN_FRONTEND=noninteractive
if [[ " ${need[*]} " == *" postgresql "* ]] && [ ! -e /etc/postgresql-common/createcluster.conf ]; then
  mkdir -p /etc/postgresql-common
  echo "create_main_cluster = false" > /etc/postgresql-common/createcluster.conf
fi
apt-get update -qq
apt-get install -y -qq --no-install-recommends -o Dpkg::Options::=--force-confold "${need[@]}" >/dev/null
