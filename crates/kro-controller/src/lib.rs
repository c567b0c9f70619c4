//! The kro controllers, on kube-rs.
//!
//! **Owns:** the ResourceGraphDefinition controller (compilation, CRD lifecycle, conditions);
//! one dynamic controller per generated kind that reconciles instances; the apply engine
//! (level-by-level concurrent server-side apply, pruning, ordered deletion); the `<Kind>Set`
//! controller for horizontal scaling; shared watches and caches; metrics, events and leader
//! election.
//!
//! **Must not:** talk to an API server except through kube-rs, or evaluate CEL on its own: every
//! decision about desired state comes from the runtime's plan.

mod apply;
pub mod crd_plan;
mod error;
pub mod events;
mod instance;
pub mod kinds;
pub mod leader;
mod manager;
pub mod metrics;
mod object_json;
pub mod queue;
mod rgd;
pub mod rgd_crd;
pub mod rgd_status;
pub mod schemas;
mod settings;
pub mod watches;

pub use apply::{APPLY_MANAGER, AppliedObject, Applier, ApplyConfig, ApplyError, ApplyOutcome};
pub use crd_plan::{
    ALLOW_BREAKING_ANNOTATION, CrdPlan, CrdRefusal, RgdIdentity, allows_breaking_changes,
    desired_crd, plan_crd,
};
pub use instance::{LABELLER_MANAGER, PARENT_MANAGER, RECONCILE_ANNOTATION, STATUS_MANAGER};
pub use leader::{LeaderElector, Leadership, LeaseConfig, LeaseConfigError};
pub use manager::{Manager, StartError};
pub use metrics::Metrics;
pub use rgd::{CRD_MANAGER, EstablishError, install_rgd_crd, rgd_resource, used_kinds};
pub use rgd_crd::{RGD_CRD_NAME, resource_graph_definition_crd};
pub use rgd_status::{ConditionValue, RgdObservation, Truth, rgd_status};
pub use schemas::{SchemaReadError, read_schemas};
pub use settings::Settings;
