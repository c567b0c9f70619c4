//! What the tests of compositions share: compiling an RGD as kro does, and its shape.

#![allow(dead_code)]

use kro_graph::{BuiltinCatalog, CompiledGraph, ResourceGraphDefinition, build_graph};
use serde_json::Value;

/// The RGD compiled by kro's compiler, as `kro validate` compiles it.
pub fn compile(rgd: &Value) -> CompiledGraph {
    let rgd = ResourceGraphDefinition::from_json(rgd).expect("the RGD decodes");
    build_graph(&rgd, &BuiltinCatalog).expect("the RGD compiles")
}

/// Node ids level by level, each with the ids it depends on.
pub fn shape(graph: &CompiledGraph) -> Vec<Vec<(String, Vec<String>)>> {
    graph
        .levels
        .iter()
        .map(|level| {
            level
                .iter()
                .map(|index| {
                    let node = &graph.nodes[*index];
                    let mut dependencies: Vec<String> =
                        node.dependencies.iter().map(ToString::to_string).collect();
                    dependencies.sort();
                    (node.id.to_string(), dependencies)
                })
                .collect()
        })
        .collect()
}
