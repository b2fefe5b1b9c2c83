//! The tool logic every benchmarked variant runs, so that only the plumbing
//! differs: an echo tool, the spec's joke tool and a CPU-bound tool,
//! registered here as `#[tool_service]`s (`bench-echo-service`,
//! `bench-joke-service`, `bench-spin-service`) and written by hand in
//! [`hand_written`].

use serde::{Deserialize, Serialize};
use tool_service::{tool_service, ToolError};

/// Echo the text back.
#[tool_service(topic = "bench-echo")]
pub async fn echo(#[args] args: EchoArgs) -> String {
    args.text
}

/// Keep the CPU busy for a while, then answer: a handler whose work happens
/// before its first `.await`, as CPU-bound tools do.
#[tool_service(topic = "bench-spin")]
pub async fn spin(#[args] args: SpinArgs) -> String {
    spin_for(args.micros)
}

/// The command line of `ours` (and `ours_traced`): every benchmarked tool,
/// with the joke book as the state.
pub fn serve_main() -> std::process::ExitCode {
    tool_service::App::new()
        .setup(|| async {
            Ok::<_, tool_service::HookError>(tool_service::State::new().with(JokeBook {
                default_style: "pun",
            }))
        })
        .run()
}

/// Busy-waits `micros` microseconds; says how long.
pub fn spin_for(micros: u64) -> String {
    let started = std::time::Instant::now();
    while started.elapsed() < std::time::Duration::from_micros(micros) {
        std::hint::spin_loop();
    }
    format!("spun {micros} µs")
}

/// Tell a joke on a given topic.
#[tool_service(
    topic = "bench-joke",
    tool(name = "bench-tell-joke", config(style = "pun"))
)]
pub async fn tell_joke(
    #[config] config: JokeConfig,
    #[args] args: JokeArgs,
) -> Result<String, ToolError> {
    if args.topic.is_empty() {
        return Err(ToolError::new("give a topic"));
    }
    Ok(joke(&args.topic, config.style.as_deref().unwrap_or("pun")))
}

/// What the stateful joke service shares: the default style.
#[derive(Debug)]
pub struct JokeBook {
    /// The style when the config names none.
    pub default_style: &'static str,
}

/// Tell a joke on a given topic, with shared state.
#[tool_service(
    topic = "bench-joke-state",
    tool(name = "bench-tell-joke-state", config(style = "pun"))
)]
pub async fn tell_joke_with_state(
    #[config] config: JokeConfig,
    #[args] args: JokeArgs,
    #[state] book: &JokeBook,
) -> Result<String, ToolError> {
    if args.topic.is_empty() {
        return Err(ToolError::new("give a topic"));
    }
    Ok(joke(
        &args.topic,
        config.style.as_deref().unwrap_or(book.default_style),
    ))
}

/// The registered joke service that takes state, and that state.
pub fn joke_service_with_state() -> (tool_service::Service, tool_service::State) {
    let service = tool_service::Registry::collect()
        .expect("a valid registry")
        .service("bench-joke-state-service")
        .expect("the bench library registers bench-joke-state-service");
    let state = tool_service::State::new().with(JokeBook {
        default_style: "pun",
    });
    (service, state)
}

/// The request both in-process benchmarks send: the original spec's shape.
pub const JOKE_REQUEST: &[u8] =
    br#"{"user": "alice", "config": "{\"style\": \"pun\"}", "arguments": "{\"topic\": \"programming\"}"}"#;

/// The registered joke service, for driving `dispatch` directly.
pub fn joke_service() -> tool_service::Service {
    tool_service::Registry::collect()
        .expect("a valid registry")
        .service("bench-joke-service")
        .expect("the bench library registers bench-joke-service")
}

/// One request through `tool-service`'s dispatch, as the transport runs it:
/// `frames` stands for the reused producer; returns the response payload.
pub async fn through_dispatch(
    service: tool_service::Service,
    payload: &[u8],
    frames: &mut Vec<tool_service::wire::Frame>,
) -> Vec<u8> {
    frames.clear();
    tool_service::dispatch::dispatch(service, "id", payload, frames)
        .await
        .unwrap_or_else(|never| match never {});
    frames[0].encode()
}

/// Search the tickets: typed arguments with bounds, an enum and a list.
#[tool_service(topic = "bench-search")]
pub async fn search(#[args] args: SearchArgs) -> String {
    format!(
        "{} {} {:?} {:?}",
        args.query, args.limit, args.status, args.tags
    )
}

/// A ticket's status.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// Waiting.
    Open,
    /// Done.
    Closed,
}

/// The search tool's arguments.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct SearchArgs {
    /// What to look for.
    pub query: String,
    /// How many tickets.
    #[schemars(range(min = 1, max = 50))]
    pub limit: u32,
    /// Only tickets with this status.
    pub status: Option<Status>,
    /// Only tickets with these tags.
    #[serde(default)]
    pub tags: Vec<String>,
}

/// A search request as typed as its arguments.
pub const SEARCH_REQUEST: &[u8] =
    br#"{"config": "{}", "arguments": "{\"query\": \"vpn\", \"limit\": 5, \"status\": \"open\", \"tags\": [\"billing\"]}"}"#;

/// The same search as an LLM often writes it: a number as text, a variant
/// in another case, one tag for the list.
pub const SEARCH_REQUEST_LOOSE: &[u8] =
    br#"{"config": "{}", "arguments": "{\"query\": \"vpn\", \"limit\": \"5\", \"status\": \"Open\", \"tags\": \"billing\"}"}"#;

/// The registered search service.
pub fn search_service() -> tool_service::Service {
    tool_service::Registry::collect()
        .expect("a valid registry")
        .service("bench-search-service")
        .expect("the bench library registers bench-search-service")
}

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

/// The spin tool's arguments.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct SpinArgs {
    /// How long to keep the CPU busy, in microseconds.
    pub micros: u64,
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

/// A request as the contract has it (the user, when sent, reaches the
/// handler too, so it is decoded here as well).
#[derive(Deserialize)]
struct Envelope {
    #[serde(default)]
    #[allow(dead_code)]
    user: Option<String>,
    #[serde(default)]
    config: String,
    #[serde(default)]
    arguments: String,
}

#[derive(Serialize)]
struct Failure {
    #[serde(rename = "type")]
    kind: &'static str,
    message: String,
}

#[derive(Serialize)]
struct Response {
    error: Option<Failure>,
    response: String,
    end_of_stream: bool,
}

/// The hand-written baseline: what a careful service does for one request
/// payload with serde_json alone (`kind` is `echo`, `joke` or `spin`), returning the
/// response payload.
pub fn hand_written(kind: &str, payload: &[u8]) -> Vec<u8> {
    let object = |text: String| {
        if text.is_empty() {
            String::from("{}")
        } else {
            text
        }
    };
    let result = (|| -> Result<String, String> {
        let envelope: Envelope = serde_json::from_slice(payload).map_err(|e| e.to_string())?;
        if kind == "echo" {
            let args: EchoArgs =
                serde_json::from_str(&object(envelope.arguments)).map_err(|e| e.to_string())?;
            return Ok(args.text);
        }
        if kind == "spin" {
            let args: SpinArgs =
                serde_json::from_str(&object(envelope.arguments)).map_err(|e| e.to_string())?;
            return Ok(spin_for(args.micros));
        }
        let config: JokeConfig =
            serde_json::from_str(&object(envelope.config)).map_err(|e| e.to_string())?;
        let args: JokeArgs =
            serde_json::from_str(&object(envelope.arguments)).map_err(|e| e.to_string())?;
        if args.topic.is_empty() {
            return Err(String::from("give a topic"));
        }
        Ok(joke(&args.topic, config.style.as_deref().unwrap_or("pun")))
    })();
    let response = match result {
        Ok(response) => Response {
            error: None,
            response,
            end_of_stream: true,
        },
        Err(message) => Response {
            error: Some(Failure {
                kind: "tool-service-error",
                message,
            }),
            response: String::new(),
            end_of_stream: true,
        },
    };
    serde_json::to_vec(&response).expect("a response of strings encodes")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the benchmarks compare is the same work: both paths answer each
    /// request with the same bytes.
    #[tokio::test]
    async fn dispatch_and_the_hand_written_path_answer_with_the_same_bytes() {
        let registry = tool_service::Registry::collect().expect("a valid registry");
        let cases: [(&str, &[u8]); 5] = [
            ("joke", JOKE_REQUEST),
            (
                "joke",
                br#"{"config": "{}", "arguments": "{\"topic\": \"\"}"}"#,
            ),
            (
                "echo",
                br#"{"config": "", "arguments": "{\"text\": \"hi\"}"}"#,
            ),
            ("echo", br#"{"arguments": "{\"text\": \"\\u00e9\\n\"}"}"#),
            ("spin", br#"{"arguments": "{\"micros\": 5}"}"#),
        ];
        let mut frames = Vec::new();
        for (kind, payload) in cases {
            let service = registry
                .service(&format!("bench-{kind}-service"))
                .expect("a bench service");
            let ours = through_dispatch(service, payload, &mut frames).await;
            assert_eq!(
                String::from_utf8_lossy(&ours),
                String::from_utf8_lossy(&hand_written(kind, payload)),
                "{kind}: {}",
                String::from_utf8_lossy(payload)
            );
        }
    }
}
