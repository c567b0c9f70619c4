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

use kro_graph::lifecycle::detaches_on_deletion;
use kro_graph::metadata::DIRECT_MANAGER;
use kro_graph::{CompiledGraph, NodeKind};
use kro_runtime::{
    InstanceState, Inventory, ObjectKey, Observed, Plan, PlanOptions, Removal, Scheduling, admit,
    plan,
};
use kube::api::PatchParams;
use serde_json::{Value as Json, json};
use tokio::time::Instant;

use crate::apply::{Applier, ApplyConfig};
use crate::cleanup::{Pruning, pruning};
use crate::converge::{Rounds, converge};
use crate::json::{now, text};
use crate::kinds::Kinds;

mod drive;
mod error;
mod observe;
mod parent;
mod remove;
mod through_kro;
mod watch;

pub use crate::progress::{Progress, Reporter};
pub use crate::stop::{Stop, StopHandle};
use error::within;
pub use error::{ApplyFailure, DirectError, REQUEST_GRACE, Rollback};
pub use parent::{ParentError, ParentRef};

use crate::progress::unsettled;
use crate::stop::sleep_until;
use drive::{DirectDriver, Run};
use observe::{Reader, graph_versions};
use watch::Watches;

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
    /// On deletion, release every object instead of deleting it, as for an instance
    /// annotated `kro.run/detach-on-deletion: "true"` (`kro delete --detach`).
    pub detach: bool,
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
            detach: false,
        }
    }
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

    /// What reads for its deploys.
    fn reader(&self) -> Reader<'_> {
        Reader {
            client: &self.client,
            kinds: &self.kinds,
            applier: &self.applier,
            concurrency: self.config.concurrency,
        }
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
        let deploying = self.deploy(graph, instance, report, stop, &mut run);
        let outcome = within(self.config.timeout, deploying).await;
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
            // One instant for the whole run, as the controller has one per reconcile.
            clock: graph.reads_time.then(crate::json::now_timestamp),
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
        let reader = self.reader();
        let (written, filled) = tokio::join!(
            self.set_up_parent(graph, &instance, &parent),
            reader.fill(&first, &versions, &mut observed, &mut reads)
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
        let mut driver = DirectDriver {
            reader: self.reader(),
            kro_version: &self.config.kro_version,
            dry_run: self.config.dry_run,
            params: &self.params,
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
        // An object applied round after round (a writer fighting over it) ends the deploy.
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
            let unserved = self
                .reader()
                .follow_waits(
                    &mut watches,
                    &current,
                    &driver.reads,
                    &versions,
                    &observed,
                    &id,
                )
                .await;
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
                self.reader().learn(&uid, &mut observed, seen);
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
            .map_err(DirectError::from)
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
        let Pruning {
            prune,
            inventory: trimmed,
        } = pruning(graph, current, members, uid, &parent.namespace);
        if self.config.dry_run {
            let would: Vec<ObjectKey> = prune.iter().filter_map(ObjectKey::of).collect();
            for key in &would {
                report(&Progress::WouldPrune { key: key.clone() });
            }
            return Ok(would);
        }
        let removed = self
            .delete_in_waves(
                &prune,
                Some(graph),
                Some(Removal::Prune),
                &|_| {},
                stop,
                deadline,
            )
            .await?;
        for key in &removed.deleted {
            report(&Progress::Pruned { key: key.clone() });
        }
        for key in &removed.released {
            report(&Progress::Released { key: key.clone() });
        }
        let pruned = removed.deleted;
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
        // What this failed run created goes whatever its lifecycle: it was never kept.
        let deleted = self
            .delete_in_waves(
                &run.created,
                Some(graph),
                None,
                report,
                &Stop::never(),
                deadline,
            )
            .await?
            .deleted;
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
        within(self.config.timeout, removal).await
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
        let removal = Removal::InstanceDeletion {
            detach: self.config.detach || detaches_on_deletion(&existing),
        };
        let deleted = self
            .delete_in_waves(&members, graph, Some(removal), report, stop, deadline)
            .await?
            .deleted;
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

/// The namespaces an instance's members may be in.
fn namespaces(parent: &ParentRef, inventory: &Inventory) -> BTreeSet<String> {
    let mut namespaces = inventory.namespaces.clone();
    namespaces.insert(parent.namespace.clone());
    namespaces
}

#[cfg(test)]
mod tests {
    use kro_graph::{BuiltinCatalog, ResourceGraphDefinition, build_graph};
    use kro_runtime::Read;

    use super::observe::{is_older, watch_targets};
    use super::watch::Selection;

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
            Err(ParentError::Name(_))
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
}
