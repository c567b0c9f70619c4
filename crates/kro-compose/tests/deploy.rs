//! Deploying a composition both ways: the seed's web app with its database
//! (`examples/compose/web_with_database.rs`) deployed with `Mode::Kro` (the controller on one
//! fresh embedded server) and `Mode::Direct` (kro's engine from here, on another) makes the
//! same objects and gives the same typed status; both are deleted again.

// Deploying is the default feature `deploy`; built without it, there is nothing to test here.
#![cfg(feature = "deploy")]

#[allow(dead_code)]
#[path = "../../../examples/compose/web_with_database.rs"]
mod web_with_database;

use std::collections::BTreeMap;
use std::time::Duration;

use kro_apiserver::{ServerConfig, Simulators};
use kro_compose::{DirectConfig, Mode};
use kro_controller::{Manager, Metrics, Settings};
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams};
use serde_json::Value;
use web_with_database::{WebAppSpec, WebAppStatus, composition};

/// A fresh embedded server with its simulated cluster, and a client of it.
async fn server() -> (kro_apiserver::RunningServer, kube::Client) {
    kro_test_support::log_to_test_output();
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

/// The instance's Deployments and Services by kind and name, with what was asked of them (the
/// spec; the pod template's labels and the Service's cluster IPs are the server's).
async fn objects(client: &kube::Client, instance: &str) -> BTreeMap<(String, String), Value> {
    let mut objects = BTreeMap::new();
    for (group, version, kind) in [("apps", "v1", "Deployment"), ("", "v1", "Service")] {
        let resource = ApiResource::from_gvk(&GroupVersionKind::gvk(group, version, kind));
        let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &resource);
        let selector = format!("kro.run/instance-name={instance}");
        let list = api
            .list(&ListParams::default().labels(&selector))
            .await
            .expect("the objects list");
        for object in list {
            let mut spec = object.data["spec"].clone();
            if let Some(spec) = spec.as_object_mut() {
                for assigned in ["clusterIP", "clusterIPs"] {
                    spec.remove(assigned);
                }
            }
            let name = object.metadata.name.unwrap_or_default();
            objects.insert((kind.to_owned(), name), spec);
        }
    }
    objects
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_modes_make_the_same_objects_and_give_the_same_typed_status() {
    let spec = WebAppSpec {
        image: "nginx:1.27".to_owned(),
        replicas: 2,
        database_image: "postgres:16".to_owned(),
    };
    let shop = composition();

    let (_controlled_server, controlled) = server().await;
    let manager = Manager::start(controlled.clone(), Settings::default(), Metrics::default())
        .await
        .expect("the controllers start");
    let through_kro = shop
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
    let made_by_kro = objects(&controlled, "corner").await;
    let deleted_by_kro = shop
        .delete(
            Mode::Kro,
            &controlled,
            "corner",
            Some("default"),
            config(),
            &|_| {},
        )
        .await
        .expect("deleted through kro");
    assert_eq!(deleted_by_kro.len(), 1, "the instance: {deleted_by_kro:?}");
    assert!(
        objects(&controlled, "corner").await.is_empty(),
        "the controller deleted the instance's objects"
    );
    manager.shutdown().await;

    let (_direct_server, direct) = server().await;
    let directly = shop
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
    let made_directly = objects(&direct, "corner").await;

    assert_eq!(
        directly.status,
        WebAppStatus {
            url: "http://corner".to_owned(),
            ready_replicas: 2,
            database_ready: true,
        }
    );
    assert_eq!(through_kro.status, directly.status);
    for deployed in [&through_kro, &directly] {
        assert_eq!(deployed.instance["status"]["state"], "ACTIVE");
    }
    let names: Vec<&(String, String)> = made_directly.keys().collect();
    assert_eq!(
        names,
        [
            &("Deployment".to_owned(), "corner".to_owned()),
            &("Deployment".to_owned(), "corner-db".to_owned()),
            &("Service".to_owned(), "corner".to_owned()),
            &("Service".to_owned(), "corner-db".to_owned()),
        ]
    );
    assert_eq!(
        made_by_kro, made_directly,
        "the two modes made different objects"
    );

    let deleted = shop
        .delete(
            Mode::Direct,
            &direct,
            "corner",
            Some("default"),
            config(),
            &|_| {},
        )
        .await
        .expect("deleted");
    assert_eq!(deleted.len(), 4, "{deleted:?}");
    assert!(
        objects(&direct, "corner").await.is_empty(),
        "nothing is left"
    );
}

/// What the keeper composition is asked for.
#[derive(kro_compose::KroSchema, serde::Serialize)]
struct KeeperSpec {
    /// Whether its data outlives it.
    keep: bool,
}

/// The labels of the ConfigMap `name`, or `None` when it is gone.
async fn config_map_labels(client: &kube::Client, name: &str) -> Option<Value> {
    let api: Api<DynamicObject> = Api::default_namespaced_with(
        client.clone(),
        &ApiResource::from_gvk(&GroupVersionKind::gvk("", "v1", "ConfigMap")),
    );
    api.get_opt(name)
        .await
        .expect("the ConfigMap read")
        .map(|object| serde_json::to_value(object.metadata.labels).expect("JSON"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retained_resource_outlives_its_instance_in_both_modes() {
    use kro_compose::k8s::api::core::v1::ConfigMap;
    use kro_compose::{Composition, Lifecycle, Template, instance_name, spec};

    let mut keeper = Composition::<KeeperSpec>::new("keeper", "Keeper");
    let data = keeper.add(
        "data",
        ConfigMap::default().with("metadata.name", instance_name().concat("-data")),
    );
    keeper.lifecycle(&data, Lifecycle::retain_when(&spec::<KeeperSpec>().keep()));
    keeper.add(
        "scratch",
        ConfigMap::default().with("metadata.name", instance_name().concat("-scratch")),
    );
    let (_server, client) = server().await;
    let manager = Manager::start(client.clone(), Settings::default(), Metrics::default())
        .await
        .expect("the controllers start");
    for (mode, name) in [(Mode::Direct, "direct"), (Mode::Kro, "through-kro")] {
        keeper
            .deploy(
                mode,
                &client,
                name,
                Some("default"),
                &KeeperSpec { keep: true },
                config(),
                &|_| {},
            )
            .await
            .unwrap_or_else(|error| panic!("{name} deployed: {error}"));
        keeper
            .delete(mode, &client, name, Some("default"), config(), &|_| {})
            .await
            .unwrap_or_else(|error| panic!("{name} deleted: {error}"));
        let scratch = format!("{name}-scratch");
        for attempt in 0.. {
            if config_map_labels(&client, &scratch).await.is_none() {
                break;
            }
            assert!(attempt < 300, "{scratch} was not deleted with its instance");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let labels = config_map_labels(&client, &format!("{name}-data"))
            .await
            .unwrap_or_else(|| panic!("{name}-data was deleted: it is retained"));
        assert!(
            labels.as_object().is_none_or(|labels| labels
                .keys()
                .all(|key| !key.starts_with("kro.run/") && !key.starts_with("applyset."))),
            "{name}-data keeps kro's labels: {labels}"
        );
    }
    manager.shutdown().await;
}
