//! Compiling SimpleSchema to OpenAPI, as the graph builder does for every RGD it reads: a spec
//! of 200 fields mixing every type and the common markers, nested objects and custom types.
//!
//! `cargo bench -p kro-schema --bench simpleschema`. The baseline in the same group is parsing
//! the spec's JSON text, the work any reader of the RGD does before compiling it.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use kro_schema::compile_spec;
use serde_json::{Map, Value, json};

/// 200 fields: 40 each of plain scalars, marked scalars, lists, maps and nested objects.
fn spec_of_200_fields() -> (Value, Value) {
    let mut spec = Map::new();
    for i in 0..40 {
        spec.insert(format!("name{i}"), json!("string"));
        spec.insert(
            format!("replicas{i}"),
            json!("integer | default=1 minimum=0 maximum=100 description=\"how many\""),
        );
        spec.insert(
            format!("tags{i}"),
            json!("[]string | uniqueItems=true maxItems=16"),
        );
        spec.insert(format!("labels{i}"), json!("map[string]string"));
        spec.insert(
            format!("group{i}"),
            json!({
                "enabled": "boolean | default=false",
                "mode": "string | enum=\"fast,safe\" default=safe",
                "port": "Port",
            }),
        );
    }
    let types = json!({
        "Port": {"number": "integer | required=true minimum=1 maximum=65535", "protocol": "string | default=TCP"}
    });
    (Value::Object(spec), types)
}

fn simpleschema(c: &mut Criterion) {
    let (spec, types) = spec_of_200_fields();
    let text = serde_json::to_string(&spec).unwrap_or_default();
    if let Err(error) = compile_spec(&spec, Some(&types)) {
        panic!("the benchmark spec does not compile: {error}");
    }

    let mut group = c.benchmark_group("simpleschema_200_fields");
    group.bench_function("baseline/parse_json", |b| {
        b.iter(|| serde_json::from_str::<Value>(black_box(&text)))
    });
    group.bench_function("compile", |b| {
        b.iter(|| compile_spec(black_box(&spec), Some(black_box(&types))))
    });
    group.finish();
}

criterion_group!(benches, simpleschema);
criterion_main!(benches);
