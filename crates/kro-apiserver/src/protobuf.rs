//! Kubernetes protobuf (`application/vnd.kubernetes.protobuf`) for the built-in kinds.
//!
//! The server stores JSON; protobuf is a translation at the edge. A body is the magic
//! `k8s\0` followed by a `runtime.Unknown` envelope (`typeMeta {apiVersion, kind}`, `raw`,
//! `contentEncoding`, `contentType`) whose `raw` is the object's message. [`decode_object`]
//! turns such a body into the JSON object kube-apiserver would answer for the same bytes,
//! and [`encode_object`] writes a JSON object as the bytes kube-apiserver would write.
//!
//! Both are driven by one table of messages (`protobuf/messages.table`), generated from the
//! `k8s-pb` crate's message definitions and the Go types of Kubernetes 1.33 by
//! `tests/protobuf_table.rs`; the Kubernetes types with their own wire forms (`Time`,
//! `MicroTime`, `Duration`, `Quantity`, `IntOrString`, `RawExtension`, `FieldsV1`, the
//! apiextensions `JSON` and `JSONSchemaPropsOr*` types) are handled by name.
//!
//! Content negotiation (which requests get protobuf, 415 and 406 for custom resources, and
//! watch streams of length-prefixed frames) is in `negotiation`.
//!
//! ```
//! use kro_apiserver::protobuf::{decode_object, encode_object};
//! use serde_json::json;
//!
//! let config_map = json!({
//!     "apiVersion": "v1",
//!     "kind": "ConfigMap",
//!     "metadata": {"name": "settings", "namespace": "default", "creationTimestamp": null},
//!     "data": {"mode": "fast"},
//! });
//! let bytes = encode_object(&config_map)?;
//! assert!(bytes.starts_with(b"k8s\0"));
//! assert_eq!(decode_object(&bytes)?, config_map);
//! # Ok::<(), kro_apiserver::protobuf::ProtobufError>(())
//! ```

mod decode;
mod duration;
mod encode;
pub(crate) mod negotiation;
mod table;
mod wire;

use serde_json::Value;

use table::Table;

/// The media type of Kubernetes protobuf.
pub const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// The four bytes every Kubernetes protobuf body starts with.
const MAGIC: &[u8; 4] = b"k8s\0";

/// Why a body could not be translated between protobuf and JSON.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProtobufError {
    /// The body does not start with `k8s\0`.
    #[error("the body does not start with the Kubernetes protobuf magic number")]
    NoMagic,
    /// The bytes are not a well-formed message of the type expected.
    #[error("malformed protobuf in {message}: {problem}")]
    Malformed {
        /// The message being decoded.
        message: String,
        /// What is wrong.
        problem: &'static str,
    },
    /// The kind has no protobuf form here (custom resources, or a kind outside the catalog).
    #[error("{api_version}, Kind={kind} has no protobuf encoding")]
    UnknownKind {
        /// The object's `apiVersion`.
        api_version: String,
        /// The object's `kind`.
        kind: String,
    },
    /// A JSON value does not have the type its field needs.
    #[error("field {field} of {message}: expected {expected}")]
    WrongJson {
        /// The message being encoded.
        message: String,
        /// The JSON property.
        field: String,
        /// What the field needs.
        expected: &'static str,
    },
    /// Messages nest deeper than a body may.
    #[error("messages nest more than {limit} deep")]
    TooDeep {
        /// How deep they may nest.
        limit: usize,
    },
    /// The body stands for an object larger than a request may carry.
    #[error("the body decodes to more than {} of JSON", size(*.limit))]
    TooLarge {
        /// The most JSON, in bytes, a body may decode to.
        limit: usize,
    },
    /// The body stands for more objects than a request may make the server hold: each
    /// takes a few hundred bytes of memory however little JSON it spells.
    #[error("the body decodes to more than {limit} objects")]
    TooManyObjects {
        /// The most objects (with at least one field) a body may decode to.
        limit: usize,
    },
    /// Embedded JSON (`RawExtension`, `FieldsV1`, `JSON`) is not valid JSON.
    #[error("the embedded JSON of {message} is not valid")]
    EmbeddedJson {
        /// The message being translated.
        message: String,
        /// The parse or print error.
        #[source]
        source: serde_json::Error,
    },
}

impl ProtobufError {
    /// A stable CamelCase name of the error.
    pub fn reason(&self) -> &'static str {
        match self {
            ProtobufError::NoMagic => "NoMagic",
            ProtobufError::Malformed { .. } => "Malformed",
            ProtobufError::UnknownKind { .. } => "UnknownKind",
            ProtobufError::WrongJson { .. } => "WrongJson",
            ProtobufError::EmbeddedJson { .. } => "EmbeddedJson",
            ProtobufError::TooDeep { .. } => "TooDeep",
            ProtobufError::TooLarge { .. } => "TooLarge",
            ProtobufError::TooManyObjects { .. } => "TooManyObjects",
        }
    }
}

/// A size in bytes as a person reads it: `3 MiB (3145728 bytes)`.
fn size(bytes: usize) -> String {
    const MIB: usize = 1 << 20;
    const KIB: usize = 1 << 10;
    if bytes >= MIB && bytes.is_multiple_of(MIB) {
        format!("{} MiB ({bytes} bytes)", bytes / MIB)
    } else if bytes >= KIB && bytes.is_multiple_of(KIB) {
        format!("{} KiB ({bytes} bytes)", bytes / KIB)
    } else {
        format!("{bytes} bytes")
    }
}

/// The most JSON, in bytes, [`decode_object`] lets a body decode to.
pub const MAX_DECODED_JSON_BYTES: usize = 16 << 20;

/// Whether objects of `api_version` and `kind` have a protobuf form (the built-in kinds of
/// Kubernetes 1.33, their lists, and the `meta.k8s.io` types such as `Status`).
pub fn is_encodable(api_version: &str, kind: &str) -> bool {
    Table::get().kind(api_version, kind).is_some()
}

/// Whether `api_version` is a built-in group version (whose kinds have protobuf forms).
pub(crate) fn is_built_in_group_version(api_version: &str) -> bool {
    Table::get().has_group_version(api_version)
}

fn type_meta(object: &Value) -> (&str, &str) {
    (
        object
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or_default(),
        object
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or_default(),
    )
}

/// Encodes a JSON object with `apiVersion` and `kind` as a Kubernetes protobuf body.
///
/// # Errors
/// [`ProtobufError::UnknownKind`] for kinds without a protobuf form, and
/// [`ProtobufError::WrongJson`] when a field does not have its schema's type.
pub fn encode_object(object: &Value) -> Result<Vec<u8>, ProtobufError> {
    let (api_version, kind) = type_meta(object);
    let raw = encode_message(object)?;
    let mut type_meta = Vec::new();
    wire::put_bytes_field(&mut type_meta, 1, api_version.as_bytes());
    wire::put_bytes_field(&mut type_meta, 2, kind.as_bytes());
    let mut out = MAGIC.to_vec();
    wire::put_bytes_field(&mut out, 1, &type_meta);
    wire::put_bytes_field(&mut out, 2, &raw);
    // contentEncoding and contentType: empty strings, which Go writes all the same.
    wire::put_bytes_field(&mut out, 3, b"");
    wire::put_bytes_field(&mut out, 4, b"");
    Ok(out)
}

/// Encodes a JSON object as its bare message, without the envelope.
///
/// # Errors
/// As [`encode_object`].
pub fn encode_message(object: &Value) -> Result<Vec<u8>, ProtobufError> {
    let (api_version, kind) = type_meta(object);
    let table = Table::get();
    let index = table
        .kind(api_version, kind)
        .ok_or_else(|| ProtobufError::UnknownKind {
            api_version: api_version.to_owned(),
            kind: kind.to_owned(),
        })?;
    let mut raw = Vec::new();
    encode::message(table, index, object, &mut raw)?;
    Ok(raw)
}

/// Decodes a Kubernetes protobuf body into its JSON object, `apiVersion` and `kind` first, as
/// [`decode_object_within`] with [`MAX_DECODED_JSON_BYTES`].
///
/// # Errors
/// As [`decode_object_within`].
pub fn decode_object(bytes: &[u8]) -> Result<Value, ProtobufError> {
    decode_object_within(bytes, MAX_DECODED_JSON_BYTES)
}

/// Decodes a Kubernetes protobuf body into its JSON object, `apiVersion` and `kind` first,
/// as long as that JSON takes at most `max_json_bytes`. A few bytes of protobuf can stand for
/// a large object (every field a Go struct leaves out is written as its zero value), so the
/// bound holds while decoding, not after.
///
/// # Errors
/// [`ProtobufError::NoMagic`] and [`ProtobufError::Malformed`] for bytes that are not a
/// Kubernetes protobuf body; [`ProtobufError::UnknownKind`] for kinds without a protobuf form;
/// [`ProtobufError::TooDeep`] for messages nested more than 64 deep, refused before the
/// decoder recurses further; [`ProtobufError::TooLarge`] once the JSON would pass
/// `max_json_bytes`; [`ProtobufError::TooManyObjects`] past 100,000 objects with fields.
pub fn decode_object_within(bytes: &[u8], max_json_bytes: usize) -> Result<Value, ProtobufError> {
    let envelope = Envelope::read(bytes)?;
    let (api_version, kind) = (envelope.api_version, envelope.kind);
    let table = Table::get();
    let index = table
        .kind(&api_version, &kind)
        .ok_or_else(|| ProtobufError::UnknownKind {
            api_version: api_version.clone(),
            kind: kind.clone(),
        })?;
    let decoded = decode::Decoder::new(table, max_json_bytes).message(index, envelope.raw)?;
    let mut object = serde_json::Map::new();
    object.insert("apiVersion".to_owned(), Value::String(api_version));
    object.insert("kind".to_owned(), Value::String(kind));
    if let Value::Object(fields) = decoded {
        object.extend(fields);
    }
    Ok(Value::Object(object))
}

/// The `apiVersion` and `kind` a Kubernetes protobuf body says it holds, read from its
/// envelope without decoding the object: what a server checks against the URL before it
/// spends anything on the object.
///
/// # Errors
/// [`ProtobufError::NoMagic`] and [`ProtobufError::Malformed`] for bytes that are not a
/// Kubernetes protobuf envelope.
pub fn type_of(bytes: &[u8]) -> Result<(String, String), ProtobufError> {
    let envelope = Envelope::read(bytes)?;
    Ok((envelope.api_version, envelope.kind))
}

/// A `runtime.Unknown` envelope: the type it names and the object's bytes, not yet decoded.
struct Envelope<'a> {
    api_version: String,
    kind: String,
    raw: &'a [u8],
}

impl<'a> Envelope<'a> {
    /// Reads the envelope's own fields (a handful, whatever the object's size).
    fn read(bytes: &'a [u8]) -> Result<Envelope<'a>, ProtobufError> {
        let body = bytes.strip_prefix(MAGIC).ok_or(ProtobufError::NoMagic)?;
        let envelope_error = |problem: &'static str| ProtobufError::Malformed {
            message: "runtime.Unknown".to_owned(),
            problem,
        };
        let fields = wire::fields(body).map_err(|error| envelope_error(error.describe()))?;
        let bytes_of = |tag: u32| {
            fields.iter().rev().find_map(|(t, value)| match value {
                wire::WireValue::Bytes(bytes) if *t == tag => Some(*bytes),
                _ => None,
            })
        };
        let type_meta = wire::fields(bytes_of(1).unwrap_or_default())
            .map_err(|error| envelope_error(error.describe()))?;
        let text_of = |tag: u32| -> Result<String, ProtobufError> {
            let bytes = type_meta
                .iter()
                .rev()
                .find_map(|(t, value)| match value {
                    wire::WireValue::Bytes(bytes) if *t == tag => Some(*bytes),
                    _ => None,
                })
                .unwrap_or_default();
            String::from_utf8(bytes.to_vec()).map_err(|_| envelope_error("typeMeta is not UTF-8"))
        };
        Ok(Envelope {
            api_version: text_of(1)?,
            kind: text_of(2)?,
            raw: bytes_of(2).unwrap_or_default(),
        })
    }
}

/// A watch event as one length-prefixed frame of a `stream=watch` response: a bare
/// `meta/v1 WatchEvent` whose object is the enveloped object.
///
/// # Errors
/// As [`encode_object`], for an object without a protobuf form.
pub(crate) fn watch_frame(event_type: &str, object: &Value) -> Result<Vec<u8>, ProtobufError> {
    let embedded = encode_object(object)?;
    let mut raw_extension = Vec::new();
    wire::put_bytes_field(&mut raw_extension, 1, &embedded);
    let mut event = Vec::new();
    wire::put_bytes_field(&mut event, 1, event_type.as_bytes());
    wire::put_bytes_field(&mut event, 2, &raw_extension);
    let length = u32::try_from(event.len()).map_err(|_| ProtobufError::Malformed {
        message: "WatchEvent".to_owned(),
        problem: "the event is larger than 4 GiB",
    })?;
    let mut frame = length.to_be_bytes().to_vec();
    frame.extend_from_slice(&event);
    Ok(frame)
}
