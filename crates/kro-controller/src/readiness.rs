//! Whether this replica is ready, as `/readyz` reports it.
//!
//! A replica is ready when it can do its work: its controllers run and their watch caches have
//! synced (the ResourceGraphDefinition watch, and the instance watch of every kind served), or,
//! with leader election, it stands by healthy to take the lease over. A standby is ready, as in
//! controller-runtime: readiness says whether the process is fit to serve, leadership is a
//! metric (`kro_leader`), and a standby that is never ready would stall every rolling update.
//! A replica is not ready while it starts (before it stands by or its controllers run), while
//! a watch has not completed its first list, and from the moment it begins to shut down. A
//! cache that synced once stays synced while its watch retries: a lost connection is not a
//! reason to take the replica out of service.

use std::sync::{Arc, PoisonError, RwLock};

use kube::api::DynamicObject;
use kube::runtime::reflector::Store;

use crate::cache::is_synced;
use crate::watches::Router;

/// Why a replica is not ready.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NotReady {
    /// Neither standing by nor running the controllers yet.
    #[error("the controllers are starting")]
    Starting,
    /// Watches that have not completed their first list: `ResourceGraphDefinition`, or the
    /// instance kinds.
    #[error("waiting for the watch caches of {} to sync", .0.join(", "))]
    CachesNotSynced(Vec<String>),
    /// Shutting down.
    #[error("the controllers are stopping")]
    Stopping,
}

impl NotReady {
    /// A stable CamelCase reason (for logs and probes).
    pub fn reason(&self) -> &'static str {
        match self {
            NotReady::Starting => "Starting",
            NotReady::CachesNotSynced(_) => "CachesNotSynced",
            NotReady::Stopping => "Stopping",
        }
    }
}

/// The readiness of this replica; clones share it. Starts as [`NotReady::Starting`].
#[derive(Clone, Default)]
pub struct Readiness {
    phase: Arc<RwLock<Phase>>,
}

#[derive(Default)]
enum Phase {
    #[default]
    Starting,
    StandingBy,
    Running(Caches),
    Stopping,
}

/// The watch caches of running controllers.
pub(crate) struct Caches {
    /// The ResourceGraphDefinitions.
    pub(crate) rgds: Store<DynamicObject>,
    /// The instance controllers (their instance caches).
    pub(crate) router: Arc<Router>,
}

impl std::fmt::Debug for Readiness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Readiness")
            .field("ready", &self.check())
            .finish()
    }
}

impl Readiness {
    /// A replica that is starting.
    pub fn new() -> Self {
        Readiness::default()
    }

    /// This replica waits for the leader election lease: it is ready.
    pub fn standing_by(&self) {
        self.set(Phase::StandingBy);
    }

    /// This replica stops: it is no longer ready (and never again).
    pub fn stopping(&self) {
        self.set(Phase::Stopping);
    }

    /// The controllers run over `caches`: ready once they have synced.
    pub(crate) fn running(&self, caches: Caches) {
        self.set(Phase::Running(caches));
    }

    /// Whether the replica is ready now.
    ///
    /// # Errors
    /// [`NotReady`] with the reason.
    pub fn check(&self) -> Result<(), NotReady> {
        match &*self.phase.read().unwrap_or_else(PoisonError::into_inner) {
            Phase::Starting => Err(NotReady::Starting),
            Phase::StandingBy => Ok(()),
            Phase::Stopping => Err(NotReady::Stopping),
            Phase::Running(caches) => {
                let mut pending = Vec::new();
                if !is_synced(&caches.rgds) {
                    pending.push("ResourceGraphDefinition".to_owned());
                }
                pending.extend(caches.router.unsynced_instance_kinds());
                if pending.is_empty() {
                    Ok(())
                } else {
                    Err(NotReady::CachesNotSynced(pending))
                }
            }
        }
    }

    fn set(&self, phase: Phase) {
        let mut current = self.phase.write().unwrap_or_else(PoisonError::into_inner);
        // Stopping is final: a late report of a controller must not make it ready again.
        if !matches!(*current, Phase::Stopping) {
            *current = phase;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replica_is_ready_standing_by_and_not_while_starting_or_stopping() {
        let readiness = Readiness::new();
        assert_eq!(readiness.check(), Err(NotReady::Starting));
        let shared = readiness.clone();
        shared.standing_by();
        assert_eq!(readiness.check(), Ok(()));
        shared.stopping();
        assert_eq!(readiness.check(), Err(NotReady::Stopping));
        shared.standing_by();
        assert_eq!(
            readiness.check(),
            Err(NotReady::Stopping),
            "stopping is final"
        );
    }

    #[test]
    fn running_controllers_are_ready_once_their_caches_synced() {
        let readiness = Readiness::new();
        let mut writer =
            kube::runtime::reflector::store::Writer::<DynamicObject>::new(crate::rgd_resource());
        readiness.running(Caches {
            rgds: writer.as_reader(),
            router: Arc::default(),
        });
        assert!(matches!(
            readiness.check(),
            Err(NotReady::CachesNotSynced(pending)) if pending == ["ResourceGraphDefinition"]
        ));
        writer.apply_watcher_event(&kube::runtime::watcher::Event::InitDone);
        assert_eq!(readiness.check(), Ok(()));
    }
}
