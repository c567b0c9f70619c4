//! GraphRevisions (`internal.kro.run/v1alpha1`), as upstream kro v0.9.4 writes them: each
//! accepted spec of an RGD snapshotted into an immutable, cluster-scoped object named
//! `<rgd>-r<NNNNN>`, labelled with the spec's hash. This module owns what is pure in them:
//! their CRD (built from the API types, so a snapshot keeps every field an RGD may have), their
//! names, and the spec hash.
//!
//! The hash is upstream's (`pkg/graph/hash`): FNV-64a over the JSON that Go's `encoding/json`
//! writes for the normalised typed spec (`schema.group` and `schema.scope` defaulted, resources
//! sorted by id, `readyWhen`/`includeWhen` sorted, free-form parts re-encoded with sorted keys
//! and numbers as doubles, `<`, `>` and `&` escaped). A spec upstream can read hashes to the
//! same value here as there (`crates/kro-graph/tests/graph_revision_hash_upstream.rs` runs
//! upstream's function on a corpus); fields only this project has (`spec.scaling`, data nodes,
//! the string form of `forEach`, anything else upstream's types drop) are hashed after it, so a
//! change to them is a new revision too.

use std::collections::BTreeMap;

use kro_schema::Schema;
use serde_json::{Map, Value as Json, json};

use crate::api::RgdSpec;
use crate::crd_schema::{CrdSchema, object, open_object, required, rule, string};

/// The API group of GraphRevisions.
pub const GRAPH_REVISION_GROUP: &str = "internal.kro.run";
/// Their `apiVersion`.
pub const GRAPH_REVISION_API_VERSION: &str = "internal.kro.run/v1alpha1";
/// Their kind.
pub const GRAPH_REVISION_KIND: &str = "GraphRevision";
/// Their plural.
pub const GRAPH_REVISION_PLURAL: &str = "graphrevisions";
/// Their CRD's name.
pub const GRAPH_REVISION_CRD_NAME: &str = "graphrevisions.internal.kro.run";
/// The label holding the spec hash of a GraphRevision (shown, never read back).
pub const GRAPH_REVISION_HASH_LABEL: &str = "kro.run/graph-revision-hash";

/// The longest object name the API server accepts (a DNS subdomain).
const MAX_NAME: usize = 253;

/// The name of revision `revision` of the RGD `rgd`: `<rgd>-r00003`; a name past 253
/// characters is cut and given the FNV-32a hash of the whole RGD name, as upstream does.
pub fn graph_revision_name(rgd: &str, revision: i64) -> String {
    let suffix = format!("-r{revision:05}");
    if rgd.len() + suffix.len() <= MAX_NAME {
        return format!("{rgd}{suffix}");
    }
    let suffix = format!("-r{revision:05}-{:08x}", fnv32a(rgd.as_bytes()));
    let mut cut = MAX_NAME.saturating_sub(suffix.len()).min(rgd.len());
    while !rgd.is_char_boundary(cut) {
        cut -= 1;
    }
    let kept = rgd[..cut].trim_end_matches(['.', '-']);
    let kept = if kept.is_empty() { "gr" } else { kept };
    format!("{kept}{suffix}")
}

/// The GraphRevision CRD: upstream's shape (cluster-scoped, short name `gr`, printer columns,
/// `.spec.snapshot.name` selectable, the spec immutable), with the snapshot's spec given the
/// RGD spec's own schema.
pub fn graph_revision_crd() -> Json {
    let snapshot = Schema {
        required: required(&["generation", "name", "spec"]),
        ..object([
            ("name", string()),
            ("generation", integer()),
            ("spec", RgdSpec::crd_schema()),
        ])
    };
    let spec = Schema {
        required: required(&["revision", "snapshot"]),
        x_kubernetes_validations: vec![rule("self == oldSelf", "spec is immutable")],
        ..object([
            (
                "revision",
                Schema {
                    minimum: Some(1.into()),
                    ..integer()
                },
            ),
            ("snapshot", snapshot),
        ])
    };
    let schema = object([
        ("apiVersion", string()),
        ("kind", string()),
        ("metadata", Schema::of_type("object")),
        ("spec", spec),
        // Written by the controller alone, through the status subresource.
        ("status", open_object()),
    ]);
    let schema = serde_json::to_value(schema).unwrap_or_else(|_| json!({"type": "object"}));
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": GRAPH_REVISION_CRD_NAME},
        "spec": {
            "group": GRAPH_REVISION_GROUP,
            "scope": "Cluster",
            "names": {
                "kind": GRAPH_REVISION_KIND,
                "listKind": format!("{GRAPH_REVISION_KIND}List"),
                "plural": GRAPH_REVISION_PLURAL,
                "singular": GRAPH_REVISION_KIND.to_lowercase(),
                "shortNames": ["gr"],
            },
            "versions": [{
                "name": "v1alpha1",
                "served": true,
                "storage": true,
                "subresources": {"status": {}},
                "selectableFields": [{"jsonPath": ".spec.snapshot.name"}],
                "additionalPrinterColumns": [
                    {"name": "RGD", "type": "string", "priority": 1, "jsonPath": ".spec.snapshot.name"},
                    {"name": "REVISION", "type": "integer", "jsonPath": ".spec.revision"},
                    {"name": "HASH", "type": "string", "priority": 1, "jsonPath": ".metadata.labels.kro\\.run/graph-revision-hash"},
                    {"name": "READY", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status"},
                    {"name": "AGE", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
                ],
                "schema": {"openAPIV3Schema": schema},
            }],
        },
    })
}

fn integer() -> Schema {
    Schema {
        format: Some("int64".to_owned()),
        ..Schema::of_type("integer")
    }
}

/// The hash of an RGD's `spec` (as JSON), as upstream's `hash.Spec` computes it, followed by
/// the fields upstream's types do not have (see the module doc): 16 lowercase hex digits.
pub fn spec_hash(spec: &Json) -> String {
    let mut extras = Map::new();
    let encoded = GoSpec::new(&mut extras).spec(spec);
    let mut hash = Fnv64a::new();
    hash.write(encoded.as_bytes());
    if !extras.is_empty() {
        let mut tail = String::new();
        go_value(&Json::Object(extras), &mut tail);
        hash.write(tail.as_bytes());
    }
    format!("{:016x}", hash.0)
}

/// Writes the JSON Go's `encoding/json` writes for upstream's typed, normalised spec, and
/// collects into `extras` (by path) what those types would drop.
struct GoSpec<'a> {
    extras: &'a mut Map<String, Json>,
}

impl<'a> GoSpec<'a> {
    fn new(extras: &'a mut Map<String, Json>) -> Self {
        GoSpec { extras }
    }

    fn extra(&mut self, path: String, value: &Json) {
        self.extras.insert(path, value.clone());
    }

    /// Every field of `object` outside `known` is an extra.
    fn unknown_fields(&mut self, object: &Map<String, Json>, known: &[&str], path: &str) {
        for (key, value) in object {
            if !known.contains(&key.as_str()) {
                self.extra(format!("{path}.{key}"), value);
            }
        }
    }

    fn spec(&mut self, spec: &Json) -> String {
        let mut out = String::from("{");
        let Some(spec) = spec.as_object() else {
            self.extra("spec".to_owned(), spec);
            return "{}".to_owned();
        };
        self.unknown_fields(spec, &["schema", "resources"], "spec");
        let mut fields = Fields::new(&mut out);
        if let Some(schema) = spec.get("schema").filter(|schema| !schema.is_null()) {
            let encoded = self.schema(schema);
            fields.raw("schema", &encoded);
        }
        let mut resources: Vec<(usize, &Json)> = spec
            .get("resources")
            .and_then(Json::as_array)
            .map(|resources| resources.iter().enumerate().collect())
            .unwrap_or_default();
        if !resources.is_empty() {
            resources.sort_by(|a, b| id_of(a.1).cmp(id_of(b.1)));
            let encoded: Vec<String> = resources
                .iter()
                .map(|(index, resource)| self.resource(resource, *index))
                .collect();
            fields.raw("resources", &format!("[{}]", encoded.join(",")));
        }
        out.push('}');
        out
    }

    fn schema(&mut self, schema: &Json) -> String {
        let Some(schema) = schema.as_object() else {
            self.extra("spec.schema".to_owned(), schema);
            return "{}".to_owned();
        };
        self.unknown_fields(
            schema,
            &[
                "kind",
                "apiVersion",
                "group",
                "spec",
                "types",
                "status",
                "scope",
                "additionalPrinterColumns",
                "shortNames",
                "categories",
                "metadata",
            ],
            "spec.schema",
        );
        let mut out = String::from("{");
        let mut fields = Fields::new(&mut out);
        fields.string_omitempty("kind", schema.get("kind"));
        fields.string_omitempty("apiVersion", schema.get("apiVersion"));
        let group = schema.get("group").and_then(Json::as_str).unwrap_or("");
        fields.string("group", if group.is_empty() { "kro.run" } else { group });
        for raw in ["spec", "types", "status"] {
            fields.raw(raw, &raw_extension(schema.get(raw)));
        }
        let scope = schema.get("scope").and_then(Json::as_str).unwrap_or("");
        fields.string(
            "scope",
            if scope.is_empty() {
                "Namespaced"
            } else {
                scope
            },
        );
        if let Some(columns) = schema
            .get("additionalPrinterColumns")
            .and_then(Json::as_array)
            .filter(|columns| !columns.is_empty())
        {
            let encoded: Vec<String> = columns.iter().map(printer_column).collect();
            fields.raw(
                "additionalPrinterColumns",
                &format!("[{}]", encoded.join(",")),
            );
        }
        fields.strings_omitempty("shortNames", schema.get("shortNames"));
        fields.strings_omitempty("categories", schema.get("categories"));
        if let Some(metadata) = schema.get("metadata").and_then(Json::as_object) {
            let mut encoded = String::from("{");
            let mut inner = Fields::new(&mut encoded);
            inner.string_map_omitempty("labels", metadata.get("labels"));
            inner.string_map_omitempty("annotations", metadata.get("annotations"));
            encoded.push('}');
            fields.raw("metadata", &encoded);
        }
        out.push('}');
        out
    }

    fn resource(&mut self, resource: &Json, index: usize) -> String {
        let path = format!("spec.resources[{index}]");
        let Some(resource) = resource.as_object() else {
            self.extra(path, resource);
            return "null".to_owned();
        };
        self.unknown_fields(
            resource,
            &[
                "id",
                "template",
                "externalRef",
                "readyWhen",
                "includeWhen",
                "forEach",
            ],
            &path,
        );
        let mut out = String::from("{");
        let mut fields = Fields::new(&mut out);
        fields.string_omitempty("id", resource.get("id"));
        fields.raw("template", &raw_extension(resource.get("template")));
        if let Some(external) = resource.get("externalRef").filter(|value| !value.is_null()) {
            fields.raw("externalRef", &external_ref(external));
        }
        for list in ["readyWhen", "includeWhen"] {
            let mut values: Vec<&str> = resource
                .get(list)
                .and_then(Json::as_array)
                .map(|values| values.iter().filter_map(Json::as_str).collect())
                .unwrap_or_default();
            values.sort_unstable();
            if !values.is_empty() {
                let encoded: Vec<String> = values.iter().map(|value| go_string(value)).collect();
                fields.raw(list, &format!("[{}]", encoded.join(",")));
            }
        }
        match resource.get("forEach") {
            Some(Json::Array(dimensions)) if !dimensions.is_empty() => {
                let encoded: Vec<String> = dimensions
                    .iter()
                    .map(|dimension| string_map(dimension).unwrap_or_else(|| "null".to_owned()))
                    .collect();
                fields.raw("forEach", &format!("[{}]", encoded.join(",")));
            }
            Some(Json::Array(_)) | Some(Json::Null) | None => {}
            // The string form is this project's.
            Some(other) => self.extra(format!("{path}.forEach"), other),
        }
        out.push('}');
        out
    }
}

/// The id of a resource, for the sort (a resource without one sorts first).
fn id_of(resource: &Json) -> &str {
    resource.get("id").and_then(Json::as_str).unwrap_or("")
}

/// A `runtime.RawExtension`: its JSON re-encoded through Go's `any`, or `null` when absent.
fn raw_extension(value: Option<&Json>) -> String {
    match value {
        None | Some(Json::Null) => "null".to_owned(),
        Some(value) => {
            let mut out = String::new();
            go_value(value, &mut out);
            out
        }
    }
}

fn printer_column(column: &Json) -> String {
    let mut out = String::from("{");
    let mut fields = Fields::new(&mut out);
    fields.string(
        "name",
        column.get("name").and_then(Json::as_str).unwrap_or(""),
    );
    fields.string(
        "type",
        column.get("type").and_then(Json::as_str).unwrap_or(""),
    );
    fields.string_omitempty("format", column.get("format"));
    fields.string_omitempty("description", column.get("description"));
    if let Some(priority) = column
        .get("priority")
        .and_then(Json::as_i64)
        .filter(|p| *p != 0)
    {
        fields.raw("priority", &priority.to_string());
    }
    fields.string(
        "jsonPath",
        column.get("jsonPath").and_then(Json::as_str).unwrap_or(""),
    );
    out.push('}');
    out
}

fn external_ref(external: &Json) -> String {
    let mut out = String::from("{");
    let mut fields = Fields::new(&mut out);
    fields.string(
        "apiVersion",
        external
            .get("apiVersion")
            .and_then(Json::as_str)
            .unwrap_or(""),
    );
    fields.string(
        "kind",
        external.get("kind").and_then(Json::as_str).unwrap_or(""),
    );
    let metadata = external.get("metadata");
    let mut encoded = String::from("{");
    let mut inner = Fields::new(&mut encoded);
    inner.string_omitempty("name", metadata.and_then(|m| m.get("name")));
    inner.string_omitempty("namespace", metadata.and_then(|m| m.get("namespace")));
    inner.raw(
        "selector",
        &raw_extension(metadata.and_then(|m| m.get("selector"))),
    );
    encoded.push('}');
    fields.raw("metadata", &encoded);
    out.push('}');
    out
}

/// A `map[string]string` as Go writes it (keys sorted); `None` for a JSON value that is not
/// an object.
fn string_map(value: &Json) -> Option<String> {
    let object = value.as_object()?;
    let sorted: BTreeMap<&str, &str> = object
        .iter()
        .map(|(key, value)| (key.as_str(), value.as_str().unwrap_or("")))
        .collect();
    let encoded: Vec<String> = sorted
        .iter()
        .map(|(key, value)| format!("{}:{}", go_string(key), go_string(value)))
        .collect();
    Some(format!("{{{}}}", encoded.join(",")))
}

/// The fields of one Go struct being written, with their commas.
struct Fields<'a> {
    out: &'a mut String,
    first: bool,
}

impl<'a> Fields<'a> {
    fn new(out: &'a mut String) -> Self {
        Fields { out, first: true }
    }

    fn raw(&mut self, name: &str, encoded: &str) {
        if !self.first {
            self.out.push(',');
        }
        self.first = false;
        self.out.push_str(&go_string(name));
        self.out.push(':');
        self.out.push_str(encoded);
    }

    fn string(&mut self, name: &str, value: &str) {
        self.raw(name, &go_string(value));
    }

    fn string_omitempty(&mut self, name: &str, value: Option<&Json>) {
        if let Some(value) = value.and_then(Json::as_str).filter(|v| !v.is_empty()) {
            self.string(name, value);
        }
    }

    fn strings_omitempty(&mut self, name: &str, value: Option<&Json>) {
        if let Some(values) = value.and_then(Json::as_array).filter(|v| !v.is_empty()) {
            let encoded: Vec<String> = values
                .iter()
                .map(|value| go_string(value.as_str().unwrap_or("")))
                .collect();
            self.raw(name, &format!("[{}]", encoded.join(",")));
        }
    }

    fn string_map_omitempty(&mut self, name: &str, value: Option<&Json>) {
        if let Some(map) = value
            .and_then(Json::as_object)
            .filter(|map| !map.is_empty())
            && let Some(encoded) = string_map(&Json::Object(map.clone()))
        {
            self.raw(name, &encoded);
        }
    }
}

/// A JSON value as Go writes it after decoding it into `any`: keys sorted, numbers as
/// doubles, strings escaped as Go escapes them (`kro_cel::push_go_json_string`).
fn go_value(value: &Json, out: &mut String) {
    match value {
        Json::Null => out.push_str("null"),
        Json::Bool(true) => out.push_str("true"),
        Json::Bool(false) => out.push_str("false"),
        Json::Number(number) => {
            out.push_str(&kro_schema::go_json_float(number.as_f64().unwrap_or(0.0)))
        }
        Json::String(text) => kro_cel::push_go_json_string(out, text),
        Json::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                go_value(item, out);
            }
            out.push(']');
        }
        Json::Object(fields) => {
            let sorted: BTreeMap<&str, &Json> = fields
                .iter()
                .map(|(key, value)| (key.as_str(), value))
                .collect();
            out.push('{');
            for (index, (key, value)) in sorted.into_iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                kro_cel::push_go_json_string(out, key);
                out.push(':');
                go_value(value, out);
            }
            out.push('}');
        }
    }
}

/// A string as Go's `encoding/json` writes it.
fn go_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    kro_cel::push_go_json_string(&mut out, text);
    out
}

/// FNV-64a.
struct Fnv64a(u64);

impl Fnv64a {
    fn new() -> Self {
        Fnv64a(0xcbf2_9ce4_8422_2325)
    }

    fn write(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.0 ^= u64::from(*byte);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
}

/// FNV-32a.
fn fnv32a(bytes: &[u8]) -> u32 {
    let mut hash: u32 = 0x811c_9dc5;
    for byte in bytes {
        hash ^= u32::from(*byte);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    hash
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_upstreams() {
        assert_eq!(graph_revision_name("my-webapp", 3), "my-webapp-r00003");
        assert_eq!(graph_revision_name("a", 123_456), "a-r123456");
        let long = "x".repeat(250);
        let name = graph_revision_name(&long, 1);
        assert_eq!(name.len(), 253);
        assert!(name.ends_with(&format!("-r00001-{:08x}", fnv32a(long.as_bytes()))));
        let dotted = format!("{}.-{}", "y".repeat(235), "z".repeat(30));
        let name = graph_revision_name(&dotted, 7);
        assert!(name.starts_with(&"y".repeat(235)), "{name}");
        assert!(!name.contains(".-"), "{name}");
    }

    #[test]
    fn fnv_matches_its_reference_vectors() {
        // The FNV reference test vectors for "" and "a".
        assert_eq!(fnv32a(b""), 0x811c_9dc5);
        assert_eq!(fnv32a(b"a"), 0xe40c_292c);
        let mut hash = Fnv64a::new();
        hash.write(b"a");
        assert_eq!(hash.0, 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn free_form_values_are_written_as_go_writes_them() {
        let mut out = String::new();
        go_value(
            &json!({"b": [1, 1.5e-7, 1e21, 9_007_199_254_740_993_u64], "a": "<&>\n"}),
            &mut out,
        );
        assert_eq!(
            out,
            r#"{"a":"\u003c\u0026\u003e\n","b":[1,1.5e-7,1e+21,9007199254740992]}"#
        );
    }

    #[test]
    fn the_hash_ignores_order_where_upstream_does_and_sees_extensions() {
        let base = json!({
            "schema": {"apiVersion": "v1alpha1", "kind": "App", "spec": {"b": "integer", "a": "string"}},
            "resources": [
                {"id": "b", "template": {"kind": "ConfigMap"}, "readyWhen": ["${y}", "${x}"]},
                {"id": "a", "template": {"kind": "Secret"}},
            ],
        });
        let reordered = json!({
            "resources": [
                {"id": "a", "template": {"kind": "Secret"}},
                {"readyWhen": ["${x}", "${y}"], "template": {"kind": "ConfigMap"}, "id": "b"},
            ],
            "schema": {"kind": "App", "group": "kro.run", "scope": "Namespaced", "apiVersion": "v1alpha1", "spec": {"a": "string", "b": "integer"}},
        });
        assert_eq!(spec_hash(&base), spec_hash(&reordered));
        let mut changed = base.clone();
        changed["resources"][0]["template"]["kind"] = json!("Service");
        assert_ne!(spec_hash(&base), spec_hash(&changed));
        let mut scaled = base.clone();
        scaled["scaling"] = json!({"kind": "AppSet"});
        assert_ne!(spec_hash(&base), spec_hash(&scaled));
        // A policy is part of the spec: changing it is a revision, rolled out under it.
        let mut gated = base.clone();
        gated["propagateWhen"] = json!(["${linearlyReady(app, apps, 2)}"]);
        assert_ne!(spec_hash(&base), spec_hash(&gated));
        let mut collection = base.clone();
        collection["resources"][0]["propagateWhen"] = json!(["${true}"]);
        assert_ne!(spec_hash(&base), spec_hash(&collection));
        let mut data = base;
        data["resources"][1] = json!({"id": "a", "data": {"k": 1}});
        let mut other_data = data.clone();
        other_data["resources"][1]["data"]["k"] = json!(2);
        assert_ne!(spec_hash(&data), spec_hash(&other_data));
    }

    #[test]
    fn the_crd_is_upstreams_shape() {
        let crd = graph_revision_crd();
        assert_eq!(crd["metadata"]["name"], GRAPH_REVISION_CRD_NAME);
        assert_eq!(crd["spec"]["scope"], "Cluster");
        let version = &crd["spec"]["versions"][0];
        let spec = &version["schema"]["openAPIV3Schema"]["properties"]["spec"];
        assert_eq!(
            spec["x-kubernetes-validations"][0]["rule"],
            "self == oldSelf"
        );
        assert_eq!(spec["properties"]["revision"]["minimum"], 1);
        let snapshot_spec = &spec["properties"]["snapshot"]["properties"]["spec"];
        assert!(
            snapshot_spec["properties"]["resources"]["items"]["properties"]["data"].is_object(),
            "a snapshot keeps data nodes"
        );
    }
}
