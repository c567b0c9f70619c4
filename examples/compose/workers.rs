//! examples/workers written in Rust: a collection in the seed's form (one Deployment per
//! item of `spec.queues`, read as `each_item`), per-item readiness, and a ConfigMap listing the
//! workers. `cargo run -p kro-compose --example workers` prints the RGD, which has the same
//! graph and CRD as `examples/workers/rgd.yaml`.

use kro_compose::{Composition, KroSchema, instance_name, spec};
use serde_json::json;

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
        json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {
                "name": instance_name().concat("-").concat(queue.clone()),
                "labels": {"queue": queue},
            },
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": {"queue": queue}},
                "template": {
                    "metadata": {"labels": {"queue": queue}},
                    "spec": {"containers": [{
                        "name": "worker",
                        "image": pool.image(),
                        "args": ["consume", queue],
                    }]},
                },
            },
        }),
    );
    composition.for_each_item(&workers, &pool.queues());
    composition.ready_when(
        &workers,
        &kro_compose::Ref::<bool>::raw("each.status.readyReplicas == 1"),
    );
    let names: kro_compose::Ref<String> =
        kro_compose::cel!("workers.map(w, w.metadata.name).join(',')");
    let count: kro_compose::Ref<String> = kro_compose::cel!("string(size(workers))");
    composition.add(
        "roster",
        json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": instance_name().concat("-roster")},
            "data": {"workers": names, "count": count},
        }),
    );
    let size: kro_compose::Ref<i64> = kro_compose::cel!("size(workers)");
    composition.status(WorkerPoolStatusValues {
        workers: size.into(),
        names: names.into(),
    });
    composition
}

fn main() -> Result<(), kro_compose::ComposeError> {
    print!("{}", composition().to_rgd_yaml()?);
    Ok(())
}
