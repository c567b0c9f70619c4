//! The job controller: pods from the template (up to `parallelism`, until `completions`
//! succeeded), the status counts, `startTime` and `completionTime`, and the terminal
//! conditions with the controller's reasons: `SuccessCriteriaMet` + `Complete`
//! (`CompletionsReached`), or `FailureTarget` + `Failed` (`BackoffLimitExceeded`).
//! A suspended Job keeps no active pods and says so (`Suspended`/`JobSuspended`).

use std::sync::Arc;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::watcher;
use serde_json::{Value, json};
use tokio::sync::watch;

use super::pod_sets::PodSet;
use super::replica_sets::normalized;
use super::support::{
    Context, PodName, Reconciled, controller_reference, drive, find_condition, pod_active,
    pod_from_template, pod_ready, set_condition, to_json,
};

/// The events' source.
const COMPONENT: &str = "job-controller";
/// The condition timestamps a Job's conditions carry.
const TIMES: [&str; 2] = ["lastProbeTime", "lastTransitionTime"];

/// Runs the job controller until `stop`.
pub(super) async fn run(context: Arc<Context>, stop: watch::Receiver<bool>) {
    let jobs: Api<Job> = Api::all(context.client.clone());
    let pods: Api<Pod> = Api::all(context.client.clone());
    let controller =
        Controller::new(jobs, watcher::Config::default()).owns(pods, watcher::Config::default());
    drive("jobs", controller, reconcile, context, stop).await;
}

fn finished(status: &Value) -> bool {
    ["Complete", "Failed"].iter().any(|kind| {
        find_condition(&status["conditions"], kind).is_some_and(|c| c["status"] == "True")
    })
}

async fn reconcile(job: Arc<Job>, context: Arc<Context>) -> Reconciled {
    let current = normalized(&to_json(&job.status));
    if finished(&current) {
        return Ok(Action::await_change());
    }
    let spec = job.spec.clone().unwrap_or_default();
    // A job adopts no orphans; a job being deleted is left alone.
    let Some(pod_set) = PodSet::controlled(&context, job.as_ref(), spec.selector.as_ref()).await?
    else {
        return Ok(Action::await_change());
    };
    let PodSet {
        namespace,
        name,
        pods,
        api: pod_api,
    } = &pod_set;
    let count = |phase: &str| {
        pods.iter()
            .filter(|pod| pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some(phase))
            .count()
    };
    let succeeded = count("Succeeded");
    let failed = count("Failed");
    let active: Vec<&Pod> = pods.iter().filter(|pod| pod_active(pod)).collect();
    let parallelism = usize::try_from(spec.parallelism.unwrap_or(1).max(0)).unwrap_or(0);
    let completions = spec
        .completions
        .map(|completions| usize::try_from(completions.max(0)).unwrap_or(0));
    let backoff_limit = usize::try_from(spec.backoff_limit.unwrap_or(6).max(0)).unwrap_or(0);
    let suspended = spec.suspend == Some(true);

    let mut status = current.clone();
    let mut conditions: Vec<Value> = current["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let now = crate::objects::now();
    let complete = match completions {
        Some(completions) => succeeded >= completions,
        None => succeeded >= 1 && active.is_empty(),
    };
    let mut active_count = active.len();
    if failed > backoff_limit {
        for pod in &active {
            pod_set
                .delete(&pod.name_any(), &DeleteParams::background())
                .await?;
        }
        active_count = 0;
        for kind in ["FailureTarget", "Failed"] {
            set_condition(
                &mut conditions,
                json!({
                    "type": kind, "status": "True", "reason": "BackoffLimitExceeded",
                    "message": "Job has reached the specified backoff limit",
                }),
                &TIMES,
            );
        }
        context
            .event(
                job.as_ref(),
                COMPONENT,
                true,
                "BackoffLimitExceeded",
                "Job has reached the specified backoff limit",
            )
            .await;
    } else if complete {
        for kind in ["SuccessCriteriaMet", "Complete"] {
            set_condition(
                &mut conditions,
                json!({
                    "type": kind, "status": "True", "reason": "CompletionsReached",
                    "message": "Reached expected number of succeeded pods",
                }),
                &TIMES,
            );
        }
        status["completionTime"] = json!(now);
        context
            .event(job.as_ref(), COMPONENT, false, "Completed", "Job completed")
            .await;
    } else if suspended {
        for pod in &active {
            pod_set
                .delete(&pod.name_any(), &DeleteParams::background())
                .await?;
        }
        active_count = 0;
        set_condition(
            &mut conditions,
            json!({"type": "Suspended", "status": "True", "reason": "JobSuspended", "message": "Job suspended"}),
            &TIMES,
        );
    } else {
        if find_condition(&Value::Array(conditions.clone()), "Suspended").is_some() {
            set_condition(
                &mut conditions,
                json!({"type": "Suspended", "status": "False", "reason": "JobResumed", "message": "Job resumed"}),
                &TIMES,
            );
        }
        if status.get("startTime").is_none_or(Value::is_null) {
            status["startTime"] = json!(now);
        }
        let wanted = match completions {
            Some(completions) => parallelism.min(completions.saturating_sub(succeeded)),
            None if succeeded == 0 => parallelism,
            None => 0,
        };
        if active.len() < wanted {
            let template = to_json(&spec.template);
            let owner = controller_reference(job.as_ref())?;
            for _ in active.len()..wanted {
                let pod = pod_from_template(&template, PodName::Generated(name), &[], &owner)?;
                let created = pod_api.create(&context.post_params(), &pod).await?;
                let message = format!("Created pod: {}", created.name_any());
                context
                    .event(job.as_ref(), COMPONENT, false, "SuccessfulCreate", &message)
                    .await;
                active_count += 1;
            }
        }
    }
    for (field, value) in [
        ("active", active_count),
        ("succeeded", succeeded),
        ("failed", failed),
    ] {
        match value {
            0 => {
                if let Some(map) = status.as_object_mut() {
                    map.remove(field);
                }
            }
            value => status[field] = json!(value),
        }
    }
    status["ready"] = json!(active.iter().filter(|pod| pod_ready(pod)).count());
    status["terminating"] = json!(0);
    status["uncountedTerminatedPods"] = json!({});
    if conditions.is_empty() {
        if let Some(map) = status.as_object_mut() {
            map.remove("conditions");
        }
    } else {
        status["conditions"] = Value::Array(conditions);
    }
    let jobs: Api<Job> = Api::namespaced(context.client.clone(), namespace);
    context.write_status(&jobs, name, &current, status).await?;
    Ok(Action::await_change())
}
