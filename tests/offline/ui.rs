//! The macro's compile-time contract: every misuse in `ui/fail` fails with the
//! message in its `.stderr` snapshot, and every shape in `ui/pass` compiles
//! and runs its own checks.

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/fail/*.rs");
    cases.pass("tests/ui/pass/*.rs");
}
