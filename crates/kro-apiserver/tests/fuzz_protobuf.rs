//! Fuzzing of the Kubernetes protobuf decoder ([`decode_object_within`], [`type_of`]) with
//! bodies built from the wire format (an envelope naming a built-in kind around random
//! fields, nested messages and deep nesting), with mutations of bodies our encoder wrote, and
//! with arbitrary bytes.
//!
//! Properties: nothing panics; a refused body is one of the [`ProtobufError`] variants with a
//! message; a decoded body is a JSON object naming the kind its envelope names
//! ([`type_of`] agrees), and its JSON stays within the bound it was decoded under; and what
//! the decoder produces, encoded again, decodes to itself.
//!
//! Fixed seed and corpus (`testdata/fuzz/protobuf/`: hexadecimal, `#` lines are comments): see
//! `fuzzing/mod.rs`.

mod fuzzing;

use kro_apiserver::protobuf::{
    MAX_DECODED_JSON_BYTES, ProtobufError, decode_object, decode_object_within, encode_object,
    type_of,
};
use proptest::prelude::*;
use serde_json::{Value, json};

/// Kinds an envelope names: built-in ones of every shape, a list, `Status`, and ones without a
/// protobuf form.
const KINDS: &[(&str, &str)] = &[
    ("v1", "ConfigMap"),
    ("v1", "Secret"),
    ("v1", "Pod"),
    ("v1", "Service"),
    ("v1", "Event"),
    ("v1", "ConfigMapList"),
    ("v1", "Status"),
    ("apps/v1", "Deployment"),
    ("apps/v1", "ControllerRevision"),
    ("batch/v1", "Job"),
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
    ("example.com/v1", "Widget"),
    ("", ""),
];

/// One field on the wire.
#[derive(Debug, Clone)]
enum Field {
    Varint(u32, u64),
    Fixed64(u32, u64),
    Fixed32(u32, u32),
    Bytes(u32, Vec<u8>),
    Message(u32, Vec<Field>),
    /// A key with a wire type protobuf 3 does not use (3, 4, 6, 7).
    OddWireType(u32, u8),
}

fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    loop {
        let byte = (value & 0x7f) as u8;
        value >>= 7;
        if value == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

fn put_key(out: &mut Vec<u8>, tag: u32, wire_type: u8) {
    put_varint(out, (u64::from(tag) << 3) | u64::from(wire_type));
}

fn put_bytes(out: &mut Vec<u8>, tag: u32, bytes: &[u8]) {
    put_key(out, tag, 2);
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

fn encode(fields: &[Field]) -> Vec<u8> {
    let mut out = Vec::new();
    for field in fields {
        match field {
            Field::Varint(tag, value) => {
                put_key(&mut out, *tag, 0);
                put_varint(&mut out, *value);
            }
            Field::Fixed64(tag, value) => {
                put_key(&mut out, *tag, 1);
                out.extend_from_slice(&value.to_le_bytes());
            }
            Field::Fixed32(tag, value) => {
                put_key(&mut out, *tag, 5);
                out.extend_from_slice(&value.to_le_bytes());
            }
            Field::Bytes(tag, bytes) => put_bytes(&mut out, *tag, bytes),
            Field::Message(tag, fields) => put_bytes(&mut out, *tag, &encode(fields)),
            Field::OddWireType(tag, wire_type) => put_key(&mut out, *tag, *wire_type),
        }
    }
    out
}

/// A Kubernetes protobuf body: the magic, then a `runtime.Unknown` naming the kind around
/// `raw`.
fn envelope(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
    let mut type_meta = Vec::new();
    put_bytes(&mut type_meta, 1, api_version.as_bytes());
    put_bytes(&mut type_meta, 2, kind.as_bytes());
    let mut out = b"k8s\0".to_vec();
    put_bytes(&mut out, 1, &type_meta);
    put_bytes(&mut out, 2, raw);
    put_bytes(&mut out, 3, b"");
    put_bytes(&mut out, 4, b"");
    out
}

fn tag() -> impl Strategy<Value = u32> {
    prop_oneof![
        8 => 1u32..20,
        1 => Just(0u32),
        1 => Just((1u32 << 29) - 1),
        1 => any::<u32>(),
    ]
}

/// Scalars at the edges of their types.
fn number() -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(0u64),
        Just(1u64),
        Just(u64::MAX),
        Just(i64::MAX as u64),
        Just(1u64 << 63),
        any::<u64>(),
    ]
}

fn bytes_value() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        "[a-z0-9.:/-]{0,12}".prop_map(String::into_bytes),
        Just(b"{\"a\":1}".to_vec()),
        Just(b"1e1000000".to_vec()),
        Just(b"100Mi".to_vec()),
        prop::collection::vec(any::<u8>(), 0..16),
    ]
}

/// Fields of a message, nesting a few levels deep.
fn fields() -> impl Strategy<Value = Vec<Field>> {
    let leaf = prop_oneof![
        (tag(), number()).prop_map(|(tag, value)| Field::Varint(tag, value)),
        (tag(), number()).prop_map(|(tag, value)| Field::Fixed64(tag, value)),
        (tag(), any::<u32>()).prop_map(|(tag, value)| Field::Fixed32(tag, value)),
        (tag(), bytes_value()).prop_map(|(tag, bytes)| Field::Bytes(tag, bytes)),
        (tag(), prop::sample::select(&[3u8, 4, 6, 7][..]))
            .prop_map(|(tag, wire_type)| Field::OddWireType(tag, wire_type)),
    ];
    let field = leaf.prop_recursive(5, 48, 6, |inner| {
        (tag(), prop::collection::vec(inner, 0..6))
            .prop_map(|(tag, fields)| Field::Message(tag, fields))
    });
    prop::collection::vec(field, 0..8)
}

/// A message nested `depth` deep at one field number (with a few fields at each level).
fn nested(depth: usize, tag: u32, extra: &[Field]) -> Vec<u8> {
    let mut message = encode(extra);
    for _ in 0..depth {
        let mut outer = encode(extra);
        put_bytes(&mut outer, tag, &message);
        message = outer;
    }
    message
}

/// Objects our encoder writes, to be mutated.
fn samples() -> Vec<Vec<u8>> {
    let container = json!({"name": "web", "image": "nginx:1.27",
        "ports": [{"containerPort": 80, "protocol": "TCP"}],
        "resources": {"limits": {"cpu": "500m", "memory": "64Mi"}},
        "env": [{"name": "A", "value": "1"}]});
    [
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "namespace": "default", "labels": {"app": "c"},
                "creationTimestamp": "2024-05-06T07:08:09Z"},
            "data": {"mode": "fast"}, "binaryData": {"b": "aGVsbG8="}}),
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
            "type": "Opaque", "data": {"k": "dmFsdWU="}}),
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"containers": [container.clone()], "restartPolicy": "Always"},
            "status": {"phase": "Running"}}),
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "d"}},
                "strategy": {"rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1}},
                "template": {"metadata": {"labels": {"app": "d"}},
                    "spec": {"containers": [container]}}}}),
        json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                "names": {"plural": "widgets", "kind": "Widget"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object",
                        "properties": {"spec": {"type": "object",
                            "x-kubernetes-preserve-unknown-fields": true,
                            "default": {"a": [1, 2]}}}}}}]}}),
        json!({"apiVersion": "v1", "kind": "Status", "metadata": {}, "status": "Failure",
            "message": "no", "reason": "NotFound", "code": 404}),
    ]
    .iter()
    .filter_map(|object| encode_object(object).ok())
    .collect()
}

/// A body to decode: built from the wire format, mutated from a sample or the corpus, or
/// arbitrary.
fn body() -> impl Strategy<Value = Vec<u8>> {
    let samples = samples();
    assert!(samples.len() >= 5, "the samples encode");
    let corpus: Vec<Vec<u8>> = fuzzing::corpus("protobuf")
        .iter()
        .map(|entry| hex_entry(&entry.name, &entry.bytes))
        .collect();
    let built = (prop::sample::select(KINDS), fields())
        .prop_map(|((api_version, kind), fields)| envelope(api_version, kind, &encode(&fields)));
    // Schemas nest (`not` is field 28 of JSONSchemaProps), which makes a deep body.
    let deep = (0usize..130, fields()).prop_map(|(depth, extra)| {
        let schema = nested(depth, 28, &extra[..extra.len().min(2)]);
        let mut version = Vec::new();
        put_bytes(&mut version, 1, b"v1");
        let mut validation = Vec::new();
        put_bytes(&mut validation, 1, &schema);
        put_bytes(&mut version, 4, &validation);
        let mut spec = Vec::new();
        put_bytes(&mut spec, 7, &version);
        let mut definition = Vec::new();
        put_bytes(&mut definition, 2, &spec);
        envelope(
            "apiextensions.k8s.io/v1",
            "CustomResourceDefinition",
            &definition,
        )
    });
    let seeds: Vec<Vec<u8>> = samples.into_iter().chain(corpus).collect();
    let mutated = (prop::sample::select(seeds), fuzzing::mutations(6))
        .prop_map(|(seed, mutations)| fuzzing::mutate(seed, &mutations));
    prop_oneof![
        4 => built,
        1 => deep,
        4 => mutated,
        1 => prop::collection::vec(any::<u8>(), 0..64).prop_map(|tail| {
            let mut body = b"k8s\0".to_vec();
            body.extend(tail);
            body
        }),
        1 => prop::collection::vec(any::<u8>(), 0..64),
    ]
}

/// A corpus entry's bytes: its hexadecimal digits, `#` lines left out.
fn hex_entry(name: &str, text: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(text);
    let digits: String = text
        .lines()
        .filter(|line| !line.starts_with('#'))
        .flat_map(|line| line.chars().filter(|c| !c.is_whitespace()))
        .collect();
    assert!(
        digits.len().is_multiple_of(2),
        "{name}: an odd number of digits"
    );
    (0..digits.len())
        .step_by(2)
        .map(|at| {
            u8::from_str_radix(&digits[at..at + 2], 16)
                .unwrap_or_else(|error| panic!("{name}: {error}"))
        })
        .collect()
}

/// The variants a body may be refused with (the encoder's `WrongJson` is not one).
const DECODING_REASONS: &[&str] = &[
    "NoMagic",
    "Malformed",
    "UnknownKind",
    "TooDeep",
    "TooLarge",
    "EmbeddedJson",
];

/// The properties of decoding `bytes` within `limit` bytes of JSON.
fn check(bytes: &[u8], limit: usize) -> Result<(), String> {
    let decoded = match decode_object_within(bytes, limit) {
        Ok(decoded) => decoded,
        Err(error) => return check_error(&error),
    };
    let named = type_of(bytes).map_err(|error| format!("decoded, but type_of says {error}"))?;
    let (Some(api_version), Some(kind)) =
        (decoded["apiVersion"].as_str(), decoded["kind"].as_str())
    else {
        return Err(format!("decoded to something without a type: {decoded}"));
    };
    if (api_version, kind) != (named.0.as_str(), named.1.as_str()) {
        return Err(format!(
            "decoded {api_version} {kind}, type_of says {named:?}"
        ));
    }
    // The budget counts JSON as the decoder makes it, roughly; escaping a string can take six
    // bytes for one, and apiVersion and kind come from the envelope.
    let written = serde_json::to_vec(&decoded).map_or(0, |json| json.len());
    let bound = 6 * limit + 2 * bytes.len() + 64;
    if written > bound {
        return Err(format!("{written} bytes of JSON from a budget of {limit}"));
    }
    // What the decoder produces is Go's normal form: encoding it again and decoding gives it
    // back, but for null members (a pointer to an empty Time decodes to null, as Go's JSON
    // writes it, and a null is then not written again).
    if let Ok(again) = encode_object(&decoded) {
        match decode_object(&again) {
            Ok(round_trip) if without_nulls(&round_trip) == without_nulls(&decoded) => {}
            Ok(round_trip) => {
                return Err(format!("not a fixed point:\n  {decoded}\n  {round_trip}"));
            }
            Err(error) => return Err(format!("our own bytes do not decode: {error}")),
        }
    }
    Ok(())
}

/// `value` without the null members of its objects.
fn without_nulls(value: &Value) -> Value {
    match value {
        Value::Object(members) => Value::Object(
            members
                .iter()
                .filter(|(_, member)| !member.is_null())
                .map(|(key, member)| (key.clone(), without_nulls(member)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_nulls).collect()),
        other => other.clone(),
    }
}

fn check_error(error: &ProtobufError) -> Result<(), String> {
    if !DECODING_REASONS.contains(&error.reason()) || error.to_string().is_empty() {
        return Err(format!("refused with {error:?}"));
    }
    Ok(())
}

fn config() -> ProptestConfig {
    fuzzing::config(3_000, 0x006b_726f_7062_7566)
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn any_body_decodes_within_its_bound_or_is_refused(
        bytes in body(),
        limit in prop::sample::select(&[MAX_DECODED_JSON_BYTES, 4_096, 256][..]),
    ) {
        check(&bytes, limit).map_err(|problem| {
            TestCaseError::fail(format!("{problem}\n  body {}", hex(&bytes)))
        })?;
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

#[test]
fn the_corpus_of_bodies_decodes_within_its_bound_or_is_refused() {
    for entry in fuzzing::corpus("protobuf") {
        let bytes = hex_entry(&entry.name, &entry.bytes);
        for limit in [MAX_DECODED_JSON_BYTES, 4_096] {
            if let Err(problem) = check(&bytes, limit) {
                panic!("{} (within {limit}): {problem}", entry.name);
            }
        }
    }
}

#[test]
fn the_corpus_exercises_each_kind_of_refusal() {
    let reasons: std::collections::BTreeSet<&str> = fuzzing::corpus("protobuf")
        .iter()
        .filter_map(|entry| {
            decode_object_within(&hex_entry(&entry.name, &entry.bytes), 4_096)
                .err()
                .map(|error| error.reason())
        })
        .collect();
    let expected: std::collections::BTreeSet<&str> = DECODING_REASONS.iter().copied().collect();
    assert_eq!(reasons, expected);
    let decoded: Vec<Value> = fuzzing::corpus("protobuf")
        .iter()
        .filter_map(|entry| decode_object(&hex_entry(&entry.name, &entry.bytes)).ok())
        .collect();
    assert!(!decoded.is_empty(), "no corpus entry decodes");
}
