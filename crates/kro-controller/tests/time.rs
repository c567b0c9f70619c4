//! RGDs that read the time (gate `CELTimeFunctions`) under the controllers, on a manual clock
//! the test moves, on both servers: an instance is reconciled again exactly when what it read
//! changes its answer, and not once (no request at all) before.

mod common;

use std::time::Duration;

use common::{Cluster, at, cluster_at};
use kro_cel::Timestamp;
use kro_controller::{Clock, ManualClock, Settings};
use kro_graph::{Feature, FeatureGates};
use serde_json::{Value, json};

fn instant(text: &str) -> Timestamp {
    Timestamp::parse(text).expect("RFC 3339")
}

fn settings(clock: Clock) -> Settings {
    Settings {
        features: FeatureGates::default().with(Feature::CelTimeFunctions, true),
        clock,
        ..Settings::default()
    }
}

/// A certificate renewed (a ConfigMap standing in for the renewal Job) from 30 days before
/// its expiry, and a window open during Berlin's business hours.
fn timed_rgd() -> Value {
    json!({
        "apiVersion": "kro.run/v1alpha1", "kind": "ResourceGraphDefinition",
        "metadata": {"name": "timed"},
        "spec": {
            "schema": {
                "apiVersion": "v1alpha1", "kind": "Timed",
                "spec": {"notAfter": "string", "startedAt": "string"},
                "status": {"open": "${window.data.open}"},
            },
            "resources": [
                {
                    "id": "renewal",
                    "includeWhen": [
                        "${time.now() >= timestamp(schema.spec.notAfter) - duration('720h')}"
                    ],
                    "template": {
                        "apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": "${schema.metadata.name}-renew"},
                    },
                },
                {
                    "id": "grace",
                    "template": {
                        "apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": "${schema.metadata.name}-grace"},
                        "data": {"expired": "${string(time.now() - timestamp(schema.spec.startedAt) > duration('2h'))}"},
                    },
                },
                {
                    "id": "window",
                    "template": {
                        "apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": "${schema.metadata.name}-window"},
                        "data": {"open": "${string(time.now() >= time.now().withTime({'hours': 9}, 'Europe/Berlin') && time.now() < time.now().withTime({'hours': 17}, 'Europe/Berlin'))}"},
                    },
                },
            ],
        },
    })
}

/// Every request the controllers sent, by their own metrics.
fn requests(cluster: &Cluster) -> f64 {
    cluster
        .metrics
        .encode()
        .lines()
        .filter(|line| line.starts_with("rest_client_requests_by_verb_total{"))
        .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

fn reconciles(cluster: &Cluster) -> f64 {
    cluster
        .metric("instance_reconcile_total{gvr=\"kro.run/v1alpha1, Resource=timeds\"}")
        .unwrap_or(0.0)
}

/// Waits until the controllers have settled: no request and no reconcile for 300 ms (the
/// watch events of their own last writes come back and wake the instance once more).
async fn settle(cluster: &Cluster) {
    let mut last = (requests(cluster), reconciles(cluster));
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(300)).await;
        let now = (requests(cluster), reconciles(cluster));
        if now == last {
            return;
        }
        last = now;
    }
    panic!("the controllers never settled: {last:?}");
}

/// Moves the clock to `to` (once the controllers have settled) and checks that nothing at
/// all happens for a while.
async fn quiet_until(cluster: &Cluster, hand: &ManualClock, to: &str) {
    settle(cluster).await;
    let (before, reconciled) = (requests(cluster), reconciles(cluster));
    hand.set(instant(to));
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        (requests(cluster), reconciles(cluster)),
        (before, reconciled),
        "requests or reconciles before the flip, at {to}"
    );
}

async fn window_open(cluster: &Cluster, open: &str) {
    cluster
        .wait_for(
            at("v1", "ConfigMap", "cert-window"),
            "the window",
            |object| object.is_some_and(|object| object["data"]["open"] == open),
        )
        .await;
}

async fn scenario(cluster: &Cluster, hand: &ManualClock) {
    cluster.apply(&timed_rgd()).await;
    cluster
        .wait_state(
            cluster_at("kro.run/v1alpha1", "ResourceGraphDefinition", "timed"),
            "Active",
        )
        .await;
    cluster
        .apply(&json!({
            "apiVersion": "kro.run/v1alpha1", "kind": "Timed",
            "metadata": {"name": "cert", "namespace": "default"},
            "spec": {"notAfter": "2026-04-30T12:00:00Z", "startedAt": "2026-03-29T10:00:00Z"},
        }))
        .await;
    let cert = at("kro.run/v1alpha1", "Timed", "cert");
    cluster.wait_state(cert, "ACTIVE").await;
    // Saturday 2026-03-28, 18:30 in Berlin (CET): closed, no renewal yet.
    window_open(cluster, "false").await;
    assert!(
        cluster
            .get(at("v1", "ConfigMap", "cert-renew"))
            .await
            .is_none()
    );
    tokio::time::sleep(Duration::from_millis(300)).await;

    // The next change is the local midnight (23:00Z); nothing before it.
    quiet_until(cluster, hand, "2026-03-28T22:59:59.999999999Z").await;
    // Midnight: a reconcile, which finds nothing to change and asks for 09:00 CEST (07:00Z,
    // after the change to summer time).
    let reconciled = reconciles(cluster);
    hand.set(instant("2026-03-28T23:00:00Z"));
    for attempt in 0.. {
        if reconciles(cluster) > reconciled {
            break;
        }
        assert!(attempt < 600, "no reconcile at the local midnight");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    quiet_until(cluster, hand, "2026-03-29T06:59:59.999999999Z").await;
    hand.set(instant("2026-03-29T07:00:00Z"));
    window_open(cluster, "true").await;
    cluster
        .wait_for(cert, "open in the status", |instance| {
            instance.is_some_and(|instance| instance["status"]["open"] == "true")
        })
        .await;

    // The grace period (2h from 10:00Z) ends one nanosecond after 12:00Z.
    quiet_until(cluster, hand, "2026-03-29T12:00:00Z").await;
    hand.set(instant("2026-03-29T12:00:00.000000001Z"));
    cluster
        .wait_for(at("v1", "ConfigMap", "cert-grace"), "expired", |object| {
            object.is_some_and(|object| object["data"]["expired"] == "true")
        })
        .await;

    // The renewal is due 30 days before 2026-04-30T12:00Z, 2026-03-31T12:00Z; the window
    // closes at 17:00 CEST first and reopens Monday.
    quiet_until(cluster, hand, "2026-03-29T14:59:59.999999999Z").await;
    hand.set(instant("2026-03-29T15:00:00Z"));
    window_open(cluster, "false").await;
    hand.set(instant("2026-03-30T07:00:00Z"));
    window_open(cluster, "true").await;
    hand.set(instant("2026-03-30T15:00:00Z"));
    window_open(cluster, "false").await;
    hand.set(instant("2026-03-31T07:00:00Z"));
    window_open(cluster, "true").await;
    quiet_until(cluster, hand, "2026-03-31T11:59:59.999999999Z").await;
    hand.set(instant("2026-03-31T12:00:00Z"));
    cluster
        .wait_for(
            at("v1", "ConfigMap", "cert-renew"),
            "the renewal",
            |object| object.is_some(),
        )
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_instance_is_reconciled_when_what_it_read_of_the_time_changes_on_the_embedded_server() {
    let (clock, hand) = Clock::manual(instant("2026-03-28T17:30:00Z"));
    let cluster = Cluster::start_with(settings(clock)).await;
    scenario(&cluster, &hand).await;
    cluster.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_instance_is_reconciled_when_what_it_read_of_the_time_changes_on_a_real_control_plane() {
    let control_plane = tokio::task::spawn_blocking(|| {
        kro_test_support::real_control_plane_or_skip("time functions")
    })
    .await
    .expect("the start task");
    let Some(control_plane) = control_plane else {
        return;
    };
    let (clock, hand) = Clock::manual(instant("2026-03-28T17:30:00Z"));
    let cluster = Cluster::start_real_with(control_plane, settings(clock)).await;
    scenario(&cluster, &hand).await;
    cluster.stop().await;
}
