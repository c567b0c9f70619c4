//! kro's convergence engine: what turns a runtime plan into objects on an API server.
//!
//! **Owns:** the apply engine ([`Applier`]: level-by-level concurrent server-side apply that
//! skips unchanged objects), discovery of served kinds ([`kinds`]), and direct deploy
//! ([`direct`]: one instance's graph planned, applied, waited for, pruned and deleted with no
//! controller, as `kro apply` and `kro delete` run it).
//!
//! **Must not:** evaluate CEL on its own (every decision about desired state comes from
//! `kro-runtime`'s plan), or depend on the controller's machinery (kube's controller runtime
//! beyond watches, metrics, leader election): the SDK deploys through this crate alone.

mod apply;
pub mod cleanup;
pub mod converge;
pub mod direct;
pub mod error;
pub mod json;
pub mod kinds;
mod list_watch;
pub mod progress;
pub mod stop;

pub use apply::{
    AppliedObject, Applier, ApplyConfig, ApplyError, ApplyOutcome, CACHE_CATCH_UP,
    compact_managed_fields, intent, resource_version,
};
