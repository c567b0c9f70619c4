//! Why a definitions document cannot become a catalog, and why a field path names no field.

use crate::gvk::Gvk;

/// Why a JSON-Schema definitions document cannot be turned into a [`Catalog`](super::Catalog).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CatalogError {
    /// The gzip stream of a compiled-in document is corrupt.
    #[error("the compressed definitions are corrupt")]
    Decompress {
        /// What the decoder reported.
        #[source]
        source: std::io::Error,
    },
    /// The document is not JSON, or has no `$defs` object of definitions.
    #[error("the document is not a JSON object with a `$defs` object")]
    Document {
        /// What the JSON parser reported.
        #[source]
        source: serde_json::Error,
    },
    /// An OpenAPI v3 document without `components.schemas`.
    #[error("OpenAPI document {index} has no components.schemas object")]
    NotOpenApiV3 {
        /// The document's position among those given, from 0.
        index: usize,
    },
    /// A schema node is not a JSON object.
    #[error("{definition}{path}: a schema must be a JSON object")]
    NotASchema {
        /// The definition holding the node.
        definition: String,
        /// Where in the definition, as a JSON pointer (empty for the definition itself).
        path: String,
    },
    /// A `type` names a combination this model cannot express (more than one non-null type,
    /// other than integer with string).
    #[error("{definition}{path}: unsupported type {types:?}")]
    UnsupportedType {
        /// The definition holding the node.
        definition: String,
        /// Where in the definition, as a JSON pointer.
        path: String,
        /// The types as written.
        types: Vec<String>,
    },
    /// A `$ref` names a definition the document does not have, or is not of the form
    /// `#/$defs/<name>`.
    #[error("{definition}{path}: reference {reference:?} names no definition")]
    DanglingReference {
        /// The definition holding the reference.
        definition: String,
        /// Where in the definition, as a JSON pointer.
        path: String,
        /// The reference as written.
        reference: String,
    },
    /// A `$ref` has a sibling keyword that would change the referenced schema's shape (only
    /// descriptions and merge annotations may sit beside a reference).
    #[error("{definition}{path}: `{keyword}` beside `$ref` is not supported")]
    UnsupportedReferenceSibling {
        /// The definition holding the reference.
        definition: String,
        /// Where in the definition, as a JSON pointer.
        path: String,
        /// The sibling keyword.
        keyword: String,
    },
    /// An `x-kubernetes-list-type`, `x-kubernetes-map-type` or `x-kubernetes-patch-strategy`
    /// has a value Kubernetes does not define.
    #[error("{definition}{path}: {keyword} {value:?} is not a known value")]
    InvalidAnnotation {
        /// The definition holding the node.
        definition: String,
        /// Where in the definition, as a JSON pointer.
        path: String,
        /// The annotation's keyword.
        keyword: &'static str,
        /// The value as written.
        value: String,
    },
    /// A definition does not fit the schema model after normalisation (a keyword has a value
    /// of the wrong JSON type).
    #[error("definition {definition} does not fit the schema model")]
    Definition {
        /// The definition.
        definition: String,
        /// What the deserializer reported.
        #[source]
        source: serde_json::Error,
    },
    /// `x-kubernetes-group-version-kind` is not a list of `{group, version, kind}` objects.
    #[error("definition {definition} has a malformed x-kubernetes-group-version-kind")]
    InvalidGroupVersionKind {
        /// The definition.
        definition: String,
        /// What the deserializer reported.
        #[source]
        source: serde_json::Error,
    },
    /// Two definitions claim the same group-version-kind.
    #[error("{gvk} is claimed by both {first} and {second}")]
    DuplicateKind {
        /// The group-version-kind.
        gvk: Gvk,
        /// The definition seen first.
        first: String,
        /// The definition seen second.
        second: String,
    },
}

impl CatalogError {
    /// A stable CamelCase reason, for conditions, events and metric labels.
    pub fn reason(&self) -> &'static str {
        match self {
            CatalogError::Decompress { .. } => "CorruptCompressedDefinitions",
            CatalogError::Document { .. } => "InvalidDefinitionsDocument",
            CatalogError::NotOpenApiV3 { .. } => "NotOpenApiV3",
            CatalogError::NotASchema { .. } => "NotASchema",
            CatalogError::UnsupportedType { .. } => "UnsupportedType",
            CatalogError::DanglingReference { .. } => "DanglingReference",
            CatalogError::UnsupportedReferenceSibling { .. } => "UnsupportedReferenceSibling",
            CatalogError::InvalidAnnotation { .. } => "InvalidAnnotation",
            CatalogError::Definition { .. } => "InvalidDefinition",
            CatalogError::InvalidGroupVersionKind { .. } => "InvalidGroupVersionKind",
            CatalogError::DuplicateKind { .. } => "DuplicateKind",
        }
    }
}

/// Why a field path names no field of a kind.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FieldPathError {
    /// The value at `path` is an object (or list of objects) without a field `field`, or is
    /// a scalar.
    #[error("{path:?} has no field {field:?}")]
    NoSuchField {
        /// The part of the path that was found (empty for the kind itself).
        path: String,
        /// The segment that names no field.
        field: String,
    },
    /// The value at `path` accepts anything (`x-kubernetes-preserve-unknown-fields`), so
    /// `field` may exist but has no schema.
    #[error("{path:?} accepts any value, so {field:?} has no schema")]
    Untyped {
        /// The part of the path that was found.
        path: String,
        /// The segment below the untyped value.
        field: String,
    },
}

impl FieldPathError {
    /// A stable CamelCase reason, for conditions, events and metric labels.
    pub fn reason(&self) -> &'static str {
        match self {
            FieldPathError::NoSuchField { .. } => "NoSuchField",
            FieldPathError::Untyped { .. } => "UntypedField",
        }
    }
}
