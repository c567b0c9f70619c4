//! Unit tests of Table output.

use super::printers::{deployment, human_duration};
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
