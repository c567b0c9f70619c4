//! The built-in catalog of Kubernetes API schemas, indexed by group-version-kind.
//!
//! The Kubernetes 1.33 definitions are compiled into the crate as gzip (see
//! `data/README.md`) and decompressed, normalised and indexed once, on the first call to
//! [`Catalog::kubernetes`].
//!
//! Definitions keep their names (`io.k8s.api.apps.v1.DeploymentSpec`) and refer to each other
//! with `$ref: "#/$defs/<name>"`, so a CEL type provider can give each definition one stable
//! object type name; [`Catalog::definition`] looks a name up. [`Catalog::resolved_definition`]
//! and [`KindSchema::resolved_schema`] give the same schemas with every reference inlined.
//! How source forms become apiextensions schemas (nullable types, int-or-string, `Quantity`,
//! `RawExtension`, `JSON`) is described in `catalog/normalize.rs` and on [`Catalog`].
//!
//! Whether a kind is namespaced, and its resource name, are discovery facts that the
//! definitions do not record, so the catalog does not offer them.

mod error;
mod field;
mod normalize;
mod resolve;
mod scope;
mod semantics;

use std::collections::BTreeMap;
use std::io::Read;
use std::sync::OnceLock;

pub use error::{CatalogError, FieldPathError};
pub use field::{FieldSchema, KindSchema};
pub use semantics::{ListType, MapType, MergeSemantics, PatchStrategy};

use crate::gvk::Gvk;
use crate::openapi::Schema;

/// The Kubernetes 1.33 definitions, gzip-compressed.
const KUBERNETES_DEFINITIONS_GZ: &[u8] =
    include_bytes!("../data/kubernetes-1.33-definitions.json.gz");

static KUBERNETES: OnceLock<Catalog> = OnceLock::new();

#[cfg(test)]
static DECOMPRESSIONS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// API schemas by group-version-kind, with the named definitions they are built from.
///
/// Schemas are in the apiextensions `JSONSchemaProps` shape:
///
/// - every `type` of the source admits `null`, so nearly every schema is `nullable`;
/// - `IntOrString` and `Quantity` are `x-kubernetes-int-or-string` with
///   `anyOf: [{type: integer}, {type: string}]`, as controller-gen writes them in CRDs, and
///   `Quantity` also carries controller-gen's quantity `pattern` (API servers always
///   serialize quantities as strings; a fractional JSON number is not accepted);
/// - `Time` and `MicroTime` are strings with `format: date-time`;
/// - `RawExtension` and `FieldsV1` are objects with `x-kubernetes-preserve-unknown-fields`;
/// - `JSON` and the `JSONSchemaPropsOr*` types accept any value
///   (`x-kubernetes-preserve-unknown-fields` without a type).
///
/// ```
/// use kro_schema::{Catalog, CatalogLookup, Gvk, ListType};
///
/// let deployment = Gvk::from_api_version("apps/v1", "Deployment")?;
/// let CatalogLookup::Found(kind) = Catalog::kubernetes().resolve(&deployment) else {
///     panic!("Deployment is built in");
/// };
/// let containers = kind.field("spec.template.spec.containers")?;
/// let merge = containers.merge_semantics();
/// assert_eq!(merge.list_type, Some(ListType::Map));
/// assert_eq!(merge.list_map_keys, ["name"]);
/// let items = containers.items().expect("a list");
/// assert_eq!(items.definition_name(), Some("io.k8s.api.core.v1.Container"));
///
/// let widget = Gvk::new("example.com", "v1", "Widget");
/// assert!(matches!(Catalog::kubernetes().resolve(&widget), CatalogLookup::Unknown));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Catalog {
    definitions: BTreeMap<String, Schema>,
    kinds: BTreeMap<Gvk, String>,
}

/// What the catalog knows about a group-version-kind.
#[derive(Debug, Clone, Copy)]
pub enum CatalogLookup<'a> {
    /// A built-in kind, with its schema.
    Found(KindSchema<'a>),
    /// Not a kind of the catalog: the caller may look for a CRD or ask an API server.
    Unknown,
}

impl<'a> CatalogLookup<'a> {
    /// The kind's schema, if it was found.
    pub fn found(self) -> Option<KindSchema<'a>> {
        match self {
            CatalogLookup::Found(kind) => Some(kind),
            CatalogLookup::Unknown => None,
        }
    }
}

impl Catalog {
    /// The Kubernetes release whose API the [`Catalog::kubernetes`] catalog describes.
    pub const KUBERNETES_VERSION: &'static str = "1.33";

    /// The built-in Kubernetes 1.33 catalog, decompressed and indexed on the first call.
    ///
    /// # Panics
    /// Only if the compiled-in data is corrupt, which the crate's tests rule out for every
    /// build (`the_embedded_catalog_loads`).
    pub fn kubernetes() -> &'static Catalog {
        KUBERNETES.get_or_init(|| {
            load_embedded().expect("the compiled-in Kubernetes definitions load (tested)")
        })
    }

    /// A catalog from a JSON-Schema document whose `$defs` hold named definitions, with
    /// `x-kubernetes-group-version-kind` on the definitions of kinds (the form of the
    /// vendored Kubernetes definitions).
    ///
    /// # Errors
    /// [`CatalogError`] if the document is not such a JSON document, a reference names no
    /// definition, a type or annotation cannot be expressed, or two definitions claim one
    /// kind.
    pub fn from_definitions_json(json: &[u8]) -> Result<Catalog, CatalogError> {
        let definitions = normalize::load(json)?;
        Ok(Catalog {
            definitions: definitions.schemas,
            kinds: definitions.kinds,
        })
    }

    /// A catalog from an API server's OpenAPI v3 documents (`/openapi/v3/api/v1`,
    /// `/openapi/v3/apis/<group>/<version>`), merged: the kinds of every group-version given,
    /// CRDs included, as the server publishes them.
    ///
    /// # Errors
    /// [`CatalogError::NotOpenApiV3`] for a document without `components.schemas`, and the
    /// errors of [`Catalog::from_definitions_json`].
    pub fn from_openapi_v3(documents: &[serde_json::Value]) -> Result<Catalog, CatalogError> {
        Catalog::from_openapi_v3_owned(documents.iter().cloned())
    }

    /// [`Catalog::from_openapi_v3`] from documents taken one at a time and consumed: a caller
    /// that keeps them as text parses each as it is loaded, so that only one is a tree of
    /// values at a time (the core group's document is 1.4 MB of JSON on kube-apiserver 1.33).
    ///
    /// # Errors
    /// As [`Catalog::from_openapi_v3`].
    pub fn from_openapi_v3_owned(
        documents: impl IntoIterator<Item = serde_json::Value>,
    ) -> Result<Catalog, CatalogError> {
        let definitions = normalize::load_openapi_v3(documents)?;
        Ok(Catalog {
            definitions: definitions.schemas,
            kinds: definitions.kinds,
        })
    }

    /// Whether objects of a built-in Kubernetes 1.33 kind live in namespaces (`None` for
    /// kinds that are not built-in resources). Definitions do not carry scope, so this is
    /// known for the built-in API only, whatever catalog it is asked of.
    pub fn kubernetes_namespaced(gvk: &Gvk) -> Option<bool> {
        scope::namespaced(gvk.group(), gvk.kind())
    }

    /// The schema of a kind, or [`CatalogLookup::Unknown`].
    pub fn resolve(&self, gvk: &Gvk) -> CatalogLookup<'_> {
        match self.kinds.get_key_value(gvk) {
            Some((gvk, name)) => match self.definitions.get_key_value(name) {
                Some((name, schema)) => {
                    CatalogLookup::Found(KindSchema::new(self, gvk, name, schema))
                }
                // Every indexed kind names a definition of the same document.
                None => CatalogLookup::Unknown,
            },
            None => CatalogLookup::Unknown,
        }
    }

    /// Every group-version-kind of the catalog, sorted. Kinds shared by all groups, such as
    /// `DeleteOptions` and `WatchEvent`, appear once per group-version.
    pub fn gvks(&self) -> impl ExactSizeIterator<Item = &Gvk> + '_ {
        self.kinds.keys()
    }

    /// The group-versions serving `kind` in `group` (empty for the core group), sorted by
    /// version string. The catalog does not know which version a server prefers.
    pub fn versions_of(&self, group: &str, kind: &str) -> Vec<&Gvk> {
        self.kinds
            .keys()
            .filter(|gvk| gvk.group() == group && gvk.kind() == kind)
            .collect()
    }

    /// The definition named `name` (such as `io.k8s.api.apps.v1.DeploymentSpec`), with its
    /// `$ref`s kept.
    pub fn definition(&self, name: &str) -> Option<&Schema> {
        self.definitions.get(name)
    }

    /// The names of all definitions, sorted.
    pub fn definition_names(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        self.definitions.keys().map(String::as_str)
    }

    /// The definition named `name` with every `$ref` inlined (see
    /// [`KindSchema::resolved_schema`]).
    pub fn resolved_definition(&self, name: &str) -> Option<Schema> {
        let (name, schema) = self.definitions.get_key_value(name)?;
        Some(resolve::inline_definition(self, name, schema))
    }

    /// The definition `schema.reference` names, with its name, if `schema` is a reference
    /// into this catalog.
    pub fn referenced_definition(&self, schema: &Schema) -> Option<(&str, &Schema)> {
        let name = schema
            .reference
            .as_deref()?
            .strip_prefix(normalize::REFERENCE_PREFIX)?;
        self.definitions
            .get_key_value(name)
            .map(|(name, schema)| (name.as_str(), schema))
    }
}

fn load_embedded() -> Result<Catalog, CatalogError> {
    #[cfg(test)]
    DECOMPRESSIONS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let json = gunzip(KUBERNETES_DEFINITIONS_GZ)?;
    Catalog::from_definitions_json(&json)
}

fn gunzip(compressed: &[u8]) -> Result<Vec<u8>, CatalogError> {
    // The gzip trailer ends with the uncompressed size modulo 2^32: a capacity hint only,
    // capped so that a corrupt trailer cannot ask for gigabytes.
    const MAX_SIZE_HINT: usize = 64 << 20;
    let size_hint = compressed
        .last_chunk::<4>()
        .map_or(0, |size| u32::from_le_bytes(*size) as usize);
    let mut json = Vec::with_capacity(size_hint.min(MAX_SIZE_HINT));
    flate2::read::GzDecoder::new(compressed)
        .read_to_end(&mut json)
        .map_err(|source| CatalogError::Decompress { source })?;
    Ok(json)
}

#[cfg(test)]
mod tests;

impl resolve::ReferencedDefinitions for Catalog {
    fn referenced_definition(&self, schema: &Schema) -> Option<(&str, &Schema)> {
        Catalog::referenced_definition(self, schema)
    }
}

impl crate::cel_types::Definitions for Catalog {
    fn definition(&self, name: &str) -> Option<&Schema> {
        Catalog::definition(self, name)
    }
}
