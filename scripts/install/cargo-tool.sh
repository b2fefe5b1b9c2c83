#!/usr/bin/env bash
# Prints the path of a pinned cargo subcommand, installing it from
# crates.io the first time on this machine:
#   bin="$(scripts/install/cargo-tool.sh cargo-deny 0.20.2)"
# Each name and version is installed once per machine, into
# $TOOL_SERVICE_CACHE/cargo-tools/NAME-VERSION (default
# ~/.cache/tool-service), outside any clone: a second clone, or a second CI
# run, finds it there and builds nothing. The tools are built with the
# dependency versions of their own Cargo.lock (--locked), unoptimised
# (--debug, with no debug info): the build shares the machine with the
# test command, and the checks they run take seconds either way.
set -euo pipefail
name="$1"
version="$2"
cache="${TOOL_SERVICE_CACHE:-$HOME/.cache/tool-service}/cargo-tools"
root="$cache/$name-$version"
bin="$root/bin/$name"
if ! [ -x "$bin" ] || ! "$bin" --version 2>/dev/null | grep -qF "$version"; then
  mkdir -p "$cache"
  # Two scripts that need the same tool at once: one builds it, the other
  # waits for it.
  exec 9>"$cache/$name-$version.lock"
  flock 9
  if ! [ -x "$bin" ] || ! "$bin" --version 2>/dev/null | grep -qF "$version"; then
    echo "==> installing $name $version into $root (once per machine)" >&2
    build="$(mktemp -d "$cache/build.XXXXXX")"
    trap 'rm -rf "$build"' EXIT
    t0=$SECONDS
    CARGO_PROFILE_DEV_DEBUG=none \
      CARGO_PROFILE_DEV_INCREMENTAL=false \
      cargo install "$name" --version "$version" --locked --quiet --debug \
      --root "$root" --target-dir "$build" >&2
    echo "==> installed $name $version in $((SECONDS - t0)) s" >&2
  fi
  flock -u 9
fi
echo "$bin"
