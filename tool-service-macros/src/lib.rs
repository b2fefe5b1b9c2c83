//! Procedural macros of [`tool-service`](https://docs.rs/tool-service).
//! Depend on `tool-service`, which re-exports them.

mod annotations;
mod attr;
mod bounds;
mod ctxt;
mod doc;
mod duration;
mod expand;
mod key;
mod model;
mod scope;

use proc_macro::TokenStream;

/// (The attribute is defined in `tool-service-macros` and documented, with
/// its examples, where `tool-service` re-exports it: use it through
/// `tool-service`.)
#[proc_macro_attribute]
pub fn tool_service(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand::tool_service(attr.into(), item.into()).into()
}
