//! The JSON descriptors a TrustGraph agent loads: one `tool-service` item per
//! service and one `tool` item per tool, built from the service's types.

use std::collections::{BTreeMap, BTreeSet};

use crate::schema::{prose, Model};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::service::{Service, ServiceSpec, ToolSpec};

/// The fields of a `tool` item; a config param may not use these names.
const TOOL_FIELDS: [&str; 8] = [
    "type",
    "name",
    "description",
    "service",
    "arguments",
    "group",
    "state",
    "applicable-states",
];

/// The `tool-service` config item: how to reach a service.
///
/// ```
/// use tool_service::descriptor::{ConfigParam, ToolServiceDescriptor};
///
/// let json = r#"{"id": "joke-service",
///   "request-queue": "request:tg:joke",
///   "response-queue": "response:tg:joke",
///   "config-params": [{"name": "style", "required": false}]}"#;
/// let descriptor: ToolServiceDescriptor = serde_json::from_str(json).unwrap();
/// assert_eq!(descriptor.config_params, [ConfigParam { name: "style".into(), required: false }]);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolServiceDescriptor {
    /// The service id.
    pub id: String,
    /// The request queue: TrustGraph's `class:topicspace:topic`
    /// (`request:tg:joke`), or a Pulsar topic name (see [`QueueNames`]).
    #[serde(rename = "request-queue")]
    pub request_queue: String,
    /// The response queue, written as the request queue is.
    #[serde(rename = "response-queue")]
    pub response_queue: String,
    /// The config parameters a tool of this service may set.
    #[serde(rename = "config-params", default)]
    pub config_params: Vec<ConfigParam>,
}

/// One config parameter of a service.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfigParam {
    /// The name, as the config decoder accepts it.
    pub name: String,
    /// Whether every tool must set it (not an `Option`, no serde default).
    pub required: bool,
}

/// The `tool` config item: a tool the agent offers the LLM.
///
/// ```
/// use tool_service::descriptor::ToolDescriptor;
///
/// let json = r#"{"type": "tool-service", "name": "tell-joke",
///   "description": "Tell a joke on a given topic", "service": "joke-service",
///   "style": "pun",
///   "arguments": [{"name": "topic", "type": "string", "description": "The topic"}]}"#;
/// let tool: ToolDescriptor = serde_json::from_str(json).unwrap();
/// assert_eq!(tool.config["style"], "pun");
/// assert_eq!(serde_json::to_string(&tool).unwrap(), json.replace("\n  ", " ").replace(": ", ":").replace(", ", ","));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDescriptor {
    /// Always `tool-service`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The tool name the LLM calls.
    pub name: String,
    /// What the tool does, for the LLM.
    pub description: String,
    /// The id of the service behind the tool.
    pub service: String,
    /// The config values this tool sends to the service.
    #[serde(flatten)]
    pub config: Map<String, Value>,
    /// The tool groups a request selects the tool by (TrustGraph's
    /// default, `["default"]`, when none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<Vec<String>>,
    /// The state the agent moves to once the tool ran (none: it stays).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// The states the tool is offered in (TrustGraph's default, `["*"]`,
    /// when none).
    #[serde(
        default,
        rename = "applicable-states",
        skip_serializing_if = "Option::is_none"
    )]
    pub applicable_states: Option<Vec<String>>,
    /// The arguments the LLM provides.
    #[serde(default)]
    pub arguments: Vec<Argument>,
}

impl ToolDescriptor {
    /// Each argument's name and description, as MCP input schemas carry
    /// them.
    #[cfg(any(feature = "cli", feature = "mcp"))]
    pub(crate) fn argument_descriptions(&self) -> Vec<(&str, &str)> {
        self.arguments
            .iter()
            .map(|argument| (argument.name.as_str(), argument.description.as_str()))
            .collect()
    }
}

/// One argument the LLM provides.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Argument {
    /// The name, as the argument decoder accepts it.
    pub name: String,
    /// A JSON type word: `string`, `integer`, `number`, `boolean`, `array` or `object`.
    #[serde(rename = "type")]
    pub kind: String,
    /// What to pass, for the LLM (from the field's doc comment).
    pub description: String,
}

/// All descriptors of a binary, shaped like TrustGraph's config tree.
///
/// ```
/// let tree = tool_service::descriptor::ConfigTree::default();
/// assert_eq!(serde_json::to_string(&tree).unwrap(), r#"{"tool-service":{},"tool":{}}"#);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ConfigTree {
    /// `tool-service` items by service id.
    #[serde(rename = "tool-service")]
    pub tool_service: BTreeMap<String, ToolServiceDescriptor>,
    /// `tool` items by tool name.
    pub tool: BTreeMap<String, ToolDescriptor>,
}

/// How descriptors write a service's queues.
///
/// TrustGraph names a queue `class:topicspace:topic` (`request:tg:joke`) and
/// each of its pub/sub backends maps that name: Pulsar to the topic
/// `non-persistent://tg/request/joke` (`flow` queues are persistent),
/// RabbitMQ and Kafka to `tg.request.joke`. Its Pulsar backend also takes a
/// Pulsar topic name as it is; the others refuse one. Both forms name the
/// same topic on Pulsar, which is where the services of this crate listen.
///
/// ```
/// use tool_service::descriptor::{ConfigTree, QueueNames, ToolServiceDescriptor};
///
/// let mut tree = ConfigTree::default();
/// tree.tool_service.insert("joke-service".into(), ToolServiceDescriptor {
///     id: "joke-service".into(),
///     request_queue: "request:tg:joke".into(),
///     response_queue: "response:tg:joke".into(),
///     config_params: vec![],
/// });
/// let pulsar = tree.with_queue_names(QueueNames::Pulsar);
/// let service = &pulsar.tool_service["joke-service"];
/// assert_eq!(service.request_queue, "non-persistent://tg/request/joke");
/// assert_eq!(service.response_queue, "non-persistent://tg/response/joke");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum QueueNames {
    /// TrustGraph's `class:topicspace:topic` (`request:tg:joke`), which
    /// every TrustGraph backend reads: the default. A topic that has no
    /// such name (`persistent://public/default/x`, say) keeps its Pulsar
    /// name.
    #[default]
    TrustGraph,
    /// Pulsar topic names (`non-persistent://tg/request/joke`), for a
    /// TrustGraph release that reads only those.
    Pulsar,
}

impl QueueNames {
    /// `queue`, in either form, written this way.
    pub fn write(self, queue: &str) -> String {
        match self {
            Self::TrustGraph => trustgraph_queue(queue).unwrap_or_else(|| queue.to_owned()),
            Self::Pulsar => pulsar_topic(queue),
        }
    }
}

impl std::str::FromStr for QueueNames {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.trim().to_ascii_lowercase().as_str() {
            "trustgraph" => Ok(Self::TrustGraph),
            "pulsar" => Ok(Self::Pulsar),
            other => Err(format!(
                "`{other}` is not a way to write queue names: write `trustgraph` \
                 (request:tg:joke) or `pulsar` (non-persistent://tg/request/joke)"
            )),
        }
    }
}

/// The persistence TrustGraph's Pulsar backend gives a queue class.
fn persistence(class: &str) -> Option<&'static str> {
    match class {
        "flow" => Some("persistent"),
        "request" | "response" | "notify" => Some("non-persistent"),
        _ => None,
    }
}

/// The Pulsar topic a queue name means, as TrustGraph's Pulsar backend maps
/// it: a name with `://` is one already; `class:topicspace:topic` becomes
/// `{persistence}://{topicspace}/{class}/{topic}`. Anything else is
/// returned as it is.
pub(crate) fn pulsar_topic(queue: &str) -> String {
    if queue.contains("://") {
        return queue.to_owned();
    }
    let mut parts = queue.splitn(3, ':');
    match (parts.next(), parts.next(), parts.next()) {
        (Some(class), Some(space), Some(topic)) if !space.is_empty() && !topic.is_empty() => {
            match persistence(class) {
                Some(persistence) => format!("{persistence}://{space}/{class}/{topic}"),
                None => queue.to_owned(),
            }
        }
        _ => queue.to_owned(),
    }
}

/// TrustGraph's name of a Pulsar topic, when it has one: the topic is
/// `{persistence}://{topicspace}/{class}/{topic}` with the persistence
/// TrustGraph gives the class.
fn trustgraph_queue(queue: &str) -> Option<String> {
    let (scheme, rest) = queue.split_once("://")?;
    let mut parts = rest.splitn(3, '/');
    let (space, class, topic) = (parts.next()?, parts.next()?, parts.next()?);
    let fits = |part: &str| !part.is_empty() && !part.contains([':', '/']);
    (persistence(class) == Some(scheme) && fits(space) && !topic.is_empty() && !topic.contains('/'))
        .then(|| format!("{class}:{space}:{topic}"))
}

impl ConfigTree {
    /// The same items with every service's queues written as `names` says.
    #[must_use]
    pub fn with_queue_names(mut self, names: QueueNames) -> Self {
        for service in self.tool_service.values_mut() {
            service.request_queue = names.write(&service.request_queue);
            service.response_queue = names.write(&service.response_queue);
        }
        self
    }

    /// Each item as `(key, JSON)`, keys like `tool-service/joke-service` and
    /// `tool/tell-joke`, ready for `tg-put-config-item`.
    pub fn items(&self) -> Vec<(String, Value)> {
        let services = self
            .tool_service
            .iter()
            .map(|(id, item)| (format!("tool-service/{id}"), serde_json::to_value(item)));
        let tools = self
            .tool
            .iter()
            .map(|(name, item)| (format!("tool/{name}"), serde_json::to_value(item)));
        services
            .chain(tools)
            .map(|(key, value)| (key, value.expect("descriptors always encode")))
            .collect()
    }
}

/// Why a service's descriptors cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DescriptorError {
    /// The config or argument type is not a struct with named fields.
    #[error("service `{service}`: the {what} type must be a struct with named fields (its JSON schema is not an object)")]
    NotAnObject {
        /// The service id.
        service: String,
        /// `config` or `arguments`.
        what: &'static str,
    },
    /// An argument has no description.
    #[error("tool `{tool}`: argument `{argument}` has no description; add a doc comment to its field or `arguments({} = \"…\")` to the tool", crate::names::key(.argument))]
    UndocumentedArgument {
        /// The tool name.
        tool: String,
        /// The argument name.
        argument: String,
    },
    /// A config param shadows a field of the tool item.
    #[error("service `{service}`: config param `{param}` collides with the tool descriptor field of that name; rename it")]
    ReservedConfigParam {
        /// The service id.
        service: String,
        /// The param name.
        param: String,
    },
    /// A preset describes an argument the service does not have.
    #[error(
        "tool `{tool}`: `{argument}` is not an argument of service `{service}` (known: {known})"
    )]
    UnknownArgument {
        /// The tool name.
        tool: String,
        /// The service id.
        service: String,
        /// The unknown name.
        argument: String,
        /// The service's arguments, comma separated, or `none`.
        known: String,
    },
    /// A preset sets a param the service does not have.
    #[error(
        "tool `{tool}`: `{param}` is not a config param of service `{service}` (known: {known})"
    )]
    UnknownConfigParam {
        /// The tool name.
        tool: String,
        /// The service id.
        service: String,
        /// The unknown name.
        param: String,
        /// The service's params, comma separated, or `none`.
        known: String,
    },
    /// A preset leaves out a required param.
    #[error("tool `{tool}`: required config param `{param}` of service `{service}` is not set; add `config({} = …)` to the tool", crate::names::key(.param))]
    MissingConfigParam {
        /// The tool name.
        tool: String,
        /// The service id.
        service: String,
        /// The missing name.
        param: String,
    },
    /// A preset's values do not decode as the service's config.
    #[error("tool `{tool}`: its config values do not fit service `{service}`: {message}")]
    InvalidConfigValue {
        /// The tool name.
        tool: String,
        /// The service id.
        service: String,
        /// The decoder's message.
        message: String,
    },
}

/// Builds the descriptors of one service and its tools, or every problem.
pub(crate) fn describe(
    service: Service,
) -> Result<(ToolServiceDescriptor, Vec<ToolDescriptor>), Vec<DescriptorError>> {
    let spec = service.spec();
    let id = service.id().to_owned();
    let mut errors = Vec::new();
    let config_params = config_params(spec, &id, &mut errors);
    let (arguments, told) = arguments(spec, &id, &mut errors);
    let tools = spec
        .tools
        .iter()
        .map(|tool| {
            let config = preset_config(spec, tool, &id, &config_params, &mut errors);
            let arguments = tool_arguments(tool, &id, &arguments, &told, &mut errors);
            tool_descriptor(tool, &id, config, arguments)
        })
        .collect();
    if !errors.is_empty() {
        return Err(errors);
    }
    let descriptor = ToolServiceDescriptor {
        id,
        request_queue: QueueNames::TrustGraph.write(&service.request_queue()),
        response_queue: QueueNames::TrustGraph.write(&service.response_queue()),
        config_params,
    };
    Ok((descriptor, tools))
}

/// The service's config params, the fields of its config type; a config
/// that is not an object or a param named like a `tool` field is an error.
fn config_params(
    spec: &ServiceSpec,
    id: &str,
    errors: &mut Vec<DescriptorError>,
) -> Vec<ConfigParam> {
    let config_schema = (spec.config_schema)();
    let config_model = Model::of(config_schema.as_value());
    let config_params = match config_model.root_fields() {
        Some(fields) => fields
            .iter()
            .map(|field| ConfigParam {
                name: field.name.clone(),
                required: field.required,
            })
            .collect(),
        None => {
            errors.push(DescriptorError::NotAnObject {
                service: id.to_owned(),
                what: "config",
            });
            Vec::new()
        }
    };
    for param in &config_params {
        if TOOL_FIELDS.contains(&param.name.as_str()) {
            errors.push(DescriptorError::ReservedConfigParam {
                service: id.to_owned(),
                param: param.name.clone(),
            });
        }
    }
    config_params
}

/// The service's arguments, the fields of its arguments type, with their
/// documented descriptions; and for each, what its schema says beyond its
/// type word (added to its description once the description itself is
/// checked, in [`tool_arguments`]).
fn arguments(
    spec: &ServiceSpec,
    id: &str,
    errors: &mut Vec<DescriptorError>,
) -> (Vec<Argument>, BTreeMap<String, String>) {
    let arguments_schema = (spec.arguments_schema)();
    let mut told = BTreeMap::new();
    let model = Model::of(arguments_schema.as_value());
    let arguments = match model.root_fields() {
        Some(fields) => fields
            .iter()
            .map(|field| {
                told.insert(field.name.clone(), prose::prose(&model, field));
                Argument {
                    kind: model.type_word(field.node).to_owned(),
                    description: field.description.clone().unwrap_or_default(),
                    name: field.name.clone(),
                }
            })
            .collect(),
        None => {
            errors.push(DescriptorError::NotAnObject {
                service: id.to_owned(),
                what: "arguments",
            });
            Vec::new()
        }
    };
    (arguments, told)
}

/// The config a tool presets, checked against the service's params: no
/// unknown param, every required one, and (when those hold) values the
/// config type decodes.
fn preset_config(
    spec: &ServiceSpec,
    tool: &ToolSpec,
    id: &str,
    config_params: &[ConfigParam],
    errors: &mut Vec<DescriptorError>,
) -> Map<String, Value> {
    let known: BTreeSet<&str> = config_params
        .iter()
        .map(|param| param.name.as_str())
        .collect();
    let config: Map<String, Value> = tool
        .config
        .iter()
        .map(|(name, value)| ((*name).to_owned(), value.to_json()))
        .collect();
    let before = errors.len();
    for name in config.keys() {
        if !known.contains(name.as_str()) {
            errors.push(DescriptorError::UnknownConfigParam {
                tool: tool.name.to_owned(),
                service: id.to_owned(),
                param: name.clone(),
                known: crate::names::list(&known),
            });
        }
    }
    for param in config_params.iter().filter(|param| param.required) {
        if !config.contains_key(&param.name) {
            errors.push(DescriptorError::MissingConfigParam {
                tool: tool.name.to_owned(),
                service: id.to_owned(),
                param: param.name.clone(),
            });
        }
    }
    if errors.len() == before {
        let text = Value::Object(config.clone()).to_string();
        if let Err(error) = (spec.check_config)(&text) {
            errors.push(DescriptorError::InvalidConfigValue {
                tool: tool.name.to_owned(),
                service: id.to_owned(),
                message: error.message().to_owned(),
            });
        }
    }
    config
}

/// The arguments as one tool describes them: its own descriptions in place
/// of the documented ones (each naming a known argument), none left empty,
/// then what each argument's schema says (`told`).
fn tool_arguments(
    tool: &ToolSpec,
    id: &str,
    arguments: &[Argument],
    told: &BTreeMap<String, String>,
    errors: &mut Vec<DescriptorError>,
) -> Vec<Argument> {
    let mut tool_arguments = arguments.to_vec();
    for (name, description) in tool.arguments {
        match tool_arguments
            .iter_mut()
            .find(|argument| argument.name == *name)
        {
            Some(argument) => argument.description = (*description).to_owned(),
            None => errors.push(DescriptorError::UnknownArgument {
                tool: tool.name.to_owned(),
                service: id.to_owned(),
                argument: (*name).to_owned(),
                known: crate::names::list(arguments.iter().map(|argument| argument.name.as_str())),
            }),
        }
    }
    for argument in &mut tool_arguments {
        if argument.description.trim().is_empty() {
            errors.push(DescriptorError::UndocumentedArgument {
                tool: tool.name.to_owned(),
                argument: argument.name.clone(),
            });
        }
        if let Some(extra) = told.get(&argument.name) {
            argument.description = prose::join(&argument.description, extra);
        }
    }
    tool_arguments
}

/// The `tool` item of one tool.
fn tool_descriptor(
    tool: &ToolSpec,
    id: &str,
    config: Map<String, Value>,
    arguments: Vec<Argument>,
) -> ToolDescriptor {
    ToolDescriptor {
        kind: String::from("tool-service"),
        name: tool.name.to_owned(),
        description: tool.description.to_owned(),
        service: id.to_owned(),
        config,
        group: listed(tool.group),
        state: tool.state.map(str::to_owned),
        applicable_states: listed(tool.applicable_states),
        arguments,
    }
}

/// A preset's list, when it has one (the attribute never gives an empty one).
fn listed(names: &[&str]) -> Option<Vec<String>> {
    (!names.is_empty()).then(|| names.iter().map(|name| (*name).to_owned()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_names_go_both_ways_where_trustgraph_has_a_name() {
        for (pulsar, trustgraph) in [
            ("non-persistent://tg/request/joke", "request:tg:joke"),
            ("non-persistent://tg/response/joke", "response:tg:joke"),
            ("non-persistent://tg/notify/x", "notify:tg:x"),
            ("persistent://tg/flow/x", "flow:tg:x"),
            (
                "non-persistent://tg/request/config:default",
                "request:tg:config:default",
            ),
            ("non-persistent://team/request/joke", "request:team:joke"),
        ] {
            assert_eq!(QueueNames::TrustGraph.write(pulsar), trustgraph);
            assert_eq!(QueueNames::TrustGraph.write(trustgraph), trustgraph);
            assert_eq!(QueueNames::Pulsar.write(trustgraph), pulsar);
            assert_eq!(QueueNames::Pulsar.write(pulsar), pulsar);
        }
        // No TrustGraph name: the persistence is not the class's, or the
        // namespace is not a class.
        for pulsar in [
            "persistent://tg/request/joke",
            "non-persistent://tg/flow/x",
            "persistent://public/default/joke",
            "non-persistent://tg/request/a/b",
        ] {
            assert_eq!(QueueNames::TrustGraph.write(pulsar), pulsar);
            assert_eq!(QueueNames::Pulsar.write(pulsar), pulsar);
        }
        assert_eq!("Pulsar".parse::<QueueNames>(), Ok(QueueNames::Pulsar));
        assert_eq!(
            "trustgraph".parse::<QueueNames>(),
            Ok(QueueNames::TrustGraph)
        );
        assert!("kafka"
            .parse::<QueueNames>()
            .unwrap_err()
            .contains("`trustgraph`"));
    }
    use schemars::JsonSchema;

    #[allow(dead_code)]
    #[derive(JsonSchema)]
    #[serde(rename_all = "kebab-case")]
    struct Config {
        /// The collection.
        collection: String,
        max_results: Option<u32>,
        #[serde(default)]
        verbose: bool,
        #[serde(rename = "k")]
        top_k: u8,
    }

    #[allow(dead_code)]
    #[derive(JsonSchema)]
    enum Style {
        Pun,
        DadJoke,
    }

    #[allow(dead_code)]
    #[derive(JsonSchema)]
    struct Inner {
        a: u8,
    }

    #[allow(dead_code)]
    #[derive(JsonSchema)]
    struct Args {
        /// text
        text: String,
        /// int
        count: i64,
        /// float
        ratio: f64,
        /// flag
        flag: Option<bool>,
        /// list
        items: Vec<String>,
        /// nested
        inner: Inner,
        /// maybe nested
        maybe_inner: Option<Inner>,
        /// enum
        style: Style,
        /// maybe enum
        maybe_style: Option<Style>,
        /// map
        map: BTreeMap<String, u8>,
        /// anything
        any: Value,
    }

    #[test]
    fn config_params_follow_serde() {
        let schema = schemars::schema_for!(Config);
        let model = Model::of(schema.as_value());
        let params: Vec<(String, bool)> = model
            .root_fields()
            .unwrap()
            .iter()
            .map(|f| (f.name.clone(), f.required))
            .collect();
        assert_eq!(
            params,
            [
                ("collection".into(), true),
                ("max-results".into(), false),
                ("verbose".into(), false),
                ("k".into(), true),
            ]
        );
    }

    #[test]
    fn type_words_cover_common_shapes() {
        let schema = schemars::schema_for!(Args);
        let model = Model::of(schema.as_value());
        let words: Vec<(String, String, String)> = model
            .root_fields()
            .unwrap()
            .iter()
            .map(|f| {
                (
                    f.name.clone(),
                    model.type_word(f.node).to_owned(),
                    f.description.clone().unwrap(),
                )
            })
            .collect();
        let expected = [
            ("text", "string"),
            ("count", "integer"),
            ("ratio", "number"),
            ("flag", "boolean"),
            ("items", "array"),
            ("inner", "object"),
            ("maybe_inner", "object"),
            ("style", "string"),
            ("maybe_style", "string"),
            ("map", "object"),
            ("any", "object"),
        ];
        assert_eq!(words.len(), expected.len());
        for ((name, word, description), (want_name, want_word)) in words.iter().zip(expected) {
            assert_eq!((name.as_str(), word.as_str()), (want_name, want_word));
            assert!(!description.is_empty());
        }
    }

    #[test]
    fn non_objects_are_not_fields() {
        let schema = schemars::schema_for!(String);
        assert!(Model::of(schema.as_value()).root_fields().is_none());
        let schema = schemars::schema_for!(Style);
        assert!(Model::of(schema.as_value()).root_fields().is_none());
    }

    #[test]
    fn items_are_keyed_for_put_config_item() {
        let mut tree = ConfigTree::default();
        tree.tool_service.insert(
            "s".into(),
            ToolServiceDescriptor {
                id: "s".into(),
                request_queue: "rq".into(),
                response_queue: "rs".into(),
                config_params: vec![],
            },
        );
        let keys: Vec<String> = tree.items().into_iter().map(|(key, _)| key).collect();
        assert_eq!(keys, ["tool-service/s"]);
    }
}
