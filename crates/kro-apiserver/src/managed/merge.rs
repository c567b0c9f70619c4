//! Comparing and merging values by their shape (structured-merge-diff's `Compare` and
//! `Merge`), and removing the fields a manager gave up.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use super::fields::{Element, FieldSet, MAX_DEPTH};
use super::shape::{ListShape, Shape, item_element, prune_empty};

/// What changed between two versions of an object, as field sets.
#[derive(Debug, Default)]
pub(crate) struct Comparison {
    pub(crate) added: FieldSet,
    pub(crate) removed: FieldSet,
    pub(crate) modified: FieldSet,
}

/// Compares `old` and `new` (structured-merge-diff's `Compare`).
pub(crate) fn compare(old: &Value, new: &Value, shape: Shape<'_>) -> Comparison {
    let mut comparison = Comparison::default();
    let mut path = Vec::new();
    compare_at(
        Some(old),
        Some(new),
        shape,
        true,
        0,
        &mut path,
        &mut comparison,
    );
    prune_empty(&mut comparison.added);
    prune_empty(&mut comparison.removed);
    prune_empty(&mut comparison.modified);
    comparison
}

pub(super) fn compare_at(
    old: Option<&Value>,
    new: Option<&Value>,
    shape: Shape<'_>,
    root: bool,
    depth: usize,
    path: &mut Vec<Element>,
    comparison: &mut Comparison,
) {
    if depth > MAX_DEPTH {
        return;
    }
    // A null map or list (a Go nil) is the node present and empty, as structured-merge-diff
    // reads it: its items are added, the node itself is not.
    let (empty_map, empty_list) = (Value::Object(Map::new()), Value::Array(Vec::new()));
    let as_container = |side: Option<&'_ Value>, other: Option<&Value>| match (side, other) {
        (Some(Value::Null), Some(Value::Object(_))) => Some(&empty_map),
        (Some(Value::Null), Some(Value::Array(_))) => Some(&empty_list),
        _ => None,
    };
    let (old, new) = (
        as_container(old, new).or(old),
        as_container(new, old).or(new),
    );
    // A built-in kind's null field is its Go zero value, which kube-apiserver leaves out of
    // the typed object it compares (a template's `creationTimestamp: null`): not a field.
    let typed = matches!(shape, Shape::Catalog(_));
    let (old, new) = (
        old.filter(|value| !(typed && value.is_null())),
        new.filter(|value| !(typed && value.is_null())),
    );
    let leaf = |comparison: &mut Comparison, path: &[Element]| match (old, new) {
        (None, Some(_)) => comparison.added.insert(path),
        (Some(_), None) => comparison.removed.insert(path),
        (Some(a), Some(b)) if a != b => comparison.modified.insert(path),
        _ => {}
    };
    let is_map = old.is_none_or(Value::is_object) && new.is_none_or(Value::is_object);
    let is_list = old.is_none_or(Value::is_array) && new.is_none_or(Value::is_array);
    if is_map && (old.is_some() || new.is_some()) && !(old.is_none() && new.is_none()) {
        let (left, right) = (
            old.and_then(Value::as_object),
            new.and_then(Value::as_object),
        );
        let empty = left.is_none_or(Map::is_empty) && right.is_none_or(Map::is_empty);
        if shape.atomic_map() || empty {
            leaf(comparison, path);
            return;
        }
        let mut keys: Vec<&String> = left.into_iter().flat_map(|m| m.keys()).collect();
        keys.extend(right.into_iter().flat_map(|m| m.keys()));
        keys.sort();
        keys.dedup();
        for key in keys {
            let (child_shape, _) = shape.field(key, root);
            path.push(Element::Field(key.clone()));
            compare_at(
                left.and_then(|m| m.get(key)),
                right.and_then(|m| m.get(key)),
                child_shape,
                false,
                depth + 1,
                path,
                comparison,
            );
            path.pop();
        }
    } else if is_list {
        let (left, right) = (old.and_then(Value::as_array), new.and_then(Value::as_array));
        let empty = left.is_none_or(Vec::is_empty) && right.is_none_or(Vec::is_empty);
        let list = shape.list();
        if list == ListShape::Atomic || empty {
            leaf(comparison, path);
            return;
        }
        let (left_items, right_items) = (
            index_items(&list, left.map(Vec::as_slice).unwrap_or_default()),
            index_items(&list, right.map(Vec::as_slice).unwrap_or_default()),
        );
        let (left_by, right_by) = (by_element(&left_items), by_element(&right_items));
        let mut elements: Vec<&Element> = left_items.iter().map(|(e, _)| e).collect();
        for (element, _) in &right_items {
            if !left_by.contains_key(element) {
                elements.push(element);
            }
        }
        for element in elements {
            let (l, r) = (
                left_by.get(element).copied(),
                right_by.get(element).copied(),
            );
            path.push(element.clone());
            compare_at(l, r, shape.items(), false, depth + 1, path, comparison);
            path.pop();
        }
    } else {
        leaf(comparison, path);
        return;
    }
    // A map or list node that appeared or went away is itself added or removed.
    match (old, new) {
        (None, Some(_)) => comparison.added.insert(path),
        (Some(_), None) => comparison.removed.insert(path),
        _ => {}
    }
}

/// The items of a list by path element, in order (first of duplicates). Hashed, so a list
/// of 100,000 items costs 100,000 steps, not their square.
pub(super) fn index_items<'v>(list: &ListShape, items: &'v [Value]) -> Vec<(Element, &'v Value)> {
    let mut seen: HashSet<Element> = HashSet::new();
    let mut found: Vec<(Element, &Value)> = Vec::new();
    for item in items {
        if let Some(element) = item_element(list, item)
            && seen.insert(element.clone())
        {
            found.push((element, item));
        }
    }
    found
}

/// Each item of [`index_items`] by its element.
fn by_element<V: Copy>(items: &[(Element, V)]) -> HashMap<&Element, V> {
    items
        .iter()
        .map(|(element, value)| (element, *value))
        .collect()
}

/// Merges an applied configuration into the live object (structured-merge-diff's `Merge`).
pub(crate) fn merge(live: &Value, config: &Value, shape: Shape<'_>) -> Value {
    merge_at(live, config, shape, true, 0)
}

pub(super) fn merge_at(
    live: &Value,
    config: &Value,
    shape: Shape<'_>,
    root: bool,
    depth: usize,
) -> Value {
    if depth > MAX_DEPTH {
        return config.clone();
    }
    match (live, config) {
        (Value::Object(left), Value::Object(right)) if !shape.atomic_map() => {
            let mut out = left.clone();
            for (key, value) in right {
                let merged = match left.get(key) {
                    Some(current) => {
                        let (child_shape, _) = shape.field(key, root);
                        merge_at(current, value, child_shape, false, depth + 1)
                    }
                    None => value.clone(),
                };
                out.insert(key.clone(), merged);
            }
            Value::Object(out)
        }
        (Value::Array(left), Value::Array(right)) => {
            let list = shape.list();
            if list == ListShape::Atomic {
                return config.clone();
            }
            Value::Array(merge_lists(left, right, &list, shape.items(), depth))
        }
        _ => config.clone(),
    }
}

/// Merges associative lists: shared items in the configuration's order, live-only items
/// kept in place, new items where the configuration puts them.
pub(super) fn merge_lists(
    left: &[Value],
    right: &[Value],
    list: &ListShape,
    items: Shape<'_>,
    depth: usize,
) -> Vec<Value> {
    let (lhs, rhs) = (index_items(list, left), index_items(list, right));
    let (lhs_by, rhs_by) = (by_element(&lhs), by_element(&rhs));
    let find = |items: &HashMap<&Element, &Value>, element: &Element| {
        items.get(element).map(|value| (*value).clone())
    };
    let mut shared: std::collections::VecDeque<Element> = rhs
        .iter()
        .filter(|(element, _)| lhs_by.contains_key(element))
        .map(|(element, _)| element.clone())
        .collect();
    let mut next_shared = shared.pop_front();
    let mut merged_rhs: HashSet<Element> = HashSet::new();
    let mut out = Vec::with_capacity(lhs.len().max(rhs.len()));
    let merge_item = |l: Option<Value>, r: &Value| match l {
        Some(l) => merge_at(&l, r, items, false, depth + 1),
        None => r.clone(),
    };
    let (mut li, mut ri) = (0, 0);
    while li < lhs.len() || ri < rhs.len() {
        if li < lhs.len() && ri < rhs.len() {
            let element = &lhs[li].0;
            if *element == rhs[ri].0 {
                merged_rhs.insert(element.clone());
                out.push(merge_item(Some(lhs[li].1.clone()), rhs[ri].1));
                li += 1;
                ri += 1;
                next_shared = shared.pop_front();
                continue;
            }
            if rhs_by.contains_key(element)
                && next_shared.as_ref().is_some_and(|next| next != element)
            {
                li += 1;
                continue;
            }
        }
        if li < lhs.len() {
            let element = &lhs[li].0;
            if !rhs_by.contains_key(element) {
                out.push(lhs[li].1.clone());
                li += 1;
                continue;
            } else if merged_rhs.contains(element) {
                li += 1;
            }
        }
        if ri < rhs.len() {
            let element = rhs[ri].0.clone();
            out.push(merge_item(find(&lhs_by, &element), rhs[ri].1));
            if next_shared.as_ref() == Some(&element) {
                next_shared = shared.pop_front();
            }
            merged_rhs.insert(element);
            ri += 1;
        }
    }
    out
}

/// Removes the member paths of `set` from `value` (structured-merge-diff's `RemoveItems`).
pub(super) fn remove_items(value: &mut Value, set: &FieldSet, shape: Shape<'_>, root: bool) {
    match value {
        Value::Object(map) => {
            for (element, child) in &set.children {
                let Element::Field(name) = element else {
                    continue;
                };
                if child.member {
                    map.remove(name);
                } else if let Some(inner) = map.get_mut(name) {
                    let (child_shape, _) = shape.field(name, root);
                    remove_items(inner, child, child_shape, false);
                }
            }
        }
        Value::Array(items) => {
            let list = shape.list();
            let mut kept = Vec::with_capacity(items.len());
            for mut item in std::mem::take(items) {
                match item_element(&list, &item).and_then(|element| set.child(&element)) {
                    Some(child) if child.member => continue,
                    Some(child) => remove_items(&mut item, child, shape.items(), false),
                    None => {}
                }
                kept.push(item);
            }
            *items = kept;
        }
        _ => {}
    }
}

/// Removes maps left empty by a removal when the removed manager had named them and nobody
/// owns anything beneath them.
pub(super) fn remove_emptied(value: &mut Value, last: &FieldSet, owned: &FieldSet) {
    let Value::Object(map) = value else {
        return;
    };
    for (element, child) in &last.children {
        let Element::Field(name) = element else {
            continue;
        };
        let owned_child = owned.child(element);
        if let Some(inner) = map.get_mut(name) {
            remove_emptied(inner, child, owned_child.unwrap_or(&FieldSet::default()));
            let emptied = matches!(inner, Value::Object(m) if m.is_empty());
            if emptied && !child.children.is_empty() && owned_child.is_none() {
                map.remove(name);
            }
        }
    }
}
