//! The examples against the embedded API server with its simulated cluster: each plan's
//! objects are applied level by level (server-side apply, as kro applies them) and read back
//! until the instance is ACTIVE. The readyWhen expressions of the examples read status the
//! simulated controllers write — available replicas, a StatefulSet's ready replicas, a Job's
//! succeeded pods — so this shows an RGD behaving in the sandbox as on a cluster.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use kro_apiserver::{ServerConfig, Simulators};
use kro_graph::{BuiltinCatalog, CompiledGraph, SchemaSources, build_graph, parse_yaml_documents};
use kro_runtime::{InstanceState, Observed, PlanOptions, admit, plan};
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams};
use kube::discovery::Discovery;
use serde_json::Value;

fn read_example(name: &str) -> (CompiledGraph, Value) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name);
    let text = std::fs::read_to_string(dir.join("rgd.yaml")).expect("the RGD");
    let documents = parse_yaml_documents(&text).expect("YAML");
    let rgd = documents[0].to_resource_graph_definition().expect("an RGD");
    let graph = build_graph(&rgd, &SchemaSources::new().with(BuiltinCatalog)).expect("it compiles");
    let text = std::fs::read_to_string(dir.join("instance.yaml")).expect("the instance");
    let mut instance = parse_yaml_documents(&text).expect("YAML")[0].value.clone();
    instance["metadata"]["uid"] = serde_json::json!(format!("uid-{name}"));
    instance["metadata"]["generation"] = serde_json::json!(1);
    let admitted = admit(&graph, &instance).expect("a valid instance");
    (graph, admitted.instance)
}

/// Applies plans until the instance is ACTIVE; returns how long it took and how many objects
/// were applied.
async fn run_to_active(
    client: &kube::Client,
    kinds: &BTreeMap<(String, String), ApiResource>,
    name: &str,
) -> (Duration, usize) {
    let (graph, instance) = read_example(name);
    let mut observed = Observed::new();
    let options = PlanOptions::default();
    let params = PatchParams::apply("kro.run/applyset").force();
    let started = Instant::now();
    let mut applied = std::collections::BTreeSet::new();
    loop {
        let current = plan(&graph, &instance, &observed, &options);
        if current.status.state == InstanceState::Active {
            return (started.elapsed(), applied.len());
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{name} is not ACTIVE after 60 s: {:?}",
            current.status
        );
        assert_ne!(
            current.status.state,
            InstanceState::Error,
            "{name}: {:?}",
            current.status
        );
        let mut next = Observed::new();
        for desired in current.nodes.iter().flat_map(|node| &node.desired) {
            let key = &desired.key;
            let resource = kinds
                .get(&(key.group.clone(), key.kind.clone()))
                .unwrap_or_else(|| panic!("{name}: {}/{} is not served", key.group, key.kind));
            let namespace = key.namespace.as_deref().unwrap_or("default");
            let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, resource);
            let object = api
                .patch(&key.name, &params, &Patch::Apply(&desired.object))
                .await
                .unwrap_or_else(|error| panic!("{name}: apply {key:?}: {error}"));
            applied.insert(format!("{key:?}"));
            next.insert(serde_json::to_value(object).expect("JSON"));
        }
        observed = next;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_example_becomes_active_on_the_simulated_cluster() {
    let server = kro_apiserver::start(ServerConfig {
        token: None,
        tls: false,
        simulators: Simulators::all(),
        ..ServerConfig::default()
    })
    .await
    .expect("the server starts");
    let client = kube::Client::try_from(kube::Config::new(server.url().parse().expect("URL")))
        .expect("a client");
    let discovery = Discovery::new(client.clone())
        .run()
        .await
        .expect("discovery");
    let mut kinds = BTreeMap::new();
    for group in discovery.groups() {
        for (resource, _) in group.recommended_resources() {
            kinds.insert((resource.group.clone(), resource.kind.clone()), resource);
        }
    }
    for name in [
        "webapp",
        "workers",
        "data-node",
        "stack",
        "scalable-web",
        "site-set",
    ] {
        let (took, objects) = run_to_active(&client, &kinds, name).await;
        eprintln!("{name}: ACTIVE after {took:?}, {objects} objects applied");
    }
}
