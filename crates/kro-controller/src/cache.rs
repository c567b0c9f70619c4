//! The watch caches of the objects instances make and read: each object kept as its compact
//! JSON text, not as a tree of maps and strings.
//!
//! kube-runtime's reflector store holds a `DynamicObject` per object: a kro-applied ConfigMap
//! with its eleven labels took about five KiB of heap that way, for some 900 bytes of JSON.
//! A controller caching the children of ten thousand instances keeps fifty thousand of them,
//! and reconciles read the objects as JSON anyway (the runtime plans with JSON), so the text is
//! parsed when a reconcile asks for an object: a few microseconds for a small object, once per
//! object per reconcile.
//!
//! The cache also indexes objects by the ApplySet they are part of
//! ([`APPLYSET_PART_OF_LABEL`]), so that finding an instance's members does not scan every
//! object of the kind.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, PoisonError, RwLock};

use futures_util::FutureExt;
use kro_graph::metadata::APPLYSET_PART_OF_LABEL;
use kube::api::DynamicObject;
use kube::runtime::reflector::Store;
use kube::runtime::watcher::Event;
use serde_json::Value as Json;

/// An object's namespace (none for cluster-scoped kinds) and name.
pub(crate) type CachedName = (Option<String>, String);

/// A cache of one kind's objects (clones share it). Filled by a watch through
/// [`CacheWriter`].
#[derive(Clone)]
pub struct ObjectCache {
    inner: Arc<RwLock<Objects>>,
    ready: tokio::sync::watch::Receiver<bool>,
}

#[derive(Default)]
struct Objects {
    texts: HashMap<CachedName, Box<str>>,
    by_set: HashMap<String, HashSet<CachedName>>,
    set_of: HashMap<CachedName, String>,
}

impl Objects {
    fn remove(&mut self, name: &CachedName) -> Option<Box<str>> {
        if let Some(set) = self.set_of.remove(name)
            && let Some(names) = self.by_set.get_mut(&set)
        {
            names.remove(name);
            if names.is_empty() {
                self.by_set.remove(&set);
            }
        }
        self.texts.remove(name)
    }

    fn insert(&mut self, object: &DynamicObject) {
        let name = cached_name(object);
        self.remove(&name);
        let Ok(text) = serde_json::to_string(object) else {
            return;
        };
        if let Some(set) = part_of(object) {
            self.by_set
                .entry(set.to_owned())
                .or_default()
                .insert(name.clone());
            self.set_of.insert(name.clone(), set.to_owned());
        }
        self.texts.insert(name, text.into_boxed_str());
    }
}

fn cached_name(object: &DynamicObject) -> CachedName {
    (
        object.metadata.namespace.clone(),
        object.metadata.name.clone().unwrap_or_default(),
    )
}

fn part_of(object: &DynamicObject) -> Option<&str> {
    object
        .metadata
        .labels
        .as_ref()?
        .get(APPLYSET_PART_OF_LABEL)
        .map(String::as_str)
}

fn parse(text: &str) -> Option<Json> {
    serde_json::from_str(text).ok()
}

impl ObjectCache {
    fn read(&self) -> std::sync::RwLockReadGuard<'_, Objects> {
        self.inner.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// The object `name` in `namespace`, as JSON.
    pub fn get(&self, namespace: Option<&str>, name: &str) -> Option<Json> {
        let key = (namespace.map(str::to_owned), name.to_owned());
        self.read().texts.get(&key).and_then(|text| parse(text))
    }

    /// Every object (in `namespace` when given), as JSON.
    pub fn list(&self, namespace: Option<&str>) -> Vec<Json> {
        self.read()
            .texts
            .iter()
            .filter(|((object_namespace, _), _)| {
                namespace.is_none() || object_namespace.as_deref() == namespace
            })
            .filter_map(|(_, text)| parse(text))
            .collect()
    }

    /// How many objects it holds.
    pub fn len(&self) -> usize {
        self.read().texts.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The objects labelled part of ApplySet `set`, as JSON, by namespace and name.
    pub(crate) fn members(&self, set: &str) -> Vec<Json> {
        let objects = self.read();
        let mut names: Vec<&CachedName> = objects
            .by_set
            .get(set)
            .map(|names| names.iter().collect())
            .unwrap_or_default();
        names.sort();
        names
            .into_iter()
            .filter_map(|name| objects.texts.get(name))
            .filter_map(|text| parse(text))
            .collect()
    }

    /// Waits until the first list has filled it (at once when it has; forever when its watch
    /// was stopped before).
    pub async fn wait_until_ready(&self) {
        let mut ready = self.ready.clone();
        let _ = ready.wait_for(|ready| *ready).await;
    }
}

/// Fills an [`ObjectCache`] from a watch's events, as kube-runtime's reflector writer does: a
/// (re-)list shows in the cache only once it is complete.
pub(crate) struct CacheWriter {
    cache: ObjectCache,
    ready: tokio::sync::watch::Sender<bool>,
    listing: Option<Objects>,
}

impl CacheWriter {
    /// An empty cache, not ready until a list completes.
    pub(crate) fn new() -> CacheWriter {
        let (ready, receiver) = tokio::sync::watch::channel(false);
        CacheWriter {
            cache: ObjectCache {
                inner: Arc::default(),
                ready: receiver,
            },
            ready,
            listing: None,
        }
    }

    /// The cache it fills.
    pub(crate) fn cache(&self) -> ObjectCache {
        self.cache.clone()
    }

    /// Applies one event of the watch, returning the names of the objects whose state in the
    /// cache changed with it (every object before and after a list, when a list completes),
    /// each with its instance labels as they were, for routing.
    pub(crate) fn apply(&mut self, event: &Event<DynamicObject>) -> Vec<Changed> {
        let mut objects = self
            .cache
            .inner
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        match event {
            Event::Apply(object) => {
                objects.insert(object);
                vec![Changed::of(object)]
            }
            Event::Delete(object) => {
                objects.remove(&cached_name(object));
                vec![Changed::of(object)]
            }
            Event::Init => {
                self.listing = Some(Objects::default());
                Vec::new()
            }
            Event::InitApply(object) => {
                self.listing
                    .get_or_insert_with(Objects::default)
                    .insert(object);
                Vec::new()
            }
            Event::InitDone => {
                let listed = self.listing.take().unwrap_or_default();
                let before = std::mem::replace(&mut *objects, listed);
                drop(objects);
                self.ready.send_replace(true);
                let objects = self.cache.read();
                before
                    .texts
                    .values()
                    .chain(objects.texts.values())
                    .filter_map(|text| serde_json::from_str::<DynamicObject>(text).ok())
                    .map(|object| Changed::of(&object))
                    .collect()
            }
        }
    }
}

/// What routing needs of a changed object: its labels.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Changed {
    pub(crate) labels: std::collections::BTreeMap<String, String>,
}

impl Changed {
    fn of(object: &DynamicObject) -> Changed {
        Changed {
            labels: object.metadata.labels.clone().unwrap_or_default(),
        }
    }
}

/// Whether a cache has completed its first list (its writer gone counts as not synced).
pub(crate) fn is_synced(store: &Store<DynamicObject>) -> bool {
    matches!(store.wait_until_ready().now_or_never(), Some(Ok(())))
}

#[cfg(test)]
mod tests {
    use kube::api::ApiResource;

    use super::*;

    fn config_map(name: &str, set: Option<&str>) -> DynamicObject {
        let resource = ApiResource::erase::<k8s_openapi::api::core::v1::ConfigMap>(&());
        let mut object = DynamicObject::new(name, &resource).within("default");
        object.data = serde_json::json!({"data": {"key": name}});
        if let Some(set) = set {
            object.metadata.labels = Some(
                [(APPLYSET_PART_OF_LABEL.to_owned(), set.to_owned())]
                    .into_iter()
                    .collect(),
            );
        }
        object
    }

    fn names(objects: &[Json]) -> Vec<&str> {
        objects
            .iter()
            .map(|object| object["metadata"]["name"].as_str().unwrap_or_default())
            .collect()
    }

    #[tokio::test]
    async fn a_list_shows_when_complete_and_the_applyset_index_follows() {
        let mut writer = CacheWriter::new();
        let cache = writer.cache();
        assert!(
            futures_util::FutureExt::now_or_never(cache.wait_until_ready()).is_none(),
            "not ready before a list"
        );
        writer.apply(&Event::Init);
        writer.apply(&Event::InitApply(config_map("b", Some("one"))));
        writer.apply(&Event::InitApply(config_map("a", Some("one"))));
        assert!(cache.is_empty(), "a list in progress does not show");
        let changed = writer.apply(&Event::InitDone);
        assert_eq!(changed.len(), 2, "what the list brought");
        cache.wait_until_ready().await;
        assert_eq!(names(&cache.members("one")), ["a", "b"]);
        assert_eq!(
            cache.get(Some("default"), "a").unwrap()["data"]["key"],
            "a",
            "read back as JSON"
        );
        assert!(cache.get(None, "a").is_none(), "another scope");

        writer.apply(&Event::Apply(config_map("c", Some("two"))));
        writer.apply(&Event::Apply(config_map("a", Some("two"))));
        assert_eq!(names(&cache.members("one")), ["b"], "moved to another set");
        assert_eq!(names(&cache.members("two")), ["a", "c"]);
        writer.apply(&Event::Delete(config_map("c", Some("two"))));
        assert_eq!(names(&cache.members("two")), ["a"]);
        assert_eq!(cache.list(Some("default")).len(), 2);
        assert!(cache.list(Some("other")).is_empty());

        // A re-list replaces everything at once, and reports what was there before too.
        writer.apply(&Event::Init);
        writer.apply(&Event::InitApply(config_map("d", None)));
        assert_eq!(cache.len(), 2, "the old state until the list completes");
        let changed = writer.apply(&Event::InitDone);
        assert_eq!(changed.len(), 3, "a and b gone, d new");
        assert_eq!(names(&cache.list(None)), ["d"]);
        assert!(cache.members("two").is_empty());
    }
}
