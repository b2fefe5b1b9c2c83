#!/usr/bin/env bash
# The load balancers the scale-out tests put in front of MCP replicas:
# nginx (Debian's nginx-light: HTTP, round-robin per request, as an ingress
# balances) and HAProxy (TCP, round-robin per connection, as a Kubernetes
# Service balances). Installs them with apt-get when missing, without
# starting their system services; prints where they are.
#   scripts/balancers.sh
set -euo pipefail

log() { echo "balancers.sh: $*" >&2; }

missing=()
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || missing+=(nginx-light)
command -v haproxy >/dev/null || [ -x /usr/sbin/haproxy ] || missing+=(haproxy)
if [ ${#missing[@]} -gt 0 ]; then
  [ "$(id -u)" -eq 0 ] || { log "missing ${missing[*]}; install them (apt-get install ${missing[*]})"; exit 1; }
  command -v apt-get >/dev/null || { log "missing ${missing[*]}; no apt-get to install them"; exit 1; }
  log "installing ${missing[*]} with apt-get"
  # Their packages start system services on install; the tests start their
  # own, on free ports. policy-rc.d keeps the services stopped.
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
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends "${missing[@]}" >&2
fi
PATH="$PATH:/usr/sbin"
echo "nginx: $(command -v nginx) ($(nginx -v 2>&1 | sed 's/.*version: //'))"
echo "haproxy: $(command -v haproxy) ($(haproxy -v 2>&1 | head -1 | awk '{print $3}'))"
