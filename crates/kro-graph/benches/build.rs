//! Building graphs: every RGD of upstream's `examples/kubernetes`, and a generated RGD of 200
//! resources in a dependency tree eight levels deep.
//!
//! `cargo bench -p kro-graph --bench build`. Each case has a baseline in the same group:
//! reading the RGD's YAML text into a document (the work before any building starts), so the
//! figures read as "building costs N times parsing".

use std::fmt::Write as _;
use std::hint::black_box;
use std::path::{Path, PathBuf};

use criterion::{Criterion, criterion_group, criterion_main};
use kro_graph::{
    BuiltinCatalog, ResourceGraphDefinition, SchemaSources, build_graph, parse_yaml_documents,
};

fn examples() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/kro-upstream/examples/kubernetes");
    let mut files = Vec::new();
    let mut stack = vec![root.clone()];
    while let Some(dir) = stack.pop() {
        let entries = std::fs::read_dir(&dir).unwrap_or_else(|error| {
            panic!(
                "{}: {error} (testdata/ vendored in the repository)",
                dir.display()
            )
        });
        for entry in entries.flatten() {
            let path: PathBuf = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|ext| ext == "yaml") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
        .into_iter()
        .filter_map(|file| {
            let text = std::fs::read_to_string(&file).ok()?;
            text.contains("kind: ResourceGraphDefinition").then(|| {
                let name = file
                    .strip_prefix(&root)
                    .unwrap_or(&file)
                    .with_extension("")
                    .to_string_lossy()
                    .replace('/', "_");
                (name, text)
            })
        })
        .collect()
}

/// 200 resources: resource `i` (i > 0) reads resource `(i - 1) / 2`, alternating ConfigMaps,
/// Services and Deployments, each with several expressions.
fn rgd_of_200_resources() -> String {
    let mut text = String::from(
        "apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: big
spec:
  schema:
    apiVersion: v1alpha1
    kind: Big
    spec:
      name: string | default=big
      replicas: integer | default=2
      image: string | default=nginx
    status:
      first: ${r0.metadata.name}
  resources:
",
    );
    for i in 0..200 {
        let parent = if i == 0 {
            "schema.spec.name".to_owned()
        } else {
            format!("r{}.metadata.name", (i - 1) / 2)
        };
        let _ = match i % 3 {
            0 => write!(
                text,
                "    - id: r{i}
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: ${{{parent}}}-{i}
        data:
          owner: ${{{parent}}}
          replicas: ${{string(schema.spec.replicas)}}
"
            ),
            1 => write!(
                text,
                "    - id: r{i}
      template:
        apiVersion: v1
        kind: Service
        metadata:
          name: ${{{parent}}}-{i}
        spec:
          selector: {{app: '${{{parent}}}'}}
          ports:
            - port: 80
              targetPort: ${{schema.spec.replicas + 8000}}
"
            ),
            _ => write!(
                text,
                "    - id: r{i}
      template:
        apiVersion: apps/v1
        kind: Deployment
        metadata:
          name: ${{{parent}}}-{i}
        spec:
          replicas: ${{schema.spec.replicas}}
          selector: {{matchLabels: {{app: '${{{parent}}}'}}}}
          template:
            metadata: {{labels: {{app: '${{{parent}}}'}}}}
            spec:
              containers:
                - name: main
                  image: ${{schema.spec.image}}
"
            ),
        };
    }
    text
}

fn decode(text: &str) -> ResourceGraphDefinition {
    let documents = parse_yaml_documents(text).unwrap_or_else(|error| panic!("{error}"));
    let Some(document) = documents
        .iter()
        .find(|document| document.is_resource_graph_definition())
    else {
        panic!("no RGD in the text");
    };
    document
        .to_resource_graph_definition()
        .unwrap_or_else(|error| panic!("{error}"))
}

fn bench_case(c: &mut Criterion, name: &str, text: &str, sources: &SchemaSources) {
    let rgd = decode(text);
    if let Err(errors) = build_graph(&rgd, sources) {
        panic!("{name} does not build:\n{errors}");
    }
    let mut group = c.benchmark_group(name);
    group.bench_function("baseline/parse_yaml", |b| {
        b.iter(|| parse_yaml_documents(black_box(text)))
    });
    group.bench_function("build", |b| {
        b.iter(|| build_graph(black_box(&rgd), sources))
    });
    group.finish();
}

fn build(c: &mut Criterion) {
    let sources = SchemaSources::new().with(BuiltinCatalog);
    for (name, text) in examples() {
        bench_case(c, &name, &text, &sources);
    }
    bench_case(
        c,
        "generated_200_resources",
        &rgd_of_200_resources(),
        &sources,
    );
}

criterion_group!(benches, build);
criterion_main!(benches);
