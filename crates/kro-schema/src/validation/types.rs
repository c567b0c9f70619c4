//! A schema's types and format as kube-openapi sees them after the CRD conversion:
//! `x-kubernetes-int-or-string` means the types `integer,string`, and formats Kubernetes does
//! not support for the type are dropped (`StripUnsupportedFormatsPostProcessorForVersion`).

use serde_json::Value;

use super::formats;
use crate::openapi::Schema;

/// The `type` of a schema as a list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum TypeList<'a> {
    /// No type: anything goes.
    Any,
    /// One type.
    One(&'a str),
    /// `x-kubernetes-int-or-string`.
    IntOrString,
}

impl<'a> TypeList<'a> {
    pub fn of(schema: &'a Schema) -> Self {
        if schema.x_kubernetes_int_or_string {
            TypeList::IntOrString
        } else {
            match schema.type_.as_deref() {
                Some(type_) if !type_.is_empty() => TypeList::One(type_),
                _ => TypeList::Any,
            }
        }
    }

    pub fn is_empty(self) -> bool {
        self == TypeList::Any
    }

    pub fn contains(self, type_: &str) -> bool {
        match self {
            TypeList::Any => false,
            TypeList::One(one) => one == type_,
            TypeList::IntOrString => type_ == "integer" || type_ == "string",
        }
    }

    /// The type when there is exactly one.
    pub fn single(self) -> Option<&'a str> {
        match self {
            TypeList::One(one) => Some(one),
            _ => None,
        }
    }

    /// `strings.Join(types, ",")`.
    pub fn joined(self) -> String {
        match self {
            TypeList::Any => String::new(),
            TypeList::One(one) => one.to_string(),
            TypeList::IntOrString => "integer,string".to_string(),
        }
    }
}

/// The format kube-openapi enforces: string formats Kubernetes supports (on `string` or
/// typeless schemas), `int32`/`int64` on integers, `float`/`double` on numbers; none otherwise.
pub(super) fn effective_format<'a>(schema: &'a Schema, types: TypeList<'_>) -> Option<&'a str> {
    let format = schema
        .format
        .as_deref()
        .filter(|format| !format.is_empty())?;
    let keep = match types.single() {
        None | Some("string") => formats::is_supported(format),
        Some("integer") => matches!(format, "int32" | "int64"),
        Some("number") => matches!(format, "float" | "double"),
        Some(_) => false,
    };
    keep.then_some(format)
}

/// The JSON type and Go format of a decoded value (`integer`/`int64` for integers that fit
/// an `int64`, `number`/`float64` for other numbers).
pub(super) fn json_kind(value: &Value) -> (&'static str, &'static str) {
    match value {
        Value::Null => ("null", ""),
        Value::Bool(_) => ("boolean", ""),
        Value::Number(number) if number.as_i64().is_some() => ("integer", "int64"),
        Value::Number(_) => ("number", "float64"),
        Value::String(_) => ("string", ""),
        Value::Array(_) => ("array", ""),
        Value::Object(_) => ("object", ""),
    }
}
