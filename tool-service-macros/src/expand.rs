//! Code generation: the user's function as written, plus a `const _` block
//! with the decoding types, the handler glue and the registration.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;
use syn::{FnArg, Ident, ItemFn};

use crate::attr::{self, ConfigLit};
use crate::ctxt::Errors;
use crate::model::params::{misspelt_role, ARG_ATTR, ROLE_ATTRS};
use crate::model::{self, Output, Service, Side, Slot, StateParam};

/// Expands `#[tool_service(attr)] item`.
pub(crate) fn tool_service(attr: TokenStream, item: TokenStream) -> TokenStream {
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

/// Removes the parameter attributes the macro consumed (and the misspelt
/// ones it reported), leaving the function otherwise as written.
fn strip_role_attrs(function: &mut ItemFn) {
    for input in &mut function.sig.inputs {
        if let FnArg::Typed(pat_type) = input {
            pat_type.attrs.retain(|attr| {
                !ROLE_ATTRS.iter().any(|name| attr.path().is_ident(name))
                    && !attr.path().is_ident(ARG_ATTR)
                    && misspelt_role(attr).is_none()
            });
        }
    }
}

fn path_string(path: &syn::Path) -> String {
    path.to_token_stream().to_string().replace(' ', "")
}

/// The names one side's glue is generated under.
struct SideNames {
    /// The handler closure's parameter that holds the decoded side.
    binding: &'static str,
    /// The hidden struct that decodes the side when it has single parameters.
    decoder: &'static str,
    /// The runtime's type for a side without parameters.
    empty: &'static str,
}

/// The config side.
const CONFIG: SideNames = SideNames {
    binding: "__config",
    decoder: "__ToolServiceConfig",
    empty: "NoConfig",
};

/// The LLM arguments side.
const ARGUMENTS: SideNames = SideNames {
    binding: "__arguments",
    decoder: "__ToolServiceArguments",
    empty: "NoArguments",
};

/// What the call of the user's function passes for one parameter.
struct CallArgument {
    /// Where the parameter stands in the function's signature.
    position: usize,
    /// The value passed, read from the handler closure's parameters.
    expression: TokenStream,
}

/// The glue of one side (config or arguments): its type among those
/// `__tool_service_types()` returns, the expression there that yields it,
/// the hidden struct that decodes it (if any), and what the call of the
/// user's function passes for each of its parameters. All follow from one
/// decision, taken in [`SideGlue::new`]: a side with single parameters is
/// decoded as a generated struct, generic over its fields' types, its
/// whole-struct parameter (if any) flattened into a `__whole` field;
/// otherwise as the whole struct's own type, or as the runtime's empty type.
///
/// The user's types appear in `__tool_service_types()` only: each is
/// checked there by a probe spanned on it, and returned as an opaque
/// `impl ParameterType + IntoParameter<T>`, so that a type lacking
/// `Deserialize` or `JsonSchema` is reported once, on the type as written.
struct SideGlue {
    /// The handler closure's parameter that holds the decoded side.
    binding: Ident,
    /// The side's type in the return type of `__tool_service_types()`.
    ty: TokenStream,
    /// The expression in `__tool_service_types()` that yields
    /// `PhantomData` of the side's type.
    marker: TokenStream,
    /// The hidden decoding struct, or nothing.
    definition: TokenStream,
    /// What the call passes for each of the side's parameters.
    call: Vec<CallArgument>,
}

impl SideGlue {
    fn new(krate: &syn::Path, side: &Side, names: &SideNames) -> Self {
        let binding = format_ident!("{}", names.binding);
        if side.singles.is_empty() {
            return match &side.whole {
                Some(whole) => {
                    let reference = whole.by_ref.then(|| quote!(&));
                    let value = into_parameter(krate, &whole.ty, binding.to_token_stream());
                    Self {
                        ty: opaque(krate, &whole.ty),
                        marker: probe(krate, &whole.ty),
                        definition: TokenStream::new(),
                        call: vec![CallArgument {
                            position: whole.position,
                            expression: quote!(#reference #value),
                        }],
                        binding,
                    }
                }
                None => {
                    let empty = format_ident!("{}", names.empty);
                    Self {
                        ty: quote!(#krate::__private::#empty),
                        marker: quote!(::core::marker::PhantomData::<#krate::__private::#empty>),
                        definition: TokenStream::new(),
                        call: Vec::new(),
                        binding,
                    }
                }
            };
        }
        let decoder = format_ident!("{}", names.decoder);
        let whole_field = format_ident!("__whole");
        // The user's types, in the order of the decoding struct's fields.
        let types: Vec<&syn::Type> = side
            .whole
            .iter()
            .map(|whole| &whole.ty)
            .chain(side.singles.iter().map(|single| &single.ty))
            .collect();
        let whole = side.whole.as_ref().map(|whole| {
            let reference = whole.by_ref.then(|| quote!(&));
            let value = into_parameter(krate, &whole.ty, quote!(#binding.#whole_field));
            CallArgument {
                position: whole.position,
                expression: quote!(#reference #value),
            }
        });
        let singles = side.singles.iter().map(|single| {
            let ident = &single.ident;
            let ty = &single.ty;
            // An argument with a default is decoded as an `Option`: left
            // out, it is the default, typed as the parameter.
            let expression = match single.bounds.default_value(ty) {
                Some(default) => {
                    let given = into_parameter(krate, ty, quote!(__given));
                    quote! {
                        match #binding.#ident {
                            ::core::option::Option::Some(__given) => #given,
                            ::core::option::Option::None => {
                                let __default: #ty = #default;
                                __default
                            }
                        }
                    }
                }
                None => into_parameter(krate, ty, quote!(#binding.#ident)),
            };
            CallArgument {
                position: single.position,
                expression,
            }
        });
        let opaques = types.iter().map(|ty| opaque(krate, ty));
        let probes = types.iter().map(|ty| probe(krate, ty));
        Self {
            definition: decoding_struct(krate, &decoder, &whole_field, side),
            ty: quote!(#decoder<#(#opaques),*>),
            marker: quote!(#decoder::__tool_service_marker(#(#probes),*)),
            call: whole.into_iter().chain(singles).collect(),
            binding,
        }
    }
}

/// How `__tool_service_types()` returns the user's type `ty`: as an opaque
/// type the rest of the glue only decodes, describes and turns into `ty`.
fn opaque(krate: &syn::Path, ty: &syn::Type) -> TokenStream {
    quote!(impl #krate::__private::ParameterType + #krate::__private::IntoParameter<#ty>)
}

/// The check of the user's type `ty` for `Deserialize` and `JsonSchema`
/// (see the runtime's `TypeProbe`); yields `PhantomData` of what is decoded
/// for it. An error lands on `ty` as written.
fn probe(krate: &syn::Path, ty: &syn::Type) -> TokenStream {
    let span = Span::call_site().located_at(ty.span());
    quote_spanned! {span=>
        (&&&&#krate::__private::TypeProbe::<#ty>::new()).__tool_service_type::<#ty>()
    }
}

/// `value`, decoded for a parameter of type `ty`, as a `ty`.
fn into_parameter(krate: &syn::Path, ty: &syn::Type, value: TokenStream) -> TokenStream {
    quote!(#krate::__private::IntoParameter::<#ty>::into_parameter(#value))
}

/// A hidden struct that decodes a side's single parameters (and its
/// whole-struct parameter, flattened into `whole_field`) from one JSON
/// object. It is generic over its fields' types (`__W` for the whole
/// struct, `__T0`, `__T1`, … for the singles), so that its derived impls
/// ask nothing of the user's types; `__tool_service_marker` builds
/// `PhantomData` of it from its fields' markers.
fn decoding_struct(
    krate: &syn::Path,
    name: &Ident,
    whole_field: &Ident,
    side: &Side,
) -> TokenStream {
    let serde_crate = format!("{}::__private::serde", path_string(krate));
    let schemars_crate = format!("{}::__private::schemars", path_string(krate));
    let schema_name = name.to_string();
    let whole_param = side.whole.as_ref().map(|_| format_ident!("__W"));
    let whole = whole_param
        .as_ref()
        .map(|param| quote!(#[serde(flatten)] #whole_field: #param,));
    let single_params: Vec<Ident> = (0..side.singles.len())
        .map(|index| format_ident!("__T{}", index))
        .collect();
    let fields = side
        .singles
        .iter()
        .zip(&single_params)
        .map(|(single, param)| {
            let ident = &single.ident;
            let doc = single
                .description
                .as_deref()
                .map(|text| quote!(#[doc = #text]));
            let bounds = single.bounds.schema_attrs();
            if single.bounds.default.is_some() {
                // Decoded as an `Option` (left out, it is the default), and
                // described as the parameter's own type: not nullable, not
                // required.
                let with = param.to_string();
                quote!(#doc #bounds #[serde(default)] #[schemars(with = #with)] #ident: ::core::option::Option<#param>,)
            } else {
                quote!(#doc #bounds #ident: #param,)
            }
        });
    let params: Vec<&Ident> = whole_param.iter().chain(&single_params).collect();
    let bounded = quote!(#(#params: #krate::__private::ParameterType),*);
    quote! {
        #[derive(#krate::__private::serde::Deserialize, #krate::__private::schemars::JsonSchema)]
        // The declared bounds are all the impls need: no inferred ones.
        #[serde(crate = #serde_crate, bound = "")]
        #[schemars(crate = #schemars_crate, rename = #schema_name)]
        struct #name<#bounded> {
            #whole
            #(#fields)*
        }

        impl<#bounded> #name<#(#params),*> {
            fn __tool_service_marker(
                #(_: ::core::marker::PhantomData<#params>),*
            ) -> ::core::marker::PhantomData<Self> {
                ::core::marker::PhantomData
            }
        }
    }
}

/// What the call passes for a context or stream parameter, if there is one.
fn slot_argument(slot: Option<&Slot>, binding: &Ident) -> Option<CallArgument> {
    slot.map(|slot| {
        let reference = slot.by_ref.then(|| quote!(&));
        CallArgument {
            position: slot.position,
            expression: quote!(#reference #binding),
        }
    })
}

/// Each `#[state]` parameter's lookup (run in the handler's future) and
/// what the call passes for it; and the types the service declares.
fn state_glue(
    krate: &syn::Path,
    id: &str,
    states: &[StateParam],
) -> (Vec<TokenStream>, Vec<CallArgument>, Vec<TokenStream>) {
    let state = format_ident!("__state");
    let mut lookups = Vec::new();
    let mut call = Vec::new();
    let mut needs = Vec::new();
    for (at, param) in states.iter().enumerate() {
        let binding = format_ident!("__state_{}", at);
        let ty = &param.ty;
        lookups.push(quote_spanned! {ty.span()=>
            let #binding = match #krate::__private::state::<#ty>(&#state, #id) {
                ::core::result::Result::Ok(value) => value,
                ::core::result::Result::Err(error) => return ::core::result::Result::Err(error),
            };
        });
        let expression = if param.by_ref {
            quote!(&*#binding)
        } else {
            quote!(#binding)
        };
        call.push(CallArgument {
            position: param.position,
            expression,
        });
        needs.push(quote_spanned! {ty.span()=>
            #krate::__private::StateNeed {
                type_id: ::core::any::TypeId::of::<#ty>,
                type_name: ::core::any::type_name::<#ty>,
            }
        });
    }
    (lookups, call, needs)
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

    let params = &service.params;
    let config = SideGlue::new(krate, &params.config, &CONFIG);
    let arguments = SideGlue::new(krate, &params.arguments, &ARGUMENTS);
    let context = format_ident!("__context");
    let chunks = format_ident!("__chunks");
    let (config_binding, config_ty, config_marker, config_definition) = (
        &config.binding,
        &config.ty,
        &config.marker,
        &config.definition,
    );
    let (arguments_binding, arguments_ty, arguments_marker, arguments_definition) = (
        &arguments.binding,
        &arguments.ty,
        &arguments.marker,
        &arguments.definition,
    );

    let (state_lookups, state_call, state_needs) = state_glue(krate, &service.id, &params.states);
    let state = format_ident!("__state");

    // The parameters in the order written, whatever they receive.
    let mut call: Vec<&CallArgument> = config
        .call
        .iter()
        .chain(&arguments.call)
        .chain(&state_call)
        .collect();
    let slots = [
        slot_argument(params.context.as_ref(), &context),
        slot_argument(params.stream.as_ref(), &chunks),
    ];
    call.extend(slots.iter().flatten());
    call.sort_by_key(|argument| argument.position);
    let call_arguments = call.iter().map(|argument| &argument.expression);
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

    // The type of the value the handler returns on success, for the MCP
    // output schema (`()` when it returns nothing).
    let unit: syn::Type = syn::parse_quote!(());
    let ok_ty = match &service.output {
        Output::Value(ty) | Output::Result { ok: ty, .. } => ty.as_ref().unwrap_or(&unit),
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
    let rate = match service.rate {
        Some((calls, unit)) => {
            let constructor = match unit {
                's' => quote!(per_second),
                'm' => quote!(per_minute),
                _ => quote!(per_hour),
            };
            quote!(::core::option::Option::Some(#krate::Rate::#constructor(#calls)))
        }
        None => quote!(::core::option::Option::None),
    };
    let parameters = quote! {
        |#config_binding, #arguments_binding, #context: #krate::__private::Context, #chunks: #krate::__private::Chunks, #state: #krate::__private::State|
    };
    let invoke = if service.blocking {
        // A plain `fn`: called on the blocking pool.
        quote! {
            __tool_service_types().invoke_blocking(
                &__RULES,
                __invocation,
                #parameters {
                    #(#state_lookups)*
                    let __output = #function(#(#call_arguments),*);
                    #convert
                },
            )
        }
    } else {
        quote! {
            __tool_service_types().invoke(
                &__RULES,
                __invocation,
                #parameters async move {
                    #(#state_lookups)*
                    let __output = #function(#(#call_arguments),*).await;
                    #convert
                },
            )
        }
    };
    let blocking = service.blocking;
    let scopes = &service.scopes;
    let streaming = params.stream.is_some();
    let tolerant = !service.strict;
    let takes_context = params.context.is_some();
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
        let group = &tool.group;
        let applicable_states = &tool.applicable_states;
        let state = option_str(&tool.state);
        let title = option_str(&tool.title);
        let hint = |value: Option<bool>| match value {
            Some(flag) => quote!(::core::option::Option::Some(#flag)),
            None => quote!(::core::option::Option::None),
        };
        let read_only = hint(tool.hints.read_only);
        let destructive = hint(tool.hints.destructive);
        let idempotent = hint(tool.hints.idempotent);
        let open_world = hint(tool.hints.open_world);
        quote! {
            #krate::__private::ToolSpec {
                name: #name,
                title: #title,
                description: #description,
                annotations: #krate::__private::Annotations {
                    read_only: #read_only,
                    destructive: #destructive,
                    idempotent: #idempotent,
                    open_world: #open_world,
                },
                config: &[#(#config),*],
                arguments: &[#(#arguments),*],
                group: &[#(#group),*],
                state: #state,
                applicable_states: &[#(#applicable_states),*],
            }
        }
    });

    quote! {
        #[doc(hidden)]
        #[allow(non_camel_case_types, non_snake_case, clippy::all)]
        const _: () = {
            #config_definition
            #arguments_definition

            /// The service's config and argument types: the one place
            /// that names the user's types, each checked where written.
            fn __tool_service_types() -> #krate::__private::Types<#config_ty, #arguments_ty> {
                #[allow(unused_imports)]
                use #krate::__private::{
                    ViaBoth as _, ViaDeserializeOnly as _, ViaJsonSchemaOnly as _, ViaNeither as _,
                };
                #krate::__private::Types::new(#config_marker, #arguments_marker)
            }

            fn __tool_service_handler(
                __invocation: #krate::__private::Invocation,
            ) -> #krate::__private::HandlerFuture {
                static __RULES: #krate::__private::ArgumentRules =
                    #krate::__private::ArgumentRules::new(#tolerant);
                #invoke
            }

            fn __tool_service_config_schema() -> #krate::__private::schemars::Schema {
                __tool_service_types().config_schema()
            }

            fn __tool_service_arguments_schema() -> #krate::__private::schemars::Schema {
                __tool_service_types().arguments_schema()
            }

            fn __tool_service_check_config(
                __text: &str,
            ) -> ::core::result::Result<(), #krate::__private::ToolError> {
                __tool_service_types().check_config(__text)
            }

            fn __tool_service_output_schema() -> ::core::option::Option<#krate::__private::schemars::Schema> {
                #[allow(unused_imports)]
                use #krate::__private::{OutputViaNothing as _, OutputViaSchema as _};
                (&&#krate::__private::OutputProbe::<#ok_ty>::NEW).__tool_service_output_schema()
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
                    rate: #rate,
                    scopes: &[#(#scopes),*],
                    streaming: #streaming,
                    blocking: #blocking,
                    takes_context: #takes_context,
                    tools: &[#(#tools),*],
                    config_schema: __tool_service_config_schema,
                    arguments_schema: __tool_service_arguments_schema,
                    output_schema: __tool_service_output_schema,
                    check_config: __tool_service_check_config,
                    states: &[#(#state_needs),*],
                    handler: __tool_service_handler,
                    function: ::core::concat!(::core::module_path!(), "::", #function_name),
                    file: ::core::file!(),
                    line: ::core::line!(),
                }
            }
        };
    }
}
