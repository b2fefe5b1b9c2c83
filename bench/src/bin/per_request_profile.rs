//! Runs the per-request path in a loop, for `valgrind --tool=callgrind`.

use tool_service::wire::Frame;
use tool_service::{dispatch, Registry};

const PAYLOAD: &[u8] =
    br#"{"user": "alice", "config": "{\"style\": \"pun\"}", "arguments": "{\"topic\": \"programming\"}"}"#;

fn main() {
    if std::env::args().any(|arg| arg == "--hand") {
        let mut bytes = 0;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        for _ in 0..20000 {
            runtime.block_on(async {
                bytes +=
                    tool_service_bench::hand_written("joke", std::hint::black_box(PAYLOAD)).len()
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
    let service = Registry::collect()
        .unwrap()
        .service("bench-joke-service")
        .unwrap();
    let mut frames: Vec<Frame> = Vec::with_capacity(1);
    let mut bytes = 0;
    for _ in 0..iterations {
        runtime.block_on(async {
            frames.clear();
            dispatch::dispatch(service, "id", std::hint::black_box(PAYLOAD), &mut frames)
                .await
                .unwrap();
            bytes += frames[0].encode().len();
        });
    }
    println!("{bytes}");
}
