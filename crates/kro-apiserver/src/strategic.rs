//! Strategic merge patch (`application/strategic-merge-patch+json`) for built-in kinds, with
//! the semantics of `k8s.io/apimachinery/pkg/util/strategicpatch`: lists merge item by item
//! where the schema says `x-kubernetes-patch-strategy: merge` (by the patch merge key, or as
//! sets of scalars), and the directives `$patch` (`replace`, `delete`), `$retainKeys`,
//! `$setElementOrder/<field>` and `$deleteFromPrimitiveList/<field>` are honoured.
//!
//! Merge keys and strategies come from the built-in catalog; custom resources have none, which
//! is why the server answers 415 for them as Kubernetes does.
//!
//! Where apimachinery looks items up by scanning a list, this module keeps a hash index of the
//! list instead, with the same answers (the first match, and the same errors), so a patch costs
//! time linear in its size: a list of n items would otherwise cost n² comparisons.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

use kro_schema::{Catalog, FieldSchema, Gvk, PatchStrategy};
use serde_json::{Map, Value};

use crate::error::ApiError;

const DIRECTIVE: &str = "$patch";
const RETAIN_KEYS: &str = "$retainKeys";
const SET_ELEMENT_ORDER: &str = "$setElementOrder";
const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList";

/// Why a strategic merge patch could not be applied, classified as the API server reports it.
/// The texts are apimachinery's, which kube-apiserver passes on to clients.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StrategicError {
    /// A malformed directive or patch document: 400 BadRequest.
    #[error("{0}")]
    BadRequest(&'static str),
    /// Lists of lists: 422.
    #[error("{0}")]
    Unprocessable(&'static str),
    /// Anything else (missing merge keys, mismatched types): the server passes the
    /// strategicpatch error through unconverted, which becomes a 500 without a reason.
    #[error("{0}")]
    Other(String),
}

impl StrategicError {
    /// A stable name of the variant, for logs and metrics.
    pub fn reason(&self) -> &'static str {
        match self {
            StrategicError::BadRequest(_) => "BadRequest",
            StrategicError::Unprocessable(_) => "Unprocessable",
            StrategicError::Other(_) => "Other",
        }
    }
}

impl From<StrategicError> for ApiError {
    fn from(error: StrategicError) -> Self {
        match error {
            StrategicError::BadRequest(message) => ApiError::bad_request(message),
            StrategicError::Unprocessable(message) => ApiError::new(
                422,
                "Invalid",
                "the server rejected our request due to an error in our request".to_owned(),
            )
            .with_cause("UnexpectedServerResponse", message, ""),
            StrategicError::Other(message) => ApiError::new(500, "", message),
        }
    }
}

const BAD_PRIMITIVE_LIST: &str = "invalid patch format of primitive list";
const BAD_RETAIN_KEYS: &str = "invalid patch format of retainKeys";
const BAD_SET_ELEMENT_ORDER: &str = "invalid patch format of setElementOrder list";
const NO_LIST_OF_LISTS: &str = "lists of lists are not supported";

type Schema<'a> = Option<FieldSchema<'a>>;

/// How a field is patched: whether `$retainKeys` applies, and the other strategy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Strategy {
    Default,
    Merge,
    Replace,
}

fn strategy_of(schema: Schema<'_>) -> Result<Strategy, StrategicError> {
    let Some(schema) = schema else {
        return Ok(Strategy::Default);
    };
    let strategies: Vec<PatchStrategy> = schema
        .merge_semantics()
        .patch_strategies
        .into_iter()
        .filter(|strategy| *strategy != PatchStrategy::RetainKeys)
        .collect();
    match strategies.as_slice() {
        [] => Ok(Strategy::Default),
        [PatchStrategy::Merge] => Ok(Strategy::Merge),
        [PatchStrategy::Replace] => Ok(Strategy::Replace),
        other => Err(StrategicError::Other(format!(
            "unexpected patch strategy: {other:?}"
        ))),
    }
}

fn merge_key_of(schema: Schema<'_>) -> Option<String> {
    schema.and_then(|schema| schema.merge_semantics().patch_merge_key)
}

/// The schema of field `key` of an object (or of a map's values).
fn child<'a>(schema: Schema<'a>, key: &str) -> Schema<'a> {
    let schema = schema?;
    schema.property(key).or_else(|| schema.map_values())
}

/// Applies a strategic merge patch to `original`, an object of the kind `gvk`, with the merge
/// keys and strategies of the built-in catalog. A kind outside the catalog has none, so its
/// lists are replaced whole (the server refuses such patches with 415 before this).
///
/// ```
/// use kro_apiserver::strategic::apply_to_kind;
/// use kro_schema::Gvk;
/// use serde_json::json;
///
/// let gvk = Gvk::new("", "v1", "ConfigMap");
/// let original = json!({"metadata": {"name": "c", "finalizers": ["a", "b"]}});
/// let patch = json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}});
/// let patched = apply_to_kind(&original, &patch, &gvk)?;
/// assert_eq!(patched["metadata"]["finalizers"], json!(["b"]));
/// # Ok::<(), kro_apiserver::strategic::StrategicError>(())
/// ```
///
/// # Errors
/// A [`StrategicError`], classified as kube-apiserver answers it.
pub fn apply_to_kind(original: &Value, patch: &Value, gvk: &Gvk) -> Result<Value, StrategicError> {
    let root = Catalog::kubernetes()
        .resolve(gvk)
        .found()
        .map(|kind| kind.root());
    apply(original, patch, root)
}

/// Applies `patch` to `original` (an object) under the kind's root schema.
pub(crate) fn apply(
    original: &Value,
    patch: &Value,
    root: Schema<'_>,
) -> Result<Value, StrategicError> {
    let original = match original {
        Value::Object(map) => map.clone(),
        _ => Map::new(),
    };
    let Value::Object(patch) = patch else {
        return Err(StrategicError::BadRequest("invalid JSON document"));
    };
    merge_map(original, patch.clone(), root).map(Value::Object)
}

fn merge_map(
    mut original: Map<String, Value>,
    mut patch: Map<String, Value>,
    schema: Schema<'_>,
) -> Result<Map<String, Value>, StrategicError> {
    if let Some(directive) = patch.get(DIRECTIVE) {
        return match directive.as_str() {
            Some("replace") => {
                patch.remove(DIRECTIVE);
                Ok(patch)
            }
            Some("delete") => Ok(Map::new()),
            _ => Err(StrategicError::Other(format!(
                "unknown patch type: {} in map: {}",
                go_value(directive),
                go_map(&patch)
            ))),
        };
    }
    apply_retain_keys(&mut original, &mut patch)?;
    merge_ordered_lists(&mut original, &mut patch, schema)?;
    for (key, patch_value) in patch {
        let (key, delete_list) = match key.strip_prefix(DELETE_FROM_PRIMITIVE_LIST) {
            Some(rest) => match rest.strip_prefix('/') {
                Some(field) => (field.to_owned(), true),
                None => return Err(StrategicError::BadRequest(BAD_PRIMITIVE_LIST)),
            },
            None => (key, false),
        };
        if patch_value.is_null() {
            original.remove(&key);
            continue;
        }
        let Some(current) = original.remove(&key) else {
            if !delete_list && let Some(value) = remove_directives(discard_nulls(patch_value)) {
                original.insert(key, value);
            }
            continue;
        };
        let field = child(schema, &key);
        let merged = match (current, patch_value) {
            (Value::Object(current), Value::Object(patch_map)) => {
                if strategy_of(field)? == Strategy::Replace {
                    Some(Value::Object(patch_map))
                } else {
                    Some(Value::Object(merge_map(current, patch_map, field)?))
                }
            }
            (Value::Array(current), Value::Array(patch_list)) => {
                if strategy_of(field)? == Strategy::Merge || delete_list {
                    let items = field.and_then(|field| field.items());
                    Some(Value::Array(merge_list(
                        current,
                        patch_list,
                        items,
                        merge_key_of(field).as_deref(),
                        delete_list,
                        &key,
                    )?))
                } else {
                    Some(Value::Array(patch_list))
                }
            }
            (current, patch_value) => {
                if delete_list {
                    // A deletion list for a field that is not a list leaves it as it was.
                    Some(current)
                } else if same_kind(&current, &patch_value) {
                    remove_directives(patch_value)
                } else {
                    remove_directives(discard_nulls(patch_value))
                }
            }
        };
        if let Some(merged) = merged {
            original.insert(key, merged);
        }
    }
    Ok(original)
}

/// `$retainKeys`: fields of the original the list does not name are cleared.
fn apply_retain_keys(
    original: &mut Map<String, Value>,
    patch: &mut Map<String, Value>,
) -> Result<(), StrategicError> {
    let Some(retain) = patch.remove(RETAIN_KEYS) else {
        return Ok(());
    };
    let Value::Array(retain) = retain else {
        return Err(StrategicError::BadRequest(BAD_RETAIN_KEYS));
    };
    let retain: HashSet<&str> = retain.iter().filter_map(Value::as_str).collect();
    let retained = |key: &str| retain.contains(key);
    for (key, value) in patch.iter() {
        if value.is_null()
            || key.starts_with(DELETE_FROM_PRIMITIVE_LIST)
            || key.starts_with(SET_ELEMENT_ORDER)
        {
            continue;
        }
        if !retained(key) {
            return Err(StrategicError::BadRequest(BAD_RETAIN_KEYS));
        }
    }
    original.retain(|key, _| retained(key));
    Ok(())
}

/// `$setElementOrder/<field>`: merges the named list and orders it as the directive says.
fn merge_ordered_lists(
    original: &mut Map<String, Value>,
    patch: &mut Map<String, Value>,
    schema: Schema<'_>,
) -> Result<(), StrategicError> {
    let keys: Vec<String> = patch
        .keys()
        .filter(|key| key.starts_with(SET_ELEMENT_ORDER))
        .cloned()
        .collect();
    for key in keys {
        let Some(order) = patch.remove(&key) else {
            continue;
        };
        let Value::Array(order) = order else {
            return Err(StrategicError::Other(format!(
                "expected a []interface {{}}, but received a {}",
                go_type(&order)
            )));
        };
        let field_name = key
            .strip_prefix(SET_ELEMENT_ORDER)
            .and_then(|rest| rest.strip_prefix('/'))
            .ok_or(StrategicError::BadRequest(BAD_SET_ELEMENT_ORDER))?
            .to_owned();
        let field = child(schema, &field_name);
        let merge_key = merge_key_of(field);
        let strategy = strategy_of(field)?;
        let original_list = match original.get(&field_name) {
            None => None,
            Some(Value::Array(list)) => Some(list.clone()),
            Some(other) => {
                return Err(StrategicError::Other(format!(
                    "expected a []interface {{}}, but received a {}",
                    go_type(other)
                )));
            }
        };
        let patch_list = match patch.remove(&field_name) {
            None => None,
            Some(Value::Array(list)) => Some(list),
            Some(_) => return Err(StrategicError::BadRequest(BAD_SET_ELEMENT_ORDER)),
        };
        check_order(
            patch_list.as_deref().unwrap_or_default(),
            &order,
            merge_key.as_deref(),
        )?;
        let original_items = original_list.clone().unwrap_or_default();
        let merged = match (original_list, patch_list.clone()) {
            (Some(list), None) => list,
            (None, Some(list)) => match remove_directives(Value::Array(list)) {
                Some(Value::Array(list)) => list,
                _ => continue,
            },
            (Some(current), Some(list)) => {
                if strategy == Strategy::Merge {
                    let items = field.and_then(|field| field.items());
                    merge_list(
                        current,
                        list,
                        items,
                        merge_key.as_deref(),
                        false,
                        &field_name,
                    )?
                } else {
                    list
                }
            }
            (None, None) => continue,
        };
        let is_map = element_kind(&[&original_items, patch_list.as_deref().unwrap_or_default()])?
            == ElementKind::Object;
        let (in_patch, server_only) = partition(merged, &order, merge_key.as_deref(), is_map)?;
        let ordered = normalize_order(
            in_patch,
            server_only,
            &order,
            &original_items,
            merge_key.as_deref(),
            is_map,
        )?;
        original.insert(field_name, Value::Array(ordered));
    }
    Ok(())
}

/// The relative order of the patch list's items must match `$setElementOrder`'s.
fn check_order(
    patch_list: &[Value],
    order: &[Value],
    merge_key: Option<&str>,
) -> Result<(), StrategicError> {
    if order.is_empty() || patch_list.is_empty() {
        return Ok(());
    }
    let kept: Vec<&Value> = if merge_key.is_some() {
        let mut kept = Vec::new();
        for item in patch_list {
            let Value::Object(map) = item else {
                return Err(StrategicError::Other(format!(
                    "expected a map[string]interface {{}}, but received a {}",
                    go_type(item)
                )));
            };
            if map.get(DIRECTIVE).and_then(Value::as_str) != Some("delete") {
                kept.push(item);
            }
        }
        kept
    } else {
        patch_list.iter().collect()
    };
    let (mut at_patch, mut at_order) = (0, 0);
    while at_patch < kept.len() && at_order < order.len() {
        if kept[at_patch].get(DIRECTIVE).is_some() {
            at_patch += 1;
            continue;
        }
        if merge_key_equal(kept[at_patch], &order[at_order], merge_key)? {
            at_patch += 1;
        }
        at_order += 1;
    }
    if at_patch < kept.len() {
        return Err(StrategicError::Other(format!(
            "The order in patch list:\n{}\n doesn't match {SET_ELEMENT_ORDER} list:\n{}\n",
            go_list(patch_list),
            go_list(order)
        )));
    }
    Ok(())
}

fn merge_key_equal(
    left: &Value,
    right: &Value,
    merge_key: Option<&str>,
) -> Result<bool, StrategicError> {
    let Some(key) = merge_key else {
        return Ok(left == right);
    };
    let (Value::Object(left), Value::Object(right)) = (left, right) else {
        return Err(StrategicError::Other(format!(
            "expected a map[string]interface {{}}, but received a {}",
            go_type(if left.is_object() { right } else { left })
        )));
    };
    let left_value = left.get(key).ok_or_else(|| no_merge_key(left, key))?;
    let right_value = right.get(key).ok_or_else(|| no_merge_key(right, key))?;
    Ok(left_value == right_value)
}

fn no_merge_key(map: &Map<String, Value>, key: &str) -> StrategicError {
    StrategicError::Other(format!(
        "map: {} does not contain declared merge key: {key}",
        go_map(map)
    ))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ElementKind {
    Object,
    List,
    Scalar(u8),
}

/// The kind of the items of `lists`, which must all agree and may not be lists.
fn element_kind(lists: &[&[Value]]) -> Result<ElementKind, StrategicError> {
    let mut found: Option<ElementKind> = None;
    for item in lists.iter().flat_map(|list| list.iter()) {
        let kind = match item {
            // Only the first item is checked for being a list; a later one is a mismatch.
            Value::Array(_) if found.is_none() => {
                return Err(StrategicError::Unprocessable(NO_LIST_OF_LISTS));
            }
            Value::Array(_) => ElementKind::List,
            Value::Object(_) => ElementKind::Object,
            Value::Null => ElementKind::Scalar(0),
            Value::Bool(_) => ElementKind::Scalar(1),
            Value::Number(_) => ElementKind::Scalar(2),
            Value::String(_) => ElementKind::Scalar(3),
        };
        match found {
            None => found = Some(kind),
            Some(previous) if previous != kind => {
                let all: Vec<String> = lists.iter().map(|list| go_list(list)).collect();
                return Err(StrategicError::Other(format!(
                    "list element types are not identical: [{}]",
                    all.join(" ")
                )));
            }
            Some(_) => {}
        }
    }
    found.ok_or_else(|| StrategicError::Other("no elements in any of the given slices".to_owned()))
}

/// Merges two lists of a field with the `merge` strategy (or a deletion list).
fn merge_list(
    original: Vec<Value>,
    patch: Vec<Value>,
    items: Schema<'_>,
    merge_key: Option<&str>,
    delete_list: bool,
    field: &str,
) -> Result<Vec<Value>, StrategicError> {
    if original.is_empty() && patch.is_empty() {
        return Ok(original);
    }
    let kind = element_kind(&[&original, &patch])?;
    if kind != ElementKind::Object {
        if delete_list {
            // apimachinery's deleteFromSlice: a set of the values to delete.
            let deleted: HashSet<&Value> = patch.iter().collect();
            return Ok(original
                .into_iter()
                .filter(|item| !deleted.contains(item))
                .collect());
        }
        let mut seen: HashSet<&Value> = HashSet::with_capacity(original.len() + patch.len());
        let merged: Vec<Value> = original
            .iter()
            .chain(patch.iter())
            .filter(|item| seen.insert(*item))
            .cloned()
            .collect();
        let (in_patch, server_only) = partition(merged, &patch, None, false)?;
        return normalize_order(in_patch, server_only, &patch, &original, None, false);
    }
    let Some(merge_key) = merge_key.filter(|key| !key.is_empty()) else {
        return Err(StrategicError::Other(format!(
            "cannot merge lists without merge key for {field}"
        )));
    };
    let (original, patch) = apply_list_directives(original, patch, merge_key)?;
    let mut merged = MergedItems::new(original.clone(), merge_key);
    for item in &patch {
        let Value::Object(item_map) = item else {
            continue;
        };
        let value = item_map
            .get(merge_key)
            .ok_or_else(|| no_merge_key(item_map, merge_key))?;
        match merged.find(value) {
            Some(index) => {
                let current = merged.take(index);
                let item = Value::Object(merge_map(current, item_map.clone(), items)?);
                merged.put(index, value, item);
            }
            None => merged.push(item.clone()),
        }
    }
    let merged = merged.items;
    let (in_patch, server_only) = partition(merged, &patch, Some(merge_key), true)?;
    normalize_order(
        in_patch,
        server_only,
        &patch,
        &original,
        Some(merge_key),
        true,
    )
}

/// `$patch: delete` and `$patch: replace` items of a merged list of objects.
fn apply_list_directives(
    mut original: Vec<Value>,
    patch: Vec<Value>,
    merge_key: &str,
) -> Result<(Vec<Value>, Vec<Value>), StrategicError> {
    let mut plain = Vec::with_capacity(patch.len());
    let mut replace = false;
    let mut deleted: Vec<Value> = Vec::new();
    for item in patch {
        let Value::Object(map) = &item else {
            plain.push(item);
            continue;
        };
        let Some(directive) = map.get(DIRECTIVE) else {
            plain.push(item);
            continue;
        };
        match directive.as_str() {
            Some("delete") => {
                let value = map
                    .get(merge_key)
                    .ok_or_else(|| no_merge_key(map, merge_key))?;
                deleted.push(value.clone());
            }
            Some("replace") => replace = true,
            Some("merge") => {
                return Err(StrategicError::Other(
                    "merging lists cannot yet be specified in the patch".to_owned(),
                ));
            }
            _ => {
                return Err(StrategicError::Other(format!(
                    "unknown patch type: {} in map: {}",
                    go_value(directive),
                    go_map(map)
                )));
            }
        }
    }
    if replace {
        return Ok((plain, Vec::new()));
    }
    if !deleted.is_empty() {
        // Every item whose merge key has a deleted value goes, as apimachinery's
        // deleteMatchingEntries removes them one deletion at a time.
        let deleted: HashSet<&Value> = deleted.iter().collect();
        original.retain(|candidate| {
            candidate
                .get(merge_key)
                .is_none_or(|value| !deleted.contains(value))
        });
    }
    Ok((original, plain))
}

/// The items of a list of objects being merged, indexed by their merge key's value so that
/// each patch item finds its counterpart (the first item with that value, as apimachinery's
/// findMapInSliceBasedOnKeyValue) in constant time.
struct MergedItems<'k> {
    items: Vec<Value>,
    merge_key: &'k str,
    /// The indices of the items with each value, in increasing order.
    by_value: HashMap<Value, Vec<usize>>,
}

impl<'k> MergedItems<'k> {
    fn new(items: Vec<Value>, merge_key: &'k str) -> Self {
        let mut by_value: HashMap<Value, Vec<usize>> = HashMap::with_capacity(items.len());
        for (index, item) in items.iter().enumerate() {
            if let Some(value) = item.get(merge_key) {
                by_value.entry(value.clone()).or_default().push(index);
            }
        }
        MergedItems {
            items,
            merge_key,
            by_value,
        }
    }

    fn find(&self, value: &Value) -> Option<usize> {
        self.by_value
            .get(value)
            .and_then(|indices| indices.first())
            .copied()
    }

    /// Takes the object at `index` out to be merged; [`MergedItems::put`] puts it back.
    fn take(&mut self, index: usize) -> Map<String, Value> {
        match self.items.get_mut(index).map(std::mem::take) {
            Some(Value::Object(map)) => map,
            _ => Map::new(),
        }
    }

    /// Puts a merged object back where it was (its key's value was `before`), re-indexing it
    /// if merging changed that value (only a value that is itself an object with directives
    /// can change).
    fn put(&mut self, index: usize, before: &Value, item: Value) {
        let Some(slot) = self.items.get_mut(index) else {
            return;
        };
        *slot = item;
        let after = slot.get(self.merge_key);
        if after == Some(before) {
            return;
        }
        if let Some(indices) = self.by_value.get_mut(before) {
            indices.retain(|candidate| *candidate != index);
        }
        if let Some(after) = after.cloned() {
            let indices = self.by_value.entry(after).or_default();
            let at = indices.partition_point(|candidate| *candidate < index);
            indices.insert(at, index);
        }
    }

    fn push(&mut self, item: Value) {
        if let Some(value) = item.get(self.merge_key) {
            self.by_value
                .entry(value.clone())
                .or_default()
                .push(self.items.len());
        }
        self.items.push(item);
    }
}

/// The objects of a list by their merge key's value, for apimachinery's
/// findMapInSliceBasedOnKeyValue in constant time: the first object with each value, and where
/// the first item that is not an object sits (the scan fails there unless it matched before).
struct MergeKeyIndex<'a> {
    first: HashMap<&'a Value, usize>,
    first_non_object: Option<usize>,
}

impl<'a> MergeKeyIndex<'a> {
    fn new(list: &'a [Value], merge_key: &str) -> Self {
        let mut first = HashMap::with_capacity(list.len());
        let mut first_non_object = None;
        for (index, item) in list.iter().enumerate() {
            let Value::Object(map) = item else {
                first_non_object = Some(index);
                break;
            };
            if let Some(value) = map.get(merge_key) {
                first.entry(value).or_insert(index);
            }
        }
        MergeKeyIndex {
            first,
            first_non_object,
        }
    }

    /// Whether an object of the list has `value` as its merge key.
    fn contains(&self, value: &Value) -> Result<bool, StrategicError> {
        if self.first.contains_key(value) {
            return Ok(true);
        }
        match self.first_non_object {
            Some(index) => Err(StrategicError::Other(format!(
                "value for key {index} is not a map"
            ))),
            None => Ok(false),
        }
    }
}

/// Splits `merged` into the items named by `by` and the rest (server-only items).
fn partition(
    merged: Vec<Value>,
    by: &[Value],
    merge_key: Option<&str>,
    is_map: bool,
) -> Result<(Vec<Value>, Vec<Value>), StrategicError> {
    let mut named = Vec::with_capacity(merged.len());
    let mut rest = Vec::new();
    match (is_map, merge_key) {
        (true, Some(key)) => {
            let index = MergeKeyIndex::new(by, key);
            for item in merged {
                let Value::Object(map) = &item else {
                    return Err(StrategicError::Other(format!(
                        "expected a map[string]interface {{}}, but received a {}",
                        go_type(&item)
                    )));
                };
                let value = map.get(key).ok_or_else(|| no_merge_key(map, key))?;
                if index.contains(value)? {
                    named.push(item);
                } else {
                    rest.push(item);
                }
            }
        }
        _ => {
            let wanted: HashSet<&Value> = by.iter().collect();
            for item in merged {
                if wanted.contains(&item) {
                    named.push(item);
                } else {
                    rest.push(item);
                }
            }
        }
    }
    Ok((named, rest))
}

/// Where items sit in a list, as apimachinery's `index` finds them (the first item with the
/// same merge key value for objects, the same value otherwise), in constant time.
struct Positions<'a, 'k> {
    first: HashMap<Option<&'a Value>, usize>,
    merge_key: Option<&'k str>,
    is_map: bool,
}

impl<'a, 'k> Positions<'a, 'k> {
    fn new(list: &'a [Value], merge_key: Option<&'k str>, is_map: bool) -> Self {
        let mut first = HashMap::with_capacity(list.len());
        for (index, item) in list.iter().enumerate() {
            first
                .entry(lookup_key(item, merge_key, is_map))
                .or_insert(index);
        }
        Positions {
            first,
            merge_key,
            is_map,
        }
    }

    fn of(&self, item: &Value) -> Option<usize> {
        self.first
            .get(&lookup_key(item, self.merge_key, self.is_map))
            .copied()
    }
}

/// What items are compared by: an object's merge key value (none when it has none), or the
/// item itself.
fn lookup_key<'a>(item: &'a Value, merge_key: Option<&str>, is_map: bool) -> Option<&'a Value> {
    match (is_map, merge_key) {
        (true, Some(key)) => item.get(key),
        _ => Some(item),
    }
}

/// Orders patch items by `patch_order` and server-only items by `server_order`, then
/// interleaves them, keeping both relative orders and the live order where both are known.
fn normalize_order(
    patch_items: Vec<Value>,
    server_only: Vec<Value>,
    patch_order: &[Value],
    server_order: &[Value],
    merge_key: Option<&str>,
    is_map: bool,
) -> Result<Vec<Value>, StrategicError> {
    let left = sort_by_order(server_only, server_order, merge_key, is_map)?;
    let right = sort_by_order(patch_items, patch_order, merge_key, is_map)?;
    let live = Positions::new(server_order, merge_key, is_map);
    let mut result = Vec::with_capacity(left.len() + right.len());
    let (mut left, mut right) = (left.into_iter().peekable(), right.into_iter().peekable());
    loop {
        match (left.peek(), right.peek()) {
            (None, None) => break,
            (Some(_), None) => result.extend(left.next()),
            (None, Some(_)) => result.extend(right.next()),
            (Some(l), Some(r)) => {
                let before = match (live.of(l), live.of(r)) {
                    (Some(li), Some(ri)) => li < ri,
                    _ => false,
                };
                if before {
                    result.extend(left.next());
                } else {
                    result.extend(right.next());
                }
            }
        }
    }
    Ok(result)
}

/// A stable sort of `items` by their place in `order`; `$patch: delete` items go last.
fn sort_by_order(
    items: Vec<Value>,
    order: &[Value],
    merge_key: Option<&str>,
    is_map: bool,
) -> Result<Vec<Value>, StrategicError> {
    let mut deletions = Vec::new();
    let mut kept = Vec::with_capacity(items.len());
    if is_map && let Some(key) = merge_key {
        for item in items.iter().chain(order.iter()) {
            match item {
                Value::Object(map) if !map.contains_key(key) => {
                    return Err(no_merge_key(map, key));
                }
                _ => {}
            }
        }
    }
    for item in items {
        if is_map && item.get(DIRECTIVE).and_then(Value::as_str) == Some("delete") {
            deletions.push(item);
        } else {
            kept.push(item);
        }
    }
    let positions = Positions::new(order, merge_key, is_map);
    let mut ranked: Vec<(usize, Value)> = kept
        .into_iter()
        .map(|item| (positions.of(&item).unwrap_or(usize::MAX), item))
        .collect();
    ranked.sort_by_key(|(rank, _)| *rank);
    let mut sorted: Vec<Value> = ranked.into_iter().map(|(_, item)| item).collect();
    sorted.extend(deletions);
    Ok(sorted)
}

/// Drops `$patch` maps and strips nothing else; `None` when the value itself is a directive.
fn remove_directives(value: Value) -> Option<Value> {
    match value {
        Value::Object(map) => {
            if map.contains_key(DIRECTIVE) {
                return None;
            }
            Some(Value::Object(
                map.into_iter()
                    .filter_map(|(key, value)| remove_directives(value).map(|value| (key, value)))
                    .collect(),
            ))
        }
        Value::Array(items) => Some(Value::Array(
            items.into_iter().filter_map(remove_directives).collect(),
        )),
        other => Some(other),
    }
}

/// Drops null-valued fields at every depth (a patch cannot add nulls).
fn discard_nulls(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .filter(|(_, value)| !value.is_null())
                .map(|(key, value)| (key, discard_nulls(value)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(discard_nulls).collect()),
        other => other,
    }
}

/// Whether two JSON values have the same Go type after decoding (integers and floats differ).
fn same_kind(left: &Value, right: &Value) -> bool {
    match (left, right) {
        (Value::Number(left), Value::Number(right)) => left.is_f64() == right.is_f64(),
        _ => std::mem::discriminant(left) == std::mem::discriminant(right),
    }
}

/// A value as Go's `%v` prints decoded JSON, for messages that quote the patch.
fn go_value(value: &Value) -> String {
    match value {
        Value::Null => "<nil>".to_owned(),
        Value::String(text) => text.clone(),
        Value::Object(map) => go_map(map),
        Value::Array(items) => go_list(items),
        other => other.to_string(),
    }
}

fn go_map(map: &Map<String, Value>) -> String {
    let mut out = String::from("map[");
    for (index, (key, value)) in map.iter().enumerate() {
        if index > 0 {
            out.push(' ');
        }
        let _ = write!(out, "{key}:{}", go_value(value));
    }
    out.push(']');
    out
}

fn go_list(items: &[Value]) -> String {
    let parts: Vec<String> = items.iter().map(go_value).collect();
    format!("[{}]", parts.join(" "))
}

fn go_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(number) if number.is_f64() => "float64",
        Value::Number(_) => "int64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kro_schema::{Catalog, Gvk};
    use serde_json::json;

    fn smp(kind: (&str, &str), original: Value, patch: Value) -> Result<Value, StrategicError> {
        let gvk = Gvk::from_api_version(kind.0, kind.1).expect("gvk");
        let root = Catalog::kubernetes()
            .resolve(&gvk)
            .found()
            .map(|kind| kind.root());
        apply(&original, &patch, root)
    }

    fn deployment(containers: Value) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
            "spec": {"template": {"spec": {"containers": containers}}}})
    }

    fn containers(value: &Value) -> &Value {
        &value["spec"]["template"]["spec"]["containers"]
    }

    #[test]
    fn containers_merge_by_name_and_keep_server_only_items() {
        let original = deployment(json!([
            {"name": "a", "image": "a:1", "ports": [{"containerPort": 80}]},
            {"name": "b", "image": "b:1"}
        ]));
        let patch = json!({"spec": {"template": {"spec": {"containers": [
            {"name": "b", "image": "b:2"}, {"name": "c", "image": "c:1"}]}}}});
        let result = smp(("apps/v1", "Deployment"), original, patch).expect("patched");
        assert_eq!(
            containers(&result),
            &json!([
                {"name": "a", "image": "a:1", "ports": [{"containerPort": 80}]},
                {"name": "b", "image": "b:2"},
                {"name": "c", "image": "c:1"}
            ])
        );
    }

    #[test]
    fn set_element_order_and_delete_directives() {
        let original = deployment(json!([
            {"name": "a", "image": "a:1"}, {"name": "b", "image": "b:1"}, {"name": "c", "image": "c:1"}
        ]));
        let patch = json!({"spec": {"template": {"spec": {
            "$setElementOrder/containers": [{"name": "c"}, {"name": "a"}],
            "containers": [{"name": "b", "$patch": "delete"}, {"name": "c", "image": "c:2"}]}}}});
        let result = smp(("apps/v1", "Deployment"), original, patch).expect("patched");
        assert_eq!(
            containers(&result),
            &json!([{"name": "c", "image": "c:2"}, {"name": "a", "image": "a:1"}])
        );
    }

    #[test]
    fn list_replace_directive_and_null_removal() {
        let original = deployment(json!([{"name": "a", "image": "a:1"}]));
        let patch = json!({"metadata": {"labels": null}, "spec": {"template": {"spec": {
            "containers": [{"$patch": "replace"}, {"name": "z", "image": "z:1"}]}}}});
        let result = smp(("apps/v1", "Deployment"), original, patch).expect("patched");
        assert_eq!(containers(&result), &json!([{"name": "z", "image": "z:1"}]));
    }

    #[test]
    fn retain_keys_clears_the_other_strategy_fields() {
        let original = json!({"spec": {"strategy": {"type": "RollingUpdate",
            "rollingUpdate": {"maxSurge": 1}}}});
        let patch = json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}});
        let result = smp(("apps/v1", "Deployment"), original.clone(), patch).expect("patched");
        assert_eq!(result["spec"]["strategy"], json!({"type": "Recreate"}));
        let bad = json!({"spec": {"strategy": {"$retainKeys": ["x"], "type": "Recreate"}}});
        assert_eq!(
            smp(("apps/v1", "Deployment"), original, bad),
            Err(StrategicError::BadRequest(BAD_RETAIN_KEYS))
        );
    }

    #[test]
    fn primitive_merge_lists_and_deletion_lists() {
        let original = json!({"metadata": {"finalizers": ["a", "b"]}});
        let patch = json!({"metadata": {"finalizers": ["c"]}});
        let result = smp(("v1", "ConfigMap"), original.clone(), patch).expect("patched");
        // Patch items not in the live list go first, as in apimachinery's mergeSortedSlice.
        assert_eq!(result["metadata"]["finalizers"], json!(["c", "a", "b"]));
        let patch = json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}});
        let result = smp(("v1", "ConfigMap"), original, patch).expect("patched");
        assert_eq!(result["metadata"]["finalizers"], json!(["b"]));
    }

    #[test]
    fn atomic_lists_are_replaced_and_errors_are_classified() {
        let original = json!({"spec": {"template": {"spec": {"containers": [
            {"name": "a", "args": ["x", "y"]}]}}}});
        let patch = json!({"spec": {"template": {"spec": {"containers": [
            {"name": "a", "args": ["z"]}]}}}});
        let result = smp(("apps/v1", "Deployment"), original.clone(), patch).expect("patched");
        assert_eq!(containers(&result)[0]["args"], json!(["z"]));
        let no_key = json!({"spec": {"template": {"spec": {"containers": [{"image": "x"}]}}}});
        let error = smp(("apps/v1", "Deployment"), original.clone(), no_key).expect_err("no key");
        assert_eq!(
            error,
            StrategicError::Other(
                "map: map[image:x] does not contain declared merge key: name".to_owned()
            )
        );
        let nested = json!({"metadata": {"finalizers": [["a"]]}});
        let error = smp(
            ("v1", "ConfigMap"),
            json!({"metadata": {"finalizers": ["b"]}}),
            nested.clone(),
        )
        .expect_err("mixed");
        assert_eq!(
            error,
            StrategicError::Other("list element types are not identical: [[b] [[a]]]".to_owned())
        );
        let error = smp(
            ("v1", "ConfigMap"),
            json!({"metadata": {"finalizers": []}}),
            nested,
        )
        .expect_err("list of lists");
        assert_eq!(error, StrategicError::Unprocessable(NO_LIST_OF_LISTS));
        let api: ApiError = error.into();
        assert_eq!(api.code, 422);
    }

    /// 100,000 finalizers: far more than a real object has, and enough that a patch costing
    /// n² comparisons (5·10⁹ here) could not finish while the suite runs.
    const LONG_LIST: usize = 100_000;

    fn finalizers(range: std::ops::Range<usize>) -> Vec<Value> {
        range.map(|index| json!(format!("f{index}"))).collect()
    }

    #[test]
    fn delete_from_primitive_list_of_100k_items_keeps_the_rest_in_order() {
        let original = json!({"metadata": {"finalizers": finalizers(0..LONG_LIST)}});
        let even: Vec<Value> = finalizers(0..LONG_LIST).into_iter().step_by(2).collect();
        let patch = json!({"metadata": {"$deleteFromPrimitiveList/finalizers": even}});
        let result = smp(("v1", "ConfigMap"), original, patch).expect("patched");
        let odd: Vec<Value> = finalizers(0..LONG_LIST)
            .into_iter()
            .skip(1)
            .step_by(2)
            .collect();
        assert_eq!(result["metadata"]["finalizers"], Value::Array(odd));
    }

    #[test]
    fn merging_100k_primitive_items_puts_new_ones_first_without_duplicates() {
        let original = json!({"metadata": {"finalizers": finalizers(0..LONG_LIST)}});
        let patch =
            json!({"metadata": {"finalizers": finalizers(LONG_LIST / 2..LONG_LIST * 3 / 2)}});
        let result = smp(("v1", "ConfigMap"), original, patch).expect("patched");
        // Server-only items keep their place before the patch items they preceded live.
        let mut expected = finalizers(0..LONG_LIST / 2);
        expected.extend(finalizers(LONG_LIST / 2..LONG_LIST * 3 / 2));
        assert_eq!(result["metadata"]["finalizers"], Value::Array(expected));
    }

    #[test]
    fn set_element_order_of_100k_items_reverses_the_list() {
        let original = json!({"metadata": {"finalizers": finalizers(0..LONG_LIST)}});
        let mut reversed = finalizers(0..LONG_LIST);
        reversed.reverse();
        let patch = json!({"metadata": {"$setElementOrder/finalizers": reversed.clone()}});
        let result = smp(("v1", "ConfigMap"), original, patch).expect("patched");
        assert_eq!(result["metadata"]["finalizers"], Value::Array(reversed));
    }

    #[test]
    fn set_element_order_of_100k_containers_reverses_them_and_merges_by_name() {
        let named = |index: usize| json!({"name": format!("c{index}")});
        let original = deployment(Value::Array((0..LONG_LIST).map(named).collect()));
        let order: Vec<Value> = (0..LONG_LIST).rev().map(named).collect();
        let patch = json!({"spec": {"template": {"spec": {
            "$setElementOrder/containers": order.clone(),
            "containers": [{"name": "c7", "image": "i"}, {"name": "c3", "$patch": "delete"}]}}}});
        let result = smp(("apps/v1", "Deployment"), original, patch).expect("patched");
        let expected: Vec<Value> = (0..LONG_LIST)
            .rev()
            .filter(|index| *index != 3)
            .map(|index| match index {
                7 => json!({"name": "c7", "image": "i"}),
                _ => named(index),
            })
            .collect();
        assert_eq!(containers(&result), &Value::Array(expected));
    }

    #[test]
    fn merging_100k_containers_by_name_updates_and_appends_in_patch_order() {
        let named = |index: usize| json!({"name": format!("c{index}")});
        let imaged = |index: usize| json!({"name": format!("c{index}"), "image": "i"});
        let original = deployment(Value::Array((0..LONG_LIST).map(named).collect()));
        let mut patch_items: Vec<Value> = (LONG_LIST / 2..LONG_LIST * 3 / 2).map(imaged).collect();
        patch_items.extend(
            (0..LONG_LIST / 4)
                .map(|index| json!({"name": format!("c{}", index * 2), "$patch": "delete"})),
        );
        let patch = json!({"spec": {"template": {"spec": {"containers": patch_items}}}});
        let result = smp(("apps/v1", "Deployment"), original, patch).expect("patched");
        let mut expected: Vec<Value> = (0..LONG_LIST / 2)
            .filter(|index| index % 2 == 1)
            .map(named)
            .collect();
        expected.extend((LONG_LIST / 2..LONG_LIST * 3 / 2).map(imaged));
        assert_eq!(containers(&result), &Value::Array(expected));
    }

    #[test]
    fn retain_keys_with_100k_keys_keeps_only_those_named() {
        let keys: Vec<String> = (0..LONG_LIST).map(|index| format!("k{index}")).collect();
        let mut original = Map::new();
        let mut patch = Map::new();
        for key in &keys {
            original.insert(key.clone(), json!(1));
            original.insert(format!("other-{key}"), json!(1));
            patch.insert(key.clone(), json!(2));
        }
        patch.insert(RETAIN_KEYS.to_owned(), json!(keys));
        let result = apply(&Value::Object(original), &Value::Object(patch), None).expect("patched");
        let expected: Map<String, Value> = keys.iter().map(|key| (key.clone(), json!(2))).collect();
        assert_eq!(result, Value::Object(expected));
    }

    #[test]
    fn map_directives() {
        let original = json!({"data": {"a": "1", "b": "2"}});
        let replaced = smp(
            ("v1", "ConfigMap"),
            original.clone(),
            json!({"data": {"$patch": "replace", "c": "3"}}),
        )
        .expect("patched");
        assert_eq!(replaced["data"], json!({"c": "3"}));
        let deleted = smp(
            ("v1", "ConfigMap"),
            original,
            json!({"data": {"$patch": "delete"}}),
        )
        .expect("patched");
        assert_eq!(deleted["data"], json!({}));
    }
}
