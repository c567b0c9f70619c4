//! The horizontal pod autoscaler, without metrics: the simulated cluster has no load, so the
//! recommendation is the target's current size kept within `minReplicas`…`maxReplicas`.
//! The target is read and resized through its `scale` subresource (any kind that has one),
//! and the status carries `currentReplicas`, `desiredReplicas`, `lastScaleTime` and the
//! `AbleToScale`, `ScalingActive` and `ScalingLimited` conditions.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use kube::ResourceExt;
use kube::api::{Api, DynamicObject, GroupVersionKind, Patch};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::watcher;
use serde_json::{Value, json};
use tokio::sync::watch;

use super::replica_sets::normalized;
use super::support::{Context, Reconciled, drive, set_condition, to_json};

/// How often a target's size is looked at again (the autoscaler's sync period is 15 s; the
/// sandbox is quicker so status follows rollouts).
const RESYNC: Duration = Duration::from_secs(2);
/// The condition timestamps an autoscaler's conditions carry.
const TIMES: [&str; 1] = ["lastTransitionTime"];

/// Runs the autoscaler until `stop`.
pub(super) async fn run(context: Arc<Context>, stop: watch::Receiver<bool>) {
    let autoscalers: Api<HorizontalPodAutoscaler> = Api::all(context.client.clone());
    let controller = Controller::new(autoscalers, watcher::Config::default());
    drive("autoscalers", controller, reconcile, context, stop).await;
}

async fn reconcile(autoscaler: Arc<HorizontalPodAutoscaler>, context: Arc<Context>) -> Reconciled {
    let Some(namespace) = autoscaler.namespace() else {
        return Ok(Action::await_change());
    };
    if autoscaler.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let name = autoscaler.name_any();
    let spec = autoscaler.spec.clone().unwrap_or_default();
    let target = &spec.scale_target_ref;
    let (group, version) = match target
        .api_version
        .as_deref()
        .unwrap_or("v1")
        .split_once('/')
    {
        Some((group, version)) => (group.to_owned(), version.to_owned()),
        None => (
            String::new(),
            target.api_version.clone().unwrap_or_default(),
        ),
    };
    let current = normalized(&to_json(&autoscaler.status));
    let mut conditions: Vec<Value> = current["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let mut status = current.clone();
    let gvk = GroupVersionKind::gvk(&group, &version, &target.kind);
    let scale = match kube::discovery::pinned_kind(&context.client, &gvk).await {
        Ok((resource, _)) => {
            let api: Api<DynamicObject> =
                Api::namespaced_with(context.client.clone(), &namespace, &resource);
            api.get_scale(&target.name).await.map(|scale| (api, scale))
        }
        Err(error) => Err(error),
    };
    let (api, scale) = match scale {
        Ok(found) => found,
        Err(error) => {
            set_condition(
                &mut conditions,
                json!({
                    "type": "AbleToScale", "status": "False", "reason": "FailedGetScale",
                    "message": format!("the HPA controller was unable to get the target's current scale: {error}"),
                }),
                &TIMES,
            );
            status["conditions"] = Value::Array(conditions);
            let autoscalers: Api<HorizontalPodAutoscaler> =
                Api::namespaced(context.client.clone(), &namespace);
            context
                .write_status(&autoscalers, &name, &current, status)
                .await?;
            return Ok(Action::requeue(RESYNC));
        }
    };
    let wanted = i64::from(
        scale
            .spec
            .as_ref()
            .and_then(|spec| spec.replicas)
            .unwrap_or(0),
    );
    let actual = i64::from(scale.status.as_ref().map_or(0, |status| status.replicas));
    let minimum = i64::from(spec.min_replicas.unwrap_or(1));
    let maximum = i64::from(spec.max_replicas);
    let desired = wanted.clamp(minimum.min(maximum), maximum);
    let (limited, limit_reason, limit_message) = if wanted < minimum {
        (
            "True",
            "TooFewReplicas",
            "the desired replica count is less than the minimum replica count",
        )
    } else if wanted > maximum {
        (
            "True",
            "TooManyReplicas",
            "the desired replica count is more than the maximum replica count",
        )
    } else {
        (
            "False",
            "DesiredWithinRange",
            "the desired count is within the acceptable range",
        )
    };
    if desired != wanted {
        api.patch_scale(
            &target.name,
            &context.patch_params(),
            &Patch::Merge(json!({"spec": {"replicas": desired}})),
        )
        .await?;
        status["lastScaleTime"] = json!(crate::objects::now());
        let why = if wanted < minimum {
            "Current number of replicas below Spec.MinReplicas"
        } else {
            "Current number of replicas above Spec.MaxReplicas"
        };
        context
            .event(
                autoscaler.as_ref(),
                "horizontal-pod-autoscaler",
                false,
                "SuccessfulRescale",
                &format!("New size: {desired}; reason: {why}"),
            )
            .await;
        set_condition(
            &mut conditions,
            json!({
                "type": "AbleToScale", "status": "True", "reason": "SucceededRescale",
                "message": format!("the HPA controller was able to update the target scale to {desired}"),
            }),
            &TIMES,
        );
    } else {
        set_condition(
            &mut conditions,
            json!({
                "type": "AbleToScale", "status": "True", "reason": "ReadyForNewScale",
                "message": "recommended size matches current size",
            }),
            &TIMES,
        );
    }
    set_condition(
        &mut conditions,
        json!({
            "type": "ScalingActive", "status": "True", "reason": "ValidMetricFound",
            "message": "the HPA was able to successfully calculate a replica count from simulated metrics (the target's current size)",
        }),
        &TIMES,
    );
    set_condition(
        &mut conditions,
        json!({"type": "ScalingLimited", "status": limited, "reason": limit_reason, "message": limit_message}),
        &TIMES,
    );
    status["currentReplicas"] = json!(actual);
    status["desiredReplicas"] = json!(desired);
    status["conditions"] = Value::Array(conditions);
    if let Some(generation) = autoscaler.metadata.generation {
        status["observedGeneration"] = json!(generation);
    }
    let autoscalers: Api<HorizontalPodAutoscaler> =
        Api::namespaced(context.client.clone(), &namespace);
    context
        .write_status(&autoscalers, &name, &current, status)
        .await?;
    Ok(Action::requeue(RESYNC))
}
