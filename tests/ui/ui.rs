//! The macro's compile-time contract: every misuse in `fail/` fails with the
//! message in its `.stderr` snapshot, and every shape in `pass/` compiles
//! and runs its own checks. The cases build against `tool-service` without
//! default features: the attribute needs none of the transports.

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("fail/*.rs");
    cases.pass("pass/*.rs");
}
