//! Fault trials in CI (a few each; `cargo bench -p kro --bench fault_trials` runs many):
//! processes killed with -9 at random moments, and what must hold whatever the moment —
//! every instance converges or is deleted completely, nothing kro made is left behind, no
//! object is made twice, no acknowledged write is lost.

mod trials;

use std::time::Duration;

use trials::{
    Crashing, Report, Server, controller_crash_trials, restart_trials, seed, time_to_converge,
};

fn assert_clean(report: &Report) {
    assert!(report.clean(), "{}\n{report:#?}", report.summary());
}

/// The adversarial review's trial: `kro apiserver --data-dir` killed with -9 while an instance
/// is being created, restarted, and the instance deleted at once. Deletion must not trust watch
/// caches still re-listing after `410 Expired`: before the fix, 2 of 8 such trials stranded a
/// Service or an Ingress (the review: 5 of 16).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_right_after_an_api_server_restart_leaves_nothing_behind() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let server = Crashing::Embedded(Server::start(dir.path()));
    assert_clean(&restart_trials(server, 10, seed(20), true).await);
}

/// The same trial with a real kube-apiserver killed and restarted (etcd keeps running).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_right_after_a_kube_apiserver_restart_leaves_nothing_behind() {
    let Some(control_plane) = kro_test_support::real_control_plane_or_skip("fault_trials") else {
        return;
    };
    assert_clean(&restart_trials(Crashing::Real(control_plane), 10, seed(22), false).await);
}

/// An RGD applied while the controller lists RGDs for the first time is reconciled, on both
/// servers, ten fresh starts each. Before, a worker could take the RGD's name while the
/// initial list was under way, find the reflector's store still empty (it shows a list only
/// once the list is complete), take the RGD for deleted and never look again: on a real
/// kube-apiserver 1 start in 9 left the RGD with no status (0 in 30 after the fix).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_rgd_applied_as_the_controller_starts_is_reconciled() {
    for start in 0..10 {
        let dir = tempfile::tempdir().expect("temporary directory");
        let server = Crashing::Embedded(Server::start(dir.path()));
        let report = restart_trials(server, 0, seed(25) + start, true).await;
        assert_clean(&report);
    }
    for start in 0..10 {
        let Some(control_plane) = kro_test_support::real_control_plane_or_skip("fault_trials")
        else {
            return;
        };
        let report =
            restart_trials(Crashing::Real(control_plane), 0, seed(25) + start, false).await;
        assert_clean(&report);
    }
}

/// `kro controller` killed with -9 during an instance's creation, an update and its deletion.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_controller_killed_at_any_moment_converges_when_started_again() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let server = Server::start(dir.path());
    assert_clean(&controller_crash_trials(&server, 10, seed(21)).await);
}

/// A fifth of all requests failing, the client's own included: with 500s only (what the
/// controller must absorb itself), and with the default mix where 429 and 503 carry
/// `Retry-After: 1` (which clients honour). The controller does not exit, an RGD becomes
/// Active and an instance ACTIVE, and deletion completes. (Before: `kro controller` exited on
/// one failed request at start, and an RGD needed ~11 schema reads to succeed in one reconcile
/// — 328 s and 507 s to Active.) The benchmark compares the times with the fault-free time of
/// the same run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn everything_converges_with_a_fifth_of_requests_failing() {
    for (seed, codes) in [(seed(23), "500"), (seed(24), "500,503,429")] {
        let dir = tempfile::tempdir().expect("temporary directory");
        let seed = seed.to_string();
        let flags = [
            "--failure-rate",
            "0.2",
            "--failure-codes",
            codes,
            "--failure-seed",
            &seed,
        ];
        let server = Server::start_with(dir.path(), &flags);
        let converged = time_to_converge(&server, Duration::from_secs(120)).await;
        assert!(
            converged.is_some(),
            "{flags:?}: the RGD and instance did not converge within 120 s"
        );
        eprintln!("{flags:?}: created and deleted in {converged:?}");
    }
}
