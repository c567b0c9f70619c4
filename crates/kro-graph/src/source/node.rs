//! A YAML node tree with the location of every node, read through `serde_saphyr::Spanned`.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_saphyr::Spanned;

/// Stack that must remain before reading a child node on the current segment. One level of
/// the YAML reader takes tens of KiB in an unoptimised build, so rather than tie the depth
/// limit to the build, each child is read on a fresh heap segment when the stack runs low.
const RED_ZONE_BYTES: usize = 256 * 1024;
/// The size of each additional stack segment.
const SEGMENT_BYTES: usize = 2 * 1024 * 1024;

/// Runs `read`, first moving to a new stack segment if the current one is nearly used up.
pub(crate) fn with_stack<R>(read: impl FnOnce() -> R) -> R {
    stacker::maybe_grow(RED_ZONE_BYTES, SEGMENT_BYTES, read)
}

/// A YAML node; children carry their locations.
#[derive(Debug)]
pub(crate) enum Node {
    Null,
    Bool(bool),
    Int(i64),
    UInt(u64),
    Float(f64),
    String(String),
    Seq(Vec<Spanned<Node>>),
    Map(Vec<(Spanned<Key>, Spanned<Node>)>),
}

/// A mapping key, as its text: `80: http` has the key `"80"`.
#[derive(Debug)]
pub(crate) struct Key(pub(crate) String);

struct NodeVisitor;

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = Node;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a YAML value")
    }

    fn visit_bool<E: de::Error>(self, value: bool) -> Result<Node, E> {
        Ok(Node::Bool(value))
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<Node, E> {
        Ok(Node::Int(value))
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<Node, E> {
        Ok(Node::UInt(value))
    }

    fn visit_i128<E: de::Error>(self, value: i128) -> Result<Node, E> {
        match i64::try_from(value) {
            Ok(small) => Ok(Node::Int(small)),
            Err(_) => u64::try_from(value)
                .map(Node::UInt)
                .map_err(|_| E::custom("integer out of the 64-bit range")),
        }
    }

    fn visit_u128<E: de::Error>(self, value: u128) -> Result<Node, E> {
        u64::try_from(value)
            .map(Node::UInt)
            .map_err(|_| E::custom("integer out of the 64-bit range"))
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<Node, E> {
        Ok(Node::Float(value))
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<Node, E> {
        Ok(Node::String(value.to_string()))
    }

    fn visit_string<E: de::Error>(self, value: String) -> Result<Node, E> {
        Ok(Node::String(value))
    }

    fn visit_bytes<E: de::Error>(self, value: &[u8]) -> Result<Node, E> {
        String::from_utf8(value.to_vec())
            .map(Node::String)
            .map_err(|_| E::custom("binary value is not UTF-8"))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Node, E> {
        Ok(Node::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<Node, E> {
        Ok(Node::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Node, D::Error> {
        deserializer.deserialize_any(NodeVisitor)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut access: A) -> Result<Node, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = with_stack(|| access.next_element::<Spanned<Node>>())? {
            items.push(item);
        }
        Ok(Node::Seq(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Node, A::Error> {
        let mut entries = Vec::new();
        while let Some(key) = access.next_key::<Spanned<Key>>()? {
            let value = with_stack(|| access.next_value::<Spanned<Node>>())?;
            entries.push((key, value));
        }
        Ok(Node::Map(entries))
    }
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(NodeVisitor)
    }
}

struct KeyVisitor;

impl Visitor<'_> for KeyVisitor {
    type Value = Key;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a scalar mapping key")
    }

    fn visit_bool<E: de::Error>(self, value: bool) -> Result<Key, E> {
        Ok(Key(value.to_string()))
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<Key, E> {
        Ok(Key(value.to_string()))
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<Key, E> {
        Ok(Key(value.to_string()))
    }

    fn visit_i128<E: de::Error>(self, value: i128) -> Result<Key, E> {
        Ok(Key(value.to_string()))
    }

    fn visit_u128<E: de::Error>(self, value: u128) -> Result<Key, E> {
        Ok(Key(value.to_string()))
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<Key, E> {
        Ok(Key(value.to_string()))
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<Key, E> {
        Ok(Key(value.to_string()))
    }

    fn visit_string<E: de::Error>(self, value: String) -> Result<Key, E> {
        Ok(Key(value))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Key, E> {
        Ok(Key("null".to_string()))
    }
}

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_option(OptionalKeyVisitor)
    }
}

/// Reads a key as written: a null key (`~`, `null` or nothing) is `"null"`, any other scalar
/// is read as a string, which keeps its text (`0x10`, `y` and `on` stay as they are).
struct OptionalKeyVisitor;

impl<'de> Visitor<'de> for OptionalKeyVisitor {
    type Value = Key;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a scalar mapping key")
    }

    fn visit_none<E: de::Error>(self) -> Result<Key, E> {
        Ok(Key("null".to_string()))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Key, E> {
        Ok(Key("null".to_string()))
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Key, D::Error> {
        deserializer.deserialize_string(KeyVisitor)
    }
}
