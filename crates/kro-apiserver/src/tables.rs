//! `Table` responses (`Accept: application/json;as=Table;v=v1;g=meta.k8s.io`), which is what
//! `kubectl get` prints: the column definitions kube-apiserver 1.33 publishes for built-in
//! resources (vendored, `data/table-columns-1.33.json`) with cells computed here as its
//! printers compute them; `additionalPrinterColumns` for custom resources; and `Name` and
//! `Created At` for everything else.

mod printers;

use std::collections::BTreeMap;
use std::sync::OnceLock;

use http::HeaderMap;
use serde_json::{Map, Value, json};

use crate::http_util::accepted;
use crate::registry::ResourceType;

use self::printers::{age_of, built_in_printer, json_path, text};

/// The vendored column definitions, keyed `<group>/<version>/<resource>`.
const COLUMNS_JSON: &str = include_str!("../data/table-columns-1.33.json");

fn vendored_columns() -> &'static BTreeMap<String, Vec<Value>> {
    static COLUMNS: OnceLock<BTreeMap<String, Vec<Value>>> = OnceLock::new();
    // The file is checked by this module's tests.
    COLUMNS.get_or_init(|| serde_json::from_str(COLUMNS_JSON).unwrap_or_default())
}

/// What a Table's rows carry in `object` (`includeObject`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IncludeObject {
    /// Nothing.
    None,
    /// `PartialObjectMetadata` (the default).
    Metadata,
    /// The whole object.
    Object,
}

impl IncludeObject {
    pub(crate) fn parse(value: Option<&str>) -> Option<IncludeObject> {
        match value {
            None | Some("Metadata") | Some("") => Some(IncludeObject::Metadata),
            Some("None") => Some(IncludeObject::None),
            Some("Object") => Some(IncludeObject::Object),
            Some(_) => None,
        }
    }
}

/// Whether the client asked for a Table (before plain JSON), and in which version.
pub(crate) fn wanted(headers: &HeaderMap) -> Option<&'static str> {
    for range in accepted(headers) {
        if range.parameter("as") == Some("Table") {
            if range.parameter("g") != Some("meta.k8s.io") {
                continue;
            }
            match range.parameter("v") {
                Some("v1") => return Some("v1"),
                Some("v1beta1") => return Some("v1beta1"),
                _ => continue,
            }
        }
        // Plain JSON listed before any Table: the client prefers objects.
        range.parameter("as")?;
    }
    None
}

/// How one column's cells are computed.
enum Cell {
    /// A cell from a built-in printer.
    Printer(fn(&Value) -> Vec<Value>),
    /// Custom resource columns: JSONPaths, with their types.
    Paths(Vec<(String, String)>),
    /// `Name` and `Created At`.
    Default,
}

/// The columns of a resource and how its rows are computed.
pub(crate) struct Printer {
    columns: Vec<Value>,
    cells: Cell,
}

fn column(name: &str, column_type: &str, format: &str, description: &str, priority: i64) -> Value {
    json!({"name": name, "type": column_type, "format": format, "description": description, "priority": priority})
}

const NAME_DESCRIPTION: &str = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";

impl Printer {
    /// The printer of a resource type.
    pub(crate) fn of(resource: &ResourceType) -> Printer {
        if let Some(custom) = &resource.custom {
            let mut columns = vec![column("Name", "string", "name", NAME_DESCRIPTION, 0)];
            let mut paths = Vec::new();
            let defined: Vec<(String, String, String, String, i64, String)> =
                if custom.columns.is_empty() {
                    vec![(
                        "Age".to_owned(),
                        "date".to_owned(),
                        String::new(),
                        String::new(),
                        0,
                        ".metadata.creationTimestamp".to_owned(),
                    )]
                } else {
                    custom
                        .columns
                        .iter()
                        .map(|c| {
                            (
                                c.name.clone(),
                                c.column_type.clone(),
                                c.format.clone(),
                                c.description.clone(),
                                c.priority,
                                c.json_path.clone(),
                            )
                        })
                        .collect()
                };
            for (name, column_type, format, description, priority, path) in defined {
                columns.push(column(&name, &column_type, &format, &description, priority));
                paths.push((path, column_type));
            }
            return Printer {
                columns,
                cells: Cell::Paths(paths),
            };
        }
        let key = format!(
            "{}/{}/{}",
            resource.group(),
            resource.gvk.version(),
            resource.plural
        );
        let printer = built_in_printer(resource.group(), &resource.plural);
        match (vendored_columns().get(&key), printer) {
            (Some(columns), Some(printer)) => Printer {
                columns: columns.clone(),
                cells: Cell::Printer(printer),
            },
            _ => Printer {
                columns: vec![
                    column("Name", "string", "name", NAME_DESCRIPTION, 0),
                    column(
                        "Created At",
                        "date",
                        "",
                        "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata",
                        0,
                    ),
                ],
                cells: Cell::Default,
            },
        }
    }

    fn cells(&self, object: &Value) -> Vec<Value> {
        let name = json!(text(object, "/metadata/name"));
        match &self.cells {
            Cell::Printer(printer) => printer(object),
            Cell::Default => vec![name, json!(text(object, "/metadata/creationTimestamp"))],
            Cell::Paths(paths) => {
                let mut cells = vec![name];
                for (path, column_type) in paths {
                    let value = json_path(object, path).cloned().unwrap_or(Value::Null);
                    cells.push(match (column_type.as_str(), &value) {
                        ("date", Value::String(time)) => json!(age_of(time)),
                        _ => value,
                    });
                }
                cells
            }
        }
    }

    fn row(&self, object: &Value, include: IncludeObject) -> Value {
        let mut row = json!({"cells": self.cells(object)});
        match include {
            IncludeObject::None => {}
            IncludeObject::Object => row["object"] = object.clone(),
            IncludeObject::Metadata => {
                row["object"] = json!({
                    "kind": "PartialObjectMetadata",
                    "apiVersion": "meta.k8s.io/v1",
                    "metadata": object.get("metadata").cloned().unwrap_or_else(|| json!({})),
                });
            }
        }
        row
    }

    /// A Table of `objects` with the list metadata `metadata`.
    pub(crate) fn table<'a>(
        &self,
        version: &str,
        objects: impl Iterator<Item = &'a Value>,
        metadata: Value,
        include: IncludeObject,
        headers: bool,
    ) -> Value {
        let rows: Vec<Value> = objects.map(|object| self.row(object, include)).collect();
        let mut table = json!({
            "kind": "Table",
            "apiVersion": format!("meta.k8s.io/{version}"),
            "metadata": metadata,
            "rows": rows,
        });
        if headers {
            table["columnDefinitions"] = Value::Array(self.columns.clone());
        }
        table
    }
}

/// The `metadata` of a Table made from a list's metadata.
pub(crate) fn list_metadata(list_metadata: &Value) -> Value {
    let mut metadata = Map::new();
    for field in ["resourceVersion", "continue", "remainingItemCount"] {
        if let Some(value) = list_metadata.get(field) {
            metadata.insert(field.to_owned(), value.clone());
        }
    }
    Value::Object(metadata)
}

#[cfg(test)]
mod tests;
