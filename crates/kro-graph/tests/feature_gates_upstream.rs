//! `--feature-gates` as upstream kro v0.9.4 reads it (its `pkg/features` on Kubernetes'
//! `component-base/featuregate`, built from the module as `tools/kro-features`): on a corpus of
//! flag values (every bool spelling, unknown and mis-cased names, `AllAlpha`/`AllBeta`,
//! repeats, stray spaces and commas, pairs without `=`), kro-graph's `FeatureGates::parse`
//! accepts exactly what upstream accepts and turns on the same gates.

use std::path::{Path, PathBuf};

use kro_graph::{Feature, FeatureGates};
use serde_json::{Value as Json, json};

const NAMES: &[&str] = &[
    "CELOmitFunction",
    "InstanceConditionEvents",
    "InstanceConditionMetrics",
    "AllAlpha",
    "AllBeta",
    "celOmitFunction",
    "CelOmitFunction",
    "GraphKind",
    "",
    " CELOmitFunction ",
];

const VALUES: &[&str] = &[
    "true",
    "false",
    "1",
    "0",
    "t",
    "f",
    "T",
    "F",
    "TRUE",
    "FALSE",
    "True",
    "False",
    "TrUe",
    "yes",
    "no",
    "on",
    "2",
    "",
    " true ",
    "true=false",
];

/// Every name with every value, then pseudo-random lists of up to four pairs.
fn corpus() -> Vec<String> {
    let mut values: Vec<String> = vec![
        String::new(),
        ",".into(),
        ",,".into(),
        " ".into(),
        "=".into(),
        "CELOmitFunction".into(),
        "CELOmitFunction=true,".into(),
        ",CELOmitFunction=true".into(),
        "CELOmitFunction=true, ,".into(),
    ];
    for name in NAMES {
        for value in VALUES {
            values.push(format!("{name}={value}"));
        }
    }
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = |bound: usize| {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        usize::try_from(state >> 33).unwrap_or(0) % bound
    };
    for _ in 0..3_000 {
        let pairs = 1 + next(4);
        let mut flag = Vec::new();
        for _ in 0..pairs {
            // Mostly well-formed pairs, so that the combinations (AllAlpha with a gate named
            // after it, repeats) are reached past the first refusal.
            let names = if next(4) == 0 { NAMES.len() } else { 5 };
            let name = NAMES[next(names)];
            let values = if next(4) == 0 { VALUES.len() } else { 12 };
            let value = VALUES[next(values)];
            flag.push(match next(10) {
                0 => name.to_string(),
                _ => format!("{name}={value}"),
            });
        }
        values.push(flag.join(","));
    }
    values
}

fn ours(flags: &[String]) -> Vec<Json> {
    flags
        .iter()
        .map(|flag| match FeatureGates::parse(flag) {
            Ok(gates) => {
                let mut answer = serde_json::Map::new();
                for feature in Feature::UPSTREAM {
                    answer.insert(feature.name().to_owned(), json!(gates.enabled(feature)));
                }
                Json::Object(answer)
            }
            Err(_) => json!({"error": true}),
        })
        .collect()
}

fn upstream(tool: &Path, flags: &[String]) -> Vec<Json> {
    let lines: Vec<String> = flags
        .iter()
        .map(|value| Json::String(value.clone()).to_string())
        .collect();
    kro_test_support::answer_lines(tool, &lines)
        .iter()
        .map(|line| serde_json::from_str(line).expect("kro-features prints JSON lines"))
        .collect()
}

/// The built tools/kro-features, or `None` (after saying why) when Go is missing outside CI.
fn tool_or_skip() -> Option<PathBuf> {
    if !kro_test_support::go_or_skip(
        "feature_gates_upstream",
        "comparing with upstream kro needs Go to build tools/kro-features",
    ) {
        return None;
    }
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("kro-features");
    Some(kro_test_support::build_go_tool("kro-features", ".", &out))
}

#[test]
fn feature_gates_are_read_as_upstream_reads_them() {
    let Some(tool) = tool_or_skip() else {
        return;
    };
    let flags = corpus();
    let expected = upstream(&tool, &flags);
    assert_eq!(expected.len(), flags.len(), "one answer per value");
    let refused = expected
        .iter()
        .filter(|answer| answer["error"] == true)
        .count();
    assert!(
        refused > 100 && refused < flags.len() - 100,
        "the corpus has both accepted and refused values ({refused} of {} refused)",
        flags.len()
    );
    let got = ours(&flags);
    let differences: Vec<String> = flags
        .iter()
        .zip(expected.iter().zip(&got))
        .filter(|(_, (expected, got))| expected != got)
        .map(|(flag, (expected, got))| format!("{flag:?}: upstream {expected}, ours {got}"))
        .collect();
    assert!(
        differences.is_empty(),
        "{} of {} values differ from upstream kro v0.9.4:\n{}",
        differences.len(),
        flags.len(),
        differences.join("\n")
    );
}
