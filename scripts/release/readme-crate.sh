#!/usr/bin/env bash
# The README's "Add it to your crate", followed as a reader would, outside
# the repository:
#   scripts/release/readme-crate.sh
# A new crate (`cargo new`, in a temporary directory) whose Cargo.toml has
# the README's [dependencies] block, read from README.md, with
# `tool-service` from this checkout as the block's comment says; whose
# src/main.rs is the README's first Rust example, with the README's test
# beside it; and whose tests/testing_guide.rs is the testing guide's
# `#[tokio::test]` (what it says a crate's tests need is then checked
# too). Then `cargo test` and `cargo run -- descriptors` in it, offline,
# with this repository's Cargo.lock (the versions it was tested with), the
# toolchain of rust-toolchain.toml, the dev profile of Cargo.toml and the
# target directory ($CARGO_TARGET_DIR, else target/), so that the
# dependencies the repository's build compiled are not compiled again.
#   scripts/release/readme-crate.sh --fresh-lockfile
# The same crate with a lockfile of its own, resolved online as a user's
# `cargo add` resolves it (the newest compatible versions), type-checked:
# it fails on any warning from tool-service or tool-service-macros (a
# dependency that deprecated what they call, say).
set -euo pipefail
fresh_lockfile=false
[ "${1:-}" = "--fresh-lockfile" ] && fresh_lockfile=true
repo="$(cd "$(dirname "$0")/../.." && pwd)"
readme="$repo/README.md"
guide="$repo/tool-service/docs/testing.md"
section="## Add it to your crate"

fail() {
  echo "scripts/release/readme-crate.sh: $*" >&2
  exit 1
}

# The body of the first fenced block of FILE, in the section HEADING ("" for
# the whole file), whose opening fence matches the awk regex FENCE and whose
# body contains the text CONTAINS ("" for any).
fenced() {
  awk -v heading="$2" -v fence="$3" -v contains="$4" '
    BEGIN { in_section = (heading == "") }
    inside && /^```/ {
      inside = 0
      if (taking && (contains == "" || index(body, contains))) { printf "%s", body; found = 1; exit }
      next
    }
    inside { if (taking) body = body $0 "\n"; next }
    /^```/ { inside = 1; taking = in_section && $0 ~ fence; body = ""; next }
    /^#+ / && heading != "" { in_section = ($0 == heading) }
    END { exit !found }
  ' "$1"
}

# A Rust block as rustdoc compiles it: its hidden lines (`# …`) shown.
shown() {
  sed -E 's/^# //; s/^#$//'
}

deps="$(fenced "$readme" "$section" '^```toml' '[dependencies]')" ||
  fail "README.md has no \`\`\`toml block with [dependencies] under \"$section\""
main="$(fenced "$readme" "" '^```rust' 'fn main' | shown)" ||
  fail "README.md's Rust examples have no \`fn main\`"
readme_test="$(fenced "$readme" "$section" '^```rust' '#[test]' | shown)" ||
  fail "README.md has no Rust block with a #[test] under \"$section\""
guide_test="$(fenced "$guide" "" '^```' '#[tokio::test]' | shown)" ||
  fail "tool-service/docs/testing.md has no block with a #[tokio::test]"
grep -q 'call_tool' <<<"$guide_test" ||
  fail "the #[tokio::test] of tool-service/docs/testing.md no longer calls Registry::call_tool"

# `tool-service = "0.1"  # from a checkout: { path = "…/tool-service" }`:
# the path form, with this checkout for the `…`.
line="$(grep -E '^tool-service = ' <<<"$deps")" ||
  fail "the README's [dependencies] block has no tool-service line"
template="${line#*# from a checkout: }"
[ "$template" != "$line" ] && [[ "$template" == *…* ]] ||
  fail "the README's tool-service line says no \`# from a checkout: { path = \"…/tool-service\" }\`: $line"
from_checkout="tool-service = ${template//…/$repo}"

dir="$(mktemp -d "${TMPDIR:-/tmp}/readme-crate.XXXXXX")"
trap 'rm -rf "$dir"' EXIT
crate="$dir/readme-example"
cargo new --quiet --vcs none "$crate"
{
  # cargo new's manifest ends with an empty [dependencies]: the README's
  # block takes its place.
  sed '/^\[dependencies\]$/,$d' "$crate/Cargo.toml"
  while IFS= read -r dep; do
    if [ "$dep" = "$line" ]; then echo "$from_checkout"; else echo "$dep"; fi
  done <<<"$deps"
  echo
  echo "# The repository's dev profile, so that its compiled dependencies are reused."
  awk '/^\[/ { p = /^\[profile\.dev[].]/ } /^#/ { p = 0 } p' "$repo/Cargo.toml"
} >"$crate/Cargo.toml.new"
mv "$crate/Cargo.toml.new" "$crate/Cargo.toml"
{
  echo "$main"
  echo
  echo "#[cfg(test)]"
  echo "mod readme_test {"
  echo "$readme_test"
  echo "}"
} >"$crate/src/main.rs"
mkdir "$crate/tests"
echo "$guide_test" >"$crate/tests/testing_guide.rs"
cp "$repo/rust-toolchain.toml" "$crate/"
$fresh_lockfile || cp "$repo/Cargo.lock" "$crate/"

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$repo/target}"
# What .cargo/config.toml gives the repository's build (a crate outside it
# does not read that file): the same value keeps the pulsar crate's build
# script from running again.
export PROTOC="${PROTOC:-$repo/scripts/install/protoc}"

log="$dir/cargo.log"
explain() {
  local what="$1" missing
  missing="$(grep -oE "(unresolved module or unlinked crate|undeclared crate or module|can't find crate for|unresolved import) \`[A-Za-z0-9_]+" "$log" |
    sed -E 's/.*`//' | sort -u | tr '\n' ' ' || true)"
  echo >&2
  echo "scripts/release/readme-crate.sh: $what failed in a crate made from README.md alone (above)." >&2
  if [ -n "$missing" ]; then
    echo "Not found: $missing- a crate the README's examples (or the testing guide's test) use that README.md's [dependencies] block (\"$section\") lacks, or an item tool-service does not export." >&2
  fi
  if grep -q "no matching package named\|failed to select a version\|attempting to make an HTTP request, but --offline" "$log"; then
    echo "A dependency of the README needs a crate that is in neither Cargo.lock nor the local registry cache: build it once with the network (cargo fetch in the crate)." >&2
  fi
  echo "The crate, kept: $crate (Cargo.toml from README.md's [dependencies], src/main.rs from its first Rust example and its #[test], tests/testing_guide.rs from tool-service/docs/testing.md)." >&2
  trap - EXIT
  exit 1
}
cd "$crate"
if $fresh_lockfile; then
  echo "==> a crate from README.md alone, with the newest compatible dependencies, in $crate" >&2
  cargo generate-lockfile --quiet
  cargo check --all-targets --message-format=json >"$dir/check.json" 2>"$log" || {
    cat "$log" >&2
    explain "cargo check (a fresh lockfile)"
  }
  # Every warning rustc gave while compiling one of our crates.
  python3 - "$dir/check.json" <<'PY' || explain "cargo check (a fresh lockfile)"
import json, sys
ours = ("tool-service#", "tool-service-macros#", "/tool-service)", "/tool-service-macros)")
warnings = []
for line in open(sys.argv[1]):
    message = json.loads(line) if line.startswith("{") else {}
    if message.get("reason") != "compiler-message" or message["message"]["level"] != "warning":
        continue
    package = message["package_id"]
    if any(mark in package for mark in ours):
        warnings.append(message["message"]["rendered"])
for rendered in warnings:
    sys.stderr.write(rendered)
if warnings:
    sys.exit(f"{len(warnings)} warnings from tool-service's crates on the newest compatible dependencies (above)")
PY
  echo "==> the README's crate type-checks on a fresh lockfile with no warning from tool-service's crates" >&2
  exit 0
fi
echo "==> a crate from README.md alone, in $crate" >&2
cargo test --offline 2>&1 | tee "$log" || explain "cargo test"
cargo run --offline --quiet -- descriptors >"$dir/descriptors.json" 2>"$log" || {
  cat "$log" >&2
  explain "cargo run -- descriptors"
}
grep -q '"tell-joke"' "$dir/descriptors.json" ||
  fail "\`descriptors\` of the README's example does not describe the tool tell-joke: $(head -c 400 "$dir/descriptors.json")"
echo "==> the README's crate builds, its tests and the testing guide's pass, and it describes tell-joke" >&2
