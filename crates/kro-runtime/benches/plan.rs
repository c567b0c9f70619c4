//! Planning one instance of a 50-resource, 6-level RGD whose collections have 100 items
//! each (issue 7): one plan over a cluster where everything is applied, so every node is
//! rendered, observed, converted and checked for readiness.
//!
//! `cargo bench -p kro-runtime --bench plan`. The baseline in the same group deep-copies the
//! desired objects the plan produces: the cost of merely holding the output, against which
//! the plan's evaluation cost reads as a ratio. `plan/observed` makes the same plan with a
//! [`PlanObserver`] counting what it reports (the controller's metrics do as much), for the
//! cost of observing.

use std::fmt::Write as _;
use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use kro_graph::{BuiltinCatalog, SchemaSources, build_graph, parse_yaml_documents};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use kro_runtime::{Observed, PlanObserver, PlanOptions, converge, plan};
use serde_json::{Value, json};

const LEVELS: usize = 6;
const RESOURCES: usize = 50;
const ITEMS: usize = 100;

/// Counts what a plan reports, and sums the times, as the controller's metrics do.
#[derive(Debug, Default)]
struct Counting {
    events: AtomicU64,
    nanos: AtomicU64,
}

impl Counting {
    fn took(&self, elapsed: Duration) {
        self.events.fetch_add(1, Ordering::Relaxed);
        let nanos = u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX);
        self.nanos.fetch_add(nanos, Ordering::Relaxed);
    }
}

impl PlanObserver for Counting {
    fn planner_created(&self, elapsed: Duration) {
        self.took(elapsed);
    }
    fn node_evaluated(&self, elapsed: Duration, _failed: bool) {
        self.took(elapsed);
    }
    fn ready_checked(&self, _ready: bool) {
        self.events.fetch_add(1, Ordering::Relaxed);
    }
    fn expression_evaluated(&self, elapsed: Duration) {
        self.took(elapsed);
    }
}

/// Level 0 holds the roots; every other resource reads one resource of the level before.
/// Every fifth resource is a collection of `ITEMS` ConfigMaps.
fn rgd() -> String {
    let mut text = String::from(
        "apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata: {name: big}
spec:
  schema:
    apiVersion: v1alpha1
    kind: Big
    spec:
      items: \"[]string\"
      replicas: integer | default=2
    status:
      total: ${size(r4)}
  resources:
",
    );
    let per_level = RESOURCES / LEVELS + 1;
    for index in 0..RESOURCES {
        let level = (index / per_level).min(LEVELS - 1);
        let parent = (level > 0).then(|| (level - 1) * per_level);
        let name = match parent {
            Some(parent) if (parent % 5) == 4 => {
                format!("${{r{parent}[0].metadata.name}}-r{index}")
            }
            Some(parent) => format!("${{r{parent}.metadata.name}}-r{index}"),
            None => format!("${{schema.metadata.name}}-r{index}"),
        };
        if index % 5 == 4 {
            let _ = write!(
                text,
                "    - id: r{index}
      forEach: ${{schema.spec.items}}
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: \"{name}-${{each.item}}\"
          labels: {{item: \"${{each.item}}\", index: \"${{string(each.index)}}\"}}
        data:
          replicas: ${{string(schema.spec.replicas)}}
          position: ${{string(each.index) + '/' + string(each.length)}}
"
            );
        } else {
            let _ = write!(
                text,
                "    - id: r{index}
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: \"{name}\"
        data:
          replicas: ${{string(schema.spec.replicas * 2)}}
          owner: ${{schema.metadata.name}}
"
            );
        }
    }
    text
}

fn planning(c: &mut Criterion) {
    let text = rgd();
    let documents = parse_yaml_documents(&text).unwrap_or_else(|error| panic!("{error}"));
    let rgd = documents[0]
        .to_resource_graph_definition()
        .unwrap_or_else(|error| panic!("{error}"));
    let graph = build_graph(&rgd, &SchemaSources::new().with(BuiltinCatalog))
        .unwrap_or_else(|errors| panic!("{errors}"));
    assert_eq!(
        graph.levels.len(),
        LEVELS,
        "the RGD has {} levels",
        graph.levels.len()
    );
    let items: Vec<String> = (0..ITEMS).map(|item| format!("item{item}")).collect();
    let instance = json!({
        "apiVersion": "kro.run/v1alpha1", "kind": "Big",
        "metadata": {"name": "big", "namespace": "default", "uid": "u-1", "generation": 1},
        "spec": {"items": items, "replicas": 2}
    });
    let options = PlanOptions::default();
    // Everything applied: the plan renders and checks every node.
    let converged = converge(&graph, &instance, Observed::new(), &options, 20);
    let observed = converged.observed;
    let full = plan(&graph, &instance, &observed, &options);
    assert!(
        full.is_ready(),
        "not every node is ready: {:?}",
        full.nodes.iter().find(|node| !node.state.is_settled())
    );
    let objects: Vec<Value> = full
        .nodes
        .iter()
        .flat_map(|node| node.desired.iter().map(|desired| desired.object.clone()))
        .collect();
    println!(
        "plan: {} nodes in {} levels, {} desired objects",
        full.nodes.len(),
        full.levels.len(),
        objects.len()
    );

    let mut group = c.benchmark_group("plan_50_resources_6_levels_100_items");
    group.bench_function("baseline/clone_desired_objects", |b| {
        b.iter(|| black_box(&objects).clone())
    });
    group.bench_function("plan", |b| {
        b.iter(|| plan(black_box(&graph), black_box(&instance), &observed, &options))
    });
    let counting = Arc::new(Counting::default());
    let observing = PlanOptions {
        observer: Some(counting.clone()),
        ..options.clone()
    };
    group.bench_function("plan/observed", |b| {
        b.iter(|| {
            plan(
                black_box(&graph),
                black_box(&instance),
                &observed,
                &observing,
            )
        })
    });
    println!(
        "observed: {} events reported",
        counting.events.load(Ordering::Relaxed)
    );
    group.finish();
}

criterion_group!(benches, planning);
criterion_main!(benches);
