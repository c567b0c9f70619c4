//! Small controllers of a cluster's services: the service account controller (every active
//! namespace has a `default` ServiceAccount, recreated when deleted), the root CA publisher
//! (with TLS, every active namespace has a `kube-root-ca.crt` ConfigMap holding the authority
//! that signed the server's certificate, put back when deleted or changed) and a
//! load-balancer provider (a `LoadBalancer` Service gets an ingress address after the knob's
//! delay, as a cloud or MetalLB would give it; one that stops being a load balancer loses it).

use std::sync::Arc;

use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Service, ServiceAccount};
use kube::ResourceExt;
use kube::api::Api;
use kube::runtime::controller::{Action, Controller};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use serde_json::json;
use tokio::sync::watch;

use super::replica_sets::normalized;
use super::support::{Context, ReconcileError, Reconciled, drive, to_json};

/// The service account every namespace gets.
const DEFAULT_ACCOUNT: &str = "default";
/// The ConfigMap of the cluster's root certificate authority every namespace gets.
const ROOT_CA_CONFIG_MAP: &str = "kube-root-ca.crt";
/// What kube-controller-manager's root CA publisher says of it.
const ROOT_CA_DESCRIPTION: &str = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters.";

/// Runs the service account controller until `stop`.
pub(super) async fn run_service_accounts(context: Arc<Context>, stop: watch::Receiver<bool>) {
    let namespaces: Api<Namespace> = Api::all(context.client.clone());
    let accounts: Api<ServiceAccount> = Api::all(context.client.clone());
    let config_maps: Api<ConfigMap> = Api::all(context.client.clone());
    let controller = Controller::new(namespaces, watcher::Config::default())
        .watches(
            accounts,
            watcher::Config::default().fields(&format!("metadata.name={DEFAULT_ACCOUNT}")),
            |account| {
                account
                    .namespace()
                    .map(|namespace| ObjectRef::new(&namespace))
            },
        )
        .watches(
            config_maps,
            watcher::Config::default().fields(&format!("metadata.name={ROOT_CA_CONFIG_MAP}")),
            |config_map| {
                config_map
                    .namespace()
                    .map(|namespace| ObjectRef::new(&namespace))
            },
        );
    drive("serviceaccounts", controller, ensure_account, context, stop).await;
}

async fn ensure_account(namespace: Arc<Namespace>, context: Arc<Context>) -> Reconciled {
    let active = namespace.metadata.deletion_timestamp.is_none()
        && namespace
            .status
            .as_ref()
            .and_then(|status| status.phase.as_deref())
            != Some("Terminating");
    if !active {
        return Ok(Action::await_change());
    }
    publish_root_ca(&namespace.name_any(), &context).await?;
    let accounts: Api<ServiceAccount> =
        Api::namespaced(context.client.clone(), &namespace.name_any());
    if accounts.get_opt(DEFAULT_ACCOUNT).await?.is_some() {
        return Ok(Action::await_change());
    }
    let account: ServiceAccount =
        serde_json::from_value(json!({"metadata": {"name": DEFAULT_ACCOUNT}}))
            .map_err(|error| ReconcileError::Shape(error.to_string()))?;
    match accounts.create(&context.post_params(), &account).await {
        Ok(_) => Ok(Action::await_change()),
        // Created meanwhile, or the namespace started terminating.
        Err(kube::Error::Api(status)) if status.code == 409 || status.code == 403 => {
            Ok(Action::await_change())
        }
        Err(error) => Err(error.into()),
    }
}

/// Makes the namespace's `kube-root-ca.crt` ConfigMap hold the server's authority, as
/// kube-controller-manager's root CA publisher does (nothing without TLS: there is no
/// authority to publish).
async fn publish_root_ca(namespace: &str, context: &Context) -> Result<(), ReconcileError> {
    let Some(authority) = context.authority_pem.as_deref() else {
        return Ok(());
    };
    let config_maps: Api<ConfigMap> = Api::namespaced(context.client.clone(), namespace);
    let wanted = json!({
        "metadata": {
            "name": ROOT_CA_CONFIG_MAP,
            "annotations": {"kubernetes.io/description": ROOT_CA_DESCRIPTION},
        },
        "data": {"ca.crt": authority},
    });
    let outcome = match config_maps.get_opt(ROOT_CA_CONFIG_MAP).await? {
        None => {
            let config_map: ConfigMap = serde_json::from_value(wanted)
                .map_err(|error| ReconcileError::Shape(error.to_string()))?;
            config_maps
                .create(&context.post_params(), &config_map)
                .await
                .map(|_| ())
        }
        Some(existing) => {
            let current = to_json(&existing);
            let description = current
                .pointer("/metadata/annotations/kubernetes.io~1description")
                .and_then(serde_json::Value::as_str);
            if current
                .pointer("/data/ca.crt")
                .and_then(serde_json::Value::as_str)
                == Some(authority)
                && description == Some(ROOT_CA_DESCRIPTION)
            {
                return Ok(());
            }
            let patch = json!({
                "metadata": {"annotations": {"kubernetes.io/description": ROOT_CA_DESCRIPTION}},
                "data": {"ca.crt": authority},
            });
            config_maps
                .patch(
                    ROOT_CA_CONFIG_MAP,
                    &kube::api::PatchParams::default(),
                    &kube::api::Patch::Merge(&patch),
                )
                .await
                .map(|_| ())
        }
    };
    match outcome {
        Ok(()) => Ok(()),
        // Made meanwhile, or the namespace started terminating.
        Err(kube::Error::Api(status)) if status.code == 409 || status.code == 403 => Ok(()),
        Err(error) => Err(error.into()),
    }
}

/// Runs the load-balancer provider until `stop`.
pub(super) async fn run_load_balancers(context: Arc<Context>, stop: watch::Receiver<bool>) {
    let services: Api<Service> = Api::all(context.client.clone());
    let controller = Controller::new(services, watcher::Config::default());
    drive("services", controller, provide_load_balancer, context, stop).await;
}

async fn provide_load_balancer(service: Arc<Service>, context: Arc<Context>) -> Reconciled {
    let Some((namespace, uid)) = super::support::acting_on(service.as_ref()) else {
        return Ok(Action::await_change());
    };
    let wants =
        service.spec.as_ref().and_then(|spec| spec.type_.as_deref()) == Some("LoadBalancer");
    let current = normalized(&to_json(&service.status));
    let ingress = current
        .pointer("/loadBalancer/ingress")
        .and_then(serde_json::Value::as_array)
        .is_some_and(|ingress| !ingress.is_empty());
    let mut status = current.clone();
    match (wants, ingress) {
        (true, false) => {
            if let Err(left) =
                context.stage_due(&uid, "load-balancer", context.knobs.load_balancer_delay)
            {
                return Ok(Action::requeue(left));
            }
            status["loadBalancer"] =
                json!({"ingress": [{"ip": context.ingress_address(), "ipMode": "VIP"}]});
            context
                .event(
                    service.as_ref(),
                    "service-controller",
                    false,
                    "EnsuredLoadBalancer",
                    "Ensured load balancer",
                )
                .await;
        }
        (false, true) => status["loadBalancer"] = json!({}),
        _ => return Ok(Action::await_change()),
    }
    let services: Api<Service> = Api::namespaced(context.client.clone(), &namespace);
    context
        .write_status(&services, &service.name_any(), &current, status)
        .await?;
    Ok(Action::await_change())
}
