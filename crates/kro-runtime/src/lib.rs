//! Per-instance evaluation of a compiled kro graph, as one pure function.
//!
//! **Owns:** compiled graph + instance + observed objects → plan: the desired objects of each
//! level, data-node values, `forEach` expansion, `includeWhen`, readiness, instance status and
//! conditions, and the deletion order. The controller, `kro render` and the SDK's direct deploy
//! all use this one evaluator, so no mode has semantics of its own.
//!
//! **Must not:** do I/O, read clocks or the environment, spawn tasks, or touch global state.
