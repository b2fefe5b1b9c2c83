//! The `check-schemas` command: what each LLM provider's own MCP client
//! code does with each tool's input schema, in a schema flavour, and what
//! the LLM then no longer reads; the strict converters' verdicts on the
//! schema as served follow, as a second opinion.

use std::io::Write;
use std::process::ExitCode;

use serde_json::{json, Map, Value};

use crate::registry::Registry;
use crate::schema::clients::{self, ClientPath, Taken};
use crate::schema::flavor::{self, SchemaFlavor};
use crate::schema::providers::{self, Provider};

use super::CliResult;

/// The flags of `check-schemas`.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct CheckArgs {
    /// The flavour to check, as `mcp --schema-flavor` would serve it:
    /// `spec` or `portable`.
    #[arg(long, env = "TOOL_SERVICE_SCHEMA_FLAVOR", default_value = "spec", value_name = "FLAVOR", value_parser = ["spec", "portable"], ignore_case = true)]
    schema_flavor: String,
    /// Check only the client paths to these providers (repeatable):
    /// gemini, openai, anthropic.
    #[arg(long, value_delimiter = ',', value_name = "PROVIDER", value_parser = ["gemini", "openai", "anthropic"], ignore_case = true)]
    provider: Vec<String>,
    /// Print JSON: each tool's input schema, each client path's outcome
    /// and the strict converters' verdicts.
    #[arg(long)]
    json: bool,
}

/// Reports, per tool and client path, whether the client takes the tool
/// (strictly or not) and what the LLM no longer reads; fails when a
/// client's code crashes on a tool.
pub(super) fn check(registry: &Registry, args: &CheckArgs, out: &mut dyn Write) -> CliResult {
    let flavor: SchemaFlavor = args.schema_flavor.parse()?;
    let chosen = |provider: Provider| {
        args.provider.is_empty()
            || args
                .provider
                .iter()
                .any(|name| name.eq_ignore_ascii_case(provider.name()))
    };
    let paths: Vec<ClientPath> = ClientPath::ALL
        .into_iter()
        .filter(|path| chosen(path.provider()))
        .collect();
    let converters: Vec<Provider> = Provider::ALL.into_iter().filter(|p| chosen(*p)).collect();
    let mut crashed = Vec::new();
    let mut tools = Vec::new();
    let mut text = String::new();
    for (name, schema) in input_schemas(registry, flavor) {
        text.push_str(&format!("{name} ({flavor})\n"));
        let mut outcomes = Map::new();
        for path in &paths {
            let outcome = clients::outcome(*path, &schema);
            let no_arguments = schema
                .get("properties")
                .and_then(Value::as_object)
                .is_none_or(Map::is_empty);
            text.push_str(&format!(
                "  {:<21} {}\n",
                path.name(),
                said(&outcome, no_arguments)
            ));
            if outcome.taken == Taken::Crashes {
                crashed.push(format!("{name} ({path})"));
            }
            let lost: Vec<Value> = outcome
                .lost
                .iter()
                .map(|lost| json!({"at": lost.at, "what": lost.what}))
                .collect();
            outcomes.insert(
                path.name().into(),
                json!({
                    "outcome": outcome.taken.name(),
                    "sentence": outcome.sentence,
                    "lost": lost,
                    "client": path.client(),
                }),
            );
        }
        let mut verdicts = Map::new();
        let mut second = Vec::new();
        for provider in &converters {
            let verdict = providers::check(*provider, &schema);
            second.push(match verdict.refusals.first() {
                None => format!("{provider} takes it"),
                Some(first) if verdict.refusals.len() == 1 => format!("{provider} refuses {first}"),
                Some(first) => format!(
                    "{provider} refuses {first} (and {} more)",
                    verdict.refusals.len() - 1
                ),
            });
            verdicts.insert(
                provider.name().into(),
                json!({
                    "accepts": verdict.accepts(),
                    "refusals": verdict.refusals,
                    "notes": verdict.notes,
                    "client": provider.client(),
                }),
            );
        }
        if !second.is_empty() {
            text.push_str(&format!(
                "  second opinion, the strict converters on this schema: {}\n",
                second.join("; ")
            ));
        }
        tools.push(json!({
            "name": name,
            "input_schema": schema,
            "paths": outcomes,
            "strict_converters": verdicts,
        }));
    }
    if args.json {
        let report = json!({"flavor": flavor.name(), "tools": tools});
        writeln!(out, "{}", serde_json::to_string_pretty(&report)?)?;
    } else {
        out.write_all(text.as_bytes())?;
    }
    if crashed.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    Err(format!(
        "a client's code crashes on a tool's schema in the {flavor} flavour: {}",
        crashed.join(", ")
    )
    .into())
}

/// An outcome as a user's client would have it happen; of a tool with
/// `no_arguments`, that strict mode (which holds the model to the
/// arguments' schema) would have nothing to hold.
fn said(outcome: &clients::Outcome, no_arguments: bool) -> String {
    let mut text = match (outcome.taken, &outcome.sentence) {
        (Taken::Strict, _) => String::from("takes it, in strict mode"),
        (Taken::Accepted, Some(why)) if no_arguments => format!(
            "takes it, not in strict mode ({why}); with no arguments to hold the model to, that costs nothing"
        ),
        (Taken::Accepted, Some(why)) => format!("takes it, not in strict mode ({why})"),
        (Taken::Accepted, None) => String::from("takes it"),
        (Taken::Crashes, why) => format!(
            "crashes: {}",
            why.as_deref().unwrap_or("the conversion raises")
        ),
    };
    if !outcome.lost.is_empty() {
        let lost: Vec<String> = outcome.lost.iter().map(clients::Lost::phrase).collect();
        text.push_str(&format!("; the model no longer reads {}", lost.join(", ")));
    }
    text
}

/// Each tool's input schema in `flavor`, as an MCP server serves it, in
/// the order of the tools' names.
fn input_schemas(registry: &Registry, flavor: SchemaFlavor) -> Vec<(String, Value)> {
    let mut schemas = Vec::new();
    for service in registry.services() {
        let arguments = (service.spec().arguments_schema)().to_value();
        for name in service.tool_names() {
            let Some(descriptor) = registry.descriptors().tool.get(name) else {
                continue;
            };
            let described = descriptor.argument_descriptions();
            let schema = flavor::input_schema(flavor, &arguments, &described);
            schemas.push((name.to_owned(), Value::Object(schema)));
        }
    }
    schemas.sort_by(|a, b| a.0.cmp(&b.0));
    schemas
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_without_arguments_served_non_strict_is_said_to_cost_nothing() {
        let fell_back = clients::Outcome {
            taken: Taken::Accepted,
            sentence: Some(String::from("its object is left open")),
            lost: Vec::new(),
        };
        assert_eq!(
            said(&fell_back, true),
            "takes it, not in strict mode (its object is left open); with no arguments to hold the model to, that costs nothing"
        );
        assert_eq!(
            said(&fell_back, false),
            "takes it, not in strict mode (its object is left open)"
        );
    }
}
