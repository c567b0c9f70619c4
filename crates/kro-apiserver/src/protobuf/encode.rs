//! JSON to protobuf, byte for byte as Go's generated marshallers write the Go struct the
//! JSON decodes to: fields in tag order; value fields always (a missing one as its zero
//! value); pointer fields only when set; map entries sorted by key.

use base64::Engine as _;
use serde_json::{Map, Value};

use super::ProtobufError;
use super::table::{Field, FieldType, Message, Scalar, Special, Table};
use super::wire;

static NO_FIELDS: std::sync::LazyLock<Map<String, Value>> = std::sync::LazyLock::new(Map::new);

/// Encodes a JSON value as one message (`Null` as the Go zero value).
pub(crate) fn message(
    table: &Table,
    index: usize,
    value: &Value,
    out: &mut Vec<u8>,
) -> Result<(), ProtobufError> {
    let message = &table.messages[index];
    if let Some(special) = message.special {
        return special_value(table, message, special, value, out);
    }
    let object = match value {
        Value::Object(object) => object,
        Value::Null => &NO_FIELDS,
        _ => return Err(wrong(message, "<self>", "an object")),
    };
    for field in &message.fields {
        let Some(json) = &field.json else {
            if let FieldType::Message(inner) = field.field_type {
                let mut bytes = Vec::new();
                self::message(table, inner, value, &mut bytes)?;
                wire::put_bytes_field(out, field.tag, &bytes);
            }
            continue;
        };
        let value = object.get(json).unwrap_or(&Value::Null);
        field_value(table, message, field, json, value, out)?;
    }
    Ok(())
}

fn wrong(message: &Message, field: &str, expected: &'static str) -> ProtobufError {
    ProtobufError::WrongJson {
        message: message.name.clone(),
        field: field.to_owned(),
        expected,
    }
}

fn field_value(
    table: &Table,
    message: &Message,
    field: &Field,
    json: &str,
    value: &Value,
    out: &mut Vec<u8>,
) -> Result<(), ProtobufError> {
    match &field.field_type {
        FieldType::Map(key_type, value_type) => {
            let entries = match value {
                Value::Null => return Ok(()),
                Value::Object(entries) => entries,
                _ => return Err(wrong(message, json, "an object")),
            };
            let mut keys: Vec<&String> = entries.keys().collect();
            keys.sort();
            for key in keys {
                let mut entry = Vec::new();
                let key_value = match key_type {
                    Scalar::String => Value::String(key.clone()),
                    _ => key
                        .parse::<i64>()
                        .map(Value::from)
                        .map_err(|_| wrong(message, json, "integer keys"))?,
                };
                scalar(message, json, 1, *key_type, &key_value, &mut entry)?;
                let item = entries.get(key).unwrap_or(&Value::Null);
                match value_type.as_ref() {
                    FieldType::Scalar(kind) => scalar(message, json, 2, *kind, item, &mut entry)?,
                    FieldType::Message(inner) => {
                        let mut bytes = Vec::new();
                        self::message(table, *inner, item, &mut bytes)?;
                        wire::put_bytes_field(&mut entry, 2, &bytes);
                    }
                    FieldType::Map(..) => return Err(wrong(message, json, "no nested maps")),
                }
                wire::put_bytes_field(out, field.tag, &entry);
            }
            Ok(())
        }
        _ if field.repeated => {
            let items = match value {
                Value::Null => return Ok(()),
                Value::Array(items) => items,
                _ => return Err(wrong(message, json, "an array")),
            };
            for item in items {
                match &field.field_type {
                    FieldType::Message(inner) => {
                        let mut bytes = Vec::new();
                        self::message(table, *inner, item, &mut bytes)?;
                        wire::put_bytes_field(out, field.tag, &bytes);
                    }
                    FieldType::Scalar(kind) => scalar(message, json, field.tag, *kind, item, out)?,
                    FieldType::Map(..) => {}
                }
            }
            Ok(())
        }
        FieldType::Message(inner) => {
            // A nil pointer, or a nil named slice (`Verbs`), is not written.
            let nil_slice = table.messages[*inner].special == Some(Special::List);
            if value.is_null() && (field.pointer || nil_slice) {
                return Ok(());
            }
            let mut bytes = Vec::new();
            self::message(table, *inner, value, &mut bytes)?;
            wire::put_bytes_field(out, field.tag, &bytes);
            Ok(())
        }
        FieldType::Scalar(kind) => {
            if value.is_null() && (field.pointer || *kind == Scalar::Bytes) {
                return Ok(());
            }
            scalar(message, json, field.tag, *kind, value, out)
        }
    }
}

fn integer(value: &Value) -> Option<i64> {
    match value {
        Value::Null => Some(0),
        Value::Number(number) => number.as_i64().or_else(|| {
            number
                .as_f64()
                .filter(|float| float.fract() == 0.0)
                .map(|float| float as i64)
        }),
        _ => None,
    }
}

/// One scalar field; `Null` is written as the zero value.
fn scalar(
    message: &Message,
    json: &str,
    tag: u32,
    kind: Scalar,
    value: &Value,
    out: &mut Vec<u8>,
) -> Result<(), ProtobufError> {
    match kind {
        Scalar::String => {
            let text = match value {
                Value::Null => "",
                Value::String(text) => text,
                _ => return Err(wrong(message, json, "a string")),
            };
            wire::put_bytes_field(out, tag, text.as_bytes());
        }
        Scalar::Bytes => {
            let bytes = match value {
                Value::Null => Vec::new(),
                Value::String(text) => base64::engine::general_purpose::STANDARD
                    .decode(text)
                    .map_err(|_| wrong(message, json, "base64"))?,
                _ => return Err(wrong(message, json, "a base64 string")),
            };
            wire::put_bytes_field(out, tag, &bytes);
        }
        Scalar::Bool => {
            let flag = match value {
                Value::Null => false,
                Value::Bool(flag) => *flag,
                _ => return Err(wrong(message, json, "a boolean")),
            };
            wire::put_varint_field(out, tag, u64::from(flag));
        }
        Scalar::Int32 => {
            let number = integer(value)
                .and_then(|number| i32::try_from(number).ok())
                .ok_or_else(|| wrong(message, json, "a 32-bit integer"))?;
            // Negative int32 values are sign-extended, as Go writes them.
            wire::put_varint_field(out, tag, i64::from(number) as u64);
        }
        Scalar::Int64 => {
            let number = integer(value).ok_or_else(|| wrong(message, json, "an integer"))?;
            wire::put_varint_field(out, tag, number as u64);
        }
        Scalar::Double => {
            let number = match value {
                Value::Null => 0.0,
                Value::Number(number) => number.as_f64().unwrap_or_default(),
                _ => return Err(wrong(message, json, "a number")),
            };
            wire::put_fixed64_field(out, tag, number.to_bits());
        }
    }
    Ok(())
}

fn child(message: &Message, tag: u32) -> Option<usize> {
    message
        .fields
        .iter()
        .find_map(|field| match field.field_type {
            FieldType::Message(inner) if field.tag == tag => Some(inner),
            _ => None,
        })
}

fn embed_message(
    table: &Table,
    message: &Message,
    tag: u32,
    value: &Value,
    out: &mut Vec<u8>,
) -> Result<(), ProtobufError> {
    let inner = child(message, tag).ok_or_else(|| wrong(message, "<self>", "a schema"))?;
    let mut bytes = Vec::new();
    self::message(table, inner, value, &mut bytes)?;
    wire::put_bytes_field(out, tag, &bytes);
    Ok(())
}

fn special_value(
    table: &Table,
    message: &Message,
    special: Special,
    value: &Value,
    out: &mut Vec<u8>,
) -> Result<(), ProtobufError> {
    match special {
        Special::Time | Special::MicroTime => {
            // Go's Time writes nothing at all for the zero time.
            let Value::String(text) = value else {
                return if value.is_null() {
                    Ok(())
                } else {
                    Err(wrong(message, "<self>", "an RFC 3339 time"))
                };
            };
            let time = chrono::DateTime::parse_from_rfc3339(text)
                .map_err(|_| wrong(message, "<self>", "an RFC 3339 time"))?;
            wire::put_varint_field(out, 1, time.timestamp() as u64);
            wire::put_varint_field(out, 2, u64::from(time.timestamp_subsec_nanos()));
        }
        Special::Duration => {
            let nanos = match value {
                Value::Null => 0,
                Value::String(text) => super::duration::parse(text)
                    .ok_or_else(|| wrong(message, "<self>", "a Go duration"))?,
                _ => return Err(wrong(message, "<self>", "a Go duration")),
            };
            wire::put_varint_field(out, 1, nanos as u64);
        }
        Special::Quantity => {
            let text = match value {
                Value::Null => "0".to_owned(),
                Value::String(text) => text.clone(),
                Value::Number(number) => number.to_string(),
                _ => return Err(wrong(message, "<self>", "a quantity")),
            };
            wire::put_bytes_field(out, 1, text.as_bytes());
        }
        Special::IntOrString => {
            let (kind, int, text) = match value {
                Value::Null => (0, 0, ""),
                Value::String(text) => (1, 0, text.as_str()),
                Value::Number(_) => {
                    let int = integer(value)
                        .and_then(|number| i32::try_from(number).ok())
                        .ok_or_else(|| wrong(message, "<self>", "an int or a string"))?;
                    (0, int, "")
                }
                _ => return Err(wrong(message, "<self>", "an int or a string")),
            };
            wire::put_varint_field(out, 1, kind);
            wire::put_varint_field(out, 2, i64::from(int) as u64);
            wire::put_bytes_field(out, 3, text.as_bytes());
        }
        Special::RawExtension | Special::FieldsV1 | Special::Json => {
            if !value.is_null() {
                let raw =
                    serde_json::to_vec(value).map_err(|source| ProtobufError::EmbeddedJson {
                        message: message.name.clone(),
                        source,
                    })?;
                wire::put_bytes_field(out, 1, &raw);
            }
        }
        Special::SchemaOrArray => match value {
            Value::Null => {}
            Value::Array(items) => {
                for item in items {
                    embed_message(table, message, 2, item, out)?;
                }
            }
            _ => embed_message(table, message, 1, value, out)?,
        },
        Special::SchemaOrBool => match value {
            Value::Bool(flag) => wire::put_varint_field(out, 1, u64::from(*flag)),
            Value::Null => wire::put_varint_field(out, 1, 0),
            _ => {
                wire::put_varint_field(out, 1, 1);
                embed_message(table, message, 2, value, out)?;
            }
        },
        Special::SchemaOrStringArray => match value {
            Value::Null => {}
            Value::Array(items) => {
                for item in items {
                    scalar(message, "property", 2, Scalar::String, item, out)?;
                }
            }
            _ => embed_message(table, message, 1, value, out)?,
        },
        Special::List => {
            let items = match value {
                Value::Null => &Vec::new(),
                Value::Array(items) => items,
                _ => return Err(wrong(message, "<self>", "an array")),
            };
            for item in items {
                scalar(message, "items", 1, Scalar::String, item, out)?;
            }
        }
    }
    Ok(())
}
