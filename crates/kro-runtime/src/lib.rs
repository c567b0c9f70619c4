//! Per-instance evaluation of a compiled kro graph, as one pure function.
//!
//! **Owns:** compiled graph + instance + observed objects → plan: the desired objects of each
//! level, data-node values, `forEach` expansion, `includeWhen`, readiness, instance status and
//! conditions, the deletion order, which members of an instance's ApplySet may be pruned
//! (`prunable`), and which are released rather than deleted (`Removal`, `release_patch`). The controller, `kro render` and the direct deploy engine (`kro apply`) all
//! use this one evaluator, so no mode has semantics of its own. Also the per-kind readiness rules (`kind_readiness`: a Deployment's replicas
//! available, a Job complete), which `PlanOptions::kind_readiness` applies to resources without
//! readyWhen for the direct deploy engine; the controller never sets it.
//!
//! **Must not:** do I/O, read clocks or the environment, spawn tasks, or touch global state.
//!
//! ```text
//! plan(graph, instance, observed, options) -> Plan
//!   for each level, in order:
//!     skipped dependency        -> Skipped (contagious)
//!     earlier level not ready   -> Waiting(Level)          [Scheduling::Levels]
//!     dependency not ready      -> Waiting(Dependencies)   [Scheduling::Wavefront]
//!     includeWhen false         -> Skipped
//!     render (forEach expanded) -> desired objects / data value
//!     observed + readyWhen      -> Ready or Waiting
//!       (no readyWhen, kind_readiness on: the object's kind decides)
//!   status: fields that resolved, conditions, state
//! ```

mod admission;
mod apply_order;
mod applyset;
mod converge;
mod deletion;
mod evaluate;
mod foreach;
mod kind_readiness;
mod metadata;
mod observe;
mod observed;
mod plan;
mod prune;
mod release;
mod selector;
mod status;

pub use admission::{AdmissionError, Admitted, admit};
pub use apply_order::apply_orders;
pub use applyset::{Inventory, InventoryError, Parent};
pub use converge::{Convergence, converge};
pub use deletion::{DeletionWave, deletion_waves};
pub use kind_readiness::{KindReadiness, kind_readiness};
pub use metadata::{applyset_id, is_label_value};
pub use observe::PlanObserver;
pub use observed::{ListKey, ObjectKey, Observed, Read, group_of};
pub use plan::{
    DEFAULT_MAX_COLLECTION_SIZE, DesiredObject, NodeError, NodePlan, NodeState, Plan, PlanOptions,
    Scheduling, Skip, Wait, plan, plan_with_schema, schema_value,
};
pub use prune::{desired_keys, prunable};
pub use release::{KRO_MANAGER_PREFIX, Removal, release_patch};
pub use selector::{LabelSelector, Operator, Requirement, SelectorError};
pub use status::{
    Condition, ControllerFacts, GRAPH_RESOLVED, INSTANCE_MANAGED, InstanceState, InstanceStatus,
    PendingField, READY, RESOURCES_READY, StepFailure,
};
