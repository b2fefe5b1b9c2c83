//! Not public API. Used by generated code.
//!
//! Everything `#[tool_service]` expands to reaches the runtime through this
//! module, by absolute path, so users need no other dependency.

use std::convert::Infallible;
use std::future::Future;
use std::marker::PhantomData;

use serde::de::DeserializeOwned;

pub use ::inventory;
pub use ::schemars;
pub use ::serde;

pub use crate::error::{ErrorProbe, ViaDisplay, ViaTypedError, ViaUnsupported};
pub use crate::response::response_text;
pub use crate::spec::{ConfigValue, Handler, HandlerFuture, Invocation, ServiceSpec, ToolSpec};
pub use crate::state::StateNeed;
pub use crate::stream::Chunks;
pub use crate::{context::Context, error::ToolError, state::State};

use crate::decode::{decode, decode_arguments, decode_showing, Part, Quoted};
use crate::schema::rules::Rules;

/// The types a service decodes.
pub trait ServiceTypes: 'static {
    /// What `config` decodes into.
    type Config: DeserializeOwned + schemars::JsonSchema;
    /// What `arguments` decodes into.
    type Arguments: DeserializeOwned + schemars::JsonSchema;
}

/// A service's config type `C` and argument type `A`, as a value.
///
/// Generated code names the user's types in one function only,
/// `__tool_service_types() -> Types<…>`, which checks each of them with a
/// [`TypeProbe`] and returns them as opaque types (`impl ParameterType +
/// IntoParameter<T>`). Everything else (the handler, the schemas, the
/// preset check) calls that function and works on what it returns, so no
/// other code asks the user's types for a trait, and a type that lacks one
/// is reported once, on the type as written.
pub struct Types<C, A>(PhantomData<fn() -> (C, A)>);

impl<C, A> Types<C, A> {
    /// The types whose markers are given (from [`TypeProbe`]s, or
    /// `PhantomData` of [`NoConfig`] / [`NoArguments`] / a generated struct).
    pub fn new(_config: PhantomData<C>, _arguments: PhantomData<A>) -> Self {
        Self(PhantomData)
    }
}

impl<C, A> ServiceTypes for Types<C, A>
where
    C: DeserializeOwned + schemars::JsonSchema + 'static,
    A: DeserializeOwned + schemars::JsonSchema + 'static,
{
    type Config = C;
    type Arguments = A;
}

impl<C, A> Types<C, A>
where
    C: DeserializeOwned + schemars::JsonSchema + 'static,
    A: DeserializeOwned + schemars::JsonSchema + 'static,
{
    /// [`invoke`] with these types.
    pub fn invoke<F, Fut>(
        self,
        rules: &'static ArgumentRules,
        invocation: Invocation,
        body: F,
    ) -> HandlerFuture
    where
        F: FnOnce(C, A, Context, Chunks, State) -> Fut,
        Fut: Future<Output = Result<String, ToolError>> + Send + 'static,
    {
        invoke::<Self, F, Fut>(rules, invocation, body)
    }

    /// [`config_schema`] of these types.
    pub fn config_schema(self) -> schemars::Schema {
        config_schema::<Self>()
    }

    /// [`arguments_schema`] of these types.
    pub fn arguments_schema(self) -> schemars::Schema {
        arguments_schema::<Self>()
    }

    /// [`check_config`] of these types.
    pub fn check_config(self, text: &str) -> Result<(), ToolError> {
        check_config::<Self>(text)
    }
}

/// The rules a service's arguments are decoded under: compiled from its
/// argument schema on the first request, then shared by every request. One
/// `static` per service, in its handler.
#[derive(Debug)]
pub struct ArgumentRules {
    rules: std::sync::OnceLock<Rules>,
    tolerant: bool,
}

impl ArgumentRules {
    /// Rules that coerce what LLMs commonly write (`tolerant`), or take the
    /// type's own decoding only (`#[tool_service(strict)]`).
    pub const fn new(tolerant: bool) -> Self {
        Self {
            rules: std::sync::OnceLock::new(),
            tolerant,
        }
    }

    fn get<S: ServiceTypes>(&self) -> &Rules {
        self.rules
            .get_or_init(|| Rules::compile(&serde_json::Value::from(arguments_schema::<S>())))
    }
}

/// Decodes config and arguments, then runs `body` (the call of the user's
/// function and the conversion of its result).
pub fn invoke<S, F, Fut>(
    rules: &'static ArgumentRules,
    invocation: Invocation,
    body: F,
) -> HandlerFuture
where
    S: ServiceTypes,
    F: FnOnce(S::Config, S::Arguments, Context, Chunks, State) -> Fut,
    Fut: Future<Output = Result<String, ToolError>> + Send + 'static,
{
    let Invocation {
        request,
        context,
        chunks,
        state,
    } = invocation;
    let config = match decode::<S::Config>(&request.config, Part::Config) {
        Ok(config) => config,
        Err(error) => return Box::pin(std::future::ready(Err(error))),
    };
    let arguments = match decode_arguments::<S::Arguments>(
        &request.arguments,
        rules.get::<S>(),
        rules.tolerant,
    ) {
        Ok(arguments) => arguments,
        Err(error) => return Box::pin(std::future::ready(Err(error))),
    };
    Box::pin(body(config, arguments, context, chunks, state))
}

/// The `#[state]` value of type `T`, or the error a request gets when it was
/// never provided (`serve` and `call` check before they start, so only a
/// registry built by hand can get here).
pub fn state<T: Send + Sync + 'static>(
    state: &State,
    service: &'static str,
) -> Result<std::sync::Arc<T>, ToolError> {
    state.get::<T>().ok_or_else(|| {
        ToolError::with_type(
            ToolError::MISSING_STATE,
            format!(
                "service `{service}` takes a `{}` as #[state], and none was provided",
                std::any::type_name::<T>()
            ),
        )
    })
}

/// A type a parameter can have: one that decodes and describes itself. The
/// bound of generated decoding structs and of the opaque types
/// `__tool_service_types()` returns.
pub trait ParameterType: DeserializeOwned + schemars::JsonSchema {}

impl<T: DeserializeOwned + schemars::JsonSchema> ParameterType for T {}

/// Checks that a parameter's type can be decoded (`serde::Deserialize`) and
/// described (`schemars::JsonSchema`), and chooses what generated code
/// decodes in its place. Generated code writes, spanned on the type `T` as
/// the user wrote it,
///
/// ```text
/// (&&&&TypeProbe::<T>::new()).__tool_service_type::<T>()
/// ```
///
/// and method probing takes the first level that applies:
///
/// | `T` implements | level | result |
/// |---|---|---|
/// | both | [`ViaBoth`] | `PhantomData<T>` |
/// | `Deserialize` only | [`ViaDeserializeOnly`] | an error from [`Describable`] |
/// | `JsonSchema` only | [`ViaJsonSchemaOnly`] | an error from [`Decodable`] |
/// | neither | [`ViaNeither`] | an error from [`DecodableAndDescribable`] |
///
/// A level that reports an error returns `PhantomData<Missing<T>>`: a
/// stand-in with both traits, so that the rest of the generated code raises
/// no second error for the same type. The error lands on the turbofish's
/// `T`, which keeps the user's spans.
pub struct TypeProbe<T>(PhantomData<fn() -> T>);

impl<T> TypeProbe<T> {
    /// The probe of `T`.
    pub const fn new() -> Self {
        Self(PhantomData)
    }
}

impl<T> Default for TypeProbe<T> {
    fn default() -> Self {
        Self::new()
    }
}

/// The first probing level: `T` has both traits and is decoded itself.
pub trait ViaBoth {
    /// `U` is the probed type again.
    fn __tool_service_type<U>(&self) -> PhantomData<U> {
        PhantomData
    }
}

impl<T: DeserializeOwned + schemars::JsonSchema> ViaBoth for &&&TypeProbe<T> {}

/// The second probing level: `T` is `Deserialize` but not `JsonSchema`.
pub trait ViaDeserializeOnly {
    /// Reports `U` (the probed type) as not describable.
    fn __tool_service_type<U: Describable>(&self) -> PhantomData<Missing<U>> {
        PhantomData
    }
}

impl<T: DeserializeOwned> ViaDeserializeOnly for &&TypeProbe<T> {}

/// The third probing level: `T` is `JsonSchema` but not `Deserialize`.
pub trait ViaJsonSchemaOnly {
    /// Reports `U` (the probed type) as not decodable.
    fn __tool_service_type<U: Decodable>(&self) -> PhantomData<Missing<U>> {
        PhantomData
    }
}

impl<T: schemars::JsonSchema> ViaJsonSchemaOnly for &TypeProbe<T> {}

/// The last probing level: `T` has neither trait.
pub trait ViaNeither {
    /// Reports `U` (the probed type) as neither decodable nor describable.
    fn __tool_service_type<U: DecodableAndDescribable>(&self) -> PhantomData<Missing<U>> {
        PhantomData
    }
}

impl<T> ViaNeither for TypeProbe<T> {}

/// A parameter type that decodes: only a probe's error asks for it, on a
/// type known to lack `Deserialize`. Its blanket impl is not recommended,
/// so the compiler reports this message instead of serde's.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool-service parameter type: it does not implement `serde::Deserialize`",
    label = "needs `Deserialize` to be decoded from requests",
    note = "derive it: `#[derive(serde::Deserialize)]`",
    note = "for `Vec<T>`, `Option<T>` and the like, derive it on `T`; for a type from another crate, look for its `serde` feature"
)]
pub trait Decodable {}

#[diagnostic::do_not_recommend]
impl<T: DeserializeOwned> Decodable for T {}

/// A parameter type that describes itself: only a probe's error asks for
/// it, on a type known to lack `JsonSchema`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool-service parameter type: it does not implement `schemars::JsonSchema`",
    label = "needs `JsonSchema` to be described in the descriptors",
    note = "derive it: `#[derive(schemars::JsonSchema)]`",
    note = "for `Vec<T>`, `Option<T>` and the like, derive it on `T`; for a type from another crate, look for its `schemars` feature"
)]
pub trait Describable {}

#[diagnostic::do_not_recommend]
impl<T: schemars::JsonSchema> Describable for T {}

/// A parameter type that decodes and describes itself: only a probe's
/// error asks for it, on a type known to lack both traits.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool-service parameter type: it implements neither `serde::Deserialize` nor `schemars::JsonSchema`",
    label = "needs `Deserialize` to be decoded from requests and `JsonSchema` to be described in the descriptors",
    note = "derive both: `#[derive(serde::Deserialize, schemars::JsonSchema)]`",
    note = "for `Vec<T>`, `Option<T>` and the like, derive them on `T`; for a type from another crate, look for its `serde` and `schemars` features"
)]
pub trait DecodableAndDescribable {}

#[diagnostic::do_not_recommend]
impl<T: DeserializeOwned + schemars::JsonSchema> DecodableAndDescribable for T {}

/// What generated code decodes in place of a parameter type `T` that a
/// [`TypeProbe`] reported. The program does not compile, so no value of it
/// ever exists; it only keeps the rest of the generated code free of
/// errors.
pub struct Missing<T>(Infallible, PhantomData<fn() -> T>);

impl<'de, T> serde::Deserialize<'de> for Missing<T> {
    fn deserialize<D: serde::Deserializer<'de>>(_: D) -> Result<Self, D::Error> {
        Err(serde::de::Error::custom(
            "a parameter type without `Deserialize` and `JsonSchema`",
        ))
    }
}

impl<T> schemars::JsonSchema for Missing<T> {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Missing".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::Schema::from(false)
    }
}

/// Turns what was decoded for a parameter into the parameter's type `T`:
/// the value itself, or (never at run time) a [`Missing`] stand-in.
pub trait IntoParameter<T> {
    /// The parameter's value.
    fn into_parameter(self) -> T;
}

impl<T> IntoParameter<T> for T {
    fn into_parameter(self) -> T {
        self
    }
}

impl<T> IntoParameter<T> for Missing<T> {
    fn into_parameter(self) -> T {
        match self.0 {}
    }
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

/// The type a handler returns on success, as a value, for
/// [`OutputViaSchema`] and [`OutputViaNothing`]: generated code calls
/// `(&&OutputProbe::<T>::NEW).__tool_service_output_schema()`, which finds
/// the schema of `T` when `T: JsonSchema` and `None` otherwise.
pub struct OutputProbe<T>(PhantomData<fn() -> T>);

impl<T> OutputProbe<T> {
    /// The probe of `T`.
    pub const NEW: Self = Self(PhantomData);
}

/// The output schema of a result type that implements `JsonSchema`.
pub trait OutputViaSchema {
    /// The schema of the result as it serializes.
    fn __tool_service_output_schema(&self) -> Option<schemars::Schema>;
}

impl<T: schemars::JsonSchema> OutputViaSchema for &OutputProbe<T> {
    fn __tool_service_output_schema(&self) -> Option<schemars::Schema> {
        let settings = schemars::generate::SchemaSettings::default().for_serialize();
        Some(schemars::SchemaGenerator::new(settings).into_root_schema_for::<T>())
    }
}

/// No output schema: the result type does not implement `JsonSchema`.
pub trait OutputViaNothing {
    /// `None`.
    fn __tool_service_output_schema(&self) -> Option<schemars::Schema>;
}

impl<T> OutputViaNothing for OutputProbe<T> {
    fn __tool_service_output_schema(&self) -> Option<schemars::Schema> {
        None
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
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(crate = "::serde")]
#[schemars(crate = "::schemars")]
pub struct NoConfig {}

/// The argument type of a service that takes no arguments.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(crate = "::serde")]
#[schemars(crate = "::schemars")]
pub struct NoArguments {}

/// The markers of this module print their name only: they hold no value.
macro_rules! debug_by_name {
    ($($name:ident<$($param:ident),+>),+ $(,)?) => {$(
        impl<$($param),+> std::fmt::Debug for $name<$($param),+> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(stringify!($name))
            }
        }
    )+};
}

debug_by_name!(Types<C, A>, TypeProbe<T>, Missing<T>, OutputProbe<T>);

#[cfg(test)]
// The borrows choose the probing level; they are not needless.
#[allow(clippy::needless_borrow)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[serde(crate = "::serde")]
    #[schemars(crate = "::schemars")]
    struct Style {
        #[allow(dead_code)]
        name: String,
    }

    #[test]
    fn a_type_with_both_traits_is_decoded_itself() {
        // The annotations are the test: a probe of a type with both traits
        // yields the type, not a stand-in.
        let _: PhantomData<Style> = (&&&&TypeProbe::<Style>::new()).__tool_service_type::<Style>();
        let _: PhantomData<Option<Vec<u32>>> =
            (&&&&TypeProbe::<Option<Vec<u32>>>::new()).__tool_service_type::<Option<Vec<u32>>>();
        let types = Types::new(
            (&&&&TypeProbe::<Style>::new()).__tool_service_type::<Style>(),
            PhantomData::<NoArguments>,
        );
        let schema = types.config_schema();
        assert_eq!(
            schema.get("title").and_then(|title| title.as_str()),
            Some("Style")
        );
        assert!(Types::new(PhantomData::<Style>, PhantomData::<NoArguments>)
            .check_config(r#"{"name": "pun"}"#)
            .is_ok());
    }

    #[test]
    fn text_of_moves_strings_and_serializes_the_rest() {
        assert_eq!(text_of(String::from("moved")).unwrap(), "moved");
        assert_eq!(text_of("borrowed").unwrap(), "borrowed");
        assert_eq!(text_of(vec![1, 2]).unwrap(), "[1,2]");
        assert_eq!(text_of(()).unwrap(), "");
    }
}
