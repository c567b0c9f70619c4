//! Events seen through both their versions: kube-apiserver keeps core/v1 Events and
//! `events.k8s.io/v1` Events in one store, so each version lists, gets and watches the events
//! written through the other, converted field by field as its conversion functions do
//! (`note`/`message`, `regarding`/`involvedObject`, `reportingController`/`reportingComponent`,
//! `deprecatedSource`/`source`, `deprecatedFirstTimestamp`/`firstTimestamp`,
//! `deprecatedLastTimestamp`/`lastTimestamp`, `deprecatedCount`/`count`).
//!
//! Here too: Events are stored once, in core/v1's form, whichever version writes them
//! ([`storage_group`]); `events.k8s.io/v1` reads convert them on the way out and its writes on
//! the way in, so an Event written through one version is read, updated, patched and deleted
//! through the other, and a name is taken in both.

use kro_schema::{BadValue, FieldError, FieldPath};
use serde_json::{Map, Value};

/// The group of `events.k8s.io/v1` Events.
pub(crate) const EVENTS_GROUP: &str = "events.k8s.io";

/// Field names that differ between `events.k8s.io/v1` (first) and core/v1 (second); the
/// others (`metadata`, `reason`, `type`, `action`, `eventTime`, `series`, `related`,
/// `reportingInstance`) are the same in both.
const RENAMED: &[(&str, &str)] = &[
    ("regarding", "involvedObject"),
    ("note", "message"),
    ("reportingController", "reportingComponent"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
];

/// The group whose store keeps the objects of `group`'s `resource`: `group` itself, but core's
/// for `events.k8s.io` Events.
pub(crate) fn storage_group<'a>(group: &'a str, resource: &str) -> &'a str {
    if is_stored_as_core(group, resource) {
        ""
    } else {
        group
    }
}

/// Whether `group`'s `resource` is kept in core/v1 Events' form (`events.k8s.io` Events).
pub(crate) fn is_stored_as_core(group: &str, resource: &str) -> bool {
    group == EVENTS_GROUP && resource == "events"
}

/// An Event stored through the other version, as the version of `group` shows it.
pub(crate) fn convert(event: &Value, group: &str) -> Value {
    let (api_version, kind) = if group == EVENTS_GROUP {
        ("events.k8s.io/v1", "Event")
    } else {
        ("v1", "Event")
    };
    let to_events = group == EVENTS_GROUP;
    let mut converted = Map::new();
    converted.insert("kind".to_owned(), Value::from(kind));
    converted.insert("apiVersion".to_owned(), Value::from(api_version));
    if let Value::Object(fields) = event {
        for (field, value) in fields {
            if field == "kind" || field == "apiVersion" {
                continue;
            }
            let renamed = RENAMED.iter().find_map(|(events_name, core_name)| {
                if to_events && field == core_name {
                    Some(*events_name)
                } else if !to_events && field == events_name {
                    Some(*core_name)
                } else {
                    None
                }
            });
            let name = renamed.unwrap_or(field);
            // events.k8s.io/v1 leaves empty strings out where core/v1 writes them.
            if to_events
                && matches!(name, "reportingController" | "reportingInstance")
                && value.as_str() == Some("")
            {
                continue;
            }
            converted.insert(name.to_owned(), value.clone());
        }
    }
    let mut converted = Value::Object(converted);
    crate::typed::round_trip(&kro_schema::Gvk::new(group, "v1", "Event"), &mut converted);
    converted
}

/// The kind validation errors of Events name, whichever version was written: kube-apiserver
/// validates both as its internal core Event.
pub(crate) fn error_kind() -> kro_schema::Gvk {
    kro_schema::Gvk::new("", "v1", "Event")
}

/// kube-apiserver's checks of an Event written through `group`'s version (its
/// `ValidateEventCreate`/`ValidateEventUpdate`), on the Event in core/v1's form: every write
/// passes the legacy checks; through `events.k8s.io` a create is strict (an `eventTime`, a
/// `type` of Normal or Warning, none of the deprecated fields) and an update changes nothing but
/// the series and metadata. These replace the schema's `required` lists, which kube-apiserver
/// does not check for Events.
pub(crate) fn validate(new: &Value, old: Option<&Value>, group: &str) -> Vec<FieldError> {
    let mut errors = legacy_errors(new);
    if group != EVENTS_GROUP {
        return errors;
    }
    let set = |field: &str| !is_zero(new.get(field));
    match old {
        None => {
            errors.extend(series_errors(new));
            if !set("eventTime") {
                errors.push(FieldError::required(FieldPath::new("eventTime"), ""));
            }
            let event_type = text(new, "type");
            if event_type != "Normal" && event_type != "Warning" {
                errors.push(FieldError::invalid(
                    FieldPath::new("type"),
                    BadValue::text(""),
                    &format!("has invalid value: {event_type}"),
                ));
            }
            for field in ["firstTimestamp", "lastTimestamp", "count"] {
                if set(field) {
                    errors.push(needs_to_be_unset(field));
                }
            }
            let source = new.get("source");
            let source_field = |name: &str| {
                source
                    .and_then(|source| source.get(name))
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned()
            };
            if !source_field("component").is_empty() || !source_field("host").is_empty() {
                errors.push(needs_to_be_unset("source"));
            }
        }
        Some(old) => {
            if new.get("series") != old.get("series") {
                errors.extend(series_errors(new));
            }
            for field in [
                "involvedObject",
                "reason",
                "message",
                "source",
                "firstTimestamp",
                "lastTimestamp",
                "count",
                "reason",
                "type",
                "eventTime",
                "action",
                "related",
                "reportingComponent",
                "reportingInstance",
            ] {
                let (now, before) = (new.get(field), old.get(field));
                if now != before && !(is_zero(now) && is_zero(before)) {
                    let path = match field {
                        "reportingComponent" => "reportingController",
                        other => other,
                    };
                    let value = match now {
                        Some(Value::Object(_) | Value::Array(_)) => BadValue::Omitted,
                        Some(value) => BadValue::Value(value.clone()),
                        None => BadValue::Value(Value::Null),
                    };
                    errors.push(FieldError::invalid(
                        FieldPath::new(path),
                        value,
                        "field is immutable",
                    ));
                }
            }
        }
    }
    errors
}

/// kube-apiserver's `legacyValidateEvent`: the namespaces agree, and an Event with an
/// `eventTime` names its reporter, action and reason within their limits.
fn legacy_errors(event: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let namespace = event
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let involved_namespace = event
        .pointer("/involvedObject/namespace")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let mismatch = || {
        FieldError::invalid(
            FieldPath::new("involvedObject").child("namespace"),
            BadValue::text(involved_namespace),
            "does not match event.namespace",
        )
    };
    if is_zero(event.get("eventTime")) {
        let agrees = if involved_namespace.is_empty() {
            namespace.is_empty() || namespace == "default"
        } else {
            namespace == involved_namespace
        };
        if !agrees {
            errors.push(mismatch());
        }
        return errors;
    }
    if involved_namespace.is_empty() && namespace != "default" && namespace != "kube-system" {
        errors.push(mismatch());
    }
    for (field, path, limit) in [
        ("reportingComponent", "reportingController", None),
        ("reportingInstance", "reportingInstance", Some(128)),
        ("action", "action", Some(128)),
        ("reason", "reason", Some(128)),
    ] {
        let value = text(event, field);
        if value.is_empty() {
            errors.push(FieldError::required(FieldPath::new(path), ""));
        }
        if let Some(limit) = limit
            && value.len() > limit
        {
            errors.push(at_most(path, limit));
        }
    }
    if text(event, "message").len() > 1024 {
        errors.push(at_most("message", 1024));
    }
    errors
}

fn series_errors(event: &Value) -> Vec<FieldError> {
    let Some(series) = event.get("series").filter(|series| !series.is_null()) else {
        return Vec::new();
    };
    let mut errors = Vec::new();
    if series.get("count").and_then(Value::as_i64).unwrap_or(0) < 2 {
        errors.push(FieldError::invalid(
            FieldPath::new("series").child("count"),
            BadValue::text(""),
            "should be at least 2",
        ));
    }
    if is_zero(series.get("lastObservedTime")) {
        errors.push(FieldError::required(
            FieldPath::new("series").child("lastObservedTime"),
            "",
        ));
    }
    errors
}

fn needs_to_be_unset(field: &str) -> FieldError {
    FieldError::invalid(
        FieldPath::new(field),
        BadValue::text(""),
        "needs to be unset",
    )
}

fn at_most(field: &str, limit: usize) -> FieldError {
    FieldError::invalid(
        FieldPath::new(field),
        BadValue::text(""),
        &format!("can have at most {limit} characters"),
    )
}

fn text<'a>(event: &'a Value, field: &str) -> &'a str {
    event.get(field).and_then(Value::as_str).unwrap_or_default()
}

/// Whether a field holds its Go zero value (absent, null, `""`, `0`, or an empty object).
fn is_zero(value: Option<&Value>) -> bool {
    match value {
        None | Some(Value::Null) => true,
        Some(Value::String(text)) => text.is_empty(),
        Some(Value::Number(number)) => number.as_f64() == Some(0.0),
        Some(Value::Object(map)) => map.values().all(|value| is_zero(Some(value))),
        Some(Value::Array(items)) => items.is_empty(),
        Some(Value::Bool(flag)) => !flag,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn core_event() -> Value {
        json!({
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": "web.1", "namespace": "shop"},
            "involvedObject": {"kind": "Deployment", "name": "web", "namespace": "shop"},
            "reason": "ScalingReplicaSet",
            "message": "Scaled up replica set web-1 from 0 to 2",
            "source": {"component": "deployment-controller"},
            "firstTimestamp": "2026-01-01T00:00:00Z",
            "lastTimestamp": "2026-01-01T00:00:01Z",
            "count": 2,
            "type": "Normal",
            "reportingComponent": "deployment-controller",
            "reportingInstance": "",
        })
    }

    #[test]
    fn a_core_event_reads_as_an_events_k8s_io_event_with_the_fields_renamed() {
        let converted = convert(&core_event(), EVENTS_GROUP);
        assert_eq!(converted["apiVersion"], "events.k8s.io/v1");
        assert_eq!(converted["note"], "Scaled up replica set web-1 from 0 to 2");
        assert_eq!(converted["regarding"]["name"], "web");
        assert_eq!(converted["reportingController"], "deployment-controller");
        assert_eq!(
            converted["deprecatedSource"]["component"],
            "deployment-controller"
        );
        assert_eq!(
            converted["deprecatedFirstTimestamp"],
            "2026-01-01T00:00:00Z"
        );
        assert_eq!(converted["deprecatedLastTimestamp"], "2026-01-01T00:00:01Z");
        assert_eq!(converted["deprecatedCount"], 2);
        for core_only in ["message", "involvedObject", "source", "count"] {
            assert!(converted.get(core_only).is_none(), "{core_only}");
        }
    }

    #[test]
    fn converting_there_and_back_gives_the_event_again() {
        let there = convert(&core_event(), EVENTS_GROUP);
        let back = convert(&there, "");
        for field in [
            "involvedObject",
            "message",
            "source",
            "firstTimestamp",
            "lastTimestamp",
            "count",
            "reportingComponent",
            "reason",
            "type",
        ] {
            assert_eq!(back[field], core_event()[field], "{field}");
        }
    }

    #[test]
    fn only_events_k8s_io_events_are_stored_in_another_group() {
        assert_eq!(storage_group(EVENTS_GROUP, "events"), "");
        assert_eq!(storage_group("", "events"), "");
        assert_eq!(storage_group("apps", "deployments"), "apps");
        assert_eq!(storage_group(EVENTS_GROUP, "other"), EVENTS_GROUP);
    }

    #[test]
    fn an_events_k8s_io_event_survives_being_stored_as_core() {
        let event = json!({
            "apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": "web.2", "namespace": "shop"},
            "eventTime": "2026-01-01T00:00:00.000000Z",
            "reportingController": "kro.run/controller",
            "reportingInstance": "kro-1",
            "action": "Apply",
            "reason": "Applied",
            "regarding": {"kind": "ConfigMap", "name": "x", "namespace": "shop"},
            "note": "applied",
            "type": "Normal",
            "series": {"count": 3, "lastObservedTime": "2026-01-01T00:00:02.000000Z"},
        });
        let stored = convert(&event, "");
        assert_eq!(stored["apiVersion"], "v1");
        assert_eq!(stored["message"], "applied");
        // Back as it went in, as the typed Event shows it (a Go struct `deprecatedSource`).
        let mut typed = event.clone();
        crate::typed::round_trip(
            &kro_schema::Gvk::new(EVENTS_GROUP, "v1", "Event"),
            &mut typed,
        );
        assert_eq!(convert(&stored, EVENTS_GROUP), typed);
    }
}
