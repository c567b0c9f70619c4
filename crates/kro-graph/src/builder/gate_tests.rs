//! The RGD's propagation policy and the gated parts of the instance CRD: `spec.propagateWhen`
//! and the rollout annotations (gate `PropagationControl`), `propagateWhen` on resources, and
//! `status.managedResources` (gate `InstanceManagedResources`).

use super::tests::{HEADER, build_with_gates, rgd};
use super::*;
use crate::schema_source::BuiltinCatalog;

fn build_gated(yaml: &str, gated: bool) -> Result<CompiledGraph, BuildErrors> {
    let config = BuildConfig {
        features: crate::FeatureGates::default().with(crate::Feature::PropagationControl, gated),
        ..BuildConfig::default()
    };
    build_graph_with(&rgd(yaml), &BuiltinCatalog, &config)
}

const PROPAGATING: &str = "apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: apps
  annotations:
    kro.run/propagation-rate: 10/m
spec:
  propagateWhen:
    - ${linearlyReady(app, apps, 2)}
  schema:
    apiVersion: v1alpha1
    kind: App
  resources:
    - id: config
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: ${schema.metadata.name}
";

#[test]
fn propagate_when_needs_its_gate_and_adds_the_revision_to_the_instance_crd() {
    let refused = build_gated(PROPAGATING, false).expect_err("the gate is off");
    assert_eq!(refused.errors.len(), 1);
    assert_eq!(refused.errors[0].path.to_string(), "spec.propagateWhen[0]");
    assert!(
        refused.errors[0]
            .to_string()
            .contains("--feature-gates=PropagationControl=true"),
        "{}",
        refused.errors[0]
    );
    let graph = build_gated(PROPAGATING, true).unwrap_or_else(|errors| panic!("{errors}"));
    let policy = graph.propagation.as_ref().expect("a policy");
    assert_eq!(policy.when.len(), 1);
    assert_eq!(
        policy.rate.map(|rate| rate.interval()),
        Some(std::time::Duration::from_secs(6))
    );
    let version = &graph.crd["spec"]["versions"][0];
    assert_eq!(
        version["schema"]["openAPIV3Schema"]["properties"]["status"]["properties"]["observedRevision"]
            ["type"],
        "integer"
    );
    let columns: Vec<&str> = version["additionalPrinterColumns"]
        .as_array()
        .expect("columns")
        .iter()
        .filter_map(|column| column["name"].as_str())
        .collect();
    assert_eq!(columns, ["State", "Ready", "Revision", "Age"]);
    // Without a policy the CRD is what it always was.
    let plain = PROPAGATING.replace(
        "  propagateWhen:\n    - ${linearlyReady(app, apps, 2)}\n",
        "",
    );
    let plain = plain.replace("  annotations:\n    kro.run/propagation-rate: 10/m\n", "");
    let graph = build_gated(&plain, true).unwrap_or_else(|errors| panic!("{errors}"));
    assert!(graph.propagation.is_none());
    assert!(
        graph.crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"]
            ["properties"]
            .get("observedRevision")
            .is_none()
    );
}

#[test]
fn a_bad_rollout_annotation_is_an_error_at_the_annotation() {
    let yaml = PROPAGATING.replace("10/m", "fast");
    let errors = build_gated(&yaml, true).expect_err("refused").errors;
    assert_eq!(errors.len(), 1);
    assert_eq!(
        errors[0].path.to_string(),
        "metadata.annotations[\"kro.run/propagation-rate\"]"
    );
    assert_eq!(errors[0].kind.reason(), "InvalidPropagationConfig");
}

#[test]
fn propagate_when_on_a_resource_gates_a_collection_and_is_refused_elsewhere() {
    let single = PROPAGATING.replace(
        "    - id: config\n",
        "    - id: config\n      propagateWhen:\n        - ${true}\n",
    );
    let errors = build_gated(&single, true).expect_err("refused").errors;
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(
        errors[0].path.to_string(),
        "spec.resources[0].propagateWhen"
    );
    assert!(
        errors[0].to_string().contains("only a collection's items"),
        "{}",
        errors[0]
    );
    let errors = build_gated(&single, false).expect_err("refused").errors;
    assert!(
        errors.iter().any(
            |error| error.path.to_string() == "spec.resources[0].propagateWhen[0]"
                && error.to_string().contains("PropagationControl")
        ),
        "{errors:?}"
    );
    let collection = format!(
        "{HEADER}spec:
  schema:
    apiVersion: v1alpha1
    kind: Zones
    spec:
      zones: '[]string'
  resources:
    - id: configs
      forEach:
        - zone: ${{schema.spec.zones}}
      propagateWhen:
        - ${{linearlyReady(zone, configs, 1)}}
        - ${{configs.filter(c, c.updated() && !c.ready()).size() < 2 && each.metadata.name != ''}}
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: ${{zone}}
"
    );
    let graph = build_gated(&collection, true).unwrap_or_else(|errors| panic!("{errors}"));
    let node = graph.node("configs").expect("the node");
    assert_eq!(
        node.propagation.as_ref().map(|policy| policy.when.len()),
        Some(2)
    );
    let bad = collection.replace(
        "linearlyReady(zone, configs, 1)",
        "linearlyReady(zone, configs)",
    );
    let errors = build_gated(&bad, true).expect_err("refused").errors;
    assert_eq!(
        errors[0].path.to_string(),
        "spec.resources[0].propagateWhen[0]"
    );
}

#[test]
fn managed_resources_are_in_the_crd_and_reserved_only_with_their_gate() {
    let gated = "InstanceManagedResources=true";
    let plain = PROPAGATING
        .replace(
            "  propagateWhen:\n    - ${linearlyReady(app, apps, 2)}\n",
            "",
        )
        .replace("  annotations:\n    kro.run/propagation-rate: 10/m\n", "");
    let status = |graph: &CompiledGraph| {
        graph.crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"]
            ["properties"]
            .clone()
    };
    let graph = build_with_gates(&plain, gated).unwrap_or_else(|errors| panic!("{errors}"));
    let field = &status(&graph)["managedResources"];
    assert_eq!(field["x-kubernetes-list-type"], "atomic");
    assert_eq!(field["items"]["properties"]["uid"]["type"], "string");
    let graph = build_with_gates(&plain, "").unwrap_or_else(|errors| panic!("{errors}"));
    assert!(status(&graph).get("managedResources").is_none());
    // An author's own field of that name: refused with the gate, theirs without it.
    let declaring = plain.replace(
        "    kind: App\n",
        "    kind: App\n    status:\n      managedResources: ${config.metadata.name}\n",
    );
    let errors = build_with_gates(&declaring, gated)
        .expect_err("reserved")
        .errors;
    assert_eq!(
        errors[0].path.to_string(),
        "spec.schema.status.managedResources"
    );
    assert!(build_with_gates(&declaring, "").is_ok());
}

fn build_timed(yaml: &str, gated: bool) -> Result<CompiledGraph, BuildErrors> {
    let config = BuildConfig {
        features: crate::FeatureGates::default().with(crate::Feature::CelTimeFunctions, gated),
        ..BuildConfig::default()
    };
    build_graph_with(&rgd(yaml), &BuiltinCatalog, &config)
}

fn timed(resources: &str) -> String {
    format!(
        "{HEADER}spec:
  schema:
    apiVersion: v1alpha1
    kind: Cert
    spec:
      notAfter: string
  resources:
{resources}"
    )
}

const RENEWAL: &str = "    - id: renewal
      includeWhen:
        - ${time.now() >= timestamp(schema.spec.notAfter) - duration('720h')}
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: ${schema.metadata.name}
        data:
          at: ${string(time.now())}
";

#[test]
fn time_functions_need_their_gate() {
    let refused = build_timed(&timed(RENEWAL), false).expect_err("the gate is off");
    assert_eq!(refused.errors.len(), 2, "{refused}");
    let first = refused.errors[0].to_string();
    assert!(
        first.contains("time.now() requires the CELTimeFunctions feature gate")
            && first.contains("--feature-gates=CELTimeFunctions=true"),
        "{first}"
    );
    let graph = build_timed(&timed(RENEWAL), true).unwrap_or_else(|errors| panic!("{errors}"));
    assert!(graph.reads_time);
    // The generated CRD does not change with the gate.
    let plain = timed(
        "    - id: renewal
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: x
",
    );
    let without = build_timed(&plain, false).unwrap_or_else(|errors| panic!("{errors}"));
    let with = build_timed(&plain, true).unwrap_or_else(|errors| panic!("{errors}"));
    assert_eq!(without.crd, with.crd);
    assert!(!with.reads_time);
}

#[test]
fn a_bare_time_value_in_a_string_field_is_a_type_error_and_time_is_reserved() {
    let bare = timed(
        "    - id: renewal
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: x
        data:
          at: ${time.now()}
",
    );
    let refused = build_timed(&bare, true).expect_err("a bare time value");
    assert!(
        refused.errors[0].to_string().contains("kro.Timestamp"),
        "{}",
        refused.errors[0]
    );
    let named_time = timed(
        "    - id: time
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: x
",
    );
    let refused = build_timed(&named_time, true).expect_err("reserved with the gate");
    assert_eq!(refused.errors[0].kind.reason(), "ReservedResourceId");
    build_timed(&named_time, false).unwrap_or_else(|errors| panic!("{errors}"));
}

#[test]
fn a_lifecycle_cannot_read_the_time() {
    let refused = build_timed(
        &timed(
            "    - id: kept
      lifecycle: \"${time.now() > timestamp(schema.spec.notAfter) ? policy().withRetain() : policy()}\"
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: x
",
        ),
        true,
    )
    .expect_err("a lifecycle reading the time");
    assert_eq!(refused.errors[0].kind.reason(), "InvalidLifecycle");
    assert!(
        refused.errors[0].to_string().contains("reads time"),
        "{}",
        refused.errors[0]
    );
}
