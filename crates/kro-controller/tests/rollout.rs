//! Controlled rollout of RGD changes (gate `PropagationControl`): 20 instances move to a new
//! revision in waves of two (`linearlyReady(…, 2)`), in the documented order, with `Propagated`
//! never counting more than is true; a revision that never becomes Ready halts the rollout
//! after the first wave and leaves the other instances' objects untouched, and writing the old
//! spec back brings every instance to Ready again.
//!
//! On the embedded API server each instance is a Deployment whose pods the simulated cluster
//! runs (and fails, with `failing_pods`); on real kube-apiserver + etcd, where nothing runs
//! pods, each is a ConfigMap whose `readyWhen` reads its data.

mod common;

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use common::{Cluster, at, cluster_at};
use kro_controller::Settings;
use kro_graph::{Feature, FeatureGates};
use kube::api::{Api, DynamicObject, ListParams};
use serde_json::{Value, json};

const RGD: &str = "webapps";
const INSTANCES: usize = 20;

fn settings() -> Settings {
    Settings {
        features: FeatureGates::default().with(Feature::PropagationControl, true),
        ..Settings::default()
    }
}

/// What each instance is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Workload {
    /// A Deployment, Ready once every replica runs the current template; a broken revision
    /// labels its pods `broken=true`, which the simulated cluster fails.
    Pods,
    /// A ConfigMap, Ready while its `healthy` entry says `yes`; a broken revision says `no`.
    ConfigMaps,
}

impl Workload {
    /// The kind and apiVersion of each instance's object.
    fn object(self) -> (&'static str, &'static str) {
        match self {
            Workload::Pods => ("apps/v1", "Deployment"),
            Workload::ConfigMaps => ("v1", "ConfigMap"),
        }
    }
}

/// The RGD: one object per WebApp; `tier` is part of the template (a change to it is a new
/// revision), `broken` makes the revision one that never becomes Ready.
fn rgd(workload: Workload, tier: &str, broken: bool, annotations: Value) -> Value {
    let resource = match workload {
        Workload::Pods => {
            let mut labels = json!({"app": "${schema.metadata.name}", "tier": tier});
            if broken {
                labels["broken"] = json!("true");
            }
            json!({
                "id": "deployment",
                "readyWhen": [
                    "${deployment.status.observedGeneration == deployment.metadata.generation}",
                    "${deployment.status.replicas == 1}",
                    "${deployment.status.updatedReplicas == 1}",
                    "${deployment.status.availableReplicas == 1}",
                ],
                "template": {
                    "apiVersion": "apps/v1", "kind": "Deployment",
                    "metadata": {"name": "${schema.metadata.name}"},
                    "spec": {
                        "replicas": 1,
                        "selector": {"matchLabels": {"app": "${schema.metadata.name}"}},
                        "template": {
                            "metadata": {"labels": labels},
                            "spec": {"containers": [{"name": "app", "image": "${schema.spec.image}"}]},
                        },
                    },
                },
            })
        }
        Workload::ConfigMaps => json!({
            "id": "config",
            "readyWhen": ["${config.data.healthy == 'yes'}"],
            "template": {
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "${schema.metadata.name}"},
                "data": {
                    "image": "${schema.spec.image}",
                    "tier": tier,
                    "healthy": if broken { "no" } else { "yes" },
                },
            },
        }),
    };
    json!({
        "apiVersion": "kro.run/v1alpha1", "kind": "ResourceGraphDefinition",
        "metadata": {"name": RGD, "annotations": annotations},
        "spec": {
            "propagateWhen": ["${linearlyReady(webapp, webapps, 2)}"],
            "schema": {"apiVersion": "v1alpha1", "kind": "WebApp",
                "spec": {"image": "string | default=\"nginx:1\""}},
            "resources": [resource],
        },
    })
}

fn condition<'a>(object: &'a Value, kind: &str) -> Option<&'a Value> {
    object["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|condition| condition["type"] == kind)
}

/// The revision an instance was last reconciled against, and whether it is Ready on it.
fn revision_of(instance: &Value) -> Option<(i64, bool)> {
    let condition = condition(instance, "RevisionReconciled")?;
    let number = condition["reason"]
        .as_str()?
        .strip_prefix("Revision")?
        .parse()
        .ok()?;
    Some((number, condition["status"] == "True"))
}

/// The instances, by name.
async fn instances(cluster: &Cluster) -> BTreeMap<String, Value> {
    let kind = cluster
        .kind_of(&json!({"apiVersion": "kro.run/v1alpha1", "kind": "WebApp"}))
        .await;
    let api: Api<DynamicObject> = kind.api(&cluster.client, Some("default"));
    api.list(&ListParams::default())
        .await
        .expect("WebApps are listed")
        .items
        .into_iter()
        .map(|instance| {
            let value = serde_json::to_value(&instance).expect("JSON");
            (instance.metadata.name.unwrap_or_default(), value)
        })
        .collect()
}

/// The RGD's `Propagated` condition.
async fn propagated(cluster: &Cluster) -> Option<Value> {
    let rgd = cluster
        .get(cluster_at(
            "kro.run/v1alpha1",
            "ResourceGraphDefinition",
            RGD,
        ))
        .await?;
    condition(&rgd, "Propagated").cloned()
}

/// How many instances `Propagated` says are on `revision`.
fn reported(condition: &Value, revision: i64) -> usize {
    let message = condition["message"].as_str().unwrap_or_default();
    if let Some(all) = message.strip_prefix("all ") {
        let suffix = format!(" instances on revision {revision}");
        return all
            .strip_suffix(&suffix)
            .and_then(|count| count.parse().ok())
            .unwrap_or_else(|| panic!("Propagated says {message:?}"));
    }
    let counted = message
        .rsplit("; ")
        .next()
        .unwrap_or(message)
        .strip_suffix(&format!(" instances on revision {revision}"))
        .unwrap_or_else(|| panic!("Propagated says {message:?}, not revision {revision}"));
    let (count, _) = counted.split_once('/').expect("K/N");
    count.parse().expect("a count")
}

/// Creates the instances: the first half (named `zeta-*`) over a second before the second
/// half (`alpha-*`), so that age and name give different orders.
async fn create_instances(cluster: &Cluster) -> Vec<String> {
    cluster
        .wait_for(
            cluster_at("kro.run/v1alpha1", "ResourceGraphDefinition", RGD),
            "Active",
            |rgd| rgd.is_some_and(|rgd| rgd["status"]["state"] == "Active"),
        )
        .await;
    let mut order = Vec::new();
    for (group, wait) in [("zeta", true), ("alpha", false)] {
        for index in 0..INSTANCES / 2 {
            let name = format!("{group}-{index:02}");
            cluster
                .apply(&json!({
                    "apiVersion": "kro.run/v1alpha1", "kind": "WebApp",
                    "metadata": {"name": name, "namespace": "default"},
                    "spec": {},
                }))
                .await;
            order.push(name);
        }
        if wait {
            // creationTimestamp has a resolution of one second.
            tokio::time::sleep(Duration::from_millis(1100)).await;
        }
    }
    order
}

/// Waits until every instance is Ready on `revision` and `Propagated` says so.
async fn wait_converged(cluster: &Cluster, revision: i64) {
    let started = Instant::now();
    loop {
        let instances = instances(cluster).await;
        let on = instances
            .values()
            .filter(|instance| revision_of(instance) == Some((revision, true)))
            .count();
        let condition = propagated(cluster).await;
        let done = condition.as_ref().is_some_and(|condition| {
            condition["status"] == "True" && reported(condition, revision) == INSTANCES
        });
        if on == INSTANCES && done {
            for instance in instances.values() {
                assert_eq!(instance["status"]["observedRevision"], revision);
            }
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(90),
            "{on}/{INSTANCES} instances Ready on revision {revision}; Propagated: {condition:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A change moves in waves of two, in the documented order.
async fn waves(cluster: &Cluster, workload: Workload) {
    cluster.apply(&rgd(workload, "v1", false, json!({}))).await;
    let created = create_instances(cluster).await;
    wait_converged(cluster, 1).await;

    cluster.apply(&rgd(workload, "v2", false, json!({}))).await;
    // The order the rollout must follow: all are Ready, so the oldest first (zeta-*, created a
    // second earlier), then by name.
    let expected = created;
    let mut first_seen: HashMap<String, usize> = HashMap::new();
    let mut sample = 0usize;
    let mut most_in_flight = 0;
    let started = Instant::now();
    loop {
        // The RGD first: what it reports was counted before the instances are listed.
        let condition = propagated(cluster).await;
        let instances = instances(cluster).await;
        let mut in_flight = Vec::new();
        let mut on_revision = 0;
        for (name, instance) in &instances {
            match revision_of(instance) {
                Some((2, ready)) => {
                    first_seen.entry(name.clone()).or_insert(sample);
                    if ready {
                        on_revision += 1;
                    } else {
                        in_flight.push(name.clone());
                    }
                }
                Some((1, true)) => {}
                other => panic!("{name}: RevisionReconciled {other:?} during the rollout"),
            }
        }
        assert!(
            in_flight.len() <= 2,
            "sample {sample}: more than 2 instances updated and not Ready: {in_flight:?}"
        );
        most_in_flight = most_in_flight.max(in_flight.len());
        if let Some(condition) = &condition
            && condition["reason"] != "AllInstancesUpdated"
            && condition["message"]
                .as_str()
                .is_some_and(|message| message.ends_with("revision 2"))
        {
            let count = reported(condition, 2);
            assert!(
                count <= on_revision,
                "sample {sample}: Propagated says {count} instances on revision 2, {on_revision} are"
            );
        }
        if on_revision == INSTANCES
            && condition.as_ref().is_some_and(|condition| {
                condition["status"] == "True" && reported(condition, 2) == INSTANCES
            })
        {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "the rollout did not finish: {on_revision}/{INSTANCES} on revision 2, Propagated {condition:?}"
        );
        sample += 1;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(most_in_flight <= 2);
    // The two instances of a wave move together (either may show first); each wave after the
    // one before it.
    let waves: Vec<&[String]> = expected.chunks(2).collect();
    for pair in waves.windows(2) {
        let last_of_wave = pair[0].iter().map(|name| first_seen[name]).max();
        let first_of_next = pair[1].iter().map(|name| first_seen[name]).min();
        assert!(
            last_of_wave <= first_of_next,
            "wave {:?} moved before wave {:?} had (first samples {first_seen:?})",
            pair[1],
            pair[0]
        );
    }
    wait_converged(cluster, 2).await;
}

/// The resourceVersions of the objects of the instances `names`.
async fn object_versions(
    cluster: &Cluster,
    workload: Workload,
    names: &[String],
) -> BTreeMap<String, String> {
    let (api_version, kind) = workload.object();
    let mut versions = BTreeMap::new();
    for name in names {
        let object = cluster
            .get(at(api_version, kind, name))
            .await
            .expect("the instance's object");
        versions.insert(
            name.clone(),
            object["metadata"]["resourceVersion"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
        );
    }
    versions
}

/// A revision that never becomes Ready halts after the first wave; the old spec written back
/// (what `kro rollout undo` does) rolls out to every instance.
async fn halt_and_undo(cluster: &mut Cluster, workload: Workload) {
    let deadline = json!({"kro.run/progress-deadline": "3s"});
    cluster
        .apply(&rgd(workload, "v1", false, deadline.clone()))
        .await;
    let created = create_instances(cluster).await;
    wait_converged(cluster, 1).await;
    let before = object_versions(cluster, workload, &created).await;

    cluster
        .apply(&rgd(workload, "v1", true, deadline.clone()))
        .await;
    let started = Instant::now();
    let halted = loop {
        if let Some(condition) = propagated(cluster).await
            && condition["reason"] == "PropagationHalted"
        {
            break condition;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the rollout never halted"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let first_wave = &created[..2];
    let message = halted["message"].as_str().unwrap_or_default();
    assert_eq!(halted["status"], "False");
    assert!(
        first_wave.iter().any(|name| message.contains(&format!(
            "instance default/{name} is not Ready on revision 2 after 3s"
        ))),
        "{message}"
    );
    let failing = match workload {
        Workload::Pods => "deployment",
        Workload::ConfigMaps => "config",
    };
    assert!(
        message.contains(&format!("awaiting resource readiness: {failing}")),
        "the failing resource is named: {message}"
    );
    assert!(
        message.ends_with("0/20 instances on revision 2"),
        "{message}"
    );
    // Nothing beyond the first wave moved, and stays so.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let instances_now = instances(cluster).await;
    for (name, instance) in &instances_now {
        let expected = if first_wave.contains(name) {
            Some((2, false))
        } else {
            Some((1, true))
        };
        assert_eq!(revision_of(instance), expected, "{name}");
        assert_eq!(instance["status"]["observedRevision"], 1, "{name}");
    }
    let rest = &created[2..];
    let after = object_versions(cluster, workload, rest).await;
    for name in rest {
        assert_eq!(after[name], before[name], "{name}'s object was touched");
    }

    // A restarted controller (nothing in memory) finds the rollout halted from what the
    // instances say, and touches nothing more either; it never reports it done meanwhile.
    cluster.restart_controllers().await;
    let watching = Instant::now();
    while watching.elapsed() < Duration::from_secs(3) {
        let condition = propagated(cluster).await.expect("Propagated");
        assert_eq!(condition["reason"], "PropagationHalted", "{condition}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let instances_now = instances(cluster).await;
    for name in rest {
        assert_eq!(revision_of(&instances_now[name]), Some((1, true)), "{name}");
    }
    assert_eq!(object_versions(cluster, workload, rest).await, after);

    // Undo: the old spec written back is revision 3, rolled out under the same policy.
    cluster.apply(&rgd(workload, "v1", false, deadline)).await;
    wait_converged(cluster, 3).await;
    let (api_version, kind) = workload.object();
    for name in first_wave {
        let object = cluster
            .get(at(api_version, kind, name))
            .await
            .expect("the instance's object");
        match workload {
            Workload::Pods => {
                assert_eq!(
                    object["spec"]["template"]["metadata"]["labels"].get("broken"),
                    None,
                    "{name} is back on the old template"
                );
                assert_eq!(object["status"]["availableReplicas"], 1, "{name}");
            }
            Workload::ConfigMaps => assert_eq!(object["data"]["healthy"], "yes", "{name}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_moves_in_waves_of_two_in_the_documented_order() {
    let cluster = Cluster::start_configured(settings(), Default::default()).await;
    waves(&cluster, Workload::Pods).await;
    cluster.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revision_that_never_becomes_ready_halts_after_the_first_wave_and_undo_recovers() {
    let simulation = kro_apiserver::SimulationKnobs {
        failing_pods: Some("broken=true".parse().expect("a selector")),
        ..Default::default()
    };
    let mut cluster = Cluster::start_configured(settings(), simulation).await;
    halt_and_undo(&mut cluster, Workload::Pods).await;
    cluster.stop().await;
}

/// A fresh real control plane with the controllers on it, or `None` when there is none here.
async fn real_cluster() -> Option<Cluster> {
    let control_plane = tokio::task::spawn_blocking(|| {
        kro_test_support::real_control_plane_or_skip("rollout scenarios")
    })
    .await
    .expect("the start task")?;
    Some(Cluster::start_real_with(control_plane, settings()).await)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rollouts_hold_on_a_real_control_plane() {
    let Some(cluster) = real_cluster().await else {
        return;
    };
    waves(&cluster, Workload::ConfigMaps).await;
    cluster.stop().await;
    let Some(mut cluster) = real_cluster().await else {
        return;
    };
    halt_and_undo(&mut cluster, Workload::ConfigMaps).await;
    cluster.stop().await;
}

/// An RGD whose instance runs one Deployment per zone, the zones' items moving one at a time
/// (`propagateWhen` on the collection, KREP-006).
fn zones_rgd(tier: &str, broken: bool) -> Value {
    let mut labels = json!({"app": "${zone}", "tier": tier});
    if broken {
        labels["broken"] = json!("true");
    }
    json!({
        "apiVersion": "kro.run/v1alpha1", "kind": "ResourceGraphDefinition",
        "metadata": {"name": "zoned"},
        "spec": {
            "schema": {"apiVersion": "v1alpha1", "kind": "Zoned",
                "spec": {"zones": "[]string"}},
            "resources": [{
                "id": "deployments",
                "forEach": [{"zone": "${schema.spec.zones}"}],
                "propagateWhen": ["${linearlyReady(zone, deployments, 1)}"],
                "readyWhen": [
                    "${each.status.observedGeneration == each.metadata.generation && each.status.replicas == 1 && each.status.updatedReplicas == 1 && each.status.availableReplicas == 1}",
                ],
                "template": {
                    "apiVersion": "apps/v1", "kind": "Deployment",
                    "metadata": {"name": "${schema.metadata.name + '-' + zone}"},
                    "spec": {
                        "replicas": 1,
                        "selector": {"matchLabels": {"app": "${zone}"}},
                        "template": {
                            "metadata": {"labels": labels},
                            "spec": {"containers": [{"name": "app", "image": "nginx:1"}]},
                        },
                    },
                },
            }],
        },
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_collection_s_items_move_one_at_a_time_and_halt_on_one_that_fails() {
    let simulation = kro_apiserver::SimulationKnobs {
        failing_pods: Some("broken=true".parse().expect("a selector")),
        ..Default::default()
    };
    let cluster = Cluster::start_configured(settings(), simulation).await;
    cluster.apply(&zones_rgd("v1", false)).await;
    cluster
        .wait_for(
            cluster_at("kro.run/v1alpha1", "ResourceGraphDefinition", "zoned"),
            "Active",
            |rgd| rgd.is_some_and(|rgd| rgd["status"]["state"] == "Active"),
        )
        .await;
    let zones = ["a", "b", "c", "d", "e"];
    cluster
        .apply(&json!({
            "apiVersion": "kro.run/v1alpha1", "kind": "Zoned",
            "metadata": {"name": "shop", "namespace": "default"},
            "spec": {"zones": zones},
        }))
        .await;
    cluster
        .wait_state(at("kro.run/v1alpha1", "Zoned", "shop"), "ACTIVE")
        .await;
    let deployment = |zone: &str| {
        let cluster = &cluster;
        let name = format!("shop-{zone}");
        async move {
            cluster
                .get(at("apps/v1", "Deployment", &name))
                .await
                .expect("the deployment")
        }
    };
    let ready = |deployment: &Value| {
        let status = &deployment["status"];
        status["observedGeneration"] == deployment["metadata"]["generation"]
            && status["replicas"] == 1
            && status["updatedReplicas"] == 1
            && status["availableReplicas"] == 1
    };
    let tier = |deployment: &Value| {
        deployment["spec"]["template"]["metadata"]["labels"]["tier"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };

    // A change of the template reaches the zones one at a time, in collection order.
    cluster.apply(&zones_rgd("v2", false)).await;
    let mut first_seen: HashMap<&str, usize> = HashMap::new();
    let started = Instant::now();
    for sample in 0.. {
        let mut moving = Vec::new();
        let mut done = 0;
        for zone in zones {
            let deployment = deployment(zone).await;
            if tier(&deployment) == "v2" {
                first_seen.entry(zone).or_insert(sample);
                if ready(&deployment) {
                    done += 1;
                } else {
                    moving.push(zone);
                }
            }
        }
        assert!(
            moving.len() <= 1,
            "sample {sample}: {moving:?} move at once"
        );
        if done == zones.len() {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{done}/5 zones moved: {first_seen:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for pair in zones.windows(2) {
        assert!(
            first_seen[pair[0]] < first_seen[pair[1]],
            "{} moved before {} ({first_seen:?})",
            pair[1],
            pair[0]
        );
    }
    cluster
        .wait_state(at("kro.run/v1alpha1", "Zoned", "shop"), "ACTIVE")
        .await;

    // A change whose pods never become ready stops at the first zone: the others are left as
    // they are.
    let mut before = BTreeMap::new();
    for zone in &zones[1..] {
        let deployment = deployment(zone).await;
        before.insert(*zone, deployment["metadata"]["resourceVersion"].clone());
    }
    cluster.apply(&zones_rgd("v2", true)).await;
    cluster
        .wait_for(
            at("apps/v1", "Deployment", "shop-a"),
            "broken",
            |deployment| {
                deployment.is_some_and(|deployment| {
                    deployment["spec"]["template"]["metadata"]["labels"]["broken"] == "true"
                })
            },
        )
        .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    for zone in &zones[1..] {
        let deployment = deployment(zone).await;
        assert_eq!(
            deployment["metadata"]["resourceVersion"], before[zone],
            "zone {zone} was touched while zone a is not ready"
        );
    }
    let instance = cluster
        .get(at("kro.run/v1alpha1", "Zoned", "shop"))
        .await
        .expect("the instance");
    assert_eq!(instance["status"]["state"], "IN_PROGRESS");
    cluster.stop().await;
}
