use std::path::{Path, PathBuf};

use serde_json::json;

use super::*;
use crate::template::scan_json;
use crate::{ForEach, ResourceGraphDefinition};

fn path(text: &str) -> FieldPath {
    text.parse().expect("valid path")
}

fn at(line: u32, column: u32) -> Location {
    Location { line, column }
}

const CRD_AND_RGD: &str = "\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: things.example.com
---
# The graph.
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: app
spec:
  schema:
    apiVersion: v1alpha1
    kind: App
    spec:
      replicas: integer | default=1
  resources:
    - id: config
      template:
        apiVersion: v1
        kind: ConfigMap
        data: {a: \"${schema.spec.replicas}\", b: x}
    - id: deployment
      template:
        apiVersion: apps/v1
        kind: Deployment
        spec:
          replicas: ${schema.spec.replicas}
          containers:
            - name: app
              image: nginx
";

#[test]
fn multi_document_yaml_maps_nested_keys_and_list_items_to_their_lines() {
    let documents = parse_yaml_documents(CRD_AND_RGD).expect("valid YAML");
    assert_eq!(documents.len(), 2);
    let (crd, rgd) = (&documents[0], &documents[1]);
    assert_eq!(crd.index, 0);
    assert_eq!(crd.kind.as_deref(), Some("CustomResourceDefinition"));
    assert!(!crd.is_resource_graph_definition());
    assert_eq!(rgd.index, 1);
    assert!(rgd.is_resource_graph_definition());
    assert_eq!(rgd.location(), Some(at(7, 1)));
    let cases = [
        ("kind", at(8, 7), Some(at(8, 1))),
        ("spec.schema.spec.replicas", at(16, 17), Some(at(16, 7))),
        ("spec.resources", at(18, 5), Some(at(17, 3))),
        ("spec.resources[0]", at(18, 7), None),
        (
            "spec.resources[0].template.data.a",
            at(22, 19),
            Some(at(22, 16)),
        ),
        (
            "spec.resources[0].template.data.b",
            at(22, 49),
            Some(at(22, 46)),
        ),
        ("spec.resources[1].id", at(23, 11), Some(at(23, 7))),
        (
            "spec.resources[1].template.spec.replicas",
            at(28, 21),
            Some(at(28, 11)),
        ),
        (
            "spec.resources[1].template.spec.containers[0].image",
            at(31, 22),
            Some(at(31, 15)),
        ),
    ];
    for (field, value, key) in cases {
        assert_eq!(
            rgd.source_map.get(&path(field)),
            Some(&FieldLocation { value, key }),
            "{field}"
        );
    }
    assert_eq!(
        crd.source_map.value_location(&path("metadata.name")),
        Some(at(4, 9))
    );
    assert_eq!(rgd.source_map.get(&path("spec.missing")), None);
}

#[test]
fn every_value_of_a_document_has_a_location() {
    let documents = parse_yaml_documents(CRD_AND_RGD).expect("valid YAML");
    for document in &documents {
        let mut paths = Vec::new();
        let mut pending = vec![(FieldPath::root(), &document.value)];
        while let Some((at_path, value)) = pending.pop() {
            match value {
                Json::Object(map) => {
                    pending.extend(
                        map.iter()
                            .map(|(key, child)| (at_path.key(key.as_str()), child)),
                    );
                }
                Json::Array(items) => {
                    pending.extend(
                        items
                            .iter()
                            .enumerate()
                            .map(|(i, child)| (at_path.index(i), child)),
                    );
                }
                _ => {}
            }
            paths.push(at_path);
        }
        assert_eq!(paths.len(), document.source_map.len());
        for at_path in paths {
            assert!(document.source_map.get(&at_path).is_some(), "{at_path}");
        }
    }
}

#[test]
fn yaml_syntax_errors_carry_their_line_and_column() {
    let cases = [
        ("a: 1\nb: [1, 2\n", "InvalidYaml", Some(at(2, 4))),
        ("a:\n  - b\n c: d\n", "InvalidYaml", Some(at(3, 2))),
        ("? [a]\n: 1\n", "InvalidYaml", Some(at(1, 3))),
        ("x: .nan\n", "NonFiniteNumber", Some(at(1, 4))),
    ];
    for (text, reason, location) in cases {
        let error = parse_yaml_documents(text).expect_err(text);
        assert_eq!(
            (error.reason(), error.location),
            (reason, location),
            "{text:?}"
        );
    }
}

#[test]
fn unquoted_simple_schema_list_types_are_told_to_be_quoted() {
    // As KREP-2 writes its schema: `workers: []string`.
    for (text, written) in [
        ("spec:\n  workers: []string\n", "[]string"),
        (
            "spec:\n  ports: []map[string]integer # ports\n",
            "[]map[string]integer",
        ),
        ("values:\n  - []string\n", "[]string"),
    ] {
        let error = parse_yaml_documents(text).expect_err(text);
        assert_eq!(
            error.kind,
            YamlErrorKind::UnquotedBracket {
                written: written.to_string()
            },
            "{text:?}"
        );
        assert_eq!(error.reason(), "InvalidYaml");
    }
}

#[test]
fn a_repeated_key_keeps_its_last_value_and_warns_as_kubectl_reads_yaml() {
    let documents = parse_yaml_documents("a: 1\nb: 2\na: 3\n---\nc: 1\n").expect("readable");
    assert_eq!(documents[0].value, serde_json::json!({"a": 3, "b": 2}));
    let warnings: Vec<_> = documents[0]
        .warnings
        .iter()
        .map(|warning| (warning.reason(), warning.location))
        .collect();
    assert_eq!(warnings, vec![("DuplicateKey", Some(at(3, 1)))]);
    assert!(documents[1].warnings.is_empty());
}

#[test]
fn rgd_fields_of_the_wrong_type_are_reported_at_their_line() {
    let text = CRD_AND_RGD.replace(
        "    - id: deployment\n",
        "    - id: deployment\n      readyWhen: 5\n",
    );
    let documents = parse_yaml_documents(&text).expect("valid YAML");
    let error = documents[1]
        .to_resource_graph_definition()
        .expect_err("readyWhen is not a list");
    assert_eq!(error.path, path("spec.resources[1].readyWhen"));
    assert_eq!(error.location, Some(at(24, 7)));
    assert_eq!(error.reason(), "InvalidField");
    assert!(
        error
            .to_string()
            .starts_with("24:7: spec.resources[1].readyWhen: ")
    );
}

#[test]
fn rgd_errors_point_at_the_offending_field() {
    let cases = [
        // A missing field is reported at the map that lacks it.
        (
            "apiVersion: kro.run/v1alpha1\nkind: ResourceGraphDefinition\nspec:\n  schema:\n    kind: A\n",
            "spec.schema",
            at(4, 3),
        ),
        (
            "apiVersion: kro.run/v1alpha1\nkind: ResourceGraphDefinition\nspec:\n  schema: {apiVersion: v1, kind: A, scope: Galaxy}\n",
            "spec.schema.scope",
            at(4, 37),
        ),
        (
            "apiVersion: kro.run/v1alpha1\nkind: ResourceGraphDefinition\nspec:\n  schema: {apiVersion: v1, kind: A}\n  resources:\n  - id: [x]\n",
            "spec.resources[0].id",
            at(6, 5),
        ),
    ];
    for (text, field, location) in cases {
        let documents = parse_yaml_documents(text).expect("valid YAML");
        let error = documents[0].to_resource_graph_definition().expect_err(text);
        assert_eq!(
            (error.path, error.location),
            (path(field), Some(location)),
            "{text}"
        );
    }
}

#[test]
fn rgds_decode_from_json_as_from_yaml_with_the_same_field_paths() {
    let documents = parse_yaml_documents(CRD_AND_RGD).expect("valid YAML");
    assert_eq!(
        ResourceGraphDefinition::from_json(&documents[1].value).expect("an RGD"),
        documents[1].to_resource_graph_definition().expect("an RGD")
    );
    let error = ResourceGraphDefinition::from_json(&documents[0].value).expect_err("a CRD");
    assert!(matches!(
        error.kind,
        DecodeErrorKind::NotResourceGraphDefinition { .. }
    ));
    let wrong = serde_json::json!({
        "apiVersion": "kro.run/v1alpha1",
        "kind": "ResourceGraphDefinition",
        "spec": {"schema": {"apiVersion": "v1", "kind": "A"}, "resources": [{"id": ["x"]}]},
    });
    let error = ResourceGraphDefinition::from_json(&wrong).expect_err("id is a list");
    assert_eq!(
        (error.path, error.location),
        (path("spec.resources[0].id"), None)
    );
}

#[test]
fn conditions_written_as_one_expression_are_told_to_be_lists() {
    // As KREP-2 writes them: `readyWhen: ${workers.all(...)}`, a string, not a list.
    let text = "apiVersion: kro.run/v1alpha1\nkind: ResourceGraphDefinition\nspec:\n  schema: {apiVersion: v1, kind: A}\n  resources:\n  - id: a\n    template: {}\n  - id: workers\n    readyWhen: ${workers.all(w, w.status.phase == 'Running')}\n    template: {}\n";
    let documents = parse_yaml_documents(text).expect("valid YAML");
    let error = documents[0]
        .to_resource_graph_definition()
        .expect_err("readyWhen is a string");
    assert_eq!(
        error,
        DecodeError {
            path: path("spec.resources[1].readyWhen"),
            location: Some(at(9, 5)),
            kind: DecodeErrorKind::ConditionsNotAList {
                field: "readyWhen",
                written: "${workers.all(w, w.status.phase == 'Running')}".to_string(),
            },
        }
    );
}

#[test]
fn an_rgd_without_its_api_version_is_told_which_one() {
    // As KREP-2 writes its examples: `kind: ResourceGraphDefinition` and no apiVersion.
    let text = "kind: ResourceGraphDefinition\nspec:\n  resources: []\n";
    let documents = parse_yaml_documents(text).expect("valid YAML");
    let error = documents[0]
        .to_resource_graph_definition()
        .expect_err("no apiVersion");
    assert_eq!(
        (error.path, error.location, error.kind),
        (
            path("apiVersion"),
            Some(at(1, 1)),
            DecodeErrorKind::WrongApiVersion { found: None }
        )
    );
}

#[test]
fn other_kinds_are_returned_but_do_not_decode_as_rgds() {
    let documents = parse_yaml_documents(CRD_AND_RGD).expect("valid YAML");
    let error = documents[0]
        .to_resource_graph_definition()
        .expect_err("a CRD");
    assert_eq!(
        error.kind,
        DecodeErrorKind::NotResourceGraphDefinition {
            api_version: Some("apiextensions.k8s.io/v1".to_string()),
            kind: Some("CustomResourceDefinition".to_string()),
        }
    );
    assert_eq!(error.location, Some(at(2, 1)));
    let rgd = documents[1].to_resource_graph_definition().expect("an RGD");
    assert_eq!(rgd.spec.resources.len(), 2);
}

#[test]
fn yaml_one_one_scalars_read_as_kubectl_reads_them() {
    let text =
        "a: yes\nb: on\nc: y\nd: No\ne: \"yes\"\nf: 0644\ng: 1e3\nh: 2.5\ny: 1\n80: http\n~: n\n";
    let documents = parse_yaml_documents(text).expect("valid YAML");
    assert_eq!(
        documents[0].value,
        json!({
            "a": true, "b": true, "c": true, "d": false, "e": "yes", "f": 420, "g": 1000,
            "h": 2.5, "y": 1, "80": "http", "null": false
        })
    );
}

#[test]
fn empty_documents_are_skipped() {
    let documents = parse_yaml_documents("---\n---\na: 1\n---\n").expect("valid YAML");
    assert_eq!(documents.len(), 1);
    assert_eq!(
        documents[0].source_map.value_location(&path("a")),
        Some(at(3, 4))
    );
    assert!(parse_yaml_documents("").expect("valid YAML").is_empty());
}

fn nested(depth: usize) -> String {
    let mut text = String::new();
    for level in 0..depth {
        text.push_str(&"  ".repeat(level));
        text.push_str("a:\n");
    }
    text.push_str(&"  ".repeat(depth));
    text.push_str("leaf: 1\n");
    text
}

#[test]
fn input_size_and_nesting_are_bounded() {
    // `nested(n)` has n + 1 nested maps.
    assert!(parse_yaml_documents(&nested(63)).is_ok());
    let error = parse_yaml_documents(&nested(64)).expect_err("too deep");
    assert_eq!(error.reason(), "LimitExceeded");
    let deep_flow = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    assert!(parse_yaml_documents(&deep_flow).is_err());
    let limits = YamlLimits::default().max_input_bytes(16);
    let error = parse_yaml_documents_with("a: 12345678901234567890\n", &limits).expect_err("large");
    assert_eq!(
        error.kind,
        YamlErrorKind::TooLarge {
            size_bytes: 24,
            limit_bytes: 16
        }
    );
    let limits = YamlLimits::default().max_documents(2);
    assert!(parse_yaml_documents_with("a: 1\n---\nb: 2\n---\nc: 3\n", &limits).is_err());
    let limits = YamlLimits::default().max_depth(10_000);
    assert!(parse_yaml_documents_with(&nested(200), &limits).is_ok());
}

#[test]
fn alias_bombs_are_stopped() {
    let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for level in 1..9 {
        let previous = level - 1;
        let list = vec![format!("*a{previous}"); 10].join(", ");
        text.push_str(&format!("a{level}: &a{level} [{list}]\n"));
    }
    let error = parse_yaml_documents(&text).expect_err("a billion laughs");
    assert_eq!(error.reason(), "LimitExceeded");
}

fn examples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/kro-upstream/examples")
}

fn rg_files(dir: &Path, found: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(dir)
        .unwrap_or_else(|error| panic!("cannot read {}: {error}", dir.display()));
    for entry in entries {
        let entry_path = entry.expect("directory entry").path();
        if entry_path.is_dir() {
            rg_files(&entry_path, found);
        } else if entry_path.file_name().is_some_and(|name| name == "rg.yaml") {
            found.push(entry_path);
        }
    }
}

/// Every string of an RGD that may hold `${...}`, with its path.
fn template_values(rgd: &ResourceGraphDefinition) -> Vec<(FieldPath, Json)> {
    let spec = FieldPath::root().key("spec");
    let mut values = Vec::new();
    if let Some(status) = &rgd.spec.schema.status {
        values.push((spec.key("schema").key("status"), status.clone()));
    }
    for (index, resource) in rgd.spec.resources.iter().enumerate() {
        let at_path = spec.key("resources").index(index);
        for (name, value) in [("template", &resource.template), ("data", &resource.data)] {
            if let Some(value) = value {
                values.push((at_path.key(name), value.clone()));
            }
        }
        if let Some(external_ref) = &resource.external_ref {
            let value = serde_json::to_value(&external_ref.metadata).expect("serializes");
            values.push((at_path.key("externalRef").key("metadata"), value));
        }
        values.push((at_path.key("readyWhen"), json!(resource.ready_when)));
        values.push((at_path.key("includeWhen"), json!(resource.include_when)));
        match &resource.for_each {
            Some(ForEach::Expression(expression)) => {
                values.push((at_path.key("forEach"), json!(expression)));
            }
            Some(ForEach::Dimensions(dimensions)) => {
                values.push((at_path.key("forEach"), json!(dimensions)));
            }
            None => {}
        }
    }
    values
}

#[test]
fn upstream_example_rgds_load_and_every_template_string_scans() {
    let dir = examples_dir();
    assert!(
        dir.is_dir(),
        "the upstream examples are missing: expected them at {} (vendored under testdata/kro-upstream/examples)",
        dir.display()
    );
    let mut files = Vec::new();
    rg_files(&dir, &mut files);
    files.sort();
    assert!(
        files.len() >= 10,
        "only {} rg.yaml files under {}",
        files.len(),
        dir.display()
    );
    let mut expressions = 0;
    for file in &files {
        let name = file.display();
        let text = std::fs::read_to_string(file).unwrap_or_else(|error| panic!("{name}: {error}"));
        let documents =
            parse_yaml_documents(&text).unwrap_or_else(|error| panic!("{name}:{error}"));
        let rgds: Vec<_> = documents
            .iter()
            .filter(|document| document.is_resource_graph_definition())
            .collect();
        assert!(!rgds.is_empty(), "{name} has no ResourceGraphDefinition");
        for document in rgds {
            let rgd = document
                .to_resource_graph_definition()
                .unwrap_or_else(|error| panic!("{name}:{error}"));
            for (at_path, value) in template_values(&rgd) {
                let scanned = scan_json(&value)
                    .unwrap_or_else(|errors| panic!("{name}: {at_path}: {errors}"));
                for field in &scanned.fields {
                    let full = at_path.join(&field.path);
                    assert!(
                        document.source_map.get(&full).is_some(),
                        "{name}: no location for {full}"
                    );
                }
                expressions += scanned.fields.len();
            }
        }
    }
    assert!(expressions > 100, "only {expressions} expressions found");
}
