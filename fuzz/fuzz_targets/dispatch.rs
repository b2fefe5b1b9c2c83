//! Fuzz target: payload → `dispatch::dispatch` → frames, through four
//! `#[tool_service]`s. The input and the invariants are in `fuzz/checks/dispatch.rs`, which
//! `tests/offline/fuzz_seeds.rs` also runs on the committed seeds.

#![no_main]

#[path = "../checks/dispatch.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::check(data));
