//! A `<Kind>Set` of 20,000 instances created and scaled to 0 (issue 39, item 4).
//!
//! `cargo bench -p kro-controller --bench set_scale` runs the embedded API server with its
//! simulated cluster, an RGD of one ConfigMap per instance (`KRO_BENCH_SET_RGD=web`: the Set
//! tests' RGD of one Deployment per instance, whose ReplicaSets and Pods the simulated
//! cluster runs too) and the controllers, then:
//! 1. creates a Set of `KRO_BENCH_SET_REPLICAS` (default 20,000) and times its first status;
//! 2. `KRO_BENCH_SET_SCALE_AFTER` seconds after the creation (default 10), or once every
//!    instance exists with `KRO_BENCH_SET_SCALE_AFTER=all`, scales it to 0 and times when the
//!    creates stop (the last create the server served), and when the Set's status follows the
//!    new spec (its `observedGeneration`);
//! 3. times until no instance of the Set is left (each deleted the kro way: its ConfigMap
//!    first, then its finalizer).
//!
//! Prints the figures next to the acceptance targets (status within 10 s of creation, a scale
//! to 0 obeyed within 5 s, empty within 2 minutes); exits with a failure when one is missed.

#[path = "../tests/common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use common::{Cluster, WEB_SET_RGD, at, cluster_at};
use kube::api::ListParams;
use serde_json::json;

const RGD_API: &str = "kro.run/v1alpha1";

/// One ConfigMap per instance: the Set controller and the instance controller, little else.
const TENANT_SET_RGD: &str = r#"
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata: {name: tenants}
spec:
  scaling: {kind: TenantSet, method: replicas}
  schema:
    apiVersion: v1alpha1
    kind: Tenant
    spec:
      plan: string | default="free"
  resources:
    - id: settings
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: "${schema.metadata.name}"}
        data: {plan: "${schema.spec.plan}"}
"#;

/// The RGD the bench runs: its YAML, its name, the instance kind's plural and the Set kind.
struct Shape {
    rgd: &'static str,
    name: &'static str,
    plural: &'static str,
    instance_kind: &'static str,
    set_kind: &'static str,
}

const TENANTS: Shape = Shape {
    rgd: TENANT_SET_RGD,
    name: "tenants",
    plural: "tenants",
    instance_kind: "Tenant",
    set_kind: "TenantSet",
};

const WEBS: Shape = Shape {
    rgd: WEB_SET_RGD,
    name: "webs",
    plural: "webs",
    instance_kind: "Web",
    set_kind: "WebSet",
};

/// When the Set is scaled to 0.
enum ScaleAt {
    /// This long after its creation.
    After(Duration),
    /// Once its status counts every replica.
    All,
}

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(default)
}

/// Creates served so far of the instance kind.
fn creates(cluster: &Cluster, shape: &Shape) -> u64 {
    verb_count(cluster, shape, "create")
}

fn verb_count(cluster: &Cluster, shape: &Shape, verb: &str) -> u64 {
    cluster
        .server()
        .request_counts()
        .get(&(verb.to_owned(), shape.plural.to_owned()))
        .copied()
        .unwrap_or(0)
}

/// Whether some instance of the Set is left.
async fn any_left(cluster: &Cluster, shape: &Shape) -> bool {
    let served = cluster
        .kind_of(&json!({"apiVersion": RGD_API, "kind": shape.instance_kind}))
        .await;
    let list = served
        .api(&cluster.client, Some("default"))
        .list(
            &ListParams::default()
                .labels("kro.run/set-name=big")
                .limit(1),
        )
        .await
        .expect("LIST");
    !list.items.is_empty()
}

fn seconds(duration: Duration) -> String {
    format!("{:.2} s", duration.as_secs_f64())
}

fn main() {
    let replicas: u64 = env_or("KRO_BENCH_SET_REPLICAS", 20_000);
    let shape = match std::env::var("KRO_BENCH_SET_RGD").as_deref() {
        Ok("web") => &WEBS,
        _ => &TENANTS,
    };
    let scale_at = match std::env::var("KRO_BENCH_SET_SCALE_AFTER").as_deref() {
        Ok("all") => ScaleAt::All,
        _ => ScaleAt::After(Duration::from_secs_f64(env_or(
            "KRO_BENCH_SET_SCALE_AFTER",
            10.0,
        ))),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let met = runtime.block_on(async {
        let cluster = Cluster::start().await;
        cluster.apply_yaml(shape.rgd).await;
        cluster
            .wait_state(
                cluster_at(RGD_API, "ResourceGraphDefinition", shape.name),
                "Active",
            )
            .await;
        let set = at(RGD_API, shape.set_kind, "big");
        let created = Instant::now();
        cluster
            .apply(&json!({"apiVersion": RGD_API, "kind": shape.set_kind,
                "metadata": {"name": "big", "namespace": "default"},
                "spec": {"replicas": replicas, "template": {"spec": {}}}}))
            .await;
        // 1. The first status.
        let mut first_status = None;
        let last = loop {
            let object = cluster.get(set).await;
            let has_status = object
                .as_ref()
                .is_some_and(|object| !object["status"]["observedGeneration"].is_null());
            if has_status && first_status.is_none() {
                first_status = Some(created.elapsed());
                println!(
                    "first status after {} (status.replicas {}, {} creates served)",
                    seconds(created.elapsed()),
                    object
                        .as_ref()
                        .map_or(json!(null), |object| object["status"]["replicas"].clone()),
                    creates(&cluster, shape)
                );
            }
            let scale_now = match scale_at {
                ScaleAt::After(after) => first_status.is_some() && created.elapsed() >= after,
                ScaleAt::All => object
                    .as_ref()
                    .is_some_and(|object| object["status"]["replicas"] == replicas),
            };
            if scale_now {
                break object;
            }
            assert!(
                created.elapsed() < Duration::from_secs(1_800),
                "not ready to scale after 30 minutes: {object:?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        let first_status = first_status.unwrap_or_default();
        println!(
            "scaling to 0 {} after creation: status.replicas {}, {} creates served",
            seconds(created.elapsed()),
            last.as_ref()
                .map_or(json!(null), |object| object["status"]["replicas"].clone()),
            creates(&cluster, shape)
        );
        // 2. Scale to 0.
        let scaled = Instant::now();
        let generation =
            cluster.merge(set, json!({"spec": {"replicas": 0}})).await["metadata"]["generation"]
                .clone();
        let creates_at_scale = creates(&cluster, shape);
        let mut last_create = Duration::ZERO;
        let mut create_count = creates_at_scale;
        let mut followed = None;
        let mut status_zero = None;
        let mut empty = None;
        while empty.is_none() {
            let now = creates(&cluster, shape);
            if now > create_count {
                create_count = now;
                last_create = scaled.elapsed();
            }
            if followed.is_none() || status_zero.is_none() {
                let object = cluster.get(set).await.unwrap_or_default();
                if followed.is_none() && object["status"]["observedGeneration"] == generation {
                    followed = Some(scaled.elapsed());
                    println!(
                        "status follows the scale to 0 after {} (status.replicas {})",
                        seconds(scaled.elapsed()),
                        object["status"]["replicas"]
                    );
                }
                if status_zero.is_none()
                    && object["status"]["observedGeneration"] == generation
                    && object["status"]["replicas"] == 0
                {
                    status_zero = Some(scaled.elapsed());
                }
            } else if !any_left(&cluster, shape).await {
                empty = Some(scaled.elapsed());
            } else {
                // A LIST by label costs the server a pass over every instance: not too often.
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            assert!(
                scaled.elapsed() < Duration::from_secs(1_800),
                "not empty 30 minutes after the scale to 0"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let followed = followed.unwrap_or_default();
        let empty = empty.unwrap_or_default();
        let obeyed = followed.max(last_create);
        println!(
            "creates after the scale: {} (the last {} after it); deletes served: {}",
            create_count - creates_at_scale,
            seconds(last_create),
            verb_count(&cluster, shape, "delete")
        );
        println!(
            "status.replicas 0 after {}; empty after {}",
            seconds(status_zero.unwrap_or_default()),
            seconds(empty)
        );
        // A create answered 409 found its random name taken; a delete answered 404 found the
        // instance gone.
        let answers: Vec<String> = cluster
            .metrics
            .encode()
            .lines()
            .filter(|line| {
                line.starts_with("rest_client_requests_by_verb_total{verb=\"create\"")
                    || line.starts_with("rest_client_requests_by_verb_total{verb=\"delete\"")
            })
            .map(|line| {
                line.trim_start_matches("rest_client_requests_by_verb_total")
                    .to_owned()
            })
            .collect();
        println!("the controllers' creates and deletes (all kinds) by answer: {answers:?}");
        println!();
        println!(
            "| {replicas} replicas ({}) | measured | target |",
            shape.set_kind
        );
        println!("|---|---|---|");
        println!(
            "| first status after creation | {} | 10 s |",
            seconds(first_status)
        );
        println!(
            "| scale to 0 obeyed (creates stopped, status follows the spec) | {} | 5 s |",
            seconds(obeyed)
        );
        println!(
            "| empty after the scale to 0 | {} | 120 s |",
            seconds(empty)
        );
        cluster.stop().await;
        first_status <= Duration::from_secs(10)
            && obeyed <= Duration::from_secs(5)
            && empty <= Duration::from_secs(120)
    });
    if !met {
        eprintln!("a figure missed its target");
        std::process::exit(1);
    }
}
