//! The endpoint controllers of kube-controller-manager: every Service with a selector gets an
//! EndpointSlice (`discovery.k8s.io/v1`, labelled `kubernetes.io/service-name` and
//! `endpointslice.kubernetes.io/managed-by`, owned by the Service) and an Endpoints object of
//! its name, listing the addresses of the pods it selects with their readiness and the
//! service's ports resolved to the pods' container ports. The Endpoints object is owned by its
//! Service here (kube-controller-manager deletes it itself), so the garbage collector removes
//! it with the Service.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{Endpoints, Pod, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::ResourceExt;
use kube::api::{Api, ListParams, Patch};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use serde_json::{Value, json};
use tokio::sync::watch;

use super::support::{
    Context, ReconcileError, Reconciled, acting_on, controller_reference, drive, pod_finished,
    pod_ready, to_json,
};

/// The label naming the Service of an EndpointSlice.
const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";
/// The label naming the controller that manages an EndpointSlice.
const MANAGED_BY_LABEL: &str = "endpointslice.kubernetes.io/managed-by";
/// kube-controller-manager's endpointslice controller, as it names itself in that label.
const MANAGED_BY: &str = "endpointslice-controller.k8s.io";
/// The label the Endpoints controller puts on what it writes, so that the mirroring
/// controller leaves them alone.
const SKIP_MIRROR_LABEL: &str = "endpointslice.kubernetes.io/skip-mirror";

/// Runs the EndpointSlice and Endpoints controllers until `stop`.
pub(super) async fn run(context: Arc<Context>, stop: watch::Receiver<bool>) {
    let services: Api<Service> = Api::all(context.client.clone());
    let pods: Api<Pod> = Api::all(context.client.clone());
    let controller = Controller::new(services, watcher::Config::default());
    let store = controller.store();
    // A pod change concerns the services of its namespace that select it.
    let controller = controller.watches(pods, watcher::Config::default(), move |pod| {
        let namespace = pod.namespace();
        let labels = pod.labels().clone();
        store
            .state()
            .into_iter()
            .filter(|service| service.namespace() == namespace)
            .filter(|service| {
                selector(service).is_some_and(|selector| {
                    selector
                        .iter()
                        .all(|(key, value)| labels.get(key) == Some(value))
                })
            })
            .map(|service| ObjectRef::from_obj(service.as_ref()))
            .collect::<Vec<_>>()
    });
    drive("endpoints", controller, reconcile, context, stop).await;
}

/// The service's selector, when it has a non-empty one (services without one have their
/// endpoints written by someone else).
fn selector(service: &Service) -> Option<&std::collections::BTreeMap<String, String>> {
    let spec = service.spec.as_ref()?;
    if spec.type_.as_deref() == Some("ExternalName") {
        return None;
    }
    spec.selector
        .as_ref()
        .filter(|selector| !selector.is_empty())
}

async fn reconcile(service: Arc<Service>, context: Arc<Context>) -> Reconciled {
    let Some((namespace, _uid)) = acting_on(service.as_ref()) else {
        return Ok(Action::await_change());
    };
    let Some(selector) = selector(&service) else {
        return Ok(Action::await_change());
    };
    let query: Vec<String> = selector
        .iter()
        .map(|(key, value)| format!("{key}={value}"))
        .collect();
    let pods: Api<Pod> = Api::namespaced(context.client.clone(), &namespace);
    let mut selected = pods
        .list(&ListParams::default().labels(&query.join(",")))
        .await?
        .items;
    selected.retain(|pod| {
        !pod_finished(pod)
            && pod
                .status
                .as_ref()
                .and_then(|status| status.pod_ip.as_deref())
                .is_some_and(|ip| !ip.is_empty())
    });
    selected.sort_by_key(|pod| pod.name_any());
    let ports = service_ports(&service, selected.first());
    write_slice(&service, &namespace, &selected, &ports, &context).await?;
    write_endpoints(&service, &namespace, &selected, &ports, &context).await?;
    Ok(Action::await_change())
}

/// The service's ports as endpoint ports: name, protocol and the target port, a named one
/// resolved against the container ports of `pod`.
fn service_ports(service: &Service, pod: Option<&Pod>) -> Vec<Value> {
    let container_ports: Vec<Value> = pod
        .and_then(|pod| pod.spec.as_ref())
        .map(|spec| {
            spec.containers
                .iter()
                .flat_map(|container| container.ports.iter().flatten())
                .map(to_json)
                .collect()
        })
        .unwrap_or_default();
    service
        .spec
        .as_ref()
        .and_then(|spec| spec.ports.as_ref())
        .into_iter()
        .flatten()
        .filter_map(|port| {
            let number = match &port.target_port {
                None => Some(i64::from(port.port)),
                Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(number)) => {
                    Some(i64::from(*number))
                }
                Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::String(name)) => {
                    container_ports
                        .iter()
                        .find(|container_port| container_port["name"] == json!(name))
                        .and_then(|container_port| container_port["containerPort"].as_i64())
                }
            }?;
            let mut endpoint_port = json!({
                "name": port.name.clone().unwrap_or_default(),
                "port": number,
                "protocol": port.protocol.clone().unwrap_or_else(|| "TCP".to_owned()),
            });
            if let Some(protocol) = &port.app_protocol {
                endpoint_port["appProtocol"] = json!(protocol);
            }
            Some(endpoint_port)
        })
        .collect()
}

/// A pod's address as an endpoint target reference.
fn target_ref(pod: &Pod, namespace: &str) -> Value {
    json!({"kind": "Pod", "namespace": namespace, "name": pod.name_any(), "uid": pod.metadata.uid})
}

fn pod_ip(pod: &Pod) -> String {
    pod.status
        .as_ref()
        .and_then(|status| status.pod_ip.clone())
        .unwrap_or_default()
}

fn node_name(pod: &Pod) -> Option<String> {
    pod.spec.as_ref().and_then(|spec| spec.node_name.clone())
}

/// Creates or brings up to date the service's EndpointSlice.
async fn write_slice(
    service: &Service,
    namespace: &str,
    pods: &[Pod],
    ports: &[Value],
    context: &Context,
) -> Result<(), ReconcileError> {
    let endpoints: Vec<Value> = pods
        .iter()
        .map(|pod| {
            let terminating = pod.metadata.deletion_timestamp.is_some();
            let serving = pod_ready(pod);
            let mut endpoint = json!({
                "addresses": [pod_ip(pod)],
                "conditions": {
                    "ready": serving && !terminating,
                    "serving": serving,
                    "terminating": terminating,
                },
                "targetRef": target_ref(pod, namespace),
            });
            if let Some(node) = node_name(pod) {
                endpoint["nodeName"] = json!(node);
            }
            endpoint
        })
        .collect();
    let mut labels = to_json(service.labels());
    labels[SERVICE_NAME_LABEL] = json!(service.name_any());
    labels[MANAGED_BY_LABEL] = json!(MANAGED_BY);
    let slices: Api<EndpointSlice> = Api::namespaced(context.client.clone(), namespace);
    let existing = slices
        .list(&ListParams::default().labels(&format!(
            "{SERVICE_NAME_LABEL}={},{MANAGED_BY_LABEL}={MANAGED_BY}",
            service.name_any()
        )))
        .await?
        .items
        .into_iter()
        .next();
    let wanted = json!({
        "metadata": {"labels": labels},
        "endpoints": endpoints,
        "ports": ports,
    });
    match existing {
        Some(slice) => {
            let current = to_json(&slice);
            if ["endpoints", "ports"]
                .iter()
                .all(|field| current.get(*field).unwrap_or(&json!([])) == &wanted[*field])
                && current["metadata"]["labels"] == wanted["metadata"]["labels"]
            {
                return Ok(());
            }
            slices
                .patch(
                    &slice.name_any(),
                    &context.patch_params(),
                    &Patch::Merge(&wanted),
                )
                .await?;
        }
        None => {
            let mut slice = wanted;
            slice["metadata"]["generateName"] = json!(format!("{}-", service.name_any()));
            slice["metadata"]["ownerReferences"] = json!([controller_reference(service)?]);
            slice["addressType"] = json!("IPv4");
            let slice: EndpointSlice = serde_json::from_value(slice)
                .map_err(|error| ReconcileError::Shape(error.to_string()))?;
            ignore_gone(slices.create(&context.post_params(), &slice).await)?;
        }
    }
    Ok(())
}

/// Creates or brings up to date the service's Endpoints: ready addresses apart from the
/// others, as the Endpoints controller writes them.
async fn write_endpoints(
    service: &Service,
    namespace: &str,
    pods: &[Pod],
    ports: &[Value],
    context: &Context,
) -> Result<(), ReconcileError> {
    let address = |pod: &Pod| {
        let mut address = json!({"ip": pod_ip(pod), "targetRef": target_ref(pod, namespace)});
        if let Some(node) = node_name(pod) {
            address["nodeName"] = json!(node);
        }
        address
    };
    let active: Vec<&Pod> = pods
        .iter()
        .filter(|pod| pod.metadata.deletion_timestamp.is_none())
        .collect();
    let ready: Vec<Value> = active
        .iter()
        .filter(|pod| pod_ready(pod))
        .map(|pod| address(pod))
        .collect();
    let not_ready: Vec<Value> = active
        .iter()
        .filter(|pod| !pod_ready(pod))
        .map(|pod| address(pod))
        .collect();
    let mut subset = json!({"ports": ports});
    if !ready.is_empty() {
        subset["addresses"] = json!(ready);
    }
    if !not_ready.is_empty() {
        subset["notReadyAddresses"] = json!(not_ready);
    }
    let subsets = if active.is_empty() || ports.is_empty() {
        json!(null)
    } else {
        json!([subset])
    };
    let mut labels = to_json(service.labels());
    labels[SKIP_MIRROR_LABEL] = json!("true");
    let api: Api<Endpoints> = Api::namespaced(context.client.clone(), namespace);
    let wanted = json!({"metadata": {"labels": labels}, "subsets": subsets});
    match api.get_opt(&service.name_any()).await? {
        Some(existing) => {
            let current = to_json(&existing);
            if current.get("subsets").unwrap_or(&Value::Null) == &wanted["subsets"]
                && current["metadata"]["labels"] == wanted["metadata"]["labels"]
            {
                return Ok(());
            }
            api.patch(
                &service.name_any(),
                &context.patch_params(),
                &Patch::Merge(&wanted),
            )
            .await?;
        }
        None => {
            let mut endpoints = wanted;
            endpoints["metadata"]["name"] = json!(service.name_any());
            // kube-controller-manager's Endpoints controller deletes them with their Service
            // itself; here the garbage collector does, by this reference.
            endpoints["metadata"]["ownerReferences"] = json!([controller_reference(service)?]);
            let endpoints: Endpoints = serde_json::from_value(endpoints)
                .map_err(|error| ReconcileError::Shape(error.to_string()))?;
            ignore_gone(api.create(&context.post_params(), &endpoints).await)?;
        }
    }
    Ok(())
}

/// A create that lost a race (made meanwhile) or whose namespace is terminating is no error.
fn ignore_gone<T>(result: Result<T, kube::Error>) -> Result<(), ReconcileError> {
    match result {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 409 || status.code == 403 => Ok(()),
        Err(error) => Err(error.into()),
    }
}
