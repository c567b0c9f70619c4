//! examples/workers written in Rust: a collection in the seed's form (one Deployment per
//! item of `spec.queues`, read as `each_item`), per-item readiness typed by the kind
//! (`ready_when_each`), and a ConfigMap listing the workers (the collection read as a typed
//! list). `cargo run -p kro-compose --example workers` prints the RGD, which has the same
//! graph and CRD as `examples/workers/rgd.yaml`.

// The shared builders; this example needs one of them.
#[allow(dead_code)]
#[path = "shared/workloads.rs"]
mod workloads;

use kro_compose::k8s::api::apps::v1::Deployment;
use kro_compose::k8s::api::core::v1::Container;
use kro_compose::{Composition, KroSchema, Value, fmt_cel, instance_name, spec};
use serde_json::json;
use workloads::labelled_deployment;

/// What a worker pool is asked for.
#[derive(KroSchema)]
pub struct WorkerPoolSpec {
    /// The worker image.
    #[kro(default = "busybox:1.36")]
    pub image: String,
    /// Optional, as the example declares it (`"[]string"`, no `required=true`).
    pub queues: Option<Vec<String>>,
}

/// What an instance reports.
#[derive(KroSchema)]
pub struct WorkerPoolStatus {
    /// How many workers there are.
    pub workers: i64,
    /// Their names, comma-separated.
    pub names: String,
}

/// The composition: examples/workers.
pub fn composition() -> Composition<WorkerPoolSpec, WorkerPoolStatus> {
    let pool = spec::<WorkerPoolSpec>();
    let queue = kro_compose::each_item::<String>();
    let mut composition = Composition::new("workerpool", "WorkerPool");
    let workers = composition.add(
        "workers",
        labelled_deployment(
            instance_name().concat("-").concat(queue.clone()),
            ("queue", &queue),
            1,
            Container {
                name: "worker".into(),
                image: pool.image().into(),
                args: ["consume".into(), Value::from(&queue)].into(),
                ..Default::default()
            },
        ),
    );
    composition.for_each_item(&workers, &pool.queues());
    composition.ready_when_each(&workers, |each| each.status().ready_replicas().eq(1));
    let all = workers.collection::<Deployment>();
    let names = all.map(|worker| worker.metadata().name()).join(",");
    composition.add(
        "roster",
        json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": instance_name().concat("-roster")},
            "data": {"workers": names, "count": fmt_cel!("{}", all.size())},
        }),
    );
    composition.status(WorkerPoolStatusValues {
        workers: all.size().into(),
        names: names.into(),
    });
    composition
}

fn main() -> Result<(), kro_compose::ComposeError> {
    print!("{}", composition().to_rgd_yaml()?);
    Ok(())
}
