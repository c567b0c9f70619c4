//! Field management: `metadata.managedFields` and server-side apply, with the semantics of
//! structured-merge-diff as kube-apiserver uses it.
//!
//! Every write records which manager set which fields (`FieldsV1`). An apply
//! (`application/apply-patch+yaml`) merges the manager's intent into the live object by the
//! schema's list types, map types and list map keys; fails with a conflict when it would change
//! a field another manager owns (unless forced, which takes ownership); and removes the fields
//! the manager applied before and no longer applies, when nobody else owns them. Other writes
//! take ownership of what they changed.

mod entries;
mod fields;
mod merge;
mod shape;

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::error::ApiError;

use self::entries::{Entry, read_entries, without_managed_fields, write_entries};
use self::fields::{Element, FieldSet, path_text};
use self::merge::{compare, merge, remove_emptied, remove_items};
pub(crate) use self::shape::Shape;
use self::shape::field_set;

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
    keep_convertible(&mut entries, writer.api_version);
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

/// Drops the entries of API versions the object cannot be converted to from `api_version`'s: those
/// of another group (an Event's `events.k8s.io/v1` entries on a write through core/v1, and back).
/// structured-merge-diff compares each entry in its own version, and drops an entry whose
/// version the converter is missing.
fn keep_convertible(entries: &mut Vec<Entry>, api_version: &str) {
    let group = |version: &str| {
        version
            .rsplit_once('/')
            .map_or("", |(group, _)| group)
            .to_owned()
    };
    let writing = group(api_version);
    entries.retain(|entry| group(&entry.api_version) == writing);
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
    keep_convertible(&mut entries, writer.api_version);
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
mod tests;
