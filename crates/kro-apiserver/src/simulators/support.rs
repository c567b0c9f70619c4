//! What the simulated controllers share: their client and knobs, stage timers, the
//! controller loop, events, selectors and status patches.

use std::collections::HashMap;
use std::fmt::Debug;
use std::hash::Hash;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use futures_util::{StreamExt, TryFuture};
use k8s_openapi::api::core::v1::Event;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, OwnerReference};
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::{Client, Resource, ResourceExt};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio::sync::watch;

use super::knobs::SimulationKnobs;

/// The field manager of the simulators' writes, as kube-controller-manager's on a cluster.
pub(super) const MANAGER: &str = "kube-controller-manager";

/// How soon a failed reconcile is retried.
const RETRY: Duration = Duration::from_millis(500);

/// The most stage timers kept; older ones are dropped past it (their objects are gone).
const MAX_TIMERS: usize = 100_000;

/// Why a reconcile of a simulated controller failed (it is retried).
#[derive(Debug, thiserror::Error)]
pub(super) enum ReconcileError {
    /// A request to the server failed.
    #[error(transparent)]
    Api(#[from] kube::Error),
    /// An object did not have the shape the controller needs.
    #[error("{0}")]
    Shape(String),
}

impl ReconcileError {
    /// Whether the server refused a write for what the object is (413 too large, 422
    /// invalid), which no retry of the same object changes.
    fn is_refusal(&self) -> bool {
        matches!(self, ReconcileError::Api(kube::Error::Api(status)) if matches!(status.code, 413 | 422))
    }
}

/// The result of one reconcile.
pub(super) type Reconciled = Result<Action, ReconcileError>;

/// What every simulated controller gets: a client of the server and the knobs.
pub(crate) struct Context {
    pub(super) client: Client,
    pub(super) knobs: SimulationKnobs,
    /// The PEM of the authority that signed the server's certificate (with TLS): what every
    /// namespace's `kube-root-ca.crt` ConfigMap publishes.
    pub(super) authority_pem: Option<String>,
    timers: Mutex<HashMap<(String, &'static str), Instant>>,
    next_pod_address: AtomicU32,
    next_ingress_address: AtomicU32,
}

impl Context {
    pub(super) fn new(
        client: Client,
        knobs: SimulationKnobs,
        authority_pem: Option<String>,
    ) -> Self {
        Context {
            client,
            knobs,
            authority_pem,
            timers: Mutex::default(),
            next_pod_address: AtomicU32::new(0),
            next_ingress_address: AtomicU32::new(0),
        }
    }

    /// Whether `delay` has passed since the object with `uid` first reached `stage`; if not,
    /// how long is left. The first call starts the clock.
    pub(super) fn stage_due(
        &self,
        uid: &str,
        stage: &'static str,
        delay: Duration,
    ) -> Result<(), Duration> {
        let mut timers = self.timers.lock().unwrap_or_else(PoisonError::into_inner);
        if timers.len() >= MAX_TIMERS {
            let horizon = Instant::now().checked_sub(Duration::from_secs(600));
            timers.retain(|_, started| horizon.is_none_or(|horizon| *started > horizon));
        }
        let started = *timers
            .entry((uid.to_owned(), stage))
            .or_insert_with(Instant::now);
        let elapsed = started.elapsed();
        if elapsed >= delay {
            timers.remove(&(uid.to_owned(), stage));
            Ok(())
        } else {
            Err(delay - elapsed)
        }
    }

    /// The next pod address (10.244.0.0/16).
    pub(super) fn pod_address(&self) -> String {
        let n = self.next_pod_address.fetch_add(1, Ordering::Relaxed) % (254 * 256);
        format!("10.244.{}.{}", n / 254, n % 254 + 1)
    }

    /// The next load-balancer ingress address (172.18.255.0/24, as a kind cluster's).
    pub(super) fn ingress_address(&self) -> String {
        let n = self.next_ingress_address.fetch_add(1, Ordering::Relaxed) % 254;
        format!("172.18.255.{}", n + 1)
    }

    /// Patch parameters for the controllers' writes.
    pub(super) fn patch_params(&self) -> PatchParams {
        PatchParams {
            field_manager: Some(MANAGER.to_owned()),
            ..PatchParams::default()
        }
    }

    /// Create parameters for the controllers' writes.
    pub(super) fn post_params(&self) -> PostParams {
        PostParams {
            field_manager: Some(MANAGER.to_owned()),
            ..PostParams::default()
        }
    }

    /// Records a core/v1 Event about `object` from `component`, as client-go's recorder
    /// does. Failures are logged, never fatal (events are best effort on a cluster too).
    pub(super) async fn event<K>(
        &self,
        object: &K,
        component: &str,
        warning: bool,
        reason: &str,
        message: &str,
    ) where
        K: Resource<DynamicType = ()>,
    {
        let Some(namespace) = object.meta().namespace.clone() else {
            return;
        };
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.as_nanos());
        let now = crate::objects::now();
        let event = json!({
            "metadata": {"name": format!("{}.{nanos:x}", object.name_any()), "namespace": namespace},
            "involvedObject": {
                "kind": K::kind(&()),
                "namespace": namespace,
                "name": object.name_any(),
                "uid": object.meta().uid,
                "apiVersion": K::api_version(&()),
                "resourceVersion": object.meta().resource_version,
            },
            "reason": reason,
            "message": message,
            "source": {"component": component},
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
            "type": if warning { "Warning" } else { "Normal" },
            "eventTime": null,
            "reportingComponent": component,
            "reportingInstance": "",
        });
        let result = match serde_json::from_value::<Event>(event) {
            Ok(event) => Api::<Event>::namespaced(self.client.clone(), &namespace)
                .create(&self.post_params(), &event)
                .await
                .map(drop),
            Err(error) => {
                tracing::debug!(%error, "simulators: malformed event");
                Ok(())
            }
        };
        if let Err(error) = result {
            tracing::debug!(%error, reason, "simulators: cannot record an event");
        }
    }

    /// Merge-patches `status` of the object when it differs from `current`, with nulls for
    /// the fields that went away.
    pub(super) async fn write_status<K>(
        &self,
        api: &Api<K>,
        name: &str,
        current: &Value,
        wanted: Value,
    ) -> Result<(), ReconcileError>
    where
        K: Clone + DeserializeOwned + Debug,
    {
        if *current == wanted {
            return Ok(());
        }
        let mut patch = wanted;
        if let (Value::Object(current), Value::Object(patch)) = (current, &mut patch) {
            for key in current.keys() {
                patch.entry(key.clone()).or_insert(Value::Null);
            }
        }
        api.patch_status(
            name,
            &self.patch_params(),
            &Patch::Merge(json!({"status": patch})),
        )
        .await?;
        Ok(())
    }
}

/// Runs `controller` with `reconcile` until `stop`; failed reconciles are retried soon.
pub(super) async fn drive<K, Reconcile, Fut>(
    name: &'static str,
    controller: Controller<K>,
    reconcile: Reconcile,
    context: Arc<Context>,
    mut stop: watch::Receiver<bool>,
) where
    K: Clone + Resource + DeserializeOwned + Debug + Send + Sync + 'static,
    K::DynamicType: Debug + Eq + Hash + Clone + Unpin + Send + Sync,
    Reconcile: FnMut(Arc<K>, Arc<Context>) -> Fut,
    Fut: TryFuture<Ok = Action, Error = ReconcileError> + Send + 'static,
{
    let run = controller
        .run(
            reconcile,
            move |_object, error, _context| {
                if error.is_refusal() {
                    // The server refuses the write for the object itself (too large, invalid):
                    // trying again changes nothing until the object does.
                    tracing::debug!(%error, simulator = name, "simulated controller: refused");
                    return Action::await_change();
                }
                tracing::debug!(%error, simulator = name, "simulated controller: retrying");
                Action::requeue(RETRY)
            },
            context,
        )
        .for_each(|_| futures_util::future::ready(()));
    tokio::select! {
        () = run => {}
        _ = stop.changed() => {}
    }
}

/// A label selector in the query syntax (`a=b,c in (d)`), `None` when it selects nothing
/// expressible (an unknown operator).
pub(super) fn selector_query(selector: &LabelSelector) -> Option<String> {
    let mut parts: Vec<String> = selector
        .match_labels
        .iter()
        .flatten()
        .map(|(key, value)| format!("{key}={value}"))
        .collect();
    for expression in selector.match_expressions.iter().flatten() {
        let values = expression.values.clone().unwrap_or_default().join(",");
        let key = &expression.key;
        parts.push(match expression.operator.as_str() {
            "In" => format!("{key} in ({values})"),
            "NotIn" => format!("{key} notin ({values})"),
            "Exists" => key.clone(),
            "DoesNotExist" => format!("!{key}"),
            _ => return None,
        });
    }
    Some(parts.join(","))
}

/// The owner reference a controller puts on what it creates.
pub(super) fn controller_reference<K>(owner: &K) -> Result<OwnerReference, ReconcileError>
where
    K: Resource<DynamicType = ()>,
{
    owner
        .controller_owner_ref(&())
        .map(|mut reference| {
            reference.block_owner_deletion = Some(true);
            reference
        })
        .ok_or_else(|| ReconcileError::Shape(format!("{} has no uid", owner.name_any())))
}

/// The namespace and UID of a namespaced object that is not being deleted: what the
/// workload controllers act on (`None` for anything else, which they leave alone).
pub(super) fn acting_on(object: &impl Resource) -> Option<(String, String)> {
    let meta = object.meta();
    if meta.deletion_timestamp.is_some() {
        return None;
    }
    Some((meta.namespace.clone()?, meta.uid.clone()?))
}

/// Whether `object` has no controller (an orphan its selector's controller may adopt).
pub(super) fn orphaned(object: &impl Resource) -> bool {
    object.meta().deletion_timestamp.is_none()
        && !object
            .meta()
            .owner_references
            .iter()
            .flatten()
            .any(|reference| reference.controller == Some(true))
}

/// Adopts an orphan: adds `owner` to its owner references, as the controllers' ref managers
/// do for objects their selector matches. Returns the adopted object.
pub(super) async fn adopt<K>(
    context: &Context,
    api: &Api<K>,
    object: &K,
    owner: &OwnerReference,
) -> Result<K, ReconcileError>
where
    K: Resource + Clone + DeserializeOwned + Debug,
{
    let mut references = object.meta().owner_references.clone().unwrap_or_default();
    references.push(owner.clone());
    let patch = json!({"metadata": {
        "ownerReferences": references,
        "uid": object.meta().uid,
    }});
    Ok(api
        .patch(
            &object.meta().name.clone().unwrap_or_default(),
            &context.patch_params(),
            &Patch::Merge(patch),
        )
        .await?)
}

/// Whether `object` is controlled by the object with `uid`.
pub(super) fn controlled_by(object: &impl Resource, uid: &str) -> bool {
    object
        .meta()
        .owner_references
        .iter()
        .flatten()
        .any(|reference| reference.controller == Some(true) && reference.uid == uid)
}

/// The value of a condition list entry with this type, if any.
pub(super) fn find_condition<'a>(conditions: &'a Value, kind: &str) -> Option<&'a Value> {
    conditions
        .as_array()?
        .iter()
        .find(|condition| condition["type"] == kind)
}

/// Sets a condition in a list, keeping its transition time when its status is unchanged and
/// leaving it alone entirely when status, reason and message are unchanged.
pub(super) fn set_condition(conditions: &mut Vec<Value>, mut wanted: Value, times: &[&str]) {
    let now = crate::objects::now();
    for field in times {
        wanted[*field] = json!(now);
    }
    match conditions
        .iter_mut()
        .find(|condition| condition["type"] == wanted["type"])
    {
        Some(existing) => {
            let same = existing["status"] == wanted["status"]
                && existing["reason"] == wanted["reason"]
                && existing["message"] == wanted["message"];
            if same {
                return;
            }
            if existing["status"] == wanted["status"] {
                wanted["lastTransitionTime"] = existing["lastTransitionTime"].clone();
            }
            *existing = wanted;
        }
        None => conditions.push(wanted),
    }
}

/// How long ago `time` was (zero when it is in the future or unreadable).
pub(super) fn age(time: &k8s_openapi::apimachinery::pkg::apis::meta::v1::Time) -> Duration {
    to_json(time)
        .as_str()
        .and_then(|text| chrono::DateTime::parse_from_rfc3339(text).ok())
        .and_then(|time| {
            (chrono::Utc::now() - time.with_timezone(&chrono::Utc))
                .to_std()
                .ok()
        })
        .unwrap_or_default()
}

/// The object as JSON (`Null` when it does not serialize, which typed objects always do).
pub(super) fn to_json(value: &impl serde::Serialize) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

/// The pod's `Ready` condition is True.
pub(super) fn pod_ready(pod: &k8s_openapi::api::core::v1::Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|status| status.conditions.as_ref())
        .is_some_and(|conditions| {
            conditions
                .iter()
                .any(|condition| condition.type_ == "Ready" && condition.status == "True")
        })
}

/// The pod has finished (Succeeded or Failed).
pub(super) fn pod_finished(pod: &k8s_openapi::api::core::v1::Pod) -> bool {
    matches!(
        pod.status
            .as_ref()
            .and_then(|status| status.phase.as_deref()),
        Some("Succeeded" | "Failed")
    )
}

/// The pod counts as one of its controller's replicas: not finished, not being deleted.
pub(super) fn pod_active(pod: &k8s_openapi::api::core::v1::Pod) -> bool {
    pod.metadata.deletion_timestamp.is_none() && !pod_finished(pod)
}

/// kube-controller-manager's hash encoding (`rand.SafeEncodeString`) of a 32-bit FNV-1a
/// hash of `text`: short, stable, without vowels.
pub(super) fn template_hash(text: &str) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut hash: u32 = 0x811c_9dc5;
    for byte in text.bytes() {
        hash ^= u32::from(byte);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    hash.to_string()
        .bytes()
        .map(|byte| char::from(ALPHABET[usize::from(byte) % ALPHABET.len()]))
        .collect()
}

/// Creates a pod for a controller from a template, with extra labels and a name (or a
/// generated name).
pub(super) fn pod_from_template(
    template: &Value,
    name: PodName<'_>,
    extra_labels: &[(&str, String)],
    owner: &OwnerReference,
) -> Result<k8s_openapi::api::core::v1::Pod, ReconcileError> {
    let mut metadata = json!({
        "labels": template.pointer("/metadata/labels").cloned().unwrap_or(json!({})),
        "ownerReferences": [to_json(owner)],
    });
    if let Some(annotations) = template.pointer("/metadata/annotations") {
        metadata["annotations"] = annotations.clone();
    }
    for (key, value) in extra_labels {
        metadata["labels"][*key] = json!(value);
    }
    match name {
        PodName::Exact(name) => metadata["name"] = json!(name),
        PodName::Generated(prefix) => metadata["generateName"] = json!(format!("{prefix}-")),
    }
    let pod = json!({
        "metadata": metadata,
        "spec": template.get("spec").cloned().unwrap_or(json!({})),
    });
    serde_json::from_value(pod).map_err(|error| ReconcileError::Shape(error.to_string()))
}

/// How a created pod is named.
pub(super) enum PodName<'a> {
    /// This name.
    Exact(&'a str),
    /// The prefix, then `-` and a generated suffix.
    Generated(&'a str),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_refused_for_the_object_wait_for_it_to_change() {
        let answer = |code: u16| {
            ReconcileError::Api(kube::Error::Api(
                kube::core::Status::failure("refused", "Refused")
                    .with_code(code)
                    .boxed(),
            ))
        };
        // A Pod whose status would pass the size limit is not tried again twice a second.
        assert!(answer(413).is_refusal());
        assert!(answer(422).is_refusal());
        for transient in [404, 409, 429, 500] {
            assert!(!answer(transient).is_refusal(), "{transient}");
        }
        assert!(!ReconcileError::Shape("no spec".to_owned()).is_refusal());
    }

    #[test]
    fn template_hashes_are_stable_and_use_the_safe_alphabet() {
        let hash = template_hash("{\"spec\":{}}");
        assert_eq!(hash, template_hash("{\"spec\":{}}"));
        assert_ne!(hash, template_hash("{\"spec\":{\"a\":1}}"));
        assert!(
            hash.chars()
                .all(|c| "bcdfghjklmnpqrstvwxz2456789".contains(c))
        );
    }

    #[test]
    fn selectors_render_in_query_syntax() {
        let selector: LabelSelector = serde_json::from_value(json!({
            "matchLabels": {"app": "web"},
            "matchExpressions": [
                {"key": "tier", "operator": "In", "values": ["a", "b"]},
                {"key": "legacy", "operator": "DoesNotExist"},
            ],
        }))
        .expect("a selector");
        assert_eq!(
            selector_query(&selector).as_deref(),
            Some("app=web,tier in (a,b),!legacy")
        );
    }

    #[test]
    fn conditions_keep_their_transition_time_while_status_holds() {
        let mut conditions = vec![json!({
            "type": "Available", "status": "True", "reason": "A", "message": "m",
            "lastTransitionTime": "2020-01-01T00:00:00Z",
        })];
        set_condition(
            &mut conditions,
            json!({"type": "Available", "status": "True", "reason": "B", "message": "n"}),
            &["lastTransitionTime"],
        );
        assert_eq!(conditions[0]["reason"], "B");
        assert_eq!(conditions[0]["lastTransitionTime"], "2020-01-01T00:00:00Z");
        set_condition(
            &mut conditions,
            json!({"type": "Available", "status": "False", "reason": "B", "message": "n"}),
            &["lastTransitionTime"],
        );
        assert_ne!(conditions[0]["lastTransitionTime"], "2020-01-01T00:00:00Z");
    }
}
