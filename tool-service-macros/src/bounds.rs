//! `#[arg(range(min = 1, max = 30), default = 7)]` on a plain LLM argument:
//! the bounds and the default a parameter states without an `#[args]`
//! struct, checked here against the parameter's type, so that a bound the
//! type cannot hold, a default of the wrong kind or outside the bounds is a
//! compile error on the offending token.

use proc_macro2::{Span, TokenStream};
use quote::{quote, ToTokens};
use syn::spanned::Spanned;
use syn::{Lit, LitFloat, Type};

use crate::ctxt::{code_list, did_you_mean, Errors};
use crate::model::shape::{first_type_argument, is_named};

/// The keys `#[arg(…)]` takes.
const KEYS: [&str; 3] = ["range", "length", "default"];

/// What `#[arg(…)]` states of one argument.
#[derive(Default)]
pub(crate) struct ArgBounds {
    /// `range(min = …, max = …)`: inclusive numeric bounds.
    pub(crate) range: Option<(Option<Lit>, Option<Lit>)>,
    /// `length(min = …, max = …)`: a text's characters or a list's items.
    pub(crate) length: Option<(Option<u64>, Option<u64>)>,
    /// `default = …`: the value taken when the argument is left out.
    pub(crate) default: Option<ArgDefault>,
    /// Where `range` is written, for errors about it as a whole.
    range_span: Option<Span>,
}

/// A default as written: a literal, or `[]` for a list.
pub(crate) enum ArgDefault {
    Lit(Lit),
    /// `[]`: an empty `Vec`.
    EmptyList(syn::ExprArray),
}

impl quote::ToTokens for ArgDefault {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        match self {
            Self::Lit(lit) => lit.to_tokens(tokens),
            Self::EmptyList(list) => list.to_tokens(tokens),
        }
    }
}

/// What a default may be, for the errors that refuse one.
const DEFAULTS: &str = "a default is a literal of the argument's type (a number, a text in quotes, `true` or `false`), or `[]` for a `Vec`";

impl ArgBounds {
    pub(crate) fn is_empty(&self) -> bool {
        self.range.is_none() && self.length.is_none() && self.default.is_none()
    }

    /// The schemars attributes the decoding struct's field carries.
    pub(crate) fn schema_attrs(&self) -> TokenStream {
        let mut attrs = TokenStream::new();
        if let Some((min, max)) = &self.range {
            let min = min.as_ref().map(|min| quote!(min = #min,));
            let max = max.as_ref().map(|max| quote!(max = #max,));
            attrs.extend(quote!(#[schemars(range(#min #max))]));
        }
        if let Some((min, max)) = &self.length {
            let min = min.map(|min| quote!(min = #min,));
            let max = max.map(|max| quote!(max = #max,));
            attrs.extend(quote!(#[schemars(length(#min #max))]));
        }
        if let Some(default) = &self.default {
            attrs.extend(quote!(#[schemars(extend("default" = #default))]));
        }
        attrs
    }

    /// The default as an expression of the parameter's type `ty`.
    pub(crate) fn default_value(&self, ty: &Type) -> Option<TokenStream> {
        let default = match self.default.as_ref()? {
            ArgDefault::Lit(lit) => lit,
            ArgDefault::EmptyList(_) => return Some(quote!(::std::vec::Vec::new())),
        };
        Some(match (default, kind_of(ty)) {
            (Lit::Str(text), _) => quote!(::std::string::String::from(#text)),
            (Lit::Int(int), Some(Kind::Float)) => {
                let float = LitFloat::new(&format!("{}.0", int.base10_digits()), int.span());
                quote!(#float)
            }
            (other, _) => quote!(#other),
        })
    }
}

/// What kind of value a parameter's type is, as far as bounds go.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// An integer type, and its range.
    Integer(i128, u128),
    Float,
    Text,
    List,
    Boolean,
}

/// The kind of a type named by its last path segment (`u32`, `String`,
/// `Vec<T>`, `bool`); `None` for others.
fn kind_of(ty: &Type) -> Option<Kind> {
    let Type::Path(path) = ty else {
        return None;
    };
    let last = path.path.segments.last()?;
    let name = last.ident.to_string();
    Some(match name.as_str() {
        "u8" => Kind::Integer(0, u128::from(u8::MAX)),
        "u16" => Kind::Integer(0, u128::from(u16::MAX)),
        "u32" => Kind::Integer(0, u128::from(u32::MAX)),
        "u64" | "usize" => Kind::Integer(0, u128::from(u64::MAX)),
        "i8" => Kind::Integer(i128::from(i8::MIN), i8::MAX as u128),
        "i16" => Kind::Integer(i128::from(i16::MIN), i16::MAX as u128),
        "i32" => Kind::Integer(i128::from(i32::MIN), i32::MAX as u128),
        "i64" | "isize" => Kind::Integer(i128::from(i64::MIN), i64::MAX as u128),
        "f32" | "f64" => Kind::Float,
        "String" => Kind::Text,
        "Vec" => Kind::List,
        "bool" => Kind::Boolean,
        _ => return None,
    })
}

/// The type inside `Option<…>`, if `ty` is one.
fn option_inner(ty: &Type) -> Option<&Type> {
    if is_named(ty, "Option") {
        first_type_argument(ty)
    } else {
        None
    }
}

/// Reads every `#[arg(…)]` of a plain argument of type `ty`, checking each
/// bound and the default against the type.
pub(crate) fn parse(attrs: &[syn::Attribute], ty: &Type, errors: &mut Errors) -> ArgBounds {
    let mut bounds = ArgBounds::default();
    for attr in attrs.iter().filter(|attr| attr.path().is_ident("arg")) {
        let parsed = attr.parse_nested_meta(|meta| {
            let key = meta
                .path
                .get_ident()
                .map(ToString::to_string)
                .unwrap_or_default();
            match key.as_str() {
                "range" => {
                    let (min, max) = min_max(&meta, errors)?;
                    bounds.range = Some((min, max));
                    bounds.range_span = Some(meta.path.span());
                }
                "length" => {
                    let (min, max) = min_max(&meta, errors)?;
                    let count = |lit: Option<Lit>, errors: &mut Errors| match lit {
                        Some(Lit::Int(int)) => match int.base10_parse::<u64>() {
                            Ok(count) => Some(count),
                            Err(_) => {
                                errors.spanned(&int, "a length is a count: a whole number from 0");
                                None
                            }
                        },
                        Some(other) => {
                            errors.spanned(&other, "a length is a count: a whole number from 0");
                            None
                        }
                        None => None,
                    };
                    let min = count(min, errors);
                    let max = count(max, errors);
                    if let (Some(low), Some(high)) = (min, max) {
                        if low > high {
                            errors.spanned(
                                &meta.path,
                                format_args!("the least length ({low}) is above the most ({high})"),
                            );
                        }
                    }
                    bounds.length = Some((min, max));
                }
                "default" => {
                    let value = meta.value()?;
                    if value.peek(syn::token::Bracket) {
                        let list: syn::ExprArray = value.parse()?;
                        if !list.elems.is_empty() {
                            errors.spanned(
                                &list,
                                "a `Vec` argument's default is the empty list `[]`; to start with items, take the argument as it is and add them in the handler",
                            );
                        }
                        bounds.default = Some(ArgDefault::EmptyList(list));
                    } else if value.peek(Lit) {
                        bounds.default = Some(ArgDefault::Lit(value.parse()?));
                    } else {
                        let written: syn::Expr = value.parse()?;
                        errors.spanned(&written, DEFAULTS);
                    }
                }
                _ => {
                    errors.spanned(
                        &meta.path,
                        format_args!(
                            "unknown key `{key}` in `#[arg(…)]`; expected one of {}{}",
                            code_list(KEYS),
                            did_you_mean(&key, KEYS)
                        ),
                    );
                    if meta.input.peek(syn::Token![=]) {
                        let _: syn::Expr = meta.value()?.parse()?;
                    } else if meta.input.peek(syn::token::Paren) {
                        meta.parse_nested_meta(|inner| {
                            if inner.input.peek(syn::Token![=]) {
                                let _: syn::Expr = inner.value()?.parse()?;
                            }
                            Ok(())
                        })?;
                    }
                }
            }
            Ok(())
        });
        if let Err(error) = parsed {
            errors.push(error);
        }
    }
    check(&bounds, ty, errors);
    bounds
}

/// `(min = …, max = …)`, either or both.
fn min_max(
    meta: &syn::meta::ParseNestedMeta<'_>,
    errors: &mut Errors,
) -> syn::Result<(Option<Lit>, Option<Lit>)> {
    let mut min = None;
    let mut max = None;
    meta.parse_nested_meta(|inner| {
        let lit: Lit = inner.value()?.parse()?;
        if inner.path.is_ident("min") {
            min = Some(lit);
        } else if inner.path.is_ident("max") {
            max = Some(lit);
        } else {
            errors.spanned(&inner.path, "expected `min = …` or `max = …`");
        }
        Ok(())
    })?;
    if min.is_none() && max.is_none() {
        errors.spanned(&meta.path, "give `min = …`, `max = …` or both");
    }
    Ok((min, max))
}

/// Whether an integer literal is a value of the integer type `name` (its
/// range `low..=high`); an error on the literal when not.
fn fits_integer(
    int: &syn::LitInt,
    (low, high): (i128, u128),
    name: &str,
    errors: &mut Errors,
) -> bool {
    let fits = int
        .base10_parse::<i128>()
        .is_ok_and(|value| value >= low && (value < 0 || value as u128 <= high));
    if !fits {
        errors.spanned(
            int,
            format_args!(
                "`{}` is not a `{name}`: its values are {low} to {high}",
                int.base10_digits()
            ),
        );
    }
    fits
}

/// A numeric literal's value, as a float for comparisons.
fn number(lit: &Lit) -> Option<f64> {
    match lit {
        Lit::Int(int) => int.base10_parse::<f64>().ok(),
        Lit::Float(float) => float.base10_parse::<f64>().ok(),
        _ => None,
    }
}

fn check(bounds: &ArgBounds, ty: &Type, errors: &mut Errors) {
    if bounds.is_empty() {
        return;
    }
    let optional = option_inner(ty);
    if let (Some(default), Some(_)) = (&bounds.default, optional) {
        errors.spanned(
            default,
            "a default on an `Option` argument is never used: drop the `Option` (the default is taken when the argument is left out)",
        );
    }
    let inner = optional.unwrap_or(ty);
    let kind = kind_of(inner);
    let name = inner.to_token_stream().to_string().replace(' ', "");
    if let Some((min, max)) = &bounds.range {
        let span = bounds.range_span.unwrap_or_else(Span::call_site);
        match kind {
            Some(Kind::Integer(low, high)) => {
                for lit in min.iter().chain(max) {
                    match lit {
                        Lit::Int(int) => {
                            fits_integer(int, (low, high), &name, errors);
                        }
                        other => errors.spanned(
                            other,
                            format_args!("a bound of a `{name}` argument is a whole number"),
                        ),
                    }
                }
            }
            Some(Kind::Float) => {
                for lit in min.iter().chain(max) {
                    if number(lit).is_none() {
                        errors.spanned(lit, format_args!("a bound of a `{name}` argument is a number"));
                    }
                }
            }
            _ => errors.at(
                span,
                format_args!("`range` bounds a number, and `{name}` is not one; for a text or a list use `length`"),
            ),
        }
        if let (Some(low), Some(high)) =
            (min.as_ref().and_then(number), max.as_ref().and_then(number))
        {
            if low > high {
                errors.at(
                    span,
                    format_args!("the range's `min` ({low}) is above its `max` ({high})"),
                );
            }
        }
    }
    if bounds.length.is_some() && !matches!(kind, Some(Kind::Text | Kind::List)) {
        errors.spanned(
            inner,
            format_args!("`length` bounds a `String` or a `Vec`, and `{name}` is neither; for a number use `range`"),
        );
    }
    let Some(default) = &bounds.default else {
        return;
    };
    let lit = match (kind, default) {
        (Some(Kind::List), ArgDefault::EmptyList(_)) => return,
        (Some(Kind::List), ArgDefault::Lit(_)) => {
            errors.spanned(default, "a `Vec` argument's default is the empty list `[]`");
            return;
        }
        (None, _) if optional.is_none() => {
            errors.spanned(
                default,
                format_args!("{DEFAULTS}; `{name}` is none of these types"),
            );
            return;
        }
        (_, ArgDefault::EmptyList(_)) => {
            errors.spanned(
                default,
                format_args!("`[]` is the default of a `Vec`, and `{name}` is not one"),
            );
            return;
        }
        (_, ArgDefault::Lit(lit)) => lit,
    };
    let fits_kind = matches!(
        (kind, lit),
        (Some(Kind::Integer(..)), Lit::Int(_))
            | (Some(Kind::Float), Lit::Int(_) | Lit::Float(_))
            | (Some(Kind::Text), Lit::Str(_))
            | (Some(Kind::Boolean), Lit::Bool(_))
    );
    if !fits_kind {
        errors.spanned(default, format_args!("this default is not a `{name}`"));
        return;
    }
    let default = lit;
    if let (Some(Kind::Integer(low, high)), Lit::Int(int)) = (kind, default) {
        if !fits_integer(int, (low, high), &name, errors) {
            return;
        }
    }
    if let (Some(value), Some((min, max))) = (number(default), &bounds.range) {
        let below = min.as_ref().and_then(number).is_some_and(|min| value < min);
        let above = max.as_ref().and_then(number).is_some_and(|max| value > max);
        if below || above {
            errors.spanned(default, "the default is outside the argument's own `range`");
        }
    }
    if let (Lit::Str(text), Some((min, max))) = (default, &bounds.length) {
        let count = text.value().chars().count() as u64;
        if min.is_some_and(|min| count < min) || max.is_some_and(|max| count > max) {
            errors.spanned(
                default,
                "the default is outside the argument's own `length`",
            );
        }
    }
}
