//! RGDs that read the time (gate `CELTimeFunctions`), planned as the controller plans them on
//! a clock the test moves: each plan says when its answers change (`requeue_at`), and planning
//! again at exactly that instant shows the change. No sleeps: the clock is a value.

use kro_cel::Timestamp;
use kro_graph::{
    BuildConfig, BuiltinCatalog, CompiledGraph, Feature, FeatureGates, build_graph_with,
    parse_yaml_documents,
};
use kro_runtime::{NodeState, Observed, Plan, PlanOptions, converge};
use serde_json::{Value, json};

fn graph(yaml: &str) -> CompiledGraph {
    let documents = parse_yaml_documents(yaml).expect("YAML");
    let rgd = documents[0].to_resource_graph_definition().expect("an RGD");
    let config = BuildConfig {
        features: FeatureGates::default().with(Feature::CelTimeFunctions, true),
        ..BuildConfig::default()
    };
    build_graph_with(&rgd, &BuiltinCatalog, &config).unwrap_or_else(|errors| panic!("{errors}"))
}

fn at(text: &str) -> Timestamp {
    Timestamp::parse(text).expect("RFC 3339")
}

/// The plan at `now`, every planned object taken as applied.
fn plan_at(graph: &CompiledGraph, instance: &Value, now: &str) -> Plan {
    let options = PlanOptions {
        clock: Some(at(now)),
        now: Some(now.to_owned()),
        ..PlanOptions::default()
    };
    converge(graph, instance, Observed::complete(), &options, 20).plan
}

fn state(plan: &Plan, id: &str) -> String {
    match &plan.node(id).expect("the node").state {
        NodeState::Ready => "Ready".to_owned(),
        NodeState::Skipped(_) => "Skipped".to_owned(),
        other => format!("{other:?}"),
    }
}

fn requeue(plan: &Plan) -> Option<String> {
    plan.requeue_at.map(|at| at.to_string())
}

fn instance(spec: Value) -> Value {
    json!({
        "apiVersion": "kro.run/v1alpha1", "kind": "Timed",
        "metadata": {"name": "demo", "namespace": "default", "uid": "u-1",
            "creationTimestamp": "2026-03-01T00:00:00Z"},
        "spec": spec,
    })
}

const HEADER: &str = "apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: timed
spec:
  schema:
    apiVersion: v1alpha1
    kind: Timed
";

#[test]
fn a_grace_period_ends_at_its_instant_and_nothing_is_asked_before() {
    let graph = graph(&format!(
        "{HEADER}    spec:
      graceHours: integer | default=2
    status:
      expired: ${{string(cleanup.data.expired)}}
  resources:
    - id: cleanup
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: demo-grace
        data:
          expired: \"${{string(time.now() - schema.metadata.creationTimestamp > duration(string(schema.spec.graceHours) + 'h'))}}\"
          checkedAt: ${{string(time.now())}}
"
    ));
    let demo = instance(json!({"graceHours": 2}));
    let early = plan_at(&graph, &demo, "2026-03-01T00:30:00Z");
    let object = &early.node("cleanup").expect("node").desired[0].object;
    assert_eq!(object["data"]["expired"], "false");
    assert_eq!(object["data"]["checkedAt"], "2026-03-01T00:30:00Z");
    // The grace period ends 2h after creation: the flip is the next nanosecond.
    assert_eq!(
        requeue(&early).as_deref(),
        Some("2026-03-01T02:00:00.000000001Z")
    );
    let flipped = plan_at(&graph, &demo, "2026-03-01T02:00:00.000000001Z");
    let object = &flipped.node("cleanup").expect("node").desired[0].object;
    assert_eq!(object["data"]["expired"], "true");
    assert_eq!(requeue(&flipped), None, "nothing changes any more");
}

#[test]
fn a_certificate_is_renewed_by_include_when_thirty_days_before_it_expires() {
    let graph = graph(&format!(
        "{HEADER}    spec:
      notAfter: string
  resources:
    - id: renewal
      includeWhen:
        - ${{time.now() >= timestamp(schema.spec.notAfter) - duration('720h')}}
      template:
        apiVersion: batch/v1
        kind: Job
        metadata:
          name: demo-renew
        spec:
          template:
            spec:
              restartPolicy: Never
              containers:
                - name: renew
                  image: certbot:2
"
    ));
    let demo = instance(json!({"notAfter": "2026-06-30T12:00:00Z"}));
    let before = plan_at(&graph, &demo, "2026-05-01T00:00:00Z");
    assert_eq!(state(&before, "renewal"), "Skipped");
    assert_eq!(requeue(&before).as_deref(), Some("2026-05-31T12:00:00Z"));
    let due = plan_at(&graph, &demo, "2026-05-31T12:00:00Z");
    assert_eq!(state(&due, "renewal"), "Ready");
    assert_eq!(requeue(&due), None);
    // Renewed (a later notAfter): skipped again, and due again 30 days before the new date.
    let renewed = instance(json!({"notAfter": "2026-09-28T12:00:00Z"}));
    let after = plan_at(&graph, &renewed, "2026-06-01T00:00:00Z");
    assert_eq!(state(&after, "renewal"), "Skipped");
    assert_eq!(requeue(&after).as_deref(), Some("2026-08-29T12:00:00Z"));
}

#[test]
fn a_business_hours_window_opens_and_closes_on_local_time_across_a_dst_change() {
    let graph = graph(&format!(
        "{HEADER}    spec:
      zone: string | default=Europe/Berlin
  resources:
    - id: scaler
      template:
        apiVersion: apps/v1
        kind: Deployment
        metadata:
          name: demo
        spec:
          replicas: \"${{time.now() >= time.now().withTime({{'hours': 9}}, schema.spec.zone) && time.now() < time.now().withTime({{'hours': 17}}, schema.spec.zone) ? 3 : 0}}\"
          selector:
            matchLabels: {{app: demo}}
          template:
            metadata:
              labels: {{app: demo}}
            spec:
              containers:
                - name: app
                  image: nginx:1
"
    ));
    let demo = instance(json!({"zone": "Europe/Berlin"}));
    // Follow the controller from Saturday evening to Sunday evening across the change from
    // CET to CEST (2026-03-29T01:00:00Z): every plan at the requeue instant of the one before.
    let mut now = "2026-03-28T17:30:00Z".to_owned();
    let mut seen = Vec::new();
    for _ in 0..4 {
        let planned = plan_at(&graph, &demo, &now);
        let replicas =
            planned.node("scaler").expect("node").desired[0].object["spec"]["replicas"].clone();
        let next = requeue(&planned).expect("a next change");
        seen.push(format!("{now}: {replicas} until {next}"));
        now = next;
    }
    assert_eq!(
        seen,
        [
            // 18:30 CET: closed until the local day ends.
            "2026-03-28T17:30:00Z: 0 until 2026-03-28T23:00:00Z",
            // Sunday 00:00 CET: opens at 09:00 CEST, which is 07:00Z after the change.
            "2026-03-28T23:00:00Z: 0 until 2026-03-29T07:00:00Z",
            "2026-03-29T07:00:00Z: 3 until 2026-03-29T15:00:00Z",
            "2026-03-29T15:00:00Z: 0 until 2026-03-29T22:00:00Z",
        ]
    );
}

#[test]
fn a_graph_that_reads_no_time_asks_for_no_requeue() {
    let graph = graph(&format!(
        "{HEADER}  resources:
    - id: config
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: demo
"
    ));
    assert!(!graph.reads_time);
    let planned = plan_at(&graph, &instance(json!({})), "2026-01-01T00:00:00Z");
    assert_eq!(requeue(&planned), None);
}
