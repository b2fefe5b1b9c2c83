//! `call`: one request run in-process, through the same decode → handler →
//! encode path the transports use, its frames printed as JSON lines.

use std::io::Write;
use std::process::ExitCode;

use serde_json::Value;

use super::CliResult;
use crate::registry::Registry;
use crate::wire::Request;

/// What `call` runs.
#[derive(Debug)]
pub(super) struct CallArgs {
    pub(super) name: String,
    pub(super) arguments: String,
    pub(super) config: Option<String>,
    pub(super) user: Option<String>,
    pub(super) id: String,
}

/// Runs the request and prints its frames; fails when the last is an error.
pub(super) async fn call(registry: &Registry, args: CallArgs, out: &mut dyn Write) -> CliResult {
    let CallArgs {
        name,
        arguments,
        config,
        user,
        id,
    } = args;
    let request = Request {
        user: user.filter(|user| !user.is_empty()),
        config: config.unwrap_or_else(|| String::from("{}")),
        arguments,
    };
    let frames = registry.call(&name, &id, request).await?;
    for frame in &frames {
        let mut line = serde_json::Map::new();
        line.insert("id".into(), id.as_str().into());
        if let Value::Object(fields) = serde_json::to_value(frame)? {
            line.extend(fields);
        }
        writeln!(out, "{}", Value::Object(line))?;
    }
    let ok = frames.last().is_some_and(|frame| frame.error.is_none());
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
