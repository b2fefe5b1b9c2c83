//! The tool logic every benchmarked variant runs, so that only the plumbing
//! differs: an echo tool and the spec's joke tool.

use serde::Deserialize;

/// The joke tool's config.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct JokeConfig {
    /// `pun`, `dad-joke` or `one-liner`.
    pub style: Option<String>,
}

/// The joke tool's arguments.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct JokeArgs {
    /// The topic for the joke (e.g., programming, animals, food)
    pub topic: String,
}

/// The echo tool's arguments.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct EchoArgs {
    /// The text to send back.
    pub text: String,
}

/// The joke for a topic and style (same table as the Python peer's).
pub fn joke(topic: &str, style: &str) -> String {
    let topic = topic.to_ascii_lowercase();
    let text = match (style, topic.as_str()) {
        ("pun", t) if t.contains("programming") => {
            "I'd tell you a UDP joke, but you might not get it."
        }
        ("dad-joke", t) if t.contains("programming") => {
            "Why do programmers prefer dark mode? Because light attracts bugs."
        }
        ("one-liner", t) if t.contains("programming") => {
            "There are 10 kinds of people: those who read binary and those who don't."
        }
        ("pun", t) if t.contains("animals") => {
            "A cheetah never plays hide and seek: it's always spotted."
        }
        ("pun", t) if t.contains("food") => "I'm on a seafood diet: I see food and I eat it.",
        _ => "Time flies like an arrow; fruit flies like a banana.",
    };
    format!("Here's a {style} for you:\n\n{text}")
}

/// `--name value` from the command line, or a default.
pub fn arg(name: &str, default: &str) -> String {
    let mut args = std::env::args();
    while let Some(arg) = args.next() {
        if arg == name {
            return args
                .next()
                .unwrap_or_else(|| panic!("{name} needs a value"));
        }
    }
    default.to_owned()
}
