use kro_cel::{Type, TypeErrorKind};

use super::*;
use crate::error::{BuildErrorKind, Hint};
use crate::graph::{NodeKind, StatusField};
use crate::schema_source::{BuiltinCatalog, SchemaSources};
use crate::source::parse_yaml_documents;

pub(super) fn rgd(yaml: &str) -> ResourceGraphDefinition {
    let documents = parse_yaml_documents(yaml).expect("valid YAML");
    documents[0].to_resource_graph_definition().expect("an RGD")
}

fn build(yaml: &str) -> Result<CompiledGraph, BuildErrors> {
    build_graph(&rgd(yaml), &SchemaSources::new().with(BuiltinCatalog))
}

fn errors(yaml: &str) -> Vec<BuildError> {
    build(yaml).expect_err("the RGD is invalid").errors
}

fn built(yaml: &str) -> CompiledGraph {
    build(yaml).unwrap_or_else(|errors| panic!("{errors}"))
}

pub(super) const HEADER: &str =
    "apiVersion: kro.run/v1alpha1\nkind: ResourceGraphDefinition\nmetadata:\n  name: test\n";

#[test]
fn a_web_app_builds_into_levels_with_typed_status() {
    let graph = built(&format!(
        "{HEADER}spec:
  schema:
    apiVersion: v1alpha1
    kind: WebApp
    spec:
      name: string
      replicas: integer | default=2
    status:
      available: ${{deployment.status.availableReplicas}}
      url: http://${{service.metadata.name}}
  resources:
    - id: deployment
      template:
        apiVersion: apps/v1
        kind: Deployment
        metadata:
          name: ${{schema.spec.name}}
        spec:
          replicas: ${{schema.spec.replicas}}
          selector:
            matchLabels:
              app: ${{schema.spec.name}}
          template:
            metadata:
              labels:
                app: ${{schema.spec.name}}
            spec:
              containers:
                - name: web
                  image: nginx
      readyWhen:
        - ${{deployment.status.availableReplicas == deployment.spec.replicas}}
    - id: service
      template:
        apiVersion: v1
        kind: Service
        metadata:
          name: ${{schema.spec.name}}-svc
        spec:
          selector: ${{deployment.spec.selector.matchLabels}}
"
    ));
    assert_eq!(graph.topological_order(), vec!["deployment", "service"]);
    assert_eq!(
        graph.node("service").expect("service").dependencies,
        vec!["deployment"]
    );
    assert_eq!(graph.names.crd_name(), "webapps.kro.run");
    let status = &graph.status_schema.properties;
    assert_eq!(status["available"].type_.as_deref(), Some("integer"));
    assert_eq!(status["url"].type_.as_deref(), Some("string"));
    assert!(status.contains_key("state") || graph.crd.to_string().contains("\"state\""));
}

#[test]
fn a_cycle_is_reported_with_its_path() {
    let found = errors(&format!(
        "{HEADER}spec:
  schema: {{apiVersion: v1alpha1, kind: Loop}}
  resources:
    - id: first
      template: {{apiVersion: v1, kind: ConfigMap, metadata: {{name: '${{second.metadata.name}}'}}}}
    - id: second
      template: {{apiVersion: v1, kind: ConfigMap, metadata: {{name: '${{first.metadata.name}}'}}}}
"
    ));
    assert!(
        found
            .iter()
            .any(|error| matches!(&error.kind, BuildErrorKind::Cycle(path) if path.len() == 3)),
        "{found:?}"
    );
    assert!(
        found[0].to_string().contains("first -> second -> first")
            || found[0].to_string().contains("second -> first -> second")
    );
}

#[test]
fn an_unknown_id_names_the_resource_and_field() {
    let found = errors(&format!(
        "{HEADER}spec:
  schema: {{apiVersion: v1alpha1, kind: App}}
  resources:
    - id: config
      template: {{apiVersion: v1, kind: ConfigMap, metadata: {{name: '${{nope.metadata.name}}'}}}}
"
    ));
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].resource.as_deref(), Some("config"));
    assert_eq!(
        found[0].path.to_string(),
        "spec.resources[0].template.metadata.name"
    );
    assert!(
        matches!(type_errors(&found[0].kind)[..], [TypeErrorKind::UndeclaredReference { name, .. }] if name == "nope")
    );
}

#[test]
fn a_string_into_replicas_is_a_type_mismatch() {
    let found = errors(&format!(
        "{HEADER}spec:
  schema:
    apiVersion: v1alpha1
    kind: App
    spec:
      name: string
  resources:
    - id: deployment
      template:
        apiVersion: apps/v1
        kind: Deployment
        metadata: {{name: x}}
        spec:
          replicas: ${{schema.spec.name}}
"
    ));
    assert_eq!(
        found,
        vec![BuildError {
            path: "spec.resources[0].template.spec.replicas"
                .parse()
                .expect("path"),
            resource: Some("deployment".into()),
            kind: BuildErrorKind::TypeMismatch {
                expression: "schema.spec.name".into(),
                expected: Type::Int,
                found: Type::String,
            },
        }]
    );
    assert_eq!(
        found[0].to_string(),
        "resource deployment: spec.resources[0].template.spec.replicas: expression \"schema.spec.name\" has type string, but the field expects int"
    );
}

#[test]
fn ready_when_on_a_data_node_is_an_error() {
    let found = errors(&format!(
        "{HEADER}spec:
  schema: {{apiVersion: v1alpha1, kind: App}}
  resources:
    - id: vars
      data: {{prefix: abc}}
      readyWhen: ['${{true}}']
"
    ));
    assert_eq!(found[0].kind, BuildErrorKind::ReadyWhenOnData);
    assert_eq!(found[0].path.to_string(), "spec.resources[0].readyWhen");
}

#[test]
fn for_each_over_a_string_is_an_error() {
    let found = errors(&format!(
        "{HEADER}spec:
  schema:
    apiVersion: v1alpha1
    kind: App
    spec:
      name: string
  resources:
    - id: configs
      forEach: ${{schema.spec.name}}
      template: {{apiVersion: v1, kind: ConfigMap, metadata: {{name: '${{each.item}}'}}}}
"
    ));
    assert!(
        matches!(
            &found[0].kind,
            BuildErrorKind::NotIterable {
                found: Type::String,
                ..
            }
        ),
        "{found:?}"
    );
    assert_eq!(found[0].path.to_string(), "spec.resources[0].forEach");
}

#[test]
fn scale_on_a_string_is_an_error() {
    let found = errors(&format!(
        "{HEADER}spec:
  schema:
    apiVersion: v1alpha1
    kind: App
    spec:
      replicas: string | scale
"
    ));
    assert!(
        matches!(&found[0].kind, BuildErrorKind::Schema(error) if error.path == "spec.replicas"),
        "{found:?}"
    );
}

#[test]
fn scale_on_spec_but_not_status_is_an_error() {
    let found = errors(&format!(
        "{HEADER}spec:
  schema:
    apiVersion: v1alpha1
    kind: App
    spec:
      replicas: integer | scale
"
    ));
    assert!(
        matches!(&found[0].kind, BuildErrorKind::Scaling(message) if message.contains("both")),
        "{found:?}"
    );
}

#[test]
fn the_collection_seed_examples_compile() {
    let graph = built(&format!(
        "{HEADER}spec:
  schema:
    apiVersion: v1alpha1
    kind: Application
    spec:
      workers: '[]string'
      databases: '[]string'
      domain: string
    status:
      totalWorkers: ${{size(workerPods)}}
      allWorkersReady: ${{workerPods.all(w, w.status.conditions.exists(c, c.type == 'Ready' && c.status == 'True'))}}
      workerNames: ${{workerPods.map(w, w.metadata.name).join(',')}}
  resources:
    - id: workerPods
      forEach: ${{schema.spec.workers}}
      readyWhen:
        - ${{workerPods.all(w, w.status.phase == 'Running')}}
      template:
        apiVersion: v1
        kind: Pod
        metadata:
          name: ${{'worker-' + each.item}}
          labels:
            worker-name: ${{each.item}}
            worker-index: ${{string(each.index)}}
            total-workers: ${{string(each.length)}}
        spec:
          containers:
            - name: worker
              image: busybox
    - id: configMaps
      forEach: ${{range(0, 10).filter(x, x % 2 == 0)}}
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: ${{'config-' + string(each.item)}}
    - id: databases
      forEach: ${{schema.spec.databases}}
      template:
        apiVersion: v1
        kind: Pod
        metadata:
          name: ${{each.item}}
        spec:
          containers:
            - name: db
              image: postgres
    - id: databaseBackups
      forEach: ${{databases}}
      template:
        apiVersion: batch/v1
        kind: CronJob
        metadata:
          name: ${{each.item.metadata.name + '-backup'}}
        spec:
          schedule: '0 2 * * *'
          jobTemplate:
            spec:
              template:
                spec:
                  restartPolicy: OnFailure
                  containers:
                    - name: backup
                      image: busybox
    - id: gateway
      template:
        apiVersion: networking.k8s.io/v1
        kind: Ingress
        metadata:
          name: gateway
        spec:
          rules:
            - host: ${{schema.spec.domain}}
              http:
                paths: |-
                  ${{databases.map(svc, {{
                    'path': '/' + svc.metadata.name,
                    'pathType': 'Prefix',
                    'backend': {{'service': {{'name': svc.metadata.name, 'port': {{'number': 80}}}}}}
                  }})}}
    - id: targetNamespaces
      externalRef:
        apiVersion: v1
        kind: Namespace
        metadata:
          selector:
            matchLabels:
              team: frontend
    - id: namespacePods
      forEach: ${{targetNamespaces}}
      template:
        apiVersion: v1
        kind: Pod
        metadata:
          name: ${{'pod-in-' + each.item.metadata.name}}
          namespace: ${{each.item.metadata.name}}
        spec:
          containers:
            - name: app
              image: busybox
"
    ));
    let pods = graph.node("workerPods").expect("workerPods");
    assert!(pods.is_collection());
    assert!(matches!(&pods.cel_type, Type::List(_)));
    assert_eq!(
        graph.node("databaseBackups").expect("backups").dependencies,
        vec!["databases"]
    );
    assert!(
        graph
            .node("targetNamespaces")
            .expect("namespaces")
            .is_collection()
    );
    assert_eq!(
        graph.status_schema.properties["totalWorkers"]
            .type_
            .as_deref(),
        Some("integer")
    );
    assert_eq!(
        graph.status_schema.properties["allWorkersReady"]
            .type_
            .as_deref(),
        Some("boolean")
    );
}

#[test]
fn the_data_node_seed_examples_compile() {
    let graph = built(&format!(
        "{HEADER}spec:
  schema:
    apiVersion: v1alpha1
    kind: MyApp
    spec:
      appImage: string
      workers: '[]string'
      environment: string
      module: string
  resources:
    - id: containers
      forEach:
        - worker: ${{schema.spec.workers}}
      data:
        name: ${{worker}}
        image: ${{schema.spec.appImage}}
        command: ['process', '${{worker}}']
    - id: naming
      data:
        prefix: ${{schema.metadata.name + '-' + schema.spec.environment}}
        sanitizedModule: ${{schema.spec.module.replace('.', '-').replace('_', '-').replace('/', '-')}}
    - id: prefix
      data: ${{schema.metadata.name + '-' + schema.spec.environment}}
    - id: regions
      data: [us-east-1, us-west-2, eu-west-1]
    - id: deployment
      template:
        apiVersion: apps/v1
        kind: Deployment
        metadata:
          name: ${{naming.prefix + '-' + naming.sanitizedModule}}
        spec:
          selector: {{matchLabels: {{app: x}}}}
          template:
            metadata: {{labels: {{app: x}}}}
            spec:
              containers: ${{containers}}
    - id: configmap
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: ${{prefix + '-config'}}
        data:
          regions: ${{regions.join(',')}}
"
    ));
    let containers = graph.node("containers").expect("containers");
    assert_eq!(containers.kind, NodeKind::Data);
    assert!(matches!(&containers.cel_type, Type::List(_)));
    assert_eq!(graph.node("prefix").expect("prefix").cel_type, Type::String);
    assert_eq!(
        graph.node("regions").expect("regions").cel_type,
        Type::list(Type::String)
    );
    let mut dependencies = graph
        .node("deployment")
        .expect("deployment")
        .dependencies
        .clone();
    dependencies.sort();
    assert_eq!(dependencies, vec!["containers", "naming"]);
    // A misspelt field of a data node is a type error.
    let found = errors(&format!(
        "{HEADER}spec:
  schema: {{apiVersion: v1alpha1, kind: App}}
  resources:
    - id: naming
      data: {{prefix: abc}}
    - id: config
      template: {{apiVersion: v1, kind: ConfigMap, metadata: {{name: '${{naming.prefx}}'}}}}
"
    ));
    assert!(
        matches!(type_errors(&found[0].kind)[..], [TypeErrorKind::UndefinedField { field, .. }] if field == "prefx")
    );
}

#[test]
fn the_scaling_seed_example_compiles_with_a_scale_subresource_and_a_set() {
    let graph = built(&format!(
        "{HEADER}spec:
  scaling:
    kind: MyObjectSet
    method: replicas
  schema:
    apiVersion: v1
    kind: MyObject
    group: example.org
    spec:
      desiredReplicas: integer | scale
    status:
      replicas: integer | scale
      podSelector: string | scaleSelector
"
    ));
    assert_eq!(
        graph.crd["spec"]["versions"][0]["subresources"]["scale"],
        serde_json::json!({
            "specReplicasPath": ".spec.desiredReplicas",
            "statusReplicasPath": ".status.replicas",
            "labelSelectorPath": ".status.podSelector"
        })
    );
    let set = graph.set_crd.as_ref().expect("a Set CRD");
    assert_eq!(set["metadata"]["name"], "myobjectsets.example.org");
    assert!(matches!(
        graph.status.first(),
        Some(StatusField::Declared { .. })
    ));
}

#[test]
fn a_scale_marker_may_follow_a_status_expression() {
    let graph = built(&format!(
        "{HEADER}spec:
  schema:
    apiVersion: v1alpha1
    kind: App
    spec:
      replicas: integer | scale
    status:
      replicas: ${{deployment.status.replicas}} | scale
  resources:
    - id: deployment
      template:
        apiVersion: apps/v1
        kind: Deployment
        metadata: {{name: x}}
        spec:
          replicas: ${{schema.spec.replicas}}
          selector: {{matchLabels: {{app: x}}}}
          template:
            metadata: {{labels: {{app: x}}}}
            spec: {{containers: [{{name: x, image: x}}]}}
"
    ));
    assert_eq!(graph.scale.status_replicas.as_deref(), Some("replicas"));
}

#[test]
fn every_problem_is_reported_not_just_the_first() {
    let found = errors(&format!(
        "{HEADER}spec:
  schema: {{apiVersion: v1alpha1, kind: app}}
  resources:
    - id: Bad
      template: {{apiVersion: v1, kind: ConfigMap, metadata: {{name: x}}}}
    - id: schema
      data: {{a: 1}}
    - id: both
      data: {{a: 1}}
      template: {{apiVersion: v1, kind: ConfigMap, metadata: {{name: x}}}}
"
    ));
    let reasons: Vec<&str> = found.iter().map(|error| error.kind.reason()).collect();
    assert_eq!(
        reasons,
        vec![
            "InvalidKind",
            "InvalidResourceId",
            "ReservedResourceId",
            "InvalidResource"
        ]
    );
}

#[test]
fn unknown_kinds_are_warnings_and_checked_schemaless() {
    let graph = built(&format!(
        "{HEADER}spec:
  schema: {{apiVersion: v1alpha1, kind: App}}
  resources:
    - id: widget
      template:
        apiVersion: example.org/v1
        kind: Widget
        metadata: {{name: w}}
        spec: {{size: '${{1 + 1}}'}}
    - id: config
      template: {{apiVersion: v1, kind: ConfigMap, metadata: {{name: '${{widget.status.anything}}'}}}}
"
    ));
    assert_eq!(graph.warnings.len(), 1);
    assert!(matches!(
        &graph.node("widget").expect("widget").kind,
        NodeKind::Template {
            schema_known: false,
            ..
        }
    ));
}

#[test]
fn a_node_that_fails_does_not_make_its_dependents_fail_too() {
    let found = errors(&format!(
        "{HEADER}spec:
  schema:
    apiVersion: v1alpha1
    kind: App
    spec:
      name: string
    status:
      available: ${{deployment.status.availableReplicas}}
      prefix: ${{vars.prefix}}
  resources:
    - id: vars
      forEach: ${{schema.spec.name}}
      data:
        prefix: abc
    - id: deployment
      template:
        apiVersion: apps/v1
        kind: Deployment
        metadata: {{name: '${{vars.prefix}}'}}
        spec:
          replicas: ${{schema.spec.name}}
"
    ));
    let paths: Vec<String> = found.iter().map(|error| error.path.to_string()).collect();
    assert_eq!(
        paths,
        [
            "spec.resources[0].forEach",
            "spec.resources[1].template.spec.replicas"
        ],
        "{found:?}"
    );
}

/// The type errors of a CEL build error (none for other kinds).
fn type_errors(kind: &BuildErrorKind) -> Vec<&TypeErrorKind> {
    match kind {
        BuildErrorKind::Cel {
            error: kro_cel::CompileError::Check(diagnostics),
            ..
        } => diagnostics.issues.iter().map(|issue| &issue.kind).collect(),
        _ => Vec::new(),
    }
}

/// The hints of a CEL build error (none for other kinds).
fn hints(kind: &BuildErrorKind) -> &[Hint] {
    match kind {
        BuildErrorKind::Cel { hints, .. } => hints,
        _ => &[],
    }
}

#[test]
fn instance_fields_written_without_schema_get_a_hint_naming_the_fix() {
    // As KREP-2 writes it: `forEach: ${spec.workers}` and `includeWhen` over `spec`.
    let found = errors(&format!(
        "{HEADER}spec:
  schema:
    apiVersion: v1alpha1
    kind: App
    spec: {{workers: '[]string', databases: '[]string', backupEnabled: boolean}}
  resources:
    - id: workers
      forEach: ${{spec.workers}}
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {{name: '${{each.item}}'}}
    - id: backupJobs
      includeWhen:
        - ${{size(spec.databases) > 0 && spec.backupEnabled}}
      forEach: ${{spec.databases}}
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {{name: '${{each.item}}'}}
"
    ));
    let written = |kind: &BuildErrorKind| -> Vec<String> {
        hints(kind)
            .iter()
            .map(|hint| match hint {
                Hint::InstanceIsSchema { written } => written.clone(),
                other => panic!("unexpected hint {other:?}"),
            })
            .collect()
    };
    let found: Vec<Vec<String>> = found.iter().map(|error| written(&error.kind)).collect();
    assert_eq!(
        found,
        [
            vec!["spec.workers".to_string()],
            vec![
                "spec.databases".to_string(),
                "spec.backupEnabled".to_string()
            ],
            vec!["spec.databases".to_string()],
        ]
    );
    assert_eq!(
        Hint::InstanceIsSchema {
            written: "spec.workers".to_string()
        }
        .to_string(),
        "the instance is the variable `schema`: write `schema.spec.workers` instead of `spec.workers`"
    );
}

#[test]
fn fields_selected_on_a_collection_get_a_hint_that_it_is_a_list() {
    // As KREP-2 writes its status: `${size(workerPods.items)}`.
    let found = errors(&format!(
        "{HEADER}spec:
  schema:
    apiVersion: v1alpha1
    kind: App
    spec: {{workers: '[]string'}}
    status:
      totalWorkers: ${{size(workerPods.items)}}
      workerNames: ${{workerPods.items.map(w, w.metadata.name).join(',')}}
  resources:
    - id: workerPods
      forEach: ${{schema.spec.workers}}
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {{name: '${{each.item}}'}}
"
    ));
    assert_eq!(found.len(), 2, "{found:?}");
    for error in &found {
        assert_eq!(
            hints(&error.kind),
            [Hint::CollectionIsAList {
                id: "workerPods".to_string(),
                field: "items".to_string()
            }]
        );
    }
}

#[test]
fn field_selection_on_other_lists_gets_no_collection_hint() {
    let found = errors(&format!(
        "{HEADER}spec:
  schema:
    apiVersion: v1alpha1
    kind: App
    spec: {{workers: '[]string'}}
    status:
      count: ${{size(schema.spec.workers.items)}}
  resources:
    - id: config
      template: {{apiVersion: v1, kind: ConfigMap, metadata: {{name: x}}}}
"
    ));
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(matches!(
        type_errors(&found[0].kind)[..],
        [TypeErrorKind::NotSelectable(_)]
    ));
    assert_eq!(hints(&found[0].kind), []);
}

/// A chain of `length` ConfigMaps, each reading the one before, and a status field reading
/// the last.
pub(crate) fn chain_of_config_maps(length: usize) -> String {
    let mut text = format!(
        "{HEADER}spec:
  schema:
    apiVersion: v1alpha1
    kind: Chain
    spec:
      name: string
    status:
      last: ${{r{}.data.v}}
  resources:
",
        length - 1
    );
    for i in 0..length {
        let value = if i == 0 {
            "${schema.spec.name}".to_owned()
        } else {
            format!("${{r{}.data.v}}", i - 1)
        };
        text.push_str(&format!(
            "  - id: r{i}
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: ${{schema.spec.name}}-{i}
      data:
        v: \"{value}\"
"
        ));
    }
    text
}

/// The regression: every node's environment declared every id, so a chain of N resources
/// declared N² variables (5,000 resources took 48 s). Twice the chain is now twice the work.
#[test]
fn building_a_chain_is_linear_in_its_length() {
    let short = built(&chain_of_config_maps(200));
    let long = built(&chain_of_config_maps(400));
    assert_eq!(short.levels.len(), 200);
    assert_eq!(long.levels.len(), 400);
    let (short, long) = (
        short.stats.variables_declared,
        long.stats.variables_declared,
    );
    assert!(short > 0);
    assert!(long < 3 * short, "200 resources: {short}; 400: {long}");
}

#[test]
fn a_cycle_in_a_long_chain_is_reported_at_the_resource_that_closes_it() {
    let text =
        chain_of_config_maps(50).replace("v: \"${schema.spec.name}\"", "v: \"${r49.data.v}\"");
    let errors = errors(&text);
    assert!(
        errors
            .iter()
            .any(|error| matches!(error.kind, BuildErrorKind::Cycle(_))),
        "{errors:?}"
    );
}

#[test]
fn an_rgd_name_or_group_that_kube_apiserver_refuses_is_an_error_at_its_field() {
    let valid = chain_of_config_maps(1);
    let renamed = valid.replace("name: test\n", "name: ../../etc/passwd\n");
    let found = errors(&renamed);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].path.to_string(), "metadata.name");
    assert!(matches!(found[0].kind, BuildErrorKind::InvalidRgdName(_)));
    for group in ["../../x", "nodot", "Upper.org"] {
        let regrouped = valid.replace(
            "kind: Chain\n",
            &format!("kind: Chain\n    group: {group:?}\n"),
        );
        let errors = errors(&regrouped);
        assert_eq!(errors.len(), 1, "{group}: {errors:?}");
        assert_eq!(errors[0].path.to_string(), "spec.schema.group");
        assert!(matches!(errors[0].kind, BuildErrorKind::InvalidGroup(_)));
    }
}

#[test]
fn a_for_each_may_have_at_most_the_configured_number_of_dimensions() {
    let yaml = format!(
        "{HEADER}spec:
  schema:
    apiVersion: v1alpha1
    kind: Grid
    spec:
      rows: '[]string'
      columns: '[]string'
  resources:
    - id: cells
      forEach:
        - row: ${{schema.spec.rows}}
        - column: ${{schema.spec.columns}}
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: ${{row + '-' + column}}
"
    );
    assert!(
        build(&yaml).is_ok(),
        "two dimensions are within the default of 10"
    );
    let config = BuildConfig {
        max_collection_dimensions: 1,
        ..BuildConfig::default()
    };
    let errors = build_graph_with(
        &rgd(&yaml),
        &SchemaSources::new().with(BuiltinCatalog),
        &config,
    )
    .expect_err("one dimension at most")
    .errors;
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0].resource.as_deref(), Some("cells"));
    assert_eq!(
        errors[0].kind.to_string(),
        "forEach has 2 dimensions; at most 1 are allowed"
    );
}

#[test]
fn templates_may_not_set_kro_s_own_labels_and_annotations() {
    let errors = errors(&format!(
        "{HEADER}spec:
  schema:
    apiVersion: v1alpha1
    kind: App
    spec:
      name: string
  resources:
    - id: settings
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: ${{schema.spec.name}}
          labels:
            kro.run/owned: 'false'
            app.kubernetes.io/name: app
          annotations:
            internal.kro.run/apply-order: '1'
            compose.kro.run/note: fine
"
    ));
    let found: Vec<(String, String)> = errors
        .iter()
        .map(|error| (error.path.to_string(), error.kind.to_string()))
        .collect();
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(
        found[0].1.contains("may not set \"kro.run/owned\""),
        "{found:?}"
    );
    assert!(
        found[1]
            .1
            .contains("may not set \"internal.kro.run/apply-order\""),
        "{found:?}"
    );
}

#[test]
fn an_external_ref_selector_with_a_misspelt_field_is_refused() {
    let selector = |selector: &str| {
        format!(
            "{HEADER}spec:
  schema:
    apiVersion: v1alpha1
    kind: Reader
    spec:
      team: string
  resources:
    - id: maps
      externalRef:
        apiVersion: v1
        kind: ConfigMap
        metadata:
          selector: {selector}
"
        )
    };
    assert!(build(&selector("{matchLabels: {team: '${schema.spec.team}'}}")).is_ok());
    let misspelt = errors(&selector("{matchLabel: {team: x}}"));
    assert_eq!(misspelt.len(), 1, "{misspelt:?}");
    assert_eq!(
        misspelt[0].kind.to_string(),
        "invalid label selector: unknown field \"matchLabel\" (a selector has matchLabels and matchExpressions)"
    );
    let requirement = errors(&selector(
        "{matchExpressions: [{key: a, operator: Exists, value: [x]}]}",
    ));
    assert!(
        requirement[0]
            .path
            .to_string()
            .ends_with("matchExpressions[0].value"),
        "{requirement:?}"
    );
}

#[test]
fn a_kind_whose_plural_kubernetes_refuses_is_refused_with_the_plural() {
    let rgd = |kind: &str| {
        format!(
            "{HEADER}spec:
  schema:
    apiVersion: v1alpha1
    kind: {kind}
    spec:
      name: string
  resources:
    - id: settings
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: ${{schema.spec.name}}
"
        )
    };
    assert_eq!(built(&rgd("Redis")).names.plural, "redis");
    let errors = errors(&rgd("DNS"));
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0].path.to_string(), "spec.schema.kind");
    assert_eq!(
        errors[0].kind.to_string(),
        "kind \"DNS\" would be served as \"dnsDNSes\" (the plural upstream kro forms, with the flect library), which Kubernetes refuses as a resource name: choose another kind"
    );
}

#[test]
fn an_inferred_status_schema_keeps_the_shape_only() {
    let graph = built(&format!(
        "{HEADER}spec:
  schema:
    apiVersion: v1alpha1
    kind: App
    spec:
      owner: {{name: 'string | default=x minLength=1', tags: '[]string | uniqueItems=true'}}
    status:
      owner: ${{schema.spec.owner}}
"
    ));
    let owner = serde_json::to_value(&graph.status_schema.properties["owner"]).expect("JSON");
    assert_eq!(
        owner,
        serde_json::json!({"type": "object", "properties": {
            "name": {"type": "string"},
            "tags": {"type": "array", "items": {"type": "string"}},
        }})
    );
}

#[test]
fn a_list_in_the_status_is_a_list_whose_items_share_one_schema() {
    let graph = built(&format!(
        "{HEADER}spec:
  schema:
    apiVersion: v1alpha1
    kind: App
    spec: {{name: string, count: integer}}
    status:
      names: ['${{schema.spec.name}}', '${{schema.spec.name + \"x\"}}']
      pairs:
        - {{a: '${{schema.spec.name}}'}}
        - {{b: '${{schema.spec.count}}'}}
"
    ));
    let schema = serde_json::to_value(&graph.status_schema).expect("JSON");
    assert_eq!(
        schema["properties"]["names"],
        serde_json::json!({"type": "array", "items": {"type": "string"}})
    );
    assert_eq!(
        schema["properties"]["pairs"],
        serde_json::json!({"type": "array", "items": {"type": "object", "properties": {
            "a": {"type": "string"},
            "b": {"type": "integer"},
        }}})
    );
    let found = errors(&format!(
        "{HEADER}spec:
  schema:
    apiVersion: v1alpha1
    kind: App
    spec: {{name: string}}
    status:
      names: [fixed, '${{schema.spec.name}}']
"
    ));
    assert_eq!(found[0].path.to_string(), "spec.schema.status.names[0]");
    let found = errors(&format!(
        "{HEADER}spec:
  schema:
    apiVersion: v1alpha1
    kind: App
    spec: {{name: string, count: integer}}
    status:
      mixed: ['${{schema.spec.name}}', '${{schema.spec.count}}']
"
    ));
    assert_eq!(found[0].path.to_string(), "spec.schema.status.mixed[1]");
    assert!(
        found[0]
            .kind
            .to_string()
            .contains("the items of a list must be of one type, found string and integer"),
        "{}",
        found[0].kind
    );
}

#[test]
fn a_status_expression_that_reads_nothing_is_an_error() {
    let found = errors(&format!(
        "{HEADER}spec:
  schema:
    apiVersion: v1alpha1
    kind: App
    status:
      constant: ${{[1, 2]}}
"
    ));
    assert_eq!(found[0].kind, BuildErrorKind::ConstantStatusField);
    assert_eq!(found[0].path.to_string(), "spec.schema.status.constant");
}

#[test]
fn a_condition_must_be_a_condition() {
    let found = errors(&format!(
        "{HEADER}spec:
  schema:
    apiVersion: v1alpha1
    kind: App
    spec: {{name: string}}
    status:
      conditions: ['${{{{\"type\": schema.spec.name}}}}']
"
    ));
    assert!(matches!(found[0].kind, BuildErrorKind::NotACondition(_)));
}

/// An RGD written in the design documents' forms (`forEach: ${spec.workers}`, a status
/// `${size(workerPods.items)}`) has two errors; both are reported in one run, each once, and
/// nothing follows from the first (the iterator it would have declared is still known).
#[test]
fn every_error_is_reported_in_one_run_even_behind_a_failed_expression() {
    for (for_each, first) in [
        ("${spec.workers}", "undeclared reference to 'spec'"),
        ("${schema.spec.workers}", "must be a list or a map"),
    ] {
        let found = errors(&format!(
            r#"
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata: {{name: workers}}
spec:
  schema:
    apiVersion: v1alpha1
    kind: WorkerPool
    spec:
      workers: integer | default=3
    status:
      count: ${{size(workerPods.items)}}
  resources:
    - id: workerPods
      forEach:
        - worker: {for_each}
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: ${{schema.metadata.name}}-${{worker}}
"#
        ));
        let messages: Vec<String> = found.iter().map(ToString::to_string).collect();
        assert_eq!(messages.len(), 2, "{for_each}: {messages:#?}");
        assert!(messages[0].contains(first), "{for_each}: {messages:#?}");
        assert!(
            messages[1].contains("status.count") && messages[1].contains("field selection"),
            "{for_each}: {messages:#?}"
        );
    }
}

/// An RGD whose ConfigMap may leave out a key (`omit()`), with its name set by `name`, for a
/// cluster-scoped or namespaced instance.
fn omitting_rgd(name: &str, scope: &str) -> String {
    format!(
        "{HEADER}spec:
  schema:
    apiVersion: v1alpha1
    kind: Settings
    scope: {scope}
    spec:
      tag: string | default=\"\"
  resources:
    - id: settings
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: {name}
          namespace: \"${{schema.spec.tag != '' ? 'tagged' : omit()}}\"
        data:
          tag: \"${{schema.spec.tag != '' ? schema.spec.tag : omit()}}\"
"
    )
}

pub(super) fn build_with_gates(yaml: &str, gates: &str) -> Result<CompiledGraph, BuildErrors> {
    let config = BuildConfig {
        features: crate::FeatureGates::parse(gates).expect("valid gates"),
        ..BuildConfig::default()
    };
    build_graph_with(
        &rgd(yaml),
        &SchemaSources::new().with(BuiltinCatalog),
        &config,
    )
}

#[test]
fn omit_is_refused_unless_its_feature_gate_is_on() {
    let yaml = omitting_rgd("settings", "Namespaced");
    let errors = build(&yaml).expect_err("the gate is off by default").errors;
    let paths: Vec<String> = errors.iter().map(|error| error.path.to_string()).collect();
    assert_eq!(
        paths,
        [
            "spec.resources[0].template.data.tag",
            "spec.resources[0].template.metadata.namespace"
        ]
    );
    assert_eq!(errors[1].kind.reason(), "FeatureGateDisabled");
    assert_eq!(
        errors[0].kind.to_string(),
        "expression \"schema.spec.tag != '' ? schema.spec.tag : omit()\": omit() requires the \
         CELOmitFunction feature gate to be enabled (--feature-gates=CELOmitFunction=true)"
    );
    assert!(build_with_gates(&yaml, "CELOmitFunction=true").is_ok());
    assert!(build_with_gates(&yaml, "AllAlpha=true").is_ok());
}

#[test]
fn with_the_gate_on_omit_may_not_leave_an_object_without_its_identity() {
    let yaml = omitting_rgd("\"${schema.spec.tag != '' ? 'a' : omit()}\"", "Namespaced");
    let errors = build_with_gates(&yaml, "CELOmitFunction=true")
        .expect_err("metadata.name is required")
        .errors;
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(
        errors[0].path.to_string(),
        "spec.resources[0].template.metadata.name"
    );
    assert_eq!(errors[0].kind.reason(), "OmitOnIdentityField");
    // A namespaced object under a cluster-scoped instance has no namespace to inherit.
    let errors = build_with_gates(&omitting_rgd("settings", "Cluster"), "CELOmitFunction=true")
        .expect_err("metadata.namespace is required")
        .errors;
    assert_eq!(
        errors
            .iter()
            .map(|error| error.path.to_string())
            .collect::<Vec<_>>(),
        ["spec.resources[0].template.metadata.namespace"]
    );
}
