//! The `<Kind>Set` controller of one RGD with `spec.scaling`: it runs `spec.replicas`
//! instances of the RGD's kind from `spec.template`, as a ReplicaSet runs Pods. What to do
//! next is decided by [`crate::set_plan`]; this module watches Sets, hears of instance changes
//! from the kind's instance controller (whose cache it shares), and makes the requests.
//!
//! Instances are named `<set>-<5 random characters>`, labelled with the Set's name
//! ([`SET_NAME_LABEL`], the Set's selector) and the hash of the template they were written
//! from ([`SET_TEMPLATE_HASH_LABEL`]), and owned by the Set (a controller owner reference with
//! `blockOwnerDeletion`): deleting a Set lets the garbage collector delete its instances, each
//! the kro way.
//!
//! One reconcile makes at most [`BURST_REPLICAS`] writes ([`SetPlan::batch`], sent by
//! [`batch`]), writes the Set's status, and then waits for its cache to show those writes (a
//! ReplicaSet's expectations): their watch events bring the Set back for its next batch, which
//! reads the Set again. A change of the Set ends the batch under way before its next
//! slow-start round, so a change of `spec.replicas` is obeyed one round later.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasher, Hasher};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use kro_graph::metadata::{SET_MANAGER, SET_NAME_LABEL};
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::runtime::reflector::store::Writer;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::{WatchStreamExt, reflector, watcher};
use serde_json::{Value as Json, json};

use crate::error::{ReconcileError, Request};
use crate::events::EventType;
use crate::instance::InstanceController;
use crate::metrics::ReconcileResult;
use crate::metrics::gvr_label;
use crate::object::Object;
use crate::object_json::now;
use crate::queue::{Failures, WorkQueue};
use crate::set_plan::{
    AwaitedWrites, BURST_REPLICAS, Member, Ownership, Rollout, SetPlan, SetSpec, ownership,
    plan_set,
};
use crate::shared::Shared;
use crate::watches::{InstanceRef, ListedChanges, SetListener};
use crate::worker::{Reconciler, Tasks};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kro_engine::kinds::ServedKind;

mod batch;
mod instances;

/// How many names a create tries before it gives up for this reconcile (a name taken by
/// another object is answered 409).
const NAME_ATTEMPTS: usize = 5;
/// The longest prefix of a generated name, as Kubernetes' generateName (63 - 5).
const MAX_NAME_PREFIX: usize = 58;
/// How long a Set waits for its cache to show its own creates, deletes and updates before it
/// decides again without them (an event the watch never delivers, such as an instance created and
/// deleted by someone else between two lists, would otherwise hold it forever): five minutes,
/// kube-controller-manager's `ExpectationsTimeout` for a ReplicaSet's expectations.
const AWAITED_WRITES_TIMEOUT: Duration = Duration::from_secs(5 * 60);
/// The most instances a condition message names (a Set of 20,000 scaled to 0 deletes them all).
const NAMED_IN_MESSAGES: usize = 10;

/// The controller of one `<Kind>Set` kind.
pub(crate) struct SetController {
    /// The Set kind.
    pub(crate) kind: ServedKind,
    /// The instance kind.
    instance_kind: ServedKind,
    store: Store<DynamicObject>,
    /// The instance controller's cache of instances.
    instances: Store<DynamicObject>,
    queue: WorkQueue<InstanceRef>,
    failures: Failures<InstanceRef>,
    /// The Sets whose rollout is in progress (a gauge per kind).
    rolling: Mutex<HashSet<InstanceRef>>,
    /// Per Set, the creates, deletes and updates its cache is still to show, and since when.
    awaited: Mutex<HashMap<InstanceRef, (AwaitedWrites, Instant)>>,
    /// Per Set, the generation whose template the API server refused, and why: it is not
    /// tried again until the Set changes (a retry would be refused again, and each write of
    /// the refusal wakes the Set once more).
    refusals: Mutex<HashMap<InstanceRef, (Option<i64>, String)>>,
    /// The kind as metrics label it (`group/version, Resource=plural`).
    gvr: String,
    tasks: Mutex<Tasks>,
}

impl SetController {
    /// Starts the controller of the Set kind `kind`, whose instances `instances` reconciles.
    pub(crate) fn start(
        shared: &Arc<Shared>,
        kind: ServedKind,
        instances: &InstanceController,
    ) -> Arc<SetController> {
        let writer = Writer::new(kind.resource.clone());
        let store = writer.as_reader();
        let queue = WorkQueue::new();
        let controller = Arc::new(SetController {
            kind: kind.clone(),
            instance_kind: instances.kind.clone(),
            store: store.clone(),
            instances: instances.store.clone(),
            queue: queue.clone(),
            failures: Failures::default(),
            rolling: Mutex::default(),
            awaited: Mutex::default(),
            refusals: Mutex::default(),
            gvr: gvr_label(
                &kind.resource.group,
                &kind.resource.version,
                &kind.resource.plural,
            ),
            tasks: Mutex::default(),
        });
        *instances
            .sets
            .write()
            .unwrap_or_else(PoisonError::into_inner) =
            Some(SetListener::new(&kind.resource.kind, queue.clone()));
        let api = kind.api(&shared.client, None);
        let watch = reflector::reflector(writer, watcher::watcher(api, watcher::Config::default()))
            .backoff(crate::watches::WatchBackoff::default());
        let kind_name = kind.resource.kind.clone();
        let mut tasks = Tasks::default();
        tasks.watch(async move {
            let mut watch = std::pin::pin!(watch);
            let mut changes = ListedChanges::default();
            while let Some(event) = watch.next().await {
                match event {
                    Ok(event) => {
                        for set in changes.changed(event, &store) {
                            queue.add(InstanceRef::of(&set));
                        }
                    }
                    Err(error) => {
                        tracing::warn!(kind = %kind_name, %error, "Set watch failed; retrying");
                    }
                }
            }
        });
        for _ in 0..shared.settings.workers.max(1) {
            let shared = Arc::clone(shared);
            let controller = Arc::clone(&controller);
            tasks.worker(async move {
                crate::worker::work(&*controller, &shared, &shared.settings).await
            });
        }
        *controller
            .tasks
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = tasks;
        controller
    }

    /// Stops the controller (its Sets and their instances stay).
    pub(crate) async fn stop(&self, instances: &InstanceController) {
        *instances
            .sets
            .write()
            .unwrap_or_else(PoisonError::into_inner) = None;
        self.queue.shut_down();
        let tasks = std::mem::take(&mut *self.tasks.lock().unwrap_or_else(PoisonError::into_inner));
        tasks.stop().await;
    }

    /// Reconciles one Set; `true` while its rollout is in progress.
    async fn reconcile_set(
        &self,
        shared: &Shared,
        key: &InstanceRef,
    ) -> Result<bool, ReconcileError> {
        let reference = ObjectRef::new_with(&key.name, self.kind.resource.clone());
        let reference = match &key.namespace {
            Some(namespace) => reference.within(namespace),
            None => reference,
        };
        let Some(set) = self.store.get(&reference) else {
            self.awaited_lock().remove(key);
            self.refusals_lock().remove(key);
            return Ok(false);
        };
        let set = Object::new(&set)?;
        if set.is_deleting() {
            // The garbage collector deletes the instances it owns.
            return Ok(false);
        }
        let spec = match SetSpec::of(set.json()) {
            Ok(spec) => spec,
            Err(error) => {
                let outcome = Outcome::invalid(error.to_string());
                let current = set.json().get("status").unwrap_or(&Json::Null);
                self.write_status(shared, &set, current, &plan_set_of_nothing(), &outcome)
                    .await?;
                return Ok(false);
            }
        };
        if self.still_awaited(key, &set) {
            // The watch events of those writes bring the Set back (or the timer set with them).
            return Ok(true);
        }
        let namespace = key.namespace.as_deref();
        let instances = self.instance_kind.api(&shared.client, namespace);
        let members = self.members(shared, &set, &instances).await?;
        let plan = plan_set(&spec, &members);
        let mut batch = plan.batch(BURST_REPLICAS);
        let generation = set.meta().generation;
        let refused_before = self
            .refusals_lock()
            .get(key)
            .filter(|(refused_at, _)| *refused_at == generation)
            .map(|(_, message)| message.clone());
        let mut status = set.json().get("status").cloned().unwrap_or(Json::Null);
        if status.get("observedGeneration").and_then(Json::as_i64) != generation {
            // A new spec is reported before its first batch, which on a busy cluster takes
            // seconds: status then follows a scale to 0 as soon as the Set decides on it.
            let outcome = Outcome {
                invalid: None,
                refused: refused_before.clone(),
            };
            status = self
                .write_status(shared, &set, &status, &plan, &outcome)
                .await?;
        }
        // A template refused at this generation is not tried again: only the deletes are made.
        if refused_before.is_some() {
            batch.create = 0;
            batch.update.clear();
        }
        if batch.create > 0 || !batch.delete.is_empty() {
            let message = format!(
                "scaling from {} to {} instance(s)",
                plan.counts.replicas, spec.replicas
            );
            shared
                .events
                .record(&set, EventType::Normal, "Scaling", &message)
                .await;
        }
        if !batch.is_empty() {
            // The batch's writes are awaited as each is made: a reconcile abandoned halfway
            // (past the reconcile timeout) leaves the writes it made awaited, not forgotten.
            self.awaited_lock()
                .insert(key.clone(), (AwaitedWrites::default(), Instant::now()));
            self.queue.add_after(key.clone(), AWAITED_WRITES_TIMEOUT);
        }
        let carried_out = match refused_before {
            Some(message) => self
                .carry_out(shared, key, &set, &spec, &batch, &instances)
                .await
                .map(|_| Some(message)),
            None => {
                self.carry_out(shared, key, &set, &spec, &batch, &instances)
                    .await
            }
        };
        match &carried_out {
            Ok(Some(message)) => {
                self.refusals_lock()
                    .insert(key.clone(), (generation, message.clone()));
            }
            Ok(None) => {
                self.refusals_lock().remove(key);
            }
            Err(_) => {}
        }
        {
            let mut awaited = self.awaited_lock();
            if awaited
                .get(key)
                .is_some_and(|(writes, _)| writes.is_empty())
            {
                awaited.remove(key);
            }
        }
        let outcome = Outcome {
            invalid: None,
            refused: carried_out?,
        };
        self.write_status(shared, &set, &status, &plan, &outcome)
            .await?;
        Ok(plan.rollout != Rollout::Complete)
    }

    /// Notes a write of the Set `key` that its cache must show before it decides again.
    fn await_write(&self, key: &InstanceRef, note: impl FnOnce(&mut AwaitedWrites)) {
        let mut awaited = self.awaited_lock();
        let (writes, _) = awaited
            .entry(key.clone())
            .or_insert_with(|| (AwaitedWrites::default(), Instant::now()));
        note(writes);
    }

    fn awaited_lock(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<InstanceRef, (AwaitedWrites, Instant)>> {
        self.awaited.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn refusals_lock(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<InstanceRef, (Option<i64>, String)>> {
        self.refusals.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether the Set `key` still waits for its cache to show its last writes: not once it
    /// shows them, nor after [`AWAITED_WRITES_TIMEOUT`]. Checked before anything else, with one
    /// cache lookup per write: every event of the batch's instances wakes the Set.
    fn still_awaited(&self, key: &InstanceRef, set: &Object) -> bool {
        let mut awaited = self.awaited_lock();
        let Some((writes, since)) = awaited.get(key) else {
            return false;
        };
        let cached = |name: &str| {
            self.instances
                .get(&self.instance_ref(set, name))
                .map(|instance| Member::of(&instance))
        };
        if writes.seen_with(cached) {
            awaited.remove(key);
            return false;
        }
        if since.elapsed() >= AWAITED_WRITES_TIMEOUT {
            tracing::warn!(
                kind = %self.kind.resource.kind,
                set = %key,
                created = writes.created.len(),
                deleted = writes.deleted.len(),
                updated = writes.updated.len(),
                "the instance cache never showed these writes; deciding without them"
            );
            awaited.remove(key);
            return false;
        }
        true
    }

    /// The Set's instances: those it controls and still selects, and those it adopts now;
    /// those it controls but no longer selects are released.
    async fn members(
        &self,
        shared: &Shared,
        set: &Object,
        instances: &Api<DynamicObject>,
    ) -> Result<Vec<Member>, ReconcileError> {
        let set_uid = set.uid();
        let mut members = Vec::new();
        for instance in self.instances.state() {
            if instance.metadata.namespace.as_deref().unwrap_or_default() != set.namespace() {
                continue;
            }
            let meta = &instance.metadata;
            let selected = meta
                .labels
                .as_ref()
                .and_then(|labels| labels.get(SET_NAME_LABEL))
                .map(String::as_str)
                == Some(set.name());
            let name = meta.name.clone().unwrap_or_default();
            match ownership(meta, set_uid, selected, false) {
                Ownership::Owned => members.push(Member::of(&instance)),
                Ownership::Adopt => {
                    let mut owners = owner_references(meta)?;
                    owners.push(self.owner_reference(set));
                    self.patch_owners(meta, instances, owners).await?;
                    shared
                        .events
                        .record(
                            set,
                            EventType::Normal,
                            "Adopted",
                            &format!("adopted instance {name}"),
                        )
                        .await;
                    members.push(Member::of(&instance));
                }
                Ownership::Release => {
                    let owners = owner_references(meta)?
                        .into_iter()
                        .filter(|owner| owner["uid"] != set_uid)
                        .collect();
                    self.patch_owners(meta, instances, owners).await?;
                    shared
                        .events
                        .record(
                            set,
                            EventType::Normal,
                            "Released",
                            &format!("released instance {name}: its labels no longer select it"),
                        )
                        .await;
                }
                Ownership::Other => {}
            }
        }
        Ok(members)
    }

    /// The cache key of the Set's instance `name`.
    fn instance_ref(&self, set: &Object, name: &str) -> ObjectRef<DynamicObject> {
        let reference = ObjectRef::new_with(name, self.instance_kind.resource.clone());
        match set.namespace() {
            "" => reference,
            namespace => reference.within(namespace),
        }
    }

    /// The API server refused what the template makes: a Warning event, and the reason for
    /// the Set's conditions.
    async fn refused(
        &self,
        shared: &Shared,
        set: &Object,
        reason: &str,
        status: &kube::core::Status,
    ) -> Written {
        let message = format!(
            "the template does not make a valid {}: {}",
            self.instance_kind.resource.kind, status.message
        );
        shared
            .events
            .record(set, EventType::Warning, reason, &message)
            .await;
        Written::Refused(message)
    }

    /// Writes the status `plan` and `outcome` make, unless `current` (the Set's status as last
    /// read or written) says the same; the status now in place.
    async fn write_status(
        &self,
        shared: &Shared,
        set: &Object,
        current: &Json,
        plan: &SetPlan,
        outcome: &Outcome,
    ) -> Result<Json, ReconcileError> {
        let generation = set.meta().generation;
        let previous = current.get("conditions").and_then(Json::as_array);
        let (ready, progressing) = conditions(plan, outcome);
        let stamp = |(type_, status, reason, message): (&str, &str, &str, String)| {
            let kept = previous
                .and_then(|previous| previous.iter().find(|condition| condition["type"] == type_))
                .filter(|condition| condition["status"] == status)
                .and_then(|condition| condition.get("lastTransitionTime").cloned());
            json!({
                "type": type_, "status": status, "reason": reason, "message": message,
                "observedGeneration": generation,
                "lastTransitionTime": kept.unwrap_or_else(|| json!(now())),
            })
        };
        let status = json!({
            "replicas": plan.counts.replicas,
            "readyReplicas": plan.counts.ready_replicas,
            "updatedReplicas": plan.counts.updated_replicas,
            "selector": format!("{SET_NAME_LABEL}={}", set.name()),
            "observedGeneration": generation,
            "conditions": [stamp(ready), stamp(progressing)],
        });
        let unchanged = |field: &str| current.get(field) == status.get(field);
        let conditions_unchanged = previous.is_some_and(|previous| {
            previous
                .iter()
                .map(|condition| {
                    (
                        &condition["type"],
                        &condition["status"],
                        &condition["reason"],
                        &condition["message"],
                    )
                })
                .eq(status["conditions"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|condition| {
                        (
                            &condition["type"],
                            &condition["status"],
                            &condition["reason"],
                            &condition["message"],
                        )
                    }))
        });
        if [
            "replicas",
            "readyReplicas",
            "updatedReplicas",
            "selector",
            "observedGeneration",
        ]
        .iter()
        .all(|field| unchanged(field))
            && conditions_unchanged
        {
            return Ok(current.clone());
        }
        let api = self
            .kind
            .api(&shared.client, set.meta().namespace.as_deref());
        let params = PatchParams {
            field_manager: Some(SET_MANAGER.to_owned()),
            ..PatchParams::default()
        };
        api.patch_status(
            set.name(),
            &params,
            &Patch::Merge(json!({"status": status})),
        )
        .await
        .map_err(ReconcileError::api(Request::WriteStatus))?;
        Ok(status)
    }
}

impl Reconciler for SetController {
    type Key = InstanceRef;
    /// Whether the Set is rolling out.
    type Done = bool;
    type Context = Shared;

    fn queue(&self) -> &WorkQueue<InstanceRef> {
        &self.queue
    }

    fn failures(&self) -> &Failures<InstanceRef> {
        &self.failures
    }

    fn span(&self, key: &InstanceRef) -> tracing::Span {
        tracing::info_span!("reconcile", kind = %self.kind.resource.kind, set = %key)
    }

    fn reconcile<'a>(
        &'a self,
        shared: &'a Shared,
        key: &'a InstanceRef,
    ) -> impl Future<Output = Result<bool, ReconcileError>> + Send + 'a {
        self.reconcile_set(shared, key)
    }

    fn reconciled(&self, shared: &Shared, elapsed: Duration, result: ReconcileResult) {
        shared
            .metrics
            .set_reconciled(&self.gvr, elapsed, result.succeeded());
    }

    /// Counts the Sets rolling out; a Set is reconciled again when its instances change.
    fn succeeded(&self, shared: &Shared, key: &InstanceRef, rolling: bool) -> Option<Duration> {
        let in_progress = {
            let mut sets = self.rolling.lock().unwrap_or_else(PoisonError::into_inner);
            if rolling {
                sets.insert(key.clone());
            } else {
                sets.remove(key);
            }
            sets.len()
        };
        shared.metrics.set_rollouts(&self.gvr, in_progress);
        None
    }
}

/// Whether an instance was written (its name), or the API server refused what the template
/// makes.
enum Written {
    Yes(String),
    Refused(String),
}

/// What a reconcile met besides its plan.
#[derive(Default)]
struct Outcome {
    /// The spec is unusable (a field error).
    invalid: Option<String>,
    /// The instance kind's schema refused the template.
    refused: Option<String>,
}

impl Outcome {
    fn invalid(message: String) -> Self {
        Outcome {
            invalid: Some(message),
            refused: None,
        }
    }
}

fn plan_set_of_nothing() -> SetPlan {
    SetPlan {
        create: 0,
        delete: Vec::new(),
        update: Vec::new(),
        counts: crate::set_plan::SetCounts::default(),
        rollout: Rollout::Complete,
    }
}

type ConditionParts<'a> = (&'a str, &'a str, &'a str, String);

/// `Ready` and `Progressing`, with reasons a user can act on.
fn conditions<'a>(plan: &SetPlan, outcome: &Outcome) -> (ConditionParts<'a>, ConditionParts<'a>) {
    if let Some(message) = &outcome.invalid {
        return (
            ("Ready", "False", "InvalidSpec", message.clone()),
            ("Progressing", "False", "InvalidSpec", message.clone()),
        );
    }
    if let Some(message) = &outcome.refused {
        return (
            ("Ready", "False", "TemplateRejected", message.clone()),
            ("Progressing", "False", "TemplateRejected", message.clone()),
        );
    }
    match &plan.rollout {
        Rollout::Complete => (
            (
                "Ready",
                "True",
                "AllInstancesReady",
                format!(
                    "{} instance(s) ready from the current template",
                    plan.counts.replicas
                ),
            ),
            (
                "Progressing",
                "True",
                "RolloutComplete",
                "every instance runs the current template".to_owned(),
            ),
        ),
        Rollout::Progressing { outdated, waiting } => {
            let mut steps = Vec::new();
            if plan.create > 0 {
                steps.push(format!("creating {}", plan.create));
            }
            if !plan.delete.is_empty() {
                steps.push(format!("deleting {}", some_of(plan.delete.iter())));
            }
            if !plan.update.is_empty() {
                steps.push(format!("updating {}", some_of(plan.update.iter())));
            }
            if *outdated > 0 {
                steps.push(format!("{outdated} more to update"));
            }
            let mut message = steps.join("; ");
            if !waiting.is_empty() {
                let waiting = some_of(
                    waiting
                        .iter()
                        .map(|waiting| format!("{} ({})", waiting.name, waiting.because)),
                );
                if !message.is_empty() {
                    message.push_str("; ");
                }
                message.push_str(&format!("waiting for {waiting} to be Ready"));
            }
            let reason = if *outdated > 0 || !plan.update.is_empty() {
                "RollingUpdate"
            } else if plan.create > 0 || !plan.delete.is_empty() {
                "Scaling"
            } else {
                "WaitingForInstances"
            };
            (
                ("Ready", "False", reason, message.clone()),
                ("Progressing", "True", reason, message),
            )
        }
    }
}

/// The first [`NAMED_IN_MESSAGES`] of `items`, and how many more there are.
fn some_of<T: std::fmt::Display>(items: impl ExactSizeIterator<Item = T>) -> String {
    let more = items.len().saturating_sub(NAMED_IN_MESSAGES);
    let named: Vec<String> = items
        .take(NAMED_IN_MESSAGES)
        .map(|item| item.to_string())
        .collect();
    match more {
        0 => named.join(", "),
        more => format!("{} and {more} more", named.join(", ")),
    }
}

/// The spec the Set's template gives its instances.
fn template_spec(set: &Object) -> Json {
    set.json()
        .pointer("/spec/template/spec")
        .cloned()
        .unwrap_or_else(|| json!({}))
}

/// The owner references of `instance`, as JSON to be written back.
fn owner_references(instance: &ObjectMeta) -> Result<Vec<Json>, ReconcileError> {
    instance
        .owner_references
        .iter()
        .flatten()
        .map(|owner| serde_json::to_value(owner).map_err(ReconcileError::Json))
        .collect()
}

/// Five characters as Kubernetes' generated names use (no vowels, no look-alikes).
fn random_suffix() -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.as_nanos()),
    );
    let mut bits = hasher.finish();
    (0..5)
        .map(|_| {
            let index = usize::try_from(bits % ALPHABET.len() as u64).unwrap_or(0);
            bits /= ALPHABET.len() as u64;
            char::from(ALPHABET[index])
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_suffixes_are_five_characters_of_the_kubernetes_alphabet() {
        let suffixes: std::collections::HashSet<String> =
            (0..200).map(|_| random_suffix()).collect();
        assert!(
            suffixes.len() > 190,
            "suffixes repeat too often: {}",
            suffixes.len()
        );
        for suffix in suffixes {
            assert_eq!(suffix.len(), 5);
            assert!(
                suffix
                    .bytes()
                    .all(|byte| b"bcdfghjklmnpqrstvwxz2456789".contains(&byte)),
                "{suffix}"
            );
        }
    }

    #[test]
    fn messages_name_ten_instances_and_count_the_rest() {
        let names: Vec<String> = (0..20_000).map(|index| format!("web-{index}")).collect();
        assert_eq!(some_of(names[..2].iter()), "web-0, web-1");
        assert_eq!(
            some_of(names.iter()),
            "web-0, web-1, web-2, web-3, web-4, web-5, web-6, web-7, web-8, web-9 and 19990 more"
        );
        let plan = SetPlan {
            create: 0,
            delete: names,
            update: Vec::new(),
            counts: crate::set_plan::SetCounts::default(),
            rollout: Rollout::Progressing {
                outdated: 0,
                waiting: Vec::new(),
            },
        };
        let (ready, _) = conditions(&plan, &Outcome::default());
        assert_eq!(ready.2, "Scaling");
        assert!(ready.3.len() < 200, "{}", ready.3);
    }

    #[test]
    fn conditions_say_what_the_set_waits_for() {
        let plan = SetPlan {
            create: 0,
            delete: Vec::new(),
            update: vec!["web-b".to_owned()],
            counts: crate::set_plan::SetCounts::default(),
            rollout: Rollout::Progressing {
                outdated: 2,
                waiting: vec![crate::set_plan::Waiting {
                    name: "web-a".to_owned(),
                    because: "Ready is False (ResourcesNotReady): deployment is not available"
                        .to_owned(),
                }],
            },
        };
        let (ready, progressing) = conditions(&plan, &Outcome::default());
        assert_eq!((ready.1, ready.2), ("False", "RollingUpdate"));
        assert_eq!(progressing.1, "True");
        assert_eq!(
            ready.3,
            "updating web-b; 2 more to update; waiting for web-a (Ready is False (ResourcesNotReady): deployment is not available) to be Ready"
        );
        let refused = Outcome {
            invalid: None,
            refused: Some(
                "the template does not make a valid Web: spec.size: Invalid value".to_owned(),
            ),
        };
        let (ready, progressing) = conditions(&plan, &refused);
        assert_eq!((ready.2, progressing.1), ("TemplateRejected", "False"));
    }
}
