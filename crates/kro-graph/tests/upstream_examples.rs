//! Every RGD in upstream kro's examples builds: the kubernetes ones against the built-in
//! catalog, the cloud-provider ones with the CRDs of upstream's integration tests (or with only
//! unknown-kind warnings).

use std::path::{Path, PathBuf};

use kro_graph::{
    BuiltinCatalog, CrdSchemas, SchemaSources, build_graph, compare_crds, parse_yaml_documents,
};

fn testdata() -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata");
    assert!(
        path.is_dir(),
        "{} is missing: the upstream examples are vendored under testdata/ in the repository",
        path.display()
    );
    path
}

fn crds() -> CrdSchemas {
    let mut crds = CrdSchemas::new();
    for file in kro_test_support::yaml_files(&testdata().join("kro-upstream/test/integration/crds"))
    {
        let text = std::fs::read_to_string(&file).expect("readable CRD file");
        for document in parse_yaml_documents(&text).expect("valid YAML") {
            if document.kind.as_deref() == Some("CustomResourceDefinition") {
                crds.add(&document.value).expect("a valid CRD");
            }
        }
    }
    crds
}

/// Examples that upstream kro rejects too, with the reason (checked against upstream's code).
const BROKEN_UPSTREAM: &[(&str, &str)] = &[
    (
        "aws/ack-controller/all-controllers.yaml",
        "not valid YAML (a block mapping misses a key at line 30)",
    ),
    (
        "aws/ack-controller/controllers/ec2-controller.yaml",
        "an unquoted default with spaces: upstream's marker parser fails on it as well",
    ),
    (
        "aws/ack-controller/controllers/ecr-controller.yaml",
        "an unquoted default with spaces",
    ),
    (
        "aws/ack-controller/controllers/ecr-public-controller.yaml",
        "an unquoted default with spaces",
    ),
    (
        "aws/ack-controller/controllers/eks-controller.yaml",
        "an unquoted default with spaces",
    ),
    (
        "aws/ack-controller/controllers/s3-controller.yaml",
        "an unquoted default with spaces",
    ),
    (
        "aws/ack-controller/controllers/sqs-controller.yaml",
        "an unquoted default with spaces",
    ),
    (
        "aws/ack-controller/resourcegroup.yaml",
        "an unquoted default with spaces",
    ),
    (
        "aws/ack-controller/controllers/iam-controller.yaml",
        "a bool inside a string template: upstream concatenates the parts with + and fails to type-check too",
    ),
    (
        "aws/ack-eks-cluster/eks-reused.yaml",
        "a typo, ${spc.version} for ${spec.version}",
    ),
    (
        "aws/llm/llm.yaml",
        "a bool written into nodeSelector, a map of strings: upstream's type check rejects it too",
    ),
    (
        "gcp/gemma-on-tpu/rgd.yaml",
        "externalRef.metadata is null (its fields are mis-indented)",
    ),
];

fn is_broken_upstream(file: &Path) -> bool {
    BROKEN_UPSTREAM
        .iter()
        .any(|(suffix, _)| file.to_string_lossy().ends_with(suffix))
}

fn build_all(dir: &Path, sources: &SchemaSources) -> (usize, Vec<String>) {
    let mut built = 0;
    let mut failures = Vec::new();
    for file in kro_test_support::yaml_files(dir) {
        let text = std::fs::read_to_string(&file).expect("readable example");
        if !text.contains("kind: ResourceGraphDefinition") {
            continue;
        }
        if is_broken_upstream(&file) {
            let outcome = parse_yaml_documents(&text)
                .map_err(|error| error.to_string())
                .and_then(|documents| {
                    documents
                        .iter()
                        .filter(|document| document.is_resource_graph_definition())
                        .try_for_each(|document| {
                            let rgd = document
                                .to_resource_graph_definition()
                                .map_err(|error| error.to_string())?;
                            build_graph(&rgd, sources)
                                .map(|_| ())
                                .map_err(|errors| errors.to_string())
                        })
                });
            if outcome.is_ok() {
                failures.push(format!(
                    "{}: listed as broken upstream but it builds",
                    file.display()
                ));
            }
            continue;
        }
        let documents = match parse_yaml_documents(&text) {
            Ok(documents) => documents,
            Err(error) => {
                failures.push(format!("{}: {error}", file.display()));
                continue;
            }
        };
        for document in documents
            .iter()
            .filter(|document| document.is_resource_graph_definition())
        {
            let rgd = match document.to_resource_graph_definition() {
                Ok(rgd) => rgd,
                Err(error) => {
                    failures.push(format!("{}: {error}", file.display()));
                    continue;
                }
            };
            match build_graph(&rgd, sources) {
                Ok(graph) => {
                    built += 1;
                    // Every generated CRD is comparable, and unchanged against itself.
                    match compare_crds(&graph.crd, &graph.crd) {
                        Ok(changes) if changes.is_empty() => {}
                        outcome => failures.push(format!(
                            "{}: its CRD compared with itself: {outcome:?}",
                            file.display()
                        )),
                    }
                }
                Err(errors) => failures.push(format!("{}:\n{errors}", file.display())),
            }
        }
    }
    (built, failures)
}

#[test]
fn every_kubernetes_example_builds_against_the_builtin_catalog() {
    let sources = SchemaSources::new().with(BuiltinCatalog);
    let (built, failures) = build_all(
        &testdata().join("kro-upstream/examples/kubernetes"),
        &sources,
    );
    assert!(
        failures.is_empty(),
        "{} failed:\n{}",
        failures.len(),
        failures.join("\n\n")
    );
    assert!(built >= 8, "only {built} RGDs found");
}

#[test]
fn every_cloud_example_builds_with_the_integration_crds() {
    let sources = SchemaSources::new().with(BuiltinCatalog).with(crds());
    let mut total = 0;
    let mut all_failures = Vec::new();
    for provider in ["aws", "azure", "gcp", "apigateway"] {
        let (built, failures) = build_all(
            &testdata().join("kro-upstream/examples").join(provider),
            &sources,
        );
        total += built;
        all_failures.extend(failures);
    }
    assert!(
        all_failures.is_empty(),
        "{} failed:\n{}",
        all_failures.len(),
        all_failures.join("\n\n")
    );
    assert!(total > 0);
}
