//! Shared watches: one watch (and cache) per child kind, whatever the number of instance kinds
//! that use it. A change to an object kro manages is routed, by the instance labels kro put on
//! it, to the one instance it belongs to; a change to an object some graph reads through an
//! externalRef wakes every instance of the kinds that read that kind.
//!
//! Two watches per kind at most: the managed objects (`kro.run/owned=true`, what the apply
//! engine reads back) and, only for kinds read through externalRefs, every object.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use futures_util::StreamExt;
use kro_graph::metadata::{
    INSTANCE_GROUP_LABEL, INSTANCE_KIND_LABEL, INSTANCE_NAME_LABEL, INSTANCE_NAMESPACE_LABEL,
    OWNED_LABEL, SET_NAME_LABEL,
};
use kube::Client;
use kube::api::{ApiResource, DynamicObject};
use kube::runtime::WatchStreamExt;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher::{self, Event};
use tokio::task::JoinHandle;

use crate::cache::{CacheWriter, ObjectCache};
use crate::queue::WorkQueue;
use kro_engine::kinds::ServedKind;

/// An instance: its namespace (none for cluster-scoped kinds) and name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct InstanceRef {
    /// The namespace.
    pub namespace: Option<String>,
    /// The name.
    pub name: String,
}

impl InstanceRef {
    /// The namespace and name of `object`.
    pub(crate) fn of(object: &DynamicObject) -> InstanceRef {
        InstanceRef {
            namespace: object.metadata.namespace.clone(),
            name: object.metadata.name.clone().unwrap_or_default(),
        }
    }
}

impl std::fmt::Display for InstanceRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.namespace {
            Some(namespace) => write!(f, "{namespace}/{}", self.name),
            None => f.write_str(&self.name),
        }
    }
}

pub use kro_schema::GroupKind;

/// Which objects a watch holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Selection {
    /// Objects labelled `kro.run/owned=true`.
    Managed,
    /// Every object of the kind.
    All,
}

/// An instance controller, as the router sees it.
#[derive(Clone)]
pub(crate) struct Subscriber {
    /// Where its reconciles wait.
    pub(crate) queue: WorkQueue<InstanceRef>,
    /// Its instances (to wake them all when an external object changes).
    pub(crate) instances: Store<DynamicObject>,
    /// The kinds its graph reads through externalRefs.
    pub(crate) external: HashSet<GroupKind>,
}

/// Instance controllers by instance kind.
#[derive(Default)]
pub(crate) struct Router {
    subscribers: RwLock<HashMap<GroupKind, Subscriber>>,
    /// Where routed events are counted (`dynamic_controller_route_*`).
    metrics: Option<crate::metrics::Metrics>,
}

impl Router {
    /// A router counting what it routes in `metrics`.
    pub(crate) fn counted(metrics: &crate::metrics::Metrics) -> Self {
        Router {
            metrics: Some(metrics.clone()),
            ..Router::default()
        }
    }

    fn count(&self, gvr: &str, matched: bool) {
        if let Some(metrics) = &self.metrics {
            metrics.dynamic().routed(gvr, matched);
        }
    }

    /// Routes changes of objects labelled with the instance kind `kind` to `subscriber`.
    pub(crate) fn subscribe(&self, kind: GroupKind, subscriber: Subscriber) {
        self.subscribers
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(kind, subscriber);
    }

    /// Stops routing to the instance kind `kind`.
    pub(crate) fn unsubscribe(&self, kind: &GroupKind) {
        self.subscribers
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(kind);
    }

    /// The instance kinds whose instance caches have not completed their first list.
    pub(crate) fn unsynced_instance_kinds(&self) -> Vec<String> {
        let subscribers = self
            .subscribers
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        let mut kinds: Vec<String> = subscribers
            .iter()
            .filter(|(_, subscriber)| !crate::cache::is_synced(&subscriber.instances))
            .map(|(group_kind, _)| group_kind.to_string())
            .collect();
        kinds.sort();
        kinds
    }

    /// A managed object of kind `gvr` changed: wake the instance its labels name.
    fn managed_changed(&self, gvr: &str, labels: &std::collections::BTreeMap<String, String>) {
        let (Some(group), Some(kind), Some(name)) = (
            labels.get(INSTANCE_GROUP_LABEL),
            labels.get(INSTANCE_KIND_LABEL),
            labels.get(INSTANCE_NAME_LABEL),
        ) else {
            self.count(gvr, false);
            return;
        };
        let subscribers = self
            .subscribers
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        let subscriber = subscribers.get(&GroupKind::new(group, kind));
        if let Some(subscriber) = subscriber {
            subscriber.queue.add(InstanceRef {
                namespace: labels.get(INSTANCE_NAMESPACE_LABEL).cloned(),
                name: name.clone(),
            });
        }
        self.count(gvr, subscriber.is_some());
    }

    /// An object of a kind some graphs read (`gvr`) changed: wake every instance of those
    /// graphs.
    fn external_changed(&self, gvr: &str, kind: &GroupKind) {
        let subscribers = self
            .subscribers
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        let mut matched = false;
        for subscriber in subscribers
            .values()
            .filter(|subscriber| subscriber.external.contains(kind))
        {
            for instance in subscriber.instances.state() {
                matched = true;
                subscriber.queue.add(InstanceRef::of(&instance));
            }
        }
        self.count(gvr, matched);
    }
}

struct Watch {
    cache: ObjectCache,
    kind: ServedKind,
    synced: Synced,
    task: JoinHandle<()>,
}

/// The delays between attempts to (re)start a watch: 50 ms doubling to 30 s, ±25% jitter so
/// that watches broken together (a restarted server) do not come back in step; the stream
/// resets it with every event. kube-runtime's default starts at 800 ms, as client-go's
/// reflector does, which keeps a cache stale (and deletion listing from the server) for most
/// of a second after every failed watch request.
#[derive(Debug)]
pub(crate) struct WatchBackoff {
    next: std::time::Duration,
    jitter: std::hash::RandomState,
    attempts: u64,
}

impl WatchBackoff {
    const FIRST: std::time::Duration = std::time::Duration::from_millis(50);
    const LONGEST: std::time::Duration = std::time::Duration::from_secs(30);
}

impl Default for WatchBackoff {
    fn default() -> Self {
        WatchBackoff {
            next: Self::FIRST,
            jitter: std::hash::RandomState::new(),
            attempts: 0,
        }
    }
}

impl Iterator for WatchBackoff {
    type Item = std::time::Duration;

    fn next(&mut self) -> Option<std::time::Duration> {
        use std::hash::BuildHasher as _;
        let delay = self.next;
        self.next = (self.next * 2).min(Self::LONGEST);
        self.attempts = self.attempts.wrapping_add(1);
        // A factor in [0.75, 1.25).
        let spread = (self.jitter.hash_one(self.attempts) % 500) as f64 / 1000.0;
        Some(delay.mul_f64(0.75 + spread))
    }
}

impl kube::runtime::utils::Backoff for WatchBackoff {
    fn reset(&mut self) {
        self.next = Self::FIRST;
    }
}

/// Whether a watch's cache is known to match the server: set when a (re)list has completed or
/// a watch event arrived on a healthy stream, cleared when a re-list begins (after `410 Gone`,
/// say) or the stream breaks (the server went away). While it is clear, an absence in the cache
/// proves nothing, so deletion and pruning read the server instead.
#[derive(Clone, Default)]
struct Synced(Arc<AtomicBool>);

impl Synced {
    fn get(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }

    /// Follows one event of the watch (already applied to its cache).
    fn follow<E>(&self, event: &Result<Event<DynamicObject>, E>) {
        let synced = match event {
            Ok(Event::Init | Event::InitApply(_)) | Err(_) => false,
            Ok(Event::InitDone | Event::Apply(_) | Event::Delete(_)) => true,
        };
        self.0.store(synced, Ordering::Release);
    }
}

/// Tells the Set controller which Sets an instance change concerns: the Set that controls it,
/// and the Set its [`SET_NAME_LABEL`] names (which may adopt it).
pub(crate) struct SetListener {
    set_kind: String,
    queue: WorkQueue<InstanceRef>,
}

impl SetListener {
    /// Queues Sets of kind `set_kind` into `queue`.
    pub(crate) fn new(set_kind: &str, queue: WorkQueue<InstanceRef>) -> Self {
        SetListener {
            set_kind: set_kind.to_owned(),
            queue,
        }
    }

    /// Queues the Sets `instance` concerns.
    pub(crate) fn instance_changed(&self, instance: &DynamicObject) {
        let namespace = instance.metadata.namespace.clone();
        let owner = instance
            .metadata
            .owner_references
            .iter()
            .flatten()
            .find(|owner| owner.controller == Some(true) && owner.kind == self.set_kind)
            .map(|owner| owner.name.clone());
        let labelled = instance
            .metadata
            .labels
            .as_ref()
            .and_then(|labels| labels.get(SET_NAME_LABEL))
            .cloned();
        for name in owner.into_iter().chain(labelled) {
            self.queue.add(InstanceRef {
                namespace: namespace.clone(),
                name,
            });
        }
    }
}

/// The objects a watch event asks the controllers to look at, given that a reflector's store
/// shows a (re-)list only once it is complete. While a list is under way (`Init`,
/// `InitApply`…) the store still holds what it held before (nothing, at start): a worker
/// that looked an object up then would find it missing, take it for deleted, and nothing
/// would wake it again. So the objects listed, and those the store held before the list (one
/// may be gone now), are reported together at `InitDone`, when the store holds the list.
#[derive(Debug, Default)]
pub(crate) struct ListedChanges {
    pending: Vec<Arc<DynamicObject>>,
}

impl ListedChanges {
    /// The objects `event` changed, once `store` (the reflector's, already updated by the
    /// event) shows them.
    pub(crate) fn changed(
        &mut self,
        event: Event<DynamicObject>,
        store: &Store<DynamicObject>,
    ) -> Vec<Arc<DynamicObject>> {
        match event {
            Event::Apply(object) | Event::Delete(object) => vec![Arc::new(object)],
            Event::Init => {
                self.pending = store.state();
                Vec::new()
            }
            Event::InitApply(object) => {
                self.pending.push(Arc::new(object));
                Vec::new()
            }
            Event::InitDone => std::mem::take(&mut self.pending),
        }
    }
}

/// The shared watches; clones share them.
#[derive(Clone)]
pub struct Watches {
    client: Client,
    router: Arc<Router>,
    watches: Arc<Mutex<HashMap<(GroupKind, Selection), Watch>>>,
    /// Where watches running and their first lists are counted.
    metrics: Option<crate::metrics::Metrics>,
}

impl Watches {
    pub(crate) fn new(
        client: Client,
        router: Arc<Router>,
        metrics: Option<crate::metrics::Metrics>,
    ) -> Self {
        Watches {
            client,
            router,
            watches: Arc::default(),
            metrics,
        }
    }

    /// The cache of `kind`'s objects in `selection`, starting the watch on first use. The
    /// cache may still be filling: wait with [`ObjectCache::wait_until_ready`].
    pub fn cache(&self, kind: &ServedKind, selection: Selection) -> ObjectCache {
        let group_kind = GroupKind::new(&kind.resource.group, &kind.resource.kind);
        let mut watches = self.watches.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(watch) = watches.get(&(group_kind.clone(), selection)) {
            return watch.cache.clone();
        }
        let watch = self.start(kind, selection);
        let cache = watch.cache.clone();
        watches.insert((group_kind, selection), watch);
        cache
    }

    /// Whether the cache of `group_kind`'s objects in `selection` is watched and known to match
    /// the server (see `Synced`): its last (re)list completed and its stream has not broken
    /// since. Only then does the absence of an object from it mean the object does not exist.
    pub fn is_synced(&self, group_kind: &GroupKind, selection: Selection) -> bool {
        self.watches
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&(group_kind.clone(), selection))
            .is_some_and(|watch| watch.synced.get())
    }

    /// The cache of a kind already watched, with its served kind.
    pub fn existing(
        &self,
        group_kind: &GroupKind,
        selection: Selection,
    ) -> Option<(ServedKind, ObjectCache)> {
        self.watches
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&(group_kind.clone(), selection))
            .map(|watch| (watch.kind.clone(), watch.cache.clone()))
    }

    fn start(&self, kind: &ServedKind, selection: Selection) -> Watch {
        let mut writer = CacheWriter::new();
        let cache = writer.cache();
        let api = kind.api(&self.client, None);
        let config = match selection {
            Selection::Managed => watcher::Config::default().labels(&format!("{OWNED_LABEL}=true")),
            Selection::All => watcher::Config::default(),
        };
        let router = Arc::clone(&self.router);
        let group_kind = GroupKind::new(&kind.resource.group, &kind.resource.kind);
        let types = kube::api::TypeMeta {
            api_version: kind.resource.api_version.clone(),
            kind: kind.resource.kind.clone(),
        };
        // List answers leave apiVersion and kind out of their items (kube-apiserver does so
        // for built-in kinds); the plan keys objects by them, so put them back. The cache
        // keeps what reconciles read: managedFields shrink to a digest of each apply entry's
        // set (see `compact_managed_fields`).
        let stream = watcher::watcher(api, config)
            .modify(move |object: &mut DynamicObject| {
                if object.types.is_none() {
                    object.types = Some(types.clone());
                }
                kro_engine::compact_managed_fields(&mut object.metadata);
            })
            .backoff(WatchBackoff::default());
        let synced = Synced::default();
        let following = synced.clone();
        let gvr = crate::metrics::gvr_label(
            &kind.resource.group,
            &kind.resource.version,
            &kind.resource.plural,
        );
        let metrics = self.metrics.clone();
        if let Some(metrics) = &metrics {
            metrics.dynamic().watching(1);
        }
        let task = tokio::spawn(async move {
            let started = std::time::Instant::now();
            let mut first_list = true;
            let mut stream = std::pin::pin!(stream);
            while let Some(event) = stream.next().await {
                following.follow(&event);
                if first_list
                    && matches!(event, Ok(Event::InitDone))
                    && let Some(metrics) = &metrics
                {
                    first_list = false;
                    metrics
                        .dynamic()
                        .synced(&gvr, started.elapsed().as_secs_f64());
                }
                match event {
                    Ok(event) => {
                        let changed = writer.apply(&event);
                        match selection {
                            Selection::Managed => {
                                for object in &changed {
                                    router.managed_changed(&gvr, &object.labels);
                                }
                            }
                            Selection::All if !changed.is_empty() => {
                                router.external_changed(&gvr, &group_kind);
                            }
                            Selection::All => {}
                        }
                    }
                    Err(error) => {
                        tracing::warn!(kind = group_kind.kind(), group = group_kind.group(), %error, "watch failed; retrying");
                    }
                }
            }
        });
        Watch {
            cache,
            kind: kind.clone(),
            synced,
            task,
        }
    }

    /// Stops every watch.
    pub(crate) fn stop(&self) {
        for (_, watch) in self
            .watches
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .drain()
        {
            watch.task.abort();
            if let Some(metrics) = &self.metrics {
                metrics.dynamic().watching(-1);
            }
        }
    }
}

/// The UIDs of the objects `store` holds: what records kept by UID keep when objects go.
pub(crate) fn cached_uids(store: &Store<DynamicObject>) -> std::collections::HashSet<String> {
    store
        .state()
        .iter()
        .filter_map(|object| object.metadata.uid.clone())
        .collect()
}

/// The cached object `name` in `namespace` of a store.
pub(crate) fn cached(
    store: &Store<DynamicObject>,
    resource: &ApiResource,
    namespace: Option<&str>,
    name: &str,
) -> Option<Arc<DynamicObject>> {
    let mut reference = ObjectRef::new_with(name, resource.clone());
    if let Some(namespace) = namespace {
        reference = reference.within(namespace);
    }
    store.get(&reference)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use kube::runtime::reflector::store::Writer;

    use super::*;

    fn object() -> DynamicObject {
        DynamicObject::new(
            "a",
            &ApiResource::erase::<k8s_openapi::api::core::v1::ConfigMap>(&()),
        )
    }

    fn named(name: &str) -> DynamicObject {
        let mut object = object();
        object.metadata.name = Some(name.to_owned());
        object
    }

    fn names(objects: &[Arc<DynamicObject>]) -> Vec<String> {
        let mut names: Vec<String> = objects
            .iter()
            .filter_map(|object| object.metadata.name.clone())
            .collect();
        names.sort();
        names
    }

    /// Feeds `event` to the store first, as the reflector does, then asks what changed.
    fn changed(
        changes: &mut ListedChanges,
        writer: &mut Writer<DynamicObject>,
        event: Event<DynamicObject>,
    ) -> Vec<String> {
        writer.apply_watcher_event(&event);
        names(&changes.changed(event, &writer.as_reader()))
    }

    /// The race that left an RGD applied right after start-up unreconciled: a worker that
    /// took its name during the initial list found the store still empty, took the RGD for
    /// deleted, and nothing woke it again (one start in about ten on a real kube-apiserver).
    #[test]
    fn objects_listed_are_reported_once_the_store_holds_them() {
        let resource = ApiResource::erase::<k8s_openapi::api::core::v1::ConfigMap>(&());
        let mut writer = Writer::new(resource);
        let mut changes = ListedChanges::default();
        assert!(changed(&mut changes, &mut writer, Event::Init).is_empty());
        assert!(changed(&mut changes, &mut writer, Event::InitApply(named("a"))).is_empty());
        assert!(
            writer.as_reader().state().is_empty(),
            "the store shows a list only once it is complete"
        );
        assert_eq!(changed(&mut changes, &mut writer, Event::InitDone), ["a"]);
        assert_eq!(writer.as_reader().state().len(), 1);
        assert_eq!(
            changed(&mut changes, &mut writer, Event::Apply(named("b"))),
            ["b"]
        );

        // A re-list (after `410 Expired`) where `a` was deleted meanwhile and `c` created:
        // both are reported with `b`, once the store shows the new list.
        assert!(changed(&mut changes, &mut writer, Event::Init).is_empty());
        for name in ["b", "c"] {
            assert!(changed(&mut changes, &mut writer, Event::InitApply(named(name))).is_empty());
        }
        assert_eq!(
            changed(&mut changes, &mut writer, Event::InitDone),
            ["a", "b", "b", "c"]
        );
        assert_eq!(names(&writer.as_reader().state()), ["b", "c"]);
        assert_eq!(
            changed(&mut changes, &mut writer, Event::Delete(named("c"))),
            ["c"]
        );
    }

    fn follow(synced: &Synced, event: Result<Event<DynamicObject>, &str>) -> bool {
        synced.follow(&event);
        synced.get()
    }

    #[test]
    fn watches_retry_soon_then_back_off_to_half_a_minute() {
        use kube::runtime::utils::Backoff as _;
        let mut backoff = WatchBackoff::default();
        let first = backoff.next().unwrap_or_default();
        assert!(
            first >= Duration::from_millis(37) && first < Duration::from_millis(63),
            "{first:?}"
        );
        let later: Vec<Duration> = backoff.by_ref().take(20).collect();
        assert!(
            later
                .iter()
                .all(|delay| *delay < Duration::from_millis(37_500)),
            "{later:?}"
        );
        assert!(
            later
                .last()
                .is_some_and(|delay| *delay >= Duration::from_millis(22_500))
        );
        backoff.reset();
        assert!(
            backoff
                .next()
                .is_some_and(|delay| delay < Duration::from_millis(63))
        );
    }

    #[test]
    fn a_cache_is_synced_only_between_a_completed_list_and_the_next_break() {
        let synced = Synced::default();
        assert!(!synced.get(), "a new watch has listed nothing yet");
        assert!(!follow(&synced, Ok(Event::Init)));
        assert!(!follow(&synced, Ok(Event::InitApply(object()))));
        assert!(follow(&synced, Ok(Event::InitDone)));
        assert!(follow(&synced, Ok(Event::Apply(object()))));
        // The server went away: what the cache says may be old.
        assert!(!follow(&synced, Err("connection refused")));
        // A re-list after 410 Gone: the cache keeps the old objects until it is done.
        assert!(!follow(&synced, Ok(Event::Init)));
        assert!(!follow(&synced, Ok(Event::InitApply(object()))));
        assert!(follow(&synced, Ok(Event::InitDone)));
        // The watch resumed without a re-list: its first event shows the stream is live.
        assert!(!follow(&synced, Err("connection reset")));
        assert!(follow(&synced, Ok(Event::Delete(object()))));
    }
}
