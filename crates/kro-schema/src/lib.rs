//! Schemas for kro, with no I/O.
//!
//! **Owns:** SimpleSchema (the compact schema language of a ResourceGraphDefinition) compiled to
//! OpenAPI v3; the OpenAPI model; the mapping between OpenAPI schemas and CEL types in both
//! directions; structural-schema operations (validation including `x-kubernetes-validations`,
//! defaulting, pruning) shared by the graph builder and the embedded API server; example values
//! of a schema; the built-in catalog of Kubernetes API schemas.
//!
//! **Must not:** do I/O; schemas arrive as values from the caller, or are compiled in (the
//! built-in catalog decompresses its data from the binary, never from files).

mod catalog;
mod cel_types;
mod defaulting;
mod example;
mod field_error;
mod gvk;
mod openapi;
mod pruning;
mod simpleschema;
mod validation;

pub use catalog::{
    Catalog, CatalogError, CatalogLookup, FieldPathError, FieldSchema, KindSchema, ListType,
    MapType, MergeSemantics, PatchStrategy,
};
pub use cel_types::{Definitions, NoDefinitions, OBJECT_META_TYPE, SchemaTypes, SharedDefinitions};
pub use defaulting::apply_defaults;
pub use example::example_value;
pub use field_error::{
    BadValue, FieldError, FieldErrorType, FieldPath, PathElement, go_json_float, go_quote,
    invalid_object_message,
};
pub use gvk::{GroupKind, Gvk, GvkError};
pub use openapi::{AdditionalProperties, Schema, ValidationRule};
pub use pruning::prune;
pub use simpleschema::{
    CompiledSchema, MAX_TYPE_DEPTH, Marker, MarkerKind, ScaleFields, SimpleSchemaError,
    SimpleSchemaErrorKind, TypeExpr, compile_field, compile_spec, parse_markers, parse_type,
    scale_fields,
};
pub use validation::{
    PER_CALL_COST_LIMIT, RUNTIME_COST_BUDGET, ValidationConfig, Validator, validate,
};
