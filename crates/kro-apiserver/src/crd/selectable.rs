//! `selectableFields` of a definition: the JSON paths its custom resources can be selected on
//! with field selectors, checked as kube-apiserver checks them.

use std::collections::BTreeSet;

use kro_schema::{BadValue, FieldError, FieldPath};
use serde_json::Value;

/// The most selectable fields a version may declare (apiextensions' `MaxSelectableFields`).
const MAX_SELECTABLE_FIELDS: u64 = 8;

/// The field-selector names a version declares: each `jsonPath` without its leading dot, as
/// kube-apiserver names them (`.spec.color` is selected as `spec.color`).
pub(super) fn selectable_field_names(version: &Value) -> Vec<String> {
    json_paths(version.get("selectableFields"))
        .into_iter()
        .map(|path| path.strip_prefix('.').unwrap_or(&path).to_owned())
        .collect()
}

fn json_paths(fields: Option<&Value>) -> Vec<String> {
    fields
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|field| {
            field
                .get("jsonPath")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        })
        .collect()
}

/// Checks the selectable fields of every version. As kube-apiserver converts a definition to
/// its internal form first, fields every version shares are checked once at
/// `spec.selectableFields` against the shared schema, and others per version; where the
/// schema and the fields are not held at the same level, kube-apiserver refuses the fields.
pub(super) fn selectable_field_errors(versions: &[Value], schemas_shared: bool) -> Vec<FieldError> {
    let declared = |version: &Value| {
        version
            .get("selectableFields")
            .filter(|fields| !fields.is_null())
            .cloned()
    };
    let first = versions.first().and_then(declared);
    let fields_shared = versions.iter().all(|version| declared(version) == first);
    let spec = FieldPath::new("spec");
    let mut errors = Vec::new();
    if fields_shared {
        let Some(fields) = first.filter(has_items) else {
            return errors;
        };
        let path = spec.child("selectableFields");
        let schema = versions
            .first()
            .and_then(|version| version.pointer("/schema/openAPIV3Schema"));
        match schema.filter(|_| schemas_shared) {
            Some(schema) => errors.extend(check(&fields, schema, &path)),
            None => errors.push(FieldError::invalid(
                path,
                BadValue::text(""),
                "selectableFields may only be set when validations.schema is included",
            )),
        }
        return errors;
    }
    for (index, version) in versions.iter().enumerate() {
        let Some(fields) = declared(version).filter(has_items) else {
            continue;
        };
        let path = spec
            .child("versions")
            .index(index)
            .child("selectableFields");
        match version
            .pointer("/schema/openAPIV3Schema")
            .filter(|_| !schemas_shared)
        {
            Some(schema) => errors.extend(check(&fields, schema, &path)),
            None => errors.push(FieldError::invalid(
                path,
                BadValue::text(""),
                "selectableFields may only be set when version.schema.openAPIV3Schema is not included",
            )),
        }
    }
    errors
}

fn has_items(fields: &Value) -> bool {
    fields.as_array().is_some_and(|items| !items.is_empty())
}

/// apiextensions' `ValidateCustomResourceSelectableFields`.
fn check(fields: &Value, schema: &Value, path: &FieldPath) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let mut unique = BTreeSet::new();
    for (index, json_path) in json_paths(Some(fields)).iter().enumerate() {
        let field_path = path.index(index).child("jsonPath");
        if json_path.is_empty() {
            errors.push(FieldError::required(field_path, ""));
            continue;
        }
        let (found_path, found_schema) = match resolve(json_path, schema) {
            Ok(found) => found,
            Err(reason) => {
                errors.push(FieldError::invalid(
                    field_path,
                    BadValue::text(json_path),
                    &format!("is an invalid path: {reason}"),
                ));
                continue;
            }
        };
        if found_path.first().map(String::as_str) == Some("metadata") {
            errors.push(FieldError::invalid(
                field_path.clone(),
                BadValue::text(json_path),
                "must not point to fields in metadata",
            ));
        }
        let scalar = matches!(
            found_schema.get("type").and_then(Value::as_str),
            Some("string" | "boolean" | "integer")
        );
        if !scalar {
            errors.push(FieldError::invalid(
                field_path.clone(),
                BadValue::text(json_path),
                "must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed.",
            ));
        }
        if !unique.insert(found_path.join("\u{0}")) {
            errors.push(FieldError::duplicate(field_path, BadValue::text(json_path)));
        }
    }
    let count = unique.len() as u64;
    if count > MAX_SELECTABLE_FIELDS {
        errors.push(FieldError::too_many(
            path.clone(),
            Some(count),
            Some(MAX_SELECTABLE_FIELDS),
        ));
    }
    errors
}

/// Splits a JSON path into `.`, `[`, `]` and the text between them, a single-quoted string
/// (delimiters inside it kept) being one token, as apiextensions' path scanner does.
fn tokens(json_path: &str) -> Vec<&str> {
    let mut tokens = Vec::new();
    let mut rest = json_path;
    while !rest.is_empty() {
        let bytes = rest.as_bytes();
        let end = if bytes[0] == b'\'' {
            bytes
                .iter()
                .enumerate()
                .skip(1)
                .find(|(index, byte)| **byte == b'\'' && bytes[index - 1] != b'\\')
                .map_or(rest.len(), |(index, _)| index + 1)
        } else if matches!(bytes[0], b'.' | b'[' | b']') {
            1
        } else {
            bytes
                .iter()
                .position(|byte| matches!(byte, b'.' | b'[' | b']'))
                .unwrap_or(rest.len())
        };
        let (token, remainder) = rest.split_at(end);
        tokens.push(token);
        rest = remainder;
    }
    tokens
}

/// apiextensions' `ValidFieldPath` without array notation: the path's segments and the schema
/// it reaches, or why it reaches none.
fn resolve<'a>(json_path: &str, root: &'a Value) -> Result<(Vec<String>, &'a Value), String> {
    let mut schema = root;
    let mut found = Vec::new();
    let mut tokens = tokens(json_path).into_iter();
    while let Some(token) = tokens.next() {
        match token {
            "[" => return Err("array notation is not allowed".to_owned()),
            "." => {
                let Some(name) = tokens.next() else {
                    return Err("unexpected end of JSON path".to_owned());
                };
                schema = if let Some(properties) = schema.get("properties") {
                    properties
                        .get(name)
                        .ok_or_else(|| "does not refer to a valid field".to_owned())?
                } else if let Some(additional) = schema.get("additionalProperties") {
                    additional
                } else {
                    return Err("does not refer to a valid field".to_owned());
                };
                found.push(name.to_owned());
            }
            other => return Err(format!("expected [ or . but got: {other}")),
        }
    }
    Ok((found, schema))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn version(schema: Value, fields: &[&str]) -> Value {
        let fields: Vec<Value> = fields
            .iter()
            .map(|path| json!({"jsonPath": path}))
            .collect();
        json!({"name": "v1", "schema": {"openAPIV3Schema": schema}, "selectableFields": fields})
    }

    fn schema() -> Value {
        json!({"type": "object", "properties": {
            "metadata": {"type": "object"},
            "spec": {"type": "object", "properties": {
                "color": {"type": "string"},
                "size": {"type": "integer"},
                "big": {"type": "boolean"},
                "ratio": {"type": "number"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            }},
        }})
    }

    fn messages(errors: Vec<FieldError>) -> Vec<String> {
        errors.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn scalar_fields_of_the_schema_are_selectable_by_their_names_without_the_dot() {
        let version = version(
            schema(),
            &[
                ".spec.color",
                ".spec.size",
                ".spec.big",
                ".spec.labels.team",
            ],
        );
        assert_eq!(
            selectable_field_errors(std::slice::from_ref(&version), true),
            Vec::new()
        );
        assert_eq!(
            selectable_field_names(&version),
            ["spec.color", "spec.size", "spec.big", "spec.labels.team"]
        );
    }

    #[test]
    fn bad_paths_are_refused_with_kube_apiservers_messages() {
        let version = version(
            schema(),
            &[
                ".spec.nope",
                ".spec.ratio",
                ".metadata",
                ".spec.tags[0]",
                "spec.color",
                ".spec.color",
                "",
                ".spec.",
            ],
        );
        assert_eq!(
            messages(selectable_field_errors(&[version], true)),
            [
                r#"spec.selectableFields[0].jsonPath: Invalid value: ".spec.nope": is an invalid path: does not refer to a valid field"#,
                r#"spec.selectableFields[1].jsonPath: Invalid value: ".spec.ratio": must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed."#,
                r#"spec.selectableFields[2].jsonPath: Invalid value: ".metadata": must not point to fields in metadata"#,
                r#"spec.selectableFields[2].jsonPath: Invalid value: ".metadata": must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed."#,
                r#"spec.selectableFields[3].jsonPath: Invalid value: ".spec.tags[0]": is an invalid path: array notation is not allowed"#,
                r#"spec.selectableFields[4].jsonPath: Invalid value: "spec.color": is an invalid path: expected [ or . but got: spec"#,
                r#"spec.selectableFields[6].jsonPath: Required value"#,
                r#"spec.selectableFields[7].jsonPath: Invalid value: ".spec.": is an invalid path: unexpected end of JSON path"#,
            ]
        );
    }

    #[test]
    fn a_repeated_path_is_a_duplicate_and_more_than_eight_are_too_many() {
        let paths: Vec<String> = (0..9).map(|index| format!(".spec.f{index}")).collect();
        let properties: serde_json::Map<String, Value> = (0..9)
            .map(|index| (format!("f{index}"), json!({"type": "string"})))
            .collect();
        let schema = json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": properties}}});
        let mut all: Vec<&str> = paths.iter().map(String::as_str).collect();
        all.push(".spec.f0");
        assert_eq!(
            messages(selectable_field_errors(&[version(schema, &all)], true)),
            [
                r#"spec.selectableFields[9].jsonPath: Duplicate value: ".spec.f0""#,
                "spec.selectableFields: Too many: 9: must have at most 8 items",
            ]
        );
    }

    #[test]
    fn fields_that_differ_between_versions_with_one_schema_are_refused() {
        let mut second = version(schema(), &[".spec.size"]);
        second["name"] = json!("v2");
        let versions = [version(schema(), &[".spec.color"]), second];
        assert_eq!(
            messages(selectable_field_errors(&versions, true)),
            [
                r#"spec.versions[0].selectableFields: Invalid value: "": selectableFields may only be set when version.schema.openAPIV3Schema is not included"#,
                r#"spec.versions[1].selectableFields: Invalid value: "": selectableFields may only be set when version.schema.openAPIV3Schema is not included"#,
            ]
        );
        assert_eq!(selectable_field_errors(&versions, false), Vec::new());
    }
}
