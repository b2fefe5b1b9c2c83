//! The broker suites share one test binary (`tests/broker/main.rs`) and take
//! turns through `support::suite`. A test that did not take its turn would
//! run beside another suite's tests on the same topics and example binaries,
//! and fail now and then: every test must start with its turn, and every
//! suite file must be a module of the binary.

use std::path::{Path, PathBuf};

use quote::ToTokens;
use syn::{Item, Stmt};

const TURN: &str = "let _suite = support :: suite (module_path ! ()) ;";

fn broker_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/broker")
}

fn parse(path: &Path) -> syn::File {
    let text = std::fs::read_to_string(path).unwrap();
    syn::parse_file(&text).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

fn is_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|attr| {
        let path = attr.path();
        path.is_ident("test")
            || (path.segments.len() == 2
                && path.segments[0].ident == "tokio"
                && path.segments[1].ident == "test")
    })
}

/// `file:fn` of every test whose first statement is not its suite's turn.
fn tests_without_turn(items: &[Item], file: &str, out: &mut Vec<String>) {
    for item in items {
        match item {
            Item::Fn(function) if is_test(&function.attrs) => {
                let first = function.block.stmts.first().map(|stmt| match stmt {
                    Stmt::Local(local) => local.to_token_stream().to_string(),
                    _ => String::new(),
                });
                if first.as_deref() != Some(TURN) {
                    out.push(format!("{file}: {}", function.sig.ident));
                }
            }
            Item::Mod(module) => {
                if let Some((_, items)) = &module.content {
                    tests_without_turn(items, file, out);
                }
            }
            _ => {}
        }
    }
}

fn suite_files() -> Vec<(String, PathBuf)> {
    let mut files: Vec<(String, PathBuf)> = std::fs::read_dir(broker_dir())
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "rs"))
        .map(|path| {
            let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
            (stem, path)
        })
        .filter(|(stem, _)| stem != "main")
        .collect();
    files.sort();
    files
}

#[test]
fn every_broker_test_starts_by_taking_its_suites_turn() {
    let mut missing = Vec::new();
    let mut tests = 0;
    for (stem, path) in suite_files() {
        let file = parse(&path);
        let mut none = Vec::new();
        tests_without_turn(&file.items, &stem, &mut none);
        missing.extend(none);
        tests += file
            .items
            .iter()
            .filter(|item| matches!(item, Item::Fn(function) if is_test(&function.attrs)))
            .count();
    }
    assert!(tests > 50, "only {tests} tests found in tests/broker");
    assert!(
        missing.is_empty(),
        "these tests of tests/broker do not start with \
         `let _suite = support::suite(module_path!());`, so they could run beside another \
         suite's tests on the same topics:\n{}",
        missing.join("\n")
    );
}

#[test]
fn every_broker_suite_file_is_a_module_of_the_binary() {
    let main = parse(&broker_dir().join("main.rs"));
    let modules: Vec<String> = main
        .items
        .iter()
        .filter_map(|item| match item {
            Item::Mod(module) if module.content.is_none() => Some(module.ident.to_string()),
            _ => None,
        })
        .collect();
    let unlisted: Vec<String> = suite_files()
        .into_iter()
        .map(|(stem, _)| stem)
        .filter(|stem| !modules.contains(stem))
        .collect();
    assert!(
        unlisted.is_empty(),
        "tests/broker/main.rs does not declare these suites, so their tests never compile or \
         run: add `mod NAME;` for {unlisted:?}"
    );
}
