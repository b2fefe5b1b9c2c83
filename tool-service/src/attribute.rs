//! The attribute's parsers, the macro crate's own file included: the
//! runtime reads `serve --timeout`, `--rate` and [`Rate`](crate::Rate) with
//! the rules `timeout = "…"` and `rate = "…"` are checked by at compile time.

#[path = "attribute_duration.rs"]
#[cfg_attr(not(all(feature = "cli", feature = "pulsar")), allow(dead_code))]
mod parsers;

pub(crate) use parsers::*;
