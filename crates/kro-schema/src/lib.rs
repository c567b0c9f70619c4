//! Schemas for kro, with no I/O.
//!
//! **Owns:** SimpleSchema (the compact schema language of a ResourceGraphDefinition) compiled to
//! OpenAPI v3; the OpenAPI model; the mapping between OpenAPI schemas and CEL types in both
//! directions; structural-schema operations (validation including `x-kubernetes-validations`,
//! defaulting, pruning) shared by the graph builder and the embedded API server; the built-in
//! catalog of Kubernetes API schemas.
//!
//! **Must not:** do I/O; schemas arrive as values from the caller, or are compiled in (the
//! built-in catalog decompresses its data from the binary, never from files).

mod catalog;
mod gvk;
mod openapi;

pub use catalog::{
    Catalog, CatalogError, CatalogLookup, FieldPathError, FieldSchema, KindSchema, ListType,
    MapType, MergeSemantics, PatchStrategy,
};
pub use gvk::{Gvk, GvkError};
pub use openapi::{AdditionalProperties, Schema, ValidationRule};
