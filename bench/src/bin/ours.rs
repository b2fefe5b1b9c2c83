//! The benchmarked tools (`tool_service_bench::echo` and `tell_joke`,
//! written with `#[tool_service]`), run with `serve`.

// Linking the library registers its services.
use tool_service_bench as _;

fn main() -> std::process::ExitCode {
    tool_service::run()
}
