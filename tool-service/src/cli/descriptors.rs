//! `descriptors`: the `tool-service` and `tool` items of every service as
//! one JSON config tree, and with `--out` one file per item. Also what a
//! binary does without a command.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use super::CliResult;
use crate::descriptor::QueueNames;
use crate::registry::Registry;

/// Prints the descriptors with `names`' queue names, and writes one file
/// per item under `dir` when given.
pub(super) fn descriptors(
    registry: &Registry,
    dir: Option<&Path>,
    names: QueueNames,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> CliResult {
    let tree = registry.descriptors().clone().with_queue_names(names);
    serde_json::to_writer_pretty(&mut *out, &tree)?;
    writeln!(out)?;
    if let Some(dir) = dir {
        let items = tree.items();
        for (key, value) in &items {
            let path = dir.join(format!("{key}.json"));
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)
                    .map_err(|error| format!("cannot create {}: {error}", parent.display()))?;
            }
            let mut text = serde_json::to_string_pretty(value)?;
            text.push('\n');
            std::fs::write(&path, text)
                .map_err(|error| format!("cannot write {}: {error}", path.display()))?;
        }
        writeln!(
            err,
            "wrote {} descriptor files to {}",
            items.len(),
            dir.display()
        )?;
    }
    Ok(ExitCode::SUCCESS)
}
