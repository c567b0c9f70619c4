//! The protobuf wire form of a v2 document: gnostic's `openapi.v2.Document`
//! (`openapiv2/OpenAPIv2.proto` in github.com/google/gnostic-models), which client-go's
//! discovery client decodes.
//!
//! Only what a Kubernetes document holds is encoded: info, paths with their operations,
//! parameters and responses, and definitions. Vendor extensions (`x-…`) and schema values
//! (`default`, `enum`, `example`) are `Any` messages whose `yaml` field holds the value as
//! JSON text, which is YAML and what kube-openapi unmarshals.

use serde_json::{Map, Value};

/// A protobuf message being written (proto3: scalar defaults are not written).
#[derive(Default)]
struct Message {
    bytes: Vec<u8>,
}

const VARINT: u64 = 0;
const FIXED64: u64 = 1;
const LENGTH_DELIMITED: u64 = 2;

impl Message {
    fn varint(&mut self, mut value: u64) {
        while value >= 0x80 {
            self.bytes.push((value as u8 & 0x7f) | 0x80);
            value >>= 7;
        }
        self.bytes.push(value as u8);
    }

    fn key(&mut self, field: u64, wire_type: u64) {
        self.varint((field << 3) | wire_type);
    }

    fn bytes_field(&mut self, field: u64, bytes: &[u8]) {
        self.key(field, LENGTH_DELIMITED);
        self.varint(bytes.len() as u64);
        self.bytes.extend_from_slice(bytes);
    }

    fn string(&mut self, field: u64, value: &str) {
        if !value.is_empty() {
            self.bytes_field(field, value.as_bytes());
        }
    }

    fn strings(&mut self, field: u64, values: Option<&Value>) {
        for value in values.and_then(Value::as_array).into_iter().flatten() {
            if let Some(text) = value.as_str() {
                // Repeated strings are written even when empty.
                self.bytes_field(field, text.as_bytes());
            }
        }
    }

    fn boolean(&mut self, field: u64, value: Option<&Value>) {
        if value.and_then(Value::as_bool) == Some(true) {
            self.key(field, VARINT);
            self.varint(1);
        }
    }

    fn double(&mut self, field: u64, value: Option<&Value>) {
        if let Some(number) = value
            .and_then(Value::as_f64)
            .filter(|number| *number != 0.0)
        {
            self.key(field, FIXED64);
            self.bytes.extend_from_slice(&number.to_le_bytes());
        }
    }

    fn int64(&mut self, field: u64, value: Option<&Value>) {
        if let Some(number) = value.and_then(Value::as_i64).filter(|number| *number != 0) {
            self.key(field, VARINT);
            // Negative int64 values are ten-byte two's complement varints.
            self.varint(number as u64);
        }
    }

    fn message(&mut self, field: u64, message: Message) {
        self.bytes_field(field, &message.bytes);
    }

    fn text(&mut self, field: u64, value: Option<&Value>) {
        if let Some(text) = value.and_then(Value::as_str) {
            self.string(field, text);
        }
    }
}

/// Encodes a v2 document (as built by [`super::document`]) as `openapi.v2.Document`.
pub fn encode_document(document: &Value) -> Vec<u8> {
    let mut message = Message::default();
    message.text(1, document.get("swagger"));
    if let Some(info) = document.get("info") {
        let mut encoded = Message::default();
        encoded.text(1, info.get("title"));
        encoded.text(2, info.get("version"));
        encoded.text(3, info.get("description"));
        message.message(2, encoded);
    }
    message.strings(5, document.get("schemes"));
    message.strings(6, document.get("consumes"));
    message.strings(7, document.get("produces"));
    if let Some(paths) = document["paths"].as_object() {
        let mut encoded = Message::default();
        for (path, item) in paths {
            if path.starts_with("x-") {
                continue;
            }
            let mut named = Message::default();
            named.string(1, path);
            named.message(2, path_item(item));
            encoded.message(2, named);
        }
        message.message(8, encoded);
    }
    if let Some(definitions) = document["definitions"].as_object() {
        message.message(9, named_schemas(definitions));
    }
    vendor_extensions(&mut message, 16, document);
    message.bytes
}

/// `Definitions` and `Properties` share one shape: repeated `NamedSchema` at field 1.
fn named_schemas(schemas: &Map<String, Value>) -> Message {
    let mut encoded = Message::default();
    for (name, schema_value) in schemas {
        let mut named = Message::default();
        named.string(1, name);
        named.message(2, schema(schema_value));
        encoded.message(1, named);
    }
    encoded
}

/// An `Any` carrying a value as YAML (JSON text).
fn any(value: &Value) -> Message {
    let mut encoded = Message::default();
    encoded.string(2, &serde_json::to_string(value).unwrap_or_default());
    encoded
}

/// The `x-…` members of an object as repeated `NamedAny` at `field`.
fn vendor_extensions(message: &mut Message, field: u64, object: &Value) {
    for (key, value) in object.as_object().into_iter().flatten() {
        if key.starts_with("x-") {
            let mut named = Message::default();
            named.string(1, key);
            named.message(2, any(value));
            message.message(field, named);
        }
    }
}

fn path_item(item: &Value) -> Message {
    let mut encoded = Message::default();
    encoded.text(1, item.get("$ref"));
    for (field, method) in [
        (2, "get"),
        (3, "put"),
        (4, "post"),
        (5, "delete"),
        (6, "options"),
        (7, "head"),
        (8, "patch"),
    ] {
        if let Some(operation_value) = item.get(method) {
            encoded.message(field, operation(operation_value));
        }
    }
    for parameter in item["parameters"].as_array().into_iter().flatten() {
        encoded.message(9, parameters_item(parameter));
    }
    vendor_extensions(&mut encoded, 10, item);
    encoded
}

fn operation(value: &Value) -> Message {
    let mut encoded = Message::default();
    encoded.strings(1, value.get("tags"));
    encoded.text(2, value.get("summary"));
    encoded.text(3, value.get("description"));
    encoded.text(5, value.get("operationId"));
    encoded.strings(6, value.get("produces"));
    encoded.strings(7, value.get("consumes"));
    for parameter in value["parameters"].as_array().into_iter().flatten() {
        encoded.message(8, parameters_item(parameter));
    }
    if let Some(responses) = value["responses"].as_object() {
        let mut encoded_responses = Message::default();
        for (code, response_value) in responses {
            let mut named = Message::default();
            named.string(1, code);
            let mut one_of = Message::default();
            if let Some(reference) = response_value.get("$ref") {
                one_of.message(2, json_reference(reference));
            } else {
                one_of.message(1, response(response_value));
            }
            named.message(2, one_of);
            encoded_responses.message(1, named);
        }
        encoded.message(9, encoded_responses);
    }
    encoded.strings(10, value.get("schemes"));
    encoded.boolean(11, value.get("deprecated"));
    vendor_extensions(&mut encoded, 13, value);
    encoded
}

fn json_reference(reference: &Value) -> Message {
    let mut encoded = Message::default();
    encoded.text(1, Some(reference));
    encoded
}

fn response(value: &Value) -> Message {
    let mut encoded = Message::default();
    encoded.text(1, value.get("description"));
    if let Some(schema_value) = value.get("schema") {
        // SchemaItem: a schema (1) rather than a file schema (2).
        let mut item = Message::default();
        item.message(1, schema(schema_value));
        encoded.message(2, item);
    }
    vendor_extensions(&mut encoded, 5, value);
    encoded
}

/// `ParametersItem`: a reference, a body parameter or a non-body parameter.
fn parameters_item(value: &Value) -> Message {
    let mut item = Message::default();
    if let Some(reference) = value.get("$ref") {
        item.message(2, json_reference(reference));
        return item;
    }
    let mut parameter = Message::default();
    let location = value["in"].as_str().unwrap_or_default();
    if location == "body" {
        let mut body = Message::default();
        body.text(1, value.get("description"));
        body.text(2, value.get("name"));
        body.text(3, value.get("in"));
        body.boolean(4, value.get("required"));
        if let Some(schema_value) = value.get("schema") {
            body.message(5, schema(schema_value));
        }
        vendor_extensions(&mut body, 6, value);
        parameter.message(1, body);
    } else {
        // Query and form-data sub-schemas have `allowEmptyValue` at 5 and so number the
        // rest one higher than header and path sub-schemas.
        let (one_of_field, shift) = match location {
            "header" => (1, 0),
            "formData" => (2, 1),
            "query" => (3, 1),
            _ => (4, 0),
        };
        let mut sub = Message::default();
        sub.boolean(1, value.get("required"));
        sub.text(2, value.get("in"));
        sub.text(3, value.get("description"));
        sub.text(4, value.get("name"));
        if shift == 1 {
            sub.boolean(5, value.get("allowEmptyValue"));
        }
        sub.text(5 + shift, value.get("type"));
        sub.text(6 + shift, value.get("format"));
        sub.text(8 + shift, value.get("collectionFormat"));
        if let Some(default) = value.get("default") {
            sub.message(9 + shift, any(default));
        }
        sub.text(16 + shift, value.get("pattern"));
        sub.boolean(19 + shift, value.get("uniqueItems"));
        for member in value["enum"].as_array().into_iter().flatten() {
            sub.message(20 + shift, any(member));
        }
        vendor_extensions(&mut sub, 22 + shift, value);
        let mut non_body = Message::default();
        non_body.message(one_of_field, sub);
        parameter.message(2, non_body);
    }
    item.message(1, parameter);
    item
}

fn schema(value: &Value) -> Message {
    let mut encoded = Message::default();
    encoded.text(1, value.get("$ref"));
    encoded.text(2, value.get("format"));
    encoded.text(3, value.get("title"));
    encoded.text(4, value.get("description"));
    if let Some(default) = value.get("default") {
        encoded.message(5, any(default));
    }
    encoded.double(6, value.get("multipleOf"));
    encoded.double(7, value.get("maximum"));
    encoded.boolean(8, value.get("exclusiveMaximum"));
    encoded.double(9, value.get("minimum"));
    encoded.boolean(10, value.get("exclusiveMinimum"));
    encoded.int64(11, value.get("maxLength"));
    encoded.int64(12, value.get("minLength"));
    encoded.text(13, value.get("pattern"));
    encoded.int64(14, value.get("maxItems"));
    encoded.int64(15, value.get("minItems"));
    encoded.boolean(16, value.get("uniqueItems"));
    encoded.int64(17, value.get("maxProperties"));
    encoded.int64(18, value.get("minProperties"));
    encoded.strings(19, value.get("required"));
    for member in value["enum"].as_array().into_iter().flatten() {
        encoded.message(20, any(member));
    }
    match value.get("additionalProperties") {
        Some(Value::Bool(allowed)) => {
            // A oneof member is written even when it holds the default.
            let mut item = Message::default();
            item.key(2, VARINT);
            item.varint(u64::from(*allowed));
            encoded.message(21, item);
        }
        Some(additional @ Value::Object(_)) => {
            let mut item = Message::default();
            item.message(1, schema(additional));
            encoded.message(21, item);
        }
        _ => {}
    }
    match value.get("type") {
        Some(Value::String(kind)) => {
            let mut item = Message::default();
            item.string(1, kind);
            encoded.message(22, item);
        }
        Some(kinds @ Value::Array(_)) => {
            let mut item = Message::default();
            item.strings(1, Some(kinds));
            encoded.message(22, item);
        }
        _ => {}
    }
    match value.get("items") {
        Some(Value::Array(items)) => {
            let mut item = Message::default();
            for member in items {
                item.message(1, schema(member));
            }
            encoded.message(23, item);
        }
        Some(single @ Value::Object(_)) => {
            let mut item = Message::default();
            item.message(1, schema(single));
            encoded.message(23, item);
        }
        _ => {}
    }
    for part in value["allOf"].as_array().into_iter().flatten() {
        encoded.message(24, schema(part));
    }
    if let Some(properties) = value["properties"].as_object() {
        encoded.message(25, named_schemas(properties));
    }
    encoded.text(26, value.get("discriminator"));
    encoded.boolean(27, value.get("readOnly"));
    if let Some(example) = value.get("example") {
        encoded.message(30, any(example));
    }
    vendor_extensions(&mut encoded, 31, value);
    encoded
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// One decoded field: its number and either a varint or the bytes it holds.
    #[derive(Debug, PartialEq)]
    enum Field {
        Varint(u64),
        Fixed64(u64),
        Bytes(Vec<u8>),
    }

    fn read_varint(bytes: &[u8], at: &mut usize) -> u64 {
        let mut value = 0u64;
        let mut shift = 0;
        loop {
            let byte = bytes[*at];
            *at += 1;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return value;
            }
            shift += 7;
        }
    }

    /// Decodes one message level (panics on malformed input: it is our own output).
    fn decode(bytes: &[u8]) -> Vec<(u64, Field)> {
        let mut fields = Vec::new();
        let mut at = 0;
        while at < bytes.len() {
            let key = read_varint(bytes, &mut at);
            let field = match key & 7 {
                0 => Field::Varint(read_varint(bytes, &mut at)),
                1 => {
                    let mut raw = [0u8; 8];
                    raw.copy_from_slice(&bytes[at..at + 8]);
                    at += 8;
                    Field::Fixed64(u64::from_le_bytes(raw))
                }
                2 => {
                    let length = read_varint(bytes, &mut at) as usize;
                    let value = bytes[at..at + length].to_vec();
                    at += length;
                    Field::Bytes(value)
                }
                other => panic!("wire type {other}"),
            };
            fields.push((key >> 3, field));
        }
        fields
    }

    fn bytes_of(fields: &[(u64, Field)], number: u64) -> Vec<Vec<u8>> {
        fields
            .iter()
            .filter(|(field, _)| *field == number)
            .filter_map(|(_, value)| match value {
                Field::Bytes(bytes) => Some(bytes.clone()),
                _ => None,
            })
            .collect()
    }

    fn text_of(fields: &[(u64, Field)], number: u64) -> Vec<String> {
        bytes_of(fields, number)
            .into_iter()
            .map(|bytes| String::from_utf8(bytes).expect("utf-8"))
            .collect()
    }

    #[test]
    fn a_document_encodes_as_gnostic_numbers_its_fields() {
        let document = json!({
            "swagger": "2.0",
            "info": {"title": "Kubernetes", "version": "v1.33.0"},
            "paths": {
                "/api/v1/namespaces/{namespace}/configmaps/{name}": {
                    "parameters": [{"name": "name", "in": "path", "required": true, "type": "string"}],
                    "patch": {
                        "operationId": "patchConfigMap",
                        "consumes": ["application/merge-patch+json"],
                        "parameters": [
                            {"name": "body", "in": "body", "required": true, "schema": {"$ref": "#/definitions/Patch"}},
                            {"name": "fieldValidation", "in": "query", "type": "string", "uniqueItems": true},
                        ],
                        "responses": {"200": {"description": "OK", "schema": {"$ref": "#/definitions/ConfigMap"}}},
                        "x-kubernetes-group-version-kind": {"group": "", "version": "v1", "kind": "ConfigMap"},
                    },
                },
            },
            "definitions": {
                "ConfigMap": {
                    "type": "object",
                    "required": ["data"],
                    "properties": {
                        "data": {"type": "object", "additionalProperties": {"type": "string"}},
                        "items": {"type": "array", "items": {"$ref": "#/definitions/Patch"}, "x-kubernetes-patch-merge-key": "name", "maxItems": 3},
                    },
                    "x-kubernetes-group-version-kind": [{"group": "", "version": "v1", "kind": "ConfigMap"}],
                },
                "Patch": {"type": "object", "additionalProperties": false, "minimum": -1.5},
            },
        });
        let top = decode(&encode_document(&document));
        assert_eq!(text_of(&top, 1), ["2.0"]);
        let info = decode(&bytes_of(&top, 2)[0]);
        assert_eq!(text_of(&info, 1), ["Kubernetes"]);
        assert_eq!(text_of(&info, 2), ["v1.33.0"]);

        // paths → NamedPathItem → PathItem.patch → Operation
        let paths = decode(&bytes_of(&top, 8)[0]);
        let named = decode(&bytes_of(&paths, 2)[0]);
        assert_eq!(
            text_of(&named, 1),
            ["/api/v1/namespaces/{namespace}/configmaps/{name}"]
        );
        let item = decode(&bytes_of(&named, 2)[0]);
        let path_parameter = decode(&bytes_of(&item, 9)[0]);
        let path_parameter = decode(&bytes_of(&path_parameter, 1)[0]); // Parameter
        let non_body = decode(&bytes_of(&path_parameter, 2)[0]);
        let path_sub = decode(&bytes_of(&non_body, 4)[0]);
        assert_eq!(text_of(&path_sub, 4), ["name"]);
        assert_eq!(text_of(&path_sub, 5), ["string"]);
        assert!(path_sub.contains(&(1, Field::Varint(1))));

        let patch = decode(&bytes_of(&item, 8)[0]);
        assert_eq!(text_of(&patch, 5), ["patchConfigMap"]);
        assert_eq!(text_of(&patch, 7), ["application/merge-patch+json"]);
        let parameters = bytes_of(&patch, 8);
        assert_eq!(parameters.len(), 2);
        let body = decode(&bytes_of(&decode(&parameters[0]), 1)[0]);
        let body = decode(&bytes_of(&body, 1)[0]);
        assert_eq!(text_of(&body, 2), ["body"]);
        let body_schema = decode(&bytes_of(&body, 5)[0]);
        assert_eq!(text_of(&body_schema, 1), ["#/definitions/Patch"]);
        // The query parameter is found where client-go's verifier looks:
        // ParametersItem.parameter.non_body_parameter.query_parameter_sub_schema.name.
        let query = decode(&bytes_of(&decode(&parameters[1]), 1)[0]);
        let query = decode(&bytes_of(&query, 2)[0]);
        let query = decode(&bytes_of(&query, 3)[0]);
        assert_eq!(text_of(&query, 4), ["fieldValidation"]);
        assert_eq!(text_of(&query, 6), ["string"]);
        assert!(query.contains(&(20, Field::Varint(1))));
        let extension = decode(&bytes_of(&patch, 13)[0]);
        assert_eq!(text_of(&extension, 1), ["x-kubernetes-group-version-kind"]);
        let yaml = text_of(&decode(&bytes_of(&extension, 2)[0]), 2);
        let parsed: Value = serde_json::from_str(&yaml[0]).expect("json is yaml");
        assert_eq!(parsed["kind"], "ConfigMap");
        let responses = decode(&bytes_of(&patch, 9)[0]);
        let ok = decode(&bytes_of(&responses, 1)[0]);
        assert_eq!(text_of(&ok, 1), ["200"]);
        let response = decode(&bytes_of(&decode(&bytes_of(&ok, 2)[0]), 1)[0]);
        assert_eq!(text_of(&response, 1), ["OK"]);

        // definitions → NamedSchema → Schema
        let definitions = decode(&bytes_of(&top, 9)[0]);
        let named: Vec<_> = bytes_of(&definitions, 1)
            .iter()
            .map(|bytes| decode(bytes))
            .collect();
        assert_eq!(text_of(&named[0], 1), ["ConfigMap"]);
        let config_map = decode(&bytes_of(&named[0], 2)[0]);
        assert_eq!(
            text_of(&decode(&bytes_of(&config_map, 22)[0]), 1),
            ["object"]
        );
        assert_eq!(text_of(&config_map, 19), ["data"]);
        let properties = decode(&bytes_of(&config_map, 25)[0]);
        let property_names: Vec<String> = bytes_of(&properties, 1)
            .iter()
            .flat_map(|bytes| text_of(&decode(bytes), 1))
            .collect();
        assert_eq!(property_names, ["data", "items"]);
        let data = decode(&bytes_of(&decode(&bytes_of(&properties, 1)[0]), 2)[0]);
        let additional = decode(&bytes_of(&data, 21)[0]);
        let string_schema = decode(&bytes_of(&additional, 1)[0]);
        assert_eq!(
            text_of(&decode(&bytes_of(&string_schema, 22)[0]), 1),
            ["string"]
        );
        let items = decode(&bytes_of(&decode(&bytes_of(&properties, 1)[1]), 2)[0]);
        assert!(items.contains(&(14, Field::Varint(3))));
        let item_schema = decode(&bytes_of(&decode(&bytes_of(&items, 23)[0]), 1)[0]);
        assert_eq!(text_of(&item_schema, 1), ["#/definitions/Patch"]);
        let merge_key = decode(&bytes_of(&items, 31)[0]);
        assert_eq!(text_of(&merge_key, 1), ["x-kubernetes-patch-merge-key"]);
        assert_eq!(
            text_of(&decode(&bytes_of(&merge_key, 2)[0]), 2),
            ["\"name\""]
        );

        let patch_schema = decode(&bytes_of(&named[1], 2)[0]);
        // additionalProperties: false is written although false is the default.
        assert_eq!(
            decode(&bytes_of(&patch_schema, 21)[0]),
            [(2, Field::Varint(0))]
        );
        assert!(patch_schema.contains(&(9, Field::Fixed64((-1.5f64).to_bits()))));
    }

    #[test]
    fn varints_cross_byte_boundaries() {
        let mut message = Message::default();
        message.varint(300);
        assert_eq!(message.bytes, [0xac, 0x02]);
        let mut negative = Message::default();
        negative.int64(1, Some(&json!(-1)));
        assert_eq!(negative.bytes.len(), 11);
    }
}
