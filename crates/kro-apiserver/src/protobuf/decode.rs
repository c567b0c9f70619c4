//! Protobuf to JSON, as kube-apiserver would answer in JSON after decoding the same bytes
//! into its Go structs: a field absent from the wire is Go's zero value, and the JSON then
//! follows the Go tags (`omitempty` drops zero values of value fields; pointers set to zero
//! stay; structs are always written; a zero `Time` is `null`).

use base64::Engine as _;
use serde_json::{Map, Number, Value};

use super::ProtobufError;
use super::table::{Field, FieldType, Message, Scalar, Special, Table};
use super::wire::{self, WireValue};

/// How deep messages may nest in one body. Each message is a JSON object and may sit in a
/// list or a map, so its JSON is at most twice as deep: within the 128 levels the JSON
/// decoder allows a JSON body, so a decoded body reads back as JSON whatever it holds.
pub(crate) const MAX_MESSAGE_DEPTH: usize = 64;

/// Decodes messages of `table` into their JSON form, refusing a body that nests deeper than
/// [`MAX_MESSAGE_DEPTH`] before it recurses, and one whose JSON would pass `max_json_bytes`
/// as soon as it does (a few bytes of protobuf can stand for a large object: every absent
/// field of a Go struct is written as its zero value).
pub(crate) struct Decoder<'t> {
    table: &'t Table,
    depth: usize,
    /// What the JSON produced so far would take, roughly, in bytes.
    produced: usize,
    max_json_bytes: usize,
    /// The objects with at least one field produced so far.
    objects: usize,
}

/// The most objects with at least one field a body may decode to. Each takes a few hundred
/// bytes in memory (a map node) however little JSON it spells (`{"type":""}`), so the JSON
/// budget alone let 3 MB of protobuf build 140 MiB; 100,000 objects hold about 64 MiB, and
/// are more than any object the server stores has (a Pod of 12,000 containers has 24,000).
pub(crate) const MAX_DECODED_OBJECTS: usize = 100_000;

impl<'t> Decoder<'t> {
    /// A decoder of `table`'s messages whose JSON may take up to `max_json_bytes`.
    pub(crate) fn new(table: &'t Table, max_json_bytes: usize) -> Decoder<'t> {
        Decoder {
            table,
            depth: 0,
            produced: 0,
            max_json_bytes,
            objects: 0,
        }
    }

    /// Decodes one message into its JSON form.
    pub(crate) fn message(&mut self, index: usize, bytes: &[u8]) -> Result<Value, ProtobufError> {
        if self.depth >= MAX_MESSAGE_DEPTH {
            return Err(ProtobufError::TooDeep {
                limit: MAX_MESSAGE_DEPTH,
            });
        }
        self.depth += 1;
        let decoded = message(self, index, bytes);
        self.depth -= 1;
        decoded
    }

    /// Counts `value` (its own size: a container's items are counted as they are made)
    /// against the budget.
    fn charge(&mut self, key: Option<&str>, value: &Value) -> Result<(), ProtobufError> {
        let own = match value {
            Value::Null | Value::Bool(_) => 5,
            Value::Number(_) => 8,
            Value::String(text) => text.len() + 2,
            Value::Array(_) | Value::Object(_) => 2,
        };
        self.produced += own + key.map_or(1, |key| key.len() + 4);
        if self.produced > self.max_json_bytes {
            return Err(ProtobufError::TooLarge {
                limit: self.max_json_bytes,
            });
        }
        if matches!(value, Value::Object(fields) if !fields.is_empty()) {
            self.objects += 1;
            if self.objects > MAX_DECODED_OBJECTS {
                return Err(ProtobufError::TooManyObjects {
                    limit: MAX_DECODED_OBJECTS,
                });
            }
        }
        Ok(())
    }
}

/// Decodes one message into its JSON form (through [`Decoder::message`], which bounds it).
fn message(decoder: &mut Decoder<'_>, index: usize, bytes: &[u8]) -> Result<Value, ProtobufError> {
    let table = decoder.table;
    let message = &table.messages[index];
    let wire = wire::fields(bytes).map_err(|error| malformed(message, error.describe()))?;
    if let Some(special) = message.special {
        let value = special_value(decoder, message, special, &wire)?;
        decoder.charge(None, &value)?;
        return Ok(value);
    }
    let mut object = Map::new();
    for field in &message.fields {
        let values = FieldValues {
            wire: &wire,
            tag: field.tag,
        };
        let Some(json) = &field.json else {
            // An embedded struct: its fields belong to this object.
            let FieldType::Message(inner) = field.field_type else {
                continue;
            };
            let bytes = last_bytes(message, values.last())?.unwrap_or_default();
            if let Value::Object(inlined) = decoder.message(inner, bytes)? {
                object.extend(inlined);
            }
            continue;
        };
        if let Some(value) = field_value(decoder, message, field, values)? {
            decoder.charge(Some(json), &value)?;
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

/// The values of one field among a message's wire fields, read where they are: a repeated
/// field of 1.5 million items is not copied out of the message first.
#[derive(Clone, Copy)]
struct FieldValues<'w, 'a> {
    wire: &'w [(u32, WireValue<'a>)],
    tag: u32,
}

impl<'w, 'a> FieldValues<'w, 'a> {
    fn iter(self) -> impl Iterator<Item = WireValue<'a>> + 'w {
        let tag = self.tag;
        self.wire
            .iter()
            .filter(move |(found, _)| *found == tag)
            .map(|(_, value)| *value)
    }

    /// The last value: what a field that is not repeated holds.
    fn last(self) -> Option<WireValue<'a>> {
        self.wire
            .iter()
            .rev()
            .find(|(found, _)| *found == self.tag)
            .map(|(_, value)| *value)
    }
}

fn last_bytes<'a>(
    message: &Message,
    last: Option<WireValue<'a>>,
) -> Result<Option<&'a [u8]>, ProtobufError> {
    match last {
        None => Ok(None),
        Some(WireValue::Bytes(bytes)) => Ok(Some(bytes)),
        Some(_) => Err(malformed(message, "a message field has a scalar wire type")),
    }
}

/// The JSON value of one field, or `None` when Go's JSON would leave it out.
fn field_value(
    decoder: &mut Decoder<'_>,
    message: &Message,
    field: &Field,
    values: FieldValues<'_, '_>,
) -> Result<Option<Value>, ProtobufError> {
    match &field.field_type {
        FieldType::Map(key, value_type) => {
            let mut map = Map::new();
            for value in values.iter() {
                let WireValue::Bytes(entry) = value else {
                    return Err(malformed(message, "a map entry is not length-delimited"));
                };
                let entry = wire::fields(entry).map_err(|e| malformed(message, e.describe()))?;
                let entry_key = FieldValues {
                    wire: &entry,
                    tag: 1,
                };
                let key = scalar(message, *key, entry_key.last())?;
                let key = match key {
                    Value::String(text) => text,
                    other => other.to_string(),
                };
                let entry_value = FieldValues {
                    wire: &entry,
                    tag: 2,
                };
                let value = match value_type.as_ref() {
                    FieldType::Scalar(kind) => scalar(message, *kind, entry_value.last())?,
                    FieldType::Message(inner) => {
                        let bytes = last_bytes(message, entry_value.last())?.unwrap_or_default();
                        decoder.message(*inner, bytes)?
                    }
                    FieldType::Map(..) => Value::Null,
                };
                decoder.charge(Some(&key), &value)?;
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
            for value in values.iter() {
                match (&field.field_type, &value) {
                    (FieldType::Message(inner), WireValue::Bytes(bytes)) => {
                        let item = decoder.message(*inner, bytes)?;
                        decoder.charge(None, &item)?;
                        items.push(item);
                    }
                    (FieldType::Scalar(kind), WireValue::Bytes(bytes))
                        if !matches!(kind, Scalar::String | Scalar::Bytes) =>
                    {
                        let varints = wire::packed_varints(bytes)
                            .map_err(|error| malformed(message, error.describe()))?;
                        for varint in varints {
                            let item = scalar(message, *kind, Some(WireValue::Varint(varint)))?;
                            decoder.charge(None, &item)?;
                            items.push(item);
                        }
                    }
                    (FieldType::Scalar(kind), value) => {
                        let item = scalar(message, *kind, Some(*value))?;
                        decoder.charge(None, &item)?;
                        items.push(item);
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
        FieldType::Message(inner) => match last_bytes(message, values.last())? {
            Some(bytes) => Ok(Some(decoder.message(*inner, bytes)?)),
            None if field.pointer => Ok((!field.omitempty).then_some(Value::Null)),
            // An absent named slice (`Verbs`) is Go's nil slice.
            None if decoder.table.messages[*inner].special == Some(Special::List) => {
                Ok((!field.omitempty).then_some(Value::Null))
            }
            // A Go struct value is always there, and always written (omitempty does not
            // apply to structs).
            None => Ok(Some(decoder.message(*inner, &[])?)),
        },
        FieldType::Scalar(kind) => {
            let last = values.last();
            let value = scalar(message, *kind, last)?;
            if last.is_none() && field.pointer {
                return Ok((!field.omitempty).then_some(Value::Null));
            }
            if *kind == Scalar::Bytes && last.is_none() {
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
    decoder: &mut Decoder<'_>,
    message: &Message,
    special: Special,
    wire: &[(u32, WireValue<'_>)],
) -> Result<Value, ProtobufError> {
    let table = decoder.table;
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
                return decoder.message(inner, bytes);
            }
            let mut items = Vec::new();
            if let Some(inner) = child(table, message, 2) {
                for (_, value) in wire.iter().filter(|(tag, _)| *tag == 2) {
                    if let WireValue::Bytes(bytes) = value {
                        let item = decoder.message(inner, bytes)?;
                        decoder.charge(None, &item)?;
                        items.push(item);
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
            (Some(bytes), Some(inner)) => decoder.message(inner, bytes)?,
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
                decoder.message(inner, bytes)?
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protobuf::{MAGIC, ProtobufError, decode_object, decode_object_within};

    /// The tag and message of the field `json` of message `index`.
    fn field(table: &Table, index: usize, json: &str) -> (u32, usize) {
        table.messages[index]
            .fields
            .iter()
            .find_map(|field| match (&field.json, &field.field_type) {
                (Some(name), FieldType::Message(inner)) if name == json => {
                    Some((field.tag, *inner))
                }
                _ => None,
            })
            .unwrap_or_else(|| panic!("{} has no message field {json}", table.messages[index].name))
    }

    /// A body of `kind`: the magic, then the envelope around `raw`.
    fn body(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
        let mut type_meta = Vec::new();
        wire::put_bytes_field(&mut type_meta, 1, api_version.as_bytes());
        wire::put_bytes_field(&mut type_meta, 2, kind.as_bytes());
        let mut out = MAGIC.to_vec();
        wire::put_bytes_field(&mut out, 1, &type_meta);
        wire::put_bytes_field(&mut out, 2, raw);
        out
    }

    /// A CRD whose schema nests `not` `depth` deep, built without recursion.
    fn crd_with_nested_not(depth: usize) -> Vec<u8> {
        let table = Table::get();
        let crd = table
            .kind("apiextensions.k8s.io/v1", "CustomResourceDefinition")
            .expect("the CRD kind");
        let (spec_tag, spec) = field(table, crd, "spec");
        let (versions_tag, version) = field(table, spec, "versions");
        let (schema_tag, validation) = field(table, version, "schema");
        let (open_api_tag, props) = field(table, validation, "openAPIV3Schema");
        let (not_tag, _) = field(table, props, "not");
        let mut schema = Vec::new();
        for _ in 0..depth {
            let mut outer = Vec::new();
            wire::put_bytes_field(&mut outer, not_tag, &schema);
            schema = outer;
        }
        let nest = |tag: u32, inner: &[u8]| {
            let mut outer = Vec::new();
            wire::put_bytes_field(&mut outer, tag, inner);
            outer
        };
        let validation = nest(open_api_tag, &schema);
        let version = nest(schema_tag, &validation);
        let spec = nest(versions_tag, &version);
        let crd = nest(spec_tag, &spec);
        body("apiextensions.k8s.io/v1", "CustomResourceDefinition", &crd)
    }

    #[test]
    fn a_body_nested_deeper_than_allowed_is_refused_before_the_stack_runs_out() {
        // 2,000 deep used to overflow the stack and abort the whole process.
        for depth in [2_000, 20_000] {
            let error = decode_object(&crd_with_nested_not(depth)).expect_err("too deep");
            assert!(
                matches!(
                    error,
                    ProtobufError::TooDeep {
                        limit: MAX_MESSAGE_DEPTH
                    }
                ),
                "{error}"
            );
            assert_eq!(error.to_string(), "messages nest more than 64 deep");
        }
        let fine = decode_object(&crd_with_nested_not(50)).expect("50 deep is decoded");
        let mut schema = &fine["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
        let mut depth = 0;
        while let Some(inner) = schema.get("not") {
            schema = inner;
            depth += 1;
        }
        assert_eq!(depth, 50);
        let json = serde_json::to_vec(&fine).expect("JSON");
        serde_json::from_slice::<Value>(&json).expect("reads back within the JSON nesting limit");
    }

    #[test]
    fn a_small_body_standing_for_a_huge_object_is_refused_while_decoding() {
        // A NodeList of 1.5 million empty items: 3 MB on the wire, each item a Node whose
        // absent fields are all written out (this peaked at 6.6 GB). Each Node holds a few
        // objects with fields, and their count runs out first.
        let raw: Vec<u8> = [0x12u8, 0x00].repeat(1_500_000);
        let bytes = body("v1", "NodeList", &raw);
        let error = decode_object_within(&bytes, 6 << 20).expect_err("too many objects");
        assert!(
            matches!(error, ProtobufError::TooManyObjects { limit } if limit == MAX_DECODED_OBJECTS),
            "{error}"
        );
        assert_eq!(
            error.to_string(),
            "the body decodes to more than 100000 objects"
        );
        // Within a smaller JSON budget, the bytes run out first.
        let error = decode_object_within(&bytes, 1 << 20).expect_err("too large");
        assert!(
            matches!(error, ProtobufError::TooLarge { limit } if limit == 1 << 20),
            "{error}"
        );
        assert_eq!(
            error.to_string(),
            "the body decodes to more than 1 MiB (1048576 bytes) of JSON"
        );
        // A list of a few items is decoded as before.
        let few = body("v1", "NodeList", &[0x12u8, 0x00].repeat(3));
        let decoded = decode_object_within(&few, 6 << 20).expect("three Nodes");
        assert_eq!(decoded["items"].as_array().map(Vec::len), Some(3));
    }
}
