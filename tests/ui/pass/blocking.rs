// A plain `fn` is a tool that runs on the blocking pool: it takes what an
// `async fn` takes (config by reference, state, the context, a stream) and
// returns `Result<_, Box<dyn Error + Send + Sync>>` with `?` on any error,
// a boxed ToolError keeping its type.
#[path = "../support.rs"]
mod support;

use std::error::Error;

use serde::Deserialize;
use serde_json::json;
use tool_service::{tool_service, Chunks, Context, StreamClosed, ToolError};

#[derive(Deserialize, schemars::JsonSchema)]
struct Shelf {
    /// The shelf to read.
    shelf: String,
}

/// Read a book from a shelf.
///
/// # Arguments
/// * `title` - The book.
#[tool_service(topic = "read-book", tool(config(shelf = "top")))]
fn read_book(
    #[config] shelf: &Shelf,
    title: String,
    #[context] ctx: &Context,
) -> Result<String, Box<dyn Error + Send + Sync>> {
    if title.is_empty() {
        return Err(ToolError::with_type("not-found", "which book?").into());
    }
    let pages: u8 = "300".parse()?;
    Ok(format!("{title} from {} ({pages} pages) for {}", shelf.shelf, ctx.request_id()))
}

/// Read the pages one by one.
#[tool_service(topic = "read-pages")]
fn read_pages(#[stream] out: Chunks) -> Result<(), StreamClosed> {
    out.send_blocking("page 1")?;
    Ok(())
}

fn main() {
    let registry = support::registry();
    assert!(registry.service("read-book-service").unwrap().is_blocking());
    let frames = support::call("read-book", json!({"shelf": "top"}), json!({"title": "Dune"}));
    let error = frames[0].error.as_ref().unwrap();
    assert_eq!(error.kind(), "tool-service-error");
    assert_eq!(error.message(), "number too large to fit in target type");
    let frames = support::call("read-book", json!({"shelf": "top"}), json!({"title": ""}));
    assert_eq!(frames[0].error.as_ref().unwrap().kind(), "not-found");
    let frames = support::call("read-pages", json!({}), json!({}));
    assert_eq!(frames[0].response, "page 1");
    assert!(frames[1].end_of_stream);
}
