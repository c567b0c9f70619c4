//! Field paths and field sets: the `FieldsV1` form managed fields are stored in.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::{Map, Value, json};

/// One step of a field path.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
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
    pub(super) fn encode(&self) -> String {
        match self {
            Element::Field(name) => format!("f:{name}"),
            Element::Key(key) => format!("k:{key}"),
            Element::Value(value) => format!("v:{value}"),
            Element::Index(index) => format!("i:{index}"),
        }
    }

    pub(super) fn decode(text: &str) -> Option<Element> {
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
    pub(super) fn display(&self, out: &mut String) {
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
    pub(super) member: bool,
    pub(super) children: BTreeMap<Element, FieldSet>,
}

/// How deep field sets and merges go (objects are depth-bounded by the JSON decoder anyway).
pub(super) const MAX_DEPTH: usize = 128;

impl FieldSet {
    pub(crate) fn is_empty(&self) -> bool {
        !self.member && self.children.is_empty()
    }

    pub(super) fn insert(&mut self, path: &[Element]) {
        match path.split_first() {
            None => self.member = true,
            Some((first, rest)) => self.children.entry(first.clone()).or_default().insert(rest),
        }
    }

    pub(super) fn child(&self, element: &Element) -> Option<&FieldSet> {
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
    pub(super) fn paths(&self) -> Vec<Vec<Element>> {
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
pub(super) fn path_text(path: &[Element]) -> String {
    let mut out = String::new();
    for element in path {
        element.display(&mut out);
    }
    out
}
