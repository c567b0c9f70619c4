//! The names a definition asks for (`spec.names`), and reading its fields.

use serde_json::Value;

/// The names a definition asks for (`spec.names`), with the defaults Kubernetes fills in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Names {
    pub(super) plural: String,
    pub(super) singular: String,
    pub(super) kind: String,
    pub(super) list_kind: String,
    pub(super) short_names: Vec<String>,
    pub(super) categories: Vec<String>,
}

pub(super) fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

pub(super) fn text(value: &Value, pointer: &str) -> String {
    value
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

pub(super) fn names_of(names: &Value) -> Names {
    let kind = text(names, "/kind");
    let singular = match text(names, "/singular") {
        empty if empty.is_empty() => kind.to_ascii_lowercase(),
        singular => singular,
    };
    let list_kind = match text(names, "/listKind") {
        empty if empty.is_empty() && !kind.is_empty() => format!("{kind}List"),
        list_kind => list_kind,
    };
    Names {
        plural: text(names, "/plural"),
        singular,
        kind,
        list_kind,
        short_names: strings(&names["shortNames"]),
        categories: strings(&names["categories"]),
    }
}
