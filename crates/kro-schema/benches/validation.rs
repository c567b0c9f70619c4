//! Validating a custom resource against its structural schema, as the embedded API server does
//! on every create and update: a `WebApp` object of about thirty fields with a few CEL rules,
//! against a [`Validator`] compiled once outside the measured loop.
//!
//! `cargo bench -p kro-schema --bench validation` measures create (no old object), update
//! (with transition rules and ratcheting), and, for comparison, defaulting and pruning of the
//! same object.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use kro_schema::{Schema, Validator, apply_defaults, prune};
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

criterion_group!(benches, validation);
criterion_main!(benches);
