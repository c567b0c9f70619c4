//! Compositions emit RGDs checked by kro's compiler: mistakes are reported with `kro
//! validate`'s errors or, before compiling, named; typed status, nested compositions,
//! dependencies, scaling, optional fields and typed externalRefs come out as kro reads them.

// The structs exist for their schemas and references; no value of them is built.
#![allow(dead_code)]

mod support;

use kro_compose::k8s::api::core::v1::ConfigMap;
use kro_compose::{
    ComposeError, Composition, Feature, FeatureGates, KroSchema, Mistake, Template, fmt_cel,
    instance_name, spec,
};
use serde_json::json;
use support::{compile, shape};

#[test]
fn a_mistake_is_reported_with_the_compiler_s_errors() {
    let mut broken = Composition::<AppSpec>::new("broken", "Broken");
    let missing: kro_compose::Ref<String> = kro_compose::cel!("nothere.metadata.name");
    broken.add(
        "config",
        json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": instance_name()},
            "data": {"missing": missing},
        }),
    );
    let error = broken.to_rgd().expect_err("an unknown resource is refused");
    assert!(matches!(error, ComposeError::Invalid { .. }), "{error}");
    let message = error.to_string();
    assert!(message.contains("nothere"), "{message}");
    assert!(
        message
            .contains("the resource config was added at crates/kro-compose/tests/composition.rs:"),
        "the Rust call site is named: {message}"
    );
}

#[derive(KroSchema)]
struct RegionalSpec {
    regions: Vec<String>,
}

#[test]
fn a_collection_over_a_dimension_reading_an_external_ref_compiles() {
    let regional = spec::<RegionalSpec>();
    let mut composition = Composition::<RegionalSpec>::new("regional", "Regional");
    let shared = composition.external_ref::<ConfigMap>("shared", "platform-settings", None);
    let configs = composition.add(
        "configs",
        json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": fmt_cel!("{}-{}", instance_name(), kro_compose::dimension::<String>("region"))},
            "data": {
                "region": kro_compose::dimension::<String>("region"),
                "owner": shared.path::<String>("data.owner"),
            },
        }),
    );
    composition.for_each(&configs, "region", &regional.regions());
    let rgd = composition.to_rgd().expect("a valid RGD");
    assert_eq!(
        rgd["spec"]["resources"][1]["forEach"],
        json!([{"region": "${schema.spec.regions}"}])
    );
    assert_eq!(
        rgd["spec"]["resources"][0]["externalRef"]["metadata"]["name"],
        "platform-settings"
    );
    let graph = compile(&rgd);
    assert!(graph.node("configs").expect("configs").is_collection());
    assert_eq!(
        shape(&graph),
        [
            vec![("shared".to_owned(), vec![])],
            vec![("configs".to_owned(), vec!["shared".to_owned()])],
        ]
    );
}

#[test]
fn an_external_ref_by_selector_is_a_list_of_the_matching_objects() {
    #[derive(KroSchema)]
    struct TeamSpec {
        team: String,
    }
    #[derive(KroSchema)]
    struct TeamStatus {
        configs: i64,
    }
    let mut composition = Composition::<TeamSpec, TeamStatus>::new("team-reader", "TeamReader");
    let configs = composition.external_ref_selector(
        "configs",
        "v1",
        "ConfigMap",
        json!({"team": spec::<TeamSpec>().team()}),
        None,
    );
    let count: kro_compose::Ref<i64> = kro_compose::Ref::raw(format!("size({})", configs.id()));
    composition.status(TeamStatusValues {
        configs: count.into(),
    });
    let rgd = composition.to_rgd().expect("a valid RGD");
    assert_eq!(
        rgd["spec"]["resources"][0]["externalRef"]["metadata"],
        json!({"selector": {"matchLabels": {"team": "${schema.spec.team}"}}})
    );
    let graph = compile(&rgd);
    assert!(graph.node("configs").is_some());
}

#[derive(KroSchema)]
struct AppSpec {
    name: String,
    #[kro(default = 2)]
    replicas: i64,
    tag: Option<String>,
}

#[derive(KroSchema)]
struct ScaledSpec {
    #[kro(scale, default = 2)]
    replicas: i64,
}

#[derive(KroSchema)]
struct AppStatus {
    url: String,
    #[kro(scale)]
    replicas: i64,
    #[kro(scale_selector)]
    selector: String,
    note: Option<String>,
}

fn config_map(name: impl Into<kro_compose::Value<String>>) -> ConfigMap {
    use kro_compose::k8s::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    ConfigMap {
        metadata: ObjectMeta {
            name: name.into(),
            ..Default::default()
        }
        .into(),
        ..Default::default()
    }
}

#[test]
fn the_status_is_typed_complete_and_marks_scale_fields() {
    let mut app = Composition::<ScaledSpec, AppStatus>::new("app", "App");
    let settings = app.add("settings", config_map(instance_name()));
    app.status(AppStatusValues {
        url: fmt_cel!("http://{}", settings.metadata().name()).into(),
        replicas: kro_compose::Value::Unset,
        selector: fmt_cel!("app={}", instance_name()).into(),
        note: kro_compose::Value::Unset,
    });
    let rgd = app.to_rgd().expect("a valid RGD");
    assert_eq!(
        rgd["spec"]["schema"]["status"],
        json!({
            "url": "${\"http://\" + settings.metadata.name}",
            "replicas": "integer | scale",
            "selector": "${\"app=\" + schema.metadata.name} | scaleSelector",
        })
    );

    let mut incomplete = Composition::<ScaledSpec, AppStatus>::new("app", "App");
    incomplete.status(AppStatusValues {
        url: kro_compose::Value::Unset,
        replicas: kro_compose::Value::Unset,
        selector: fmt_cel!("app={}", instance_name()).into(),
        note: kro_compose::Value::Unset,
    });
    let error = incomplete
        .to_rgd()
        .expect_err("a status field has no value");
    assert!(
        matches!(&error, ComposeError::Mistake { mistake: Mistake::StatusMissing { field }, .. } if field == "url"),
        "{error}"
    );

    let mut scale_given = Composition::<ScaledSpec, AppStatus>::new("app", "App");
    scale_given.status(AppStatusValues {
        url: fmt_cel!("http://{}", instance_name()).into(),
        replicas: spec::<ScaledSpec>().replicas().into(),
        selector: fmt_cel!("app={}", instance_name()).into(),
        note: kro_compose::Value::Unset,
    });
    let error = scale_given.to_rgd().expect_err("kro fills scale fields");
    assert!(error.to_string().contains("scale field"), "{error}");
}

#[test]
fn an_option_field_leaves_the_template_field_out_while_absent() {
    let mut app = Composition::<AppSpec>::new("app", "App");
    let map = config_map(instance_name()).with("data.tag", spec::<AppSpec>().tag());
    app.add("settings", map);
    // Under upstream's default gates omit() is refused, and the error names the gate.
    let error = app.to_rgd().expect_err("omit() needs CELOmitFunction");
    let message = error.to_string();
    assert!(
        message.contains("omit() requires the CELOmitFunction feature gate")
            && message.contains("spec.resources[0].template.data.tag"),
        "{message}"
    );
    let app = app.feature_gates(FeatureGates::default().with(Feature::CelOmitFunction, true));
    let rgd = app
        .to_rgd()
        .expect("a valid RGD for a controller with CELOmitFunction");
    assert_eq!(
        rgd["spec"]["resources"][0]["template"]["data"]["tag"],
        "${has(schema.spec.tag) ? schema.spec.tag : omit()}"
    );
}

#[test]
fn depends_on_gives_kro_an_edge_through_an_annotation() {
    let mut app = Composition::<AppSpec>::new("app", "App");
    let first = app.add("first", config_map(instance_name().concat("-first")));
    let second = app.add("second", config_map(instance_name().concat("-second")));
    app.depends_on(&second, &first);
    let rgd = app.to_rgd().expect("a valid RGD");
    assert_eq!(
        rgd["spec"]["resources"][1]["template"]["metadata"]["annotations"],
        json!({"compose.kro.run/depends-on-first": "${first.metadata.name}"})
    );
    let graph = compile(&rgd);
    assert_eq!(
        shape(&graph),
        [
            vec![("first".to_owned(), vec![])],
            vec![("second".to_owned(), vec!["first".to_owned()])],
        ]
    );

    let mut wrong = Composition::<AppSpec>::new("app", "App");
    let data = wrong.data("values", json!({"a": 1}));
    let map = wrong.add("map", config_map(instance_name()));
    wrong.depends_on(&map, &data);
    let error = wrong
        .to_rgd()
        .expect_err("a data node is not an object to wait for");
    assert!(
        matches!(
            error,
            ComposeError::Mistake {
                mistake: Mistake::DependsOn { .. },
                ..
            }
        ),
        "{error}"
    );
}

#[test]
fn scaling_adds_the_set_kind() {
    #[derive(KroSchema)]
    struct SiteSpec {
        #[kro(scale, default = 1, minimum = 0)]
        replicas: i64,
    }
    #[derive(KroSchema)]
    struct SiteStatus {
        #[kro(scale)]
        replicas: i64,
    }
    let mut site = Composition::<SiteSpec, SiteStatus>::new("site", "Site").scaling("SiteSet");
    site.add("settings", config_map(instance_name()));
    site.status(SiteStatusValues {
        replicas: kro_compose::Value::Unset,
    });
    let rgd = site.to_rgd().expect("a valid RGD");
    assert_eq!(
        rgd["spec"]["scaling"],
        json!({"kind": "SiteSet", "method": "replicas"})
    );
    let graph = compile(&rgd);
    assert!(graph.set_crd.is_some(), "the SiteSet CRD is generated");
}

#[test]
fn a_template_that_cannot_be_written_names_its_resource() {
    let mut app = Composition::<AppSpec>::new("app", "App");
    app.add("settings", json!({"data": []}).with("data[3]", "x"));
    let error = app.to_rgd().expect_err("no such index");
    assert_eq!(
        error.to_string(),
        "the composition app: the resource settings: cannot set data[3]: index 3 is past the end of a list of 0"
    );
}
