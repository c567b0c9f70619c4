//! Pairing a value on update with its old value, as Kubernetes' `CorrelatedObject` does for
//! ratcheting and for `oldSelf`: object fields pair by name, items of `map` lists pair by
//! their keys, and items of other lists do not pair at all.

use serde_json::Value;

use crate::openapi::Schema;

/// The old value of field `name`, when the old object has it.
pub(super) fn field<'a>(old: Option<&'a Value>, name: &str) -> Option<&'a Value> {
    old?.as_object()?.get(name)
}

/// Whether a field is the root's `apiVersion` or `kind`, which never pair with old values
/// (both objects are converted to the same version before validation).
pub(super) fn is_root_type_meta(at_root: bool, name: &str) -> bool {
    at_root && (name == "apiVersion" || name == "kind")
}

/// The old item of a `map` list with the same key values as `item`.
pub(super) fn list_item<'a>(
    schema: &Schema,
    old: Option<&'a Value>,
    item: &Value,
) -> Option<&'a Value> {
    if schema.x_kubernetes_list_type.as_deref() != Some("map")
        || schema.x_kubernetes_list_map_keys.is_empty()
    {
        return None;
    }
    let old_items = old?.as_array()?;
    let item_schema = schema.items.as_deref();
    let wanted = map_key(&schema.x_kubernetes_list_map_keys, item_schema, item)?;
    old_items.iter().find(|candidate| {
        map_key(&schema.x_kubernetes_list_map_keys, item_schema, candidate).as_ref()
            == Some(&wanted)
    })
}

/// The values of the key fields of a `map` list item (defaults filling missing keys); `None`
/// when the item is not an object, misses a key or has a non-scalar key.
fn map_key(keys: &[String], item_schema: Option<&Schema>, item: &Value) -> Option<Vec<Value>> {
    let fields = item.as_object()?;
    keys.iter()
        .map(|key| {
            let value = fields.get(key).cloned().or_else(|| {
                item_schema?
                    .properties
                    .get(key)?
                    .default
                    .clone()
                    .filter(|default| !default.is_null())
            })?;
            (!value.is_object() && !value.is_array()).then_some(value)
        })
        .collect()
}
