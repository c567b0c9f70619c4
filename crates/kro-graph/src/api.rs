//! The `kro.run/v1alpha1` ResourceGraphDefinition API types, with the seeds' additions: data
//! nodes, both forms of `forEach`, externalRef selectors, and `spec.scaling`.
//!
//! Field names and JSON spelling are upstream kro's, so RGDs written for upstream deserialize
//! unchanged. Parts that are free-form in the API (`schema.spec`, `template`, `data`) stay as
//! JSON values. Beside each type is its schema in the RGD CRD (`CrdSchema`), with the rules the
//! API server checks when an RGD is written: upstream v0.9.4's for the fields both have.

use std::collections::BTreeMap;

use kro_schema::Schema;
use serde::{Deserialize, Serialize};
use serde_json::{Value as Json, json};

use crate::crd_schema::{
    CrdSchema, any_value, enum_values, immutable, list, object, open_object, required, rule,
    string, string_map,
};

/// The pattern of `schema.kind` (and of `scaling.kind`): UpperCamelCase, at most 63 characters.
const KIND_PATTERN: &str = "^[A-Z][a-zA-Z0-9]{0,62}$";
/// The pattern of `schema.apiVersion`: `v1`, `v1alpha1`, `v2beta3`...
const VERSION_PATTERN: &str = "^v[0-9]+(alpha[0-9]+|beta[0-9]+)?$";
/// The pattern of each short name and category of the generated kind: a DNS label.
const NAME_PATTERN: &str = "^[a-z]([-a-z0-9]*[a-z0-9])?$";

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

impl CrdSchema for ResourceGraphDefinition {
    fn crd_schema() -> Schema {
        object([
            ("apiVersion", string()),
            ("kind", string()),
            ("metadata", Schema::of_type("object")),
            ("spec", RgdSpec::crd_schema()),
            // Written by the controller alone, through the status subresource.
            ("status", open_object()),
        ])
    }
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
    /// When an instance may move to a new revision of the graph (gate `PropagationControl`):
    /// CEL conditions, all of which must hold (see [`crate::propagation`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub propagate_when: Vec<String>,
}

impl CrdSchema for RgdSpec {
    fn crd_schema() -> Schema {
        Schema {
            required: required(&["schema"]),
            ..object([
                ("schema", SchemaSpec::crd_schema()),
                ("resources", list(ResourceSpec::crd_schema())),
                ("scaling", ScalingSpec::crd_schema()),
                ("propagateWhen", list(string())),
            ])
        }
    }
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

impl CrdSchema for SchemaSpec {
    fn crd_schema() -> Schema {
        // Short names and categories of the generated kind.
        let names = || Schema {
            max_items: Some(32),
            x_kubernetes_list_type: Some("set".to_owned()),
            ..list(Schema {
                max_length: Some(63),
                pattern: Some(NAME_PATTERN.to_owned()),
                ..string()
            })
        };
        // The generated kind's group, version, kind and scope are immutable: the instances
        // stored under them would be stranded.
        Schema {
            // Upstream's: `scope` is defaulted before `required` is checked, so it never fails.
            required: required(&["apiVersion", "kind", "scope"]),
            ..object([
                (
                    "apiVersion",
                    Schema {
                        pattern: Some(VERSION_PATTERN.to_owned()),
                        x_kubernetes_validations: vec![immutable("apiVersion")],
                        ..string()
                    },
                ),
                (
                    "kind",
                    Schema {
                        pattern: Some(KIND_PATTERN.to_owned()),
                        x_kubernetes_validations: vec![immutable("kind")],
                        ..string()
                    },
                ),
                (
                    "group",
                    Schema {
                        default: Some(json!(crate::metadata::GROUP)),
                        x_kubernetes_validations: vec![immutable("group")],
                        ..string()
                    },
                ),
                (
                    "scope",
                    Schema {
                        default: Some(json!(Scope::Namespaced)),
                        x_kubernetes_validations: vec![immutable("scope")],
                        ..Scope::crd_schema()
                    },
                ),
                ("spec", open_object()),
                ("types", open_object()),
                ("status", open_object()),
                (
                    "additionalPrinterColumns",
                    list(PrinterColumn::crd_schema()),
                ),
                ("shortNames", names()),
                ("categories", names()),
                ("metadata", CrdMetadata::crd_schema()),
            ])
        }
    }
}

/// The scope of the generated kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Scope {
    /// Instances live in namespaces.
    Namespaced,
    /// Instances are cluster-wide.
    Cluster,
}

impl CrdSchema for Scope {
    fn crd_schema() -> Schema {
        Schema {
            enum_: Some(enum_values(&[Scope::Namespaced, Scope::Cluster])),
            ..string()
        }
    }
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

impl CrdSchema for PrinterColumn {
    fn crd_schema() -> Schema {
        Schema {
            required: required(&["jsonPath", "name", "type"]),
            ..object([
                ("name", string()),
                ("type", string()),
                ("jsonPath", string()),
                ("description", string()),
                ("format", string()),
                (
                    "priority",
                    Schema {
                        format: Some("int32".to_owned()),
                        ..Schema::of_type("integer")
                    },
                ),
            ])
        }
    }
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

impl CrdSchema for CrdMetadata {
    fn crd_schema() -> Schema {
        object([("labels", string_map()), ("annotations", string_map())])
    }
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
    /// KREP-006's gate on a resource's mutation: read so that it is refused with a clear
    /// error rather than dropped (not supported yet; see [`crate::propagation`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub propagate_when: Vec<String>,
    /// What becomes of the object when kro would delete it (KREP-014): an expression of the
    /// `kro.policy` library (`"${policy().withRetain()}"`, reading `schema` at most) or the
    /// map `{deletePolicy: retain}`; see [`crate::lifecycle`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lifecycle: Option<Json>,
}

impl CrdSchema for ResourceSpec {
    fn crd_schema() -> Schema {
        // `data` has no type CEL could declare (it is any JSON value), so `has(self.data)`
        // does not compile; `in dyn(self)` asks the object at run time instead. A data node
        // has neither `template` nor `externalRef`, which upstream's rule refuses: the rule
        // holds for the other nodes only, with upstream's text.
        let has_data = "'data' in dyn(self)";
        let exactly_one = "(has(self.template) && !has(self.externalRef)) || \
                           (!has(self.template) && has(self.externalRef))";
        Schema {
            required: required(&["id"]),
            x_kubernetes_validations: vec![
                rule(
                    &format!("{has_data} || {exactly_one}"),
                    "exactly one of template or externalRef must be provided",
                ),
                rule(
                    &format!("!({has_data}) || (!has(self.template) && !has(self.externalRef))"),
                    "data cannot be combined with template or externalRef",
                ),
            ],
            ..object([
                ("id", string()),
                ("template", open_object()),
                ("externalRef", ExternalRef::crd_schema()),
                ("data", any_value()),
                ("readyWhen", list(string())),
                ("includeWhen", list(string())),
                ("forEach", ForEach::crd_schema()),
                ("propagateWhen", list(string())),
                ("lifecycle", any_value()),
            ])
        }
    }
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

impl CrdSchema for ForEach {
    fn crd_schema() -> Schema {
        // No type, for the string form; a list is checked item by item as upstream checks it
        // (an untyped schema applies `items` to lists only). Another type passes here and is
        // refused when the RGD is compiled.
        Schema {
            items: Some(Box::new(Schema {
                min_properties: Some(1),
                max_properties: Some(1),
                ..string_map()
            })),
            ..any_value()
        }
    }
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

impl CrdSchema for ExternalRef {
    fn crd_schema() -> Schema {
        Schema {
            required: required(&["apiVersion", "kind", "metadata"]),
            ..object([
                ("apiVersion", string()),
                ("kind", string()),
                ("metadata", ExternalRefMetadata::crd_schema()),
            ])
        }
    }
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

impl CrdSchema for ExternalRefMetadata {
    fn crd_schema() -> Schema {
        // That exactly one of `name` and `selector` is set is checked when the controller
        // compiles the RGD: upstream v0.9.4's CRD admits both and neither.
        object([
            (
                "name",
                Schema {
                    min_length: Some(1),
                    ..string()
                },
            ),
            ("namespace", string()),
            // A label selector, or one `${...}` expression.
            ("selector", any_value()),
        ])
    }
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

impl CrdSchema for ScalingSpec {
    fn crd_schema() -> Schema {
        Schema {
            required: required(&["kind", "method"]),
            ..object([
                (
                    "kind",
                    Schema {
                        pattern: Some(KIND_PATTERN.to_owned()),
                        ..string()
                    },
                ),
                ("method", ScalingMethod::crd_schema()),
            ])
        }
    }
}

/// The scaling methods.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ScalingMethod {
    /// A replica count.
    Replicas,
}

impl CrdSchema for ScalingMethod {
    fn crd_schema() -> Schema {
        Schema {
            enum_: Some(enum_values(&[ScalingMethod::Replicas])),
            ..string()
        }
    }
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
