#!/usr/bin/env bash
# The public API of the two published crates, as `cargo public-api` lists
# it, against the lists kept in public-api/: a change to the surface shows
# in review as a change to those files.
#   scripts/release/public-api.sh            check (CI)
#   scripts/release/public-api.sh --update   rewrite the lists after a deliberate change
# Installs cargo-public-api (pinned) when it is missing. Its rustdoc JSON
# comes from this repository's stable toolchain, with RUSTC_BOOTSTRAP=1, in
# a target directory of its own: RUSTC_BOOTSTRAP changes the fingerprints
# of crates whose build scripts read it (proc-macro2 and all that depends on
# it), which would otherwise be rebuilt back and forth with the other
# builds.
set -euo pipefail
cd "$(dirname "$0")/../.."

bin="$(scripts/install/cargo-tool.sh cargo-public-api 0.52.0)"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}/public-api"
stderr="$(mktemp)"
trap 'rm -f "$stderr"' EXIT

update=false
[ "${1:-}" = "--update" ] && update=true
status=0
for crate in tool-service tool-service-macros; do
  list="public-api/$crate.txt"
  # -ss leaves out blanket and auto-trait impls: what the crate itself
  # promises. Every feature is on, so every item is listed.
  if ! current="$(RUSTC_BOOTSTRAP=1 "$bin" public-api --package "$crate" -ss --all-features 2>"$stderr")"; then
    cat "$stderr" >&2
    echo "cargo public-api failed on $crate (above)" >&2
    exit 1
  fi
  if $update; then
    printf '%s\n' "$current" >"$list"
  elif ! diff -u "$list" <(printf '%s\n' "$current") >&2; then
    echo "the public API of $crate differs from $list (above, - listed, + now): if the change is meant, run scripts/release/public-api.sh --update and commit the list" >&2
    status=1
  fi
done
exit $status
