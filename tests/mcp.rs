//! MCP with rmcp's own client, in-process over `tokio::io::duplex`: what a
//! client lists and gets for each kind of tool, failures, progress,
//! cancellation, the concurrency bound and the drain. No broker is needed:
//! MCP calls take the same in-process request path as `call`.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, ClientRequest,
    ProgressNotificationParam,
};
use rmcp::service::{NotificationContext, PeerRequestOptions, RunningService};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{json, Value};
use tokio::sync::mpsc;
use tool_service::host::{Host, HostOptions, Running, Transports};
use tool_service::mcp::{HttpTransport, McpOptions, McpServer, SchemaFlavor, NO_OUTPUT};
use tool_service::{tool_service, Chunks, Context, Registry, StreamClosed, ToolError};

/// Tell a joke on a given topic.
///
/// # Arguments
/// * `topic` - The topic for the joke.
/// * `count` - How many jokes.
#[tool_service(
    topic = "mcp-joke",
    tool(name = "tell-pun", description = "Tell a pun", config(style = "pun")),
    tool(
        name = "tell-dad-joke",
        description = "Tell a dad joke",
        config(style = "dad")
    )
)]
async fn joke(#[config_param] style: String, topic: String, count: Option<u8>) -> String {
    format!("a {style} about {topic} (x{})", count.unwrap_or(1))
}

/// Who is asking.
#[derive(Debug, Serialize, JsonSchema)]
struct Identity {
    /// The request id.
    request: String,
    /// The user, when known.
    user: Option<String>,
}

/// Say which request this is.
#[tool_service(topic = "mcp-whoami")]
async fn whoami(#[context] ctx: Context) -> Identity {
    Identity {
        request: ctx.request_id().to_owned(),
        user: ctx.user().map(str::to_owned),
    }
}

/// List the first numbers.
///
/// # Arguments
/// * `n` - How many.
#[tool_service(topic = "mcp-numbers")]
async fn numbers(n: u32) -> Vec<u32> {
    (1..=n).collect()
}

/// Do nothing.
#[tool_service(topic = "mcp-nothing")]
async fn nothing() {}

/// Manage notes.
///
/// # Arguments
/// * `id` - The note.
#[tool_service(
    topic = "mcp-notes",
    annotations(destructive, open_world = false),
    tool(
        name = "delete-note",
        title = "Delete a note",
        config(mode = "delete"),
        annotations(idempotent)
    ),
    tool(
        name = "read-note",
        title = "Read a note",
        config(mode = "read"),
        annotations(read_only)
    ),
    tool(
        name = "touch-note",
        config(mode = "touch"),
        annotations(destructive = false, idempotent = false)
    )
)]
async fn notes(#[config_param] mode: String, id: u32) -> String {
    format!("{mode} {id}")
}

/// Search the web.
///
/// # Arguments
/// * `query` - What to look for.
#[tool_service(
    topic = "mcp-web-search",
    annotations(read_only = true, open_world = true),
    tool(title = "Web search")
)]
async fn web_search(query: String) -> String {
    query
}

/// Always fail.
#[tool_service(topic = "mcp-fail")]
async fn fail() -> Result<String, ToolError> {
    Err(ToolError::with_type(
        "quota-exceeded",
        "the quota for today is used up",
    ))
}

/// Always panic.
#[tool_service(topic = "mcp-panic")]
async fn panic_now() -> String {
    panic!("boom")
}

/// Tell a story in chapters.
///
/// # Arguments
/// * `chapters` - How many chapters.
#[tool_service(topic = "mcp-story")]
async fn story(chapters: u8, #[stream] out: &Chunks) -> Result<String, StreamClosed> {
    for chapter in 1..=chapters {
        out.send(format!("Chapter {chapter}. ")).await?;
    }
    Ok(String::from("The end."))
}

static HOLD_STARTED: AtomicUsize = AtomicUsize::new(0);
static HOLD_DROPPED: AtomicBool = AtomicBool::new(false);
static HOLD_RUNNING: AtomicUsize = AtomicUsize::new(0);
static HOLD_MOST: AtomicUsize = AtomicUsize::new(0);
static HOLD_COMPLETED: AtomicBool = AtomicBool::new(false);

/// Marks the handler dropped.
struct Dropped;

impl Drop for Dropped {
    fn drop(&mut self) {
        HOLD_RUNNING.fetch_sub(1, Ordering::SeqCst);
        HOLD_DROPPED.store(true, Ordering::SeqCst);
    }
}

/// Wait for a while.
///
/// # Arguments
/// * `ms` - How long, in milliseconds.
#[tool_service(topic = "mcp-hold", concurrency = 1, timeout = "300ms")]
async fn hold(ms: u64) -> String {
    HOLD_STARTED.fetch_add(1, Ordering::SeqCst);
    let running = HOLD_RUNNING.fetch_add(1, Ordering::SeqCst) + 1;
    HOLD_MOST.fetch_max(running, Ordering::SeqCst);
    let _dropped = Dropped;
    tokio::time::sleep(Duration::from_millis(ms)).await;
    HOLD_COMPLETED.store(true, Ordering::SeqCst);
    format!("held {ms} ms")
}

/// The tests that call `hold` take turns: they count its calls.
static HOLDING: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Answer, three times a minute at most.
#[tool_service(topic = "mcp-limited", rate = "3/m")]
async fn limited() -> &'static str {
    "answered"
}

/// A client that passes progress notifications on.
struct Client {
    progress: mpsc::UnboundedSender<ProgressNotificationParam>,
}

impl ClientHandler for Client {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.progress.send(params);
    }
}

struct Connected {
    client: RunningService<RoleClient, Client>,
    progress: mpsc::UnboundedReceiver<ProgressNotificationParam>,
    server: McpServer,
}

async fn connect() -> Connected {
    connect_with(|_| {}, |_| {}).await
}

async fn connect_with(
    configure: impl FnOnce(&mut McpOptions),
    host: impl FnOnce(&mut HostOptions),
) -> Connected {
    let registry = Arc::new(Registry::collect().unwrap());
    let mut options = McpOptions::new("mcp-tests", "1.2.3");
    configure(&mut options);
    let mut host_options = HostOptions::default();
    host(&mut host_options);
    let server = McpServer::new(Host::new(registry, &host_options).unwrap(), options);
    let (server_end, client_end) = tokio::io::duplex(1 << 16);
    let serving = server.clone();
    tokio::spawn(async move {
        let running = serving.serve(server_end).await.unwrap();
        let _ = running.waiting().await;
    });
    let (sender, progress) = mpsc::unbounded_channel();
    let client = Client { progress: sender }.serve(client_end).await.unwrap();
    Connected {
        client,
        progress,
        server,
    }
}

async fn call(connected: &Connected, name: &str, arguments: Value) -> CallToolResult {
    let mut params = CallToolRequestParams::new(name.to_owned());
    if let Value::Object(arguments) = arguments {
        params = params.with_arguments(arguments);
    }
    tokio::time::timeout(Duration::from_secs(10), connected.client.call_tool(params))
        .await
        .expect("an answer within 10 s")
        .expect("a result, not a protocol error")
}

fn text(result: &CallToolResult) -> String {
    let content = serde_json::to_value(&result.content).unwrap();
    assert_eq!(content.as_array().unwrap().len(), 1, "{content}");
    assert_eq!(content[0]["type"], "text", "{content}");
    content[0]["text"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn the_server_names_itself_and_lists_one_tool_per_trustgraph_tool() {
    let connected = connect().await;
    let info = connected.client.peer_info().unwrap();
    let server = serde_json::to_value(&info.server_info).unwrap();
    assert_eq!(server["name"], "mcp-tests");
    assert_eq!(server["version"], "1.2.3");
    let tools = connected.client.list_all_tools().await.unwrap();
    let mut names: Vec<&str> = tools.iter().map(|tool| tool.name.as_ref()).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "delete-note",
            "fail",
            "hold",
            "limited",
            "nothing",
            "numbers",
            "panic-now",
            "read-note",
            "story",
            "tell-dad-joke",
            "tell-pun",
            "touch-note",
            "web-search",
            "whoami"
        ]
    );
    let pun = tools.iter().find(|tool| tool.name == "tell-pun").unwrap();
    assert_eq!(pun.description.as_deref(), Some("Tell a pun"));
    let schema = Value::Object((*pun.input_schema).clone());
    // The MCP specification's dialect, as schemars writes it, in the
    // forms every provider's MCP client takes (no `$schema`, an `Option` as
    // `anyOf` with `null`, described on its type), with the description
    // the `tool` descriptor gives the agent; the preset's config is not an
    // argument at all.
    assert_eq!(
        schema,
        json!({
            "type": "object",
            "properties": {
                "topic": {"type": "string", "description": "The topic for the joke."},
                "count": {"anyOf": [
                    {
                        "type": "integer",
                        "format": "uint8",
                        "minimum": 0,
                        "maximum": 255,
                        "description": "How many jokes. Optional. From 0 to 255."
                    },
                    {"type": "null"}
                ]}
            },
            "required": ["topic"]
        })
    );
    assert!(
        pun.output_schema.is_none(),
        "a text tool has no output schema"
    );
    let whoami = tools.iter().find(|tool| tool.name == "whoami").unwrap();
    let output = Value::Object((*whoami.output_schema.clone().unwrap()).clone());
    assert_eq!(output["type"], "object");
    assert_eq!(output["properties"]["request"]["type"], "string");
    assert!(output.get("$schema").is_none());
    // A list's schema, wrapped as `{"result": …}`: structured content is
    // an object.
    let numbers = tools.iter().find(|tool| tool.name == "numbers").unwrap();
    let output = Value::Object((*numbers.output_schema.clone().unwrap()).clone());
    assert_eq!(output["type"], "object");
    assert_eq!(output["required"], json!(["result"]));
    assert_eq!(output["properties"]["result"]["type"], "array");
}

/// `annotations(…)` on the attribute holds for every tool of the service,
/// a preset's own hints win hint by hint (a preset that makes itself
/// read-only drops the service's write hints), a preset's `title` is the
/// tool's name for people, and a tool with none has no annotations.
#[tokio::test]
async fn annotations_and_titles_reach_tools_list() {
    let server = connect().await.server;
    let served = |name: &str| {
        let tool = server.tool(name).unwrap();
        let annotations = tool.annotations.map(|annotations| {
            (
                annotations.title,
                annotations.read_only_hint,
                annotations.destructive_hint,
                annotations.idempotent_hint,
                annotations.open_world_hint,
            )
        });
        (tool.title, annotations)
    };
    let title = |text: &str| Some(text.to_owned());
    assert_eq!(
        served("delete-note"),
        (
            title("Delete a note"),
            Some((
                title("Delete a note"),
                None,
                Some(true),
                Some(true),
                Some(false)
            ))
        )
    );
    assert_eq!(
        served("read-note"),
        (
            title("Read a note"),
            Some((title("Read a note"), Some(true), None, None, Some(false)))
        )
    );
    assert_eq!(
        served("touch-note"),
        (
            None,
            Some((None, None, Some(false), Some(false), Some(false)))
        )
    );
    assert_eq!(
        served("web-search"),
        (
            title("Web search"),
            Some((title("Web search"), Some(true), None, None, Some(true)))
        )
    );
    assert_eq!(served("nothing"), (None, None));
    // A tool with no arguments: an empty object, with no text of ours for
    // the model to read.
    let nothing = server.tool("nothing").unwrap();
    assert_eq!(
        Value::Object((*nothing.input_schema).clone()),
        json!({"type": "object", "properties": {}})
    );
}

#[tokio::test]
async fn the_portable_flavour_serves_what_strict_providers_take() {
    let connected = connect_with(
        |options| options.schema_flavor = SchemaFlavor::Portable,
        |_| {},
    )
    .await;
    let tools = connected.client.list_all_tools().await.unwrap();
    let pun = tools.iter().find(|tool| tool.name == "tell-pun").unwrap();
    // No dialect, no lists of types, no formats providers refuse, an
    // open object (strict converters close it themselves); the optional
    // argument is not required, and may be `null`.
    assert_eq!(
        Value::Object((*pun.input_schema).clone()),
        json!({
            "type": "object",
            "properties": {
                "topic": {"type": "string", "description": "The topic for the joke."},
                "count": {"anyOf": [
                    {
                        "type": "integer",
                        "minimum": 0,
                        "maximum": 255,
                        "description": "How many jokes. Optional. From 0 to 255."
                    },
                    {"type": "null"}
                ]}
            },
            "required": ["topic"]
        })
    );
    // Results are validated against the output schema, which keeps `null`
    // for an `Option`: the same in both flavours.
    let whoami = tools.iter().find(|tool| tool.name == "whoami").unwrap();
    let output = Value::Object((*whoami.output_schema.clone().unwrap()).clone());
    let spec = connect().await.client.list_all_tools().await.unwrap();
    let spec = spec.iter().find(|tool| tool.name == "whoami").unwrap();
    assert_eq!(
        output,
        Value::Object((*spec.output_schema.clone().unwrap()).clone())
    );
}

#[tokio::test]
async fn each_tool_gets_its_preset_config_applied_server_side() {
    let connected = connect().await;
    let pun = call(&connected, "tell-pun", json!({"topic": "cats"})).await;
    assert_eq!(text(&pun), "a pun about cats (x1)");
    assert_eq!(pun.structured_content, None, "text only");
    assert_eq!(pun.is_error, Some(false));
    let dad = call(
        &connected,
        "tell-dad-joke",
        json!({"topic": "cats", "count": 2}),
    )
    .await;
    assert_eq!(text(&dad), "a dad about cats (x2)");
}

#[tokio::test]
async fn an_object_result_is_structured_content_and_its_json_text() {
    let connected = connect().await;
    let result = call(&connected, "whoami", json!({})).await;
    let structured = result.structured_content.clone().unwrap();
    assert_eq!(structured["user"], Value::Null);
    assert!(!structured["request"].as_str().unwrap().is_empty());
    let text: Value = serde_json::from_str(&text(&result)).unwrap();
    assert_eq!(text, structured);
    // A list is its JSON text, and structured content `{"result": …}`
    // (structured content is an object).
    let list = call(&connected, "numbers", json!({"n": 3})).await;
    assert_eq!(text_of(&list), "[1,2,3]");
    assert_eq!(list.structured_content, Some(json!({"result": [1, 2, 3]})));
}

fn text_of(result: &CallToolResult) -> String {
    text(result)
}

#[tokio::test]
async fn nothing_returned_is_never_an_empty_text() {
    let connected = connect().await;
    let result = call(&connected, "nothing", json!({})).await;
    assert_eq!(text(&result), NO_OUTPUT);
    assert_eq!(result.is_error, Some(false));
}

#[tokio::test]
async fn failures_are_tool_errors_with_the_pulsar_frames_message() {
    let connected = connect().await;
    let registry = Registry::collect().unwrap();
    let cases = [
        ("fail", json!({})),
        ("panic-now", json!({})),
        ("tell-pun", json!({"topic": 5})),
        ("tell-pun", json!({})),
        ("numbers", json!({"n": -1})),
    ];
    for (name, arguments) in cases {
        let result = call(&connected, name, arguments.clone()).await;
        assert_eq!(result.is_error, Some(true), "{name} {arguments}");
        // The same message `call` (and so the Pulsar error frame) carries.
        let request = tool_service::wire::Request::new(json!({}), arguments.clone());
        let frames = registry.call(name, "r", request).await.unwrap();
        let error = frames.last().unwrap().error.clone().unwrap();
        assert_eq!(text(&result), error.message(), "{name} {arguments}");
    }
    let result = call(&connected, "fail", json!({})).await;
    assert_eq!(text(&result), "the quota for today is used up");
    let result = call(&connected, "panic-now", json!({})).await;
    assert_eq!(text(&result), "the tool handler panicked: boom");
}

#[tokio::test]
async fn an_unknown_tool_is_a_protocol_error_naming_the_tools() {
    let connected = connect().await;
    let error = connected
        .client
        .call_tool(CallToolRequestParams::new("tell-no-joke"))
        .await
        .unwrap_err()
        .to_string();
    assert!(error.contains("-32602"), "{error}");
    assert!(
        error.contains("there is no tool `tell-no-joke` on this server"),
        "{error}"
    );
    assert!(error.contains("`tell-pun`"), "{error}");
    // The session goes on.
    let pun = call(&connected, "tell-pun", json!({"topic": "dogs"})).await;
    assert_eq!(text(&pun), "a pun about dogs (x1)");
}

#[tokio::test]
async fn a_stream_sends_its_chunks_as_progress_and_the_whole_text_at_the_end() {
    let mut connected = connect().await;
    let result = call(&connected, "story", json!({"chapters": 3})).await;
    assert_eq!(text(&result), "Chapter 1. Chapter 2. Chapter 3. The end.");
    let mut seen = Vec::new();
    while let Ok(Some(progress)) =
        tokio::time::timeout(Duration::from_millis(500), connected.progress.recv()).await
    {
        seen.push((progress.progress, progress.message.unwrap_or_default()));
        if seen.len() == 3 {
            break;
        }
    }
    assert_eq!(
        seen,
        [
            (1.0, String::from("Chapter 1. ")),
            (2.0, String::from("Chapter 2. ")),
            (3.0, String::from("Chapter 3. ")),
        ]
    );
}

#[tokio::test]
async fn a_call_past_its_timeout_is_cancelled_and_answered_with_the_timeout_error() {
    let _turn = HOLDING.lock().await;
    let connected = connect().await;
    HOLD_DROPPED.store(false, Ordering::SeqCst);
    let result = call(&connected, "hold", json!({"ms": 5000})).await;
    assert_eq!(result.is_error, Some(true));
    assert_eq!(
        text(&result),
        "the tool handler did not finish within 300ms and was cancelled"
    );
    assert!(HOLD_DROPPED.load(Ordering::SeqCst));
}

#[tokio::test]
async fn a_call_the_client_cancels_drops_the_handler() {
    let _turn = HOLDING.lock().await;
    let connected = connect().await;
    HOLD_DROPPED.store(false, Ordering::SeqCst);
    let started = HOLD_STARTED.load(Ordering::SeqCst);
    let mut params = CallToolRequestParams::new("hold");
    params = params.with_arguments(json!({"ms": 250}).as_object().unwrap().clone());
    let handle = connected
        .client
        .send_cancellable_request(
            ClientRequest::CallToolRequest(CallToolRequest::new(params)),
            PeerRequestOptions::no_options(),
        )
        .await
        .unwrap();
    wait_for("the handler to start", || {
        HOLD_STARTED.load(Ordering::SeqCst) > started
    })
    .await;
    assert!(!HOLD_DROPPED.load(Ordering::SeqCst));
    handle
        .cancel(Some("the user gave up".into()))
        .await
        .unwrap();
    wait_for("the handler to be dropped", || {
        HOLD_DROPPED.load(Ordering::SeqCst)
    })
    .await;
    assert_eq!(connected.server.host().in_flight(), 0);
}

#[tokio::test]
async fn calls_of_one_service_stay_within_its_concurrency() {
    let _turn = HOLDING.lock().await;
    let connected = connect().await;
    HOLD_MOST.store(0, Ordering::SeqCst);
    let calls = (0..3).map(|_| call(&connected, "hold", json!({"ms": 50})));
    for result in futures_util::future::join_all(calls).await {
        assert_eq!(text(&result), "held 50 ms");
    }
    assert_eq!(HOLD_MOST.load(Ordering::SeqCst), 1, "concurrency = 1");
}

#[tokio::test]
async fn the_drain_lets_calls_in_flight_finish_and_refuses_new_ones() {
    let _turn = HOLDING.lock().await;
    let connected = connect().await;
    let started = HOLD_STARTED.load(Ordering::SeqCst);
    let running = call(&connected, "hold", json!({"ms": 200}));
    let drain = async {
        wait_for("the call to start", || {
            HOLD_STARTED.load(Ordering::SeqCst) > started
        })
        .await;
        assert_eq!(connected.server.host().in_flight(), 1);
        let drained = connected.server.host().drain(Duration::from_secs(5)).await;
        let refused = call(&connected, "tell-pun", json!({"topic": "late"})).await;
        (drained, refused)
    };
    let (result, (drained, refused)) = tokio::join!(running, drain);
    assert_eq!(text(&result), "held 200 ms");
    assert!(drained);
    assert_eq!(refused.is_error, Some(true));
    assert_eq!(text(&refused), "the service is shutting down; try again");
}

#[tokio::test]
async fn over_the_memory_budget_a_call_is_answered_overloaded_and_a_large_one_runs_alone() {
    let _turn = HOLDING.lock().await;
    // Less than one call's arguments: a call runs only alone.
    let connected = connect_with(|_| {}, |host| host.memory_budget = 8).await;
    let started = HOLD_STARTED.load(Ordering::SeqCst);
    let running = call(&connected, "hold", json!({"ms": 300}));
    let refused = async {
        wait_for("the call to start", || {
            HOLD_STARTED.load(Ordering::SeqCst) > started
        })
        .await;
        call(&connected, "tell-pun", json!({"topic": "memory"})).await
    };
    let (answered, refused) = tokio::join!(running, refused);
    assert_eq!(text(&answered), "held 300 ms");
    assert_eq!(refused.is_error, Some(true));
    let refusal = text(&refused);
    assert!(
        refusal.starts_with("the service holds as many requests as its memory budget allows (")
            && refusal.ends_with(" of 8 bytes); try again later"),
        "{refusal}"
    );
    // Alone again: answered.
    let alone = call(&connected, "tell-pun", json!({"topic": "memory"})).await;
    assert_eq!(alone.is_error, Some(false), "{alone:?}");
}

#[tokio::test]
async fn a_burst_over_the_rate_limit_is_partly_refused_as_tool_errors_that_say_when_to_retry() {
    let connected = connect().await;
    let calls = (0..5).map(|_| call(&connected, "limited", json!({})));
    let results = futures_util::future::join_all(calls).await;
    let answered = results
        .iter()
        .filter(|result| result.is_error != Some(true));
    assert_eq!(answered.count(), 3, "{results:?}");
    for refused in results
        .iter()
        .filter(|result| result.is_error == Some(true))
    {
        let text = text(refused);
        assert!(
            text.starts_with(
                "the service is called more often than its limit of 3 calls per minute; try again in "
            ),
            "{text}"
        );
    }
    let metrics = connected.server.host().metrics().render();
    assert!(
        metrics.contains(
            "tg_tool_service_errors_total{processor=\"mcp-limited-service\",transport=\"mcp\",type=\"rate-limited\"} 2\n"
        ),
        "{metrics}"
    );
    assert!(
        metrics.contains(
            "tg_dynamic_tool_service_invocation_total{processor=\"mcp-limited-service\",transport=\"mcp\"} 3\n"
        ),
        "{metrics}"
    );
}

async fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    for _ in 0..500 {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("waited 5 s for {what}");
}

/// One HTTP/1.1 request on a connection of its own (`Connection: close`):
/// the response, read to its end.
async fn http_post(address: std::net::SocketAddr, headers: &str, body: &Value) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    stream
        .write_all(raw_request(address, headers, body).as_bytes())
        .await
        .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    response
}

/// The headers of a client on the 2025-11-25 wire (after `initialize`).
const WIRE_2025: &str = "MCP-Protocol-Version: 2025-11-25\r\n";

/// `headers`: more header lines, each ending in CRLF.
fn raw_request(address: std::net::SocketAddr, headers: &str, body: &Value) -> String {
    let body = body.to_string();
    format!(
        "POST /mcp HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\n{headers}\
         Connection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

/// Serves every tool over HTTP on a port of its own, with `options`: its
/// address, and the transport running (until dropped).
async fn serve_http_on_any_port(
    options: tool_service::mcp::HttpOptions,
) -> (std::net::SocketAddr, Running) {
    let registry = Arc::new(Registry::collect().unwrap());
    let host = Host::new(registry, &HostOptions::default()).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let mut running = Transports::new(host)
        .with(HttpTransport::new(listener, options))
        .start()
        .await
        .unwrap();
    running.ready().await.unwrap();
    (address, running)
}

/// The JSON-RPC answer in an HTTP response (plain JSON or one SSE event).
fn answer_of(response: &str) -> Value {
    let body = response.split("\r\n\r\n").nth(1).unwrap_or_default();
    let json = body
        .lines()
        .find_map(|line| line.strip_prefix("data: "))
        .filter(|data| !data.is_empty())
        .unwrap_or(body);
    serde_json::from_str(json.trim()).unwrap_or_else(|error| panic!("{error}: {response}"))
}

#[tokio::test]
async fn a_container_on_this_machine_reaches_the_server_by_the_hosts_names_for_it() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let (address, _running) = serve_http_on_any_port(Default::default()).await;
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"}}})
    .to_string();
    let port = address.port();
    for (host, answered) in [
        (format!("host.docker.internal:{port}"), true),
        (format!("host.containers.internal:{port}"), true),
        ("HOST.DOCKER.INTERNAL".to_owned(), true),
        (format!("host.docker.internal.evil.example:{port}"), false),
        (format!("joke-tools:{port}"), false),
    ] {
        let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
        let request = format!(
            "POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nConnection: close\r\n\
             Content-Length: {}\r\n\r\n{initialize}",
            initialize.len()
        );
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).await.unwrap();
        if answered {
            assert!(response.contains("\"serverInfo\""), "{host}: {response}");
        } else {
            assert!(
                response.starts_with("HTTP/1.1 403") && response.contains("--mcp-allowed-host"),
                "{host}: {response}"
            );
        }
    }
}

#[tokio::test]
async fn lists_carry_cache_hints_on_the_2026_wire_private_when_the_request_had_a_token() {
    let (open, _open) = serve_http_on_any_port(Default::default()).await;
    let (guarded, _guarded) =
        serve_http_on_any_port(tool_service::mcp::HttpOptions::default().with_token("s3cret"))
            .await;
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}});
    let list = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/list",
                      "params": {"_meta": meta}});
    let discover = json!({"jsonrpc": "2.0", "id": 8, "method": "server/discover",
                          "params": {"_meta": meta}});
    let headers_2026 = |method: &str, token: bool| {
        let authorization = if token {
            "Authorization: Bearer s3cret\r\n"
        } else {
            ""
        };
        format!("MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: {method}\r\n{authorization}")
    };
    let hints = |answer: &Value| {
        let result = &answer["result"];
        (result["ttlMs"].clone(), result["cacheScope"].clone())
    };

    let answer = answer_of(&http_post(open, &headers_2026("tools/list", false), &list).await);
    assert!(answer["result"]["tools"]
        .as_array()
        .is_some_and(|tools| !tools.is_empty()));
    assert_eq!(hints(&answer), (json!(60_000), json!("public")), "{answer}");
    let answer = answer_of(&http_post(guarded, &headers_2026("tools/list", true), &list).await);
    assert_eq!(
        hints(&answer),
        (json!(60_000), json!("private")),
        "{answer}"
    );
    let answer =
        answer_of(&http_post(open, &headers_2026("server/discover", false), &discover).await);
    assert_eq!(hints(&answer), (json!(60_000), json!("public")), "{answer}");
    let answer =
        answer_of(&http_post(guarded, &headers_2026("server/discover", true), &discover).await);
    assert_eq!(
        hints(&answer),
        (json!(60_000), json!("private")),
        "{answer}"
    );

    // Older revisions get the result shape they know.
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"}}});
    http_post(open, WIRE_2025, &initialize).await;
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let answer = answer_of(&http_post(open, WIRE_2025, &list).await);
    assert!(answer["result"]["tools"].is_array(), "{answer}");
    assert_eq!(hints(&answer), (Value::Null, Value::Null), "{answer}");
}

#[tokio::test]
async fn over_http_a_client_that_disconnects_mid_call_has_its_handler_dropped() {
    use tokio::io::AsyncWriteExt;
    let _turn = HOLDING.lock().await;
    let (address, running) = serve_http_on_any_port(Default::default()).await;
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"}}});
    let response = http_post(address, WIRE_2025, &initialize).await;
    // No session: each request stands on its own, on any replica.
    assert!(response.contains("\"serverInfo\""), "{response}");
    assert!(
        !response.to_ascii_lowercase().contains("mcp-session-id"),
        "{response}"
    );
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    http_post(address, WIRE_2025, &initialized).await;

    HOLD_DROPPED.store(false, Ordering::SeqCst);
    HOLD_COMPLETED.store(false, Ordering::SeqCst);
    let started = HOLD_STARTED.load(Ordering::SeqCst);
    // Well within the service's 300 ms timeout, and long enough to tell a
    // drop from an end.
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                      "params": {"name": "hold", "arguments": {"ms": 280}}});
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    stream
        .write_all(raw_request(address, WIRE_2025, &call).as_bytes())
        .await
        .unwrap();
    wait_for("the handler to start", || {
        HOLD_STARTED.load(Ordering::SeqCst) > started
    })
    .await;
    assert_eq!(running.host().in_flight(), 1);
    drop(stream);
    wait_for("the handler to be dropped", || {
        HOLD_DROPPED.load(Ordering::SeqCst)
    })
    .await;
    wait_for("no call in flight", || running.host().in_flight() == 0).await;
    // Dropped, not run to its end.
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert!(
        !HOLD_COMPLETED.load(Ordering::SeqCst),
        "the handler ran to its end"
    );
}

#[tokio::test]
async fn a_refusal_before_the_body_is_read_says_the_connection_closes_and_an_answer_keeps_it() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let (address, _running) =
        serve_http_on_any_port(tool_service::mcp::HttpOptions::default().with_token("s3cret"))
            .await;
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"}}})
    .to_string();
    let head = |authorization: &str| {
        format!(
            "POST /mcp HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\n{authorization}\
             Content-Length: {}\r\n\r\n",
            initialize.len()
        )
    };
    // The head, then the body a moment later (as a client may send them):
    // the refusal goes out before the body arrives, which hyper would take
    // as a reason to close the connection after it, silently. A client
    // that sent its retry on it would lose it.
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    stream.write_all(head("").as_bytes()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    stream.write_all(initialize.as_bytes()).await.unwrap();
    let mut refused = String::new();
    stream.read_to_string(&mut refused).await.unwrap();
    assert!(refused.starts_with("HTTP/1.1 401"), "{refused}");
    assert!(
        refused
            .to_ascii_lowercase()
            .contains("\r\nconnection: close\r\n"),
        "{refused}"
    );
    // Let through, the body is read and the connection kept.
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    let request = head("Authorization: Bearer s3cret\r\n") + &initialize;
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answered = vec![0; 64 * 1024];
    let read = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut answered))
        .await
        .expect("an answer")
        .unwrap();
    let answered = String::from_utf8_lossy(&answered[..read]);
    assert!(answered.starts_with("HTTP/1.1 200"), "{answered}");
    assert!(
        !answered.to_ascii_lowercase().contains("connection: close"),
        "{answered}"
    );
}

/// The status, `Content-Type` and JSON-RPC answer of an HTTP response.
fn status_type_answer(response: &str) -> (String, String, Option<Value>) {
    let status = response.lines().next().unwrap_or_default().to_owned();
    let content_type = response
        .split("\r\n\r\n")
        .next()
        .unwrap_or_default()
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("content-type")
                .then(|| value.trim().to_owned())
        })
        .unwrap_or_default();
    let has_body = !response
        .split("\r\n\r\n")
        .nth(1)
        .unwrap_or_default()
        .trim()
        .is_empty();
    (status, content_type, has_body.then(|| answer_of(response)))
}

#[tokio::test]
async fn the_requests_answered_directly_get_the_answers_rmcp_gives() {
    let (address, _running) = serve_http_on_any_port(Default::default()).await;
    let initialize = |version: &str| {
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": version, "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"}}})
    };
    let call = |id: Value, name: &str, arguments: Value| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"name": name, "arguments": arguments}})
    };
    let with_version = |version: &str| format!("MCP-Protocol-Version: {version}\r\n");
    let mut cases = vec![
        (String::new(), initialize("2025-11-25")),
        (String::new(), initialize("2025-06-18")),
        (String::new(), initialize("2025-03-26")),
        (String::new(), initialize("2024-11-05")),
        (String::new(), initialize("2031-01-01")),
        (with_version("2025-06-18"), initialize("2025-06-18")),
        (
            String::new(),
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        ),
        (
            WIRE_2025.to_owned(),
            json!({"jsonrpc": "2.0", "id": "p", "method": "ping"}),
        ),
        (
            String::new(),
            json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}),
        ),
    ];
    for version in ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"] {
        cases.push((
            with_version(version),
            json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list", "params": {}}),
        ));
    }
    for (id, name, arguments) in [
        (json!(5), "tell-pun", json!({"topic": "cats"})),
        (
            json!("a-string-id"),
            "tell-pun",
            json!({"topic": "dogs", "count": 2}),
        ),
        (json!(6), "whoami", json!({})),
        (json!(7), "numbers", json!({"n": 3})),
        (json!(8), "nothing", json!({})),
        (json!(9), "fail", json!({})),
        (json!(10), "tell-pun", json!({})),
        (json!(11), "tell-pun", json!({"topic": 7})),
        (json!(12), "no-such-tool", json!({})),
        (
            json!(9_007_199_254_740_993_i64),
            "web-search",
            json!({"query": "q"}),
        ),
    ] {
        cases.push((WIRE_2025.to_owned(), call(id, name, arguments)));
    }
    for (headers, body) in cases {
        let method = body["method"].as_str().unwrap().to_owned();
        let direct = status_type_answer(&http_post(address, &headers, &body).await);
        // `Mcp-Method` sends a request rmcp's way (it checks the header
        // against the body).
        let rmcps = format!("{headers}Mcp-Method: {method}\r\n");
        let rmcp = status_type_answer(&http_post(address, &rmcps, &body).await);
        assert_eq!(direct.0, rmcp.0, "the status of {body}");
        assert_eq!(direct.2, rmcp.2, "the answer to {body}");
        if body.get("id").is_some() {
            assert_eq!(direct.1, "application/json", "{body}");
            assert_eq!(rmcp.1, "text/event-stream", "{body}");
        } else {
            assert_eq!(direct.0, "HTTP/1.1 202 Accepted", "{body}");
        }
    }
}

#[tokio::test]
async fn a_preflight_needs_no_token_and_runs_nothing_whatever_its_body_says() {
    let _turn = HOLDING.lock().await;
    let (address, _running) =
        serve_http_on_any_port(tool_service::mcp::HttpOptions::default().with_token("s3cret"))
            .await;
    let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                      "params": {"name": "hold", "arguments": {"ms": 1}}});
    let started = HOLD_STARTED.load(Ordering::SeqCst);
    let preflight = {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let request = raw_request(
            address,
            "Access-Control-Request-Method: POST\r\n\
             Access-Control-Request-Headers: authorization, content-type\r\n",
            &call,
        )
        .replacen("POST ", "OPTIONS ", 1);
        let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).await.unwrap();
        response
    };
    let status = preflight.lines().next().unwrap_or_default();
    assert!(
        !status.contains(" 401 "),
        "a preflight carries no token: {preflight}"
    );
    assert!(!preflight.contains("\"result\""), "{preflight}");
    assert_eq!(HOLD_STARTED.load(Ordering::SeqCst), started, "the tool ran");
    // The same call, posted with the token, runs it.
    let answer = answer_of(&http_post(address, "Authorization: Bearer s3cret\r\n", &call).await);
    assert_eq!(
        answer["result"]["content"][0]["text"], "held 1 ms",
        "{answer}"
    );
    assert_eq!(HOLD_STARTED.load(Ordering::SeqCst), started + 1);
}

/// A request whose `MCP-Protocol-Version` says 2026-07-28 but whose body
/// has the 2025 shape is refused, not read as the body's revision: the
/// header is what caches and balancers route on. Each refusal names what
/// the 2026 wire needs: the `Mcp-Method` header (−32020, which the
/// conformance suite's `http-header-validation` expects), then the
/// `_meta` fields.
#[tokio::test]
async fn a_2026_header_on_a_2025_body_is_refused_with_what_to_send() {
    let (address, _running) = serve_http_on_any_port(Default::default()).await;
    let list = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list"});
    let refused = |response: &str| {
        let (status, _, answer) = status_type_answer(response);
        assert!(status.contains(" 400 "), "{response}");
        let answer = answer.expect("a JSON-RPC error");
        assert_eq!(answer["id"], 4, "{answer}");
        (
            answer["error"]["code"].as_i64().unwrap(),
            answer["error"]["message"].as_str().unwrap().to_owned(),
        )
    };
    let (code, message) =
        refused(&http_post(address, "MCP-Protocol-Version: 2026-07-28\r\n", &list).await);
    assert_eq!(code, -32020);
    assert!(message.contains("Mcp-Method header"), "{message}");
    let (code, message) = refused(
        &http_post(
            address,
            "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/list\r\n",
            &list,
        )
        .await,
    );
    assert_eq!(code, -32602);
    for field in [
        "io.modelcontextprotocol/protocolVersion",
        "io.modelcontextprotocol/clientCapabilities",
    ] {
        assert!(message.contains(field), "{message}");
    }
    // The same body on the 2025 wire is answered.
    let answer = answer_of(&http_post(address, WIRE_2025, &list).await);
    assert!(answer["result"]["tools"].is_array(), "{answer}");
}
