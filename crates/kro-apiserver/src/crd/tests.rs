//! Unit tests of CustomResourceDefinition handling.

use super::names::names_of;
use super::scale::{scale_of, write_path};
use super::validation::validate;
use super::*;

fn widget_crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object"}}}]
        },
        "status": {"storedVersions": ["v1"]},
    })
}

#[test]
fn a_valid_definition_passes_and_gets_its_defaults() {
    let mut crd = widget_crd();
    assert_eq!(validate(&crd, None), Vec::new());
    default_spec(&mut crd);
    assert_eq!(crd["spec"]["names"]["singular"], "widget");
    assert_eq!(crd["spec"]["names"]["listKind"], "WidgetList");
}

#[test]
fn invalid_definitions_name_every_problem() {
    let crd = json!({
        "metadata": {"name": "gadgets.example.com"},
        "spec": {"group": "other.com", "scope": "Regional",
            "names": {"plural": "Gadgets", "kind": "gadget"},
            "versions": [{"name": "v1", "served": true, "storage": false}]}
    });
    let messages: Vec<String> = validate(&crd, None).iter().map(|e| e.to_string()).collect();
    let all = messages.join("\n");
    for expected in [
        "metadata.name: Invalid value: \"gadgets.example.com\": must be spec.names.plural+\".\"+spec.group",
        "spec.scope: Unsupported value: \"Regional\": supported values: \"Cluster\", \"Namespaced\"",
        "spec.versions[0].schema.openAPIV3Schema: Required value: schemas are required",
        // Go syntax of the internal versions, as kube-apiserver prints them.
        "spec.versions: Invalid value: []apiextensions.CustomResourceDefinitionVersion{apiextensions.CustomResourceDefinitionVersion{Name:\"v1\", Served:true, Storage:false, Deprecated:false, DeprecationWarning:(*string)(nil), Schema:(*apiextensions.CustomResourceValidation)(nil), Subresources:(*apiextensions.CustomResourceSubresources)(nil), AdditionalPrinterColumns:[]apiextensions.CustomResourceColumnDefinition(nil), SelectableFields:[]apiextensions.SelectableField(nil)}}: must have exactly one version marked as storage version",
        "status.storedVersions: Invalid value: []string(nil): must have at least one stored version",
        "spec.names.plural: Invalid value: \"Gadgets\": a DNS-1035 label",
    ] {
        assert!(all.contains(expected), "{expected}\nnot in:\n{all}");
    }
    let mut structural = widget_crd();
    structural["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = json!({
        "type": "object",
        "properties": {"spec": {"properties": {"a": {"type": "string"}}}, "list": {"type": "array"}}
    });
    let messages: Vec<String> = validate(&structural, None)
        .iter()
        .map(|e| e.to_string())
        .collect();
    assert_eq!(
        messages,
        [
            "spec.validation.openAPIV3Schema.properties[list].items: Required value: must be specified",
            "spec.validation.openAPIV3Schema.properties[spec].type: Required value: must not be empty for specified object fields",
        ]
    );
}

#[test]
fn rules_of_a_schema_that_is_not_structural_are_not_checked() {
    let mut crd = widget_crd();
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = json!({
        "type": "object",
        "properties": {"spec": {"type": "object", "properties": {
            "names": {"type": "array", "items": {"type": "string"},
                "x-kubernetes-validations": [{"rule": "self.all(x, x.matches('^[a-z]+$'))"}]},
            "list": {"type": "array"}}}}
    });
    let messages: Vec<String> = validate(&crd, None).iter().map(|e| e.to_string()).collect();
    assert_eq!(
        messages,
        [
            "spec.validation.openAPIV3Schema.properties[spec].properties[list].items: Required value: must be specified"
        ]
    );
    // Once structural, the rule's cost is refused.
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["list"]
        ["items"] = json!({"type": "string"});
    let messages: Vec<String> = validate(&crd, None).iter().map(|e| e.to_string()).collect();
    assert!(
        messages[0].contains("Forbidden: estimated rule cost exceeds budget"),
        "{messages:?}"
    );
}

#[test]
fn an_update_that_leaves_a_schema_unchanged_is_not_held_to_the_per_rule_limit() {
    // 21 units for each of up to 1,048,576 strings: 2.2 times the per-rule limit, a fifth
    // of the total.
    let expensive = json!({"type": "object", "properties": {"grid": {"type": "array",
        "items": {"type": "array", "items": {"type": "string", "maxLength": 10,
            "x-kubernetes-validations": [{"rule": "self.matches('^[a-z]{1,10}$')"}]}}}}});
    let mut stored = widget_crd();
    stored["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = expensive.clone();
    let messages = |errors: Vec<kro_schema::FieldError>| -> Vec<String> {
        errors.iter().map(ToString::to_string).collect()
    };
    let created = messages(validate(&stored, None));
    assert_eq!(created.len(), 1, "{created:?}");
    assert!(created[0].contains("factor of 2.2x"), "{created:?}");
    // The same schema, another label: accepted, as kube-apiserver accepts it.
    let mut relabelled = stored.clone();
    relabelled["metadata"]["labels"] = json!({"team": "a"});
    assert_eq!(
        messages(validate(&relabelled, Some(&stored))),
        Vec::<String>::new()
    );
    // A changed schema is held to the limit again.
    let mut changed = stored.clone();
    changed["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["other"] =
        json!({"type": "string"});
    assert_eq!(messages(validate(&changed, Some(&stored))).len(), 1);
}

#[test]
fn conflicting_names_are_found() {
    let mine = names_of(&json!({"plural": "widgetz", "kind": "Widget"}));
    let theirs = names_of(&json!({"plural": "widgets", "kind": "Widget"}));
    let (accepted, conflict) = accept_names(&mine, &[theirs]);
    assert_eq!(
        conflict,
        Some((
            "ListKindConflict",
            "\"WidgetList\" is already in use".to_owned()
        ))
    );
    assert_eq!(accepted, json!({"plural": "widgetz", "kind": ""}));
}

#[test]
fn scale_reads_the_paths_and_renders_selectors() {
    let object = json!({"metadata": {"name": "w", "namespace": "default", "resourceVersion": "7"},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "w"},
            "matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]}]}},
        "status": {"replicas": 2}});
    let paths = ScalePaths {
        spec_replicas: ".spec.replicas".to_owned(),
        status_replicas: ".status.replicas".to_owned(),
        label_selector: Some(".spec.selector".to_owned()),
    };
    let scale = scale_of(&object, &paths);
    assert_eq!(scale["spec"]["replicas"], 3);
    assert_eq!(scale["status"]["replicas"], 2);
    assert_eq!(scale["status"]["selector"], "app=w,tier in (a,b)");
    assert_eq!(scale["metadata"]["resourceVersion"], "7");
    let mut object = object;
    write_path(&mut object, ".spec.replicas", json!(5));
    assert_eq!(object["spec"]["replicas"], 5);
}
