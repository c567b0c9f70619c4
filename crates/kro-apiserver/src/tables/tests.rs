//! Unit tests of Table output.

use super::printers::{deployment, event, human_duration};
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
    let object = json!({"spec": {"replicas": 3}, "status": {"conditions": [{"type": "Ready"}]}});
    assert_eq!(json_path(&object, ".spec.replicas"), Some(&json!(3)));
    assert_eq!(
        json_path(&object, ".status.conditions[0].type"),
        Some(&json!("Ready"))
    );
    assert_eq!(json_path(&object, ".spec.missing"), None);
}

#[test]
fn json_paths_filter_items_as_printer_columns_do() {
    let object = json!({"status": {"conditions": [
        {"type": "GraphAccepted", "status": "True"},
        {"type": "Ready", "status": "False", "reason": "Waiting"},
    ], "replicas": 2}});
    let ready = r#".status.conditions[?(@.type=="Ready")].status"#;
    assert_eq!(json_path(&object, ready), Some(&json!("False")));
    assert_eq!(
        json_path(
            &object,
            r#"{.status.conditions[?(@.type=='Ready')].reason}"#
        ),
        Some(&json!("Waiting"))
    );
    assert_eq!(
        json_path(
            &object,
            r#".status.conditions[?(@.type!="GraphAccepted")].type"#
        ),
        Some(&json!("Ready"))
    );
    assert_eq!(
        json_path(&object, ".status.conditions[*].type"),
        Some(&json!("GraphAccepted"))
    );
    assert_eq!(
        json_path(
            &object,
            r#".status.conditions[?(@.type=="Missing")].status"#
        ),
        None
    );
    assert_eq!(json_path(&object, ".status.conditions[?(@.type"), None);
    assert_eq!(json_path(&object, "status.replicas"), Some(&json!(2)));
}

#[test]
fn events_print_as_kube_apiserver_prints_them_in_both_versions() {
    let core = json!({
        "metadata": {"name": "web.17f"},
        "involvedObject": {"kind": "Deployment", "name": "web", "fieldPath": "spec"},
        "reason": "ScalingReplicaSet", "type": "Normal",
        "message": "Scaled up replica set web-1 to 2 ",
        "source": {"component": "deployment-controller"},
        "firstTimestamp": "2020-01-01T00:00:00Z", "lastTimestamp": "2020-01-01T00:00:00Z",
        "count": 3,
    });
    let cells = event(&core);
    assert_eq!(
        cells[1..8],
        [
            json!("Normal"),
            json!("ScalingReplicaSet"),
            json!("deployment/web"),
            json!("spec"),
            json!("deployment-controller"),
            json!("Scaled up replica set web-1 to 2"),
            cells[7].clone(),
        ]
    );
    assert!(
        cells[0]
            .as_str()
            .is_some_and(|age| age.starts_with(char::is_numeric) && age.contains('y'))
            && cells[0] == cells[7],
        "{cells:?}"
    );
    assert_eq!(
        (cells[8].clone(), cells[9].clone()),
        (json!(3), json!("web.17f"))
    );

    // events.k8s.io/v1: regarding, note, reportingController/Instance, eventTime, no count.
    let new = json!({
        "metadata": {"name": "pod.1"},
        "regarding": {"kind": "Pod", "name": "web-1"},
        "reason": "Scheduled", "type": "Normal", "note": "assigned",
        "reportingController": "default-scheduler", "reportingInstance": "node-1",
        "eventTime": "2020-01-01T00:00:00.000000Z",
    });
    let cells = event(&new);
    assert_eq!(cells[3], json!("pod/web-1"));
    assert_eq!(cells[5], json!("default-scheduler, node-1"));
    assert_eq!(cells[6], json!("assigned"));
    assert_eq!(cells[0], cells[7], "last seen falls back to first seen");
    assert_eq!(cells[8], json!(1), "a singleton counts 1");
    // A series gives the count and the last time.
    let mut series = new.clone();
    series["series"] = json!({"count": 7, "lastObservedTime": "2021-01-01T00:00:00.000000Z"});
    assert_eq!(event(&series)[8], json!(7));
    // Nothing known: unknown times, the kind alone.
    let bare = event(&json!({"metadata": {"name": "x"}, "involvedObject": {"kind": "Node"}}));
    assert_eq!(
        (bare[0].clone(), bare[3].clone()),
        (json!("<unknown>"), json!("node"))
    );
}
