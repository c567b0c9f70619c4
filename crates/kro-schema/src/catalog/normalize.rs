//! From a JSON-Schema `$defs` document to [`Schema`] values in the apiextensions shape.
//!
//! The document is checked and rewritten as JSON before it is deserialized:
//!
//! - `type: ["string", "null"]` becomes `type: string` plus `nullable: true`; a lone `"null"`
//!   leaves no type; `["integer", "string"]` and `format: int-or-string` become
//!   int-or-string (below).
//! - Int-or-string is spelled as controller-gen writes it in CRDs:
//!   `x-kubernetes-int-or-string: true` with `anyOf: [{type: integer}, {type: string}]` and no
//!   `type`.
//! - `Quantity` (`oneOf` string or number in the source) is int-or-string with
//!   controller-gen's quantity `pattern`; `IntOrString` (`oneOf` string or integer) is
//!   int-or-string. Both are nullable, as every type of the source is.
//! - `RawExtension` and `FieldsV1` (objects without properties whose content is arbitrary) keep
//!   `type: object` and gain `x-kubernetes-preserve-unknown-fields: true`.
//! - A definition with no type or structure at all (`JSON`, `JSONSchemaPropsOrArray`,
//!   `JSONSchemaPropsOrBool`, `JSONSchemaPropsOrStringArray`) accepts any value:
//!   `x-kubernetes-preserve-unknown-fields: true` and `nullable: true`, without a type.
//! - `$ref`s must name a definition of the document, as `#/$defs/<name>`, and may only have
//!   descriptions and merge annotations beside them.
//! - List types, map types and patch strategies must be values Kubernetes defines.
//! - `x-kubernetes-group-version-kind` is taken out into the kind index; keywords the model
//!   has no field for (`x-kubernetes-unions`) are dropped.
//!
//! `Time` and `MicroTime` need nothing: they are already `type: string, format: date-time`.

use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::error::CatalogError;
use super::semantics::{ListType, MapType, PatchStrategy};
use crate::gvk::Gvk;
use crate::openapi::Schema;

/// How references to definitions are written: `#/$defs/<name>`.
pub(crate) const REFERENCE_PREFIX: &str = "#/$defs/";

const QUANTITY: &str = "io.k8s.apimachinery.pkg.api.resource.Quantity";
const INT_OR_STRING: &str = "io.k8s.apimachinery.pkg.util.intstr.IntOrString";
const RAW_EXTENSION: &str = "io.k8s.apimachinery.pkg.runtime.RawExtension";
const FIELDS_V1: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1";

/// The pattern controller-gen gives `resource.Quantity` fields in CRDs.
const QUANTITY_PATTERN: &str = r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$";

/// Keywords allowed beside `$ref`: they describe the field, not the shape of its value.
const REFERENCE_SIBLINGS: [&str; 9] = [
    "description",
    "title",
    "default",
    "nullable",
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-map-type",
    "x-kubernetes-patch-merge-key",
    "x-kubernetes-patch-strategy",
];

/// Keywords that give a schema a shape; a definition with none of them accepts any value.
const SHAPE_KEYWORDS: [&str; 12] = [
    "type",
    "$ref",
    "properties",
    "items",
    "additionalProperties",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "enum",
    "x-kubernetes-int-or-string",
    "x-kubernetes-preserve-unknown-fields",
];

/// Annotations whose values Kubernetes enumerates.
const ANNOTATIONS: [&str; 3] = [
    "x-kubernetes-list-type",
    "x-kubernetes-map-type",
    "x-kubernetes-patch-strategy",
];

fn is_known_annotation_value(keyword: &str, value: &str) -> bool {
    match keyword {
        "x-kubernetes-list-type" => ListType::parse(value).is_some(),
        "x-kubernetes-map-type" => MapType::parse(value).is_some(),
        "x-kubernetes-patch-strategy" => PatchStrategy::parse_list(value).is_some(),
        _ => true,
    }
}

const GVK_KEYWORD: &str = "x-kubernetes-group-version-kind";

#[derive(Deserialize)]
struct Document {
    #[serde(rename = "$defs")]
    definitions: BTreeMap<String, Value>,
}

#[derive(Deserialize)]
struct GroupVersionKind {
    group: String,
    version: String,
    kind: String,
}

/// The normalised definitions of a document and the kinds they serve.
#[derive(Debug)]
pub(crate) struct Definitions {
    /// Every definition by name.
    pub(crate) schemas: BTreeMap<String, Schema>,
    /// The definition of each group-version-kind.
    pub(crate) kinds: BTreeMap<Gvk, String>,
}

/// Checks, normalises and indexes a JSON-Schema definitions document.
pub(crate) fn load(json: &[u8]) -> Result<Definitions, CatalogError> {
    let document: Document =
        serde_json::from_slice(json).map_err(|source| CatalogError::Document { source })?;
    load_definitions(document.definitions)
}

/// The prefix of references in OpenAPI v3 documents.
const OPENAPI_V3_REFERENCE_PREFIX: &str = "#/components/schemas/";

/// Checks, normalises and indexes the `components.schemas` of OpenAPI v3 documents (an API
/// server's `/openapi/v3/apis/<group>/<version>`), merged by name. The server's form differs
/// from `$defs` in two ways, both rewritten: references point into `#/components/schemas/`,
/// and a reference with a description or default is wrapped as `allOf: [{$ref}]`.
pub(crate) fn load_openapi_v3(
    documents: impl IntoIterator<Item = Value>,
) -> Result<Definitions, CatalogError> {
    let mut definitions = BTreeMap::new();
    for (index, mut document) in documents.into_iter().enumerate() {
        let Some(Value::Object(schemas)) =
            document.pointer_mut("/components/schemas").map(Value::take)
        else {
            return Err(CatalogError::NotOpenApiV3 { index });
        };
        for (name, mut schema) in schemas {
            if let std::collections::btree_map::Entry::Vacant(vacant) = definitions.entry(name) {
                rewrite_openapi_v3_references(&mut schema);
                vacant.insert(schema);
            }
        }
    }
    load_definitions(definitions)
}

/// Rewrites every reference of an OpenAPI v3 schema into the `$defs` form, unwrapping
/// `allOf: [{$ref}]`; walks only the keywords that hold schemas, so data (defaults, enums,
/// examples) and property names are left alone.
fn rewrite_openapi_v3_references(node: &mut Value) {
    let Value::Object(object) = node else {
        return;
    };
    let single_reference = match object.get("allOf") {
        Some(Value::Array(alternatives)) if alternatives.len() == 1 => alternatives[0]
            .as_object()
            .filter(|alternative| alternative.len() == 1)
            .and_then(|alternative| alternative.get("$ref"))
            .cloned(),
        _ => None,
    };
    if let Some(reference) = single_reference
        && !object.contains_key("$ref")
    {
        object.remove("allOf");
        object.insert("$ref".to_string(), reference);
    }
    if let Some(Value::String(reference)) = object.get_mut("$ref")
        && let Some(name) = reference.strip_prefix(OPENAPI_V3_REFERENCE_PREFIX)
    {
        *reference = format!("{REFERENCE_PREFIX}{name}");
    }
    if let Some(Value::Object(properties)) = object.get_mut("properties") {
        properties
            .values_mut()
            .for_each(rewrite_openapi_v3_references);
    }
    for keyword in ["items", "additionalProperties", "not"] {
        if let Some(child) = object.get_mut(keyword) {
            rewrite_openapi_v3_references(child);
        }
    }
    for keyword in ["allOf", "anyOf", "oneOf"] {
        if let Some(Value::Array(alternatives)) = object.get_mut(keyword) {
            alternatives
                .iter_mut()
                .for_each(rewrite_openapi_v3_references);
        }
    }
}

fn load_definitions(definitions: BTreeMap<String, Value>) -> Result<Definitions, CatalogError> {
    let names: BTreeSet<String> = definitions.keys().cloned().collect();
    let mut schemas = BTreeMap::new();
    let mut kinds: BTreeMap<Gvk, String> = BTreeMap::new();
    for (name, mut definition) in definitions {
        for gvk in take_group_version_kinds(&name, &mut definition)? {
            if let Some(first) = kinds.get(&gvk) {
                return Err(CatalogError::DuplicateKind {
                    gvk,
                    first: first.clone(),
                    second: name,
                });
            }
            kinds.insert(gvk, name.clone());
        }
        rewrite_special_definition(&name, &mut definition);
        let mut walker = Walker {
            definition: &name,
            names: &names,
            path: Vec::new(),
        };
        walker.schema(&mut definition)?;
        if let Value::Object(object) = &mut definition
            && !SHAPE_KEYWORDS.iter().any(|key| object.contains_key(*key))
        {
            object.insert(
                "x-kubernetes-preserve-unknown-fields".to_string(),
                Value::Bool(true),
            );
            object.insert("nullable".to_string(), Value::Bool(true));
        }
        let schema =
            serde_json::from_value(definition).map_err(|source| CatalogError::Definition {
                definition: name.clone(),
                source,
            })?;
        schemas.insert(name, schema);
    }
    Ok(Definitions { schemas, kinds })
}

fn take_group_version_kinds(name: &str, definition: &mut Value) -> Result<Vec<Gvk>, CatalogError> {
    let Some(listed) = definition
        .as_object_mut()
        .and_then(|object| object.remove(GVK_KEYWORD))
    else {
        return Ok(Vec::new());
    };
    let listed: Vec<GroupVersionKind> =
        serde_json::from_value(listed).map_err(|source| CatalogError::InvalidGroupVersionKind {
            definition: name.to_string(),
            source,
        })?;
    Ok(listed
        .into_iter()
        .map(|gvk| Gvk::new(&gvk.group, &gvk.version, &gvk.kind))
        .collect())
}

/// Gives the few definitions whose source form has no apiextensions equivalent the shape
/// controller-gen would give the same Go type.
fn rewrite_special_definition(name: &str, definition: &mut Value) {
    let Value::Object(object) = definition else {
        return;
    };
    match name {
        QUANTITY | INT_OR_STRING => {
            object.remove("oneOf");
            object.remove("type");
            object.insert("nullable".to_string(), Value::Bool(true));
            make_int_or_string(object);
            if name == QUANTITY {
                object.insert("pattern".to_string(), json!(QUANTITY_PATTERN));
            }
        }
        RAW_EXTENSION | FIELDS_V1 => {
            object.insert(
                "x-kubernetes-preserve-unknown-fields".to_string(),
                Value::Bool(true),
            );
        }
        _ => {}
    }
}

fn make_int_or_string(object: &mut Map<String, Value>) {
    object.remove("type");
    object.insert("x-kubernetes-int-or-string".to_string(), Value::Bool(true));
    object
        .entry("anyOf")
        .or_insert_with(|| json!([{"type": "integer"}, {"type": "string"}]));
}

/// Walks one definition, rewriting and checking each schema node.
struct Walker<'a> {
    definition: &'a str,
    names: &'a BTreeSet<String>,
    /// JSON-pointer segments from the definition to the current node.
    path: Vec<String>,
}

impl Walker<'_> {
    fn pointer(&self) -> String {
        self.path
            .iter()
            .map(|segment| format!("/{}", segment.replace('~', "~0").replace('/', "~1")))
            .collect()
    }

    fn schema(&mut self, node: &mut Value) -> Result<(), CatalogError> {
        let Value::Object(object) = node else {
            return Err(CatalogError::NotASchema {
                definition: self.definition.to_string(),
                path: self.pointer(),
            });
        };
        self.check_reference(object)?;
        self.normalize_type(object)?;
        self.check_annotations(object)?;
        self.children(object)
    }

    fn child(&mut self, segments: &[&str], node: &mut Value) -> Result<(), CatalogError> {
        self.path.extend(segments.iter().map(|s| s.to_string()));
        self.schema(node)?;
        self.path.truncate(self.path.len() - segments.len());
        Ok(())
    }

    fn children(&mut self, object: &mut Map<String, Value>) -> Result<(), CatalogError> {
        if let Some(Value::Object(properties)) = object.get_mut("properties") {
            for (name, property) in properties.iter_mut() {
                self.child(&["properties", name], property)?;
            }
        }
        for keyword in ["items", "not"] {
            if let Some(child) = object.get_mut(keyword) {
                self.child(&[keyword], child)?;
            }
        }
        if let Some(child @ Value::Object(_)) = object.get_mut("additionalProperties") {
            self.child(&["additionalProperties"], child)?;
        }
        for keyword in ["allOf", "anyOf", "oneOf"] {
            if let Some(Value::Array(alternatives)) = object.get_mut(keyword) {
                for (index, alternative) in alternatives.iter_mut().enumerate() {
                    self.child(&[keyword, &index.to_string()], alternative)?;
                }
            }
        }
        Ok(())
    }

    fn check_reference(&self, object: &Map<String, Value>) -> Result<(), CatalogError> {
        let Some(reference) = object.get("$ref") else {
            return Ok(());
        };
        let names_a_definition = reference
            .as_str()
            .and_then(|reference| reference.strip_prefix(REFERENCE_PREFIX))
            .is_some_and(|name| self.names.contains(name));
        if !names_a_definition {
            return Err(CatalogError::DanglingReference {
                definition: self.definition.to_string(),
                path: self.pointer(),
                reference: reference
                    .as_str()
                    .map_or_else(|| reference.to_string(), str::to_string),
            });
        }
        match object
            .keys()
            .find(|key| *key != "$ref" && !REFERENCE_SIBLINGS.contains(&key.as_str()))
        {
            Some(keyword) => Err(CatalogError::UnsupportedReferenceSibling {
                definition: self.definition.to_string(),
                path: self.pointer(),
                keyword: keyword.clone(),
            }),
            None => Ok(()),
        }
    }

    fn normalize_type(&self, object: &mut Map<String, Value>) -> Result<(), CatalogError> {
        if let Some(written) = object.get("type") {
            let types = match written {
                Value::String(type_) => vec![type_.clone()],
                Value::Array(types) => types
                    .iter()
                    .map(|type_| type_.as_str().map(str::to_string))
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| self.unsupported_type(vec![written.to_string()]))?,
                other => return Err(self.unsupported_type(vec![other.to_string()])),
            };
            let nullable = types.iter().any(|type_| type_ == "null");
            let mut concrete: Vec<&str> = types
                .iter()
                .map(String::as_str)
                .filter(|type_| *type_ != "null")
                .collect();
            concrete.sort_unstable();
            concrete.dedup();
            match concrete.as_slice() {
                [] => {
                    object.remove("type");
                }
                [type_] => {
                    object.insert("type".to_string(), json!(type_));
                }
                ["integer", "string"] => make_int_or_string(object),
                _ => return Err(self.unsupported_type(types)),
            }
            if nullable {
                object.insert("nullable".to_string(), Value::Bool(true));
            }
        }
        if object.get("format").and_then(Value::as_str) == Some("int-or-string") {
            object.remove("format");
            make_int_or_string(object);
        } else if object.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true)) {
            make_int_or_string(object);
        }
        Ok(())
    }

    fn unsupported_type(&self, types: Vec<String>) -> CatalogError {
        CatalogError::UnsupportedType {
            definition: self.definition.to_string(),
            path: self.pointer(),
            types,
        }
    }

    fn check_annotations(&self, object: &Map<String, Value>) -> Result<(), CatalogError> {
        for keyword in ANNOTATIONS {
            let Some(value) = object.get(keyword) else {
                continue;
            };
            if !value
                .as_str()
                .is_some_and(|value| is_known_annotation_value(keyword, value))
            {
                return Err(CatalogError::InvalidAnnotation {
                    definition: self.definition.to_string(),
                    path: self.pointer(),
                    keyword,
                    value: value
                        .as_str()
                        .map_or_else(|| value.to_string(), str::to_string),
                });
            }
        }
        Ok(())
    }
}
