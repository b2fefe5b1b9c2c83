//! The benchmarked tools (`tool_service_bench::echo`, `tell_joke` and
//! `tell_joke_with_state`, written with `#[tool_service]`), run with `serve`.

fn main() -> std::process::ExitCode {
    tool_service_bench::serve_main()
}
