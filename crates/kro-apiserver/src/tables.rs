//! `Table` responses (`Accept: application/json;as=Table;v=v1;g=meta.k8s.io`), which is what
//! `kubectl get` prints: the column definitions kube-apiserver 1.33 publishes for built-in
//! resources (vendored, `data/table-columns-1.33.json`) with cells computed here as its
//! printers compute them; `additionalPrinterColumns` for custom resources; and `Name` and
//! `Created At` for everything else.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use http::HeaderMap;
use serde_json::{Map, Value, json};

use crate::crd::label_selector_text;
use crate::http_util::accepted;
use crate::registry::ResourceType;

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

/// A simple JSONPath (`.spec.replicas`, `.status.conditions[0].type`, `{.a.b}`).
fn json_path<'a>(object: &'a Value, path: &str) -> Option<&'a Value> {
    let path = path
        .trim()
        .trim_start_matches('{')
        .trim_end_matches('}')
        .trim_start_matches('.');
    let mut current = object;
    for segment in path.split('.').filter(|segment| !segment.is_empty()) {
        let (field, index) = match segment.split_once('[') {
            Some((field, rest)) => (field, rest.trim_end_matches(']').parse::<usize>().ok()),
            None => (segment, None),
        };
        if !field.is_empty() {
            current = current.get(field)?;
        }
        if let Some(index) = index {
            current = current.get(index)?;
        }
    }
    Some(current)
}

fn text<'a>(object: &'a Value, pointer: &str) -> &'a str {
    object
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn number(object: &Value, pointer: &str) -> i64 {
    object.pointer(pointer).and_then(Value::as_i64).unwrap_or(0)
}

/// How long ago `time` (RFC 3339) was, as kubectl writes ages ("5m", "3d4h").
fn age_of(time: &str) -> String {
    match chrono::DateTime::parse_from_rfc3339(time) {
        Ok(then) => {
            let seconds = (chrono::Utc::now() - then.with_timezone(&chrono::Utc)).num_seconds();
            human_duration(seconds)
        }
        Err(_) => "<unknown>".to_owned(),
    }
}

/// `k8s.io/apimachinery/pkg/util/duration.HumanDuration`.
pub(crate) fn human_duration(seconds: i64) -> String {
    if seconds < -1 {
        return "<invalid>".to_owned();
    }
    let seconds = seconds.max(0);
    let minutes = seconds / 60;
    let hours = seconds / 3600;
    let days = hours / 24;
    let years = days / 365;
    if seconds < 120 {
        format!("{seconds}s")
    } else if minutes < 10 {
        match seconds % 60 {
            0 => format!("{minutes}m"),
            rest => format!("{minutes}m{rest}s"),
        }
    } else if hours < 3 {
        format!("{minutes}m")
    } else if hours < 8 {
        match minutes % 60 {
            0 => format!("{hours}h"),
            rest => format!("{hours}h{rest}m"),
        }
    } else if hours < 48 {
        format!("{hours}h")
    } else if hours < 24 * 8 {
        match hours % 24 {
            0 => format!("{days}d"),
            rest => format!("{days}d{rest}h"),
        }
    } else if days < 365 * 2 {
        format!("{days}d")
    } else if days < 365 * 8 {
        match days % 365 {
            0 => format!("{years}y"),
            rest => format!("{years}y{rest}d"),
        }
    } else {
        format!("{years}y")
    }
}

fn name(object: &Value) -> Value {
    json!(text(object, "/metadata/name"))
}

fn age(object: &Value) -> Value {
    json!(age_of(text(object, "/metadata/creationTimestamp")))
}

fn or_none(value: String) -> Value {
    if value.is_empty() {
        json!("<none>")
    } else {
        json!(value)
    }
}

fn count(object: &Value, pointer: &str) -> usize {
    match object.pointer(pointer) {
        Some(Value::Object(map)) => map.len(),
        Some(Value::Array(items)) => items.len(),
        _ => 0,
    }
}

/// Container names and images of a pod template (`.spec.template.spec` or a pod's `.spec`).
fn containers(spec: &Value) -> (Value, Value) {
    let list = spec["containers"].as_array().cloned().unwrap_or_default();
    let names: Vec<&str> = list
        .iter()
        .map(|container| text(container, "/name"))
        .collect();
    let images: Vec<&str> = list
        .iter()
        .map(|container| text(container, "/image"))
        .collect();
    (json!(names.join(",")), json!(images.join(",")))
}

fn selector(object: &Value) -> Value {
    or_none(label_selector_text(&object["spec"]["selector"]))
}

fn config_map(object: &Value) -> Vec<Value> {
    let data = count(object, "/data") + count(object, "/binaryData");
    vec![name(object), json!(data), age(object)]
}

fn secret(object: &Value) -> Vec<Value> {
    vec![
        name(object),
        json!(text(object, "/type")),
        json!(count(object, "/data")),
        age(object),
    ]
}

fn namespace(object: &Value) -> Vec<Value> {
    vec![
        name(object),
        json!(text(object, "/status/phase")),
        age(object),
    ]
}

fn service(object: &Value) -> Vec<Value> {
    let spec = &object["spec"];
    let service_type = text(spec, "/type");
    let external: Vec<String> = object
        .pointer("/status/loadBalancer/ingress")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|ingress| {
            ingress["ip"]
                .as_str()
                .or_else(|| ingress["hostname"].as_str())
                .map(str::to_owned)
        })
        .chain(
            spec["externalIPs"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|ip| ip.as_str().map(str::to_owned)),
        )
        .collect();
    let external = match (service_type, external.is_empty()) {
        ("ExternalName", _) => text(spec, "/externalName").to_owned(),
        ("LoadBalancer", true) => "<pending>".to_owned(),
        (_, true) => "<none>".to_owned(),
        (_, false) => external.join(","),
    };
    let ports: Vec<String> = spec["ports"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|port| {
            let number = number(port, "/port");
            let protocol = port["protocol"].as_str().unwrap_or("TCP");
            match port["nodePort"].as_i64() {
                Some(node) => format!("{number}:{node}/{protocol}"),
                None => format!("{number}/{protocol}"),
            }
        })
        .collect();
    let selector: Vec<String> = spec["selector"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(key, value)| format!("{key}={}", value.as_str().unwrap_or_default()))
        .collect();
    vec![
        name(object),
        json!(service_type),
        json!(match text(spec, "/clusterIP") {
            "" => "<none>",
            ip => ip,
        }),
        json!(external),
        or_none(ports.join(",")),
        age(object),
        or_none(selector.join(",")),
    ]
}

fn service_account(object: &Value) -> Vec<Value> {
    vec![name(object), json!(count(object, "/secrets")), age(object)]
}

fn pod(object: &Value) -> Vec<Value> {
    let statuses = object
        .pointer("/status/containerStatuses")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let total = count(object, "/spec/containers");
    let ready = statuses
        .iter()
        .filter(|status| status["ready"] == json!(true))
        .count();
    let restarts: i64 = statuses
        .iter()
        .map(|status| number(status, "/restartCount"))
        .sum();
    let mut phase = text(object, "/status/phase").to_owned();
    if let Some(reason) = object.pointer("/status/reason").and_then(Value::as_str) {
        phase = reason.to_owned();
    }
    for status in &statuses {
        let waiting = status.pointer("/state/waiting/reason");
        let terminated = status.pointer("/state/terminated/reason");
        if let Some(reason) = waiting.or(terminated).and_then(Value::as_str) {
            phase = reason.to_owned();
        }
    }
    if object.pointer("/metadata/deletionTimestamp").is_some() {
        phase = "Terminating".to_owned();
    }
    if phase.is_empty() {
        phase = "Pending".to_owned();
    }
    vec![
        name(object),
        json!(format!("{ready}/{total}")),
        json!(phase),
        json!(restarts),
        age(object),
        or_none(text(object, "/status/podIP").to_owned()),
        or_none(text(object, "/spec/nodeName").to_owned()),
        or_none(text(object, "/status/nominatedNodeName").to_owned()),
        json!("<none>"),
    ]
}

fn deployment(object: &Value) -> Vec<Value> {
    let (names, images) = containers(&object["spec"]["template"]["spec"]);
    let desired = object
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(1);
    vec![
        name(object),
        json!(format!(
            "{}/{desired}",
            number(object, "/status/readyReplicas")
        )),
        json!(number(object, "/status/updatedReplicas")),
        json!(number(object, "/status/availableReplicas")),
        age(object),
        names,
        images,
        selector(object),
    ]
}

fn replica_set(object: &Value) -> Vec<Value> {
    let (names, images) = containers(&object["spec"]["template"]["spec"]);
    vec![
        name(object),
        json!(number(object, "/spec/replicas")),
        json!(number(object, "/status/replicas")),
        json!(number(object, "/status/readyReplicas")),
        age(object),
        names,
        images,
        selector(object),
    ]
}

fn stateful_set(object: &Value) -> Vec<Value> {
    let (names, images) = containers(&object["spec"]["template"]["spec"]);
    let desired = object
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(1);
    vec![
        name(object),
        json!(format!(
            "{}/{desired}",
            number(object, "/status/readyReplicas")
        )),
        age(object),
        names,
        images,
    ]
}

fn daemon_set(object: &Value) -> Vec<Value> {
    let (names, images) = containers(&object["spec"]["template"]["spec"]);
    let node_selector: Vec<String> = object
        .pointer("/spec/template/spec/nodeSelector")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(key, value)| format!("{key}={}", value.as_str().unwrap_or_default()))
        .collect();
    vec![
        name(object),
        json!(number(object, "/status/desiredNumberScheduled")),
        json!(number(object, "/status/currentNumberScheduled")),
        json!(number(object, "/status/numberReady")),
        json!(number(object, "/status/updatedNumberScheduled")),
        json!(number(object, "/status/numberAvailable")),
        or_none(node_selector.join(",")),
        age(object),
        names,
        images,
        selector(object),
    ]
}

fn job(object: &Value) -> Vec<Value> {
    let (names, images) = containers(&object["spec"]["template"]["spec"]);
    let completions = object
        .pointer("/spec/completions")
        .and_then(Value::as_i64)
        .unwrap_or(1);
    let conditions = object
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let holds = |kind: &str| {
        conditions
            .iter()
            .any(|c| c["type"] == kind && c["status"] == "True")
    };
    let status = if holds("Complete") {
        "Complete"
    } else if holds("Failed") {
        "Failed"
    } else if object.pointer("/metadata/deletionTimestamp").is_some() {
        "Terminating"
    } else {
        "Running"
    };
    let duration = match (
        object.pointer("/status/startTime").and_then(Value::as_str),
        object
            .pointer("/status/completionTime")
            .and_then(Value::as_str),
    ) {
        (Some(start), Some(end)) => {
            match (
                chrono::DateTime::parse_from_rfc3339(start),
                chrono::DateTime::parse_from_rfc3339(end),
            ) {
                (Ok(start), Ok(end)) => human_duration((end - start).num_seconds()),
                _ => String::new(),
            }
        }
        (Some(start), None) => age_of(start),
        _ => String::new(),
    };
    vec![
        name(object),
        json!(status),
        json!(format!(
            "{}/{completions}",
            number(object, "/status/succeeded")
        )),
        json!(duration),
        age(object),
        names,
        images,
        selector(object),
    ]
}

fn ingress(object: &Value) -> Vec<Value> {
    let rules = object
        .pointer("/spec/rules")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let hosts: Vec<&str> = rules.iter().map(|rule| text(rule, "/host")).collect();
    let hosts = if hosts.is_empty() || hosts.iter().all(|h| h.is_empty()) {
        "*".to_owned()
    } else {
        hosts.join(",")
    };
    let addresses: Vec<&str> = object
        .pointer("/status/loadBalancer/ingress")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|ingress| {
            ingress["ip"]
                .as_str()
                .or_else(|| ingress["hostname"].as_str())
        })
        .collect();
    let ports = if object
        .pointer("/spec/tls")
        .and_then(Value::as_array)
        .is_some_and(|tls| !tls.is_empty())
    {
        "80, 443"
    } else {
        "80"
    };
    vec![
        name(object),
        or_none(text(object, "/spec/ingressClassName").to_owned()),
        json!(hosts),
        json!(addresses.join(",")),
        json!(ports),
        age(object),
    ]
}

fn network_policy(object: &Value) -> Vec<Value> {
    vec![
        name(object),
        or_none(label_selector_text(&object["spec"]["podSelector"])),
        age(object),
    ]
}

/// Access modes as kubectl abbreviates them (`RWO,ROX`).
fn access_modes(object: &Value, pointer: &str) -> String {
    let modes: Vec<String> = object
        .pointer(pointer)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(|mode| match mode {
            "ReadWriteOnce" => "RWO".to_owned(),
            "ReadOnlyMany" => "ROX".to_owned(),
            "ReadWriteMany" => "RWX".to_owned(),
            "ReadWriteOncePod" => "RWOP".to_owned(),
            other => other.to_owned(),
        })
        .collect();
    modes.join(",")
}

fn node(object: &Value) -> Vec<Value> {
    let ready = object
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|conditions| conditions.iter().find(|c| c["type"] == "Ready"));
    let mut status = match ready.map(|condition| condition["status"].as_str()) {
        Some(Some("True")) => "Ready".to_owned(),
        Some(_) => "NotReady".to_owned(),
        None => "Unknown".to_owned(),
    };
    if object.pointer("/spec/unschedulable") == Some(&json!(true)) {
        status.push_str(",SchedulingDisabled");
    }
    let roles: Vec<&str> = object
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(key, _)| key.strip_prefix("node-role.kubernetes.io/"))
        .filter(|role| !role.is_empty())
        .collect();
    let address = |kind: &str| {
        object
            .pointer("/status/addresses")
            .and_then(Value::as_array)
            .and_then(|addresses| addresses.iter().find(|a| a["type"] == kind))
            .and_then(|address| address["address"].as_str())
            .unwrap_or_default()
            .to_owned()
    };
    vec![
        name(object),
        json!(status),
        or_none(roles.join(",")),
        age(object),
        json!(text(object, "/status/nodeInfo/kubeletVersion")),
        or_none(address("InternalIP")),
        or_none(address("ExternalIP")),
        json!(text(object, "/status/nodeInfo/osImage")),
        json!(text(object, "/status/nodeInfo/kernelVersion")),
        json!(text(object, "/status/nodeInfo/containerRuntimeVersion")),
    ]
}

fn persistent_volume(object: &Value) -> Vec<Value> {
    let claim = match (
        text(object, "/spec/claimRef/namespace"),
        text(object, "/spec/claimRef/name"),
    ) {
        (_, "") => String::new(),
        (namespace, name) => format!("{namespace}/{name}"),
    };
    let phase = if object.pointer("/metadata/deletionTimestamp").is_some() {
        "Terminating"
    } else {
        text(object, "/status/phase")
    };
    vec![
        name(object),
        json!(text(object, "/spec/capacity/storage")),
        json!(access_modes(object, "/spec/accessModes")),
        json!(text(object, "/spec/persistentVolumeReclaimPolicy")),
        json!(phase),
        json!(claim),
        json!(text(object, "/spec/storageClassName")),
        json!(match text(object, "/spec/volumeAttributesClassName") {
            "" => "<unset>",
            class => class,
        }),
        json!(text(object, "/status/reason")),
        age(object),
        json!(match text(object, "/spec/volumeMode") {
            "" => "Filesystem",
            mode => mode,
        }),
    ]
}

fn horizontal_pod_autoscaler(object: &Value) -> Vec<Value> {
    let reference = format!(
        "{}/{}",
        text(object, "/spec/scaleTargetRef/kind"),
        text(object, "/spec/scaleTargetRef/name")
    );
    let targets: Vec<String> = object
        .pointer("/spec/metrics")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|metric| {
            let resource = &metric["resource"];
            match resource["target"]["averageUtilization"].as_i64() {
                Some(percent) => format!(
                    "{}: <unknown>/{percent}%",
                    resource["name"].as_str().unwrap_or("<unknown>")
                ),
                None => "<unknown>".to_owned(),
            }
        })
        .collect();
    let minimum = object
        .pointer("/spec/minReplicas")
        .and_then(Value::as_i64)
        .map_or_else(|| "<unset>".to_owned(), |min| min.to_string());
    vec![
        name(object),
        json!(reference),
        or_none(targets.join(", ")),
        json!(minimum),
        json!(number(object, "/spec/maxReplicas")),
        json!(number(object, "/status/currentReplicas")),
        age(object),
    ]
}

fn persistent_volume_claim(object: &Value) -> Vec<Value> {
    let modes = access_modes(object, "/status/accessModes");
    let phase = if object.pointer("/metadata/deletionTimestamp").is_some() {
        "Terminating"
    } else {
        text(object, "/status/phase")
    };
    vec![
        name(object),
        json!(phase),
        json!(text(object, "/spec/volumeName")),
        json!(text(object, "/status/capacity/storage")),
        json!(modes),
        json!(text(object, "/spec/storageClassName")),
        json!(match text(object, "/spec/volumeAttributesClassName") {
            "" => "<unset>",
            class => class,
        }),
        age(object),
        json!(match text(object, "/spec/volumeMode") {
            "" => "Filesystem",
            mode => mode,
        }),
    ]
}

fn binding(object: &Value) -> Vec<Value> {
    let subjects = object["subjects"].as_array().cloned().unwrap_or_default();
    let of_kind = |kind: &str| -> Vec<String> {
        subjects
            .iter()
            .filter(|subject| subject["kind"] == kind)
            .map(|subject| match subject["namespace"].as_str() {
                Some(namespace) if kind == "ServiceAccount" => {
                    format!("{namespace}/{}", text(subject, "/name"))
                }
                _ => text(subject, "/name").to_owned(),
            })
            .collect()
    };
    vec![
        name(object),
        json!(format!(
            "{}/{}",
            text(object, "/roleRef/kind"),
            text(object, "/roleRef/name")
        )),
        age(object),
        json!(of_kind("User").join(", ")),
        json!(of_kind("Group").join(", ")),
        json!(of_kind("ServiceAccount").join(", ")),
    ]
}

fn role(object: &Value) -> Vec<Value> {
    vec![
        name(object),
        json!(text(object, "/metadata/creationTimestamp")),
    ]
}

fn lease(object: &Value) -> Vec<Value> {
    vec![
        name(object),
        json!(text(object, "/spec/holderIdentity")),
        age(object),
    ]
}

fn built_in_printer(group: &str, plural: &str) -> Option<fn(&Value) -> Vec<Value>> {
    let printer: fn(&Value) -> Vec<Value> = match (group, plural) {
        ("", "configmaps") => config_map,
        ("", "secrets") => secret,
        ("", "namespaces") => namespace,
        ("", "services") => service,
        ("", "serviceaccounts") => service_account,
        ("", "pods") => pod,
        ("", "persistentvolumeclaims") => persistent_volume_claim,
        ("", "persistentvolumes") => persistent_volume,
        ("", "nodes") => node,
        ("autoscaling", "horizontalpodautoscalers") => horizontal_pod_autoscaler,
        ("apps", "deployments") => deployment,
        ("apps", "replicasets") => replica_set,
        ("apps", "statefulsets") => stateful_set,
        ("apps", "daemonsets") => daemon_set,
        ("batch", "jobs") => job,
        ("networking.k8s.io", "ingresses") => ingress,
        ("networking.k8s.io", "networkpolicies") => network_policy,
        ("rbac.authorization.k8s.io", "roles" | "clusterroles") => role,
        ("rbac.authorization.k8s.io", "rolebindings" | "clusterrolebindings") => binding,
        ("coordination.k8s.io", "leases") => lease,
        _ => return None,
    };
    Some(printer)
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
mod tests {
    use super::*;
    use crate::registry::Registry;

    #[test]
    fn the_vendored_columns_load_and_match_the_printers() {
        let registry = Registry::built_in().expect("registry");
        assert!(vendored_columns().len() > 40);
        for resource in registry.resources() {
            let key = format!(
                "{}/{}/{}",
                resource.group(),
                resource.gvk.version(),
                resource.plural
            );
            if let (Some(columns), Some(printer)) = (
                vendored_columns().get(&key),
                built_in_printer(resource.group(), &resource.plural),
            ) {
                let cells = printer(&json!({"metadata": {"name": "x"}}));
                assert_eq!(cells.len(), columns.len(), "{key}");
            }
        }
    }

    #[test]
    fn durations_read_as_kubectl_writes_them() {
        for (seconds, expected) in [
            (5, "5s"),
            (119, "119s"),
            (125, "2m5s"),
            (600, "10m"),
            (3 * 3600 + 120, "3h2m"),
            (10 * 3600, "10h"),
            (3 * 86400 + 3600, "3d1h"),
            (30 * 86400, "30d"),
            (3 * 365 * 86400, "3y"),
        ] {
            assert_eq!(human_duration(seconds), expected, "{seconds}");
        }
    }

    #[test]
    fn deployments_print_ready_counts_and_images() {
        let deployment_object = json!({"metadata": {"name": "web"},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                "template": {"spec": {"containers": [{"name": "web", "image": "nginx"}]}}},
            "status": {"readyReplicas": 1}});
        let cells = deployment(&deployment_object);
        assert_eq!(cells[1], "1/2");
        assert_eq!(cells[5], "web");
        assert_eq!(cells[6], "nginx");
        assert_eq!(cells[7], "app=web");
    }

    #[test]
    fn json_paths_reach_fields_and_items() {
        let object =
            json!({"spec": {"replicas": 3}, "status": {"conditions": [{"type": "Ready"}]}});
        assert_eq!(json_path(&object, ".spec.replicas"), Some(&json!(3)));
        assert_eq!(
            json_path(&object, ".status.conditions[0].type"),
            Some(&json!("Ready"))
        );
        assert_eq!(json_path(&object, ".spec.missing"), None);
    }
}
