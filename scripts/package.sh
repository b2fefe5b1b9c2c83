#!/usr/bin/env bash
# Checks that the two published crates package and build from their
# packages, as `cargo publish` would, without publishing anything:
#   scripts/package.sh
# Cargo packages tool-service-macros first, then tool-service, and verifies
# each in publish order, tool-service against the packaged macro crate (a
# local registry overlay: cargo 1.90 or newer). Needs no registry account.
# The working tree is packaged as it is, uncommitted changes included.
set -euo pipefail
cd "$(dirname "$0")/.."

published=(tool-service-macros tool-service)
exclude=(--exclude tool-service-suite --exclude tool-service-bench --exclude library-tools)

# What each package ships: sources, manifest, README, licences.
for crate in "${published[@]}"; do
  files="$(cargo package -p "$crate" --list --allow-dirty --locked)"
  for needed in LICENSE-MIT LICENSE-APACHE README.md Cargo.toml src/lib.rs; do
    if ! grep -qx "$needed" <<<"$files"; then
      echo "the package of $crate lacks $needed" >&2
      exit 1
    fi
  done
  if unexpected="$(grep -vxE 'src/.*\.rs|Cargo\.toml|Cargo\.toml\.orig|Cargo\.lock|\.cargo_vcs_info\.json|README\.md|LICENSE-(MIT|APACHE)' <<<"$files")"; then
    echo "the package of $crate holds files a user does not need:" >&2
    echo "$unexpected" >&2
    exit 1
  fi
done

cargo package --workspace "${exclude[@]}" --allow-dirty --locked

# The licence files are links to the repository's own; the packages hold
# their text.
version="$(sed -n '/^\[workspace.package\]/,/^\[/s/^version = "\(.*\)"/\1/p' Cargo.toml)"
for crate in "${published[@]}"; do
  archive="${CARGO_TARGET_DIR:-target}/package/$crate-$version.crate"
  for licence in LICENSE-MIT LICENSE-APACHE; do
    if ! tar -xzOf "$archive" "$crate-$version/$licence" | cmp -s - "$licence"; then
      echo "$licence in $archive differs from the repository's" >&2
      exit 1
    fi
  done
done
echo "==> tool-service-macros and tool-service $version package and build from their packages" >&2
