//! Validating a custom resource against its structural schema, as the embedded API server does
//! on every create and update: a `WebApp` object of about thirty fields with a few CEL rules,
//! against a [`Validator`] compiled once outside the measured loop.
//!
//! `cargo bench -p kro-schema --bench validation` measures create (no old object), update
//! (with transition rules and ratcheting), and, for comparison, defaulting and pruning of the
//! same object. The `deployment/*` group validates an `apps/v1` Deployment against the
//! built-in catalog's schema, next to a deep clone of the same object as the baseline (the
//! cheapest walk that touches every node).

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use kro_schema::{Catalog, Gvk, Schema, Validator, apply_defaults, prune};
use serde_json::{Value, json};

/// The schema of a `WebApp` custom resource, shaped like the ones kro generates.
fn web_app_schema() -> Schema {
    let schema = json!({
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": {
                "type": "object",
                "required": ["name", "image"],
                "x-kubernetes-validations": [
                    {"rule": "self.replicas <= self.maxReplicas",
                     "messageExpression": "'replicas must not exceed ' + string(self.maxReplicas)"},
                    {"rule": "self.name == oldSelf.name", "message": "name is immutable"},
                    {"rule": "!has(self.ingress) || self.ingress.host.endsWith('.example.com')",
                     "fieldPath": ".ingress"}
                ],
                "properties": {
                    "name": {"type": "string", "maxLength": 63, "pattern": "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"},
                    "image": {"type": "string", "minLength": 1},
                    "replicas": {"type": "integer", "minimum": 0, "default": 1},
                    "maxReplicas": {"type": "integer", "minimum": 1, "maximum": 100, "default": 10},
                    "paused": {"type": "boolean", "default": false},
                    "environment": {"type": "string", "enum": ["dev", "staging", "prod"]},
                    "revisionHistoryLimit": {"type": "integer", "format": "int32"},
                    "createdAt": {"type": "string", "format": "date-time"},
                    "labels": {"type": "object", "additionalProperties": {"type": "string", "maxLength": 63}},
                    "resources": {"type": "object", "properties": {
                        "cpu": {"x-kubernetes-int-or-string": true},
                        "memory": {"type": "string", "pattern": "^[0-9]+(Mi|Gi)$"}
                    }},
                    "ports": {
                        "type": "array",
                        "maxItems": 16,
                        "x-kubernetes-list-type": "map",
                        "x-kubernetes-list-map-keys": ["name"],
                        "items": {"type": "object", "required": ["name", "port"], "properties": {
                            "name": {"type": "string"},
                            "port": {"type": "integer", "minimum": 1, "maximum": 65535,
                                     "x-kubernetes-validations": [{"rule": "self != 22", "message": "ssh is reserved"}]},
                            "protocol": {"type": "string", "enum": ["TCP", "UDP"], "default": "TCP"}
                        }}
                    },
                    "env": {"type": "array", "items": {"type": "object", "properties": {
                        "name": {"type": "string"}, "value": {"type": "string"}
                    }}},
                    "ingress": {"type": "object", "properties": {
                        "host": {"type": "string"},
                        "path": {"type": "string", "default": "/"},
                        "tls": {"type": "boolean"}
                    }},
                    "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}}
                }
            },
            "status": {"type": "object", "properties": {
                "ready": {"type": "boolean"},
                "availableReplicas": {"type": "integer"}
            }}
        }
    });
    serde_json::from_value(schema).expect("the benchmark schema is valid")
}

/// A `WebApp` with about thirty fields set.
fn web_app(replicas: i64) -> Value {
    json!({
        "apiVersion": "apps.example.com/v1",
        "kind": "WebApp",
        "metadata": {"name": "shop", "namespace": "default", "labels": {"team": "web"}},
        "spec": {
            "name": "shop",
            "image": "registry.example.com/shop:1.4.2",
            "replicas": replicas,
            "maxReplicas": 10,
            "paused": false,
            "environment": "prod",
            "revisionHistoryLimit": 5,
            "createdAt": "2024-05-01T10:00:00Z",
            "labels": {"app": "shop", "tier": "frontend", "owner": "team-web"},
            "resources": {"cpu": "500m", "memory": "512Mi"},
            "ports": [
                {"name": "http", "port": 8080, "protocol": "TCP"},
                {"name": "metrics", "port": 9090, "protocol": "TCP"}
            ],
            "env": [
                {"name": "LOG_LEVEL", "value": "info"},
                {"name": "REGION", "value": "eu-west-1"}
            ],
            "ingress": {"host": "shop.example.com", "path": "/", "tls": true},
            "tags": ["web", "shop", "prod"]
        },
        "status": {"ready": true, "availableReplicas": 3}
    })
}

fn validation(c: &mut Criterion) {
    let schema = web_app_schema();
    let validator = Validator::new(&schema);
    let object = web_app(3);
    let old = web_app(2);
    assert!(validator.validate(&object, Some(&old)).is_empty());

    c.bench_function("validate/create", |b| {
        b.iter(|| validator.validate(black_box(&object), None))
    });
    c.bench_function("validate/update", |b| {
        b.iter(|| validator.validate(black_box(&object), Some(black_box(&old))))
    });
    c.bench_function("validator/compile", |b| {
        b.iter(|| Validator::new(black_box(&schema)))
    });
    c.bench_function("defaults_and_prune", |b| {
        b.iter(|| {
            let mut value = object.clone();
            apply_defaults(&schema, &mut value);
            prune(&schema, &mut value, true)
        })
    });
}

/// A Deployment as a platform team writes one: two containers with ports, env, resources and
/// probes, a volume, labels and a rolling-update strategy.
fn deployment() -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "shop", "namespace": "prod", "labels": {"app": "shop", "tier": "web"}},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "shop"}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1}},
            "template": {
                "metadata": {"labels": {"app": "shop", "tier": "web"}},
                "spec": {
                    "serviceAccountName": "shop",
                    "containers": [
                        {
                            "name": "web",
                            "image": "registry.example.com/shop:1.4.2",
                            "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
                            "env": [
                                {"name": "MODE", "value": "prod"},
                                {"name": "DB_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "db", "key": "password"}}}
                            ],
                            "resources": {"requests": {"cpu": "250m", "memory": "256Mi"}, "limits": {"memory": "512Mi"}},
                            "readinessProbe": {"httpGet": {"path": "/healthz", "port": "http"}, "periodSeconds": 5},
                            "volumeMounts": [{"name": "cache", "mountPath": "/cache"}]
                        },
                        {
                            "name": "proxy",
                            "image": "envoyproxy/envoy:v1.30.1",
                            "args": ["--config-path", "/etc/envoy/envoy.yaml"],
                            "ports": [{"name": "admin", "containerPort": 9901}]
                        }
                    ],
                    "volumes": [{"name": "cache", "emptyDir": {"sizeLimit": "1Gi"}}]
                }
            }
        }
    })
}

fn deployment_validation(c: &mut Criterion) {
    let gvk = Gvk::new("apps", "v1", "Deployment");
    let Some(kind) = Catalog::kubernetes().resolve(&gvk).found() else {
        panic!("the built-in catalog has no apps/v1 Deployment");
    };
    let schema = kind.resolved_schema();
    let validator = Validator::with_config(
        &schema,
        kro_schema::ValidationConfig::default().with_resource_root(true),
    );
    let object = deployment();
    let errors = validator.validate(&object, None);
    assert!(
        errors.is_empty(),
        "the sample Deployment is invalid: {errors:?}"
    );

    let mut group = c.benchmark_group("deployment");
    group.bench_function("baseline/clone", |b| b.iter(|| black_box(&object).clone()));
    group.bench_function("validate", |b| {
        b.iter(|| validator.validate(black_box(&object), None))
    });
    group.bench_function("compile", |b| b.iter(|| Validator::new(black_box(&schema))));
    group.finish();
}

criterion_group!(benches, validation, deployment_validation);
criterion_main!(benches);
