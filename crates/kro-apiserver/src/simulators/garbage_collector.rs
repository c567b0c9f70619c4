//! The garbage collector of kube-controller-manager: a graph of every object's owner
//! references, kept by one watch per deletable resource (rediscovered when
//! CustomResourceDefinitions change), and the collector's three behaviours:
//!
//! - **background**: a dependent whose owners (matched by UID, in its namespace or
//!   cluster-scoped) are all gone is deleted; one with some owners left loses the references
//!   to the gone ones;
//! - **foreground**: an owner being deleted with the `foregroundDeletion` finalizer has its
//!   dependents deleted and keeps the finalizer until no dependent that sets
//!   `blockOwnerDeletion` remains;
//! - **orphan**: an owner being deleted with the `orphan` finalizer has its reference removed
//!   from every dependent, then the finalizer.
//!
//! An owner missing from the graph is confirmed missing with a live read before anything is
//! deleted, so a late watch event never costs a dependent.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures_util::StreamExt;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, DeleteParams, DynamicObject, Preconditions, PropagationPolicy};
use kube::discovery::{ApiResource, Discovery, Scope, verbs};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, ResourceExt};
use tokio::sync::{mpsc, watch};

use super::support::{Context, ReconcileError};

/// The finalizer that holds an owner until its blocking dependents are gone.
const FOREGROUND: &str = "foregroundDeletion";
/// The finalizer that holds an owner until its dependents no longer reference it.
const ORPHAN: &str = "orphan";
/// How soon a failed item is tried again.
const RETRY: Duration = Duration::from_millis(300);

/// What the collector knows of one object.
#[derive(Debug, Clone)]
struct Node {
    resource: ApiResource,
    namespace: Option<String>,
    name: String,
    owners: Vec<OwnerReference>,
    deleting: bool,
    finalizers: Vec<String>,
}

impl Node {
    fn api(&self, client: &Client) -> Api<DynamicObject> {
        match &self.namespace {
            Some(namespace) => Api::namespaced_with(client.clone(), namespace, &self.resource),
            None => Api::all_with(client.clone(), &self.resource),
        }
    }

    fn waiting_for_dependents(&self) -> bool {
        self.deleting
            && self
                .finalizers
                .iter()
                .any(|finalizer| finalizer == FOREGROUND)
    }
}

/// Resource types by group, version and kind, with their scope.
type Kinds = HashMap<(String, String, String), (ApiResource, bool)>;

/// The owner graph, and the work queue over it.
#[derive(Default)]
struct Graph {
    nodes: HashMap<String, Node>,
    dependents: HashMap<String, HashSet<String>>,
}

impl Graph {
    /// Records an object; returns the UIDs to look at.
    fn upsert(&mut self, uid: String, node: Node) -> Vec<String> {
        let mut work = Vec::new();
        if let Some(old) = self.nodes.remove(&uid) {
            for owner in &old.owners {
                if let Some(set) = self.dependents.get_mut(&owner.uid) {
                    set.remove(&uid);
                }
            }
        }
        for owner in &node.owners {
            self.dependents
                .entry(owner.uid.clone())
                .or_default()
                .insert(uid.clone());
            if self
                .nodes
                .get(&owner.uid)
                .is_some_and(Node::waiting_for_dependents)
            {
                work.push(owner.uid.clone());
            }
        }
        let collects = node.deleting
            && node
                .finalizers
                .iter()
                .any(|finalizer| finalizer == FOREGROUND || finalizer == ORPHAN);
        if !node.owners.is_empty() || collects {
            work.push(uid.clone());
        }
        self.nodes.insert(uid, node);
        work
    }

    /// Forgets an object; returns the UIDs to look at (its dependents and waiting owners).
    fn remove(&mut self, uid: &str) -> Vec<String> {
        let mut work: Vec<String> = self
            .dependents
            .get(uid)
            .map(|set| set.iter().cloned().collect())
            .unwrap_or_default();
        if let Some(node) = self.nodes.remove(uid) {
            for owner in &node.owners {
                if let Some(set) = self.dependents.get_mut(&owner.uid) {
                    set.remove(uid);
                    if set.is_empty() {
                        self.dependents.remove(&owner.uid);
                    }
                }
                if self
                    .nodes
                    .get(&owner.uid)
                    .is_some_and(Node::waiting_for_dependents)
                {
                    work.push(owner.uid.clone());
                }
            }
        }
        work
    }

    fn dependents_of(&self, uid: &str) -> Vec<(String, Node)> {
        self.dependents
            .get(uid)
            .into_iter()
            .flatten()
            .filter_map(|dependent| {
                self.nodes
                    .get(dependent)
                    .map(|node| (dependent.clone(), node.clone()))
            })
            .collect()
    }
}

/// The collector's shared state.
struct Collector {
    context: Arc<Context>,
    graph: Mutex<Graph>,
    kinds: Mutex<Kinds>,
    queue: mpsc::UnboundedSender<String>,
    queued: Mutex<HashSet<String>>,
}

impl Collector {
    fn graph(&self) -> std::sync::MutexGuard<'_, Graph> {
        self.graph.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn enqueue(&self, uids: Vec<String>) {
        let mut queued = self.queued.lock().unwrap_or_else(PoisonError::into_inner);
        for uid in uids {
            if queued.insert(uid.clone()) {
                let _ = self.queue.send(uid);
            }
        }
    }
}

/// Runs the garbage collector until `stop`.
pub(super) async fn run(context: Arc<Context>, mut stop: watch::Receiver<bool>) {
    let (queue, mut work) = mpsc::unbounded_channel();
    let collector = Arc::new(Collector {
        context,
        graph: Mutex::default(),
        kinds: Mutex::default(),
        queue,
        queued: Mutex::default(),
    });
    let discovery = tokio::spawn(discover(Arc::clone(&collector), stop.clone()));
    loop {
        tokio::select! {
            _ = stop.changed() => break,
            uid = work.recv() => {
                let Some(uid) = uid else { break };
                collector
                    .queued
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .remove(&uid);
                if let Err(error) = process(&collector, &uid).await {
                    tracing::debug!(%error, %uid, "garbage collector: retrying");
                    let collector = Arc::clone(&collector);
                    tokio::spawn(async move {
                        tokio::time::sleep(RETRY).await;
                        collector.enqueue(vec![uid]);
                    });
                }
            }
        }
    }
    discovery.abort();
}

/// Watches every deletable resource type, and finds new ones when CRDs change.
async fn discover(collector: Arc<Collector>, stop: watch::Receiver<bool>) {
    let client = collector.context.client.clone();
    let mut watched: HashSet<String> = HashSet::new();
    let definitions: Api<CustomResourceDefinition> = Api::all(client.clone());
    let changes = watcher(definitions, watcher::Config::default()).default_backoff();
    futures_util::pin_mut!(changes);
    loop {
        match Discovery::new(client.clone()).run().await {
            Ok(discovery) => {
                let mut kinds = Kinds::new();
                for group in discovery.groups() {
                    for version in group.versions() {
                        for (resource, capabilities) in group.versioned_resources(version) {
                            let namespaced = capabilities.scope == Scope::Namespaced;
                            kinds.insert(
                                (
                                    resource.group.clone(),
                                    resource.version.clone(),
                                    resource.kind.clone(),
                                ),
                                (resource, namespaced),
                            );
                        }
                    }
                    for (resource, capabilities) in group.recommended_resources() {
                        let ignored = resource.plural == "events"
                            && (resource.group.is_empty() || resource.group == "events.k8s.io");
                        let usable = [verbs::LIST, verbs::WATCH, verbs::DELETE]
                            .iter()
                            .all(|verb| capabilities.supports_operation(verb));
                        let key = format!("{}/{}", resource.group, resource.plural);
                        if ignored || !usable || !watched.insert(key) {
                            continue;
                        }
                        tokio::spawn(watch_resource(
                            Arc::clone(&collector),
                            resource,
                            stop.clone(),
                        ));
                    }
                }
                *collector
                    .kinds
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner) = kinds;
            }
            Err(error) => tracing::debug!(%error, "garbage collector: discovery failed"),
        }
        // Wait for a CRD change (and let a burst of them settle) before discovering again.
        match changes.next().await {
            Some(_) => tokio::time::sleep(Duration::from_millis(200)).await,
            None => return,
        }
    }
}

/// Keeps the graph's share of one resource type.
async fn watch_resource(
    collector: Arc<Collector>,
    resource: ApiResource,
    mut stop: watch::Receiver<bool>,
) {
    let api: Api<DynamicObject> = Api::all_with(collector.context.client.clone(), &resource);
    let events = watcher(api, watcher::Config::default()).default_backoff();
    futures_util::pin_mut!(events);
    let mut relisted: Option<HashSet<String>> = None;
    loop {
        let event = tokio::select! {
            _ = stop.changed() => return,
            event = events.next() => event,
        };
        let Some(event) = event else { return };
        let work = match event {
            Ok(watcher::Event::Init) => {
                relisted = Some(HashSet::new());
                Vec::new()
            }
            Ok(watcher::Event::InitApply(object)) => {
                if let (Some(seen), Some(uid)) = (relisted.as_mut(), object.uid()) {
                    seen.insert(uid);
                }
                record(&collector, &resource, object)
            }
            Ok(watcher::Event::InitDone) => {
                let seen = relisted.take().unwrap_or_default();
                let mut graph = collector.graph();
                let stale: Vec<String> = graph
                    .nodes
                    .iter()
                    .filter(|(uid, node)| {
                        node.resource.plural == resource.plural
                            && node.resource.group == resource.group
                            && !seen.contains(*uid)
                    })
                    .map(|(uid, _)| uid.clone())
                    .collect();
                stale.iter().flat_map(|uid| graph.remove(uid)).collect()
            }
            Ok(watcher::Event::Apply(object)) => record(&collector, &resource, object),
            Ok(watcher::Event::Delete(object)) => match object.uid() {
                Some(uid) => collector.graph().remove(uid.as_str()),
                None => Vec::new(),
            },
            Err(error) => {
                tracing::debug!(%error, resource = %resource.plural, "garbage collector: watch");
                Vec::new()
            }
        };
        collector.enqueue(work);
    }
}

fn record(collector: &Collector, resource: &ApiResource, object: DynamicObject) -> Vec<String> {
    let Some(uid) = object.uid() else {
        return Vec::new();
    };
    let node = Node {
        resource: resource.clone(),
        namespace: object.namespace(),
        name: object.name_any(),
        owners: object.owner_references().to_vec(),
        deleting: object.metadata.deletion_timestamp.is_some(),
        finalizers: object.finalizers().to_vec(),
    };
    collector.graph().upsert(uid, node)
}

/// What became of an owner reference.
#[derive(Debug, PartialEq, Eq)]
enum OwnerState {
    /// The owner exists and is not waiting for its dependents.
    Solid,
    /// The owner is being deleted in the foreground.
    Waiting,
    /// The owner is gone (or can never be found from this dependent).
    Dangling,
    /// Unknown for now (its kind is not served): left alone.
    Unresolved,
}

async fn owner_state(
    collector: &Collector,
    dependent: &Node,
    owner: &OwnerReference,
) -> Result<OwnerState, ReconcileError> {
    let (group, version) = match owner.api_version.split_once('/') {
        Some((group, version)) => (group.to_owned(), version.to_owned()),
        None => (String::new(), owner.api_version.clone()),
    };
    let kind = collector
        .kinds
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get(&(group, version, owner.kind.clone()))
        .cloned();
    let Some((resource, namespaced)) = kind else {
        return Ok(OwnerState::Unresolved);
    };
    // A namespaced owner must share the dependent's namespace; a cluster-scoped dependent
    // cannot have one at all.
    let namespace = match (namespaced, &dependent.namespace) {
        (true, Some(namespace)) => Some(namespace.clone()),
        (true, None) => return Ok(OwnerState::Dangling),
        (false, _) => None,
    };
    let known = collector.graph().nodes.get(&owner.uid).cloned();
    if let Some(node) = known
        && node.namespace == namespace
    {
        return Ok(if node.waiting_for_dependents() {
            OwnerState::Waiting
        } else {
            OwnerState::Solid
        });
    }
    // Not in the graph: confirm with the server before anything is deleted.
    let client = collector.context.client.clone();
    let api: Api<DynamicObject> = match &namespace {
        Some(namespace) => Api::namespaced_with(client, namespace, &resource),
        None => Api::all_with(client, &resource),
    };
    let live = api.get_opt(&owner.name).await?;
    Ok(match live {
        Some(object) if object.uid().as_deref() == Some(owner.uid.as_str()) => {
            let waiting = object.metadata.deletion_timestamp.is_some()
                && object.finalizers().iter().any(|f| f == FOREGROUND);
            if waiting {
                OwnerState::Waiting
            } else {
                OwnerState::Solid
            }
        }
        _ => OwnerState::Dangling,
    })
}

/// Looks at one object as owner and as dependent.
async fn process(collector: &Collector, uid: &str) -> Result<(), ReconcileError> {
    let Some(node) = collector.graph().nodes.get(uid).cloned() else {
        return Ok(());
    };
    if node.deleting && node.finalizers.iter().any(|finalizer| finalizer == ORPHAN) {
        let dependents = collector.graph().dependents_of(uid);
        for (dependent_uid, dependent) in dependents {
            edit(collector, &dependent, &dependent_uid, |object| {
                object
                    .metadata
                    .owner_references
                    .get_or_insert_with(Vec::new)
                    .retain(|owner| owner.uid != uid);
            })
            .await?;
        }
        remove_finalizer(collector, &node, uid, ORPHAN).await?;
        return Ok(());
    }
    if node.waiting_for_dependents() {
        let dependents = collector.graph().dependents_of(uid);
        let mut blocking = 0;
        for (dependent_uid, dependent) in &dependents {
            let blocks = dependent
                .owners
                .iter()
                .any(|owner| owner.uid == uid && owner.block_owner_deletion == Some(true));
            blocking += usize::from(blocks);
            if !dependent.deleting {
                let has_dependents = !collector.graph().dependents_of(dependent_uid).is_empty();
                let policy = if has_dependents {
                    PropagationPolicy::Foreground
                } else {
                    PropagationPolicy::Background
                };
                delete(&collector.context, dependent, dependent_uid, policy).await?;
            }
        }
        if blocking == 0 {
            remove_finalizer(collector, &node, uid, FOREGROUND).await?;
        }
        return Ok(());
    }
    if node.owners.is_empty() || node.deleting {
        return Ok(());
    }
    let mut solid = false;
    let mut waiting = false;
    let mut dangling = Vec::new();
    for owner in &node.owners {
        match owner_state(collector, &node, owner).await? {
            OwnerState::Solid | OwnerState::Unresolved => solid = true,
            OwnerState::Waiting => waiting = true,
            OwnerState::Dangling => dangling.push(owner.uid.clone()),
        }
    }
    if solid || waiting {
        if !dangling.is_empty() {
            edit(collector, &node, uid, |object| {
                object
                    .metadata
                    .owner_references
                    .get_or_insert_with(Vec::new)
                    .retain(|owner| !dangling.contains(&owner.uid));
            })
            .await?;
        }
        if !solid && waiting {
            let has_dependents = !collector.graph().dependents_of(uid).is_empty();
            let policy = if has_dependents {
                PropagationPolicy::Foreground
            } else {
                PropagationPolicy::Background
            };
            delete(&collector.context, &node, uid, policy).await?;
        }
        return Ok(());
    }
    // Every owner is gone. The graph may lag behind the object (an owner deleted with
    // `orphan` has its reference removed just before it goes): as kube-controller-manager,
    // decide on the object as it is now, and delete only that version of it.
    let api = node.api(&collector.context.client);
    let Some(live) = api.get_opt(&node.name).await? else {
        return Ok(());
    };
    if live.uid().as_deref() != Some(uid) {
        return Ok(());
    }
    let still_owned = live
        .metadata
        .owner_references
        .iter()
        .flatten()
        .any(|owner| dangling.contains(&owner.uid));
    if !still_owned {
        return Ok(());
    }
    let params = DeleteParams {
        propagation_policy: Some(PropagationPolicy::Background),
        preconditions: Some(Preconditions {
            uid: Some(uid.to_owned()),
            resource_version: live.metadata.resource_version.clone(),
        }),
        ..DeleteParams::default()
    };
    match api.delete(&node.name, &params).await {
        // Changed since it was read: its next event brings it back here.
        Err(kube::Error::Api(status)) if status.code == 409 => Ok(()),
        result => ignore_gone(result.map(drop)),
    }
}

async fn delete(
    context: &Context,
    node: &Node,
    uid: &str,
    policy: PropagationPolicy,
) -> Result<(), ReconcileError> {
    let params = DeleteParams {
        propagation_policy: Some(policy),
        preconditions: Some(Preconditions {
            uid: Some(uid.to_owned()),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    ignore_gone(
        node.api(&context.client)
            .delete(&node.name, &params)
            .await
            .map(drop),
    )
}

async fn remove_finalizer(
    collector: &Collector,
    node: &Node,
    uid: &str,
    finalizer: &str,
) -> Result<(), ReconcileError> {
    edit(collector, node, uid, |object| {
        object
            .metadata
            .finalizers
            .get_or_insert_with(Vec::new)
            .retain(|kept| kept != finalizer);
    })
    .await
}

/// Reads the object, changes it and writes it back (a conflict is retried by the caller);
/// nothing when it is gone or was replaced by another with its name.
async fn edit(
    collector: &Collector,
    node: &Node,
    uid: &str,
    change: impl FnOnce(&mut DynamicObject),
) -> Result<(), ReconcileError> {
    let api = node.api(&collector.context.client);
    let Some(mut object) = api.get_opt(&node.name).await? else {
        return Ok(());
    };
    if object.uid().as_deref() != Some(uid) {
        return Ok(());
    }
    let before = object.metadata.clone();
    change(&mut object);
    if object.metadata == before {
        return Ok(());
    }
    match api
        .replace(&node.name, &collector.context.post_params(), &object)
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        Err(error) => Err(error.into()),
    }
}

/// A delete that found its object gone (or replaced: the UID precondition failed) needs
/// nothing more.
fn ignore_gone(result: Result<(), kube::Error>) -> Result<(), ReconcileError> {
    match result {
        Err(kube::Error::Api(status)) if status.code == 404 || status.code == 409 => Ok(()),
        other => other.map_err(ReconcileError::from),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(owners: &[&str], deleting: bool, finalizers: &[&str]) -> Node {
        Node {
            resource: ApiResource::erase::<k8s_openapi::api::core::v1::ConfigMap>(&()),
            namespace: Some("default".to_owned()),
            name: "n".to_owned(),
            owners: owners
                .iter()
                .map(|uid| OwnerReference {
                    api_version: "v1".to_owned(),
                    kind: "ConfigMap".to_owned(),
                    name: "owner".to_owned(),
                    uid: (*uid).to_owned(),
                    ..OwnerReference::default()
                })
                .collect(),
            deleting,
            finalizers: finalizers.iter().map(|f| (*f).to_owned()).collect(),
        }
    }

    #[test]
    fn the_graph_tracks_dependents_and_wakes_the_right_objects() {
        let mut graph = Graph::default();
        assert!(
            graph
                .upsert("owner".into(), node(&[], false, &[]))
                .is_empty()
        );
        assert_eq!(
            graph.upsert("child".into(), node(&["owner"], false, &[])),
            ["child"]
        );
        assert_eq!(graph.dependents_of("owner").len(), 1);
        // The owner starts a foreground deletion: it is looked at.
        assert_eq!(
            graph.upsert("owner".into(), node(&[], true, &[FOREGROUND])),
            ["owner"]
        );
        // The child going wakes the waiting owner.
        assert_eq!(graph.remove("child"), ["owner"]);
        assert!(graph.dependents_of("owner").is_empty());
        // An owner going wakes its dependents.
        graph.upsert("child".into(), node(&["owner"], false, &[]));
        assert_eq!(graph.remove("owner"), ["child"]);
    }
}
