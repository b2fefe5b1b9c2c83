//! The `check-schemas` command: which LLM providers accept each tool's
//! input schema, in a schema flavour, as their own client code decides.

use std::io::Write;
use std::process::ExitCode;

use serde_json::{json, Map, Value};

use crate::registry::Registry;
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
    /// Check only for these providers (repeatable): gemini, openai,
    /// anthropic.
    #[arg(long, value_delimiter = ',', value_name = "PROVIDER", value_parser = ["gemini", "openai", "anthropic"], ignore_case = true)]
    provider: Vec<String>,
    /// Print JSON: each tool's input schema and each provider's verdict.
    #[arg(long)]
    json: bool,
}

/// Reports, per tool and provider, acceptance and why not; fails when a
/// provider refuses a tool.
pub(super) fn check(registry: &Registry, args: &CheckArgs, out: &mut dyn Write) -> CliResult {
    let flavor: SchemaFlavor = args.schema_flavor.parse()?;
    let chosen: Vec<Provider> = Provider::ALL
        .into_iter()
        .filter(|provider| {
            args.provider.is_empty()
                || args
                    .provider
                    .iter()
                    .any(|name| name.eq_ignore_ascii_case(provider.name()))
        })
        .collect();
    let mut refused = Vec::new();
    let mut tools = Vec::new();
    let mut text = String::new();
    for (name, schema) in input_schemas(registry, flavor) {
        let mut verdicts = Map::new();
        text.push_str(&format!("{name} ({flavor})\n"));
        for provider in &chosen {
            let verdict = providers::check(*provider, &schema);
            if verdict.accepts() {
                text.push_str(&format!("  {:<10} accepts", provider.name()));
                for note in &verdict.notes {
                    text.push_str(&format!("; {note}"));
                }
                text.push('\n');
            } else {
                refused.push(format!("{name} ({provider})"));
                text.push_str(&format!("  {:<10} refuses:\n", provider.name()));
                for refusal in &verdict.refusals {
                    text.push_str(&format!("    - {refusal}\n"));
                }
            }
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
        tools.push(json!({"name": name, "input_schema": schema, "providers": verdicts}));
    }
    if args.json {
        let report = json!({"flavor": flavor.name(), "tools": tools});
        writeln!(out, "{}", serde_json::to_string_pretty(&report)?)?;
    } else {
        out.write_all(text.as_bytes())?;
    }
    if refused.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    let hint = match flavor {
        SchemaFlavor::Spec => " (`--schema-flavor portable` serves what all three accept)",
        _ => "",
    };
    Err(format!(
        "a provider refuses a tool's schema in the {flavor} flavour ({} of {} checks): {}{hint}",
        refused.len(),
        tools.len() * chosen.len(),
        refused.join(", ")
    )
    .into())
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
