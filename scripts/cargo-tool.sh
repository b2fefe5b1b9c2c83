#!/usr/bin/env bash
# Prints the path of a pinned cargo subcommand, installing it from
# crates.io into the target directory the first time:
#   bin="$(scripts/cargo-tool.sh cargo-deny 0.20.2)"
set -euo pipefail
cd "$(dirname "$0")/.."
name="$1"
version="$2"
tools="${CARGO_TARGET_DIR:-$PWD/target}/tools"
bin="$tools/bin/$name"
if ! [ -x "$bin" ] || ! "$bin" --version 2>/dev/null | grep -qF "$version"; then
  echo "==> installing $name $version (once per target directory)" >&2
  cargo install "$name" --version "$version" --locked --quiet \
    --root "$tools" --target-dir "$tools/build" >&2
  rm -rf "$tools/build"
fi
echo "$bin"
