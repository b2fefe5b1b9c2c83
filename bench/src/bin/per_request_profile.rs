//! Runs the per-request path in a loop, for `valgrind --tool=callgrind`;
//! with `--paired ROUNDS`, times ours against the hand-written path in
//! alternating batches and prints the ratio per round as JSON (min, median,
//! max), so that the machine's slow spells fall on both alike.

use tool_service::wire::Frame;
use tool_service_bench::{through_dispatch, JOKE_REQUEST};

/// Requests per batch of the paired measurement.
const BATCH: u32 = 2000;

/// Nanoseconds per request of `batch` runs of `one`.
fn per_request(mut one: impl FnMut()) -> f64 {
    let started = std::time::Instant::now();
    for _ in 0..BATCH {
        one();
    }
    started.elapsed().as_nanos() as f64 / f64::from(BATCH)
}

fn paired(rounds: usize) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let service = tool_service_bench::joke_service();
    let mut frames: Vec<Frame> = Vec::with_capacity(1);
    let mut bytes = 0;
    let mut hand = || {
        runtime.block_on(async {
            bytes +=
                tool_service_bench::hand_written("joke", std::hint::black_box(JOKE_REQUEST)).len()
        })
    };
    let mut times: Vec<(f64, f64)> = Vec::with_capacity(rounds);
    let mut ours = || {
        let payload = runtime.block_on(through_dispatch(
            service,
            std::hint::black_box(JOKE_REQUEST),
            &mut frames,
        ));
        std::hint::black_box(payload);
    };
    // Warm-up.
    per_request(&mut hand);
    per_request(&mut ours);
    for round in 0..rounds {
        let (h, o) = if round % 2 == 0 {
            let h = per_request(&mut hand);
            (h, per_request(&mut ours))
        } else {
            let o = per_request(&mut ours);
            (per_request(&mut hand), o)
        };
        times.push((h, o));
    }
    let mut ratios: Vec<f64> = times.iter().map(|(h, o)| o / h).collect();
    ratios.sort_by(f64::total_cmp);
    let median = |mut values: Vec<f64>| {
        values.sort_by(f64::total_cmp);
        values[values.len() / 2]
    };
    println!(
        "{{\"rounds\": {rounds}, \"batch\": {BATCH}, \"ratio_min\": {:.3}, \"ratio_median\": {:.3}, \"ratio_max\": {:.3}, \"hand_ns\": {:.0}, \"ours_ns\": {:.0}}}",
        ratios[0],
        ratios[ratios.len() / 2],
        ratios[ratios.len() - 1],
        median(times.iter().map(|(h, _)| *h).collect()),
        median(times.iter().map(|(_, o)| *o).collect()),
    );
}

fn main() {
    if let Some(rounds) = std::env::args().skip_while(|arg| arg != "--paired").nth(1) {
        paired(rounds.parse().expect("--paired ROUNDS"));
        return;
    }
    let iterations: usize = tool_service_bench::arg("--iterations", "20000")
        .parse()
        .unwrap();
    if std::env::args().any(|arg| arg == "--hand") {
        let mut bytes = 0;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        for _ in 0..iterations {
            runtime.block_on(async {
                bytes +=
                    tool_service_bench::hand_written("joke", std::hint::black_box(JOKE_REQUEST))
                        .len()
            });
        }
        println!("{bytes}");
        return;
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let mut frames: Vec<Frame> = Vec::with_capacity(1);
    let mut bytes = 0;
    if std::env::args().any(|arg| arg == "--state") {
        // The same tool taking a `#[state]` value.
        let (service, state) = tool_service_bench::joke_service_with_state();
        for _ in 0..iterations {
            runtime.block_on(async {
                frames.clear();
                tool_service::dispatch::dispatch_with(
                    service,
                    &state,
                    "id",
                    std::hint::black_box(JOKE_REQUEST),
                    tool_service::dispatch::Limits::default(),
                    &mut frames,
                )
                .await
                .unwrap_or_else(|never| match never {});
                bytes += frames[0].encode().len();
            });
        }
        println!("{bytes}");
        return;
    }
    // `--search`: a typed search with bounds; `--search-loose`: the same
    // as an LLM writes it, coerced.
    let (service, request) = if std::env::args().any(|arg| arg == "--search") {
        (
            tool_service_bench::search_service(),
            tool_service_bench::SEARCH_REQUEST,
        )
    } else if std::env::args().any(|arg| arg == "--search-loose") {
        (
            tool_service_bench::search_service(),
            tool_service_bench::SEARCH_REQUEST_LOOSE,
        )
    } else {
        (tool_service_bench::joke_service(), JOKE_REQUEST)
    };
    for _ in 0..iterations {
        let payload = runtime.block_on(through_dispatch(
            service,
            std::hint::black_box(request),
            &mut frames,
        ));
        bytes += payload.len();
    }
    println!("{bytes}");
}
