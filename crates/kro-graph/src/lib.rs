//! The ResourceGraphDefinition compiler, with no I/O.
//!
//! **Owns:** the `kro.run/v1alpha1` ResourceGraphDefinition API types; the `${...}` template
//! scanner; the graph builder (validation, dependencies, cycle detection, topological levels, CEL
//! type checking, status schema inference); CRD generation (status, scale subresource and the
//! `<Kind>Set` companion) and the breaking-change check between two CRDs; diagrams of a graph. Its output is an immutable compiled graph shared
//! by every evaluation.
//!
//! **Must not:** do I/O; schemas of target kinds come through a small source trait supplied by
//! the caller (built-in catalog, CRD files, or an API server's OpenAPI documents).

mod api;
mod builder;
mod compat;
mod crd;
mod crd_changes;
mod crd_schema;
mod dag;
mod diagram;
mod error;
mod features;
mod generated_schemas;
mod graph;
mod graph_revision;
pub mod lifecycle;
pub mod metadata;
mod names;
mod node_id;
pub mod propagation;
mod rgd_crd;
mod schema_source;
mod source;
mod template;
mod types;

pub use api::{
    CrdMetadata, ExternalRef, ExternalRefMetadata, ForEach, ObjectMeta, PrinterColumn,
    ResourceGraphDefinition, ResourceSpec, RgdSpec, ScalingMethod, ScalingSpec, SchemaSpec, Scope,
};
pub use builder::{BuildConfig, DEFAULT_MAX_COLLECTION_DIMENSIONS, build_graph, build_graph_with};
pub use compat::is_compatible;
pub use crd::{
    KindNames, MANAGED_RESOURCES, default_printer_columns, instance_crd, kro_status_properties,
    set_crd,
};
pub use crd_changes::{
    Bound, ChangeKind, CrdComparisonError, SchemaChange, SchemaChanges, compare_crds,
    compare_schemas,
};
pub use dag::{CycleError, Dag, DagError};
pub use diagram::{
    DiagramEdge, DiagramError, DiagramFormat, DiagramGraph, DiagramNode, DiagramNodeRole,
};
pub use error::{BuildError, BuildErrorKind, BuildErrors, Hint};
pub use features::{Feature, FeatureGateError, FeatureGates};
pub use generated_schemas::{ForRgd, GeneratedSchemas};
pub use graph::{
    BuildStats, BuildWarning, CompiledExpression, CompiledField, CompiledForEach, CompiledGraph,
    CompiledNode, Lifecycle, NodeKind, StatusField,
};
pub use graph_revision::{
    GRAPH_REVISION_API_VERSION, GRAPH_REVISION_CRD_NAME, GRAPH_REVISION_GROUP,
    GRAPH_REVISION_HASH_LABEL, GRAPH_REVISION_KIND, GRAPH_REVISION_PLURAL, graph_revision_crd,
    graph_revision_name, spec_hash,
};
pub use names::{
    NameError, NameRule, is_dns_label, is_lower_camel_case, is_reserved, is_valid_kind,
    is_valid_version, pluralize,
};
pub use node_id::NodeId;
pub use rgd_crd::resource_graph_definition_crd;
pub use schema_source::{
    BuiltinCatalog, CatalogSchemas, CrdError, CrdSchemas, KindSchema, SchemaLookup, SchemaSource,
    SchemaSources,
};
pub use source::{
    DecodeError, DecodeErrorKind, FieldLocation, Location, SourceMap, YamlDocument, YamlError,
    YamlErrorKind, YamlLimits, parse_yaml_documents, parse_yaml_documents_with,
};
pub use template::{
    Expression, FieldPath, FieldPathError, FieldTemplateError, Interpolation, MAX_SCAN_ERRORS,
    PathSegment, ScaleMarked, ScaleMarker, ScanErrors, ScannedJson, Template, TemplateError,
    TemplateErrorKind, TemplateField, TemplatePart, find_expressions, parse_template, scan_json,
    split_scale_marker,
};
pub use types::{GraphTypes, constant_type, field_schema, join};
