//! Not public API. Used by generated code.
//!
//! Everything `#[tool_service]` expands to reaches the runtime through this
//! module, by absolute path, so users need no other dependency. It only
//! re-exports: the code lives in the modules of its job (`invoke`: a
//! handler's typed invocation; `probe`: the compile-time checks of the
//! user's types; `service`: what is registered).

pub use ::inventory;
pub use ::schemars;
pub use ::serde;

pub use crate::context::Context;
pub use crate::error::{ErrorProbe, ToolError, ViaDisplay, ViaTypedError, ViaUnsupported};
pub use crate::invoke::{
    arguments_schema, check_config, config_schema, invoke, state, ArgumentRules, NoArguments,
    NoConfig, ServiceTypes, Types,
};
pub use crate::probe::{
    assert_error_display, Decodable, DecodableAndDescribable, Describable, IntoParameter, Missing,
    OutputProbe, OutputViaNothing, OutputViaSchema, ParameterType, TypeProbe, ViaBoth,
    ViaDeserializeOnly, ViaJsonSchemaOnly, ViaNeither,
};
pub use crate::response::{response_text, text_of};
pub use crate::service::{
    Annotations, ConfigValue, Handler, HandlerFuture, Invocation, ServiceSpec, ToolSpec,
};
pub use crate::state::{State, StateNeed};
pub use crate::stream::Chunks;
