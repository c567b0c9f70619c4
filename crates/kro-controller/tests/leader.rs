//! Leader election through a Lease on the embedded API server: one leader at a time, a
//! released lease is taken at once, an abandoned one after its duration, and a leader that
//! cannot renew gives up after the renew deadline.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use kro_apiserver::{RunningServer, ServerConfig};
use kro_controller::{LeaderElector, Leadership, LeaseConfig};
use kube::Api;
use tokio::time::{Instant, timeout};

async fn server() -> (RunningServer, kube::Client) {
    let server = kro_apiserver::start(ServerConfig {
        token: None,
        tls: false,
        ..ServerConfig::default()
    })
    .await
    .expect("the server starts");
    let client = kube::Client::try_from(kube::Config::new(server.url().parse().expect("URL")))
        .expect("a client");
    (server, client)
}

/// Short timings so the tests take seconds: 2 s lease, 1.5 s renew deadline, 200 ms retries.
fn candidate(client: &kube::Client, identity: &str) -> LeaderElector {
    let config = LeaseConfig {
        lease_duration: Duration::from_secs(2),
        renew_deadline: Duration::from_millis(1500),
        retry_period: Duration::from_millis(200),
        ..LeaseConfig::new("default", identity)
    };
    LeaderElector::new(client.clone(), config).expect("valid settings")
}

async fn lease(client: &kube::Client) -> Lease {
    Api::<Lease>::namespaced(client.clone(), "default")
        .get("controller.kro.run")
        .await
        .expect("the lease")
}

fn holder(lease: &Lease) -> Option<&str> {
    lease.spec.as_ref()?.holder_identity.as_deref()
}

async fn acquire_within(elector: LeaderElector, limit: Duration) -> Leadership {
    timeout(limit, elector.acquire())
        .await
        .unwrap_or_else(|_| panic!("no leadership within {limit:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_leads_and_a_released_lease_passes_to_the_next_at_once() {
    let (server, client) = server().await;
    let first = acquire_within(candidate(&client, "a"), Duration::from_secs(5)).await;
    let created = lease(&client).await;
    assert_eq!(holder(&created), Some("a"));
    let spec = created.spec.clone().unwrap_or_default();
    assert_eq!(spec.lease_duration_seconds, Some(2));
    assert_eq!(spec.lease_transitions, Some(0));

    let second = tokio::spawn(candidate(&client, "b").acquire());
    // The leader renews; the other waits well past the lease duration.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(!second.is_finished(), "b took a lease a still renews");
    let renewed = lease(&client).await;
    assert_eq!(holder(&renewed), Some("a"));
    assert_ne!(
        renewed
            .spec
            .as_ref()
            .and_then(|spec| spec.renew_time.clone()),
        spec.renew_time,
        "the leader renews"
    );

    first.release().await;
    let started = Instant::now();
    let second = timeout(Duration::from_secs(5), second)
        .await
        .expect("b leads after the release")
        .expect("the task");
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "a released lease is taken within a retry period or so, took {:?}",
        started.elapsed()
    );
    let taken = lease(&client).await;
    assert_eq!(holder(&taken), Some("b"));
    assert_eq!(taken.spec.and_then(|spec| spec.lease_transitions), Some(1));
    second.release().await;
    server.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_abandoned_lease_is_taken_once_it_expires() {
    let (server, client) = server().await;
    let first = acquire_within(candidate(&client, "a"), Duration::from_secs(5)).await;
    // A crash: renewing stops, nothing is released.
    drop(first);
    let started = Instant::now();
    let second = acquire_within(candidate(&client, "b"), Duration::from_secs(10)).await;
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(1500),
        "b must wait for the lease to expire, took it after {waited:?}"
    );
    assert_eq!(holder(&lease(&client).await), Some("b"));
    second.release().await;
    server.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_that_cannot_renew_gives_up_after_the_renew_deadline() {
    let (server, client) = server().await;
    let mut leadership = acquire_within(candidate(&client, "a"), Duration::from_secs(5)).await;
    assert!(!leadership.is_lost());
    let started = Instant::now();
    server.stop();
    timeout(Duration::from_secs(10), leadership.lost())
        .await
        .expect("the loss is reported");
    let after = started.elapsed();
    assert!(
        after >= Duration::from_millis(1300) && after < Duration::from_secs(5),
        "lost after {after:?}, expected about the 1.5 s renew deadline"
    );
    assert!(leadership.is_lost());
}
