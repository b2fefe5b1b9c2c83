//! Every service linked into the binary, collected with `inventory` and
//! checked before anything is served or emitted.

use std::collections::BTreeMap;
use std::fmt;

use crate::descriptor::{self, ConfigTree, ToolDescriptor, ToolServiceDescriptor};
use crate::dispatch;
use crate::service::{Service, ServiceSpec};
use crate::state::State;
use crate::wire::{Frame, Request};

/// A mistake in the set of services, found before deployment.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Problem {
    /// Two services share an id.
    #[error("service id `{id}` is defined twice: by {first} and by {second}")]
    DuplicateServiceId {
        /// The id.
        id: String,
        /// One definition.
        first: String,
        /// The other.
        second: String,
    },
    /// Two tools share a name.
    #[error("tool name `{name}` is defined twice: by {first} and by {second}")]
    DuplicateToolName {
        /// The tool name.
        name: String,
        /// One definition.
        first: String,
        /// The other.
        second: String,
    },
    /// Two services consume one request topic.
    #[error("request queue `{queue}` is used twice: by {first} and by {second}")]
    DuplicateRequestQueue {
        /// The topic.
        queue: String,
        /// One definition.
        first: String,
        /// The other.
        second: String,
    },
    /// A descriptor cannot be built.
    #[error(transparent)]
    Descriptor(#[from] descriptor::DescriptorError),
}

/// All the problems found in a set of services.
///
/// Its `Debug` form is its message, so that the one-line guard
/// `Registry::collect().unwrap()` in a `#[test]` fails with the words the
/// binary would print:
///
/// ```
/// // With `#[test]` in your tests:
/// fn tool_services_are_valid() {
///     tool_service::Registry::collect().unwrap();
/// }
/// # tool_services_are_valid();
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct RegistryError {
    problems: Vec<Problem>,
}

impl RegistryError {
    /// Each problem found.
    pub fn problems(&self) -> &[Problem] {
        &self.problems
    }
}

impl fmt::Display for RegistryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.problems.as_slice() {
            [one] => write!(f, "{one}"),
            many => {
                write!(
                    f,
                    "{} problems in the registered tool services:",
                    many.len()
                )?;
                for problem in many {
                    write!(f, "\n  - {problem}")?;
                }
                Ok(())
            }
        }
    }
}

impl fmt::Debug for RegistryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl std::error::Error for RegistryError {}

/// The checked set of services in this binary and their descriptors.
///
// The guide below links other guides as files (for GitHub and a
// checkout). A label's first definition wins, so these, read first, send
// its labels to the items and sections of the rustdoc pages instead.
/// [llm-may-send]: macro@crate::tool_service#what-the-llm-may-send
/// [python-call]: crate::pulsar::announce#calling-a-tool-from-python
/// [`Registry::call`]: Registry::call
/// [`Registry::call_tool`]: Registry::call_tool
/// [`Registry::call_tool_as`]: Registry::call_tool_as
/// [`Caller`]: crate::Caller
/// [`Registry::collect`]: Registry::collect
/// [`Registry::with_state`]: Registry::with_state
///
#[doc = include_str!("../docs/testing.md")]
#[derive(Debug, Clone)]
pub struct Registry {
    services: Vec<Service>,
    tree: ConfigTree,
    state: State,
}

impl Registry {
    /// Collects every `#[tool_service]` linked into the binary, from every
    /// crate, and checks them.
    ///
    /// # Errors
    /// Every problem found at once: duplicate service ids, tool names or
    /// request queues (naming both definitions), and tool presets or types that
    /// give no valid descriptor.
    pub fn collect() -> Result<Self, RegistryError> {
        Self::from_services(
            inventory::iter::<ServiceSpec>
                .into_iter()
                .map(Service::from_spec),
        )
    }

    /// Checks an explicit set of services.
    ///
    /// # Errors
    /// As [`Registry::collect`].
    pub fn from_services(
        services: impl IntoIterator<Item = Service>,
    ) -> Result<Self, RegistryError> {
        let mut services: Vec<Service> = services.into_iter().collect();
        services.sort_by(|a, b| a.id().cmp(b.id()).then(a.defined_at().cmp(&b.defined_at())));
        let mut problems = Vec::new();
        find_duplicates(&services, &mut problems);
        let mut tree = ConfigTree::default();
        for service in &services {
            match descriptor::describe(*service) {
                Ok((service_descriptor, tools)) => {
                    tree.tool_service
                        .insert(service.id().to_owned(), service_descriptor);
                    for tool in tools {
                        tree.tool.insert(tool.name.clone(), tool);
                    }
                }
                Err(errors) => problems.extend(errors.into_iter().map(Problem::from)),
            }
        }
        if problems.is_empty() {
            Ok(Self {
                services,
                tree,
                state: State::new(),
            })
        } else {
            Err(RegistryError { problems })
        }
    }

    /// This registry with the values its handlers share (see [`State`]):
    /// `serve` and [`Registry::call`] hand them to every request.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use tool_service::{tool_service, wire::Request, Registry, State};
    ///
    /// struct Greeting(String);
    ///
    /// /// Greet someone.
    /// ///
    /// /// # Arguments
    /// /// * `name` - Who.
    /// #[tool_service(topic = "greet-with-state")]
    /// async fn greet(#[state] greeting: &Greeting, name: String) -> String {
    ///     format!("{} {name}", greeting.0)
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let registry = Registry::collect().unwrap()
    ///     .with_state(State::new().with(Greeting("Hello,".into())));
    /// let request = Request::new(serde_json::json!({}), serde_json::json!({"name": "Ada"}));
    /// let frames = registry.call("greet", "id", request).await.unwrap();
    /// assert_eq!(frames[0].response, "Hello, Ada");
    /// # }
    /// ```
    #[must_use]
    pub fn with_state(mut self, state: State) -> Self {
        self.state = state;
        self
    }

    /// The values the handlers share.
    pub fn state(&self) -> &State {
        &self.state
    }

    /// Checks that every service id in `expected` is registered. Services
    /// defined in a library crate are linked only when the binary names the
    /// crate (`use my_tools as _;`); this check, in the binary's tests,
    /// makes forgetting it fail:
    ///
    /// ```
    /// let registry = tool_service::Registry::collect().unwrap();
    /// let error = registry.expect_services(["search-service"]).unwrap_err();
    /// assert_eq!(error.missing, ["search-service"]);
    /// assert!(error.to_string().contains("use my_tools as _;"));
    /// ```
    ///
    /// # Errors
    /// [`MissingServices`], naming every id that is not registered.
    pub fn expect_services<I>(&self, expected: I) -> Result<(), MissingServices>
    where
        I: IntoIterator,
        I::Item: AsRef<str>,
    {
        let missing: Vec<String> = expected
            .into_iter()
            .filter(|id| self.service(id.as_ref()).is_none())
            .map(|id| id.as_ref().to_owned())
            .collect();
        if missing.is_empty() {
            Ok(())
        } else {
            Err(MissingServices {
                missing,
                registered: self
                    .services
                    .iter()
                    .map(|service| service.id().to_owned())
                    .collect(),
            })
        }
    }

    /// Checks that this registry's state holds every `#[state]` type the
    /// given services take. `serve` checks the services it is about to serve
    /// before subscribing, and `call` the service it calls.
    ///
    /// # Errors
    /// [`MissingState`], naming each service and type that is missing.
    pub fn check_state(
        &self,
        services: impl IntoIterator<Item = Service>,
    ) -> Result<(), MissingState> {
        let mut missing = Vec::new();
        let mut arcs = Vec::new();
        for service in services {
            for need in service.spec().states {
                if !self.state.contains((need.type_id)()) {
                    let type_name = (need.type_name)();
                    let in_arc = format!("alloc::sync::Arc<{type_name}>");
                    if self.state.type_names().contains(&in_arc.as_str()) {
                        arcs.push(type_name.to_owned());
                    }
                    missing.push((service.id().to_owned(), type_name.to_owned()));
                }
            }
        }
        if missing.is_empty() {
            Ok(())
        } else {
            Err(MissingState { missing, arcs })
        }
    }

    /// The services a transport serves: every one, or those `only` names
    /// (in that order), each with the `#[state]` it takes. `serve` and
    /// [`McpServer::new`](crate::mcp::McpServer::new) both start here.
    ///
    /// ```
    /// use tool_service::{tool_service, Registry, SelectError};
    ///
    /// /// Say hello.
    /// #[tool_service(topic = "hello")]
    /// async fn hello() -> &'static str {
    ///     "hello"
    /// }
    ///
    /// let registry = Registry::collect().unwrap();
    /// assert_eq!(registry.select(&[]).unwrap().len(), 1);
    /// let unknown = registry.select(&["helo-service".to_owned()]).unwrap_err();
    /// assert!(matches!(unknown, SelectError::UnknownService { .. }));
    /// assert_eq!(
    ///     unknown.to_string(),
    ///     "no service `helo-service` in this binary (known: hello-service)"
    /// );
    /// ```
    ///
    /// # Errors
    /// [`SelectError`]: no services at all, an id this binary does not
    /// have, or a `#[state]` value that was never provided.
    pub fn select(&self, only: &[String]) -> Result<Vec<Service>, SelectError> {
        if self.services.is_empty() {
            return Err(SelectError::NothingToServe);
        }
        let selected = if only.is_empty() {
            self.services.clone()
        } else {
            only.iter()
                .map(|id| self.service(id).ok_or_else(|| self.unknown_service(id)))
                .collect::<Result<_, _>>()?
        };
        self.check_state(selected.iter().copied())?;
        Ok(selected)
    }

    /// The refusal of an id this binary does not have, naming those it has.
    pub(crate) fn unknown_service(&self, id: &str) -> SelectError {
        SelectError::UnknownService {
            id: id.to_owned(),
            known: crate::names::list(self.services.iter().map(|service| service.id())),
        }
    }

    /// The services, ordered by id.
    pub fn services(&self) -> &[Service] {
        &self.services
    }

    /// The service with this id.
    pub fn service(&self, id: &str) -> Option<Service> {
        self.services
            .iter()
            .copied()
            .find(|service| service.id() == id)
    }

    /// The tool with this name and the service behind it.
    pub fn tool(&self, name: &str) -> Option<(Service, &ToolDescriptor)> {
        let tool = self.tree.tool.get(name)?;
        Some((self.service(&tool.service)?, tool))
    }

    /// The `tool-service` descriptor of a service.
    pub fn service_descriptor(&self, id: &str) -> Option<&ToolServiceDescriptor> {
        self.tree.tool_service.get(id)
    }

    /// All descriptors, in TrustGraph's config-tree shape.
    pub fn descriptors(&self) -> &ConfigTree {
        &self.tree
    }

    /// Calls the tool (or service) `name` with `arguments` as an LLM would
    /// send them, and no config but the tool's preset: its answer's text
    /// (a stream's chunks joined), or the error an agent would read. The
    /// one-line call for a test; [`Self::call`] gives the frames.
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_service::{tool_service, Registry};
    ///
    /// /// Shout.
    /// ///
    /// /// # Arguments
    /// /// * `text` - What to shout.
    /// #[tool_service(topic = "call-tool-shout")]
    /// async fn shout(text: String) -> String {
    ///     text.to_uppercase()
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let registry = Registry::collect().unwrap();
    /// assert_eq!(registry.call_tool("shout", json!({"text": "hi"})).await.unwrap(), "HI");
    /// let refused = registry.call_tool("shout", json!({"text": 5})).await.unwrap_err();
    /// assert_eq!(refused.message(), "invalid arguments: `text` must be a text; got 5");
    /// # }
    /// ```
    ///
    /// # Errors
    /// The answer's error frame; for a name that is neither a tool nor a
    /// service, an error saying which names there are.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: serde_json::Value,
    ) -> Result<String, crate::error::ToolError> {
        self.call_tool_as(name, arguments, &crate::context::Caller::anonymous())
            .await
    }

    /// [`Self::call_tool`] as `caller`: its user is `ctx.user()`, and the
    /// scopes of a caller with a token are `ctx.scopes()` and are held to
    /// the service's `scopes = [...]` as the MCP port holds an OAuth
    /// caller's (`--oauth-scope` overrides apply only there). See
    /// [`Caller`](crate::Caller).
    ///
    /// # Errors
    /// As [`Self::call_tool`]; and an error of type
    /// [`ToolError::INSUFFICIENT_SCOPE`](crate::ToolError::INSUFFICIENT_SCOPE),
    /// naming what is missing, when the caller's scopes lack one the
    /// service needs.
    pub async fn call_tool_as(
        &self,
        name: &str,
        arguments: serde_json::Value,
        caller: &crate::context::Caller,
    ) -> Result<String, crate::error::ToolError> {
        let mut request = Request::new(serde_json::json!({}), arguments);
        request.user.clone_from(&caller.user);
        let service = self
            .resolve(name, &mut request.clone())
            .map_err(|unknown| crate::error::ToolError::new(unknown.to_string()))?;
        let missing = caller.missing(service.scopes());
        if !missing.is_empty() {
            return Err(crate::error::ToolError::insufficient_scope(name, &missing));
        }
        let frames =
            crate::context::with_granted(caller.scopes.clone(), self.call(name, "test", request))
                .await
                .map_err(|unknown| crate::error::ToolError::new(unknown.to_string()))?;
        let mut text = String::new();
        for frame in frames {
            if let Some(error) = frame.error {
                return Err(error);
            }
            text.push_str(&frame.response);
        }
        Ok(text)
    }

    /// The service `name` names (a tool or a service id), with a tool's
    /// preset config merged under `request`'s own config values, as
    /// TrustGraph's agent sends it.
    ///
    /// # Errors
    /// [`UnknownName`] when no tool or service has that name.
    pub(crate) fn resolve(
        &self,
        name: &str,
        request: &mut Request,
    ) -> Result<Service, UnknownName> {
        if let Some((service, tool)) = self.tool(name) {
            let mut merged = tool.config.clone();
            if let Ok(serde_json::Value::Object(overrides)) = serde_json::from_str(&request.config)
            {
                merged.extend(overrides);
                request.config = serde_json::Value::Object(merged).to_string();
            }
            return Ok(service);
        }
        if let Some(service) = self.service(name) {
            return Ok(service);
        }
        let mut known: Vec<String> = self.tree.tool.keys().cloned().collect();
        known.extend(self.services.iter().map(|service| service.id().to_owned()));
        Err(UnknownName {
            name: name.to_owned(),
            known,
        })
    }

    /// Calls a tool or a service in-process, through the same decode →
    /// handler → encode path as requests from the broker, and returns the
    /// response frames.
    ///
    /// For a tool, its preset config values are sent, with the keys of
    /// `request.config` (when it is a JSON object) laid over them, as the
    /// agent would send them. A service with a `timeout` attribute is held
    /// to it (which needs a Tokio runtime with the time driver), and every
    /// frame to Pulsar's default maximum message size
    /// ([`DEFAULT_MAX_MESSAGE_SIZE`](crate::wire::DEFAULT_MAX_MESSAGE_SIZE)),
    /// as on a default broker.
    ///
    /// ```
    /// use tool_service::{tool_service, wire::Request, Registry};
    ///
    /// /// Add two numbers.
    /// ///
    /// /// # Arguments
    /// /// * `a` - The first number.
    /// /// * `b` - The second number.
    /// #[tool_service(topic = "add")]
    /// async fn add(a: i64, b: i64) -> i64 {
    ///     a + b
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let registry = Registry::collect().unwrap();
    /// let request = Request::new(serde_json::json!({}), serde_json::json!({"a": 2, "b": 3}));
    /// let frames = registry.call("add", "req-1", request).await.unwrap();
    /// assert_eq!(frames[0].response, "5");
    /// # }
    /// ```
    ///
    /// # Errors
    /// [`UnknownName`] when no tool or service has that name.
    pub async fn call(
        &self,
        name: &str,
        id: &str,
        mut request: Request,
    ) -> Result<Vec<Frame>, UnknownName> {
        let service = self.resolve(name, &mut request)?;
        let mut frames = Vec::new();
        // The service's own timeout applies, as in `serve`, and so does the
        // default broker's maximum message size.
        let limits = dispatch::Limits {
            timeout: service.timeout(),
            max_message_size: Some(crate::wire::DEFAULT_MAX_MESSAGE_SIZE),
        };
        match dispatch::dispatch_request(
            service,
            &self.state,
            id,
            Ok(request),
            limits,
            crate::service::Lease::none(),
            &mut frames,
        )
        .await
        {
            Ok(_) => Ok(frames),
            Err(never) => match never {},
        }
    }
}

/// Why a transport cannot serve what it was asked to ([`Registry::select`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SelectError {
    /// The binary has no services at all.
    #[error("no tool services are registered in this binary; a service defined in a library crate is linked only when the binary names the crate: add `use my_tools as _;` to its main.rs")]
    NothingToServe,
    /// An id asked for that the binary does not have.
    #[error("no service `{id}` in this binary (known: {known})")]
    UnknownService {
        /// The id asked for.
        id: String,
        /// The ids there are.
        known: String,
    },
    /// A `#[state]` value a selected service takes was never provided.
    #[error(transparent)]
    MissingState(#[from] MissingState),
}

/// Services a binary was expected to have and does not.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no service {} in this binary (registered: {}); a service defined in a library crate is linked only when the binary names the crate: add `use my_tools as _;` to its main.rs", crate::names::list(.missing.iter().map(|id| format!("`{id}`"))), crate::names::list(.registered))]
#[non_exhaustive]
pub struct MissingServices {
    /// The ids expected and not registered.
    pub missing: Vec<String>,
    /// The ids registered.
    pub registered: Vec<String>,
}

/// Services take `#[state]` values that were never provided.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct MissingState {
    /// Each service id and the type name it lacks.
    pub missing: Vec<(String, String)>,
    /// The types among them that the state holds in an `Arc` instead
    /// (`State::with(Arc::new(value))`), by name.
    pub arcs: Vec<String>,
}

impl fmt::Display for MissingState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (at, (service, type_name)) in self.missing.iter().enumerate() {
            if at > 0 {
                f.write_str("; ")?;
            }
            write!(
                f,
                "service `{service}` takes a `{type_name}` as #[state], and none was provided"
            )?;
        }
        f.write_str(": add it to the State the setup hook returns (App::setup), or with Registry::with_state")?;
        for type_name in &self.arcs {
            write!(
                f,
                ". The State holds an `Arc<{type_name}>`, which is another type: add the `{type_name}` itself (the State shares it already; `#[state] x: Arc<{type_name}>` receives it as an `Arc`)"
            )?;
        }
        Ok(())
    }
}

impl std::error::Error for MissingState {}

/// No tool or service has the name given to [`Registry::call`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "no tool or service named `{name}` in this binary (known: {})",
    crate::names::list(known)
)]
#[non_exhaustive]
pub struct UnknownName {
    /// The name asked for.
    pub name: String,
    /// The tool names and service ids there are.
    pub known: Vec<String>,
}

fn find_duplicates(services: &[Service], problems: &mut Vec<Problem>) {
    let mut ids: BTreeMap<&str, Service> = BTreeMap::new();
    let mut tools: BTreeMap<&str, Service> = BTreeMap::new();
    let mut queues: BTreeMap<String, Service> = BTreeMap::new();
    for &service in services {
        if let Some(first) = ids.insert(service.id(), service) {
            problems.push(Problem::DuplicateServiceId {
                id: service.id().to_owned(),
                first: first.defined_at(),
                second: service.defined_at(),
            });
        }
        for name in service.tool_names() {
            if let Some(first) = tools.insert(name, service) {
                problems.push(Problem::DuplicateToolName {
                    name: name.to_owned(),
                    first: first.defined_at(),
                    second: service.defined_at(),
                });
            }
        }
        if let Some(first) = queues.insert(service.request_queue(), service) {
            problems.push(Problem::DuplicateRequestQueue {
                queue: service.request_queue(),
                first: first.defined_at(),
                second: service.defined_at(),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::invoke::{self, NoArguments, NoConfig, ServiceTypes};
    use crate::service::{HandlerFuture, Invocation, ToolSpec};

    struct Empty;

    impl ServiceTypes for Empty {
        type Config = NoConfig;
        type Arguments = NoArguments;
    }

    fn handler(_: Invocation) -> HandlerFuture {
        Box::pin(async { Ok(String::from("ok")) })
    }

    const fn spec(id: &'static str, topic: &'static str, line: u32) -> ServiceSpec {
        ServiceSpec {
            id,
            topic,
            request_queue: None,
            response_queue: None,
            subscription: None,
            concurrency: None,
            timeout: None,
            rate: None,
            scopes: &[],
            streaming: false,
            blocking: false,
            takes_context: false,
            tools: &[],
            config_schema: invoke::config_schema::<Empty>,
            arguments_schema: invoke::arguments_schema::<Empty>,
            output_schema: || None,
            check_config: invoke::check_config::<Empty>,
            states: &[],
            handler,
            function: "tests::f",
            file: "src/x.rs",
            line,
        }
    }

    static FIRST: ServiceSpec = ServiceSpec {
        tools: &[ToolSpec {
            name: "first-tool",
            title: None,
            description: "First.",
            annotations: crate::service::Annotations::NONE,
            config: &[],
            arguments: &[],
            group: &[],
            state: None,
            applicable_states: &[],
        }],
        ..spec("first", "one", 1)
    };
    static SAME_ID: ServiceSpec = ServiceSpec {
        tools: &[ToolSpec {
            name: "first-tool",
            title: None,
            description: "Again.",
            annotations: crate::service::Annotations::NONE,
            config: &[],
            arguments: &[],
            group: &[],
            state: None,
            applicable_states: &[],
        }],
        ..spec("first", "two", 2)
    };
    static SAME_QUEUE: ServiceSpec = ServiceSpec {
        request_queue: Some("non-persistent://tg/request/one"),
        ..spec("third", "three", 3)
    };
    static CUSTOM: ServiceSpec = ServiceSpec {
        request_queue: Some("persistent://acme/tools/in"),
        response_queue: Some("persistent://acme/tools/out"),
        subscription: Some("workers"),
        concurrency: Some(8),
        timeout: Some(std::time::Duration::from_secs(5)),
        scopes: &["tickets:write", "openid"],
        ..spec("custom", "custom", 4)
    };

    fn services(specs: &[&'static ServiceSpec]) -> Vec<Service> {
        specs.iter().map(|spec| Service::from_spec(spec)).collect()
    }

    #[test]
    fn queues_and_subscription_have_trustgraph_defaults() {
        let service = Service::from_spec(&FIRST);
        assert_eq!(service.request_queue(), "non-persistent://tg/request/one");
        assert_eq!(service.response_queue(), "non-persistent://tg/response/one");
        assert_eq!(service.subscription(), "first-request");
        assert_eq!(service.concurrency(), None);
        let custom = Service::from_spec(&CUSTOM);
        assert_eq!(custom.request_queue(), "persistent://acme/tools/in");
        assert_eq!(custom.response_queue(), "persistent://acme/tools/out");
        assert_eq!(custom.subscription(), "workers");
        assert_eq!(custom.concurrency(), Some(8));
        assert_eq!(custom.timeout(), Some(std::time::Duration::from_secs(5)));
        assert_eq!(service.timeout(), None);
        assert_eq!(custom.scopes(), ["tickets:write", "openid"]);
        assert!(service.scopes().is_empty());
        assert_eq!(custom.defined_at(), "tests::f (src/x.rs:4)");
    }

    #[test]
    fn duplicates_are_reported_with_both_definitions() {
        let error =
            Registry::from_services(services(&[&FIRST, &SAME_ID, &SAME_QUEUE])).unwrap_err();
        let problems: Vec<String> = error.problems().iter().map(ToString::to_string).collect();
        assert_eq!(
            problems,
            [
                "service id `first` is defined twice: by tests::f (src/x.rs:1) and by tests::f (src/x.rs:2)",
                "tool name `first-tool` is defined twice: by tests::f (src/x.rs:1) and by tests::f (src/x.rs:2)",
                "request queue `non-persistent://tg/request/one` is used twice: by tests::f (src/x.rs:1) and by tests::f (src/x.rs:3)",
            ]
        );
    }

    #[test]
    fn selection_is_every_service_or_those_named_and_refuses_the_rest() {
        let registry = Registry::from_services(services(&[&CUSTOM, &FIRST])).unwrap();
        let ids = |selected: Vec<Service>| -> Vec<&'static str> {
            selected.iter().map(|service| service.id()).collect()
        };
        assert_eq!(ids(registry.select(&[]).unwrap()), ["custom", "first"]);
        let named = [String::from("first"), String::from("custom")];
        assert_eq!(ids(registry.select(&named).unwrap()), ["first", "custom"]);
        let unknown = registry.select(&[String::from("frist")]).unwrap_err();
        assert_eq!(
            unknown,
            SelectError::UnknownService {
                id: String::from("frist"),
                known: crate::names::list(["custom", "first"]),
            }
        );
        let empty = Registry::from_services([])
            .unwrap()
            .select(&[])
            .unwrap_err();
        assert_eq!(empty, SelectError::NothingToServe);
        assert!(
            empty.to_string().contains("add `use my_tools as _;`"),
            "{empty}"
        );
    }

    #[test]
    fn lookups_find_services_and_tools() {
        let registry = Registry::from_services(services(&[&CUSTOM, &FIRST])).unwrap();
        let ids: Vec<&str> = registry
            .services()
            .iter()
            .map(|service| service.id())
            .collect();
        assert_eq!(ids, ["custom", "first"]);
        assert!(registry.service("first").is_some());
        assert!(registry.service("missing").is_none());
        let (service, tool) = registry.tool("first-tool").unwrap();
        assert_eq!(
            (service.id(), tool.description.as_str()),
            ("first", "First.")
        );
        assert_eq!(
            registry.service_descriptor("custom").unwrap().request_queue,
            "persistent://acme/tools/in"
        );
    }

    #[tokio::test]
    async fn calls_reach_the_handler_and_unknown_names_are_listed() {
        let registry = Registry::from_services(services(&[&FIRST])).unwrap();
        let frames = registry
            .call("first-tool", "id-1", Request::default())
            .await
            .unwrap();
        assert_eq!(frames, [Frame::last(Ok("ok".into()))]);
        let error = registry
            .call("nope", "id-2", Request::default())
            .await
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            "no tool or service named `nope` in this binary (known: first-tool, first)"
        );
    }
}
