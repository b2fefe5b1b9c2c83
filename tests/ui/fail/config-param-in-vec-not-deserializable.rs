use tool_service::tool_service;

#[derive(schemars::JsonSchema)]
enum Style {
    Pun,
    Limerick,
}

/// Tell a joke.
#[tool_service(topic = "joke", tool(config(styles = "pun")))]
async fn tell_joke(#[config_param] styles: Vec<Style>) -> String {
    format!("{}", styles.len())
}

fn main() {}
