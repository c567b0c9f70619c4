//! The compose examples (`examples/compose/*.rs`) emit RGDs that kro's compiler accepts (the
//! compiler of `kro validate`), each with the same graph (nodes by level, their dependencies)
//! and the same CRD as an RGD of the same meaning written by hand: examples/webapp,
//! examples/data-node and examples/workers, and the YAML files beside the compose examples.

// Each example is its own program, so the ones that share `examples/compose/shared/` each load
// it; here, together, that is the same file loaded more than once, as intended.
#![allow(clippy::duplicate_mod)]

mod support;

#[allow(dead_code)]
#[path = "../../../examples/compose/data_node.rs"]
mod data_node;
#[allow(dead_code)]
#[path = "../../../examples/compose/full_stack.rs"]
mod full_stack;
#[allow(dead_code)]
#[path = "../../../examples/compose/teams.rs"]
mod teams;
#[allow(dead_code)]
#[path = "../../../examples/compose/web_with_database.rs"]
mod web_with_database;
#[allow(dead_code)]
#[path = "../../../examples/compose/webapp.rs"]
mod webapp;
#[allow(dead_code)]
#[path = "../../../examples/compose/workers.rs"]
mod workers;

use serde_json::Value;
use support::{compile, shape};

/// Holds `emitted` to the same graph and CRD as the hand-written RGD at `path` (from the
/// repository's root).
fn same_graph_and_crd(emitted: Result<Value, kro_compose::ComposeError>, path: &str) {
    let emitted = emitted.unwrap_or_else(|error| panic!("{path}: the composition: {error}"));
    let file = format!("{}/../../{path}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&file).unwrap_or_else(|error| panic!("{file}: {error}"));
    let written: Value =
        serde_saphyr::from_str(&text).unwrap_or_else(|error| panic!("{file}: {error}"));
    let (emitted, written) = (compile(&emitted), compile(&written));
    assert_eq!(
        shape(&emitted),
        shape(&written),
        "{path}: the graphs differ"
    );
    assert_eq!(emitted.crd, written.crd, "{path}: the CRDs differ");
}

#[test]
fn the_examples_written_in_rust_are_the_hand_written_examples() {
    same_graph_and_crd(webapp::composition().to_rgd(), "examples/webapp/rgd.yaml");
    same_graph_and_crd(
        data_node::composition().to_rgd(),
        "examples/data-node/rgd.yaml",
    );
    same_graph_and_crd(workers::composition().to_rgd(), "examples/workers/rgd.yaml");
}

#[test]
fn the_seed_s_web_app_with_its_database() {
    same_graph_and_crd(
        web_with_database::composition().to_rgd(),
        "examples/compose/web-with-database.yaml",
    );
}

#[test]
fn a_nested_composition_joins_the_outer_graph_under_prefixed_ids() {
    let composition = full_stack::composition();
    same_graph_and_crd(composition.to_rgd(), "examples/compose/full-stack.yaml");
    let rgd = composition.to_rgd_yaml().expect("a valid RGD");
    for inner in ["__nested", "schema.spec.name", "postgres.", "service.spec"] {
        assert!(!rgd.contains(inner), "{inner} leaked into the RGD:\n{rgd}");
    }
}

#[test]
fn the_teams_read_the_platform_team_s_database_through_its_typed_status() {
    same_graph_and_crd(
        teams::database::database().to_rgd(),
        "examples/compose/teams-database.yaml",
    );
    same_graph_and_crd(teams::web().to_rgd(), "examples/compose/teams-web.yaml");
    same_graph_and_crd(
        teams::workers().to_rgd(),
        "examples/compose/teams-workers.yaml",
    );
}
