# Sourced by the test scripts: make sure a Pulsar broker is up for this run.
# Uses PULSAR_URL when set; otherwise starts the local standalone broker
# (scripts/pulsar.sh) and stops it on exit if this run started it.
# shellcheck shell=bash
if [ -z "${PULSAR_URL:-}" ]; then
  if scripts/pulsar.sh status >/dev/null 2>&1; then
    PULSAR_URL="$(scripts/pulsar.sh status | awk '{print $2}')"
  else
    PULSAR_URL="$(scripts/pulsar.sh start | tail -n 1)"
    trap 'scripts/pulsar.sh stop >&2' EXIT
  fi
fi
export PULSAR_URL
echo "==> Pulsar broker: $PULSAR_URL" >&2
