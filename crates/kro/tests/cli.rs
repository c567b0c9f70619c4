//! The `kro` binary's top-level behaviour, run as a user runs it.

use std::process::{Command, Output};

fn kro(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kro"))
        .args(args)
        .output()
        .expect("the kro binary built by cargo runs")
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).expect("kro writes UTF-8")
}

#[test]
fn version_flag_prints_the_package_version() {
    let output = kro(&["--version"]);
    assert!(output.status.success());
    assert_eq!(
        stdout(&output),
        format!("kro {}\n", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn help_lists_every_subcommand() {
    let output = kro(&["--help"]);
    assert!(output.status.success());
    let help = stdout(&output);
    let commands: Vec<&str> = help
        .lines()
        .skip_while(|line| *line != "Commands:")
        .skip(1)
        .take_while(|line| !line.is_empty())
        // Command lines are indented by two spaces; wrapped descriptions by more.
        .filter(|line| line.starts_with("  ") && !line.starts_with("   "))
        .filter_map(|line| line.split_whitespace().next())
        .collect();
    assert_eq!(
        commands,
        [
            "apiserver",
            "apply",
            "delete",
            "controller",
            "dev",
            "completions",
            "eval",
            "validate",
            "generate",
            "graph",
            "render",
            "rollout",
            "help"
        ]
    );
}

#[test]
fn unknown_subcommand_is_a_usage_error() {
    let output = kro(&["no-such-command"]);
    assert_eq!(output.status.code(), Some(2));
}

#[test]
fn bash_completions_name_the_subcommands() {
    let output = kro(&["completions", "bash"]);
    assert!(output.status.success());
    let script = stdout(&output);
    assert!(
        script.starts_with("_kro()"),
        "unexpected script start: {script:.40}"
    );
}

fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).expect("kro writes UTF-8")
}

#[test]
fn eval_prints_the_result_as_json() {
    let output = kro(&["eval", "[1,2,3].map(x, x * 2).filter(y, y > 2)"]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stdout(&output), "[4,6]\n");
}

#[test]
fn eval_binds_variables_from_json() {
    let output = kro(&[
        "eval",
        "--var",
        r#"spec={"replicas":3,"name":"web"}"#,
        "spec.name + '-' + string(spec.replicas)",
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stdout(&output), "\"web-3\"\n");
}

#[test]
fn eval_takes_expressions_that_begin_with_a_minus_sign() {
    for (arguments, expected) in [
        (&["eval", "-7 / 2"][..], "-3\n"),
        (&["eval", "-x * 2", "--var", "x=4"][..], "-8\n"),
        (&["eval", "--check", "-1.5"][..], "double\n"),
        (&["eval", "--", "-(1 + 2)"][..], "-3\n"),
    ] {
        let output = kro(arguments);
        assert!(
            output.status.success(),
            "{arguments:?}: {}",
            stderr(&output)
        );
        assert_eq!(stdout(&output), expected, "{arguments:?}");
    }
}

#[test]
fn eval_check_prints_the_type() {
    let output = kro(&["eval", "--check", "{'a': [1.5]}"]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stdout(&output), "map(string, list(double))\n");
}

#[test]
fn eval_type_errors_exit_1_with_a_caret() {
    let output = kro(&["eval", "1 + \"a\""]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        stderr(&output),
        "ERROR: <input>:1:3: found no matching overload for '_+_' applied to '(int, string)'\n | 1 + \"a\"\n | ..^\n"
    );
}

#[test]
fn eval_runtime_errors_point_at_the_failing_node() {
    let output = kro(&["eval", "--var", "m={}", "m.x"]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        stderr(&output),
        "ERROR: <input>:1:2: no such key: x\n | m.x\n | .^\n"
    );
}

#[test]
fn eval_stops_expensive_expressions_at_the_cost_limit() {
    let list = format!(
        "[{}]",
        (0..100)
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join(",")
    );
    let expression = format!("{list}.map(a, {list}.map(b, {list}.map(c, a * b * c)))");
    let started = std::time::Instant::now();
    let output = kro(&["eval", &expression]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("cost limit exceeded"),
        "{}",
        stderr(&output)
    );
    // Not a timing assertion on the evaluator: a generous bound that only a hang would break.
    assert!(started.elapsed() < std::time::Duration::from_secs(30));
}

#[test]
fn eval_rejects_malformed_variables() {
    let output = kro(&["eval", "--var", "novalue", "1"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr(&output).contains("expected NAME=JSON"));
}

/// `kro render ... | head -c 10`: the reader goes away while kro still writes; kro stops as
/// a Unix tool stopped by SIGPIPE does (status 141), with no panic message.
#[test]
fn a_closed_stdout_stops_kro_quietly() {
    use std::io::Read;
    let dir = tempfile::tempdir().expect("a directory");
    let mut rgd = String::from(
        "apiVersion: kro.run/v1alpha1\nkind: ResourceGraphDefinition\nmetadata:\n  name: big\n\
         spec:\n  schema:\n    apiVersion: v1alpha1\n    kind: Big\n  resources:\n",
    );
    for index in 0..400 {
        rgd.push_str(&format!(
            "    - id: c{index}\n      template:\n        apiVersion: v1\n        kind: ConfigMap\n\
             \x20       metadata:\n          name: c{index}\n        data:\n          k: \"{}\"\n",
            "x".repeat(200)
        ));
    }
    let rgd_path = dir.path().join("rgd.yaml");
    std::fs::write(&rgd_path, rgd).expect("the RGD");
    let instance = dir.path().join("instance.yaml");
    std::fs::write(
        &instance,
        "apiVersion: kro.run/v1alpha1\nkind: Big\nmetadata:\n  name: b\n  namespace: default\n",
    )
    .expect("the instance");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_kro"))
        .args(["render", "--assume-applied", "-f"])
        .arg(&rgd_path)
        .arg("-i")
        .arg(&instance)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("kro starts");
    let mut first = [0u8; 10];
    child
        .stdout
        .take()
        .expect("stdout")
        .read_exact(&mut first)
        .expect("the first bytes");
    // The pipe's reading end is dropped here; the report is far larger than the pipe holds.
    let output = child.wait_with_output().expect("kro ends");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(141), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}
