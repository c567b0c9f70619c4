//! The CustomResourceDefinition of ResourceGraphDefinitions themselves (`kro.run/v1alpha1`),
//! which the controller installs when the API server does not serve it yet.
//!
//! Its schema is built from the API types: each type of [`crate::api`] says, beside its
//! fields, what its schema is ([`CrdSchema`], with the builders of [`crate::crd_schema`]), with the admission rules upstream kro v0.9.4's
//! CRD has for the fields both share (patterns, enums, list types, defaults, sizes and
//! `x-kubernetes-validations`), so an RGD the API server refuses under upstream's CRD it
//! refuses under this one, for the same field with the same message. Where a rule of upstream's
//! would refuse an addition of this project (a `data` node has neither `template` nor
//! `externalRef`; `forEach` may be one `${...}` string), the rule admits it. The free-form parts
//! (`schema.spec`, templates, data) stay open; the controller checks everything else when it
//! compiles the RGD and reports it in `GraphAccepted`. Tests hold the CRD against the API types
//! in both directions and against upstream's CRD; `crates/kro/tests/rgd_admission.rs` holds
//! its refusals to upstream's on kube-apiserver and on the embedded server.

use serde_json::{Value as Json, json};

use crate::api::ResourceGraphDefinition;
use crate::crd_schema::CrdSchema;
use crate::metadata::{GROUP, RGD_CRD_NAME, RGD_KIND, RGD_PLURAL, VERSION};

/// The ResourceGraphDefinition CRD.
pub fn resource_graph_definition_crd() -> Json {
    let schema =
        serde_json::to_value(ResourceGraphDefinition::crd_schema()).expect("a schema serializes");
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": RGD_CRD_NAME},
        "spec": {
            "group": GROUP,
            "scope": "Cluster",
            "names": {
                "kind": RGD_KIND,
                "listKind": format!("{RGD_KIND}List"),
                "plural": RGD_PLURAL,
                "singular": RGD_KIND.to_lowercase(),
                "shortNames": ["rgd"],
                "categories": ["kro"],
            },
            "versions": [{
                "name": VERSION,
                "served": true,
                "storage": true,
                "subresources": {"status": {}},
                "additionalPrinterColumns": [
                    {"name": "APIVERSION", "type": "string", "jsonPath": ".spec.schema.apiVersion"},
                    {"name": "KIND", "type": "string", "jsonPath": ".spec.schema.kind"},
                    {"name": "STATE", "type": "string", "jsonPath": ".status.state"},
                    {"name": "AGE", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
                ],
                "schema": {"openAPIV3Schema": schema},
            }],
        },
    })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::path::Path;

    use super::*;
    use crate::api::{
        CrdMetadata, ExternalRef, ExternalRefMetadata, ForEach, ObjectMeta, PrinterColumn,
        ResourceGraphDefinition, ResourceSpec, RgdSpec, ScalingMethod, ScalingSpec, SchemaSpec,
        Scope,
    };
    use crate::metadata::API_VERSION;

    /// An RGD with every field of the API set. Struct literals without `..`, so a field added
    /// to the API fails to compile here until it is added, and then must be in the CRD.
    fn every_field() -> Json {
        let one = |key: &str, value: &str| BTreeMap::from([(key.to_owned(), value.to_owned())]);
        let resource = |id: &str, for_each: ForEach| ResourceSpec {
            id: id.to_owned(),
            template: Some(json!({"apiVersion": "v1", "kind": "ConfigMap"})),
            external_ref: Some(ExternalRef {
                api_version: "v1".to_owned(),
                kind: "ConfigMap".to_owned(),
                metadata: ExternalRefMetadata {
                    name: Some("a".to_owned()),
                    namespace: Some("b".to_owned()),
                    selector: Some(json!({"matchLabels": {"a": "b"}})),
                },
            }),
            data: Some(json!({"a": 1})),
            ready_when: vec!["${true}".to_owned()],
            include_when: vec!["${true}".to_owned()],
            for_each: Some(for_each),
            propagate_when: vec!["${true}".to_owned()],
            lifecycle: Some(json!("${policy().withRetain()}")),
        };
        let rgd = ResourceGraphDefinition {
            api_version: API_VERSION.to_owned(),
            kind: RGD_KIND.to_owned(),
            metadata: ObjectMeta {
                name: "a".to_owned(),
                uid: Some("u".to_owned()),
                labels: one("a", "b"),
                annotations: one("a", "b"),
                generation: Some(1),
            },
            spec: RgdSpec {
                schema: SchemaSpec {
                    api_version: "v1alpha1".to_owned(),
                    kind: "App".to_owned(),
                    group: Some("example.com".to_owned()),
                    scope: Some(Scope::Cluster),
                    spec: Some(json!({"a": "string"})),
                    types: Some(json!({"T": {"a": "string"}})),
                    status: Some(json!({"a": "${a.b}"})),
                    additional_printer_columns: vec![PrinterColumn {
                        name: "A".to_owned(),
                        type_: "string".to_owned(),
                        json_path: ".spec.a".to_owned(),
                        description: Some("a".to_owned()),
                        format: Some("a".to_owned()),
                        priority: Some(1),
                    }],
                    short_names: vec!["a".to_owned()],
                    categories: vec!["a".to_owned()],
                    metadata: Some(CrdMetadata {
                        labels: one("a", "b"),
                        annotations: one("a", "b"),
                    }),
                },
                resources: vec![
                    resource("a", ForEach::Expression("${[1]}".to_owned())),
                    resource("b", ForEach::Dimensions(vec![one("x", "${[1]}")])),
                ],
                scaling: Some(ScalingSpec {
                    kind: "AppSet".to_owned(),
                    method: ScalingMethod::Replicas,
                }),
                propagate_when: vec!["${linearlyReady(app, apps, 2)}".to_owned()],
            },
            status: Some(json!({"state": "Active"})),
        };
        serde_json::to_value(rgd).expect("API types serialize")
    }

    fn root_schema(crd: &Json) -> &Json {
        &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    }

    fn is_open(schema: &Json) -> bool {
        schema["x-kubernetes-preserve-unknown-fields"] == json!(true)
    }

    /// The paths of `value` that `schema` has no property for (open objects take anything).
    fn unknown_paths(value: &Json, schema: &Json, path: &str, found: &mut Vec<String>) {
        if is_open(schema) {
            return;
        }
        match value {
            // The API server owns an object's metadata; the CRD leaves it to it.
            Json::Object(fields) if path != ".metadata" => {
                for (key, field) in fields {
                    let child = format!("{path}.{key}");
                    // A map's keys are its values' names, not properties.
                    match schema["properties"]
                        .get(key)
                        .or_else(|| schema.get("additionalProperties"))
                    {
                        Some(property) => unknown_paths(field, property, &child, found),
                        None => found.push(child),
                    }
                }
            }
            Json::Array(items) => {
                for item in items {
                    unknown_paths(item, &schema["items"], &format!("{path}[]"), found);
                }
            }
            _ => {}
        }
    }

    /// The paths of `schema`'s properties that `value` does not set.
    fn unset_properties(value: &Json, schema: &Json, path: &str, found: &mut Vec<String>) {
        if let Some(properties) = schema["properties"].as_object() {
            for (key, property) in properties {
                let child = format!("{path}.{key}");
                match value.get(key) {
                    Some(field) => unset_properties(field, property, &child, found),
                    None => found.push(child),
                }
            }
        }
        if let (Some(items), Some(first)) = (schema.get("items"), value.get(0)) {
            unset_properties(first, items, &format!("{path}[]"), found);
        }
    }

    #[test]
    fn every_field_of_the_api_is_in_the_crd() {
        let crd = resource_graph_definition_crd();
        let mut unknown = Vec::new();
        unknown_paths(&every_field(), root_schema(&crd), "", &mut unknown);
        assert_eq!(unknown, Vec::<String>::new());
    }

    #[test]
    fn every_property_of_the_crd_is_a_field_of_the_api() {
        let crd = resource_graph_definition_crd();
        let mut unset = Vec::new();
        unset_properties(&every_field(), root_schema(&crd), "", &mut unset);
        assert_eq!(unset, Vec::<String>::new());
    }

    #[test]
    fn every_field_of_upstreams_crd_is_accepted() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../testdata/kro-upstream/crds/kro.run_resourcegraphdefinitions.yaml");
        let text = std::fs::read_to_string(&path).unwrap_or_else(|error| {
            panic!("{}: {error} (vendored under testdata/)", path.display())
        });
        let documents = crate::parse_yaml_documents(&text).expect("upstream's CRD is YAML");
        let upstream = &documents[0].value;
        assert_eq!(upstream["metadata"]["name"], RGD_CRD_NAME);
        // The same names; ours add the category `kro` (`kubectl get kro` lists RGDs).
        let mut names = resource_graph_definition_crd()["spec"]["names"].clone();
        if let Some(names) = names.as_object_mut() {
            names.remove("categories");
        }
        assert_eq!(upstream["spec"]["names"], names);
        // Every property upstream declares, as a value: our CRD must have a place for it.
        fn example(schema: &Json) -> Json {
            if let Some(properties) = schema["properties"].as_object() {
                return Json::Object(
                    properties
                        .iter()
                        .map(|(key, property)| (key.clone(), example(property)))
                        .collect(),
                );
            }
            match schema["type"].as_str() {
                Some("array") => json!([example(&schema["items"])]),
                Some("object") => json!({}),
                _ => json!("x"),
            }
        }
        let upstream_spec = example(&root_schema(upstream)["properties"]["spec"]);
        let crd = resource_graph_definition_crd();
        let mut unknown = Vec::new();
        unknown_paths(
            &upstream_spec,
            &root_schema(&crd)["properties"]["spec"],
            ".spec",
            &mut unknown,
        );
        assert_eq!(unknown, Vec::<String>::new());
    }

    /// Where and why the CRD's schema refuses an RGD with these resources.
    fn refusals(resources: Json) -> Vec<(String, String)> {
        let rgd = json!({
            "apiVersion": API_VERSION,
            "kind": RGD_KIND,
            "metadata": {"name": "a"},
            "spec": {
                "schema": {"apiVersion": "v1alpha1", "kind": "App", "scope": "Namespaced"},
                "resources": resources,
            },
        });
        kro_schema::validate(&ResourceGraphDefinition::crd_schema(), &rgd, None)
            .into_iter()
            .map(|error| (error.path.to_string(), error.detail))
            .collect()
    }

    #[test]
    fn a_node_is_a_template_an_external_ref_or_data() {
        let template = json!({"apiVersion": "v1", "kind": "ConfigMap"});
        let external = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}});
        let valid = json!([
            {"id": "a", "template": template},
            {"id": "b", "externalRef": external},
            {"id": "c", "data": {"a": "${a.data}"}},
            {"id": "d", "data": "${a.data}"},
        ]);
        assert_eq!(refusals(valid), []);
        let upstream = "exactly one of template or externalRef must be provided";
        let combined = "data cannot be combined with template or externalRef";
        let invalid = json!([
            {"id": "a", "template": template, "externalRef": external},
            {"id": "b"},
            {"id": "c", "data": 1, "template": template},
        ]);
        assert_eq!(
            refusals(invalid),
            [
                ("spec.resources[0]".to_owned(), upstream.to_owned()),
                ("spec.resources[1]".to_owned(), upstream.to_owned()),
                ("spec.resources[2]".to_owned(), combined.to_owned()),
            ]
        );
    }
}
