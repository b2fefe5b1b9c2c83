//! `ours` built with the `otel` feature (`--features otel`), for
//! bench/traced.py: the same program, tracing compiled in.

fn main() -> std::process::ExitCode {
    tool_service_bench::serve_main()
}
