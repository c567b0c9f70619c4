//! The ResourceGraphDefinition controller: compiles each RGD against the API server's schemas
//! and the built-in catalog, creates or updates its CRD (refusing CRDs kro does not own and
//! breaking changes the RGD does not allow), waits until the CRD is Established, runs the
//! instance controller of the kind, and reports all of it in the RGD's status.
//!
//! Deleting an RGD whose instances still exist: the RGD keeps its finalizer, and its instance
//! controller keeps running, until the last instance is gone — so every instance is deleted
//! the way kro deletes (ordered, finalizer removed) and none is stranded with a finalizer
//! nobody removes (upstream issue #1067). The RGD reports `Deleting` in the meantime with the
//! number of instances it waits for. The CRD stays, as upstream's default.

use crate::own_writes::OwnWrites;
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use kro_graph::metadata::{CRD_MANAGER, FINALIZER};
use kro_graph::{
    BuildConfig, BuiltinCatalog, CompiledGraph, ResourceGraphDefinition, SchemaSources,
    build_graph_with,
};
use kro_schema::Gvk;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::runtime::reflector::store::Writer;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher::{self, Event};
use kube::runtime::{WatchStreamExt, reflector};
use serde_json::{Value as Json, json};

use crate::crd_plan::RgdIdentity;
use crate::error::{ReconcileError, Request};
use crate::events::EventType;
use crate::graph_revisions::{GraphRevisions, RevisionRegistry};
use crate::instance::{GraphVersion, InstanceController};
use crate::metrics::{RGD_CONTROLLER, ReconcileResult};
use crate::object::Object;
use crate::object_json::{merge_patch, now, text};
use crate::queue::{Failures, WorkQueue};
use crate::readiness::Caches;
use crate::rgd_status::{
    ConditionValue, RgdObservation, graph_accepted, graph_rejected, rgd_status,
};
use crate::set::SetController;
use crate::shared::Shared;
use crate::watches::ListedChanges;
use crate::worker::{Reconciler, Tasks};

mod deletion;
mod kinds;
mod revisions;

use kinds::{served_kind, watch_generated_crds};

pub use kro_engine::kinds::rgd_resource;

/// The kinds an RGD's resources name (their schemas are read from the API server).
pub fn used_kinds(rgd: &ResourceGraphDefinition) -> BTreeSet<Gvk> {
    let mut kinds = BTreeSet::new();
    for resource in &rgd.spec.resources {
        let (api_version, kind) = match (&resource.template, &resource.external_ref) {
            (Some(template), _) => (
                template.get("apiVersion").and_then(Json::as_str),
                template.get("kind").and_then(Json::as_str),
            ),
            (None, Some(external)) => (
                Some(external.api_version.as_str()),
                Some(external.kind.as_str()),
            ),
            (None, None) => (None, None),
        };
        if let (Some(api_version), Some(kind)) = (api_version, kind)
            && let Ok(gvk) = Gvk::from_api_version(api_version, kind)
        {
            kinds.insert(gvk);
        }
    }
    kinds
}

/// The RGD controller.
pub(crate) struct RgdController {
    shared: Arc<Shared>,
    store: Store<DynamicObject>,
    queue: WorkQueue<String>,
    /// Instance controllers by RGD name.
    controllers: tokio::sync::Mutex<HashMap<String, Arc<InstanceController>>>,
    /// `<Kind>Set` controllers by RGD name, with the instance controller each listens to.
    sets: tokio::sync::Mutex<HashMap<String, RunningSet>>,
    /// The generation of each RGD whose kinds the controller was found allowed to handle, so
    /// that access is reviewed once per change of the RGD, not on every resync.
    reviewed: Mutex<HashMap<String, i64>>,
    /// kro's writes of the RGDs the watch has yet to show (they wake no reconcile).
    own_writes: Arc<OwnWrites>,
    /// Failures in a row of each RGD (for the backoff).
    failures: Failures<String>,
    /// Reads and writes GraphRevisions.
    revisions: GraphRevisions,
    /// The GraphRevisions this controller knows, with their states.
    registry: Arc<RevisionRegistry>,
    tasks: Mutex<Tasks>,
}

impl RgdController {
    /// Starts watching RGDs with `workers` workers.
    pub(crate) fn start(shared: Arc<Shared>, workers: usize) -> Arc<RgdController> {
        let writer = Writer::new(rgd_resource());
        let store = writer.as_reader();
        let queue = WorkQueue::counted(shared.metrics.queues().queue(RGD_CONTROLLER));
        shared
            .metrics
            .queues()
            .workers(RGD_CONTROLLER, workers.max(1));
        let api: Api<DynamicObject> = Api::all_with(shared.client.clone(), &rgd_resource());
        shared
            .metrics
            .watch_rgds(crate::metrics::LiveSource::of(&queue, &store));
        let revisions = GraphRevisions::new(&shared.client);
        let registry = Arc::new(RevisionRegistry::new(shared.metrics.clone()));
        let controller = Arc::new(RgdController {
            shared,
            store,
            queue: queue.clone(),
            controllers: tokio::sync::Mutex::default(),
            sets: tokio::sync::Mutex::default(),
            reviewed: Mutex::default(),
            own_writes: Arc::default(),
            failures: Failures::default(),
            revisions,
            registry,
            tasks: Mutex::default(),
        });
        let watch = reflector::reflector(writer, watcher::watcher(api, watcher::Config::default()))
            .backoff(crate::watches::WatchBackoff::default());
        let listed = controller.store.clone();
        let own_writes = Arc::clone(&controller.own_writes);
        let mut tasks = Tasks::default();
        tasks.watch(async move {
            let mut watch = std::pin::pin!(watch);
            let mut changes = ListedChanges::default();
            while let Some(event) = watch.next().await {
                match event {
                    Ok(event) => {
                        match &event {
                            Event::Init => tracing::debug!("listing RGDs"),
                            Event::InitDone => tracing::debug!("RGDs listed; watching"),
                            _ => {}
                        }
                        let own_write = match &event {
                            Event::Apply(rgd) => rgd
                                .metadata
                                .uid
                                .as_deref()
                                .zip(rgd.metadata.resource_version.as_deref())
                                .is_some_and(|(uid, version)| own_writes.seen(uid, version)),
                            _ => false,
                        };
                        for rgd in changes.changed(event, &listed) {
                            let name = rgd.metadata.name.clone().unwrap_or_default();
                            if own_write {
                                tracing::debug!(rgd = %name, "RGD shows kro's own write");
                                continue;
                            }
                            tracing::debug!(rgd = %name, "RGD changed");
                            queue.add(name);
                        }
                    }
                    Err(error) => tracing::warn!(%error, "RGD watch failed; retrying"),
                }
            }
        });
        tasks.watch(watch_generated_crds(
            controller.shared.client.clone(),
            controller.queue.clone(),
        ));
        tasks.watch(crate::graph_revisions::watch(
            controller.shared.client.clone(),
            controller.queue.clone(),
            Arc::clone(&controller.registry),
        ));
        for _ in 0..workers.max(1) {
            let controller = Arc::clone(&controller);
            tasks.worker(async move {
                let shared = Arc::clone(&controller.shared);
                crate::worker::work(&*controller, &shared, &shared.settings).await;
            });
        }
        *controller
            .tasks
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = tasks;
        controller
    }

    /// The caches readiness waits for: the RGDs, and the instances of every kind served.
    pub(crate) fn caches(&self) -> Caches {
        Caches {
            rgds: self.store.clone(),
            router: Arc::clone(&self.shared.router),
        }
    }

    /// Stops the RGD workers, then every instance controller.
    pub(crate) async fn stop(&self) {
        self.queue.shut_down();
        let tasks = std::mem::take(&mut *self.tasks.lock().unwrap_or_else(PoisonError::into_inner));
        tasks.stop().await;
        let sets: Vec<_> = self.sets.lock().await.drain().collect();
        for (_, (set, instances)) in sets {
            set.stop(&instances).await;
        }
        let controllers: Vec<_> = self.controllers.lock().await.drain().collect();
        for (_, controller) in controllers {
            controller.stop(&self.shared).await;
        }
    }

    /// Queues every RGD, and every instance of every kind, for a reconcile.
    pub(crate) async fn resync(&self) {
        for rgd in self.store.state() {
            self.queue
                .add(rgd.metadata.name.clone().unwrap_or_default());
        }
        for controller in self.controllers.lock().await.values() {
            controller.enqueue_all();
        }
    }

    /// Reconciles one RGD: its finalizer, then the stages (compile, CRD, instance
    /// controller), then one status write with what the stages found.
    async fn reconcile_rgd(&self, name: &str) -> Result<Option<Duration>, ReconcileError> {
        let Some(object) = self.store.get(&ObjectRef::new_with(name, rgd_resource())) else {
            let live = crate::watches::cached_uids(&self.store);
            self.own_writes.retain(|uid| live.contains(uid));
            self.stop_set_controller(name).await;
            self.stop_instance_controller(name).await;
            return Ok(None);
        };
        let rgd = Object::new(&object)?;
        let uid = rgd.uid().to_owned();
        if self
            .own_writes
            .behind(&uid, rgd.resource_version().parse().ok())
        {
            // The cache has yet to show kro's last write of the RGD (its finalizer, its
            // status): its event brings the RGD back (a lost watch re-lists, which queues
            // every RGD). A timer would reconcile it again in steady state.
            return Ok(None);
        }
        let api: Api<DynamicObject> = Api::all_with(self.shared.client.clone(), &rgd_resource());
        let has_finalizer = rgd.has_finalizer(FINALIZER);
        if rgd.is_deleting() {
            if !has_finalizer {
                return Ok(None);
            }
            return self.delete(name, &rgd).await;
        }
        if !has_finalizer {
            let mut finalizers = rgd.finalizers_without(FINALIZER);
            finalizers.push(FINALIZER);
            let patch = json!({"metadata": {
                "finalizers": finalizers,
                "resourceVersion": rgd.resource_version(),
            }});
            let answered = api
                .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .map_err(ReconcileError::api(Request::AddFinalizer))?;
            self.own_writes
                .wrote(&uid, answered.metadata.resource_version.as_deref());
        }
        let identity = RgdIdentity {
            name: name.to_owned(),
            uid: uid.clone(),
        };
        let running = self.controllers.lock().await.contains_key(name);
        let mut progress = Progress {
            generation: rgd.generation(),
            graph: None,
            graph_revisions: condition_of(rgd.json(), "GraphRevisionsResolved"),
            last_issued_revision: rgd
                .json()
                .pointer("/status/lastIssuedRevision")
                .and_then(Json::as_i64)
                .unwrap_or(0),
            build_seconds: 0.0,
            issued: false,
            resolution: "",
            graph_accepted: ConditionValue::unknown("Pending", ""),
            kind_ready: condition_of(rgd.json(), "KindReady"),
            controller_ready: controller_ready(running),
            serving_revision: None,
            propagated: crate::rgd_status::Propagated::Absent,
        };
        tracing::debug!(generation = progress.generation, "reconciling");
        let concluded = self.run_stages(name, &rgd, identity, &mut progress).await;
        let revisions = self.shared.metrics.revisions();
        match (&concluded, progress.resolution) {
            (Err(_), _) => revisions.resolved("failed"),
            (Ok(_), "") => {}
            (Ok(_), resolution) => revisions.resolved(resolution),
        }
        let concluded = concluded?;
        progress.propagated = match self.controllers.lock().await.get(name) {
            Some(controller) => controller.propagated(),
            None => crate::rgd_status::Propagated::Absent,
        };
        self.write_status(name, &rgd, &progress.observation())
            .await?;
        match concluded {
            Concluded::Done => Ok(None),
            Concluded::After(delay) => Ok(Some(delay)),
            Concluded::Retry(error) => Err(error),
        }
    }

    /// The stages in order, each recording what it found in `progress`; a stage that cannot
    /// go on concludes the reconcile. `Err` when a stage was interrupted before it could
    /// conclude (a request failed): then there is nothing new to report.
    async fn run_stages(
        &self,
        name: &str,
        rgd: &Object,
        identity: RgdIdentity,
        progress: &mut Progress,
    ) -> Result<Concluded, ReconcileError> {
        let Some(lineage) = self.lineage(rgd, &identity, progress).await? else {
            return Ok(Concluded::After(
                self.shared.settings.progress_requeue_delay,
            ));
        };
        let graph = self.compile(rgd, progress).await?;
        self.resolve_revisions(rgd, &lineage, graph.as_ref(), progress)
            .await?;
        let Some(graph) = graph else {
            return Ok(Concluded::Done);
        };
        if !self
            .ensure_crd(name, rgd, &graph, &identity, progress)
            .await?
        {
            return Ok(Concluded::Done);
        }
        let set = graph.set_crd.clone().zip(graph.set_names.clone());
        let set_identity = identity.clone();
        let generation = rgd.generation();
        match self
            .run_controller(name, generation, graph, identity, progress)
            .await
        {
            Concluded::Done => {
                let concluded = self
                    .run_set_controller(name, rgd, set, &set_identity, progress)
                    .await?;
                self.retain_revisions(rgd, &lineage, progress.issued).await;
                Ok(concluded)
            }
            retry => Ok(retry),
        }
    }

    /// Stops the instance controller of the RGD `name`, if one runs (no guard is held while
    /// it stops: its reconciles finish first).
    async fn stop_instance_controller(&self, name: &str) {
        let removed = self.controllers.lock().await.remove(name);
        if let Some(controller) = removed {
            controller.stop(&self.shared).await;
        }
    }

    /// Stage 1: decodes the RGD and builds its graph against the API server's schemas and the
    /// built-in catalog. `None` when the RGD is rejected (`GraphAccepted` says why).
    async fn compile(
        &self,
        rgd: &Object,
        progress: &mut Progress,
    ) -> Result<Option<CompiledGraph>, ReconcileError> {
        let definition = match ResourceGraphDefinition::from_json(rgd.json()) {
            Ok(definition) => definition,
            Err(error) => {
                progress.graph_accepted = graph_rejected(&error.to_string());
                return Ok(None);
            }
        };
        let building = Instant::now();
        let used = used_kinds(&definition);
        let live = crate::schemas::read_schemas_with(
            &self.shared.client,
            "the API server",
            &used,
            &self.shared.schemas,
        )
        .await
        .map_err(ReconcileError::Schemas)?;
        self.published(&used, &live).await?;
        tracing::debug!(elapsed = ?building.elapsed(), "schemas read");
        let config = BuildConfig {
            env: kro_cel::Env::kro().with_cost_limit(Some(self.shared.settings.cel_cost_limit)),
            max_collection_dimensions: self.shared.settings.max_collection_dimensions,
            features: self.shared.settings.features,
        };
        let built = build_graph_with(
            &definition,
            &SchemaSources::new().with(live).with(BuiltinCatalog),
            &config,
        );
        progress.build_seconds = building.elapsed().as_secs_f64();
        self.shared.metrics.graph_built(
            &definition.metadata.name,
            building.elapsed(),
            built.is_ok(),
        );
        match built {
            Ok(graph) => {
                progress.graph_accepted = graph_accepted();
                progress.graph = Some(graph.clone());
                Ok(Some(graph))
            }
            Err(errors) => {
                self.shared
                    .events
                    .record(
                        rgd,
                        EventType::Warning,
                        "InvalidResourceGraph",
                        &errors.to_string(),
                    )
                    .await;
                progress.graph_accepted = graph_rejected(&errors.to_string());
                Ok(None)
            }
        }
    }

    /// Fails (to be retried) while a kind of `used` that the server serves has no schema in
    /// `live` nor in the built-in catalog: its schema is still to be published. A kind the
    /// server does not serve (one whose CRD the graph itself creates) is built without one.
    async fn published(
        &self,
        used: &BTreeSet<Gvk>,
        live: &kro_graph::CatalogSchemas,
    ) -> Result<(), ReconcileError> {
        use kro_graph::{SchemaLookup, SchemaSource};
        for gvk in used {
            let known =
                |source: &dyn SchemaSource| matches!(source.lookup(gvk), SchemaLookup::Found(_));
            if known(live) || known(&BuiltinCatalog) {
                continue;
            }
            if self
                .shared
                .kinds
                .resolve(gvk.group(), gvk.version(), gvk.kind())
                .await
                .is_ok()
            {
                return Err(ReconcileError::Schemas(
                    crate::schemas::SchemaReadError::Unpublished {
                        kind: gvk.kind().to_owned(),
                        api_version: gvk.api_version(),
                    },
                ));
            }
        }
        Ok(())
    }

    /// Stage 3: runs the instance controller of the kind, or gives the running one the new
    /// graph. [`Concluded::Retry`] when the kinds the graph uses cannot be watched
    /// (`ControllerReady` says why).
    async fn run_controller(
        &self,
        name: &str,
        generation: i64,
        graph: CompiledGraph,
        identity: RgdIdentity,
        progress: &mut Progress,
    ) -> Concluded {
        let served = served_kind(&graph.names);
        self.shared.kinds.insert(served.clone());
        let version =
            match GraphVersion::prepare(&self.shared, graph, identity, progress.serving_revision)
                .await
            {
                Ok(version) => version,
                Err(error) => {
                    progress.controller_ready =
                        ConditionValue::fails("FailedToStart", error.to_string());
                    return Concluded::Retry(ReconcileError::Kind(error));
                }
            };
        let reviewed = self
            .reviewed
            .lock()
            .map(|reviewed| reviewed.get(name) == Some(&generation))
            .unwrap_or(false);
        let missing = if reviewed {
            Vec::new()
        } else {
            match crate::access::missing_permissions(&self.shared.client, &version.needs()).await {
                Ok(missing) => missing,
                Err(source) => {
                    return Concluded::Retry(ReconcileError::Api {
                        request: Request::ReviewAccess,
                        source,
                    });
                }
            }
        };
        if let Ok(mut reviewed) = self.reviewed.lock() {
            if missing.is_empty() {
                reviewed.insert(name.to_owned(), generation);
            } else {
                reviewed.remove(name);
            }
        }
        let running = self.controllers.lock().await.get(name).cloned();
        match running {
            Some(controller) if controller.kind.resource == served.resource => {
                controller.update(&self.shared, version);
            }
            _ => {
                // The old one stops first (with no guard held while it does): it unsubscribes
                // its group-kind, which would otherwise end the new one's routing.
                self.stop_instance_controller(name).await;
                // The rollout asks for the RGD to be reconciled when `Propagated` changes.
                let queue = self.queue.clone();
                let rgd = name.to_owned();
                let on_propagation = Box::new(move || queue.add(rgd.clone()));
                let controller =
                    InstanceController::start(&self.shared, served, version, on_propagation);
                self.controllers
                    .lock()
                    .await
                    .insert(name.to_owned(), controller);
            }
        }
        if missing.is_empty() {
            progress.controller_ready = controller_ready(true);
            return Concluded::Done;
        }
        // The controller runs (its watches recover once access is granted), but is not
        // ready; the RGD is looked at again until the access is there.
        let message = format!(
            "the controller may not handle the kinds this graph uses: {}; grant them (with the Helm chart's rbac.mode: aggregation, in a ClusterRole labelled rbac.kro.run/aggregate-to-controller: \"true\")",
            missing.join("; ")
        );
        progress.controller_ready = ConditionValue::fails("MissingPermissions", message.clone());
        Concluded::Retry(ReconcileError::MissingPermissions(message))
    }

    async fn write_status(
        &self,
        name: &str,
        rgd: &Object,
        observation: &RgdObservation<'_>,
    ) -> Result<(), ReconcileError> {
        let empty = json!({});
        let previous = rgd.json().get("status").unwrap_or(&empty);
        let mut wanted = rgd_status(previous, observation, &now());
        if rgd.is_deleting() {
            wanted["state"] = json!("Deleting");
        }
        self.shared.metrics.rgds().state_changed(
            name,
            previous["state"].as_str().unwrap_or_default(),
            wanted["state"].as_str().unwrap_or_default(),
        );
        let Some(patch) = merge_patch(previous, &wanted) else {
            return Ok(());
        };
        let api: Api<DynamicObject> = Api::all_with(self.shared.client.clone(), &rgd_resource());
        let params = PatchParams {
            field_manager: Some(CRD_MANAGER.to_owned()),
            ..PatchParams::default()
        };
        let answered = api
            .patch_status(name, &params, &Patch::Merge(json!({"status": patch})))
            .await
            .map_err(ReconcileError::api(Request::WriteStatus))?;
        self.own_writes
            .wrote(rgd.uid(), answered.metadata.resource_version.as_deref());
        Ok(())
    }
}

impl Reconciler for RgdController {
    type Key = String;
    type Done = Option<Duration>;
    type Context = Shared;

    fn queue(&self) -> &WorkQueue<String> {
        &self.queue
    }

    fn failures(&self) -> &Failures<String> {
        &self.failures
    }

    fn span(&self, name: &String) -> tracing::Span {
        tracing::info_span!("reconcile", rgd = %name)
    }

    fn reconcile<'a>(
        &'a self,
        _shared: &'a Shared,
        name: &'a String,
    ) -> impl Future<Output = Result<Option<Duration>, ReconcileError>> + Send + 'a {
        self.reconcile_rgd(name)
    }

    fn reconciled(&self, shared: &Shared, elapsed: Duration, result: ReconcileResult) {
        shared.metrics.rgd_reconciled(elapsed, result.succeeded());
        shared
            .metrics
            .queues()
            .reconciled(RGD_CONTROLLER, result, elapsed.as_secs_f64());
    }

    fn working(&self, shared: &Shared, delta: i64) {
        shared.metrics.queues().working(RGD_CONTROLLER, delta);
    }

    fn succeeded(
        &self,
        _shared: &Shared,
        _name: &String,
        requeue: Option<Duration>,
    ) -> Option<Duration> {
        requeue
    }
}

/// What the stages of one RGD reconcile found: written as the RGD's status at the end.
struct Progress {
    /// The RGD's `metadata.generation`.
    generation: i64,
    /// The compiled graph, once the RGD compiles.
    graph: Option<CompiledGraph>,
    /// `GraphRevisionsResolved`.
    graph_revisions: ConditionValue,
    /// The highest revision number issued (`status.lastIssuedRevision`).
    last_issued_revision: i64,
    /// How long the compile took (schemas read included), in seconds.
    build_seconds: f64,
    /// Whether this reconcile issued a revision.
    issued: bool,
    /// How the revisions were resolved (`rgd_graph_revision_resolution_total`'s `result`).
    resolution: &'static str,
    graph_accepted: ConditionValue,
    kind_ready: ConditionValue,
    controller_ready: ConditionValue,
    /// The revision the compiled graph is, once resolved.
    serving_revision: Option<i64>,
    /// `Propagated`, from the instance controller's rollout.
    propagated: crate::rgd_status::Propagated,
}

impl Progress {
    /// The status to write.
    fn observation(&self) -> RgdObservation<'_> {
        RgdObservation {
            generation: self.generation,
            graph: self.graph.as_ref(),
            graph_revisions: self.graph_revisions.clone(),
            last_issued_revision: self.last_issued_revision,
            graph_accepted: self.graph_accepted.clone(),
            kind_ready: self.kind_ready.clone(),
            controller_ready: self.controller_ready.clone(),
            propagated: self.propagated.clone(),
        }
    }
}

/// How the stages of an RGD reconcile ended, once the status says what they found.
enum Concluded {
    /// Nothing to retry (the RGD may still be rejected or its kind refused: the status says).
    Done,
    /// Look again after this long (a GraphRevision is still being deleted).
    After(Duration),
    /// Retry with backoff.
    Retry(ReconcileError),
}

/// `ControllerReady` for a controller that runs, or not yet.
/// A running `<Kind>Set` controller and the instance controller it listens to.
type RunningSet = (Arc<SetController>, Arc<InstanceController>);

fn controller_ready(running: bool) -> ConditionValue {
    if running {
        ConditionValue::holds("Running", "controller is running")
    } else {
        ConditionValue::unknown("Pending", "the controller has not started")
    }
}

/// A condition the RGD carries now, as a value (Unknown when it carries none).
fn condition_of(rgd: &Json, kind: &str) -> ConditionValue {
    let found = rgd
        .pointer("/status/conditions")
        .and_then(Json::as_array)
        .and_then(|conditions| {
            conditions
                .iter()
                .find(|condition| condition["type"] == kind)
        });
    match found {
        Some(condition) => {
            let reason = text(condition, "/reason");
            let message = text(condition, "/message");
            match text(condition, "/status") {
                "True" => ConditionValue::holds(reason, message),
                "False" => ConditionValue::fails(reason, message),
                _ => ConditionValue::unknown(reason, message),
            }
        }
        None => ConditionValue::unknown("Pending", ""),
    }
}
