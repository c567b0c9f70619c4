//! The deployment controller: one ReplicaSet per pod template (named after the template's
//! hash, labelled `pod-template-hash`, controlled by the Deployment), rollouts by the
//! `RollingUpdate` arithmetic (`maxSurge`, `maxUnavailable`) or `Recreate`, revisions in
//! `deployment.kubernetes.io/revision`, old sets pruned to `revisionHistoryLimit`, and the
//! status with its `Available` and `Progressing` conditions, with the controller's reasons,
//! messages and `ScalingReplicaSet` events. A paused Deployment does not roll out and says so
//! (`DeploymentPaused`, then `DeploymentResumed`).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, ListParams, Patch};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::watcher;
use serde_json::{Value, json};
use tokio::sync::watch;

use super::replica_sets::normalized;
use super::support::{
    Context, ReconcileError, Reconciled, controlled_by, controller_reference, drive,
    find_condition, set_condition, template_hash, to_json,
};

/// The events' source.
const COMPONENT: &str = "deployment-controller";
/// The revision annotation on Deployments and their ReplicaSets.
const REVISION: &str = "deployment.kubernetes.io/revision";
/// The label that tells a Deployment's ReplicaSets (and their pods) apart.
const HASH_LABEL: &str = "pod-template-hash";

/// Runs the deployment controller until `stop`.
pub(super) async fn run(context: Arc<Context>, stop: watch::Receiver<bool>) {
    let deployments: Api<Deployment> = Api::all(context.client.clone());
    let sets: Api<ReplicaSet> = Api::all(context.client.clone());
    let controller = Controller::new(deployments, watcher::Config::default())
        .owns(sets, watcher::Config::default());
    drive("deployments", controller, reconcile, context, stop).await;
}

/// One ReplicaSet of the Deployment, with what the rollout reads of it.
struct Set {
    object: ReplicaSet,
    template: Value,
}

impl Set {
    fn name(&self) -> String {
        self.object.name_any()
    }
    fn spec_replicas(&self) -> i64 {
        self.object
            .spec
            .as_ref()
            .and_then(|spec| spec.replicas)
            .map_or(1, i64::from)
    }
    fn status(&self, field: &str) -> i64 {
        to_json(&self.object.status)
            .get(field)
            .and_then(Value::as_i64)
            .unwrap_or(0)
    }
    fn revision(&self) -> i64 {
        self.object
            .annotations()
            .get(REVISION)
            .and_then(|revision| revision.parse().ok())
            .unwrap_or(0)
    }
    /// How old the set is (older sets sort first).
    fn age(&self) -> std::cmp::Reverse<Duration> {
        std::cmp::Reverse(
            self.object
                .metadata
                .creation_timestamp
                .as_ref()
                .map(super::support::age)
                .unwrap_or_default(),
        )
    }
}

/// The template without the hash label, for comparing a Deployment's with its sets'.
fn comparable_template(template: &Value) -> Value {
    let mut template = template.clone();
    if let Some(labels) = template
        .pointer_mut("/metadata/labels")
        .and_then(Value::as_object_mut)
    {
        labels.remove(HASH_LABEL);
        if labels.is_empty()
            && let Some(metadata) = template.get_mut("metadata").and_then(Value::as_object_mut)
        {
            metadata.remove("labels");
        }
    }
    template
}

/// A `maxSurge`/`maxUnavailable` value against `replicas` (percentages round up for surge,
/// down for unavailability, as the controller does).
fn resolve(
    value: Option<&IntOrString>,
    default_percent: i64,
    replicas: i64,
    round_up: bool,
) -> i64 {
    let percent = match value {
        Some(IntOrString::Int(number)) => return i64::from(*number),
        Some(IntOrString::String(text)) => text
            .trim_end_matches('%')
            .parse::<i64>()
            .unwrap_or(default_percent),
        None => default_percent,
    };
    let scaled = percent * replicas;
    if round_up {
        (scaled + 99) / 100
    } else {
        scaled / 100
    }
}

async fn reconcile(deployment: Arc<Deployment>, context: Arc<Context>) -> Reconciled {
    let Some((namespace, uid)) = super::support::acting_on(deployment.as_ref()) else {
        return Ok(Action::await_change());
    };
    let name = deployment.name_any();
    let spec = deployment.spec.clone().unwrap_or_default();
    let replicas = spec.replicas.map_or(1, i64::from);
    let set_api: Api<ReplicaSet> = Api::namespaced(context.client.clone(), &namespace);
    let mut params = ListParams::default();
    if let Some(query) = super::support::selector_query(&spec.selector) {
        params = params.labels(&query);
    }
    let mut listed = set_api.list(&params).await?.items;
    let owner = controller_reference(deployment.as_ref())?;
    for set in &mut listed {
        if super::support::orphaned(set) {
            *set = super::support::adopt(&context, &set_api, set, &owner).await?;
        }
    }
    let mut sets: Vec<Set> = listed
        .into_iter()
        .filter(|set| controlled_by(set, &uid) && set.metadata.deletion_timestamp.is_none())
        .map(|object| Set {
            template: comparable_template(&to_json(
                &object.spec.as_ref().and_then(|spec| spec.template.clone()),
            )),
            object,
        })
        .collect();
    sets.sort_by_key(Set::age);
    let template = to_json(&spec.template);
    let wanted_template = comparable_template(&template);
    let max_revision = sets.iter().map(Set::revision).max().unwrap_or(0);
    let mut conditions: Vec<Value> = to_json(&deployment.status)
        .get("conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();

    let recreate = spec
        .strategy
        .as_ref()
        .and_then(|strategy| strategy.type_.as_deref())
        == Some("Recreate");
    let rolling = spec
        .strategy
        .as_ref()
        .and_then(|strategy| strategy.rolling_update.as_ref());
    let (max_surge, max_unavailable) = if recreate {
        (0, 0)
    } else {
        let surge = resolve(
            rolling.and_then(|r| r.max_surge.as_ref()),
            25,
            replicas,
            true,
        );
        let unavailable = resolve(
            rolling.and_then(|r| r.max_unavailable.as_ref()),
            25,
            replicas,
            false,
        );
        if surge == 0 && unavailable == 0 {
            (0, 1)
        } else {
            (surge, unavailable)
        }
    };

    // The set of the current template: found, or created.
    let position = sets.iter().position(|set| set.template == wanted_template);
    let paused = spec.paused == Some(true);
    let new_index = match position {
        Some(index) => {
            if sets[index].revision() < max_revision {
                // A rollback to an older template: it becomes the newest revision.
                let revision = (max_revision + 1).to_string();
                let patch = json!({"metadata": {"annotations": {REVISION: revision}}});
                sets[index].object = set_api
                    .patch(
                        &sets[index].name(),
                        &context.patch_params(),
                        &Patch::Merge(patch),
                    )
                    .await?;
            }
            Some(index)
        }
        None if paused => None,
        None => {
            let hash = template_hash(&serde_json::to_string(&wanted_template).unwrap_or_default());
            let set_name = format!("{name}-{hash}");
            let old_total: i64 = sets.iter().map(Set::spec_replicas).sum();
            let initial = if recreate {
                if old_total > 0 { 0 } else { replicas }
            } else {
                (replicas + max_surge - old_total).clamp(0, replicas)
            };
            let created = create_set(
                &context,
                &deployment,
                &template,
                &set_name,
                &hash,
                initial,
                max_revision + 1,
                max_surge,
            )
            .await?;
            if initial > 0 {
                scaled_event(&context, &deployment, &set_name, 0, initial).await;
            }
            deployment_condition(
                &mut conditions,
                "Progressing",
                "True",
                "NewReplicaSetCreated",
                format!("Created new replica set \"{set_name}\""),
            );
            sets.push(Set {
                template: wanted_template.clone(),
                object: created,
            });
            Some(sets.len() - 1)
        }
    };

    if let Some(new_index) = new_index.filter(|_| !paused) {
        if recreate {
            rollout_recreate(
                &context,
                &deployment,
                &set_api,
                &mut sets,
                new_index,
                replicas,
            )
            .await?;
        } else {
            rollout_rolling(
                &context,
                &deployment,
                &set_api,
                &mut sets,
                new_index,
                replicas,
                max_surge,
                max_unavailable,
            )
            .await?;
        }
        let revision = sets[new_index].revision().to_string();
        if deployment.annotations().get(REVISION) != Some(&revision) {
            // Through the status endpoint, as the controller does: the generation stays.
            let patch = json!({"metadata": {"annotations": {REVISION: revision}}});
            Api::<Deployment>::namespaced(context.client.clone(), &namespace)
                .patch_status(&name, &context.patch_params(), &Patch::Merge(patch))
                .await?;
        }
    }

    // Status from the sets as they now are.
    let total_spec: i64 = sets.iter().map(Set::spec_replicas).sum();
    let status_replicas: i64 = sets.iter().map(|set| set.status("replicas")).sum();
    let updated = new_index.map_or(0, |index| sets[index].status("replicas"));
    let ready: i64 = sets.iter().map(|set| set.status("readyReplicas")).sum();
    let available: i64 = sets.iter().map(|set| set.status("availableReplicas")).sum();
    let current = normalized(&to_json(&deployment.status));
    let generation = deployment.metadata.generation.unwrap_or(0);
    let mut status = json!({"observedGeneration": generation});
    for (field, count) in [
        ("replicas", status_replicas),
        ("updatedReplicas", updated),
        ("readyReplicas", ready),
        ("availableReplicas", available),
        ("unavailableReplicas", (total_spec - available).max(0)),
    ] {
        if count > 0 {
            status[field] = json!(count);
        }
    }
    let minimum = replicas - max_unavailable;
    let (available_status, available_reason, available_message) = if available >= minimum {
        (
            "True",
            "MinimumReplicasAvailable",
            "Deployment has minimum availability.",
        )
    } else {
        (
            "False",
            "MinimumReplicasUnavailable",
            "Deployment does not have minimum availability.",
        )
    };
    deployment_condition(
        &mut conditions,
        "Available",
        available_status,
        available_reason,
        available_message,
    );
    // Available comes first, as the controller lists them.
    conditions.sort_by_key(|condition| condition["type"] != "Available");
    let mut requeue = None;
    let progressing_reason = find_condition(&Value::Array(conditions.clone()), "Progressing")
        .map(|condition| condition["reason"].clone());
    if paused {
        deployment_condition(
            &mut conditions,
            "Progressing",
            "Unknown",
            "DeploymentPaused",
            "Deployment is paused",
        );
    } else if progressing_reason == Some(json!("DeploymentPaused")) {
        deployment_condition(
            &mut conditions,
            "Progressing",
            "Unknown",
            "DeploymentResumed",
            "Deployment is resumed",
        );
    }
    if let (Some(index), false) = (new_index, paused) {
        let set_name = sets[index].name();
        let complete = updated == replicas && status_replicas == replicas && available == replicas;
        let progressed = ["updatedReplicas", "readyReplicas", "availableReplicas"]
            .iter()
            .any(|field| {
                status.get(*field).and_then(Value::as_i64).unwrap_or(0)
                    > current.get(*field).and_then(Value::as_i64).unwrap_or(0)
            })
            || status_replicas < current.get("replicas").and_then(Value::as_i64).unwrap_or(0);
        let progressing = find_condition(&Value::Array(conditions.clone()), "Progressing").cloned();
        let reason = progressing
            .as_ref()
            .map(|condition| condition["reason"].clone());
        if complete {
            if reason != Some(json!("NewReplicaSetAvailable")) {
                deployment_condition(
                    &mut conditions,
                    "Progressing",
                    "True",
                    "NewReplicaSetAvailable",
                    format!("ReplicaSet \"{set_name}\" has successfully progressed."),
                );
            }
        } else if progressed || progressing.is_none() {
            let mut wanted = json!({
                "type": "Progressing", "status": "True", "reason": "ReplicaSetUpdated",
                "message": format!("ReplicaSet \"{set_name}\" is progressing."),
            });
            wanted["lastUpdateTime"] = json!(crate::objects::now());
            wanted["lastTransitionTime"] = progressing
                .as_ref()
                .filter(|condition| condition["status"] == "True")
                .map_or_else(
                    || json!(crate::objects::now()),
                    |condition| condition["lastTransitionTime"].clone(),
                );
            match conditions
                .iter_mut()
                .find(|condition| condition["type"] == "Progressing")
            {
                Some(existing) => *existing = wanted,
                None => conditions.push(wanted),
            }
        }
        if !complete && let Some(deadline) = spec.progress_deadline_seconds {
            let deadline = Duration::from_secs(u64::try_from(deadline).unwrap_or(0));
            let since = find_condition(&Value::Array(conditions.clone()), "Progressing")
                .filter(|condition| condition["reason"] != "ProgressDeadlineExceeded")
                .and_then(|condition| condition["lastUpdateTime"].as_str())
                .and_then(|time| DateTime::parse_from_rfc3339(time).ok())
                .map(|time| {
                    (Utc::now() - time.with_timezone(&Utc))
                        .to_std()
                        .unwrap_or_default()
                });
            match since {
                Some(since) if since >= deadline => deployment_condition(
                    &mut conditions,
                    "Progressing",
                    "False",
                    "ProgressDeadlineExceeded",
                    format!("ReplicaSet \"{set_name}\" has timed out progressing."),
                ),
                Some(since) => requeue = Some(deadline - since + Duration::from_millis(100)),
                None => {}
            }
        }
    }
    status["conditions"] = Value::Array(conditions);
    let deployments: Api<Deployment> = Api::namespaced(context.client.clone(), &namespace);
    context
        .write_status(&deployments, &name, &current, status)
        .await?;
    prune_history(&set_api, &sets, new_index, spec.revision_history_limit).await?;
    Ok(requeue.map_or_else(Action::await_change, Action::requeue))
}

#[allow(clippy::too_many_arguments)]
async fn create_set(
    context: &Context,
    deployment: &Deployment,
    template: &Value,
    set_name: &str,
    hash: &str,
    replicas: i64,
    revision: i64,
    max_surge: i64,
) -> Result<ReplicaSet, ReconcileError> {
    let spec = deployment.spec.clone().unwrap_or_default();
    let desired = spec.replicas.map_or(1, i64::from);
    let mut template = template.clone();
    template["metadata"]["labels"][HASH_LABEL] = json!(hash);
    let mut selector = to_json(&spec.selector);
    selector["matchLabels"][HASH_LABEL] = json!(hash);
    let mut annotations: BTreeMap<String, String> = deployment
        .annotations()
        .iter()
        .filter(|(key, _)| {
            key.as_str() != REVISION
                && key.as_str() != "kubectl.kubernetes.io/last-applied-configuration"
        })
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect();
    annotations.insert(REVISION.to_owned(), revision.to_string());
    annotations.insert(
        "deployment.kubernetes.io/desired-replicas".to_owned(),
        desired.to_string(),
    );
    annotations.insert(
        "deployment.kubernetes.io/max-replicas".to_owned(),
        (desired + max_surge).to_string(),
    );
    let mut set = json!({
        "metadata": {
            "name": set_name,
            "labels": template["metadata"]["labels"].clone(),
            "annotations": annotations,
            "ownerReferences": [to_json(&controller_reference(deployment)?)],
        },
        "spec": {
            "replicas": replicas,
            "selector": selector,
            "template": template,
        },
    });
    if let Some(seconds) = spec.min_ready_seconds {
        set["spec"]["minReadySeconds"] = json!(seconds);
    }
    let set: ReplicaSet =
        serde_json::from_value(set).map_err(|error| ReconcileError::Shape(error.to_string()))?;
    let namespace = deployment.namespace().unwrap_or_default();
    let api: Api<ReplicaSet> = Api::namespaced(context.client.clone(), &namespace);
    match api.create(&context.post_params(), &set).await {
        Ok(created) => Ok(created),
        // Made by an earlier pass whose list did not see it yet.
        Err(kube::Error::Api(status)) if status.code == 409 => Ok(api.get(set_name).await?),
        Err(error) => Err(error.into()),
    }
}

/// Sets a Deployment condition (which carries `lastUpdateTime` besides `lastTransitionTime`).
fn deployment_condition(
    conditions: &mut Vec<Value>,
    kind: &str,
    status: &str,
    reason: &str,
    message: impl Into<String>,
) {
    set_condition(
        conditions,
        json!({"type": kind, "status": status, "reason": reason, "message": message.into()}),
        &["lastUpdateTime", "lastTransitionTime"],
    );
}

async fn scaled_event(context: &Context, deployment: &Deployment, set: &str, from: i64, to: i64) {
    let direction = if to > from { "up" } else { "down" };
    let message = format!("Scaled {direction} replica set {set} from {from} to {to}");
    context
        .event(deployment, COMPONENT, false, "ScalingReplicaSet", &message)
        .await;
}

/// Sets a ReplicaSet's replicas (and the deployment annotations), with the event.
async fn scale(
    context: &Context,
    deployment: &Deployment,
    api: &Api<ReplicaSet>,
    set: &mut Set,
    replicas: i64,
) -> Result<(), ReconcileError> {
    let from = set.spec_replicas();
    if from == replicas {
        return Ok(());
    }
    let desired = deployment
        .spec
        .as_ref()
        .and_then(|spec| spec.replicas)
        .map_or(1, i64::from);
    let patch = json!({
        "metadata": {"annotations": {"deployment.kubernetes.io/desired-replicas": desired.to_string()}},
        "spec": {"replicas": replicas},
    });
    set.object = api
        .patch(&set.name(), &context.patch_params(), &Patch::Merge(patch))
        .await?;
    scaled_event(context, deployment, &set.name(), from, replicas).await;
    Ok(())
}

#[allow(clippy::too_many_arguments)]
async fn rollout_rolling(
    context: &Context,
    deployment: &Deployment,
    api: &Api<ReplicaSet>,
    sets: &mut [Set],
    new_index: usize,
    replicas: i64,
    max_surge: i64,
    max_unavailable: i64,
) -> Result<(), ReconcileError> {
    // Scale the new set up within the surge (or down to the wanted size).
    let new_replicas = sets[new_index].spec_replicas();
    if new_replicas > replicas {
        scale(context, deployment, api, &mut sets[new_index], replicas).await?;
    } else if new_replicas < replicas {
        let total: i64 = sets.iter().map(Set::spec_replicas).sum();
        let room = replicas + max_surge - total;
        if room > 0 {
            let target = (new_replicas + room).min(replicas);
            scale(context, deployment, api, &mut sets[new_index], target).await?;
        }
    }
    // Scale old sets down while enough pods stay available.
    let old_total: i64 = sets
        .iter()
        .enumerate()
        .filter(|(index, _)| *index != new_index)
        .map(|(_, set)| set.spec_replicas())
        .sum();
    if old_total == 0 {
        return Ok(());
    }
    let all: i64 = sets.iter().map(Set::spec_replicas).sum();
    let min_available = replicas - max_unavailable;
    let new_unavailable =
        sets[new_index].spec_replicas() - sets[new_index].status("availableReplicas");
    let mut budget = all - min_available - new_unavailable;
    // First the old pods that are not available anyway.
    for (index, set) in sets.iter_mut().enumerate() {
        if index == new_index || budget <= 0 {
            continue;
        }
        let unhealthy = set.spec_replicas() - set.status("availableReplicas");
        let cut = unhealthy.min(budget).max(0);
        if cut > 0 {
            let target = set.spec_replicas() - cut;
            scale(context, deployment, api, set, target).await?;
            budget -= cut;
        }
    }
    // Then available ones, oldest set first, keeping the minimum available.
    let available: i64 = sets.iter().map(|set| set.status("availableReplicas")).sum();
    let mut cut_total = available - min_available;
    for (index, set) in sets.iter_mut().enumerate() {
        if index == new_index || cut_total <= 0 {
            continue;
        }
        let cut = set.spec_replicas().min(cut_total);
        if cut > 0 {
            let target = set.spec_replicas() - cut;
            scale(context, deployment, api, set, target).await?;
            cut_total -= cut;
        }
    }
    Ok(())
}

async fn rollout_recreate(
    context: &Context,
    deployment: &Deployment,
    api: &Api<ReplicaSet>,
    sets: &mut [Set],
    new_index: usize,
    replicas: i64,
) -> Result<(), ReconcileError> {
    let mut old_running = false;
    for (index, set) in sets.iter_mut().enumerate() {
        if index == new_index {
            continue;
        }
        if set.spec_replicas() > 0 {
            scale(context, deployment, api, set, 0).await?;
        }
        old_running |= set.status("replicas") > 0;
    }
    if !old_running {
        scale(context, deployment, api, &mut sets[new_index], replicas).await?;
    }
    Ok(())
}

/// Deletes old, scaled-down sets beyond the history limit, oldest first.
async fn prune_history(
    api: &Api<ReplicaSet>,
    sets: &[Set],
    new_index: Option<usize>,
    limit: Option<i32>,
) -> Result<(), ReconcileError> {
    let limit = usize::try_from(limit.unwrap_or(10).max(0)).unwrap_or(0);
    let idle: Vec<&Set> = sets
        .iter()
        .enumerate()
        .filter(|(index, set)| {
            Some(*index) != new_index && set.spec_replicas() == 0 && set.status("replicas") == 0
        })
        .map(|(_, set)| set)
        .collect();
    if idle.len() <= limit {
        return Ok(());
    }
    let mut by_revision = idle;
    by_revision.sort_by_key(|set| set.revision());
    let excess = by_revision.len() - limit;
    for set in by_revision.into_iter().take(excess) {
        match api.delete(&set.name(), &DeleteParams::background()).await {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 404 => {}
            Err(error) => return Err(error.into()),
        }
    }
    Ok(())
}
