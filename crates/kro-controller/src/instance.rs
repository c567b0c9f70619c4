//! The controller of one generated kind: it reconciles every instance of the kind.
//!
//! One reconcile: make sure the instance carries kro's finalizer and labels; plan with the
//! runtime from what the watch caches hold; apply the lowest level whose objects changed —
//! all of its objects at once, server-side apply with force as `kro.run/applyset` — and plan
//! again with the answers, so that a level that is ready lets the next one proceed in the same
//! reconcile; when nothing more can be applied, prune what left the plan (highest apply order
//! first), trim the ApplySet inventory, and write the status if it changed. An object whose
//! intent is what was last applied, and which nobody else has touched since (same UID, same
//! fields owned by kro), is not applied again: in steady state a reconcile writes nothing.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Duration;

use futures_util::StreamExt;
use kro_graph::Feature;
use kro_graph::metadata::{APPLYSET_ID_LABEL, RECONCILE_ANNOTATION, STATUS_MANAGER};
use kro_runtime::{ControllerFacts, Observed, Plan, PlanOptions, StepFailure, plan};
use kube::api::{DynamicObject, Patch, PatchParams};
use kube::runtime::reflector::store::Writer;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher;
use kube::runtime::{WatchStreamExt, reflector};
use serde_json::json;

use crate::error::{ReconcileError, Request, ResourceError, ResourceErrors};
use crate::events::EventType;
use crate::metrics::{INSTANCE_QUEUE, ReconcileResult, WatchEventType};
use crate::metrics::{LiveSource, conditions_of, gvr_label, transitions};
use crate::object::Object;
use crate::object_json::{merge_patch, now, text, without_nulls};
use crate::queue::{Failures, WorkQueue};
use crate::shared::Shared;
use crate::watches::{GroupKind, InstanceRef, ListedChanges, Subscriber, cached};
use crate::worker::{Reconciler, Tasks};
use kro_engine::converge::{Rounds, converge};
use kro_engine::kinds::ServedKind;
use kro_engine::{Applier, ApplyConfig};

mod cleanup;
mod drive;
mod graph_version;
mod observe;
mod parent;
mod rollout;

pub(crate) use graph_version::GraphVersion;

use crate::own_writes::OwnWrites;

/// The controller of one generated kind.
pub(crate) struct InstanceController {
    pub(crate) kind: ServedKind,
    /// The kind as upstream labels metrics (`group/version, Resource=plural`).
    gvr: String,
    graph: RwLock<Arc<GraphVersion>>,
    pub(crate) store: Store<DynamicObject>,
    pub(crate) queue: WorkQueue<InstanceRef>,
    /// Applies the instances' objects; what it remembers is scoped by instance UID.
    applier: Applier,
    /// The status last written for each instance (by UID): the cache may lag behind a write,
    /// and a transition is counted once.
    written_states: Mutex<HashMap<String, WrittenStatus>>,
    failures: Failures<InstanceRef>,
    /// kro's writes of the instances the watch has yet to show (they wake no reconcile).
    own_writes: Arc<OwnWrites>,
    tasks: Mutex<Tasks>,
    /// The `<Kind>Set` controller told of instance changes, when the RGD has one.
    pub(crate) sets: Arc<RwLock<Option<crate::watches::SetListener>>>,
    /// The rollout of the graph's newest revision, under the RGD's propagation policy.
    rollout: Arc<rollout::Rollout>,
    /// When each instance that reads the time is planned again: the instant its answers
    /// change (gate `CELTimeFunctions`).
    time_timers: crate::clock::Timers<InstanceRef>,
}

impl InstanceController {
    /// Starts the controller of `kind`: its instance watch, its routing and its workers.
    pub(crate) fn start(
        shared: &Arc<Shared>,
        kind: ServedKind,
        graph: GraphVersion,
        on_propagation: Box<dyn Fn() + Send + Sync>,
    ) -> Arc<InstanceController> {
        let writer = Writer::new(kind.resource.clone());
        let store = writer.as_reader();
        let queue = WorkQueue::counted(shared.metrics.queues().queue(INSTANCE_QUEUE));
        let external = graph.external.keys().cloned().collect();
        let gvr = gvr_label(
            &kind.resource.group,
            &kind.resource.version,
            &kind.resource.plural,
        );
        shared
            .metrics
            .watch_kind(&gvr, LiveSource::of(&queue, &store));
        let controller = Arc::new(InstanceController {
            kind: kind.clone(),
            gvr,
            graph: RwLock::new(Arc::new(graph)),
            store: store.clone(),
            queue: queue.clone(),
            applier: Applier::new(
                shared.client.clone(),
                ApplyConfig::default().concurrency(shared.settings.apply_concurrency),
            )
            .with_kinds(shared.kinds.clone()),
            written_states: Mutex::default(),
            failures: Failures::default(),
            own_writes: Arc::default(),
            tasks: Mutex::default(),
            time_timers: crate::clock::Timers::default(),
            sets: Arc::default(),
            rollout: Arc::new(rollout::Rollout::new(on_propagation)),
        });
        shared.router.subscribe(
            GroupKind::new(&kind.resource.group, &kind.resource.kind),
            Subscriber {
                queue: queue.clone(),
                instances: store,
                external,
            },
        );
        let mut tasks = Tasks::default();
        let api = kind.api(&shared.client, None);
        // No reconcile reads an instance's managedFields: the cache does not keep them.
        let seen = controller.store.clone();
        let resource = kind.resource.clone();
        let dynamic = shared.metrics.dynamic().clone();
        let event_gvr = controller.gvr.clone();
        let instances = watcher::watcher(api, watcher::Config::default())
            .modify(|instance: &mut DynamicObject| instance.metadata.managed_fields = None)
            // Before the reflector stores it: whether the instance was known says add or
            // update, as upstream's informer handlers tell them apart.
            .inspect(move |event| {
                let kind = match event {
                    Ok(watcher::Event::Apply(object) | watcher::Event::InitApply(object)) => {
                        let known = ObjectRef::from_obj_with(object, resource.clone());
                        if seen.get(&known).is_some() {
                            WatchEventType::Update
                        } else {
                            WatchEventType::Add
                        }
                    }
                    Ok(watcher::Event::Delete(_)) => WatchEventType::Delete,
                    _ => return,
                };
                dynamic.instance_event(&event_gvr, kind);
            });
        let watch = reflector::reflector(writer, instances)
            .backoff(crate::watches::WatchBackoff::default());
        let watch_queue = queue.clone();
        let kind_name = kind.resource.kind.clone();
        let listed = controller.store.clone();
        let sets = Arc::clone(&controller.sets);
        let own_writes = Arc::clone(&controller.own_writes);
        let sync_metrics = shared.metrics.clone();
        let sync_gvr = controller.gvr.clone();
        let rollout = Arc::clone(&controller.rollout);
        tasks.watch(async move {
            let started = std::time::Instant::now();
            let mut first_list = true;
            let mut watch = std::pin::pin!(watch);
            let mut changes = ListedChanges::default();
            while let Some(event) = watch.next().await {
                if first_list && matches!(event, Ok(watcher::Event::InitDone)) {
                    first_list = false;
                    rollout.synced();
                    sync_metrics
                        .dynamic()
                        .synced(&sync_gvr, started.elapsed().as_secs_f64());
                }
                match event {
                    Ok(event) => {
                        // Every change of an instance (kro's own status writes too) may let
                        // the rollout go on.
                        rollout.wake();
                        let own_write = match &event {
                            watcher::Event::Apply(object) => {
                                let metadata = &object.metadata;
                                metadata
                                    .uid
                                    .as_deref()
                                    .zip(metadata.resource_version.as_deref())
                                    .is_some_and(|(uid, version)| own_writes.seen(uid, version))
                            }
                            _ => false,
                        };
                        for object in changes.changed(event, &listed) {
                            if let Some(sets) = sets
                                .read()
                                .unwrap_or_else(PoisonError::into_inner)
                                .as_ref()
                            {
                                sets.instance_changed(&object);
                            }
                            if !own_write {
                                watch_queue.add(InstanceRef::of(&object));
                            }
                        }
                    }
                    Err(error) => {
                        tracing::warn!(kind = %kind_name, %error, "instance watch failed; retrying");
                    }
                }
            }
        });
        if shared
            .settings
            .features
            .enabled(Feature::PropagationControl)
        {
            let controller = Arc::clone(&controller);
            tasks.watch(async move {
                loop {
                    let graph = controller.graph();
                    let step = controller
                        .rollout
                        .step(&graph, &controller.store.state());
                    for instance in step.moved {
                        tracing::info!(%instance, revision = ?graph.revision, "instance moves to the graph's newest revision");
                        controller.queue.add(instance);
                    }
                    controller.rollout.wait(step.next).await;
                }
            });
        }
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

    /// Serves a new graph: every instance is planned again (under a propagation policy, those
    /// the rollout has not let move to the graph's revision are left as they are).
    pub(crate) fn update(&self, shared: &Shared, graph: GraphVersion) {
        let external = graph.external.keys().cloned().collect();
        *self.graph.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(graph);
        self.rollout.wake();
        shared.router.subscribe(
            GroupKind::new(&self.kind.resource.group, &self.kind.resource.kind),
            Subscriber {
                queue: self.queue.clone(),
                instances: self.store.clone(),
                external,
            },
        );
        self.enqueue_all();
    }

    /// The RGD's `Propagated` condition, when a propagation policy is in force.
    pub(crate) fn propagated(&self) -> crate::rgd_status::Propagated {
        self.rollout.propagated(&self.graph())
    }

    /// Queues every instance for a reconcile.
    pub(crate) fn enqueue_all(&self) {
        for instance in self.store.state() {
            self.queue.add(InstanceRef::of(&instance));
        }
    }

    /// The graph served now.
    pub(crate) fn graph(&self) -> Arc<GraphVersion> {
        Arc::clone(&self.graph.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// Stops the workers and the instance watch; reconciles under way finish first.
    pub(crate) async fn stop(&self, shared: &Shared) {
        shared.router.unsubscribe(&GroupKind::new(
            &self.kind.resource.group,
            &self.kind.resource.kind,
        ));
        self.queue.shut_down();
        let tasks = std::mem::take(&mut *self.tasks.lock().unwrap_or_else(PoisonError::into_inner));
        tasks.stop().await;
        shared.metrics.forget_kind(&self.gvr);
    }

    /// Reconciles one instance; `Some(delay)` asks to be called again.
    async fn reconcile_instance(
        &self,
        shared: &Shared,
        key: &InstanceRef,
    ) -> Result<Option<Duration>, ReconcileError> {
        let Some(object) = cached(
            &self.store,
            &self.kind.resource,
            key.namespace.as_deref(),
            &key.name,
        ) else {
            self.forget(key);
            shared.metrics.conditions().forget_instance(
                &self.gvr,
                key.namespace.as_deref().unwrap_or_default(),
                &key.name,
            );
            return Ok(None);
        };
        let mut instance = Object::new(&object)?;
        if self
            .own_writes
            .behind(instance.uid(), instance.resource_version().parse().ok())
        {
            // The cache has yet to show kro's last write of the instance: planning with the
            // instance as it was before would write it again. The write's event brings the
            // instance back (a lost watch re-lists, which queues every instance), so no timer
            // is set: it would wake the instance again in steady state.
            return Ok(None);
        }
        let graph = self.graph();
        shared.metrics.queues().graph_resolved(&self.gvr);
        if instance.is_deleting() {
            return self.delete(shared, &graph, &instance).await;
        }
        if !self.rollout.admits(instance.json(), instance.uid(), &graph) {
            // Its turn to move to the newest revision has not come: it is left as it is.
            tracing::debug!("waiting for the rollout to reach it");
            return Ok(None);
        }
        let mut facts = ControllerFacts {
            managed: self
                .ensure_managed(shared, &graph, &mut instance)
                .await
                .map_err(StepFailure::new),
            suspended: is_suspended(&instance),
            ..ControllerFacts::default()
        };
        let mut observed = Observed::new();
        let mut problems = Vec::new();
        let mut current = self
            .apply_levels(
                shared,
                &graph,
                &mut instance,
                &facts,
                &mut observed,
                &mut problems,
            )
            .await;
        if problems.is_empty() && self.caches_behind(&instance, &current, &observed) {
            // The caches have not shown some of kro's own last writes yet, so this plan judged
            // objects as they were before them (or missing): its status would step back (from
            // ACTIVE to IN_PROGRESS, say) and its pruning would look at stale members. The
            // watch event of the write queues the instance again; this retry, when the wait
            // for the caches ends anyway, only bounds it should that event never come.
            return Ok(Some(kro_engine::CACHE_CATCH_UP));
        }
        if !facts.suspended
            && problems.is_empty()
            && let Err(error) = self.prune(shared, &graph, &mut instance, &current).await
        {
            problems.push(error);
        }
        let problems = ResourceErrors::from(problems);
        if !problems.0.is_empty() {
            facts.resources = Err(StepFailure::new(problems.clone()));
            current = plan(
                &graph.graph,
                instance.json(),
                &observed,
                &plan_options(shared, &graph, &facts),
            );
        }
        // What read the time is looked at again when its answer changes, and not before.
        self.time_timers
            .set(key, current.requeue_at, &shared.settings.clock, &self.queue);
        self.report(shared, &graph, &instance, (&current, &observed), problems)
            .await
    }

    /// Whether a watch cache has yet to show kro's last write of an object of `current` (an
    /// object applied in this very reconcile is known by the server's answer, not the cache).
    fn caches_behind(&self, instance: &Object, current: &Plan, observed: &Observed) -> bool {
        let uid = instance.uid();
        current
            .nodes
            .iter()
            .flat_map(|node| &node.desired)
            .any(|desired| {
                self.applier
                    .awaits_cache(uid, &desired.key, observed.get(&desired.key))
            })
    }

    /// Plans and applies until nothing more can be applied, through the engine's loop
    /// ([`kro_engine::converge`]): the lowest level whose objects changed is applied (all of
    /// them at once), and the plan made again with the answers, so that a level that is ready
    /// lets the next proceed. Stops at the first problem (recorded in `problems`), when
    /// suspended, or after a bounded number of rounds; the last plan.
    async fn apply_levels(
        &self,
        shared: &Shared,
        graph: &GraphVersion,
        instance: &mut Object,
        facts: &ControllerFacts,
        observed: &mut Observed,
        problems: &mut Vec<ResourceError>,
    ) -> Plan {
        let uid = instance.uid().to_owned();
        let applyset = match instance.label(APPLYSET_ID_LABEL) {
            None | Some("") => self.parent_id(instance),
            Some(own) => own.to_owned(),
        };
        let mut driver = drive::InstanceDriver {
            controller: self,
            shared,
            graph,
            instance,
            // One set of options for every round: building them clones the kinds' scopes.
            options: plan_options(shared, graph, facts),
            schema: None,
            uid,
            applyset,
            suspended: facts.suspended,
            problems,
        };
        let mut rounds = Rounds::for_graph(&graph.graph);
        let converged = match converge(&mut driver, &self.applier, observed, &mut rounds).await {
            Ok(converged) => converged,
            Err(never) => match never {},
        };
        if !converged.unsettled.is_empty() {
            tracing::warn!(
                objects = ?converged.unsettled,
                "objects changed again after every apply (another writer?); left for the next reconcile"
            );
        }
        converged.plan
    }

    /// Writes the status `current` says and records the event the outcome deserves: `Active`
    /// on becoming active (when [`Settings::active_events`](crate::Settings::active_events)
    /// asks for it), `ReconcileFailed` with every problem (then the reconcile fails).
    async fn report(
        &self,
        shared: &Shared,
        graph: &GraphVersion,
        instance: &Object,
        (current, observed): (&Plan, &Observed),
        problems: ResourceErrors,
    ) -> Result<Option<Duration>, ReconcileError> {
        let was_active = text(instance.json(), "/status/state") == "ACTIVE";
        if shared.settings.active_events
            && problems.0.is_empty()
            && !was_active
            && current.status.state == kro_runtime::InstanceState::Active
        {
            // Recorded before the status says ACTIVE, so that the status write is the last
            // request of becoming active: whoever waits for ACTIVE sees no request after it.
            shared
                .events
                .record(
                    instance,
                    EventType::Normal,
                    "Active",
                    "all resources are created and ready",
                )
                .await;
        }
        self.write_status(shared, graph, instance, current, Some(observed))
            .await?;
        if problems.0.is_empty() {
            Ok(None)
        } else {
            let error = ReconcileError::Resources(problems);
            shared
                .events
                .record(
                    instance,
                    EventType::Warning,
                    "ReconcileFailed",
                    &error.to_string(),
                )
                .await;
            Err(error)
        }
    }

    fn forget(&self, key: &InstanceRef) {
        // Records are keyed by UID; drop those of instances no longer cached.
        let live = crate::watches::cached_uids(&self.store);
        self.applier.retain(|uid| live.contains(uid));
        self.own_writes.retain(|uid| live.contains(uid));
        self.time_timers.retain(|other| other != key);
        self.written_states
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|uid, _| live.contains(uid));
        self.failures.forget(key);
    }

    /// Writes the plan's status when it differs from the instance's (and was not just written:
    /// a reconcile that runs before the cache shows kro's last status write sends it once).
    async fn write_status(
        &self,
        shared: &Shared,
        graph: &GraphVersion,
        instance: &Object,
        current: &Plan,
        observed: Option<&Observed>,
    ) -> Result<(), ReconcileError> {
        if !current.status.writable {
            return Ok(());
        }
        let mut wanted = without_nulls(current.status.to_json());
        if let Some(observed) = observed
            && shared
                .settings
                .features
                .enabled(Feature::InstanceManagedResources)
        {
            wanted[kro_graph::MANAGED_RESOURCES] = managed_resources(current, observed);
        }
        if let Some((_, revision)) = rollout::governed(graph)
            && !instance.is_deleting()
        {
            rollout::record_revision(&mut wanted, instance.json(), revision, &now());
        }
        if shared
            .settings
            .features
            .enabled(Feature::InstanceConditionMetrics)
        {
            shared.metrics.conditions().record(
                &self.gvr,
                instance.namespace(),
                instance.name(),
                &conditions_of(&wanted),
                chrono::Utc::now(),
            );
        }
        let uid = instance.uid().to_owned();
        let digest = kro_engine::intent(&wanted);
        let cached_version: Option<u64> = instance.resource_version().parse().ok();
        let already_written = self
            .written_states
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&uid)
            .is_some_and(|written| {
                written.digest == digest
                    && matches!((cached_version, written.version), (Some(cached), Some(ours)) if cached < ours)
            });
        if already_written {
            return Ok(());
        }
        let empty = json!({});
        let existing = instance.json().get("status").unwrap_or(&empty);
        let Some(patch) = merge_patch(existing, &wanted) else {
            return Ok(());
        };
        let params = PatchParams {
            field_manager: Some(STATUS_MANAGER.to_owned()),
            ..PatchParams::default()
        };
        let answered = self
            .kind
            .api(&shared.client, Some(instance.namespace()))
            .patch_status(
                instance.name(),
                &params,
                &Patch::Merge(json!({"status": patch})),
            )
            .await
            .map_err(ReconcileError::api(Request::WriteStatus))?;
        self.own_writes
            .wrote(&uid, answered.metadata.resource_version.as_deref());
        self.condition_transitions(shared, instance, existing, &wanted)
            .await;
        let to = text(&wanted, "/state");
        let written = WrittenStatus {
            state: to.to_owned(),
            version: answered
                .metadata
                .resource_version
                .as_deref()
                .and_then(|version| version.parse().ok()),
            digest,
        };
        let from = self
            .written_states
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(uid, written)
            .map_or_else(|| text(existing, "/state").to_owned(), |last| last.state);
        if from != to {
            tracing::info!(from = %from, to = %to, "state changed");
            shared.metrics.instance_state_changed(&self.gvr, &from, to);
        }
        Ok(())
    }
}

impl InstanceController {
    /// Tells each condition that changed status in a status write: an Event with the gate
    /// `InstanceConditionEvents` (Normal when it became `True`, else Warning; the condition's
    /// type as reason, `False -> True: <reason>` as message, as upstream), a log line with
    /// `InstanceConditionMetrics`.
    async fn condition_transitions(
        &self,
        shared: &Shared,
        instance: &Object,
        before: &serde_json::Value,
        after: &serde_json::Value,
    ) {
        let features = shared.settings.features;
        let events = features.enabled(Feature::InstanceConditionEvents);
        let logs = features.enabled(Feature::InstanceConditionMetrics);
        if !events && !logs {
            return;
        }
        let (before, after) = (conditions_of(before), conditions_of(after));
        for transition in transitions(&before, &after) {
            if logs {
                tracing::debug!(
                    condition_type = %transition.condition.kind,
                    old_status = %transition.from,
                    new_status = %transition.condition.status,
                    reason = %transition.condition.reason,
                    "condition transitioned"
                );
            }
            if events {
                let kind = if transition.is_normal() {
                    EventType::Normal
                } else {
                    EventType::Warning
                };
                shared
                    .events
                    .record(
                        instance,
                        kind,
                        &transition.condition.kind,
                        &transition.message(),
                    )
                    .await;
            }
        }
    }
}

impl Reconciler for InstanceController {
    type Key = InstanceRef;
    type Done = Option<Duration>;
    type Context = Shared;

    fn queue(&self) -> &WorkQueue<InstanceRef> {
        &self.queue
    }

    fn failures(&self) -> &Failures<InstanceRef> {
        &self.failures
    }

    fn span(&self, key: &InstanceRef) -> tracing::Span {
        tracing::info_span!("reconcile", kind = %self.kind.resource.kind, instance = %key)
    }

    fn reconcile<'a>(
        &'a self,
        shared: &'a Shared,
        key: &'a InstanceRef,
    ) -> impl Future<Output = Result<Option<Duration>, ReconcileError>> + Send + 'a {
        self.reconcile_instance(shared, key)
    }

    fn reconciled(&self, shared: &Shared, elapsed: Duration, result: ReconcileResult) {
        shared
            .metrics
            .instance_reconciled(&self.gvr, elapsed, result.succeeded());
        shared
            .metrics
            .queues()
            .instance_reconciled(&self.gvr, result, elapsed.as_secs_f64());
    }

    fn succeeded(
        &self,
        _shared: &Shared,
        _key: &InstanceRef,
        requeue: Option<Duration>,
    ) -> Option<Duration> {
        requeue
    }
}

/// What kro last wrote of an instance's status.
struct WrittenStatus {
    /// `status.state`.
    state: String,
    /// The resourceVersion the server answered (a number on kube-apiserver and the embedded
    /// server; `None` when opaque).
    version: Option<u64>,
    /// A fingerprint of the status written.
    digest: u64,
}

/// The options of a plan: the settings, the kinds' scopes, the time now, and the controller's
/// `facts`.
fn plan_options(shared: &Shared, graph: &GraphVersion, facts: &ControllerFacts) -> PlanOptions {
    PlanOptions {
        served_scopes: graph.scopes.clone(),
        scheduling: shared.settings.scheduling,
        kro_version: shared.settings.kro_version.clone(),
        now: Some(now()),
        clock: graph.graph.reads_time.then(|| shared.settings.clock.now()),
        controller: facts.clone(),
        max_collection_size: shared.settings.max_collection_size,
        observer: Some(shared.metrics.plan_observer()),
        ..PlanOptions::default()
    }
}

/// `status.managedResources`: every object of the plan that exists, in apply order (levels,
/// then the RGD's order, then collection order), as `nodeID`, `apiVersion`, `kind`,
/// `namespace` (when it has one), `name` and `uid`.
fn managed_resources(current: &Plan, observed: &Observed) -> serde_json::Value {
    let entries: Vec<serde_json::Value> = current
        .levels
        .iter()
        .flatten()
        .filter_map(|index| current.nodes.get(*index))
        .flat_map(|node| node.desired.iter().map(move |desired| (node, desired)))
        .filter_map(|(node, desired)| {
            let object = observed.get(&desired.key)?;
            let mut entry = json!({
                "nodeID": node.id.as_str(),
                "apiVersion": text(object, "/apiVersion"),
                "kind": text(object, "/kind"),
                "name": text(object, "/metadata/name"),
                "uid": text(object, "/metadata/uid"),
            });
            let namespace = text(object, "/metadata/namespace");
            if !namespace.is_empty() {
                entry["namespace"] = json!(namespace);
            }
            Some(entry)
        })
        .collect();
    serde_json::Value::Array(entries)
}

/// Whether the instance asks not to be reconciled.
fn is_suspended(instance: &Object) -> bool {
    instance
        .annotation(RECONCILE_ANNOTATION)
        .is_some_and(|value| {
            value.eq_ignore_ascii_case("suspended") || value.eq_ignore_ascii_case("disabled")
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suspension_is_read_case_insensitively_with_the_legacy_value() {
        let resource = kube::api::ApiResource {
            group: "kro.run".to_owned(),
            version: "v1alpha1".to_owned(),
            api_version: "kro.run/v1alpha1".to_owned(),
            kind: "App".to_owned(),
            plural: "apps".to_owned(),
        };
        let with = |annotations: Option<&str>| {
            let mut answer = DynamicObject::new("web", &resource);
            answer.metadata.annotations = annotations
                .map(|value| [(RECONCILE_ANNOTATION.to_owned(), value.to_owned())].into());
            Object::new(&answer).unwrap()
        };
        for value in ["suspended", "Suspended", "disabled"] {
            assert!(is_suspended(&with(Some(value))), "{value}");
        }
        assert!(!is_suspended(&with(Some("on"))));
        assert!(!is_suspended(&with(None)));
    }
}
