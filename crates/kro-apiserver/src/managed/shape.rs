//! The shape of a value as merging needs it: which schema applies, and how list items and map
//! keys are identified; and the field set of a value.

use std::collections::BTreeMap;

use kro_schema::{Catalog, FieldSchema, Gvk, ListType, MapType, PatchStrategy, Schema};
use serde_json::Value;

use super::fields::{Element, FieldSet, MAX_DEPTH};

/// How the items of a list are identified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum ListShape {
    Atomic,
    Set,
    /// Key fields, each with its schema default (used when an item leaves it out).
    Map(Vec<(String, Option<Value>)>),
}

/// The schema of a value, as far as merging needs it.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Shape<'a> {
    /// A built-in type, from the catalog.
    Catalog(FieldSchema<'a>),
    /// A custom resource's structural schema.
    Custom(&'a Schema),
    /// No schema: maps are granular, lists atomic.
    Untyped,
}

pub(super) fn object_meta() -> Shape<'static> {
    Catalog::kubernetes()
        .resolve(&Gvk::new("", "v1", "ConfigMap"))
        .found()
        .and_then(|kind| kind.root().property("metadata"))
        .map_or(Shape::Untyped, Shape::Catalog)
}

impl<'a> Shape<'a> {
    /// The shape of a built-in kind, or of a custom resource with `schema`.
    pub(crate) fn of_kind(gvk: &Gvk, custom: Option<&'a Schema>) -> Shape<'a> {
        if let Some(schema) = custom {
            return Shape::Custom(schema);
        }
        Catalog::kubernetes()
            .resolve(gvk)
            .found()
            .map_or(Shape::Untyped, |kind| Shape::Catalog(kind.root()))
    }

    /// The shape of field `name`, and whether it is a declared field (not a map key).
    pub(super) fn field(self, name: &str, at_root: bool) -> (Shape<'a>, bool) {
        match self {
            Shape::Catalog(schema) => match schema.property(name) {
                Some(field) => (Shape::Catalog(field), true),
                None => (
                    schema.map_values().map_or(Shape::Untyped, Shape::Catalog),
                    false,
                ),
            },
            Shape::Custom(schema) => {
                if at_root && name == "metadata" {
                    return (object_meta(), true);
                }
                match schema.properties.get(name) {
                    Some(field) => (Shape::Custom(field), true),
                    None => (
                        schema
                            .additional_properties_schema()
                            .map_or(Shape::Untyped, Shape::Custom),
                        false,
                    ),
                }
            }
            Shape::Untyped => (Shape::Untyped, false),
        }
    }

    pub(super) fn items(self) -> Shape<'a> {
        match self {
            Shape::Catalog(schema) => schema.items().map_or(Shape::Untyped, Shape::Catalog),
            Shape::Custom(schema) => schema
                .items
                .as_deref()
                .map_or(Shape::Untyped, Shape::Custom),
            Shape::Untyped => Shape::Untyped,
        }
    }

    /// Map-list key fields with the defaults their item schema gives them: a custom
    /// resource's schema `default`, for built-ins the defaults kube-apiserver publishes
    /// ([`BUILT_IN_KEY_DEFAULTS`]; the catalog has none).
    pub(super) fn keys_with_defaults(self, keys: Vec<String>) -> ListShape {
        let items = self.items();
        ListShape::Map(
            keys.into_iter()
                .map(|key| {
                    let default = match items {
                        Shape::Catalog(schema) => {
                            let definition = schema.definition_name().unwrap_or_default();
                            BUILT_IN_KEY_DEFAULTS
                                .iter()
                                .find(|(kind, field, _)| *kind == definition && *field == key)
                                .map(|(_, _, value)| Value::String((*value).to_owned()))
                        }
                        Shape::Custom(_) => match items.field(&key, false).0 {
                            Shape::Custom(field) => field.default.clone(),
                            _ => None,
                        },
                        Shape::Untyped => None,
                    };
                    (key, default)
                })
                .collect(),
        )
    }

    pub(super) fn list(self) -> ListShape {
        match self {
            Shape::Catalog(schema) => {
                let merge = schema.merge_semantics();
                match merge.list_type {
                    Some(ListType::Map) => self.keys_with_defaults(merge.list_map_keys),
                    Some(ListType::Set) => ListShape::Set,
                    Some(ListType::Atomic) => ListShape::Atomic,
                    None if merge.patch_strategies.contains(&PatchStrategy::Merge) => {
                        match merge.patch_merge_key {
                            Some(key) => self.keys_with_defaults(vec![key]),
                            None => ListShape::Set,
                        }
                    }
                    None => ListShape::Atomic,
                }
            }
            Shape::Custom(schema) => match schema.x_kubernetes_list_type.as_deref() {
                Some("map") => self.keys_with_defaults(schema.x_kubernetes_list_map_keys.clone()),
                Some("set") => ListShape::Set,
                _ => ListShape::Atomic,
            },
            Shape::Untyped => ListShape::Atomic,
        }
    }

    pub(super) fn atomic_map(self) -> bool {
        match self {
            Shape::Catalog(schema) => schema.merge_semantics().map_type == Some(MapType::Atomic),
            Shape::Custom(schema) => schema.x_kubernetes_map_type.as_deref() == Some("atomic"),
            Shape::Untyped => false,
        }
    }
}

/// The map-list key fields of built-in kinds whose default kube-apiserver 1.33 publishes as
/// something other than a zero value (from its OpenAPI v3 documents): a port's protocol. An
/// applied port without `protocol` is the live port with `protocol: TCP`.
pub(super) const BUILT_IN_KEY_DEFAULTS: [(&str, &str, &str); 2] = [
    ("io.k8s.api.core.v1.ContainerPort", "protocol", "TCP"),
    ("io.k8s.api.core.v1.ServicePort", "protocol", "TCP"),
];

/// The path element of a list item: by key fields for map lists, by value for sets.
pub(super) fn item_element(list: &ListShape, item: &Value) -> Option<Element> {
    match list {
        ListShape::Atomic => None,
        ListShape::Set => match item {
            Value::Object(_) | Value::Array(_) | Value::Null => None,
            scalar => Some(Element::Value(scalar.to_string())),
        },
        ListShape::Map(keys) => {
            let Value::Object(map) = item else {
                return None;
            };
            let mut key = BTreeMap::new();
            for (name, default) in keys {
                // A missing key field takes its schema default (`protocol: TCP` of a port), as
                // structured-merge-diff does; without one it is left out.
                if let Some(value) = map.get(name).or(default.as_ref()) {
                    key.insert(name.clone(), value.clone());
                }
            }
            serde_json::to_string(&key).ok().map(Element::Key)
        }
    }
}

/// The field set of an applied configuration (structured-merge-diff's `ToFieldSet`).
pub(crate) fn field_set(value: &Value, shape: Shape<'_>) -> FieldSet {
    fn walk(value: &Value, shape: Shape<'_>, root: bool, depth: usize, set: &mut FieldSet) {
        if depth > MAX_DEPTH {
            return;
        }
        match value {
            Value::Object(map) if !shape.atomic_map() => {
                for (key, child) in map {
                    let (child_shape, declared) = shape.field(key, root);
                    let node = set.children.entry(Element::Field(key.clone())).or_default();
                    walk(child, child_shape, false, depth + 1, node);
                    let empty_map = matches!(child, Value::Object(m) if m.is_empty());
                    if child.is_null() || empty_map || !declared {
                        node.member = true;
                    }
                }
            }
            Value::Array(items) => {
                let list = shape.list();
                if list == ListShape::Atomic {
                    set.member = true;
                    return;
                }
                for item in items {
                    let Some(element) = item_element(&list, item) else {
                        continue;
                    };
                    let node = set.children.entry(element).or_default();
                    walk(item, shape.items(), false, depth + 1, node);
                    node.member = true;
                }
            }
            _ => set.member = true,
        }
    }
    let mut set = FieldSet::default();
    walk(value, shape, true, 0, &mut set);
    prune_empty(&mut set);
    set
}

pub(super) fn prune_empty(set: &mut FieldSet) {
    for child in set.children.values_mut() {
        prune_empty(child);
    }
    set.children.retain(|_, child| !child.is_empty());
}
