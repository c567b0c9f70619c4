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
