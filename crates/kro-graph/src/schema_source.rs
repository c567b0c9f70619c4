//! Where the schemas of the kinds an RGD uses come from: the built-in catalog, CRDs given to
//! the builder (files, or those installed in a cluster), an API server's OpenAPI documents.
//! Each is a [`SchemaSource`]; [`SchemaSources`] asks several in order.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use kro_schema::{Definitions, Gvk, NoDefinitions, Schema};
use serde_json::Value as Json;

/// The schema of a kind, with what its `$ref`s point to.
#[derive(Clone)]
pub struct KindSchema {
    /// The root schema of an object of the kind.
    pub schema: Schema,
    /// Definitions its `$ref`s name (empty for CRD schemas, which are inline).
    pub definitions: Arc<dyn Definitions + Send + Sync>,
    /// Whether objects of the kind live in namespaces, when the source knows.
    pub namespaced: Option<bool>,
    /// Where the schema came from, for messages.
    pub origin: String,
}

impl fmt::Debug for KindSchema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KindSchema")
            .field("namespaced", &self.namespaced)
            .field("origin", &self.origin)
            .finish_non_exhaustive()
    }
}

/// What a source knows about a kind.
#[derive(Debug, Clone)]
pub enum SchemaLookup {
    /// The kind's schema.
    Found(Box<KindSchema>),
    /// The source does not know the kind (the next source, or schemaless handling, applies).
    Unknown,
}

/// A source of schemas for kinds.
pub trait SchemaSource: Send + Sync {
    /// The schema of objects of `gvk`.
    fn lookup(&self, gvk: &Gvk) -> SchemaLookup;
}

/// Several sources, asked in order; the first that knows a kind answers.
#[derive(Default)]
pub struct SchemaSources {
    sources: Vec<Box<dyn SchemaSource>>,
}

impl fmt::Debug for SchemaSources {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SchemaSources")
            .field("count", &self.sources.len())
            .finish()
    }
}

impl SchemaSources {
    /// No sources: every kind is unknown.
    pub fn new() -> Self {
        SchemaSources::default()
    }

    /// Adds a source after the existing ones.
    #[must_use]
    pub fn with(mut self, source: impl SchemaSource + 'static) -> Self {
        self.sources.push(Box::new(source));
        self
    }
}

impl SchemaSource for SchemaSources {
    fn lookup(&self, gvk: &Gvk) -> SchemaLookup {
        for source in &self.sources {
            if let SchemaLookup::Found(schema) = source.lookup(gvk) {
                return SchemaLookup::Found(schema);
            }
        }
        SchemaLookup::Unknown
    }
}

/// Why a CRD could not be used as a schema source.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CrdError {
    /// The object is not a CustomResourceDefinition.
    #[error("not a CustomResourceDefinition (apiVersion {api_version:?}, kind {kind:?})")]
    NotACrd {
        /// The object's apiVersion.
        api_version: String,
        /// The object's kind.
        kind: String,
    },
    /// A required field is missing or has the wrong type.
    #[error("CustomResourceDefinition {name:?}: {field} is missing or invalid")]
    InvalidField {
        /// The CRD's name.
        name: String,
        /// The field.
        field: &'static str,
    },
    /// A version's schema does not deserialize as an OpenAPI schema.
    #[error("CustomResourceDefinition {name:?} version {version}: invalid schema: {reason}")]
    InvalidSchema {
        /// The CRD's name.
        name: String,
        /// The version.
        version: String,
        /// Why.
        reason: String,
    },
}

/// Schemas from CustomResourceDefinitions (files given to `kro validate --crds`, or the CRDs
/// kro generated for other RGDs).
#[derive(Debug, Clone, Default)]
pub struct CrdSchemas {
    kinds: HashMap<Gvk, (Schema, bool, String)>,
}

impl CrdSchemas {
    /// No CRDs yet.
    pub fn new() -> Self {
        CrdSchemas::default()
    }

    /// Adds every served version of a CRD object.
    ///
    /// # Errors
    /// [`CrdError`] when the object is not a CRD or its schemas are malformed.
    pub fn add(&mut self, crd: &Json) -> Result<(), CrdError> {
        let api_version = crd["apiVersion"].as_str().unwrap_or_default();
        let kind = crd["kind"].as_str().unwrap_or_default();
        if kind != "CustomResourceDefinition" || !api_version.starts_with("apiextensions.k8s.io/") {
            return Err(CrdError::NotACrd {
                api_version: api_version.to_string(),
                kind: kind.to_string(),
            });
        }
        let name = crd["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let invalid = |field| CrdError::InvalidField {
            name: name.clone(),
            field,
        };
        let spec = &crd["spec"];
        let group = spec["group"]
            .as_str()
            .ok_or_else(|| invalid("spec.group"))?;
        let kind = spec["names"]["kind"]
            .as_str()
            .ok_or_else(|| invalid("spec.names.kind"))?;
        let namespaced = spec["scope"].as_str() != Some("Cluster");
        let versions = spec["versions"]
            .as_array()
            .ok_or_else(|| invalid("spec.versions"))?;
        for version in versions {
            let version_name = version["name"]
                .as_str()
                .ok_or_else(|| invalid("spec.versions[].name"))?;
            let schema_json = &version["schema"]["openAPIV3Schema"];
            let schema: Schema = if schema_json.is_null() {
                Schema {
                    x_kubernetes_preserve_unknown_fields: Some(true),
                    ..Schema::of_type("object")
                }
            } else {
                serde_json::from_value(schema_json.clone()).map_err(|error| {
                    CrdError::InvalidSchema {
                        name: name.clone(),
                        version: version_name.to_string(),
                        reason: error.to_string(),
                    }
                })?
            };
            self.kinds.insert(
                Gvk::new(group, version_name, kind),
                (
                    schema,
                    namespaced,
                    format!("CustomResourceDefinition {name}"),
                ),
            );
        }
        Ok(())
    }

    /// How many kinds (group, version, kind) are known.
    pub fn len(&self) -> usize {
        self.kinds.len()
    }

    /// True when no CRD has been added.
    pub fn is_empty(&self) -> bool {
        self.kinds.is_empty()
    }
}

impl SchemaSource for CrdSchemas {
    fn lookup(&self, gvk: &Gvk) -> SchemaLookup {
        match self.kinds.get(gvk) {
            Some((schema, namespaced, origin)) => SchemaLookup::Found(Box::new(KindSchema {
                schema: schema.clone(),
                definitions: Arc::new(NoDefinitions),
                namespaced: Some(*namespaced),
                origin: origin.clone(),
            })),
            None => SchemaLookup::Unknown,
        }
    }
}

/// The built-in catalog of Kubernetes 1.33 kinds (Deployment, Service, ConfigMap ...).
#[derive(Debug, Clone, Copy, Default)]
pub struct BuiltinCatalog;

/// The catalog's definitions, shareable as `Arc<dyn Definitions>`.
#[derive(Debug, Clone, Copy)]
struct CatalogDefinitions(&'static kro_schema::Catalog);

impl Definitions for CatalogDefinitions {
    fn definition(&self, name: &str) -> Option<&Schema> {
        self.0.definition(name)
    }
}

impl SchemaSource for BuiltinCatalog {
    fn lookup(&self, gvk: &Gvk) -> SchemaLookup {
        let catalog = kro_schema::Catalog::kubernetes();
        match catalog.resolve(gvk).found() {
            Some(kind) => SchemaLookup::Found(Box::new(KindSchema {
                schema: kind.schema().clone(),
                definitions: Arc::new(CatalogDefinitions(catalog)),
                namespaced: kro_schema::Catalog::kubernetes_namespaced(gvk),
                origin: format!(
                    "the built-in Kubernetes {} catalog",
                    kro_schema::Catalog::KUBERNETES_VERSION
                ),
            })),
            None => SchemaLookup::Unknown,
        }
    }
}

/// Schemas from a catalog built at run time, such as one made of an API server's OpenAPI v3
/// documents, with each kind's scope when discovery told it.
#[derive(Debug, Clone)]
pub struct CatalogSchemas {
    catalog: Arc<kro_schema::Catalog>,
    namespaced: HashMap<Gvk, bool>,
    origin: String,
}

impl CatalogSchemas {
    /// The kinds of `catalog`; `origin` names it in messages (`the API server at ...`).
    pub fn new(catalog: kro_schema::Catalog, origin: impl Into<String>) -> Self {
        CatalogSchemas {
            catalog: Arc::new(catalog),
            namespaced: HashMap::new(),
            origin: origin.into(),
        }
    }

    /// Records whether objects of `gvk` live in namespaces.
    #[must_use]
    pub fn with_scope(mut self, gvk: Gvk, namespaced: bool) -> Self {
        self.namespaced.insert(gvk, namespaced);
        self
    }
}

impl SchemaSource for CatalogSchemas {
    fn lookup(&self, gvk: &Gvk) -> SchemaLookup {
        match self.catalog.resolve(gvk).found() {
            Some(kind) => SchemaLookup::Found(Box::new(KindSchema {
                schema: kind.schema().clone(),
                definitions: self.catalog.clone(),
                namespaced: self.namespaced.get(gvk).copied(),
                origin: self.origin.clone(),
            })),
            None => SchemaLookup::Unknown,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn widget_crd() -> Json {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.org"},
            "spec": {
                "group": "example.org",
                "names": {"kind": "Widget", "plural": "widgets"},
                "scope": "Cluster",
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object"}}}}}]
            }
        })
    }

    #[test]
    fn crds_answer_for_their_kinds_only() {
        let mut crds = CrdSchemas::new();
        crds.add(&widget_crd()).expect("a valid CRD");
        let sources = SchemaSources::new().with(crds);
        match sources.lookup(&Gvk::new("example.org", "v1", "Widget")) {
            SchemaLookup::Found(found) => {
                assert_eq!(found.namespaced, Some(false));
                assert!(found.schema.properties.contains_key("spec"));
            }
            SchemaLookup::Unknown => panic!("the CRD's kind is known"),
        }
        assert!(matches!(
            sources.lookup(&Gvk::new("example.org", "v2", "Widget")),
            SchemaLookup::Unknown
        ));
    }

    #[test]
    fn the_builtin_catalog_knows_deployments() {
        let found = BuiltinCatalog.lookup(&Gvk::new("apps", "v1", "Deployment"));
        assert!(matches!(found, SchemaLookup::Found(_)));
        assert!(matches!(
            BuiltinCatalog.lookup(&Gvk::new("example.org", "v1", "Widget")),
            SchemaLookup::Unknown
        ));
    }

    #[test]
    fn other_objects_are_not_crds() {
        let mut crds = CrdSchemas::new();
        let error = crds
            .add(&json!({"apiVersion": "v1", "kind": "ConfigMap"}))
            .expect_err("not a CRD");
        assert!(matches!(error, CrdError::NotACrd { .. }));
    }
}
