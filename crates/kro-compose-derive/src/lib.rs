//! Derive macros of kro-compose.
//!
//! **Owns:** `#[derive(KroSchema)]`: a struct with named fields becomes a SimpleSchema object
//! (each field camelCased, its markers from `#[kro(...)]`) and gets a typed reference type
//! `<Struct>Ref` with a method per field; an enum of unit variants becomes a string with
//! `enum=`. Attribute mistakes are compile errors at the attribute.
//!
//! **Must not:** emit anything but calls into `kro_compose`.

use proc_macro::TokenStream;
use proc_macro2::{Span, TokenStream as Tokens};
use quote::{format_ident, quote};
use syn::spanned::Spanned;
use syn::{Data, DeriveInput, Expr, ExprLit, Fields, Lit, LitStr, Type, parse_macro_input};

/// Derives `kro_compose::KroSchema` (see the crate docs of `kro_compose`).
///
/// On fields: `#[kro(default = 2, minimum = 1, maximum = 20, pattern = "^[a-z]+$",
/// description = "...", required, scale, scale_selector, rename = "name")]`. A field that is
/// neither an `Option` nor has a default is `required=true`. On enum variants:
/// `#[kro(rename = "value")]`.
///
/// ```
/// use kro_compose::{KroSchema, simple_schema, spec};
///
/// #[derive(KroSchema)]
/// enum Tier {
///     #[kro(rename = "dev")]
///     Dev,
///     #[kro(rename = "prod")]
///     Prod,
/// }
///
/// #[derive(KroSchema)]
/// struct AppSpec {
///     #[kro(default = 2, minimum = 1, description = "How many pods")]
///     replicas: i64,
///     tier: Tier,
///     note: Option<String>,
/// }
///
/// let schema = simple_schema::<AppSpec>();
/// assert_eq!(schema.spec["replicas"], "integer | default=2 minimum=1 description=\"How many pods\"");
/// assert_eq!(schema.spec["tier"], "string | required=true enum=\"dev,prod\"");
/// assert_eq!(schema.spec["note"], "string");
/// assert_eq!(spec::<AppSpec>().tier().eq(Tier::Prod).expression(), "schema.spec.tier == \"prod\"");
/// ```
#[proc_macro_derive(KroSchema, attributes(kro))]
pub fn derive_kro_schema(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    match derive(&input) {
        Ok(tokens) => tokens.into(),
        Err(error) => error.to_compile_error().into(),
    }
}

/// `cel!("expression")`: raw CEL, parsed by kro-cel while the program compiles — a syntax
/// error is a compile error at the string. Gives a `kro_compose::Ref` whose type is inferred
/// from where it is used.
///
/// ```
/// use kro_compose::{Ref, cel};
/// let ready: Ref<bool> = cel!("deployment.status.readyReplicas > 0");
/// assert_eq!(ready.expression(), "deployment.status.readyReplicas > 0");
/// ```
///
/// ```compile_fail
/// let broken: kro_compose::Ref<bool> = kro_compose::cel!("deployment.status >");
/// ```
#[proc_macro]
pub fn cel(input: TokenStream) -> TokenStream {
    let literal = parse_macro_input!(input as LitStr);
    let text = literal.value();
    match kro_cel::parse(&text) {
        Ok(_) => quote!(::kro_compose::Ref::raw(#text)).into(),
        Err(error) => syn::Error::new(literal.span(), format!("CEL syntax error: {error}"))
            .to_compile_error()
            .into(),
    }
}

/// `fmt_cel!("http://{}:{}", name, port)`: a string template of CEL values — strings as they
/// are, numbers and booleans through `string(...)`. The number of `{}` must match the values
/// (checked while the program compiles).
///
/// ```
/// use kro_compose::{KroSchema, fmt_cel, instance_name, spec};
/// #[derive(KroSchema)]
/// struct AppSpec { port: i64 }
/// let url = fmt_cel!("http://{}:{}", instance_name(), spec::<AppSpec>().port());
/// assert_eq!(url.expression(), "\"http://\" + schema.metadata.name + \":\" + string(schema.spec.port)");
/// ```
#[proc_macro]
pub fn fmt_cel(input: TokenStream) -> TokenStream {
    let parser = syn::punctuated::Punctuated::<Expr, syn::Token![,]>::parse_terminated;
    let arguments = parse_macro_input!(input with parser);
    let mut arguments = arguments.into_iter();
    let Some(Expr::Lit(ExprLit {
        lit: Lit::Str(template),
        ..
    })) = arguments.next()
    else {
        return syn::Error::new(
            Span::call_site(),
            "fmt_cel! takes a string literal template first",
        )
        .to_compile_error()
        .into();
    };
    let values: Vec<Expr> = arguments.collect();
    let text = template.value();
    let pieces: Vec<&str> = text.split("{}").collect();
    if pieces.len() - 1 != values.len() {
        return syn::Error::new(
            template.span(),
            format!(
                "the template has {} placeholder(s) `{{}}` but {} value(s) follow",
                pieces.len() - 1,
                values.len()
            ),
        )
        .to_compile_error()
        .into();
    }
    quote!(::kro_compose::expr::__template(
        &[#(#pieces),*],
        &[#(::kro_compose::expr::CelText::cel_text(&(#values))),*],
    ))
    .into()
}

fn derive(input: &DeriveInput) -> syn::Result<Tokens> {
    if !input.generics.params.is_empty() {
        return Err(syn::Error::new(
            input.generics.span(),
            "KroSchema cannot be derived for generic types",
        ));
    }
    match &input.data {
        Data::Struct(data) => match &data.fields {
            Fields::Named(fields) => derive_struct(input, fields.named.iter().collect()),
            _ => Err(syn::Error::new(
                input.ident.span(),
                "KroSchema needs a struct with named fields (each one is a schema field)",
            )),
        },
        Data::Enum(data) => derive_enum(input, data),
        Data::Union(_) => Err(syn::Error::new(
            input.ident.span(),
            "KroSchema cannot be derived for unions",
        )),
    }
}

/// What `#[kro(...)]` on a field says.
#[derive(Default)]
struct FieldAttributes {
    rename: Option<String>,
    default: Option<Tokens>,
    minimum: Option<Tokens>,
    maximum: Option<Tokens>,
    pattern: Option<String>,
    description: Option<String>,
    required: bool,
    scale: bool,
    scale_selector: bool,
}

fn field_attributes(attributes: &[syn::Attribute]) -> syn::Result<FieldAttributes> {
    let mut found = FieldAttributes::default();
    for attribute in attributes.iter().filter(|a| a.path().is_ident("kro")) {
        attribute.parse_nested_meta(|meta| {
            let name = meta
                .path
                .get_ident()
                .map(ToString::to_string)
                .unwrap_or_default();
            match name.as_str() {
                "rename" => found.rename = Some(meta.value()?.parse::<LitStr>()?.value()),
                "pattern" => found.pattern = Some(meta.value()?.parse::<LitStr>()?.value()),
                "description" => {
                    found.description = Some(meta.value()?.parse::<LitStr>()?.value());
                }
                "default" => found.default = Some(marker_value(&meta.value()?.parse()?)?),
                "minimum" => found.minimum = Some(number(&meta.value()?.parse()?)?),
                "maximum" => found.maximum = Some(number(&meta.value()?.parse()?)?),
                "required" => found.required = true,
                "scale" => found.scale = true,
                "scale_selector" => found.scale_selector = true,
                _ => {
                    return Err(meta.error(
                        "unknown kro attribute: expected rename, default, minimum, maximum, \
                         pattern, description, required, scale or scale_selector",
                    ));
                }
            }
            Ok(())
        })?;
    }
    Ok(found)
}

/// A default as SimpleSchema writes it: strings quoted, numbers and booleans as they are.
fn marker_value(expression: &Expr) -> syn::Result<Tokens> {
    match expression {
        Expr::Lit(ExprLit { lit, .. }) => match lit {
            Lit::Str(text) => {
                let text = text.value();
                Ok(
                    quote!(::kro_compose::__private::serde_json::Value::String(#text.to_owned()).to_string()),
                )
            }
            Lit::Int(_) | Lit::Float(_) | Lit::Bool(_) => {
                Ok(quote!(::std::string::ToString::to_string(&#lit)))
            }
            other => Err(syn::Error::new(
                other.span(),
                "a default is a string, number or boolean literal",
            )),
        },
        Expr::Unary(unary) if matches!(unary.op, syn::UnOp::Neg(_)) => {
            Ok(quote!(::std::string::ToString::to_string(&(#expression))))
        }
        other => Err(syn::Error::new(
            other.span(),
            "a default is a string, number or boolean literal",
        )),
    }
}

/// A number marker (minimum, maximum).
fn number(expression: &Expr) -> syn::Result<Tokens> {
    match expression {
        Expr::Lit(ExprLit {
            lit: Lit::Int(_) | Lit::Float(_),
            ..
        }) => Ok(quote!(::std::string::ToString::to_string(&(#expression)))),
        Expr::Unary(unary) if matches!(unary.op, syn::UnOp::Neg(_)) => {
            Ok(quote!(::std::string::ToString::to_string(&(#expression))))
        }
        other => Err(syn::Error::new(
            other.span(),
            "minimum and maximum are number literals",
        )),
    }
}

/// `snake_case` → `camelCase`, as Kubernetes names fields.
fn camel_case(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut upper = false;
    for character in name.trim_start_matches("r#").chars() {
        if character == '_' {
            upper = !out.is_empty();
        } else if upper {
            out.extend(character.to_uppercase());
            upper = false;
        } else {
            out.push(character);
        }
    }
    out
}

/// Whether a type is written `Option<...>`.
fn is_option(ty: &Type) -> bool {
    matches!(ty, Type::Path(path) if path.qself.is_none()
        && path.path.segments.last().is_some_and(|segment| segment.ident == "Option"))
}

fn derive_struct(input: &DeriveInput, fields: Vec<&syn::Field>) -> syn::Result<Tokens> {
    let name = &input.ident;
    let type_name = name.to_string();
    let reference = format_ident!("{}Ref", name);
    let values = format_ident!("{}Values", name);
    let visibility = &input.vis;
    let mut field_values = Vec::new();
    let mut methods = Vec::new();
    let mut value_fields = Vec::new();
    let mut writes = Vec::new();
    for field in fields {
        let Some(ident) = &field.ident else {
            continue;
        };
        let attributes = field_attributes(&field.attrs)?;
        let schema_name = attributes
            .rename
            .clone()
            .unwrap_or_else(|| camel_case(&ident.to_string()));
        let ty = &field.ty;
        let required = attributes.required || (!is_option(ty) && attributes.default.is_none());
        let option = |value: &Option<Tokens>| match value {
            Some(value) => quote!(::std::option::Option::Some(#value)),
            None => quote!(::std::option::Option::None),
        };
        let quoted = |value: &Option<String>| match value {
            Some(value) => quote!(::std::option::Option::Some(
                ::kro_compose::__private::serde_json::Value::String(#value.to_owned()).to_string()
            )),
            None => quote!(::std::option::Option::None),
        };
        let (default, minimum, maximum) = (
            option(&attributes.default),
            option(&attributes.minimum),
            option(&attributes.maximum),
        );
        let (pattern, description) = (quoted(&attributes.pattern), quoted(&attributes.description));
        let (scale, scale_selector) = (attributes.scale, attributes.scale_selector);
        field_values.push(quote! {
            ::kro_compose::Field {
                name: #schema_name.to_owned(),
                ty: <#ty as ::kro_compose::KroSchema>::schema_type(types),
                markers: ::kro_compose::Markers {
                    required: #required,
                    default: #default,
                    minimum: #minimum,
                    maximum: #maximum,
                    pattern: #pattern,
                    description: #description,
                    scale: #scale,
                    scale_selector: #scale_selector,
                },
            }
        });
        let value_doc = format!("The value of `{schema_name}`.");
        value_fields.push(quote! {
            #[doc = #value_doc]
            pub #ident: <#ty as ::kro_compose::KroSchema>::Values,
        });
        writes.push(quote! {
            ::kro_compose::ToJson::write_field(&self.#ident, &mut object, #schema_name);
        });
        let doc = format!("A reference to `{schema_name}`.");
        methods.push(quote! {
            #[doc = #doc]
            pub fn #ident(&self) -> <#ty as ::kro_compose::Typed>::Ref {
                <#ty as ::kro_compose::Typed>::reference(::std::format!("{}.{}", self.path, #schema_name))
            }
        });
    }
    let reference_doc = format!("Typed references into a `{type_name}` (see `kro_compose::spec`).");
    let values_doc = format!(
        "A value for every field of a `{type_name}`: what a composition's status is given \
         (`Composition::status`), or a nested composition's spec (`Composition::nest`)."
    );
    Ok(quote! {
        impl ::kro_compose::Typed for #name {
            type Ref = #reference;
        }

        #[doc = #values_doc]
        #visibility struct #values {
            #(#value_fields)*
        }

        impl ::kro_compose::ToJson for #values {
            fn to_json(&self) -> ::kro_compose::__private::serde_json::Value {
                let mut object = ::kro_compose::__private::serde_json::Map::new();
                #(#writes)*
                ::kro_compose::__private::serde_json::Value::Object(object)
            }
        }

        impl ::kro_compose::CelAs<#name> for #name {}

        impl ::kro_compose::ToJson for #name {
            fn to_json(&self) -> ::kro_compose::__private::serde_json::Value {
                let mut object = ::kro_compose::__private::serde_json::Map::new();
                #(#writes)*
                ::kro_compose::__private::serde_json::Value::Object(object)
            }
        }

        impl ::kro_compose::KroSchema for #name {
            type Values = #values;
            fn schema_type(types: &mut ::kro_compose::Types) -> ::kro_compose::SchemaType {
                ::kro_compose::SchemaType::Object(::std::vec![#(#field_values),*])
            }
            fn type_name() -> ::std::option::Option<&'static str> {
                ::std::option::Option::Some(#type_name)
            }
        }

        #[doc = #reference_doc]
        #[derive(Debug, Clone, PartialEq)]
        #visibility struct #reference {
            path: ::std::string::String,
        }

        impl #reference {
            /// The CEL path of the whole value (named so that no field's method can clash).
            pub fn reference_path(&self) -> &str {
                &self.path
            }
            #(#methods)*
        }

        impl ::kro_compose::FromPath for #reference {
            fn from_path(path: ::std::string::String) -> Self {
                #reference { path }
            }
        }
    })
}

fn derive_enum(input: &DeriveInput, data: &syn::DataEnum) -> syn::Result<Tokens> {
    let name = &input.ident;
    let mut values = Vec::new();
    let mut variants: Vec<&syn::Ident> = Vec::new();
    for variant in &data.variants {
        if !matches!(variant.fields, Fields::Unit) {
            return Err(syn::Error::new(
                variant.span(),
                "KroSchema enums have unit variants only (each is a value of a string enum)",
            ));
        }
        let attributes = field_attributes(&variant.attrs)?;
        values.push(
            attributes
                .rename
                .unwrap_or_else(|| variant.ident.to_string()),
        );
        variants.push(&variant.ident);
    }
    if values.is_empty() {
        return Err(syn::Error::new(
            Span::call_site(),
            "a KroSchema enum needs at least one variant",
        ));
    }
    Ok(quote! {
        impl ::kro_compose::Typed for #name {
            type Ref = ::kro_compose::Ref<#name>;
        }

        impl ::kro_compose::ToJson for #name {
            fn to_json(&self) -> ::kro_compose::__private::serde_json::Value {
                let text = match self {
                    #(#name::#variants => #values,)*
                };
                ::kro_compose::__private::serde_json::Value::String(text.to_owned())
            }
        }

        impl ::kro_compose::KroSchema for #name {
            type Values = ::kro_compose::Value<#name>;
            fn schema_type(_: &mut ::kro_compose::Types) -> ::kro_compose::SchemaType {
                ::kro_compose::SchemaType::Enum(::std::vec![#(#values.to_owned()),*])
            }
        }

        impl ::kro_compose::expr::StringEnum for #name {}

        impl ::kro_compose::CelAs<#name> for #name {}

        impl ::std::convert::From<#name> for ::kro_compose::Value<#name> {
            fn from(value: #name) -> Self {
                ::kro_compose::Value::Set(value)
            }
        }

        impl ::std::convert::From<#name> for ::kro_compose::Value<::std::string::String> {
            fn from(value: #name) -> Self {
                let text = match value {
                    #(#name::#variants => #values,)*
                };
                ::kro_compose::Value::Set(text.to_owned())
            }
        }

        impl ::kro_compose::expr::Operand<#name> for #name {
            fn cel(&self) -> ::std::string::String {
                let value = match self {
                    #(#name::#variants => #values,)*
                };
                ::kro_compose::__private::serde_json::Value::String(value.to_owned()).to_string()
            }
        }
    })
}
