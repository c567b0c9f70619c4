//! `<Kind>Set` rollouts on the embedded server's simulated cluster, whose Pods take a while to
//! become Ready (the stage delays): instances are updated oldest first, never more than
//! `maxConcurrentUpdated` of them updated and not Ready, and an instance that never becomes
//! Ready holds the rollout and says why.

mod common;

use std::collections::{BTreeSet, HashMap};
use std::time::{Duration, Instant};

use common::{Cluster, WEB_SET_RGD, at, cluster_at};
use futures_util::StreamExt;
use kro_controller::set_plan::BURST_REPLICAS;
use kube::api::{ListParams, Patch, PatchParams};
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::{Value, json};

const RGD_API: &str = "kro.run/v1alpha1";

fn web_set(replicas: u64, version: &str, track: &str) -> Value {
    json!({"apiVersion": RGD_API, "kind": "WebSet",
        "metadata": {"name": "team", "namespace": "default"},
        "spec": {"replicas": replicas, "rollingUpdate": {"maxConcurrentUpdated": 2},
            "template": {"spec": {"version": version, "track": track}}}})
}

/// One look at the Set's instances.
#[derive(Debug, Clone)]
struct Sample {
    /// Oldest first (creation time, then name): name, template hash, Ready.
    instances: Vec<(String, String, bool)>,
}

impl Sample {
    async fn take(cluster: &Cluster) -> Sample {
        let served = cluster
            .kind_of(&json!({"apiVersion": RGD_API, "kind": "Web"}))
            .await;
        let list = served
            .api(&cluster.client, Some("default"))
            .list(&ListParams::default().labels("kro.run/set-name=team"))
            .await
            .expect("LIST");
        let mut instances: Vec<(String, String, String, bool)> = list
            .items
            .into_iter()
            .filter(|instance| instance.metadata.deletion_timestamp.is_none())
            .map(|instance| {
                let object = serde_json::to_value(&instance).expect("JSON");
                let generation = object["metadata"]["generation"].clone();
                let ready = object["status"]["conditions"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|condition| {
                        condition["type"] == "Ready"
                            && condition["status"] == "True"
                            && condition["observedGeneration"] == generation
                    });
                (
                    object["metadata"]["creationTimestamp"]
                        .as_str()
                        .unwrap_or("")
                        .to_owned(),
                    object["metadata"]["name"].as_str().unwrap_or("").to_owned(),
                    object["metadata"]["labels"]["kro.run/set-template-hash"]
                        .as_str()
                        .unwrap_or("")
                        .to_owned(),
                    ready,
                )
            })
            .collect();
        instances.sort();
        Sample {
            instances: instances
                .into_iter()
                .map(|(_, name, hash, ready)| (name, hash, ready))
                .collect(),
        }
    }

    fn names(&self) -> Vec<String> {
        self.instances
            .iter()
            .map(|(name, ..)| name.clone())
            .collect()
    }

    /// Instances from template `hash` that are not Ready.
    fn updated_not_ready(&self, hash: &str) -> usize {
        self.instances
            .iter()
            .filter(|(_, current, ready)| current == hash && !ready)
            .count()
    }
}

async fn set_status(cluster: &Cluster) -> Value {
    cluster
        .get(at(RGD_API, "WebSet", "team"))
        .await
        .expect("the Set")
}

/// Waits until the Set reports `replicas` instances, all Ready and from its template.
async fn settled(cluster: &Cluster, replicas: u64) -> Value {
    cluster
        .wait_for(at(RGD_API, "WebSet", "team"), "settled", |set| {
            set.is_some_and(|set| {
                let status = &set["status"];
                status["replicas"] == replicas
                    && status["readyReplicas"] == replicas
                    && status["updatedReplicas"] == replicas
                    && status["observedGeneration"] == set["metadata"]["generation"]
            })
        })
        .await
        .expect("the Set")
}

/// The hash of the template the instances run once `set` settled on it.
async fn current_hash(cluster: &Cluster) -> String {
    let sample = Sample::take(cluster).await;
    let hashes: BTreeSet<&String> = sample.instances.iter().map(|(_, hash, _)| hash).collect();
    assert_eq!(hashes.len(), 1, "{sample:?}");
    hashes.into_iter().next().cloned().unwrap_or_default()
}

async fn start() -> Cluster {
    let cluster = Cluster::start_with_simulation(kro_apiserver::SimulationKnobs {
        failing_pods: Some("track=broken".parse().expect("a selector")),
        ..kro_apiserver::SimulationKnobs::default()
    })
    .await;
    cluster.apply_yaml(WEB_SET_RGD).await;
    cluster
        .wait_state(
            cluster_at(RGD_API, "ResourceGraphDefinition", "webs"),
            "Active",
        )
        .await;
    cluster
}

/// The scaling design's acceptance scenario: a Set of 5 with `maxConcurrentUpdated: 2` and a
/// template change, sampled all along.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rolling_update_goes_oldest_first_two_at_a_time() {
    let cluster = start().await;
    cluster.apply(&web_set(5, "1", "stable")).await;
    settled(&cluster, 5).await;
    let before = Sample::take(&cluster).await;
    let old_hash = current_hash(&cluster).await;
    let oldest_first = before.names();

    cluster.apply(&web_set(5, "2", "stable")).await;
    let started = Instant::now();
    let mut samples = 0;
    let mut worst = 0;
    let mut updated_order: Vec<String> = Vec::new();
    loop {
        let sample = Sample::take(&cluster).await;
        samples += 1;
        assert_eq!(
            sample.names(),
            oldest_first,
            "instances are updated in place"
        );
        let updated: Vec<&String> = sample
            .instances
            .iter()
            .filter(|(_, hash, _)| hash != &old_hash)
            .map(|(name, ..)| name)
            .collect();
        // The updated instances are always the oldest ones.
        assert_eq!(
            updated,
            oldest_first.iter().take(updated.len()).collect::<Vec<_>>(),
            "an instance was updated before an older one: {sample:?}"
        );
        for name in updated {
            if !updated_order.contains(name) {
                updated_order.push(name.clone());
            }
        }
        let new_hash = sample
            .instances
            .iter()
            .map(|(_, hash, _)| hash)
            .find(|hash| *hash != &old_hash)
            .cloned()
            .unwrap_or_default();
        let waiting = sample.updated_not_ready(&new_hash);
        worst = worst.max(waiting);
        assert!(
            waiting <= 2,
            "{waiting} updated instances not Ready: {sample:?}"
        );
        let status = set_status(&cluster).await;
        assert_eq!(status["status"]["replicas"], 5, "{status}");
        let done = sample
            .instances
            .iter()
            .all(|(_, hash, ready)| hash == &new_hash && *ready)
            && status["status"]["updatedReplicas"] == 5
            && status["status"]["readyReplicas"] == 5;
        if done {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the rollout did not finish: {sample:?} {status}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    eprintln!(
        "rolled 5 instances in {:?}; {samples} samples, at most {worst} updated and not Ready",
        started.elapsed()
    );
    assert_eq!(updated_order, oldest_first);
    assert_eq!(worst, 2, "the rollout used its concurrency");
    let status = settled(&cluster, 5).await;
    let ready = status["status"]["conditions"]
        .as_array()
        .and_then(|conditions| {
            conditions
                .iter()
                .find(|condition| condition["type"] == "Ready")
        })
        .cloned()
        .unwrap_or_default();
    assert_eq!(ready["status"], "True", "{status}");

    // Scale to 2: the three newest go.
    let sets = cluster
        .kind_of(&json!({"apiVersion": RGD_API, "kind": "WebSet"}))
        .await
        .api(&cluster.client, Some("default"));
    let scale = |replicas: u64| {
        let sets = sets.clone();
        async move {
            sets.patch_scale(
                "team",
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"replicas": replicas}})),
            )
            .await
            .expect("the Set's scale subresource")
        }
    };
    scale(2).await;
    settled(&cluster, 2).await;
    assert_eq!(Sample::take(&cluster).await.names(), oldest_first[..2]);
    // And to 4 (what `kubectl scale websets/team --replicas=4` sends): two new names.
    scale(4).await;
    settled(&cluster, 4).await;
    let names = Sample::take(&cluster).await.names();
    assert_eq!(names[..2], oldest_first[..2]);
    for name in &names[2..] {
        assert!(!oldest_first.contains(name), "{name} was used before");
    }
    cluster.stop().await;
}

/// An update whose instances never become Ready holds the rollout at `maxConcurrentUpdated`
/// instances, says which and why in the Set's conditions, and goes on once the template is
/// fixed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_instance_that_never_becomes_ready_holds_the_rollout() {
    let cluster = start().await;
    cluster.apply(&web_set(5, "1", "stable")).await;
    settled(&cluster, 5).await;
    let old_hash = current_hash(&cluster).await;

    cluster.apply(&web_set(5, "1", "broken")).await;
    let held = cluster
        .wait_for(at(RGD_API, "WebSet", "team"), "held", |set| {
            set.is_some_and(|set| {
                set["status"]["updatedReplicas"] == 2
                    && set["status"]["conditions"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .any(|condition| {
                            condition["type"] == "Progressing"
                                && condition["reason"] == "RollingUpdate"
                                && condition["message"]
                                    .as_str()
                                    .is_some_and(|message| message.contains("waiting for"))
                        })
            })
        })
        .await
        .expect("the Set");
    let message = held["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|condition| condition["type"] == "Ready")
        .map(|condition| condition["message"].as_str().unwrap_or("").to_owned())
        .unwrap_or_default();
    assert!(message.contains("3 more to update"), "{message}");
    assert!(message.contains("Ready is False"), "{message}");
    // It stays held: two updated and not Ready, three on the old template.
    let mut counts: HashMap<(usize, usize), usize> = HashMap::new();
    for _ in 0..30 {
        let sample = Sample::take(&cluster).await;
        let outdated = sample
            .instances
            .iter()
            .filter(|(_, hash, _)| hash == &old_hash)
            .count();
        let not_ready = sample.instances.len() - outdated;
        assert!(not_ready <= 2, "{sample:?}");
        *counts.entry((outdated, not_ready)).or_default() += 1;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(counts.get(&(3, 2)), Some(&30), "{counts:?}");

    // Fixed: the template is the old one again, and the two are rolled back.
    cluster.apply(&web_set(5, "1", "stable")).await;
    settled(&cluster, 5).await;
    assert_eq!(current_hash(&cluster).await, old_hash);
    cluster.stop().await;
}

/// The reason of the Set's `Ready` condition.
fn ready_reason(set: &Value) -> String {
    set["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|condition| condition["type"] == "Ready")
        .and_then(|condition| condition["reason"].as_str())
        .unwrap_or_default()
        .to_owned()
}

/// A Set whose name is too long to be a label value: the server refuses every instance it
/// makes (the `kro.run/set-name` label). Each refusal names the instance it refused, so the
/// Set's status changed with every attempt and woke the Set again: about 400 creates a second,
/// with two Events each. A refused template is not tried again until the Set changes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_template_is_not_retried_until_the_set_changes() {
    let cluster = start().await;
    let name = "a-set-whose-name-is-longer-than-any-label-value-may-be-sixty-four-chars";
    assert!(name.len() > 63);
    let set = |replicas: u64| {
        json!({"apiVersion": RGD_API, "kind": "WebSet",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"replicas": replicas,
                "template": {"spec": {"version": "1", "track": "stable"}}}})
    };
    cluster.apply(&set(2)).await;
    let rejected =
        |set: Option<&Value>| set.is_some_and(|set| ready_reason(set) == "TemplateRejected");
    cluster
        .wait_for(at(RGD_API, "WebSet", name), "rejected", rejected)
        .await
        .expect("the Set");
    // Let a reconcile that was already queued finish, then count.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before = cluster.controller_writes();
    tokio::time::sleep(Duration::from_secs(3)).await;
    let during = cluster.controller_writes() - before;
    assert!(
        during <= 2.0,
        "{during} writes in 3 s while the template stays refused"
    );

    // A change of the Set is tried again, once.
    let before = cluster.controller_writes();
    cluster
        .merge(
            at(RGD_API, "WebSet", name),
            json!({"spec": {"replicas": 3}}),
        )
        .await;
    let seen = cluster
        .wait_for(at(RGD_API, "WebSet", name), "observed", |set| {
            set.is_some_and(|set| {
                set["status"]["observedGeneration"] == set["metadata"]["generation"]
                    && ready_reason(set) == "TemplateRejected"
            })
        })
        .await
        .expect("the Set");
    assert_eq!(seen["status"]["replicas"], 0, "{seen}");
    tokio::time::sleep(Duration::from_secs(2)).await;
    let after_change = cluster.controller_writes() - before;
    assert!(
        after_change <= 6.0,
        "{after_change} writes after one change of a refused Set"
    );
    cluster.stop().await;
}

/// One ConfigMap per instance: a Set of thousands whose instances cost the simulated cluster
/// little.
const TENANT_SET_RGD: &str = r#"
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata: {name: tenants}
spec:
  scaling: {kind: TenantSet, method: replicas}
  schema:
    apiVersion: v1alpha1
    kind: Tenant
    spec:
      plan: string | default="free"
  resources:
    - id: settings
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: "${schema.metadata.name}"}
        data: {plan: "${schema.spec.plan}"}
"#;

/// Instances of a large Set: three batches (500, 500 and 200).
const LARGE: u64 = 1_200;

async fn start_tenants() -> Cluster {
    let cluster = Cluster::start().await;
    cluster.apply_yaml(TENANT_SET_RGD).await;
    cluster
        .wait_state(
            cluster_at(RGD_API, "ResourceGraphDefinition", "tenants"),
            "Active",
        )
        .await;
    cluster
}

fn tenant_set(replicas: u64) -> Value {
    // (Instances are named `many-<5 random characters>`: a name taken already is answered 409
    // and tried again, so the creates served may exceed the instances made.)
    json!({"apiVersion": RGD_API, "kind": "TenantSet",
        "metadata": {"name": "many", "namespace": "default"},
        "spec": {"replicas": replicas, "template": {"spec": {}}}})
}

/// Requests with `verb` the server served for Tenants.
fn tenant_requests(cluster: &Cluster, verb: &str) -> u64 {
    cluster
        .server()
        .request_counts()
        .get(&(verb.to_owned(), "tenants".to_owned()))
        .copied()
        .unwrap_or(0)
}

/// A Set of 1,200 creates them a batch of at most [`BURST_REPLICAS`] per reconcile and writes
/// its status after each: the status appears while most instances are still to be created,
/// and `status.replicas` grows by at most a batch from one write to the next. (Before, one
/// reconcile created every instance and wrote the status only then; with 100,000 it timed out
/// first and never wrote it.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_set_reports_its_status_after_each_bounded_batch() {
    let cluster = start_tenants().await;
    let sets = cluster
        .kind_of(&json!({"apiVersion": RGD_API, "kind": "TenantSet"}))
        .await
        .api(&cluster.client, Some("default"));
    // Every status write, as the Set's watch delivers it, with the creates served by then.
    let mut writes = std::pin::pin!(
        watcher::watcher(
            sets,
            watcher::Config::default().fields("metadata.name=many")
        )
        .applied_objects()
    );
    cluster.apply(&tenant_set(LARGE)).await;
    let started = Instant::now();
    let mut seen: Vec<(u64, u64)> = Vec::new();
    while seen.last().is_none_or(|(replicas, _)| *replicas < LARGE) {
        let set = tokio::time::timeout(Duration::from_secs(60), writes.next())
            .await
            .expect("a status write within a minute")
            .expect("the watch goes on")
            .expect("a watch event");
        let creates = tenant_requests(&cluster, "create");
        let status = serde_json::to_value(&set).expect("JSON")["status"].clone();
        if let Some(replicas) = status["replicas"].as_u64()
            && seen.last().is_none_or(|(last, _)| *last != replicas)
        {
            seen.push((replicas, creates));
        }
    }
    eprintln!(
        "{LARGE} instances in {:?}; status.replicas and the creates served by each write: {seen:?}",
        started.elapsed()
    );
    let (_, creates_at_first) = seen[0];
    assert!(
        creates_at_first < LARGE,
        "the first status was written once {creates_at_first} instances were created"
    );
    let growing: Vec<u64> = seen.iter().map(|(replicas, _)| *replicas).collect();
    assert!(
        growing
            .windows(2)
            .all(|pair| pair[0] < pair[1] && pair[1] - pair[0] <= BURST_REPLICAS as u64),
        "status.replicas grows by a batch at most: {growing:?}"
    );
    assert!(
        growing.len() >= 4,
        "the status was written while the Set created: {growing:?}"
    );
    // The batches' expectations held: no instance too many was made (and then deleted).
    tokio::time::sleep(Duration::from_millis(500)).await;
    let names = cluster
        .names_labelled(RGD_API, "Tenant", "kro.run/set-name", "many")
        .await;
    assert_eq!(names.len() as u64, LARGE);
    assert_eq!(tenant_requests(&cluster, "delete"), 0);
    cluster.stop().await;
}

/// A Set of 5,000 scaled to 0 once its status counts a batch stops creating at its next batch
/// at the latest (the batch under way is the last), then deletes every instance, a batch at a
/// time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_set_scaled_to_zero_while_it_creates_stops_at_the_next_batch_and_empties() {
    let cluster = start_tenants().await;
    let set = at(RGD_API, "TenantSet", "many");
    let asked = 5_000;
    cluster.apply(&tenant_set(asked)).await;
    cluster
        .wait_for(set, "a batch counted", |set| {
            set.is_some_and(|set| set["status"]["replicas"].as_u64().unwrap_or(0) > 0)
        })
        .await;
    let scaled = cluster.merge(set, json!({"spec": {"replicas": 0}})).await;
    let creates_at_scale = tenant_requests(&cluster, "create");
    assert!(
        creates_at_scale < asked,
        "{creates_at_scale} created already"
    );
    let generation = scaled["metadata"]["generation"].clone();
    cluster
        .wait_for(set, "scaled to 0", |set| {
            set.is_some_and(|set| {
                set["status"]["observedGeneration"] == generation && set["status"]["replicas"] == 0
            })
        })
        .await;
    let created = tenant_requests(&cluster, "create");
    // The batch under way at most (and a name found taken, tried again).
    assert!(
        created - creates_at_scale <= BURST_REPLICAS as u64 + 5,
        "{} creates after the scale to 0",
        created - creates_at_scale
    );
    let served = cluster
        .kind_of(&json!({"apiVersion": RGD_API, "kind": "Tenant"}))
        .await;
    let tenants = served.api(&cluster.client, Some("default"));
    let started = Instant::now();
    loop {
        let left = tenants
            .list(&ListParams::default().labels("kro.run/set-name=many"))
            .await
            .expect("LIST")
            .items
            .len();
        if left == 0 {
            break;
        }
        // Each instance is deleted the kro way (its ConfigMap, then its finalizer): on a busy
        // machine, a debug build takes its time.
        assert!(
            started.elapsed() < Duration::from_secs(180),
            "{left} instances left 3 minutes after the Set counted none"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    eprintln!(
        "{created} created ({} after the scale to 0), all gone {:?} after the Set counted none",
        created - creates_at_scale,
        started.elapsed()
    );
    assert_eq!(tenant_requests(&cluster, "create"), created);
    let deletes = tenant_requests(&cluster, "delete");
    assert!(
        deletes <= created,
        "{deletes} deletes of {created} instances"
    );
    cluster.stop().await;
}
