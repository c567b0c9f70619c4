//! Fault trials in CI (a few each; `cargo bench -p kro --bench fault_trials` runs many):
//! processes killed with -9 at random moments, and what must hold whatever the moment —
//! every instance converges or is deleted completely, nothing kro made is left behind, no
//! object is made twice, no acknowledged write is lost.

mod trials;

use trials::{Crashing, Report, Server, controller_crash_trials, restart_trials, seed};

fn assert_clean(report: &Report) {
    assert!(report.clean(), "{}\n{report:#?}", report.summary());
}

/// The adversarial review's trial: `kro apiserver --data-dir` killed with -9 while an instance
/// is being created, restarted, and the instance deleted at once. Deletion must not trust watch
/// caches still re-listing after `410 Expired`: before the fix, 2 of these 8 trials stranded a
/// Service or an Ingress (the review: 5 of 16).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_right_after_an_api_server_restart_leaves_nothing_behind() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let server = Crashing::Embedded(Server::start(dir.path()));
    assert_clean(&restart_trials(server, 8, seed(20), true).await);
}

/// The same trial with a real kube-apiserver killed and restarted (etcd keeps running).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_right_after_a_kube_apiserver_restart_leaves_nothing_behind() {
    let Some(control_plane) = kro_test_support::real_control_plane_or_skip("fault_trials") else {
        return;
    };
    assert_clean(&restart_trials(Crashing::Real(control_plane), 4, seed(22), false).await);
}

/// `kro controller` killed with -9 during an instance's creation, an update and its deletion.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_controller_killed_at_any_moment_converges_when_started_again() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let server = Server::start(dir.path());
    assert_clean(&controller_crash_trials(&server, 4, seed(21)).await);
}
