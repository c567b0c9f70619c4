//! Deploying a composition both ways: `Mode::Kro` (the controller on one fresh embedded
//! server) and `Mode::Direct` (kro's engine from here, on another) give the same typed
//! status; the direct deploy is deleted again.

// Deploying is the default feature `deploy`; built without it, there is nothing to test here.
#![cfg(feature = "deploy")]
// The structs exist for their schemas, references and serialization.
#![allow(dead_code)]

use std::time::Duration;

use kro_apiserver::{ServerConfig, Simulators};
use kro_compose::{Composition, KroSchema, Mode, fmt_cel, instance_name, spec};
use kro_controller::direct::DirectConfig;
use kro_controller::{Manager, Metrics, Settings};
use serde::{Deserialize, Serialize};
use serde_json::json;

#[derive(KroSchema, Serialize)]
#[serde(rename_all = "camelCase")]
struct ShopSpec {
    #[kro(default = 2, minimum = 1)]
    replicas: i64,
    #[kro(default = "nginx:1.27")]
    image: String,
}

#[derive(Debug, PartialEq, KroSchema, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ShopStatus {
    available_replicas: i64,
    endpoint: String,
}

fn shop() -> Composition<ShopSpec, ShopStatus> {
    let app = spec::<ShopSpec>();
    let name = instance_name();
    let mut shop = Composition::new("shop", "Shop");
    let deployment = shop.add(
        "deployment",
        json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": name},
            "spec": {
                "replicas": app.replicas(),
                "selector": {"matchLabels": {"app": name}},
                "template": {
                    "metadata": {"labels": {"app": name}},
                    "spec": {"containers": [{"name": "web", "image": app.image()}]},
                },
            },
        }),
    );
    let available = deployment.path::<i64>("status.availableReplicas");
    shop.ready_when(&deployment, &available.eq(app.replicas()));
    let service = shop.add(
        "service",
        json!({
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": deployment.name()},
            "spec": {"selector": {"app": name}, "ports": [{"port": 80}]},
        }),
    );
    shop.status(ShopStatusValues {
        available_replicas: available.into(),
        endpoint: fmt_cel!("http://{}.{}", service.name(), service.namespace()).into(),
    });
    shop
}

/// A fresh embedded server with its simulated cluster, and a client of it.
async fn server() -> (kro_apiserver::RunningServer, kube::Client) {
    let server = kro_apiserver::start(ServerConfig {
        token: None,
        tls: false,
        simulators: Simulators::all(),
        ..ServerConfig::default()
    })
    .await
    .expect("the server starts");
    let url = server.url().parse().expect("a URL");
    let client = kube::Client::try_from(kube::Config::new(url)).expect("a client");
    (server, client)
}

fn config() -> DirectConfig {
    DirectConfig {
        timeout: Some(Duration::from_secs(60)),
        ..DirectConfig::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_modes_give_the_same_typed_status() {
    let spec = ShopSpec {
        replicas: 2,
        image: "nginx:1.27".to_owned(),
    };
    let composition = shop();

    let (_controlled_server, controlled) = server().await;
    let manager = Manager::start(controlled.clone(), Settings::default(), Metrics::default())
        .await
        .expect("the controllers start");
    let through_kro = composition
        .deploy(
            Mode::Kro,
            &controlled,
            "corner",
            Some("default"),
            &spec,
            config(),
            &|_| {},
        )
        .await
        .expect("deployed through kro");
    manager.shutdown().await;

    let (_direct_server, direct) = server().await;
    let directly = composition
        .deploy(
            Mode::Direct,
            &direct,
            "corner",
            Some("default"),
            &spec,
            config(),
            &|_| {},
        )
        .await
        .expect("deployed directly");

    assert_eq!(
        directly.status,
        ShopStatus {
            available_replicas: 2,
            endpoint: "http://corner.default".to_owned(),
        }
    );
    assert_eq!(through_kro.status, directly.status);
    for deployed in [&through_kro, &directly] {
        assert_eq!(deployed.instance["status"]["state"], "ACTIVE");
    }

    let deleted = composition
        .delete_direct(&direct, "corner", Some("default"), config())
        .await
        .expect("deleted");
    assert_eq!(deleted.len(), 2, "{deleted:?}");
}
