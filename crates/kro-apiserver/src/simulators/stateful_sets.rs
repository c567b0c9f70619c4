//! The stateful set and daemon set controllers.
//!
//! A StatefulSet gets pods `<name>-0 … <name>-(n-1)` (with `OrderedReady`, one at a time,
//! each after the ones before it are Ready; with `Parallel`, all at once), a claim per
//! volume claim template and pod (`<template>-<name>-<ordinal>`), rolling updates from the
//! highest ordinal down, and its status with `currentRevision`/`updateRevision`.
//! A DaemonSet gets one pod on the simulated node, replaced when its template changes.
//! Both keep a ControllerRevision history of their templates (see [`super::revisions`]).

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::sync::Arc;

use k8s_openapi::api::apps::v1::{ControllerRevision, DaemonSet, StatefulSet};
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use kube::api::{Api, DeleteParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::watcher;
use kube::{Resource, ResourceExt};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio::sync::watch;

use super::pod_sets::{PodSet, availability, min_ready};
use super::replica_sets::normalized;
use super::revisions::{Keeper, prunable, prune_history, sync_history};
use super::support::{
    Context, PodName, ReconcileError, Reconciled, controller_reference, drive, pod_active,
    pod_from_template, pod_ready, to_json,
};

/// The label naming a pod's revision of its controller's template.
const REVISION_LABEL: &str = "controller-revision-hash";

/// Runs the stateful set controller until `stop`.
pub(super) async fn run(context: Arc<Context>, stop: watch::Receiver<bool>) {
    let sets: Api<StatefulSet> = Api::all(context.client.clone());
    let pods: Api<Pod> = Api::all(context.client.clone());
    let controller =
        Controller::new(sets, watcher::Config::default()).owns(pods, watcher::Config::default());
    drive(
        "statefulsets",
        controller,
        reconcile_stateful,
        context,
        stop,
    )
    .await;
}

/// Runs the daemon set controller until `stop`.
pub(super) async fn run_daemon_sets(context: Arc<Context>, stop: watch::Receiver<bool>) {
    let sets: Api<DaemonSet> = Api::all(context.client.clone());
    let pods: Api<Pod> = Api::all(context.client.clone());
    let controller =
        Controller::new(sets, watcher::Config::default()).owns(pods, watcher::Config::default());
    drive("daemonsets", controller, reconcile_daemon, context, stop).await;
}

/// `set` as the server has it now (`None` when it is gone or was replaced): the watch cache a
/// reconcile starts from may not hold this controller's last status write yet, and a status
/// computed from it would take back what that write recorded (such as `collisionCount`).
async fn latest<K>(api: &Api<K>, set: &K) -> Result<Option<K>, ReconcileError>
where
    K: Resource + Clone + DeserializeOwned + Debug,
{
    let latest = api.get_opt(&set.name_any()).await?;
    Ok(latest.filter(|latest| latest.meta().uid == set.meta().uid))
}

fn revision_label(pod: &Pod) -> Option<&String> {
    pod.labels().get(REVISION_LABEL)
}

async fn reconcile_stateful(set: Arc<StatefulSet>, context: Arc<Context>) -> Reconciled {
    let spec = set.spec.clone().unwrap_or_default();
    let Some(pod_set) = PodSet::adopting(&context, set.as_ref(), &spec.selector).await? else {
        return Ok(Action::await_change());
    };
    let PodSet {
        namespace,
        name,
        pods,
        api: pod_api,
    } = &pod_set;
    let replicas = usize::try_from(spec.replicas.unwrap_or(1).max(0)).unwrap_or(0);
    let ordered = spec.pod_management_policy.as_deref() != Some("Parallel");
    let rolling = spec
        .update_strategy
        .as_ref()
        .and_then(|strategy| strategy.type_.as_deref())
        != Some("OnDelete");
    let template = to_json(&spec.template);
    let sets: Api<StatefulSet> = Api::namespaced(context.client.clone(), namespace);
    let Some(status) = latest(&sets, set.as_ref())
        .await?
        .map(|latest| latest.status)
    else {
        return Ok(Action::await_change());
    };
    let status_before = status.clone().unwrap_or_default();
    let history = sync_history(
        &context,
        set.as_ref(),
        Keeper::StatefulSet,
        &template,
        status_before.collision_count,
    )
    .await?;
    let revision = history.update_name.clone();
    // The revision the pods are rolling from: the status's, while it is still there.
    let rolling_from = status_before
        .current_revision
        .filter(|current| history.has(current))
        .unwrap_or_else(|| revision.clone());
    let mut by_ordinal: BTreeMap<usize, &Pod> = BTreeMap::new();
    for pod in pods
        .iter()
        .filter(|pod| pod.metadata.deletion_timestamp.is_none())
    {
        let ordinal = pod
            .name_any()
            .strip_prefix(&format!("{name}-"))
            .and_then(|ordinal| ordinal.parse::<usize>().ok());
        if let Some(ordinal) = ordinal {
            by_ordinal.insert(ordinal, pod);
        }
    }
    let running_ready = |pod: &Pod| {
        pod_ready(pod) && pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
    };
    let owner = controller_reference(set.as_ref())?;
    // Create the missing pods in order.
    for ordinal in 0..replicas {
        if by_ordinal.contains_key(&ordinal) {
            continue;
        }
        let earlier_ready = (0..ordinal).all(|before| {
            by_ordinal
                .get(&before)
                .is_some_and(|pod| running_ready(pod))
        });
        if ordered && !earlier_ready {
            break;
        }
        let pod_name = format!("{name}-{ordinal}");
        let mut pod_template = template.clone();
        for claim in spec.volume_claim_templates.iter().flatten() {
            let claim_name = format!("{}-{pod_name}", claim.name_any());
            ensure_claim(&context, namespace, &claim_name, claim, &spec.selector).await?;
            let volume = json!({"name": claim.name_any(), "persistentVolumeClaim": {"claimName": claim_name}});
            match pod_template
                .pointer_mut("/spec/volumes")
                .and_then(Value::as_array_mut)
            {
                Some(volumes) => volumes.push(volume),
                None => pod_template["spec"]["volumes"] = json!([volume]),
            }
        }
        pod_template["spec"]["hostname"] = json!(pod_name);
        if let Some(service) = &spec.service_name {
            pod_template["spec"]["subdomain"] = json!(service);
        }
        let labels = [
            (REVISION_LABEL, revision.clone()),
            ("statefulset.kubernetes.io/pod-name", pod_name.clone()),
            ("apps.kubernetes.io/pod-index", ordinal.to_string()),
        ];
        let pod = pod_from_template(&pod_template, PodName::Exact(&pod_name), &labels, &owner)?;
        match pod_api.create(&context.post_params(), &pod).await {
            Ok(_) => {
                let message = format!("create Pod {pod_name} in StatefulSet {name} successful");
                context
                    .event(
                        set.as_ref(),
                        "statefulset-controller",
                        false,
                        "SuccessfulCreate",
                        &message,
                    )
                    .await;
            }
            Err(kube::Error::Api(status)) if status.code == 409 => {}
            Err(error) => return Err(error.into()),
        }
        if ordered {
            break;
        }
    }
    let all_ready = (0..replicas).all(|ordinal| {
        by_ordinal
            .get(&ordinal)
            .is_some_and(|pod| running_ready(pod))
    });
    // Scale down from the highest ordinal.
    let surplus: Vec<usize> = by_ordinal
        .keys()
        .rev()
        .copied()
        .filter(|ordinal| *ordinal >= replicas)
        .collect();
    for ordinal in surplus {
        if ordered && !all_ready {
            break;
        }
        let pod_name = format!("{name}-{ordinal}");
        if pod_set.delete(&pod_name, &DeleteParams::default()).await? {
            let message = format!("delete Pod {pod_name} in StatefulSet {name} successful");
            context
                .event(
                    set.as_ref(),
                    "statefulset-controller",
                    false,
                    "SuccessfulDelete",
                    &message,
                )
                .await;
        }
        if ordered {
            break;
        }
    }
    // Roll the highest outdated pod once everything is ready.
    if rolling && all_ready {
        let outdated = (0..replicas).rev().find(|ordinal| {
            by_ordinal
                .get(ordinal)
                .is_some_and(|pod| revision_label(pod) != Some(&revision))
        });
        if let Some(ordinal) = outdated {
            pod_set
                .delete(&format!("{name}-{ordinal}"), &DeleteParams::default())
                .await?;
        }
    }
    let live: Vec<&Pod> = by_ordinal
        .values()
        .copied()
        .filter(|pod| pod_active(pod))
        .collect();
    let (ready, available, next) = availability(&live, min_ready(spec.min_ready_seconds));
    let updated = live
        .iter()
        .filter(|pod| revision_label(pod) == Some(&revision))
        .count();
    let current = normalized(&to_json(&status));
    let current_revision = if updated == replicas && live.len() == replicas {
        revision.clone()
    } else {
        rolling_from.clone()
    };
    let at_current = live
        .iter()
        .filter(|pod| revision_label(pod) == Some(&current_revision))
        .count();
    let mut status = json!({
        "observedGeneration": set.metadata.generation.unwrap_or(0),
        "replicas": live.len(),
        "currentRevision": current_revision,
        "updateRevision": revision,
        "collisionCount": history.collision_count,
        "availableReplicas": available,
    });
    for (field, count) in [
        ("readyReplicas", ready),
        ("currentReplicas", i64::try_from(at_current).unwrap_or(0)),
        ("updatedReplicas", i64::try_from(updated).unwrap_or(0)),
    ] {
        if count > 0 {
            status[field] = json!(count);
        }
    }
    context.write_status(&sets, name, &current, status).await?;
    // What this sync started from stays: its current and update revisions, and the pods'.
    let pod_revisions: Vec<&String> = pods.iter().filter_map(revision_label).collect();
    let is_live = |candidate: &ControllerRevision| {
        let candidate = candidate.name_any();
        candidate == rolling_from
            || candidate == revision
            || pod_revisions.iter().any(|used| **used == candidate)
    };
    let stale = prunable(
        Keeper::StatefulSet,
        &history,
        is_live,
        spec.revision_history_limit,
    );
    prune_history(&context, namespace, &stale).await?;
    Ok(next.map_or_else(Action::await_change, Action::requeue))
}

async fn ensure_claim(
    context: &Context,
    namespace: &str,
    claim_name: &str,
    template: &PersistentVolumeClaim,
    selector: &k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector,
) -> Result<(), ReconcileError> {
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(context.client.clone(), namespace);
    if claims.get_opt(claim_name).await?.is_some() {
        return Ok(());
    }
    let mut labels = template.labels().clone();
    labels.extend(selector.match_labels.clone().unwrap_or_default());
    let claim = json!({
        "metadata": {"name": claim_name, "labels": labels},
        "spec": to_json(&template.spec),
    });
    let claim: PersistentVolumeClaim =
        serde_json::from_value(claim).map_err(|error| ReconcileError::Shape(error.to_string()))?;
    match claims.create(&context.post_params(), &claim).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 409 => Ok(()),
        Err(error) => Err(error.into()),
    }
}

async fn reconcile_daemon(set: Arc<DaemonSet>, context: Arc<Context>) -> Reconciled {
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
    let template = to_json(&spec.template);
    let sets: Api<DaemonSet> = Api::namespaced(context.client.clone(), namespace);
    let Some(status) = latest(&sets, set.as_ref())
        .await?
        .map(|latest| latest.status)
    else {
        return Ok(Action::await_change());
    };
    let collision_count = status.as_ref().and_then(|status| status.collision_count);
    let history = sync_history(
        &context,
        set.as_ref(),
        Keeper::DaemonSet,
        &template,
        collision_count,
    )
    .await?;
    let revision = history.update_hash.clone();
    let generation = set.metadata.generation.unwrap_or(0);
    let rolling = spec
        .update_strategy
        .as_ref()
        .and_then(|strategy| strategy.type_.as_deref())
        != Some("OnDelete");
    let live = pod_set.active();
    if live.is_empty() {
        let owner = controller_reference(set.as_ref())?;
        let labels = [
            (REVISION_LABEL, revision.clone()),
            ("pod-template-generation", generation.to_string()),
        ];
        let pod = pod_from_template(&template, PodName::Generated(name), &labels, &owner)?;
        let created = pod_api.create(&context.post_params(), &pod).await?;
        let message = format!("Created pod: {}", created.name_any());
        context
            .event(
                set.as_ref(),
                "daemonset-controller",
                false,
                "SuccessfulCreate",
                &message,
            )
            .await;
    } else if rolling {
        // One pod per node: extra ones go, and an outdated one is replaced.
        for (index, pod) in live.iter().enumerate() {
            if (index > 0 || revision_label(pod) != Some(&revision))
                && pod_set
                    .delete(&pod.name_any(), &DeleteParams::default())
                    .await?
            {
                let message = format!("Deleted pod: {}", pod.name_any());
                context
                    .event(
                        set.as_ref(),
                        "daemonset-controller",
                        false,
                        "SuccessfulDelete",
                        &message,
                    )
                    .await;
            }
        }
    }
    let (ready, available, next) = availability(&live, min_ready(spec.min_ready_seconds));
    let scheduled = live
        .iter()
        .filter(|pod| {
            pod.spec
                .as_ref()
                .is_some_and(|spec| spec.node_name.is_some())
        })
        .count()
        .min(1);
    let updated = live
        .iter()
        .filter(|pod| revision_label(pod) == Some(&revision))
        .count()
        .min(1);
    let current = normalized(&to_json(&status));
    let mut status = json!({
        "observedGeneration": generation,
        "currentNumberScheduled": scheduled,
        "desiredNumberScheduled": 1,
        "numberMisscheduled": 0,
        "numberReady": ready.min(1),
    });
    if history.collision_count > 0 {
        status["collisionCount"] = json!(history.collision_count);
    }
    for (field, count) in [
        ("numberAvailable", available.min(1)),
        ("numberUnavailable", 1 - available.min(1)),
        (
            "updatedNumberScheduled",
            i64::try_from(updated).unwrap_or(0),
        ),
    ] {
        if count > 0 {
            status[field] = json!(count);
        }
    }
    context.write_status(&sets, name, &current, status).await?;
    // Revisions whose hash a pod still carries stay.
    let pod_hashes: Vec<&String> = pod_set.pods.iter().filter_map(revision_label).collect();
    let is_live = |candidate: &ControllerRevision| {
        candidate
            .labels()
            .get(REVISION_LABEL)
            .is_some_and(|hash| pod_hashes.contains(&hash))
    };
    let stale = prunable(
        Keeper::DaemonSet,
        &history,
        is_live,
        spec.revision_history_limit,
    );
    prune_history(&context, namespace, &stale).await?;
    Ok(next.map_or_else(Action::await_change, Action::requeue))
}
