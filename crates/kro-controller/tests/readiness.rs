//! Readiness as `/readyz` reports it, with the controllers running on the embedded API
//! server: not ready while starting, ready once the watch caches synced (the instance watch of
//! a new kind included), not ready once shutting down.

mod common;

use std::time::{Duration, Instant};

use common::{Cluster, cluster_at};
use kro_controller::{NotReady, Readiness};

/// Waits until `readiness` answers what `wanted` accepts; the last answer otherwise.
async fn wait_until(
    readiness: &Readiness,
    wanted: impl Fn(&Result<(), NotReady>) -> bool,
) -> Result<(), NotReady> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let answer = readiness.check();
        if wanted(&answer) || Instant::now() > deadline {
            return answer;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn running_controllers_are_ready_once_their_caches_synced_and_not_when_stopping() {
    let readiness = Readiness::new();
    assert_eq!(readiness.check(), Err(NotReady::Starting));

    let mut cluster = Cluster::start().await;
    let manager = cluster.manager.as_mut().expect("the controllers run");
    manager.report_readiness(&readiness);
    assert_eq!(wait_until(&readiness, Result::is_ok).await, Ok(()));

    // A new kind: its instance watch starts, and once synced the replica is ready again.
    cluster.apply_example("webapp", "rgd.yaml").await;
    cluster
        .wait_for(
            cluster_at("kro.run/v1alpha1", "ResourceGraphDefinition", "webapp"),
            "Active",
            |rgd| rgd.is_some_and(|rgd| rgd["status"]["state"] == "Active"),
        )
        .await;
    assert_eq!(wait_until(&readiness, Result::is_ok).await, Ok(()));

    let manager = cluster.manager.take().expect("the controllers run");
    manager.shutdown().await;
    assert_eq!(readiness.check(), Err(NotReady::Stopping));
}
