//! The `fieldPath` of a validation rule: a JSON path of field names and map keys
//! (`.spec.ports`, `.labels['app.kubernetes.io/name']`) that must name a field of the rule's
//! schema, normalized to Kubernetes' field-path rendering (`ValidFieldPath`).

use crate::field_error::{PathElement, render_elements};
use crate::openapi::{AdditionalProperties, Schema};

/// The path rendered as Kubernetes renders it (`spec.ports`, `labels[app]`), or why it does
/// not name a field of `schema`.
pub(super) fn normalize(json_path: &str, schema: &Schema) -> Result<String, String> {
    let tokens = tokens(json_path);
    let mut tokens = tokens.iter().map(String::as_str);
    let mut schema = schema;
    let mut elements = Vec::new();
    while let Some(token) = tokens.next() {
        let name = match token {
            "[" => {
                let quoted = tokens.next().ok_or("unexpected end of JSON path")?;
                let inner = quoted
                    .strip_prefix('\'')
                    .and_then(|rest| rest.strip_suffix('\''))
                    .filter(|_| quoted.len() >= 2)
                    .ok_or_else(|| format!("expected single quoted string but got {quoted}"))?;
                let name =
                    unescape(inner).map_err(|error| format!("invalid string literal: {error}"))?;
                match tokens.next() {
                    Some("]") => {}
                    Some(other) => return Err(format!("expected ] but got {other}")),
                    None => return Err("unexpected end of JSON path".to_string()),
                }
                name
            }
            "." => tokens
                .next()
                .ok_or("unexpected end of JSON path")?
                .to_string(),
            other => return Err(format!("expected [ or . but got: {other}")),
        };
        schema = step(schema, &name, &mut elements)?;
    }
    Ok(render_elements(&elements))
}

/// Follows one name: a property when the schema has properties, else a map key.
fn step<'a>(
    schema: &'a Schema,
    name: &str,
    elements: &mut Vec<PathElement>,
) -> Result<&'a Schema, String> {
    if !schema.properties.is_empty() {
        let property = schema
            .properties
            .get(name)
            .ok_or("does not refer to a valid field")?;
        elements.push(PathElement::Field(name.to_string()));
        Ok(property)
    } else if let Some(additional) = &schema.additional_properties {
        elements.push(PathElement::Key(name.to_string()));
        match additional {
            AdditionalProperties::Schema(values) => Ok(values),
            AdditionalProperties::Allowed(_) => Err("does not refer to a valid field".to_string()),
        }
    } else {
        Err("does not refer to a valid field".to_string())
    }
}

/// Splits at `.`, `[` and `]` (each its own token), keeping single-quoted strings whole.
fn tokens(path: &str) -> Vec<String> {
    let mut tokens = Vec::new();
    let mut current = String::new();
    let mut chars = path.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\'' && current.is_empty() {
            current.push(c);
            let mut previous = c;
            for inner in chars.by_ref() {
                current.push(inner);
                if inner == '\'' && previous != '\\' {
                    break;
                }
                previous = inner;
            }
            tokens.push(std::mem::take(&mut current));
            continue;
        }
        if matches!(c, '.' | '[' | ']') {
            if !current.is_empty() {
                tokens.push(std::mem::take(&mut current));
            }
            tokens.push(c.to_string());
        } else {
            current.push(c);
        }
    }
    if !current.is_empty() {
        tokens.push(current);
    }
    tokens
}

fn unescape(text: &str) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let escaped = chars.next().ok_or("invalid escape char \\")?;
        out.push(match escaped {
            'a' => '\u{7}',
            'b' => '\u{8}',
            'f' => '\u{c}',
            'n' => '\n',
            'r' => '\r',
            't' => '\t',
            'v' => '\u{b}',
            '\'' => '\'',
            '\\' => '\\',
            other => return Err(format!("invalid escape char \\{other}")),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Schema {
        serde_json::from_value(json!({
            "type": "object",
            "properties": {
                "spec": {"type": "object", "properties": {"ports": {"type": "array"}}},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}}
            }
        }))
        .expect("a schema")
    }

    #[test]
    fn field_paths_normalize_to_kubernetes_rendering() {
        assert_eq!(
            normalize(".spec.ports", &schema()),
            Ok("spec.ports".to_string())
        );
        assert_eq!(
            normalize(".labels['app.kubernetes.io/name']", &schema()),
            Ok("labels[app.kubernetes.io/name]".to_string())
        );
        assert_eq!(
            normalize("['spec'].ports", &schema()),
            Ok("spec.ports".to_string())
        );
    }

    #[test]
    fn field_paths_naming_no_field_are_rejected() {
        assert_eq!(
            normalize(".spec.replicas", &schema()),
            Err("does not refer to a valid field".to_string())
        );
        assert!(normalize("spec", &schema()).is_err());
        assert!(normalize(".labels[app]", &schema()).is_err());
    }
}
