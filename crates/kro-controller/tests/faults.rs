//! What the controllers do when what they were told is incomplete: caches that never saw a
//! kind, and start-up against a server that fails.

mod common;

use common::{Cluster, at, cluster_at};
use kro_apiserver::InjectedFailure;
use serde_json::json;

fn rgd(with_secret: bool) -> serde_json::Value {
    let mut resources = vec![json!({
        "id": "config",
        "template": {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "${schema.metadata.name}-config"},
            "data": {"a": "b"}}
    })];
    if with_secret {
        resources.push(json!({
            "id": "secret",
            "template": {"apiVersion": "v1", "kind": "Secret",
                "metadata": {"name": "${schema.metadata.name}-secret"},
                "data": {"a": "Yg=="}}
        }));
    }
    json!({
        "apiVersion": "kro.run/v1alpha1", "kind": "ResourceGraphDefinition",
        "metadata": {"name": "pruning"},
        "spec": {
            "schema": {"apiVersion": "v1alpha1", "kind": "Pruning", "spec": {}},
            "resources": resources,
        }
    })
}

/// Controllers that start after a kind left the graph have no watch of it: the objects the
/// inventory still names are listed from the server, and list answers leave apiVersion and
/// kind out of their items. They must still be pruned, and not be forgotten (the inventory
/// trimmed while they remain, stranding them).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn objects_of_a_kind_no_longer_watched_are_pruned_and_deleted() {
    let mut cluster = Cluster::start().await;
    let definition = cluster_at("kro.run/v1alpha1", "ResourceGraphDefinition", "pruning");
    let instance = at("kro.run/v1alpha1", "Pruning", "one");
    cluster.apply(&rgd(true)).await;
    cluster.wait_state(definition, "Active").await;
    cluster
        .apply(&json!({"apiVersion": "kro.run/v1alpha1", "kind": "Pruning",
            "metadata": {"name": "one", "namespace": "default"}, "spec": {}}))
        .await;
    cluster.wait_state(instance, "ACTIVE").await;
    cluster
        .wait_for(at("v1", "Secret", "one-secret"), "created", |secret| {
            secret.is_some()
        })
        .await;

    // The graph loses the Secret while no controller runs: the next ones never watch Secrets.
    cluster.stop_controllers().await;
    cluster.apply(&rgd(false)).await;
    cluster.start_controllers().await;
    cluster
        .wait_for(at("v1", "Secret", "one-secret"), "pruned", |secret| {
            secret.is_none()
        })
        .await;
    cluster
        .wait_for(at("v1", "ConfigMap", "one-config"), "kept", |config| {
            config.is_some()
        })
        .await;

    cluster.delete(instance).await;
    cluster.wait_gone(instance).await;
    assert_eq!(
        cluster
            .names_labelled("v1", "ConfigMap", "kro.run/instance-name", "one")
            .await,
        Vec::<String>::new()
    );
    cluster.stop().await;
}

/// One failed request at start-up does not stop the controllers: what is transient is tried
/// again (a controller in a pod must outlive an API server that restarts).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_controllers_start_through_failing_requests() {
    let server = kro_apiserver::start(kro_apiserver::ServerConfig {
        token: None,
        tls: false,
        ..kro_apiserver::ServerConfig::default()
    })
    .await
    .expect("the server starts");
    server.inject_failure(InjectedFailure::new(
        "get",
        "customresourcedefinitions",
        1,
        500,
    ));
    server.inject_failure(InjectedFailure::new(
        "patch",
        "customresourcedefinitions",
        1,
        502,
    ));
    let config = kube::Config::new(server.url().parse().expect("URL"));
    let client = kube::Client::try_from(config).expect("a client");
    // Without request retries, so the failures reach start-up's own retries.
    let settings = kro_controller::Settings {
        backoff: std::time::Duration::from_millis(10),
        request_retries: 0,
        ..kro_controller::Settings::default()
    };
    let manager = tokio::time::timeout(
        std::time::Duration::from_secs(30),
        kro_controller::Manager::start(
            client.clone(),
            settings.clone(),
            kro_controller::Metrics::new(),
        ),
    )
    .await
    .expect("start-up does not hang")
    .expect("start-up retries transient failures");
    manager.shutdown().await;

    // A refusal is not transient: it is reported at once.
    server.inject_failure(InjectedFailure::new(
        "get",
        "customresourcedefinitions",
        1,
        403,
    ));
    let refused =
        kro_controller::Manager::start(client, settings, kro_controller::Metrics::new()).await;
    let error = refused.err().expect("a refusal stops start-up");
    assert!(!error.is_transient(), "{error}");
    assert!(
        error
            .to_string()
            .contains("installing the CRD resourcegraphdefinitions.kro.run"),
        "{error}"
    );
}

/// A request the server does not answer in time does not hold a worker forever: the reconcile
/// is abandoned after `reconcile_timeout`, counted as an error, and retried; once the server
/// answers again the instance converges.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reconcile_that_hangs_is_abandoned_and_retried() {
    let cluster = Cluster::start_with(kro_controller::Settings {
        reconcile_timeout: std::time::Duration::from_millis(700),
        backoff: std::time::Duration::from_millis(50),
        ..kro_controller::Settings::default()
    })
    .await;
    let definition = cluster_at("kro.run/v1alpha1", "ResourceGraphDefinition", "pruning");
    let instance = at("kro.run/v1alpha1", "Pruning", "slow");
    cluster.apply(&rgd(false)).await;
    cluster.wait_state(definition, "Active").await;
    cluster
        .server()
        .set_latency(std::time::Duration::from_millis(1500));
    cluster
        .apply(&json!({"apiVersion": "kro.run/v1alpha1", "kind": "Pruning",
            "metadata": {"name": "slow", "namespace": "default"}, "spec": {}}))
        .await;
    tokio::time::sleep(std::time::Duration::from_secs(4)).await;
    let errors = r#"instance_reconcile_errors_total{gvr="kro.run/v1alpha1, Resource=prunings"}"#;
    assert!(
        cluster.metric(errors).is_some_and(|count| count >= 1.0),
        "no reconcile was abandoned: {:?}",
        cluster.metric(errors)
    );
    cluster.server().set_latency(std::time::Duration::ZERO);
    cluster.wait_state(instance, "ACTIVE").await;
    cluster.stop().await;
}

/// Deletion asks the server when the caches show no member: an object of the instance that the
/// managed cache can never show (someone removed its `kro.run/owned` label) is deleted too,
/// rather than holding the instance in DELETING forever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_no_cache_shows_is_deleted_with_its_instance() {
    let mut cluster = Cluster::start().await;
    let definition = cluster_at("kro.run/v1alpha1", "ResourceGraphDefinition", "pruning");
    let instance = at("kro.run/v1alpha1", "Pruning", "hidden");
    cluster.apply(&rgd(false)).await;
    cluster.wait_state(definition, "Active").await;
    cluster
        .apply(&json!({"apiVersion": "kro.run/v1alpha1", "kind": "Pruning",
            "metadata": {"name": "hidden", "namespace": "default"}, "spec": {}}))
        .await;
    cluster.wait_state(instance, "ACTIVE").await;
    cluster.stop_controllers().await;
    cluster
        .merge(
            at("v1", "ConfigMap", "hidden-config"),
            json!({"metadata": {"labels": {"kro.run/owned": null}}}),
        )
        .await;
    cluster.delete(instance).await;
    cluster.start_controllers().await;
    cluster.wait_gone(instance).await;
    cluster
        .wait_gone(at("v1", "ConfigMap", "hidden-config"))
        .await;
    cluster.stop().await;
}

/// One instance whose object the server is slow to apply holds one of its kind's workers, not
/// the others: instances created after it become ACTIVE while its apply is still in flight,
/// and it becomes ACTIVE too once the server answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_instance_does_not_hold_the_others_of_its_kind() {
    let cluster = Cluster::start().await;
    let definition = cluster_at("kro.run/v1alpha1", "ResourceGraphDefinition", "pruning");
    cluster.apply(&rgd(false)).await;
    cluster.wait_state(definition, "Active").await;
    let held = std::time::Duration::from_secs(15);
    cluster.server().delay_object("slow-config", held);
    let started = std::time::Instant::now();
    let create = |name: &str| {
        json!({"apiVersion": "kro.run/v1alpha1", "kind": "Pruning",
            "metadata": {"name": name, "namespace": "default"}, "spec": {}})
    };
    cluster.apply(&create("slow")).await;
    let slow = at("kro.run/v1alpha1", "Pruning", "slow");
    // The inventory names the ConfigMap just before it is applied: the apply is under way.
    cluster
        .wait_for(slow, "its ConfigMap being applied", |object| {
            object.is_some_and(|object| {
                object["metadata"]["annotations"]["applyset.kubernetes.io/contains-group-kinds"]
                    == "ConfigMap"
            })
        })
        .await;
    // More than a kind's workers (4), so that each worker takes several of them.
    let fast: Vec<String> = (0..12).map(|index| format!("fast-{index}")).collect();
    for name in &fast {
        cluster.apply(&create(name)).await;
    }
    for name in &fast {
        cluster
            .wait_state(at("kro.run/v1alpha1", "Pruning", name), "ACTIVE")
            .await;
    }
    let fast_done = started.elapsed();
    let state = cluster.get(slow).await.expect("the slow instance")["status"]["state"].clone();
    assert!(
        fast_done < held && state != "ACTIVE",
        "the other instances took {fast_done:?}, the slow one's apply is held {held:?} \
         and it is {state}"
    );
    cluster
        .server()
        .delay_object("slow-config", std::time::Duration::ZERO);
    cluster.wait_state(slow, "ACTIVE").await;
    cluster.stop().await;
}

/// How many requests with `verb` were made of Tenants, in `counts` by (verb, resource).
fn tenant_requests(counts: &std::collections::BTreeMap<(String, String), u64>, verb: &str) -> u64 {
    counts
        .get(&(verb.to_owned(), "tenants".to_owned()))
        .copied()
        .unwrap_or(0)
}

/// A `<Kind>Set` decides from its cache of instances, which runs behind its own writes: it
/// waits for the cache to show its creates and deletes before it decides again, so it creates
/// exactly the instances asked for and, scaled down, deletes exactly the surplus (without
/// waiting, a cache showing one of four new instances made it create three more).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_set_whose_cache_lags_its_writes_creates_and_deletes_once() {
    let cluster = Cluster::start().await;
    let definition = cluster_at("kro.run/v1alpha1", "ResourceGraphDefinition", "tenants");
    cluster
        .apply(&json!({
            "apiVersion": "kro.run/v1alpha1", "kind": "ResourceGraphDefinition",
            "metadata": {"name": "tenants"},
            "spec": {
                "scaling": {"kind": "TenantSet", "method": "replicas"},
                "schema": {"apiVersion": "v1alpha1", "kind": "Tenant", "spec": {}},
                "resources": [{"id": "settings", "template": {
                    "apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "${schema.metadata.name}"},
                    "data": {"a": "b"}}}],
            }
        }))
        .await;
    cluster.wait_state(definition, "Active").await;
    cluster
        .server()
        .set_watch_lag(std::time::Duration::from_millis(400));
    cluster.server().reset_request_counts();
    let set = at("kro.run/v1alpha1", "TenantSet", "team");
    let settled = |replicas: u64| {
        move |object: Option<&serde_json::Value>| {
            object.is_some_and(|object| {
                let status = &object["status"];
                status["replicas"] == replicas
                    && status["readyReplicas"] == replicas
                    && status["observedGeneration"] == object["metadata"]["generation"]
            })
        }
    };
    cluster
        .apply(
            &json!({"apiVersion": "kro.run/v1alpha1", "kind": "TenantSet",
            "metadata": {"name": "team", "namespace": "default"},
            "spec": {"replicas": 4, "template": {"spec": {}}}}),
        )
        .await;
    cluster.wait_for(set, "4 Ready", settled(4)).await;
    // Every write of the Set controller has reached the cache by now.
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    let counts = cluster.server().request_counts();
    let count = |verb: &str| tenant_requests(&counts, verb);
    assert_eq!(count("create"), 4, "{counts:?}");
    assert_eq!(count("delete"), 0, "{counts:?}");

    cluster.server().reset_request_counts();
    cluster.merge(set, json!({"spec": {"replicas": 1}})).await;
    cluster.wait_for(set, "1 Ready", settled(1)).await;
    // Every write of the Set controller has reached the cache by now.
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    let counts = cluster.server().request_counts();
    let count = |verb: &str| tenant_requests(&counts, verb);
    assert_eq!(count("delete"), 3, "{counts:?}");
    assert_eq!(count("create"), 0, "{counts:?}");
    cluster.server().set_watch_lag(std::time::Duration::ZERO);
    cluster.stop().await;
}

/// An instance deleted before the controller's cache showed it is not brought back: the
/// reconcile that runs on the cache's stale copy applies the instance's finalizer with its UID
/// as a precondition, so the server refuses the apply instead of creating the instance anew
/// (with kro's finalizer, and its objects after it, which nothing would ever delete).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_instance_deleted_before_the_cache_shows_it_stays_deleted() {
    let cluster = Cluster::start().await;
    let definition = cluster_at("kro.run/v1alpha1", "ResourceGraphDefinition", "pruning");
    cluster.apply(&rgd(false)).await;
    cluster.wait_state(definition, "Active").await;
    let lag = std::time::Duration::from_millis(800);
    cluster.server().set_watch_lag(lag);
    let instance = at("kro.run/v1alpha1", "Pruning", "brief");
    cluster
        .apply(&json!({"apiVersion": "kro.run/v1alpha1", "kind": "Pruning",
            "metadata": {"name": "brief", "namespace": "default"}, "spec": {}}))
        .await;
    // Deleted at once (it has no finalizer yet); the controller's cache shows it created
    // `lag` after its creation and deleted `lag` after its deletion: between the two it
    // reconciles a copy of an instance that no longer exists.
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    cluster.delete(instance).await;
    cluster.wait_gone(instance).await;
    tokio::time::sleep(lag * 4).await;
    assert!(
        cluster.get(instance).await.is_none(),
        "the deleted instance was created again"
    );
    assert!(
        cluster
            .get(at("v1", "ConfigMap", "brief-config"))
            .await
            .is_none(),
        "a ConfigMap of the deleted instance was made"
    );
    cluster.server().set_watch_lag(std::time::Duration::ZERO);
    cluster.stop().await;
}
