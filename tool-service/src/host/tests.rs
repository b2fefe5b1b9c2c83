//! The host's rules, once for every transport: no broker, no socket.

use super::*;
use crate::state::State;

/// Says hi.
#[crate::tool_service(topic = "host-tests-hi", timeout = "5s", rate = "2/s")]
async fn host_hi() -> &'static str {
    "hi"
}

/// Says a shared number.
#[crate::tool_service(topic = "host-tests-stateful", concurrency = 3)]
async fn host_stateful(#[state] number: &u32) -> u32 {
    *number
}

fn registry() -> Arc<Registry> {
    Arc::new(Registry::collect().unwrap())
}

fn only(ids: &[&str]) -> HostOptions {
    HostOptions {
        only: ids.iter().map(|id| (*id).to_owned()).collect(),
        ..HostOptions::default()
    }
}

#[test]
fn a_host_refuses_what_it_cannot_serve_before_serving() {
    let empty = Arc::new(Registry::from_services([]).unwrap());
    let refused = Host::new(empty, &HostOptions::default()).unwrap_err();
    assert!(matches!(refused, SelectError::NothingToServe));
    assert!(refused.to_string().contains("add `use my_tools as _;`"));

    for options in [
        only(&["host-tests-hey-service"]),
        HostOptions {
            service_timeouts: vec![("host-tests-hey-service".into(), Duration::from_secs(1))],
            ..only(&["host-tests-hi-service"])
        },
        HostOptions {
            rates: vec![(Some("host-tests-hey-service".into()), None)],
            ..only(&["host-tests-hi-service"])
        },
    ] {
        let refused = Host::new(registry(), &options).unwrap_err();
        let text = refused.to_string();
        assert!(
            text.starts_with("no service `host-tests-hey-service` in this binary (known: ")
                && text.contains("host-tests-hi-service"),
            "{text}"
        );
    }

    let refused = Host::new(registry(), &only(&["host-tests-stateful-service"])).unwrap_err();
    assert_eq!(
        refused.to_string(),
        "service `host-tests-stateful-service` takes a `u32` as #[state], and none was provided: \
         add it to the State the setup hook returns (App::setup), or with Registry::with_state"
    );
}

#[test]
fn state_held_in_an_arc_is_named_in_the_refusal() {
    let registry = Registry::collect()
        .unwrap()
        .with_state(State::new().with(Arc::new(7_u32)));
    let refused = Host::new(Arc::new(registry), &only(&["host-tests-stateful-service"]))
        .unwrap_err()
        .to_string();
    assert!(
        refused.ends_with(
            ". The State holds an `Arc<u32>`, which is another type: add the `u32` itself \
             (the State shares it already; `#[state] x: Arc<u32>` receives it as an `Arc`)"
        ),
        "{refused}"
    );
}

#[test]
fn policies_come_from_the_options_then_the_attribute_then_the_defaults() {
    let registry = registry()
        .as_ref()
        .clone()
        .with_state(State::new().with(1_u32));
    let registry = Arc::new(registry);
    let hi = registry.service("host-tests-hi-service").unwrap();
    let stateful = registry.service("host-tests-stateful-service").unwrap();
    let ids = ["host-tests-hi-service", "host-tests-stateful-service"];

    let host = Host::new(Arc::clone(&registry), &only(&ids)).unwrap();
    let ids_served: Vec<_> = host.services().map(|service| service.id()).collect();
    assert_eq!(ids_served, ids);
    assert_eq!(host.timeout_of(hi), Some(Duration::from_secs(5)));
    assert_eq!(
        host.timeout_of(stateful),
        Some(crate::host::DEFAULT_TIMEOUT)
    );
    assert_eq!(host.concurrency_of(stateful), Some(3));
    assert_eq!(
        host.concurrency_of(hi),
        Some(crate::host::DEFAULT_CONCURRENCY)
    );
    assert_eq!(host.rate_of(hi), Some(Rate::per_second(2)));
    assert_eq!(host.rate_of(stateful), None);

    let options = HostOptions {
        concurrency: Some(9),
        timeout: Duration::from_secs(7),
        service_timeouts: vec![("host-tests-hi-service".into(), Duration::from_secs(1))],
        rates: vec![
            (None, Some(Rate::per_minute(60))),
            (
                Some("host-tests-hi-service".into()),
                Some(Rate::per_hour(5)),
            ),
        ],
        ..only(&ids)
    };
    let host = Host::new(Arc::clone(&registry), &options).unwrap();
    assert_eq!(host.timeout_of(hi), Some(Duration::from_secs(1)));
    assert_eq!(host.timeout_of(stateful), Some(Duration::from_secs(7)));
    assert_eq!(host.concurrency_of(stateful), Some(9));
    assert_eq!(host.rate_of(hi), Some(Rate::per_hour(5)));
    // The rate for every service applies where the attribute sets none.
    assert_eq!(host.rate_of(stateful), Some(Rate::per_minute(60)));

    // `off` lifts the attribute's limit; the last entry wins.
    let options = HostOptions {
        rates: vec![
            (
                Some("host-tests-hi-service".into()),
                Some(Rate::per_hour(5)),
            ),
            (Some("host-tests-hi-service".into()), None),
        ],
        ..only(&ids)
    };
    let host = Host::new(registry, &options).unwrap();
    assert_eq!(host.rate_of(hi), None);
    // Not served here: no policy.
    let host = Host::new(registry_with_number(), &only(&[ids[1]])).unwrap();
    assert_eq!(host.timeout_of(hi), None);
}

fn registry_with_number() -> Arc<Registry> {
    Arc::new(
        Registry::collect()
            .unwrap()
            .with_state(State::new().with(1_u32)),
    )
}

#[tokio::test(start_paused = true)]
async fn a_burst_over_the_rate_is_partly_refused_with_when_to_try_again() {
    let host = Host::new(registry(), &only(&["host-tests-hi-service"])).unwrap();
    let hosted = host.hosted("host-tests-hi-service").unwrap();
    let limiter = hosted.limiter.as_ref().unwrap();
    let outcomes: Vec<_> = (0..5).map(|_| limiter.admit()).collect();
    assert_eq!(outcomes.iter().filter(|outcome| outcome.is_ok()).count(), 2);
    let refused = outcomes[2].as_ref().unwrap_err();
    assert_eq!(refused.kind(), ToolError::RATE_LIMITED);
    assert_eq!(
        refused.message(),
        "the service is called more often than its limit of 2 calls per second; try again in 500 ms"
    );
    tokio::time::advance(Duration::from_millis(500)).await;
    assert!(limiter.admit().is_ok());
    assert!(limiter.admit().is_err());
}

fn metrics_of(host: &Host, id: &'static str) -> Arc<crate::metrics::ServiceMetrics> {
    host.metrics().service(id)
}

/// A host of `host-tests-hi-service` (2 calls a second) with room for one
/// call at once and a budget of 100 bytes.
fn narrow_host() -> Host {
    let options = HostOptions {
        concurrency: Some(1),
        memory_budget: 100,
        ..only(&["host-tests-hi-service"])
    };
    Host::new(registry(), &options).unwrap()
}

#[tokio::test(start_paused = true)]
async fn admission_takes_the_drain_then_the_budget_then_the_rate_then_a_permit() {
    let host = narrow_host();
    let hosted = host.hosted("host-tests-hi-service").unwrap();
    let metrics = metrics_of(&host, "host-tests-hi-service");

    // The budget before the rate: a call refused for memory spends none
    // of the rate, and a transport that holds back is not refused.
    let held = host.budget().hold((), 90);
    let refused = host.admit(hosted, 20, OverBudget::Refuse).err().unwrap();
    assert_eq!(refused.kind(), ToolError::OVERLOADED);
    let first = host.admit(hosted, 20, OverBudget::HeldBack).unwrap();
    drop(held);

    // The rate before the permit: over the rate, a call is refused at once
    // rather than queued behind the one running.
    let running = first.try_start(&metrics).ok().unwrap();
    let waiting = host.admit(hosted, 20, OverBudget::Refuse).unwrap();
    let refused = host.admit(hosted, 20, OverBudget::Refuse).err().unwrap();
    assert_eq!(refused.kind(), ToolError::RATE_LIMITED);

    // The permit: one call at once; the next waits for it.
    let waiting = waiting.try_start(&metrics).err().unwrap();
    let started = {
        let (host, metrics) = (host.clone(), Arc::clone(&metrics));
        tokio::spawn(async move { waiting.start(&host, &metrics).await.is_ok() })
    };
    tokio::task::yield_now().await;
    assert!(!started.is_finished(), "waits while the other call runs");
    let span = crate::trace::RequestSpan::none();
    running.finish(&span, None);
    assert!(started.await.unwrap(), "started once the permit was free");
    assert_eq!(host.in_flight(), 0);

    // The drain first of all: refused while the rate is spent, and a call
    // waiting for a permit when it begins is refused too.
    tokio::time::advance(Duration::from_secs(1)).await;
    let running = host
        .admit(hosted, 20, OverBudget::Refuse)
        .unwrap()
        .try_start(&metrics)
        .ok()
        .unwrap();
    let waiting = host.admit(hosted, 20, OverBudget::Refuse).unwrap();
    let waited = {
        let (host, metrics) = (host.clone(), Arc::clone(&metrics));
        tokio::spawn(async move { waiting.start(&host, &metrics).await.err() })
    };
    tokio::task::yield_now().await;
    let draining = {
        let host = host.clone();
        tokio::spawn(async move { host.drain(Duration::from_secs(10)).await })
    };
    let refusal = waited.await.unwrap().expect("refused by the drain");
    assert_eq!(refusal.kind(), ToolError::UNAVAILABLE);
    let refused = host.admit(hosted, 20, OverBudget::Refuse).err().unwrap();
    assert_eq!(refused.message(), "the service is shutting down; try again");
    running.finish(&span, None);
    assert!(draining.await.unwrap());
}

#[tokio::test(start_paused = true)]
async fn the_drain_refuses_new_calls_and_waits_for_those_in_flight() {
    let host = Host::new(registry(), &only(&["host-tests-hi-service"])).unwrap();
    let hosted = host.hosted("host-tests-hi-service").unwrap();
    let admitted = host.admit(hosted, 0, OverBudget::Refuse).unwrap();
    assert_eq!(host.in_flight(), 1);
    let draining = {
        let host = host.clone();
        tokio::spawn(async move { host.drain(Duration::from_secs(10)).await })
    };
    tokio::task::yield_now().await;
    assert!(host.is_closing());
    let refused = host.admit(hosted, 0, OverBudget::Refuse).err().unwrap();
    assert_eq!(refused.kind(), ToolError::UNAVAILABLE);
    assert_eq!(refused.message(), "the service is shutting down; try again");
    assert_eq!(host.in_flight(), 1, "a refused call is not counted");
    assert_eq!(host.metrics().readiness().unwrap_err(), "shutting down\n");
    // A second transport's drain is the same drain: it ends with the first.
    let second = {
        let host = host.clone();
        tokio::spawn(async move { host.drain(Duration::from_secs(1)).await })
    };
    tokio::time::advance(Duration::from_secs(3)).await;
    assert!(!draining.is_finished() && !second.is_finished());
    drop(admitted);
    assert!(draining.await.unwrap(), "drained within the grace period");
    assert!(second.await.unwrap());

    // A call that outlives the grace period is abandoned.
    let host = Host::new(registry(), &only(&["host-tests-hi-service"])).unwrap();
    let hosted = host.hosted("host-tests-hi-service").unwrap();
    let _stuck = host.admit(hosted, 0, OverBudget::Refuse).unwrap();
    let over = host.drained();
    assert!(!host.drain(Duration::from_secs(1)).await);
    tokio::time::timeout(Duration::from_millis(1), over)
        .await
        .expect("the transports hear that the drain is over");
}

/// Opened by a test: the blocking handler below waits for it.
static GATE: (std::sync::Mutex<bool>, std::sync::Condvar) =
    (std::sync::Mutex::new(false), std::sync::Condvar::new());

fn set_gate(open: bool) {
    *GATE.0.lock().unwrap() = open;
    GATE.1.notify_all();
}

/// Waits on its thread until the test opens the gate.
#[crate::tool_service(topic = "host-tests-blocking", timeout = "100ms")]
fn host_blocking() -> &'static str {
    let (open, opened) = &GATE;
    let guard = open.lock().unwrap();
    drop(opened.wait_while(guard, |open| !*open).unwrap());
    "done"
}

/// A call of `host-tests-blocking-service` on `host`, answered at its
/// timeout while its thread waits at the gate.
async fn timed_out_blocking_call(host: &Host) {
    let hosted = host.hosted("host-tests-blocking-service").unwrap();
    let metrics = metrics_of(host, "host-tests-blocking-service");
    let call = host
        .admit(hosted, 0, OverBudget::Refuse)
        .unwrap()
        .try_start(&metrics)
        .ok()
        .unwrap();
    let limits = crate::dispatch::Limits::default().with_timeout(hosted.timeout);
    let request = crate::wire::Request::decode(br#"{"config": "{}", "arguments": "{}"}"#);
    let state = State::empty();
    let lease = call.lease();
    let frame =
        crate::dispatch::dispatch_frame(hosted.service, state, "r", request, limits, lease).await;
    assert_eq!(frame.error.as_ref().unwrap().kind(), ToolError::TIMEOUT);
    call.finish(&crate::trace::RequestSpan::none(), frame.error.as_ref());
}

#[tokio::test]
async fn a_blocking_call_answered_at_its_timeout_keeps_its_place_until_its_thread_returns() {
    let options = HostOptions {
        concurrency: Some(1),
        ..only(&["host-tests-blocking-service"])
    };
    let host = Host::new(registry(), &options).unwrap();
    let hosted = host.hosted("host-tests-blocking-service").unwrap();
    let metrics = metrics_of(&host, "host-tests-blocking-service");
    // A failed assertion opens the gate, so that the runtime, which waits
    // for its blocking threads when it is dropped, does not hang the test.
    struct OpenOnDrop;
    impl Drop for OpenOnDrop {
        fn drop(&mut self) {
            set_gate(true);
        }
    }
    let _open = OpenOnDrop;

    // Answered, but its thread still runs: the permit is still its own.
    set_gate(false);
    timed_out_blocking_call(&host).await;
    assert_eq!(host.in_flight(), 1);
    let next = host.admit(hosted, 0, OverBudget::Refuse).unwrap();
    let next = next
        .try_start(&metrics)
        .err()
        .expect("no permit while the thread runs");
    let started = {
        let (host, metrics) = (host.clone(), Arc::clone(&metrics));
        tokio::spawn(async move { next.start(&host, &metrics).await.ok() })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(
        !started.is_finished(),
        "waits for the thread, not for the answer"
    );
    set_gate(true);
    let next = tokio::time::timeout(Duration::from_secs(10), started)
        .await
        .expect("the permit is free once the thread returned")
        .unwrap()
        .expect("started");
    next.finish(&crate::trace::RequestSpan::none(), None);
    assert_eq!(host.in_flight(), 0);

    // The drain waits for such a thread too.
    set_gate(false);
    timed_out_blocking_call(&host).await;
    let draining = {
        let host = host.clone();
        tokio::spawn(async move { host.drain(Duration::from_secs(30)).await })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(!draining.is_finished(), "the drain waits for the thread");
    set_gate(true);
    assert!(draining.await.unwrap(), "drained once the thread returned");
    assert_eq!(host.in_flight(), 0);
}
