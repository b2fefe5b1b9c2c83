//! Types read by name: the macro sees tokens, not resolved types, so an
//! `Option`, a `Result` or an `Arc` is recognised by its last path segment,
//! however it is imported or qualified.

use syn::Type;

/// Whether the type's last path segment is `name` (`Option`, `Result`).
pub(crate) fn is_named(ty: &Type, name: &str) -> bool {
    match ty {
        Type::Path(path) => {
            path.qself.is_none()
                && path
                    .path
                    .segments
                    .last()
                    .is_some_and(|segment| segment.ident == name)
        }
        Type::Group(group) => is_named(&group.elem, name),
        Type::Paren(paren) => is_named(&paren.elem, name),
        _ => false,
    }
}

/// The first generic type argument of the type's last segment.
pub(crate) fn first_type_argument(ty: &Type) -> Option<&Type> {
    let Type::Path(path) = ty else { return None };
    let syn::PathArguments::AngleBracketed(arguments) = &path.path.segments.last()?.arguments
    else {
        return None;
    };
    arguments.args.iter().find_map(|argument| match argument {
        syn::GenericArgument::Type(ty) => Some(ty),
        _ => None,
    })
}
