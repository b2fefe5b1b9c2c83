//! The runtime crate's module graph, read with `syn` from
//! `tool-service/src/lib.rs` and the files its `mod` items name: layers,
//! each module using only modules of lower layers, and importing every item
//! from the module that defines it, not from the crate root's re-exports.
//! A module that reaches up (or sideways into a cycle) fails here, naming
//! the file and the path. The modules of a transport directory
//! (`pulsar/`) are layered one by one, as `pulsar::broker` and so on. Test modules (`#[cfg(test)]`) are left out;
//! everything else is read, macro bodies included.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use proc_macro2::{Delimiter, TokenStream, TokenTree};
use syn::punctuated::Punctuated;
use syn::{Item, Token, UseTree};

/// The layers, lowest first. Every top-level module of the crate is in one,
/// and so is every module of a [`TRANSPORTS`] directory.
const LAYERS: &[&[&str]] = &[
    // The attribute's parsers, the macro crate's file.
    &["attribute"],
    // Leaves.
    &[
        "duration", "error", "log_text", "names", "rate", "roots", "scope", "state",
    ],
    // OpenTelemetry: configuration, propagation and export (feature `otel`).
    &["otel"],
    // The request's parts and the frames of its answer.
    &["context", "response", "stream", "wire"],
    // One view of a type's schema, and what it promises (the rules
    // decoding applies).
    &["schema"],
    // What generated code registers, and typed decoding.
    &["decode", "service"],
    // What generated code calls: a handler's typed invocation, and the
    // compile-time probes of the user's types.
    &["invoke", "probe"],
    // Each request's span and the trace context it carries.
    &["descriptor", "dispatch", "trace"],
    &["registry"],
    // What generated code reaches, by absolute path.
    &["__private"],
    // What serving means on every transport: the metrics, and the host
    // (selection, policy, admission, the drain).
    &["metrics"],
    &["host"],
    // The Pulsar side's leaves and the broker (feature `pulsar`).
    &["pulsar::backoff", "pulsar::compat"],
    &["pulsar::broker"],
    &["pulsar::announce", "pulsar::client"],
    // The transports, siblings over the host (which runs any set of them,
    // `host::Transports`): neither reaches into the other.
    &["mcp", "pulsar::serve"],
    // The command line (feature `cli`).
    &["cli"],
];

/// Top-level modules that only group the modules of one transport: their
/// `mod.rs` declares modules and nothing else, and each of those is
/// layered on its own.
const TRANSPORTS: &[&str] = &["pulsar"];

fn source_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tool-service/src")
}

fn parse(path: &Path) -> syn::File {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|error| panic!("{}: {error}", path.display()));
    syn::parse_file(&text).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

/// Whether an item is compiled for tests only.
fn test_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|attr| {
        attr.path().is_ident("cfg")
            && attr
                .parse_args::<syn::Meta>()
                .is_ok_and(|meta| meta.path().is_ident("test"))
    })
}

/// The `#[path = "…"]` of a `mod` item.
fn path_attr(attrs: &[syn::Attribute]) -> Option<String> {
    attrs.iter().find_map(|attr| match &attr.meta {
        syn::Meta::NameValue(nv) if nv.path.is_ident("path") => match &nv.value {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(path),
                ..
            }) => Some(path.value()),
            _ => None,
        },
        _ => None,
    })
}

/// The file of module `name`, declared in `parent` (a file whose own
/// modules live in `dir`).
fn module_file(dir: &Path, name: &str, attrs: &[syn::Attribute], parent: &Path) -> PathBuf {
    if let Some(path) = path_attr(attrs) {
        return parent.parent().unwrap().join(path);
    }
    let flat = dir.join(format!("{name}.rs"));
    if flat.exists() {
        flat
    } else {
        dir.join(name).join("mod.rs")
    }
}

/// The directory where the modules declared in `file` live.
fn child_dir(file: &Path) -> PathBuf {
    let stem = file.file_stem().unwrap();
    if stem == "mod" || stem == "lib" {
        file.parent().unwrap().to_owned()
    } else {
        file.parent().unwrap().join(stem)
    }
}

/// The code of one top-level module: every non-test item of its files, as
/// (file, tokens).
fn module_code(items: &[Item], file: &Path, dir: &Path, out: &mut Vec<(PathBuf, TokenStream)>) {
    for item in items {
        match item {
            Item::Mod(module) if test_only(&module.attrs) => {}
            Item::Mod(module) => match &module.content {
                Some((_, inner)) => {
                    module_code(inner, file, &dir.join(module.ident.to_string()), out)
                }
                None => {
                    let path = module_file(dir, &module.ident.to_string(), &module.attrs, file);
                    let parsed = parse(&path);
                    module_code(&parsed.items, &path, &child_dir(&path), out);
                }
            },
            item if test_only(item_attrs(item)) => {}
            item => out.push((file.to_owned(), quote::ToTokens::into_token_stream(item))),
        }
    }
}

fn item_attrs(item: &Item) -> &[syn::Attribute] {
    match item {
        Item::Const(item) => &item.attrs,
        Item::Enum(item) => &item.attrs,
        Item::ExternCrate(item) => &item.attrs,
        Item::Fn(item) => &item.attrs,
        Item::ForeignMod(item) => &item.attrs,
        Item::Impl(item) => &item.attrs,
        Item::Macro(item) => &item.attrs,
        Item::Mod(item) => &item.attrs,
        Item::Static(item) => &item.attrs,
        Item::Struct(item) => &item.attrs,
        Item::Trait(item) => &item.attrs,
        Item::TraitAlias(item) => &item.attrs,
        Item::Type(item) => &item.attrs,
        Item::Union(item) => &item.attrs,
        Item::Use(item) => &item.attrs,
        _ => &[],
    }
}

/// The first segment of every `crate::…` path in `tokens` (`$crate::` in
/// exported macros excluded: it is the user's path to the crate), and
/// whether a macro is called through it (`crate::run!`).
fn crate_paths(tokens: TokenStream, out: &mut Vec<(String, bool)>) {
    let tokens: Vec<TokenTree> = tokens.into_iter().collect();
    for (at, token) in tokens.iter().enumerate() {
        match token {
            TokenTree::Group(group) => crate_paths(group.stream(), out),
            TokenTree::Ident(ident) if ident == "crate" => {
                let dollar =
                    at > 0 && matches!(&tokens[at - 1], TokenTree::Punct(p) if p.as_char() == '$');
                let colons = matches!(tokens.get(at + 1), Some(TokenTree::Punct(p)) if p.as_char() == ':')
                    && matches!(tokens.get(at + 2), Some(TokenTree::Punct(p)) if p.as_char() == ':');
                if dollar || !colons {
                    continue;
                }
                match tokens.get(at + 3) {
                    Some(TokenTree::Ident(name))
                        if TRANSPORTS.contains(&name.to_string().as_str()) =>
                    {
                        // `crate::pulsar::broker…`: the nested module.
                        match tokens.get(at + 6) {
                            Some(TokenTree::Ident(inner)) => {
                                out.push((format!("{name}::{inner}"), false))
                            }
                            Some(TokenTree::Group(group))
                                if group.delimiter() == Delimiter::Brace =>
                            {
                                let trees = syn::parse::Parser::parse2(
                                    Punctuated::<UseTree, Token![,]>::parse_terminated,
                                    group.stream(),
                                )
                                .expect("a `crate::pulsar::{…}` group is a use tree");
                                for tree in trees {
                                    out.push((format!("{name}::{}", first_segment(&tree)), false));
                                }
                            }
                            _ => out.push((name.to_string(), false)),
                        }
                    }
                    Some(TokenTree::Ident(name)) => {
                        let bang = matches!(tokens.get(at + 4), Some(TokenTree::Punct(p)) if p.as_char() == '!');
                        out.push((name.to_string(), bang));
                    }
                    Some(TokenTree::Group(group)) if group.delimiter() == Delimiter::Brace => {
                        let trees = syn::parse::Parser::parse2(
                            Punctuated::<UseTree, Token![,]>::parse_terminated,
                            group.stream(),
                        )
                        .expect("a `crate::{…}` group is a use tree");
                        for tree in trees {
                            out.push((first_segment(&tree), false));
                        }
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }
}

fn first_segment(tree: &UseTree) -> String {
    match tree {
        UseTree::Path(path) => path.ident.to_string(),
        UseTree::Name(name) => name.ident.to_string(),
        UseTree::Rename(rename) => rename.ident.to_string(),
        UseTree::Glob(_) => String::from("*"),
        UseTree::Group(_) => String::from("{…}"),
    }
}

/// The crate as `lib.rs` declares it: its top-level modules, and the names
/// the root re-exports from them.
struct Crate {
    modules: BTreeSet<String>,
    reexports: BTreeMap<String, String>,
    /// Top-level module → its files' code.
    code: BTreeMap<String, Vec<(PathBuf, TokenStream)>>,
}

fn read_crate() -> Crate {
    let lib_path = source_dir().join("lib.rs");
    let lib = parse(&lib_path);
    let mut modules = BTreeSet::new();
    let mut reexports = BTreeMap::new();
    let mut code = BTreeMap::new();
    for item in &lib.items {
        match item {
            Item::Mod(module)
                if !test_only(&module.attrs)
                    && TRANSPORTS.contains(&module.ident.to_string().as_str()) =>
            {
                let name = module.ident.to_string();
                let file = module_file(&source_dir(), &name, &module.attrs, &lib_path);
                let dir = child_dir(&file);
                for item in parse(&file).items {
                    let Item::Mod(inner) = &item else {
                        panic!(
                            "{} declares more than modules: {}",
                            file.display(),
                            quote::ToTokens::into_token_stream(&item)
                        );
                    };
                    if test_only(&inner.attrs) {
                        continue;
                    }
                    let nested = format!("{name}::{}", inner.ident);
                    let mut files = Vec::new();
                    module_code(std::slice::from_ref(&item), &file, &dir, &mut files);
                    modules.insert(nested.clone());
                    code.insert(nested, files);
                }
            }
            Item::Mod(module) if !test_only(&module.attrs) => {
                let name = module.ident.to_string();
                let mut files = Vec::new();
                module_code(
                    std::slice::from_ref(item),
                    &lib_path,
                    &source_dir(),
                    &mut files,
                );
                modules.insert(name.clone());
                code.insert(name, files);
            }
            Item::Use(reexport) => {
                let mut leaves = Vec::new();
                use_leaves(&reexport.tree, &mut Vec::new(), &mut leaves);
                for path in leaves {
                    if let [module, .., name] = path.as_slice() {
                        reexports.insert(name.clone(), module.clone());
                    }
                }
            }
            _ => {}
        }
    }
    Crate {
        modules,
        reexports,
        code,
    }
}

/// Every full path a use tree names.
fn use_leaves(tree: &UseTree, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    match tree {
        UseTree::Path(path) => {
            prefix.push(path.ident.to_string());
            use_leaves(&path.tree, prefix, out);
            prefix.pop();
        }
        UseTree::Name(name) => out.push([prefix.as_slice(), &[name.ident.to_string()]].concat()),
        UseTree::Rename(rename) => {
            out.push([prefix.as_slice(), &[rename.rename.to_string()]].concat())
        }
        UseTree::Glob(_) => {}
        UseTree::Group(group) => {
            for tree in &group.items {
                use_leaves(tree, prefix, out);
            }
        }
    }
}

fn layer_of(module: &str) -> usize {
    LAYERS
        .iter()
        .position(|layer| layer.contains(&module))
        .unwrap_or_else(|| panic!("module `{module}` is in no layer: add it to LAYERS"))
}

#[test]
fn modules_use_only_lower_layers_and_import_from_the_defining_module() {
    let krate = read_crate();
    let mut problems = BTreeSet::new();
    let mut uses: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    for (module, files) in &krate.code {
        for (path, tokens) in files {
            let mut paths = Vec::new();
            crate_paths(tokens.clone(), &mut paths);
            let file = path.strip_prefix(source_dir()).unwrap().display();
            for (name, macro_call) in paths {
                if macro_call {
                    // Exported macros live at the root.
                    continue;
                }
                if let Some(defining) = krate.reexports.get(&name) {
                    problems.insert(format!(
                        "{file} uses `crate::{name}`, a re-export of the crate root: import it from `crate::{defining}`"
                    ));
                    continue;
                }
                assert!(
                    krate.modules.contains(&name),
                    "{file} uses `crate::{name}`, which is neither a module nor a re-export of lib.rs"
                );
                if name != *module && layer_of(&name) >= layer_of(module) {
                    problems.insert(format!(
                        "{file} uses `crate::{name}`, which is not below `{module}`"
                    ));
                }
                uses.entry(module).or_default().insert(name);
            }
        }
    }
    let problems: Vec<_> = problems.into_iter().collect();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // The check sees what it should: the request path uses the leaves, in
    // macro bodies and in nested modules too.
    assert!(uses["dispatch"].contains("wire"), "{uses:?}");
    assert!(uses["pulsar::serve"].contains("registry"), "{uses:?}");
    assert!(
        uses["pulsar::serve"].contains("pulsar::backoff"),
        "{uses:?}"
    );
    assert!(uses["pulsar::serve"].contains("host"), "{uses:?}");
    assert!(uses["mcp"].contains("host"), "{uses:?}");
    assert!(uses["cli"].contains("pulsar::serve"), "{uses:?}");
    assert!(krate.code["pulsar::serve"]
        .iter()
        .any(|(path, _)| path.ends_with("pulsar/serve/worker.rs")));
    assert!(!krate.code["pulsar::serve"]
        .iter()
        .any(|(path, _)| path.ends_with("worker/tests.rs")));
}

#[test]
fn every_module_has_a_layer_and_every_layer_names_modules() {
    let krate = read_crate();
    for module in &krate.modules {
        layer_of(module);
    }
    for name in LAYERS.iter().flat_map(|layer| layer.iter()) {
        assert!(
            krate.modules.contains(*name),
            "LAYERS names `{name}`, which lib.rs does not declare"
        );
    }
    // Re-exports are read from lib.rs itself.
    assert_eq!(
        krate.reexports.get("ToolError").map(String::as_str),
        Some("error")
    );
}
