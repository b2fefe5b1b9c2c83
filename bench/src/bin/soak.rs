//! The soak test: N requests to a serving echo service, `--in-flight` at a
//! time, each with its own id and its own text, read back on a raw
//! subscription of the response topic. Every id must be answered exactly
//! once, with its own text. Samples the service's RSS (`--pid`) as it goes
//! and prints one JSON line; exits 1 if anything was lost, duplicated,
//! misrouted or answered with an error.
//!
//!     soak --url pulsar://127.0.0.1:6650 --topic bench-echo \
//!          --requests 100000 --in-flight 64 --pid 1234

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use serde_json::json;
use tokio::sync::Semaphore;
use tool_service::pulsar::broker::pulsar::producer;
use tool_service::pulsar::broker::{subscribe_own, BrokerOptions};
use tool_service::wire::{Frame, Request};
use tool_service_bench::arg;

/// What the reader saw.
#[derive(Default)]
struct Tally {
    answered: AtomicU64,
    duplicates: AtomicU64,
    misrouted: AtomicU64,
    errors: AtomicU64,
    /// Responses to other clients on the shared response topic.
    foreign: AtomicU64,
}

fn text_of(run: u32, n: usize) -> String {
    format!("soak {run} request {n}: the quick brown fox jumps over the lazy dog")
}

fn rss_kib(pid: Option<u32>) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{}/status", pid?)).ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = arg("--url", "pulsar://127.0.0.1:6650");
    let topic = arg("--topic", "bench-echo");
    let requests: usize = arg("--requests", "100000").parse()?;
    let in_flight: usize = arg("--in-flight", "64").parse()?;
    let pid: Option<u32> = arg("--pid", "").parse().ok();
    let patience = Duration::from_secs(arg("--timeout-s", "60").parse()?);
    let run: u32 = std::process::id()
        ^ std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)?
            .subsec_nanos();
    let prefix = format!("soak-{run}-");

    let pulsar = BrokerOptions::new(url).connect().await?;
    let mut consumer =
        subscribe_own(&pulsar, &format!("non-persistent://tg/response/{topic}")).await?;
    let mut requests_out = pulsar
        .producer()
        .with_topic(format!("non-persistent://tg/request/{topic}"))
        .with_options(producer::ProducerOptions {
            block_queue_if_full: true,
            ..producer::ProducerOptions::default()
        })
        .build()
        .await?;

    let window = Arc::new(Semaphore::new(in_flight));
    let tally = Arc::new(Tally::default());
    let seen: Arc<Vec<AtomicBool>> =
        Arc::new((0..requests).map(|_| AtomicBool::new(false)).collect());
    let reader = {
        let (window, tally, seen, prefix) = (
            Arc::clone(&window),
            Arc::clone(&tally),
            Arc::clone(&seen),
            prefix.clone(),
        );
        tokio::spawn(async move {
            while let Some(Ok(message)) = consumer.next().await {
                let _ = consumer.ack(&message).await;
                let id = tool_service::pulsar::broker::message_id(&message)
                    .unwrap_or_default()
                    .to_owned();
                let Some(n) = id
                    .strip_prefix(&prefix)
                    .and_then(|n| n.parse::<usize>().ok())
                    .filter(|n| *n < seen.len())
                else {
                    let _ = tally.foreign.fetch_add(1, Ordering::Relaxed);
                    continue;
                };
                let frame = Frame::decode(&message.payload.data);
                if seen[n].swap(true, Ordering::Relaxed) {
                    let _ = tally.duplicates.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
                match frame {
                    Ok(frame) if frame.error.is_some() || !frame.end_of_stream => {
                        let _ = tally.errors.fetch_add(1, Ordering::Relaxed);
                    }
                    Ok(frame) if frame.response == text_of(run, n) => {}
                    _ => {
                        let _ = tally.misrouted.fetch_add(1, Ordering::Relaxed);
                    }
                }
                let _ = tally.answered.fetch_add(1, Ordering::Relaxed);
                window.add_permits(1);
            }
        })
    };

    let rss_start = rss_kib(pid);
    let mut rss_samples = Vec::new();
    let send_failures = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    for n in 0..requests {
        window.acquire().await?.forget();
        let payload = Request::new(json!({}), json!({ "text": text_of(run, n) })).encode();
        let message = producer::Message {
            payload,
            properties: [(String::from("id"), format!("{prefix}{n}"))].into(),
            ..producer::Message::default()
        };
        let receipt = requests_out.send_non_blocking(message).await?;
        let failures = Arc::clone(&send_failures);
        drop(tokio::spawn(async move {
            if receipt.await.is_err() {
                let _ = failures.fetch_add(1, Ordering::Relaxed);
            }
        }));
        if n % 10_000 == 9_999 {
            rss_samples.push(json!({"sent": n + 1, "rss_kib": rss_kib(pid)}));
        }
    }
    // Wait for the last answers, as long as they keep coming.
    let mut last = (tally.answered.load(Ordering::Relaxed), Instant::now());
    while tally.answered.load(Ordering::Relaxed) < requests as u64 {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let now = tally.answered.load(Ordering::Relaxed);
        if now != last.0 {
            last = (now, Instant::now());
        } else if last.1.elapsed() > patience {
            break;
        }
    }
    let elapsed = started.elapsed();
    // Late duplicates would show up now.
    tokio::time::sleep(Duration::from_secs(2)).await;
    reader.abort();
    let rss_end = rss_kib(pid);

    let answered = tally.answered.load(Ordering::Relaxed);
    let lost = requests as u64 - answered;
    let duplicates = tally.duplicates.load(Ordering::Relaxed);
    let misrouted = tally.misrouted.load(Ordering::Relaxed);
    let errors = tally.errors.load(Ordering::Relaxed);
    let result = json!({
        "requests": requests,
        "in_flight": in_flight,
        "answered": answered,
        "lost": lost,
        "duplicates": duplicates,
        "misrouted": misrouted,
        "errors": errors,
        "send_failures": send_failures.load(Ordering::Relaxed),
        "foreign": tally.foreign.load(Ordering::Relaxed),
        "seconds": elapsed.as_secs_f64(),
        "throughput": answered as f64 / elapsed.as_secs_f64(),
        "rss_kib_start": rss_start,
        "rss_kib_end": rss_end,
        "rss_kib_samples": rss_samples,
    });
    println!("{result}");
    if lost + duplicates + misrouted + errors > 0 {
        std::process::exit(1);
    }
    Ok(())
}
