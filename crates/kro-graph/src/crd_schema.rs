//! The builders the API types write their schemas in the ResourceGraphDefinition CRD with
//! ([`CrdSchema`] and small constructors of [`kro_schema::Schema`] values); the CRD itself is
//! [`crate::rgd_crd`]'s.

use std::collections::BTreeMap;

use kro_schema::{AdditionalProperties, Schema, ValidationRule};
use serde_json::Value as Json;

/// An API type's schema in the ResourceGraphDefinition CRD, with the rules the API server
/// checks when an RGD is written.
pub(crate) trait CrdSchema {
    /// The schema of a value of this type.
    fn crd_schema() -> Schema;
}

/// A string.
pub(crate) fn string() -> Schema {
    Schema::of_type("string")
}

/// A list of `items`.
pub(crate) fn list(items: Schema) -> Schema {
    Schema {
        items: Some(Box::new(items)),
        ..Schema::of_type("array")
    }
}

/// An object with these properties.
pub(crate) fn object<'a>(properties: impl IntoIterator<Item = (&'a str, Schema)>) -> Schema {
    Schema {
        properties: properties
            .into_iter()
            .map(|(name, schema)| (name.to_owned(), schema))
            .collect::<BTreeMap<_, _>>(),
        ..Schema::of_type("object")
    }
}

/// An object whose fields are not checked.
pub(crate) fn open_object() -> Schema {
    Schema {
        x_kubernetes_preserve_unknown_fields: Some(true),
        ..Schema::of_type("object")
    }
}

/// Any JSON value, unchecked. CEL rules cannot read it (it has no type to declare), and the
/// API server does not check its type: the controller does.
pub(crate) fn any_value() -> Schema {
    Schema {
        x_kubernetes_preserve_unknown_fields: Some(true),
        ..Schema::default()
    }
}

/// A map of strings to strings.
pub(crate) fn string_map() -> Schema {
    Schema {
        additional_properties: Some(AdditionalProperties::Schema(Box::new(string()))),
        ..Schema::of_type("object")
    }
}

/// The names of required properties.
pub(crate) fn required(names: &[&str]) -> Vec<String> {
    names.iter().map(|name| (*name).to_owned()).collect()
}

/// An `x-kubernetes-validations` rule.
pub(crate) fn rule(rule: &str, message: &str) -> ValidationRule {
    ValidationRule {
        rule: rule.to_owned(),
        message: Some(message.to_owned()),
        ..ValidationRule::default()
    }
}

/// The rule that a field keeps the value it was created with, as upstream words it.
pub(crate) fn immutable(field: &str) -> ValidationRule {
    rule("self == oldSelf", &format!("{field} is immutable"))
}

/// The values of an enum as they serialize, for a schema's `enum`.
pub(crate) fn enum_values<T: serde::Serialize>(values: &[T]) -> Vec<Json> {
    values
        .iter()
        .map(|value| serde_json::to_value(value).expect("unit variants serialize to strings"))
        .collect()
}
