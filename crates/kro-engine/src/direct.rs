//! Direct deploy: one instance's graph applied once, with no controller and no instance
//! object in the cluster (what `kro apply` and `kro delete` run).
//!
//! The controller's evaluator and apply engine, driven once: plan with kro-runtime, apply the
//! lowest level whose objects changed (all of them at once, server-side apply as
//! [`DIRECT_MANAGER`]), feed the answers back as observed state and plan again; when nothing
//! more can be applied, wait — through watches, never by polling — for what the plan waits
//! on, until every node is ready, the timeout passes or the caller stops it. Then prune what
//! left the plan, as the controller does.
//!
//! Ownership needs no state store: a ConfigMap stands in for the instance as the ApplySet
//! parent of its objects ([`ParentRef`]). Its UID is the instance's UID in every object's
//! `kro.run/instance-id` label and its inventory says where the objects are, so a later run
//! updates and prunes them and [`DirectEngine::delete`] finds them with no RGD.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::fmt;
use std::time::Duration;

use futures_util::{StreamExt, stream};
use kro_graph::metadata::DIRECT_MANAGER;
use kro_graph::{CompiledGraph, NodeKind};
use kro_runtime::{
    AdmissionError, DesiredObject, InstanceState, Inventory, InventoryError, NodeError, NodeState,
    ObjectKey, Observed, Plan, PlanOptions, Read, Scheduling, admit, desired_keys, plan, prunable,
};
use kube::api::PatchParams;
use serde_json::{Value as Json, json};
use tokio::time::Instant;

use crate::apply::{Applier, ApplyConfig, ApplyError};
use crate::converge::{Rounds, converge};
use crate::json::{now, text};
use crate::kinds::{KindError, Kinds};

mod drive;
mod parent;
mod remove;
mod through_kro;
mod watch;

pub use parent::ParentRef;
use watch::{Seen, Selection, Target, Watches};

/// How long past the timeout a request under way may take before the whole run gives up.
pub(crate) const REQUEST_GRACE: Duration = Duration::from_secs(2);

/// How soon discovery is asked again about a kind the plan waits on and the server does not
/// serve yet.
const UNSERVED_RETRY: Duration = Duration::from_secs(2);

/// How a [`DirectEngine`] deploys.
#[derive(Debug, Clone)]
pub struct DirectConfig {
    /// The field manager of every write ([`DIRECT_MANAGER`] by default).
    pub field_manager: String,
    /// Objects applied (or deleted) at once within a level.
    pub concurrency: usize,
    /// Wait until every resource is ready; without it, apply what can be applied now and
    /// return.
    pub wait: bool,
    /// How long to wait at most (`None`: no limit).
    pub timeout: Option<Duration>,
    /// Delete what this run created when it fails (in reverse levels), and the parent
    /// ConfigMap if this run created it.
    pub rollback_on_failure: bool,
    /// Level barrier or wavefront, as the controller's setting.
    pub scheduling: Scheduling,
    /// The version written into `kro.run/kro-version` labels and the ApplySet tooling.
    pub kro_version: String,
    /// Where the parent ConfigMap of a cluster-scoped instance goes (`default`): one fixed
    /// place, so that the instance is found again whatever namespace a later run works in.
    pub parent_namespace: String,
    /// Hold a resource without readyWhen until its objects are ready by the rules of their
    /// kind (a Deployment available, a Job complete, a claim bound: see
    /// [`kro_runtime::kind_readiness`]); off, an object is ready once it exists, as under the
    /// controller.
    pub kind_readiness: bool,
    /// Send every write with `dryRun=All` (kubectl's `--dry-run=server`): the server admits,
    /// defaults and validates each object and stores nothing. Levels proceed as if the one
    /// before were ready (readiness is assumed, as `kro render --assume-ready` does), nothing
    /// is waited for, and what would be pruned is reported, not deleted.
    pub dry_run: bool,
}

impl Default for DirectConfig {
    fn default() -> Self {
        DirectConfig {
            field_manager: DIRECT_MANAGER.to_owned(),
            concurrency: 16,
            wait: true,
            timeout: Some(Duration::from_secs(300)),
            rollback_on_failure: false,
            scheduling: Scheduling::Levels,
            kro_version: PlanOptions::default().kro_version,
            parent_namespace: "default".to_owned(),
            kind_readiness: true,
            dry_run: false,
        }
    }
}

/// Asks a running deploy or delete to stop: it starts no new work, lets what is in flight
/// finish, and fails with [`DirectError::Stopped`] naming what was left.
#[derive(Debug)]
pub struct StopHandle(tokio::sync::watch::Sender<bool>);

impl StopHandle {
    /// Asks to stop.
    pub fn stop(&self) {
        self.0.send_replace(true);
    }
}

/// The side of a [`StopHandle`] a deploy watches.
#[derive(Debug, Clone)]
pub struct Stop(tokio::sync::watch::Receiver<bool>);

impl Stop {
    /// A handle and the signal it sets.
    pub fn new() -> (StopHandle, Stop) {
        let (sender, receiver) = tokio::sync::watch::channel(false);
        (StopHandle(sender), Stop(receiver))
    }

    /// A signal nothing sets.
    pub fn never() -> Stop {
        Stop::new().1
    }

    /// Whether stopping was asked.
    pub fn is_stopped(&self) -> bool {
        *self.0.borrow()
    }

    /// Returns once stopping is asked (never, when no handle can ask any more).
    pub(crate) async fn stopped(&mut self) {
        if self.0.wait_for(|stopped| *stopped).await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

/// What a deploy or delete is doing, for people (see its `Display`).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Progress {
    /// The parent ConfigMap was written.
    Parent {
        /// Where it is.
        parent: ParentRef,
        /// Whether this run created it.
        created: bool,
    },
    /// An object was applied.
    Applied {
        /// The level of its node.
        level: usize,
        /// The object.
        key: ObjectKey,
        /// Whether it was created (else updated).
        created: bool,
    },
    /// A node waits.
    Waiting {
        /// Its level.
        level: usize,
        /// Its id.
        node: String,
        /// What for.
        reason: String,
    },
    /// A node became ready.
    Ready {
        /// Its level.
        level: usize,
        /// Its id.
        node: String,
    },
    /// A node is not part of the instance.
    Skipped {
        /// Its level.
        level: usize,
        /// Its id.
        node: String,
        /// Why.
        reason: String,
    },
    /// An object that left the plan was deleted.
    Pruned {
        /// The object.
        key: ObjectKey,
    },
    /// A dry run could not check an object: its kind is not served (yet).
    Unchecked {
        /// The level of its node.
        level: usize,
        /// The object.
        key: ObjectKey,
        /// Why.
        reason: String,
    },
    /// An object left the plan and would be pruned (a dry run deletes nothing).
    WouldPrune {
        /// The object.
        key: ObjectKey,
    },
    /// An object was handed to the controller (`apply_through_kro`).
    Submitted {
        /// The object.
        key: ObjectKey,
    },
    /// An object handed to the controller is not there yet.
    Awaiting {
        /// The object.
        key: ObjectKey,
        /// What its status says.
        reason: String,
    },
    /// An object handed to the controller is there.
    Settled {
        /// The object.
        key: ObjectKey,
        /// Its state.
        state: String,
    },
    /// An object was deleted and is gone.
    Deleted {
        /// The object.
        key: ObjectKey,
        /// Its apply order (deleted highest first).
        order: usize,
    },
}

impl fmt::Display for Progress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Progress::Parent { parent, created } => write!(
                f,
                "{parent}: ApplySet parent {}",
                if *created { "created" } else { "updated" }
            ),
            Progress::Applied {
                level,
                key,
                created,
            } => write!(
                f,
                "level {level}: {key} {}",
                if *created { "created" } else { "applied" }
            ),
            Progress::Waiting {
                level,
                node,
                reason,
            } => write!(f, "level {level}: {node} waiting: {reason}"),
            Progress::Ready { level, node } => write!(f, "level {level}: {node} ready"),
            Progress::Skipped {
                level,
                node,
                reason,
            } => write!(f, "level {level}: {node} skipped: {reason}"),
            Progress::Pruned { key } => write!(f, "pruned {key}, which left the plan"),
            Progress::Unchecked { level, key, reason } => {
                write!(f, "level {level}: {key} not checked: {reason}")
            }
            Progress::WouldPrune { key } => {
                write!(f, "would prune {key}, which left the plan")
            }
            Progress::Submitted { key } => write!(f, "{key} applied"),
            Progress::Awaiting { key, reason } => write!(f, "{key} waiting: {reason}"),
            Progress::Settled { key, state } => write!(f, "{key} {state}"),
            Progress::Deleted { key, order } => write!(f, "deleted {key} (apply order {order})"),
        }
    }
}

/// Where progress goes.
pub type Reporter<'a> = &'a (dyn Fn(&Progress) + Send + Sync);

/// Why a direct deploy or delete failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DirectError {
    /// The instance is not valid for the RGD.
    #[error("the instance: {0}")]
    Admission(#[from] AdmissionError),
    /// The parent ConfigMap's name would be too long.
    #[error(
        "the parent ConfigMap name {0:?} is longer than 253 characters: use a shorter instance name"
    )]
    ParentName(String),
    /// The parent ConfigMap could not be read or written.
    #[error("{parent}: {}", api_message(source))]
    Parent {
        /// Which.
        parent: ParentRef,
        /// The server's answer.
        source: Box<kube::Error>,
    },
    /// The parent ConfigMap's inventory is not one this tool can trust.
    #[error("{parent}: {source}; refusing to prune or delete from it")]
    Inventory {
        /// Which.
        parent: ParentRef,
        /// What is wrong.
        source: InventoryError,
    },
    /// No parent ConfigMap for the instance.
    #[error("{0} does not exist: nothing was deployed for this instance (or it was deleted)")]
    NotDeployed(ParentRef),
    /// A node of the graph failed (an expression, a status the RGD reads, a Job that failed).
    #[error("resource {node} (level {level}): {error}")]
    Node {
        /// The node.
        node: String,
        /// Its level.
        level: usize,
        /// What went wrong, at its place in the RGD.
        error: NodeError,
    },
    /// A status field or an author condition of the RGD failed.
    #[error("the instance status: {}", errors.join("; "))]
    Status {
        /// Each failure, at its place in the RGD.
        errors: Vec<String>,
        /// The first, as the planner reported it.
        first: NodeError,
    },
    /// The server refused an object.
    #[error("{key} (level {level}): {}", apply_message(source))]
    Apply {
        /// The object.
        key: Box<ObjectKey>,
        /// Its level.
        level: usize,
        /// The refusal.
        source: Box<ApplyError>,
    },
    /// The object exists and belongs to another ApplySet (another instance or tool).
    #[error(
        "{key} (level {level}) already exists and belongs to ApplySet {applyset}: it is not taken over"
    )]
    OwnedElsewhere {
        /// The object.
        key: Box<ObjectKey>,
        /// Its level.
        level: usize,
        /// The ApplySet it is part of.
        applyset: String,
    },
    /// An object could not be read.
    #[error("reading {key}: {}", api_message(source))]
    Read {
        /// The object.
        key: Box<ObjectKey>,
        /// The server's answer.
        source: Box<kube::Error>,
    },
    /// A kind is not served.
    #[error(transparent)]
    Kind(KindError),
    /// Discovery failed.
    #[error("discovering {kind}: {}", api_message(source))]
    Discover {
        /// The group-kind.
        kind: String,
        /// The server's answer.
        source: Box<kube::Error>,
    },
    /// The members of the instance could not be listed.
    #[error("listing the instance's {kind} objects: {}", api_message(source))]
    ListMembers {
        /// The group-kind.
        kind: String,
        /// The server's answer.
        source: Box<kube::Error>,
    },
    /// The parents of an instance could not be listed.
    #[error("listing parent ConfigMaps in {namespace}: {}", api_message(source))]
    FindParents {
        /// The namespace.
        namespace: String,
        /// The server's answer.
        source: Box<kube::Error>,
    },
    /// An object could not be deleted.
    #[error("deleting {key}: {}", api_message(source))]
    Delete {
        /// The object.
        key: Box<ObjectKey>,
        /// The server's answer.
        source: Box<kube::Error>,
    },
    /// An object was still there at the deadline.
    #[error("{key} was not gone by the deadline")]
    DeleteTimedOut {
        /// The object.
        key: Box<ObjectKey>,
    },
    /// The timeout passed; what was still waiting.
    #[error("timed out waiting for: {}", waiting.join("; "))]
    TimedOut {
        /// Each resource still waiting, with its level and reason.
        waiting: Vec<String>,
    },
    /// The caller asked to stop; what was left.
    #[error("stopped; left waiting: {}", if waiting.is_empty() { "nothing".to_owned() } else { waiting.join("; ") })]
    Stopped {
        /// Each resource not done, with its state.
        waiting: Vec<String>,
    },
    /// Objects needed applying round after round (someone else keeps changing them).
    #[error("these objects are changed again after every apply (another writer?): {}", .0.join(", "))]
    Unsettled(Vec<String>),
    /// The cluster does not serve ResourceGraphDefinitions.
    #[error(
        "the cluster does not serve ResourceGraphDefinitions (kro.run/v1alpha1): install kro, or deploy without it (--mode direct)"
    )]
    KroMissing,
    /// The server refused an object handed to the controller.
    #[error("applying {key}: {}", api_message(source))]
    Submit {
        /// The object.
        key: Box<ObjectKey>,
        /// The server's answer.
        source: Box<kube::Error>,
    },
    /// The controller refused an object for good.
    #[error("{key}: {reason}")]
    Refused {
        /// The object.
        key: Box<ObjectKey>,
        /// What its status says.
        reason: String,
    },
    /// An answer could not be represented as JSON (a bug).
    #[error("an object cannot be represented as JSON: {0}")]
    Json(#[source] serde_json::Error),
}

/// The message of an API server's refusal (not kube-rs's wrapping of it).
fn api_message(error: &kube::Error) -> String {
    match error {
        kube::Error::Api(status) if !status.message.is_empty() => status.message.clone(),
        other => other.to_string(),
    }
}

fn apply_message(error: &ApplyError) -> String {
    match error {
        ApplyError::Api(error) => api_message(error),
        other => other.to_string(),
    }
}

/// What rolling back a failed deploy did.
#[derive(Debug)]
pub enum Rollback {
    /// Not asked for.
    NotAsked,
    /// What this run created, deleted (in order).
    Done(Vec<ObjectKey>),
    /// Rolling back failed too.
    Failed(Box<DirectError>),
}

/// A failed deploy: why, what it had created, and the rollback.
#[derive(Debug, thiserror::Error)]
#[error("{error}")]
pub struct ApplyFailure {
    /// Why it failed.
    #[source]
    pub error: DirectError,
    /// The instance with the status of the last plan, when it got that far.
    pub instance: Option<Json>,
    /// What this run created.
    pub created: Vec<ObjectKey>,
    /// What became of it.
    pub rollback: Rollback,
}

/// A deploy that finished.
#[derive(Debug)]
pub struct Deployed {
    /// The instance (admitted: defaulted and pruned as the API server would) with the status
    /// the controller would write.
    pub instance: Json,
    /// The last plan.
    pub plan: Plan,
    /// Whether every resource is ready (the instance is `ACTIVE`).
    pub ready: bool,
    /// The parent ConfigMap.
    pub parent: ParentRef,
    /// What this run created.
    pub created: Vec<ObjectKey>,
    /// What this run pruned (in a dry run: would prune).
    pub pruned: Vec<ObjectKey>,
}

/// Runs instances' graphs against an API server with no controller (see the module doc).
pub struct DirectEngine {
    client: kube::Client,
    kinds: Kinds,
    applier: Applier,
    config: DirectConfig,
    params: PatchParams,
}

impl fmt::Debug for DirectEngine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DirectEngine")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// What one run has done so far (for the rollback and the failure report).
#[derive(Default)]
struct Run {
    created: Vec<Json>,
    parent_created: Option<(ParentRef, String)>,
    instance: Option<Json>,
    /// Every resource was ready (what fails after is pruning).
    ready: bool,
}

impl DirectEngine {
    /// An engine writing through `client`.
    pub fn new(client: kube::Client, config: DirectConfig) -> Self {
        let kinds = Kinds::new(client.clone());
        let applier = Applier::new(
            client.clone(),
            ApplyConfig::default()
                .concurrency(config.concurrency)
                .field_manager(config.field_manager.clone())
                .dry_run(config.dry_run),
        )
        .with_kinds(kinds.clone());
        let mut params = PatchParams::apply(&config.field_manager).force();
        params.dry_run = config.dry_run;
        DirectEngine {
            client,
            kinds,
            applier,
            config,
            params,
        }
    }

    /// How it deploys.
    pub fn config(&self) -> &DirectConfig {
        &self.config
    }

    /// Deploys `instance` (an object of `graph`'s kind; admitted here as the API server
    /// would) level by level, waits until every resource is ready (unless
    /// [`wait`](DirectConfig::wait) is off), prunes what left the plan, and returns the
    /// instance with its status. On failure, with
    /// [`rollback_on_failure`](DirectConfig::rollback_on_failure), what this run created is
    /// deleted again.
    ///
    /// # Errors
    /// [`ApplyFailure`]: the first problem (naming the resource and its level), with what
    /// was created and the rollback.
    pub async fn apply(
        &self,
        graph: &CompiledGraph,
        instance: &Json,
        report: Reporter<'_>,
        stop: &Stop,
    ) -> Result<Deployed, ApplyFailure> {
        let mut run = Run::default();
        // The wait loop reports a timeout with what was waiting; this bounds the requests
        // (a server that stops answering) a moment later, so the timeout always holds.
        let outcome = match self.config.timeout {
            Some(timeout) => tokio::time::timeout(
                timeout + REQUEST_GRACE,
                self.deploy(graph, instance, report, stop, &mut run),
            )
            .await
            .unwrap_or_else(|_| {
                Err(DirectError::TimedOut {
                    waiting: vec!["an answer from the API server".to_owned()],
                })
            }),
            None => self.deploy(graph, instance, report, stop, &mut run).await,
        };
        let error = match outcome {
            Ok(deployed) => return Ok(deployed),
            Err(error) => error,
        };
        let created: Vec<ObjectKey> = run.created.iter().filter_map(ObjectKey::of).collect();
        // A deploy that got everything ready and then failed to prune is not undone.
        let rollback = if self.config.rollback_on_failure && !run.ready {
            match self.roll_back(graph, &run, report).await {
                Ok(deleted) => Rollback::Done(deleted),
                Err(error) => Rollback::Failed(Box::new(error)),
            }
        } else {
            Rollback::NotAsked
        };
        Err(ApplyFailure {
            error,
            instance: run.instance,
            created,
            rollback,
        })
    }

    async fn deploy(
        &self,
        graph: &CompiledGraph,
        instance: &Json,
        report: Reporter<'_>,
        stop: &Stop,
        run: &mut Run,
    ) -> Result<Deployed, DirectError> {
        let deadline = self.config.timeout.map(|timeout| Instant::now() + timeout);
        let mut instance = admit(graph, instance)?.instance;
        if graph.names.scope == kro_graph::Scope::Namespaced
            && text(&instance, "/metadata/namespace").is_empty()
        {
            instance["metadata"]["namespace"] = json!("default");
        }
        let parent = ParentRef::of_instance(graph, &instance, &self.config.parent_namespace)?;
        let id = parent.id();
        let mut options = PlanOptions {
            scheduling: self.config.scheduling,
            kro_version: self.config.kro_version.clone(),
            now: Some(now()),
            applyset: Some(id.clone()),
            kind_readiness: self.config.kind_readiness,
            assume_ready: self.config.dry_run,
            ..PlanOptions::default()
        };
        let versions = graph_versions(graph);
        let mut observed = Observed::new();
        let mut reads = BTreeSet::new();
        // The parent is read and written while the first level's objects are read: those
        // reads need only the objects' names, not the instance's UID.
        let first = plan(graph, &instance, &observed, &options);
        let (written, filled) = tokio::join!(
            self.set_up_parent(graph, &instance, &parent),
            self.fill(&first, &versions, &mut observed, &mut reads)
        );
        let (existing, mut inventory, written) = written?;
        filled?;
        let uid = text(&written, "/metadata/uid").to_owned();
        let parent_is_new = existing.is_none();
        if parent_is_new && !self.config.dry_run {
            run.parent_created = Some((parent.clone(), uid.clone()));
        }
        report(&Progress::Parent {
            parent: parent.clone(),
            created: parent_is_new,
        });
        instance["metadata"]["uid"] = json!(uid);
        instance["metadata"]["generation"] = json!(1);
        run.instance = Some(instance.clone());
        options.now = Some(now());
        let mut watches = Watches::new(self.client.clone());
        let mut stop = stop.clone();
        let mut driver = drive::DirectDriver {
            engine: self,
            graph,
            instance: &instance,
            schema: kro_runtime::schema_value(graph, &instance),
            options,
            versions: &versions,
            reads,
            reported: HashMap::new(),
            report,
            stop: stop.clone(),
            deadline,
            run,
            unchecked: HashSet::new(),
            parent: &parent,
            inventory: &mut inventory,
            uid: uid.clone(),
            applyset: id.clone(),
            refused: None,
        };
        // Each round applies something; an object that needs applying again and again (a
        // writer fighting over it) must not keep the deploy busy forever.
        let mut rounds = Rounds::for_graph(graph);
        let current = loop {
            let converged =
                converge(&mut driver, &self.applier, &mut observed, &mut rounds).await?;
            if !converged.unsettled.is_empty() {
                return Err(DirectError::Unsettled(
                    converged
                        .unsettled
                        .iter()
                        .map(ToString::to_string)
                        .collect(),
                ));
            }
            let current = converged.plan;
            if current.status.state == InstanceState::Active
                || !self.config.wait
                || self.config.dry_run
            {
                break current;
            }
            let mut unserved = false;
            for (target, key) in watch_targets(&current, &driver.reads, &versions, &observed, &id) {
                match self
                    .kinds
                    .resolve(&key.group, version_of(&target.api_version), &key.kind)
                    .await
                {
                    Ok(kind) => watches.follow(target, &kind),
                    // Not served yet (a CRD still being set up): nothing can watch it, so
                    // discovery is asked again in a moment.
                    Err(error) => {
                        tracing::debug!(%error, "not watched yet");
                        unserved = true;
                    }
                }
            }
            let seen = tokio::select! {
                seen = watches.next() => seen,
                () = tokio::time::sleep(UNSERVED_RETRY), if unserved => None,
                () = sleep_until(deadline) => {
                    return Err(DirectError::TimedOut { waiting: unsettled(&current) });
                }
                () = stop.stopped() => {
                    return Err(DirectError::Stopped { waiting: unsettled(&current) });
                }
            };
            for seen in seen.into_iter().chain(watches.drain()) {
                self.learn(&uid, &mut observed, seen);
            }
        };
        drop(driver);
        drop(watches);
        run.ready = current.status.state == InstanceState::Active;
        let pruned = self
            .prune(
                parent_is_new,
                graph,
                &instance,
                &parent,
                &current,
                &uid,
                &mut inventory,
                report,
                &stop,
                deadline,
            )
            .await?;
        instance["status"] = current.status.to_json();
        Ok(Deployed {
            ready: current.status.state == InstanceState::Active,
            instance,
            plan: current,
            parent,
            created: run.created.iter().filter_map(ObjectKey::of).collect(),
            pruned,
        })
    }

    /// Reads the parent ConfigMap (if it exists: its inventory) and writes it with that
    /// inventory widened to the kinds `graph` creates: what existed, the inventory, and the
    /// server's answer.
    async fn set_up_parent(
        &self,
        graph: &CompiledGraph,
        instance: &Json,
        parent: &ParentRef,
    ) -> Result<(Option<Json>, Inventory, Json), DirectError> {
        let existing = parent.read(&self.client).await?;
        let mut inventory = existing
            .as_ref()
            .map(|existing| parent.inventory(existing))
            .transpose()?
            .unwrap_or_default();
        inventory.group_kinds.extend(template_kinds(graph));
        let written = self
            .write_parent(graph, instance, parent, &inventory)
            .await?;
        Ok((existing, inventory, written))
    }

    /// Learns from discovery whether the kinds `graph` uses are namespaced, for those whose
    /// scope neither the graph's schemas nor the built-in catalog say (a kind not served yet
    /// is asked about again next time).
    async fn learn_scopes(
        &self,
        graph: &CompiledGraph,
        scopes: &mut std::collections::BTreeMap<kro_schema::GroupKind, bool>,
    ) {
        for node in &graph.nodes {
            let (gvk, known) = match &node.kind {
                NodeKind::Template {
                    gvk, namespaced, ..
                } => (gvk, *namespaced),
                NodeKind::ExternalRef { gvk, .. } => (gvk, None),
                _ => continue,
            };
            let group_kind = gvk.group_kind();
            if known.is_some()
                || scopes.contains_key(&group_kind)
                || kro_schema::Catalog::kubernetes_namespaced(gvk).is_some()
            {
                continue;
            }
            if let Ok(kind) = self
                .kinds
                .resolve(gvk.group(), gvk.version(), gvk.kind())
                .await
            {
                scopes.insert(group_kind, kind.namespaced);
            }
        }
    }

    /// Writes the parent ConfigMap with `inventory`.
    async fn write_parent(
        &self,
        graph: &CompiledGraph,
        instance: &Json,
        parent: &ParentRef,
        inventory: &Inventory,
    ) -> Result<Json, DirectError> {
        parent
            .write(
                &self.client,
                graph,
                instance,
                inventory,
                &self.config.kro_version,
                &self.params,
            )
            .await
    }

    /// Widens the inventory to the namespaces of `batch` before it is applied, so that a
    /// later run (or `kro delete`) finds them even if this one stops right after.
    async fn grow_inventory(
        &self,
        graph: &CompiledGraph,
        instance: &Json,
        parent: &ParentRef,
        inventory: &mut Inventory,
        batch: &[DesiredObject],
    ) -> Result<(), DirectError> {
        let before = inventory.clone();
        for desired in batch {
            inventory.group_kinds.insert(desired.key.group_kind());
            if let Some(namespace) = &desired.key.namespace
                && *namespace != parent.namespace
            {
                inventory.namespaces.insert(namespace.clone());
            }
        }
        if *inventory != before {
            self.write_parent(graph, instance, parent, inventory)
                .await?;
        }
        Ok(())
    }

    /// Reads what the plan needs and has not seen: its objects (at once, bounded) and the
    /// objects and lists its externalRefs read. `true` when anything was learned.
    async fn fill(
        &self,
        current: &Plan,
        versions: &HashMap<kro_schema::GroupKind, String>,
        observed: &mut Observed,
        reads: &mut BTreeSet<Read>,
    ) -> Result<bool, DirectError> {
        let mut wanted: Vec<(ObjectKey, String)> = current
            .nodes
            .iter()
            .flat_map(|node| &node.desired)
            .filter(|desired| !observed.is_known(&desired.key))
            .map(|desired| {
                let api_version = text(&desired.object, "/apiVersion");
                (desired.key.clone(), version_of(api_version).to_owned())
            })
            .collect();
        let mut lists = Vec::new();
        for read in &current.reads {
            reads.insert(read.clone());
            match read {
                Read::Object(key) if !observed.is_known(key) => {
                    if let Some(version) = versions.get(&key.group_kind()) {
                        wanted.push((key.clone(), version.clone()));
                    } else {
                        observed.insert_absent(key.clone());
                    }
                }
                Read::List(list) if !observed.is_listed(list) => lists.push(list.clone()),
                _ => {}
            }
        }
        if wanted.is_empty() && lists.is_empty() {
            return Ok(false);
        }
        // Each kind is looked up once (at once), not once per object of it.
        let mut kinds: Vec<(&str, &str, &str)> = wanted
            .iter()
            .map(|(key, version)| (key.group.as_str(), version.as_str(), key.kind.as_str()))
            .collect();
        kinds.sort_unstable();
        kinds.dedup();
        futures_util::future::join_all(
            kinds
                .into_iter()
                .map(|(group, version, kind)| self.kinds.resolve(group, version, kind)),
        )
        .await;
        let gets: Vec<_> = wanted
            .iter()
            .map(|(key, version)| async move { (key, self.get(key, version).await) })
            .collect();
        let answers: Vec<_> = stream::iter(gets)
            .buffer_unordered(self.config.concurrency.max(1))
            .collect()
            .await;
        for (key, answer) in answers {
            match answer? {
                Some(object) => {
                    observed.insert(filed_as(key, object));
                }
                None => observed.insert_absent(key.clone()),
            }
        }
        for list in lists {
            if let Some(version) = versions.get(&list.group_kind()) {
                for object in self.list(&list, version).await? {
                    observed.insert(object);
                }
            }
            observed.insert_listed(list);
        }
        Ok(true)
    }

    /// One object, `None` when it (or its kind) does not exist.
    async fn get(&self, key: &ObjectKey, version: &str) -> Result<Option<Json>, DirectError> {
        let Ok(kind) = self.kinds.resolve(&key.group, version, &key.kind).await else {
            return Ok(None);
        };
        let found = kind
            .api(&self.client, key.namespace.as_deref())
            .get_opt(&key.name)
            .await
            .map_err(|source| DirectError::Read {
                key: Box::new(key.clone()),
                source: Box::new(source),
            })?;
        found
            .map(|mut object| {
                object.types.get_or_insert_with(|| kube::api::TypeMeta {
                    api_version: kind.resource.api_version.clone(),
                    kind: kind.resource.kind.clone(),
                });
                serde_json::to_value(object).map_err(DirectError::Json)
            })
            .transpose()
    }

    /// Every object of a list an externalRef selects from (none when the kind is not served).
    async fn list(
        &self,
        list: &kro_runtime::ListKey,
        version: &str,
    ) -> Result<Vec<Json>, DirectError> {
        let Ok(kind) = self.kinds.resolve(&list.group, version, &list.kind).await else {
            return Ok(Vec::new());
        };
        let answer = kind
            .api(&self.client, list.namespace.as_deref())
            .list(&kube::api::ListParams::default())
            .await
            .map_err(|source| DirectError::ListMembers {
                kind: list.group_kind().to_string(),
                source: Box::new(source),
            })?;
        answer
            .items
            .into_iter()
            .map(|mut object| {
                object.types.get_or_insert_with(|| kube::api::TypeMeta {
                    api_version: kind.resource.api_version.clone(),
                    kind: kind.resource.kind.clone(),
                });
                serde_json::to_value(object).map_err(DirectError::Json)
            })
            .collect()
    }

    /// Records what a watch saw; an answer older than what is held is ignored, and an object
    /// cached at an earlier generation than this engine last applied is read as such.
    fn learn(&self, uid: &str, observed: &mut Observed, seen: Seen) {
        match seen {
            Seen::Object(mut object) => {
                let Some(key) = ObjectKey::of(&object) else {
                    return;
                };
                if let Some(held) = observed.get(&key)
                    && is_older(&object, held)
                {
                    return;
                }
                self.applier.catch_up(uid, &key, &mut object);
                observed.insert(object);
            }
            Seen::Gone(key, uid) => {
                // A deletion of an earlier object of the same name says nothing of this one.
                let held = observed
                    .get(&key)
                    .map(|held| text(held, "/metadata/uid").to_owned());
                if held.is_none_or(|held| uid.is_empty() || held == uid) {
                    observed.insert_absent(key);
                }
            }
            Seen::Listed {
                target,
                group,
                present,
            } => {
                let gone: Vec<ObjectKey> = observed
                    .objects()
                    .filter(|(key, object)| {
                        !present.contains(*key) && target.selects(&group, key, object)
                    })
                    .map(|(key, _)| key.clone())
                    .collect();
                for key in gone {
                    observed.insert_absent(key);
                }
            }
        }
    }

    /// Deletes the members that left the plan (highest apply order first) and trims the
    /// inventory to what remains.
    #[allow(clippy::too_many_arguments)]
    async fn prune(
        &self,
        parent_is_new: bool,
        graph: &CompiledGraph,
        instance: &Json,
        parent: &ParentRef,
        current: &Plan,
        uid: &str,
        inventory: &mut Inventory,
        report: Reporter<'_>,
        stop: &Stop,
        deadline: Option<Instant>,
    ) -> Result<Vec<ObjectKey>, DirectError> {
        // Nothing but what this run applied can carry a parent made by this run.
        let members = if parent_is_new {
            Vec::new()
        } else {
            self.members(
                &parent.id(),
                inventory,
                &namespaces(parent, inventory),
                &graph_versions(graph),
            )
            .await?
        };
        let desired = desired_keys(current);
        let (prune, keep): (Vec<Json>, Vec<Json>) = members
            .into_iter()
            .partition(|member| prunable(current, &desired, member, uid));
        if self.config.dry_run {
            let would: Vec<ObjectKey> = prune.iter().filter_map(ObjectKey::of).collect();
            for key in &would {
                report(&Progress::WouldPrune { key: key.clone() });
            }
            return Ok(would);
        }
        let pruned = self
            .delete_in_waves(&prune, Some(graph), &|_| {}, stop, deadline)
            .await?;
        for key in &pruned {
            report(&Progress::Pruned { key: key.clone() });
        }
        let mut trimmed = Inventory::default();
        for key in desired
            .into_iter()
            .cloned()
            .chain(keep.iter().filter_map(ObjectKey::of))
        {
            trimmed.group_kinds.insert(key.group_kind());
            if let Some(namespace) = key.namespace
                && namespace != parent.namespace
            {
                trimmed.namespaces.insert(namespace);
            }
        }
        if trimmed != *inventory {
            self.write_parent(graph, instance, parent, &trimmed).await?;
            *inventory = trimmed;
        }
        Ok(pruned)
    }

    /// Deletes what `run` created, in reverse levels, and the parent if it created it.
    async fn roll_back(
        &self,
        graph: &CompiledGraph,
        run: &Run,
        report: Reporter<'_>,
    ) -> Result<Vec<ObjectKey>, DirectError> {
        let deadline = self.config.timeout.map(|timeout| Instant::now() + timeout);
        let deleted = self
            .delete_in_waves(&run.created, Some(graph), report, &Stop::never(), deadline)
            .await?;
        if let Some((parent, uid)) = &run.parent_created {
            parent.delete(&self.client, uid).await?;
        }
        Ok(deleted)
    }

    /// Deletes what was deployed for the instance whose parent is `parent`: its members in
    /// reverse apply order (each wave at once, confirmed gone before the next), then the
    /// parent. `graph` (when known) orders members whose annotations do not say their order.
    /// The objects deleted, in order.
    ///
    /// # Errors
    /// [`DirectError::NotDeployed`] when there is no such parent; the first object that
    /// could not be deleted; [`DirectError::Stopped`] or [`DirectError::TimedOut`] with what
    /// was left.
    pub async fn delete(
        &self,
        parent: &ParentRef,
        graph: Option<&CompiledGraph>,
        report: Reporter<'_>,
        stop: &Stop,
    ) -> Result<Vec<ObjectKey>, DirectError> {
        let deadline = self.config.timeout.map(|timeout| Instant::now() + timeout);
        let removal = self.remove_all(parent, graph, report, stop, deadline);
        match self.config.timeout {
            Some(timeout) => tokio::time::timeout(timeout + REQUEST_GRACE, removal)
                .await
                .unwrap_or_else(|_| {
                    Err(DirectError::TimedOut {
                        waiting: vec!["an answer from the API server".to_owned()],
                    })
                }),
            None => removal.await,
        }
    }

    async fn remove_all(
        &self,
        parent: &ParentRef,
        graph: Option<&CompiledGraph>,
        report: Reporter<'_>,
        stop: &Stop,
        deadline: Option<Instant>,
    ) -> Result<Vec<ObjectKey>, DirectError> {
        let Some(existing) = parent.read(&self.client).await? else {
            return Err(DirectError::NotDeployed(parent.clone()));
        };
        let mut inventory = parent.inventory(&existing)?;
        if let Some(graph) = graph {
            inventory.group_kinds.extend(template_kinds(graph));
        }
        let versions = graph.map(graph_versions).unwrap_or_default();
        let members = self
            .members(
                &parent.id(),
                &inventory,
                &namespaces(parent, &inventory),
                &versions,
            )
            .await?;
        let deleted = self
            .delete_in_waves(&members, graph, report, stop, deadline)
            .await?;
        parent
            .delete(&self.client, text(&existing, "/metadata/uid"))
            .await?;
        Ok(deleted)
    }

    /// The parents of instances named `name`: of namespaced instances in `namespace`, and of
    /// cluster-scoped ones where their parents go
    /// ([`parent_namespace`](DirectConfig::parent_namespace)).
    ///
    /// # Errors
    /// When ConfigMaps cannot be listed.
    pub async fn find(&self, namespace: &str, name: &str) -> Result<Vec<ParentRef>, DirectError> {
        let mut found = ParentRef::find(&self.client, namespace, name, false).await?;
        if namespace != self.config.parent_namespace {
            found.extend(
                ParentRef::find(&self.client, &self.config.parent_namespace, name, true).await?,
            );
        }
        Ok(found)
    }
}

/// The group-kinds `graph`'s templates create.
fn template_kinds(graph: &CompiledGraph) -> impl Iterator<Item = kro_schema::GroupKind> + '_ {
    graph.nodes.iter().filter_map(|node| match &node.kind {
        NodeKind::Template { gvk, .. } => Some(gvk.group_kind()),
        _ => None,
    })
}

/// The version `graph` uses of each kind it names (templates and externalRefs).
fn graph_versions(graph: &CompiledGraph) -> HashMap<kro_schema::GroupKind, String> {
    graph
        .nodes
        .iter()
        .filter_map(|node| match &node.kind {
            NodeKind::Template { gvk, .. } | NodeKind::ExternalRef { gvk, .. } => {
                Some((gvk.group_kind(), gvk.version().to_owned()))
            }
            _ => None,
        })
        .collect()
}

/// `object` as the plan asked for it by `key`: a cluster-scoped object the plan took for
/// namespaced (its kind's scope unknown) comes back without the namespace, and is filed under
/// the key asked for, so that it is not read or applied again and again.
fn filed_as(key: &ObjectKey, mut object: Json) -> Json {
    if let Some(namespace) = &key.namespace
        && text(&object, "/metadata/namespace").is_empty()
        && let Some(metadata) = object.get_mut("metadata").and_then(Json::as_object_mut)
    {
        metadata.insert("namespace".to_owned(), json!(namespace));
    }
    object
}

/// Whether a dry run refused an object only because an earlier object of the same run was
/// not stored: its kind (a CRD of the graph) or its namespace (a Namespace of the graph).
fn unstored_by_dry_run(error: &ApplyError) -> bool {
    match error {
        ApplyError::Kind(_) => true,
        ApplyError::Api(kube::Error::Api(status)) => {
            status.code == 404
                && status
                    .details
                    .as_ref()
                    .is_some_and(|details| details.kind == "namespaces")
        }
        _ => false,
    }
}

/// Why a dry run could not check an object.
fn unchecked_reason(error: &ApplyError) -> String {
    match error {
        ApplyError::Kind(error) => format!(
            "{} {} is not served (a dry run stores no CRD)",
            error.api_version, error.kind
        ),
        ApplyError::Api(error) => format!("{} (a dry run stores no Namespace)", api_message(error)),
        other => other.to_string(),
    }
}

/// The version of an apiVersion (`apps/v1` → `v1`).
fn version_of(api_version: &str) -> &str {
    api_version.rsplit('/').next().unwrap_or(api_version)
}

/// The namespaces an instance's members may be in.
fn namespaces(parent: &ParentRef, inventory: &Inventory) -> BTreeSet<String> {
    let mut namespaces = inventory.namespaces.clone();
    namespaces.insert(parent.namespace.clone());
    namespaces
}

/// Whether `seen` is an older state of `held` (both with numeric resource versions, as
/// etcd and kro's server give): a watch may report a state older than an apply's answer.
fn is_older(seen: &Json, held: &Json) -> bool {
    let version = |object: &Json| {
        object
            .pointer("/metadata/resourceVersion")
            .and_then(Json::as_str)
            .and_then(|version| version.parse::<u64>().ok())
    };
    let same_object = text(seen, "/metadata/uid") == text(held, "/metadata/uid");
    same_object && matches!((version(seen), version(held)), (Some(seen), Some(held)) if seen < held)
}

/// The first failed node, as an error naming it and its level.
fn first_failure(current: &Plan) -> Option<DirectError> {
    current.nodes.iter().find_map(|node| match &node.state {
        NodeState::Failed(error) => Some(DirectError::Node {
            node: node.id.to_string(),
            level: node.level,
            error: error.clone(),
        }),
        _ => None,
    })
}

/// Every node not ready or skipped: `id (level N): reason`.
fn unsettled(current: &Plan) -> Vec<String> {
    current
        .nodes
        .iter()
        .filter(|node| !node.state.is_settled())
        .map(|node| match &node.state {
            NodeState::Waiting(wait) => format!("{} (level {}): {wait}", node.id, node.level),
            NodeState::Failed(error) => format!("{} (level {}): {error}", node.id, node.level),
            _ => format!("{} (level {})", node.id, node.level),
        })
        .collect()
}

/// Reports the nodes whose state changed since last reported.
fn report_changes(current: &Plan, reported: &mut HashMap<String, String>, report: Reporter<'_>) {
    for node in &current.nodes {
        let (progress, fingerprint) = match &node.state {
            NodeState::Ready => (
                Progress::Ready {
                    level: node.level,
                    node: node.id.to_string(),
                },
                "ready".to_owned(),
            ),
            NodeState::Waiting(wait) => {
                let reason = wait.to_string();
                (
                    Progress::Waiting {
                        level: node.level,
                        node: node.id.to_string(),
                        reason: reason.clone(),
                    },
                    reason,
                )
            }
            NodeState::Skipped(skip) => {
                let reason = skip.to_string();
                (
                    Progress::Skipped {
                        level: node.level,
                        node: node.id.to_string(),
                        reason: reason.clone(),
                    },
                    format!("skipped {reason}"),
                )
            }
            NodeState::Failed(_) => continue,
        };
        if reported.get(node.id.as_str()) != Some(&fingerprint) {
            reported.insert(node.id.to_string(), fingerprint);
            report(&progress);
        }
    }
}

/// What to watch while the plan waits, each with an object key naming its kind: the kinds
/// and namespaces of the instance's objects (by ApplySet label), and every externalRef read.
fn watch_targets(
    current: &Plan,
    reads: &BTreeSet<Read>,
    versions: &HashMap<kro_schema::GroupKind, String>,
    observed: &Observed,
    id: &str,
) -> Vec<(Target, ObjectKey)> {
    let mut targets = Vec::new();
    let mut seen = HashSet::new();
    for desired in current.nodes.iter().flat_map(|node| &node.desired) {
        if observed.get(&desired.key).is_none() {
            continue;
        }
        let target = Target {
            api_version: text(&desired.object, "/apiVersion").to_owned(),
            kind: desired.key.kind.clone(),
            namespace: desired.key.namespace.clone(),
            selection: Selection::Members(id.to_owned()),
        };
        if seen.insert(target.clone()) {
            targets.push((target, desired.key.clone()));
        }
    }
    for read in reads {
        let (key, selection, namespace) = match read {
            Read::Object(key) => (
                key.clone(),
                Selection::Named(key.name.clone()),
                key.namespace.clone(),
            ),
            Read::List(list) => (
                ObjectKey {
                    group: list.group.clone(),
                    kind: list.kind.clone(),
                    namespace: list.namespace.clone(),
                    name: String::new(),
                },
                Selection::All,
                list.namespace.clone(),
            ),
        };
        let Some(version) = versions.get(&key.group_kind()) else {
            continue;
        };
        let api_version = if key.group.is_empty() {
            version.clone()
        } else {
            format!("{}/{version}", key.group)
        };
        let target = Target {
            api_version,
            kind: key.kind.clone(),
            namespace,
            selection,
        };
        if seen.insert(target.clone()) {
            targets.push((target, key));
        }
    }
    targets
}

/// Sleeps until `deadline`, or forever without one.
async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use kro_graph::{BuiltinCatalog, ResourceGraphDefinition, build_graph};

    use super::*;

    /// An RGD of kind `App`: a ConfigMap, and a Deployment on the next level; an
    /// externalRef by name and one by selector.
    fn graph() -> CompiledGraph {
        let rgd = json!({
            "apiVersion": "kro.run/v1alpha1", "kind": "ResourceGraphDefinition",
            "metadata": {"name": "apps"},
            "spec": {"schema": {"apiVersion": "v1alpha1", "kind": "App", "spec": {}},
                "resources": [
                    {"id": "config", "template": {"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": "${schema.metadata.name}"}}},
                    {"id": "web", "template": {"apiVersion": "apps/v1", "kind": "Deployment",
                        "metadata": {"name": "${config.metadata.name}"},
                        "spec": {"selector": {"matchLabels": {"app": "web"}},
                            "template": {"metadata": {"labels": {"app": "web"}},
                                "spec": {"containers": [{"name": "web", "image": "nginx"}]}}}}},
                    {"id": "shared", "externalRef": {"apiVersion": "v1", "kind": "Secret",
                        "metadata": {"name": "shared"}}},
                ]}
        });
        let rgd = ResourceGraphDefinition::from_json(&rgd).expect("the RGD decodes");
        build_graph(&rgd, &BuiltinCatalog).expect("the graph builds")
    }

    fn instance(name: &str) -> Json {
        json!({"apiVersion": "kro.run/v1alpha1", "kind": "App",
               "metadata": {"name": name, "namespace": "team", "uid": "u1", "generation": 1},
               "spec": {}})
    }

    #[test]
    fn the_parent_is_named_after_the_kind_and_the_instance_in_its_namespace() {
        let parent =
            ParentRef::of_instance(&graph(), &instance("shop"), "default").expect("a parent");
        assert_eq!(parent.name, "kro-direct.app.kro.run.shop");
        assert_eq!(parent.namespace, "team");
        assert_eq!(
            parent.id(),
            kro_runtime::applyset_id("kro-direct.app.kro.run.shop", "team", "ConfigMap", ""),
            "the ApplySet id is the ConfigMap's own, as KEP-3659 derives it"
        );
        let long = "a".repeat(240);
        assert!(matches!(
            ParentRef::of_instance(&graph(), &instance(&long), "default"),
            Err(DirectError::ParentName(_))
        ));
    }

    #[test]
    fn an_older_state_of_the_same_object_is_recognised() {
        let object = |uid: &str, version: &str| json!({"metadata": {"uid": uid, "resourceVersion": version}});
        assert!(is_older(&object("u", "9"), &object("u", "10")));
        assert!(!is_older(&object("u", "10"), &object("u", "10")));
        assert!(!is_older(&object("u", "11"), &object("u", "10")));
        assert!(
            !is_older(&object("v", "9"), &object("u", "10")),
            "a recreated object is newer whatever its version"
        );
        assert!(
            !is_older(&object("u", "abc"), &object("u", "10")),
            "versions that are not numbers are not compared"
        );
    }

    #[test]
    fn the_watches_follow_the_applied_objects_and_the_external_reads() {
        let graph = graph();
        let id = "applyset-x-v1";
        let options = PlanOptions {
            applyset: Some(id.to_owned()),
            ..PlanOptions::default()
        };
        let mut observed = Observed::new();
        let first = plan(&graph, &instance("shop"), &observed, &options);
        let reads: BTreeSet<Read> = first.reads.iter().cloned().collect();
        let versions = graph_versions(&graph);
        // Nothing applied yet: only the externalRef is watched, by name.
        let targets = watch_targets(&first, &reads, &versions, &observed, id);
        assert_eq!(targets.len(), 1, "{targets:?}");
        assert_eq!(
            targets[0].0.selection,
            Selection::Named("shared".to_owned())
        );
        assert_eq!(targets[0].0.api_version, "v1");
        // The ConfigMap applied: its kind and namespace are watched by ApplySet label.
        let config = first.nodes[0].desired[0].object.clone();
        observed.insert(config);
        let second = plan(&graph, &instance("shop"), &observed, &options);
        let targets = watch_targets(&second, &reads, &versions, &observed, id);
        let members = targets
            .iter()
            .find(|(target, _)| target.kind == "ConfigMap")
            .expect("the ConfigMaps are watched");
        assert_eq!(members.0.selection, Selection::Members(id.to_owned()));
        assert_eq!(members.0.namespace.as_deref(), Some("team"));
    }

    #[test]
    fn progress_reads_as_a_line_per_event() {
        let key = ObjectKey {
            group: "apps".to_owned(),
            kind: "Deployment".to_owned(),
            namespace: Some("team".to_owned()),
            name: "web".to_owned(),
        };
        assert_eq!(
            Progress::Applied {
                level: 1,
                key: key.clone(),
                created: true
            }
            .to_string(),
            "level 1: Deployment.apps/team/web created"
        );
        assert_eq!(
            Progress::Deleted { key, order: 2 }.to_string(),
            "deleted Deployment.apps/team/web (apply order 2)"
        );
    }
}
