//! Runs the per-request path in a loop, for `valgrind --tool=callgrind`.

use tool_service::wire::Frame;
use tool_service_bench::{through_dispatch, JOKE_REQUEST};

fn main() {
    if std::env::args().any(|arg| arg == "--hand") {
        let mut bytes = 0;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        for _ in 0..20000 {
            runtime.block_on(async {
                bytes +=
                    tool_service_bench::hand_written("joke", std::hint::black_box(JOKE_REQUEST))
                        .len()
            });
        }
        println!("{bytes}");
        return;
    }
    let iterations: usize = tool_service_bench::arg("--iterations", "20000")
        .parse()
        .unwrap();
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
    let service = tool_service_bench::joke_service();
    for _ in 0..iterations {
        let payload = runtime.block_on(through_dispatch(
            service,
            std::hint::black_box(JOKE_REQUEST),
            &mut frames,
        ));
        bytes += payload.len();
    }
    println!("{bytes}");
}
