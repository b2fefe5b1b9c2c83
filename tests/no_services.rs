//! A binary with no services at all (its services sit in a library crate it
//! never names, so the linker left them out) is refused by every command,
//! naming that cause, instead of printing `{}` or serving nothing.

use tool_service::App;

#[test]
fn every_command_refuses_a_binary_without_services() {
    assert!(
        tool_service::Registry::collect()
            .unwrap()
            .services()
            .is_empty(),
        "this test binary must define and link no services"
    );
    for command in [
        &["descriptors"][..],
        &["list"],
        &["call", "anything"],
        &["mcp"],
        &["serve"],
        &["announce"],
        &["withdraw"],
    ] {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = App::new().run_from(
            std::iter::once("binary").chain(command.iter().copied()),
            &mut out,
            &mut err,
        );
        let err = String::from_utf8(err).unwrap();
        assert_eq!(code, std::process::ExitCode::FAILURE, "{command:?}: {err}");
        assert!(
            out.is_empty(),
            "{command:?}: {}",
            String::from_utf8_lossy(&out)
        );
        assert_eq!(
            err,
            "error: no tool services are registered in this binary; a service defined in a \
             library crate is linked only when the binary names the crate: add \
             `use my_tools as _;` to its main.rs\n",
            "{command:?}"
        );
    }
}
