use std::sync::atomic::Ordering;

use serde_json::json;

use super::*;
use crate::openapi::AdditionalProperties;

fn kubernetes_kind(api_version: &str, kind: &str) -> KindSchema<'static> {
    let gvk = Gvk::from_api_version(api_version, kind).expect("valid group-version-kind");
    match Catalog::kubernetes().resolve(&gvk) {
        CatalogLookup::Found(kind) => kind,
        CatalogLookup::Unknown => panic!("{gvk} is not in the catalog"),
    }
}

fn catalog_of(definitions: serde_json::Value) -> Result<Catalog, CatalogError> {
    let document = json!({"$defs": definitions});
    Catalog::from_definitions_json(document.to_string().as_bytes())
}

fn int_or_string() -> Schema {
    Schema {
        x_kubernetes_int_or_string: true,
        any_of: vec![Schema::of_type("integer"), Schema::of_type("string")],
        ..Schema::default()
    }
}

/// Whether any `$ref` is left in a schema tree.
fn has_reference(schema: &Schema) -> bool {
    schema.reference.is_some()
        || schema.properties.values().any(has_reference)
        || schema.items.as_deref().is_some_and(has_reference)
        || schema
            .additional_properties_schema()
            .is_some_and(has_reference)
        || schema
            .all_of
            .iter()
            .chain(&schema.one_of)
            .chain(&schema.any_of)
            .any(has_reference)
        || schema.not.as_deref().is_some_and(has_reference)
}

#[test]
fn the_embedded_catalog_loads() {
    let catalog = Catalog::kubernetes();
    assert_eq!(catalog.definition_names().len(), 707);
    // 177 definitions serve one kind each; DeleteOptions and WatchEvent serve 62 each.
    assert_eq!(catalog.gvks().len(), 177 + 2 * 62);
}

#[test]
fn the_catalog_is_decompressed_once_and_shared() {
    let catalogs: Vec<&'static Catalog> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..4).map(|_| scope.spawn(Catalog::kubernetes)).collect();
        handles
            .into_iter()
            .map(|handle| handle.join().expect("thread finishes"))
            .collect()
    });
    let first = Catalog::kubernetes();
    assert!(catalogs.iter().all(|catalog| std::ptr::eq(*catalog, first)));
    assert_eq!(DECOMPRESSIONS.load(Ordering::SeqCst), 1);
}

#[test]
fn built_in_kinds_resolve_to_their_definitions() {
    let cases = [
        ("apps/v1", "Deployment", "io.k8s.api.apps.v1.Deployment"),
        ("v1", "Service", "io.k8s.api.core.v1.Service"),
        ("v1", "ConfigMap", "io.k8s.api.core.v1.ConfigMap"),
        ("batch/v1", "Job", "io.k8s.api.batch.v1.Job"),
        (
            "networking.k8s.io/v1",
            "Ingress",
            "io.k8s.api.networking.v1.Ingress",
        ),
        (
            "autoscaling/v2",
            "HorizontalPodAutoscaler",
            "io.k8s.api.autoscaling.v2.HorizontalPodAutoscaler",
        ),
        (
            "autoscaling/v1",
            "HorizontalPodAutoscaler",
            "io.k8s.api.autoscaling.v1.HorizontalPodAutoscaler",
        ),
    ];
    for (api_version, kind, definition) in cases {
        let found = kubernetes_kind(api_version, kind);
        assert_eq!(found.definition_name(), definition, "{api_version} {kind}");
        assert_eq!(found.gvk().api_version(), api_version);
        assert_eq!(found.schema().type_.as_deref(), Some("object"), "{kind}");
        // The kind's apiVersion and kind fields admit exactly this kind.
        let root = found.schema();
        assert_eq!(
            root.properties["apiVersion"].enum_,
            Some(vec![json!(api_version)])
        );
        assert_eq!(root.properties["kind"].enum_, Some(vec![json!(kind)]));
        assert_eq!(
            Catalog::kubernetes().definition(definition),
            Some(found.schema())
        );
    }
}

#[test]
fn unknown_kinds_resolve_to_unknown() {
    let cases = [
        ("example.com", "v1", "Widget"),
        ("apps", "v1", "Service"),
        ("", "v1", "Deployment"),
        ("apps", "v9", "Deployment"),
        ("apps", "v1", "deployment"),
    ];
    for (group, version, kind) in cases {
        let lookup = Catalog::kubernetes().resolve(&Gvk::new(group, version, kind));
        assert!(
            matches!(lookup, CatalogLookup::Unknown),
            "{group}/{version} {kind}"
        );
    }
}

#[test]
fn kinds_served_by_several_versions_are_indexed_per_version() {
    let catalog = Catalog::kubernetes();
    let versions: Vec<String> = catalog
        .versions_of("autoscaling", "HorizontalPodAutoscaler")
        .into_iter()
        .map(Gvk::api_version)
        .collect();
    assert_eq!(versions, ["autoscaling/v1", "autoscaling/v2"]);
    let shared = catalog.versions_of("", "DeleteOptions");
    assert_eq!(shared, [&Gvk::new("", "v1", "DeleteOptions")]);
    let in_apps = catalog
        .resolve(&Gvk::new("apps", "v1", "DeleteOptions"))
        .found()
        .expect("DeleteOptions is served by every group");
    assert_eq!(
        in_apps.definition_name(),
        "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions"
    );
}

#[test]
fn deployment_containers_are_a_map_list_of_containers_keyed_by_name() {
    let deployment = kubernetes_kind("apps/v1", "Deployment");
    let containers = deployment
        .field("spec.template.spec.containers")
        .expect("containers exist");
    assert_eq!(containers.value_schema().type_.as_deref(), Some("array"));
    let items = containers.items().expect("a list has items");
    assert_eq!(
        items.definition_name(),
        Some("io.k8s.api.core.v1.Container")
    );
    assert_eq!(items.value_schema().type_.as_deref(), Some("object"));
    assert!(items.value_schema().properties.contains_key("image"));
    assert_eq!(
        containers.merge_semantics(),
        MergeSemantics {
            list_type: Some(ListType::Map),
            list_map_keys: vec!["name".to_string()],
            map_type: None,
            patch_merge_key: Some("name".to_string()),
            patch_strategies: vec![PatchStrategy::Merge],
        }
    );
    let resolved = containers.resolved();
    let container = resolved.items.as_deref().expect("items are inlined");
    assert_eq!(container.type_.as_deref(), Some("object"));
    assert_eq!(
        container.properties["image"].type_.as_deref(),
        Some("string")
    );
}

#[test]
fn field_paths_step_into_list_items_and_map_values() {
    let cases = [
        ("apps/v1", "Deployment", "spec.replicas", Some("integer")),
        ("apps/v1", "Deployment", "spec", Some("object")),
        (
            "apps/v1",
            "Deployment",
            "spec.template.spec.containers.image",
            Some("string"),
        ),
        (
            "apps/v1",
            "Deployment",
            "metadata.labels.app",
            Some("string"),
        ),
        ("v1", "ConfigMap", "data.anything", Some("string")),
        ("v1", "Service", "spec.ports.targetPort", None),
        (
            "apps/v1",
            "Deployment",
            "spec.template.spec.containers.resources.limits.cpu",
            None,
        ),
        ("v1", "Pod", "status.startTime", Some("string")),
    ];
    for (api_version, kind, path, type_) in cases {
        let field = kubernetes_kind(api_version, kind)
            .field(path)
            .unwrap_or_else(|error| panic!("{kind} {path}: {error}"));
        assert_eq!(
            field.value_schema().type_.as_deref(),
            type_,
            "{kind} {path}"
        );
    }
}

#[test]
fn field_paths_that_name_no_field_are_typed_errors() {
    let cases = [
        (
            "apps/v1",
            "Deployment",
            "spec.nope",
            FieldPathError::NoSuchField {
                path: "spec".to_string(),
                field: "nope".to_string(),
            },
        ),
        (
            "apps/v1",
            "Deployment",
            "spec.replicas.x",
            FieldPathError::NoSuchField {
                path: "spec.replicas".to_string(),
                field: "x".to_string(),
            },
        ),
        (
            "apps/v1",
            "Deployment",
            "spec..replicas",
            FieldPathError::NoSuchField {
                path: "spec".to_string(),
                field: String::new(),
            },
        ),
        (
            "apps/v1",
            "ControllerRevision",
            "data.anything",
            FieldPathError::Untyped {
                path: "data".to_string(),
                field: "anything".to_string(),
            },
        ),
    ];
    for (api_version, kind, path, expected) in cases {
        let error = kubernetes_kind(api_version, kind)
            .field(path)
            .expect_err(path);
        assert_eq!(error, expected, "{kind} {path}");
    }
}

#[test]
fn the_empty_path_is_the_whole_kind() {
    let deployment = kubernetes_kind("apps/v1", "Deployment");
    let root = deployment.field("").expect("the root exists");
    assert_eq!(
        root.definition_name(),
        Some("io.k8s.api.apps.v1.Deployment")
    );
    assert_eq!(root.resolved(), deployment.resolved_schema());
}

#[test]
fn json_schema_null_types_become_nullable_types() {
    let catalog = catalog_of(json!({
        "io.example.Thing": {
            "type": ["object", "null"],
            "properties": {
                "name": {"type": ["string", "null"]},
                "count": {"type": "integer", "format": "int32"},
                "nothing": {"type": ["null"]},
                "port": {"type": ["integer", "string", "null"]},
                "legacyPort": {"type": "string", "format": "int-or-string"},
                "tags": {"type": ["array", "null"], "items": {"type": ["string", "null"]}}
            }
        }
    }))
    .expect("a valid document");
    let expected = Schema {
        type_: Some("object".to_string()),
        nullable: true,
        properties: [
            (
                "name",
                Schema {
                    nullable: true,
                    ..Schema::of_type("string")
                },
            ),
            (
                "count",
                Schema {
                    format: Some("int32".to_string()),
                    ..Schema::of_type("integer")
                },
            ),
            (
                "nothing",
                Schema {
                    nullable: true,
                    ..Schema::default()
                },
            ),
            (
                "port",
                Schema {
                    nullable: true,
                    ..int_or_string()
                },
            ),
            ("legacyPort", int_or_string()),
            (
                "tags",
                Schema {
                    nullable: true,
                    items: Some(Box::new(Schema {
                        nullable: true,
                        ..Schema::of_type("string")
                    })),
                    ..Schema::of_type("array")
                },
            ),
        ]
        .into_iter()
        .map(|(name, schema)| (name.to_string(), schema))
        .collect(),
        ..Schema::default()
    };
    assert_eq!(catalog.definition("io.example.Thing"), Some(&expected));
}

#[test]
fn kubernetes_fields_keep_the_nullability_of_the_source() {
    let deployment = kubernetes_kind("apps/v1", "Deployment");
    let replicas = deployment.field("spec.replicas").expect("replicas exist");
    assert_eq!(
        replicas.schema(),
        &Schema {
            description: replicas.schema().description.clone(),
            format: Some("int32".to_string()),
            nullable: true,
            ..Schema::of_type("integer")
        }
    );
    let spec = deployment.field("spec").expect("spec exists");
    assert!(
        !spec.schema().nullable,
        "a `$ref` site has no type of its own"
    );
    assert!(spec.is_nullable(), "DeploymentSpec is [object, null]");
}

#[test]
fn special_kubernetes_types_have_their_apiextensions_shape() {
    let catalog = Catalog::kubernetes();
    let definition = |name: &str| {
        let mut schema = catalog
            .definition(name)
            .unwrap_or_else(|| panic!("{name} exists"))
            .clone();
        schema.description = None;
        schema
    };
    let preserving_object = Schema {
        nullable: true,
        x_kubernetes_preserve_unknown_fields: Some(true),
        ..Schema::of_type("object")
    };
    let any_value = Schema {
        nullable: true,
        x_kubernetes_preserve_unknown_fields: Some(true),
        ..Schema::default()
    };
    let date_time = Schema {
        nullable: true,
        format: Some("date-time".to_string()),
        ..Schema::of_type("string")
    };
    let cases = [
        (
            "io.k8s.apimachinery.pkg.util.intstr.IntOrString",
            Schema {
                nullable: true,
                ..int_or_string()
            },
        ),
        (
            "io.k8s.apimachinery.pkg.api.resource.Quantity",
            Schema {
                nullable: true,
                pattern: Some(normalize_quantity_pattern().to_string()),
                ..int_or_string()
            },
        ),
        (
            "io.k8s.apimachinery.pkg.apis.meta.v1.Time",
            date_time.clone(),
        ),
        ("io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime", date_time),
        (
            "io.k8s.apimachinery.pkg.runtime.RawExtension",
            preserving_object.clone(),
        ),
        (
            "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1",
            preserving_object,
        ),
        (
            "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSON",
            any_value.clone(),
        ),
        (
            "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrBool",
            any_value,
        ),
    ];
    for (name, expected) in cases {
        assert_eq!(definition(name), expected, "{name}");
    }
}

fn normalize_quantity_pattern() -> &'static str {
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
}

#[test]
fn the_quantity_pattern_accepts_kubernetes_quantities() {
    let pattern = regex::Regex::new(normalize_quantity_pattern()).expect("a valid pattern");
    for quantity in ["1", "100m", "1.5Gi", "2e3", "+.5", "128974848", "129M"] {
        assert!(pattern.is_match(quantity), "{quantity}");
    }
    for not_quantity in ["", "one", "1 Gi", "1GiB"] {
        assert!(!pattern.is_match(not_quantity), "{not_quantity}");
    }
}

#[test]
fn the_resolved_view_inlines_references_and_keeps_field_annotations() {
    let deployment = kubernetes_kind("apps/v1", "Deployment").resolved_schema();
    assert!(!has_reference(&deployment));
    let spec = &deployment.properties["spec"];
    assert_eq!(
        spec.description.as_deref(),
        Some("Specification of the desired behavior of the Deployment.")
    );
    let strategy = &spec.properties["strategy"];
    assert_eq!(
        strategy.x_kubernetes_patch_strategy.as_deref(),
        Some("retainKeys")
    );
    assert!(strategy.properties.contains_key("rollingUpdate"));
    let max_surge = &strategy.properties["rollingUpdate"].properties["maxSurge"];
    assert!(max_surge.x_kubernetes_int_or_string);
}

#[test]
fn every_kind_resolves_without_references_except_recursive_ones() {
    let catalog = Catalog::kubernetes();
    let recursive =
        "#/$defs/io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps";
    for gvk in catalog.gvks() {
        let kind = catalog.resolve(gvk).found().expect("listed kinds resolve");
        let resolved = kind.resolved_schema();
        if gvk.group() == "apiextensions.k8s.io"
            && gvk.kind().starts_with("CustomResourceDefinition")
        {
            continue;
        }
        assert!(!has_reference(&resolved), "{gvk}");
    }
    let crd = catalog
        .resolve(&Gvk::new(
            "apiextensions.k8s.io",
            "v1",
            "CustomResourceDefinition",
        ))
        .found()
        .expect("CRDs are built in")
        .field("spec.versions.schema.openAPIV3Schema")
        .expect("the schema field exists")
        .resolved();
    assert_eq!(crd.reference, None);
    assert_eq!(
        crd.properties["not"].reference.as_deref(),
        Some(recursive),
        "the recursion stops at the first repeated definition"
    );
}

#[test]
fn references_can_be_followed_by_name() {
    let catalog = Catalog::kubernetes();
    let deployment = kubernetes_kind("apps/v1", "Deployment");
    let spec = &deployment.schema().properties["spec"];
    let (name, definition) = catalog
        .referenced_definition(spec)
        .expect("spec is a reference");
    assert_eq!(name, "io.k8s.api.apps.v1.DeploymentSpec");
    assert_eq!(catalog.definition(name), Some(definition));
    // The field's resolved schema is the definition's, but for the field's description.
    let mut from_field = deployment.field("spec").expect("spec exists").resolved();
    from_field.description.clone_from(&definition.description);
    assert_eq!(catalog.resolved_definition(name), Some(from_field));
    assert_eq!(
        catalog.referenced_definition(&Schema::of_type("string")),
        None
    );
}

#[test]
fn merge_annotations_beside_a_reference_override_the_definition() {
    let catalog = catalog_of(json!({
        "io.example.Parent": {
            "type": "object",
            "properties": {
                "child": {
                    "$ref": "#/$defs/io.example.Child",
                    "description": "the field's own words",
                    "x-kubernetes-map-type": "atomic"
                }
            },
            "x-kubernetes-group-version-kind": [{"group": "example.com", "version": "v1", "kind": "Parent"}]
        },
        "io.example.Child": {
            "type": ["object", "null"],
            "description": "the type's words",
            "x-kubernetes-map-type": "granular",
            "x-kubernetes-patch-strategy": "retainKeys",
            "properties": {"name": {"type": "string"}}
        }
    }))
    .expect("a valid document");
    let parent = catalog
        .resolve(&Gvk::new("example.com", "v1", "Parent"))
        .found()
        .expect("Parent is a kind");
    let child = parent.field("child").expect("child exists");
    assert_eq!(
        child.merge_semantics(),
        MergeSemantics {
            map_type: Some(MapType::Atomic),
            patch_strategies: vec![PatchStrategy::RetainKeys],
            ..MergeSemantics::default()
        }
    );
    let resolved = child.resolved();
    assert_eq!(
        resolved,
        Schema {
            description: Some("the field's own words".to_string()),
            nullable: true,
            x_kubernetes_map_type: Some("atomic".to_string()),
            x_kubernetes_patch_strategy: Some("retainKeys".to_string()),
            properties: [("name".to_string(), Schema::of_type("string"))].into(),
            ..Schema::of_type("object")
        }
    );
    assert_eq!(resolved.additional_properties, None::<AdditionalProperties>);
}

#[test]
fn malformed_documents_are_rejected_with_typed_errors() {
    let cases = [
        (
            json!({"a": {"$ref": "#/$defs/missing"}}),
            "DanglingReference",
        ),
        (
            json!({"a": {"$ref": "#/definitions/a"}}),
            "DanglingReference",
        ),
        (
            json!({"a": {"type": ["string", "boolean", "null"]}}),
            "UnsupportedType",
        ),
        (json!({"a": {"type": 7}}), "UnsupportedType"),
        (
            json!({"a": {"$ref": "#/$defs/b", "type": "object"}, "b": {}}),
            "UnsupportedReferenceSibling",
        ),
        (
            json!({"a": {"type": "array", "x-kubernetes-list-type": "bag"}}),
            "InvalidAnnotation",
        ),
        (
            json!({"a": {"x-kubernetes-patch-strategy": "merge,squash"}}),
            "InvalidAnnotation",
        ),
        (
            json!({"a": {"properties": {"x": "not a schema"}}}),
            "NotASchema",
        ),
        (
            json!({"a": {"x-kubernetes-group-version-kind": [{"group": ""}]}}),
            "InvalidGroupVersionKind",
        ),
        (
            json!({
                "a": {"x-kubernetes-group-version-kind": [{"group": "", "version": "v1", "kind": "A"}]},
                "b": {"x-kubernetes-group-version-kind": [{"group": "", "version": "v1", "kind": "A"}]}
            }),
            "DuplicateKind",
        ),
        (json!({"a": {"required": "name"}}), "InvalidDefinition"),
    ];
    for (definitions, reason) in cases {
        let error = catalog_of(definitions.clone()).expect_err(reason);
        assert_eq!(error.reason(), reason, "{definitions}");
    }
    for document in [&b"not json"[..], br#"{"definitions": {}}"#] {
        let error = Catalog::from_definitions_json(document).expect_err("rejected");
        assert!(matches!(error, CatalogError::Document { .. }), "{error:?}");
    }
    let error = gunzip(b"not gzip").expect_err("rejected");
    assert!(
        matches!(error, CatalogError::Decompress { .. }),
        "{error:?}"
    );
}

#[test]
fn a_dangling_reference_error_names_where_it_is() {
    let error = catalog_of(json!({
        "io.example.A": {"properties": {"b/c": {"items": {"$ref": "#/$defs/nope"}}}}
    }))
    .expect_err("rejected");
    assert!(
        matches!(
            &error,
            CatalogError::DanglingReference { definition, path, reference }
                if definition == "io.example.A"
                    && path == "/properties/b~1c/items"
                    && reference == "#/$defs/nope"
        ),
        "{error:?}"
    );
}

/// The shape of an API server's `/openapi/v3/apis/example.com/v1`: references into
/// `#/components/schemas/`, wrapped in `allOf` when they carry a description or default.
fn openapi_v3_document() -> serde_json::Value {
    serde_json::json!({
        "openapi": "3.0.0",
        "components": {"schemas": {
            "com.example.v1.Widget": {
                "type": "object",
                "x-kubernetes-group-version-kind": [{"group": "example.com", "version": "v1", "kind": "Widget"}],
                "properties": {
                    "apiVersion": {"type": "string"},
                    "kind": {"type": "string"},
                    "metadata": {
                        "description": "Standard object's metadata.",
                        "default": {},
                        "allOf": [{"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}]
                    },
                    "spec": {
                        "type": "object",
                        "x-kubernetes-validations": [{"rule": "self.replicas <= 3"}],
                        "properties": {
                            "replicas": {"type": "integer"},
                            "default": {"type": "string", "default": "#/components/schemas/not-a-reference"}
                        }
                    }
                }
            },
            "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta": {
                "type": "object",
                "properties": {"name": {"type": "string"}, "labels": {"type": "object", "additionalProperties": {"type": "string", "default": ""}}}
            }
        }}
    })
}

#[test]
fn openapi_v3_documents_of_an_api_server_become_a_catalog() {
    let catalog = Catalog::from_openapi_v3(&[openapi_v3_document()])
        .unwrap_or_else(|error| panic!("{error}"));
    let Some(widget) = catalog
        .resolve(&Gvk::new("example.com", "v1", "Widget"))
        .found()
    else {
        panic!("the Widget kind is indexed");
    };
    let schema = widget.resolved_schema();
    let metadata = &schema.properties["metadata"];
    assert_eq!(metadata.type_.as_deref(), Some("object"));
    assert!(metadata.properties.contains_key("labels"));
    assert_eq!(
        metadata.description.as_deref(),
        Some("Standard object's metadata.")
    );
    let spec = &schema.properties["spec"];
    assert_eq!(spec.x_kubernetes_validations.len(), 1);
    // A property named `default` is a schema; the default value of a field is data.
    assert_eq!(
        spec.properties["default"].default,
        Some(serde_json::json!("#/components/schemas/not-a-reference"))
    );
}

#[test]
fn documents_of_several_group_versions_merge_and_share_definitions() {
    let mut apps = openapi_v3_document();
    apps["components"]["schemas"]["com.example.v1.Widget"]["x-kubernetes-group-version-kind"] =
        serde_json::json!([{"group": "example.com", "version": "v2", "kind": "Widget"}]);
    let renamed = apps["components"]["schemas"]["com.example.v1.Widget"].take();
    apps["components"]["schemas"]["com.example.v2.Widget"] = renamed;
    if let Some(schemas) = apps["components"]["schemas"].as_object_mut() {
        schemas.remove("com.example.v1.Widget");
    }
    let catalog = Catalog::from_openapi_v3(&[openapi_v3_document(), apps])
        .unwrap_or_else(|error| panic!("{error}"));
    for version in ["v1", "v2"] {
        assert!(
            catalog
                .resolve(&Gvk::new("example.com", version, "Widget"))
                .found()
                .is_some()
        );
    }
}

#[test]
fn a_document_without_schemas_is_rejected_by_position() {
    let error = Catalog::from_openapi_v3(&[
        openapi_v3_document(),
        serde_json::json!({"openapi": "3.0.0"}),
    ])
    .err()
    .map(|error| error.to_string());
    assert_eq!(
        error.as_deref(),
        Some("OpenAPI document 1 has no components.schemas object")
    );
}

#[test]
fn built_in_kinds_know_their_scope() {
    let scope =
        |group: &str, kind: &str| Catalog::kubernetes_namespaced(&Gvk::new(group, "v1", kind));
    assert_eq!(scope("apps", "Deployment"), Some(true));
    assert_eq!(scope("", "ConfigMap"), Some(true));
    assert_eq!(scope("", "Namespace"), Some(false));
    assert_eq!(
        scope("rbac.authorization.k8s.io", "ClusterRole"),
        Some(false)
    );
    assert_eq!(scope("resource.k8s.io", "ResourceSlice"), Some(false));
    assert_eq!(scope("", "ConfigMapList"), None);
    assert_eq!(scope("example.com", "Widget"), None);
}
