//! The apply order of each node (upstream's `internal.kro.run/apply-order`), which kro
//! writes on the objects it applies and which orders their deletion.

use std::collections::HashMap;

use kro_graph::{CompiledGraph, NodeId};

/// Upstream's `internal.kro.run/apply-order`: peel the graph from the nodes nothing depends
/// on (layer 0) towards the roots; with `L` layers a node of layer `i` gets `L - i`. Deletion
/// removes the highest order first, so dependents go before what they depend on.
pub fn apply_orders(graph: &CompiledGraph) -> HashMap<NodeId, usize> {
    // Peel the graph from its sinks: a node's layer is the longest path from it down to a
    // node nothing depends on. Kahn's algorithm over the reversed edges gives every node its
    // final layer once all its dependents are done, in time linear in nodes and edges.
    let mut dependents: HashMap<&str, usize> = graph
        .nodes
        .iter()
        .map(|node| (node.id.as_str(), 0))
        .collect();
    for node in &graph.nodes {
        for dependency in &node.dependencies {
            if let Some(count) = dependents.get_mut(dependency.as_str()) {
                *count += 1;
            }
        }
    }
    let mut layers: HashMap<&str, usize> = HashMap::with_capacity(graph.nodes.len());
    let mut ready: Vec<&str> = graph
        .nodes
        .iter()
        .map(|node| node.id.as_str())
        .filter(|id| dependents.get(id).copied() == Some(0))
        .collect();
    for id in &ready {
        layers.insert(id, 0);
    }
    while let Some(id) = ready.pop() {
        let layer = layers.get(id).copied().unwrap_or(0);
        let Some(node) = graph.node(id) else {
            continue;
        };
        for dependency in &node.dependencies {
            let dependency = dependency.as_str();
            let Some(count) = dependents.get_mut(dependency) else {
                continue;
            };
            let deeper = layers.entry(dependency).or_insert(0);
            *deeper = (*deeper).max(layer + 1);
            *count = count.saturating_sub(1);
            if *count == 0 {
                ready.push(dependency);
            }
        }
    }
    // Nodes on a cycle (which the builder rules out) never become ready and get no order.
    let total = layers
        .values()
        .copied()
        .max()
        .map_or(0, |deepest| deepest + 1);
    layers
        .into_iter()
        .map(|(id, layer)| (NodeId::from(id), total - layer))
        .collect()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use kro_graph::{BuiltinCatalog, ResourceGraphDefinition, build_graph};
    use serde_json::{Value as Json, json};

    use super::*;

    /// A graph of ConfigMaps `n0..n{len}`, node `i` depending on the nodes `edges[i]` names.
    fn graph(edges: &[Vec<usize>]) -> CompiledGraph {
        let resources: Vec<Json> = edges
            .iter()
            .enumerate()
            .map(|(index, dependencies)| {
                let data: serde_json::Map<String, Json> = dependencies
                    .iter()
                    .map(|dependency| {
                        (
                            format!("d{dependency}"),
                            json!(format!("${{n{dependency}.metadata.name}}")),
                        )
                    })
                    .collect();
                json!({"id": format!("n{index}"), "template": {
                    "apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": format!("n{index}")}, "data": data}})
            })
            .collect();
        let rgd = json!({
            "apiVersion": "kro.run/v1alpha1", "kind": "ResourceGraphDefinition",
            "metadata": {"name": "orders"},
            "spec": {"schema": {"apiVersion": "v1alpha1", "kind": "Orders", "spec": {}},
                     "resources": resources}
        });
        let rgd = ResourceGraphDefinition::from_json(&rgd).expect("the RGD decodes");
        build_graph(&rgd, &BuiltinCatalog).expect("the graph builds")
    }

    /// The definition, computed the slow way: peel the nodes nothing remaining depends on.
    fn reference(graph: &CompiledGraph) -> HashMap<NodeId, usize> {
        let mut remaining: BTreeSet<&str> = graph.nodes.iter().map(|n| n.id.as_str()).collect();
        let mut layers: Vec<Vec<&str>> = Vec::new();
        while !remaining.is_empty() {
            let layer: Vec<&str> = remaining
                .iter()
                .copied()
                .filter(|id| {
                    !graph.nodes.iter().any(|node| {
                        remaining.contains(node.id.as_str())
                            && node.dependencies.iter().any(|d| d.as_str() == *id)
                    })
                })
                .collect();
            for id in &layer {
                remaining.remove(id);
            }
            layers.push(layer);
        }
        let total = layers.len();
        layers
            .into_iter()
            .enumerate()
            .flat_map(|(index, layer)| {
                layer
                    .into_iter()
                    .map(move |id| (NodeId::from(id), total - index))
            })
            .collect()
    }

    #[test]
    fn what_is_depended_on_is_applied_first_and_deleted_last() {
        // n2 -> n1 -> n0 and n3 -> n0 (n2 depends on n1, ...): nothing depends on n2 and n3,
        // so they are deleted first (the highest order); n0 goes last.
        let orders = apply_orders(&graph(&[vec![], vec![0], vec![1], vec![0]]));
        let order = |id: &str| orders.get(id).copied();
        assert_eq!(
            (order("n0"), order("n1"), order("n2"), order("n3")),
            (Some(1), Some(2), Some(3), Some(3))
        );
    }

    #[test]
    fn orders_match_the_definition_on_random_graphs() {
        let mut state = 0x5EED_u64;
        let mut next = move |bound: usize| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1);
            usize::try_from(state >> 33).unwrap_or(0) % bound.max(1)
        };
        for _ in 0..20 {
            let len = 1 + next(25);
            let edges: Vec<Vec<usize>> = (0..len)
                .map(|index| {
                    let mut dependencies: Vec<usize> = (0..next(4))
                        .map(|_| next(index))
                        .filter(|_| index > 0)
                        .collect();
                    dependencies.sort_unstable();
                    dependencies.dedup();
                    dependencies
                })
                .collect();
            let graph = graph(&edges);
            assert_eq!(apply_orders(&graph), reference(&graph), "{edges:?}");
        }
    }
}
