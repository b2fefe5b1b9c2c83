//! The function's return type, classified: a `Result` (whose error the
//! response reports) or a plain value; types that cannot become a response
//! (`impl Trait`, `dyn Trait`, `!`, pointers) are reported on the type.

use syn::spanned::Spanned;
use syn::Type;

use crate::ctxt::Errors;

use super::shape::{first_type_argument, is_named};
use super::Output;

/// How the function's result becomes a response.
pub(super) fn build_output(output: &syn::ReturnType, errors: &mut Errors) -> Output {
    let ty = match output {
        syn::ReturnType::Default => return Output::Value(None),
        syn::ReturnType::Type(_, ty) => &**ty,
    };
    match ty {
        Type::ImplTrait(_)
        | Type::TraitObject(_)
        | Type::Infer(_)
        | Type::Never(_)
        | Type::BareFn(_)
        | Type::Ptr(_) => {
            errors.spanned(
                ty,
                "unsupported return type: return a `String`, a value that implements `serde::Serialize`, or `Result<T, E>` of those with `E: Display`",
            );
            Output::Value(None)
        }
        _ if is_named(ty, "Result") => Output::Result {
            ok: first_type_argument(ty).cloned(),
            span: ty.span(),
        },
        _ => Output::Value(Some(ty.clone())),
    }
}

#[cfg(test)]
mod tests {
    use quote::ToTokens;
    use syn::{parse_quote, ReturnType};

    use super::*;

    /// How `output` is classified (`Result(ok)` or `Value(type)`), and the
    /// messages recorded.
    fn classify(output: ReturnType) -> (String, Vec<String>) {
        let mut errors = Errors::default();
        let text = |ty: &Option<Type>| {
            ty.as_ref()
                .map_or_else(String::new, |ty| ty.to_token_stream().to_string())
        };
        let class = match build_output(&output, &mut errors) {
            Output::Result { ok, .. } => format!("Result({})", text(&ok)),
            Output::Value(ty) => format!("Value({})", text(&ty)),
        };
        (class, errors.messages())
    }

    #[test]
    fn a_result_is_told_from_a_value_by_name() {
        let cases: [(ReturnType, &str); 7] = [
            (parse_quote!(), "Value()"),
            (parse_quote!(-> String), "Value(String)"),
            (parse_quote!(-> ()), "Value(())"),
            (parse_quote!(-> Vec<Joke>), "Value(Vec < Joke >)"),
            (parse_quote!(-> Result<String, Error>), "Result(String)"),
            (parse_quote!(-> anyhow::Result<Joke>), "Result(Joke)"),
            (parse_quote!(-> io::Result<()>), "Result(())"),
        ];
        for (output, class) in cases {
            assert_eq!(classify(output), (class.to_owned(), Vec::new()));
        }
    }

    #[test]
    fn a_type_that_cannot_become_a_response_is_reported() {
        let unsupported = "unsupported return type: return a `String`, a value that implements `serde::Serialize`, or `Result<T, E>` of those with `E: Display`";
        let cases: [ReturnType; 6] = [
            parse_quote!(-> impl Display),
            parse_quote!(-> dyn Display),
            parse_quote!(-> _),
            parse_quote!(-> !),
            parse_quote!(-> fn() -> String),
            parse_quote!(-> *const u8),
        ];
        for output in cases {
            assert_eq!(
                classify(output),
                (String::from("Value()"), vec![String::from(unsupported)])
            );
        }
    }
}
