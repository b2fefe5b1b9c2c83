#!/usr/bin/env bash
# Prometheus and promtool (Debian's prometheus package), which the alerting
# rules' unit tests and the dashboard's live check run. Installs them with
# apt-get when missing, without leaving the package's own service running
# (its config and port are not the tests'); prints where they are.
#   scripts/prometheus.sh            install when missing; print the versions
#   scripts/prometheus.sh --check    also check deploy/prometheus-alerts.yml
#                                    and run its unit tests
set -euo pipefail
cd "$(dirname "$0")/.."

log() { echo "prometheus.sh: $*" >&2; }

if ! command -v prometheus >/dev/null || ! command -v promtool >/dev/null; then
  [ "$(id -u)" -eq 0 ] || { log "missing prometheus; install it (apt-get install prometheus)"; exit 1; }
  command -v apt-get >/dev/null || { log "missing prometheus; no apt-get to install it"; exit 1; }
  log "installing prometheus with apt-get"
  # The package starts its service on install; the live check starts its
  # own, on a free port with a config of its own. policy-rc.d keeps the
  # service stopped.
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
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends prometheus >&2
  # Where a service manager ignored policy-rc.d, stop what it started.
  if command -v systemctl >/dev/null && [ -d /run/systemd/system ]; then
    systemctl disable --now prometheus >&2 2>/dev/null || true
  elif [ -x /etc/init.d/prometheus ]; then
    /etc/init.d/prometheus stop >&2 2>/dev/null || true
  fi
fi

if [ "${1:-}" = --check ]; then
  promtool check rules deploy/prometheus-alerts.yml >&2
  (cd deploy && promtool test rules prometheus-alerts.test.yml) >&2
fi
echo "prometheus: $(command -v prometheus) ($(prometheus --version 2>&1 | head -1 | awk '{print $3}'))"
