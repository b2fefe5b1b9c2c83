#!/usr/bin/env bash
# Builds and unit-tests the two published crates on the oldest Rust they
# claim to support, the `rust-version` of Cargo.toml's [workspace.package]:
# their unit tests (and the macro crate's doc tests) with every feature on,
# so that every line of both compiles, and a check without default
# features, the configuration of a crate that only defines services. The
# integration tests need no second run: what they test is the same code.
#   scripts/release/msrv.sh                  checks with msrv/Cargo.lock
#   scripts/release/msrv.sh --update [1.xx]  first resolves msrv/Cargo.lock anew for
#                                    that version (default: rust-version)
# Installs the toolchain with rustup (minimal profile). Works on a copy of the
# working tree (in $CARGO_TARGET_DIR/msrv, or target/msrv) whose Cargo.lock is
# msrv/Cargo.lock: dependencies in the versions that the MSRV-aware resolver
# picks for that Rust, where the main Cargo.lock has the newest ones.
set -euo pipefail
cd "$(dirname "$0")/../.."
root="$PWD"

update=false
if [ "${1:-}" = "--update" ]; then
  update=true
  shift
fi
declared="$(sed -n '/^\[workspace.package\]/,/^\[/s/^rust-version = "\(.*\)"/\1/p' Cargo.toml)"
[ -n "$declared" ] || { echo "no rust-version in [workspace.package] of Cargo.toml" >&2; exit 1; }
msrv="${1:-$declared}"

if ! rustup run "$msrv" rustc --version >/dev/null 2>&1; then
  echo "==> installing Rust $msrv" >&2
  rustup toolchain install "$msrv" --profile minimal --no-self-update
fi

target="${CARGO_TARGET_DIR:-$root/target}/msrv"
work="$target/src"
rm -rf "$work"
mkdir -p "$work"
# The working tree as git sees it: tracked and new files, not ignored ones.
git ls-files -z --cached --others --exclude-standard |
  while IFS= read -r -d '' f; do
    if [ -e "$f" ] || [ -L "$f" ]; then printf '%s\0' "$f"; fi
  done |
  tar --null -T - -cf - | tar -xf - -C "$work"

# A version other than the declared one is a candidate: the copy declares it.
sed -i "/^\[workspace.package\]/,/^\[/s/^rust-version = .*/rust-version = \"$msrv\"/" "$work/Cargo.toml"
if $update; then
  echo "==> resolving msrv/Cargo.lock for Rust $msrv" >&2
  # The resolver reads the version from rust-version; the cargo of
  # rust-toolchain.toml resolves, as an old one may not know how.
  (cd "$work" && CARGO_RESOLVER_INCOMPATIBLE_RUST_VERSIONS=fallback cargo generate-lockfile)
  mkdir -p msrv
  cp "$work/Cargo.lock" msrv/Cargo.lock
else
  cp msrv/Cargo.lock "$work/Cargo.lock"
fi

echo "==> MSRV: $(rustup run "$msrv" rustc --version)" >&2
cd "$work"
export CARGO_TARGET_DIR="$target/build"
cargo "+$msrv" test -p tool-service-macros --locked
cargo "+$msrv" test -p tool-service --lib --locked --all-features
cargo "+$msrv" check -p tool-service --lib --locked --no-default-features
echo "==> Rust $msrv builds and passes the unit tests of tool-service and tool-service-macros" >&2
