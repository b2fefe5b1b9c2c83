use tool_service::tool_service;

/// Bounds a type cannot hold.
///
/// # Arguments
/// * `name` - A name.
/// * `small` - A small number.
/// * `days` - How many days.
/// * `ratio` - A ratio.
/// * `note` - A note.
/// * `label` - A label.
#[tool_service(topic = "misused-bounds")]
async fn misused(
    #[arg(range(min = 1, max = 5))] name: String,
    #[arg(range(max = 300))] small: u8,
    #[arg(range(min = 1, max = 30), default = 40)] days: u32,
    #[arg(default = "half")] ratio: f64,
    #[arg(default = "none")] note: Option<String>,
    #[arg(length(max = 3), maximum = 4)] label: String,
) -> String {
    format!("{name} {small} {days} {ratio} {note:?} {label}")
}

/// `#[arg]` on a config parameter.
///
/// # Arguments
/// * `text` - A text.
#[tool_service(topic = "misused-bounds-config")]
async fn on_config(#[config_param] #[arg(default = 1)] index: Option<u32>, text: String) -> String {
    format!("{index:?} {text}")
}

fn main() {}
