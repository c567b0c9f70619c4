//! The schema of a status field inferred from its expression's CEL type, as upstream kro
//! v0.9.3 writes it into the CRD (`pkg/graph/schema/conversion_cel_type.go`): the shape only
//! (types, properties, items, map values), never the validations, defaults or descriptions of
//! the fields the expression reads. Object types go through the CEL declaration kube's schema
//! conversion makes of their schema (`SchemaDeclType`), so inside an object a timestamp or a
//! duration is left open and a property without a type is left out.

use kro_cel::Type;
use kro_schema::{AdditionalProperties, Schema};

use crate::types::GraphTypes;

/// The inferred schema of a status field whose expression has type `ty`.
pub(super) fn inferred_schema(types: &GraphTypes, ty: &Type) -> Schema {
    match ty {
        Type::Bool => Schema::of_type("boolean"),
        Type::Int | Type::Uint => Schema::of_type("integer"),
        Type::Double => Schema::of_type("number"),
        Type::String => Schema::of_type("string"),
        Type::Bytes => with_format("string", "byte"),
        Type::Null => open(Some("null type - any value allowed".to_string())),
        Type::Timestamp => {
            let mut schema = with_format("string", "date-time");
            schema.description = Some("Timestamp representing a creation time".to_string());
            schema
        }
        Type::List(element) => {
            let mut schema = Schema::of_type("array");
            schema.items = Some(Box::new(inferred_schema(types, element)));
            schema
        }
        Type::Map(_, value) => {
            let mut schema = Schema::of_type("object");
            schema.additional_properties = Some(AdditionalProperties::Schema(Box::new(
                inferred_schema(types, value),
            )));
            schema
        }
        Type::Object(_) => declared_shape(&types.schema_of(ty), 0).unwrap_or_else(|| open(None)),
        Type::Dyn => open(None),
        other => open(Some(format!("unknown CEL type: {other}"))),
    }
}

/// How deep an object schema is followed before the rest is left open.
const MAX_DEPTH: usize = 32;

/// The shape of `schema` as its CEL declaration keeps it; `None` where the conversion makes
/// no declaration (no type, or a list without items).
fn declared_shape(schema: &Schema, depth: usize) -> Option<Schema> {
    if depth > MAX_DEPTH || schema.x_kubernetes_int_or_string {
        return Some(open(None));
    }
    match schema.type_.as_deref()? {
        "array" => {
            let items = declared_shape(schema.items.as_deref()?, depth + 1)?;
            let mut shape = Schema::of_type("array");
            shape.items = Some(Box::new(items));
            Some(shape)
        }
        "object" => {
            let mut shape = Schema::of_type("object");
            if let Some(values) = schema.additional_properties_schema() {
                let values = declared_shape(values, depth + 1).unwrap_or_else(|| open(None));
                shape.additional_properties = Some(AdditionalProperties::Schema(Box::new(values)));
                return Some(shape);
            }
            for (name, property) in &schema.properties {
                if let Some(property) = declared_shape(property, depth + 1) {
                    shape.properties.insert(name.clone(), property);
                }
            }
            Some(shape)
        }
        "string" => Some(match schema.format.as_deref() {
            Some("byte") => with_format("string", "byte"),
            Some("duration" | "date" | "date-time") => open(None),
            _ => Schema::of_type("string"),
        }),
        scalar @ ("boolean" | "number" | "integer") => Some(Schema::of_type(scalar)),
        _ => None,
    }
}

fn with_format(type_: &str, format: &str) -> Schema {
    let mut schema = Schema::of_type(type_);
    schema.format = Some(format.to_string());
    schema
}

/// A schema that accepts any value.
fn open(description: Option<String>) -> Schema {
    Schema {
        description,
        x_kubernetes_preserve_unknown_fields: Some(true),
        ..Schema::default()
    }
}
