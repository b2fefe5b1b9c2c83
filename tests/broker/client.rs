//! `ToolClient` against a responder written with the raw Pulsar client, so
//! that it meets what no `serve` sends: a response that is not a frame,
//! frames for other callers, frames after the last one, and silence. Needs a
//! broker: `scripts/pulsar.sh start`.

use crate::support;

use std::collections::HashMap;
use std::time::Duration;

use futures_util::StreamExt;
use serde_json::json;
use tool_service::broker::pulsar::{producer, Consumer, Producer, TokioExecutor};
use tool_service::client::{CallError, ToolClient};
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
        tool_service::broker::message_id(&message)
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
        requests: tool_service::broker::subscribe_own(&pulsar, REQUESTS)
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
