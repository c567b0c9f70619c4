//! The OpenAPI v3 schema model: the `JSONSchemaProps` shape of apiextensions.k8s.io/v1, as CRDs
//! carry it, plus the extensions Kubernetes' own OpenAPI documents use (patch strategy,
//! group-version-kind).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// One schema node. Field names and JSON spelling follow `JSONSchemaProps`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Schema {
    /// `$ref` to another definition (catalog documents only; CRD schemas are inline).
    #[serde(rename = "$ref", default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
    /// Human-readable description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// `object`, `array`, `string`, `integer`, `number` or `boolean`.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,
    /// Format such as `int32`, `byte`, `date-time`, `int-or-string`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    /// Title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The default value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<serde_json::Value>,
    /// Inclusive (or exclusive, see below) upper bound for numbers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maximum: Option<serde_json::Number>,
    /// Whether `maximum` is exclusive.
    #[serde(default, skip_serializing_if = "is_false")]
    pub exclusive_maximum: bool,
    /// Inclusive (or exclusive, see below) lower bound for numbers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub minimum: Option<serde_json::Number>,
    /// Whether `minimum` is exclusive.
    #[serde(default, skip_serializing_if = "is_false")]
    pub exclusive_minimum: bool,
    /// Longest string, in characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_length: Option<u64>,
    /// Shortest string, in characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_length: Option<u64>,
    /// A regular expression strings must match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pattern: Option<String>,
    /// Longest list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_items: Option<u64>,
    /// Shortest list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_items: Option<u64>,
    /// Whether list items must be unique.
    #[serde(default, skip_serializing_if = "is_false")]
    pub unique_items: bool,
    /// Numbers must be a multiple of this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub multiple_of: Option<serde_json::Number>,
    /// The allowed values.
    #[serde(rename = "enum", default, skip_serializing_if = "Option::is_none")]
    pub enum_: Option<Vec<serde_json::Value>>,
    /// Most properties an object may have.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_properties: Option<u64>,
    /// Fewest properties an object may have.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_properties: Option<u64>,
    /// Properties that must be present.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub required: Vec<String>,
    /// The schema of list items.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub items: Option<Box<Schema>>,
    /// All of these must hold.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub all_of: Vec<Schema>,
    /// Exactly one of these must hold.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub one_of: Vec<Schema>,
    /// At least one of these must hold.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub any_of: Vec<Schema>,
    /// This must not hold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not: Option<Box<Schema>>,
    /// Named properties of an object.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub properties: BTreeMap<String, Schema>,
    /// The schema of the values of a map-like object, or whether unknown properties are allowed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub additional_properties: Option<AdditionalProperties>,
    /// Whether `null` is an accepted value.
    #[serde(default, skip_serializing_if = "is_false")]
    pub nullable: bool,
    /// Keep fields the schema does not name instead of pruning them.
    #[serde(
        rename = "x-kubernetes-preserve-unknown-fields",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub x_kubernetes_preserve_unknown_fields: Option<bool>,
    /// The object is a whole Kubernetes object (apiVersion, kind, metadata).
    #[serde(
        rename = "x-kubernetes-embedded-resource",
        default,
        skip_serializing_if = "is_false"
    )]
    pub x_kubernetes_embedded_resource: bool,
    /// The value may be an integer or a string.
    #[serde(
        rename = "x-kubernetes-int-or-string",
        default,
        skip_serializing_if = "is_false"
    )]
    pub x_kubernetes_int_or_string: bool,
    /// The keys identifying items of a `map` list.
    #[serde(
        rename = "x-kubernetes-list-map-keys",
        default,
        skip_serializing_if = "Vec::is_empty"
    )]
    pub x_kubernetes_list_map_keys: Vec<String>,
    /// `atomic`, `set` or `map`.
    #[serde(
        rename = "x-kubernetes-list-type",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub x_kubernetes_list_type: Option<String>,
    /// `granular` or `atomic`.
    #[serde(
        rename = "x-kubernetes-map-type",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub x_kubernetes_map_type: Option<String>,
    /// CEL validation rules.
    #[serde(
        rename = "x-kubernetes-validations",
        default,
        skip_serializing_if = "Vec::is_empty"
    )]
    pub x_kubernetes_validations: Vec<ValidationRule>,
    /// Strategic-merge-patch merge key (Kubernetes' own documents only).
    #[serde(
        rename = "x-kubernetes-patch-merge-key",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub x_kubernetes_patch_merge_key: Option<String>,
    /// Strategic-merge-patch strategy, e.g. `merge` or `retainKeys` (Kubernetes' own documents
    /// only).
    #[serde(
        rename = "x-kubernetes-patch-strategy",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub x_kubernetes_patch_strategy: Option<String>,
}

fn is_false(value: &bool) -> bool {
    !*value
}

/// `additionalProperties`: a boolean or a schema.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum AdditionalProperties {
    /// Whether unknown properties are allowed.
    Allowed(bool),
    /// The schema every additional property's value must satisfy.
    Schema(Box<Schema>),
}

/// One `x-kubernetes-validations` entry.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ValidationRule {
    /// The CEL expression; `self` is the value, `oldSelf` the previous value on update.
    pub rule: String,
    /// The message when the rule fails.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// A CEL expression producing the message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_expression: Option<String>,
    /// The machine-readable reason (`FieldValueInvalid` and friends).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The field path to report, relative to this schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field_path: Option<String>,
    /// Whether the rule also runs on create or when the old value is absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub optional_old_self: Option<bool>,
}

impl Schema {
    /// A schema of the given `type`.
    pub fn of_type(type_: &str) -> Self {
        Schema {
            type_: Some(type_.to_string()),
            ..Schema::default()
        }
    }

    /// The schema of a map's values, when `additionalProperties` is a schema.
    pub fn additional_properties_schema(&self) -> Option<&Schema> {
        match &self.additional_properties {
            Some(AdditionalProperties::Schema(schema)) => Some(schema),
            _ => None,
        }
    }

    /// Whether unknown fields are kept (`x-kubernetes-preserve-unknown-fields: true`).
    pub fn preserves_unknown_fields(&self) -> bool {
        self.x_kubernetes_preserve_unknown_fields == Some(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crd_schemas_round_trip_through_json() {
        let json = serde_json::json!({
            "type": "object",
            "required": ["spec"],
            "properties": {
                "spec": {
                    "type": "object",
                    "properties": {
                        "replicas": {"type": "integer", "minimum": 1, "default": 1},
                        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                        "ports": {
                            "type": "array",
                            "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                            "x-kubernetes-list-type": "map",
                            "x-kubernetes-list-map-keys": ["name"]
                        },
                        "name": {
                            "type": "string",
                            "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "field is immutable"}]
                        }
                    }
                }
            }
        });
        let schema: Schema = serde_json::from_value(json.clone()).expect("deserializes");
        let spec = &schema.properties["spec"];
        assert_eq!(spec.properties["replicas"].minimum, Some(1.into()));
        assert!(
            spec.properties["labels"]
                .additional_properties_schema()
                .is_some()
        );
        assert_eq!(serde_json::to_value(&schema).expect("serializes"), json);
    }

    #[test]
    fn additional_properties_may_be_a_boolean() {
        let schema: Schema = serde_json::from_value(
            serde_json::json!({"type": "object", "additionalProperties": false}),
        )
        .expect("deserializes");
        assert_eq!(
            schema.additional_properties,
            Some(AdditionalProperties::Allowed(false))
        );
    }
}
