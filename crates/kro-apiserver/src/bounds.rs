//! Memory bounds on what a request can make the server build: the size and nesting of an
//! object after a write or patch, and the size a JSON patch's `copy` operations may add.
//!
//! Sizes are measured as the bytes of the compact JSON encoding, walking the value with the
//! budget left, so measuring a huge value costs no more than the limit it is checked against.

use serde_json::Value;

use crate::error::ApiError;

/// The most bytes JSON patch `copy` operations may add to an object in one request, as
/// kube-apiserver's default `JSONPatchMaxCopyBytes` (3 MiB).
pub const MAX_JSON_PATCH_COPY_BYTES: usize = 3 * 1024 * 1024;

/// The largest object stored, in bytes of compact JSON: the request body limit, so anything
/// that can be sent whole can be stored, and a patch cannot build more.
pub const MAX_OBJECT_BYTES: usize = 3 * 1024 * 1024;

/// The deepest nesting of a stored object: serde_json's own decoding limit, so anything that
/// can be sent whole can be stored, and a patch cannot nest deeper.
pub const MAX_OBJECT_DEPTH: usize = 128;

/// Refuses an object a write or patch would store when it is larger than
/// [`MAX_OBJECT_BYTES`] or nests deeper than [`MAX_OBJECT_DEPTH`].
///
/// # Errors
/// 413 `RequestEntityTooLarge` for the size, 422 `Invalid` for the nesting.
pub fn check_object(object: &Value) -> Result<(), ApiError> {
    if encoded_size_within(object, MAX_OBJECT_BYTES).is_none() {
        return Err(ApiError::too_large(format!(
            "Request entity too large: the object would be larger than {MAX_OBJECT_BYTES} bytes"
        )));
    }
    if !depth_within(object, MAX_OBJECT_DEPTH) {
        return Err(ApiError::invalid_request(format!(
            "the object would nest deeper than {MAX_OBJECT_DEPTH} levels"
        )));
    }
    Ok(())
}

/// Refuses to store an object larger than [`MAX_OBJECT_BYTES`] as it would be stored:
/// defaults, managed fields and status written by the server count, as etcd's request limit
/// counts them for kube-apiserver.
///
/// # Errors
/// 413 `RequestEntityTooLarge`.
pub fn check_stored(object: &Value) -> Result<(), ApiError> {
    match encoded_size_within(object, MAX_OBJECT_BYTES) {
        Some(_) => Ok(()),
        None => Err(ApiError::too_large(format!(
            "Request entity too large: the object as stored would be larger than {MAX_OBJECT_BYTES} bytes"
        ))),
    }
}

/// The bytes of `value`'s compact JSON encoding, or `None` when over `limit`.
pub fn encoded_size_within(value: &Value, limit: usize) -> Option<usize> {
    let mut budget = Budget { left: limit };
    budget.walk(value).then_some(limit - budget.left)
}

/// Whether `value` nests no deeper than `limit` levels (a scalar is depth 0).
pub fn depth_within(value: &Value, limit: usize) -> bool {
    // Iterative, so a deep value cannot exhaust the stack while it is measured.
    let mut pending: Vec<(&Value, usize)> = vec![(value, 0)];
    while let Some((value, depth)) = pending.pop() {
        let children: Box<dyn Iterator<Item = &Value>> = match value {
            Value::Array(items) => Box::new(items.iter()),
            Value::Object(map) => Box::new(map.values()),
            _ => continue,
        };
        if depth + 1 > limit {
            return false;
        }
        pending.extend(children.map(|child| (child, depth + 1)));
    }
    true
}

/// A budget of bytes spent while walking a value.
struct Budget {
    left: usize,
}

impl Budget {
    fn spend(&mut self, bytes: usize) -> bool {
        match self.left.checked_sub(bytes) {
            Some(left) => {
                self.left = left;
                true
            }
            None => false,
        }
    }

    fn walk(&mut self, value: &Value) -> bool {
        let mut pending = vec![value];
        while let Some(value) = pending.pop() {
            let spent = match value {
                Value::Null => self.spend(4),
                Value::Bool(true) => self.spend(4),
                Value::Bool(false) => self.spend(5),
                Value::Number(number) => self.spend(number.to_string().len()),
                Value::String(text) => self.spend(string_size(text)),
                Value::Array(items) => {
                    pending.extend(items.iter());
                    // Brackets and commas.
                    self.spend(2 + items.len().saturating_sub(1))
                }
                Value::Object(map) => {
                    let keys: usize = map.keys().map(|key| string_size(key) + 1).sum();
                    pending.extend(map.values());
                    self.spend(2 + keys + map.len().saturating_sub(1))
                }
            };
            if !spent {
                return false;
            }
        }
        true
    }
}

/// The encoded size of a JSON string: quotes, and escapes for quotes, backslashes and control
/// characters.
fn string_size(text: &str) -> usize {
    2 + text
        .bytes()
        .map(|byte| match byte {
            b'"' | b'\\' | b'\n' | b'\r' | b'\t' | 0x08 | 0x0c => 2,
            0..=0x1f => 6,
            _ => 1,
        })
        .sum::<usize>()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sizes_match_the_compact_encoding() {
        let values = [
            json!(null),
            json!(true),
            json!(false),
            json!(-12.5),
            json!("tab\there \"quoted\" \\ \u{1} é"),
            json!([]),
            json!({}),
            json!({"a": [1, 2, {"b": null}], "c": {"d\n": "e"}, "f": [[], {}]}),
        ];
        for value in values {
            let encoded = serde_json::to_string(&value).expect("encodes").len();
            assert_eq!(
                encoded_size_within(&value, usize::MAX),
                Some(encoded),
                "{value}"
            );
            assert_eq!(encoded_size_within(&value, encoded), Some(encoded));
            assert_eq!(encoded_size_within(&value, encoded - 1), None, "{value}");
        }
    }

    #[test]
    fn measuring_a_large_value_stops_at_the_limit() {
        let big = Value::Array(vec![json!("x".repeat(1_000)); 10_000]);
        assert_eq!(encoded_size_within(&big, 5_000), None);
    }

    #[test]
    fn depth_counts_levels_of_arrays_and_objects() {
        assert!(depth_within(&json!(1), 0));
        assert!(depth_within(&json!({"a": [1]}), 2));
        assert!(!depth_within(&json!({"a": [1]}), 1));
        let mut deep = json!(0);
        for _ in 0..10_000 {
            deep = Value::Array(vec![deep]);
        }
        assert!(!depth_within(&deep, MAX_OBJECT_DEPTH));
        // Dropping it recursively would be fine at this depth; deeper ones never get built.
        let mut unwound = deep;
        while let Value::Array(mut items) = unwound {
            unwound = items.pop().unwrap_or(Value::Null);
        }
    }

    #[test]
    fn objects_over_the_size_or_depth_bound_are_refused() {
        assert_eq!(check_object(&json!({"a": [1, {"b": "c"}]})), Ok(()));
        let large = json!({"data": {"x": "y".repeat(MAX_OBJECT_BYTES)}});
        assert_eq!(check_object(&large).map_err(|error| error.code), Err(413));
        let mut deep = json!({});
        for _ in 0..MAX_OBJECT_DEPTH {
            deep = Value::Object([("a".to_owned(), deep)].into_iter().collect());
        }
        assert_eq!(check_object(&deep).map_err(|error| error.code), Err(422));
    }
}
