//! OpenAPI schemas as CEL types, and CEL types back as OpenAPI schemas.
//!
//! [`SchemaTypes`] is kro-cel's [`TypeProvider`] over OpenAPI: each object schema with
//! properties becomes a named object type whose fields the checker can look up, so that
//! `deployment.spec.replicas` type-checks as `int` and `deployment.spec.replica` is an error.
//! The names are stable: a root registered as `__type_deployment` names its nested objects
//! `__type_deployment.spec`, `__type_deployment.spec.template` and so on, and `$ref`
//! definitions keep their definition name.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use kro_cel::{FieldLookup, Type, TypeProvider};

use crate::openapi::{AdditionalProperties, Schema};

/// How deep registration follows nested schemas before treating the rest as `dyn`.
const MAX_SCHEMA_DEPTH: usize = 64;

/// Resolves `$ref` names (`#/$defs/<name>`, `#/definitions/<name>`,
/// `#/components/schemas/<name>`) to definitions.
pub trait Definitions {
    /// The definition named `name` (the last path segment of the reference).
    fn definition(&self, name: &str) -> Option<&Schema>;
}

/// No definitions: references resolve to `dyn`.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoDefinitions;

impl Definitions for NoDefinitions {
    fn definition(&self, _name: &str) -> Option<&Schema> {
        None
    }
}

impl Definitions for HashMap<String, Schema> {
    fn definition(&self, name: &str) -> Option<&Schema> {
        self.get(name)
    }
}

/// An object type: its fields' CEL types, whether unknown fields are allowed (as `dyn`), and
/// the schema it came from (for the reverse mapping).
#[derive(Clone)]
struct ObjectType {
    fields: HashMap<String, Type>,
    open: bool,
    schema: Schema,
    /// What the schema's `$ref`s point to, when registered with shared definitions.
    definitions: Option<SharedDefinitions>,
}

impl std::fmt::Debug for ObjectType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObjectType")
            .field("fields", &self.fields)
            .field("open", &self.open)
            .finish_non_exhaustive()
    }
}

/// Definitions shared between the types registered from them.
pub type SharedDefinitions = Arc<dyn Definitions + Send + Sync>;

/// Object types built from OpenAPI schemas; share it (cheaply cloned) between the checker and
/// whoever registers schemas.
#[derive(Debug, Clone, Default)]
pub struct SchemaTypes {
    objects: Arc<RwLock<HashMap<String, Arc<ObjectType>>>>,
}

/// The name of the object type kro gives `metadata` when a schema does not describe it.
pub const OBJECT_META_TYPE: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

impl SchemaTypes {
    /// No types yet.
    pub fn new() -> Self {
        SchemaTypes::default()
    }

    /// Registers `schema` (and every object inside it) under `name`, and returns its CEL type.
    /// A top-level `metadata` without properties (as in most CRDs) becomes `ObjectMeta`.
    pub fn register(&self, name: &str, schema: &Schema, definitions: &dyn Definitions) -> Type {
        let mut registration = Registration {
            types: self,
            definitions,
            shared: None,
        };
        registration.type_of(schema, name, 0, true)
    }

    /// Like [`register`](Self::register), keeping the definitions so that
    /// [`schema_of`](Self::schema_of) can inline the `$ref`s of the registered objects.
    pub fn register_shared(
        &self,
        name: &str,
        schema: &Schema,
        definitions: &SharedDefinitions,
    ) -> Type {
        let mut registration = Registration {
            types: self,
            definitions: definitions.as_ref(),
            shared: Some(definitions.clone()),
        };
        registration.type_of(schema, name, 0, true)
    }

    /// The CEL type of a schema without registering a root name (objects inside are registered
    /// under `name`-prefixed names all the same).
    pub fn type_of(&self, schema: &Schema, name: &str, definitions: &dyn Definitions) -> Type {
        let mut registration = Registration {
            types: self,
            definitions,
            shared: None,
        };
        registration.type_of(schema, name, 0, false)
    }

    fn object(&self, name: &str) -> Option<Arc<ObjectType>> {
        self.objects
            .read()
            .ok()
            .and_then(|objects| objects.get(name).cloned())
    }

    fn insert(&self, name: &str, object: ObjectType) {
        if let Ok(mut objects) = self.objects.write() {
            objects.insert(name.to_string(), Arc::new(object));
        }
    }

    fn contains(&self, name: &str) -> bool {
        self.objects
            .read()
            .is_ok_and(|objects| objects.contains_key(name))
    }

    /// The OpenAPI schema of a CEL type: the inverse mapping, used to infer the schema of an
    /// instance's status from its expressions. Object types give back the schema they were
    /// registered from; `dyn` and `null` give a schema that accepts anything.
    pub fn schema_of(&self, ty: &Type) -> Schema {
        match ty {
            Type::Bool => Schema::of_type("boolean"),
            Type::Int | Type::Uint => Schema::of_type("integer"),
            Type::Double => Schema::of_type("number"),
            Type::String | Type::Opaque(_, _) => Schema::of_type("string"),
            Type::Bytes => with_format("string", "byte"),
            Type::Timestamp => with_format("string", "date-time"),
            Type::Duration => with_format("string", "duration"),
            Type::List(element) => {
                let mut schema = Schema::of_type("array");
                schema.items = Some(Box::new(self.schema_of(element)));
                schema
            }
            Type::Map(_, value) => {
                let mut schema = Schema::of_type("object");
                schema.additional_properties = Some(AdditionalProperties::Schema(Box::new(
                    self.schema_of(value),
                )));
                schema
            }
            Type::Optional(inner) => self.schema_of(inner),
            Type::Object(name) => self
                .object(name)
                .map(|object| match &object.definitions {
                    Some(definitions) => inline_references(&object.schema, definitions.as_ref(), 0),
                    None => object.schema.clone(),
                })
                .unwrap_or_else(any_value),
            _ => any_value(),
        }
    }
}

/// How deep `$ref`s are inlined before the rest is left open (recursive definitions).
const MAX_INLINE_DEPTH: usize = 24;

/// A copy of `schema` with every `$ref` replaced by its definition, so it can stand alone in a
/// CRD. Past [`MAX_INLINE_DEPTH`] (or for a reference that resolves to nothing) the value is
/// left open (`x-kubernetes-preserve-unknown-fields`).
fn inline_references(schema: &Schema, definitions: &dyn Definitions, depth: usize) -> Schema {
    if let Some(reference) = &schema.reference {
        let resolved = (depth < MAX_INLINE_DEPTH)
            .then(|| definitions.definition(reference_name(reference)))
            .flatten();
        return match resolved {
            Some(definition) => {
                let mut inlined = inline_references(definition, definitions, depth + 1);
                if schema.description.is_some() {
                    inlined.description = schema.description.clone();
                }
                inlined
            }
            None => any_value(),
        };
    }
    let mut copy = schema.clone();
    for property in copy.properties.values_mut() {
        *property = inline_references(property, definitions, depth + 1);
    }
    if let Some(items) = &mut copy.items {
        **items = inline_references(items, definitions, depth + 1);
    }
    if let Some(AdditionalProperties::Schema(values)) = &mut copy.additional_properties {
        **values = inline_references(values, definitions, depth + 1);
    }
    for branch in copy
        .all_of
        .iter_mut()
        .chain(copy.any_of.iter_mut())
        .chain(copy.one_of.iter_mut())
    {
        *branch = inline_references(branch, definitions, depth + 1);
    }
    copy
}

fn with_format(type_: &str, format: &str) -> Schema {
    let mut schema = Schema::of_type(type_);
    schema.format = Some(format.to_string());
    schema
}

/// A schema accepting any value (`x-kubernetes-preserve-unknown-fields` without a type).
fn any_value() -> Schema {
    Schema {
        x_kubernetes_preserve_unknown_fields: Some(true),
        ..Schema::default()
    }
}

impl TypeProvider for SchemaTypes {
    fn has_type(&self, name: &str) -> bool {
        self.contains(name)
    }

    fn field_type(&self, type_name: &str, field: &str) -> FieldLookup {
        match self.object(type_name) {
            Some(object) => match object.fields.get(field) {
                Some(ty) => FieldLookup::Found(ty.clone()),
                None if object.open => FieldLookup::Found(Type::Dyn),
                None => FieldLookup::NoSuchField,
            },
            None => FieldLookup::NoSuchField,
        }
    }

    fn field_names(&self, type_name: &str) -> Option<Vec<String>> {
        self.object(type_name).map(|object| {
            let mut names: Vec<String> = object.fields.keys().cloned().collect();
            names.sort();
            names
        })
    }
}

struct Registration<'a> {
    types: &'a SchemaTypes,
    definitions: &'a dyn Definitions,
    shared: Option<SharedDefinitions>,
}

fn reference_name(reference: &str) -> &str {
    reference.rsplit('/').next().unwrap_or(reference)
}

impl Registration<'_> {
    fn type_of(&mut self, schema: &Schema, name: &str, depth: usize, is_root: bool) -> Type {
        if depth > MAX_SCHEMA_DEPTH {
            return Type::Dyn;
        }
        if let Some(reference) = &schema.reference {
            let definition_name = reference_name(reference);
            return match self.definitions.definition(definition_name) {
                Some(definition) => {
                    let definition = definition.clone();
                    self.type_of(&definition, definition_name, depth + 1, false)
                }
                None => Type::Dyn,
            };
        }
        if schema.x_kubernetes_int_or_string || schema.format.as_deref() == Some("int-or-string") {
            return Type::Dyn;
        }
        match schema.type_.as_deref() {
            Some("boolean") => Type::Bool,
            Some("integer") => Type::Int,
            Some("number") => Type::Double,
            Some("string") => match schema.format.as_deref() {
                Some("byte") => Type::Bytes,
                Some("date-time") => Type::Timestamp,
                Some("duration") => Type::Duration,
                _ => Type::String,
            },
            Some("array") => Type::list(match &schema.items {
                Some(items) => self.type_of(items, &format!("{name}.@items"), depth + 1, false),
                None => Type::Dyn,
            }),
            Some("object") | None if !schema.properties.is_empty() => {
                self.object_type(schema, name, depth, is_root)
            }
            Some("object") => match &schema.additional_properties {
                Some(AdditionalProperties::Schema(values)) => Type::map(
                    Type::String,
                    self.type_of(values, &format!("{name}.@values"), depth + 1, false),
                ),
                _ => Type::map(Type::String, Type::Dyn),
            },
            _ => Type::Dyn,
        }
    }

    fn object_type(&mut self, schema: &Schema, name: &str, depth: usize, is_root: bool) -> Type {
        if self.types.contains(name) {
            // Already registered (a shared definition, or a recursive one).
            return Type::object(name);
        }
        // Register a placeholder first so recursive definitions terminate.
        self.types.insert(
            name,
            ObjectType {
                fields: HashMap::new(),
                open: true,
                schema: schema.clone(),
                definitions: self.shared.clone(),
            },
        );
        let mut fields = HashMap::with_capacity(schema.properties.len());
        for (field, field_schema) in &schema.properties {
            let is_meta = is_root
                && field == "metadata"
                && field_schema.properties.is_empty()
                && field_schema.reference.is_none();
            let ty = if is_meta {
                self.object_meta()
            } else {
                self.type_of(field_schema, &format!("{name}.{field}"), depth + 1, false)
            };
            fields.insert(field.clone(), ty);
        }
        if is_root {
            fields
                .entry("metadata".to_string())
                .or_insert_with(|| self.object_meta());
            fields
                .entry("apiVersion".to_string())
                .or_insert(Type::String);
            fields.entry("kind".to_string()).or_insert(Type::String);
        }
        self.types.insert(
            name,
            ObjectType {
                fields,
                open: schema.preserves_unknown_fields(),
                schema: schema.clone(),
                definitions: self.shared.clone(),
            },
        );
        Type::object(name)
    }

    /// `ObjectMeta`: from the definitions when they have it, else its common fields.
    fn object_meta(&mut self) -> Type {
        if let Some(definition) = self.definitions.definition(OBJECT_META_TYPE) {
            let definition = definition.clone();
            return self.type_of(&definition, OBJECT_META_TYPE, 1, false);
        }
        if !self.types.contains(OBJECT_META_TYPE) {
            let string_map = || Type::map(Type::String, Type::String);
            let fields: HashMap<String, Type> = [
                ("name", Type::String),
                ("generateName", Type::String),
                ("namespace", Type::String),
                ("uid", Type::String),
                ("resourceVersion", Type::String),
                ("generation", Type::Int),
                ("creationTimestamp", Type::Timestamp),
                ("deletionTimestamp", Type::Timestamp),
                ("deletionGracePeriodSeconds", Type::Int),
                ("labels", string_map()),
                ("annotations", string_map()),
                ("finalizers", Type::list(Type::String)),
                (
                    "ownerReferences",
                    Type::list(Type::map(Type::String, Type::Dyn)),
                ),
                (
                    "managedFields",
                    Type::list(Type::map(Type::String, Type::Dyn)),
                ),
            ]
            .into_iter()
            .map(|(field, ty)| (field.to_string(), ty))
            .collect();
            self.types.insert(
                OBJECT_META_TYPE,
                ObjectType {
                    fields,
                    open: false,
                    schema: Schema::of_type("object"),
                    definitions: None,
                },
            );
        }
        Type::object(OBJECT_META_TYPE)
    }
}

#[cfg(test)]
mod tests;
