//! Scenario tests: each file under `tests/scenarios/` is an RGD, an instance, what is observed,
//! and what the plan must say. The RGD is built with the built-in catalog, the instance is
//! planned (optionally to a fixed point, as `kro render --assume-applied`), and the plan is
//! compared with `expect`:
//!
//! - `nodes`: every node's state, as text (`Ready`, `Skipped: ...`, `Waiting: ...`,
//!   `Failed: ...`); exact.
//! - `desired`: the identities of each node's desired objects, in order; exact.
//! - `objects`: desired objects by identity; each expected value must be contained in the
//!   object (maps compared by the expected keys, lists element by element, scalars exactly).
//! - `values`: data node values; exact.
//! - `status`: contained in the status kro would write.
//! - `pendingStatus`: the status fields left out because they wait for data; exact.
//! - `absentStatus`: top-level status fields that must not be there.
//! - `reads`: the reads the plan asks for (`options.complete: false` starts from an empty,
//!   incomplete observation instead of a complete snapshot); exact, in debug form.

use std::path::{Path, PathBuf};

use kro_graph::{
    BuildConfig, BuiltinCatalog, FeatureGates, ResourceGraphDefinition, SchemaSources,
    build_graph_with, parse_yaml_documents,
};
use kro_runtime::{NodeState, Observed, Plan, PlanOptions, Scheduling, converge, plan};
use serde_json::{Map, Value as Json};

fn scenario_files() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scenarios");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|error| panic!("{}: {error}", dir.display()))
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "yaml"))
        .collect();
    files.sort();
    files
}

fn state_text(state: &NodeState) -> String {
    match state {
        NodeState::Ready => "Ready".to_owned(),
        NodeState::Waiting(wait) => format!("Waiting: {wait}"),
        NodeState::Skipped(skip) => format!("Skipped: {skip}"),
        NodeState::Failed(error) => format!("Failed: {error}"),
    }
}

/// Whether `expected` is contained in `actual`: maps by the expected keys, lists element by
/// element (same length), scalars equal.
fn contains(actual: &Json, expected: &Json, path: &str, problems: &mut Vec<String>) {
    match (actual, expected) {
        (Json::Object(actual), Json::Object(expected)) => {
            for (key, value) in expected {
                match actual.get(key) {
                    Some(found) => contains(found, value, &format!("{path}.{key}"), problems),
                    None => problems.push(format!("{path}.{key}: missing, expected {value}")),
                }
            }
        }
        (Json::Array(actual), Json::Array(expected)) if actual.len() == expected.len() => {
            for (index, (actual, expected)) in actual.iter().zip(expected).enumerate() {
                contains(actual, expected, &format!("{path}[{index}]"), problems);
            }
        }
        _ if actual == expected => {}
        _ => problems.push(format!("{path}: expected {expected}, found {actual}")),
    }
}

fn run(file: &Path) -> Result<(), String> {
    let text = std::fs::read_to_string(file).map_err(|error| error.to_string())?;
    let documents = parse_yaml_documents(&text).map_err(|error| error.to_string())?;
    let scenario = documents
        .first()
        .map(|document| document.value.clone())
        .ok_or("empty file")?;
    let rgd: ResourceGraphDefinition =
        serde_json::from_value(scenario["rgd"].clone()).map_err(|error| format!("rgd: {error}"))?;
    let options_json = &scenario["options"];
    // `featureGates: "CELOmitFunction=true"` builds as a controller with that flag would.
    let features = FeatureGates::parse(options_json["featureGates"].as_str().unwrap_or(""))
        .map_err(|error| format!("options.featureGates: {error}"))?;
    let config = BuildConfig {
        features,
        ..BuildConfig::default()
    };
    let graph = build_graph_with(&rgd, &SchemaSources::new().with(BuiltinCatalog), &config)
        .map_err(|errors| format!("the RGD does not build:\n{errors}"))?;
    // `complete: false` plays a controller that has read nothing but what is listed.
    let mut observed = if options_json["complete"].as_bool() == Some(false) {
        Observed::new()
    } else {
        Observed::complete()
    };
    for object in scenario["observed"].as_array().into_iter().flatten() {
        observed.insert(object.clone());
    }
    let options = PlanOptions {
        scheduling: match options_json["mode"].as_str() {
            Some("wavefront") => Scheduling::Wavefront,
            _ => Scheduling::Levels,
        },
        max_collection_size: options_json["maxCollectionSize"]
            .as_u64()
            .map_or(kro_runtime::DEFAULT_MAX_COLLECTION_SIZE, |size| {
                size as usize
            }),
        kro_version: "v0.0.0-test".to_owned(),
        now: Some("2026-01-01T00:00:00Z".to_owned()),
        ..PlanOptions::default()
    };
    let instance = &scenario["instance"];
    absent_plans_as_unknown(&graph, instance, &scenario["observed"], &options)?;
    let planned: Plan = if options_json["assumeApplied"].as_bool() == Some(true) {
        converge(&graph, instance, observed, &options, 50).plan
    } else {
        plan(&graph, instance, &observed, &options)
    };
    check(&planned, &scenario["expect"])
}

/// A desired object known to be absent plans exactly as one not looked up yet: the controller
/// relies on it to not plan again after learning only that an instance's objects do not exist
/// yet. Checked from what the scenario observes, as a controller that read nothing else.
fn absent_plans_as_unknown(
    graph: &kro_graph::CompiledGraph,
    instance: &Json,
    objects: &Json,
    options: &PlanOptions,
) -> Result<(), String> {
    let mut unknown = Observed::new();
    for object in objects.as_array().into_iter().flatten() {
        unknown.insert(object.clone());
    }
    let before = plan(graph, instance, &unknown, options);
    let mut absent = unknown.clone();
    for desired in before.nodes.iter().flat_map(|node| &node.desired) {
        if absent.get(&desired.key).is_none() {
            absent.insert_absent(desired.key.clone());
        }
    }
    let after = plan(graph, instance, &absent, options);
    if after == before {
        Ok(())
    } else {
        Err(format!(
            "the plan changed once its missing desired objects were known absent:\nbefore: {before:#?}\nafter: {after:#?}"
        ))
    }
}

fn check(planned: &Plan, expect: &Json) -> Result<(), String> {
    if std::env::var_os("KRO_SCENARIO_SHOW").is_some() {
        for node in &planned.nodes {
            eprintln!("  {}: {}", node.id, state_text(&node.state));
            for object in &node.desired {
                eprintln!("    {} {}", object.key, object.object);
            }
            if let Some(value) = &node.value {
                eprintln!("    value {value}");
            }
        }
        eprintln!("  status {}", planned.status.to_json());
    }
    let mut problems = Vec::new();
    if let Some(nodes) = expect["nodes"].as_object() {
        let actual: Map<String, Json> = planned
            .nodes
            .iter()
            .map(|node| (node.id.to_string(), Json::String(state_text(&node.state))))
            .collect();
        if &actual != nodes {
            problems.push(format!(
                "nodes:\n  expected {}\n  found    {}",
                Json::Object(nodes.clone()),
                Json::Object(actual)
            ));
        }
    }
    if let Some(desired) = expect["desired"].as_object() {
        for (id, expected) in desired {
            let actual: Vec<Json> = planned
                .node(id)
                .map(|node| {
                    node.desired
                        .iter()
                        .map(|object| Json::String(object.key.to_string()))
                        .collect()
                })
                .unwrap_or_default();
            if Json::Array(actual.clone()) != *expected {
                problems.push(format!(
                    "desired {id}: expected {expected}, found {actual:?}"
                ));
            }
        }
    }
    if let Some(objects) = expect["objects"].as_object() {
        for (key, expected) in objects {
            let found = planned
                .nodes
                .iter()
                .flat_map(|node| &node.desired)
                .find(|object| object.key.to_string() == *key);
            match found {
                Some(object) => contains(&object.object, expected, key, &mut problems),
                None => problems.push(format!("object {key}: not desired")),
            }
        }
    }
    if let Some(values) = expect["values"].as_object() {
        for (id, expected) in values {
            let actual = planned.node(id).and_then(|node| node.value.clone());
            if actual.as_ref() != Some(expected) {
                problems.push(format!("value {id}: expected {expected}, found {actual:?}"));
            }
        }
    }
    if !expect["status"].is_null() {
        contains(
            &planned.status.to_json(),
            &expect["status"],
            "status",
            &mut problems,
        );
    }
    if let Some(absent) = expect.get("absentStatus").and_then(Json::as_array) {
        let status = planned.status.to_json();
        for key in absent.iter().filter_map(Json::as_str) {
            if let Some(found) = status.get(key) {
                problems.push(format!("status.{key}: expected absent, found {found}"));
            }
        }
    }
    if let Some(expected) = expect.get("reads") {
        let actual: Vec<Json> = planned
            .reads
            .iter()
            .map(|read| Json::String(format!("{read:?}")))
            .collect();
        if Json::Array(actual.clone()) != *expected {
            problems.push(format!("reads: expected {expected}, found {actual:?}"));
        }
    }
    if let Some(expected) = expect.get("pendingStatus") {
        let actual: Vec<Json> = planned
            .status
            .pending
            .iter()
            .map(|field| Json::String(field.path.to_string()))
            .collect();
        if Json::Array(actual.clone()) != *expected {
            problems.push(format!(
                "pendingStatus: expected {expected}, found {actual:?}"
            ));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n"))
    }
}

#[test]
fn every_scenario_plans_as_expected() {
    let filter = std::env::var("KRO_SCENARIO_FILTER").unwrap_or_default();
    let files: Vec<PathBuf> = scenario_files()
        .into_iter()
        .filter(|file| file.to_string_lossy().contains(&filter))
        .collect();
    let minimum = if std::env::var_os("KRO_SCENARIO_FILTER").is_some() {
        1
    } else {
        10
    };
    assert!(
        files.len() >= minimum,
        "only {} scenarios found",
        files.len()
    );
    let failures: Vec<String> = files
        .iter()
        .filter_map(|file| {
            run(file)
                .err()
                .map(|problem| format!("{}:\n{problem}", file.display()))
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} scenarios failed:\n\n{}",
        failures.len(),
        files.len(),
        failures.join("\n\n")
    );
}
