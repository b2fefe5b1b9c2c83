//! Every link of the repository's Markdown files works where they are read
//! as files (on GitHub and in a checkout): a relative path to a file that
//! exists, with an `#anchor` one of its headings has, or an `http(s)` URL.
//!
//! The guides (`tool-service/docs/*.md`) are rustdoc pages too, included
//! by the runtime's sources with `include_str!`. A rustdoc path there
//! (`crate::host#rate-limits`) is dead as a file; a link to another guide
//! or to docs.rs is reference-style, and the including source defines the
//! same label first (rustdoc keeps a label's first definition), so rustdoc
//! links the item instead. `cargo doc` checks those paths.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn relative(path: &Path) -> String {
    path.strip_prefix(root())
        .unwrap_or(path)
        .display()
        .to_string()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

/// Every file under `dir` whose name ends in `suffix`, hidden directories,
/// `target` and `node_modules` left out.
fn files_ending(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(path) = pending.pop() {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if path.is_dir() {
            if path != dir && (name.starts_with('.') || name == "target" || name == "node_modules")
            {
                continue;
            }
            pending.extend(
                std::fs::read_dir(&path)
                    .unwrap()
                    .map(|entry| entry.unwrap().path()),
            );
        } else if name.ends_with(suffix) {
            found.push(path);
        }
    }
    found.sort();
    found
}

/// The text with every fenced code block's lines emptied (line numbers
/// kept), so that only prose is read for links and headings.
fn prose(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut fence: Option<String> = None;
    for line in text.lines() {
        let trimmed = line.trim_start();
        let run: String = trimmed
            .chars()
            .take_while(|c| *c == '`' || *c == '~')
            .collect();
        let is_fence = run.len() >= 3 && run.chars().all(|c| c == run.as_bytes()[0] as char);
        match &fence {
            None if is_fence => fence = Some(run),
            Some(open) if is_fence && run.starts_with(open.as_str()) && trimmed.trim() == run => {
                fence = None;
            }
            None => out.push_str(line),
            Some(_) => {}
        }
        out.push('\n');
    }
    out
}

/// GitHub's anchor for a heading: lowercase, spaces to hyphens, every
/// character but letters, digits, `-` and `_` dropped; a repeated heading
/// gets `-1`, `-2`, ….
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut anchors = BTreeSet::new();
    for line in prose(text).lines() {
        let hashes = line.chars().take_while(|c| *c == '#').count();
        if !(1..=6).contains(&hashes) || !line[hashes..].starts_with(' ') {
            continue;
        }
        let title = line[hashes..].trim().trim_end_matches('#').trim();
        // What is shown of a link in a heading is its text.
        let mut shown = String::new();
        let mut rest = title;
        while let Some(at) = rest.find("](") {
            shown.push_str(&rest[..at]);
            rest = rest[at..].split_once(')').map_or("", |(_, after)| after);
        }
        shown.push_str(rest);
        let slug: String = shown
            .chars()
            .filter_map(|c| match c {
                ' ' => Some('-'),
                c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
                _ => None,
            })
            .flat_map(char::to_lowercase)
            .collect();
        let count = seen.entry(slug.clone()).or_insert(0);
        anchors.insert(if *count == 0 {
            slug.clone()
        } else {
            format!("{slug}-{count}")
        });
        *count += 1;
    }
    anchors
}

/// A label as CommonMark matches it: case and runs of white space aside.
fn label_key(label: &str) -> String {
    label
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

#[derive(Debug, PartialEq)]
enum Kind {
    /// `[text](destination)`, or an image.
    Inline,
    /// `[label]: destination`
    Definition,
    /// `[text][label]` or `[label][]`: the label.
    Reference,
    /// `[label]` alone: a link only if the label is defined.
    Shortcut,
}

#[derive(Debug)]
struct Link {
    line: usize,
    kind: Kind,
    /// The destination, or the label of a reference.
    target: String,
    /// The label of a definition.
    label: String,
}

/// The end of the code span that starts at `at` (a run of backticks), or
/// `None` when the run is never closed.
fn code_span_end(bytes: &[u8], at: usize) -> Option<usize> {
    let run = bytes[at..].iter().take_while(|b| **b == b'`').count();
    let mut i = at + run;
    while i < bytes.len() {
        if bytes[i] == b'`' {
            let close = bytes[i..].iter().take_while(|b| **b == b'`').count();
            if close == run {
                return Some(i + close);
            }
            i += close;
        } else {
            i += 1;
        }
    }
    None
}

/// Where the `]` that closes the `[` at `at` is (nested brackets and code
/// spans skipped).
fn closing_bracket(bytes: &[u8], at: usize) -> Option<usize> {
    let mut depth = 0;
    let mut i = at;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 1,
            b'`' => {
                if let Some(end) = code_span_end(bytes, i) {
                    i = end;
                    continue;
                }
            }
            b'[' => depth += 1,
            b']' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            b'\n' if bytes.get(i + 1) == Some(&b'\n') => return None,
            _ => {}
        }
        i += 1;
    }
    None
}

/// Every link, reference and definition in the prose of `text`.
fn links(text: &str) -> Vec<Link> {
    let text = prose(text);
    let bytes = text.as_bytes();
    let line_of = |at: usize| text[..at].matches('\n').count() + 1;
    let mut links = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => {
                i += 2;
                continue;
            }
            b'`' => {
                let run = bytes[i..].iter().take_while(|b| **b == b'`').count();
                i = code_span_end(bytes, i).unwrap_or(i + run);
                continue;
            }
            b'[' => {}
            _ => {
                i += 1;
                continue;
            }
        }
        let Some(close) = closing_bracket(bytes, i) else {
            i += 1;
            continue;
        };
        let label = &text[i + 1..close];
        let line = line_of(i);
        let line_start = text[..i].rfind('\n').map_or(0, |at| at + 1);
        let at_line_start = text[line_start..i].chars().all(|c| c == ' ');
        match bytes.get(close + 1) {
            Some(b'(') => {
                let end = text[close..].find(')').map_or(text.len(), |at| close + at);
                let inside = text[close + 2..end].trim();
                let destination = inside.split_whitespace().next().unwrap_or("");
                links.push(Link {
                    line,
                    kind: Kind::Inline,
                    target: destination.trim_matches(['<', '>']).to_owned(),
                    label: label.to_owned(),
                });
                i = close + 1;
            }
            Some(b'[') => match closing_bracket(bytes, close + 1) {
                Some(end) => {
                    let second = &text[close + 2..end];
                    links.push(Link {
                        line,
                        kind: Kind::Reference,
                        target: if second.is_empty() { label } else { second }.to_owned(),
                        label: label.to_owned(),
                    });
                    i = end + 1;
                }
                None => i = close + 1,
            },
            Some(b':') if at_line_start => {
                let rest = &text[close + 2..];
                let destination = rest.split_whitespace().next().unwrap_or("");
                links.push(Link {
                    line,
                    kind: Kind::Definition,
                    target: destination.trim_matches(['<', '>']).to_owned(),
                    label: label.to_owned(),
                });
                i = close + 1;
            }
            _ => {
                links.push(Link {
                    line,
                    kind: Kind::Shortcut,
                    target: label.to_owned(),
                    label: label.to_owned(),
                });
                i += 1;
            }
        }
    }
    links
}

/// A rustdoc intra-doc path (`crate::host`, `macro@crate::tool_service`,
/// `Registry::call`) rather than a file or a URL.
fn is_rustdoc_path(destination: &str) -> bool {
    let path = destination.split('#').next().unwrap_or("");
    path.contains("::")
        || path
            .split_once('@')
            .is_some_and(|(disambiguator, _)| disambiguator.chars().all(|c| c.is_ascii_lowercase()))
}

fn is_url(destination: &str) -> bool {
    ["https://", "http://", "mailto:"]
        .iter()
        .any(|scheme| destination.starts_with(scheme))
}

/// How to link from a guide to what only rustdoc has, said once under
/// the problems.
const HOW: &str = "A guide links another guide's file (`operations.md#flags-and-variables`) \
or an item's page on https://docs.rs/tool-service/latest/tool_service/, reference-style: \
`[flag table][flags-and-variables]` with `[flags-and-variables]: operations.md#flags-and-variables` \
in the .md; the Rust source that includes the guide defines the same label for rustdoc \
before its include_str! (`//! [flags-and-variables]: crate::cli#flags-and-variables`), \
and rustdoc keeps the first definition.";

/// What is wrong with the destination `destination` of a link in `file`.
fn check_destination(file: &Path, destination: &str) -> Option<String> {
    if is_url(destination) {
        return None;
    }
    if is_rustdoc_path(destination) {
        return Some(format!(
            "`{destination}` is a rustdoc path, dead on GitHub and in a checkout: link \
             the file or docs.rs instead, and give rustdoc this path in the Rust source"
        ));
    }
    let (path, anchor) = match destination.split_once('#') {
        Some((path, anchor)) => (path, Some(anchor)),
        None => (destination, None),
    };
    if destination.is_empty() || path.starts_with('/') {
        return Some(format!(
            "`{destination}`: a link is a path relative to the file or an http(s) URL"
        ));
    }
    let target = if path.is_empty() {
        file.to_path_buf()
    } else {
        file.parent().unwrap().join(path)
    };
    if !target.exists() {
        return Some(format!(
            "`{destination}`: there is no {}",
            relative(&target)
        ));
    }
    let anchor = anchor?;
    if target.extension().is_some_and(|ext| ext == "md") {
        let anchors = anchors(&read(&target));
        if !anchors.contains(anchor) {
            return Some(format!(
                "`{destination}`: {} has no heading with the anchor `#{anchor}` (it has: {})",
                relative(&target),
                anchors.into_iter().collect::<Vec<_>>().join(", ")
            ));
        }
    } else if !(anchor.starts_with('L') && anchor[1..].starts_with(|c: char| c.is_ascii_digit())) {
        return Some(format!(
            "`{destination}`: {} is not Markdown; only a line (`#L12`) can be linked in it",
            relative(&target)
        ));
    }
    None
}

/// Every problem of the links of the Markdown file `file`.
fn problems(file: &Path) -> Vec<String> {
    let text = read(file);
    let links = links(&text);
    let defined: BTreeSet<String> = links
        .iter()
        .filter(|link| link.kind == Kind::Definition)
        .map(|link| label_key(&link.label))
        .collect();
    let mut problems = Vec::new();
    for link in &links {
        let at = format!("{}:{}", relative(file), link.line);
        match link.kind {
            Kind::Inline | Kind::Definition => {
                if let Some(problem) = check_destination(file, &link.target) {
                    problems.push(format!("{at}: {problem}"));
                }
            }
            Kind::Reference => {
                if !defined.contains(&label_key(&link.target)) {
                    problems.push(format!(
                        "{at}: `[{}][{}]` has no definition `[{}]: …` in this file \
                         (one in the Rust source reaches rustdoc only)",
                        link.label, link.target, link.target
                    ));
                }
            }
            Kind::Shortcut => {
                let looks_like_an_item = link.target.starts_with('`') && link.target.ends_with('`')
                    || link.target.contains("::");
                if looks_like_an_item && !defined.contains(&label_key(&link.target)) {
                    problems.push(format!(
                        "{at}: `[{}]` is a rustdoc intra-doc link, shown as text on GitHub \
                         and in a checkout: define the label in this file (docs.rs) and in \
                         the Rust source (the item)",
                        link.target
                    ));
                }
            }
        }
    }
    problems
}

/// The Markdown files of the repository, README.md first among them.
fn markdown_files() -> Vec<PathBuf> {
    let files = files_ending(root(), ".md");
    assert!(
        files.iter().any(|file| file.ends_with("README.md"))
            && files
                .iter()
                .filter(|file| file.starts_with(guides()))
                .count()
                >= 5,
        "too few Markdown files found: {files:?}"
    );
    files
}

fn guides() -> PathBuf {
    root().join("tool-service/docs")
}

#[test]
fn every_link_of_every_markdown_file_resolves_as_a_file() {
    let problems: Vec<String> = markdown_files()
        .iter()
        .flat_map(|file| problems(file))
        .collect();
    assert!(problems.is_empty(), "{}\n\n{HOW}", problems.join("\n"));
}

/// For each guide, the labels the runtime's sources that include it define
/// in their doc comments.
fn rustdoc_definitions() -> BTreeMap<PathBuf, Vec<(PathBuf, BTreeSet<String>)>> {
    let mut by_guide: BTreeMap<PathBuf, Vec<(PathBuf, BTreeSet<String>)>> = BTreeMap::new();
    for source in files_ending(&root().join("tool-service/src"), ".rs") {
        let text = read(&source);
        let labels: BTreeSet<String> = text
            .lines()
            .filter_map(|line| {
                let doc = line.trim_start();
                let doc = doc
                    .strip_prefix("//!")
                    .or_else(|| doc.strip_prefix("///"))?;
                let definition = doc.trim_start().strip_prefix('[')?;
                let (label, rest) = definition.split_once(']')?;
                rest.starts_with(": ").then(|| label_key(label))
            })
            .collect();
        for (at, _) in text.match_indices("include_str!(\"") {
            let start = at + "include_str!(\"".len();
            let included = &text[start..start + text[start..].find('"').unwrap()];
            let Ok(guide) = source.parent().unwrap().join(included).canonicalize() else {
                continue;
            };
            by_guide
                .entry(guide)
                .or_default()
                .push((source.clone(), labels.clone()));
        }
    }
    by_guide
}

#[test]
fn every_link_of_a_guide_to_a_file_or_docs_rs_is_an_item_in_rustdoc() {
    let definitions = rustdoc_definitions();
    let mut problems = Vec::new();
    let mut read_guides = 0;
    for file in files_ending(&guides(), ".md") {
        let Some(sources) = definitions.get(&file.canonicalize().unwrap()) else {
            problems.push(format!(
                "{}: no source of tool-service includes this guide (`include_str!`)",
                relative(&file)
            ));
            continue;
        };
        read_guides += 1;
        for link in links(&read(&file)) {
            let local = !is_url(&link.target) && !link.target.starts_with('#');
            let docs_rs = link.target.starts_with("https://docs.rs/tool-service/");
            if !(local || docs_rs) || is_rustdoc_path(&link.target) {
                continue;
            }
            let at = format!("{}:{}", relative(&file), link.line);
            match link.kind {
                Kind::Inline => problems.push(format!(
                    "{at}: `[{}]({})` is a relative URL in rustdoc too, dead there (or a \
                     page on docs.rs instead of the local one): make it reference-style, and \
                     define the label for rustdoc in {}",
                    link.label,
                    link.target,
                    relative(&sources[0].0)
                )),
                Kind::Definition => {
                    for (source, labels) in sources {
                        if !labels.contains(&label_key(&link.label)) {
                            problems.push(format!(
                                "{at}: `[{}]: {}` is what rustdoc links too (a relative URL is \
                                 dead there): define `[{}]: crate::…` in {}, before the \
                                 guide's include_str!",
                                link.label,
                                link.target,
                                link.label,
                                relative(source)
                            ));
                        }
                    }
                }
                Kind::Reference | Kind::Shortcut => {}
            }
        }
    }
    assert!(read_guides >= 5, "too few guides read");
    assert!(problems.is_empty(), "{}\n\n{HOW}", problems.join("\n"));
}

#[test]
fn anchors_follow_github() {
    let text = "# Authorization (OAuth 2.1)\n## Metrics and probes of `mcp`\n\
                ```\n# not a heading\n```\n## No sessions: any replica answers any request\n\
                ## Probes\n## Probes\n### [Linked](x.md) heading\n";
    let anchors: Vec<String> = anchors(text).into_iter().collect();
    assert_eq!(
        anchors,
        [
            "authorization-oauth-21",
            "linked-heading",
            "metrics-and-probes-of-mcp",
            "no-sessions-any-replica-answers-any-request",
            "probes",
            "probes-1",
        ]
    );
}

#[test]
fn links_are_read_as_markdown_has_them() {
    let text = "See [a](x.md#y), [`b`][c], [d][] and [`E::f`], `[not](a link)`.\n\
                \n```\n[nor](this)\n```\n[c]: https://example.com\n  [d]: d.md\n";
    let links = links(text);
    let read: Vec<(usize, &str, &str)> = links
        .iter()
        .map(|link| {
            let kind = match link.kind {
                Kind::Inline => "inline",
                Kind::Definition => "definition",
                Kind::Reference => "reference",
                Kind::Shortcut => "shortcut",
            };
            (link.line, kind, link.target.as_str())
        })
        .collect();
    assert_eq!(
        read,
        [
            (1, "inline", "x.md#y"),
            (1, "reference", "c"),
            (1, "reference", "d"),
            (1, "shortcut", "`E::f`"),
            (6, "definition", "https://example.com"),
            (7, "definition", "d.md"),
        ]
    );
    assert!(is_rustdoc_path("crate::host#rate-limits"));
    assert!(is_rustdoc_path("macro@crate::tool_service"));
    assert!(!is_rustdoc_path("operations.md#rate-limits"));
    assert!(!is_rustdoc_path("examples"));
}
