//! Many fault trials (the CI tests run a few): `cargo bench -p kro --bench fault_trials`.
//!
//! `KRO_TRIALS` sets the trials per series (default 50), `KRO_TRIAL_SEED` the seed. Prints
//! one line per series: orphans, duplicates, instances that did not converge, acknowledged
//! writes lost, and the time per trial. The real kube-apiserver series runs when the control
//! plane is built (`scripts/controlplane.sh build`).

#[path = "../tests/trials/mod.rs"]
mod trials;

use trials::{Crashing, Server, controller_crash_trials, restart_trials, seed};

fn main() {
    let count: usize = std::env::var("KRO_TRIALS")
        .ok()
        .and_then(|count| count.parse().ok())
        .unwrap_or(50);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let mut clean = true;
    runtime.block_on(async {
        let dir = tempfile::tempdir().expect("temporary directory");
        let report = restart_trials(
            Crashing::Embedded(Server::start(&dir.path().join("restart"))),
            count,
            seed(20),
            true,
        )
        .await;
        println!(
            "kro apiserver killed -9 around a creation, then delete: {}",
            report.summary()
        );
        clean &= report.clean();

        let server = Server::start(&dir.path().join("crash"));
        let report = controller_crash_trials(&server, count, seed(21)).await;
        println!(
            "kro controller killed -9 in create/update/delete: {}",
            report.summary()
        );
        clean &= report.clean();

        if kro_test_support::control_plane_built() {
            let control_plane =
                kro_test_support::RealControlPlane::start().expect("the control plane starts");
            let report =
                restart_trials(Crashing::Real(control_plane), count, seed(22), false).await;
            println!(
                "kube-apiserver killed -9 around a creation, then delete: {}",
                report.summary()
            );
            clean &= report.clean();
        } else {
            println!("kube-apiserver series skipped: scripts/controlplane.sh build first");
        }
    });
    if !clean {
        eprintln!("some trials failed (details above)");
        std::process::exit(1);
    }
}
