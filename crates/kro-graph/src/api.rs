//! The `kro.run/v1alpha1` ResourceGraphDefinition API types, with the seeds' additions: data
//! nodes, both forms of `forEach`, externalRef selectors, and `spec.scaling`.
//!
//! Field names and JSON spelling are upstream kro's, so RGDs written for upstream deserialize
//! unchanged. Parts that are free-form in the API (`schema.spec`, `template`, `data`) stay as
//! JSON values.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

/// A ResourceGraphDefinition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceGraphDefinition {
    /// `kro.run/v1alpha1`
    pub api_version: String,
    /// `ResourceGraphDefinition`
    pub kind: String,
    /// Object metadata (name, labels, annotations, uid ...).
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The definition.
    pub spec: RgdSpec,
    /// What the controller last reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<Json>,
}

/// The metadata fields kro reads from an RGD.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectMeta {
    /// The RGD's name.
    #[serde(default)]
    pub name: String,
    /// The RGD's UID (set by the API server).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    /// Labels.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// Annotations (`kro.run/allow-breaking-changes` among them).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    /// The generation (set by the API server).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation: Option<i64>,
}

/// `spec` of a ResourceGraphDefinition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RgdSpec {
    /// The API the RGD defines.
    pub schema: SchemaSpec,
    /// The resources of the graph, in the order written.
    #[serde(default)]
    pub resources: Vec<ResourceSpec>,
    /// Horizontal scaling: also generate a `<Kind>Set` (seed 002).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scaling: Option<ScalingSpec>,
}

/// `spec.schema`: the generated API.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SchemaSpec {
    /// The version of the generated API, such as `v1alpha1`.
    pub api_version: String,
    /// The kind of the generated API, UpperCamelCase.
    pub kind: String,
    /// The API group (default `kro.run`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// `Namespaced` (default) or `Cluster`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<Scope>,
    /// The instance spec in SimpleSchema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<Json>,
    /// Custom SimpleSchema types.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub types: Option<Json>,
    /// The instance status: `${...}` projections (and `| scale` declarations).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<Json>,
    /// Printer columns of the generated CRD (replace the defaults when set).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub additional_printer_columns: Vec<PrinterColumn>,
    /// Short names of the generated kind.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub short_names: Vec<String>,
    /// Categories of the generated kind.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub categories: Vec<String>,
    /// Labels and annotations for the generated CRD.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<CrdMetadata>,
}

/// The scope of the generated kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Scope {
    /// Instances live in namespaces.
    Namespaced,
    /// Instances are cluster-wide.
    Cluster,
}

/// One printer column (apiextensions `CustomResourceColumnDefinition`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PrinterColumn {
    /// Column header.
    pub name: String,
    /// `string`, `integer`, `number`, `boolean` or `date`.
    #[serde(rename = "type")]
    pub type_: String,
    /// JSONPath of the value.
    pub json_path: String,
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Format.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    /// Priority (0 shows in the default view).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i32>,
}

/// Labels and annotations put on the generated CRD.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CrdMetadata {
    /// Labels.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// Annotations.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

/// One entry of `spec.resources`: exactly one of `template`, `externalRef` or `data`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceSpec {
    /// The node's id, lowerCamelCase, unique in the graph.
    pub id: String,
    /// A Kubernetes object to manage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<Json>,
    /// An existing object (or objects) to read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_ref: Option<ExternalRef>,
    /// A computed value, no object (seed 001).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Json>,
    /// Conditions for the node to count as ready, each one `${...}`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ready_when: Vec<String>,
    /// Conditions for the node to exist at all, each one `${...}`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub include_when: Vec<String>,
    /// Makes the node a collection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub for_each: Option<ForEach>,
}

/// `forEach` in either form.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ForEach {
    /// Upstream's form: a list of single-key maps, `[{region: "${...}"}, {tier: "${...}"}]`;
    /// the collection is the cartesian product and each name is a variable in the template.
    Dimensions(Vec<BTreeMap<String, String>>),
    /// The seed's form: one expression, `forEach: ${expr}`, with `each.item`, `each.index`,
    /// `each.key`, `each.value` and `each.length` in the template.
    Expression(String),
}

/// `externalRef`: an existing object by name, or objects by label selector.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExternalRef {
    /// The apiVersion of the referenced kind.
    pub api_version: String,
    /// The referenced kind.
    pub kind: String,
    /// Which object(s).
    pub metadata: ExternalRefMetadata,
}

/// `externalRef.metadata`: exactly one of `name` and `selector`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExternalRefMetadata {
    /// The object's name (may hold `${...}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The namespace (may hold `${...}`); by default the instance's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// A label selector (values may hold `${...}`); the node is then a list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<Json>,
}

/// `spec.scaling` (seed 002): generate a `<Kind>Set` replicating instances.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScalingSpec {
    /// The Set's kind, such as `MyObjectSet`.
    pub kind: String,
    /// How the Set scales; only `replicas` exists.
    pub method: ScalingMethod,
}

/// The scaling methods.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ScalingMethod {
    /// A replica count.
    Replicas,
}

impl SchemaSpec {
    /// The API group, `kro.run` unless set.
    pub fn group(&self) -> &str {
        self.group.as_deref().unwrap_or(crate::metadata::GROUP)
    }

    /// The scope, `Namespaced` unless set.
    pub fn scope(&self) -> Scope {
        self.scope.unwrap_or(Scope::Namespaced)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn upstream_rgds_deserialize() {
        let rgd: ResourceGraphDefinition = serde_json::from_value(json!({
            "apiVersion": "kro.run/v1alpha1",
            "kind": "ResourceGraphDefinition",
            "metadata": {"name": "webapps.kro.run"},
            "spec": {
                "schema": {
                    "apiVersion": "v1alpha1",
                    "kind": "WebApp",
                    "spec": {"name": "string"},
                    "status": {"ready": "${deployment.status.readyReplicas > 0}"}
                },
                "resources": [
                    {"id": "deployment", "template": {"apiVersion": "apps/v1", "kind": "Deployment"},
                     "readyWhen": ["${deployment.status.readyReplicas > 0}"],
                     "forEach": [{"region": "${schema.spec.regions}"}]},
                    {"id": "config", "externalRef": {"apiVersion": "v1", "kind": "ConfigMap",
                     "metadata": {"name": "cfg"}}},
                    {"id": "vars", "data": {"prefix": "${schema.metadata.name}"}, "forEach": "${schema.spec.items}"}
                ]
            }
        }))
        .expect("deserializes");
        assert_eq!(rgd.spec.schema.group(), "kro.run");
        assert_eq!(rgd.spec.schema.scope(), Scope::Namespaced);
        assert!(matches!(
            rgd.spec.resources[0].for_each,
            Some(ForEach::Dimensions(_))
        ));
        assert!(matches!(
            rgd.spec.resources[2].for_each,
            Some(ForEach::Expression(_))
        ));
        assert!(rgd.spec.resources[1].external_ref.is_some());
    }

    #[test]
    fn scaling_deserializes() {
        let scaling: ScalingSpec =
            serde_json::from_value(json!({"kind": "MyObjectSet", "method": "replicas"}))
                .expect("valid");
        assert_eq!(scaling.method, ScalingMethod::Replicas);
        assert!(
            serde_json::from_value::<ScalingSpec>(json!({"kind": "X", "method": "other"})).is_err()
        );
    }
}
