//! What a binary says about itself, read from its own crate when it is
//! compiled: [`Meta`] (its name and version) with [`meta!`](crate::meta!),
//! and [`run!`](crate::run!), which hands them and the crate's description
//! to [`App`](super::App).

/// The name and version a binary shows for `-V` and `--version`; what
/// [`meta!`](crate::meta!) reads from the calling crate, for
/// [`App::meta`](super::App::meta).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Meta {
    /// The binary's name, e.g. `joke`.
    pub name: &'static str,
    /// The binary's version, e.g. `0.3.1`.
    pub version: &'static str,
    /// The one line at the top of `--help`, e.g. `Joke tools for the
    /// support agent` (empty: tool-service's own);
    /// [`App::about`](super::App::about) takes its place when given.
    pub description: &'static str,
}

/// The [`Meta`] of the calling crate's binary: `CARGO_BIN_NAME` (else
/// `CARGO_PKG_NAME`), `CARGO_PKG_VERSION` and `CARGO_PKG_DESCRIPTION`
/// (the `description` of its Cargo.toml), read when it is compiled. Hand
/// it to [`App::meta`](super::App::meta) when the binary builds its
/// [`App`](super::App) itself (to add flags, state or hooks), so that `-V`
/// names the binary and `--help` starts with its description;
/// [`run!()`](crate::run!) does it for a binary that needs nothing more.
///
/// ```
/// let meta = tool_service::meta!();
/// assert_eq!(meta.version, env!("CARGO_PKG_VERSION"));
/// assert_eq!(meta.description, env!("CARGO_PKG_DESCRIPTION"));
/// ```
#[macro_export]
#[cfg_attr(docsrs, doc(cfg(feature = "cli")))]
macro_rules! meta {
    () => {
        $crate::cli::Meta {
            name: match ::core::option_env!("CARGO_BIN_NAME") {
                ::core::option::Option::Some(name) => name,
                ::core::option::Option::None => ::core::env!("CARGO_PKG_NAME"),
            },
            version: ::core::env!("CARGO_PKG_VERSION"),
            description: ::core::env!("CARGO_PKG_DESCRIPTION"),
        }
    };
}

/// Runs the command line of this binary over every registered service, its
/// `-V` showing the name and version of the calling crate's binary and its
/// `--help` the crate's `description`: `App::new().meta(meta!()).run()`.
///
/// ```no_run
/// fn main() -> std::process::ExitCode {
///     tool_service::run!()
/// }
/// ```
///
/// `joke -V` then prints `joke 0.3.1`, and `joke --version` prints
/// `joke 0.3.1 (tool-service 0.1.0)`.
#[macro_export]
#[cfg_attr(docsrs, doc(cfg(feature = "cli")))]
macro_rules! run {
    () => {
        $crate::App::new().meta($crate::meta!()).run()
    };
}
