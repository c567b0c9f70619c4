//! The simulated controllers, switched on and off: what a deleted namespace does with the
//! namespace simulator (its content goes, finalizers hold it, then it goes) and without it
//! (it stays Terminating with its content, as under envtest); workloads becoming ready (or
//! failing, when chosen) and garbage collection with them, and nothing of it without them.

mod common;

use std::time::Duration;

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{
    ConfigMap, Namespace, Node, PersistentVolumeClaim, Pod, Service, ServiceAccount,
};
use kro_apiserver::{SimulationKnobs, Simulators};
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};

use common::{serve, serve_with};

async fn populate(client: &kube::Client, name: &str) {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let namespace: Namespace =
        serde_json::from_value(serde_json::json!({"metadata": {"name": name}})).expect("ns");
    namespaces
        .create(&PostParams::default(), &namespace)
        .await
        .expect("create the namespace");
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), name);
    for (map, finalizers) in [("plain", vec![]), ("held", vec!["example.com/hold"])] {
        let object: ConfigMap = serde_json::from_value(serde_json::json!({
            "metadata": {"name": map, "finalizers": finalizers},
            "data": {"k": "v"},
        }))
        .expect("a ConfigMap");
        config_maps
            .create(&PostParams::default(), &object)
            .await
            .expect("create a ConfigMap");
    }
    namespaces
        .delete(name, &DeleteParams::default())
        .await
        .expect("delete the namespace");
}

/// Polls until `check` holds, for at most 10 s.
async fn eventually<F, Fut>(what: &str, check: F)
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    for _ in 0..200 {
        if check().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{what} did not happen within 10 s");
}

fn condition(namespace: &Namespace, kind: &str) -> Option<(String, String, String)> {
    namespace
        .status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|condition| condition.type_ == kind)
        .map(|condition| {
            (
                condition.status.clone(),
                condition.reason.clone().unwrap_or_default(),
                condition.message.clone().unwrap_or_default(),
            )
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_namespace_empties_waits_for_finalizers_then_goes() {
    let (_server, client) = serve(Simulators::all()).await;
    populate(&client, "team").await;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), "team");
    eventually("the content without finalizers goes", || async {
        config_maps.get_opt("plain").await.expect("get").is_none()
    })
    .await;
    eventually("the namespace reports the finalizer that holds it", || async {
        let namespace = namespaces.get("team").await.expect("still there");
        condition(&namespace, "NamespaceFinalizersRemaining")
            == Some((
                "True".to_owned(),
                "SomeFinalizersRemain".to_owned(),
                "Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances".to_owned(),
            ))
            && condition(&namespace, "NamespaceContentRemaining")
                == Some((
                    "True".to_owned(),
                    "SomeResourcesRemain".to_owned(),
                    "Some resources are remaining: configmaps. has 1 resource instances"
                        .to_owned(),
                ))
    })
    .await;
    let held = config_maps
        .get("held")
        .await
        .expect("held by its finalizer");
    assert!(held.metadata.deletion_timestamp.is_some());
    config_maps
        .patch(
            "held",
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"metadata": {"finalizers": null}})),
        )
        .await
        .expect("release the finalizer");
    eventually("the namespace goes", || async {
        namespaces.get_opt("team").await.expect("get").is_none()
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_simulators_a_deleted_namespace_stays_terminating() {
    let (_server, client) = serve(Simulators::none()).await;
    populate(&client, "team").await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let namespace = namespaces.get("team").await.expect("still there");
    assert_eq!(
        namespace.status.and_then(|status| status.phase).as_deref(),
        Some("Terminating")
    );
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), "team");
    assert!(config_maps.get_opt("plain").await.expect("get").is_some());
}

fn object<T: serde::de::DeserializeOwned>(value: serde_json::Value) -> T {
    serde_json::from_value(value).expect("a well-formed object")
}

fn web_deployment(name: &str, image: &str, labels: serde_json::Value) -> Deployment {
    object(serde_json::json!({
        "metadata": {"name": name},
        "spec": {
            "replicas": 2,
            "progressDeadlineSeconds": 2,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "app", "image": image}]},
            },
        },
    }))
}

fn deployment_condition(deployment: &Deployment, kind: &str) -> Option<(String, String)> {
    deployment
        .status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|condition| condition.type_ == kind)
        .map(|condition| {
            (
                condition.status.clone(),
                condition.reason.clone().unwrap_or_default(),
            )
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deployments_roll_out_through_replica_sets_and_pods_and_go_with_them() {
    let (_server, client) = serve(Simulators::all()).await;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
    let sets: Api<ReplicaSet> = Api::namespaced(client.clone(), "default");
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    deployments
        .create(
            &PostParams::default(),
            &web_deployment("web", "nginx:1.27", serde_json::json!({"app": "web"})),
        )
        .await
        .expect("create the Deployment");
    eventually("the Deployment becomes available", || async {
        let deployment = deployments.get("web").await.expect("get");
        let status = deployment.status.clone().unwrap_or_default();
        status.available_replicas == Some(2)
            && status.updated_replicas == Some(2)
            && status.observed_generation == Some(1)
            && deployment_condition(&deployment, "Available")
                == Some(("True".to_owned(), "MinimumReplicasAvailable".to_owned()))
            && deployment_condition(&deployment, "Progressing")
                == Some(("True".to_owned(), "NewReplicaSetAvailable".to_owned()))
    })
    .await;
    let listed = sets.list(&ListParams::default()).await.expect("list");
    let [set] = listed.items.as_slice() else {
        panic!("one ReplicaSet, got {}", listed.items.len());
    };
    let hash = set.labels()["pod-template-hash"].clone();
    assert_eq!(set.name_any(), format!("web-{hash}"));
    assert_eq!(set.annotations()["deployment.kubernetes.io/revision"], "1");
    let owner = &set.owner_references()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.controller),
        ("Deployment", Some(true))
    );
    let running = pods.list(&ListParams::default()).await.expect("list");
    assert_eq!(running.items.len(), 2);
    for pod in &running.items {
        let status = pod.status.clone().expect("status");
        assert_eq!(status.phase.as_deref(), Some("Running"));
        assert!(status.pod_ip.is_some(), "an address");
        assert_eq!(
            pod.spec.as_ref().and_then(|spec| spec.node_name.as_deref()),
            Some("kro-node")
        );
        assert_eq!(pod.labels()["pod-template-hash"], hash);
    }

    // A deleted pod is Terminating until its kubelet ends it, then replaced.
    let victim = running.items[0].name_any();
    let deleted = pods
        .delete(&victim, &DeleteParams::default())
        .await
        .expect("delete a pod");
    let terminating = deleted.left().expect("the pod, held for its kubelet");
    assert_eq!(terminating.metadata.deletion_grace_period_seconds, Some(30));
    eventually("the kubelet ends the pod and it is replaced", || async {
        let listed = pods.list(&ListParams::default()).await.expect("list").items;
        pods.get_opt(&victim).await.expect("get").is_none()
            && listed.len() == 2
            && listed.iter().all(|pod| {
                pod.status
                    .as_ref()
                    .and_then(|status| status.phase.as_deref())
                    == Some("Running")
            })
    })
    .await;

    // A new template rolls out in a new ReplicaSet; the old one ends scaled to zero.
    deployments
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Strategic(serde_json::json!({"spec": {"template": {"spec": {"containers": [{"name": "app", "image": "nginx:1.28"}]}}}})),
        )
        .await
        .expect("change the image");
    eventually("the new template is rolled out", || async {
        let deployment = deployments.get("web").await.expect("get");
        let status = deployment.status.clone().unwrap_or_default();
        let sets = sets.list(&ListParams::default()).await.expect("list").items;
        let old_scaled_down = sets
            .iter()
            .filter(|set| set.labels()["pod-template-hash"] == hash)
            .all(|set| set.spec.as_ref().and_then(|spec| spec.replicas) == Some(0));
        deployment
            .annotations()
            .get("deployment.kubernetes.io/revision")
            == Some(&"2".to_owned())
            && status.observed_generation == Some(2)
            && status.updated_replicas == Some(2)
            && status.available_replicas == Some(2)
            && status.replicas == Some(2)
            && sets.len() == 2
            && old_scaled_down
    })
    .await;

    // Deleting the Deployment takes its ReplicaSets and their pods (garbage collection).
    deployments
        .delete("web", &DeleteParams::default())
        .await
        .expect("delete");
    eventually("the ReplicaSets and pods go", || async {
        sets.list(&ListParams::default())
            .await
            .expect("list")
            .items
            .is_empty()
            && pods
                .list(&ListParams::default())
                .await
                .expect("list")
                .items
                .is_empty()
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_simulators_workloads_stay_without_status() {
    let (_server, client) = serve(Simulators::none()).await;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
    deployments
        .create(
            &PostParams::default(),
            &web_deployment("web", "nginx", serde_json::json!({"app": "web"})),
        )
        .await
        .expect("create the Deployment");
    let services: Api<Service> = Api::namespaced(client.clone(), "default");
    services
        .create(
            &PostParams::default(),
            &object(serde_json::json!({
                "metadata": {"name": "lb"},
                "spec": {"type": "LoadBalancer", "ports": [{"port": 80}]},
            })),
        )
        .await
        .expect("create the Service");
    let namespaces: Api<Namespace> = Api::all(client.clone());
    namespaces
        .create(
            &PostParams::default(),
            &object(serde_json::json!({"metadata": {"name": "team"}})),
        )
        .await
        .expect("create a namespace");
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    let deployment = deployments.get("web").await.expect("get");
    assert_eq!(
        deployment.status.unwrap_or_default(),
        k8s_openapi::api::apps::v1::DeploymentStatus::default(),
        "no deployment controller: an empty status"
    );
    let sets: Api<ReplicaSet> = Api::namespaced(client.clone(), "default");
    assert!(
        sets.list(&ListParams::default())
            .await
            .expect("list")
            .items
            .is_empty()
    );
    let pods: Api<Pod> = Api::all(client.clone());
    assert!(
        pods.list(&ListParams::default())
            .await
            .expect("list")
            .items
            .is_empty()
    );
    let service = services.get("lb").await.expect("get");
    let ingress = service
        .status
        .and_then(|status| status.load_balancer)
        .and_then(|balancer| balancer.ingress);
    assert_eq!(ingress, None, "no load-balancer provider: no ingress");
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), "team");
    assert!(
        accounts
            .list(&ListParams::default())
            .await
            .expect("list")
            .items
            .is_empty()
    );
    let nodes: Api<Node> = Api::all(client.clone());
    assert!(
        nodes
            .list(&ListParams::default())
            .await
            .expect("list")
            .items
            .is_empty()
    );
}

fn config_map(name: &str, owners: serde_json::Value, finalizers: &[&str]) -> ConfigMap {
    object(serde_json::json!({
        "metadata": {"name": name, "ownerReferences": owners, "finalizers": finalizers},
    }))
}

fn owned_by(owner: &ConfigMap, block: bool) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "name": owner.name_any(), "uid": owner.uid().expect("uid"),
        "blockOwnerDeletion": block,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_garbage_collector_propagates_in_the_background_the_foreground_or_orphans() {
    let (_server, client) = serve(Simulators::all()).await;
    let maps: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let create = |map: ConfigMap| {
        let maps = maps.clone();
        async move {
            maps.create(&PostParams::default(), &map)
                .await
                .expect("create")
        }
    };
    let gone = |name: &'static str| {
        let maps = maps.clone();
        async move { maps.get_opt(name).await.expect("get").is_none() }
    };

    // Foreground: the owner waits for its blocking dependent, not for the others.
    let owner = create(config_map("owner", serde_json::json!([]), &[])).await;
    create(config_map(
        "blocking",
        serde_json::json!([owned_by(&owner, true)]),
        &["example.com/hold"],
    ))
    .await;
    create(config_map(
        "plain",
        serde_json::json!([owned_by(&owner, false)]),
        &[],
    ))
    .await;
    maps.delete("owner", &DeleteParams::foreground())
        .await
        .expect("delete");
    eventually("the non-blocking dependent goes", || gone("plain")).await;
    let blocking = maps.get("blocking").await.expect("held by its finalizer");
    assert!(
        blocking.metadata.deletion_timestamp.is_some(),
        "being deleted"
    );
    let waiting = maps.get("owner").await.expect("the owner waits");
    assert_eq!(waiting.finalizers(), ["foregroundDeletion"]);
    maps.patch(
        "blocking",
        &PatchParams::default(),
        &Patch::Merge(serde_json::json!({"metadata": {"finalizers": null}})),
    )
    .await
    .expect("release");
    eventually("the owner goes once its blocking dependent is gone", || {
        gone("owner")
    })
    .await;

    // Orphan: the dependent stays, without the reference.
    let parent = create(config_map("parent", serde_json::json!([]), &[])).await;
    create(config_map(
        "child",
        serde_json::json!([owned_by(&parent, true)]),
        &[],
    ))
    .await;
    maps.delete("parent", &DeleteParams::orphan())
        .await
        .expect("delete");
    eventually("the orphaning owner goes", || gone("parent")).await;
    let child = maps.get("child").await.expect("the orphan stays");
    assert!(
        child.owner_references().is_empty(),
        "{:?}",
        child.owner_references()
    );

    // Background: a dependent of a missing owner goes; one with an owner left loses only
    // the dangling reference.
    let missing = serde_json::json!({
        "apiVersion": "v1", "kind": "ConfigMap", "name": "never", "uid": "00000000-0000-0000-0000-000000000000",
    });
    create(config_map("stray", serde_json::json!([missing]), &[])).await;
    let keeper = create(config_map("keeper", serde_json::json!([]), &[])).await;
    create(config_map(
        "shared",
        serde_json::json!([missing, owned_by(&keeper, false)]),
        &[],
    ))
    .await;
    eventually("the stray dependent goes", || gone("stray")).await;
    eventually("the dangling reference is removed", || async {
        let shared = maps.get("shared").await.expect("kept by its other owner");
        shared.owner_references().len() == 1 && shared.owner_references()[0].name == "keeper"
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chosen_pods_fail_and_their_workloads_report_it() {
    let knobs = SimulationKnobs {
        failing_pods: Some("app=broken".parse().expect("a selector")),
        ..SimulationKnobs::default()
    };
    let (_server, client) = serve_with(Simulators::all(), knobs).await;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
    deployments
        .create(
            &PostParams::default(),
            &web_deployment("broken", "nginx", serde_json::json!({"app": "broken"})),
        )
        .await
        .expect("create");
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    eventually("the pods crash-loop", || async {
        let listed = pods
            .list(&ListParams::default().labels("app=broken"))
            .await
            .expect("list");
        listed.items.len() == 2
            && listed.items.iter().all(|pod| {
                let status = serde_json::to_value(&pod.status).expect("json");
                status.pointer("/containerStatuses/0/state/waiting/reason")
                    == Some(&serde_json::json!("CrashLoopBackOff"))
                    && status["phase"] == "Running"
            })
    })
    .await;
    eventually("the Deployment misses its progress deadline", || async {
        let deployment = deployments.get("broken").await.expect("get");
        deployment_condition(&deployment, "Progressing")
            == Some(("False".to_owned(), "ProgressDeadlineExceeded".to_owned()))
            && deployment_condition(&deployment, "Available")
                == Some(("False".to_owned(), "MinimumReplicasUnavailable".to_owned()))
    })
    .await;

    let jobs: Api<Job> = Api::namespaced(client.clone(), "default");
    jobs.create(
        &PostParams::default(),
        &object(serde_json::json!({
            "metadata": {"name": "doomed"},
            "spec": {
                "backoffLimit": 0,
                "template": {
                    "metadata": {"labels": {"app": "broken"}},
                    "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]},
                },
            },
        })),
    )
    .await
    .expect("create the Job");
    eventually("the Job fails", || async {
        let job = serde_json::to_value(jobs.get("doomed").await.expect("get")).expect("json");
        job.pointer("/status/failed") == Some(&serde_json::json!(1))
            && job["status"]["conditions"]
                .as_array()
                .is_some_and(|conditions| {
                    conditions.iter().any(|condition| {
                        condition["type"] == "Failed"
                            && condition["reason"] == "BackoffLimitExceeded"
                    })
                })
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_services_claims_accounts_stateful_and_daemon_sets_and_autoscalers_progress() {
    let (_server, client) = serve(Simulators::all()).await;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    namespaces
        .create(
            &PostParams::default(),
            &object(serde_json::json!({"metadata": {"name": "team"}})),
        )
        .await
        .expect("create a namespace");
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), "team");
    eventually("the namespace gets its default ServiceAccount", || async {
        accounts.get_opt("default").await.expect("get").is_some()
    })
    .await;

    let jobs: Api<Job> = Api::namespaced(client.clone(), "team");
    jobs.create(
        &PostParams::default(),
        &object(serde_json::json!({
            "metadata": {"name": "once"},
            "spec": {
                "completions": 2,
                "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}},
            },
        })),
    )
    .await
    .expect("create the Job");
    let job = jobs.get("once").await.expect("get");
    let uid = job.uid().expect("uid");
    let selector = serde_json::to_value(&job.spec.as_ref().expect("spec").selector).expect("json");
    assert_eq!(
        selector,
        serde_json::json!({"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}),
        "the server generates the Job's selector"
    );
    eventually("the Job completes", || async {
        let job = serde_json::to_value(jobs.get("once").await.expect("get")).expect("json");
        job.pointer("/status/succeeded") == Some(&serde_json::json!(2))
            && job.pointer("/status/completionTime").is_some()
            && job["status"]["conditions"]
                .as_array()
                .is_some_and(|conditions| {
                    conditions.iter().any(|condition| {
                        condition["type"] == "Complete"
                            && condition["reason"] == "CompletionsReached"
                    })
                })
    })
    .await;

    let services: Api<Service> = Api::namespaced(client.clone(), "team");
    services
        .create(
            &PostParams::default(),
            &object(serde_json::json!({
                "metadata": {"name": "lb"},
                "spec": {"type": "LoadBalancer", "ports": [{"port": 80}]},
            })),
        )
        .await
        .expect("create the Service");
    eventually("the load balancer gets an address", || async {
        let service = serde_json::to_value(services.get("lb").await.expect("get")).expect("json");
        service
            .pointer("/status/loadBalancer/ingress/0/ip")
            .and_then(serde_json::Value::as_str)
            .is_some_and(|ip| ip.starts_with("172.18.255."))
    })
    .await;

    let sets: Api<StatefulSet> = Api::namespaced(client.clone(), "team");
    sets.create(
        &PostParams::default(),
        &object(serde_json::json!({
            "metadata": {"name": "db"},
            "spec": {
                "replicas": 2,
                "serviceName": "db",
                "selector": {"matchLabels": {"app": "db"}},
                "template": {"metadata": {"labels": {"app": "db"}}, "spec": {"containers": [{"name": "db", "image": "postgres"}]}},
                "volumeClaimTemplates": [{
                    "metadata": {"name": "data"},
                    "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
                }],
            },
        })),
    )
    .await
    .expect("create the StatefulSet");
    let pods: Api<Pod> = Api::namespaced(client.clone(), "team");
    eventually("the StatefulSet's ordered pods are ready", || async {
        let set = sets.get("db").await.expect("get");
        let status = set.status.clone().unwrap_or_default();
        status.ready_replicas == Some(2)
            && status.current_revision == status.update_revision
            && pods.get_opt("db-1").await.expect("get").is_some()
    })
    .await;
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), "team");
    eventually("its claims are bound", || async {
        let claim = claims.get_opt("data-db-0").await.expect("get");
        claim.is_some_and(|claim| {
            claim.status.and_then(|status| status.phase).as_deref() == Some("Bound")
                && claim.spec.and_then(|spec| spec.volume_name).is_some()
        })
    })
    .await;

    let daemons: Api<DaemonSet> = Api::namespaced(client.clone(), "team");
    daemons
        .create(
            &PostParams::default(),
            &object(serde_json::json!({
                "metadata": {"name": "agent"},
                "spec": {
                    "selector": {"matchLabels": {"app": "agent"}},
                    "template": {"metadata": {"labels": {"app": "agent"}}, "spec": {"containers": [{"name": "a", "image": "agent"}]}},
                },
            })),
        )
        .await
        .expect("create the DaemonSet");
    eventually("the DaemonSet's pod is ready on the node", || async {
        let status = daemons
            .get("agent")
            .await
            .expect("get")
            .status
            .unwrap_or_default();
        status.desired_number_scheduled == 1 && status.number_ready == 1
    })
    .await;

    let autoscalers: Api<HorizontalPodAutoscaler> = Api::namespaced(client.clone(), "team");
    autoscalers
        .create(
            &PostParams::default(),
            &object(serde_json::json!({
                "metadata": {"name": "db"},
                "spec": {
                    "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db"},
                    "minReplicas": 3,
                    "maxReplicas": 5,
                },
            })),
        )
        .await
        .expect("create the autoscaler");
    eventually(
        "the autoscaler raises its target to the minimum",
        || async {
            let status = autoscalers
                .get("db")
                .await
                .expect("get")
                .status
                .unwrap_or_default();
            let set = sets.get("db").await.expect("get");
            status.desired_replicas == 3
                && set.spec.and_then(|spec| spec.replicas) == Some(3)
                && set.status.and_then(|status| status.ready_replicas) == Some(3)
        },
    )
    .await;

    // A claim in use stays protected; once its pods are gone it goes, and so does its volume.
    let claim = claims.get("data-db-0").await.expect("get");
    let volume = claim
        .spec
        .and_then(|spec| spec.volume_name)
        .expect("bound to a volume");
    claims
        .delete("data-db-0", &DeleteParams::default())
        .await
        .expect("delete the claim");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let protected = claims
        .get("data-db-0")
        .await
        .expect("held while db-0 uses it");
    assert_eq!(protected.finalizers(), ["kubernetes.io/pvc-protection"]);
    autoscalers
        .delete("db", &DeleteParams::default())
        .await
        .expect("delete the autoscaler");
    sets.delete("db", &DeleteParams::default())
        .await
        .expect("delete the StatefulSet");
    let volumes: Api<k8s_openapi::api::core::v1::PersistentVolume> = Api::all(client.clone());
    eventually("the claim and its volume go with the pods", || async {
        claims.get_opt("data-db-0").await.expect("get").is_none()
            && volumes.get_opt(&volume).await.expect("get").is_none()
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_test_knobs_see_only_the_clients_under_test() {
    let (server, client) = serve(Simulators::all()).await;
    // Latency for the client under test; the simulated controllers are not slowed down.
    server.set_latency(Duration::from_millis(100));
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
    deployments
        .create(
            &PostParams::default(),
            &web_deployment("web", "nginx", serde_json::json!({"app": "web"})),
        )
        .await
        .expect("create the Deployment");
    eventually("the Deployment becomes available", || async {
        let deployment = deployments.get("web").await.expect("get");
        deployment
            .status
            .and_then(|status| status.available_replicas)
            == Some(2)
    })
    .await;
    let counts = server.request_counts();
    assert_eq!(
        counts.get(&("create".to_owned(), "deployments".to_owned())),
        Some(&1)
    );
    let others: Vec<_> = counts
        .keys()
        .filter(|(_, resource)| resource != "deployments")
        .collect();
    assert!(
        others.is_empty(),
        "the simulated controllers' requests are not counted: {others:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_deployment_waits_and_says_so_until_resumed() {
    let (_server, client) = serve(Simulators::all()).await;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
    let sets: Api<ReplicaSet> = Api::namespaced(client.clone(), "default");
    deployments
        .create(
            &PostParams::default(),
            &web_deployment("web", "nginx:1.27", serde_json::json!({"app": "web"})),
        )
        .await
        .expect("create");
    let merge = |patch: serde_json::Value| {
        let deployments = deployments.clone();
        async move {
            deployments
                .patch("web", &PatchParams::default(), &Patch::Merge(patch))
                .await
                .expect("patch")
        }
    };
    eventually("the Deployment is available", || async {
        let deployment = deployments.get("web").await.expect("get");
        deployment_condition(&deployment, "Progressing")
            == Some(("True".to_owned(), "NewReplicaSetAvailable".to_owned()))
    })
    .await;
    merge(serde_json::json!({"spec": {"paused": true}})).await;
    merge(serde_json::json!({"spec": {"template": {"spec": {"containers": [{"name": "app", "image": "nginx:1.28"}]}}}})).await;
    eventually("the Deployment reports it is paused", || async {
        let deployment = deployments.get("web").await.expect("get");
        deployment_condition(&deployment, "Progressing")
            == Some(("Unknown".to_owned(), "DeploymentPaused".to_owned()))
    })
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let listed = sets.list(&ListParams::default()).await.expect("list");
    assert_eq!(listed.items.len(), 1, "no rollout while paused");
    merge(serde_json::json!({"spec": {"paused": false}})).await;
    eventually("the new template rolls out once resumed", || async {
        let deployment = deployments.get("web").await.expect("get");
        let sets = sets.list(&ListParams::default()).await.expect("list").items;
        sets.len() == 2
            && deployment.status.and_then(|status| status.updated_replicas) == Some(2)
            && deployments
                .get("web")
                .await
                .map(|d| {
                    deployment_condition(&d, "Progressing")
                        == Some(("True".to_owned(), "NewReplicaSetAvailable".to_owned()))
                })
                .unwrap_or(false)
    })
    .await;
}

/// With TLS, every namespace has the `kube-root-ca.crt` ConfigMap with the authority that
/// signed the server's certificate, as kube-controller-manager's root CA publisher makes it:
/// new namespaces get it, and it is put back when deleted or changed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_namespace_has_the_root_ca_config_map() {
    let server = kro_apiserver::start(kro_apiserver::ServerConfig {
        token: Some("secret".to_owned()),
        tls: true,
        simulators: Simulators::all(),
        ..kro_apiserver::ServerConfig::default()
    })
    .await
    .expect("the server starts");
    let authority = server
        .authority_pem()
        .expect("TLS has an authority")
        .to_owned();
    let kubeconfig = kube::config::Kubeconfig::from_yaml(&server.kubeconfig()).expect("kubeconfig");
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .expect("a client configuration");
    let client = kube::Client::try_from(config).expect("a client");
    let ca = |namespace: &str| {
        let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
        async move {
            config_maps
                .get_opt("kube-root-ca.crt")
                .await
                .expect("get")
                .and_then(|config_map| config_map.data)
                .and_then(|data| data.get("ca.crt").cloned())
        }
    };
    for namespace in ["default", "kube-system", "kube-public"] {
        eventually(&format!("{namespace} gets the root CA"), || async {
            ca(namespace).await.as_deref() == Some(authority.as_str())
        })
        .await;
    }
    let namespaces: Api<Namespace> = Api::all(client.clone());
    namespaces
        .create(
            &PostParams::default(),
            &object(serde_json::json!({"metadata": {"name": "team"}})),
        )
        .await
        .expect("create a namespace");
    eventually("a new namespace gets the root CA", || async {
        ca("team").await.as_deref() == Some(authority.as_str())
    })
    .await;
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), "team");
    let published = config_maps.get("kube-root-ca.crt").await.expect("get");
    assert!(
        published
            .metadata
            .annotations
            .as_ref()
            .and_then(|annotations| annotations.get("kubernetes.io/description"))
            .is_some_and(|description| description.contains("CA bundle")),
        "{published:?}"
    );

    config_maps
        .patch(
            "kube-root-ca.crt",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(serde_json::json!({"data": {"ca.crt": "tampered"}})),
        )
        .await
        .expect("patch");
    eventually("a changed root CA is put back", || async {
        ca("team").await.as_deref() == Some(authority.as_str())
    })
    .await;
    config_maps
        .delete("kube-root-ca.crt", &DeleteParams::default())
        .await
        .expect("delete");
    eventually("a deleted root CA is made again", || async {
        ca("team").await.as_deref() == Some(authority.as_str())
    })
    .await;
}

/// A Service's EndpointSlice and Endpoints list the ready pods it selects, with the named
/// target port resolved, follow the pods, and go with the Service.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn services_get_endpoint_slices_and_endpoints_from_their_pods() {
    use k8s_openapi::api::core::v1::Endpoints;
    use k8s_openapi::api::discovery::v1::EndpointSlice;
    let (_server, client) = serve(Simulators::all()).await;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
    let mut web = web_deployment("web", "nginx:1.27", serde_json::json!({"app": "web"}));
    if let Some(container) = web
        .spec
        .as_mut()
        .and_then(|spec| spec.template.spec.as_mut())
        .and_then(|spec| spec.containers.first_mut())
    {
        container.ports = Some(vec![object(
            serde_json::json!({"name": "http", "containerPort": 8080}),
        )]);
    }
    deployments
        .create(&PostParams::default(), &web)
        .await
        .expect("create the Deployment");
    let services: Api<Service> = Api::namespaced(client.clone(), "default");
    let service: Service = object(serde_json::json!({
        "metadata": {"name": "web", "labels": {"tier": "front"}},
        "spec": {"selector": {"app": "web"}, "ports": [{"name": "web", "port": 80, "targetPort": "http"}]},
    }));
    services
        .create(&PostParams::default(), &service)
        .await
        .expect("create the Service");
    let slices: Api<EndpointSlice> = Api::namespaced(client.clone(), "default");
    let by_service = ListParams::default().labels(
        "kubernetes.io/service-name=web,endpointslice.kubernetes.io/managed-by=endpointslice-controller.k8s.io",
    );
    eventually("the slice lists both ready pods", || async {
        let listed = slices.list(&by_service).await.expect("list").items;
        listed.len() == 1
            && listed[0].endpoints.len() == 2
            && listed[0]
                .endpoints
                .iter()
                .all(|endpoint| endpoint.conditions.as_ref().and_then(|c| c.ready) == Some(true))
    })
    .await;
    let slice = slices
        .list(&by_service)
        .await
        .expect("list")
        .items
        .remove(0);
    assert_eq!(slice.address_type, "IPv4");
    assert!(
        slice
            .metadata
            .name
            .as_deref()
            .is_some_and(|name| name.starts_with("web-"))
    );
    assert_eq!(
        slice.labels().get("tier").map(String::as_str),
        Some("front")
    );
    let port = slice
        .ports
        .as_ref()
        .and_then(|ports| ports.first())
        .expect("a port");
    assert_eq!((port.name.as_deref(), port.port), (Some("web"), Some(8080)));
    // The Endpoints are written after the slice: wait for them too.
    let endpoints: Api<Endpoints> = Api::namespaced(client.clone(), "default");
    eventually("the Endpoints list both pods", || async {
        endpoints
            .get_opt("web")
            .await
            .expect("get the Endpoints")
            .and_then(|written| written.subsets)
            .and_then(|subsets| subsets.into_iter().next())
            .and_then(|subset| subset.addresses)
            .is_some_and(|addresses| addresses.len() == 2)
    })
    .await;
    deployments
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"spec": {"replicas": 1}})),
        )
        .await
        .expect("scale down");
    eventually("the slice follows the pods", || async {
        let listed = slices.list(&by_service).await.expect("list").items;
        listed.len() == 1 && listed[0].endpoints.len() == 1
    })
    .await;
    services
        .delete("web", &DeleteParams::default())
        .await
        .expect("delete the Service");
    eventually(
        "the slice and the Endpoints go with the Service",
        || async {
            slices
                .list(&by_service)
                .await
                .expect("list")
                .items
                .is_empty()
                && endpoints.get_opt("web").await.expect("get").is_none()
        },
    )
    .await;
}

/// A StatefulSet keeps a ControllerRevision per pod template, numbered up, as `kubectl
/// rollout history` reads them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stateful_sets_keep_a_controller_revision_per_template() {
    use k8s_openapi::api::apps::v1::ControllerRevision;
    let (_server, client) = serve(Simulators::all()).await;
    let sets: Api<StatefulSet> = Api::namespaced(client.clone(), "default");
    let set: StatefulSet = object(serde_json::json!({
        "metadata": {"name": "db"},
        "spec": {
            "replicas": 1,
            "serviceName": "db",
            "selector": {"matchLabels": {"app": "db"}},
            "template": {
                "metadata": {"labels": {"app": "db"}},
                "spec": {"containers": [{"name": "db", "image": "postgres:16"}]},
            },
        },
    }));
    sets.create(&PostParams::default(), &set)
        .await
        .expect("create the StatefulSet");
    let revisions: Api<ControllerRevision> = Api::namespaced(client.clone(), "default");
    let numbered = || async {
        let mut listed: Vec<(i64, String)> = revisions
            .list(&ListParams::default().labels("app=db"))
            .await
            .expect("list")
            .items
            .into_iter()
            .map(|revision| (revision.revision, revision.name_any()))
            .collect();
        listed.sort();
        listed
    };
    eventually("the first revision", || async {
        numbered().await.len() == 1
    })
    .await;
    let first = numbered().await;
    assert_eq!(first[0].0, 1);
    assert!(first[0].1.starts_with("db-"), "{first:?}");
    sets.patch(
        "db",
        &PatchParams::default(),
        &Patch::Merge(serde_json::json!({"spec": {"template": {"spec": {
            "containers": [{"name": "db", "image": "postgres:17"}]}}}})),
    )
    .await
    .expect("change the template");
    eventually("the second revision", || async {
        numbered().await.len() == 2
    })
    .await;
    let both = numbered().await;
    assert_eq!((both[0].0, both[1].0), (1, 2));
    let status = sets
        .get("db")
        .await
        .expect("get")
        .status
        .unwrap_or_default();
    assert!(
        both.iter()
            .any(|(_, name)| Some(name) == status.update_revision.as_ref()),
        "{both:?} {status:?}"
    );
}

/// A workload's ControllerRevisions as `(revision, name, image)`, oldest first.
async fn revision_history(
    client: &kube::Client,
    namespace: &str,
    owner: &str,
) -> Vec<(i64, String, String)> {
    use k8s_openapi::api::apps::v1::ControllerRevision;
    let revisions: Api<ControllerRevision> = Api::namespaced(client.clone(), namespace);
    let mut listed: Vec<(i64, String, String)> = revisions
        .list(&ListParams::default())
        .await
        .expect("list")
        .items
        .into_iter()
        .filter(|revision| {
            revision
                .owner_references()
                .iter()
                .any(|reference| reference.name == owner)
        })
        .map(|revision| {
            let image = revision
                .data
                .as_ref()
                .and_then(|data| data.0.pointer("/spec/template/spec/containers/0/image"))
                .and_then(serde_json::Value::as_str)
                .unwrap_or_default()
                .to_owned();
            (revision.revision, revision.name_any(), image)
        })
        .collect();
    listed.sort();
    listed
}

fn stateful_set(name: &str, image: &str, history_limit: i32) -> StatefulSet {
    object(serde_json::json!({
        "metadata": {"name": name},
        "spec": {
            "replicas": 1,
            "serviceName": name,
            "revisionHistoryLimit": history_limit,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "main", "image": image}]},
            },
        },
    }))
}

fn with_image(image: &str) -> Patch<serde_json::Value> {
    Patch::Strategic(serde_json::json!({"spec": {"template": {"spec": {
        "containers": [{"name": "main", "image": image}]}}}}))
}

/// Waits until the StatefulSet's pods all run its template at `image`, and returns its
/// update revision.
async fn rolled_out(sets: &Api<StatefulSet>, name: &str, image: &str) -> String {
    let settled = || async {
        let set = sets.get(name).await.expect("get");
        let status = set.status.clone().unwrap_or_default();
        let template_image = set
            .spec
            .as_ref()
            .and_then(|spec| spec.template.spec.as_ref())
            .map(|spec| spec.containers[0].image.clone().unwrap_or_default());
        let done = template_image.as_deref() == Some(image)
            && status.observed_generation == set.metadata.generation
            && status.updated_replicas == Some(1)
            && status.ready_replicas == Some(1)
            && status.current_revision == status.update_revision;
        done.then(|| status.update_revision.unwrap_or_default())
    };
    eventually(&format!("{name} rolls out {image}"), || async {
        settled().await.is_some()
    })
    .await;
    settled().await.expect("rolled out")
}

/// Pruning to `revisionHistoryLimit`, and a rollback (the undo patch, a revision's data)
/// reusing the revision that holds the template, renumbered last, as kube-controller-manager
/// does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stateful_sets_prune_their_history_and_reuse_a_rolled_back_revision() {
    let (_server, client) = serve(Simulators::all()).await;
    let sets: Api<StatefulSet> = Api::namespaced(client.clone(), "default");
    sets.create(&PostParams::default(), &stateful_set("db", "db:1", 2))
        .await
        .expect("create the StatefulSet");
    rolled_out(&sets, "db", "db:1").await;
    for image in ["db:2", "db:3", "db:4"] {
        sets.patch("db", &PatchParams::default(), &with_image(image))
            .await
            .expect("change the image");
        rolled_out(&sets, "db", image).await;
    }
    // Two revisions besides the one in use; db:1 went first.
    eventually("the oldest revision is pruned", || async {
        revision_history(&client, "default", "db").await.len() == 3
    })
    .await;
    let history = revision_history(&client, "default", "db").await;
    let numbered: Vec<(i64, &str)> = history
        .iter()
        .map(|(number, _, image)| (*number, image.as_str()))
        .collect();
    assert_eq!(numbered, [(2, "db:2"), (3, "db:3"), (4, "db:4")]);

    // `kubectl rollout undo --to-revision=2`: the revision's data, as a strategic merge patch.
    use k8s_openapi::api::apps::v1::ControllerRevision;
    let revisions: Api<ControllerRevision> = Api::namespaced(client.clone(), "default");
    let second = revisions.get(&history[0].1).await.expect("revision 2");
    let data = second.data.expect("data").0;
    sets.patch("db", &PatchParams::default(), &Patch::Strategic(data))
        .await
        .expect("roll back");
    let update = rolled_out(&sets, "db", "db:2").await;
    assert_eq!(update, history[0].1, "the rollback reuses revision 2");
    eventually("revision 2 is renumbered 5", || async {
        let now = revision_history(&client, "default", "db").await;
        now.iter()
            .map(|(number, name, _)| (*number, name.clone()))
            .collect::<Vec<_>>()
            == [
                (3, history[1].1.clone()),
                (4, history[2].1.clone()),
                (5, history[0].1.clone()),
            ]
    })
    .await;
    let status = sets.get("db").await.expect("get").status.expect("status");
    assert_eq!(status.collision_count, Some(0));
}

/// A revision name taken by a revision with other data is a hash collision: the StatefulSet
/// counts it in `status.collisionCount` and takes the next name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stateful_set_whose_revision_name_is_taken_counts_a_collision() {
    use k8s_openapi::api::apps::v1::ControllerRevision;
    let (_server, client) = serve(Simulators::all()).await;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    namespaces
        .create(
            &PostParams::default(),
            &object(serde_json::json!({"metadata": {"name": "scout"}})),
        )
        .await
        .expect("create a namespace");
    // The same template elsewhere shows the name the revision will want.
    let scouts: Api<StatefulSet> = Api::namespaced(client.clone(), "scout");
    scouts
        .create(&PostParams::default(), &stateful_set("db", "db:1", 10))
        .await
        .expect("create the scout");
    let wanted = rolled_out(&scouts, "db", "db:1").await;
    let revisions: Api<ControllerRevision> = Api::namespaced(client.clone(), "default");
    revisions
        .create(
            &PostParams::default(),
            &object(serde_json::json!({
                "metadata": {"name": wanted, "labels": {"app": "squatter"}},
                "data": {"spec": {"template": {"$patch": "replace"}}},
                "revision": 1,
            })),
        )
        .await
        .expect("take the name");
    let sets: Api<StatefulSet> = Api::namespaced(client.clone(), "default");
    sets.create(&PostParams::default(), &stateful_set("db", "db:1", 10))
        .await
        .expect("create the StatefulSet");
    let update = rolled_out(&sets, "db", "db:1").await;
    assert_ne!(update, wanted);
    assert!(update.starts_with("db-"), "{update}");
    let status = sets.get("db").await.expect("get").status.expect("status");
    assert_eq!(status.collision_count, Some(1), "{status:?}");
    let history = revision_history(&client, "default", "db").await;
    assert_eq!(history, [(1, update, "db:1".to_owned())]);
}

/// A DaemonSet keeps its revisions as its controller does: the limit counts every old
/// revision, and a rollback reuses the revision holding the template.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn daemon_sets_prune_their_history_and_reuse_a_rolled_back_revision() {
    use k8s_openapi::api::apps::v1::ControllerRevision;
    let (_server, client) = serve(Simulators::all()).await;
    let daemons: Api<DaemonSet> = Api::namespaced(client.clone(), "default");
    daemons
        .create(
            &PostParams::default(),
            &object(serde_json::json!({
                "metadata": {"name": "agent"},
                "spec": {
                    "revisionHistoryLimit": 1,
                    "selector": {"matchLabels": {"app": "agent"}},
                    "template": {"metadata": {"labels": {"app": "agent"}}, "spec": {"containers": [{"name": "main", "image": "agent:1"}]}},
                },
            })),
        )
        .await
        .expect("create the DaemonSet");
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let settled = |image: &'static str| {
        let daemons = daemons.clone();
        let pods = pods.clone();
        async move {
            let set = daemons.get("agent").await.expect("get");
            let status = set.status.clone().unwrap_or_default();
            let running: Vec<String> = pods
                .list(&ListParams::default().labels("app=agent"))
                .await
                .expect("list")
                .items
                .into_iter()
                .filter(|pod| pod.metadata.deletion_timestamp.is_none())
                .filter_map(|pod| pod.spec?.containers[0].image.clone())
                .collect();
            status.observed_generation == set.metadata.generation
                && status.updated_number_scheduled == Some(1)
                && status.number_ready == 1
                && running == [image]
        }
    };
    eventually("agent:1 runs", || settled("agent:1")).await;
    for image in ["agent:2", "agent:3"] {
        daemons
            .patch("agent", &PatchParams::default(), &with_image(image))
            .await
            .expect("change the image");
        eventually("the new image runs", || settled(image)).await;
    }
    eventually("one old revision is kept", || async {
        let history = revision_history(&client, "default", "agent").await;
        history
            .iter()
            .map(|(number, _, image)| (*number, image.clone()))
            .collect::<Vec<_>>()
            == [(2, "agent:2".to_owned()), (3, "agent:3".to_owned())]
    })
    .await;
    let history = revision_history(&client, "default", "agent").await;
    let revisions: Api<ControllerRevision> = Api::namespaced(client.clone(), "default");
    let second = revisions.get(&history[0].1).await.expect("revision 2");
    let hash = second.labels()["controller-revision-hash"].clone();
    daemons
        .patch(
            "agent",
            &PatchParams::default(),
            &Patch::Strategic(second.data.expect("data").0),
        )
        .await
        .expect("roll back");
    eventually("agent:2 runs again", || settled("agent:2")).await;
    eventually("revision 2 is renumbered 4", || async {
        let now = revision_history(&client, "default", "agent").await;
        now.iter()
            .map(|(number, name, _)| (*number, name.clone()))
            .collect::<Vec<_>>()
            == [(3, history[1].1.clone()), (4, history[0].1.clone())]
    })
    .await;
    let labels: Vec<String> = pods
        .list(&ListParams::default().labels("app=agent"))
        .await
        .expect("list")
        .items
        .into_iter()
        .filter(|pod| pod.metadata.deletion_timestamp.is_none())
        .filter_map(|pod| pod.labels().get("controller-revision-hash").cloned())
        .collect();
    assert_eq!(labels, [hash]);
}
