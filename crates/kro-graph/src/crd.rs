//! CustomResourceDefinition generation: the instance CRD as upstream kro writes it, plus the
//! scale subresource of the horizontal-scaling design and the `<Kind>Set` CRD.

use std::collections::BTreeMap;

use kro_schema::{ScaleFields, Schema};
use serde_json::{Value as Json, json};

use crate::api::{PrinterColumn, SchemaSpec, Scope};
use crate::names::pluralize;

/// What a generated kind is called.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KindNames {
    /// The API group.
    pub group: String,
    /// The version.
    pub version: String,
    /// The kind, such as `WebApp`.
    pub kind: String,
    /// The plural resource name, such as `webapps`.
    pub plural: String,
    /// The singular resource name, such as `webapp`.
    pub singular: String,
    /// Namespaced or cluster-wide.
    pub scope: Scope,
}

impl KindNames {
    /// Names for `kind` in `group`/`version`, as upstream derives them.
    pub fn new(group: &str, version: &str, kind: &str, scope: Scope) -> Self {
        let singular = kind.to_lowercase();
        KindNames {
            group: group.to_string(),
            version: version.to_string(),
            kind: kind.to_string(),
            plural: pluralize(&singular),
            singular,
            scope,
        }
    }

    /// The CRD's name: `<plural>.<group>`.
    pub fn crd_name(&self) -> String {
        format!("{}.{}", self.plural, self.group)
    }

    /// `group/version`.
    pub fn api_version(&self) -> String {
        format!("{}/{}", self.group, self.version)
    }
}

/// The status fields kro always adds: `state` and `conditions`.
pub fn kro_status_properties() -> BTreeMap<String, Schema> {
    let string = || Schema::of_type("string");
    let mut condition = Schema::of_type("object");
    for field in ["type", "status", "reason", "message", "lastTransitionTime"] {
        condition.properties.insert(field.to_string(), string());
    }
    condition
        .properties
        .insert("observedGeneration".to_string(), Schema::of_type("integer"));
    let mut conditions = Schema::of_type("array");
    conditions.items = Some(Box::new(condition));
    BTreeMap::from([
        ("state".to_string(), string()),
        ("conditions".to_string(), conditions),
    ])
}

/// The instance status field listing the objects kro manages for it (gate
/// `InstanceManagedResources`).
pub const MANAGED_RESOURCES: &str = "managedResources";

/// Adds `status.managedResources` to an instance CRD: a list (replaced whole) of the objects
/// kro manages for the instance, each `nodeID`, `apiVersion`, `kind`, `namespace` (when
/// namespaced), `name` and `uid`, the shape of upstream's Graph kind.
pub(crate) fn with_managed_resources(crd: &mut Json) {
    let string = || json!({"type": "string"});
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"]["properties"]
        [MANAGED_RESOURCES] = json!({
        "type": "array",
        "x-kubernetes-list-type": "atomic",
        "items": {
            "type": "object",
            "properties": {
                "nodeID": string(),
                "apiVersion": string(),
                "kind": string(),
                "namespace": string(),
                "name": string(),
                "uid": string(),
            },
        },
    });
}

/// Adds `status.observedRevision` (the revision the instance is Ready on, under a propagation
/// policy) to an instance CRD, and a `Revision` column before `Age` when the RGD uses the
/// default columns.
pub(crate) fn with_observed_revision(crd: &mut Json, schema_spec: &SchemaSpec) {
    let version = &mut crd["spec"]["versions"][0];
    version["schema"]["openAPIV3Schema"]["properties"]["status"]["properties"]["observedRevision"] =
        json!({"type": "integer", "format": "int64"});
    if schema_spec.additional_printer_columns.is_empty()
        && let Some(columns) = version["additionalPrinterColumns"].as_array_mut()
    {
        let age = columns.len().saturating_sub(1);
        columns.insert(
            age,
            json!({
                "name": "Revision",
                "type": "integer",
                "description": "The graph revision the instance is Ready on",
                "jsonPath": ".status.observedRevision",
            }),
        );
    }
}

/// The default printer columns: State, Ready and Age.
pub fn default_printer_columns() -> Vec<PrinterColumn> {
    let column = |name: &str, description: &str, type_: &str, json_path: &str| PrinterColumn {
        name: name.to_string(),
        type_: type_.to_string(),
        json_path: json_path.to_string(),
        description: Some(description.to_string()),
        format: None,
        // Upstream's columns say 0, which Go omits: the CRD as stored has no priority.
        priority: None,
    };
    vec![
        column(
            "State",
            "The state of a ResourceGraphDefinition instance",
            "string",
            ".status.state",
        ),
        column(
            "Ready",
            "Whether a ResourceGraphDefinition instance is ready",
            "string",
            ".status.conditions[?(@.type==\"Ready\")].status",
        ),
        column(
            "Age",
            "Age of the resource",
            "date",
            ".metadata.creationTimestamp",
        ),
    ]
}

/// A printer column as upstream's CRD carries it: Go leaves out a priority of 0 and an empty
/// description or format.
fn as_upstream_writes(column: &PrinterColumn) -> PrinterColumn {
    let non_empty = |text: &Option<String>| text.clone().filter(|text| !text.is_empty());
    PrinterColumn {
        description: non_empty(&column.description),
        format: non_empty(&column.format),
        priority: column.priority.filter(|priority| *priority != 0),
        ..column.clone()
    }
}

/// The root schema of an object with `spec` and `status`.
fn object_schema(spec: &Schema, status: &Schema) -> Schema {
    let mut root = Schema::of_type("object");
    root.properties
        .insert("apiVersion".to_string(), Schema::of_type("string"));
    root.properties
        .insert("kind".to_string(), Schema::of_type("string"));
    root.properties
        .insert("metadata".to_string(), Schema::of_type("object"));
    root.properties.insert("spec".to_string(), spec.clone());
    root.properties.insert("status".to_string(), status.clone());
    root
}

/// `.spec.replicas`-style JSONPath for a dotted field path.
fn json_path(section: &str, path: &str) -> String {
    format!(".{section}.{path}")
}

fn crd_object(
    names: &KindNames,
    schema: &Schema,
    subresources: Json,
    columns: &[PrinterColumn],
    extra: &ExtraNames,
) -> Json {
    let mut names_json = json!({
        "kind": names.kind,
        "listKind": format!("{}List", names.kind),
        "plural": names.plural,
        "singular": names.singular,
    });
    if !extra.short_names.is_empty() {
        names_json["shortNames"] = json!(extra.short_names);
    }
    if !extra.categories.is_empty() {
        names_json["categories"] = json!(extra.categories);
    }
    let mut metadata = json!({"name": names.crd_name()});
    if !extra.labels.is_empty() {
        metadata["labels"] = json!(extra.labels);
    }
    if !extra.annotations.is_empty() {
        metadata["annotations"] = json!(extra.annotations);
    }
    let scope = match names.scope {
        Scope::Namespaced => "Namespaced",
        Scope::Cluster => "Cluster",
    };
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": metadata,
        "spec": {
            "group": names.group,
            "names": names_json,
            "scope": scope,
            "versions": [{
                "name": names.version,
                "served": true,
                "storage": true,
                "schema": {"openAPIV3Schema": schema},
                "subresources": subresources,
                "additionalPrinterColumns": columns,
            }],
        },
    })
}

/// Short names, categories, labels and annotations of a generated CRD.
#[derive(Debug, Clone, Default)]
struct ExtraNames {
    short_names: Vec<String>,
    categories: Vec<String>,
    labels: BTreeMap<String, String>,
    annotations: BTreeMap<String, String>,
}

/// The instance CRD: the spec schema, the status schema (inferred fields plus `state` and
/// `conditions`), the status subresource, the scale subresource when the schema marks scale
/// fields, and the printer columns (the RGD's, else State/Ready/Age).
pub fn instance_crd(
    names: &KindNames,
    schema_spec: &SchemaSpec,
    spec: &Schema,
    status: &Schema,
    scale: &ScaleFields,
) -> Json {
    let mut status = status.clone();
    if status.type_.is_none() {
        status.type_ = Some("object".to_string());
    }
    for (field, property) in kro_status_properties() {
        status.properties.entry(field).or_insert(property);
    }
    let mut subresources = json!({"status": {}});
    if let (Some(spec_path), Some(status_path)) = (&scale.spec_replicas, &scale.status_replicas) {
        let mut scale_json = json!({
            "specReplicasPath": json_path("spec", spec_path),
            "statusReplicasPath": json_path("status", status_path),
        });
        if let Some(selector) = &scale.status_selector {
            scale_json["labelSelectorPath"] = json!(json_path("status", selector));
        }
        subresources["scale"] = scale_json;
    }
    let columns = if schema_spec.additional_printer_columns.is_empty() {
        default_printer_columns()
    } else {
        schema_spec
            .additional_printer_columns
            .iter()
            .map(as_upstream_writes)
            .collect()
    };
    let metadata = schema_spec.metadata.clone().unwrap_or_default();
    let extra = ExtraNames {
        short_names: schema_spec.short_names.clone(),
        categories: schema_spec.categories.clone(),
        labels: metadata.labels,
        annotations: metadata.annotations,
    };
    crd_object(
        names,
        &object_schema(spec, &status),
        subresources,
        &columns,
        &extra,
    )
}

/// The `<Kind>Set` CRD of `spec.scaling`: `spec.replicas`, `spec.rollingUpdate.
/// maxConcurrentUpdated` and `spec.template.spec` (typed with the instance's spec schema);
/// status `replicas`, `readyReplicas`, `updatedReplicas`, `selector` and `conditions`; status
/// and scale subresources.
pub fn set_crd(set_names: &KindNames, instance_spec: &Schema) -> Json {
    let integer = |minimum: i64| {
        let mut schema = Schema::of_type("integer");
        schema.format = Some("int32".to_string());
        schema.minimum = Some(minimum.into());
        schema
    };
    let mut replicas = integer(0);
    replicas.default = Some(json!(1));
    replicas.description = Some("The number of instances to run.".to_string());
    let mut max_concurrent = integer(1);
    max_concurrent.default = Some(json!(1));
    max_concurrent.description =
        Some("How many instances are updated at a time during a rollout.".to_string());
    let mut rolling_update = Schema::of_type("object");
    rolling_update
        .properties
        .insert("maxConcurrentUpdated".to_string(), max_concurrent);
    rolling_update.default = Some(json!({}));
    let mut template = Schema::of_type("object");
    template
        .properties
        .insert("spec".to_string(), instance_spec.clone());
    let mut spec = Schema::of_type("object");
    spec.properties.insert("replicas".to_string(), replicas);
    spec.properties
        .insert("rollingUpdate".to_string(), rolling_update);
    spec.properties.insert("template".to_string(), template);
    spec.required = vec!["template".to_string()];

    let mut status = Schema::of_type("object");
    for field in ["replicas", "readyReplicas", "updatedReplicas"] {
        status.properties.insert(field.to_string(), integer(0));
    }
    status
        .properties
        .insert("selector".to_string(), Schema::of_type("string"));
    let mut observed_generation = Schema::of_type("integer");
    observed_generation.format = Some("int64".to_string());
    status
        .properties
        .insert("observedGeneration".to_string(), observed_generation);
    if let Some(conditions) = kro_status_properties().remove("conditions") {
        status
            .properties
            .insert("conditions".to_string(), conditions);
    }
    let subresources = json!({
        "status": {},
        "scale": {
            "specReplicasPath": ".spec.replicas",
            "statusReplicasPath": ".status.replicas",
            "labelSelectorPath": ".status.selector",
        },
    });
    let column = |name: &str, type_: &str, json_path: &str| PrinterColumn {
        name: name.to_string(),
        type_: type_.to_string(),
        json_path: json_path.to_string(),
        description: None,
        format: None,
        priority: None,
    };
    let columns = [
        column("Desired", "integer", ".spec.replicas"),
        column("Ready", "integer", ".status.readyReplicas"),
        column("Updated", "integer", ".status.updatedReplicas"),
        column("Age", "date", ".metadata.creationTimestamp"),
    ];
    crd_object(
        set_names,
        &object_schema(&spec, &status),
        subresources,
        &columns,
        &ExtraNames::default(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema_spec() -> SchemaSpec {
        serde_json::from_value(
            json!({"apiVersion": "v1alpha1", "kind": "WebApp", "shortNames": ["wa"]}),
        )
        .expect("valid schema spec")
    }

    #[test]
    fn the_instance_crd_has_upstreams_names_columns_and_status() {
        let names = KindNames::new("kro.run", "v1alpha1", "WebApp", Scope::Namespaced);
        let crd = instance_crd(
            &names,
            &schema_spec(),
            &Schema::of_type("object"),
            &Schema::default(),
            &ScaleFields::default(),
        );
        assert_eq!(crd["metadata"]["name"], "webapps.kro.run");
        assert_eq!(
            crd["spec"]["names"],
            json!({"kind": "WebApp", "listKind": "WebAppList", "plural": "webapps", "singular": "webapp", "shortNames": ["wa"]})
        );
        let version = &crd["spec"]["versions"][0];
        assert_eq!(version["subresources"], json!({"status": {}}));
        let columns: Vec<&str> = version["additionalPrinterColumns"]
            .as_array()
            .expect("columns")
            .iter()
            .filter_map(|column| column["name"].as_str())
            .collect();
        assert_eq!(columns, ["State", "Ready", "Age"]);
        let status = &version["schema"]["openAPIV3Schema"]["properties"]["status"];
        assert_eq!(status["properties"]["state"], json!({"type": "string"}));
        assert_eq!(status["properties"]["conditions"]["type"], "array");
    }

    #[test]
    fn scale_fields_become_the_scale_subresource() {
        let names = KindNames::new("example.org", "v1", "MyObject", Scope::Namespaced);
        let scale = ScaleFields {
            spec_replicas: Some("desiredReplicas".into()),
            status_replicas: Some("replicas".into()),
            status_selector: Some("podSelector".into()),
        };
        let crd = instance_crd(
            &names,
            &schema_spec(),
            &Schema::of_type("object"),
            &Schema::of_type("object"),
            &scale,
        );
        assert_eq!(
            crd["spec"]["versions"][0]["subresources"]["scale"],
            json!({"specReplicasPath": ".spec.desiredReplicas", "statusReplicasPath": ".status.replicas",
                   "labelSelectorPath": ".status.podSelector"})
        );
    }

    #[test]
    fn the_set_crd_templates_the_instance_spec() {
        let names = KindNames::new("example.org", "v1", "MyObjectSet", Scope::Namespaced);
        let mut instance_spec = Schema::of_type("object");
        instance_spec
            .properties
            .insert("desiredReplicas".into(), Schema::of_type("integer"));
        let crd = set_crd(&names, &instance_spec);
        assert_eq!(crd["metadata"]["name"], "myobjectsets.example.org");
        let spec = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"];
        assert_eq!(
            spec["properties"]["template"]["properties"]["spec"]["properties"]["desiredReplicas"]["type"],
            "integer"
        );
        assert_eq!(
            spec["properties"]["rollingUpdate"]["properties"]["maxConcurrentUpdated"]["default"],
            1
        );
        assert_eq!(
            crd["spec"]["versions"][0]["subresources"]["scale"]["labelSelectorPath"],
            ".status.selector"
        );
    }
}
