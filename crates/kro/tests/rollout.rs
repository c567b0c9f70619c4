//! `kro rollout` against `kro dev` with kubectl 1.33, as docs/rollout.md walks through it:
//! the example's six Storefronts move to a new revision two at a time (`kro rollout status`
//! exits 0), a revision whose pods never become ready halts the rollout (`kro rollout status`
//! exits 1 naming the instance), `kro rollout history` lists the revisions, and `kro rollout
//! undo` writes the last good spec back, which rolls out to every instance.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use kro_test_support::{KroDev, eventually, kubectl_succeeds, repository_root};

/// `kro dev` with the rollout gate, and pods labelled `broken=true` failing.
fn start_dev(kubeconfig: &Path) -> KroDev {
    KroDev::start(
        Path::new(env!("CARGO_BIN_EXE_kro")),
        kubeconfig,
        &[
            "--feature-gates",
            "CELOmitFunction=true,PropagationControl=true",
            "--fail-pods",
            "broken=true",
        ],
    )
}

fn rollout(kubeconfig: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kro"))
        .arg("rollout")
        .args(args)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .output()
        .expect("kro rollout runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn a_rollout_is_followed_halted_listed_and_undone() {
    let home = tempfile::tempdir().expect("a HOME");
    let kubeconfig: PathBuf = home.path().join("kubeconfig");
    let _dev = start_dev(&kubeconfig);
    let kubectl = |args: &[&str]| kubectl_succeeds(33, &kubeconfig, home.path(), args);
    let example = repository_root().join("examples/rollout");
    let rgd = example.join("rgd.yaml");
    let instances = example.join("instances.yaml");
    kubectl(&["apply", "-f", rgd.to_str().expect("a path")]);
    eventually("the RGD Active", || {
        let table = kubectl(&["get", "rgd", "storefronts"]);
        table.contains("Active").then_some(table)
    });
    kubectl(&["apply", "-f", instances.to_str().expect("a path")]);
    let table = eventually("six storefronts on revision 1", || {
        let table = kubectl(&["get", "storefronts"]);
        let on_one = table
            .lines()
            .skip(1)
            .filter(|line| line.split_whitespace().nth(3) == Some("1"))
            .count();
        (on_one == 6).then_some(table)
    });
    let header: Vec<&str> = table
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(
        header,
        ["NAME", "STATE", "READY", "REVISION", "AGE"],
        "{table}"
    );
    let done = rollout(
        &kubeconfig,
        &["status", "rgd/storefronts", "--timeout", "60s"],
    );
    assert!(
        done.status.success(),
        "{}{}",
        text(&done.stdout),
        text(&done.stderr)
    );

    // A change rolls out two at a time to all six.
    // Changes the pods' label `key` (JSON patch `op`) in the RGD's template.
    let patch_label = |op: &str, key: &str, value: &str| {
        let label = "/spec/resources/0/template/spec/template/metadata/labels";
        kubectl(&[
            "patch",
            "rgd",
            "storefronts",
            "--type=json",
            "-p",
            &format!(r#"[{{"op":"{op}","path":"{label}/{key}","value":"{value}"}}]"#),
        ])
    };
    patch_label("replace", "tier", "v2");
    let done = rollout(
        &kubeconfig,
        &["status", "rgd/storefronts", "--timeout", "2m"],
    );
    let said = text(&done.stdout);
    assert!(done.status.success(), "{said}{}", text(&done.stderr));
    assert!(
        said.contains("successfully rolled out: all 6 instances on revision 2"),
        "{said}"
    );

    // A revision whose pods never become ready halts after the first wave.
    patch_label("add", "broken", "true");
    let halted = rollout(
        &kubeconfig,
        &["status", "rgd/storefronts", "--timeout", "2m"],
    );
    let complaint = text(&halted.stderr);
    assert!(!halted.status.success(), "{}", text(&halted.stdout));
    assert!(complaint.contains("PropagationHalted"), "{complaint}");
    assert!(
        complaint.contains("is not Ready on revision 3 after 10s"),
        "{complaint}"
    );
    assert!(
        complaint.contains("0/6 instances on revision 3"),
        "{complaint}"
    );
    // The instances beyond the first wave were left alone.
    let table = kubectl(&[
        "get",
        "storefronts",
        "-o",
        "custom-columns=NAME:.metadata.name,REVISION:.status.observedRevision,REASON:.status.conditions[?(@.type==\"RevisionReconciled\")].reason",
    ]);
    let moved = table
        .lines()
        .filter(|line| line.ends_with("Revision3"))
        .count();
    assert_eq!(moved, 2, "{table}");

    let history = rollout(&kubeconfig, &["history", "rgd/storefronts"]);
    let listed = text(&history.stdout);
    assert!(history.status.success(), "{}", text(&history.stderr));
    let numbers: Vec<&str> = listed
        .lines()
        .skip(2)
        .filter_map(|line| line.split_whitespace().next())
        .collect();
    assert_eq!(numbers, ["1", "2", "3"], "{listed}");
    assert!(
        listed.lines().nth(2).is_some_and(|line| line
            .split_whitespace()
            .nth(1)
            .is_some_and(|hash| hash.len() == 16)),
        "{listed}"
    );

    // Undo writes revision 2's spec back: revision 4, rolled out to all six.
    let undone = rollout(&kubeconfig, &["undo", "rgd/storefronts"]);
    assert!(undone.status.success(), "{}", text(&undone.stderr));
    assert!(
        text(&undone.stdout).contains("rolled back to revision 2"),
        "{}",
        text(&undone.stdout)
    );
    let done = rollout(
        &kubeconfig,
        &["status", "rgd/storefronts", "--timeout", "2m"],
    );
    let said = text(&done.stdout);
    assert!(done.status.success(), "{said}{}", text(&done.stderr));
    assert!(said.contains("all 6 instances on revision 4"), "{said}");
    let labels = kubectl(&[
        "get",
        "deployments",
        "-o",
        "jsonpath={.items[*].spec.template.metadata.labels.broken}",
    ]);
    assert_eq!(labels.trim(), "", "no Deployment keeps the broken label");
    // Going back to what is already there changes nothing.
    let again = rollout(
        &kubeconfig,
        &["undo", "rgd/storefronts", "--to-revision", "2"],
    );
    assert!(
        text(&again.stdout).contains("skipped rollback (current spec is already revision 2)"),
        "{}{}",
        text(&again.stdout),
        text(&again.stderr)
    );
    let missing = rollout(
        &kubeconfig,
        &["undo", "rgd/storefronts", "--to-revision", "9"],
    );
    assert!(!missing.status.success());
    assert!(
        text(&missing.stderr).contains("has no revision 9"),
        "{}",
        text(&missing.stderr)
    );
}
