//! The documentation against what the code has: every flag of every
//! command in the operations guide's table (with the commands that take
//! it), every command, every cargo feature and every metric family. A flag
//! added, renamed or dropped without its row fails here, naming it.

use crate::support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

fn read(path: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

fn help(args: &[&str]) -> String {
    let output = Command::new(support::example("joke"))
        .args(args)
        .arg("--help")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "joke {args:?} --help: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// The long flags written in a text: `--name`.
fn flags_in(text: &str) -> BTreeSet<String> {
    let mut flags = BTreeSet::new();
    let mut rest = text;
    while let Some(at) = rest.find("--") {
        let name: String = rest[at + 2..]
            .chars()
            .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-')
            .collect();
        if name.starts_with(|c: char| c.is_ascii_lowercase()) {
            flags.insert(format!("--{name}"));
        }
        rest = &rest[at + 2 + name.len()..];
    }
    flags
}

/// The commands `joke --help` lists, `help` left out.
fn commands() -> Vec<String> {
    let top = help(&[]);
    let listing = top
        .split("Commands:")
        .nth(1)
        .and_then(|rest| rest.split("\n\n").next())
        .expect("`--help` lists its commands under `Commands:`");
    listing
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .filter(|command| *command != "help")
        .map(str::to_owned)
        .collect()
}

/// Each command's flags, as its `--help` lists them (`--help` and
/// `--version` left out).
fn flags_by_command() -> BTreeMap<String, BTreeSet<String>> {
    commands()
        .into_iter()
        .map(|command| {
            let text = help(&[&command]);
            let options = text.split("Options:").nth(1).unwrap_or("");
            let flags = options
                .lines()
                .filter(|line| line.trim_start().starts_with('-'))
                .flat_map(|line| flags_in(line.split("  ").find(|s| !s.is_empty()).unwrap_or("")))
                .filter(|flag| flag != "--help" && flag != "--version")
                .collect();
            (command, flags)
        })
        .collect()
}

/// The operations guide's flag table: for each flag, the commands its row
/// names.
fn documented_flags() -> BTreeMap<String, BTreeSet<String>> {
    let guide = read("tool-service/docs/operations.md");
    let table = guide
        .split("| flag | commands |")
        .nth(1)
        .expect("docs/operations.md has a `| flag | commands | … |` table");
    let mut documented: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for row in table
        .lines()
        .skip(2)
        .take_while(|line| line.starts_with('|'))
    {
        let cells: Vec<&str> = row.split(" | ").collect();
        let commands: BTreeSet<String> = cells[1]
            .split(',')
            .map(|command| command.trim().to_owned())
            .collect();
        for flag in flags_in(cells[0]) {
            let previous = documented.insert(flag.clone(), commands.clone());
            assert!(
                previous.is_none(),
                "`{flag}` has two rows in docs/operations.md"
            );
        }
    }
    documented
}

#[test]
fn every_flag_of_every_command_is_in_the_operations_guide_with_its_commands() {
    let mut taken: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (command, flags) in flags_by_command() {
        for flag in flags {
            taken.entry(flag).or_default().insert(command.clone());
        }
    }
    let documented = documented_flags();
    let mut wrong = Vec::new();
    for (flag, commands) in &taken {
        match documented.get(flag) {
            None => wrong.push(format!(
                "`{flag}` ({}) has no row in the table of docs/operations.md",
                commands.iter().cloned().collect::<Vec<_>>().join(", ")
            )),
            Some(listed) if listed != commands => wrong.push(format!(
                "`{flag}`: docs/operations.md names the commands {listed:?}, `--help` shows it in {commands:?}"
            )),
            Some(_) => {}
        }
    }
    for flag in documented.keys() {
        if !taken.contains_key(flag) {
            wrong.push(format!(
                "docs/operations.md documents `{flag}`, which no command takes"
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn every_command_is_in_the_operations_guide() {
    let guide = read("tool-service/docs/operations.md");
    for command in commands() {
        assert!(
            guide.contains(&format!("| `{command}`"))
                || guide.contains(&format!(", `{command}` |")),
            "the command `{command}` has no row in the command table of docs/operations.md"
        );
    }
}

/// The features `tool-service` declares, `default` left out.
fn features() -> Vec<String> {
    let manifest = read("tool-service/Cargo.toml");
    let section = manifest
        .split("[features]")
        .nth(1)
        .and_then(|rest| rest.split("\n[").next())
        .expect("tool-service/Cargo.toml has a [features] section");
    section
        .lines()
        .filter_map(|line| line.split_once(" = ").map(|(name, _)| name.trim()))
        .filter(|name| !name.starts_with('#') && *name != "default")
        .map(str::to_owned)
        .collect()
}

#[test]
fn every_cargo_feature_is_in_the_crate_docs_and_the_readme() {
    let crate_docs = read("tool-service/src/lib.rs");
    let readme = read("README.md");
    let features = features();
    assert!(features.len() >= 5, "too few features read: {features:?}");
    for feature in features {
        let row = format!("| `{feature}` |");
        assert!(
            crate_docs.contains(&row),
            "the feature `{feature}` has no row in the cargo features table of tool-service/src/lib.rs"
        );
        assert!(
            readme.contains(&row),
            "the feature `{feature}` has no row in the cargo features table of README.md"
        );
    }
}

#[test]
fn every_metric_family_is_in_the_metrics_docs() {
    // The families are the `tg_…` names the runtime's sources write.
    let mut families = BTreeSet::new();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tool-service/src");
    let mut pending = vec![dir];
    while let Some(path) = pending.pop() {
        if path.is_dir() {
            pending.extend(
                std::fs::read_dir(&path)
                    .unwrap()
                    .map(|entry| entry.unwrap().path()),
            );
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            let text = std::fs::read_to_string(&path).unwrap();
            for (at, _) in text.match_indices("\"tg_") {
                let name: String = text[at + 1..]
                    .chars()
                    .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                    .collect();
                let family = ["_bucket", "_count", "_sum"]
                    .iter()
                    .find_map(|suffix| name.strip_suffix(suffix))
                    .unwrap_or(&name)
                    .to_owned();
                families.insert(family);
            }
        }
    }
    assert!(families.len() >= 10, "too few families read: {families:?}");
    let docs = read("tool-service/src/metrics/mod.rs");
    for family in families {
        assert!(
            docs.contains(&format!("//! | `{family}` |")),
            "the metric family `{family}` has no row in the table of tool-service/src/metrics/mod.rs"
        );
    }
}
