//! `tool_service::metrics` against the Prometheus project's Rust client,
//! `prometheus-client`, recording the same families with the same labels and
//! buckets, side by side in one process:
//!
//! - `record`: one request recorded (in flight, counted, timed), on the ok
//!   path and on an error path (`timeout`);
//! - `record_2_threads`: the same from two threads at once on one service;
//! - `render`: the exposition text of 4 services holding some data.
//!
//! `prometheus-client` is measured twice: with per-service handles taken
//! from its families once (`pc_handles`, what a port of our module would
//! do) and with a family lookup per call (`pc_lookup`, the way its
//! documentation uses families).
//!
//! Before measuring, both render the same data and the two texts are
//! compared sample by sample; the differences in the metadata lines are
//! printed (`METRICS_COMPARE=1` prints both texts too).
//!
//! ```text
//! cargo bench -p tool-service-bench --bench metrics
//! cargo test -p tool-service-bench --bench metrics   # the comparison, each bench once
//! METRICS_PROFILE=ours_ok METRICS_PROFILE_N=100000 \
//!     valgrind --tool=callgrind --callgrind-out-file=/dev/null <bench binary>
//! ```

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::hint::black_box;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use criterion::{criterion_group, Criterion};
use prometheus_client::encoding::{prometheus_text, text};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use tool_service::metrics::Metrics;

/// The bounds of `tool_service::metrics`' latency buckets (private there;
/// the comparison below checks that both render the same `le` values).
const BUCKETS: [f64; 16] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
    120.0,
];

type Processor = [(&'static str, &'static str); 1];
type ProcessorConsumer = [(&'static str, &'static str); 2];
/// `processor`, `consumer` and `status` or `tg_consumer_state`.
type ProcessorConsumerOne = [(&'static str, &'static str); 3];
/// `processor` and `type`: error types are not known in advance.
type ProcessorType = [(&'static str, Cow<'static, str>); 2];

fn histogram() -> Histogram {
    Histogram::new(BUCKETS)
}

/// The families of `tool_service::metrics`, in `prometheus-client`.
struct Pc {
    registry: Registry,
    invocations: Family<Processor, Counter>,
    processing: Family<ProcessorConsumerOne, Counter>,
    latency: Family<ProcessorConsumer, Histogram, fn() -> Histogram>,
    state: Family<ProcessorConsumerOne, Gauge>,
    errors: Family<ProcessorType, Counter>,
    in_flight: Family<Processor, Gauge>,
    oversized: Family<Processor, Counter>,
    send_failures: Family<Processor, Counter>,
}

impl Pc {
    fn new() -> Self {
        let pc = Self {
            registry: Registry::default(),
            invocations: Family::default(),
            processing: Family::default(),
            latency: Family::new_with_constructor(histogram as fn() -> Histogram),
            state: Family::default(),
            errors: Family::default(),
            in_flight: Family::default(),
            oversized: Family::default(),
            send_failures: Family::default(),
        };
        let mut registry = Registry::default();
        // Counters are registered without `_total`: the encoder appends it.
        registry.register(
            "tg_dynamic_tool_service_invocation",
            "Dynamic tool service invocation count",
            pc.invocations.clone(),
        );
        registry.register(
            "tg_consumer_processing",
            "Processing count",
            pc.processing.clone(),
        );
        registry.register(
            "tg_consumer_request_duration_seconds",
            "Request latency (seconds)",
            pc.latency.clone(),
        );
        registry.register("tg_consumer_state", "Consumer state", pc.state.clone());
        registry.register(
            "tg_tool_service_errors",
            "Error frames sent, by error type",
            pc.errors.clone(),
        );
        registry.register(
            "tg_tool_service_oversized_responses",
            "Responses too large for the broker's maximum message size",
            pc.oversized.clone(),
        );
        registry.register(
            "tg_tool_service_send_failures",
            "Response frames the broker did not take",
            pc.send_failures.clone(),
        );
        registry.register(
            "tg_tool_service_in_flight",
            "Requests being handled",
            pc.in_flight.clone(),
        );
        Self { registry, ..pc }
    }

    /// Per-service handles, taken from the families once (as
    /// `Metrics::service` hands out an `Arc<ServiceMetrics>`).
    fn service(&self, id: &'static str) -> Arc<PcService> {
        let p = [("processor", id)];
        let pc = |status| {
            [
                ("processor", id),
                ("consumer", "request"),
                ("status", status),
            ]
        };
        let state = |state| {
            [
                ("processor", id),
                ("consumer", "request"),
                ("tg_consumer_state", state),
            ]
        };
        Arc::new(PcService {
            processor: id,
            invocations: self.invocations.get_or_create_owned(&p),
            ok: self.processing.get_or_create_owned(&pc("ok")),
            failed: self.processing.get_or_create_owned(&pc("error")),
            latency: self
                .latency
                .get_or_create_owned(&[("processor", id), ("consumer", "request")]),
            running: self.state.get_or_create_owned(&state("running")),
            stopped: self.state.get_or_create_owned(&state("stopped")),
            errors: self.errors.clone(),
            in_flight: self.in_flight.get_or_create_owned(&p),
            oversized: self.oversized.get_or_create_owned(&p),
            send_failures: self.send_failures.get_or_create_owned(&p),
        })
    }

    fn render(&self) -> String {
        let mut out = String::new();
        prometheus_text::encode(&mut out, &self.registry).unwrap();
        out
    }

    fn render_openmetrics(&self) -> String {
        let mut out = String::new();
        text::encode(&mut out, &self.registry).unwrap();
        out
    }

    // The same recording with a family lookup per call.

    fn start_lookup(&self, id: &'static str) {
        let _ = self.in_flight.get_or_create(&[("processor", id)]).inc();
    }

    fn finish_lookup(&self, id: &'static str, error: Option<&str>, elapsed: Duration) {
        let status = match error {
            None => {
                let _ = self.invocations.get_or_create(&[("processor", id)]).inc();
                "ok"
            }
            Some(kind) => {
                let _ = self
                    .errors
                    .get_or_create(&[
                        ("processor", Cow::Borrowed(id)),
                        ("type", Cow::Owned(kind.to_owned())),
                    ])
                    .inc();
                "error"
            }
        };
        let _ = self
            .processing
            .get_or_create(&[
                ("processor", id),
                ("consumer", "request"),
                ("status", status),
            ])
            .inc();
        self.latency
            .get_or_create(&[("processor", id), ("consumer", "request")])
            .observe(elapsed.as_secs_f64());
        let _ = self.in_flight.get_or_create(&[("processor", id)]).dec();
    }
}

/// One service's handles into [`Pc`]'s families.
struct PcService {
    processor: &'static str,
    invocations: Counter,
    ok: Counter,
    failed: Counter,
    latency: Histogram,
    running: Gauge,
    stopped: Gauge,
    errors: Family<ProcessorType, Counter>,
    in_flight: Gauge,
    oversized: Counter,
    send_failures: Counter,
}

impl PcService {
    fn start(self: &Arc<Self>) -> PcInFlight {
        let _ = self.in_flight.inc();
        PcInFlight {
            service: Arc::clone(self),
        }
    }

    fn count_error(&self, kind: &str) {
        // The key owns its type: a lookup allocates it.
        let _ = self
            .errors
            .get_or_create(&[
                ("processor", Cow::Borrowed(self.processor)),
                ("type", Cow::Owned(kind.to_owned())),
            ])
            .inc();
    }

    fn refused(&self, kind: &str) {
        self.count_error(kind);
    }

    fn oversized(&self) {
        let _ = self.oversized.inc();
    }

    fn send_failed(&self) {
        let _ = self.send_failures.inc();
    }

    fn set_running(&self, running: bool) {
        let _ = self.running.set(i64::from(running));
        let _ = self.stopped.set(i64::from(!running));
    }
}

/// [`tool_service::metrics::InFlight`]'s counterpart.
struct PcInFlight {
    service: Arc<PcService>,
}

impl PcInFlight {
    fn finish(self, error: Option<&str>, elapsed: Duration) {
        let service = &self.service;
        match error {
            None => {
                let _ = service.invocations.inc();
                let _ = service.ok.inc();
            }
            Some(kind) => {
                let _ = service.failed.inc();
                service.count_error(kind);
            }
        }
        service.latency.observe(elapsed.as_secs_f64());
    }
}

impl Drop for PcInFlight {
    fn drop(&mut self) {
        let _ = self.service.in_flight.dec();
    }
}

const SERVICES: [&str; 4] = [
    "echo-service",
    "joke-service",
    "search-service",
    "weather-service",
];

/// Durations spread over the buckets, `+Inf` included.
fn durations() -> impl Iterator<Item = Duration> + Clone {
    [
        200,
        700,
        1_800,
        4_000,
        9_000,
        20_000,
        45_000,
        90_000,
        300_000,
        800_000,
        2_000_000,
        7_000_000,
        200_000_000,
    ]
    .into_iter()
    .map(Duration::from_micros)
}

/// The same traffic recorded by both; returns the requests left in flight.
fn populate(ours: &Metrics, pc: &Pc) -> Vec<(tool_service::metrics::InFlight, PcInFlight)> {
    let mut held = Vec::new();
    for (index, id) in SERVICES.into_iter().enumerate() {
        let (o, p) = (ours.service(id), pc.service(id));
        let running = index != 3;
        o.set_running(running);
        p.set_running(running);
        for (n, elapsed) in durations().cycle().take(250 + 50 * index).enumerate() {
            let error = match n % 25 {
                0 => Some("timeout"),
                7 => Some("tool-service-error"),
                _ => None,
            };
            o.start().finish(error, elapsed);
            p.start().finish(error, elapsed);
        }
        for _ in 0..index {
            o.refused("overloaded");
            p.refused("overloaded");
        }
        if index == 1 {
            o.oversized();
            p.oversized();
            o.send_failed();
            p.send_failed();
        }
        held.push((o.start(), p.start()));
    }
    held
}

/// A parsed exposition: metadata lines, other comments, and samples keyed
/// by name and sorted labels.
#[derive(Default)]
struct Exposition {
    help: BTreeMap<String, String>,
    kind: BTreeMap<String, String>,
    comments: Vec<String>,
    samples: BTreeMap<String, f64>,
}

fn parse(text: &str) -> Exposition {
    let mut parsed = Exposition::default();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let (name, help) = rest.split_once(' ').unwrap();
            parsed.help.insert(name.into(), help.into());
        } else if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap();
            parsed.kind.insert(name.into(), kind.into());
        } else if line.starts_with('#') {
            parsed.comments.push(line.into());
        } else {
            let (series, value) = line.rsplit_once(' ').unwrap();
            let (name, labels) = match series.split_once('{') {
                Some((name, labels)) => (name, labels.trim_end_matches('}')),
                None => (series, ""),
            };
            // No label value here holds a comma.
            let mut labels: Vec<&str> = labels.split(',').filter(|l| !l.is_empty()).collect();
            labels.sort_unstable();
            let key = format!("{name}{{{}}}", labels.join(","));
            let value = match value {
                "+Inf" => f64::INFINITY,
                value => value.parse().unwrap(),
            };
            assert!(
                parsed.samples.insert(key, value).is_none(),
                "duplicate series {line}"
            );
        }
    }
    parsed
}

/// Compares `theirs` with `ours`; the sample sets must be the same, the
/// differences in metadata are returned for printing.
fn compare(ours: &str, theirs: &str) -> (Vec<String>, Vec<String>) {
    let (a, b) = (parse(ours), parse(theirs));
    let mut sample_diffs = Vec::new();
    for (key, value) in &a.samples {
        match b.samples.get(key) {
            None => sample_diffs.push(format!("only ours: {key} {value}")),
            Some(other) if (value - other).abs() > 1e-9 * value.abs().max(1.0) => {
                sample_diffs.push(format!("value: {key} ours {value}, theirs {other}"))
            }
            Some(_) => {}
        }
    }
    for (key, value) in &b.samples {
        if !a.samples.contains_key(key) {
            sample_diffs.push(format!("only theirs: {key} {value}"));
        }
    }
    let mut meta_diffs = Vec::new();
    for (what, x, y) in [("HELP", &a.help, &b.help), ("TYPE", &a.kind, &b.kind)] {
        for (name, value) in x {
            match y.get(name) {
                None => meta_diffs.push(format!("{what} only ours: {name} {value}")),
                Some(other) if other != value => {
                    meta_diffs.push(format!("{what} {name}: ours {value:?}, theirs {other:?}"))
                }
                Some(_) => {}
            }
        }
        for (name, value) in y {
            if !x.contains_key(name) {
                meta_diffs.push(format!("{what} only theirs: {name} {value}"));
            }
        }
    }
    for comment in b.comments.iter().filter(|c| !a.comments.contains(c)) {
        meta_diffs.push(format!("comment only theirs: {comment}"));
    }
    (sample_diffs, meta_diffs)
}

/// Every family's series in one rendering's order: (family, first label).
fn series_order(text: &str) -> Vec<String> {
    text.lines()
        .filter(|line| line.contains("_count{") || line.starts_with("tg_tool_service_in_flight"))
        .map(|line| line.split(' ').next().unwrap().to_owned())
        .collect()
}

fn check_output() {
    let (ours, pc) = (Metrics::new(), Pc::new());
    let held = populate(&ours, &pc);
    let (ours_text, pc_text, om_text) = (ours.render(), pc.render(), pc.render_openmetrics());
    drop(held);
    if std::env::var_os("METRICS_COMPARE").is_some() {
        eprintln!("--- ours\n{ours_text}--- prometheus-client, prometheus_text\n{pc_text}--- prometheus-client, OpenMetrics text\n{om_text}---");
    }
    let (samples, meta) = compare(&ours_text, &pc_text);
    eprintln!(
        "prometheus_text vs ours: {} samples in ours, {} sample differences, {} metadata differences",
        parse(&ours_text).samples.len(),
        samples.len(),
        meta.len()
    );
    for line in samples.iter().chain(&meta) {
        eprintln!("  {line}");
    }
    assert!(
        samples.is_empty(),
        "prometheus-client's Prometheus text holds other samples"
    );
    // Metadata: only the full stop appended to every HELP text.
    for line in &meta {
        assert!(
            line.starts_with("HELP ") && line.ends_with(".\""),
            "unexpected metadata difference: {line}"
        );
    }
    let (samples, meta) = compare(&ours_text, &om_text);
    eprintln!(
        "OpenMetrics text vs ours: {} sample differences, {} metadata differences",
        samples.len(),
        meta.len()
    );
    for line in samples.iter().chain(&meta) {
        eprintln!("  {line}");
    }
    eprintln!(
        "series order, ours: {:?}\n             prometheus-client: {:?}",
        series_order(&ours_text),
        series_order(&pc_text)
    );
}

fn record(c: &mut Criterion) {
    check_output();

    let elapsed = Duration::from_millis(3);
    let ours = Metrics::new();
    let pc = Pc::new();
    // Two error types known before the measured one, in both.
    let o = ours.service("joke-service");
    let p = pc.service("joke-service");
    for kind in ["overloaded", "tool-service-error", "timeout"] {
        o.refused(kind);
        p.refused(kind);
        pc.finish_lookup("joke-service", Some(kind), elapsed);
    }

    let mut group = c.benchmark_group("record");
    group.bench_function("ours_ok", |b| {
        b.iter(|| o.start().finish(black_box(None), black_box(elapsed)))
    });
    group.bench_function("pc_handles_ok", |b| {
        b.iter(|| p.start().finish(black_box(None), black_box(elapsed)))
    });
    group.bench_function("pc_lookup_ok", |b| {
        b.iter(|| {
            pc.start_lookup(black_box("joke-service"));
            pc.finish_lookup(
                black_box("joke-service"),
                black_box(None),
                black_box(elapsed),
            );
        })
    });
    group.bench_function("ours_error", |b| {
        b.iter(|| {
            o.start()
                .finish(black_box(Some("timeout")), black_box(elapsed))
        })
    });
    group.bench_function("pc_handles_error", |b| {
        b.iter(|| {
            p.start()
                .finish(black_box(Some("timeout")), black_box(elapsed))
        })
    });
    group.bench_function("pc_lookup_error", |b| {
        b.iter(|| {
            pc.start_lookup(black_box("joke-service"));
            pc.finish_lookup(
                black_box("joke-service"),
                black_box(Some("timeout")),
                black_box(elapsed),
            );
        })
    });
    group.finish();

    // Two threads, one service: wall time for `iters` recordings on each.
    fn two_threads(iters: u64, one: impl Fn() + Sync) -> Duration {
        let barrier = Barrier::new(2);
        std::thread::scope(|scope| {
            let other = scope.spawn(|| {
                barrier.wait();
                for _ in 0..iters {
                    one();
                }
            });
            barrier.wait();
            let start = Instant::now();
            for _ in 0..iters {
                one();
            }
            other.join().unwrap();
            start.elapsed()
        })
    }
    let mut group = c.benchmark_group("record_2_threads");
    for (name, error) in [("ok", None), ("error", Some("timeout"))] {
        group.bench_function(format!("ours_{name}"), |b| {
            b.iter_custom(|iters| {
                two_threads(iters, || {
                    o.start().finish(black_box(error), black_box(elapsed))
                })
            })
        });
        group.bench_function(format!("pc_handles_{name}"), |b| {
            b.iter_custom(|iters| {
                two_threads(iters, || {
                    p.start().finish(black_box(error), black_box(elapsed))
                })
            })
        });
        group.bench_function(format!("pc_lookup_{name}"), |b| {
            b.iter_custom(|iters| {
                two_threads(iters, || {
                    pc.start_lookup(black_box("joke-service"));
                    pc.finish_lookup(
                        black_box("joke-service"),
                        black_box(error),
                        black_box(elapsed),
                    );
                })
            })
        });
    }
    group.finish();
}

fn render(c: &mut Criterion) {
    let ours = Metrics::new();
    let pc = Pc::new();
    let _held = populate(&ours, &pc);
    let mut group = c.benchmark_group("render_4_services");
    group.bench_function("ours", |b| b.iter(|| ours.render()));
    group.bench_function("pc_prometheus_text", |b| b.iter(|| pc.render()));
    group.bench_function("pc_openmetrics_text", |b| {
        b.iter(|| pc.render_openmetrics())
    });
    group.finish();
}

/// `METRICS_PROFILE=<variant> METRICS_PROFILE_N=<n>`: runs one variant `n`
/// times and exits, for `valgrind --tool=callgrind` (instructions per call
/// = the difference to `n=0`, divided by `n`: a figure the machine's load
/// does not move). Everything is set up whatever the variant, so the
/// baseline is the same.
fn profile(variant: &str) {
    let n: u64 = std::env::var("METRICS_PROFILE_N").map_or(100_000, |n| n.parse().unwrap());
    let elapsed = Duration::from_millis(3);
    let (ours, pc) = (Metrics::new(), Pc::new());
    let (o, p) = (ours.service("joke-service"), pc.service("joke-service"));
    for kind in ["overloaded", "tool-service-error", "timeout"] {
        o.refused(kind);
        p.refused(kind);
        pc.finish_lookup("joke-service", Some(kind), elapsed);
    }
    let (ours_4, pc_4) = (Metrics::new(), Pc::new());
    let _held = populate(&ours_4, &pc_4);
    let mut bytes = 0;
    for _ in 0..n {
        match variant {
            "ours_ok" => o.start().finish(black_box(None), black_box(elapsed)),
            "pc_handles_ok" => p.start().finish(black_box(None), black_box(elapsed)),
            "pc_lookup_ok" => {
                pc.start_lookup(black_box("joke-service"));
                pc.finish_lookup(
                    black_box("joke-service"),
                    black_box(None),
                    black_box(elapsed),
                );
            }
            "ours_error" => o
                .start()
                .finish(black_box(Some("timeout")), black_box(elapsed)),
            "pc_handles_error" => p
                .start()
                .finish(black_box(Some("timeout")), black_box(elapsed)),
            "pc_lookup_error" => {
                pc.start_lookup(black_box("joke-service"));
                pc.finish_lookup(
                    black_box("joke-service"),
                    black_box(Some("timeout")),
                    black_box(elapsed),
                );
            }
            "render_ours" => bytes += ours_4.render().len(),
            "render_pc_prometheus_text" => bytes += pc_4.render().len(),
            "render_pc_openmetrics_text" => bytes += pc_4.render_openmetrics().len(),
            other => panic!("no variant {other}"),
        }
    }
    println!("{bytes}");
}

criterion_group!(benches, record, render);

fn main() {
    if let Ok(variant) = std::env::var("METRICS_PROFILE") {
        return profile(&variant);
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
