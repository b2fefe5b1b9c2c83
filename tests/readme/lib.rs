//! The README's Rust examples, compiled (and run, unless marked `no_run`)
//! as doctests of this package: `cargo test --doc -p tool-service-suite`.
// The README shows a `#[test]` for the reader's own tests.
#![allow(clippy::test_attr_in_doctest)]
#![doc = include_str!("../../README.md")]
