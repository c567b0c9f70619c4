//! Typed expressions: the CEL they write, and that kro's CEL parser reads it.

// The structs exist for their references; no value of them is built.
#![allow(dead_code)]

use kro_compose::expr::cond;
use kro_compose::{KroSchema, Ref, spec};

#[derive(KroSchema)]
struct Port {
    name: String,
    number: i64,
}

#[derive(KroSchema)]
struct AppSpec {
    replicas: i64,
    production: bool,
    name: String,
    ratio: f64,
    ports: Vec<Port>,
    zones: Vec<String>,
    owner: Option<String>,
}

/// Asserts `reference` writes `expected`, and that the text parses as CEL.
fn writes<T>(reference: &Ref<T>, expected: &str) {
    assert_eq!(reference.expression(), expected);
    if let Err(error) = kro_cel::parse(expected) {
        panic!("{expected:?} does not parse: {error}");
    }
}

#[test]
fn comparisons_logic_and_conditionals_parenthesize_what_they_must() {
    let app = spec::<AppSpec>();
    writes(&app.replicas().gt(3), "schema.spec.replicas > 3");
    writes(
        &app.replicas().le(app.replicas()),
        "schema.spec.replicas <= schema.spec.replicas",
    );
    writes(&app.ratio().ge(0.5), "schema.spec.ratio >= 0.5");
    writes(&app.ratio().lt(2.0), "schema.spec.ratio < 2.0");
    writes(&app.name().eq("web"), "schema.spec.name == \"web\"");
    writes(&app.name().ne("a\"b"), "schema.spec.name != \"a\\\"b\"");
    let busy = app.replicas().gt(3).and(app.production());
    writes(
        &busy,
        "(schema.spec.replicas > 3) && schema.spec.production",
    );
    writes(
        &busy.or(app.name().eq("x")),
        "((schema.spec.replicas > 3) && schema.spec.production) || (schema.spec.name == \"x\")",
    );
    writes(
        &busy.not(),
        "!((schema.spec.replicas > 3) && schema.spec.production)",
    );
    writes(
        &cond(&app.production(), 3, app.replicas()),
        "schema.spec.production ? 3 : schema.spec.replicas",
    );
    writes(
        &cond(&busy, "large", "small"),
        "((schema.spec.replicas > 3) && schema.spec.production) ? \"large\" : \"small\"",
    );
}

#[test]
fn optional_fields_sizes_and_strings() {
    let app = spec::<AppSpec>();
    writes(&app.owner().has(), "has(schema.spec.owner)");
    writes(
        &app.owner().or_default("platform"),
        "has(schema.spec.owner) ? schema.spec.owner : \"platform\"",
    );
    writes(&app.name().size().gt(0), "size(schema.spec.name) > 0");
    writes(
        &app.name().concat("-").concat(app.name()),
        "(schema.spec.name + \"-\") + schema.spec.name",
    );
}

#[test]
fn list_macros_name_their_variables_by_depth() {
    let app = spec::<AppSpec>();
    writes(&app.zones().size(), "size(schema.spec.zones)");
    writes(
        &app.ports().exists(|port| port.number().eq(443)),
        "schema.spec.ports.exists(x1, x1.number == 443)",
    );
    writes(
        &app.ports().all(|port| port.name().size().gt(0)),
        "schema.spec.ports.all(x1, size(x1.name) > 0)",
    );
    writes(
        &app.ports().map(|port| port.number()),
        "schema.spec.ports.map(x1, x1.number)",
    );
    // A macro inside a macro gets the next name: the outer variable stays reachable.
    writes(
        &app.zones()
            .exists(|zone| app.ports().exists(|port| port.name().eq(zone.clone()))),
        "schema.spec.zones.exists(x1, schema.spec.ports.exists(x2, x2.name == x1))",
    );
}

#[test]
fn string_templates_join_pieces_and_values() {
    let app = spec::<AppSpec>();
    writes(
        &kro_compose::fmt_cel!("http://{}:{}/", app.name(), app.replicas()),
        "\"http://\" + schema.spec.name + \":\" + string(schema.spec.replicas) + \"/\"",
    );
    writes(
        &kro_compose::fmt_cel!("{}", app.production()),
        "string(schema.spec.production)",
    );
    writes(&kro_compose::fmt_cel!("plain"), "\"plain\"");
}

#[test]
fn cel_is_parsed_while_compiling_and_typed_where_used() {
    let replicas: Ref<i64> = kro_compose::cel!("schema.spec.replicas * 2");
    writes(&replicas, "schema.spec.replicas * 2");
    writes(&replicas.gt(4), "(schema.spec.replicas * 2) > 4");
}
