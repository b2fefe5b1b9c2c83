//! Two ordinary tools, as a notes crate would write them (`add-note`: a
//! title with a length bound, a body, a list of documented enum values;
//! `find-notes`: a query and a bounded limit with a default), then
//! arguments of every awkward shape, one tool each: nested structs,
//! `Option<Vec<Enum>>`, maps, tuples, recursive types, `#[serde(flatten)]`,
//! internally and adjacently tagged enums, `serde_json::Value`, and bounds
//! some providers refuse. `check-schemas` reports what each provider's MCP
//! client code makes of them, and `interop-schemas/test_providers.py` runs
//! that code over them in both schema flavours.
//!
//! ```text
//! cargo run --example schema_corpus -- check-schemas --schema-flavor portable
//! ```

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;
use tool_service::tool_service;

/// What a note is about.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Tag {
    /// Something to do at work.
    Work,
    /// Something for home.
    Home,
    /// An idea for later.
    Idea,
}

/// Add a note.
///
/// # Arguments
/// * `title` - The note's title.
/// * `body` - What the note says.
/// * `tags` - What the note is about.
#[tool_service(topic = "notes-add", tool(name = "add-note"))]
async fn add_note(
    #[arg(length(min = 1, max = 80))] title: String,
    body: String,
    tags: Vec<Tag>,
) -> String {
    format!("added {title:?} ({} characters, tags {tags:?})", body.len())
}

/// Find notes.
///
/// # Arguments
/// * `query` - Words the notes contain.
/// * `limit` - How many notes to list.
#[tool_service(topic = "notes-find", tool(name = "find-notes"))]
async fn find_notes(
    query: String,
    #[arg(range(min = 1, max = 50), default = 10)] limit: u32,
) -> String {
    format!("the first {limit} notes about {query:?}")
}

/// A point on a grid.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Point {
    /// Across.
    pub x: i32,
    /// Down.
    pub y: i32,
}

/// A box on the grid.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Area {
    /// Its top left corner.
    pub corner: Point,
    /// Its size, if known.
    pub size: Option<Point>,
}

/// The arguments of `corpus-nested`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Nested {
    /// Where to look.
    pub area: Area,
}

/// Take nested structs.
#[tool_service(topic = "corpus-nested", tool(name = "corpus-nested"))]
async fn nested(#[args] args: Nested) -> String {
    format!("{args:?}")
}

/// A colour.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Colour {
    /// Like blood.
    DeepRed,
    /// Like grass.
    Green,
}

/// The arguments of `corpus-lists`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Lists {
    /// The colours to keep, if any.
    pub colours: Option<Vec<Colour>>,
    /// Between one and three labels.
    #[schemars(length(min = 1, max = 3))]
    pub labels: Vec<String>,
}

/// Take an optional list of documented enum values.
#[tool_service(topic = "corpus-lists", tool(name = "corpus-lists"))]
async fn lists(#[args] args: Lists) -> String {
    format!("{args:?}")
}

/// The arguments of `corpus-maps`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Maps {
    /// A weight for each name.
    pub weights: BTreeMap<String, u8>,
}

/// Take a map.
#[tool_service(topic = "corpus-maps", tool(name = "corpus-maps"))]
async fn maps(#[args] args: Maps) -> String {
    format!("{args:?}")
}

/// The arguments of `corpus-tuples`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Tuples {
    /// A name and an age.
    pub pair: (String, u32),
}

/// Take a tuple.
#[tool_service(topic = "corpus-tuples", tool(name = "corpus-tuples"))]
async fn tuples(#[args] args: Tuples) -> String {
    format!("{args:?}")
}

/// A tree of labels.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Tree {
    /// This node's label.
    pub label: String,
    /// The nodes below.
    #[serde(default)]
    pub children: Vec<Tree>,
}

/// The arguments of `corpus-recursive`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Recursive {
    /// The tree.
    pub tree: Tree,
}

/// Take a recursive type.
#[tool_service(topic = "corpus-recursive", tool(name = "corpus-recursive"))]
async fn recursive(#[args] args: Recursive) -> String {
    format!("{args:?}")
}

/// Where a page of results starts.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Paging {
    /// How many to skip.
    #[serde(default)]
    pub offset: u32,
    /// How many to list.
    #[serde(default = "ten")]
    #[schemars(range(min = 1, max = 50))]
    pub limit: u32,
}

fn ten() -> u32 {
    10
}

/// The arguments of `corpus-flatten`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Flattened {
    /// What to look for.
    pub query: String,
    #[serde(flatten)]
    pub paging: Paging,
}

/// Take flattened fields.
#[tool_service(topic = "corpus-flatten", tool(name = "corpus-flatten"))]
async fn flatten(#[args] args: Flattened) -> String {
    format!("{args:?}")
}

/// A shape, tagged by its `kind`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Shape {
    /// A circle.
    Circle {
        /// Its radius.
        radius: f64,
    },
    /// A square.
    Square {
        /// Its side.
        side: f64,
    },
}

/// A move, tagged `t` with its content in `c`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(tag = "t", content = "c", rename_all = "lowercase")]
pub enum Move {
    /// Stay where you are.
    Stay,
    /// Go this many steps.
    Go(u8),
}

/// The arguments of `corpus-tagged`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Tagged {
    /// The shape to draw.
    pub shape: Shape,
    /// The move to make.
    pub step: Move,
}

/// Take internally and adjacently tagged enums.
#[tool_service(topic = "corpus-tagged", tool(name = "corpus-tagged"))]
async fn tagged(#[args] args: Tagged) -> String {
    format!("{args:?}")
}

/// The arguments of `corpus-anything`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Anything {
    /// Any JSON value.
    pub value: serde_json::Value,
}

/// Take any JSON value.
#[tool_service(topic = "corpus-anything", tool(name = "corpus-anything"))]
async fn anything(#[args] args: Anything) -> String {
    format!("{args:?}")
}

/// The arguments of `corpus-bounds`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Bounded {
    /// A share, above zero and at most one.
    #[schemars(range(max = 1.0), extend("exclusiveMinimum" = 0))]
    pub share: f64,
    /// An even count.
    #[schemars(extend("multipleOf" = 2))]
    pub even: u16,
    /// A code of three capitals.
    #[schemars(regex(pattern = r"^[A-Z]{3}$"))]
    pub code: String,
    /// Distinct tags.
    #[schemars(extend("uniqueItems" = true))]
    pub tags: Vec<String>,
}

/// Take bounds some providers refuse.
#[tool_service(topic = "corpus-bounds", tool(name = "corpus-bounds"))]
async fn bounds(#[args] args: Bounded) -> String {
    format!("{args:?}")
}

fn main() -> std::process::ExitCode {
    tool_service::run!()
}
