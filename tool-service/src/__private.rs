//! Not public API. Used by generated code.
//!
//! Everything `#[tool_service]` expands to reaches the runtime through this
//! module, by absolute path, so users need no other dependency.

use std::future::Future;

use serde::de::DeserializeOwned;

pub use ::inventory;
pub use ::schemars;
pub use ::serde;

pub use crate::dispatch::{HandlerFuture, Invocation};
pub use crate::error::{ErrorProbe, ViaDisplay, ViaTypedError};
pub use crate::registry::{ConfigValue, ServiceSpec, ToolSpec};
pub use crate::response::response_text;
pub use crate::stream::Chunks;
pub use crate::{Context, ToolError};

use crate::dispatch::decode_object;

/// Decodes config and arguments, then runs `body` (the call of the user's
/// function and the conversion of its result).
pub fn invoke<C, A, F, Fut>(invocation: Invocation, body: F) -> HandlerFuture
where
    C: DeserializeOwned,
    A: DeserializeOwned,
    F: FnOnce(C, A, Context, Chunks) -> Fut,
    Fut: Future<Output = Result<String, ToolError>> + Send + 'static,
{
    let Invocation {
        request,
        context,
        chunks,
    } = invocation;
    let config = match decode_object::<C>(&request.config, "config", ToolError::INVALID_CONFIG) {
        Ok(config) => config,
        Err(error) => return Box::pin(std::future::ready(Err(error))),
    };
    let arguments = match decode_object::<A>(
        &request.arguments,
        "arguments",
        ToolError::INVALID_ARGUMENTS,
    ) {
        Ok(arguments) => arguments,
        Err(error) => return Box::pin(std::future::ready(Err(error))),
    };
    Box::pin(body(config, arguments, context, chunks))
}

/// The JSON schema of a config or argument type.
pub fn schema_of<T: schemars::JsonSchema>() -> schemars::Schema {
    schemars::SchemaGenerator::default().into_root_schema_for::<T>()
}

/// Checks that a preset's config values decode as the service's config type.
pub fn check_config<C: DeserializeOwned>(text: &str) -> Result<(), ToolError> {
    decode_object::<C>(text, "config", ToolError::INVALID_CONFIG).map(drop)
}

/// Compile-time check, spanned on the user's config type.
pub fn assert_config<T: DeserializeOwned + schemars::JsonSchema>() {}

/// Compile-time check, spanned on the user's argument type.
pub fn assert_arguments<T: DeserializeOwned + schemars::JsonSchema>() {}

/// Compile-time check, spanned on the user's return type.
pub fn assert_response<T: serde::Serialize + ?Sized>() {}

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
