//! The load generator: the project's Rust client keeping N requests in
//! flight against a tool service, printing one JSON line of results.
//!
//!     loadgen --url pulsar://127.0.0.1:6650 --topic bench-echo --kind echo \
//!             --in-flight 64 --requests 20000 --warmup 2000 [--spin-us 300]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;
use tool_service::pulsar::broker::BrokerOptions;
use tool_service::pulsar::client::ToolClient;
use tool_service_bench::arg;

async fn run(
    client: &ToolClient,
    kind: &str,
    in_flight: usize,
    requests: usize,
    spin_micros: u64,
) -> (Vec<Duration>, usize, Duration) {
    let next = AtomicUsize::new(0);
    let started = Instant::now();
    let workers = (0..in_flight).map(|_| async {
        let mut latencies = Vec::new();
        let mut errors = 0;
        while next.fetch_add(1, Ordering::Relaxed) < requests {
            let (config, arguments) = match kind {
                "echo" => (
                    json!({}),
                    json!({"text": "the quick brown fox jumps over the lazy dog"}),
                ),
                "spin" => (json!({}), json!({"micros": spin_micros})),
                _ => (json!({"style": "pun"}), json!({"topic": "programming"})),
            };
            let sent = Instant::now();
            match client.call(&config, &arguments).await {
                Ok(_) => latencies.push(sent.elapsed()),
                Err(_) => errors += 1,
            }
        }
        (latencies, errors)
    });
    let mut all = Vec::with_capacity(requests);
    let mut errors = 0;
    for (latencies, failed) in futures_util::future::join_all(workers).await {
        all.extend(latencies);
        errors += failed;
    }
    (all, errors, started.elapsed())
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index].as_secs_f64() * 1e6
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = arg("--url", "pulsar://127.0.0.1:6650");
    let topic = arg("--topic", "bench-echo");
    let kind = arg("--kind", "echo");
    let in_flight: usize = arg("--in-flight", "1").parse()?;
    let requests: usize = arg("--requests", "2000").parse()?;
    let warmup: usize = arg("--warmup", "200").parse()?;
    let timeout: u64 = arg("--timeout-s", "30").parse()?;
    // The spin tool's work per request.
    let spin_micros: u64 = arg("--spin-us", "300").parse()?;
    let pulsar = BrokerOptions::new(url).connect().await?;
    let client = ToolClient::connect(
        &pulsar,
        &format!("non-persistent://tg/request/{topic}"),
        &format!("non-persistent://tg/response/{topic}"),
    )
    .await?
    .with_timeout(Duration::from_secs(timeout));
    run(&client, &kind, in_flight, warmup, spin_micros).await;
    let (mut latencies, errors, elapsed) =
        run(&client, &kind, in_flight, requests, spin_micros).await;
    latencies.sort();
    let result = json!({
        "topic": topic,
        "kind": kind,
        "in_flight": in_flight,
        "requests": requests,
        "answered": latencies.len(),
        "errors": errors,
        "seconds": elapsed.as_secs_f64(),
        "throughput": latencies.len() as f64 / elapsed.as_secs_f64(),
        "p50_us": percentile(&latencies, 0.50),
        "p99_us": percentile(&latencies, 0.99),
    });
    println!("{result}");
    Ok(())
}
