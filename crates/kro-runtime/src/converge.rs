//! Planning to a fixed point, as if every planned object were applied: what `kro render
//! --assume-applied` shows, and what a controller reaches when every apply succeeds and
//! nothing else writes status.

use kro_graph::CompiledGraph;
use serde_json::Value as Json;

use crate::observed::Observed;
use crate::plan::{Plan, PlanOptions, plan};

/// The plan reached, the objects observed on the way, and how many rounds it took.
#[derive(Debug, Clone)]
pub struct Convergence {
    /// The last plan: nothing more would be applied.
    pub plan: Plan,
    /// `observed` plus every object "applied" on the way.
    pub observed: Observed,
    /// Plans computed (at least 1).
    pub rounds: usize,
}

/// Plans, treats every desired object as applied (keeping the `status` an already observed
/// object has, since apply does not write status), and plans again until no desired object
/// changes or `max_rounds` plans were made. Objects whose readiness depends on status a real
/// controller would write stay waiting, as they should.
pub fn converge(
    graph: &CompiledGraph,
    instance: &Json,
    mut observed: Observed,
    options: &PlanOptions,
    max_rounds: usize,
) -> Convergence {
    let mut rounds = 0;
    loop {
        let current = plan(graph, instance, &observed, options);
        rounds += 1;
        let mut changed = false;
        for desired in current.nodes.iter().flat_map(|node| &node.desired) {
            let mut applied = desired.object.clone();
            if let Some(existing) = observed.get(&desired.key) {
                if let (Some(status), Json::Object(object)) = (existing.get("status"), &mut applied)
                {
                    object.insert("status".to_owned(), status.clone());
                }
                if *existing == applied {
                    continue;
                }
            }
            changed |= observed.insert(applied);
        }
        if !changed || rounds >= max_rounds.max(1) {
            return Convergence {
                plan: current,
                observed,
                rounds,
            };
        }
    }
}
