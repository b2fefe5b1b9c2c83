//! Code generation: the user's function as written, plus a `const _` block
//! with the decoding types, the handler glue and the registration.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;
use syn::{FnArg, ItemFn};

use crate::attr::{self, ConfigLit};
use crate::ctxt::Errors;
use crate::model::{self, Output, Param, Role, Service, ROLE_ATTRS};

/// Expands `#[tool_service(attr)] item`.
pub fn tool_service(attr: TokenStream, item: TokenStream) -> TokenStream {
    let mut function: ItemFn = match syn::parse2(item.clone()) {
        Ok(function) => function,
        Err(_) => {
            let error = syn::Error::new_spanned(
                &item,
                "`#[tool_service]` goes on an `async fn`, e.g. `#[tool_service(topic = \"joke\")] async fn tell_joke(…)`",
            )
            .to_compile_error();
            return quote!(#item #error);
        }
    };
    let mut errors = Errors::default();
    let attr = attr::parse(attr, &mut errors);
    let service = model::build(attr, &function, &mut errors);
    strip_role_attrs(&mut function);
    match (errors.finish(), service) {
        (Ok(()), Some(service)) => {
            let glue = glue(&service);
            quote!(#function #glue)
        }
        (Err(error), _) => {
            let error = error.to_compile_error();
            quote!(#function #error)
        }
        (Ok(()), None) => unreachable!("a model is only missing when an error was recorded"),
    }
}

/// Removes the parameter attributes the macro consumed, leaving the function
/// otherwise as written.
fn strip_role_attrs(function: &mut ItemFn) {
    for input in &mut function.sig.inputs {
        if let FnArg::Typed(pat_type) = input {
            pat_type
                .attrs
                .retain(|attr| !ROLE_ATTRS.iter().any(|name| attr.path().is_ident(name)));
        }
    }
}

fn path_string(path: &syn::Path) -> String {
    path.to_token_stream().to_string().replace(' ', "")
}

/// A hidden struct that decodes several single parameters (and a flattened
/// whole struct, if any) from one JSON object.
fn decoding_struct(
    krate: &syn::Path,
    name: &syn::Ident,
    whole: Option<&Param>,
    singles: &[&Param],
) -> TokenStream {
    let serde_crate = format!("{}::__private::serde", path_string(krate));
    let schemars_crate = format!("{}::__private::schemars", path_string(krate));
    let whole_field = whole.map(|param| {
        let ty = param.value_type();
        quote!(#[serde(flatten)] __whole: #ty,)
    });
    let fields = singles.iter().map(|param| {
        let ident = param.name.as_ref().expect("single parameters are named");
        let ty = &param.ty;
        let doc = param
            .description
            .as_deref()
            .map(|text| quote!(#[doc = #text]));
        quote!(#doc #ident: #ty,)
    });
    quote! {
        #[derive(#krate::__private::serde::Deserialize, #krate::__private::schemars::JsonSchema)]
        #[serde(crate = #serde_crate)]
        #[schemars(crate = #schemars_crate)]
        struct #name {
            #whole_field
            #(#fields)*
        }
    }
}

/// The decoded type of one side (config or arguments) and the hidden struct
/// that decodes it, if any. A user's own type keeps its span, so a missing
/// `Deserialize` or `JsonSchema` is reported on it.
struct Side {
    ty: TokenStream,
    definition: TokenStream,
}

fn side(
    service: &Service,
    whole_role: fn(&Role) -> bool,
    single_role: fn(&Role) -> bool,
    name: &str,
    empty: &str,
) -> Side {
    let krate = &service.krate;
    let whole = service.params.iter().find(|param| whole_role(&param.role));
    let singles: Vec<&Param> = service
        .params
        .iter()
        .filter(|param| single_role(&param.role))
        .collect();
    if singles.is_empty() {
        let ty = match whole {
            Some(param) => param.value_type().to_token_stream(),
            None => {
                let empty = format_ident!("{}", empty);
                quote!(#krate::__private::#empty)
            }
        };
        return Side {
            ty,
            definition: TokenStream::new(),
        };
    }
    let ident = format_ident!("{}", name);
    Side {
        definition: decoding_struct(krate, &ident, whole, &singles),
        ty: ident.to_token_stream(),
    }
}

/// The expression passed for one parameter in the call of the user's function.
fn call_argument(service: &Service, param: &Param) -> TokenStream {
    let has_singles =
        |role: fn(&Role) -> bool| service.params.iter().any(|param| role(&param.role));
    let reference = if param.by_ref {
        quote!(&)
    } else {
        TokenStream::new()
    };
    match param.role {
        Role::Config if has_singles(|role| matches!(role, Role::ConfigParam)) => {
            quote!(#reference __config.__whole)
        }
        Role::Config => quote!(#reference __config),
        Role::Args if has_singles(|role| matches!(role, Role::Argument)) => {
            quote!(#reference __arguments.__whole)
        }
        Role::Args => quote!(#reference __arguments),
        Role::ConfigParam => {
            let ident = &param.name;
            quote!(__config.#ident)
        }
        Role::Argument => {
            let ident = &param.name;
            quote!(__arguments.#ident)
        }
        Role::Context => quote!(#reference __context),
        Role::Stream => quote!(#reference __chunks),
    }
}

fn config_value(krate: &syn::Path, value: &ConfigLit) -> TokenStream {
    match value {
        ConfigLit::Str(text) => quote!(#krate::__private::ConfigValue::Str(#text)),
        ConfigLit::Int(number) => quote!(#krate::__private::ConfigValue::Int(#number)),
        ConfigLit::Float(number) => quote!(#krate::__private::ConfigValue::Float(#number)),
        ConfigLit::Bool(flag) => quote!(#krate::__private::ConfigValue::Bool(#flag)),
    }
}

fn option_str(value: &Option<String>) -> TokenStream {
    match value {
        Some(text) => quote!(::core::option::Option::Some(#text)),
        None => quote!(::core::option::Option::None),
    }
}

fn glue(service: &Service) -> TokenStream {
    let krate = &service.krate;
    let function = &service.ident;
    let function_name = function.to_string();

    let config = side(
        service,
        |role| matches!(role, Role::Config),
        |role| matches!(role, Role::ConfigParam),
        "__ToolServiceConfig",
        "NoConfig",
    );
    let arguments = side(
        service,
        |role| matches!(role, Role::Args),
        |role| matches!(role, Role::Argument),
        "__ToolServiceArguments",
        "NoArguments",
    );
    let (config_ty, config_definition) = (&config.ty, &config.definition);
    let (arguments_ty, arguments_definition) = (&arguments.ty, &arguments.definition);

    let call_arguments = service
        .params
        .iter()
        .map(|param| call_argument(service, param));
    let convert = match &service.output {
        Output::Value(ty) => {
            let span = ty
                .as_ref()
                .map_or_else(proc_macro2::Span::call_site, Spanned::span);
            quote_spanned!(span=> #krate::__private::text_of(__output))
        }
        Output::Result { ok, span } => {
            let ok_span = ok.as_ref().map_or(*span, Spanned::span);
            let to_text = quote_spanned!(ok_span=> #krate::__private::text_of(__value));
            let check = quote_spanned!(*span=> #krate::__private::assert_error_display(&__output););
            quote! {
                #check
                match __output {
                    ::core::result::Result::Ok(__value) => #to_text,
                    ::core::result::Result::Err(__error) => {
                        #[allow(unused_imports)]
                        use #krate::__private::{ViaDisplay as _, ViaTypedError as _, ViaUnsupported as _};
                        ::core::result::Result::Err((&&&#krate::__private::ErrorProbe(&__error)).__tool_service_error())
                    }
                }
            }
        }
    };

    let id = &service.id;
    let topic = &service.topic;
    let request_queue = option_str(&service.request_queue);
    let response_queue = option_str(&service.response_queue);
    let subscription = option_str(&service.subscription);
    let concurrency = match service.concurrency {
        Some(n) => quote!(::core::option::Option::Some(#n)),
        None => quote!(::core::option::Option::None),
    };
    let timeout = match service.timeout_ms {
        Some(ms) => quote!(::core::option::Option::Some(::core::time::Duration::from_millis(#ms))),
        None => quote!(::core::option::Option::None),
    };
    let streaming = service.has(|role| matches!(role, Role::Stream));
    let tools = service.tools.iter().map(|tool| {
        let name = &tool.name;
        let description = &tool.description;
        let config = tool.config.iter().map(|entry| {
            let key = &entry.key;
            let value = config_value(krate, &entry.value);
            quote!((#key, #value))
        });
        let arguments = tool.arguments.iter().map(|entry| {
            let name = &entry.name;
            let description = &entry.description;
            quote!((#name, #description))
        });
        quote! {
            #krate::__private::ToolSpec {
                name: #name,
                description: #description,
                config: &[#(#config),*],
                arguments: &[#(#arguments),*],
            }
        }
    });

    quote! {
        #[doc(hidden)]
        #[allow(non_camel_case_types, non_snake_case, clippy::all)]
        const _: () = {
            #config_definition
            #arguments_definition

            struct __ToolServiceTypes;

            impl #krate::__private::ServiceTypes for __ToolServiceTypes {
                type Config = #config_ty;
                type Arguments = #arguments_ty;
            }

            fn __tool_service_handler(
                __invocation: #krate::__private::Invocation,
            ) -> #krate::__private::HandlerFuture {
                #krate::__private::invoke::<__ToolServiceTypes, _, _>(
                    __invocation,
                    |__config: #config_ty, __arguments: #arguments_ty, __context: #krate::__private::Context, __chunks: #krate::__private::Chunks| async move {
                        let __output = #function(#(#call_arguments),*).await;
                        #convert
                    },
                )
            }

            #krate::__private::inventory::submit! {
                #krate::__private::ServiceSpec {
                    id: #id,
                    topic: #topic,
                    request_queue: #request_queue,
                    response_queue: #response_queue,
                    subscription: #subscription,
                    concurrency: #concurrency,
                    timeout: #timeout,
                    streaming: #streaming,
                    tools: &[#(#tools),*],
                    config_schema: #krate::__private::config_schema::<__ToolServiceTypes>,
                    arguments_schema: #krate::__private::arguments_schema::<__ToolServiceTypes>,
                    check_config: #krate::__private::check_config::<__ToolServiceTypes>,
                    handler: __tool_service_handler,
                    function: ::core::concat!(::core::module_path!(), "::", #function_name),
                    file: ::core::file!(),
                    line: ::core::line!(),
                }
            }
        };
    }
}
