//! The other way to deploy from one command (TypeKro's "kro" strategy): hand the RGD and the
//! instance to a kro controller running in the cluster and follow them, through watches,
//! until the RGD is Active and the instance ACTIVE at its current generation.

use kro_graph::CompiledGraph;
use kro_graph::metadata::RGD_KIND;
use kro_runtime::ObjectKey;
use kube::api::{Api, DynamicObject, Patch};
use serde_json::Value as Json;
use tokio::time::Instant;

use super::{DirectEngine, DirectError, Progress, Reporter, Stop};
use crate::json::text;
use crate::kinds::rgd_resource;
use crate::list_watch::{Event, ListWatch};
use crate::stop::sleep_until;

/// What a watched object says about the wait.
enum Verdict {
    /// What was waited for.
    Done,
    /// Not yet, and why.
    Waiting(String),
    /// It will not happen, and why.
    Failed(String),
}

impl DirectEngine {
    /// Applies `rgd` (the document, server-side apply), waits until the controller reports
    /// it Active, applies `instance` (of `graph`'s kind) and, unless
    /// [`wait`](super::DirectConfig::wait) is off, waits until the controller reports it
    /// `ACTIVE` and Ready at its current generation. The instance as the server has it.
    ///
    /// # Errors
    /// When the cluster does not serve RGDs (kro is not installed), the RGD is not accepted,
    /// a write is refused, the timeout passes ([`DirectError::TimedOut`] with the last
    /// reason) or the caller stops it.
    pub async fn apply_through_kro(
        &self,
        rgd: &Json,
        graph: &CompiledGraph,
        instance: &Json,
        report: Reporter<'_>,
        stop: &Stop,
    ) -> Result<Json, DirectError> {
        let deadline = self.config.timeout.map(|timeout| Instant::now() + timeout);
        let handing = self.hand_to_kro(rgd, graph, instance, report, stop, deadline);
        super::error::within(self.config.timeout, handing).await
    }

    /// Deletes the instance `name` (in `namespace`, for a namespaced kind) of `graph`'s kind
    /// for the kro controller to take apart, and waits until it is gone: the controller deletes
    /// its objects and then lets the instance go. The RGD is left in place. Deleting an
    /// instance that is not there is not an error.
    ///
    /// # Errors
    /// When the delete is refused, the timeout passes or the caller stops it.
    pub async fn delete_through_kro(
        &self,
        graph: &CompiledGraph,
        name: &str,
        namespace: Option<&str>,
        report: Reporter<'_>,
        stop: &Stop,
    ) -> Result<(), DirectError> {
        let deadline = self.config.timeout.map(|timeout| Instant::now() + timeout);
        let names = &graph.names;
        let key = ObjectKey {
            group: names.group.clone(),
            kind: names.kind.clone(),
            namespace: namespace.map(str::to_owned),
            name: name.to_owned(),
        };
        let api_version = format!("{}/{}", names.group, names.version);
        self.delete_object(&key, &api_version, "", deadline, stop)
            .await?;
        report(&Progress::Deleted { key, order: 0 });
        Ok(())
    }

    async fn hand_to_kro(
        &self,
        rgd: &Json,
        graph: &CompiledGraph,
        instance: &Json,
        report: Reporter<'_>,
        stop: &Stop,
        deadline: Option<Instant>,
    ) -> Result<Json, DirectError> {
        let rgd_key = ObjectKey {
            group: kro_graph::metadata::GROUP.to_owned(),
            kind: RGD_KIND.to_owned(),
            namespace: None,
            name: text(rgd, "/metadata/name").to_owned(),
        };
        let rgds: Api<DynamicObject> = Api::all_with(self.client.clone(), &rgd_resource());
        rgds.patch(&rgd_key.name, &self.params, &Patch::Apply(rgd))
            .await
            .map_err(|source| match &source {
                kube::Error::Api(status) if status.code == 404 => DirectError::KroMissing,
                _ => DirectError::Submit {
                    key: Box::new(rgd_key.clone()),
                    source: Box::new(source),
                },
            })?;
        report(&Progress::Submitted {
            key: rgd_key.clone(),
        });
        self.wait_for(&rgds, &rgd_key, deadline, stop, report, rgd_verdict)
            .await?;

        let names = &graph.names;
        let kind = self
            .kinds
            .resolve(&names.group, &names.version, &names.kind)
            .await
            .map_err(DirectError::Kind)?;
        let namespace = text(instance, "/metadata/namespace");
        let instance_key = ObjectKey {
            group: names.group.clone(),
            kind: names.kind.clone(),
            namespace: (!namespace.is_empty()).then(|| namespace.to_owned()),
            name: text(instance, "/metadata/name").to_owned(),
        };
        let instances = kind.api(&self.client, instance_key.namespace.as_deref());
        let applied = instances
            .patch(&instance_key.name, &self.params, &Patch::Apply(instance))
            .await
            .map_err(|source| DirectError::Submit {
                key: Box::new(instance_key.clone()),
                source: Box::new(source),
            })?;
        report(&Progress::Submitted {
            key: instance_key.clone(),
        });
        if !self.config.wait {
            return serde_json::to_value(applied).map_err(DirectError::Json);
        }
        self.wait_for(
            &instances,
            &instance_key,
            deadline,
            stop,
            report,
            instance_verdict,
        )
        .await
    }

    /// Follows the object `key` through a watch until `verdict` says done (its last state)
    /// or failed, the deadline passes or the caller stops; reports each new reason to wait.
    async fn wait_for(
        &self,
        api: &Api<DynamicObject>,
        key: &ObjectKey,
        deadline: Option<Instant>,
        stop: &Stop,
        report: Reporter<'_>,
        verdict: fn(&Json) -> Verdict,
    ) -> Result<Json, DirectError> {
        let mut stream = ListWatch::new(
            api.clone(),
            None,
            Some(format!("metadata.name={}", key.name)),
        );
        let mut stop = stop.clone();
        let mut last = "not observed yet".to_owned();
        loop {
            let event = tokio::select! {
                event = stream.next() => event,
                () = sleep_until(deadline) => {
                    return Err(DirectError::TimedOut { waiting: vec![format!("{key}: {last}")] });
                }
                () = stop.stopped() => {
                    return Err(DirectError::Stopped { waiting: vec![format!("{key}: {last}")] });
                }
            };
            let object = match event {
                Ok(Event::Apply(object) | Event::InitApply(object)) => object,
                Ok(_) => continue,
                Err(error) => {
                    tracing::debug!(%error, "watch failed; retrying");
                    continue;
                }
            };
            let object = serde_json::to_value(object).map_err(DirectError::Json)?;
            match verdict(&object) {
                Verdict::Done => {
                    report(&Progress::Settled {
                        key: key.clone(),
                        state: text(&object, "/status/state").to_owned(),
                    });
                    return Ok(object);
                }
                Verdict::Waiting(reason) => {
                    if reason != last {
                        report(&Progress::Awaiting {
                            key: key.clone(),
                            reason: reason.clone(),
                        });
                        last = reason;
                    }
                }
                Verdict::Failed(reason) => {
                    return Err(DirectError::Refused {
                        key: Box::new(key.clone()),
                        reason,
                    });
                }
            }
        }
    }
}

/// The condition `kind` of an object's status, when it speaks of the current generation.
fn current_condition<'a>(object: &'a Json, kind: &str) -> Option<&'a Json> {
    let generation = object
        .pointer("/metadata/generation")
        .and_then(Json::as_i64);
    object
        .pointer("/status/conditions")
        .and_then(Json::as_array)?
        .iter()
        .find(|condition| condition["type"] == kind)
        .filter(|condition| {
            condition["observedGeneration"]
                .as_i64()
                .is_none_or(|observed| Some(observed) == generation)
        })
}

/// An RGD is done when Active and Ready at its generation; not accepted (it does not
/// compile) is final.
fn rgd_verdict(rgd: &Json) -> Verdict {
    if let Some(accepted) = current_condition(rgd, "GraphAccepted")
        && accepted["status"] == "False"
    {
        return Verdict::Failed(format!("not accepted: {}", text(accepted, "/message")));
    }
    let ready = current_condition(rgd, "Ready");
    if text(rgd, "/status/state") == "Active"
        && ready.is_some_and(|ready| ready["status"] == "True")
    {
        return Verdict::Done;
    }
    Verdict::Waiting(match ready {
        Some(ready) => format!("{}: {}", text(ready, "/reason"), text(ready, "/message")),
        None => "the controller has not reported on this generation yet".to_owned(),
    })
}

/// An instance is done when ACTIVE and Ready at its generation.
fn instance_verdict(instance: &Json) -> Verdict {
    let ready = current_condition(instance, "Ready");
    let state = text(instance, "/status/state");
    if state == "ACTIVE" && ready.is_some_and(|ready| ready["status"] == "True") {
        return Verdict::Done;
    }
    Verdict::Waiting(match ready {
        Some(ready) => format!(
            "{} ({}: {})",
            if state.is_empty() { "no state" } else { state },
            text(ready, "/reason"),
            text(ready, "/message")
        ),
        None => "the controller has not reported on this generation yet".to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn an_instance_is_done_only_when_active_and_ready_at_its_generation() {
        let instance = |state: &str, ready: &str, observed: i64| {
            json!({"metadata": {"generation": 2}, "status": {"state": state, "conditions": [
                {"type": "Ready", "status": ready, "observedGeneration": observed,
                 "reason": "R", "message": "m"}]}})
        };
        assert!(matches!(
            instance_verdict(&instance("ACTIVE", "True", 2)),
            Verdict::Done
        ));
        assert!(matches!(
            instance_verdict(&instance("ACTIVE", "True", 1)),
            Verdict::Waiting(_)
        ));
        assert!(matches!(
            instance_verdict(&instance("IN_PROGRESS", "False", 2)),
            Verdict::Waiting(reason) if reason == "IN_PROGRESS (R: m)"
        ));
        assert!(matches!(instance_verdict(&json!({})), Verdict::Waiting(_)));
    }

    #[test]
    fn an_rgd_that_is_not_accepted_fails_and_an_active_one_is_done() {
        let refused = json!({"metadata": {"generation": 1}, "status": {"state": "Inactive",
            "conditions": [{"type": "GraphAccepted", "status": "False",
                "observedGeneration": 1, "message": "bad expression"}]}});
        assert!(matches!(
            rgd_verdict(&refused),
            Verdict::Failed(reason) if reason == "not accepted: bad expression"
        ));
        let active = json!({"metadata": {"generation": 1}, "status": {"state": "Active",
            "conditions": [{"type": "Ready", "status": "True", "observedGeneration": 1}]}});
        assert!(matches!(rgd_verdict(&active), Verdict::Done));
    }
}
