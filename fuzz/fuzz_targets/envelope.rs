//! Fuzz target: arbitrary bytes → `Request::decode`, and the error frame
//! built from a decode failure. The input and the invariants are in `fuzz/checks/envelope.rs`, which
//! `tests/offline/fuzz_seeds.rs` also runs on the committed seeds.

#![no_main]

#[path = "../checks/envelope.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::check(data));
