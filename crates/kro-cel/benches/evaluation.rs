//! kro-cel against the `cel` crate (the most used Rust CEL interpreter) on kro-style
//! expressions, measured in the same run on the same machine.
//!
//! `cargo bench -p kro-cel --bench evaluation` runs criterion for each expression and each
//! implementation, then prints a table of median times and the ratio `cel / kro-cel` per
//! expression, and the median ratio. Both sides evaluate a compiled program against variables
//! prepared once, outside the measured loop; the inputs are the same JSON converted the way
//! each crate expects (JSON integers as `int` for both, so both run the same arithmetic).

use std::cell::RefCell;
use std::collections::HashMap;
use std::hint::black_box;
use std::time::Instant;

use criterion::Criterion;
use kro_cel::{Env, Type, Value};

/// Representative kro expressions: templates, readyWhen, includeWhen, status.
const EXPRESSIONS: &[(&str, &str)] = &[
    ("nested_select", "schema.spec.template.metadata.labels.app"),
    (
        "string_building",
        "schema.metadata.name + '-' + schema.spec.environment + '-svc'",
    ),
    (
        "comparison",
        "schema.spec.replicas > 3 && schema.spec.replicas <= 10",
    ),
    (
        "has_ternary",
        "has(schema.spec.ingress) ? schema.spec.ingress.host : 'default.local'",
    ),
    ("map_100", "items.map(i, i.value * 2)"),
    ("filter_100", "items.filter(i, i.enabled)"),
    ("exists_100", "items.exists(i, i.name == 'item-99')"),
    ("all_100", "items.all(i, i.value >= 0)"),
    ("size_arithmetic", "size(items) * 2 + schema.spec.replicas"),
    (
        "map_filter_chain",
        "items.filter(i, i.enabled).map(i, i.name)",
    ),
];

fn inputs() -> (serde_json::Value, serde_json::Value) {
    let schema = serde_json::json!({
        "metadata": {"name": "web", "namespace": "default", "uid": "1234"},
        "spec": {
            "replicas": 5,
            "environment": "prod",
            "ingress": {"host": "web.example.com", "tls": true},
            "template": {"metadata": {"labels": {"app": "web", "tier": "frontend"}}}
        }
    });
    let items: Vec<serde_json::Value> = (0..100)
        .map(
            |i| serde_json::json!({"name": format!("item-{i}"), "value": i, "enabled": i % 2 == 0}),
        )
        .collect();
    (schema, serde_json::Value::Array(items))
}

fn to_cel_crate(json: &serde_json::Value) -> cel::Value {
    match json {
        serde_json::Value::Null => cel::Value::Null,
        serde_json::Value::Bool(b) => cel::Value::Bool(*b),
        serde_json::Value::Number(n) => match n.as_i64() {
            Some(i) => cel::Value::Int(i),
            None => cel::Value::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        serde_json::Value::String(s) => cel::Value::from(s.as_str()),
        serde_json::Value::Array(items) => {
            cel::Value::from(items.iter().map(to_cel_crate).collect::<Vec<_>>())
        }
        serde_json::Value::Object(fields) => cel::Value::from(
            fields
                .iter()
                .map(|(k, v)| (k.clone(), to_cel_crate(v)))
                .collect::<HashMap<String, cel::Value>>(),
        ),
    }
}

fn cel_crate_to_json(value: &cel::Value) -> serde_json::Value {
    match value {
        cel::Value::Null => serde_json::Value::Null,
        cel::Value::Bool(b) => serde_json::Value::Bool(*b),
        cel::Value::Int(i) => serde_json::Value::from(*i),
        cel::Value::UInt(u) => serde_json::Value::from(*u),
        cel::Value::Float(f) => serde_json::Value::from(*f),
        cel::Value::String(s) => serde_json::Value::String(s.to_string()),
        cel::Value::List(items) => items.iter().map(cel_crate_to_json).collect(),
        cel::Value::Map(map) => map
            .map
            .iter()
            .map(|(key, value)| {
                let key = match key {
                    cel::objects::Key::String(s) => s.to_string(),
                    cel::objects::Key::Int(i) => i.to_string(),
                    cel::objects::Key::Uint(u) => u.to_string(),
                    cel::objects::Key::Bool(b) => b.to_string(),
                };
                (key, cel_crate_to_json(value))
            })
            .collect::<serde_json::Map<_, _>>()
            .into(),
        other => panic!("the benchmark expressions do not produce {other:?}"),
    }
}

/// Runs one criterion benchmark and returns the median time per iteration in nanoseconds
/// over the samples criterion took (`None` when the benchmark was filtered out).
fn measure(c: &mut Criterion, id: &str, mut routine: impl FnMut()) -> Option<f64> {
    let samples = RefCell::new(Vec::new());
    c.bench_function(id, |bencher| {
        bencher.iter_custom(|iterations| {
            let start = Instant::now();
            for _ in 0..iterations {
                routine();
            }
            let elapsed = start.elapsed();
            samples
                .borrow_mut()
                .push(elapsed.as_nanos() as f64 / iterations.max(1) as f64);
            elapsed
        });
    });
    median(samples.into_inner())
}

fn median(mut values: Vec<f64>) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    Some(values[values.len() / 2])
}

fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    let (schema_json, items_json) = inputs();

    let env = Env::kro()
        .with_variable("schema", Type::map(Type::String, Type::Dyn))
        .with_variable("items", Type::list(Type::map(Type::String, Type::Dyn)));
    let activation: HashMap<String, Value> = [
        (
            "schema".to_string(),
            kro_cel::from_json(&schema_json, None, None).expect("schema converts"),
        ),
        (
            "items".to_string(),
            kro_cel::from_json(&items_json, None, None).expect("items convert"),
        ),
    ]
    .into_iter()
    .collect();

    let mut cel_context = cel::Context::default();
    cel_context.add_variable_from_value("schema", to_cel_crate(&schema_json));
    cel_context.add_variable_from_value("items", to_cel_crate(&items_json));

    let mut rows = Vec::new();
    for (name, expression) in EXPRESSIONS {
        let ours = env
            .compile(expression)
            .expect("kro-cel compiles the benchmark expression");
        let theirs =
            cel::Program::compile(expression).expect("cel compiles the benchmark expression");
        // Same answer from both, or the comparison means nothing.
        let our_result = ours.evaluate(&activation).expect("kro-cel evaluates");
        let their_result = theirs.execute(&cel_context).expect("cel evaluates");
        assert_eq!(
            kro_cel::to_json(&our_result).expect("the result has a JSON form"),
            cel_crate_to_json(&their_result),
            "{name}: the two implementations disagree"
        );

        let kro_time = measure(&mut criterion, &format!("evaluate/{name}/kro-cel"), || {
            black_box(ours.evaluate(black_box(&activation)).ok());
        });
        let cel_time = measure(&mut criterion, &format!("evaluate/{name}/cel"), || {
            black_box(theirs.execute(black_box(&cel_context)).ok());
        });
        if let (Some(kro_time), Some(cel_time)) = (kro_time, cel_time) {
            rows.push((*name, kro_time, cel_time));
        }
    }

    let compile_ours = measure(&mut criterion, "compile/parse_and_check/kro-cel", || {
        for (_, expression) in EXPRESSIONS {
            black_box(env.compile(black_box(expression)).ok());
        }
    });
    let compile_theirs = measure(&mut criterion, "compile/parse/cel", || {
        for (_, expression) in EXPRESSIONS {
            black_box(cel::Program::compile(black_box(expression)).ok());
        }
    });
    criterion.final_summary();

    if rows.is_empty() {
        return;
    }
    println!("\nevaluation, median time per call (same run, same machine):");
    println!(
        "{:<20} {:>12} {:>12} {:>10}",
        "expression", "kro-cel", "cel", "cel/kro"
    );
    let mut ratios = Vec::new();
    for (name, ours, theirs) in &rows {
        let ratio = theirs / ours;
        ratios.push(ratio);
        println!(
            "{name:<20} {:>10.0}ns {:>10.0}ns {ratio:>9.2}x",
            ours, theirs
        );
    }
    if let Some(median_ratio) = median(ratios) {
        println!("{:<20} {:>36.2}x", "median", median_ratio);
    }
    if let (Some(ours), Some(theirs)) = (compile_ours, compile_theirs) {
        println!(
            "\ncompile all {} expressions: kro-cel parse+check {:.1}µs, cel parse {:.1}µs",
            EXPRESSIONS.len(),
            ours / 1000.0,
            theirs / 1000.0
        );
    }
}
