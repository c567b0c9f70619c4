//! examples/webapp written in Rust with the built-in kinds' typed templates: a Deployment, a
//! Service in front of it and an Ingress when `spec.ingress.enabled`; readiness on available
//! replicas; the status typed by `WebAppStatus`. `cargo run -p kro-compose --example webapp`
//! prints the RGD, which has the same graph and CRD as `examples/webapp/rgd.yaml`.

use kro_compose::k8s::api::apps::v1::{Deployment, DeploymentSpec};
use kro_compose::k8s::api::core::v1::{
    Container, ContainerPort, PodSpec, PodTemplateSpec, Service, ServicePort, ServiceSpec,
};
use kro_compose::k8s::api::networking::v1::{
    HTTPIngressPath, HTTPIngressRuleValue, Ingress, IngressBackend, IngressRule,
    IngressServiceBackend, IngressSpec, ServiceBackendPort,
};
use kro_compose::k8s::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use kro_compose::{Composition, KroSchema, fmt_cel, instance_name, spec};

/// Whether and where the web app is exposed.
#[derive(KroSchema)]
pub struct IngressOptions {
    /// Whether to make the Ingress.
    #[kro(default = false)]
    pub enabled: bool,
    /// The host the Ingress answers for.
    #[kro(default = "webapp.local")]
    pub host: String,
}

/// What a web app is asked for.
#[derive(KroSchema)]
pub struct WebAppSpec {
    /// The web server's image.
    #[kro(default = "nginx:1.27")]
    pub image: String,
    /// How many web servers.
    #[kro(default = 2, minimum = 1, maximum = 20)]
    pub replicas: i64,
    /// The port they listen on.
    #[kro(default = 80)]
    pub port: i64,
    /// The Ingress.
    pub ingress: IngressOptions,
}

/// What an instance reports.
#[derive(KroSchema)]
pub struct WebAppStatus {
    /// How many web servers are available.
    pub available_replicas: i64,
    /// The Service's cluster IP.
    #[kro(rename = "clusterIP")]
    pub cluster_ip: String,
    /// Where the web app answers.
    pub endpoint: String,
}

/// The composition: examples/webapp.
pub fn composition() -> Composition<WebAppSpec, WebAppStatus> {
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
    webapp
}

fn main() -> Result<(), kro_compose::ComposeError> {
    print!("{}", composition().to_rgd_yaml()?);
    Ok(())
}
