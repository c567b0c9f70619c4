//! The container image (`Dockerfile` at the repository's root) as far as it can be checked
//! without a container runtime: it builds the binary with the command the README gives, copies
//! that build's output, runs as a non-root user, and its command line is one the binary
//! accepts.

use std::process::Command;

use kro_test_support::repository_root;

/// The Dockerfile's instructions, each as its keyword and the rest of its line.
fn instructions() -> Vec<(String, String)> {
    let text =
        std::fs::read_to_string(repository_root().join("Dockerfile")).expect("the Dockerfile");
    text.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(|line| {
            let (keyword, rest) = line.split_once(' ').unwrap_or((line, ""));
            (keyword.to_ascii_uppercase(), rest.trim().to_owned())
        })
        .collect()
}

/// The one instruction `keyword` after the last `FROM` (the runtime stage), or in the build
/// stage when `build` is set.
fn stage(build: bool) -> Vec<(String, String)> {
    let all = instructions();
    let starts: Vec<usize> = all
        .iter()
        .enumerate()
        .filter(|(_, (keyword, _))| keyword == "FROM")
        .map(|(index, _)| index)
        .collect();
    assert_eq!(
        starts.len(),
        2,
        "a build stage and a runtime stage: {all:?}"
    );
    if build {
        all[starts[0]..starts[1]].to_vec()
    } else {
        all[starts[1]..].to_vec()
    }
}

fn one(instructions: &[(String, String)], keyword: &str) -> String {
    let found: Vec<&String> = instructions
        .iter()
        .filter(|(k, _)| k == keyword)
        .map(|(_, rest)| rest)
        .collect();
    assert_eq!(found.len(), 1, "one {keyword}: {instructions:?}");
    found[0].clone()
}

fn json_array(text: &str) -> Vec<String> {
    serde_json::from_str(text)
        .unwrap_or_else(|error| panic!("{text} is an exec-form array: {error}"))
}

#[test]
fn the_image_copies_the_release_build_and_runs_it_as_a_non_root_user() {
    let build = stage(true);
    assert!(one(&build, "FROM").ends_with(" AS build"), "{build:?}");
    let workdir = one(&build, "WORKDIR");
    assert_eq!(one(&build, "RUN"), "cargo build --release --locked -p kro");
    // The base image's Rust is the workspace's `rust-version`.
    let manifest =
        std::fs::read_to_string(repository_root().join("Cargo.toml")).expect("Cargo.toml");
    let rust_version = manifest
        .lines()
        .find_map(|line| line.strip_prefix("rust-version = "))
        .map(|version| version.trim_matches('"').to_owned())
        .expect("the workspace's rust-version");
    assert!(
        one(&build, "FROM").contains(&format!("rust:{rust_version}-")),
        "the build image is Rust {rust_version}: {build:?}"
    );

    let runtime = stage(false);
    let copy = one(&runtime, "COPY");
    let (source, target) = copy
        .strip_prefix("--from=build ")
        .and_then(|paths| paths.split_once(' '))
        .expect("COPY --from=build SOURCE TARGET");
    assert_eq!(
        source,
        format!("{workdir}/target/release/kro"),
        "the release build's binary"
    );
    let user = one(&runtime, "USER");
    assert!(
        !user.is_empty() && !user.starts_with("0") && !user.starts_with("root"),
        "a non-root user: {user}"
    );
    assert_eq!(
        json_array(&one(&runtime, "ENTRYPOINT")),
        [target.to_owned()]
    );
    let command = json_array(&one(&runtime, "CMD"));
    assert_eq!(command, ["controller"]);

    // The command line parses: the same arguments with --help print the controller's usage.
    let output = Command::new(env!("CARGO_BIN_EXE_kro"))
        .args(&command)
        .arg("--help")
        .output()
        .expect("kro runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(String::from_utf8_lossy(&output.stdout).contains("--metrics-bind-address"));
}
