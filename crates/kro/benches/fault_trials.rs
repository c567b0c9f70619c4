//! Many fault trials (the CI tests run a few): `cargo bench -p kro --bench fault_trials`.
//!
//! `KRO_TRIALS` sets the trials per series (default 50), `KRO_TRIAL_SEED` the seed. Prints
//! one line per series: orphans, duplicates, instances that did not converge, acknowledged
//! writes lost, and the time per trial. The real kube-apiserver series runs when the control
//! plane is built (`scripts/controlplane.sh build`). Last, the time an RGD and an instance take
//! to converge (and the instance to be deleted) with a fifth of all requests failing, as a
//! ratio of the fault-free time measured in the same run (the target: under 3x).

#[path = "../tests/trials/mod.rs"]
mod trials;

use std::time::Duration;

use trials::{Crashing, Server, controller_crash_trials, restart_trials, seed, time_to_converge};

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
    let mut clean_run = true;
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
        clean_run &= report.clean();

        let server = Server::start(&dir.path().join("crash"));
        let report = controller_crash_trials(&server, count, seed(21)).await;
        println!(
            "kro controller killed -9 in create/update/delete: {}",
            report.summary()
        );
        clean_run &= report.clean();

        let runs = count.clamp(1, 20);
        for (codes, what) in [
            ("500", "500s (the controller absorbs them)"),
            (
                "500,503,429",
                "500/503/429, the last two with Retry-After: 1",
            ),
        ] {
            let mut fault_free = Vec::new();
            let mut failing = Vec::new();
            for run in 0..runs {
                let dir = dir.path().join(format!("steady-{codes}-{run}"));
                let server = Server::start(&dir.join("clean"));
                let clean = time_to_converge(&server, Duration::from_secs(300)).await;
                drop(server);
                let seed = (seed(23) + run as u64).to_string();
                let flags = [
                    "--failure-rate",
                    "0.2",
                    "--failure-codes",
                    codes,
                    "--failure-seed",
                    &seed,
                ];
                let server = Server::start_with(&dir.join("failing"), &flags);
                let faulty = time_to_converge(&server, Duration::from_secs(300)).await;
                match (clean, faulty) {
                    (Some(clean), Some(faulty)) => {
                        fault_free.push(clean.0 + clean.1);
                        failing.push(faulty.0 + faulty.1);
                    }
                    _ => {
                        println!("run {run} ({flags:?}): did not converge within 300 s");
                        clean_run = false;
                    }
                }
            }
            let worst_ratio = fault_free
                .iter()
                .zip(&failing)
                .map(|(clean, faulty)| faulty.as_secs_f64() / clean.as_secs_f64().max(0.001))
                .fold(0.0, f64::max);
            let median = |times: &mut Vec<Duration>| {
                times.sort();
                times.get(times.len() / 2).copied().unwrap_or_default()
            };
            let (clean, faulty) = (median(&mut fault_free), median(&mut failing));
            println!(
                "create + delete with 20% of requests failing with {what}: median {:.2} s vs \
                 {:.2} s fault-free ({:.2}x; worst run {worst_ratio:.2}x over {runs} runs)",
                faulty.as_secs_f64(),
                clean.as_secs_f64(),
                faulty.as_secs_f64() / clean.as_secs_f64().max(0.001),
            );
        }

        if kro_test_support::control_plane_built() {
            let control_plane =
                kro_test_support::RealControlPlane::start().expect("the control plane starts");
            let report =
                restart_trials(Crashing::Real(control_plane), count, seed(22), false).await;
            println!(
                "kube-apiserver killed -9 around a creation, then delete: {}",
                report.summary()
            );
            clean_run &= report.clean();
        } else {
            println!("kube-apiserver series skipped: scripts/controlplane.sh build first");
        }
    });
    if !clean_run {
        eprintln!("some trials failed (details above)");
        std::process::exit(1);
    }
}
