//! The fuzz targets' invariants (`fuzz/checks/`), run on the committed seed
//! inputs (`fuzz/seeds/<target>/`) with the stable toolchain: what
//! `scripts/fuzz.sh` explores with libFuzzer starts from inputs that hold
//! here, and a change that breaks an invariant on a seed fails `cargo test`.

#[path = "../../fuzz/checks/dispatch.rs"]
mod dispatch;
#[path = "../../fuzz/checks/envelope.rs"]
mod envelope;

use std::path::PathBuf;

/// The seed files of `target`, at least one.
fn seeds(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz")
        .join("seeds")
        .join(target);
    let mut seeds: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|error| panic!("{}: {error}", dir.display()))
        .map(|entry| {
            let path = entry.unwrap().path();
            let bytes = std::fs::read(&path).unwrap();
            (path, bytes)
        })
        .collect();
    seeds.sort();
    assert!(!seeds.is_empty(), "no seeds in {}", dir.display());
    seeds
}

fn replay(target: &str, check: fn(&[u8])) {
    for (path, bytes) in seeds(target) {
        let result = std::panic::catch_unwind(|| check(&bytes));
        assert!(
            result.is_ok(),
            "seed {} breaks an invariant of the {target} target",
            path.display()
        );
    }
}

#[test]
fn the_envelope_invariants_hold_on_every_seed() {
    replay("envelope", envelope::check);
}

#[test]
fn the_dispatch_invariants_hold_on_every_seed() {
    replay("dispatch", dispatch::check);
}

#[test]
#[should_panic(expected = "breaks an invariant of the envelope target")]
fn a_seed_that_breaks_an_invariant_fails_the_replay() {
    replay("envelope", |_| panic!("a broken invariant"));
}
