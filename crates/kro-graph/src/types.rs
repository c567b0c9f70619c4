//! The object types an RGD's expressions are checked against: the schemas of its kinds (through
//! kro-schema's [`SchemaTypes`]) plus the types kro makes up itself — `each` of a collection
//! and the shape of each data node.

use std::collections::HashMap;
use std::sync::RwLock;

use kro_cel::{FieldLookup, Type, TypeProvider};
use kro_schema::{AdditionalProperties, Definitions, Schema, SchemaTypes};
use serde_json::Value as Json;

use crate::template::{FieldPath, PathSegment};

/// Every object type of one graph.
#[derive(Debug, Default)]
pub struct GraphTypes {
    schemas: SchemaTypes,
    extra: RwLock<HashMap<String, HashMap<String, Type>>>,
}

impl GraphTypes {
    /// No types yet.
    pub fn new() -> Self {
        GraphTypes::default()
    }

    /// The schema-backed types.
    pub fn schemas(&self) -> &SchemaTypes {
        &self.schemas
    }

    /// Defines an object type with the given fields (closed: other fields are errors).
    pub fn define(&self, name: &str, fields: HashMap<String, Type>) {
        if let Ok(mut extra) = self.extra.write() {
            extra.insert(name.to_string(), fields);
        }
    }

    /// The OpenAPI schema of a CEL type, for status inference: made-up object types become
    /// objects of their fields' schemas.
    pub fn schema_of(&self, ty: &Type) -> Schema {
        self.schema_of_bounded(ty, 0)
    }

    fn schema_of_bounded(&self, ty: &Type, depth: usize) -> Schema {
        if depth > 32 {
            return Schema {
                x_kubernetes_preserve_unknown_fields: Some(true),
                ..Schema::default()
            };
        }
        match ty {
            Type::Object(name) => {
                let fields = self
                    .extra
                    .read()
                    .ok()
                    .and_then(|extra| extra.get(name.as_ref()).cloned());
                match fields {
                    Some(fields) => {
                        let mut schema = Schema::of_type("object");
                        for (field, field_type) in fields {
                            schema
                                .properties
                                .insert(field, self.schema_of_bounded(&field_type, depth + 1));
                        }
                        schema
                    }
                    None => self.schemas.schema_of(ty),
                }
            }
            Type::List(element) => {
                let mut schema = Schema::of_type("array");
                schema.items = Some(Box::new(self.schema_of_bounded(element, depth + 1)));
                schema
            }
            Type::Map(_, value) => {
                let mut schema = Schema::of_type("object");
                schema.additional_properties = Some(AdditionalProperties::Schema(Box::new(
                    self.schema_of_bounded(value, depth + 1),
                )));
                schema
            }
            Type::Optional(inner) => self.schema_of_bounded(inner, depth + 1),
            other => self.schemas.schema_of(other),
        }
    }
}

impl TypeProvider for GraphTypes {
    fn has_type(&self, name: &str) -> bool {
        self.extra
            .read()
            .is_ok_and(|extra| extra.contains_key(name))
            || self.schemas.has_type(name)
    }

    fn field_type(&self, type_name: &str, field: &str) -> FieldLookup {
        if let Ok(extra) = self.extra.read()
            && let Some(fields) = extra.get(type_name)
        {
            return match fields.get(field) {
                Some(ty) => FieldLookup::Found(ty.clone()),
                None => FieldLookup::NoSuchField,
            };
        }
        self.schemas.field_type(type_name, field)
    }

    fn field_names(&self, type_name: &str) -> Option<Vec<String>> {
        if let Ok(extra) = self.extra.read()
            && let Some(fields) = extra.get(type_name)
        {
            let mut names: Vec<String> = fields.keys().cloned().collect();
            names.sort();
            return Some(names);
        }
        self.schemas.field_names(type_name)
    }
}

fn reference_name(reference: &str) -> &str {
    reference.rsplit('/').next().unwrap_or(reference)
}

/// The schema a field path leads to inside an object schema, and the type name kro-schema
/// gave it; `None` when the path leaves the schema (an unknown field, or a subtree that keeps
/// unknown fields), where anything goes.
pub fn field_schema<'a>(
    root: &'a Schema,
    root_name: &str,
    definitions: &'a dyn Definitions,
    path: &FieldPath,
) -> Option<(Schema, String)> {
    let mut current: &Schema = root;
    let mut name = root_name.to_string();
    for segment in path.segments() {
        // Follow references first: the referenced definition names the type.
        while let Some(reference) = &current.reference {
            let definition = reference_name(reference);
            current = definitions.definition(definition)?;
            name = definition.to_string();
        }
        if current.x_kubernetes_int_or_string {
            return None;
        }
        match segment {
            PathSegment::Key(key) => {
                if let Some(property) = current.properties.get(key) {
                    current = property;
                    name = format!("{name}.{key}");
                } else if let Some(AdditionalProperties::Schema(values)) =
                    &current.additional_properties
                {
                    current = values;
                    name = format!("{name}.@values");
                } else {
                    return None;
                }
            }
            PathSegment::Index(_) => {
                current = current.items.as_deref()?;
                name = format!("{name}.@items");
            }
        }
    }
    while let Some(reference) = &current.reference {
        let definition = reference_name(reference);
        current = definitions.definition(definition)?;
        name = definition.to_string();
    }
    Some((current.clone(), name))
}

/// The CEL type of a constant JSON value, defining object types for maps under `name`.
pub fn constant_type(types: &GraphTypes, value: &Json, name: &str) -> Type {
    match value {
        Json::Null => Type::Dyn,
        Json::Bool(_) => Type::Bool,
        Json::Number(number) if number.is_i64() => Type::Int,
        Json::Number(_) => Type::Double,
        Json::String(_) => Type::String,
        Json::Array(items) => {
            Type::list(join(items.iter().enumerate().map(|(index, item)| {
                constant_type(types, item, &format!("{name}[{index}]"))
            })))
        }
        Json::Object(fields) => {
            let fields = fields
                .iter()
                .map(|(field, value)| {
                    (
                        field.clone(),
                        constant_type(types, value, &format!("{name}.{field}")),
                    )
                })
                .collect();
            types.define(name, fields);
            Type::object(name)
        }
    }
}

/// The common type of several: the type itself when all agree, else `dyn`.
pub fn join(types: impl Iterator<Item = Type>) -> Type {
    let mut joined: Option<Type> = None;
    for ty in types {
        joined = Some(match joined {
            None => ty,
            Some(previous) if previous == ty => previous,
            Some(_) => return Type::Dyn,
        });
    }
    joined.unwrap_or(Type::Dyn)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kro_schema::NoDefinitions;
    use serde_json::json;

    #[test]
    fn field_paths_walk_properties_items_and_maps() {
        let schema: Schema = serde_json::from_value(json!({
            "type": "object",
            "properties": {"spec": {"type": "object", "properties": {
                "ports": {"type": "array", "items": {"type": "object", "properties": {"port": {"type": "integer"}}}},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
            }}}
        }))
        .expect("schema");
        let at = |path: &str| {
            field_schema(
                &schema,
                "__type_x",
                &NoDefinitions,
                &path.parse().expect("path"),
            )
            .map(|(schema, name)| (schema.type_, name))
        };
        assert_eq!(
            at("spec.ports[0].port"),
            Some((
                Some("integer".into()),
                "__type_x.spec.ports.@items.port".into()
            ))
        );
        assert_eq!(
            at("spec.labels.app"),
            Some((Some("string".into()), "__type_x.spec.labels.@values".into()))
        );
        assert_eq!(at("spec.extra.anything"), None);
        assert_eq!(at("spec.missing"), None);
    }

    #[test]
    fn constants_get_types_and_maps_become_objects() {
        let types = GraphTypes::new();
        let ty = constant_type(
            &types,
            &json!({"a": 1, "b": ["x", "y"], "c": [1, "x"]}),
            "__data_v",
        );
        assert_eq!(ty, Type::object("__data_v"));
        assert_eq!(
            types.field_type("__data_v", "a"),
            FieldLookup::Found(Type::Int)
        );
        assert_eq!(
            types.field_type("__data_v", "b"),
            FieldLookup::Found(Type::list(Type::String))
        );
        assert_eq!(
            types.field_type("__data_v", "c"),
            FieldLookup::Found(Type::list(Type::Dyn))
        );
        assert_eq!(types.field_type("__data_v", "d"), FieldLookup::NoSuchField);
    }
}
