//! JSON patch (RFC 6902, with the semantics of the evanphx/json-patch library Kubernetes uses)
//! and JSON merge patch (RFC 7386).

use serde_json::{Map, Value};

use crate::bounds::{MAX_JSON_PATCH_COPY_BYTES, encoded_size_within};
use crate::error::ApiError;

/// The most operations a JSON patch may have, as in Kubernetes.
pub const MAX_JSON_PATCH_OPERATIONS: usize = 10_000;

/// The message of every failed JSON patch application, as Kubernetes words it.
const REJECTED: &str = "the server rejected our request due to an error in our request";

/// Applies a JSON merge patch as Kubernetes does (evanphx/json-patch's `MergePatch`): a
/// `null` removes a key, an object merges into an object, and anything else replaces what was
/// there. A value that lands where there was no object (a new key, or over a list or scalar)
/// loses its `null` members at any depth, in lists too; a list that replaces an object is
/// taken as it is.
pub fn merge_patch(target: &mut Value, patch: &Value) {
    if !target.is_object() {
        *target = without_nulls(patch);
        return;
    }
    let (Value::Object(target), Value::Object(patch)) = (&mut *target, patch) else {
        *target = patch.clone();
        return;
    };
    for (key, value) in patch {
        if value.is_null() {
            target.remove(key);
            continue;
        }
        match target.get_mut(key) {
            Some(current) if !current.is_null() => merge_patch(current, value),
            _ => {
                target.insert(key.clone(), without_nulls(value));
            }
        }
    }
}

/// `value` without the `null` members of its objects, at any depth (a `null` item of a list
/// stays).
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

/// Splits a JSON pointer into unescaped tokens.
fn pointer_tokens(pointer: &str) -> Result<Vec<String>, String> {
    if pointer.is_empty() {
        return Ok(Vec::new());
    }
    let Some(rest) = pointer.strip_prefix('/') else {
        return Err(format!("JSON pointer {pointer:?} does not start with '/'"));
    };
    Ok(rest
        .split('/')
        .map(|token| token.replace("~1", "/").replace("~0", "~"))
        .collect())
}

/// The container holding the last token of `tokens`, and that token.
fn parent_mut<'a>(
    document: &'a mut Value,
    tokens: &'a [String],
) -> Result<(&'a mut Value, &'a str), String> {
    let Some((last, parents)) = tokens.split_last() else {
        return Err("the operation needs a path below the root".to_owned());
    };
    let mut current = document;
    for token in parents {
        current = match current {
            Value::Object(map) => map
                .get_mut(token)
                .ok_or_else(|| format!("missing key {token:?}"))?,
            Value::Array(items) => {
                let index: usize = token
                    .parse()
                    .map_err(|_| format!("invalid array index {token:?}"))?;
                items
                    .get_mut(index)
                    .ok_or_else(|| format!("array index {index} out of bounds"))?
            }
            _ => return Err(format!("cannot descend into a scalar at {token:?}")),
        };
    }
    Ok((current, last))
}

fn get<'a>(document: &'a Value, pointer: &str) -> Result<Option<&'a Value>, String> {
    let tokens = pointer_tokens(pointer)?;
    let mut current = document;
    for token in &tokens {
        let next = match current {
            Value::Object(map) => map.get(token),
            Value::Array(items) => token
                .parse::<usize>()
                .ok()
                .and_then(|index| items.get(index)),
            _ => None,
        };
        match next {
            Some(value) => current = value,
            None => return Ok(None),
        }
    }
    Ok(Some(current))
}

fn add(document: &mut Value, pointer: &str, value: Value) -> Result<(), String> {
    let tokens = pointer_tokens(pointer)?;
    if tokens.is_empty() {
        *document = value;
        return Ok(());
    }
    let (parent, last) = parent_mut(document, &tokens)?;
    match parent {
        Value::Object(map) => {
            map.insert(last.to_owned(), value);
            Ok(())
        }
        Value::Array(items) => {
            if last == "-" {
                items.push(value);
                return Ok(());
            }
            let index: usize = last
                .parse()
                .map_err(|_| format!("invalid array index {last:?}"))?;
            if index > items.len() {
                return Err(format!("array index {index} out of bounds"));
            }
            items.insert(index, value);
            Ok(())
        }
        _ => Err("cannot add to a scalar".to_owned()),
    }
}

fn remove(document: &mut Value, pointer: &str) -> Result<Value, String> {
    let tokens = pointer_tokens(pointer)?;
    let (parent, last) = parent_mut(document, &tokens)?;
    match parent {
        Value::Object(map) => map
            .remove(last)
            .ok_or_else(|| format!("missing key {last:?}")),
        Value::Array(items) => {
            let index: usize = last
                .parse()
                .map_err(|_| format!("invalid array index {last:?}"))?;
            if index >= items.len() {
                return Err(format!("array index {index} out of bounds"));
            }
            Ok(items.remove(index))
        }
        _ => Err("cannot remove from a scalar".to_owned()),
    }
}

fn operation_field<'a>(operation: &'a Map<String, Value>, field: &str) -> Result<&'a str, String> {
    operation
        .get(field)
        .and_then(Value::as_str)
        .ok_or_else(|| format!("operation is missing {field:?}"))
}

/// Why a JSON patch operation did not apply.
enum OperationError {
    /// The operation does not apply to the document (kube-apiserver gives no detail).
    Failed(String),
    /// `copy` operations would add more than [`MAX_JSON_PATCH_COPY_BYTES`].
    CopyLimit {
        /// The bytes the copies would have added in all.
        accumulated: usize,
    },
}

impl From<String> for OperationError {
    fn from(detail: String) -> Self {
        OperationError::Failed(detail)
    }
}

fn apply_operation(
    document: &mut Value,
    operation: &Value,
    copied_bytes: &mut usize,
) -> Result<(), OperationError> {
    let Value::Object(operation) = operation else {
        return Err(OperationError::Failed(
            "an operation must be an object".to_owned(),
        ));
    };
    let op = operation_field(operation, "op")?;
    let path = operation_field(operation, "path")?;
    let value = || {
        operation
            .get("value")
            .cloned()
            .ok_or_else(|| format!("{op} operation is missing \"value\""))
    };
    match op {
        "add" => Ok(add(document, path, value()?)?),
        "remove" => Ok(remove(document, path).map(drop)?),
        "replace" => {
            let new = value()?;
            let tokens = pointer_tokens(path)?;
            if tokens.is_empty() {
                *document = new;
                return Ok(());
            }
            let (parent, last) = parent_mut(document, &tokens)?;
            let slot = match parent {
                Value::Object(map) => map.get_mut(last),
                Value::Array(items) => last.parse::<usize>().ok().and_then(|i| items.get_mut(i)),
                _ => None,
            };
            match slot {
                Some(slot) => {
                    *slot = new;
                    Ok(())
                }
                None => Err(OperationError::Failed(format!(
                    "replace operation does not apply: doc is missing key: {path}"
                ))),
            }
        }
        "move" => {
            let from = operation_field(operation, "from")?;
            let moved = remove(document, from)?;
            Ok(add(document, path, moved)?)
        }
        "copy" => {
            let from = operation_field(operation, "from")?;
            let source =
                get(document, from)?.ok_or_else(|| format!("copy from a missing path {from:?}"))?;
            // Measured before it is cloned, with only the budget left, so a copy that would
            // exceed the limit costs no memory and no more time than the limit.
            let left = MAX_JSON_PATCH_COPY_BYTES - *copied_bytes;
            let Some(size) = encoded_size_within(source, left) else {
                return Err(OperationError::CopyLimit {
                    accumulated: copied_bytes.saturating_add(
                        encoded_size_within(source, usize::MAX).unwrap_or(usize::MAX),
                    ),
                });
            };
            *copied_bytes += size;
            let copied = source.clone();
            Ok(add(document, path, copied)?)
        }
        "test" => {
            let expected = value()?;
            match get(document, path)? {
                Some(actual) if *actual == expected => Ok(()),
                // As evanphx/json-patch: a missing value equals null.
                None if expected.is_null() => Ok(()),
                _ => Err(OperationError::Failed(format!(
                    "testing value {path} failed"
                ))),
            }
        }
        other => Err(OperationError::Failed(format!(
            "unexpected operation {other:?}"
        ))),
    }
}

/// Applies a JSON patch document (an array of operations).
///
/// # Errors
/// 413 for more than [`MAX_JSON_PATCH_OPERATIONS`] operations; 400 for a body that is not a
/// list; 422 (`the server rejected our request ...`) when an operation fails, as Kubernetes,
/// also when `copy` operations would add more than [`MAX_JSON_PATCH_COPY_BYTES`] (measured
/// before each copy is made, so the limit bounds the memory a patch takes).
pub fn json_patch(target: &Value, patch: &Value) -> Result<Value, ApiError> {
    let Value::Array(operations) = patch else {
        return Err(ApiError::bad_request(
            "json: cannot unmarshal object into Go value of type jsonpatch.Patch",
        ));
    };
    if operations.len() > MAX_JSON_PATCH_OPERATIONS {
        return Err(ApiError::too_large(format!(
            "Request entity too large: The allowed maximum operations in a JSON patch is \
             {MAX_JSON_PATCH_OPERATIONS}, got {}",
            operations.len()
        )));
    }
    let mut document = target.clone();
    let mut copied_bytes = 0;
    for operation in operations {
        match apply_operation(&mut document, operation, &mut copied_bytes) {
            Ok(()) => {}
            Err(OperationError::Failed(detail)) => {
                tracing::debug!(%detail, "JSON patch operation failed");
                return Err(ApiError::invalid_request(REJECTED.to_owned()));
            }
            Err(OperationError::CopyLimit { accumulated }) => {
                // kube-apiserver answers this as any failed operation, with no detail.
                tracing::debug!(
                    accumulated,
                    limit = MAX_JSON_PATCH_COPY_BYTES,
                    "JSON patch copies exceed the limit"
                );
                return Err(ApiError::invalid_request(REJECTED.to_owned()));
            }
        }
    }
    Ok(document)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn merge_patch_sets_and_removes_keys_and_replaces_lists() {
        let mut target = json!({"a": {"b": 1, "c": 2}, "l": [1, 2]});
        merge_patch(&mut target, &json!({"a": {"b": null, "d": 3}, "l": [3]}));
        assert_eq!(target, json!({"a": {"c": 2, "d": 3}, "l": [3]}));
    }

    #[test]
    fn merge_patch_drops_nulls_of_new_values_as_kubernetes_does() {
        let mut target = json!({"o": {"k": 1}, "l": [1], "s": "x"});
        merge_patch(
            &mut target,
            &json!({
                "new": {"gone": null, "kept": {"x": null}, "list": [{"a": null, "b": 1}, null]},
                "l": [{"a": null}],
                "s": {"a": null, "b": 2},
                "o": [{"a": null}],
            }),
        );
        assert_eq!(
            target,
            json!({
                "new": {"kept": {}, "list": [{"b": 1}, null]},
                "l": [{}],
                "s": {"b": 2},
                "o": [{"a": null}],
            }),
            "new values and values over lists or scalars lose their nulls; a list over an \
             object is taken as it is"
        );
    }

    #[test]
    fn json_patch_runs_kube_runtime_finalizer_patches() {
        let object = json!({"metadata": {"name": "x"}});
        let added = json_patch(
            &object,
            &json!([
                {"op": "test", "path": "/metadata/finalizers", "value": null},
                {"op": "add", "path": "/metadata/finalizers", "value": ["kro.run/finalizer"]}
            ]),
        )
        .expect("a missing key tests equal to null");
        assert_eq!(
            added["metadata"]["finalizers"],
            json!(["kro.run/finalizer"])
        );
        let removed = json_patch(
            &added,
            &json!([
                {"op": "test", "path": "/metadata/finalizers/0", "value": "kro.run/finalizer"},
                {"op": "remove", "path": "/metadata/finalizers/0"}
            ]),
        )
        .expect("remove");
        assert_eq!(removed["metadata"]["finalizers"], json!([]));
        let failed = json_patch(
            &added,
            &json!([{"op": "test", "path": "/metadata/finalizers/0", "value": "other"}]),
        )
        .expect_err("the test fails");
        assert_eq!(failed.code, 422);
        assert_eq!(failed.message, REJECTED);
    }

    #[test]
    fn json_patch_moves_copies_and_appends() {
        let object = json!({"a": [1], "b": {"x": "~/"}});
        let patched = json_patch(
            &object,
            &json!([
                {"op": "add", "path": "/a/-", "value": 2},
                {"op": "copy", "from": "/b/x", "path": "/c"},
                {"op": "move", "from": "/a/0", "path": "/d"},
                {"op": "replace", "path": "/b/x", "value": "y"}
            ]),
        )
        .expect("patch");
        assert_eq!(
            patched,
            json!({"a": [2], "b": {"x": "y"}, "c": "~/", "d": 1})
        );
        assert_eq!(
            json_patch(
                &object,
                &json!([{"op": "replace", "path": "/zz", "value": 1}])
            )
            .err()
            .map(|e| e.code),
            Some(422)
        );
        let too_many: Vec<Value> = (0..=MAX_JSON_PATCH_OPERATIONS)
            .map(|_| json!({"op": "test", "path": "/a", "value": [1]}))
            .collect();
        assert_eq!(
            json_patch(&object, &Value::Array(too_many))
                .err()
                .map(|e| e.code),
            Some(413)
        );
    }

    #[test]
    fn copies_doubling_the_object_stop_at_the_copy_limit() {
        // The finding: 22 copies each doubling /data drove the server to 3 GB.
        let object = json!({"data": {"seed": "x".repeat(1_000)}});
        let operations: Vec<Value> = (0..22)
            .map(|index| json!({"op": "copy", "from": "/data", "path": format!("/data/d{index}")}))
            .collect();
        let error = json_patch(&object, &Value::Array(operations)).expect_err("too big");
        // As kube-apiserver answers it.
        assert_eq!(error, ApiError::invalid_request(REJECTED.to_owned()));
    }

    #[test]
    fn copies_within_the_limit_apply() {
        let object = json!({"data": {"seed": "x".repeat(1_000)}});
        let operations: Vec<Value> = (0..8)
            .map(|index| json!({"op": "copy", "from": "/data", "path": format!("/data/d{index}")}))
            .collect();
        let patched = json_patch(&object, &Value::Array(operations)).expect("small enough");
        let size = encoded_size_within(&patched, usize::MAX).expect("measured");
        assert!(size > 256 * 1_000 && size < MAX_JSON_PATCH_COPY_BYTES);
    }
}
