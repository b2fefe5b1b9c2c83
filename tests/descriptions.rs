//! What the LLM reads about an argument: TrustGraph's agent shows it only
//! each argument's name, type word and description, so the description
//! carries the rest of the schema (allowed values, item types, nested
//! fields, defaults, bounds). Pinned by `tests/golden/search-documents.json`.

use schemars::JsonSchema;
use serde::Deserialize;
use tool_service::{tool_service, Registry};

/// How documents are matched.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Match {
    /// Exact words.
    Keyword,
    /// By meaning, with embeddings.
    Semantic,
    Hybrid,
}

/// A period of time.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Period {
    /// First day, as YYYY-MM-DD.
    pub from: String,
    /// Last day, as YYYY-MM-DD; today when left out.
    pub to: Option<String>,
}

/// A result filter.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Filter {
    /// The metadata field.
    pub field: String,
    /// The values it may have.
    pub values: Vec<String>,
}

fn five() -> u32 {
    5
}

/// The arguments of `search-documents`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SearchArgs {
    /// What to look for.
    pub query: String,
    /// How to match documents.
    pub mode: Match,
    /// Tags a document must have.
    pub tags: Vec<String>,
    /// When the documents were written.
    pub period: Option<Period>,
    /// Filters on metadata.
    #[serde(default)]
    pub filters: Vec<Filter>,
    /// How many documents to return.
    #[serde(default = "five")]
    pub max_hits: u32,
    /// How sure a match must be.
    #[schemars(range(min = 0.0, max = 1.0))]
    pub threshold: Option<f64>,
}

/// Search the document store.
#[tool_service(topic = "search-documents", tool(name = "search-documents"))]
async fn search(#[args] args: SearchArgs) -> String {
    format!("{args:?}")
}

fn golden() -> serde_json::Value {
    let path = format!(
        "{}/tests/golden/search-documents.json",
        env!("CARGO_MANIFEST_DIR")
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn descriptions_carry_what_the_schema_says() {
    let registry = Registry::collect().unwrap();
    let tool = &registry.descriptors().tool["search-documents"];
    let actual = serde_json::to_value(tool).unwrap();
    assert_eq!(
        actual,
        golden(),
        "descriptors changed; actual:\n{}",
        serde_json::to_string_pretty(&actual).unwrap()
    );
    // The type stays one of TrustGraph's plain words.
    for argument in &tool.arguments {
        assert!(
            ["string", "integer", "number", "boolean", "array", "object"]
                .contains(&argument.kind.as_str()),
            "{argument:?}"
        );
    }
}

#[tokio::test]
async fn the_values_described_are_the_values_the_decoder_takes() {
    let registry = Registry::collect().unwrap();
    let tool = &registry.descriptors().tool["search-documents"];
    let mode = tool.arguments.iter().find(|a| a.name == "mode").unwrap();
    for value in ["keyword", "semantic", "hybrid"] {
        assert!(mode.description.contains(&format!("`{value}`")), "{mode:?}");
        let request = tool_service::wire::Request::new(
            serde_json::json!({}),
            serde_json::json!({"query": "q", "mode": value, "tags": []}),
        );
        let frames = registry
            .call("search-documents", "id", request)
            .await
            .unwrap();
        assert!(frames[0].error.is_none(), "{value}: {:?}", frames[0]);
    }
}

#[test]
fn a_long_schema_is_cut_and_says_so() {
    /// Many fields.
    #[derive(Debug, Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Wide {
        /// A field with a long description that goes on and on about nothing in particular.
        a_rather_long_field_name_number_one: Option<u64>,
        /// A field with a long description that goes on and on about nothing in particular.
        a_rather_long_field_name_number_two: Option<u64>,
        /// A field with a long description that goes on and on about nothing in particular.
        a_rather_long_field_name_number_three: Option<u64>,
        /// A field with a long description that goes on and on about nothing in particular.
        a_rather_long_field_name_number_four: Option<u64>,
        /// A field with a long description that goes on and on about nothing in particular.
        a_rather_long_field_name_number_five: Option<u64>,
        /// A field with a long description that goes on and on about nothing in particular.
        a_rather_long_field_name_number_six: Option<u64>,
        /// A field with a long description that goes on and on about nothing in particular.
        a_rather_long_field_name_number_seven: Option<u64>,
        /// A field with a long description that goes on and on about nothing in particular.
        a_rather_long_field_name_number_eight: Option<u64>,
    }

    /// Take a wide object.
    ///
    /// # Arguments
    /// * `wide` - The object.
    #[tool_service(topic = "descriptions-wide")]
    async fn take_wide(wide: Wide) -> String {
        format!("{wide:?}")
    }

    let registry = Registry::collect().unwrap();
    let tool = &registry.descriptors().tool["take-wide"];
    let description = &tool.arguments[0].description;
    assert!(description.starts_with("The object. An object with fields: "));
    assert!(description.ends_with("(cut; the decoder's error names what it expects)"));
    assert!(
        description.chars().count() <= "The object. ".len() + 1000,
        "{}",
        description.chars().count()
    );
}
