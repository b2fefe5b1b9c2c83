//! Everything `tool-service` does because the `pulsar` crate does not (yet),
//! in one place. Each item has an upstream report ready in
//! `docs/upstream-reports.md`; when the crate fixes one, its module here goes.
//!
//! | module | works around |
//! |---|---|
//! | [`handshake`] | the broker's maximum message size is dropped from `CONNECTED`; refusals lose their cause |
//! | [`nodelay`] | TCP_NODELAY is never set on broker connections |
//! | [`errors`] | a broker's `SEND_ERROR` arrives as a `Debug` dump; a consumer the client could not re-create reports one error and falls silent |
//! | [`client_log`] | the client logs the `CONNECT` frame, token included, at trace level |

// The command line installs it.
#[cfg_attr(not(feature = "cli"), allow(dead_code))]
pub(crate) mod client_log;
pub(crate) mod errors;
pub(crate) mod handshake;
pub(crate) mod nodelay;
