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
        .filter_map(|line| line.split_whitespace().next())
        .collect();
    assert_eq!(commands, ["completions", "help"]);
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
