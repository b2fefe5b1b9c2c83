//! The benchmarked tools (`tool_service_bench::echo`, `tell_joke` and
//! `tell_joke_with_state`, written with `#[tool_service]`), run with `serve`.

use tool_service_bench::JokeBook;

fn main() -> std::process::ExitCode {
    tool_service::App::new()
        .setup(|| async {
            Ok::<_, tool_service::HookError>(tool_service::State::new().with(JokeBook {
                default_style: "pun",
            }))
        })
        .run()
}
