//! Protobuf to JSON, as kube-apiserver would answer in JSON after decoding the same bytes
//! into its Go structs: a field absent from the wire is Go's zero value, and the JSON then
//! follows the Go tags (`omitempty` drops zero values of value fields; pointers set to zero
//! stay; structs are always written; a zero `Time` is `null`).

use base64::Engine as _;
use serde_json::{Map, Number, Value};

use super::ProtobufError;
use super::table::{Field, FieldType, Message, Scalar, Special, Table};
use super::wire::{self, WireValue};

/// Decodes one message into its JSON form.
pub(crate) fn message(table: &Table, index: usize, bytes: &[u8]) -> Result<Value, ProtobufError> {
    let message = &table.messages[index];
    let wire = wire::fields(bytes).map_err(|error| malformed(message, error.describe()))?;
    if let Some(special) = message.special {
        return special_value(table, message, special, &wire);
    }
    let mut object = Map::new();
    for field in &message.fields {
        let values: Vec<WireValue<'_>> = wire
            .iter()
            .filter(|(tag, _)| *tag == field.tag)
            .map(|(_, value)| *value)
            .collect();
        let Some(json) = &field.json else {
            // An embedded struct: its fields belong to this object.
            let FieldType::Message(inner) = field.field_type else {
                continue;
            };
            let bytes = last_bytes(message, &values)?.unwrap_or_default();
            if let Value::Object(inlined) = self::message(table, inner, bytes)? {
                object.extend(inlined);
            }
            continue;
        };
        if let Some(value) = field_value(table, message, field, &values)? {
            object.insert(json.clone(), value);
        }
    }
    Ok(Value::Object(object))
}

fn malformed(message: &Message, problem: &'static str) -> ProtobufError {
    ProtobufError::Malformed {
        message: message.name.clone(),
        problem,
    }
}

fn last_bytes<'a>(
    message: &Message,
    values: &[WireValue<'a>],
) -> Result<Option<&'a [u8]>, ProtobufError> {
    match values.last() {
        None => Ok(None),
        Some(WireValue::Bytes(bytes)) => Ok(Some(bytes)),
        Some(_) => Err(malformed(message, "a message field has a scalar wire type")),
    }
}

/// The JSON value of one field, or `None` when Go's JSON would leave it out.
fn field_value(
    table: &Table,
    message: &Message,
    field: &Field,
    values: &[WireValue<'_>],
) -> Result<Option<Value>, ProtobufError> {
    match &field.field_type {
        FieldType::Map(key, value_type) => {
            let mut map = Map::new();
            for value in values {
                let WireValue::Bytes(entry) = value else {
                    return Err(malformed(message, "a map entry is not length-delimited"));
                };
                let entry = wire::fields(entry).map_err(|e| malformed(message, e.describe()))?;
                let key_values: Vec<_> = entry
                    .iter()
                    .filter(|(t, _)| *t == 1)
                    .map(|(_, v)| *v)
                    .collect();
                let key = scalar(message, *key, key_values.last().copied())?;
                let key = match key {
                    Value::String(text) => text,
                    other => other.to_string(),
                };
                let values: Vec<_> = entry
                    .iter()
                    .filter(|(t, _)| *t == 2)
                    .map(|(_, v)| *v)
                    .collect();
                let value = match value_type.as_ref() {
                    FieldType::Scalar(kind) => scalar(message, *kind, values.last().copied())?,
                    FieldType::Message(inner) => {
                        let bytes = last_bytes(message, &values)?.unwrap_or_default();
                        self::message(table, *inner, bytes)?
                    }
                    FieldType::Map(..) => Value::Null,
                };
                map.insert(key, value);
            }
            // An empty map decodes to Go's nil map: left out, or `null` without omitempty.
            Ok(match (map.is_empty(), field.omitempty) {
                (true, true) => None,
                (true, false) => Some(Value::Null),
                _ => Some(Value::Object(map)),
            })
        }
        _ if field.repeated => {
            let mut items = Vec::new();
            for value in values {
                match (&field.field_type, value) {
                    (FieldType::Message(inner), WireValue::Bytes(bytes)) => {
                        items.push(self::message(table, *inner, bytes)?);
                    }
                    (FieldType::Scalar(kind), WireValue::Bytes(bytes))
                        if !matches!(kind, Scalar::String | Scalar::Bytes) =>
                    {
                        let varints = wire::packed_varints(bytes)
                            .map_err(|error| malformed(message, error.describe()))?;
                        for varint in varints {
                            items.push(scalar(message, *kind, Some(WireValue::Varint(varint)))?);
                        }
                    }
                    (FieldType::Scalar(kind), value) => {
                        items.push(scalar(message, *kind, Some(*value))?);
                    }
                    _ => return Err(malformed(message, "a repeated field has a bad wire type")),
                }
            }
            // No items decode to Go's nil slice: left out, or `null` without omitempty.
            Ok(match (items.is_empty(), field.omitempty) {
                (true, true) => None,
                (true, false) => Some(Value::Null),
                _ => Some(Value::Array(items)),
            })
        }
        FieldType::Message(inner) => match last_bytes(message, values)? {
            Some(bytes) => Ok(Some(self::message(table, *inner, bytes)?)),
            None if field.pointer => Ok((!field.omitempty).then_some(Value::Null)),
            // An absent named slice (`Verbs`) is Go's nil slice.
            None if table.messages[*inner].special == Some(Special::List) => {
                Ok((!field.omitempty).then_some(Value::Null))
            }
            // A Go struct value is always there, and always written (omitempty does not
            // apply to structs).
            None => Ok(Some(self::message(table, *inner, &[])?)),
        },
        FieldType::Scalar(kind) => {
            let value = scalar(message, *kind, values.last().copied())?;
            if values.is_empty() && field.pointer {
                return Ok((!field.omitempty).then_some(Value::Null));
            }
            if *kind == Scalar::Bytes && values.is_empty() {
                return Ok((!field.omitempty).then_some(Value::Null));
            }
            Ok((field.pointer || !field.omitempty || !is_zero(&value)).then_some(value))
        }
    }
}

fn is_zero(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Bool(flag) => !flag,
        Value::Number(number) => number.as_f64() == Some(0.0),
        Value::String(text) => text.is_empty(),
        Value::Array(items) => items.is_empty(),
        Value::Object(map) => map.is_empty(),
    }
}

/// A scalar's JSON value; an absent one is its zero value.
fn scalar(
    message: &Message,
    kind: Scalar,
    value: Option<WireValue<'_>>,
) -> Result<Value, ProtobufError> {
    Ok(match (kind, value) {
        (Scalar::String, None) => Value::String(String::new()),
        (Scalar::Bytes, None) => Value::String(String::new()),
        (Scalar::Bool, None) => Value::Bool(false),
        (Scalar::Int32 | Scalar::Int64, None) => Value::from(0),
        (Scalar::Double, None) => Value::from(0.0),
        (Scalar::String, Some(WireValue::Bytes(bytes))) => Value::String(
            String::from_utf8(bytes.to_vec())
                .map_err(|_| malformed(message, "a string field is not UTF-8"))?,
        ),
        (Scalar::Bytes, Some(WireValue::Bytes(bytes))) => {
            Value::String(base64::engine::general_purpose::STANDARD.encode(bytes))
        }
        (Scalar::Bool, Some(WireValue::Varint(varint))) => Value::Bool(varint != 0),
        // int32 is sign-extended to 64 bits on the wire; truncating keeps its value.
        (Scalar::Int32, Some(WireValue::Varint(varint))) => Value::from(varint as i32),
        (Scalar::Int64, Some(WireValue::Varint(varint))) => Value::from(varint as i64),
        (Scalar::Double, Some(WireValue::Fixed64(bits))) => Number::from_f64(f64::from_bits(bits))
            .map(Value::Number)
            .unwrap_or(Value::Null),
        _ => return Err(malformed(message, "a scalar field has the wrong wire type")),
    })
}

fn first<'a>(wire: &[(u32, WireValue<'a>)], tag: u32) -> Option<WireValue<'a>> {
    wire.iter()
        .rev()
        .find(|(t, _)| *t == tag)
        .map(|(_, value)| *value)
}

fn first_bytes<'a>(
    message: &Message,
    wire: &[(u32, WireValue<'a>)],
    tag: u32,
) -> Result<Option<&'a [u8]>, ProtobufError> {
    match first(wire, tag) {
        None => Ok(None),
        Some(WireValue::Bytes(bytes)) => Ok(Some(bytes)),
        Some(_) => Err(malformed(message, "a bytes field has the wrong wire type")),
    }
}

fn varint(
    message: &Message,
    wire: &[(u32, WireValue<'_>)],
    tag: u32,
) -> Result<u64, ProtobufError> {
    match first(wire, tag) {
        None => Ok(0),
        Some(WireValue::Varint(value)) => Ok(value),
        Some(_) => Err(malformed(message, "a varint field has the wrong wire type")),
    }
}

fn embedded_json(message: &Message, raw: Option<&[u8]>) -> Result<Value, ProtobufError> {
    match raw {
        None | Some([]) => Ok(Value::Null),
        Some(raw) => serde_json::from_slice(raw).map_err(|source| ProtobufError::EmbeddedJson {
            message: message.name.clone(),
            source,
        }),
    }
}

fn child(table: &Table, message: &Message, tag: u32) -> Option<usize> {
    message
        .fields
        .iter()
        .find_map(|field| match field.field_type {
            FieldType::Message(inner) if field.tag == tag => Some(inner),
            _ => None,
        })
        .filter(|inner| *inner < table.messages.len())
}

fn special_value(
    table: &Table,
    message: &Message,
    special: Special,
    wire: &[(u32, WireValue<'_>)],
) -> Result<Value, ProtobufError> {
    Ok(match special {
        Special::Time | Special::MicroTime => {
            let seconds = varint(message, wire, 1)? as i64;
            let nanos = varint(message, wire, 2)? as i64;
            if seconds == 0 && nanos == 0 {
                return Ok(Value::Null);
            }
            let Some(time) = chrono::DateTime::from_timestamp(seconds, nanos as u32) else {
                return Err(malformed(message, "a time is out of range"));
            };
            let format = if special == Special::Time {
                "%Y-%m-%dT%H:%M:%SZ"
            } else {
                "%Y-%m-%dT%H:%M:%S%.6fZ"
            };
            Value::String(time.format(format).to_string())
        }
        Special::Duration => {
            Value::String(super::duration::format(varint(message, wire, 1)? as i64))
        }
        Special::Quantity => {
            let text = first_bytes(message, wire, 1)?.unwrap_or_default();
            let text = String::from_utf8(text.to_vec())
                .map_err(|_| malformed(message, "a quantity is not UTF-8"))?;
            Value::String(if text.is_empty() {
                "0".to_owned()
            } else {
                text
            })
        }
        Special::IntOrString => {
            if varint(message, wire, 1)? == 1 {
                scalar(message, Scalar::String, first(wire, 3))?
            } else {
                Value::from(varint(message, wire, 2)? as i32)
            }
        }
        Special::RawExtension | Special::FieldsV1 | Special::Json => {
            embedded_json(message, first_bytes(message, wire, 1)?)?
        }
        Special::SchemaOrArray => {
            let schema = child(table, message, 1);
            if let (Some(bytes), Some(inner)) = (first_bytes(message, wire, 1)?, schema) {
                return self::message(table, inner, bytes);
            }
            let mut items = Vec::new();
            if let Some(inner) = child(table, message, 2) {
                for (_, value) in wire.iter().filter(|(tag, _)| *tag == 2) {
                    if let WireValue::Bytes(bytes) = value {
                        items.push(self::message(table, inner, bytes)?);
                    }
                }
            }
            if items.is_empty() {
                Value::Null
            } else {
                Value::Array(items)
            }
        }
        Special::SchemaOrBool => match (first_bytes(message, wire, 2)?, child(table, message, 2)) {
            (Some(bytes), Some(inner)) => self::message(table, inner, bytes)?,
            _ => Value::Bool(varint(message, wire, 1)? != 0),
        },
        Special::SchemaOrStringArray => {
            let property: Vec<Value> = wire
                .iter()
                .filter(|(tag, _)| *tag == 2)
                .map(|(_, value)| scalar(message, Scalar::String, Some(*value)))
                .collect::<Result<_, _>>()?;
            if !property.is_empty() {
                Value::Array(property)
            } else if let (Some(bytes), Some(inner)) =
                (first_bytes(message, wire, 1)?, child(table, message, 1))
            {
                self::message(table, inner, bytes)?
            } else {
                Value::Null
            }
        }
        Special::List => Value::Array(
            wire.iter()
                .filter(|(tag, _)| *tag == 1)
                .map(|(_, value)| scalar(message, Scalar::String, Some(*value)))
                .collect::<Result<_, _>>()?,
        ),
    })
}
