//! Not public API. Used by generated code.
//!
//! Everything `#[tool_service]` expands to reaches the runtime through this
//! module, by absolute path, so users need no other dependency.

use std::future::Future;

use serde::de::DeserializeOwned;

pub use ::inventory;
pub use ::schemars;
pub use ::serde;

pub use crate::error::{ErrorProbe, ViaDisplay, ViaTypedError, ViaUnsupported};
pub use crate::response::response_text;
pub use crate::spec::{ConfigValue, Handler, HandlerFuture, Invocation, ServiceSpec, ToolSpec};
pub use crate::state::StateNeed;
pub use crate::stream::Chunks;
pub use crate::{Context, ToolError};

use crate::decode::{decode, decode_showing, Part, Quoted};

/// The types a service decodes, named once by generated code so that a type
/// lacking `Deserialize` or `JsonSchema` is reported once, on the user's type.
pub trait ServiceTypes: 'static {
    /// What `config` decodes into.
    type Config: DeserializeOwned + schemars::JsonSchema;
    /// What `arguments` decodes into.
    type Arguments: DeserializeOwned + schemars::JsonSchema;
}

/// Decodes config and arguments, then runs `body` (the call of the user's
/// function and the conversion of its result).
pub fn invoke<S, F, Fut>(invocation: Invocation, body: F) -> HandlerFuture
where
    S: ServiceTypes,
    F: FnOnce(S::Config, S::Arguments, Context, Chunks) -> Fut,
    Fut: Future<Output = Result<String, ToolError>> + Send + 'static,
{
    let Invocation {
        request,
        context,
        chunks,
        state: _,
    } = invocation;
    let config = match decode::<S::Config>(&request.config, Part::Config) {
        Ok(config) => config,
        Err(error) => return Box::pin(std::future::ready(Err(error))),
    };
    let arguments = match decode::<S::Arguments>(&request.arguments, Part::Arguments) {
        Ok(arguments) => arguments,
        Err(error) => return Box::pin(std::future::ready(Err(error))),
    };
    Box::pin(body(config, arguments, context, chunks))
}

/// The `response` text of a handler's value, moving a `String` instead of
/// copying it (the common case), else as [`response_text`].
pub fn text_of<T: serde::Serialize + 'static>(value: T) -> Result<String, ToolError> {
    let mut slot = Some(value);
    if let Some(text) = (&mut slot as &mut dyn std::any::Any).downcast_mut::<Option<String>>() {
        return Ok(text.take().unwrap_or_default());
    }
    match &slot {
        Some(value) => response_text(value),
        None => Ok(String::new()),
    }
}

/// The JSON schema of a service's config type.
pub fn config_schema<S: ServiceTypes>() -> schemars::Schema {
    schemars::SchemaGenerator::default().into_root_schema_for::<S::Config>()
}

/// The JSON schema of a service's argument type.
pub fn arguments_schema<S: ServiceTypes>() -> schemars::Schema {
    schemars::SchemaGenerator::default().into_root_schema_for::<S::Arguments>()
}

/// Checks that a preset's config values decode as the service's config type.
pub fn check_config<S: ServiceTypes>(text: &str) -> Result<(), ToolError> {
    // Preset values come from the source code, so they may be quoted.
    decode_showing::<S::Config>(text, Part::Config, Quoted::Shortened).map(drop)
}

/// Compile-time check, spanned on the user's return type: the error of a
/// `Result` must be `Display`.
pub fn assert_error_display<T, E: std::fmt::Display>(_: &Result<T, E>) {}

/// The config type of a service that takes no config.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(crate = "::serde")]
#[schemars(crate = "::schemars")]
pub struct NoConfig {}

/// The argument type of a service that takes no arguments.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(crate = "::serde")]
#[schemars(crate = "::schemars")]
pub struct NoArguments {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_of_moves_strings_and_serializes_the_rest() {
        assert_eq!(text_of(String::from("moved")).unwrap(), "moved");
        assert_eq!(text_of("borrowed").unwrap(), "borrowed");
        assert_eq!(text_of(vec![1, 2]).unwrap(), "[1,2]");
        assert_eq!(text_of(()).unwrap(), "");
    }
}
