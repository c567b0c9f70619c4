//! SimpleSchema from Rust types: each field's type and markers, nested structs as nested
//! maps, structs inside lists and maps as custom types. Owns [`KroSchema`], the trait the
//! derive implements, and its implementations for the scalars, lists, maps and `Option`.

use std::collections::BTreeMap;

use serde_json::{Map, Value as Json};

use crate::reference::{FromPath, Ref, Typed};
use crate::template::{ToJson, Value};

/// A type that has a SimpleSchema type and typed references: the scalars, strings, lists and
/// maps of them, and structs and unit enums with `#[derive(KroSchema)]`.
pub trait KroSchema: Typed + ToJson {
    /// What a value for a field of this type is given as: a [`Value`] (a literal or a
    /// reference), or for a struct its generated `<Struct>Values` with a value per field.
    type Values: ToJson;

    /// Its SimpleSchema type; structs used in lists or maps are added to `types` under their
    /// name.
    fn schema_type(types: &mut Types) -> SchemaType;

    /// The name of a struct, under which it is a custom type when a list or map holds it;
    /// `None` for every other type.
    fn type_name() -> Option<&'static str> {
        None
    }
}

/// A SimpleSchema type.
#[derive(Debug, Clone, PartialEq)]
pub enum SchemaType {
    /// A type written as text: `integer`, `[]string`, `map[string]Port`.
    Named(String),
    /// A string restricted to these values (a unit enum).
    Enum(Vec<String>),
    /// An object written inline, field by field (a struct as a field).
    Object(Vec<Field>),
}

impl SchemaType {
    /// The type as text, for a list's or a map's element: an inline object has no such name.
    pub fn name(&self) -> Option<String> {
        match self {
            SchemaType::Named(name) => Some(name.clone()),
            SchemaType::Enum(_) => Some("string".to_owned()),
            SchemaType::Object(_) => None,
        }
    }
}

/// The markers of one field (`default=2 minimum=1`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Markers {
    /// `required=true`.
    pub required: bool,
    /// `default=`, as SimpleSchema writes it (strings quoted).
    pub default: Option<String>,
    /// `minimum=`.
    pub minimum: Option<String>,
    /// `maximum=`.
    pub maximum: Option<String>,
    /// `pattern=`, quoted.
    pub pattern: Option<String>,
    /// `description=`, quoted.
    pub description: Option<String>,
    /// `scale`: the replicas field of the scale subresource.
    pub scale: bool,
    /// `scaleSelector`: the status field with the pods' label selector.
    pub scale_selector: bool,
}

/// One field of an object.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    /// Its name in the schema (camelCase).
    pub name: String,
    /// Its type.
    pub ty: SchemaType,
    /// Its markers.
    pub markers: Markers,
}

/// The custom types a schema needs (`spec.schema.types` of an RGD): structs used inside
/// lists or maps, by name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Types {
    entries: BTreeMap<String, Vec<Field>>,
}

impl Types {
    /// The name under which `T` (a struct) is a custom type, added with its fields unless it
    /// is known; a struct that contains itself is added once.
    fn custom<T: KroSchema>(&mut self, name: &str) -> String {
        if !self.entries.contains_key(name) {
            self.entries.insert(name.to_owned(), Vec::new());
            if let SchemaType::Object(fields) = T::schema_type(self) {
                self.entries.insert(name.to_owned(), fields);
            }
        }
        name.to_owned()
    }

    /// Whether no custom type is needed.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// The SimpleSchema of a struct: its fields (for `spec.schema.spec` or `.status`) and the
/// custom types they use (`spec.schema.types`).
#[derive(Debug, Clone, PartialEq)]
pub struct SimpleSchema {
    /// The fields, in declaration order: `"integer | default=2"`, or a nested map.
    pub spec: Json,
    /// The custom types, by name.
    pub types: Json,
}

/// The SimpleSchema of `T` (a struct with `#[derive(KroSchema)]`).
///
/// ```
/// # use kro_compose::*;
/// #[derive(KroSchema)]
/// struct Port { number: i64 }
/// #[derive(KroSchema)]
/// struct AppSpec { #[kro(default = "web")] name: String, ports: Vec<Port> }
///
/// let schema = simple_schema::<AppSpec>();
/// assert_eq!(schema.spec, serde_json::json!({"name": "string | default=\"web\"", "ports": "[]Port | required=true"}));
/// assert_eq!(schema.types, serde_json::json!({"Port": {"number": "integer | required=true"}}));
/// ```
pub fn simple_schema<T: KroSchema>() -> SimpleSchema {
    let mut types = Types::default();
    let root = T::schema_type(&mut types);
    let spec = match &root {
        SchemaType::Object(fields) => fields_json(fields),
        other => Json::String(field_text(other, &Markers::default())),
    };
    let types = types
        .entries
        .iter()
        .map(|(name, fields)| (name.clone(), fields_json(fields)))
        .collect::<Map<String, Json>>();
    SimpleSchema {
        spec,
        types: Json::Object(types),
    }
}

/// Fields as a SimpleSchema map, in their order.
fn fields_json(fields: &[Field]) -> Json {
    let mut map = Map::new();
    for field in fields {
        let value = match &field.ty {
            SchemaType::Object(inner) => fields_json(inner),
            other => Json::String(field_text(other, &field.markers)),
        };
        map.insert(field.name.clone(), value);
    }
    Json::Object(map)
}

/// `type | markers`.
fn field_text(ty: &SchemaType, markers: &Markers) -> String {
    let mut text = match ty {
        SchemaType::Named(name) => name.clone(),
        SchemaType::Enum(_) | SchemaType::Object(_) => "string".to_owned(),
    };
    let mut parts = Vec::new();
    if markers.required {
        parts.push("required=true".to_owned());
    }
    if let Some(default) = &markers.default {
        parts.push(format!("default={default}"));
    }
    if let Some(minimum) = &markers.minimum {
        parts.push(format!("minimum={minimum}"));
    }
    if let Some(maximum) = &markers.maximum {
        parts.push(format!("maximum={maximum}"));
    }
    if let Some(pattern) = &markers.pattern {
        parts.push(format!("pattern={pattern}"));
    }
    if let SchemaType::Enum(values) = ty {
        parts.push(format!("enum={}", quote(&values.join(","))));
    }
    if let Some(description) = &markers.description {
        parts.push(format!("description={description}"));
    }
    if markers.scale {
        parts.push("scale".to_owned());
    }
    if markers.scale_selector {
        parts.push("scaleSelector".to_owned());
    }
    if !parts.is_empty() {
        text.push_str(" | ");
        text.push_str(&parts.join(" "));
    }
    text
}

/// A marker value quoted as SimpleSchema reads it (JSON string syntax).
pub(crate) fn quote(text: &str) -> String {
    Json::String(text.to_owned()).to_string()
}

macro_rules! named {
    ($name:literal: $($ty:ty),*) => {
        $(
            impl Typed for $ty {
                type Ref = Ref<$ty>;
            }
            impl KroSchema for $ty {
                type Values = Value<$ty>;
                fn schema_type(_: &mut Types) -> SchemaType {
                    SchemaType::Named($name.to_owned())
                }
            }
        )*
    };
}

named!("integer": i8, i16, i32, i64, u8, u16, u32);
named!("float": f32, f64);
named!("string": String);
named!("boolean": bool);

impl<T: Typed> Typed for Vec<T> {
    type Ref = Ref<Vec<T>>;
}

impl<T: KroSchema> KroSchema for Vec<T> {
    type Values = Value<Vec<T>>;
    fn schema_type(types: &mut Types) -> SchemaType {
        SchemaType::Named(format!("[]{}", element::<T>(types)))
    }
}

impl<T: Typed> Typed for BTreeMap<String, T> {
    type Ref = Ref<BTreeMap<String, T>>;
}

impl<T: KroSchema> KroSchema for BTreeMap<String, T> {
    type Values = Value<BTreeMap<String, T>>;
    fn schema_type(types: &mut Types) -> SchemaType {
        SchemaType::Named(format!("map[string]{}", element::<T>(types)))
    }
}

impl<T: Typed> Typed for Option<T> {
    type Ref = T::Ref;

    fn reference(path: String) -> Self::Ref {
        FromPath::from_optional_path(path)
    }
}

impl<T: KroSchema> KroSchema for Option<T> {
    type Values = T::Values;
    fn schema_type(types: &mut Types) -> SchemaType {
        T::schema_type(types)
    }
}

/// No status: an empty object.
impl KroSchema for () {
    type Values = ();
    fn schema_type(_: &mut Types) -> SchemaType {
        SchemaType::Object(Vec::new())
    }
}

/// The name of a list's or map's element type: a struct is a custom type named after it.
fn element<T: KroSchema>(types: &mut Types) -> String {
    match T::type_name() {
        Some(name) => types.custom::<T>(name),
        None => T::schema_type(types)
            .name()
            .unwrap_or_else(|| "object".to_owned()),
    }
}
