//! A streaming tool: each line of the story is its own frame
//! (`end_of_stream: false`), the last frame ends the stream.
//!
//! ```text
//! cargo run --example streaming -- call tell-story --args '{"hero": "Ferris", "chapters": 3}'
//! ```

use std::time::Duration;

use tool_service::{tool_service, Chunks, StreamClosed};

/// Tell a short story about a hero, chapter by chapter.
///
/// # Arguments
/// * `hero` - Who the story is about.
/// * `chapters` - How many chapters to tell (1 to 10).
#[tool_service(topic = "story")]
pub async fn tell_story(
    hero: String,
    chapters: Option<u8>,
    #[stream] out: &Chunks,
) -> Result<String, StreamClosed> {
    let chapters = chapters.unwrap_or(3).clamp(1, 10);
    for chapter in 1..=chapters {
        out.send(format!("Chapter {chapter}: {hero} sets out again.\n"))
            .await?;
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    Ok(format!("The end of {hero}'s {chapters} chapters."))
}

fn main() -> std::process::ExitCode {
    tool_service::run!()
}
