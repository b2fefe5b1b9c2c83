#!/usr/bin/env bash
# Prometheus and promtool (Debian's prometheus package), which the alerting
# rules' unit tests and the dashboard's live check run. Installs them with
# apt-get when missing, without leaving the package's own service running
# (its config and port are not the tests'); prints where they are.
#   scripts/install/prometheus.sh            install when missing; print the versions
#   scripts/install/prometheus.sh --check    also check deploy/prometheus-alerts.yml
#                                    and run its unit tests
set -euo pipefail
cd "$(dirname "$0")/../.."

if ! command -v prometheus >/dev/null || ! command -v promtool >/dev/null; then
  scripts/install/apt-install.sh prometheus.sh prometheus
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
