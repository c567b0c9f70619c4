//! `kro_graph::pluralize` against flect v1.0.3 itself, word by word.
//!
//! Upstream kro names a generated CRD `<plural>.<group>` with
//! `plural = flect.Pluralize(strings.ToLower(kind))`; a drop-in replacement must pick the same
//! name. This suite builds `tools/flect` (a Go module pinning github.com/gobuffalo/flect v1.0.3)
//! into the cargo target directory, feeds it the corpus in `testdata/plural-words.txt`
//! lower-cased (plus a few raw texts), and reports every word where the two disagree.
//!
//! Go is needed for that; without it the comparison is skipped with a printed reason, except
//! under `CI=true`, where that is a failure (the rule of the real control-plane suites). The
//! build runs once per change of `tools/flect`: the binary's name carries a hash of the
//! module's files. Module and build caches stay under the target directory.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use kro_graph::{parse_yaml_documents, pluralize};

/// Texts fed as they are (not lower-cased): separators, capitals and white space, where flect
/// pluralises the last word only.
const RAW_TEXTS: &[&str] = &[
    "",
    "my-app",
    "my_ox",
    "rds-postgres",
    "x/y/box",
    "foo bar",
    "a+b",
    "a$box",
    "box ",
    " box",
    "dns-",
    "-",
    "my-dns",
    "my-api",
    "WebApp",
    "APIServer",
    "HTTPRoute",
    "Person",
    "Ox",
    "ID",
    "IDs",
    "DNS",
    "RDSPostgres",
    "NATSCluster",
    "WiFi",
    "MoCA",
    "`quoted`",
    "so:what",
    "Big:Ox",
];

fn repository_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The words of `testdata/plural-words.txt` as written (kinds), without comments and blanks.
fn corpus() -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/plural-words.txt");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|error| panic!("cannot read {}: {error}", path.display()));
    text.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(str::to_owned)
        .collect()
}

/// The corpus lower-cased, as pluralize sees it (`EKSCluster` stands for `EksCluster` too).
fn lower_case_corpus() -> BTreeSet<String> {
    corpus().iter().map(|word| word.to_lowercase()).collect()
}

#[test]
fn the_corpus_is_large_and_has_no_repeated_word() {
    let words = corpus();
    let mut seen = BTreeSet::new();
    let repeated: Vec<&String> = words
        .iter()
        .filter(|word| !seen.insert(word.to_lowercase()))
        .collect();
    assert!(repeated.is_empty(), "repeated words: {repeated:?}");
    assert!(words.len() >= 500, "only {} words", words.len());
}

#[test]
fn the_corpus_holds_every_kind_of_the_kubernetes_catalog() {
    let words = lower_case_corpus();
    let missing: BTreeSet<&str> = kro_schema::Catalog::kubernetes()
        .gvks()
        .map(kro_schema::Gvk::kind)
        .filter(|kind| !words.contains(&kind.to_lowercase()))
        .collect();
    assert!(missing.is_empty(), "add to the corpus: {missing:?}");
}

#[test]
fn the_corpus_holds_every_kind_of_upstreams_examples() {
    let words = lower_case_corpus();
    let mut missing = BTreeSet::new();
    let examples = repository_root().join("testdata/kro-upstream/examples");
    for file in kro_test_support::yaml_files(&examples) {
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        // Helm templates among the examples are not YAML; they define no RGD kind.
        let Ok(documents) = parse_yaml_documents(&text) else {
            continue;
        };
        for document in documents {
            if document.kind.as_deref() != Some("ResourceGraphDefinition") {
                continue;
            }
            let spec = &document.value["spec"];
            let created = spec["resources"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|resource| &resource["template"]["kind"]);
            for kind in std::iter::once(&spec["schema"]["kind"]).chain(created) {
                if let Some(kind) = kind.as_str()
                    && !kind.contains("${")
                    && !words.contains(&kind.to_lowercase())
                {
                    missing.insert(kind.to_owned());
                }
            }
        }
    }
    assert!(missing.is_empty(), "add to the corpus: {missing:?}");
}

#[test]
fn plurals_match_flect_word_for_word() {
    let Some(flect) = flect_or_skip() else {
        return;
    };
    let mut texts: Vec<String> = corpus().iter().map(|word| word.to_lowercase()).collect();
    texts.extend(RAW_TEXTS.iter().map(|text| (*text).to_owned()));
    let answers = run_flect(&flect, &texts);
    assert_eq!(
        answers.len(),
        texts.len(),
        "flect answered {} lines for {} words",
        answers.len(),
        texts.len()
    );
    let differences: Vec<String> = texts
        .iter()
        .zip(&answers)
        .filter_map(|(text, expected)| {
            let ours = pluralize(text);
            (ours != *expected).then(|| format!("{text:?}: flect {expected:?}, ours {ours:?}"))
        })
        .collect();
    assert!(
        differences.is_empty(),
        "{} of {} words differ from flect v1.0.3:\n{}",
        differences.len(),
        texts.len(),
        differences.join("\n")
    );
}

/// The built flect binary, or `None` (after printing why) when Go is missing outside CI.
fn flect_or_skip() -> Option<PathBuf> {
    if !kro_test_support::go_or_skip(
        "plurals",
        "comparing with flect needs Go to build tools/flect",
    ) {
        return None;
    }
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("flect");
    Some(kro_test_support::build_go_tool("flect", ".", &out))
}

/// flect's plural of each text, one per text.
fn run_flect(flect: &Path, texts: &[String]) -> Vec<String> {
    // flect reads custom inflections from its working directory and two variables at start;
    // the binary refuses to run with them, and this keeps them away.
    let directory = flect.parent().expect("the binary lies in a directory");
    let mut child = Command::new(flect)
        .current_dir(directory)
        .env_remove("INFLECT_PATH")
        .env_remove("ACRONYMS_PATH")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|error| panic!("cannot run {}: {error}", flect.display()));
    let mut stdin = child.stdin.take().expect("stdin is piped");
    let input: String = texts.iter().map(|text| format!("{text}\n")).collect();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let output = child.wait_with_output().expect("flect runs to the end");
    writer
        .join()
        .expect("the writer thread does not panic")
        .expect("flect reads every word");
    assert!(
        output.status.success(),
        "{} failed ({}):\n{}",
        flect.display(),
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout)
        .expect("flect prints UTF-8")
        .lines()
        .map(str::to_owned)
        .collect()
}
