//! `lifecycle` on resources (KREP-014): the static map and the `kro.policy` expression, and
//! every way of writing one wrong.

use super::tests::{HEADER, rgd};
use super::*;
use crate::graph::Lifecycle;
use crate::lifecycle::DeletePolicy;
use crate::schema_source::{BuiltinCatalog, SchemaSources};

fn build(resources: &str) -> Result<CompiledGraph, BuildErrors> {
    let yaml = format!(
        "{HEADER}spec:
  schema:
    apiVersion: v1alpha1
    kind: App
    spec:
      environment: string | default=dev
  resources:
{resources}"
    );
    build_graph(&rgd(&yaml), &SchemaSources::new().with(BuiltinCatalog))
}

fn config_map(lifecycle: &str) -> String {
    format!(
        "    - id: config
      lifecycle: {lifecycle}
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: ${{schema.metadata.name}}
"
    )
}

fn only_error(resources: &str) -> BuildError {
    let errors = build(resources).expect_err("refused").errors;
    assert_eq!(errors.len(), 1, "{errors:?}");
    errors.into_iter().next().expect("one error")
}

#[test]
fn both_written_forms_compile() {
    let graph = build(&config_map("{deletePolicy: retain}")).unwrap_or_else(|e| panic!("{e}"));
    assert!(matches!(
        graph.nodes[0].lifecycle,
        Some(Lifecycle::Fixed(DeletePolicy::Retain))
    ));
    let graph = build(&config_map(
        r#"'${schema.spec.environment == "production" ? policy().withRetain() : policy()}'"#,
    ))
    .unwrap_or_else(|e| panic!("{e}"));
    let Some(Lifecycle::Expression(expression)) = &graph.nodes[0].lifecycle else {
        panic!("an expression: {:?}", graph.nodes[0].lifecycle);
    };
    assert!(expression.references.is_empty());
    // Without lifecycle nothing is compiled, and the node's dependencies do not change.
    let graph = build(
        "    - id: config
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: x
",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(graph.nodes[0].lifecycle.is_none());
}

#[test]
fn a_lifecycle_that_reads_a_resource_is_refused_naming_it() {
    let error = only_error(&format!(
        "{}    - id: secret
      lifecycle: \"${{config.data.keep == 'yes' ? policy().withRetain() : policy()}}\"
      template:
        apiVersion: v1
        kind: Secret
        metadata:
          name: ${{schema.metadata.name}}
",
        config_map("${policy()}")
    ));
    assert_eq!(error.path.to_string(), "spec.resources[1].lifecycle");
    assert_eq!(error.kind.reason(), "InvalidLifecycle");
    let text = error.to_string();
    assert!(
        text.contains("reads config") && text.contains("schema only"),
        "{text}"
    );
}

#[test]
fn a_lifecycle_that_is_not_a_policy_is_refused() {
    let error = only_error(&config_map("${'retain'}"));
    assert_eq!(error.kind.reason(), "InvalidLifecycle");
    assert!(
        error.to_string().contains("must be a kro.Policy"),
        "{error}"
    );
    let error = only_error(&config_map("retain"));
    assert_eq!(error.path.to_string(), "spec.resources[0].lifecycle");
    assert!(error.to_string().contains("${...}"), "{error}");
    let error = only_error(&config_map("${policy().withOrphan()}"));
    assert_eq!(error.kind.reason(), "InvalidExpression");
}

#[test]
fn the_map_form_names_what_is_wrong() {
    let error = only_error(&config_map("{deletePolicy: orphan}"));
    assert_eq!(error.path.to_string(), "spec.resources[0].lifecycle");
    assert!(error.to_string().contains(r#"found "orphan""#), "{error}");
    let error = only_error(&config_map("{delete: abandon}"));
    assert!(
        error.to_string().contains(r#"unknown field "delete""#),
        "{error}"
    );
}

#[test]
fn lifecycle_is_refused_where_kro_deletes_nothing() {
    let error = only_error(
        "    - id: shared
      lifecycle: {deletePolicy: retain}
      externalRef:
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: shared
",
    );
    assert_eq!(error.path.to_string(), "spec.resources[0].lifecycle");
    assert!(
        error.to_string().contains("never deletes an externalRef"),
        "{error}"
    );
}

#[test]
fn a_collection_lifecycle_cannot_read_its_items() {
    let error = only_error(
        "    - id: configs
      forEach:
        - name: ${['a', 'b']}
      lifecycle: \"${name == 'a' ? policy().withRetain() : policy()}\"
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: ${name}
",
    );
    assert_eq!(error.path.to_string(), "spec.resources[0].lifecycle");
    assert!(error.to_string().contains("name"), "{error}");
}
