//! Checks of a definition beyond its OpenAPI schema, with kube-apiserver's messages.

use kro_schema::{BadValue, FieldError, FieldPath, Schema};
use serde_json::{Value, json};

use crate::objects::meta_str;

use super::names::{names_of, strings, text};
use super::rules::RuleCostLimit;

pub(super) fn is_dns1035_label(value: &str) -> bool {
    let bytes = value.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 63
        && bytes[0].is_ascii_lowercase()
        && bytes[bytes.len() - 1].is_ascii_alphanumeric()
        && bytes
            .iter()
            .all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || *byte == b'-')
}

/// Go syntax (`%#v`) of a string list: `[]string{"v1"}`, `[]string(nil)` when empty, as a
/// server-set list that was never filled is.
pub(super) fn go_strings(values: &[String]) -> String {
    if values.is_empty() {
        return "[]string(nil)".to_owned();
    }
    let quoted: Vec<String> = values
        .iter()
        .map(|value| kro_schema::go_quote(value))
        .collect();
    format!("[]string{{{}}}", quoted.join(", "))
}

/// `spec.versions` as kube-apiserver prints it in messages: Go syntax of its internal version
/// type. The schema, subresources, columns and selectable fields that every version shares
/// are held by the internal spec, so the versions show them as nil; where versions differ, Go
/// would print a memory address, written here as `0xc000000000`.
pub(super) fn go_versions(versions: Option<&Value>) -> String {
    const TYPE: &str = "apiextensions.CustomResourceDefinitionVersion";
    let Some(Value::Array(versions)) = versions else {
        return format!("[]{TYPE}(nil)");
    };
    let shared = |field: &str| {
        versions
            .windows(2)
            .all(|pair| pair[0].get(field) == pair[1].get(field))
    };
    let pointer = |version: &Value, field: &str, type_name: &str| {
        if version.get(field).is_none_or(Value::is_null) || shared(field) {
            format!("(*{type_name})(nil)")
        } else {
            format!("(*{type_name})(0xc000000000)")
        }
    };
    let list = |version: &Value, field: &str, type_name: &str| match version
        .get(field)
        .and_then(Value::as_array)
    {
        Some(items) if !items.is_empty() && !shared(field) => {
            format!("[]{type_name}{{...}}")
        }
        _ => format!("[]{type_name}(nil)"),
    };
    let rendered: Vec<String> = versions
        .iter()
        .map(|version| {
            let flag = |field: &str| version[field].as_bool().unwrap_or(false);
            let warning = if version.get("deprecationWarning").is_some_and(Value::is_string) {
                "(*string)(0xc000000000)"
            } else {
                "(*string)(nil)"
            };
            format!(
                "{TYPE}{{Name:{}, Served:{}, Storage:{}, Deprecated:{}, DeprecationWarning:{warning}, Schema:{}, Subresources:{}, AdditionalPrinterColumns:{}, SelectableFields:{}}}",
                kro_schema::go_quote(version["name"].as_str().unwrap_or_default()),
                flag("served"),
                flag("storage"),
                flag("deprecated"),
                pointer(version, "schema", "apiextensions.CustomResourceValidation"),
                pointer(version, "subresources", "apiextensions.CustomResourceSubresources"),
                list(
                    version,
                    "additionalPrinterColumns",
                    "apiextensions.CustomResourceColumnDefinition"
                ),
                list(version, "selectableFields", "apiextensions.SelectableField"),
            )
        })
        .collect();
    format!("[]{TYPE}{{{}}}", rendered.join(", "))
}

pub(super) const DNS1035_MESSAGE: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";

/// Checks a definition beyond its OpenAPI schema, with kube-apiserver's messages where they
/// are known; `old` is the stored definition on an update.
pub(crate) fn validate(object: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let spec = &object["spec"];
    let spec_path = FieldPath::new("spec");
    let group = text(spec, "/group");
    let names = names_of(&spec["names"]);
    let name = meta_str(object, "name").unwrap_or_default();
    if name != format!("{}.{group}", names.plural) {
        errors.push(FieldError::invalid(
            FieldPath::new("metadata").child("name"),
            BadValue::text(name),
            "must be spec.names.plural+\".\"+spec.group",
        ));
    }
    if group.is_empty() {
        errors.push(FieldError::required(spec_path.child("group"), ""));
    } else if !group.contains('.') {
        errors.push(FieldError::invalid(
            spec_path.child("group"),
            BadValue::text(&group),
            "should be a domain with at least one dot",
        ));
    }
    let scope = text(spec, "/scope");
    if scope != "Namespaced" && scope != "Cluster" {
        errors.push(FieldError::not_supported(
            spec_path.child("scope"),
            BadValue::text(&scope),
            &["Cluster".to_owned(), "Namespaced".to_owned()],
        ));
    }
    let names_path = spec_path.child("names");
    for (field, value) in [("plural", &names.plural), ("singular", &names.singular)] {
        if value.is_empty() {
            errors.push(FieldError::required(names_path.child(field), ""));
        } else if !is_dns1035_label(value) {
            errors.push(FieldError::invalid(
                names_path.child(field),
                BadValue::text(value),
                DNS1035_MESSAGE,
            ));
        }
    }
    if names.kind.is_empty() {
        errors.push(FieldError::required(names_path.child("kind"), ""));
    }
    let versions = spec["versions"].as_array().cloned().unwrap_or_default();
    let versions_path = spec_path.child("versions");
    if versions
        .iter()
        .filter(|version| version["storage"] == json!(true))
        .count()
        != 1
    {
        errors.push(FieldError::invalid(
            versions_path.clone(),
            BadValue::GoSyntax(go_versions(spec.get("versions"))),
            "must have exactly one version marked as storage version",
        ));
    }
    let schemas: Vec<&Value> = versions
        .iter()
        .map(|version| &version["schema"]["openAPIV3Schema"])
        .collect();
    let shared = schemas.windows(2).all(|pair| pair[0] == pair[1]);
    for (index, version) in versions.iter().enumerate() {
        let version_path = versions_path.index(index);
        let version_name = text(version, "/name");
        if !is_dns1035_label(&version_name) {
            errors.push(FieldError::invalid(
                version_path.child("name"),
                BadValue::text(&version_name),
                DNS1035_MESSAGE,
            ));
        }
        let schema = &version["schema"]["openAPIV3Schema"];
        if schema.is_null() {
            errors.push(FieldError::required(
                version_path.child("schema").child("openAPIV3Schema"),
                "schemas are required",
            ));
        } else if index == 0 || !shared {
            // Kubernetes reports a schema shared by every version under spec.validation.
            let path = if shared {
                spec_path.child("validation").child("openAPIV3Schema")
            } else {
                version_path.child("schema").child("openAPIV3Schema")
            };
            let before = errors.len();
            structural_errors(schema, &path, true, 0, &mut errors);
            if errors.len() > before {
                // kube-apiserver compiles no rule of a schema that is not structural.
                continue;
            }
            // A shared schema is checked as the first version's (kube-apiserver's
            // `spec.version`).
            let limit = if unchanged_schema(old, &version_name, schema) {
                RuleCostLimit::Suppressed
            } else {
                RuleCostLimit::Enforced
            };
            match serde_json::from_value::<Schema>(schema.clone()) {
                Ok(parsed) => errors.extend(super::rules::rule_errors(&parsed, &path, limit)),
                Err(error) => errors.push(FieldError::invalid(
                    path,
                    BadValue::text("(schema)"),
                    &error.to_string(),
                )),
            }
        }
    }
    errors.extend(super::selectable::selectable_field_errors(
        &versions, shared,
    ));
    errors.extend(stored_version_errors(object, &versions));
    errors
}

/// Whether an update leaves the schema of version `name` as it was.
fn unchanged_schema(old: Option<&Value>, name: &str, schema: &Value) -> bool {
    old.and_then(|old| old.pointer("/spec/versions")?.as_array())
        .into_iter()
        .flatten()
        .find(|version| version["name"].as_str() == Some(name))
        .is_some_and(|version| &version["schema"]["openAPIV3Schema"] == schema)
}

/// `status.storedVersions` against the versions: at least one, the storage version among
/// them, and none that left `spec.versions`.
pub(super) fn stored_version_errors(object: &Value, versions: &[Value]) -> Vec<FieldError> {
    let stored = strings(&object["status"]["storedVersions"]);
    let path = FieldPath::new("status").child("storedVersions");
    if stored.is_empty() {
        return vec![FieldError::invalid(
            path,
            BadValue::GoSyntax(go_strings(&stored)),
            "must have at least one stored version",
        )];
    }
    let mut errors = Vec::new();
    let mut unlisted = stored.clone();
    for version in versions {
        let name = text(version, "/name");
        let known = stored.contains(&name);
        if version["storage"] == json!(true) && !known {
            errors.push(FieldError::invalid(
                path.clone(),
                BadValue::GoSyntax(go_strings(&stored)),
                &format!("must have the storage version {name}"),
            ));
        }
        unlisted.retain(|listed| *listed != name);
    }
    for name in unlisted {
        let index = stored
            .iter()
            .position(|listed| *listed == name)
            .unwrap_or(0);
        errors.push(FieldError::invalid(
            path.index(index),
            BadValue::text(&name),
            &format!(
                "missing from spec.versions; {name} was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in {name} and removes {name} from status.storedVersions"
            ),
        ));
    }
    errors
}

/// The checks of a structural schema that matter for serving: every object node has a type,
/// arrays have items, the root is an object.
pub(super) fn structural_errors(
    schema: &Value,
    path: &FieldPath,
    root: bool,
    depth: usize,
    errors: &mut Vec<FieldError>,
) {
    if depth > 64 {
        errors.push(FieldError::forbidden(
            path.clone(),
            "the schema is too deep",
        ));
        return;
    }
    let Some(map) = schema.as_object() else {
        return;
    };
    let schema_type = map.get("type").and_then(Value::as_str).unwrap_or_default();
    let preserves = map.get("x-kubernetes-preserve-unknown-fields") == Some(&json!(true))
        || map.get("x-kubernetes-int-or-string") == Some(&json!(true));
    if root && schema_type != "object" {
        errors.push(FieldError::invalid(
            path.child("type"),
            BadValue::text(schema_type),
            "must be object at the root",
        ));
    } else if schema_type.is_empty() && !preserves && !root {
        errors.push(FieldError::required(
            path.child("type"),
            "must not be empty for specified object fields",
        ));
    }
    if schema_type == "array" && !map.contains_key("items") {
        errors.push(FieldError::required(
            path.child("items"),
            "must be specified",
        ));
    }
    if let Some(Value::Object(properties)) = map.get("properties") {
        for (name, property) in properties {
            let child = path.child("properties").key(name);
            structural_errors(property, &child, false, depth + 1, errors);
        }
    }
    if let Some(items) = map.get("items") {
        structural_errors(items, &path.child("items"), false, depth + 1, errors);
    }
    if let Some(values @ Value::Object(_)) = map.get("additionalProperties") {
        structural_errors(
            values,
            &path.child("additionalProperties"),
            false,
            depth + 1,
            errors,
        );
    }
}
