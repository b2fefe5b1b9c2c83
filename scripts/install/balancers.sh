#!/usr/bin/env bash
# The load balancers the scale-out tests put in front of MCP replicas:
# nginx (Debian's nginx-light: HTTP, round-robin per request, as an ingress
# balances) and HAProxy (TCP, round-robin per connection, as a Kubernetes
# Service balances). Installs them with apt-get when missing, without
# starting their system services; prints where they are.
#   scripts/install/balancers.sh
set -euo pipefail
cd "$(dirname "$0")/../.."

missing=()
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || missing+=(nginx-light)
command -v haproxy >/dev/null || [ -x /usr/sbin/haproxy ] || missing+=(haproxy)
if [ ${#missing[@]} -gt 0 ]; then
  scripts/install/apt-install.sh balancers.sh "${missing[@]}"
fi
PATH="$PATH:/usr/sbin"
echo "nginx: $(command -v nginx) ($(nginx -v 2>&1 | sed 's/.*version: //'))"
echo "haproxy: $(command -v haproxy) ($(haproxy -v 2>&1 | head -1 | awk '{print $3}'))"
