#!/usr/bin/env bash
# Installs Debian packages with apt-get for the scripts that need a system
# tool (balancers.sh, prometheus.sh), without starting the system services
# their packages start on install: the tests start their own, on free ports
# with configs of their own. One install at a time (they run side by side
# in scripts/test.sh), so that one's guard against services is not removed
# while another is installing.
#   scripts/install/apt-install.sh CALLER PACKAGE...
set -euo pipefail

caller="$1"
shift
log() { echo "$caller: $*" >&2; }

[ "$(id -u)" -eq 0 ] || { log "missing $*; install it (apt-get install $*)"; exit 1; }
command -v apt-get >/dev/null || { log "missing $*; no apt-get to install it"; exit 1; }
exec 9>/tmp/tool-service-apt-install.lock
flock 9
log "installing $* with apt-get"
# policy-rc.d keeps the packages' services stopped.
guard=""
if [ ! -e /usr/sbin/policy-rc.d ]; then
  printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
  chmod +x /usr/sbin/policy-rc.d
  guard=/usr/sbin/policy-rc.d
fi
trap '[ -n "$guard" ] && rm -f "$guard"' EXIT
# Another install may hold apt's lists lock for a while (the broker's).
for attempt in 1 2 3 4 5; do
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 update -qq >&2 && break
  [ "$attempt" -lt 5 ] || exit 1
  sleep 10
done
DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends "$@" >&2
