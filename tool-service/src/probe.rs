//! Compile-time probes of the user's types, spanned where they are
//! written: whether a parameter's type decodes and describes itself (and a
//! stand-in when it does not, so that one mistake makes one error), whether
//! a result has an output schema, and whether a result's error prints.
//! Generated code reaches them through `__private`; but for the output
//! schema, which is made when asked, their work is done by the compiler.

use std::convert::Infallible;
use std::marker::PhantomData;

use serde::de::DeserializeOwned;

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

/// Compile-time check, spanned on the user's return type: the error of a
/// `Result` must be `Display`.
pub fn assert_error_display<T, E: std::fmt::Display>(_: &Result<T, E>) {}

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

debug_by_name!(TypeProbe<T>, Missing<T>, OutputProbe<T>);

#[cfg(test)]
// The borrows choose the probing level; they are not needless.
#[allow(clippy::needless_borrow)]
mod tests {
    use super::*;
    use crate::invoke::{NoArguments, Types};

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
}
