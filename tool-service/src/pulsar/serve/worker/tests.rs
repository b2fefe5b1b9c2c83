//! The worker's rules, on an in-memory broker: what it takes on, when it
//! acknowledges, what goes back, and how it stops.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex as StdMutex;

use tokio::sync::{mpsc, Notify, Semaphore};
use tokio::time::Instant as VirtualInstant;

use super::super::busy::RETURN_DELAY;
use super::*;
use crate::{registry::Registry, stream::Chunks, stream::StreamClosed};

/// Says what it is given.
///
/// # Arguments
/// * `text` - What to say.
#[crate::tool_service(topic = "worker-tests-echo")]
async fn echo(text: String) -> String {
    text
}

/// What a held handler waits on, and how many started.
struct Held {
    open: Semaphore,
    started: AtomicUsize,
}

impl Default for Held {
    fn default() -> Self {
        Self {
            open: Semaphore::new(0),
            started: AtomicUsize::new(0),
        }
    }
}

impl Held {
    async fn wait(&self) -> &'static str {
        self.started.fetch_add(1, Ordering::SeqCst);
        self.open.acquire().await.expect("never closed").forget();
        "released"
    }
}

/// Waits until the test lets it go.
#[crate::tool_service(topic = "worker-tests-held")]
async fn held(#[state] held: &Held) -> &'static str {
    held.wait().await
}

/// Waits until the test lets it go, on a persistent topic.
#[crate::tool_service(
    topic = "worker-tests-queued",
    request_queue = "persistent://tg/request/worker-tests-queued"
)]
async fn queued(#[state] held: &Held) -> &'static str {
    held.wait().await
}

/// Sleeps.
///
/// # Arguments
/// * `seconds` - How long.
#[crate::tool_service(topic = "worker-tests-slow")]
async fn slow(seconds: u64) -> String {
    tokio::time::sleep(Duration::from_secs(seconds)).await;
    format!("slept {seconds}")
}

/// Counts to three, a chunk each.
#[crate::tool_service(topic = "worker-tests-count")]
async fn count(#[stream] out: &Chunks) -> Result<&'static str, StreamClosed> {
    for n in ["1", "2", "3"] {
        out.send(n).await?;
    }
    Ok("done")
}

/// A request as the in-memory broker delivers it.
#[derive(Debug)]
struct Message {
    id: Option<String>,
    payload: Vec<u8>,
}

impl Message {
    fn id(&self) -> String {
        self.id.clone().unwrap_or_default()
    }
}

/// What the in-memory broker can go wrong with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    /// The subscription is gone.
    Lost,
    /// One message could not be decoded.
    Garbled,
    /// The broker refused a response.
    Refused,
    /// The broker refused the batch a response was in.
    BatchRefused,
}

impl std::fmt::Display for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Lost => "the subscription is gone",
            Self::Garbled => "a message could not be decoded",
            Self::Refused => "the broker refused the message",
            Self::BatchRefused => "the broker refused the batch",
        })
    }
}

/// What becomes of a response the worker sends.
#[derive(Debug, Clone, Copy)]
enum SendOutcome {
    /// Published; the receipt comes when receipts are released.
    Published,
    /// Refused at once: `send` fails.
    RefusedAtOnce,
    /// Accepted, then refused: the receipt fails.
    ReceiptFails,
    /// Accepted, then its batch refused: the receipt fails.
    BatchRefused,
}

/// What the broker saw, in order.
#[derive(Debug, Clone)]
enum Seen {
    /// A frame published (`Ok`) or refused at once (`Err`).
    Sent(String, Result<Frame, Fault>),
    /// The frame just sent was sent alone, not in a batch.
    Alone(String),
    Ack(String),
    Nack(String),
    Resubscribed,
    ResubscribeFailed,
}

#[derive(Default)]
struct Log {
    seen: Vec<(VirtualInstant, Seen)>,
    /// Requests handed to the worker.
    received: usize,
    /// What the coming sends do, in order; then [`SendOutcome::Published`].
    sends: VecDeque<SendOutcome>,
    /// How many resubscriptions fail before one works.
    failing_resubscriptions: usize,
}

/// The in-memory broker's shared side, which the test reads and scripts.
#[derive(Clone)]
struct Broker {
    log: Arc<StdMutex<Log>>,
    changed: Arc<Notify>,
    /// A receipt completes when it gets a permit.
    receipts: Arc<Semaphore>,
}

impl Broker {
    fn new() -> Self {
        Self {
            log: Arc::default(),
            changed: Arc::default(),
            receipts: Arc::new(Semaphore::new(Semaphore::MAX_PERMITS / 2)),
        }
    }

    /// A broker whose receipts wait for [`Self::release`].
    fn holding_receipts() -> Self {
        Self {
            receipts: Arc::new(Semaphore::new(0)),
            ..Self::new()
        }
    }

    fn release(&self, receipts: usize) {
        self.receipts.add_permits(receipts);
    }

    fn script(&self, sends: impl IntoIterator<Item = SendOutcome>) {
        self.log.lock().unwrap().sends.extend(sends);
    }

    fn record(&self, seen: Seen) {
        self.log
            .lock()
            .unwrap()
            .seen
            .push((VirtualInstant::now(), seen));
        self.changed.notify_waiters();
    }

    fn seen(&self) -> Vec<(VirtualInstant, Seen)> {
        self.log.lock().unwrap().seen.clone()
    }

    fn received(&self) -> usize {
        self.log.lock().unwrap().received
    }

    /// The frames published for `id`, in order.
    fn frames(&self, id: &str) -> Vec<Frame> {
        self.seen()
            .into_iter()
            .filter_map(|(_, seen)| match seen {
                Seen::Sent(to, Ok(frame)) if to == id => Some(frame),
                _ => None,
            })
            .collect()
    }

    /// When `id` was acknowledged (or negatively, with `nack`), if it was.
    fn settled(&self, id: &str, nack: bool) -> Option<VirtualInstant> {
        self.seen().into_iter().find_map(|(at, seen)| match seen {
            Seen::Ack(acked) if !nack && acked == id => Some(at),
            Seen::Nack(nacked) if nack && nacked == id => Some(at),
            _ => None,
        })
    }

    /// Waits (in virtual time, so at once) until `done` holds; fails after
    /// a virtual minute.
    async fn until(&self, what: &str, done: impl Fn(&Broker) -> bool) {
        let waited = tokio::time::timeout(Duration::from_secs(60), async {
            loop {
                let changed = self.changed.notified();
                if done(self) {
                    return;
                }
                changed.await;
            }
        })
        .await;
        assert!(
            waited.is_ok(),
            "never {what}; the broker saw {:#?}",
            self.seen()
        );
    }
}

/// The request side of the in-memory broker.
struct FakeRequests {
    incoming: mpsc::UnboundedReceiver<Result<Message, Fault>>,
    broker: Broker,
}

impl Requests for FakeRequests {
    type Message = Message;
    type Error = Fault;

    fn payload(message: &Message) -> &[u8] {
        &message.payload
    }

    fn property<'a>(message: &'a Message, key: &str) -> Option<&'a str> {
        match key {
            crate::wire::ID_PROPERTY => message.id.as_deref(),
            _ => None,
        }
    }

    async fn next(&mut self) -> Option<Result<Message, Fault>> {
        let next = self.incoming.recv().await;
        self.broker.log.lock().unwrap().received += 1;
        self.broker.changed.notify_waiters();
        next
    }

    fn is_lost(error: &Fault) -> bool {
        *error == Fault::Lost
    }

    async fn ack(&mut self, message: &Message) -> Result<(), Fault> {
        self.broker.record(Seen::Ack(message.id()));
        Ok(())
    }

    async fn nack(&mut self, message: &Message) -> Result<(), Fault> {
        self.broker.record(Seen::Nack(message.id()));
        Ok(())
    }

    async fn resubscribe(&mut self) -> Result<Vec<Message>, Fault> {
        let failing = {
            let mut log = self.broker.log.lock().unwrap();
            let failing = log.failing_resubscriptions > 0;
            log.failing_resubscriptions = log.failing_resubscriptions.saturating_sub(1);
            failing
        };
        if failing {
            self.broker.record(Seen::ResubscribeFailed);
            return Err(Fault::Lost);
        }
        self.broker.record(Seen::Resubscribed);
        Ok(Vec::new())
    }

    async fn close(&mut self) -> Result<(), Fault> {
        Ok(())
    }
}

/// The response side of the in-memory broker.
struct FakeResponses(Broker);

type FakeReceipt = Pin<Box<dyn Future<Output = Result<(), Fault>> + Send>>;

impl Responses for FakeResponses {
    type Error = Fault;
    type Receipt = FakeReceipt;

    fn send(
        &self,
        id: &str,
        frame: Vec<u8>,
        _trace: crate::trace::Headers,
        alone: bool,
    ) -> Result<FakeReceipt, Fault> {
        let outcome = self.0.log.lock().unwrap().sends.pop_front();
        let outcome = outcome.unwrap_or(SendOutcome::Published);
        if let SendOutcome::RefusedAtOnce = outcome {
            self.0
                .record(Seen::Sent(id.to_owned(), Err(Fault::Refused)));
            return Err(Fault::Refused);
        }
        let frame = Frame::decode(&frame).expect("the worker sends frames");
        self.0.record(Seen::Sent(id.to_owned(), Ok(frame)));
        if alone {
            self.0.record(Seen::Alone(id.to_owned()));
        }
        let receipts = Arc::clone(&self.0.receipts);
        Ok(Box::pin(async move {
            receipts.acquire().await.expect("never closed").forget();
            match outcome {
                SendOutcome::ReceiptFails => Err(Fault::Refused),
                SendOutcome::BatchRefused => Err(Fault::BatchRefused),
                _ => Ok(()),
            }
        }))
    }

    fn describe(error: &Fault) -> String {
        error.to_string()
    }

    fn refused_batch(error: &Fault) -> bool {
        matches!(error, Fault::BatchRefused)
    }

    async fn close(&self) -> Result<(), Fault> {
        Ok(())
    }
}

/// A worker on the in-memory broker, running.
struct Running {
    /// The metrics the worker reports to (its readiness among them).
    metrics: Arc<crate::metrics::Metrics>,
    requests: mpsc::UnboundedSender<Result<Message, Fault>>,
    /// Its admission and drain.
    host: Host,
    worker: tokio::task::JoinHandle<ServiceReport>,
}

/// What a test worker takes on: the host's policy and the worker's own.
#[derive(Debug, Clone)]
struct Setup {
    concurrency: usize,
    window: usize,
    /// The replica's byte budget.
    budget: usize,
    max_message_size: usize,
}

fn limits(concurrency: usize, window: usize) -> Setup {
    Setup {
        concurrency,
        window,
        budget: usize::MAX,
        max_message_size: 5 * 1024 * 1024,
    }
}

fn start(service: &str, state: State, setup: Setup, broker: &Broker, grace: Duration) -> Running {
    let registry = Registry::collect().unwrap().with_state(state);
    let service = registry.service(service).expect("a service of this module");
    let options = crate::host::HostOptions {
        only: vec![service.id().to_owned()],
        concurrency: Some(setup.concurrency),
        timeout: Duration::from_secs(3600),
        grace_period: grace,
        memory_budget: setup.budget,
        ..Default::default()
    };
    let host = Host::new(Arc::new(registry), &options).unwrap();
    let (requests, incoming) = mpsc::unbounded_channel();
    let all = Arc::clone(host.metrics());
    let worker = Worker::new(
        host.clone(),
        service,
        all.service(service.id()),
        WorkerOptions {
            window: setup.window,
            log_payloads: false,
            max_message_size: setup.max_message_size,
            batch_responses: false,
        },
        FakeRequests {
            incoming,
            broker: broker.clone(),
        },
        FakeResponses(broker.clone()),
    );
    Running {
        metrics: all,
        requests,
        host,
        worker: tokio::spawn(worker.run()),
    }
}

impl Running {
    fn deliver(&self, id: &str, arguments: &str) {
        let payload = format!(
            r#"{{"config":"{{}}","arguments":{}}}"#,
            serde_json::json!(arguments)
        );
        self.deliver_payload(id, payload.into_bytes());
    }

    fn deliver_payload(&self, id: &str, payload: Vec<u8>) {
        self.requests
            .send(Ok(Message {
                id: Some(id.to_owned()),
                payload,
            }))
            .unwrap();
    }

    fn fail(&self, fault: Fault) {
        self.requests.send(Err(fault)).unwrap();
    }

    async fn stop(self) -> ServiceReport {
        let drain = self.host.drain(self.host.grace_period());
        let (_, report) = tokio::join!(drain, self.worker);
        let report = report.unwrap();
        drop(self.requests);
        report
    }
}

/// A worker of `service` with no state, room for 4 running and 4 waiting,
/// and a grace period of 5 s.
fn serving(service: &str, broker: &Broker) -> Running {
    start(
        service,
        State::new(),
        limits(4, 4),
        broker,
        Duration::from_secs(5),
    )
}

fn held_state() -> (Arc<Held>, State) {
    let state = State::new().with(Held::default());
    (state.get::<Held>().unwrap(), state)
}

fn error_kind(frame: &Frame) -> Option<&str> {
    frame.error.as_ref().map(ToolError::kind)
}

#[tokio::test(start_paused = true)]
async fn a_request_is_acknowledged_only_once_the_broker_has_its_answer() {
    let broker = Broker::holding_receipts();
    let running = serving("worker-tests-echo-service", &broker);
    running.deliver("a", r#"{"text":"hello"}"#);
    broker
        .until("answered", |b| !b.frames("a").is_empty())
        .await;
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert_eq!(
        broker.settled("a", false),
        None,
        "acknowledged before the receipt"
    );
    let frames = broker.frames("a");
    assert_eq!(frames.len(), 1);
    assert_eq!(frames[0].response, "hello");
    assert!(frames[0].end_of_stream && frames[0].error.is_none());
    broker.release(1);
    broker
        .until("acknowledged", |b| b.settled("a", false).is_some())
        .await;
    let report = running.stop().await;
    assert_eq!(
        (report.answered, report.refused, report.abandoned),
        (1, 0, 0)
    );
}

#[tokio::test(start_paused = true)]
async fn a_malformed_request_gets_an_error_for_its_id_and_the_next_one_is_served() {
    let broker = Broker::new();
    let running = serving("worker-tests-echo-service", &broker);
    running.deliver_payload("bad", b"not json".to_vec());
    running.deliver("good", r#"{"text":"still here"}"#);
    broker
        .until("both acknowledged", |b| {
            b.settled("bad", false).is_some() && b.settled("good", false).is_some()
        })
        .await;
    assert_eq!(
        error_kind(&broker.frames("bad")[0]),
        Some(ToolError::INVALID_REQUEST)
    );
    assert_eq!(broker.frames("good")[0].response, "still here");
    assert_eq!(running.stop().await.answered, 2);
}

#[tokio::test(start_paused = true)]
async fn at_most_concurrency_requests_run_and_a_full_window_is_refused_as_overloaded() {
    let broker = Broker::new();
    let (held, state) = held_state();
    let running = start(
        "worker-tests-held-service",
        state,
        limits(2, 1),
        &broker,
        Duration::from_secs(5),
    );
    for id in ["1", "2", "3", "4"] {
        running.deliver(id, "{}");
    }
    broker
        .until("4 refused", |b| !b.frames("4").is_empty())
        .await;
    assert_eq!(
        held.started.load(Ordering::SeqCst),
        2,
        "more than the concurrency bound started"
    );
    let refusal = &broker.frames("4")[0];
    assert_eq!(error_kind(refusal), Some(ToolError::OVERLOADED));
    assert!(
        refusal
            .error
            .as_ref()
            .unwrap()
            .message()
            .contains("2 requests running, 1 waiting"),
        "{refusal:?}"
    );
    assert!(
        broker.frames("3").is_empty(),
        "the waiting request was answered early"
    );
    held.open.add_permits(3);
    broker
        .until("all acknowledged", |b| {
            ["1", "2", "3", "4"]
                .iter()
                .all(|id| b.settled(id, false).is_some())
        })
        .await;
    assert_eq!(held.started.load(Ordering::SeqCst), 3);
    assert_eq!(broker.frames("3")[0].response, "released");
    let report = running.stop().await;
    assert_eq!((report.answered, report.refused), (4, 1));
}

#[tokio::test(start_paused = true)]
async fn on_a_persistent_topic_the_worker_stops_reading_when_its_window_is_full() {
    let broker = Broker::new();
    let (held, state) = held_state();
    let running = start(
        "worker-tests-queued-service",
        state,
        limits(1, 1),
        &broker,
        Duration::from_secs(5),
    );
    for id in ["1", "2", "3"] {
        running.deliver(id, "{}");
    }
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert_eq!(broker.received(), 2, "read past the window");
    assert_eq!(held.started.load(Ordering::SeqCst), 1);
    assert!(broker.seen().is_empty(), "{:?}", broker.seen());
    held.open.add_permits(3);
    broker
        .until("all acknowledged", |b| {
            ["1", "2", "3"]
                .iter()
                .all(|id| b.settled(id, false).is_some())
        })
        .await;
    let report = running.stop().await;
    assert_eq!((report.answered, report.refused), (3, 0));
}

/// Limits with a byte budget of `bytes` (a `{}` request is 32 bytes).
fn budgeted(concurrency: usize, window: usize, bytes: usize) -> Setup {
    Setup {
        budget: bytes,
        ..limits(concurrency, window)
    }
}

const EMPTY_REQUEST: &str = r#"{"config":"{}","arguments":"{}"}"#;

#[tokio::test(start_paused = true)]
async fn over_the_byte_budget_a_non_persistent_request_is_overloaded_and_a_large_one_runs_alone() {
    assert_eq!(EMPTY_REQUEST.len(), 32);
    let broker = Broker::new();
    let (held, state) = held_state();
    let running = start(
        "worker-tests-held-service",
        state,
        budgeted(4, 4, 70),
        &broker,
        Duration::from_secs(5),
    );
    for id in ["1", "2", "3"] {
        running.deliver(id, "{}");
    }
    broker
        .until("3 refused", |b| !b.frames("3").is_empty())
        .await;
    assert_eq!(held.started.load(Ordering::SeqCst), 2);
    let refusal = &broker.frames("3")[0];
    assert_eq!(error_kind(refusal), Some(ToolError::OVERLOADED));
    assert!(
        refusal
            .error
            .as_ref()
            .unwrap()
            .message()
            .contains("memory budget"),
        "{refusal:?}"
    );
    held.open.add_permits(2);
    broker
        .until("1 and 2 acknowledged", |b| {
            b.settled("1", false).is_some() && b.settled("2", false).is_some()
        })
        .await;
    // Nothing held: a request three times the budget is taken, and runs.
    let big = format!(
        r#"{{"user":"{}","config":"{{}}","arguments":"{{}}"}}"#,
        "u".repeat(200)
    );
    running.deliver_payload("big", big.into_bytes());
    broker
        .until("big started", |_| held.started.load(Ordering::SeqCst) == 3)
        .await;
    // While it runs, even a small one is refused.
    running.deliver("small", "{}");
    broker
        .until("small refused", |b| !b.frames("small").is_empty())
        .await;
    assert_eq!(
        error_kind(&broker.frames("small")[0]),
        Some(ToolError::OVERLOADED)
    );
    held.open.add_permits(1);
    broker
        .until("big acknowledged", |b| b.settled("big", false).is_some())
        .await;
    assert_eq!(broker.frames("big")[0].response, "released");
    let report = running.stop().await;
    assert_eq!((report.answered, report.refused), (5, 2));
}

#[tokio::test(start_paused = true)]
async fn over_the_byte_budget_a_persistent_topic_is_not_read_until_answers_free_some() {
    let broker = Broker::new();
    let (held, state) = held_state();
    let running = start(
        "worker-tests-queued-service",
        state,
        budgeted(4, 4, 60),
        &broker,
        Duration::from_secs(5),
    );
    for id in ["1", "2", "3"] {
        running.deliver(id, "{}");
    }
    tokio::time::sleep(Duration::from_secs(10)).await;
    // 64 bytes held of 60: spent, so the third stays with the broker.
    assert_eq!(broker.received(), 2, "read past the byte budget");
    assert_eq!(held.started.load(Ordering::SeqCst), 2);
    held.open.add_permits(1);
    broker
        .until("the third read and started", |b| {
            b.received() == 3 && held.started.load(Ordering::SeqCst) == 3
        })
        .await;
    held.open.add_permits(2);
    broker
        .until("all acknowledged", |b| {
            ["1", "2", "3"]
                .iter()
                .all(|id| b.settled(id, false).is_some())
        })
        .await;
    let report = running.stop().await;
    assert_eq!((report.answered, report.refused), (3, 0));
}

#[tokio::test(start_paused = true)]
async fn a_refused_response_is_replaced_by_a_send_failed_notice_which_is_acknowledged() {
    for outcome in [SendOutcome::RefusedAtOnce, SendOutcome::ReceiptFails] {
        let (broker, answered) = answer_one([outcome]).await;
        let frames = broker.frames("a");
        let notice = frames.last().unwrap();
        assert_eq!(
            error_kind(notice),
            Some(ToolError::SEND_FAILED),
            "{outcome:?}"
        );
        assert!(notice.end_of_stream);
        assert!(
            notice.error.as_ref().unwrap().message()
                == "the tool's response could not be published: the broker refused the message",
            "{notice:?}"
        );
        assert_eq!(broker.settled("a", true), None);
        assert_eq!(answered, 1);
    }
}

/// Serves one request `a` while the broker does `outcomes` to the sends;
/// the broker once `a` is acknowledged, and how many the worker answered.
async fn answer_one(outcomes: impl IntoIterator<Item = SendOutcome>) -> (Broker, u64) {
    let broker = Broker::new();
    broker.script(outcomes);
    let running = serving("worker-tests-echo-service", &broker);
    running.deliver("a", r#"{"text":"hello"}"#);
    broker
        .until("acknowledged", |b| b.settled("a", false).is_some())
        .await;
    let answered = running.stop().await.answered;
    (broker, answered)
}

#[tokio::test(start_paused = true)]
async fn an_answer_whose_batch_was_refused_goes_again_alone_and_only_then_fails() {
    let alone = |b: &Broker| {
        b.seen()
            .iter()
            .filter(|(_, seen)| matches!(seen, Seen::Alone(id) if id == "a"))
            .count()
    };
    let answer = Frame::last(Ok("hello".into()));
    // The batch refused, then the answer alone taken: answered as usual.
    let (broker, answered) = answer_one([SendOutcome::BatchRefused]).await;
    assert_eq!(broker.frames("a"), [answer.clone(), answer.clone()]);
    assert_eq!(alone(&broker), 1, "{:?}", broker.seen());
    assert_eq!(answered, 1);

    // Refused alone too: the send-failed notice, as for any refused answer.
    let (broker, answered) =
        answer_one([SendOutcome::BatchRefused, SendOutcome::ReceiptFails]).await;
    let frames = broker.frames("a");
    assert_eq!(frames[..2], [answer.clone(), answer]);
    assert_eq!(error_kind(&frames[2]), Some(ToolError::SEND_FAILED));
    assert_eq!(frames.len(), 3);
    assert_eq!(alone(&broker), 2, "the notice goes alone too");
    assert_eq!(answered, 1);
}

#[tokio::test(start_paused = true)]
async fn when_the_notice_fails_too_the_request_goes_back_after_the_return_delay() {
    for outcome in [SendOutcome::RefusedAtOnce, SendOutcome::ReceiptFails] {
        let broker = Broker::new();
        broker.script([outcome, outcome]);
        let running = serving("worker-tests-echo-service", &broker);
        running.deliver("a", r#"{"text":"hello"}"#);
        broker
            .until("returned", |b| b.settled("a", true).is_some())
            .await;
        let seen = broker.seen();
        let last_send = seen
            .iter()
            .rev()
            .find(|(_, seen)| matches!(seen, Seen::Sent(..)))
            .map(|(at, _)| *at)
            .unwrap();
        let returned = broker.settled("a", true).unwrap();
        assert_eq!(returned - last_send, RETURN_DELAY, "{outcome:?}");
        assert_eq!(broker.settled("a", false), None);
        let report = running.stop().await;
        assert_eq!(report.answered, 0);
    }
}

#[tokio::test(start_paused = true)]
async fn a_returning_request_counts_against_the_concurrency_bound() {
    let broker = Broker::new();
    broker.script([SendOutcome::RefusedAtOnce, SendOutcome::RefusedAtOnce]);
    let running = start(
        "worker-tests-echo-service",
        State::new(),
        limits(1, 4),
        &broker,
        Duration::from_secs(5),
    );
    running.deliver("a", r#"{"text":"1"}"#);
    running.deliver("b", r#"{"text":"2"}"#);
    broker
        .until("b answered", |b| b.settled("b", false).is_some())
        .await;
    let returned = broker.settled("a", true).unwrap();
    let seen = broker.seen();
    let b_sent = seen
        .iter()
        .find(|(_, seen)| matches!(seen, Seen::Sent(id, _) if id == "b"))
        .unwrap()
        .0;
    assert!(
        b_sent >= returned,
        "b started while a was still waiting to go back"
    );
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_streaming_answer_sends_its_chunks_in_order_then_its_last_frame() {
    let broker = Broker::new();
    let running = serving("worker-tests-count-service", &broker);
    running.deliver("s", "{}");
    broker
        .until("acknowledged", |b| b.settled("s", false).is_some())
        .await;
    let frames: Vec<_> = broker
        .frames("s")
        .into_iter()
        .map(|frame| (frame.response, frame.end_of_stream, frame.error.is_none()))
        .collect();
    assert_eq!(
        frames,
        [
            ("1".to_owned(), false, true),
            ("2".to_owned(), false, true),
            ("3".to_owned(), false, true),
            ("done".to_owned(), true, true),
        ]
    );
    assert_eq!(running.stop().await.answered, 1);
}

#[tokio::test(start_paused = true)]
async fn a_streaming_answer_whose_chunk_is_refused_ends_with_the_notice() {
    let broker = Broker::new();
    broker.script([SendOutcome::Published, SendOutcome::ReceiptFails]);
    let running = serving("worker-tests-count-service", &broker);
    running.deliver("s", "{}");
    broker
        .until("acknowledged", |b| b.settled("s", false).is_some())
        .await;
    let frames = broker.frames("s");
    assert_eq!(frames.len(), 3, "{frames:?}");
    assert_eq!(
        (frames[0].response.as_str(), frames[1].response.as_str()),
        ("1", "2")
    );
    assert_eq!(error_kind(&frames[2]), Some(ToolError::SEND_FAILED));
    assert!(frames[2].end_of_stream);
    assert_eq!(running.stop().await.answered, 1);
}

#[tokio::test(start_paused = true)]
async fn at_a_stop_running_requests_finish_within_the_grace_period() {
    let broker = Broker::new();
    let running = serving("worker-tests-slow-service", &broker);
    running.deliver("a", r#"{"seconds":2}"#);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let stopping = VirtualInstant::now();
    let report = running.stop().await;
    assert_eq!((report.answered, report.abandoned), (1, 0));
    assert_eq!(broker.frames("a")[0].response, "slept 2");
    let acked = broker.settled("a", false).unwrap();
    assert!(
        acked - stopping < Duration::from_secs(2),
        "{:?}",
        acked - stopping
    );
}

#[tokio::test(start_paused = true)]
async fn while_draining_a_non_persistent_request_is_refused_with_the_drains_sentence() {
    let broker = Broker::new();
    let running = serving("worker-tests-slow-service", &broker);
    running.deliver("a", r#"{"seconds":2}"#);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let (host, requests) = (running.host.clone(), running.requests.clone());
    let stopping = tokio::spawn(running.stop());
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(host.is_closing());
    requests
        .send(Ok(Message {
            id: Some("late".into()),
            payload: br#"{"config":"{}","arguments":"{\"seconds\":1}"}"#.to_vec(),
        }))
        .unwrap();
    broker
        .until("the late request answered", |b| {
            b.settled("late", false).is_some()
        })
        .await;
    let refusal = broker.frames("late")[0].error.clone().unwrap();
    assert_eq!(refusal.kind(), ToolError::UNAVAILABLE);
    assert_eq!(refusal.message(), "the service is shutting down; try again");
    let report = stopping.await.unwrap();
    assert_eq!(
        (report.answered, report.refused, report.abandoned),
        (2, 1, 0)
    );
    assert_eq!(broker.frames("a")[0].response, "slept 2");
}

#[tokio::test(start_paused = true)]
async fn at_the_end_of_the_grace_period_requests_still_running_are_abandoned() {
    let broker = Broker::new();
    let running = start(
        "worker-tests-slow-service",
        State::new(),
        limits(4, 4),
        &broker,
        Duration::from_secs(1),
    );
    running.deliver("a", r#"{"seconds":60}"#);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let stopping = VirtualInstant::now();
    let report = running.stop().await;
    assert_eq!(stopping.elapsed(), Duration::from_secs(1));
    assert_eq!((report.answered, report.abandoned), (0, 1));
    assert!(
        broker.seen().is_empty(),
        "an abandoned request was settled: {:?}",
        broker.seen()
    );
}

#[tokio::test(start_paused = true)]
async fn at_a_stop_waiting_requests_are_refused_or_returned_by_topic_kind() {
    for (service, persistent) in [
        ("worker-tests-held-service", false),
        ("worker-tests-queued-service", true),
    ] {
        let broker = Broker::new();
        let (held, state) = held_state();
        let running = start(
            service,
            state,
            limits(1, 4),
            &broker,
            Duration::from_secs(1),
        );
        for id in ["1", "2", "3"] {
            running.deliver(id, "{}");
        }
        broker.until("all read", |b| b.received() == 3).await;
        tokio::task::yield_now().await;
        let report = running.stop().await;
        assert_eq!(held.started.load(Ordering::SeqCst), 1);
        assert_eq!(report.abandoned, 1, "{service}");
        for id in ["2", "3"] {
            if persistent {
                assert!(broker.settled(id, true).is_some(), "{id} not returned");
                assert!(broker.frames(id).is_empty());
            } else {
                assert_eq!(
                    error_kind(&broker.frames(id)[0]),
                    Some(ToolError::UNAVAILABLE)
                );
                assert!(broker.settled(id, false).is_some(), "{id} not acknowledged");
            }
        }
        let expected = if persistent { (0, 0) } else { (2, 2) };
        assert_eq!((report.answered, report.refused), expected, "{service}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_lost_subscription_is_made_again_with_backoff_and_serving_goes_on() {
    let broker = Broker::new();
    broker.log.lock().unwrap().failing_resubscriptions = 2;
    let running = serving("worker-tests-echo-service", &broker);
    running.fail(Fault::Garbled);
    running.fail(Fault::Lost);
    running.deliver("a", r#"{"text":"after"}"#);
    broker
        .until("acknowledged", |b| b.settled("a", false).is_some())
        .await;
    let attempts: Vec<_> = broker
        .seen()
        .into_iter()
        .filter(|(_, seen)| matches!(seen, Seen::Resubscribed | Seen::ResubscribeFailed))
        .collect();
    assert_eq!(
        attempts.len(),
        3,
        "a garbled message is skipped, not a lost subscription: {attempts:?}"
    );
    assert!(matches!(attempts[2].1, Seen::Resubscribed));
    assert_eq!(attempts[1].0 - attempts[0].0, Duration::from_millis(100));
    assert_eq!(attempts[2].0 - attempts[1].0, Duration::from_millis(200));
    assert_eq!(broker.frames("a")[0].response, "after");
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_stop_while_subscribing_again_ends_the_worker() {
    let broker = Broker::new();
    broker.log.lock().unwrap().failing_resubscriptions = usize::MAX;
    let running = serving("worker-tests-echo-service", &broker);
    assert!(running.metrics.readiness().is_ok());
    running.fail(Fault::Lost);
    broker.until("retrying", |b| b.seen().len() >= 2).await;
    assert_eq!(
        running.metrics.readiness().unwrap_err(),
        "not subscribed: worker-tests-echo-service\n"
    );
    let report = running.stop().await;
    assert_eq!(report.answered, 0);
}

#[tokio::test(start_paused = true)]
async fn a_request_whose_id_cannot_fit_any_answer_is_acknowledged_unanswered() {
    let broker = Broker::new();
    let mut limits = limits(4, 4);
    limits.max_message_size = 4096;
    let running = start(
        "worker-tests-echo-service",
        State::new(),
        limits,
        &broker,
        Duration::from_secs(5),
    );
    let id = "i".repeat(5000);
    running.deliver(&id, r#"{"text":"x"}"#);
    running.deliver("short", r#"{"text":"x"}"#);
    broker
        .until("both acknowledged", |b| {
            b.settled(&id, false).is_some() && b.settled("short", false).is_some()
        })
        .await;
    assert!(broker.frames(&id).is_empty());
    assert_eq!(running.stop().await.answered, 2);
}

#[test]
fn an_error_frame_fits_the_room_answerable_keeps_for_it() {
    let limits = dispatch::Limits::default().with_max_message_size(64 * 1024);
    let id = "i".repeat(60 * 1024);
    assert!(answerable(&id, limits));
    // The largest error frames serve sends itself.
    let frame = Frame::last(Err(ToolError::with_type(
        ToolError::SEND_FAILED,
        format!(
            "the tool's response could not be published: {}…",
            "c".repeat(300)
        ),
    )));
    assert!(
        frame.message_size(&id) <= 64 * 1024,
        "{}",
        frame.message_size(&id)
    );
    assert!(!answerable(&"i".repeat(64 * 1024), limits));
    assert!(answerable(
        &"i".repeat(64 * 1024),
        dispatch::Limits::default()
    ));
}
