//! The replica set controller: as many active pods as `spec.replicas` (created from the
//! template with the set as their controller, surplus ones deleted least ready first), and
//! the status counts (`replicas`, `fullyLabeledReplicas`, `readyReplicas`,
//! `availableReplicas`, `observedGeneration`), with the controller's events.

use std::sync::Arc;

use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::watcher;
use serde_json::{Value, json};
use tokio::sync::watch;

use super::pod_sets::{PodSet, availability, min_ready};
use super::support::{
    Context, PodName, Reconciled, controller_reference, drive, pod_from_template, pod_ready,
    to_json,
};

/// The events' source.
const COMPONENT: &str = "replicaset-controller";

/// Runs the replica set controller until `stop`.
pub(super) async fn run(context: Arc<Context>, stop: watch::Receiver<bool>) {
    let sets: Api<ReplicaSet> = Api::all(context.client.clone());
    let pods: Api<Pod> = Api::all(context.client.clone());
    let controller =
        Controller::new(sets, watcher::Config::default()).owns(pods, watcher::Config::default());
    drive("replicasets", controller, reconcile, context, stop).await;
}

async fn reconcile(set: Arc<ReplicaSet>, context: Arc<Context>) -> Reconciled {
    let spec = set.spec.clone().unwrap_or_default();
    let Some(pod_set) = PodSet::adopting(&context, set.as_ref(), &spec.selector).await? else {
        return Ok(Action::await_change());
    };
    let PodSet {
        namespace,
        name,
        api: pod_api,
        ..
    } = &pod_set;
    let active = pod_set.active();
    let desired = usize::try_from(spec.replicas.unwrap_or(1).max(0)).unwrap_or(0);
    if active.len() < desired {
        let template = to_json(&spec.template);
        let owner = controller_reference(set.as_ref())?;
        for _ in active.len()..desired {
            let pod = pod_from_template(&template, PodName::Generated(name), &[], &owner)?;
            match pod_api.create(&context.post_params(), &pod).await {
                Ok(created) => {
                    let message = format!("Created pod: {}", created.name_any());
                    context
                        .event(set.as_ref(), COMPONENT, false, "SuccessfulCreate", &message)
                        .await;
                }
                Err(error) => {
                    let message = format!("Error creating: {error}");
                    context
                        .event(set.as_ref(), COMPONENT, true, "FailedCreate", &message)
                        .await;
                    return Err(error.into());
                }
            }
        }
    } else if active.len() > desired {
        // The least useful go first: unscheduled, then not ready, then the newest.
        let mut doomed = active.clone();
        doomed.sort_by_key(|pod| {
            let scheduled = pod
                .spec
                .as_ref()
                .is_some_and(|spec| spec.node_name.is_some());
            let created = pod
                .metadata
                .creation_timestamp
                .as_ref()
                .map(|time| std::cmp::Reverse(time.0));
            (scheduled, pod_ready(pod), created)
        });
        for pod in doomed.into_iter().take(active.len() - desired) {
            if pod_set
                .delete(&pod.name_any(), &DeleteParams::default())
                .await?
            {
                let message = format!("Deleted pod: {}", pod.name_any());
                context
                    .event(set.as_ref(), COMPONENT, false, "SuccessfulDelete", &message)
                    .await;
            }
        }
    }
    let (ready, available, next) = availability(&active, min_ready(spec.min_ready_seconds));
    let template_labels = spec
        .template
        .as_ref()
        .and_then(|template| template.metadata.as_ref())
        .and_then(|metadata| metadata.labels.clone())
        .unwrap_or_default();
    let fully_labeled = active
        .iter()
        .filter(|pod| {
            template_labels
                .iter()
                .all(|(key, value)| pod.labels().get(key) == Some(value))
        })
        .count();
    let current = to_json(&set.status);
    let mut status = json!({
        "replicas": active.len(),
        "observedGeneration": set.metadata.generation.unwrap_or(0),
    });
    for (field, count) in [
        (
            "fullyLabeledReplicas",
            i64::try_from(fully_labeled).unwrap_or(0),
        ),
        ("readyReplicas", ready),
        ("availableReplicas", available),
    ] {
        if count > 0 {
            status[field] = json!(count);
        }
    }
    if let Some(conditions) = current.get("conditions").filter(|value| !value.is_null()) {
        status["conditions"] = conditions.clone();
    }
    let sets: Api<ReplicaSet> = Api::namespaced(context.client.clone(), namespace);
    context
        .write_status(&sets, name, &normalized(&current), status)
        .await?;
    Ok(next.map_or_else(Action::await_change, Action::requeue))
}

/// A status as the server returns it, for comparison (`Null` when absent).
pub(super) fn normalized(status: &Value) -> Value {
    if status.is_object() {
        status.clone()
    } else {
        json!({})
    }
}
