//! `metadata` as Kubernetes stores it: decoded strictly into `ObjectMeta` (unknown fields
//! reported and dropped) and encoded back, which drops empty fields (`omitempty`) and fills
//! the always-present fields of owner references.

use serde_json::{Map, Value};

/// What a field of `ObjectMeta` (or of one of its nested types) holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    /// `string,omitempty`.
    Text,
    /// `string` without `omitempty`: always written, `""` when missing.
    RequiredText,
    /// `int64,omitempty`: 0 is dropped.
    Integer,
    /// `*int64,omitempty`: only `null` is dropped.
    OptionalInteger,
    /// `*bool,omitempty`.
    OptionalBool,
    /// A timestamp (`Time` or `*Time`): a string, dropped when `null`.
    Time,
    /// `map[string]string,omitempty`.
    StringMap,
    /// `[]string,omitempty`.
    StringList,
    /// `[]OwnerReference,omitempty`.
    OwnerReferences,
    /// `[]ManagedFieldsEntry,omitempty`.
    ManagedFields,
    /// Raw JSON (`fieldsV1`), kept as it is.
    Raw,
}

const OBJECT_META: &[(&str, Field)] = &[
    ("name", Field::Text),
    ("generateName", Field::Text),
    ("namespace", Field::Text),
    ("selfLink", Field::Text),
    ("uid", Field::Text),
    ("resourceVersion", Field::Text),
    ("generation", Field::Integer),
    ("creationTimestamp", Field::Time),
    ("deletionTimestamp", Field::Time),
    ("deletionGracePeriodSeconds", Field::OptionalInteger),
    ("labels", Field::StringMap),
    ("annotations", Field::StringMap),
    ("ownerReferences", Field::OwnerReferences),
    ("finalizers", Field::StringList),
    ("managedFields", Field::ManagedFields),
];

const OWNER_REFERENCE: &[(&str, Field)] = &[
    ("apiVersion", Field::RequiredText),
    ("kind", Field::RequiredText),
    ("name", Field::RequiredText),
    ("uid", Field::RequiredText),
    ("controller", Field::OptionalBool),
    ("blockOwnerDeletion", Field::OptionalBool),
];

const MANAGED_FIELDS_ENTRY: &[(&str, Field)] = &[
    ("manager", Field::Text),
    ("operation", Field::Text),
    ("apiVersion", Field::Text),
    ("time", Field::Time),
    ("fieldsType", Field::Text),
    ("fieldsV1", Field::Raw),
    ("subresource", Field::Text),
];

/// Normalizes `metadata` in place and returns the paths of the unknown fields it dropped,
/// prefixed with `prefix` (`metadata.foo`, `spec.template.metadata.ownerReferences[0].bar`).
/// Metadata that `ObjectMeta` cannot decode (not an object, a field of the wrong type) is
/// left untouched, for validation to reject.
pub(super) fn coerce(metadata: &mut Value, prefix: &str) -> Vec<String> {
    let Value::Object(fields) = metadata else {
        return Vec::new();
    };
    if !decodes(fields, OBJECT_META) {
        return Vec::new();
    }
    let mut unknown = Vec::new();
    *fields = encode(fields, OBJECT_META, prefix, &mut unknown);
    unknown
}

/// Whether every known field has a value its Go type accepts.
fn decodes(fields: &Map<String, Value>, known: &[(&str, Field)]) -> bool {
    known.iter().all(|(name, field)| match fields.get(*name) {
        None | Some(Value::Null) => true,
        Some(value) => field_decodes(*field, value),
    })
}

fn field_decodes(field: Field, value: &Value) -> bool {
    match field {
        Field::Text | Field::RequiredText | Field::Time => value.is_string(),
        Field::Integer | Field::OptionalInteger => value.as_i64().is_some(),
        Field::OptionalBool => value.is_boolean(),
        Field::StringMap => value
            .as_object()
            .is_some_and(|map| map.values().all(|v| v.is_string() || v.is_null())),
        Field::StringList => value
            .as_array()
            .is_some_and(|items| items.iter().all(|v| v.is_string() || v.is_null())),
        Field::OwnerReferences => value.as_array().is_some_and(|items| {
            items.iter().all(|item| {
                item.is_null()
                    || item
                        .as_object()
                        .is_some_and(|fields| decodes(fields, OWNER_REFERENCE))
            })
        }),
        Field::ManagedFields => value.as_array().is_some_and(|items| {
            items.iter().all(|item| {
                item.is_null()
                    || item
                        .as_object()
                        .is_some_and(|fields| decodes(fields, MANAGED_FIELDS_ENTRY))
            })
        }),
        Field::Raw => true,
    }
}

/// The fields as Go encodes the decoded struct; unknown fields recorded under `prefix`, in
/// the order strict decoding meets them (keys sorted, nested ones in place).
fn encode(
    fields: &Map<String, Value>,
    known: &[(&str, Field)],
    prefix: &str,
    unknown: &mut Vec<String>,
) -> Map<String, Value> {
    let mut names: Vec<&String> = fields.keys().collect();
    names.sort();
    let mut encoded = Map::new();
    for name in names {
        let Some((_, field)) = known.iter().find(|(known, _)| *known == name.as_str()) else {
            unknown.push(format!("{prefix}.{name}"));
            continue;
        };
        let value = fields.get(name).filter(|value| !value.is_null());
        let path = format!("{prefix}.{name}");
        if let Some(value) = encode_field(*field, value, &path, unknown) {
            encoded.insert(name.clone(), value);
        }
    }
    for (name, field) in known {
        if !encoded.contains_key(*name)
            && let Some(value) = encode_field(*field, None, prefix, unknown)
        {
            encoded.insert((*name).to_string(), value);
        }
    }
    encoded
}

fn encode_field(
    field: Field,
    value: Option<&Value>,
    path: &str,
    unknown: &mut Vec<String>,
) -> Option<Value> {
    match field {
        Field::RequiredText => Some(
            value
                .cloned()
                .unwrap_or_else(|| Value::String(String::new())),
        ),
        Field::Text | Field::Time => value.filter(|value| value.as_str() != Some("")).cloned(),
        Field::Integer => value.filter(|value| value.as_i64() != Some(0)).cloned(),
        Field::OptionalInteger | Field::OptionalBool | Field::Raw => value.cloned(),
        Field::StringMap => {
            let map = value?.as_object()?;
            let map: Map<String, Value> = map
                .iter()
                .map(|(key, item)| {
                    (
                        key.clone(),
                        item.as_str()
                            .map_or(Value::String(String::new()), Value::from),
                    )
                })
                .collect();
            (!map.is_empty()).then_some(Value::Object(map))
        }
        Field::StringList => {
            let items = value?.as_array()?;
            let items: Vec<Value> = items
                .iter()
                .map(|item| Value::String(item.as_str().unwrap_or("").to_string()))
                .collect();
            (!items.is_empty()).then_some(Value::Array(items))
        }
        Field::OwnerReferences | Field::ManagedFields => {
            let known = if field == Field::OwnerReferences {
                OWNER_REFERENCE
            } else {
                MANAGED_FIELDS_ENTRY
            };
            let items = value?.as_array()?;
            let items: Vec<Value> = items
                .iter()
                .enumerate()
                .map(|(index, item)| {
                    let empty = Map::new();
                    let fields = item.as_object().unwrap_or(&empty);
                    Value::Object(encode(fields, known, &format!("{path}[{index}]"), unknown))
                })
                .collect();
            (!items.is_empty()).then_some(Value::Array(items))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn unknown_metadata_fields_are_dropped_and_reported() {
        let mut metadata = json!({
            "name": "demo",
            "colour": "blue",
            "labels": {"app": "demo"},
            "annotations": {},
            "namespace": "",
            "ownerReferences": [{"kind": "Owner", "name": "o", "extra": 1}],
            "zeta": 1
        });
        let unknown = coerce(&mut metadata, "metadata");
        assert_eq!(
            unknown,
            vec![
                "metadata.colour",
                "metadata.ownerReferences[0].extra",
                "metadata.zeta"
            ]
        );
        assert_eq!(
            metadata,
            json!({
                "name": "demo",
                "labels": {"app": "demo"},
                "ownerReferences": [{"apiVersion": "", "kind": "Owner", "name": "o", "uid": ""}]
            })
        );
    }

    #[test]
    fn metadata_that_does_not_decode_is_left_alone() {
        let mut metadata = json!({"name": 5, "colour": "blue"});
        assert!(coerce(&mut metadata, "metadata").is_empty());
        assert_eq!(metadata, json!({"name": 5, "colour": "blue"}));
    }
}
