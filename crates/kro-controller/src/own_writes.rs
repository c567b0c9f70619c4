//! kro's own writes of the objects it reconciles (instances, RGDs), remembered until their
//! watch shows them.
//!
//! Each write of an instance (its finalizer and labels, its ApplySet metadata, its status) or
//! of an RGD (its finalizer, its status) comes back as a watch event. The reconcile that wrote it went on with the server's answer
//! (or, for the status, ended with it), so a reconcile woken by that event alone would plan
//! what was just planned and write nothing: an event whose resourceVersion is one kro's write
//! was answered with queues no reconcile. Any other change of the instance has a
//! resourceVersion of its own (the server gives every write a new one) and queues one as
//! before; so does every object of a re-list.
//!
//! The other side: a reconcile woken by something else (a child's event) before the cache
//! shows kro's last write of the object would plan with the object as it was before it, and
//! write the finalizer, the inventory or the status again. Such a reconcile stops and waits for the
//! write's event, which then does queue a reconcile.
//!
//! resourceVersions are compared as numbers, as kube-apiserver and the embedded server write
//! them; a write answered with anything else is not remembered.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

/// kro's writes of each object (by UID) that its watch has yet to show.
#[derive(Debug, Default)]
pub(crate) struct OwnWrites(Mutex<HashMap<String, Pending>>);

#[derive(Debug, Default)]
struct Pending {
    /// The resourceVersions the writes were answered with, oldest first.
    versions: Vec<u64>,
    /// A reconcile stopped to wait for them: their event queues one.
    awaited: bool,
}

/// The writes remembered per instance at most: the watch shows them in order and soon.
const REMEMBERED_PER_INSTANCE: usize = 8;

impl OwnWrites {
    /// Remembers that kro's write of object `uid` was answered with `resource_version`.
    pub(crate) fn wrote(&self, uid: &str, resource_version: Option<&str>) {
        let Some(version) = resource_version.and_then(|version| version.parse::<u64>().ok()) else {
            return;
        };
        if uid.is_empty() {
            return;
        }
        let mut writes = self.lock();
        let pending = writes.entry(uid.to_owned()).or_default();
        if pending.versions.len() == REMEMBERED_PER_INSTANCE {
            pending.versions.remove(0);
        }
        pending.versions.push(version);
    }

    /// The watch shows object `uid` at `resource_version`: whether that is only kro's own
    /// write, which queues no reconcile (unless one waits for it).
    pub(crate) fn seen(&self, uid: &str, resource_version: &str) -> bool {
        let Ok(version) = resource_version.parse::<u64>() else {
            return false;
        };
        let mut writes = self.lock();
        let Some(pending) = writes.get_mut(uid) else {
            return false;
        };
        let own = pending.versions.contains(&version);
        // What the watch shows includes every write up to this version.
        pending.versions.retain(|written| *written > version);
        let awaited = pending.awaited;
        if pending.versions.is_empty() {
            writes.remove(uid);
        } else if own {
            pending.awaited = false;
        }
        own && !awaited
    }

    /// Whether the cache's object `uid` (at `cached_version`) is older than kro's last write
    /// of it: then the caller waits, and the write's event queues a reconcile.
    pub(crate) fn behind(&self, uid: &str, cached_version: Option<u64>) -> bool {
        let mut writes = self.lock();
        let Some(pending) = writes.get_mut(uid) else {
            return false;
        };
        if let Some(cached) = cached_version {
            pending.versions.retain(|written| *written > cached);
        }
        if pending.versions.is_empty() {
            writes.remove(uid);
            return false;
        }
        pending.awaited = true;
        true
    }

    /// Forgets the objects `keep` says no (deleted ones).
    pub(crate) fn retain(&self, mut keep: impl FnMut(&str) -> bool) {
        self.lock().retain(|uid, _| keep(uid));
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Pending>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_of_kros_write_is_seen_once() {
        let writes = OwnWrites::default();
        writes.wrote("a", Some("7"));
        assert!(writes.seen("a", "7"));
        assert!(!writes.seen("a", "7"), "seen once");
    }

    #[test]
    fn other_versions_and_other_instances_are_not_kros() {
        let writes = OwnWrites::default();
        writes.wrote("a", Some("7"));
        assert!(!writes.seen("a", "6"), "someone else's write before kro's");
        assert!(!writes.seen("b", "7"), "another instance");
        writes.wrote("a", None);
        writes.wrote("a", Some("opaque"));
        writes.wrote("", Some("9"));
        assert!(!writes.seen("", "9"));
        assert!(writes.seen("a", "7"));
        assert!(!writes.seen("a", "x"), "not a number");
    }

    #[test]
    fn an_event_shows_every_write_before_it() {
        let writes = OwnWrites::default();
        for version in ["3", "4", "5"] {
            writes.wrote("a", Some(version));
        }
        assert!(writes.seen("a", "4"));
        assert!(!writes.seen("a", "3"), "shown by the event of 4");
        assert!(writes.behind("a", Some(4)), "5 is not shown at 4");
        assert!(
            !writes.behind("a", Some(9)),
            "a later version shows every write"
        );
        assert!(!writes.seen("a", "5"), "forgotten once shown");
    }

    #[test]
    fn a_reconcile_that_waits_for_a_write_is_woken_by_its_event() {
        let writes = OwnWrites::default();
        writes.wrote("a", Some("3"));
        writes.wrote("a", Some("4"));
        assert!(writes.behind("a", Some(2)));
        assert!(
            !writes.seen("a", "3"),
            "awaited: the event queues a reconcile"
        );
        assert!(!writes.behind("a", Some(4)));
        assert!(!writes.seen("a", "4"));
        assert!(!writes.behind("a", Some(2)), "nothing is pending any more");
        // A write answered with the version the cache shows already (nothing changed).
        writes.wrote("b", Some("5"));
        assert!(!writes.behind("b", Some(5)));
        assert!(!writes.behind("b", None), "forgotten");
    }

    #[test]
    fn memory_is_bounded_per_instance_and_deleted_instances_are_forgotten() {
        let writes = OwnWrites::default();
        for version in 0..20 {
            writes.wrote("a", Some(&version.to_string()));
        }
        assert_eq!(writes.lock()["a"].versions.len(), REMEMBERED_PER_INSTANCE);
        assert!(writes.seen("a", "19"));
        writes.wrote("b", Some("1"));
        writes.retain(|uid| uid != "b");
        assert!(!writes.seen("b", "1"));
    }
}
