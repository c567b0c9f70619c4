//! Compositions emit RGDs: examples/webapp written in Rust compiles to the same graph (nodes
//! by level, their dependencies) and the same CRD as the hand-written example; a mistake is
//! reported with `kro validate`'s errors.

// The structs exist for their schemas and references; no value of them is built.
#![allow(dead_code)]

use kro_compose::k8s::api::apps::v1::{Deployment, DeploymentSpec};
use kro_compose::k8s::api::core::v1::{
    ConfigMap, Container, ContainerPort, PodSpec, PodTemplateSpec, Service, ServicePort,
    ServiceSpec,
};
use kro_compose::k8s::api::networking::v1::{
    HTTPIngressPath, HTTPIngressRuleValue, Ingress, IngressBackend, IngressRule,
    IngressServiceBackend, IngressSpec, ServiceBackendPort,
};
use kro_compose::k8s::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use kro_compose::{
    ComposeError, Composition, KroSchema, fmt_cel, instance_name, instance_namespace, spec,
};
use kro_graph::{BuiltinCatalog, CompiledGraph, ResourceGraphDefinition, build_graph};
use serde_json::{Value, json};

#[derive(KroSchema)]
struct IngressOptions {
    #[kro(default = false)]
    enabled: bool,
    #[kro(default = "webapp.local")]
    host: String,
}

#[derive(KroSchema)]
struct WebAppSpec {
    #[kro(default = "nginx:1.27")]
    image: String,
    #[kro(default = 2, minimum = 1, maximum = 20)]
    replicas: i64,
    #[kro(default = 80)]
    port: i64,
    ingress: IngressOptions,
}

/// examples/webapp, in Rust, with the built-in kinds' typed templates and references.
#[derive(KroSchema)]
struct WebAppStatus {
    available_replicas: i64,
    #[kro(rename = "clusterIP")]
    cluster_ip: String,
    endpoint: String,
}

fn webapp() -> Composition<WebAppSpec, WebAppStatus> {
    let app = spec::<WebAppSpec>();
    let name = instance_name();
    let labels = || -> kro_compose::Value<_> { [("app.kubernetes.io/name", &name)].into() };
    let mut webapp = Composition::new("webapp", "WebApp");
    let deployment = webapp.add(
        "deployment",
        Deployment {
            metadata: ObjectMeta {
                name: name.clone().into(),
                labels: labels(),
                ..Default::default()
            }
            .into(),
            spec: DeploymentSpec {
                replicas: app.replicas().into(),
                selector: LabelSelector {
                    match_labels: labels(),
                    ..Default::default()
                }
                .into(),
                template: PodTemplateSpec {
                    metadata: ObjectMeta {
                        labels: labels(),
                        ..Default::default()
                    }
                    .into(),
                    spec: PodSpec {
                        containers: [Container {
                            name: "web".into(),
                            image: app.image().into(),
                            ports: [ContainerPort {
                                container_port: app.port().into(),
                                ..Default::default()
                            }]
                            .into(),
                            ..Default::default()
                        }]
                        .into(),
                        ..Default::default()
                    }
                    .into(),
                }
                .into(),
                ..Default::default()
            }
            .into(),
            ..Default::default()
        },
    );
    let available = deployment.status().available_replicas();
    webapp.ready_when(&deployment, &available.eq(app.replicas()));
    let service = webapp.add(
        "service",
        Service {
            metadata: ObjectMeta {
                name: deployment.metadata().name().into(),
                ..Default::default()
            }
            .into(),
            spec: ServiceSpec {
                selector: labels(),
                ports: [ServicePort {
                    port: app.port().into(),
                    target_port: app.port().into(),
                    ..Default::default()
                }]
                .into(),
                ..Default::default()
            }
            .into(),
            ..Default::default()
        },
    );
    let backend = IngressServiceBackend {
        name: service.metadata().name().into(),
        port: ServiceBackendPort {
            number: app.port().into(),
            ..Default::default()
        }
        .into(),
    };
    let ingress = webapp.add(
        "ingress",
        Ingress {
            metadata: ObjectMeta {
                name: service.metadata().name().into(),
                ..Default::default()
            }
            .into(),
            spec: IngressSpec {
                rules: [IngressRule {
                    host: app.ingress().host().into(),
                    http: HTTPIngressRuleValue {
                        paths: [HTTPIngressPath {
                            path: "/".into(),
                            path_type: "Prefix".into(),
                            backend: IngressBackend {
                                service: backend.into(),
                                ..Default::default()
                            }
                            .into(),
                        }]
                        .into(),
                    }
                    .into(),
                }]
                .into(),
                ..Default::default()
            }
            .into(),
            ..Default::default()
        },
    );
    webapp.include_when(&ingress, &app.ingress().enabled());
    webapp.status(WebAppStatusValues {
        available_replicas: available.into(),
        cluster_ip: service.spec().cluster_ip().into(),
        endpoint: fmt_cel!(
            "http://{}.{}:{}",
            service.metadata().name(),
            service.metadata().namespace(),
            app.port()
        )
        .into(),
    });
    let _ = instance_namespace();
    webapp
}

fn compile(rgd: &Value) -> CompiledGraph {
    let rgd = ResourceGraphDefinition::from_json(rgd).expect("the RGD decodes");
    build_graph(&rgd, &BuiltinCatalog).expect("the RGD compiles")
}

/// Node ids level by level, each with the ids it depends on.
fn shape(graph: &CompiledGraph) -> Vec<Vec<(String, Vec<String>)>> {
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

/// Holds `emitted` to the same graph (nodes by level, their dependencies) and CRD as the
/// hand-written RGD of `examples/<example>`.
fn same_graph_and_crd_as_example(emitted: &Value, example: &str) {
    let path = format!(
        "{}/../../examples/{example}/rgd.yaml",
        env!("CARGO_MANIFEST_DIR")
    );
    let written: Value =
        serde_saphyr::from_str(&std::fs::read_to_string(path).expect("the example")).expect("YAML");
    let (emitted, written) = (compile(emitted), compile(&written));
    assert_eq!(
        shape(&emitted),
        shape(&written),
        "{example}: the graphs differ"
    );
    assert_eq!(emitted.crd, written.crd, "{example}: the CRDs differ");
}

#[test]
fn the_webapp_composition_is_the_example_s_graph_and_crd() {
    let emitted = webapp().to_rgd().expect("a valid RGD");
    same_graph_and_crd_as_example(&emitted, "webapp");
}

#[test]
fn a_mistake_is_reported_with_the_compiler_s_errors() {
    let mut broken = Composition::<WebAppSpec>::new("broken", "Broken");
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
}

#[derive(KroSchema)]
enum Environment {
    #[kro(rename = "dev")]
    Dev,
    #[kro(rename = "staging")]
    Staging,
    #[kro(rename = "prod")]
    Prod,
}

#[derive(KroSchema)]
struct ServiceTierSpec {
    #[kro(default = "dev")]
    environment: Environment,
    #[kro(default = "nginx:1.27")]
    image: String,
}

/// examples/data-node, in Rust: two data nodes read by a ConfigMap and a Deployment.
#[derive(KroSchema)]
struct ServiceTierStatus {
    prefix: String,
    replicas: i64,
}

fn service_tier() -> Composition<ServiceTierSpec, ServiceTierStatus> {
    let tier = spec::<ServiceTierSpec>();
    let mut composition = Composition::new("service-tier", "ServiceTier");
    let prod = tier
        .environment()
        .eq(kro_compose::Ref::<Environment>::raw("'prod'"));
    let naming = composition.data(
        "naming",
        json!({
            "prefix": fmt_cel!("{}-{}", instance_name(), tier.environment()),
            "team": "platform",
        }),
    );
    let sizing = composition.data(
        "sizing",
        json!({
            "replicas": kro_compose::expr::cond(&prod, 3, 1),
            "memory": kro_compose::expr::cond(&prod, "512Mi", "128Mi"),
        }),
    );
    let prefix = naming.path::<String>("prefix");
    let settings = composition.add(
        "settings",
        json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": prefix.concat("-settings"),
                "labels": {"team": naming.path::<String>("team")},
            },
            "data": {
                "environment": tier.environment(),
                "memory": sizing.path::<String>("memory"),
            },
        }),
    );
    composition.add(
        "app",
        json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": prefix, "labels": {"team": naming.path::<String>("team")}},
            "spec": {
                "replicas": sizing.path::<i64>("replicas"),
                "selector": {"matchLabels": {"app": prefix}},
                "template": {
                    "metadata": {"labels": {"app": prefix}},
                    "spec": {"containers": [{
                        "name": "app",
                        "image": tier.image(),
                        "envFrom": [{"configMapRef": {"name": settings.name()}}],
                        "resources": {"limits": {"memory": sizing.path::<String>("memory")}},
                    }]},
                },
            },
        }),
    );
    composition.status(ServiceTierStatusValues {
        prefix: prefix.into(),
        replicas: sizing.path::<i64>("replicas").into(),
    });
    composition
}

#[test]
fn the_data_node_composition_is_the_example_s_graph_and_crd() {
    let emitted = service_tier().to_rgd().expect("a valid RGD");
    same_graph_and_crd_as_example(&emitted, "data-node");
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

#[derive(KroSchema)]
struct WorkerPoolSpec {
    #[kro(default = "busybox:1.36")]
    image: String,
    /// Optional, as the example declares it (`"[]string"`, no `required=true`).
    queues: Option<Vec<String>>,
}

/// examples/workers, in Rust: a collection in the seed's form (`each.item`), per-item
/// readiness, and a ConfigMap listing the workers.
#[derive(KroSchema)]
struct WorkerPoolStatus {
    workers: i64,
    names: String,
}

fn worker_pool() -> Composition<WorkerPoolSpec, WorkerPoolStatus> {
    let pool = spec::<WorkerPoolSpec>();
    let queue = kro_compose::each_item::<String>();
    let mut composition = Composition::new("workerpool", "WorkerPool");
    let workers = composition.add(
        "workers",
        json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {
                "name": instance_name().concat("-").concat(queue.clone()),
                "labels": {"queue": queue},
            },
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": {"queue": queue}},
                "template": {
                    "metadata": {"labels": {"queue": queue}},
                    "spec": {"containers": [{
                        "name": "worker",
                        "image": pool.image(),
                        "args": ["consume", queue],
                    }]},
                },
            },
        }),
    );
    composition.for_each_item(&workers, &pool.queues());
    composition.ready_when(
        &workers,
        &kro_compose::Ref::<bool>::raw("each.status.readyReplicas == 1"),
    );
    let names: kro_compose::Ref<String> =
        kro_compose::cel!("workers.map(w, w.metadata.name).join(',')");
    let count: kro_compose::Ref<String> = kro_compose::cel!("string(size(workers))");
    composition.add(
        "roster",
        json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": instance_name().concat("-roster")},
            "data": {"workers": names, "count": count},
        }),
    );
    let size: kro_compose::Ref<i64> = kro_compose::cel!("size(workers)");
    composition.status(WorkerPoolStatusValues {
        workers: size.into(),
        names: names.into(),
    });
    composition
}

#[test]
fn the_worker_pool_composition_is_the_example_s_graph_and_crd() {
    let emitted = worker_pool().to_rgd().expect("a valid RGD");
    assert_eq!(
        emitted["spec"]["resources"][0]["forEach"],
        "${schema.spec.queues}"
    );
    same_graph_and_crd_as_example(&emitted, "workers");
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
