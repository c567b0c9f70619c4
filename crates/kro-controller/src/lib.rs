//! The kro controllers, on kube-rs.
//!
//! **Owns:** the ResourceGraphDefinition controller (compilation, CRD lifecycle, conditions);
//! one dynamic controller per generated kind that reconciles instances (each reconcile a drive
//! of `kro-engine`'s convergence loop from the watch caches), pruning and ordered deletion;
//! shared watches and caches; metrics, events, readiness and leader
//! election; the `<Kind>Set` controller of RGDs with `spec.scaling` (`set`), whose decisions
//! are pure functions ([`set_plan`]).
//!
//! **Must not:** talk to an API server except through kube-rs, or evaluate CEL on its own: every
//! decision about desired state comes from the runtime's plan.
//!
//! **Modules:**
//! - `manager`: the controllers of one process, started and stopped together ([`Manager`]);
//!   `settings`: what they share ([`Settings`]).
//! - `rgd`: the RGD controller, its reconcile in stages (compile, CRD, instance controller)
//!   and one status write (`rgd/deletion`: an RGD being deleted); [`crd_plan`], `rgd_crd`
//!   and [`rgd_status`](mod@rgd_status): the CRD it writes, installing the RGD CRD or bringing it to this controller's schema
//!   (`kro_graph` defines it), and the status it reports; `established`: waiting until a
//!   CRD is served; `graph_revisions`: releasing upstream kro's GraphRevisions as they are
//!   deleted, on clusters that ran upstream kro.
//! - `instance`: the controller of one generated kind (the reconcile: the engine's loop
//!   driven by `instance/drive`, then prune and the status write), with `instance/parent`
//!   (the instance's finalizer, labels and ApplySet inventory), `instance/observe` (what the
//!   caches hold for a plan) and `instance/cleanup` (pruning and ordered deletion).
//! - The apply engine ([`Applier`]), discovery ([`kinds`]) and direct deploy ([`direct`])
//!   live in `kro-engine`, re-exported here.
//! - [`watches`], [`queue`], [`schemas`]: shared watches and caches, the work queue, and the
//!   schemas read from the API server.
//! - `set`: the `<Kind>Set` controller (one per RGD with `spec.scaling`; `set/instances`: the
//!   requests it makes of its instances);
//!   [`set_plan`]: what a `<Kind>Set` does next (create, delete, update oldest first),
//!   as pure functions.
//! - [`events`], [`metrics`], [`leader`], `readiness`: Kubernetes Events, Prometheus metrics,
//!   leader election, and what `/readyz` reports.
//! - `worker`: the one reconcile worker of every controller (queue, timeout, span, metrics,
//!   backoff) and the tasks a controller owns; `retry`: idempotent requests answered 500 or
//!   502 sent again;
//!   `error`: why reconciles fail; `object_json`: JSON views of objects.

mod access;
pub mod cache;
pub mod client_rate;
pub mod clock;
pub mod crd_plan;
mod error;
mod established;
pub mod events;
mod graph_revisions;
mod instance;
pub mod leader;
mod manager;
pub mod metrics;
mod object;
mod object_json;
mod own_writes;
pub mod queue;
mod readiness;
mod retry;
mod rgd;
mod rgd_crd;
pub mod rgd_status;
pub mod schemas;
mod set;
pub mod set_plan;
mod settings;
mod shared;
pub mod watches;
mod worker;

pub use clock::{Clock, ManualClock, TimeSource};
pub use crd_plan::{
    CrdPlan, CrdRefusal, RgdIdentity, allows_breaking_changes, desired_crd, plan_crd,
};
pub use established::EstablishError;
pub use kro_engine::{
    AppliedObject, Applier, ApplyConfig, ApplyError, ApplyOutcome, direct, kinds,
};
pub use leader::{LeaderElector, Leadership, LeaseConfig, LeaseConfigError};
pub use manager::Manager;
pub use metrics::Metrics;
pub use readiness::{NotReady, Readiness};
pub use rgd::{rgd_resource, used_kinds};
pub use rgd_crd::StartError;
pub use rgd_crd::install_kro_crds;
pub use rgd_status::{ConditionValue, RgdObservation, Truth, rgd_status};
pub use schemas::{SchemaCache, SchemaReadError, read_schemas, read_schemas_with};
pub use settings::Settings;
