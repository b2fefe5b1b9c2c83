#!/usr/bin/env bash
# Checks that the two published crates package and build from their
# packages, as `cargo publish` would, without publishing anything:
#   scripts/release/package.sh
# Cargo packages tool-service-macros first, then tool-service, and verifies
# each in publish order, tool-service against the packaged macro crate (a
# local registry overlay: cargo 1.90 or newer). Needs no registry account.
# The working tree is packaged as it is, uncommitted changes included.
set -euo pipefail
cd "$(dirname "$0")/../.."

published=(tool-service-macros tool-service)
exclude=(--exclude tool-service-suite --exclude tool-service-bench --exclude library-tools)

# What each package ships: sources, guides (docs/*.md, in the rustdoc),
# manifest, README, licences.
for crate in "${published[@]}"; do
  files="$(cargo package -p "$crate" --list --allow-dirty --locked)"
  for needed in LICENSE-MIT LICENSE-APACHE README.md Cargo.toml src/lib.rs; do
    if ! grep -qx "$needed" <<<"$files"; then
      echo "the package of $crate lacks $needed" >&2
      exit 1
    fi
  done
  if unexpected="$(grep -vxE 'src/.*\.rs|docs/[a-z-]+\.md|Cargo\.toml|Cargo\.toml\.orig|Cargo\.lock|\.cargo_vcs_info\.json|README\.md|LICENSE-(MIT|APACHE)' <<<"$files")"; then
    echo "the package of $crate holds files a user does not need:" >&2
    echo "$unexpected" >&2
    exit 1
  fi
done

# --no-verify: the `cargo test` in each unpacked package below builds what
# the verification would, and tests it too.
cargo package --workspace "${exclude[@]}" --allow-dirty --locked --no-verify

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
# The tests pass on the packages as published, as a distribution packager
# or crater runs them: each .crate unpacked on its own, tool-service
# against the packaged macro crate. The workspace's debug settings keep
# the dependencies' builds shared with the workspace's.
unpacked="$(mktemp -d)"
trap 'rm -rf "$unpacked"' EXIT
for crate in "${published[@]}"; do
  tar -xzf "${CARGO_TARGET_DIR:-target}/package/$crate-$version.crate" -C "$unpacked"
done
target="$(cd "${CARGO_TARGET_DIR:-target}" && pwd)"
for crate in "${published[@]}"; do
  echo "==> cargo test in the package of $crate" >&2
  # tool-service's lock names the macro crate from crates.io; the patch
  # moves that one entry, so only the macro crate's package is --locked.
  locked=()
  [ "$crate" = tool-service-macros ] && locked=(--locked)
  (cd "$unpacked/$crate-$version" && CARGO_TARGET_DIR="$target" cargo test "${locked[@]}" \
    --config 'profile.dev.debug="line-tables-only"' \
    --config 'profile.dev.package."*".debug=false' \
    --config "patch.crates-io.tool-service-macros.path=\"$unpacked/tool-service-macros-$version\"")
done
echo "==> tool-service-macros and tool-service $version package, build and pass their tests from their packages" >&2
