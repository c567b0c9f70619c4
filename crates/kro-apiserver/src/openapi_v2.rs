//! The OpenAPI v2 (Swagger 2.0) document at `/openapi/v2`, in JSON and in the protobuf form
//! client-go asks for.
//!
//! kubectl 1.27 and 1.28 read only this document (as protobuf): to decide whether the server
//! validates fields (`fieldValidation` on each kind's PATCH operation), to find a kind's model
//! (`x-kubernetes-group-version-kind` on definitions) and to compute strategic merge patches
//! (`x-kubernetes-patch-merge-key` and `-strategy`). It is built from the per-group-version
//! OpenAPI v3 documents, so both always describe the same resources.
//!
//! The conversion keeps what kube-openapi's v2 model parser accepts: one `type` per schema,
//! plain `$ref`s (v3's `allOf: [$ref]` wrappers unwrapped), `items` on every array, and no
//! `oneOf`/`anyOf`/`not`/`nullable`, which v2 does not have.

mod protobuf;

use serde_json::{Map, Value, json};

pub use protobuf::encode_document;

const V3_PREFIX: &str = "#/components/schemas/";
const V2_PREFIX: &str = "#/definitions/";

/// Builds the v2 document from the v3 documents of every served group-version.
pub fn document<'a>(v3_documents: impl IntoIterator<Item = &'a Value>) -> Value {
    let mut paths = Map::new();
    let mut definitions = Map::new();
    for v3 in v3_documents {
        if let Some(v3_paths) = v3["paths"].as_object() {
            for (path, item) in v3_paths {
                paths.insert(path.clone(), path_item(path, item));
            }
        }
        if let Some(schemas) = v3["components"]["schemas"].as_object() {
            for (name, schema) in schemas {
                definitions
                    .entry(name.clone())
                    .or_insert_with(|| schema_v2(schema));
            }
        }
    }
    json!({
        "swagger": "2.0",
        "info": { "title": "Kubernetes", "version": "1.33" },
        "paths": paths,
        "definitions": definitions,
    })
}

/// A v3 path item as v2: path parameters declared, operations converted.
fn path_item(path: &str, item: &Value) -> Value {
    let mut converted = Map::new();
    let mut parameters = Vec::new();
    for name in ["name", "namespace"] {
        if path.contains(&format!("{{{name}}}")) {
            parameters.push(json!({
                "name": name,
                "in": "path",
                "description": format!("{name} of the {}", if name == "name" { "object" } else { "namespace" }),
                "required": true,
                "type": "string",
                "uniqueItems": true,
            }));
        }
    }
    if !parameters.is_empty() {
        converted.insert("parameters".to_owned(), Value::Array(parameters));
    }
    if let Some(operations) = item.as_object() {
        for (method, operation_v3) in operations {
            if matches!(
                method.as_str(),
                "get" | "put" | "post" | "delete" | "patch" | "head" | "options"
            ) {
                converted.insert(method.clone(), operation(operation_v3));
            }
        }
    }
    Value::Object(converted)
}

/// A v3 operation as v2: query parameters flattened, the request body a `body` parameter,
/// media types in `consumes`/`produces`.
fn operation(v3: &Value) -> Value {
    let mut converted = Map::new();
    for key in ["description", "operationId", "tags"] {
        if let Some(value) = v3.get(key) {
            converted.insert(key.to_owned(), value.clone());
        }
    }
    let mut parameters: Vec<Value> = v3["parameters"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|parameter| {
            let mut flat = Map::new();
            for key in ["name", "in", "description", "required"] {
                if let Some(value) = parameter.get(key) {
                    flat.insert(key.to_owned(), value.clone());
                }
            }
            if let Some(schema) = parameter["schema"].as_object() {
                for (key, value) in schema {
                    flat.insert(key.clone(), value.clone());
                }
            }
            Value::Object(flat)
        })
        .collect();
    if let Some(content) = v3["requestBody"]["content"].as_object() {
        converted.insert(
            "consumes".to_owned(),
            Value::Array(content.keys().cloned().map(Value::String).collect()),
        );
        if let Some(schema) = content.values().next().map(|media| &media["schema"]) {
            parameters.insert(
                0,
                json!({"name": "body", "in": "body", "required": true, "schema": schema_v2(schema)}),
            );
        }
    }
    converted.insert("parameters".to_owned(), Value::Array(parameters));
    converted.insert(
        "produces".to_owned(),
        json!([
            "application/json",
            "application/yaml",
            "application/vnd.kubernetes.protobuf"
        ]),
    );
    converted.insert("schemes".to_owned(), json!(["https"]));
    let mut responses = Map::new();
    if let Some(v3_responses) = v3["responses"].as_object() {
        for (code, response) in v3_responses {
            let mut converted_response = Map::new();
            converted_response.insert(
                "description".to_owned(),
                response.get("description").cloned().unwrap_or(json!("")),
            );
            if let Some(schema) = response["content"]
                .as_object()
                .and_then(|content| content.values().next())
                .map(|media| &media["schema"])
            {
                converted_response.insert("schema".to_owned(), schema_v2(schema));
            }
            responses.insert(code.clone(), Value::Object(converted_response));
        }
    }
    converted.insert("responses".to_owned(), Value::Object(responses));
    if let Some(extensions) = v3.as_object() {
        for (key, value) in extensions {
            if key.starts_with("x-") {
                converted.insert(key.clone(), value.clone());
            }
        }
    }
    Value::Object(converted)
}

/// A v3 schema as v2.
fn schema_v2(v3: &Value) -> Value {
    let Some(map) = v3.as_object() else {
        return v3.clone();
    };
    let mut converted = Map::new();
    // `allOf: [{$ref}]` (how v3 gives a reference a description or default) is a plain
    // reference in v2, where siblings of `$ref` other than the description are not kept.
    if let Some([single]) = map
        .get("allOf")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        && let Some(reference) = single.get("$ref").and_then(Value::as_str)
    {
        converted.insert("$ref".to_owned(), json!(rewrite_ref(reference)));
        if let Some(description) = map.get("description") {
            converted.insert("description".to_owned(), description.clone());
        }
        return Value::Object(converted);
    }
    let int_or_string = map.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true))
        || map.get("format").and_then(Value::as_str) == Some("int-or-string");
    for (key, value) in map {
        match key.as_str() {
            "nullable" | "oneOf" | "anyOf" | "not" => {}
            "$ref" => {
                converted.insert(
                    key.clone(),
                    json!(rewrite_ref(value.as_str().unwrap_or_default())),
                );
            }
            "type" => {
                // One type per schema; a list (`[string, null]`) keeps its first non-null.
                let single = match value {
                    Value::Array(types) => types.iter().find(|kind| *kind != "null").cloned(),
                    other => Some(other.clone()),
                };
                if let Some(single) = single {
                    converted.insert(key.clone(), single);
                }
            }
            "properties" | "patternProperties" | "definitions" => {
                let children: Map<String, Value> = value
                    .as_object()
                    .into_iter()
                    .flatten()
                    .map(|(name, child)| (name.clone(), schema_v2(child)))
                    .collect();
                converted.insert(key.clone(), Value::Object(children));
            }
            "items" | "additionalProperties" if value.is_object() => {
                converted.insert(key.clone(), schema_v2(value));
            }
            "allOf" => {
                let parts: Vec<Value> = value
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(schema_v2)
                    .collect();
                converted.insert(key.clone(), Value::Array(parts));
            }
            _ => {
                converted.insert(key.clone(), value.clone());
            }
        }
    }
    if int_or_string && !converted.contains_key("type") {
        // As kube-apiserver's v2 document gives IntOrString.
        converted.insert("type".to_owned(), json!("string"));
        converted.insert("format".to_owned(), json!("int-or-string"));
    }
    if converted.get("type") == Some(&json!("array")) && !converted.contains_key("items") {
        // kube-openapi refuses an array without `items`; an empty schema admits anything.
        converted.insert("items".to_owned(), json!({}));
    }
    Value::Object(converted)
}

fn rewrite_ref(reference: &str) -> String {
    match reference.strip_prefix(V3_PREFIX) {
        Some(name) => format!("{V2_PREFIX}{name}"),
        None => reference.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Registry;

    fn built_in_document() -> Value {
        let registry = Registry::built_in().expect("registry");
        let documents: Vec<Value> = registry
            .group_versions()
            .iter()
            .filter_map(|(group, version)| crate::openapi::document(&registry, group, version))
            .collect();
        document(&documents)
    }

    /// Every schema kube-openapi's v2 parser would reject, with its path.
    fn unparseable(schema: &Value, path: &str, definitions: &Map<String, Value>) -> Vec<String> {
        let mut problems = Vec::new();
        if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
            let name = reference.strip_prefix(V2_PREFIX).unwrap_or(reference);
            if !definitions.contains_key(name) {
                problems.push(format!("{path}: unknown model {reference}"));
            }
            return problems;
        }
        match schema.get("type") {
            None => {}
            Some(Value::String(kind)) => match kind.as_str() {
                "object" | "string" | "integer" | "number" | "boolean" => {}
                "array" if schema.get("items").is_some_and(Value::is_object) => {}
                other => problems.push(format!("{path}: type {other}")),
            },
            Some(other) => problems.push(format!("{path}: type {other}")),
        }
        for keyword in ["oneOf", "anyOf", "nullable", "allOf"] {
            if schema.get(keyword).is_some() && keyword != "allOf" {
                problems.push(format!("{path}: {keyword}"));
            }
        }
        if let Some(properties) = schema["properties"].as_object() {
            for (name, child) in properties {
                problems.extend(unparseable(child, &format!("{path}.{name}"), definitions));
            }
        }
        for keyword in ["items", "additionalProperties"] {
            if let Some(child) = schema.get(keyword).filter(|child| child.is_object()) {
                problems.extend(unparseable(
                    child,
                    &format!("{path}[{keyword}]"),
                    definitions,
                ));
            }
        }
        problems
    }

    #[test]
    fn every_definition_parses_as_kube_openapi_reads_v2() {
        let document = built_in_document();
        let definitions = document["definitions"].as_object().expect("definitions");
        let problems: Vec<String> = definitions
            .iter()
            .flat_map(|(name, schema)| unparseable(schema, name, definitions))
            .collect();
        assert!(problems.is_empty(), "{problems:#?}");
        assert_eq!(
            definitions["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]["type"],
            "string"
        );
    }

    #[test]
    fn patch_operations_advertise_field_validation_and_models_carry_merge_keys() {
        let document = built_in_document();
        let patch =
            &document["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"];
        assert_eq!(
            patch["x-kubernetes-group-version-kind"],
            json!({"group": "apps", "version": "v1", "kind": "Deployment"})
        );
        let parameters = patch["parameters"].as_array().expect("parameters");
        assert_eq!(parameters[0]["in"], "body");
        assert!(
            parameters
                .iter()
                .any(|parameter| parameter["name"] == "fieldValidation"
                    && parameter["in"] == "query"
                    && parameter["type"] == "string")
        );
        assert!(
            patch["consumes"]
                .as_array()
                .expect("consumes")
                .contains(&json!("application/strategic-merge-patch+json"))
        );
        let containers =
            &document["definitions"]["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"];
        assert_eq!(containers["x-kubernetes-patch-merge-key"], "name");
        assert_eq!(
            containers["items"],
            json!({"$ref": "#/definitions/io.k8s.api.core.v1.Container"})
        );
        assert_eq!(
            document["definitions"]["io.k8s.api.apps.v1.Deployment"]["x-kubernetes-group-version-kind"]
                [0]["kind"],
            "Deployment"
        );
    }
}
