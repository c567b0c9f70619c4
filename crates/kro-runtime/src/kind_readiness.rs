//! Default readiness by kind: whether an applied object has done what its kind is for (a
//! rollout finished, a Job completed, a claim bound), for resources whose author wrote no
//! readyWhen.
//!
//! The planner consults it only under [`PlanOptions::kind_readiness`](crate::PlanOptions),
//! which the direct deploy engine sets; the controller keeps upstream kro's rule that an
//! observed object is ready. The check reads the object alone, and a field that is missing or
//! of the wrong type counts as absent: any JSON gives an answer.

use serde_json::Value as Json;

use crate::observed::group_of;

/// What the per-kind check says about one observed object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KindReadiness {
    /// The object is ready (or its kind has no check: being applied is enough).
    Ready,
    /// Not ready yet, for this reason ("1 of 2 replicas available").
    Waiting(String),
    /// The object will not become ready unless something changes ("BackoffLimitExceeded: Job
    /// has reached the specified backoff limit").
    Failed(String),
}

/// Whether `object` is ready by the rules of its kind, decided on its `apiVersion` group and
/// `kind`:
///
/// - `apps` Deployment: the generation is observed, and `updatedReplicas`,
///   `availableReplicas` and `readyReplicas` reach `spec.replicas` (default 1); a
///   `Progressing` condition False for `ProgressDeadlineExceeded` fails.
/// - `apps` StatefulSet: the generation is observed and `readyReplicas` reaches the replicas;
///   under a `RollingUpdate` strategy (the default) the update is done too: `currentRevision`
///   equals a set `updateRevision`, or `updatedReplicas` reaches the replicas less the
///   `partition`.
/// - `apps` DaemonSet: the generation is observed, `desiredNumberScheduled` is above 0,
///   `numberReady` reaches it, and so does `updatedNumberScheduled` when present.
/// - `apps` ReplicaSet and core ReplicationController: `readyReplicas` reaches the replicas.
/// - `batch` Job: ready once its `Complete` condition is True; fails on a True `Failed`
///   condition, or on more failed pods (`status.failed`) than `spec.backoffLimit` (default 6).
/// - core Pod: phase Succeeded, or Running with a True `Ready` condition; phase Failed fails.
/// - core Service: a `LoadBalancer` needs an `ip` or `hostname` in its first ingress; other
///   types are ready.
/// - core PersistentVolumeClaim: phase Bound (Lost fails); PersistentVolume: phase Available
///   or Bound (Failed fails); Namespace: phase Active.
/// - `apiextensions.k8s.io` CustomResourceDefinition: conditions `Established` and
///   `NamesAccepted` True.
/// - `kro.run` ResourceGraphDefinition: `status.state` Active; any other `kro.run` kind (an
///   instance): `status.state` ACTIVE and, when it has a `Ready` condition, that condition
///   True and (when it says) for the object's current generation.
/// - Anything else (and JSON without a string `apiVersion` and `kind`) is ready.
///
/// ```
/// use kro_runtime::{KindReadiness, kind_readiness};
///
/// let web = serde_json::json!({
///     "apiVersion": "apps/v1", "kind": "Deployment",
///     "metadata": {"name": "web", "generation": 1}, "spec": {"replicas": 2},
///     "status": {"observedGeneration": 1, "updatedReplicas": 2, "availableReplicas": 1},
/// });
/// assert_eq!(
///     kind_readiness(&web),
///     KindReadiness::Waiting("1 of 2 replicas available".to_owned())
/// );
/// ```
pub fn kind_readiness(object: &Json) -> KindReadiness {
    let (Some(api_version), Some(kind)) = (text(object, "/apiVersion"), text(object, "/kind"))
    else {
        // Not an object of any kind: nothing to check.
        return KindReadiness::Ready;
    };
    let verdict = match (group_of(api_version), kind) {
        ("apps", "Deployment") => deployment(object),
        ("apps", "StatefulSet") => stateful_set(object),
        ("apps", "DaemonSet") => daemon_set(object),
        ("apps", "ReplicaSet") | ("", "ReplicationController") => enough(
            object,
            "readyReplicas",
            replicas(object),
            "replicas",
            "ready",
        ),
        ("batch", "Job") => job(object),
        ("", "Pod") => pod(object),
        ("", "Service") => service(object),
        ("", "PersistentVolumeClaim") => phase(object, &["Bound"], &["Lost"]),
        ("", "PersistentVolume") => phase(object, &["Available", "Bound"], &["Failed"]),
        ("", "Namespace") => phase(object, &["Active"], &[]),
        ("apiextensions.k8s.io", "CustomResourceDefinition") => ["Established", "NamesAccepted"]
            .into_iter()
            .try_for_each(|condition| condition_holds(object, condition)),
        ("kro.run", "ResourceGraphDefinition") => state(object, "Active"),
        ("kro.run", _) => kro_instance(object),
        _ => Ok(()),
    };
    match verdict {
        Ok(()) => KindReadiness::Ready,
        Err(unready) => unready,
    }
}

/// `Ok` when ready, else the waiting or failed verdict.
type Verdict = Result<(), KindReadiness>;

fn wait(reason: String) -> Verdict {
    Err(KindReadiness::Waiting(reason))
}

fn fail(reason: String) -> Verdict {
    Err(KindReadiness::Failed(reason))
}

fn deployment(object: &Json) -> Verdict {
    generation_observed(object)?;
    // Checked after the generation: a condition of an older generation says nothing of this one.
    if let Some(progressing) = condition(object, "Progressing")
        && text(progressing, "/status") == Some("False")
        && text(progressing, "/reason") == Some("ProgressDeadlineExceeded")
    {
        let message = text(progressing, "/message").unwrap_or("progress deadline exceeded");
        return fail(format!("ProgressDeadlineExceeded: {message}"));
    }
    let replicas = replicas(object);
    enough(object, "updatedReplicas", replicas, "replicas", "updated")?;
    enough(
        object,
        "availableReplicas",
        replicas,
        "replicas",
        "available",
    )?;
    enough(object, "readyReplicas", replicas, "replicas", "ready")
}

fn stateful_set(object: &Json) -> Verdict {
    generation_observed(object)?;
    let replicas = replicas(object);
    enough(object, "readyReplicas", replicas, "replicas", "ready")?;
    let strategy = text(object, "/spec/updateStrategy/type").unwrap_or("RollingUpdate");
    if strategy != "RollingUpdate" {
        // OnDelete: pods are updated only when someone deletes them.
        return Ok(());
    }
    let update_revision = text(object, "/status/updateRevision");
    if update_revision.is_some() && text(object, "/status/currentRevision") == update_revision {
        return Ok(());
    }
    // Ordinals below the partition stay at the old revision by design.
    let partition = int(object, "/spec/updateStrategy/rollingUpdate/partition").unwrap_or(0);
    let updated = replicas.saturating_sub(partition.max(0)).max(0);
    enough(object, "updatedReplicas", updated, "replicas", "updated")
}

fn daemon_set(object: &Json) -> Verdict {
    generation_observed(object)?;
    let desired = int(object, "/status/desiredNumberScheduled").unwrap_or(0);
    if desired <= 0 {
        return wait("no pods scheduled yet".to_owned());
    }
    enough(object, "numberReady", desired, "pods", "ready")?;
    match int(object, "/status/updatedNumberScheduled") {
        Some(updated) if updated != desired => wait(format!("{updated} of {desired} pods updated")),
        _ => Ok(()),
    }
}

fn job(object: &Json) -> Verdict {
    if condition_is_true(object, "Complete") {
        return Ok(());
    }
    if let Some(failed) = condition(object, "Failed")
        && text(failed, "/status") == Some("True")
    {
        let reason = text(failed, "/reason").unwrap_or("Failed");
        return fail(match text(failed, "/message") {
            Some(message) => format!("{reason}: {message}"),
            None => reason.to_owned(),
        });
    }
    let backoff_limit = int(object, "/spec/backoffLimit").unwrap_or(6);
    let failed = int(object, "/status/failed").unwrap_or(0);
    if failed > backoff_limit {
        return fail(format!(
            "{failed} pods failed, more than the backoffLimit {backoff_limit}"
        ));
    }
    let completions = int(object, "/spec/completions").unwrap_or(1);
    let succeeded = int(object, "/status/succeeded").unwrap_or(0);
    if succeeded >= completions {
        return wait(format!(
            "{succeeded} of {completions} completions succeeded, condition Complete not True yet"
        ));
    }
    wait(format!(
        "{succeeded} of {completions} completions succeeded"
    ))
}

fn pod(object: &Json) -> Verdict {
    match text(object, "/status/phase") {
        Some("Succeeded") => Ok(()),
        Some("Running") => condition_holds(object, "Ready"),
        Some("Failed") => {
            let why = [
                text(object, "/status/reason"),
                text(object, "/status/message"),
            ]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join(": ");
            fail(if why.is_empty() {
                "phase Failed".to_owned()
            } else {
                format!("phase Failed: {why}")
            })
        }
        Some(phase) => wait(format!("phase {phase}")),
        None => wait("no phase yet".to_owned()),
    }
}

fn service(object: &Json) -> Verdict {
    if text(object, "/spec/type") != Some("LoadBalancer") {
        return Ok(());
    }
    let has_address = [
        "/status/loadBalancer/ingress/0/ip",
        "/status/loadBalancer/ingress/0/hostname",
    ]
    .into_iter()
    .any(|pointer| text(object, pointer).is_some_and(|address| !address.is_empty()));
    if has_address {
        Ok(())
    } else {
        wait("no load balancer address yet".to_owned())
    }
}

/// Ready in one of the `ready` phases, failed in one of the `failed` ones, else waiting.
fn phase(object: &Json, ready: &[&str], failed: &[&str]) -> Verdict {
    match text(object, "/status/phase") {
        Some(phase) if ready.contains(&phase) => Ok(()),
        Some(phase) if failed.contains(&phase) => fail(format!("phase {phase}")),
        Some(phase) => wait(format!("phase {phase}")),
        None => wait("no phase yet".to_owned()),
    }
}

/// `status.state` is `expected`.
fn state(object: &Json, expected: &str) -> Verdict {
    match text(object, "/status/state") {
        Some(state) if state == expected => Ok(()),
        Some(state) => wait(format!("state {state}")),
        None => wait("no state yet".to_owned()),
    }
}

fn kro_instance(object: &Json) -> Verdict {
    state(object, "ACTIVE")?;
    let Some(ready) = condition(object, "Ready") else {
        return Ok(());
    };
    if text(ready, "/status") != Some("True") {
        return wait("condition Ready not True".to_owned());
    }
    match (
        int(ready, "/observedGeneration"),
        int(object, "/metadata/generation"),
    ) {
        (Some(observed), Some(generation)) if observed != generation => wait(format!(
            "generation {generation} not observed yet (condition Ready is for {observed})"
        )),
        _ => Ok(()),
    }
}

/// The object's controller has seen its current spec (`status.observedGeneration` at least
/// `metadata.generation`); an object without a generation passes.
fn generation_observed(object: &Json) -> Verdict {
    let Some(generation) = int(object, "/metadata/generation") else {
        return Ok(());
    };
    match int(object, "/status/observedGeneration") {
        Some(observed) if observed >= generation => Ok(()),
        Some(observed) => wait(format!(
            "generation {generation} not observed yet (observed {observed})"
        )),
        None => wait(format!("generation {generation} not observed yet")),
    }
}

/// `spec.replicas`, 1 when not set (the API server's default).
fn replicas(object: &Json) -> i64 {
    int(object, "/spec/replicas").unwrap_or(1)
}

/// `status.<field>` (0 when absent) is at least `wanted`.
fn enough(object: &Json, field: &str, wanted: i64, noun: &str, adjective: &str) -> Verdict {
    let have = object
        .get("status")
        .and_then(|status| status.get(field))
        .and_then(Json::as_i64)
        .unwrap_or(0);
    if have >= wanted {
        Ok(())
    } else {
        wait(format!("{have} of {wanted} {noun} {adjective}"))
    }
}

/// The condition of this type is True.
fn condition_holds(object: &Json, kind: &str) -> Verdict {
    if condition_is_true(object, kind) {
        Ok(())
    } else {
        wait(format!("condition {kind} not True"))
    }
}

fn condition_is_true(object: &Json, kind: &str) -> bool {
    condition(object, kind).is_some_and(|condition| text(condition, "/status") == Some("True"))
}

/// The entry of `status.conditions` whose `type` is `kind`.
fn condition<'a>(object: &'a Json, kind: &str) -> Option<&'a Json> {
    object
        .pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|condition| text(condition, "/type") == Some(kind))
}

fn int(object: &Json, pointer: &str) -> Option<i64> {
    object.pointer(pointer).and_then(Json::as_i64)
}

fn text<'a>(object: &'a Json, pointer: &str) -> Option<&'a str> {
    object.pointer(pointer).and_then(Json::as_str)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn waiting(reason: &str) -> KindReadiness {
        KindReadiness::Waiting(reason.to_owned())
    }

    fn failed(reason: &str) -> KindReadiness {
        KindReadiness::Failed(reason.to_owned())
    }

    fn deployment(spec: Json, status: Json) -> Json {
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
               "metadata": {"name": "web", "namespace": "default", "generation": 2},
               "spec": spec, "status": status})
    }

    #[test]
    fn a_deployment_is_ready_once_its_replicas_are_updated_and_available() {
        let status = json!({"observedGeneration": 2, "updatedReplicas": 2,
                            "availableReplicas": 2, "readyReplicas": 2});
        assert_eq!(
            kind_readiness(&deployment(json!({"replicas": 2}), status)),
            KindReadiness::Ready
        );
    }

    #[test]
    fn a_deployment_waits_for_its_replicas_and_generation() {
        let cases = [
            (
                json!({"replicas": 2}),
                json!({}),
                "generation 2 not observed yet",
            ),
            (
                json!({"replicas": 2}),
                json!({"observedGeneration": 1, "updatedReplicas": 2, "availableReplicas": 2}),
                "generation 2 not observed yet (observed 1)",
            ),
            (
                json!({"replicas": 2}),
                json!({"observedGeneration": 2, "updatedReplicas": 1, "availableReplicas": 2}),
                "1 of 2 replicas updated",
            ),
            (
                json!({"replicas": 2}),
                json!({"observedGeneration": 2, "updatedReplicas": 2, "availableReplicas": 1,
                       "readyReplicas": 2}),
                "1 of 2 replicas available",
            ),
            (
                json!({"replicas": 2}),
                json!({"observedGeneration": 2, "updatedReplicas": 2, "availableReplicas": 2}),
                "0 of 2 replicas ready",
            ),
            // spec.replicas defaults to 1.
            (
                json!({}),
                json!({"observedGeneration": 2}),
                "0 of 1 replicas updated",
            ),
        ];
        for (spec, status, reason) in cases {
            assert_eq!(
                kind_readiness(&deployment(spec, status.clone())),
                waiting(reason),
                "{status}"
            );
        }
    }

    #[test]
    fn a_deployment_of_zero_replicas_is_ready_once_observed() {
        let zero = json!({"replicas": 0});
        assert_eq!(
            kind_readiness(&deployment(zero.clone(), json!({"observedGeneration": 2}))),
            KindReadiness::Ready
        );
        assert_eq!(
            kind_readiness(&deployment(zero, json!({}))),
            waiting("generation 2 not observed yet")
        );
    }

    #[test]
    fn a_deployment_past_its_progress_deadline_fails() {
        let status = json!({"observedGeneration": 2, "updatedReplicas": 1, "conditions": [
            {"type": "Available", "status": "False"},
            {"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded",
             "message": "ReplicaSet \"web-1\" has timed out progressing."}]});
        assert_eq!(
            kind_readiness(&deployment(json!({"replicas": 2}), status)),
            failed("ProgressDeadlineExceeded: ReplicaSet \"web-1\" has timed out progressing.")
        );
    }

    #[test]
    fn a_deployment_with_ill_typed_fields_reads_them_as_absent() {
        let object = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"generation": "2"}, "spec": {"replicas": "3"},
            "status": {"updatedReplicas": "1", "conditions": {"type": "Progressing"}}});
        assert_eq!(kind_readiness(&object), waiting("0 of 1 replicas updated"));
        let object = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": [],
            "spec": null, "status": "ready"});
        assert_eq!(kind_readiness(&object), waiting("0 of 1 replicas updated"));
    }

    fn stateful_set(spec: Json, status: Json) -> Json {
        json!({"apiVersion": "apps/v1", "kind": "StatefulSet",
               "metadata": {"name": "db", "generation": 1}, "spec": spec, "status": status})
    }

    #[test]
    fn a_stateful_set_is_ready_when_its_replicas_are_ready_at_the_update_revision() {
        let spec = json!({"replicas": 3});
        let done = json!({"observedGeneration": 1, "readyReplicas": 3,
                          "currentRevision": "db-2", "updateRevision": "db-2"});
        assert_eq!(
            kind_readiness(&stateful_set(spec.clone(), done)),
            KindReadiness::Ready
        );
        let updated = json!({"observedGeneration": 1, "readyReplicas": 3, "updatedReplicas": 3,
                             "currentRevision": "db-1", "updateRevision": "db-2"});
        assert_eq!(
            kind_readiness(&stateful_set(spec.clone(), updated)),
            KindReadiness::Ready
        );
        let rolling = json!({"observedGeneration": 1, "readyReplicas": 3, "updatedReplicas": 1,
                             "currentRevision": "db-1", "updateRevision": "db-2"});
        assert_eq!(
            kind_readiness(&stateful_set(spec.clone(), rolling.clone())),
            waiting("1 of 3 replicas updated")
        );
        let partitioned = json!({"replicas": 3,
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 2}}});
        assert_eq!(
            kind_readiness(&stateful_set(partitioned, rolling.clone())),
            KindReadiness::Ready
        );
        let on_delete = json!({"replicas": 3, "updateStrategy": {"type": "OnDelete"}});
        assert_eq!(
            kind_readiness(&stateful_set(on_delete, rolling)),
            KindReadiness::Ready
        );
        let starting = json!({"observedGeneration": 1, "readyReplicas": 2});
        assert_eq!(
            kind_readiness(&stateful_set(spec.clone(), starting)),
            waiting("2 of 3 replicas ready")
        );
        assert_eq!(
            kind_readiness(&stateful_set(spec, json!({"readyReplicas": 3}))),
            waiting("generation 1 not observed yet")
        );
        assert_eq!(
            kind_readiness(&stateful_set(json!(7), json!({"readyReplicas": [3]}))),
            waiting("generation 1 not observed yet")
        );
    }

    fn daemon_set(status: Json) -> Json {
        json!({"apiVersion": "apps/v1", "kind": "DaemonSet",
               "metadata": {"name": "agent", "generation": 4}, "status": status})
    }

    #[test]
    fn a_daemon_set_is_ready_when_every_scheduled_pod_is_ready_and_updated() {
        let cases = [
            (
                json!({"observedGeneration": 4, "desiredNumberScheduled": 2, "numberReady": 2}),
                KindReadiness::Ready,
            ),
            (
                json!({"observedGeneration": 4, "desiredNumberScheduled": 2, "numberReady": 2,
                       "updatedNumberScheduled": 2}),
                KindReadiness::Ready,
            ),
            (
                json!({"observedGeneration": 4, "desiredNumberScheduled": 2, "numberReady": 2,
                       "updatedNumberScheduled": 1}),
                waiting("1 of 2 pods updated"),
            ),
            (
                json!({"observedGeneration": 4, "desiredNumberScheduled": 2, "numberReady": 1}),
                waiting("1 of 2 pods ready"),
            ),
            (
                json!({"observedGeneration": 4, "desiredNumberScheduled": 0}),
                waiting("no pods scheduled yet"),
            ),
            (
                json!({"observedGeneration": 3, "desiredNumberScheduled": 2, "numberReady": 2}),
                waiting("generation 4 not observed yet (observed 3)"),
            ),
            (
                json!({"observedGeneration": 4, "desiredNumberScheduled": "2"}),
                waiting("no pods scheduled yet"),
            ),
        ];
        for (status, expected) in cases {
            assert_eq!(
                kind_readiness(&daemon_set(status.clone())),
                expected,
                "{status}"
            );
        }
    }

    #[test]
    fn replica_sets_and_replication_controllers_count_ready_replicas() {
        for (api_version, kind) in [("apps/v1", "ReplicaSet"), ("v1", "ReplicationController")] {
            let object = |spec: Json, status: Json| {
                json!({"apiVersion": api_version, "kind": kind, "metadata": {"name": "r"},
                       "spec": spec, "status": status})
            };
            assert_eq!(
                kind_readiness(&object(json!({"replicas": 2}), json!({"readyReplicas": 2}))),
                KindReadiness::Ready
            );
            assert_eq!(
                kind_readiness(&object(json!({"replicas": 2}), json!({"readyReplicas": 1}))),
                waiting("1 of 2 replicas ready")
            );
            assert_eq!(
                kind_readiness(&object(json!({}), json!({"readyReplicas": true}))),
                waiting("0 of 1 replicas ready")
            );
            assert_eq!(
                kind_readiness(&object(json!({"replicas": 0}), json!(null))),
                KindReadiness::Ready
            );
        }
    }

    fn job(spec: Json, status: Json) -> Json {
        json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "migrate"},
               "spec": spec, "status": status})
    }

    #[test]
    fn a_job_is_ready_when_complete_and_fails_when_failed() {
        let cases = [
            (
                json!({}),
                json!({"succeeded": 1, "conditions": [{"type": "Complete", "status": "True"}]}),
                KindReadiness::Ready,
            ),
            (
                json!({}),
                json!({"failed": 7, "conditions": [{"type": "Failed", "status": "True",
                    "reason": "BackoffLimitExceeded",
                    "message": "Job has reached the specified backoff limit"}]}),
                failed("BackoffLimitExceeded: Job has reached the specified backoff limit"),
            ),
            (
                json!({}),
                json!({"conditions": [{"type": "Failed", "status": "True"}]}),
                failed("Failed"),
            ),
            (
                json!({"backoffLimit": 1}),
                json!({"failed": 2}),
                failed("2 pods failed, more than the backoffLimit 1"),
            ),
            (
                json!({}),
                json!({"failed": 6}),
                waiting("0 of 1 completions succeeded"),
            ),
            (
                json!({}),
                json!({"failed": 7}),
                failed("7 pods failed, more than the backoffLimit 6"),
            ),
            (
                json!({"completions": 3}),
                json!({"succeeded": 1, "conditions": [{"type": "Failed", "status": "False"}]}),
                waiting("1 of 3 completions succeeded"),
            ),
            (
                json!({}),
                json!({"succeeded": 1}),
                waiting("1 of 1 completions succeeded, condition Complete not True yet"),
            ),
            (
                json!({"completions": "3", "backoffLimit": null}),
                json!({"succeeded": "1", "conditions": "Complete"}),
                waiting("0 of 1 completions succeeded"),
            ),
        ];
        for (spec, status, expected) in cases {
            assert_eq!(
                kind_readiness(&job(spec, status.clone())),
                expected,
                "{status}"
            );
        }
    }

    fn pod(status: Json) -> Json {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "status": status})
    }

    #[test]
    fn a_pod_is_ready_when_running_and_ready_or_succeeded() {
        let cases = [
            (json!({"phase": "Succeeded"}), KindReadiness::Ready),
            (
                json!({"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}),
                KindReadiness::Ready,
            ),
            (
                json!({"phase": "Running", "conditions": [{"type": "Ready", "status": "False"}]}),
                waiting("condition Ready not True"),
            ),
            (
                json!({"phase": "Running"}),
                waiting("condition Ready not True"),
            ),
            (json!({"phase": "Pending"}), waiting("phase Pending")),
            (json!({}), waiting("no phase yet")),
            (json!({"phase": 3}), waiting("no phase yet")),
            (json!({"phase": "Failed"}), failed("phase Failed")),
            (
                json!({"phase": "Failed", "reason": "Evicted", "message": "low on memory"}),
                failed("phase Failed: Evicted: low on memory"),
            ),
        ];
        for (status, expected) in cases {
            assert_eq!(kind_readiness(&pod(status.clone())), expected, "{status}");
        }
    }

    #[test]
    fn a_load_balancer_service_waits_for_an_address() {
        let service = |spec: Json, status: Json| {
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
                   "spec": spec, "status": status})
        };
        let balancer = json!({"type": "LoadBalancer"});
        let cases = [
            (json!({}), json!({}), KindReadiness::Ready),
            (json!({"type": "NodePort"}), json!({}), KindReadiness::Ready),
            (
                balancer.clone(),
                json!({"loadBalancer": {"ingress": [{"ip": "10.0.0.9"}]}}),
                KindReadiness::Ready,
            ),
            (
                balancer.clone(),
                json!({"loadBalancer": {"ingress": [{"hostname": "lb.example.com"}]}}),
                KindReadiness::Ready,
            ),
            (
                balancer.clone(),
                json!({"loadBalancer": {}}),
                waiting("no load balancer address yet"),
            ),
            (
                balancer.clone(),
                json!({"loadBalancer": {"ingress": [{"ip": ""}]}}),
                waiting("no load balancer address yet"),
            ),
            (
                balancer,
                json!({"loadBalancer": {"ingress": {"ip": "10.0.0.9"}}}),
                waiting("no load balancer address yet"),
            ),
        ];
        for (spec, status, expected) in cases {
            assert_eq!(
                kind_readiness(&service(spec, status.clone())),
                expected,
                "{status}"
            );
        }
    }

    #[test]
    fn volumes_claims_and_namespaces_go_by_phase() {
        let object = |kind: &str, phase: Json| {
            json!({"apiVersion": "v1", "kind": kind, "metadata": {"name": "x"},
                   "status": {"phase": phase}})
        };
        let cases = [
            (
                "PersistentVolumeClaim",
                json!("Bound"),
                KindReadiness::Ready,
            ),
            (
                "PersistentVolumeClaim",
                json!("Pending"),
                waiting("phase Pending"),
            ),
            ("PersistentVolumeClaim", json!("Lost"), failed("phase Lost")),
            ("PersistentVolume", json!("Available"), KindReadiness::Ready),
            ("PersistentVolume", json!("Bound"), KindReadiness::Ready),
            (
                "PersistentVolume",
                json!("Released"),
                waiting("phase Released"),
            ),
            ("PersistentVolume", json!("Failed"), failed("phase Failed")),
            ("Namespace", json!("Active"), KindReadiness::Ready),
            (
                "Namespace",
                json!("Terminating"),
                waiting("phase Terminating"),
            ),
            ("Namespace", json!(null), waiting("no phase yet")),
        ];
        for (kind, phase, expected) in cases {
            assert_eq!(
                kind_readiness(&object(kind, phase.clone())),
                expected,
                "{kind} {phase}"
            );
        }
        let fresh = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}});
        assert_eq!(kind_readiness(&fresh), waiting("no phase yet"));
    }

    #[test]
    fn a_custom_resource_definition_needs_established_and_names_accepted() {
        let crd = |conditions: Json| {
            json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                   "metadata": {"name": "webs.example.com"},
                   "status": {"conditions": conditions}})
        };
        let accepted = json!({"type": "NamesAccepted", "status": "True"});
        let established = json!({"type": "Established", "status": "True"});
        assert_eq!(
            kind_readiness(&crd(json!([accepted, established]))),
            KindReadiness::Ready
        );
        assert_eq!(
            kind_readiness(&crd(json!([accepted]))),
            waiting("condition Established not True")
        );
        assert_eq!(
            kind_readiness(&crd(
                json!([established, {"type": "NamesAccepted", "status": "False"}])
            )),
            waiting("condition NamesAccepted not True")
        );
        assert_eq!(
            kind_readiness(&crd(json!([{"type": 1}, "Established", null]))),
            waiting("condition Established not True")
        );
    }

    #[test]
    fn a_resource_graph_definition_is_ready_when_active() {
        let rgd = |status: Json| {
            json!({"apiVersion": "kro.run/v1alpha1", "kind": "ResourceGraphDefinition",
                   "metadata": {"name": "web"}, "status": status})
        };
        assert_eq!(
            kind_readiness(&rgd(json!({"state": "Active"}))),
            KindReadiness::Ready
        );
        assert_eq!(
            kind_readiness(&rgd(json!({"state": "Inactive"}))),
            waiting("state Inactive")
        );
        assert_eq!(
            kind_readiness(&rgd(json!({"state": "ACTIVE"}))),
            waiting("state ACTIVE")
        );
        assert_eq!(kind_readiness(&rgd(json!([]))), waiting("no state yet"));
    }

    #[test]
    fn a_kro_instance_is_ready_when_active_at_its_generation() {
        let instance = |status: Json| {
            json!({"apiVersion": "kro.run/v1alpha1", "kind": "WebApp",
                   "metadata": {"name": "shop", "generation": 3}, "status": status})
        };
        let ready = |generation: Json| json!({"type": "Ready", "status": "True", "observedGeneration": generation});
        let cases = [
            (json!({"state": "ACTIVE"}), KindReadiness::Ready),
            (
                json!({"state": "ACTIVE", "conditions": [ready(json!(3))]}),
                KindReadiness::Ready,
            ),
            (
                json!({"state": "ACTIVE", "conditions": [ready(json!(null))]}),
                KindReadiness::Ready,
            ),
            (
                json!({"state": "ACTIVE", "conditions": [ready(json!(2))]}),
                waiting("generation 3 not observed yet (condition Ready is for 2)"),
            ),
            (
                json!({"state": "ACTIVE", "conditions": [{"type": "Ready", "status": "False"}]}),
                waiting("condition Ready not True"),
            ),
            (
                json!({"state": "IN_PROGRESS"}),
                waiting("state IN_PROGRESS"),
            ),
            (json!({"state": 1}), waiting("no state yet")),
            (json!(null), waiting("no state yet")),
        ];
        for (status, expected) in cases {
            assert_eq!(
                kind_readiness(&instance(status.clone())),
                expected,
                "{status}"
            );
        }
    }

    #[test]
    fn other_kinds_and_shapeless_json_are_ready() {
        for object in [
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}),
            json!({"apiVersion": "example.com/v1", "kind": "Deployment"}),
            json!({"apiVersion": "apps/v1"}),
            json!({"kind": "Pod", "apiVersion": 1}),
            json!(null),
            json!([1, 2]),
            json!("Deployment"),
        ] {
            assert_eq!(kind_readiness(&object), KindReadiness::Ready, "{object}");
        }
    }
}
