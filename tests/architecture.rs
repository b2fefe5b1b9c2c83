//! The runtime crate's module graph, as `tool-service/src/lib.rs` presents
//! it: layers, each module using only modules of lower layers. A module
//! that reaches up (or sideways into a cycle) fails here, naming the path.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The layers, lowest first. Every top-level module of the crate is in one.
const LAYERS: &[&[&str]] = &[
    // Leaves.
    &["backoff", "duration", "error", "known", "log_text", "state"],
    // The request's parts and the frames of its answer.
    &["context", "response", "stream", "wire"],
    // What argument schemas promise.
    &["rules"],
    // What generated code registers, and typed decoding.
    &["decode", "schema", "spec"],
    &["descriptor", "dispatch"],
    &["registry"],
    // What generated code reaches, by absolute path.
    &["__private"],
    // The broker side (feature `pulsar`).
    &["pulsar_compat"],
    &["broker"],
    &["announce", "client", "metrics"],
    // The two transports, siblings over the same request path: Pulsar
    // (feature `pulsar`) and MCP (feature `mcp`).
    &["serve", "mcp"],
    // The command line (feature `cli`).
    &["cli"],
];

/// Root re-exports, by the module that defines them.
const REEXPORTS: &[(&str, &str)] = &[
    ("Context", "context"),
    ("ToolError", "error"),
    ("TypedError", "error"),
    ("Registry", "registry"),
    ("Problem", "registry"),
    ("RegistryError", "registry"),
    ("UnknownName", "registry"),
    ("MissingState", "registry"),
    ("MissingServices", "registry"),
    ("App", "cli"),
    ("HookError", "cli"),
    ("Service", "spec"),
    ("State", "state"),
    ("Chunks", "stream"),
    ("StreamClosed", "stream"),
    ("Collected", "stream"),
    ("response_text", "response"),
    ("tool_service", "macro"),
    ("run", "cli"),
];

fn source_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tool-service/src")
}

/// The top-level module each source file belongs to.
fn module_of(path: &Path) -> String {
    let relative = path.strip_prefix(source_dir()).unwrap();
    let first = relative.components().next().unwrap();
    first
        .as_os_str()
        .to_string_lossy()
        .trim_end_matches(".rs")
        .to_owned()
}

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files(&path, out);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            out.push(path);
        }
    }
}

/// The code of a file without comments and without its test modules.
fn code(text: &str) -> String {
    let text = text.split("#[cfg(test)]").next().unwrap();
    text.lines()
        .map(|line| match line.find("//") {
            Some(at) => &line[..at],
            None => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The crate-level names a file uses: `crate::x` and `crate::{x, y}`.
fn used_names(code: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        rest = &rest[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap();
            for item in group[..end].split(',') {
                let name = item.trim().split("::").next().unwrap().trim();
                if !name.is_empty() {
                    names.push(name.to_owned());
                }
            }
        } else {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            // `crate::run!` and the like are exported macros, at the root.
            if !rest[name.len()..].starts_with('!') {
                names.push(name);
            }
        }
    }
    names
}

fn layer_of(module: &str) -> usize {
    LAYERS
        .iter()
        .position(|layer| layer.contains(&module))
        .unwrap_or_else(|| panic!("module `{module}` is in no layer: add it to LAYERS"))
}

#[test]
fn modules_use_only_lower_layers() {
    let mut all = Vec::new();
    files(&source_dir(), &mut all);
    let mut uses: BTreeMap<String, Vec<(String, PathBuf)>> = BTreeMap::new();
    for path in &all {
        let module = module_of(path);
        if module == "lib" {
            continue;
        }
        let code = code(&std::fs::read_to_string(path).unwrap());
        for name in used_names(&code) {
            let target = REEXPORTS
                .iter()
                .find(|(item, _)| *item == name)
                .map_or(name.clone(), |(_, module)| (*module).to_owned());
            if target != module && target != "macro" {
                uses.entry(module.clone())
                    .or_default()
                    .push((target, path.clone()));
            }
        }
    }
    let mut upward = Vec::new();
    for (module, targets) in &uses {
        for (target, path) in targets {
            if layer_of(target) >= layer_of(module) {
                upward.push(format!(
                    "{} uses `crate::{target}`, which is not below `{module}`",
                    path.strip_prefix(source_dir()).unwrap().display()
                ));
            }
        }
    }
    upward.sort();
    upward.dedup();
    assert!(upward.is_empty(), "{}", upward.join("\n"));
    // The check sees what it should: the request path uses the leaves.
    assert!(uses["dispatch"].iter().any(|(target, _)| target == "wire"));
    assert!(uses["serve"].iter().any(|(target, _)| target == "registry"));
}

#[test]
fn every_module_has_a_layer() {
    let mut all = Vec::new();
    files(&source_dir(), &mut all);
    for path in &all {
        let module = module_of(path);
        if module != "lib" {
            layer_of(&module);
        }
    }
}
