//! The `metadata.managedFields` entries of an object: reading, normalising and writing them.

use std::fmt::Write as _;

use serde_json::{Value, json};

use crate::error::ApiError;

use super::fields::FieldSet;

/// One `managedFields` entry.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Entry {
    pub(super) manager: String,
    pub(super) operation: String,
    pub(super) api_version: String,
    pub(super) time: Option<String>,
    pub(super) subresource: Option<String>,
    pub(super) set: FieldSet,
}

impl Entry {
    pub(super) fn is(
        &self,
        manager: &str,
        operation: &str,
        api_version: &str,
        sub: Option<&str>,
    ) -> bool {
        self.manager == manager
            && self.operation == operation
            && self.subresource.as_deref() == sub
            // Appliers are one manager whatever version they apply with.
            && (operation == "Apply" || self.api_version == api_version)
    }

    /// `"kubectl"` or, for updaters, `"kubectl-patch" using v1` (the conflict message form).
    pub(super) fn describe(&self) -> String {
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

pub(super) fn read_entries(object: &Value) -> Result<Vec<Entry>, ApiError> {
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

pub(super) fn write_entries(object: &mut Value, mut entries: Vec<Entry>) {
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

pub(super) fn without_managed_fields(object: &Value) -> Value {
    let mut copy = object.clone();
    if let Some(metadata) = copy.get_mut("metadata").and_then(Value::as_object_mut) {
        metadata.remove("managedFields");
    }
    copy
}
