//! The RGDs of `examples/`, each with its instance: they validate without warnings and render
//! the whole graph (readiness assumed, since no controller writes status here), level by
//! level, with the objects and status the example promises.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn kro(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kro"))
        .args(args)
        .output()
        .expect("the kro binary built by cargo runs")
}

fn example(name: &str) -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name);
    assert!(path.is_dir(), "{} is missing", path.display());
    path
}

/// `(node id, object names)` per node, level by level.
type Levels = Vec<Vec<(String, Vec<String>)>>;

/// Validates the example's RGD and renders its instance with readiness assumed; returns the
/// report and `(node id, object names)` per level.
fn render(name: &str) -> (Value, Levels) {
    let dir = example(name);
    let rgd = dir.join("rgd.yaml").to_string_lossy().into_owned();
    let instance = dir.join("instance.yaml").to_string_lossy().into_owned();
    let validated = kro(&["validate", "-f", &rgd]);
    let stderr = String::from_utf8_lossy(&validated.stderr);
    assert!(
        validated.status.success(),
        "{name}: kro validate failed:\n{stderr}"
    );
    assert!(!stderr.contains("warning"), "{name}: warnings:\n{stderr}");
    let rendered = kro(&[
        "render",
        "-f",
        &rgd,
        "-i",
        &instance,
        "--assume-ready",
        "-o",
        "json",
    ]);
    assert!(
        rendered.status.success(),
        "{name}: kro render failed:\n{}",
        String::from_utf8_lossy(&rendered.stderr)
    );
    let report: Value = serde_json::from_slice(&rendered.stdout).expect("a JSON report");
    let levels = report["levels"]
        .as_array()
        .expect("levels")
        .iter()
        .map(|level| {
            level["nodes"]
                .as_array()
                .expect("nodes")
                .iter()
                .map(|node| {
                    assert_eq!(node["state"], "Ready", "{name}: {node}");
                    let names = node["objects"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(|object| object["metadata"]["name"].as_str().unwrap_or("").to_owned())
                        .collect();
                    (node["id"].as_str().unwrap_or("").to_owned(), names)
                })
                .collect()
        })
        .collect();
    assert_eq!(report["status"]["state"], "ACTIVE", "{name}");
    (report, levels)
}

fn ids(levels: &[Vec<(String, Vec<String>)>]) -> Vec<Vec<&str>> {
    levels
        .iter()
        .map(|level| level.iter().map(|(id, _)| id.as_str()).collect())
        .collect()
}

#[test]
fn webapp_is_a_deployment_a_service_and_an_optional_ingress() {
    let (report, levels) = render("webapp");
    assert_eq!(
        ids(&levels),
        [vec!["deployment"], vec!["service"], vec!["ingress"]]
    );
    assert_eq!(levels[0][0].1, ["shop"]);
    assert_eq!(report["status"]["endpoint"], "http://shop.default:80");
}

#[test]
fn workers_are_a_collection_with_one_deployment_per_queue() {
    let (report, levels) = render("workers");
    assert_eq!(ids(&levels), [vec!["workers"], vec!["roster"]]);
    assert_eq!(
        levels[0][0].1,
        ["billing-invoices", "billing-refunds", "billing-reminders"]
    );
    assert_eq!(report["status"]["workers"], 3);
}

#[test]
fn data_nodes_compute_names_and_sizes_once() {
    let (report, levels) = render("data-node");
    assert_eq!(
        ids(&levels),
        [vec!["naming", "sizing"], vec!["settings"], vec!["app"]]
    );
    assert_eq!(levels[2][0].1, ["checkout-prod"]);
    assert_eq!(report["status"]["replicas"], 3);
    assert_eq!(report["status"]["prefix"], "checkout-prod");
}

#[test]
fn a_scalable_web_has_a_scale_subresource_sized_from_its_spec() {
    let (report, levels) = render("scalable-web");
    assert_eq!(ids(&levels), [vec!["deployment"]]);
    assert_eq!(levels[0][0].1, ["shop"]);
    assert_eq!(
        report["status"]["podSelector"],
        "app.kubernetes.io/name=shop"
    );
    let crd = kro(&[
        "generate",
        "crd",
        "-f",
        &example("scalable-web").join("rgd.yaml").to_string_lossy(),
        "-o",
        "json",
    ]);
    assert!(
        crd.status.success(),
        "{}",
        String::from_utf8_lossy(&crd.stderr)
    );
    let crd: Value = serde_json::from_slice(&crd.stdout).expect("the CRD as JSON");
    assert_eq!(
        crd["spec"]["versions"][0]["subresources"]["scale"],
        serde_json::json!({
            "specReplicasPath": ".spec.replicas",
            "statusReplicasPath": ".status.replicas",
            "labelSelectorPath": ".status.podSelector",
        })
    );
}

#[test]
fn a_site_set_adds_a_set_kind() {
    let (report, levels) = render("site-set");
    assert_eq!(ids(&levels), [vec!["deployment", "service"]]);
    assert_eq!(report["status"]["endpoint"], "http://blog.default");
    let crds = kro(&[
        "generate",
        "crd",
        "-f",
        &example("site-set").join("rgd.yaml").to_string_lossy(),
        "-o",
        "json",
    ]);
    assert!(
        crds.status.success(),
        "{}",
        String::from_utf8_lossy(&crds.stderr)
    );
    let crds: Value = serde_json::from_slice(&crds.stdout).expect("a JSON list");
    let names: Vec<&str> = crds["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter_map(|crd| crd["metadata"]["name"].as_str())
        .collect();
    assert_eq!(names, ["sites.kro.run", "sitesets.kro.run"]);
}

#[test]
fn the_stack_has_seven_levels() {
    let (report, levels) = render("stack");
    assert_eq!(
        ids(&levels),
        [
            vec!["settings"],
            vec!["database"],
            vec!["databaseService"],
            vec!["migration"],
            vec!["api"],
            vec!["apiService", "autoscaler"],
            vec!["ingress"],
        ]
    );
    assert_eq!(report["status"]["url"], "http://orders.local");
}

/// What a compose example (`examples/compose/*.rs`, built as a cargo example of kro-compose)
/// prints: its RGDs as YAML. `cargo test --workspace` builds them with the tests; run alone,
/// this test says how to build them.
fn compose_example_output(name: &str) -> String {
    let kro = PathBuf::from(env!("CARGO_BIN_EXE_kro"));
    let examples = kro
        .parent()
        .expect("the kro binary is in the target directory")
        .join("examples");
    let program = examples.join(name);
    assert!(
        program.is_file(),
        "the compose example {name} is not built at {}: build it with \
         `cargo build -p kro-compose --examples` (cargo test --workspace does)",
        program.display()
    );
    let output = Command::new(&program).output().expect("the example runs");
    assert!(
        output.status.success(),
        "{name}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("YAML is UTF-8")
}

#[test]
fn the_compose_examples_rgds_pass_kro_validate() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    for (name, rgds) in [
        ("webapp", 1),
        ("data_node", 1),
        ("workers", 1),
        ("web_with_database", 1),
        ("full_stack", 1),
        ("teams", 3),
    ] {
        let file = dir.path().join(format!("{name}.yaml"));
        std::fs::write(&file, compose_example_output(name)).expect("written");
        let validated = kro(&["validate", "-f", &file.to_string_lossy()]);
        let stdout = String::from_utf8_lossy(&validated.stdout);
        let stderr = String::from_utf8_lossy(&validated.stderr);
        assert!(
            validated.status.success(),
            "{name}: kro validate failed:\n{stderr}"
        );
        assert!(!stderr.contains("warning"), "{name}: warnings:\n{stderr}");
        assert_eq!(
            stdout.matches(": valid: ").count(),
            rgds,
            "{name}: {stdout}"
        );
    }
}
