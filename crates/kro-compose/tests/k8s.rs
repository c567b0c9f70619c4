//! The generated templates of the built-in kinds: field names as k8s-openapi spells them
//! (`type_`, `ref_path`, `cluster_ips`, `open_api_v3_schema`),
//! written back under the API's names; values of every shape (int-or-string, quantities, maps,
//! lists, arbitrary JSON, references); typed references into any field.

use std::collections::BTreeMap;

use kro_compose::k8s::api::apps::v1::{Deployment, DeploymentSpec};
use kro_compose::k8s::api::autoscaling::v1::HorizontalPodAutoscalerSpec;
use kro_compose::k8s::api::core::v1::{
    Container, PodSpec, ResourceRequirements, ServicePort, ServiceSpec,
};
use kro_compose::k8s::api::rbac::v1::{Role, RoleBinding, RoleRef};
use kro_compose::k8s::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaProps;
use kro_compose::{FromPath, KroSchema, Template, ToJson, Typed, Value, spec};
use serde_json::json;

#[derive(KroSchema)]
#[allow(dead_code)]
struct AppSpec {
    port: i32,
    name: String,
    cpu: String,
}

#[test]
fn field_names_are_snake_case_and_written_back_as_the_api_spells_them() {
    let service = ServiceSpec {
        cluster_ip: "None".into(),
        cluster_ips: ["None"].into(),
        ip_families: ["IPv4"].into(),
        ip_family_policy: "SingleStack".into(),
        type_: "ClusterIP".into(),
        ..Default::default()
    };
    assert_eq!(
        service.to_json(),
        json!({
            "clusterIP": "None",
            "clusterIPs": ["None"],
            "ipFamilies": ["IPv4"],
            "ipFamilyPolicy": "SingleStack",
            "type": "ClusterIP",
        })
    );
    let pod = PodSpec {
        host_ipc: true.into(),
        dns_policy: "ClusterFirst".into(),
        ..Default::default()
    };
    assert_eq!(
        pod.to_json(),
        json!({"hostIPC": true, "dnsPolicy": "ClusterFirst"})
    );
    let scaling = HorizontalPodAutoscalerSpec {
        target_cpu_utilization_percentage: 80.into(),
        ..Default::default()
    };
    assert_eq!(
        scaling.to_json(),
        json!({"targetCPUUtilizationPercentage": 80})
    );
    let schema = JSONSchemaProps {
        ref_path: "#/definitions/x".into(),
        x_kubernetes_list_type: "set".into(),
        x_kubernetes_preserve_unknown_fields: true.into(),
        not: json!({"type": "string"}).into(),
        ..Default::default()
    };
    assert_eq!(
        schema.to_json(),
        json!({
            "$ref": "#/definitions/x",
            "not": {"type": "string"},
            "x-kubernetes-list-type": "set",
            "x-kubernetes-preserve-unknown-fields": true,
        })
    );
}

#[test]
fn values_of_every_shape_and_references_of_the_field_s_type() {
    let app = spec::<AppSpec>();
    let port = ServicePort {
        port: app.port().into(),
        target_port: "http".into(),
        name: app.name().into(),
        ..Default::default()
    };
    assert_eq!(
        port.to_json(),
        json!({"name": "${schema.spec.name}", "port": "${schema.spec.port}", "targetPort": "http"})
    );
    let by_number = ServicePort {
        target_port: 8080.into(),
        ..Default::default()
    };
    assert_eq!(by_number.to_json(), json!({"targetPort": 8080}));
    let by_reference = ServicePort {
        target_port: app.port().into(),
        ..Default::default()
    };
    assert_eq!(
        by_reference.to_json(),
        json!({"targetPort": "${schema.spec.port}"})
    );

    let mut limits = BTreeMap::new();
    limits.insert("memory".to_owned(), Value::from("256Mi"));
    let container = Container {
        name: "web".into(),
        args: ["--port", "8080"].into(),
        resources: ResourceRequirements {
            requests: [("cpu", app.cpu())].into(),
            limits: limits.into(),
            ..Default::default()
        }
        .into(),
        ..Default::default()
    };
    assert_eq!(
        container.to_json(),
        json!({
            "name": "web",
            "args": ["--port", "8080"],
            "resources": {
                "requests": {"cpu": "${schema.spec.cpu}"},
                "limits": {"memory": "256Mi"},
            },
        })
    );
    let computed = DeploymentSpec {
        replicas: Value::raw("schema.spec.port / 1000"),
        ..Default::default()
    };
    assert_eq!(
        computed.to_json(),
        json!({"replicas": "${schema.spec.port / 1000}"})
    );
}

#[test]
fn kinds_fill_in_api_version_and_kind_and_references_reach_every_field()
-> Result<(), Box<dyn std::error::Error>> {
    assert_eq!(
        Deployment::default().to_template()?,
        json!({"apiVersion": "apps/v1", "kind": "Deployment"})
    );
    let binding = RoleBinding {
        role_ref: RoleRef {
            kind: "Role".into(),
            name: "reader".into(),
            api_group: "rbac.authorization.k8s.io".into(),
        }
        .into(),
        ..Default::default()
    };
    assert_eq!(binding.to_template()?["roleRef"]["name"], json!("reader"));
    // `RoleRef` is a definition of its own, so references into a Role are a `RoleReference`.
    let role = <Role as Typed>::Ref::from_path("role".to_owned());
    assert_eq!(role.rules().expression(), "role.rules");

    let deployment = <Deployment as Typed>::Ref::from_path("web".to_owned());
    assert_eq!(
        deployment
            .spec()
            .template()
            .spec()
            .containers()
            .exists(|container| container.image().eq("nginx"))
            .expression(),
        "web.spec.template.spec.containers.exists(x1, x1.image == \"nginx\")"
    );
    assert_eq!(
        deployment.status().conditions().expression(),
        "web.status.conditions"
    );
    Ok(())
}
