use std::sync::Arc;

use kro_cel::{Env, Type, TypeErrorKind};
use serde_json::json;

use super::*;

fn schema(json: serde_json::Value) -> Schema {
    serde_json::from_value(json).expect("a schema")
}

fn web_app() -> Schema {
    schema(json!({
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "replicas": {"type": "integer"},
                    "ratio": {"type": "number"},
                    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                    "ports": {"type": "array", "items": {"type": "object", "properties": {"port": {"type": "integer"}}}},
                    "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                    "target": {"x-kubernetes-int-or-string": true},
                    "cert": {"type": "string", "format": "byte"},
                    "since": {"type": "string", "format": "date-time"}
                }
            },
            "metadata": {"type": "object"}
        }
    }))
}

fn checked_type(
    types: &SchemaTypes,
    root: Type,
    expression: &str,
) -> Result<Type, Vec<TypeErrorKind>> {
    let env = Env::standard()
        .with_type_provider(Arc::new(types.clone()))
        .with_variable("app", root);
    let ast = env.parse(expression).expect("parses");
    env.check(&ast)
        .map(|checked| checked.output_type().clone())
        .map_err(|error| error.issues.into_iter().map(|issue| issue.kind).collect())
}

#[test]
fn fields_have_the_cel_types_of_their_schemas() {
    let types = SchemaTypes::new();
    let root = types.register("__type_app", &web_app(), &NoDefinitions);
    assert_eq!(root, Type::object("__type_app"));
    let cases = [
        ("app.spec.replicas", Type::Int),
        ("app.spec.ratio", Type::Double),
        ("app.spec.labels", Type::map(Type::String, Type::String)),
        ("app.spec.ports[0].port", Type::Int),
        ("app.spec.extra.anything", Type::Dyn),
        ("app.spec.target", Type::Dyn),
        ("app.spec.cert", Type::Bytes),
        ("app.spec.since", Type::Timestamp),
        ("app.metadata.name", Type::String),
        ("app.metadata.labels", Type::map(Type::String, Type::String)),
        ("app.kind", Type::String),
    ];
    for (expression, expected) in cases {
        assert_eq!(
            checked_type(&types, root.clone(), expression),
            Ok(expected),
            "{expression}"
        );
    }
}

#[test]
fn unknown_fields_of_closed_objects_are_type_errors() {
    let types = SchemaTypes::new();
    let root = types.register("__type_app", &web_app(), &NoDefinitions);
    let errors = checked_type(&types, root, "app.spec.replica").expect_err("undefined field");
    assert_eq!(
        errors,
        vec![TypeErrorKind::UndefinedField {
            object_type: Type::object("__type_app.spec"),
            field: "replica".into()
        }]
    );
}

#[test]
fn references_resolve_through_definitions_and_keep_their_names() {
    let definitions: HashMap<String, Schema> = [(
        "io.example.Node".to_string(),
        schema(json!({"type": "object", "properties": {
            "value": {"type": "integer"},
            "children": {"type": "array", "items": {"$ref": "#/$defs/io.example.Node"}}
        }})),
    )]
    .into_iter()
    .collect();
    let types = SchemaTypes::new();
    let root = types.register(
        "tree",
        &schema(json!({"$ref": "#/$defs/io.example.Node"})),
        &definitions,
    );
    assert_eq!(root, Type::object("io.example.Node"));
    assert_eq!(
        checked_type(&types, root, "app.children[0].children[1].value"),
        Ok(Type::Int),
        "recursive definitions terminate"
    );
}

#[test]
fn cel_types_map_back_to_schemas() {
    let types = SchemaTypes::new();
    let root = types.register("__type_app", &web_app(), &NoDefinitions);
    let cases = [
        (Type::Int, json!({"type": "integer"})),
        (Type::Double, json!({"type": "number"})),
        (Type::Bool, json!({"type": "boolean"})),
        (Type::Bytes, json!({"type": "string", "format": "byte"})),
        (
            Type::Timestamp,
            json!({"type": "string", "format": "date-time"}),
        ),
        (
            Type::list(Type::String),
            json!({"type": "array", "items": {"type": "string"}}),
        ),
        (
            Type::map(Type::String, Type::Int),
            json!({"type": "object", "additionalProperties": {"type": "integer"}}),
        ),
        (Type::optional(Type::String), json!({"type": "string"})),
        (
            Type::Dyn,
            json!({"x-kubernetes-preserve-unknown-fields": true}),
        ),
    ];
    for (ty, expected) in cases {
        assert_eq!(
            serde_json::to_value(types.schema_of(&ty)).expect("json"),
            expected,
            "{ty}"
        );
    }
    let spec = types.schema_of(&Type::object("__type_app.spec"));
    assert!(spec.properties.contains_key("replicas"));
    let _ = root;
}

#[test]
fn catalog_kinds_type_check_with_their_definition_names() {
    let catalog = crate::Catalog::kubernetes();
    let gvk = crate::Gvk::new("apps", "v1", "Deployment");
    let deployment = catalog
        .resolve(&gvk)
        .found()
        .expect("the catalog knows Deployment");
    let types = SchemaTypes::new();
    let root = types.register("__type_deployment", deployment.schema(), catalog);
    assert_eq!(
        checked_type(&types, root.clone(), "app.spec.template.spec.containers"),
        Ok(Type::list(Type::object("io.k8s.api.core.v1.Container")))
    );
    assert_eq!(
        checked_type(&types, root.clone(), "app.spec.replicas"),
        Ok(Type::Int)
    );
    assert_eq!(
        checked_type(&types, root, "app.metadata.labels"),
        Ok(Type::map(Type::String, Type::String))
    );
    let containers = deployment
        .field("spec.template.spec.containers")
        .expect("the field exists");
    assert_eq!(
        containers.merge_semantics().list_map_keys,
        vec!["name".to_string()]
    );
}

#[test]
fn schemas_of_catalog_objects_have_their_references_inlined() {
    let catalog: SharedDefinitions = Arc::new(CatalogHandle);
    let deployment = crate::Catalog::kubernetes()
        .resolve(&crate::Gvk::new("apps", "v1", "Deployment"))
        .found()
        .expect("known");
    let types = SchemaTypes::new();
    types.register_shared("__type_deployment", deployment.schema(), &catalog);
    let status = types.schema_of(&Type::object("io.k8s.api.apps.v1.DeploymentStatus"));
    let json = serde_json::to_string(&status).expect("json");
    assert!(!json.contains("$ref"), "references remain: {json}");
    assert!(
        status.properties["conditions"]
            .items
            .as_ref()
            .expect("items")
            .properties
            .contains_key("type")
    );
}

#[derive(Debug)]
struct CatalogHandle;

impl Definitions for CatalogHandle {
    fn definition(&self, name: &str) -> Option<&Schema> {
        crate::Catalog::kubernetes().definition(name)
    }
}
