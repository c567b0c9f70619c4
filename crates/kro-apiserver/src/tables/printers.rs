//! The cells of built-in kinds, computed as kube-apiserver 1.33's printers compute them.

use serde_json::{Value, json};

use crate::crd::label_selector_text;

/// The first value a printer column's JSONPath finds, as kube-apiserver's table convertor
/// takes it: fields (`.spec.replicas`), indices (`[0]`), every item (`[*]`) and filters on a
/// field of the items (`[?(@.type=="Ready")]`, `!=` too), in `{...}` or bare.
pub(super) fn json_path<'a>(object: &'a Value, path: &str) -> Option<&'a Value> {
    let path = path.trim();
    let path = path
        .strip_prefix('{')
        .and_then(|path| path.strip_suffix('}'))
        .unwrap_or(path);
    let steps = json_path_steps(path)?;
    first_match(object, &steps)
}

/// One step of a printer column's JSONPath.
#[derive(Debug, PartialEq)]
enum PathStep<'p> {
    Field(&'p str),
    Index(usize),
    Every,
    /// Items whose field at the dotted path equals (or, when `equal` is false, differs from)
    /// the text.
    Filter {
        field: Vec<&'p str>,
        equal: bool,
        value: String,
    },
}

/// The steps of `path`, or `None` when it is not a JSONPath this server evaluates.
fn json_path_steps(path: &str) -> Option<Vec<PathStep<'_>>> {
    let mut steps = Vec::new();
    let mut rest = path;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('.') {
            let end = after.find(['.', '[']).unwrap_or(after.len());
            if end > 0 {
                steps.push(PathStep::Field(&after[..end]));
            }
            rest = &after[end..];
        } else if let Some(after) = rest.strip_prefix('[') {
            let end = bracket_end(after)?;
            steps.push(bracket_step(after[..end].trim())?);
            rest = &after[end + 1..];
        } else {
            let end = rest.find(['.', '[']).unwrap_or(rest.len());
            steps.push(PathStep::Field(&rest[..end]));
            rest = &rest[end..];
        }
    }
    Some(steps)
}

/// Where the `]` closing a bracket opened just before `text` is, outside quotes.
fn bracket_end(text: &str) -> Option<usize> {
    let mut quote = None;
    for (at, character) in text.char_indices() {
        match (quote, character) {
            (Some(open), c) if c == open => quote = None,
            (None, '"' | '\'') => quote = Some(character),
            (None, ']') => return Some(at),
            _ => {}
        }
    }
    None
}

fn bracket_step(inner: &str) -> Option<PathStep<'_>> {
    if inner == "*" {
        return Some(PathStep::Every);
    }
    if let Ok(index) = inner.parse::<usize>() {
        return Some(PathStep::Index(index));
    }
    let condition = inner.strip_prefix("?(")?.strip_suffix(')')?.trim();
    let (left, right, equal) = if let Some((left, right)) = condition.split_once("!=") {
        (left, right, false)
    } else {
        let (left, right) = condition.split_once("==")?;
        (left, right, true)
    };
    let field: Vec<&str> = left
        .trim()
        .strip_prefix("@.")?
        .split('.')
        .filter(|part| !part.is_empty())
        .collect();
    let right = right.trim();
    let value = right
        .strip_prefix('"')
        .and_then(|value| value.strip_suffix('"'))
        .or_else(|| {
            right
                .strip_prefix('\'')
                .and_then(|value| value.strip_suffix('\''))
        })
        .unwrap_or(right)
        .to_owned();
    Some(PathStep::Filter {
        field,
        equal,
        value,
    })
}

/// The first value `steps` reach from `value`, trying items in order where a step matches
/// several.
fn first_match<'a>(value: &'a Value, steps: &[PathStep<'_>]) -> Option<&'a Value> {
    let Some((step, rest)) = steps.split_first() else {
        return Some(value);
    };
    match step {
        PathStep::Field(name) => first_match(value.get(*name)?, rest),
        PathStep::Index(index) => first_match(value.get(*index)?, rest),
        PathStep::Every => value
            .as_array()?
            .iter()
            .find_map(|item| first_match(item, rest)),
        PathStep::Filter {
            field,
            equal,
            value: wanted,
        } => value.as_array()?.iter().find_map(|item| {
            let found = field
                .iter()
                .try_fold(item, |current, name| current.get(*name))?;
            let text = match found {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            };
            if (text == *wanted) == *equal {
                first_match(item, rest)
            } else {
                None
            }
        }),
    }
}

pub(super) fn text<'a>(object: &'a Value, pointer: &str) -> &'a str {
    object
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

pub(super) fn number(object: &Value, pointer: &str) -> i64 {
    object.pointer(pointer).and_then(Value::as_i64).unwrap_or(0)
}

/// How long ago `time` (RFC 3339) was, as kubectl writes ages ("5m", "3d4h").
pub(super) fn age_of(time: &str) -> String {
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

pub(super) fn name(object: &Value) -> Value {
    json!(text(object, "/metadata/name"))
}

pub(super) fn age(object: &Value) -> Value {
    json!(age_of(text(object, "/metadata/creationTimestamp")))
}

pub(super) fn or_none(value: String) -> Value {
    if value.is_empty() {
        json!("<none>")
    } else {
        json!(value)
    }
}

pub(super) fn count(object: &Value, pointer: &str) -> usize {
    match object.pointer(pointer) {
        Some(Value::Object(map)) => map.len(),
        Some(Value::Array(items)) => items.len(),
        _ => 0,
    }
}

/// Container names and images of a pod template (`.spec.template.spec` or a pod's `.spec`).
pub(super) fn containers(spec: &Value) -> (Value, Value) {
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

pub(super) fn selector(object: &Value) -> Value {
    or_none(label_selector_text(&object["spec"]["selector"]))
}

pub(super) fn config_map(object: &Value) -> Vec<Value> {
    let data = count(object, "/data") + count(object, "/binaryData");
    vec![name(object), json!(data), age(object)]
}

pub(super) fn secret(object: &Value) -> Vec<Value> {
    vec![
        name(object),
        json!(text(object, "/type")),
        json!(count(object, "/data")),
        age(object),
    ]
}

pub(super) fn namespace(object: &Value) -> Vec<Value> {
    vec![
        name(object),
        json!(text(object, "/status/phase")),
        age(object),
    ]
}

pub(super) fn service(object: &Value) -> Vec<Value> {
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

pub(super) fn service_account(object: &Value) -> Vec<Value> {
    vec![name(object), json!(count(object, "/secrets")), age(object)]
}

pub(super) fn pod(object: &Value) -> Vec<Value> {
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

pub(super) fn deployment(object: &Value) -> Vec<Value> {
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

pub(super) fn replica_set(object: &Value) -> Vec<Value> {
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

pub(super) fn stateful_set(object: &Value) -> Vec<Value> {
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

pub(super) fn daemon_set(object: &Value) -> Vec<Value> {
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

pub(super) fn job(object: &Value) -> Vec<Value> {
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

pub(super) fn ingress(object: &Value) -> Vec<Value> {
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

pub(super) fn network_policy(object: &Value) -> Vec<Value> {
    vec![
        name(object),
        or_none(label_selector_text(&object["spec"]["podSelector"])),
        age(object),
    ]
}

/// Access modes as kubectl abbreviates them (`RWO,ROX`).
pub(super) fn access_modes(object: &Value, pointer: &str) -> String {
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

pub(super) fn node(object: &Value) -> Vec<Value> {
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

pub(super) fn persistent_volume(object: &Value) -> Vec<Value> {
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

pub(super) fn horizontal_pod_autoscaler(object: &Value) -> Vec<Value> {
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

pub(super) fn persistent_volume_claim(object: &Value) -> Vec<Value> {
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

pub(super) fn binding(object: &Value) -> Vec<Value> {
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

pub(super) fn role(object: &Value) -> Vec<Value> {
    vec![
        name(object),
        json!(text(object, "/metadata/creationTimestamp")),
    ]
}

pub(super) fn lease(object: &Value) -> Vec<Value> {
    vec![
        name(object),
        json!(text(object, "/spec/holderIdentity")),
        age(object),
    ]
}

/// The first non-empty string among `pointers` in `object`.
fn first_text<'a>(object: &'a Value, pointers: &[&str]) -> &'a str {
    pointers
        .iter()
        .map(|pointer| text(object, pointer))
        .find(|value| !value.is_empty())
        .unwrap_or_default()
}

/// An Event of core/v1 or events.k8s.io/v1 (whose fields have other names), as
/// kube-apiserver prints it (wide: every column; kubectl hides the priority ones): last seen,
/// type, reason, `kind/name` of the object, its field path, the source, the message, first
/// seen, count and name.
pub(super) fn event(object: &Value) -> Vec<Value> {
    let since = |time: &str| {
        if time.is_empty() {
            "<unknown>".to_owned()
        } else {
            age_of(time)
        }
    };
    let first = match first_text(object, &["/firstTimestamp", "/deprecatedFirstTimestamp"]) {
        "" => since(text(object, "/eventTime")),
        time => since(time),
    };
    let mut last = match first_text(object, &["/lastTimestamp", "/deprecatedLastTimestamp"]) {
        "" => first.clone(),
        time => since(time),
    };
    let mut count = object
        .pointer("/count")
        .or_else(|| object.pointer("/deprecatedCount"))
        .and_then(Value::as_i64)
        .unwrap_or(0);
    if let Some(series) = object.get("series").filter(|series| series.is_object()) {
        last = since(text(series, "/lastObservedTime"));
        count = number(series, "/count");
    } else if count == 0 {
        count = 1;
    }
    let regarding = object
        .get("involvedObject")
        .or_else(|| object.get("regarding"))
        .unwrap_or(&Value::Null);
    let kind = text(regarding, "/kind").to_lowercase();
    let target = match text(regarding, "/name") {
        "" => kind,
        name => format!("{kind}/{name}"),
    };
    let component = first_text(
        object,
        &[
            "/source/component",
            "/deprecatedSource/component",
            "/reportingController",
        ],
    );
    let instance = first_text(
        object,
        &[
            "/source/host",
            "/deprecatedSource/host",
            "/reportingInstance",
        ],
    );
    let source = match (component, instance) {
        ("", "") => String::new(),
        (component, "") => component.to_owned(),
        (component, instance) => format!("{component}, {instance}"),
    };
    let message = first_text(object, &["/message", "/note"]).trim();
    vec![
        json!(last),
        json!(text(object, "/type")),
        json!(text(object, "/reason")),
        json!(target),
        json!(text(regarding, "/fieldPath")),
        json!(source),
        json!(message),
        json!(first),
        json!(count),
        name(object),
    ]
}

pub(super) fn built_in_printer(group: &str, plural: &str) -> Option<fn(&Value) -> Vec<Value>> {
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
        ("" | "events.k8s.io", "events") => event,
        _ => return None,
    };
    Some(printer)
}
