//! `ToolClient` against a responder written with the raw Pulsar client, so
//! that it meets what no `serve` sends: a response that is not a frame,
//! frames for other callers, frames after the last one, and silence. Needs a
//! broker: `scripts/pulsar.sh start`.

use crate::support;

use std::collections::HashMap;
use std::time::Duration;

use futures_util::StreamExt;
use serde_json::json;
use tool_service::pulsar::broker::pulsar::{producer, Consumer, Producer, TokioExecutor};
use tool_service::pulsar::client::{CallError, ToolClient};
use tool_service::wire::{Frame, Request};

const REQUESTS: &str = "non-persistent://tg/request/it-client-raw";
const RESPONSES: &str = "non-persistent://tg/response/it-client-raw";

/// The requests the client publishes, and a producer of responses.
struct Responder {
    requests: Consumer<Vec<u8>, TokioExecutor>,
    responses: Producer<TokioExecutor>,
}

impl Responder {
    /// The id of the next request.
    async fn next_id(&mut self) -> String {
        let message = tokio::time::timeout(Duration::from_secs(30), self.requests.next())
            .await
            .expect("a request within 30 s")
            .unwrap()
            .unwrap();
        tool_service::pulsar::broker::message_id(&message)
            .expect("a request carries an id")
            .to_owned()
    }

    async fn answer(&mut self, id: &str, payload: Vec<u8>) {
        self.responses
            .send_non_blocking(producer::Message {
                payload,
                properties: HashMap::from([(String::from("id"), id.to_owned())]),
                ..Default::default()
            })
            .await
            .unwrap()
            .await
            .unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_takes_its_own_frames_up_to_the_last_and_names_a_broken_response() {
    let _suite = support::suite(module_path!());
    let pulsar = support::connect().await;
    let mut responder = Responder {
        requests: tool_service::pulsar::broker::subscribe_own(&pulsar, REQUESTS)
            .await
            .unwrap(),
        responses: pulsar
            .producer()
            .with_topic(RESPONSES)
            .build()
            .await
            .unwrap(),
    };
    let client = ToolClient::connect(&pulsar, REQUESTS, RESPONSES)
        .await
        .unwrap()
        .with_timeout(Duration::from_secs(10));
    let respond = async {
        // A frame for another caller first, then bytes that are no frame.
        let id = responder.next_id().await;
        responder
            .answer("someone-else", Frame::last(Ok("not yours".into())).encode())
            .await;
        responder.answer(&id, b"not a frame".to_vec()).await;
        // A chunk, the last frame, then a stray frame after the last.
        let id = responder.next_id().await;
        responder
            .answer(&id, Frame::chunk("a".into()).encode())
            .await;
        responder
            .answer(&id, Frame::last(Ok("b".into())).encode())
            .await;
        responder
            .answer(&id, Frame::last(Ok("late".into())).encode())
            .await;
        // A third request gets a normal answer: the stray frame went nowhere.
        let id = responder.next_id().await;
        responder
            .answer(&id, Frame::last(Ok("third".into())).encode())
            .await;
        // The fourth is never answered.
        responder.next_id().await;
    };
    let call = async {
        match client.call(&json!({}), &json!({})).await {
            Err(CallError::Tool(error)) => {
                assert_eq!(error.kind(), "invalid-response", "{error:?}");
                assert!(
                    error
                        .message()
                        .starts_with("the service sent a response that is not a frame: "),
                    "{error:?}"
                );
            }
            other => panic!("expected an invalid-response error, got {other:?}"),
        }
        let frames = client
            .send(&Request::new(json!({}), json!({})))
            .await
            .unwrap();
        assert_eq!(
            frames,
            [Frame::chunk("a".into()), Frame::last(Ok("b".into()))]
        );
        assert_eq!(client.call(&json!({}), &json!({})).await.unwrap(), "third");
        let silent = ToolClient::connect(&pulsar, REQUESTS, RESPONSES)
            .await
            .unwrap()
            .with_timeout(Duration::from_millis(500));
        match silent.call(&json!({}), &json!({})).await {
            Err(CallError::Timeout(after)) => assert_eq!(after, Duration::from_millis(500)),
            other => panic!("expected a timeout, got {other:?}"),
        }
    };
    tokio::join!(respond, call);
}

/// With tracing on, a request carries the context of the client's `send`
/// span, a child of the caller's current span: the service joins the
/// caller's trace. Without a current span, the call starts a trace.
#[test]
fn the_client_sends_the_context_of_the_callers_span() {
    let _suite = support::suite(module_path!());
    use opentelemetry::trace::TraceContextExt;
    use tracing_opentelemetry::OpenTelemetrySpanExt;
    use tracing_subscriber::layer::SubscriberExt;

    // Nothing listens on port 9: the spans are dropped, which is fine here.
    let otel = tool_service::otel::Otel::from_vars(|name| {
        (name == "OTEL_EXPORTER_OTLP_ENDPOINT").then(|| "http://127.0.0.1:9".to_owned())
    })
    .unwrap()
    .expect("an endpoint turns tracing on");
    // This thread's subscriber only, on a runtime of this thread only.
    let subscriber = tracing_subscriber::registry().with(otel.layer());
    let _default = tracing::subscriber::set_default(subscriber);
    // Callsites another test registered first are wanted here too.
    tracing::callsite::rebuild_interest_cache();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    const REQUESTS: &str = "non-persistent://tg/request/it-client-traced";
    const RESPONSES: &str = "non-persistent://tg/response/it-client-traced";
    runtime.block_on(async {
        let pulsar = support::connect().await;
        // The suite's other tests call clients on threads with no
        // subscriber: one that registered the `send` span's callsite while
        // this thread's subscriber was being set may have left it cached as
        // of no interest. Asked again now, every subscriber answers.
        tracing::callsite::rebuild_interest_cache();
        let mut requests = tool_service::pulsar::broker::subscribe_own(&pulsar, REQUESTS)
            .await
            .unwrap();
        let client = ToolClient::connect(&pulsar, REQUESTS, RESPONSES)
            .await
            .unwrap()
            .with_timeout(Duration::from_millis(300));
        let caller = tracing::info_span!("agent step");
        let trace_id = caller.context().span().span_context().trace_id();
        let caller_id = caller.context().span().span_context().span_id();
        let mut traceparents = Vec::new();
        let nothing = json!({});
        for in_span in [true, false] {
            // Again just before the call: the suite's other threads keep
            // registering callsites while this test runs.
            tracing::callsite::rebuild_interest_cache();
            let call = client.call(&nothing, &nothing);
            let answer = if in_span {
                tracing::Instrument::instrument(call, caller.clone()).await
            } else {
                call.await
            };
            assert!(matches!(answer, Err(CallError::Timeout(_))), "{answer:?}");
            let message = tokio::time::timeout(Duration::from_secs(30), requests.next())
                .await
                .expect("the request within 30 s")
                .unwrap()
                .unwrap();
            let property = |key: &str| {
                message
                    .metadata()
                    .properties
                    .iter()
                    .find(|property| property.key == key)
                    .map(|property| property.value.clone())
            };
            traceparents.push(property("traceparent").expect("a traceparent property"));
        }
        let fields = |traceparent: &str| -> Vec<String> {
            traceparent.split('-').map(str::to_owned).collect()
        };
        let joined = fields(&traceparents[0]);
        assert_eq!(joined.len(), 4, "{joined:?}");
        assert_eq!(joined[1], trace_id.to_string(), "the caller's trace");
        assert_ne!(joined[2], caller_id.to_string(), "its own send span's id");
        assert_eq!(joined[3], "01", "sampled, as the caller is");
        let alone = fields(&traceparents[1]);
        assert_ne!(alone[1], trace_id.to_string(), "a trace of its own");
    });
    drop(_default);
    // Its spans go nowhere: not waited for.
    otel.shutdown(Duration::ZERO);
}
