//! A client of TrustGraph's config service: one request and its reply at a
//! time, on a workspace's queue pair, with the system queue asked to
//! explain a queue that stays silent.

use std::collections::BTreeMap;
use std::time::Duration;

use futures_util::StreamExt;
use pulsar::{Consumer, Producer, Pulsar, TokioExecutor};
use serde_json::{json, Value};

use super::model::{
    request_queue, response_queue, SYSTEM_REQUEST_QUEUE, SYSTEM_RESPONSE_QUEUE, WORKSPACES,
    WORKSPACE_TYPE,
};
use super::AnnounceError;

/// One request, one reply, on a config queue pair.
pub(super) struct Exchange {
    producer: Producer<TokioExecutor>,
    replies: Consumer<Vec<u8>, TokioExecutor>,
    queue: String,
    timeout: Duration,
}

/// A reply that did not come.
pub(super) struct Silent;

impl Exchange {
    async fn open(
        pulsar: &Pulsar<TokioExecutor>,
        request: &str,
        response: &str,
        timeout: Duration,
    ) -> Result<Self, AnnounceError> {
        // Subscribed first: a reply on a non-persistent topic before the
        // subscription would be lost.
        let replies = crate::pulsar::broker::subscribe_own(pulsar, response).await?;
        let producer = crate::pulsar::broker::producer(pulsar, request).await?;
        Ok(Self {
            producer,
            replies,
            queue: request.to_owned(),
            timeout,
        })
    }

    /// Sends `body` and waits for the reply with its id; the reply's error,
    /// if any, becomes [`AnnounceError::Refused`].
    async fn request(&mut self, body: &Value) -> Result<Result<Value, Silent>, AnnounceError> {
        let id = uuid::Uuid::new_v4().to_string();
        let message = crate::pulsar::broker::response(
            &id,
            body.to_string().into_bytes(),
            crate::trace::Headers::default(),
        );
        self.producer.send_non_blocking(message).await?.await?;
        let reply = tokio::time::timeout(self.timeout, async {
            while let Some(next) = self.replies.next().await {
                let message = next?;
                let _ = self.replies.ack(&message).await;
                if crate::pulsar::broker::message_id(&message) == Some(id.as_str()) {
                    return Ok(Some(message.payload.data));
                }
            }
            Ok::<_, AnnounceError>(None)
        })
        .await;
        let data = match reply {
            Ok(Ok(Some(data))) => data,
            Ok(Ok(None)) | Err(_) => return Ok(Err(Silent)),
            Ok(Err(error)) => return Err(error),
        };
        let reply: Value = serde_json::from_slice(&data).map_err(|error| {
            AnnounceError::InvalidReply(format!(
                "{error}: {}",
                crate::log_text::Untrusted::text(&String::from_utf8_lossy(
                    &data[..data.len().min(200)]
                ))
            ))
        })?;
        match reply.get("error") {
            None | Some(Value::Null) => Ok(Ok(reply)),
            Some(error) => Err(AnnounceError::Refused {
                kind: error["type"].as_str().unwrap_or("unknown").to_owned(),
                message: error["message"]
                    .as_str()
                    .map_or_else(|| error.to_string(), str::to_owned),
            }),
        }
    }
}

/// A client of one workspace's config queue.
pub(super) struct Workspace<'a> {
    pulsar: &'a Pulsar<TokioExecutor>,
    name: &'a str,
    exchange: Exchange,
    /// Whether a reply came on the workspace's queue yet.
    answered: bool,
}

impl<'a> Workspace<'a> {
    async fn open(
        pulsar: &'a Pulsar<TokioExecutor>,
        name: &'a str,
        timeout: Duration,
    ) -> Result<Self, AnnounceError> {
        let exchange =
            Exchange::open(pulsar, &request_queue(name), &response_queue(name), timeout).await?;
        Ok(Self {
            pulsar,
            name,
            exchange,
            answered: false,
        })
    }

    /// Sends `body` and waits for its reply. Until the workspace's queue has
    /// answered once, the system queue is asked at the same time whether
    /// the workspace exists, so a silent queue is explained within the same
    /// timeout: no config service, no such workspace, or a slow one.
    pub(super) async fn request(&mut self, body: &Value) -> Result<Value, AnnounceError> {
        let queue = self.exchange.queue.clone();
        let timeout = self.exchange.timeout;
        if self.answered {
            return match self.exchange.request(body).await? {
                Ok(reply) => Ok(reply),
                Err(Silent) => Err(AnnounceError::Timeout { queue, timeout }),
            };
        }
        // Boxed: the client's futures are large, and two side by side would
        // crowd a worker thread's stack.
        let mut reply = Box::pin(self.exchange.request(body));
        let mut probe = Box::pin(registered(self.pulsar, self.name, timeout));
        // The probe runs while the reply is awaited, and is dropped as soon
        // as the reply comes.
        let mut probed = None;
        let reply = loop {
            tokio::select! {
                reply = &mut reply => break reply,
                result = &mut probe, if probed.is_none() => probed = Some(result),
            }
        };
        match reply? {
            Ok(reply) => {
                self.answered = true;
                Ok(reply)
            }
            Err(Silent) => {
                let registered = match probed {
                    Some(result) => result,
                    None => probe.await,
                };
                Err(match registered? {
                    Some(true) => AnnounceError::Timeout { queue, timeout },
                    Some(false) => AnnounceError::NoWorkspace {
                        workspace: self.name.to_owned(),
                        queue,
                    },
                    None => AnnounceError::NoConfigService { queue, timeout },
                })
            }
        }
    }

    /// The items of one type, by key, each value parsed.
    pub(super) async fn values(
        &mut self,
        kind: &str,
    ) -> Result<BTreeMap<String, Value>, AnnounceError> {
        let reply = self
            .request(&json!({"operation": "getvalues", "workspace": self.name, "type": kind}))
            .await?;
        let Some(values) = reply["values"].as_array() else {
            return Ok(BTreeMap::new());
        };
        Ok(values
            .iter()
            .filter_map(|value| {
                let key = value["key"].as_str()?.to_owned();
                // An item that is not JSON is somebody's, and never equal to ours.
                let parsed = value["value"]
                    .as_str()
                    .and_then(|text| serde_json::from_str(text).ok())
                    .unwrap_or(Value::Null);
                Some((key, parsed))
            })
            .collect())
    }
}

/// Whether `workspace` is registered with the config service, asked on its
/// system queue; `None` when nothing answers there either.
async fn registered(
    pulsar: &Pulsar<TokioExecutor>,
    workspace: &str,
    timeout: Duration,
) -> Result<Option<bool>, AnnounceError> {
    let mut system =
        Exchange::open(pulsar, SYSTEM_REQUEST_QUEUE, SYSTEM_RESPONSE_QUEUE, timeout).await?;
    let reply = system
        .request(&json!({
            "operation": "get",
            "workspace": WORKSPACES,
            "keys": [{"type": WORKSPACE_TYPE, "key": workspace}],
        }))
        .await?;
    Ok(reply.ok().map(|reply| {
        reply["values"]
            .as_array()
            .is_some_and(|values| values.iter().any(|value| !value["value"].is_null()))
    }))
}

/// Connects the lookups' time to the first request: a broker that cannot
/// be reached fails within `timeout` too.
pub(super) async fn open<'a>(
    pulsar: &'a Pulsar<TokioExecutor>,
    workspace: &'a str,
    timeout: Duration,
) -> Result<Workspace<'a>, AnnounceError> {
    match tokio::time::timeout(timeout, Workspace::open(pulsar, workspace, timeout)).await {
        Ok(opened) => opened,
        Err(_) => Err(AnnounceError::Unreachable {
            queue: request_queue(workspace),
            timeout,
        }),
    }
}
