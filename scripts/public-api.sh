#!/usr/bin/env bash
# The public API of the two published crates, as `cargo public-api` lists
# it, against the lists kept in public-api/: a change to the surface shows
# in review as a change to those files.
#   scripts/public-api.sh            check (CI)
#   scripts/public-api.sh --update   rewrite the lists after a deliberate change
# Installs cargo-public-api (pinned) when it is missing. Its rustdoc JSON
# comes from this repository's stable toolchain, with RUSTC_BOOTSTRAP=1.
set -euo pipefail
cd "$(dirname "$0")/.."

bin="$(scripts/cargo-tool.sh cargo-public-api 0.52.0)"
tools="$(dirname "$(dirname "$bin")")"

update=false
[ "${1:-}" = "--update" ] && update=true
status=0
for crate in tool-service tool-service-macros; do
  list="public-api/$crate.txt"
  # -ss leaves out blanket and auto-trait impls: what the crate itself
  # promises. Every feature is on, so every item is listed.
  if ! current="$(RUSTC_BOOTSTRAP=1 "$bin" public-api --package "$crate" -ss --all-features 2>"$tools/stderr")"; then
    cat "$tools/stderr" >&2
    echo "cargo public-api failed on $crate (above)" >&2
    exit 1
  fi
  if $update; then
    printf '%s\n' "$current" >"$list"
  elif ! diff -u "$list" <(printf '%s\n' "$current") >&2; then
    echo "the public API of $crate differs from $list (above, - listed, + now): if the change is meant, run scripts/public-api.sh --update and commit the list" >&2
    status=1
  fi
done
exit $status
