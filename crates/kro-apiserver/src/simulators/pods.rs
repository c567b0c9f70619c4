//! The scheduler and a kubelet on one simulated node (kwok's `node-initialize`, `pod-ready`
//! and `pod-complete` stages): the node is registered Ready; each pod is bound to it after
//! the schedule delay, Running and Ready after the ready delay (or failing, when the knobs
//! choose it), and a Job's pod Succeeded after the job duration.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, Pod};
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, Patch, Preconditions};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::watcher;
use serde_json::{Value, json};
use tokio::sync::watch;

use super::support::{Context, Reconciled, drive};

/// The simulated node's name.
pub(super) const NODE: &str = "kro-node";
/// The simulated node's address.
const NODE_ADDRESS: &str = "172.18.0.2";
/// How long a failing container waits before it is shown restarting again.
const CRASH_LOOP: Duration = Duration::from_secs(10);

/// Registers the node, then runs the scheduler and kubelet until `stop`.
pub(super) async fn run(context: Arc<Context>, stop: watch::Receiver<bool>) {
    for _ in 0..50 {
        match register_node(&context).await {
            Ok(()) => break,
            Err(error) => {
                tracing::debug!(%error, "pod simulator: cannot register the node yet");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
    let pods: Api<Pod> = Api::all(context.client.clone());
    let controller = Controller::new(pods, watcher::Config::default());
    drive("pods", controller, reconcile, context, stop).await;
}

/// Creates the node (when missing) and reports it Ready, as a kubelet does on start.
async fn register_node(context: &Context) -> Result<(), kube::Error> {
    let nodes: Api<Node> = Api::all(context.client.clone());
    if nodes.get_opt(NODE).await?.is_none() {
        let node: Node = serde_json::from_value(json!({
            "metadata": {
                "name": NODE,
                "labels": {
                    "beta.kubernetes.io/arch": "amd64",
                    "beta.kubernetes.io/os": "linux",
                    "kubernetes.io/arch": "amd64",
                    "kubernetes.io/hostname": NODE,
                    "kubernetes.io/os": "linux",
                    "type": "kro-simulated",
                },
                "annotations": {"node.alpha.kubernetes.io/ttl": "0"},
            },
            "spec": {"podCIDR": "10.244.0.0/16", "podCIDRs": ["10.244.0.0/16"]},
        }))
        .map_err(kube::Error::SerdeError)?;
        match nodes.create(&context.post_params(), &node).await {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 409 => {}
            Err(error) => return Err(error),
        }
    }
    let now = crate::objects::now();
    let condition = |kind: &str, status: &str, reason: &str, message: &str| {
        json!({
            "type": kind, "status": status, "reason": reason, "message": message,
            "lastHeartbeatTime": now, "lastTransitionTime": now,
        })
    };
    let resources =
        json!({"cpu": "32", "memory": "256Gi", "pods": "1000", "ephemeral-storage": "1Ti"});
    let status = json!({"status": {
        "capacity": resources,
        "allocatable": resources,
        "conditions": [
            condition("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
            condition("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
            condition("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
            condition("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
        ],
        "addresses": [
            {"type": "InternalIP", "address": NODE_ADDRESS},
            {"type": "Hostname", "address": NODE},
        ],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
        "nodeInfo": {
            "machineID": "", "systemUUID": "", "bootID": "",
            "kernelVersion": "", "osImage": "kro simulated node",
            "containerRuntimeVersion": "kro-simulated://1.0",
            "kubeletVersion": "v1.33.0", "kubeProxyVersion": "",
            "operatingSystem": "linux", "architecture": "amd64",
        },
    }});
    nodes
        .patch_status(NODE, &context.patch_params(), &Patch::Merge(status))
        .await?;
    Ok(())
}

/// Moves one pod through its stages.
async fn reconcile(pod: Arc<Pod>, context: Arc<Context>) -> Reconciled {
    let (Some(namespace), Some(uid)) = (pod.namespace(), pod.metadata.uid.clone()) else {
        return Ok(Action::await_change());
    };
    let name = pod.name_any();
    let phase = pod
        .status
        .as_ref()
        .and_then(|status| status.phase.clone())
        .unwrap_or_default();
    let bound_here = pod.spec.as_ref().and_then(|spec| spec.node_name.as_deref()) == Some(NODE);
    if pod.metadata.deletion_timestamp.is_some() {
        // The kubelet stops the containers at once and completes the graceful deletion.
        let graceful = pod
            .metadata
            .deletion_grace_period_seconds
            .is_some_and(|seconds| seconds > 0);
        if bound_here && graceful {
            let pods: Api<Pod> = Api::namespaced(context.client.clone(), &namespace);
            let params = DeleteParams {
                grace_period_seconds: Some(0),
                preconditions: Some(Preconditions {
                    uid: Some(uid),
                    resource_version: None,
                }),
                ..DeleteParams::default()
            };
            match pods.delete(&name, &params).await {
                Ok(_) => {}
                Err(kube::Error::Api(status)) if status.code == 404 || status.code == 409 => {}
                Err(error) => return Err(error.into()),
            }
        }
        return Ok(Action::await_change());
    }
    if matches!(phase.as_str(), "Succeeded" | "Failed") {
        return Ok(Action::await_change());
    }
    let spec = pod.spec.clone().unwrap_or_default();
    let pods: Api<Pod> = Api::namespaced(context.client.clone(), &namespace);
    let current = super::support::to_json(&pod.status);
    let node = match spec.node_name.as_deref() {
        Some(node) => node.to_owned(),
        None => {
            if let Err(left) = context.stage_due(&uid, "schedule", context.knobs.pod_schedule_delay)
            {
                return Ok(Action::requeue(left));
            }
            pods.patch(
                &name,
                &context.patch_params(),
                &Patch::Merge(json!({"spec": {"nodeName": NODE}})),
            )
            .await?;
            let mut status = if current.is_object() {
                current.clone()
            } else {
                json!({})
            };
            status["phase"] = json!("Pending");
            status["conditions"] = json!([condition("PodScheduled", "True", None)]);
            context.write_status(&pods, &name, &current, status).await?;
            context
                .event(
                    pod.as_ref(),
                    "default-scheduler",
                    false,
                    "Scheduled",
                    &format!("Successfully assigned {namespace}/{name} to {NODE}"),
                )
                .await;
            return Ok(Action::await_change());
        }
    };
    if node != NODE {
        // Bound to a node this kubelet does not run.
        return Ok(Action::await_change());
    }
    let failing = context
        .knobs
        .failing_pods
        .as_ref()
        .is_some_and(|selector| selector.matches(pod.labels()));
    let restart_policy = spec.restart_policy.as_deref().unwrap_or("Always");
    let started = current
        .pointer("/containerStatuses/0/state/running")
        .is_some()
        || current.pointer("/containerStatuses/0/state/waiting/reason")
            == Some(&json!("CrashLoopBackOff"));
    if !started {
        if let Err(left) = context.stage_due(&uid, "start", context.knobs.pod_ready_delay) {
            return Ok(Action::requeue(left));
        }
        let status = if failing && restart_policy == "Never" {
            failed_status(&pod, &context, &current)
        } else if failing {
            crash_looping_status(&pod, &context, &current, 1)
        } else {
            running_status(&pod, &context, &current)
        };
        context.write_status(&pods, &name, &current, status).await?;
        for container in &spec.containers {
            let message = format!("Started container {}", container.name);
            let (reason, message) = if failing {
                ("BackOff", "Back-off restarting failed container".to_owned())
            } else {
                ("Started", message)
            };
            context
                .event(pod.as_ref(), "kubelet", failing, reason, &message)
                .await;
        }
        return Ok(Action::await_change());
    }
    if failing {
        // Crash-looping: the restart count climbs as on a node.
        if let Err(left) = context.stage_due(&uid, "restart", CRASH_LOOP) {
            return Ok(Action::requeue(left));
        }
        let restarts = current
            .pointer("/containerStatuses/0/restartCount")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        let status = crash_looping_status(&pod, &context, &current, restarts + 1);
        context.write_status(&pods, &name, &current, status).await?;
        return Ok(Action::requeue(CRASH_LOOP));
    }
    let owned_by_job = pod
        .owner_references()
        .iter()
        .any(|owner| owner.kind == "Job" && owner.api_version == "batch/v1");
    if owned_by_job && restart_policy != "Always" {
        if let Err(left) = context.stage_due(&uid, "complete", context.knobs.job_pod_duration) {
            return Ok(Action::requeue(left));
        }
        let status = completed_status(&pod, &current);
        context.write_status(&pods, &name, &current, status).await?;
    }
    Ok(Action::await_change())
}

fn condition(kind: &str, status: &str, reason: Option<&str>) -> Value {
    let mut condition = json!({
        "type": kind,
        "status": status,
        "lastProbeTime": null,
        "lastTransitionTime": crate::objects::now(),
    });
    if let Some(reason) = reason {
        condition["reason"] = json!(reason);
    }
    condition
}

/// The fields every started pod's status has: addresses, start time, scheduling.
fn started_base(pod: &Pod, context: &Context, current: &Value) -> Value {
    let mut status = if current.is_object() {
        current.clone()
    } else {
        json!({})
    };
    let address = current
        .get("podIP")
        .and_then(Value::as_str)
        .map_or_else(|| context.pod_address(), str::to_owned);
    status["hostIP"] = json!(NODE_ADDRESS);
    status["hostIPs"] = json!([{"ip": NODE_ADDRESS}]);
    status["podIP"] = json!(address);
    status["podIPs"] = json!([{"ip": address}]);
    if status.get("startTime").is_none() {
        status["startTime"] = json!(crate::objects::now());
    }
    if let Some(init) = pod
        .spec
        .as_ref()
        .and_then(|spec| spec.init_containers.as_ref())
    {
        let now = crate::objects::now();
        status["initContainerStatuses"] = init
            .iter()
            .map(|container| {
                json!({
                    "name": container.name,
                    "image": container.image,
                    "imageID": image_id(container.image.as_deref()),
                    "containerID": container_id(pod, &container.name),
                    "ready": true,
                    "started": false,
                    "restartCount": 0,
                    "state": {"terminated": {
                        "exitCode": 0, "reason": "Completed",
                        "startedAt": now, "finishedAt": now,
                        "containerID": container_id(pod, &container.name),
                    }},
                    "lastState": {},
                })
            })
            .collect();
    }
    status
}

fn running_status(pod: &Pod, context: &Context, current: &Value) -> Value {
    let mut status = started_base(pod, context, current);
    status["phase"] = json!("Running");
    status["conditions"] = json!([
        condition("PodReadyToStartContainers", "True", None),
        condition("Initialized", "True", None),
        condition("Ready", "True", None),
        condition("ContainersReady", "True", None),
        condition("PodScheduled", "True", None),
    ]);
    let now = crate::objects::now();
    status["containerStatuses"] = containers(pod)
        .map(|(name, image)| {
            container_status(
                pod,
                (name, image),
                true,
                0,
                json!({"running": {"startedAt": now}}),
                json!({}),
            )
        })
        .collect();
    status
}

fn crash_looping_status(pod: &Pod, context: &Context, current: &Value, restarts: i64) -> Value {
    let mut status = started_base(pod, context, current);
    let names: Vec<&str> = containers(pod).map(|(name, _)| name).collect();
    let unready = format!("containers with unready status: [{}]", names.join(" "));
    status["phase"] = json!("Running");
    let mut ready = condition("Ready", "False", Some("ContainersNotReady"));
    ready["message"] = json!(unready);
    let mut containers_ready = condition("ContainersReady", "False", Some("ContainersNotReady"));
    containers_ready["message"] = json!(unready);
    status["conditions"] = json!([
        condition("PodReadyToStartContainers", "True", None),
        condition("Initialized", "True", None),
        ready,
        containers_ready,
        condition("PodScheduled", "True", None),
    ]);
    let now = crate::objects::now();
    let namespace = pod.namespace().unwrap_or_default();
    let uid = pod.metadata.uid.clone().unwrap_or_default();
    status["containerStatuses"] = containers(pod)
        .map(|(name, image)| {
            let waiting = json!({"waiting": {
                "reason": "CrashLoopBackOff",
                "message": format!(
                    "back-off 10s restarting failed container={name} pod={}_{namespace}({uid})",
                    pod.name_any()
                ),
            }});
            let last = json!({"terminated": {
                "exitCode": 1, "reason": "Error",
                "startedAt": now, "finishedAt": now,
                "containerID": container_id(pod, name),
            }});
            container_status(pod, (name, image), false, restarts, waiting, last)
        })
        .collect();
    status
}

fn failed_status(pod: &Pod, context: &Context, current: &Value) -> Value {
    terminated_status(
        pod,
        started_base(pod, context, current),
        "Failed",
        1,
        "Error",
    )
}

fn completed_status(pod: &Pod, current: &Value) -> Value {
    terminated_status(pod, current.clone(), "Succeeded", 0, "Completed")
}

fn terminated_status(pod: &Pod, mut status: Value, phase: &str, code: i32, reason: &str) -> Value {
    let why = if phase == "Succeeded" {
        "PodCompleted"
    } else {
        "PodFailed"
    };
    status["phase"] = json!(phase);
    status["conditions"] = json!([
        condition("PodReadyToStartContainers", "False", None),
        condition("Initialized", "True", None),
        condition("Ready", "False", Some(why)),
        condition("ContainersReady", "False", Some(why)),
        condition("PodScheduled", "True", None),
    ]);
    let now = crate::objects::now();
    let started = status
        .get("startTime")
        .cloned()
        .unwrap_or_else(|| json!(now));
    status["containerStatuses"] = containers(pod)
        .map(|(name, image)| {
            let state = json!({"terminated": {
                "exitCode": code, "reason": reason,
                "startedAt": started, "finishedAt": now,
                "containerID": container_id(pod, name),
            }});
            container_status(pod, (name, image), false, 0, state, json!({}))
        })
        .collect();
    status
}

/// A container's status: running (ready and started) or not, with its state.
fn container_status(
    pod: &Pod,
    (name, image): (&str, Option<&str>),
    running: bool,
    restarts: i64,
    state: Value,
    last_state: Value,
) -> Value {
    json!({
        "name": name,
        "image": image,
        "imageID": image_id(image),
        "containerID": container_id(pod, name),
        "ready": running,
        "started": running,
        "restartCount": restarts,
        "state": state,
        "lastState": last_state,
    })
}

/// The pod's containers: name and image.
fn containers(pod: &Pod) -> impl Iterator<Item = (&str, Option<&str>)> {
    pod.spec
        .iter()
        .flat_map(|spec| spec.containers.iter())
        .map(|container| (container.name.as_str(), container.image.as_deref()))
}

/// An image reference resolved as a runtime would report it (the image as named, with a
/// digest made from the name: there is no registry).
fn image_id(image: Option<&str>) -> String {
    use sha2::Digest;
    let image = image.unwrap_or_default();
    let digest = sha2::Sha256::digest(image.as_bytes());
    let hex: String = digest.iter().map(|byte| format!("{byte:02x}")).collect();
    format!("{image}@sha256:{hex}")
}

/// A container ID unique to the pod and container.
fn container_id(pod: &Pod, container: &str) -> String {
    let uid = pod.metadata.uid.as_deref().unwrap_or_default();
    format!(
        "kro-simulated://{}",
        super::support::template_hash(&format!("{uid}/{container}"))
    )
}
