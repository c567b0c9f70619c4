//! Conversion between CEL values and JSON, right for Kubernetes objects.
//!
//! JSON integers become `int` (never `uint`, unlike other Rust CEL crates), so that
//! `spec.replicas + 1` type-checks and evaluates as Kubernetes users expect. A type hint from
//! the schema keeps `number` fields as `double` even when written `1`, decodes `format: byte`
//! strings to `bytes`, and reads `date-time` and duration strings as timestamps and durations.

use std::sync::Arc;

use base64::Engine;

use crate::time::{Duration, Timestamp};
use crate::types::{FieldLookup, Type, TypeProvider};
use crate::value::{Key, Map, Value};

/// How deeply nested a JSON document may be.
pub const MAX_JSON_DEPTH: usize = 256;

/// Why a conversion failed, with the JSON path of the offending value.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum JsonError {
    /// The document nests deeper than [`MAX_JSON_DEPTH`].
    #[error("{path}: nesting exceeds {limit} levels")]
    TooDeep {
        /// Where the limit was reached.
        path: String,
        /// The limit.
        limit: usize,
    },
    /// A value with no JSON form (NaN, infinity, a type, an opaque value without one).
    #[error("{path}: a {type_name} value has no JSON representation")]
    NotRepresentable {
        /// Where the value is.
        path: String,
        /// Its CEL type.
        type_name: String,
    },
    /// A string the schema says is bytes, a timestamp or a duration, but is not.
    #[error("{path}: {reason}")]
    InvalidString {
        /// Where the string is.
        path: String,
        /// What is wrong with it.
        reason: String,
    },
}

/// Converts JSON to a CEL value. `hint` is the type the schema gives the value (if any), and
/// `provider` resolves the field types of object hints.
///
/// # Errors
/// [`JsonError`] for documents nested too deeply, or strings that do not fit their hint.
pub fn from_json(
    json: &serde_json::Value,
    hint: Option<&Type>,
    provider: Option<&dyn TypeProvider>,
) -> Result<Value, JsonError> {
    let mut path = String::new();
    convert_in(json, hint, provider, &mut path, 0)
}

fn convert_in(
    json: &serde_json::Value,
    hint: Option<&Type>,
    provider: Option<&dyn TypeProvider>,
    path: &mut String,
    depth: usize,
) -> Result<Value, JsonError> {
    if depth > MAX_JSON_DEPTH {
        return Err(JsonError::TooDeep {
            path: display_path(path),
            limit: MAX_JSON_DEPTH,
        });
    }
    let hint = match hint {
        Some(Type::Optional(inner)) => Some(inner.as_ref()),
        other => other,
    };
    Ok(match json {
        serde_json::Value::Null => Value::Null,
        serde_json::Value::Bool(b) => Value::Bool(*b),
        serde_json::Value::Number(number) => number_value(number, hint),
        serde_json::Value::String(text) => string_value(text, hint, path)?,
        serde_json::Value::Array(items) => {
            let element_hint = match hint {
                Some(Type::List(element)) => Some(element.as_ref()),
                _ => None,
            };
            let mut values = Vec::with_capacity(items.len());
            for (index, item) in items.iter().enumerate() {
                let length = path.len();
                path.push_str(&format!("[{index}]"));
                values.push(convert_in(item, element_hint, provider, path, depth + 1)?);
                path.truncate(length);
            }
            Value::list(values)
        }
        serde_json::Value::Object(fields) => {
            let mut map = Map::with_capacity(fields.len());
            for (name, item) in fields {
                let field_hint = match hint {
                    Some(Type::Map(_, value)) => Some(value.as_ref().clone()),
                    Some(Type::Object(type_name)) => {
                        provider.and_then(|provider| match provider.field_type(type_name, name) {
                            FieldLookup::Found(ty) => Some(ty),
                            FieldLookup::NoSuchField => None,
                        })
                    }
                    _ => None,
                };
                let length = path.len();
                path.push('.');
                path.push_str(name);
                let value = convert_in(item, field_hint.as_ref(), provider, path, depth + 1)?;
                path.truncate(length);
                map.insert(Key::String(Arc::from(name.as_str())), value);
            }
            Value::Map(map)
        }
    })
}

fn display_path(path: &str) -> String {
    if path.is_empty() {
        "<root>".to_string()
    } else {
        path.trim_start_matches('.').to_string()
    }
}

fn number_value(number: &serde_json::Number, hint: Option<&Type>) -> Value {
    match hint {
        Some(Type::Double) => return Value::Double(number.as_f64().unwrap_or(f64::NAN)),
        Some(Type::Uint) => {
            if let Some(value) = number.as_u64() {
                return Value::Uint(value);
            }
        }
        Some(Type::Int) => {
            if let Some(float) = number
                .as_f64()
                .filter(|f| f.fract() == 0.0 && f.abs() < 9.2e18)
                && number.as_i64().is_none()
                && !number.is_u64()
            {
                return Value::Int(float as i64);
            }
        }
        _ => {}
    }
    if let Some(value) = number.as_i64() {
        return Value::Int(value);
    }
    Value::Double(number.as_f64().unwrap_or(f64::NAN))
}

fn string_value(text: &str, hint: Option<&Type>, path: &str) -> Result<Value, JsonError> {
    let invalid = |reason: String| JsonError::InvalidString {
        path: display_path(path),
        reason,
    };
    Ok(match hint {
        Some(Type::Bytes) => {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(text)
                .map_err(|error| invalid(format!("not base64: {error}")))?;
            Value::Bytes(Arc::from(bytes))
        }
        Some(Type::Timestamp) => {
            Value::Timestamp(Timestamp::parse(text).map_err(|error| invalid(error.to_string()))?)
        }
        Some(Type::Duration) => {
            Value::Duration(Duration::parse(text).map_err(|error| invalid(error.to_string()))?)
        }
        _ => Value::String(Arc::from(text)),
    })
}

/// Converts a CEL value to JSON: bytes become base64, timestamps RFC 3339 text, durations
/// `"1.5s"`, non-string map keys their text, and empty optionals `null`.
///
/// # Errors
/// [`JsonError::NotRepresentable`] for NaN, infinities, types, and opaque values without a
/// JSON form.
pub fn to_json(value: &Value) -> Result<serde_json::Value, JsonError> {
    let mut path = String::new();
    to_json_in(value, &mut path, 0)
}

fn to_json_in(
    value: &Value,
    path: &mut String,
    depth: usize,
) -> Result<serde_json::Value, JsonError> {
    if depth > MAX_JSON_DEPTH {
        return Err(JsonError::TooDeep {
            path: display_path(path),
            limit: MAX_JSON_DEPTH,
        });
    }
    let not_representable = |path: &str| JsonError::NotRepresentable {
        path: display_path(path),
        type_name: value.type_name().to_string(),
    };
    Ok(match value {
        Value::Null => serde_json::Value::Null,
        Value::Bool(b) => serde_json::Value::Bool(*b),
        Value::Int(i) => serde_json::Value::from(*i),
        Value::Uint(u) => serde_json::Value::from(*u),
        Value::Double(d) => serde_json::Number::from_f64(*d)
            .map(serde_json::Value::Number)
            .ok_or_else(|| not_representable(path))?,
        Value::String(s) => serde_json::Value::String(s.to_string()),
        Value::Bytes(b) => {
            serde_json::Value::String(base64::engine::general_purpose::STANDARD.encode(b))
        }
        Value::List(items) => {
            let mut array = Vec::with_capacity(items.len());
            for (index, item) in items.iter().enumerate() {
                let length = path.len();
                path.push_str(&format!("[{index}]"));
                array.push(to_json_in(item, path, depth + 1)?);
                path.truncate(length);
            }
            serde_json::Value::Array(array)
        }
        Value::Map(map) => {
            let mut object = serde_json::Map::with_capacity(map.len());
            for (key, item) in map.iter() {
                let name = match key {
                    Key::String(s) => s.to_string(),
                    Key::Int(i) => i.to_string(),
                    Key::Uint(u) => u.to_string(),
                    Key::Bool(b) => b.to_string(),
                };
                let length = path.len();
                path.push('.');
                path.push_str(&name);
                let converted = to_json_in(item, path, depth + 1)?;
                path.truncate(length);
                object.insert(name, converted);
            }
            serde_json::Value::Object(object)
        }
        Value::Timestamp(t) => serde_json::Value::String(t.to_string()),
        Value::Duration(d) => serde_json::Value::String(d.to_string()),
        Value::Optional(None) => serde_json::Value::Null,
        Value::Optional(Some(inner)) => to_json_in(inner, path, depth + 1)?,
        Value::Opaque(opaque) => opaque.to_json().ok_or_else(|| not_representable(path))?,
        Value::Type(_) => return Err(not_representable(path)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_integers_become_int() {
        let value = from_json(
            &json!({"replicas": 3, "big": 18446744073709551615u64}),
            None,
            None,
        )
        .expect("converts");
        let Value::Map(map) = value else {
            panic!("not a map")
        };
        assert_eq!(map.get_str("replicas"), Some(&Value::Int(3)));
        assert_eq!(
            map.get_str("big"),
            Some(&Value::Double(18446744073709551615.0))
        );
    }

    #[test]
    fn hints_keep_doubles_bytes_and_timestamps() {
        let hint = Type::map(Type::String, Type::Double);
        let value = from_json(&json!({"ratio": 1}), Some(&hint), None).expect("converts");
        let Value::Map(map) = value else {
            panic!("not a map")
        };
        assert_eq!(map.get_str("ratio"), Some(&Value::Double(1.0)));
        let bytes = from_json(&json!("aGk="), Some(&Type::Bytes), None).expect("base64");
        assert_eq!(bytes, Value::Bytes(Arc::from(&b"hi"[..])));
        let error = from_json(
            &json!({"a": ["!"]}),
            Some(&Type::map(Type::String, Type::list(Type::Bytes))),
            None,
        )
        .expect_err("not base64");
        assert!(matches!(error, JsonError::InvalidString { path, .. } if path == "a[0]"));
    }

    #[test]
    fn round_trip_preserves_structure() {
        let original = json!({"a": [1, 2.5, "x", true, null], "b": {"c": {}}});
        let value = from_json(&original, None, None).expect("converts");
        assert_eq!(to_json(&value).expect("back"), original);
    }

    #[test]
    fn nan_has_no_json_form() {
        let error = to_json(&Value::list(vec![Value::Double(f64::NAN)])).expect_err("NaN");
        assert!(matches!(error, JsonError::NotRepresentable { path, .. } if path == "[0]"));
    }

    #[test]
    fn deep_documents_are_rejected() {
        let mut value = Value::Null;
        for _ in 0..(MAX_JSON_DEPTH + 5) {
            value = Value::list(vec![value]);
        }
        assert!(matches!(to_json(&value), Err(JsonError::TooDeep { .. })));
    }
}
