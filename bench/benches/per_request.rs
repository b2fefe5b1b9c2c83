//! The per-request path inside the process, without a broker: envelope
//! decode → typed config/argument decode → handler → response encode, by
//! `tool-service`'s dispatch and by hand-written serde_json, side by side.

use criterion::{criterion_group, criterion_main, Criterion};
use tool_service::dispatch;
use tool_service::wire::Frame;
use tool_service_bench::{through_dispatch, JOKE_REQUEST};

async fn hand_written(payload: &[u8]) -> Vec<u8> {
    tool_service_bench::hand_written("joke", payload)
}

fn per_request(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let service = tool_service_bench::joke_service();
    let expected = runtime.block_on(hand_written(JOKE_REQUEST));
    let mut check: Vec<Frame> = Vec::new();
    runtime
        .block_on(dispatch::dispatch(service, "id", JOKE_REQUEST, &mut check))
        .unwrap();
    assert_eq!(
        check[0].encode(),
        expected,
        "both paths produce the same bytes"
    );

    let mut group = c.benchmark_group("per_request");
    group.bench_function("hand_written_serde_json", |b| {
        b.iter(|| runtime.block_on(hand_written(std::hint::black_box(JOKE_REQUEST))))
    });
    // The sink stands for the transport's producer: reused, like a producer.
    let mut frames: Vec<Frame> = Vec::with_capacity(1);
    group.bench_function("tool_service_dispatch", |b| {
        b.iter(|| {
            runtime.block_on(through_dispatch(
                service,
                std::hint::black_box(JOKE_REQUEST),
                &mut frames,
            ))
        })
    });
    // The same tool taking a `#[state]` value.
    let (stateful, state) = tool_service_bench::joke_service_with_state();
    let limits = dispatch::Limits::default();
    frames.clear();
    runtime
        .block_on(dispatch::dispatch_with(
            stateful,
            &state,
            "id",
            JOKE_REQUEST,
            limits,
            &mut frames,
        ))
        .unwrap();
    assert_eq!(frames[0].encode(), expected, "the stateful path too");
    group.bench_function("tool_service_dispatch_with_state", |b| {
        b.iter(|| {
            runtime.block_on(async {
                frames.clear();
                dispatch::dispatch_with(
                    stateful,
                    &state,
                    "id",
                    std::hint::black_box(JOKE_REQUEST),
                    limits,
                    &mut frames,
                )
                .await
                .unwrap_or_else(|never| match never {});
                frames[0].encode()
            })
        })
    });
    if std::env::var_os("PER_REQUEST_PARTS").is_some() {
        group.bench_function("part_request_decode", |b| {
            b.iter(|| {
                tool_service::wire::Request::decode(std::hint::black_box(JOKE_REQUEST)).unwrap()
            })
        });
        group.bench_function("part_encode", |b| {
            b.iter(|| Frame::last(Ok(String::from("Here's a pun for you: x"))).encode())
        });
    }
    group.finish();
}

criterion_group!(benches, per_request);
criterion_main!(benches);
