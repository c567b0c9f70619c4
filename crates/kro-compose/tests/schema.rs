//! `#[derive(KroSchema)]` against hand-written SimpleSchema: examples/webapp's spec, custom
//! types, enums, optional fields, the scale markers; and what kro-schema's compiler makes of
//! the emitted schema.

// The structs and enums exist for their schemas and references; no value of them is built.
#![allow(dead_code)]

use std::collections::BTreeMap;

use kro_compose::{KroSchema, simple_schema, spec, status};
use serde_json::{Value, json};

#[derive(KroSchema)]
struct Ingress {
    #[kro(default = false)]
    enabled: bool,
    #[kro(default = "webapp.local")]
    host: String,
}

/// examples/webapp's spec, in Rust.
#[derive(KroSchema)]
struct WebAppSpec {
    #[kro(default = "nginx:1.27")]
    image: String,
    #[kro(default = 2, minimum = 1, maximum = 20)]
    replicas: i64,
    #[kro(default = 80)]
    port: i64,
    ingress: Ingress,
}

fn webapp_rgd() -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/webapp/rgd.yaml"
    );
    let text = std::fs::read_to_string(path).expect("examples/webapp/rgd.yaml");
    serde_saphyr::from_str(&text).expect("YAML")
}

#[test]
fn the_webapp_spec_in_rust_is_the_example_s_spec() {
    let schema = simple_schema::<WebAppSpec>();
    assert_eq!(schema.spec, webapp_rgd()["spec"]["schema"]["spec"]);
    assert_eq!(schema.types, json!({}));
}

#[derive(KroSchema)]
enum Tier {
    Dev,
    #[kro(rename = "production")]
    Prod,
}

#[derive(KroSchema)]
struct Port {
    name: String,
    #[kro(minimum = 1, maximum = 65535)]
    number: i32,
}

#[derive(KroSchema)]
struct ServiceSpec {
    #[kro(description = "the team that owns it", pattern = "^[a-z]+$")]
    team_name: String,
    tier: Tier,
    ports: Vec<Port>,
    by_zone: BTreeMap<String, Port>,
    labels: Option<BTreeMap<String, String>>,
    weights: Vec<f64>,
    #[kro(rename = "override", default = -1)]
    override_value: Option<i32>,
    #[kro(scale, default = 1)]
    replicas: i64,
}

#[test]
fn fields_markers_custom_types_and_enums_are_simple_schema() {
    let schema = simple_schema::<ServiceSpec>();
    assert_eq!(
        schema.spec,
        json!({
            "teamName": "string | required=true pattern=\"^[a-z]+$\" description=\"the team that owns it\"",
            "tier": "string | required=true enum=\"Dev,production\"",
            "ports": "[]Port | required=true",
            "byZone": "map[string]Port | required=true",
            "labels": "map[string]string",
            "weights": "[]float | required=true",
            "override": "integer | default=-1",
            "replicas": "integer | default=1 scale",
        })
    );
    assert_eq!(
        schema.types,
        json!({"Port": {
            "name": "string | required=true",
            "number": "integer | required=true minimum=1 maximum=65535",
        }})
    );
}

#[test]
fn the_emitted_schema_compiles_as_kro_compiles_simple_schema() {
    for (spec, types) in [(simple_schema::<WebAppSpec>().spec, json!({})), {
        let schema = simple_schema::<ServiceSpec>();
        (schema.spec, schema.types)
    }] {
        let compiled = kro_schema::compile_spec(&spec, Some(&types));
        assert!(compiled.is_ok(), "{spec}: {compiled:?}");
    }
}

#[derive(KroSchema)]
struct WebAppStatus {
    available_replicas: i64,
    endpoint: Option<String>,
}

#[test]
fn references_are_typed_paths_into_the_instance() {
    let replicas: kro_compose::Ref<i64> = spec::<WebAppSpec>().replicas();
    assert_eq!(replicas.expression(), "schema.spec.replicas");
    assert_eq!(replicas.to_string(), "${schema.spec.replicas}");
    let host: kro_compose::Ref<String> = spec::<WebAppSpec>().ingress().host();
    assert_eq!(host.expression(), "schema.spec.ingress.host");
    assert_eq!(
        spec::<WebAppSpec>().ingress().reference_path(),
        "schema.spec.ingress"
    );
    assert_eq!(
        spec::<ServiceSpec>().override_value().expression(),
        "schema.spec.override",
        "a renamed field is read by its schema name"
    );
    assert_eq!(
        status::<WebAppStatus>().available_replicas().expression(),
        "schema.status.availableReplicas"
    );
}
