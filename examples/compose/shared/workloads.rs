//! Small template builders the compose examples share: a Deployment running one container with
//! `app` labels, and a Service in front of pods by their `app` label. Functions returning typed
//! templates are how a Rust composition reuses structure.

use kro_compose::k8s::api::apps::v1::{Deployment, DeploymentSpec};
use kro_compose::k8s::api::core::v1::{
    Container, PodSpec, PodTemplateSpec, Service, ServicePort, ServiceSpec,
};
use kro_compose::k8s::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use kro_compose::{Ref, Value};

/// A Deployment named `name` of `replicas` pods labelled `app: <app>` running `container`.
pub fn deployment(
    name: impl Into<Value<String>>,
    app: &Ref<String>,
    replicas: impl Into<Value<i64>>,
    container: Container,
) -> Deployment {
    labelled_deployment(name, ("app", app), replicas, container)
}

/// A Deployment named `name` of `replicas` pods with the one label `label`, selected by it,
/// running `container`.
pub fn labelled_deployment(
    name: impl Into<Value<String>>,
    label: (&str, &Ref<String>),
    replicas: impl Into<Value<i64>>,
    container: Container,
) -> Deployment {
    let labels = || -> Value<_> { [label].into() };
    Deployment {
        metadata: ObjectMeta {
            name: name.into(),
            labels: labels(),
            ..Default::default()
        }
        .into(),
        spec: DeploymentSpec {
            replicas: replicas.into(),
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
                    containers: [container].into(),
                    ..Default::default()
                }
                .into(),
            }
            .into(),
            ..Default::default()
        }
        .into(),
        ..Default::default()
    }
}

/// A Service named `name` sending `port` to the pods labelled `app: <app>`.
pub fn service(
    name: impl Into<Value<String>>,
    app: &Ref<String>,
    port: impl Into<Value<i64>>,
) -> Service {
    let port = port.into();
    Service {
        metadata: ObjectMeta {
            name: name.into(),
            ..Default::default()
        }
        .into(),
        spec: ServiceSpec {
            selector: [("app", app)].into(),
            ports: [ServicePort {
                port: port.clone(),
                target_port: match port {
                    Value::Set(number) => number.into(),
                    Value::Expr(expression) => Value::Expr(expression),
                    Value::Unset => Value::Unset,
                },
                ..Default::default()
            }]
            .into(),
            ..Default::default()
        }
        .into(),
        ..Default::default()
    }
}
