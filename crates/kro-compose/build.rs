//! Generates `kro_compose::k8s`: a template struct and a reference type for every object
//! definition of the Kubernetes 1.33 catalog that kro-schema ships (so the catalog is the one
//! source of what a built-in kind's fields are). The output is `$OUT_DIR/k8s.rs`, included by
//! `src/k8s.rs`; see there for what the generated items are.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

use kro_schema::{Catalog, Schema};

const QUANTITY: &str = "io.k8s.apimachinery.pkg.api.resource.Quantity";
const INT_OR_STRING: &str = "io.k8s.apimachinery.pkg.util.intstr.IntOrString";
const PREFIX: &str = "io.k8s.";

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    let catalog = Catalog::kubernetes();
    let mut kinds: BTreeMap<&str, Vec<(String, String)>> = BTreeMap::new();
    for gvk in catalog.gvks() {
        if let Some(kind) = catalog.resolve(gvk).found() {
            kinds
                .entry(kind.definition_name())
                .or_default()
                .push((gvk.api_version(), gvk.kind().to_owned()));
        }
    }
    let mut root = Module::default();
    for name in catalog.definition_names() {
        let Some(schema) = catalog.definition(name) else {
            continue;
        };
        if !is_struct(schema) {
            continue;
        }
        let (modules, type_name) = rust_location(name);
        let module = modules.iter().fold(&mut root, |module, segment| {
            module.children.entry(segment.clone()).or_default()
        });
        let kind = match kinds.get(name).map(Vec::as_slice) {
            Some([only]) => Some(only),
            _ => None,
        };
        module
            .items
            .push_str(&definition(catalog, name, &type_name, schema, kind));
    }
    let mut out = String::new();
    root.write(&mut out);
    let path =
        PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR")).join("k8s.rs");
    std::fs::write(&path, out).expect("OUT_DIR is writable");
}

/// A module of the generated tree: its items and its submodules.
#[derive(Default)]
struct Module {
    items: String,
    children: BTreeMap<String, Module>,
}

impl Module {
    fn write(&self, out: &mut String) {
        out.push_str(&self.items);
        for (name, child) in &self.children {
            let _ = writeln!(
                out,
                "#[doc = \"Definitions under `{name}`.\"]\npub mod {name} {{"
            );
            child.write(out);
            out.push_str("}\n");
        }
    }
}

/// A definition that becomes a struct: an object with properties.
fn is_struct(schema: &Schema) -> bool {
    schema.type_.as_deref().is_none_or(|ty| ty == "object") && !schema.properties.is_empty()
}

/// `io.k8s.api.apps.v1.Deployment` → (`[api, apps, v1]`, `Deployment`).
fn rust_location(name: &str) -> (Vec<String>, String) {
    let mut segments: Vec<String> = name
        .strip_prefix(PREFIX)
        .unwrap_or(name)
        .split('.')
        .map(|segment| segment.replace('-', "_"))
        .collect();
    let type_name = segments.pop().unwrap_or_default();
    (segments, type_name)
}

fn rust_path(name: &str) -> String {
    let (modules, type_name) = rust_location(name);
    format!("crate::k8s::{}::{type_name}", modules.join("::"))
}

/// The name of the reference type of the definition `name`: `<Type>Ref`, or `<Type>Reference`
/// where `<Type>Ref` is a definition of its own (`io.k8s.api.rbac.v1.RoleRef`).
fn reference_name(catalog: &Catalog, name: &str) -> String {
    let taken = catalog.definition(&format!("{name}Ref")).is_some();
    let (_, type_name) = rust_location(name);
    if taken {
        format!("{type_name}Reference")
    } else {
        format!("{type_name}Ref")
    }
}

/// The type of a field's value.
enum Ty {
    Int,
    Float,
    Bool,
    Str,
    IntOrString,
    Quantity,
    Json,
    /// The Rust path of the struct and of its reference type.
    Struct(String, String),
    List(Box<Ty>),
    Map(Box<Ty>),
}

fn ty_of(catalog: &Catalog, schema: &Schema) -> Ty {
    if let Some((name, definition)) = catalog.referenced_definition(schema) {
        return match name {
            QUANTITY => Ty::Quantity,
            INT_OR_STRING => Ty::IntOrString,
            _ if is_struct(definition) => {
                let (modules, _) = rust_location(name);
                Ty::Struct(
                    rust_path(name),
                    format!(
                        "crate::k8s::{}::{}",
                        modules.join("::"),
                        reference_name(catalog, name)
                    ),
                )
            }
            _ => ty_of(catalog, definition),
        };
    }
    if schema.x_kubernetes_int_or_string {
        return Ty::IntOrString;
    }
    match schema.type_.as_deref() {
        Some("integer") => Ty::Int,
        Some("number") => Ty::Float,
        Some("boolean") => Ty::Bool,
        Some("string") => Ty::Str,
        Some("array") => match &schema.items {
            Some(items) => Ty::List(Box::new(ty_of(catalog, items))),
            None => Ty::List(Box::new(Ty::Json)),
        },
        Some("object") => match schema.additional_properties_schema() {
            Some(values) if schema.properties.is_empty() => {
                Ty::Map(Box::new(ty_of(catalog, values)))
            }
            _ => Ty::Json,
        },
        _ => Ty::Json,
    }
}

/// The Rust type of a value (a list's element, a reference's target).
fn element(ty: &Ty) -> String {
    match ty {
        Ty::Int => "i64".to_owned(),
        Ty::Float => "f64".to_owned(),
        Ty::Bool => "bool".to_owned(),
        Ty::Str => "String".to_owned(),
        Ty::IntOrString => "crate::k8s::IntOrString".to_owned(),
        Ty::Quantity => "crate::k8s::Quantity".to_owned(),
        Ty::Json => "crate::k8s::Json".to_owned(),
        Ty::Struct(path, _) => path.clone(),
        Ty::List(inner) => format!("Vec<{}>", element(inner)),
        Ty::Map(inner) => format!("std::collections::BTreeMap<String, {}>", element(inner)),
    }
}

/// The type of a template field: a [`Value`] of the value, with lists and maps holding values.
fn template_field(ty: &Ty) -> String {
    let inner = match ty {
        Ty::List(inner) => format!("Vec<{}>", template_field(inner)),
        Ty::Map(inner) => format!(
            "std::collections::BTreeMap<String, {}>",
            template_field(inner)
        ),
        other => element(other),
    };
    format!("crate::Value<{inner}>")
}

/// The type a reference to a field is.
fn reference(ty: &Ty) -> String {
    match ty {
        Ty::Struct(_, reference) => reference.clone(),
        other => format!("crate::Ref<{}>", element(other)),
    }
}

/// The Rust name of a field, as k8s-openapi names it: `availableReplicas` →
/// `available_replicas`, `podIP` → `pod_ip`, `type` → `type_`, `$ref` → `ref_path`,
/// `x-kubernetes-list-type` → `x_kubernetes_list_type`.
fn snake_case(name: &str) -> String {
    if name == "$ref" {
        return "ref_path".to_owned();
    }
    let chars: Vec<char> = name.trim_start_matches('$').chars().collect();
    let mut out = String::new();
    for (index, &ch) in chars.iter().enumerate() {
        if ch == '-' {
            out.push('_');
            continue;
        }
        if ch.is_ascii_uppercase() {
            let previous = index.checked_sub(1).map(|i| chars[i]);
            let next = chars.get(index + 1);
            let starts_word = match previous {
                None | Some('-') => false,
                Some(previous) if previous.is_ascii_lowercase() || previous.is_ascii_digit() => {
                    true
                }
                // The last capital of an acronym before a word: `IPFamily` → `ip_family`; but
                // an acronym's plural stays one word: `clusterIPs` → `cluster_ips`.
                // A version after an acronym: `openAPIV3Schema` → `open_api_v3_schema`.
                Some(previous)
                    if previous.is_ascii_uppercase() && next.is_some_and(char::is_ascii_digit) =>
                {
                    true
                }
                Some(previous) if previous.is_ascii_uppercase() => {
                    let plural = next == Some(&'s')
                        && chars.get(index + 2).is_none_or(char::is_ascii_uppercase);
                    next.is_some_and(char::is_ascii_lowercase) && !plural
                }
                Some(_) => false,
            };
            if starts_word {
                out.push('_');
            }
            out.push(ch.to_ascii_lowercase());
        } else {
            out.push(ch);
        }
    }
    match out.as_str() {
        "type" | "ref" | "continue" | "enum" | "const" | "for" | "in" | "match" | "loop"
        | "static" | "where" | "async" | "override" | "final" | "use" | "mod" | "move"
        | "return" | "struct" | "trait" | "true" | "false" | "let" | "if" | "else" | "fn"
        | "impl" | "as" | "break" | "while" | "await" | "dyn" | "yield" | "try" | "box" | "do"
        | "macro" | "priv" | "abstract" | "become" | "typeof" | "unsized" | "virtual"
        | "extern" | "gen" | "pub" | "mut" | "unsafe" => format!("{out}_"),
        _ => out,
    }
}

/// The first sentence of a description, as one line of doc text.
fn summary(description: Option<&str>, fallback: &str) -> String {
    let text = description.unwrap_or("").trim();
    let line = text.lines().next().unwrap_or("").trim();
    let sentence = match line.find(". ") {
        Some(end) => &line[..=end],
        None => line,
    };
    let sentence = if sentence.is_empty() {
        fallback
    } else {
        sentence
    };
    // Brackets would be read as intra-doc links.
    sentence.replace(['[', ']'], "`")
}

fn definition(
    catalog: &Catalog,
    name: &str,
    type_name: &str,
    schema: &Schema,
    kind: Option<&(String, String)>,
) -> String {
    let mut fields = String::new();
    let mut writes = String::new();
    let mut methods = String::new();
    let reference_type = reference_name(catalog, name);
    let own_path = rust_path(name);
    for (json_name, property) in &schema.properties {
        let mut ty = ty_of(catalog, property);
        // A struct cannot hold itself (`JSONSchemaProps.not`): such a field is any JSON.
        if matches!(&ty, Ty::Struct(path, _) if *path == own_path) {
            ty = Ty::Json;
        }
        let field = snake_case(json_name);
        let doc = summary(property.description.as_deref(), &format!("`{json_name}`."));
        let _ = writeln!(
            fields,
            "    #[doc = {doc:?}]\n    pub {field}: {},",
            template_field(&ty)
        );
        let _ = writeln!(
            writes,
            "        crate::ToJson::write_field(&self.{field}, &mut object, {json_name:?});"
        );
        // CEL reads a field by name only when the name is an identifier.
        if json_name
            .chars()
            .all(|ch| ch.is_ascii_alphanumeric() || ch == '_')
        {
            let _ = writeln!(
                methods,
                "    #[doc = {:?}]\n    pub fn {field}(&self) -> {} {{\n        crate::FromPath::from_path(format!(\"{{}}.{json_name}\", self.path))\n    }}",
                format!("A reference to `{json_name}`: {doc}"),
                reference(&ty)
            );
        }
    }
    let doc = summary(schema.description.as_deref(), &format!("`{name}`."));
    let mut out = format!(
        "#[doc = {doc:?}]\n#[doc = \"\"]\n#[doc = {:?}]\n#[derive(Debug, Clone, Default, PartialEq)]\npub struct {type_name} {{\n{fields}}}\n\n",
        format!("The template of `{name}`: every field a literal, a reference, or unset."),
    );
    let _ = write!(
        out,
        "impl crate::template::ToJson for {type_name} {{\n    fn to_json(&self) -> crate::k8s::Json {{\n        let mut object = serde_json::Map::new();\n{writes}        crate::k8s::Json::Object(object)\n    }}\n}}\n\n\
         impl crate::Typed for {type_name} {{\n    type Ref = {reference_type};\n}}\n\n\
         impl crate::template::CelAs<{type_name}> for {type_name} {{}}\n\n\
         impl From<{type_name}> for crate::Value<{type_name}> {{\n    fn from(value: {type_name}) -> Self {{\n        crate::Value::Set(value)\n    }}\n}}\n\n\
         #[doc = {:?}]\n#[derive(Debug, Clone, PartialEq, Eq)]\npub struct {reference_type} {{\n    path: String,\n}}\n\n\
         impl crate::FromPath for {reference_type} {{\n    fn from_path(path: String) -> Self {{\n        {reference_type} {{ path }}\n    }}\n}}\n\n\
         impl {reference_type} {{\n{methods}}}\n\n",
        format!("References into a `{name}`, a method per field."),
    );
    if let Some((api_version, kind)) = kind {
        let _ = write!(
            out,
            "impl crate::Kind for {type_name} {{\n    const API_VERSION: &'static str = {api_version:?};\n    const KIND: &'static str = {kind:?};\n}}\n\n\
             impl crate::Template for {type_name} {{\n    type Ref = {reference_type};\n    fn to_template(&self) -> Result<crate::k8s::Json, crate::TemplateError> {{\n        Ok(crate::template::kind_template::<{type_name}>(crate::template::ToJson::to_json(self)))\n    }}\n}}\n\n"
        );
    }
    out
}
