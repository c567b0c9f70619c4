//! OpenAPI v3 documents, one per group-version, as kube-apiserver publishes them: the paths of
//! every resource (each operation tagged with its group-version-kind, and the write operations
//! advertising `fieldValidation`, so kubectl lets the server validate), and the schemas of the
//! group-version's kinds with every definition they reference.

use std::collections::{BTreeMap, BTreeSet};

use kro_schema::{Catalog, Gvk};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha512};

use crate::registry::{Registry, ResourceType};

/// The patch media types of built-in resources.
pub const BUILT_IN_PATCH_TYPES: &[&str] = &[
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
];

/// The patch media types of custom resources (no strategic merge patch).
pub const CUSTOM_PATCH_TYPES: &[&str] = &[
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/apply-patch+yaml",
];

/// The key of a group-version in the `/openapi/v3` index: `api/v1` or `apis/apps/v1`.
pub fn index_key(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

fn query_parameter(name: &str, kind: &str, description: &str) -> Value {
    json!({
        "name": name,
        "in": "query",
        "description": description,
        "schema": { "type": kind, "uniqueItems": true },
    })
}

fn write_parameters(patch: bool) -> Vec<Value> {
    let mut parameters = vec![
        query_parameter(
            "dryRun",
            "string",
            "When present, indicates that modifications should not be persisted. Valid values are: - All: all dry run stages will be processed",
        ),
        query_parameter(
            "fieldManager",
            "string",
            "fieldManager is a name associated with the actor or entity that is making these changes. This field is required for apply requests (application/apply-patch) but optional for non-apply patch types.",
        ),
        query_parameter(
            "fieldValidation",
            "string",
            "fieldValidation instructs the server on how to handle objects in the request (POST/PUT/PATCH) containing unknown or duplicate fields. Valid values are: Ignore, Warn (the default) and Strict.",
        ),
    ];
    if patch {
        parameters.push(query_parameter(
            "force",
            "boolean",
            "Force is going to \"force\" Apply requests. It means user will re-acquire conflicting fields owned by other people. Force flag must be unset for non-apply patch requests.",
        ));
    }
    parameters
}

fn schema_ref(name: &str) -> Value {
    json!({ "$ref": format!("#/components/schemas/{name}") })
}

fn json_content(schema: &Value) -> Value {
    json!({
        "application/json": { "schema": schema },
        "application/yaml": { "schema": schema },
    })
}

fn operation(
    resource: &ResourceType,
    action: &str,
    description: String,
    response: &Value,
    parameters: Vec<Value>,
) -> Value {
    json!({
        "description": description,
        "operationId": format!("{action}{}", resource.gvk.kind()),
        "parameters": parameters,
        "responses": {
            "200": { "description": "OK", "content": json_content(response) },
            "401": { "description": "Unauthorized" },
        },
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": {
            "group": resource.group(),
            "version": resource.gvk.version(),
            "kind": resource.gvk.kind(),
        },
    })
}

fn resource_paths(
    resource: &ResourceType,
    definition: &str,
    patch_types: &[&str],
    paths: &mut Map<String, Value>,
) {
    let base = resource.group_version_path();
    let collection = if resource.namespaced {
        format!("{base}/namespaces/{{namespace}}/{}", resource.plural)
    } else {
        format!("{base}/{}", resource.plural)
    };
    let kind = resource.gvk.kind();
    let object = schema_ref(definition);
    let list = schema_ref(&format!("{definition}List"));
    let status = schema_ref("io.k8s.apimachinery.pkg.apis.meta.v1.Status");
    let mut collection_item = Map::new();
    if resource.supports("list") {
        collection_item.insert(
            "get".to_owned(),
            operation(
                resource,
                "list",
                format!("list or watch objects of kind {kind}"),
                &list,
                Vec::new(),
            ),
        );
    }
    if resource.supports("create") {
        let mut post = operation(
            resource,
            "post",
            format!("create a {kind}"),
            &object,
            write_parameters(false),
        );
        post["requestBody"] = json!({ "content": json_content(&object), "required": true });
        collection_item.insert("post".to_owned(), post);
    }
    if resource.supports("deletecollection") {
        collection_item.insert(
            "delete".to_owned(),
            operation(
                resource,
                "deletecollection",
                format!("delete collection of {kind}"),
                &status,
                Vec::new(),
            ),
        );
    }
    paths.insert(collection.clone(), Value::Object(collection_item));

    let mut item = Map::new();
    if resource.supports("get") {
        item.insert(
            "get".to_owned(),
            operation(
                resource,
                "get",
                format!("read the specified {kind}"),
                &object,
                Vec::new(),
            ),
        );
    }
    if resource.supports("update") {
        let mut put = operation(
            resource,
            "put",
            format!("replace the specified {kind}"),
            &object,
            write_parameters(false),
        );
        put["requestBody"] = json!({ "content": json_content(&object), "required": true });
        item.insert("put".to_owned(), put);
    }
    if resource.supports("patch") {
        let mut patch = operation(
            resource,
            "patch",
            format!("partially update the specified {kind}"),
            &object,
            write_parameters(true),
        );
        let content: Map<String, Value> = patch_types
            .iter()
            .map(|media| {
                (
                    (*media).to_owned(),
                    json!({ "schema": schema_ref("io.k8s.apimachinery.pkg.apis.meta.v1.Patch") }),
                )
            })
            .collect();
        patch["requestBody"] = json!({ "content": content, "required": true });
        item.insert("patch".to_owned(), patch);
    }
    if resource.supports("delete") {
        item.insert(
            "delete".to_owned(),
            operation(
                resource,
                "delete",
                format!("delete a {kind}"),
                &status,
                write_parameters(false),
            ),
        );
    }
    paths.insert(format!("{collection}/{{name}}"), Value::Object(item));
}

/// Rewrites the catalog's `#/$defs/<name>` references into `#/components/schemas/<name>` and
/// collects the names referenced.
fn rewrite_refs(value: &mut Value, referenced: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(reference)) = map.get_mut("$ref")
                && let Some(name) = reference.strip_prefix("#/$defs/")
            {
                referenced.push(name.to_owned());
                *reference = format!("#/components/schemas/{name}");
            }
            for child in map.values_mut() {
                rewrite_refs(child, referenced);
            }
        }
        Value::Array(items) => {
            for item in items {
                rewrite_refs(item, referenced);
            }
        }
        _ => {}
    }
}

/// Definitions every document carries, as kube-apiserver's do.
const COMMON_DEFINITIONS: &[&str] = &[
    "io.k8s.apimachinery.pkg.apis.meta.v1.Status",
    "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions",
    "io.k8s.apimachinery.pkg.apis.meta.v1.Patch",
    "io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent",
];

/// Builds the schemas of `roots` and everything they reference, with `x-kubernetes-group-
/// version-kind` on the kinds' definitions.
fn built_in_schemas(catalog: &Catalog, roots: &[(String, Option<Gvk>)]) -> Map<String, Value> {
    let mut kinds: BTreeMap<String, Vec<&Gvk>> = BTreeMap::new();
    for (name, gvk) in roots {
        if let Some(gvk) = gvk {
            kinds.entry(name.clone()).or_default().push(gvk);
        }
    }
    let mut pending: Vec<String> = roots.iter().map(|(name, _)| name.clone()).collect();
    pending.extend(COMMON_DEFINITIONS.iter().map(|name| (*name).to_owned()));
    let mut done = BTreeSet::new();
    let mut schemas = Map::new();
    while let Some(name) = pending.pop() {
        if !done.insert(name.clone()) {
            continue;
        }
        let Some(schema) = catalog.definition(&name) else {
            continue;
        };
        let mut value = serde_json::to_value(schema).unwrap_or(Value::Null);
        rewrite_refs(&mut value, &mut pending);
        if let (Some(gvks), Value::Object(map)) = (kinds.get(&name), &mut value) {
            let tags: Vec<Value> = gvks
                .iter()
                .map(|gvk| json!({"group": gvk.group(), "version": gvk.version(), "kind": gvk.kind()}))
                .collect();
            map.insert(
                "x-kubernetes-group-version-kind".to_owned(),
                Value::Array(tags),
            );
        }
        schemas.insert(name, value);
    }
    schemas
}

/// The definition name of a custom kind: the group reversed, then version and kind
/// (`com.example.v1.Widget`), as kube-apiserver names them.
pub fn custom_definition_name(gvk: &Gvk) -> String {
    let mut parts: Vec<&str> = gvk.group().split('.').collect();
    parts.reverse();
    format!("{}.{}.{}", parts.join("."), gvk.version(), gvk.kind())
}

const API_VERSION_DESCRIPTION: &str = "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources";
const KIND_DESCRIPTION: &str = "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";

fn gvk_tag(gvk: &Gvk) -> Value {
    json!([{"group": gvk.group(), "version": gvk.version(), "kind": gvk.kind()}])
}

/// The schemas of a custom kind and its list, from the definition's schema.
fn custom_schemas(resource: &ResourceType, schemas: &mut Map<String, Value>) -> String {
    let name = custom_definition_name(&resource.gvk);
    let mut schema = resource
        .custom
        .as_ref()
        .map(|custom| serde_json::to_value(&custom.schema).unwrap_or(Value::Null))
        .unwrap_or_else(|| json!({"type": "object"}));
    if let Value::Object(map) = &mut schema {
        let properties = map.entry("properties").or_insert_with(|| json!({}));
        if let Value::Object(properties) = properties {
            properties.insert(
                "apiVersion".to_owned(),
                json!({"description": API_VERSION_DESCRIPTION, "type": "string"}),
            );
            properties.insert(
                "kind".to_owned(),
                json!({"description": KIND_DESCRIPTION, "type": "string"}),
            );
            properties.insert(
                "metadata".to_owned(),
                json!({
                    "description": "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata",
                    "allOf": [schema_ref("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")],
                }),
            );
        }
        map.insert(
            "x-kubernetes-group-version-kind".to_owned(),
            gvk_tag(&resource.gvk),
        );
    }
    schemas.insert(name.clone(), schema);
    let list_gvk = Gvk::new(
        resource.group(),
        resource.gvk.version(),
        &resource.list_kind(),
    );
    schemas.insert(
        format!("{name}List"),
        json!({
            "description": format!("{} is a list of {}", resource.list_kind(), resource.gvk.kind()),
            "type": "object",
            "required": ["items"],
            "properties": {
                "apiVersion": {"description": API_VERSION_DESCRIPTION, "type": "string"},
                "kind": {"description": KIND_DESCRIPTION, "type": "string"},
                "items": {"type": "array", "items": schema_ref(&name)},
                "metadata": {"allOf": [schema_ref("io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta")]},
            },
            "x-kubernetes-group-version-kind": gvk_tag(&list_gvk),
        }),
    );
    name
}

/// The OpenAPI v3 document of one group-version: built-in kinds from the catalog, custom
/// kinds from their definitions.
pub fn document(registry: &Registry, group: &str, version: &str) -> Option<Value> {
    let api_group = registry.group(group)?;
    let (_, resources) = api_group
        .versions
        .iter()
        .find(|(known, _)| known == version)?;
    let catalog = Catalog::kubernetes();
    let mut paths = Map::new();
    let mut roots = Vec::new();
    let mut custom = Map::new();
    let mut title = "Kubernetes";
    for resource in resources {
        if resource.custom.is_some() {
            let definition = custom_schemas(resource, &mut custom);
            resource_paths(resource, &definition, CUSTOM_PATCH_TYPES, &mut paths);
            roots.push((
                "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta".to_owned(),
                None,
            ));
            roots.push((
                "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta".to_owned(),
                None,
            ));
            if resource.subresource("scale").is_some() {
                roots.push(("io.k8s.api.autoscaling.v1.Scale".to_owned(), None));
            }
            title = "Kubernetes CRD Swagger";
            continue;
        }
        let Some(kind) = catalog.resolve(&resource.gvk).found() else {
            continue;
        };
        let definition = kind.definition_name().to_owned();
        resource_paths(resource, &definition, BUILT_IN_PATCH_TYPES, &mut paths);
        let list_gvk = Gvk::new(group, version, &resource.list_kind());
        if let Some(list) = catalog.resolve(&list_gvk).found() {
            roots.push((list.definition_name().to_owned(), Some(list_gvk)));
        }
        roots.push((definition, Some(resource.gvk.clone())));
    }
    let mut schemas = built_in_schemas(catalog, &roots);
    schemas.extend(custom);
    Some(json!({
        "openapi": "3.0.0",
        "info": { "title": title, "version": "v1.33.0" },
        "paths": paths,
        "components": { "schemas": schemas },
    }))
}

/// The hash a document is addressed by (`?hash=` in the index), changing with its content.
pub fn document_hash(document: &Value) -> String {
    let bytes = serde_json::to_vec(document).unwrap_or_default();
    let digest = Sha512::digest(&bytes);
    digest.iter().map(|byte| format!("{byte:02X}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_apps_document_advertises_field_validation_and_carries_schemas() {
        let registry = Registry::built_in().expect("registry");
        let document = document(&registry, "apps", "v1").expect("apps/v1");
        let patch =
            &document["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"];
        assert_eq!(
            patch["x-kubernetes-group-version-kind"]["kind"],
            "Deployment"
        );
        let parameters = patch["parameters"].as_array().expect("parameters");
        assert!(parameters.iter().any(|p| p["name"] == "fieldValidation"));
        assert!(
            patch["requestBody"]["content"]
                .get("application/strategic-merge-patch+json")
                .is_some()
        );
        let schemas = &document["components"]["schemas"];
        let deployment = &schemas["io.k8s.api.apps.v1.Deployment"];
        assert_eq!(
            deployment["x-kubernetes-group-version-kind"][0]["kind"],
            "Deployment"
        );
        // Every reference resolves within the document.
        let mut referenced = Vec::new();
        let mut copy = schemas.clone();
        rewrite_refs(&mut copy, &mut referenced);
        let text = serde_json::to_string(schemas).expect("json");
        for reference in text.split("#/components/schemas/").skip(1) {
            let name = reference.split('"').next().unwrap_or_default();
            assert!(
                schemas.get(name).is_some(),
                "{name} is referenced but missing"
            );
        }
        assert!(schemas.get("io.k8s.api.core.v1.PodSpec").is_some());
        assert_eq!(document_hash(&document).len(), 128);
    }

    #[test]
    fn the_core_document_has_cluster_and_namespaced_paths() {
        let registry = Registry::built_in().expect("registry");
        let document = document(&registry, "", "v1").expect("v1");
        let paths = document["paths"].as_object().expect("paths");
        assert!(paths.contains_key("/api/v1/namespaces/{name}"));
        assert!(paths.contains_key("/api/v1/namespaces/{namespace}/configmaps/{name}"));
        assert!(super::document(&registry, "nope", "v1").is_none());
    }
}
