//! The README's Rust examples, compiled (and run, unless marked `no_run`)
//! as doctests of this package: `cargo test --doc -p tool-service-suite`.
#![doc = include_str!("../../README.md")]
