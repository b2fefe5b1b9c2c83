//! The joke service of TrustGraph's tool-services spec, in Rust.
//!
//! ```text
//! cargo run --example joke                      # print the descriptors
//! cargo run --example joke -- call tell-joke --args '{"topic": "programming"}'
//! ```

use std::fmt;

use schemars::JsonSchema;
use serde::Deserialize;
use tool_service::{tool_service, Context};

/// How the joke is told.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum JokeStyle {
    /// A play on words.
    #[default]
    Pun,
    /// A groan-worthy dad joke.
    DadJoke,
    /// A single line.
    OneLiner,
}

impl fmt::Display for JokeStyle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            JokeStyle::Pun => "pun",
            JokeStyle::DadJoke => "dad joke",
            JokeStyle::OneLiner => "one-liner",
        })
    }
}

/// Why no joke could be told.
#[derive(Debug, thiserror::Error)]
pub enum JokeError {
    /// The topic was empty.
    #[error("give a topic for the joke, e.g. programming, animals or food")]
    EmptyTopic,
}

/// Picks a joke for a topic category.
fn pick_joke(topic: &str, style: JokeStyle) -> &'static str {
    let topic = topic.to_ascii_lowercase();
    let category = ["programming", "animals", "food"]
        .into_iter()
        .find(|category| topic.contains(category) || category.contains(topic.as_str()))
        .unwrap_or("general");
    match (category, style) {
        ("programming", JokeStyle::Pun) => "I'd tell you a UDP joke, but you might not get it.",
        ("programming", JokeStyle::DadJoke) => {
            "Why do programmers prefer dark mode? Because light attracts bugs."
        }
        ("programming", JokeStyle::OneLiner) => {
            "There are 10 kinds of people: those who read binary and those who don't."
        }
        ("animals", JokeStyle::Pun) => "A cheetah never plays hide and seek: it's always spotted.",
        ("animals", JokeStyle::DadJoke) => "What do you call a fish with no eyes? A fsh.",
        ("animals", JokeStyle::OneLiner) => "My dog ate my homework; it took him a few bytes.",
        ("food", JokeStyle::Pun) => "I'm on a seafood diet: I see food and I eat it.",
        ("food", JokeStyle::DadJoke) => "Why did the tomato blush? It saw the salad dressing.",
        ("food", JokeStyle::OneLiner) => "I told my pizza a joke; it was too cheesy.",
        (_, JokeStyle::Pun) => "Time flies like an arrow; fruit flies like a banana.",
        (_, JokeStyle::DadJoke) => "I only know 25 letters of the alphabet. I don't know y.",
        (_, JokeStyle::OneLiner) => "I used to be indecisive; now I'm not so sure.",
    }
}

/// Tell a joke on a given topic.
///
/// # Arguments
/// * `topic` - The topic for the joke (e.g., programming, animals, food)
/// * `style` - The kind of joke (a config param, set by each tool).
#[tool_service(
    topic = "joke",
    tool(
        name = "tell-joke",
        description = "Tell a joke on a given topic",
        config(style = "pun")
    )
)]
pub async fn tell_joke(
    #[config_param] style: Option<JokeStyle>,
    topic: String,
    #[context] ctx: &Context,
) -> Result<String, JokeError> {
    if topic.trim().is_empty() {
        return Err(JokeError::EmptyTopic);
    }
    let style = style.unwrap_or_default();
    let joke = pick_joke(&topic, style);
    Ok(match ctx.user() {
        Some(user) => format!("Hey {user}! Here's a {style} for you:\n\n{joke}"),
        None => format!("Here's a {style} for you:\n\n{joke}"),
    })
}

fn main() -> std::process::ExitCode {
    tool_service::run!()
}
