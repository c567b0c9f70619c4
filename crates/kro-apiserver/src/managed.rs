//! Field management: `metadata.managedFields` and server-side apply, with the semantics of
//! structured-merge-diff as kube-apiserver uses it.
//!
//! Every write records which manager set which fields (`FieldsV1`). An apply
//! (`application/apply-patch+yaml`) merges the manager's intent into the live object by the
//! schema's list types, map types and list map keys; fails with a conflict when it would change
//! a field another manager owns (unless forced, which takes ownership); and removes the fields
//! the manager applied before and no longer applies, when nobody else owns them. Other writes
//! take ownership of what they changed.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use kro_schema::{Catalog, FieldSchema, Gvk, ListType, MapType, PatchStrategy, Schema};
use serde_json::{Map, Value, json};

use crate::error::ApiError;

/// One step of a field path.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Element {
    /// `f:<name>`: a field of an object or a key of a map.
    Field(String),
    /// `k:<json>`: an item of a map list, by its key fields (a JSON object, sorted keys).
    Key(String),
    /// `v:<json>`: an item of a set.
    Value(String),
    /// `i:<index>`: an item of a list by position (only read from stored entries).
    Index(usize),
}

impl Element {
    fn encode(&self) -> String {
        match self {
            Element::Field(name) => format!("f:{name}"),
            Element::Key(key) => format!("k:{key}"),
            Element::Value(value) => format!("v:{value}"),
            Element::Index(index) => format!("i:{index}"),
        }
    }

    fn decode(text: &str) -> Option<Element> {
        let (prefix, rest) = text.split_at_checked(2)?;
        match prefix {
            "f:" => Some(Element::Field(rest.to_owned())),
            "k:" => {
                let key: Value = serde_json::from_str(rest).ok()?;
                Some(Element::Key(key.to_string()))
            }
            "v:" => {
                let value: Value = serde_json::from_str(rest).ok()?;
                Some(Element::Value(value.to_string()))
            }
            "i:" => rest.parse().ok().map(Element::Index),
            _ => None,
        }
    }

    /// As structured-merge-diff prints paths: `.data.k1`, `[name="web"]`, `[="a"]`.
    fn display(&self, out: &mut String) {
        match self {
            Element::Field(name) => {
                let _ = write!(out, ".{name}");
            }
            Element::Key(key) => {
                let fields: Vec<String> = serde_json::from_str::<Map<String, Value>>(key)
                    .map(|map| map.iter().map(|(k, v)| format!("{k}={v}")).collect())
                    .unwrap_or_default();
                let _ = write!(out, "[{}]", fields.join(","));
            }
            Element::Value(value) => {
                let _ = write!(out, "[={value}]");
            }
            Element::Index(index) => {
                let _ = write!(out, "[{index}]");
            }
        }
    }
}

/// A set of field paths, as a tree: a node is a member when its own path is in the set.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct FieldSet {
    member: bool,
    children: BTreeMap<Element, FieldSet>,
}

/// How deep field sets and merges go (objects are depth-bounded by the JSON decoder anyway).
const MAX_DEPTH: usize = 128;

impl FieldSet {
    pub(crate) fn is_empty(&self) -> bool {
        !self.member && self.children.is_empty()
    }

    fn insert(&mut self, path: &[Element]) {
        match path.split_first() {
            None => self.member = true,
            Some((first, rest)) => self.children.entry(first.clone()).or_default().insert(rest),
        }
    }

    fn child(&self, element: &Element) -> Option<&FieldSet> {
        self.children.get(element)
    }

    pub(crate) fn union(&self, other: &FieldSet) -> FieldSet {
        let mut result = self.clone();
        result.member |= other.member;
        for (element, child) in &other.children {
            let merged = match result.children.get(element) {
                Some(mine) => mine.union(child),
                None => child.clone(),
            };
            result.children.insert(element.clone(), merged);
        }
        result
    }

    /// The set with every field that has owned fields beneath it counted as owned itself
    /// (structured-merge-diff's `EnsureNamedFieldsAreMembers`): a map a manager writes keys
    /// into is the manager's too, so a removal of the map as a whole does not take it.
    pub(crate) fn with_parent_fields(&self) -> FieldSet {
        let mut result = FieldSet {
            member: self.member,
            children: BTreeMap::new(),
        };
        for (element, child) in &self.children {
            let mut child = child.with_parent_fields();
            if matches!(element, Element::Field(_)) && !child.children.is_empty() {
                child.member = true;
            }
            result.children.insert(element.clone(), child);
        }
        result
    }

    pub(crate) fn difference(&self, other: &FieldSet) -> FieldSet {
        let mut result = FieldSet {
            member: self.member && !other.member,
            children: BTreeMap::new(),
        };
        for (element, child) in &self.children {
            let rest = match other.children.get(element) {
                Some(theirs) => child.difference(theirs),
                None => child.clone(),
            };
            if !rest.is_empty() {
                result.children.insert(element.clone(), rest);
            }
        }
        result
    }

    pub(crate) fn intersection(&self, other: &FieldSet) -> FieldSet {
        let mut result = FieldSet {
            member: self.member && other.member,
            children: BTreeMap::new(),
        };
        for (element, child) in &self.children {
            if let Some(theirs) = other.children.get(element) {
                let both = child.intersection(theirs);
                if !both.is_empty() {
                    result.children.insert(element.clone(), both);
                }
            }
        }
        result
    }

    /// Every member path.
    fn paths(&self) -> Vec<Vec<Element>> {
        fn walk(set: &FieldSet, prefix: &mut Vec<Element>, out: &mut Vec<Vec<Element>>) {
            if set.member {
                out.push(prefix.clone());
            }
            for (element, child) in &set.children {
                prefix.push(element.clone());
                walk(child, prefix, out);
                prefix.pop();
            }
        }
        let mut out = Vec::new();
        walk(self, &mut Vec::new(), &mut out);
        out
    }

    /// The `FieldsV1` JSON form.
    pub(crate) fn to_json(&self) -> Value {
        let mut map = Map::new();
        if self.member && !self.children.is_empty() {
            map.insert(".".to_owned(), json!({}));
        }
        for (element, child) in &self.children {
            map.insert(element.encode(), child.to_json());
        }
        Value::Object(map)
    }

    /// Reads the `FieldsV1` JSON form.
    pub(crate) fn from_json(value: &Value) -> Result<FieldSet, String> {
        fn read(value: &Value, depth: usize) -> Result<FieldSet, String> {
            if depth > MAX_DEPTH {
                return Err("fieldsV1 is nested too deeply".to_owned());
            }
            let Value::Object(map) = value else {
                return Err(format!("expected an object in fieldsV1, found {value}"));
            };
            let mut set = FieldSet {
                // A leaf (`{}`) is a member.
                member: map.is_empty(),
                children: BTreeMap::new(),
            };
            for (key, child) in map {
                if key == "." {
                    set.member = true;
                    continue;
                }
                let element = Element::decode(key)
                    .ok_or_else(|| format!("unknown path element {key:?} in fieldsV1"))?;
                set.children.insert(element, read(child, depth + 1)?);
            }
            Ok(set)
        }
        read(value, 0)
    }
}

/// Prints a path as structured-merge-diff does (`.spec.containers[name="web"].image`).
fn path_text(path: &[Element]) -> String {
    let mut out = String::new();
    for element in path {
        element.display(&mut out);
    }
    out
}

/// How the items of a list are identified.
#[derive(Debug, Clone, PartialEq, Eq)]
enum ListShape {
    Atomic,
    Set,
    /// Key fields, each with its schema default (used when an item leaves it out).
    Map(Vec<(String, Option<Value>)>),
}

/// The schema of a value, as far as merging needs it.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Shape<'a> {
    /// A built-in type, from the catalog.
    Catalog(FieldSchema<'a>),
    /// A custom resource's structural schema.
    Custom(&'a Schema),
    /// No schema: maps are granular, lists atomic.
    Untyped,
}

fn object_meta() -> Shape<'static> {
    Catalog::kubernetes()
        .resolve(&Gvk::new("", "v1", "ConfigMap"))
        .found()
        .and_then(|kind| kind.root().property("metadata"))
        .map_or(Shape::Untyped, Shape::Catalog)
}

impl<'a> Shape<'a> {
    /// The shape of a built-in kind, or of a custom resource with `schema`.
    pub(crate) fn of_kind(gvk: &Gvk, custom: Option<&'a Schema>) -> Shape<'a> {
        if let Some(schema) = custom {
            return Shape::Custom(schema);
        }
        Catalog::kubernetes()
            .resolve(gvk)
            .found()
            .map_or(Shape::Untyped, |kind| Shape::Catalog(kind.root()))
    }

    /// The shape of field `name`, and whether it is a declared field (not a map key).
    fn field(self, name: &str, at_root: bool) -> (Shape<'a>, bool) {
        match self {
            Shape::Catalog(schema) => match schema.property(name) {
                Some(field) => (Shape::Catalog(field), true),
                None => (
                    schema.map_values().map_or(Shape::Untyped, Shape::Catalog),
                    false,
                ),
            },
            Shape::Custom(schema) => {
                if at_root && name == "metadata" {
                    return (object_meta(), true);
                }
                match schema.properties.get(name) {
                    Some(field) => (Shape::Custom(field), true),
                    None => (
                        schema
                            .additional_properties_schema()
                            .map_or(Shape::Untyped, Shape::Custom),
                        false,
                    ),
                }
            }
            Shape::Untyped => (Shape::Untyped, false),
        }
    }

    fn items(self) -> Shape<'a> {
        match self {
            Shape::Catalog(schema) => schema.items().map_or(Shape::Untyped, Shape::Catalog),
            Shape::Custom(schema) => schema
                .items
                .as_deref()
                .map_or(Shape::Untyped, Shape::Custom),
            Shape::Untyped => Shape::Untyped,
        }
    }

    /// Map-list key fields with the defaults their item schema gives them: a custom
    /// resource's schema `default`, for built-ins the defaults kube-apiserver publishes
    /// ([`BUILT_IN_KEY_DEFAULTS`]; the catalog has none).
    fn keys_with_defaults(self, keys: Vec<String>) -> ListShape {
        let items = self.items();
        ListShape::Map(
            keys.into_iter()
                .map(|key| {
                    let default = match items {
                        Shape::Catalog(schema) => {
                            let definition = schema.definition_name().unwrap_or_default();
                            BUILT_IN_KEY_DEFAULTS
                                .iter()
                                .find(|(kind, field, _)| *kind == definition && *field == key)
                                .map(|(_, _, value)| Value::String((*value).to_owned()))
                        }
                        Shape::Custom(_) => match items.field(&key, false).0 {
                            Shape::Custom(field) => field.default.clone(),
                            _ => None,
                        },
                        Shape::Untyped => None,
                    };
                    (key, default)
                })
                .collect(),
        )
    }

    fn list(self) -> ListShape {
        match self {
            Shape::Catalog(schema) => {
                let merge = schema.merge_semantics();
                match merge.list_type {
                    Some(ListType::Map) => self.keys_with_defaults(merge.list_map_keys),
                    Some(ListType::Set) => ListShape::Set,
                    Some(ListType::Atomic) => ListShape::Atomic,
                    None if merge.patch_strategies.contains(&PatchStrategy::Merge) => {
                        match merge.patch_merge_key {
                            Some(key) => self.keys_with_defaults(vec![key]),
                            None => ListShape::Set,
                        }
                    }
                    None => ListShape::Atomic,
                }
            }
            Shape::Custom(schema) => match schema.x_kubernetes_list_type.as_deref() {
                Some("map") => self.keys_with_defaults(schema.x_kubernetes_list_map_keys.clone()),
                Some("set") => ListShape::Set,
                _ => ListShape::Atomic,
            },
            Shape::Untyped => ListShape::Atomic,
        }
    }

    fn atomic_map(self) -> bool {
        match self {
            Shape::Catalog(schema) => schema.merge_semantics().map_type == Some(MapType::Atomic),
            Shape::Custom(schema) => schema.x_kubernetes_map_type.as_deref() == Some("atomic"),
            Shape::Untyped => false,
        }
    }
}

/// The map-list key fields of built-in kinds whose default kube-apiserver 1.33 publishes as
/// something other than a zero value (from its OpenAPI v3 documents): a port's protocol. An
/// applied port without `protocol` is the live port with `protocol: TCP`.
const BUILT_IN_KEY_DEFAULTS: [(&str, &str, &str); 2] = [
    ("io.k8s.api.core.v1.ContainerPort", "protocol", "TCP"),
    ("io.k8s.api.core.v1.ServicePort", "protocol", "TCP"),
];

/// The path element of a list item: by key fields for map lists, by value for sets.
fn item_element(list: &ListShape, item: &Value) -> Option<Element> {
    match list {
        ListShape::Atomic => None,
        ListShape::Set => match item {
            Value::Object(_) | Value::Array(_) | Value::Null => None,
            scalar => Some(Element::Value(scalar.to_string())),
        },
        ListShape::Map(keys) => {
            let Value::Object(map) = item else {
                return None;
            };
            let mut key = BTreeMap::new();
            for (name, default) in keys {
                // A missing key field takes its schema default (`protocol: TCP` of a port), as
                // structured-merge-diff does; without one it is left out.
                if let Some(value) = map.get(name).or(default.as_ref()) {
                    key.insert(name.clone(), value.clone());
                }
            }
            serde_json::to_string(&key).ok().map(Element::Key)
        }
    }
}

/// The field set of an applied configuration (structured-merge-diff's `ToFieldSet`).
pub(crate) fn field_set(value: &Value, shape: Shape<'_>) -> FieldSet {
    fn walk(value: &Value, shape: Shape<'_>, root: bool, depth: usize, set: &mut FieldSet) {
        if depth > MAX_DEPTH {
            return;
        }
        match value {
            Value::Object(map) if !shape.atomic_map() => {
                for (key, child) in map {
                    let (child_shape, declared) = shape.field(key, root);
                    let node = set.children.entry(Element::Field(key.clone())).or_default();
                    walk(child, child_shape, false, depth + 1, node);
                    let empty_map = matches!(child, Value::Object(m) if m.is_empty());
                    if child.is_null() || empty_map || !declared {
                        node.member = true;
                    }
                }
            }
            Value::Array(items) => {
                let list = shape.list();
                if list == ListShape::Atomic {
                    set.member = true;
                    return;
                }
                for item in items {
                    let Some(element) = item_element(&list, item) else {
                        continue;
                    };
                    let node = set.children.entry(element).or_default();
                    walk(item, shape.items(), false, depth + 1, node);
                    node.member = true;
                }
            }
            _ => set.member = true,
        }
    }
    let mut set = FieldSet::default();
    walk(value, shape, true, 0, &mut set);
    prune_empty(&mut set);
    set
}

fn prune_empty(set: &mut FieldSet) {
    for child in set.children.values_mut() {
        prune_empty(child);
    }
    set.children.retain(|_, child| !child.is_empty());
}

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

fn compare_at(
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
        let (left_items, right_items) = (index_items(&list, left), index_items(&list, right));
        let mut elements: Vec<&Element> = left_items.iter().map(|(e, _)| e).collect();
        for (element, _) in &right_items {
            if !elements.contains(&element) {
                elements.push(element);
            }
        }
        for element in elements {
            let (l, r) = (lookup(&left_items, element), lookup(&right_items, element));
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

/// The items of a list by path element (first of duplicates).
fn index_items<'v>(list: &ListShape, items: Option<&'v Vec<Value>>) -> Vec<(Element, &'v Value)> {
    let mut found: Vec<(Element, &Value)> = Vec::new();
    for item in items.into_iter().flatten() {
        if let Some(element) = item_element(list, item)
            && !found.iter().any(|(known, _)| *known == element)
        {
            found.push((element, item));
        }
    }
    found
}

fn lookup<'v>(items: &[(Element, &'v Value)], element: &Element) -> Option<&'v Value> {
    items
        .iter()
        .find(|(known, _)| known == element)
        .map(|(_, value)| *value)
}

/// Merges an applied configuration into the live object (structured-merge-diff's `Merge`).
pub(crate) fn merge(live: &Value, config: &Value, shape: Shape<'_>) -> Value {
    merge_at(live, config, shape, true, 0)
}

fn merge_at(live: &Value, config: &Value, shape: Shape<'_>, root: bool, depth: usize) -> Value {
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
fn merge_lists(
    left: &[Value],
    right: &[Value],
    list: &ListShape,
    items: Shape<'_>,
    depth: usize,
) -> Vec<Value> {
    let keyed = |values: &[Value]| -> Vec<(Element, Value)> {
        let mut found: Vec<(Element, Value)> = Vec::new();
        for value in values {
            if let Some(element) = item_element(list, value)
                && !found.iter().any(|(known, _)| *known == element)
            {
                found.push((element, value.clone()));
            }
        }
        found
    };
    let (lhs, rhs) = (keyed(left), keyed(right));
    let find = |items: &[(Element, Value)], element: &Element| {
        items
            .iter()
            .find(|(known, _)| known == element)
            .map(|(_, value)| value.clone())
    };
    let mut shared: std::collections::VecDeque<Element> = rhs
        .iter()
        .filter(|(element, _)| find(&lhs, element).is_some())
        .map(|(element, _)| element.clone())
        .collect();
    let mut next_shared = shared.pop_front();
    let mut merged_rhs: Vec<Element> = Vec::new();
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
                merged_rhs.push(element.clone());
                out.push(merge_item(Some(lhs[li].1.clone()), &rhs[ri].1));
                li += 1;
                ri += 1;
                next_shared = shared.pop_front();
                continue;
            }
            if find(&rhs, element).is_some()
                && next_shared.as_ref().is_some_and(|next| next != element)
            {
                li += 1;
                continue;
            }
        }
        if li < lhs.len() {
            let element = &lhs[li].0;
            if find(&rhs, element).is_none() {
                out.push(lhs[li].1.clone());
                li += 1;
                continue;
            } else if merged_rhs.contains(element) {
                li += 1;
            }
        }
        if ri < rhs.len() {
            let element = rhs[ri].0.clone();
            out.push(merge_item(find(&lhs, &element), &rhs[ri].1));
            if next_shared.as_ref() == Some(&element) {
                next_shared = shared.pop_front();
            }
            merged_rhs.push(element);
            ri += 1;
        }
    }
    out
}

/// Removes the member paths of `set` from `value` (structured-merge-diff's `RemoveItems`).
fn remove_items(value: &mut Value, set: &FieldSet, shape: Shape<'_>, root: bool) {
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
fn remove_emptied(value: &mut Value, last: &FieldSet, owned: &FieldSet) {
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

/// Fields kube-apiserver never records in managed fields.
fn stripped() -> FieldSet {
    let mut set = FieldSet::default();
    for path in [
        &["apiVersion"][..],
        &["kind"],
        &["metadata"],
        &["metadata", "name"],
        &["metadata", "namespace"],
        &["metadata", "creationTimestamp"],
        &["metadata", "selfLink"],
        &["metadata", "uid"],
        &["metadata", "clusterName"],
        &["metadata", "generation"],
        &["metadata", "managedFields"],
        &["metadata", "resourceVersion"],
    ] {
        let elements: Vec<Element> = path
            .iter()
            .map(|name| Element::Field((*name).to_owned()))
            .collect();
        set.insert(&elements);
    }
    set
}

/// Which endpoint a write came through: the main resource ignores `status` when the resource
/// has a status subresource; the status subresource records only `status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Endpoint {
    /// The main resource, with or without a status subresource.
    Main { has_status: bool },
    /// The `status` subresource.
    Status,
}

impl Endpoint {
    fn filter(self, set: &FieldSet) -> FieldSet {
        let set = set.difference(&stripped());
        let status = Element::Field("status".to_owned());
        match self {
            Endpoint::Main { has_status: false } => set,
            Endpoint::Main { has_status: true } => {
                let mut set = set;
                set.children.remove(&status);
                set
            }
            Endpoint::Status => {
                let mut only = FieldSet::default();
                if let Some(child) = set.children.get(&status) {
                    only.children.insert(status, child.clone());
                }
                only
            }
        }
    }

    /// The fields an update through this endpoint changed: on the status endpoint the write
    /// has already been reduced to what that endpoint may change (the status, and for
    /// built-in kinds metadata such as annotations), so all of its changes count.
    fn filter_update(self, set: &FieldSet) -> FieldSet {
        match self {
            Endpoint::Status => set.difference(&stripped()),
            Endpoint::Main { .. } => self.filter(set),
        }
    }

    fn subresource(self) -> Option<&'static str> {
        match self {
            Endpoint::Status => Some("status"),
            Endpoint::Main { .. } => None,
        }
    }
}

/// One `managedFields` entry.
#[derive(Debug, Clone, PartialEq)]
struct Entry {
    manager: String,
    operation: String,
    api_version: String,
    time: Option<String>,
    subresource: Option<String>,
    set: FieldSet,
}

impl Entry {
    fn is(&self, manager: &str, operation: &str, api_version: &str, sub: Option<&str>) -> bool {
        self.manager == manager
            && self.operation == operation
            && self.subresource.as_deref() == sub
            // Appliers are one manager whatever version they apply with.
            && (operation == "Apply" || self.api_version == api_version)
    }

    /// `"kubectl"` or, for updaters, `"kubectl-patch" using v1` (the conflict message form).
    fn describe(&self) -> String {
        let mut text = format!("{:?}", self.manager);
        if let Some(sub) = &self.subresource {
            let _ = write!(text, " with subresource {sub:?}");
        }
        if self.operation == "Update" {
            // The manager identity carries no time, so none is printed.
            let _ = write!(text, " using {}", self.api_version);
        }
        text
    }
}

fn read_entries(object: &Value) -> Result<Vec<Entry>, ApiError> {
    let Some(list) = object.pointer("/metadata/managedFields") else {
        return Ok(Vec::new());
    };
    let Value::Array(list) = list else {
        return Err(ApiError::bad_request(
            "metadata.managedFields must be a list",
        ));
    };
    let text =
        |entry: &Value, field: &str| entry.get(field).and_then(Value::as_str).map(str::to_owned);
    let mut entries = Vec::with_capacity(list.len());
    for entry in list {
        let set = match entry.get("fieldsV1") {
            Some(fields) => FieldSet::from_json(fields).map_err(|message| {
                ApiError::bad_request(format!("invalid managedFields: {message}"))
            })?,
            None => FieldSet::default(),
        };
        entries.push(Entry {
            manager: text(entry, "manager").unwrap_or_default(),
            operation: text(entry, "operation").unwrap_or_default(),
            api_version: text(entry, "apiVersion").unwrap_or_default(),
            time: text(entry, "time"),
            subresource: text(entry, "subresource"),
            set,
        });
    }
    Ok(entries)
}

fn write_entries(object: &mut Value, mut entries: Vec<Entry>) {
    entries.retain(|entry| !entry.set.is_empty());
    entries.sort_by(|a, b| {
        a.operation
            .cmp(&b.operation)
            .then_with(|| a.time.cmp(&b.time))
            .then_with(|| a.manager.cmp(&b.manager))
            .then_with(|| a.api_version.cmp(&b.api_version))
            .then_with(|| a.subresource.cmp(&b.subresource))
    });
    let list: Vec<Value> = entries
        .into_iter()
        .map(|entry| {
            let mut value = json!({
                "manager": entry.manager,
                "operation": entry.operation,
                "apiVersion": entry.api_version,
                "fieldsType": "FieldsV1",
                "fieldsV1": entry.set.to_json(),
            });
            if let Some(time) = entry.time {
                value["time"] = json!(time);
            }
            if let Some(sub) = entry.subresource {
                value["subresource"] = json!(sub);
            }
            value
        })
        .collect();
    let metadata = crate::objects::metadata_mut(object);
    if list.is_empty() {
        metadata.remove("managedFields");
    } else {
        metadata.insert("managedFields".to_owned(), Value::Array(list));
    }
}

fn without_managed_fields(object: &Value) -> Value {
    let mut copy = object.clone();
    if let Some(metadata) = copy.get_mut("metadata").and_then(Value::as_object_mut) {
        metadata.remove("managedFields");
    }
    copy
}

/// Who is writing.
#[derive(Debug, Clone)]
pub(crate) struct Writer<'a> {
    /// The field manager's name.
    pub(crate) manager: &'a str,
    /// The apiVersion the object is written in.
    pub(crate) api_version: &'a str,
    /// The endpoint.
    pub(crate) endpoint: Endpoint,
}

/// Records an update (create, PUT, or a non-apply PATCH) in `new`'s managed fields: the writer
/// takes the fields it changed from whoever had them.
pub(crate) fn record_update(
    old: Option<&Value>,
    new: &mut Value,
    shape: Shape<'_>,
    writer: &Writer<'_>,
) -> Result<(), ApiError> {
    let given = new.pointer("/metadata/managedFields").cloned();
    let old_entries = match old {
        Some(old) => read_entries(old)?,
        None => Vec::new(),
    };
    let mut entries = match &given {
        // The client sent managed fields that differ from the stored ones: they are taken as
        // the new state (this is how clients reset them).
        Some(list) if old.and_then(|o| o.pointer("/metadata/managedFields")) != Some(list) => {
            read_entries(new)?
        }
        _ => old_entries,
    };
    let empty = json!({});
    let old_clean = old.map_or(empty, without_managed_fields);
    let new_clean = without_managed_fields(new);
    let comparison = compare(&old_clean, &new_clean, shape);
    let changed = writer
        .endpoint
        .filter_update(&comparison.modified.union(&comparison.added));
    let removed = writer.endpoint.filter_update(&comparison.removed);
    for entry in &mut entries {
        entry.set = entry.set.difference(&changed).difference(&removed);
    }
    if !changed.is_empty() {
        let sub = writer.endpoint.subresource();
        match entries
            .iter_mut()
            .find(|entry| entry.is(writer.manager, "Update", writer.api_version, sub))
        {
            Some(entry) => {
                entry.set = entry.set.union(&changed);
                entry.time = Some(crate::objects::now());
            }
            None => entries.push(Entry {
                manager: writer.manager.to_owned(),
                operation: "Update".to_owned(),
                api_version: writer.api_version.to_owned(),
                time: Some(crate::objects::now()),
                subresource: sub.map(str::to_owned),
                set: changed,
            }),
        }
    }
    write_entries(new, entries);
    Ok(())
}

/// Records a write through the `scale` subresource as kube-apiserver's scale handler does:
/// when the replicas changed, the writer's `scale` entry owns the replicas path of the parent
/// (with no time: the handler takes times from parent entries, and there is none for it) and
/// every other entry loses it.
pub(crate) fn record_scale(
    old: &Value,
    new: &mut Value,
    writer: &Writer<'_>,
    replicas_path: &str,
) -> Result<(), ApiError> {
    let path: Vec<Element> = replicas_path
        .trim_start_matches('.')
        .split('.')
        .map(|field| Element::Field(field.to_owned()))
        .collect();
    let pointer: String = replicas_path
        .trim_start_matches('.')
        .split('.')
        .map(|field| format!("/{field}"))
        .collect();
    let mut entries = read_entries(old)?;
    if old.pointer(&pointer) != new.pointer(&pointer) {
        let mut replicas = FieldSet::default();
        replicas.insert(&path);
        for entry in &mut entries {
            entry.set = entry.set.difference(&replicas);
        }
        entries
            .retain(|entry| !entry.is(writer.manager, "Update", writer.api_version, Some("scale")));
        entries.push(Entry {
            manager: writer.manager.to_owned(),
            operation: "Update".to_owned(),
            api_version: writer.api_version.to_owned(),
            time: None,
            subresource: Some("scale".to_owned()),
            set: replicas,
        });
    }
    write_entries(new, entries);
    Ok(())
}

/// A server-side apply: merges `config` into `live` (absent for a create), with ownership,
/// conflicts and removal of fields the manager stopped applying. Returns the object to store.
pub(crate) fn apply(
    live: Option<&Value>,
    config: &Value,
    shape: Shape<'_>,
    writer: &Writer<'_>,
    force: bool,
) -> Result<Value, ApiError> {
    let mut entries = match live {
        Some(live) => read_entries(live)?,
        None => Vec::new(),
    };
    let live_clean = live.map_or_else(|| json!({}), without_managed_fields);
    let mut merged = merge(&live_clean, config, shape);
    let applied = writer.endpoint.filter(&field_set(config, shape));
    let sub = writer.endpoint.subresource();
    let position = entries
        .iter()
        .position(|entry| entry.is(writer.manager, "Apply", writer.api_version, sub));
    let last = position.map(|index| entries[index].set.clone());
    let mine = match position {
        Some(index) => {
            entries[index].set = applied.clone();
            entries[index].api_version = writer.api_version.to_owned();
            index
        }
        None => {
            entries.push(Entry {
                manager: writer.manager.to_owned(),
                operation: "Apply".to_owned(),
                api_version: writer.api_version.to_owned(),
                time: None,
                subresource: sub.map(str::to_owned),
                set: applied.clone(),
            });
            entries.len() - 1
        }
    };
    // Fields this manager applied before and no longer does go, unless someone owns them.
    if let Some(last) = last.filter(|last| !last.is_empty()) {
        let owned = entries
            .iter()
            .fold(FieldSet::default(), |all, entry| all.union(&entry.set));
        let dropped = last.difference(&owned.with_parent_fields());
        remove_items(&mut merged, &dropped, shape, true);
        remove_emptied(&mut merged, &last, &owned);
    }
    let comparison = compare(&live_clean, &merged, shape);
    let changed = writer
        .endpoint
        .filter(&comparison.modified.union(&comparison.added));
    let removed = writer.endpoint.filter(&comparison.removed);
    let mut conflicts: Vec<(String, Vec<Element>)> = Vec::new();
    for (index, entry) in entries.iter_mut().enumerate() {
        if index == mine {
            continue;
        }
        let conflicting = entry.set.intersection(&changed);
        if !conflicting.is_empty() {
            if force {
                entry.set = entry.set.difference(&conflicting);
            } else {
                for path in conflicting.paths() {
                    conflicts.push((entry.describe(), path));
                }
            }
        }
        entry.set = entry.set.difference(&removed);
    }
    if !conflicts.is_empty() {
        return Err(conflict_error(&conflicts));
    }
    // An apply that changes nothing leaves the time as it was (none for a new entry), as
    // structured-merge-diff does.
    if merged != live_clean || live.is_none() {
        entries[mine].time = Some(crate::objects::now());
    }
    write_entries(&mut merged, entries);
    Ok(merged)
}

fn conflict_error(conflicts: &[(String, Vec<Element>)]) -> ApiError {
    let message = if let [(manager, path)] = conflicts {
        format!(
            "Apply failed with 1 conflict: conflict with {manager}: {}",
            path_text(path)
        )
    } else {
        let mut by_manager: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        for (manager, path) in conflicts {
            by_manager.entry(manager).or_default().push(path_text(path));
        }
        let mut lines = Vec::new();
        for (manager, paths) in by_manager {
            lines.push(format!("conflicts with {manager}:"));
            lines.extend(paths.into_iter().map(|path| format!("- {path}")));
        }
        format!(
            "Apply failed with {} conflicts: {}",
            conflicts.len(),
            lines.join("\n")
        )
    };
    let mut error = ApiError::new(409, "Conflict", message);
    for (manager, path) in conflicts {
        error = error.with_cause(
            "FieldManagerConflict",
            &format!("conflict with {manager}"),
            &path_text(path),
        );
    }
    error
}

/// The manager name of a non-apply write without `fieldManager`: the User-Agent up to its
/// first `/`, as kube-apiserver derives it.
pub(crate) fn manager_from_user_agent(user_agent: Option<&str>) -> String {
    let agent = user_agent.unwrap_or("unknown");
    let prefix = agent.split('/').next().unwrap_or(agent);
    prefix.chars().take(128).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn configmap() -> Shape<'static> {
        Shape::of_kind(&Gvk::new("", "v1", "ConfigMap"), None)
    }

    fn deployment() -> Shape<'static> {
        Shape::of_kind(&Gvk::new("apps", "v1", "Deployment"), None)
    }

    fn writer(manager: &str) -> Writer<'_> {
        Writer {
            manager,
            api_version: "v1",
            endpoint: Endpoint::Main { has_status: false },
        }
    }

    fn fields(object: &Value) -> Vec<(String, String, Value)> {
        object["metadata"]["managedFields"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|entry| {
                (
                    entry["manager"].as_str().unwrap_or_default().to_owned(),
                    entry["operation"].as_str().unwrap_or_default().to_owned(),
                    entry["fieldsV1"].clone(),
                )
            })
            .collect()
    }

    #[test]
    fn apply_records_the_configuration_fields() {
        let config = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "labels": {"a": "b"}, "annotations": {}},
            "data": {"k1": "v1", "k2": "v2"}});
        let applied = apply(None, &config, configmap(), &writer("kubectl"), false).expect("apply");
        assert_eq!(
            fields(&applied),
            [(
                "kubectl".to_owned(),
                "Apply".to_owned(),
                json!({"f:data": {"f:k1": {}, "f:k2": {}},
                    "f:metadata": {"f:annotations": {}, "f:labels": {"f:a": {}}}})
            )]
        );
    }

    #[test]
    fn an_empty_map_applied_before_is_kept_when_keys_are_applied_into_it() {
        let empty = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "annotations": {}}});
        let live = apply(None, &empty, configmap(), &writer("kubectl"), false).expect("apply");
        let config = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "annotations": {"a": "b"}}});
        let applied =
            apply(Some(&live), &config, configmap(), &writer("kubectl"), false).expect("apply");
        assert_eq!(applied["metadata"]["annotations"], json!({"a": "b"}));
        // Dropping the map from the configuration still removes it.
        let bare = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}});
        let removed = apply(
            Some(&applied),
            &bare,
            configmap(),
            &writer("kubectl"),
            false,
        )
        .expect("apply");
        assert!(
            removed["metadata"].get("annotations").is_none(),
            "{removed}"
        );
    }

    #[test]
    fn updates_take_changed_fields_and_applies_conflict_then_force() {
        let config = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "labels": {"a": "b"}}, "data": {"k1": "v1", "k2": "v2"}});
        let live = apply(None, &config, configmap(), &writer("kubectl"), false).expect("apply");
        let mut patched = live.clone();
        patched["data"]["k1"] = json!("changed");
        patched["data"]["k3"] = json!("v3");
        record_update(
            Some(&live),
            &mut patched,
            configmap(),
            &writer("kubectl-patch"),
        )
        .expect("update");
        assert_eq!(
            fields(&patched),
            [
                (
                    "kubectl".to_owned(),
                    "Apply".to_owned(),
                    json!({"f:data": {"f:k2": {}}, "f:metadata": {"f:labels": {"f:a": {}}}})
                ),
                (
                    "kubectl-patch".to_owned(),
                    "Update".to_owned(),
                    json!({"f:data": {"f:k1": {}, "f:k3": {}}})
                ),
            ]
        );
        let error = apply(
            Some(&patched),
            &config,
            configmap(),
            &writer("kubectl"),
            false,
        )
        .expect_err("conflict");
        assert_eq!(error.code, 409);
        assert!(
            error.message.starts_with(
                "Apply failed with 1 conflict: conflict with \"kubectl-patch\" using v1"
            ),
            "{}",
            error.message
        );
        assert!(error.message.ends_with(": .data.k1"), "{}", error.message);
        // Forced, with a smaller configuration: k1 comes back, k2 and the label go.
        let smaller = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c"}, "data": {"k1": "v1"}});
        let forced = apply(
            Some(&patched),
            &smaller,
            configmap(),
            &writer("kubectl"),
            true,
        )
        .expect("forced");
        assert_eq!(forced["data"], json!({"k1": "v1", "k3": "v3"}));
        assert!(forced["metadata"].get("labels").is_none(), "{forced}");
        assert_eq!(
            fields(&forced),
            [
                (
                    "kubectl".to_owned(),
                    "Apply".to_owned(),
                    json!({"f:data": {"f:k1": {}}})
                ),
                (
                    "kubectl-patch".to_owned(),
                    "Update".to_owned(),
                    json!({"f:data": {"f:k3": {}}})
                ),
            ]
        );
    }

    #[test]
    fn map_lists_merge_by_key_and_keep_other_managers_items() {
        let config = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
            "spec": {"selector": {"matchLabels": {"app": "d"}}, "template": {
                "metadata": {"labels": {"app": "d"}},
                "spec": {"containers": [{"name": "a", "image": "a"}]}}}});
        let live = apply(None, &config, deployment(), &writer("kubectl"), false).expect("apply");
        assert_eq!(
            fields(&live)[0].2,
            json!({"f:spec": {"f:selector": {}, "f:template": {
                "f:metadata": {"f:labels": {"f:app": {}}},
                "f:spec": {"f:containers": {"k:{\"name\":\"a\"}": {".": {}, "f:image": {}, "f:name": {}}}}}}})
        );
        let sidecar = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
            "spec": {"template": {"spec": {"containers": [{"name": "b", "image": "b"}]}}}});
        let both =
            apply(Some(&live), &sidecar, deployment(), &writer("other"), false).expect("apply");
        let names: Vec<&str> = both["spec"]["template"]["spec"]["containers"]
            .as_array()
            .expect("list")
            .iter()
            .filter_map(|c| c["name"].as_str())
            .collect();
        assert_eq!(names, ["a", "b"]);
        // The first manager drops its container: only "b" remains.
        let without = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
            "spec": {"selector": {"matchLabels": {"app": "d"}}, "template": {
                "metadata": {"labels": {"app": "d"}}, "spec": {"containers": []}}}});
        let after = apply(
            Some(&both),
            &without,
            deployment(),
            &writer("kubectl"),
            false,
        )
        .expect("apply");
        assert_eq!(
            after["spec"]["template"]["spec"]["containers"],
            json!([{"name": "b", "image": "b"}])
        );
    }

    #[test]
    fn creates_record_new_maps_as_members() {
        let mut created = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "labels": {"a": "b"}}, "data": {"a": "b"}});
        record_update(None, &mut created, configmap(), &writer("kubectl-create")).expect("create");
        assert_eq!(
            fields(&created)[0].2,
            json!({"f:data": {".": {}, "f:a": {}}, "f:metadata": {"f:labels": {".": {}, "f:a": {}}}})
        );
    }

    #[test]
    fn fields_v1_round_trips() {
        let json = json!({"f:spec": {"f:containers": {"k:{\"name\":\"a\"}": {".": {}, "f:image": {}}},
            "f:finalizers": {"v:\"x\"": {}}}});
        let set = FieldSet::from_json(&json).expect("parse");
        assert_eq!(set.to_json(), json);
        assert!(FieldSet::from_json(&json!({"x:y": {}})).is_err());
    }
}
