//! Events seen through both their versions: kube-apiserver keeps core/v1 Events and
//! `events.k8s.io/v1` Events in one store, so each version lists, gets and watches the events
//! written through the other, converted field by field as its conversion functions do
//! (`note`/`message`, `regarding`/`involvedObject`, `reportingController`/`reportingComponent`,
//! `deprecatedSource`/`source`, `deprecatedFirstTimestamp`/`firstTimestamp`,
//! `deprecatedLastTimestamp`/`lastTimestamp`, `deprecatedCount`/`count`).
//!
//! Here each version keeps the events written through it; reads merge the other's, and
//! deletes reach them.

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

/// For a resource of Events (`group` `""` or `events.k8s.io`, resource `events`), the group
/// of the other version.
pub(crate) fn other_version_group(group: &str, resource: &str) -> Option<&'static str> {
    match (group, resource) {
        ("", "events") => Some(EVENTS_GROUP),
        (EVENTS_GROUP, "events") => Some(""),
        _ => None,
    }
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
    fn only_events_have_another_version() {
        assert_eq!(other_version_group("", "events"), Some(EVENTS_GROUP));
        assert_eq!(other_version_group(EVENTS_GROUP, "events"), Some(""));
        assert_eq!(other_version_group("", "configmaps"), None);
    }
}
