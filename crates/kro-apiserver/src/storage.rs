//! Object storage: objects keyed by resource, namespace and name; one global increasing
//! resourceVersion; a bounded change log that watches resume from, with compaction.
//!
//! Objects live in memory; a store opened on a data directory also writes every change
//! through to SQLite (WAL) before it is acknowledged, so a write that was answered survives
//! `kill -9`, and reopening resumes the resourceVersion sequence.
//!
//! Writes take turns: each decides on the stored object, waits until its change is durable
//! (the [`Persistence`] does the I/O off the async runtime, SQLite on a thread of its own),
//! and then becomes visible under a short lock, so revisions are assigned in the order changes
//! become visible, and a watch that starts at revision N sees exactly the changes after N. A write
//! whose result equals the stored object (resourceVersion aside) is not a change: it keeps the
//! resourceVersion and emits no event, as etcd-backed Kubernetes does.

mod persistence;
mod sqlite;

use std::collections::{BTreeMap, VecDeque};
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::Value;
use tokio::sync::broadcast;

use crate::error::ApiError;

pub use self::persistence::{
    Memory, PendingWrite, PersistedChange, Persistence, PersistenceError, Snapshot,
};
pub use self::sqlite::Sqlite;
pub(crate) use self::sqlite::{private_directory, private_file};

/// Where an object is stored: its resource (group and plural), namespace (empty for
/// cluster-scoped objects) and name. Ordered as etcd orders keys, so lists come sorted by
/// namespace, then name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjectKey {
    /// API group (empty for the core group).
    pub group: String,
    /// Plural resource name.
    pub resource: String,
    /// Namespace, empty for cluster-scoped objects.
    pub namespace: String,
    /// Object name.
    pub name: String,
}

impl ObjectKey {
    /// A key.
    pub fn new(group: &str, resource: &str, namespace: &str, name: &str) -> Self {
        ObjectKey {
            group: group.to_owned(),
            resource: resource.to_owned(),
            namespace: namespace.to_owned(),
            name: name.to_owned(),
        }
    }

    fn is_of(&self, group: &str, resource: &str) -> bool {
        self.group == group && self.resource == resource
    }
}

/// What a change did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeType {
    /// The object was created.
    Added,
    /// The object was updated.
    Modified,
    /// The object was deleted.
    Deleted,
}

impl ChangeType {
    /// The watch event type (`ADDED`, `MODIFIED`, `DELETED`).
    pub fn as_str(self) -> &'static str {
        match self {
            ChangeType::Added => "ADDED",
            ChangeType::Modified => "MODIFIED",
            ChangeType::Deleted => "DELETED",
        }
    }
}

/// One committed change, as watches see it.
#[derive(Debug)]
pub struct Change {
    /// The revision the change was assigned.
    pub revision: u64,
    /// What happened.
    pub change_type: ChangeType,
    /// The object changed.
    pub key: ObjectKey,
    /// The new state; for a deletion, the last state with the deletion's resourceVersion.
    pub object: Arc<Value>,
    /// The state before the change (absent for creations), for selector transitions.
    pub previous: Option<Arc<Value>>,
}

/// What a mutation decided, given the current object.
#[derive(Debug)]
pub enum Mutation {
    /// Store this object (create or update).
    Put(Value),
    /// Delete the object.
    Delete,
}

/// The result of a committed mutation.
#[derive(Debug, Clone)]
pub enum Committed {
    /// The object as stored now (unchanged when the write changed nothing).
    Stored {
        /// The stored object, with its resourceVersion.
        object: Arc<Value>,
        /// Whether the object was created by this write.
        created: bool,
        /// Whether anything changed.
        changed: bool,
    },
    /// The object was deleted; its last state, with the deletion's resourceVersion.
    Deleted(Arc<Value>),
}

/// Limits of the store.
#[derive(Debug, Clone, Copy)]
pub struct StoreLimits {
    /// How many changes the log keeps for watches to resume from.
    pub change_log: usize,
    /// How many changes a watcher may fall behind before it is ended with 410 Expired.
    pub watch_buffer: usize,
}

impl Default for StoreLimits {
    fn default() -> Self {
        StoreLimits {
            change_log: 10_000,
            watch_buffer: 4_096,
        }
    }
}

struct Inner {
    objects: BTreeMap<ObjectKey, Arc<Value>>,
    revision: u64,
    log: VecDeque<Arc<Change>>,
    /// The oldest revision a watch may resume from: changes after it are all in the log.
    oldest_resumable: u64,
}

/// What readers see, and the change feed: applied under a lock that is never held across an
/// `.await` nor during I/O.
struct Shared {
    inner: Mutex<Inner>,
    changes: broadcast::Sender<Arc<Change>>,
    limits: StoreLimits,
}

/// The object store: objects in memory, written through to a [`Persistence`].
pub struct Store {
    shared: Arc<Shared>,
    persistence: Arc<dyn Persistence>,
    /// Serialises writes: each decides, becomes durable and is applied before the next one
    /// reads the object it decides on. An async lock, as a write waits for its persistence.
    writes: Arc<tokio::sync::Mutex<()>>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Store")
            .field("persistence", &self.persistence)
            .finish_non_exhaustive()
    }
}

/// A watch start: the logged changes after the requested revision, then the live stream.
pub struct WatchStart {
    /// Changes already committed after the requested revision, oldest first.
    pub backlog: Vec<Arc<Change>>,
    /// Changes committed from now on.
    pub live: broadcast::Receiver<Arc<Change>>,
    /// The revision the backlog ends at (the store's revision when the watch started).
    pub revision: u64,
}

/// A consistent list: matching objects and the revision they are current at, with a
/// subscription to the changes after it.
pub struct ListStart {
    /// Objects, in key order.
    pub objects: Vec<Arc<Value>>,
    /// The store's revision at the time of the list.
    pub revision: u64,
    /// Changes after `revision` (only when asked for).
    pub live: Option<broadcast::Receiver<Arc<Change>>>,
}

/// A decided change, on its way to being durable and then visible.
struct Planned {
    key: ObjectKey,
    revision: u64,
    /// The stored state before the change.
    current: Option<Arc<Value>>,
    /// The new state; `None` for a deletion.
    object: Option<Arc<Value>>,
}

/// Sets `metadata.resourceVersion`.
fn set_resource_version(object: &mut Value, revision: u64) {
    if let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        metadata.insert(
            "resourceVersion".to_owned(),
            Value::String(revision.to_string()),
        );
    }
}

/// Whether two objects are equal apart from their resourceVersion.
fn same_apart_from_resource_version(stored: &Value, new: &Value) -> bool {
    match (stored, new) {
        (Value::Object(a), Value::Object(b)) => {
            if a.len() != b.len() {
                return false;
            }
            a.iter().all(|(key, value)| match b.get(key) {
                Some(other) if key == "metadata" => {
                    let strip = |meta: &Value| {
                        let mut meta = meta.clone();
                        if let Some(map) = meta.as_object_mut() {
                            map.remove("resourceVersion");
                        }
                        meta
                    };
                    strip(value) == strip(other)
                }
                Some(other) => value == other,
                None => false,
            })
        }
        _ => stored == new,
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves consistent data (each write is applied whole
        // after its checks), so a poisoned lock is still usable.
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Makes a durable change visible: the objects, the revision, the log and the watchers.
    fn apply(&self, planned: Planned) -> Committed {
        let Planned {
            key,
            revision,
            current,
            object,
        } = planned;
        let mut inner = self.lock();
        inner.revision = revision;
        match object {
            Some(object) => {
                inner.objects.insert(key.clone(), Arc::clone(&object));
                let change_type = if current.is_some() {
                    ChangeType::Modified
                } else {
                    ChangeType::Added
                };
                let created = current.is_none();
                self.record(
                    &mut inner,
                    Change {
                        revision,
                        change_type,
                        key,
                        object: Arc::clone(&object),
                        previous: current,
                    },
                );
                Committed::Stored {
                    object,
                    created,
                    changed: true,
                }
            }
            None => {
                inner.objects.remove(&key);
                let stored = current.unwrap_or_default();
                let mut last = (*stored).clone();
                set_resource_version(&mut last, revision);
                let last = Arc::new(last);
                self.record(
                    &mut inner,
                    Change {
                        revision,
                        change_type: ChangeType::Deleted,
                        key,
                        object: Arc::clone(&last),
                        previous: Some(stored),
                    },
                );
                Committed::Deleted(last)
            }
        }
    }

    /// Logs a change for watches to resume from, and sends it to the watchers.
    fn record(&self, inner: &mut Inner, change: Change) {
        let change = Arc::new(change);
        inner.log.push_back(Arc::clone(&change));
        while inner.log.len() > self.limits.change_log {
            if let Some(dropped) = inner.log.pop_front() {
                inner.oldest_resumable = dropped.revision;
            }
        }
        // No receivers is not an error: nobody is watching.
        let _ = self.changes.send(change);
    }
}

/// A write that could not be made durable: logged, and a 500 to the client.
fn storage_failure(error: &PersistenceError) -> ApiError {
    tracing::error!(%error, "writing to the store's persistence failed");
    ApiError::internal(format!("storage failure: {error}"))
}

impl Store {
    /// An empty store in memory.
    pub fn new(limits: StoreLimits) -> Self {
        Self::assemble(limits, Arc::new(Memory), Snapshot::default())
    }

    /// A store persisted in `directory` (created if missing) by SQLite: the objects and
    /// revision found there are loaded, and every change is written through before it is
    /// acknowledged.
    ///
    /// # Errors
    /// [`PersistenceError`] when the directory or database cannot be opened or holds
    /// something that is not a store.
    pub fn open(limits: StoreLimits, directory: &Path) -> Result<Self, PersistenceError> {
        Self::with_persistence(limits, Arc::new(Sqlite::open(directory)?))
    }

    /// A store over `persistence`, starting from what it holds.
    ///
    /// # Errors
    /// [`PersistenceError`] when the persistence cannot be read.
    pub fn with_persistence(
        limits: StoreLimits,
        persistence: Arc<dyn Persistence>,
    ) -> Result<Self, PersistenceError> {
        let snapshot = persistence.load()?;
        Ok(Self::assemble(limits, persistence, snapshot))
    }

    fn assemble(
        limits: StoreLimits,
        persistence: Arc<dyn Persistence>,
        snapshot: Snapshot,
    ) -> Self {
        let (changes, _) = broadcast::channel(limits.watch_buffer.max(1));
        Store {
            shared: Arc::new(Shared {
                inner: Mutex::new(Inner {
                    objects: snapshot.objects,
                    revision: snapshot.revision,
                    log: VecDeque::new(),
                    // Changes before a restart are not kept: older watches get 410 and re-list.
                    oldest_resumable: snapshot.revision,
                }),
                changes,
                limits,
            }),
            persistence,
            writes: Arc::new(tokio::sync::Mutex::new(())),
        }
    }

    /// The current revision.
    pub fn revision(&self) -> u64 {
        self.shared.lock().revision
    }

    /// The object stored at `key`.
    pub fn get(&self, key: &ObjectKey) -> Option<Arc<Value>> {
        self.shared.lock().objects.get(key).cloned()
    }

    /// The objects of a resource, in one namespace or all, and the revision they are current
    /// at; with `subscribe`, also the changes that follow.
    pub fn list(
        &self,
        group: &str,
        resource: &str,
        namespace: Option<&str>,
        subscribe: bool,
    ) -> ListStart {
        let inner = self.shared.lock();
        let start = ObjectKey::new(group, resource, namespace.unwrap_or(""), "");
        let objects = inner
            .objects
            .range(start..)
            .take_while(|(key, _)| {
                key.is_of(group, resource) && namespace.is_none_or(|ns| key.namespace == ns)
            })
            .map(|(_, object)| Arc::clone(object))
            .collect();
        ListStart {
            objects,
            revision: inner.revision,
            live: subscribe.then(|| self.shared.changes.subscribe()),
        }
    }

    /// Every stored object (for persistence checks and debugging).
    pub fn len(&self) -> usize {
        self.shared.lock().objects.len()
    }

    /// Whether the store holds no objects.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Starts a watch after `revision`.
    ///
    /// # Errors
    /// 410 Expired when changes after `revision` have been compacted away; 504 when
    /// `revision` is ahead of the store.
    pub fn watch_from(&self, revision: u64) -> Result<WatchStart, ApiError> {
        let inner = self.shared.lock();
        if revision > inner.revision {
            return Err(ApiError::too_large_resource_version(
                revision,
                inner.revision,
            ));
        }
        if revision < inner.oldest_resumable {
            return Err(ApiError::expired(format!(
                "too old resource version: {revision} ({})",
                inner.oldest_resumable
            )));
        }
        let backlog = inner
            .log
            .iter()
            .skip_while(|change| change.revision <= revision)
            .cloned()
            .collect();
        Ok(WatchStart {
            backlog,
            live: self.shared.changes.subscribe(),
            revision: inner.revision,
        })
    }

    /// Applies `decide` to the current object at `key` (None when absent) and commits what it
    /// returns. Writes are serialised: `decide` sees the stored object without interference
    /// from other writes; an error it returns is passed through and nothing is written. The
    /// change becomes visible (and this returns) once it is durable.
    ///
    /// # Errors
    /// Whatever `decide` returns; 500 when the change cannot be made durable.
    pub async fn mutate<F>(&self, key: &ObjectKey, decide: F) -> Result<Committed, ApiError>
    where
        F: FnOnce(Option<&Arc<Value>>) -> Result<Mutation, ApiError>,
    {
        self.mutate_with(key, false, decide).await
    }

    /// [`Store::mutate`], or with `dry_run` the same decision without committing it: the
    /// result is what would have been stored, and nothing changes (no revision, no event).
    ///
    /// # Errors
    /// Whatever `decide` returns; 500 when the change cannot be made durable.
    pub async fn mutate_with<F>(
        &self,
        key: &ObjectKey,
        dry_run: bool,
        decide: F,
    ) -> Result<Committed, ApiError>
    where
        F: FnOnce(Option<&Arc<Value>>) -> Result<Mutation, ApiError>,
    {
        // What is stored is bounded, not only what was sent: defaults, managed fields and
        // status can make an object larger than its request (kube-apiserver's is etcd's limit).
        let decide = |current: Option<&Arc<Value>>| -> Result<Mutation, ApiError> {
            let decision = decide(current)?;
            if let Mutation::Put(object) = &decision {
                crate::bounds::check_stored(object)?;
            }
            Ok(decision)
        };
        if dry_run {
            let current = self.get(key);
            let decision = decide(current.as_ref())?;
            return Ok(match decision {
                Mutation::Put(object) => Committed::Stored {
                    changed: current
                        .as_ref()
                        .is_none_or(|stored| !same_apart_from_resource_version(stored, &object)),
                    created: current.is_none(),
                    object: Arc::new(object),
                },
                Mutation::Delete => match current {
                    Some(stored) => Committed::Deleted(stored),
                    None => return Err(ApiError::not_found(&key.group, &key.resource, &key.name)),
                },
            });
        }
        let turn = Arc::clone(&self.writes).lock_owned().await;
        let (current, revision) = {
            let inner = self.shared.lock();
            (inner.objects.get(key).cloned(), inner.revision + 1)
        };
        let object = match decide(current.as_ref())? {
            Mutation::Put(mut object) => {
                if let Some(stored) = &current
                    && same_apart_from_resource_version(stored, &object)
                {
                    return Ok(Committed::Stored {
                        object: Arc::clone(stored),
                        created: false,
                        changed: false,
                    });
                }
                set_resource_version(&mut object, revision);
                Some(Arc::new(object))
            }
            Mutation::Delete => {
                if current.is_none() {
                    return Err(ApiError::not_found(&key.group, &key.resource, &key.name));
                }
                None
            }
        };
        let planned = Planned {
            key: key.clone(),
            revision,
            current,
            object: object.clone(),
        };
        let pending = self.persistence.write(PersistedChange {
            key: key.clone(),
            object,
            revision,
        });
        match pending.into_finished() {
            Ok(result) => {
                result.map_err(|error| storage_failure(&error))?;
                Ok(self.shared.apply(planned))
            }
            Err(pending) => {
                // The change is applied by a task that holds the writers' turn, so that a
                // client going away mid-write cannot leave memory behind what is durable.
                let shared = Arc::clone(&self.shared);
                let applying = tokio::spawn(async move {
                    let _turn = turn;
                    pending
                        .wait()
                        .await
                        .map_err(|error| storage_failure(&error))?;
                    Ok(shared.apply(planned))
                });
                applying.await.map_err(|error| {
                    tracing::error!(%error, "applying a durable change failed");
                    ApiError::internal(format!("storage failure: {error}"))
                })?
            }
        }
    }

    /// Drops the whole change log: every watch that resumes from an earlier revision gets
    /// 410 Expired (what etcd compaction does; a test knob).
    pub fn compact(&self) {
        let mut inner = self.shared.lock();
        inner.log.clear();
        inner.oldest_resumable = inner.revision;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn key(name: &str) -> ObjectKey {
        ObjectKey::new("", "configmaps", "default", name)
    }

    async fn put(store: &Store, name: &str, data: &str) -> Committed {
        let object =
            json!({"metadata": {"name": name, "namespace": "default"}, "data": {"k": data}});
        store
            .mutate(&key(name), |_| Ok(Mutation::Put(object)))
            .await
            .expect("put")
    }

    fn stored_revision(committed: &Committed) -> String {
        match committed {
            Committed::Stored { object, .. } | Committed::Deleted(object) => {
                object["metadata"]["resourceVersion"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned()
            }
        }
    }

    #[tokio::test]
    async fn every_change_takes_the_next_revision_and_no_ops_keep_it() {
        let store = Store::new(StoreLimits::default());
        assert_eq!(stored_revision(&put(&store, "a", "1").await), "1");
        assert_eq!(stored_revision(&put(&store, "b", "1").await), "2");
        let again = put(&store, "a", "1").await;
        assert!(matches!(again, Committed::Stored { changed: false, .. }));
        assert_eq!(stored_revision(&again), "1");
        assert_eq!(store.revision(), 2);
        assert_eq!(stored_revision(&put(&store, "a", "2").await), "3");
        let deleted = store
            .mutate(&key("a"), |_| Ok(Mutation::Delete))
            .await
            .expect("delete");
        assert_eq!(stored_revision(&deleted), "4");
        assert_eq!(store.len(), 1);
    }

    #[tokio::test]
    async fn lists_are_sorted_by_namespace_then_name() {
        let store = Store::new(StoreLimits::default());
        for (namespace, name) in [("b", "x"), ("a", "y"), ("a", "x")] {
            let object = json!({"metadata": {"name": name, "namespace": namespace}});
            store
                .mutate(&ObjectKey::new("", "configmaps", namespace, name), |_| {
                    Ok(Mutation::Put(object))
                })
                .await
                .expect("put");
        }
        store
            .mutate(&ObjectKey::new("", "secrets", "a", "s"), |_| {
                Ok(Mutation::Put(json!({"metadata": {"name": "s"}})))
            })
            .await
            .expect("put");
        let all = store.list("", "configmaps", None, false);
        let names: Vec<String> = all
            .objects
            .iter()
            .map(|object| {
                format!(
                    "{}/{}",
                    object["metadata"]["namespace"].as_str().unwrap_or_default(),
                    object["metadata"]["name"].as_str().unwrap_or_default()
                )
            })
            .collect();
        assert_eq!(names, ["a/x", "a/y", "b/x"]);
        assert_eq!(
            store.list("", "configmaps", Some("a"), false).objects.len(),
            2
        );
        assert_eq!(all.revision, 4);
    }

    #[tokio::test]
    async fn a_watch_resumes_after_its_revision_until_the_log_is_compacted() {
        let store = Store::new(StoreLimits {
            change_log: 2,
            watch_buffer: 16,
        });
        put(&store, "a", "1").await;
        put(&store, "a", "2").await;
        put(&store, "a", "3").await;
        let start = store.watch_from(1).expect("revision 1 is resumable");
        let revisions: Vec<u64> = start.backlog.iter().map(|change| change.revision).collect();
        assert_eq!(revisions, [2, 3]);
        let expired = store.watch_from(0).err().expect("revision 0 was compacted");
        assert_eq!(expired.code, 410);
        assert_eq!(expired.message, "too old resource version: 0 (1)");
        let ahead = store.watch_from(9).err().expect("ahead of the store");
        assert_eq!(ahead.code, 504);
        store.compact();
        assert!(store.watch_from(2).is_err());
        assert!(
            store
                .watch_from(3)
                .expect("current revision")
                .backlog
                .is_empty()
        );
    }

    #[tokio::test]
    async fn a_deletion_event_carries_the_last_state_with_the_deletion_revision() {
        let store = Store::new(StoreLimits::default());
        put(&store, "a", "1").await;
        let mut start = store.watch_from(1).expect("watch");
        store
            .mutate(&key("a"), |_| Ok(Mutation::Delete))
            .await
            .expect("delete");
        let change = start.live.try_recv().expect("a change");
        assert_eq!(change.change_type, ChangeType::Deleted);
        assert_eq!(change.object["metadata"]["resourceVersion"], "2");
        assert_eq!(change.object["data"]["k"], "1");
        let missing = store.mutate(&key("a"), |_| Ok(Mutation::Delete)).await;
        assert_eq!(missing.err().map(|error| error.code), Some(404));
    }

    #[tokio::test]
    async fn a_persistent_store_reopens_with_its_objects_and_revision() {
        let directory = tempfile::tempdir().expect("a temporary directory");
        {
            let store = Store::open(StoreLimits::default(), directory.path()).expect("opened");
            put(&store, "a", "1").await;
            put(&store, "b", "1").await;
            store
                .mutate(&key("b"), |_| Ok(Mutation::Delete))
                .await
                .expect("delete");
        }
        let reopened = Store::open(StoreLimits::default(), directory.path()).expect("reopened");
        assert_eq!(reopened.revision(), 3);
        assert_eq!(reopened.len(), 1);
        let stored = reopened.get(&key("a")).expect("a survives");
        assert_eq!(stored["metadata"]["resourceVersion"], "1");
        assert_eq!(stored_revision(&put(&reopened, "a", "2").await), "4");
        // Changes before the reopening are not in the log: resuming from them re-lists.
        let expired = reopened.watch_from(2).err().expect("compacted");
        assert_eq!(expired.code, 410);
    }
}
