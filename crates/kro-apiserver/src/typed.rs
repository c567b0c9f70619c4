//! What kube-apiserver's Go types do to a built-in object's JSON, so that stored objects,
//! responses and managed fields look as they do on a real cluster.
//!
//! kube-apiserver decodes every built-in object into its Go struct and encodes it back. Two
//! things follow that a JSON store does not do by itself, and both are visible to clients:
//!
//! - a struct field that is not a pointer is always written, as `{}` when empty (a
//!   Deployment's `status: {}`, `spec.strategy: {}`);
//! - an optional (`omitempty`) map or list that is empty is not written (a ConfigMap's
//!   `data: {}` disappears).
//!
//! Which fields are non-pointer structs the JSON Schema definitions do not say; kube-apiserver's
//! OpenAPI v3 documents do (`default: {}`), and `data/struct-fields-1.33.json` records them.
//! Optional fields are those their parent does not list as `required`. Managed fields compare
//! an object with the Go zero value of its kind (not with nothing), so a create does not claim
//! the struct fields every object has; [`zero_object`] gives that value.

use std::collections::HashSet;
use std::sync::OnceLock;

use kro_schema::{AdditionalProperties, Catalog, Gvk, Schema};
use serde_json::{Map, Value};

/// How deep the walks go; Go's non-pointer structs do not nest without end, this bounds bad
/// schemas and objects.
const MAX_DEPTH: usize = 64;

/// `<definition>.<property>` of every non-pointer struct field of the built-in kinds.
fn struct_fields() -> &'static HashSet<String> {
    static FIELDS: OnceLock<HashSet<String>> = OnceLock::new();
    FIELDS.get_or_init(|| {
        serde_json::from_str(include_str!("../data/struct-fields-1.33.json")).unwrap_or_default()
    })
}

/// A schema as the definition it refers to (with the definition's name), or as itself.
fn target<'c>(catalog: &'c Catalog, schema: &'c Schema) -> (Option<&'c str>, &'c Schema) {
    let reference = match schema.all_of.as_slice() {
        [single] if single.reference.is_some() => single,
        _ => schema,
    };
    match catalog.referenced_definition(reference) {
        Some((name, definition)) => (Some(name), definition),
        None => (None, schema),
    }
}

/// Whether `schema` is a map (string keys to values) rather than a struct.
fn is_map(schema: &Schema) -> bool {
    schema.properties.is_empty()
        && matches!(
            schema.additional_properties,
            Some(AdditionalProperties::Schema(_))
        )
}

/// The definition name of a built-in kind.
fn kind_definition(gvk: &Gvk) -> Option<(&'static str, &'static Schema)> {
    let catalog = Catalog::kubernetes();
    let kind = catalog.resolve(gvk).found()?;
    let name = kind.definition_name();
    catalog.definition(name).map(|schema| (name, schema))
}

/// Encodes `object`, of the built-in kind `gvk`, as its Go type would: absent struct fields
/// become `{}`, empty optional maps and lists go away. Other kinds are left as they are.
pub(crate) fn round_trip(gvk: &Gvk, object: &mut Value) {
    if let Some((name, schema)) = kind_definition(gvk) {
        round_trip_at(Catalog::kubernetes(), Some(name), schema, object, 0);
        if let Value::Object(map) = object {
            for field in always_written_strings(name) {
                map.entry(*field)
                    .or_insert_with(|| Value::String(String::new()));
            }
        }
    }
}

/// Top-level string fields of a kind whose Go type has no `omitempty`, so that they are
/// written (as `""`) even when empty; the struct-fields data covers only structs.
fn always_written_strings(definition: &str) -> &'static [&'static str] {
    match definition {
        "io.k8s.api.core.v1.Event" => &["reportingComponent", "reportingInstance"],
        _ => &[],
    }
}

fn round_trip_at(
    catalog: &Catalog,
    definition: Option<&str>,
    schema: &Schema,
    value: &mut Value,
    depth: usize,
) {
    if depth > MAX_DEPTH {
        return;
    }
    match value {
        Value::Object(map) if !schema.properties.is_empty() => {
            for (name, property) in &schema.properties {
                let (child_definition, child_schema) = target(catalog, property);
                let is_struct = definition
                    .is_some_and(|parent| struct_fields().contains(&format!("{parent}.{name}")));
                if is_struct && !map.contains_key(name) {
                    map.insert(name.clone(), Value::Object(Map::new()));
                }
                let Some(child) = map.get_mut(name) else {
                    continue;
                };
                let empty_collection = match child {
                    Value::Object(inner) => inner.is_empty() && is_map(child_schema),
                    Value::Array(items) => items.is_empty(),
                    _ => false,
                };
                if empty_collection && !schema.required.contains(name) {
                    map.remove(name);
                } else {
                    round_trip_at(catalog, child_definition, child_schema, child, depth + 1);
                }
            }
        }
        Value::Object(map) => {
            if let Some(AdditionalProperties::Schema(values)) = &schema.additional_properties {
                let (value_definition, value_schema) = target(catalog, values);
                for child in map.values_mut() {
                    round_trip_at(catalog, value_definition, value_schema, child, depth + 1);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item) = &schema.items {
                let (item_definition, item_schema) = target(catalog, item);
                for child in items {
                    round_trip_at(catalog, item_definition, item_schema, child, depth + 1);
                }
            }
        }
        _ => {}
    }
}

/// The JSON of the Go zero value of the built-in kind `gvk`: its non-pointer struct fields as
/// objects (recursively) and its required fields that are not structs as `null`. `None` for
/// kinds the catalog does not know.
pub(crate) fn zero_object(gvk: &Gvk) -> Option<Value> {
    let (name, schema) = kind_definition(gvk)?;
    let mut zero = zero_at(Catalog::kubernetes(), name, schema, 0);
    if let Value::Object(map) = &mut zero {
        for field in always_written_strings(name) {
            map.insert((*field).to_owned(), Value::String(String::new()));
        }
    }
    Some(zero)
}

fn zero_at(catalog: &Catalog, definition: &str, schema: &Schema, depth: usize) -> Value {
    let mut map = Map::new();
    if depth > MAX_DEPTH {
        return Value::Object(map);
    }
    for (name, property) in &schema.properties {
        if struct_fields().contains(&format!("{definition}.{name}")) {
            let zero = match target(catalog, property) {
                (Some(child), child_schema) => zero_at(catalog, child, child_schema, depth + 1),
                (None, _) => Value::Object(Map::new()),
            };
            map.insert(name.clone(), zero);
        } else if schema.required.contains(name) {
            map.insert(name.clone(), Value::Null);
        }
    }
    Value::Object(map)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn gvk(api_version: &str, kind: &str) -> Gvk {
        Gvk::from_api_version(api_version, kind).expect("a kind")
    }

    #[test]
    fn the_recorded_struct_fields_name_known_properties() {
        let catalog = Catalog::kubernetes();
        assert!(struct_fields().len() > 200);
        let unknown: Vec<&String> = struct_fields()
            .iter()
            .filter(|field| {
                let Some((definition, property)) = field.rsplit_once('.') else {
                    return true;
                };
                catalog
                    .definition(definition)
                    .is_none_or(|schema| !schema.properties.contains_key(property))
            })
            .collect();
        // Definitions of API groups the catalog does not carry are allowed; the kinds it
        // has must all be found.
        assert!(
            !unknown
                .iter()
                .any(|field| field.starts_with("io.k8s.api.apps.v1.")
                    || field.starts_with("io.k8s.api.core.v1.")),
            "{unknown:?}"
        );
    }

    #[test]
    fn struct_fields_appear_and_empty_optional_maps_go() {
        let mut deployment = json!({
            "metadata": {"name": "web", "labels": {}},
            "spec": {
                "selector": {"matchLabels": {"app": "web"}},
                "template": {"spec": {"containers": [{"name": "web", "image": "nginx", "env": []}]}},
            },
        });
        round_trip(&gvk("apps/v1", "Deployment"), &mut deployment);
        assert_eq!(deployment["status"], json!({}));
        assert_eq!(deployment["spec"]["strategy"], json!({}));
        assert_eq!(deployment["spec"]["template"]["metadata"], json!({}));
        assert!(deployment["metadata"].get("labels").is_none());
        let container = &deployment["spec"]["template"]["spec"]["containers"][0];
        assert!(container.get("env").is_none());
        assert_eq!(container["resources"], json!({}));

        let mut config_map = json!({"metadata": {"name": "c"}, "data": {}});
        round_trip(&gvk("v1", "ConfigMap"), &mut config_map);
        assert_eq!(config_map, json!({"metadata": {"name": "c"}}));
    }

    #[test]
    fn the_zero_deployment_has_its_structs_and_required_nulls() {
        let zero = zero_object(&gvk("apps/v1", "Deployment")).expect("built in");
        assert_eq!(zero["status"], json!({}));
        assert_eq!(zero["spec"]["selector"], Value::Null);
        assert_eq!(zero["spec"]["strategy"], json!({}));
        assert_eq!(zero["spec"]["template"]["spec"]["containers"], Value::Null);
    }
}
