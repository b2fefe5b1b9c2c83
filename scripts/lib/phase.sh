# Sourced by the test and release-check scripts: `phase NAME` says when a
# phase starts, how long the script has run, and how long the phase before
# it took.
# shellcheck shell=bash
_phase_name=""
_phase_start=$SECONDS
phase() {
  if [ -n "$_phase_name" ]; then
    echo "==> [+${SECONDS}s] ($((SECONDS - _phase_start)) s: $_phase_name)" >&2
  fi
  _phase_name="$*"
  _phase_start=$SECONDS
  echo "==> [+${SECONDS}s] $*" >&2
}
