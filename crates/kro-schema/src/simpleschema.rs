//! SimpleSchema: the compact schema language of a ResourceGraphDefinition, compiled to OpenAPI
//! v3 exactly as upstream kro does.
//!
//! A field is `name: "<type> | marker=value ..."`; a nested map is an object with those fields.
//! Types are `string`, `integer`, `boolean`, `float`, `object`, `[]T`, `map[string]T` and the
//! custom types of `types:` (struct maps or aliases, resolved in dependency order, cycles
//! rejected). See the module docs of [`markers`] for the markers.

mod markers;
mod types;

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value as Json;

use crate::openapi::{AdditionalProperties, Schema, ValidationRule};

pub use markers::{Marker, MarkerKind, parse_markers};
pub use types::{MAX_TYPE_DEPTH, TypeExpr, parse_type};

/// A SimpleSchema problem, with the field path it was found at.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{path}: {kind}")]
pub struct SimpleSchemaError {
    /// Where: `spec.ports[].name`, `types.Container.image` and so on.
    pub path: String,
    /// What is wrong.
    pub kind: SimpleSchemaErrorKind,
}

/// What is wrong with a SimpleSchema declaration.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SimpleSchemaErrorKind {
    /// A marker name SimpleSchema does not know.
    #[error("unknown marker {0:?}")]
    UnknownMarker(String),
    /// Nothing after the last marker: a `|` with no markers, or markers ending in a space
    /// (upstream's parser expects a marker there).
    #[error("expected a marker after '|' or after the last space")]
    MissingMarker,
    /// A marker written without `=value`.
    #[error("marker {0:?} needs a value ({0}=...)")]
    MarkerWithoutValue(String),
    /// `=value` with no marker name.
    #[error("empty marker name before '='")]
    EmptyMarkerKey,
    /// A quoted marker value without its closing quote.
    #[error("unclosed quote in markers")]
    UnclosedQuote,
    /// Unbalanced `{}`/`[]` in a marker value.
    #[error("unbalanced brackets in markers")]
    UnbalancedBrackets,
    /// A marker value that does not parse for its marker.
    #[error("invalid value {value:?} for marker {marker}: {reason}")]
    InvalidMarkerValue {
        /// The marker.
        marker: &'static str,
        /// The value as written.
        value: String,
        /// Why it is invalid.
        reason: String,
    },
    /// A marker used on a type it does not apply to.
    #[error("marker {marker} does not apply to type {type_name}")]
    MarkerNotApplicable {
        /// The marker.
        marker: &'static str,
        /// The field's OpenAPI type.
        type_name: String,
    },
    /// A type expression that does not parse.
    #[error("invalid type {0:?}")]
    InvalidType(String),
    /// A map key type other than `string`.
    #[error("unsupported map key type {0:?}: only string keys are supported")]
    UnsupportedMapKey(String),
    /// A custom type that `types:` does not define.
    #[error("unknown type {0:?}")]
    UnknownType(String),
    /// A type expression nested too deeply.
    #[error("type nesting exceeds {limit} levels")]
    NestingTooDeep {
        /// The limit.
        limit: usize,
    },
    /// Custom types that refer to each other in a cycle.
    #[error("cyclic dependency between types: {}", .0.join(" -> "))]
    CyclicTypes(Vec<String>),
    /// A field whose value is neither a declaration string nor a map of fields.
    #[error("expected a type declaration string or a map of fields, found {0}")]
    InvalidFieldValue(String),
    /// Two markers that contradict each other.
    #[error("conflicting markers: {0}")]
    ConflictingMarkers(String),
    /// A `scale`/`scaleSelector` marker that breaks the scaling rules.
    #[error("{0}")]
    InvalidScaleMarker(String),
}

/// Where the horizontal-scaling markers were found (dotted paths under `spec` and `status`),
/// so CRD generation can emit the scale subresource.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScaleFields {
    /// The `integer | scale` field of the spec (desired replicas).
    pub spec_replicas: Option<String>,
    /// The `integer | scale` field of the status (current replicas).
    pub status_replicas: Option<String>,
    /// The `string | scaleSelector` field of the status (pod label selector).
    pub status_selector: Option<String>,
}

/// A compiled schema and what its markers recorded beyond OpenAPI.
#[derive(Debug, Clone, PartialEq)]
pub struct CompiledSchema {
    /// The OpenAPI schema of the object.
    pub schema: Schema,
    /// Dotted paths (relative to the compiled object) of fields marked `scale`.
    pub scale_fields: Vec<String>,
    /// Dotted paths of fields marked `scaleSelector`.
    pub scale_selector_fields: Vec<String>,
}

/// Compiles the `spec` of an RGD schema (a map of fields) with the custom types of `types`
/// (a map of type names to struct maps or alias strings; pass `None` when absent).
///
/// # Errors
/// The first [`SimpleSchemaError`], naming the field path and the marker.
pub fn compile_spec(
    spec: &Json,
    types: Option<&Json>,
) -> Result<CompiledSchema, SimpleSchemaError> {
    let custom = match types {
        Some(types) => load_custom_types(types)?,
        None => BTreeMap::new(),
    };
    let mut compiler = Compiler {
        custom: &custom,
        scale_fields: Vec::new(),
        scale_selector_fields: Vec::new(),
        null_default: false,
    };
    let fields = spec.as_object().ok_or_else(|| SimpleSchemaError {
        path: "spec".to_string(),
        kind: SimpleSchemaErrorKind::InvalidFieldValue(describe(spec)),
    })?;
    let schema = compiler.object(fields, "spec")?;
    Ok(CompiledSchema {
        schema,
        scale_fields: compiler.scale_fields,
        scale_selector_fields: compiler.scale_selector_fields,
    })
}

/// Compiles one field declaration (`"integer | scale"`) on its own, for the typed fields of
/// an RGD's `status` (whose other fields are expressions).
///
/// # Errors
/// [`SimpleSchemaError`] at `path`.
pub fn compile_field(declaration: &str, path: &str) -> Result<CompiledSchema, SimpleSchemaError> {
    let custom = BTreeMap::new();
    let mut compiler = Compiler {
        custom: &custom,
        scale_fields: Vec::new(),
        scale_selector_fields: Vec::new(),
        null_default: false,
    };
    let mut parent = Schema::of_type("object");
    let schema = compiler.declared_field(declaration, path, "field", &mut parent)?;
    Ok(CompiledSchema {
        schema,
        scale_fields: compiler.scale_fields,
        scale_selector_fields: compiler.scale_selector_fields,
    })
}

/// Checks the scaling rules of the horizontal-scaling design across spec and status: at most
/// one `scale` field in each, on both or on neither, and at most one `scaleSelector`, in the
/// status, only together with `scale`.
///
/// # Errors
/// [`SimpleSchemaErrorKind::InvalidScaleMarker`] describing the broken rule.
pub fn scale_fields(
    spec: &CompiledSchema,
    status: &CompiledSchema,
) -> Result<ScaleFields, SimpleSchemaError> {
    let fail = |path: &str, message: &str| SimpleSchemaError {
        path: path.to_string(),
        kind: SimpleSchemaErrorKind::InvalidScaleMarker(message.to_string()),
    };
    if spec.scale_fields.len() > 1 {
        return Err(fail("spec", "more than one field is marked scale"));
    }
    if status.scale_fields.len() > 1 {
        return Err(fail("status", "more than one field is marked scale"));
    }
    if let Some(path) = spec.scale_selector_fields.first() {
        return Err(fail(path, "scaleSelector belongs on a status field"));
    }
    if status.scale_selector_fields.len() > 1 {
        return Err(fail(
            "status",
            "more than one field is marked scaleSelector",
        ));
    }
    let spec_replicas = spec.scale_fields.first().cloned();
    let status_replicas = status.scale_fields.first().cloned();
    match (&spec_replicas, &status_replicas) {
        (Some(path), None) => {
            return Err(fail(
                path,
                "scale is marked in spec but not in status: mark both or neither",
            ));
        }
        (None, Some(path)) => {
            return Err(fail(
                path,
                "scale is marked in status but not in spec: mark both or neither",
            ));
        }
        _ => {}
    }
    let status_selector = status.scale_selector_fields.first().cloned();
    if let (Some(path), None) = (&status_selector, &spec_replicas) {
        return Err(fail(
            path,
            "scaleSelector needs scale fields in spec and status",
        ));
    }
    Ok(ScaleFields {
        spec_replicas,
        status_replicas,
        status_selector,
    })
}

fn describe(value: &Json) -> String {
    match value {
        Json::Null => "null".to_string(),
        Json::Bool(_) => "a boolean".to_string(),
        Json::Number(_) => "a number".to_string(),
        Json::String(_) => "a string".to_string(),
        Json::Array(_) => "a list".to_string(),
        Json::Object(_) => "a map".to_string(),
    }
}

/// A custom type: its schema, and whether an alias marked it `required=true`.
#[derive(Debug, Clone)]
struct CustomType {
    schema: Schema,
    required: bool,
}

/// Loads `types:` in dependency order, so that each type may use the ones before it.
fn load_custom_types(types: &Json) -> Result<BTreeMap<String, CustomType>, SimpleSchemaError> {
    let definitions = types.as_object().ok_or_else(|| SimpleSchemaError {
        path: "types".to_string(),
        kind: SimpleSchemaErrorKind::InvalidFieldValue(describe(types)),
    })?;
    let mut dependencies: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    for (name, definition) in definitions {
        let mut found = BTreeSet::new();
        collect_dependencies(definition, &format!("types.{name}"), &mut found)?;
        dependencies.insert(name, found);
    }
    let order = dependency_order(&dependencies)?;
    let mut loaded: BTreeMap<String, CustomType> = BTreeMap::new();
    for name in order {
        let definition = &definitions[name];
        let path = format!("types.{name}");
        let mut compiler = Compiler {
            custom: &loaded,
            scale_fields: Vec::new(),
            scale_selector_fields: Vec::new(),
            null_default: false,
        };
        let mut holder = Schema::of_type("object");
        let schema = compiler.field(name, definition, &path, &mut holder)?;
        let required = holder.required.iter().any(|field| field == name);
        loaded.insert(name.to_string(), CustomType { schema, required });
    }
    Ok(loaded)
}

fn collect_dependencies(
    definition: &Json,
    path: &str,
    found: &mut BTreeSet<String>,
) -> Result<(), SimpleSchemaError> {
    match definition {
        Json::String(declaration) => {
            let (type_text, _) = split_declaration(declaration);
            let expr = parse_type(type_text).map_err(|kind| SimpleSchemaError {
                path: path.to_string(),
                kind,
            })?;
            found.extend(expr.custom_types().into_iter().map(str::to_string));
            Ok(())
        }
        Json::Object(fields) => {
            for (name, field) in fields {
                collect_dependencies(field, &format!("{path}.{name}"), found)?;
            }
            Ok(())
        }
        other => Err(SimpleSchemaError {
            path: path.to_string(),
            kind: SimpleSchemaErrorKind::InvalidFieldValue(describe(other)),
        }),
    }
}

/// Kahn's algorithm over the type graph; unknown names are left for field compilation to
/// report, a cycle is reported with its members.
fn dependency_order<'a>(
    dependencies: &BTreeMap<&'a str, BTreeSet<String>>,
) -> Result<Vec<&'a str>, SimpleSchemaError> {
    let mut remaining: BTreeMap<&str, BTreeSet<&str>> = dependencies
        .iter()
        .map(|(name, uses)| {
            let known = uses
                .iter()
                .filter_map(|used| {
                    dependencies
                        .get_key_value(used.as_str())
                        .map(|(key, _)| *key)
                })
                .collect();
            (*name, known)
        })
        .collect();
    let mut order = Vec::new();
    while !remaining.is_empty() {
        let ready: Vec<&str> = remaining
            .iter()
            .filter(|(_, uses)| uses.is_empty())
            .map(|(name, _)| *name)
            .collect();
        if ready.is_empty() {
            let mut cycle: Vec<String> = remaining.keys().map(|name| name.to_string()).collect();
            cycle.sort();
            return Err(SimpleSchemaError {
                path: "types".to_string(),
                kind: SimpleSchemaErrorKind::CyclicTypes(cycle),
            });
        }
        for name in ready {
            remaining.remove(name);
            for uses in remaining.values_mut() {
                uses.remove(name);
            }
            order.push(name);
        }
    }
    Ok(order)
}

/// Splits a declaration at its first `|` into the type and the markers (as written: a `|`
/// with nothing after it, or markers ending in a space, are errors, as upstream).
fn split_declaration(declaration: &str) -> (&str, Option<&str>) {
    match declaration.split_once('|') {
        Some((type_text, markers)) => (type_text.trim(), Some(markers)),
        None => (declaration.trim(), None),
    }
}

struct Compiler<'t> {
    custom: &'t BTreeMap<String, CustomType>,
    scale_fields: Vec<String>,
    scale_selector_fields: Vec<String>,
    /// Whether the field just compiled had a `default=` that came out as no default (`null`).
    null_default: bool,
}

impl Compiler<'_> {
    /// A map of fields: `type: object` with properties, sorted `required`, and `default: {}`
    /// when no child is required and some child has a default.
    fn object(
        &mut self,
        fields: &serde_json::Map<String, Json>,
        path: &str,
    ) -> Result<Schema, SimpleSchemaError> {
        let mut schema = Schema::of_type("object");
        // Upstream decides on `default: {}` from whether a child's default was set at all, so
        // a `default=null` child counts although it ends up without a default.
        let mut child_has_default = false;
        for (name, value) in fields {
            let field_path = format!("{path}.{name}");
            self.null_default = false;
            let field_schema = self.field(name, value, &field_path, &mut schema)?;
            child_has_default |= field_schema.default.is_some() || self.null_default;
            schema.properties.insert(name.clone(), field_schema);
        }
        self.null_default = false;
        // Upstream appends a name once per `required=true` (and once more for a required
        // alias); kube-apiserver keeps the repeats, so they stay. Sorted: upstream's order
        // follows Go map iteration and is not stable.
        schema.required.sort();
        if schema.required.is_empty() && child_has_default {
            schema.default = Some(Json::Object(serde_json::Map::new()));
        }
        Ok(schema)
    }

    fn field(
        &mut self,
        name: &str,
        value: &Json,
        path: &str,
        parent: &mut Schema,
    ) -> Result<Schema, SimpleSchemaError> {
        match value {
            Json::Object(fields) => self.object(fields, path),
            Json::String(declaration) => self.declared_field(declaration, path, name, parent),
            other => Err(SimpleSchemaError {
                path: path.to_string(),
                kind: SimpleSchemaErrorKind::InvalidFieldValue(describe(other)),
            }),
        }
    }

    fn declared_field(
        &mut self,
        declaration: &str,
        path: &str,
        name: &str,
        parent: &mut Schema,
    ) -> Result<Schema, SimpleSchemaError> {
        let at = |kind| SimpleSchemaError {
            path: path.to_string(),
            kind,
        };
        let (type_text, marker_text) = split_declaration(declaration);
        let expr = parse_type(type_text).map_err(at)?;
        let markers = match marker_text {
            Some(text) => parse_markers(text).map_err(at)?,
            None => Vec::new(),
        };
        let (mut schema, required_by_type) = self.type_schema(&expr).map_err(at)?;
        if required_by_type {
            parent.required.push(name.to_string());
        }
        self.apply_markers(&mut schema, &markers, name, path, parent)
            .map_err(at)?;
        Ok(schema)
    }

    /// The schema of a type expression, and whether a custom alias made it required.
    fn type_schema(&self, expr: &TypeExpr) -> Result<(Schema, bool), SimpleSchemaErrorKind> {
        Ok(match expr {
            TypeExpr::String | TypeExpr::Integer | TypeExpr::Boolean | TypeExpr::Float => (
                Schema::of_type(expr.openapi_type().unwrap_or("string")),
                false,
            ),
            TypeExpr::Object => (preserve_unknown_object(), false),
            TypeExpr::List(element) => {
                let (items, _) = self.type_schema(element)?;
                let mut schema = Schema::of_type("array");
                schema.items = Some(Box::new(items));
                (schema, false)
            }
            TypeExpr::Map(value) => {
                let (values, _) = self.type_schema(value)?;
                let mut schema = Schema::of_type("object");
                schema.additional_properties = Some(AdditionalProperties::Schema(Box::new(values)));
                (schema, false)
            }
            TypeExpr::Custom(name) => {
                let custom = self
                    .custom
                    .get(name)
                    .ok_or_else(|| SimpleSchemaErrorKind::UnknownType(name.clone()))?;
                (custom.schema.clone(), custom.required)
            }
        })
    }

    fn apply_markers(
        &mut self,
        schema: &mut Schema,
        markers: &[Marker],
        name: &str,
        path: &str,
        parent: &mut Schema,
    ) -> Result<(), SimpleSchemaErrorKind> {
        for marker in markers {
            apply_marker(schema, marker, name, parent, &mut self.null_default)?;
            match marker.kind {
                MarkerKind::Scale => self.scale_fields.push(relative_path(path)),
                MarkerKind::ScaleSelector => self.scale_selector_fields.push(relative_path(path)),
                _ => {}
            }
        }
        check_marker_combination(schema)?;
        check_rules(schema)?;
        check_default(schema)
    }
}

/// `validation=` (and `immutable=`) rules must compile with `self` typed as the field, as
/// kube-apiserver requires of a CRD's rules: `integer | validation="self != ''"` is an error
/// at its field rather than a CRD the API server refuses.
fn check_rules(schema: &Schema) -> Result<(), SimpleSchemaErrorKind> {
    match crate::validation::rule_compile_errors(schema)
        .into_iter()
        .next()
    {
        None => Ok(()),
        Some((rule, error)) => Err(invalid(MarkerKind::Validation, &rule, error)),
    }
}

/// A default must be a valid value of its field, as kube-apiserver requires of a CRD's
/// defaults (`integer | default=0 minimum=1` made a CRD the API server refuses).
fn check_default(schema: &Schema) -> Result<(), SimpleSchemaErrorKind> {
    let Some(default) = &schema.default else {
        return Ok(());
    };
    let errors = crate::validation::validate(schema, default, None);
    match errors.first() {
        None => Ok(()),
        Some(error) => Err(invalid(
            MarkerKind::Default,
            &default.to_string(),
            format!("the default is not a valid value of the field: {error}"),
        )),
    }
}

/// The path without its leading `spec.`/`status.`/`field.` segment.
fn relative_path(path: &str) -> String {
    path.split_once('.')
        .map_or(path, |(_, rest)| rest)
        .to_string()
}

fn preserve_unknown_object() -> Schema {
    let mut schema = Schema::of_type("object");
    schema.x_kubernetes_preserve_unknown_fields = Some(true);
    schema
}

fn type_name(schema: &Schema) -> String {
    schema
        .type_
        .clone()
        .unwrap_or_else(|| "unknown".to_string())
}

fn invalid(marker: MarkerKind, value: &str, reason: impl Into<String>) -> SimpleSchemaErrorKind {
    SimpleSchemaErrorKind::InvalidMarkerValue {
        marker: marker.name(),
        value: value.to_string(),
        reason: reason.into(),
    }
}

fn require_type(
    schema: &Schema,
    marker: MarkerKind,
    allowed: &[&str],
) -> Result<(), SimpleSchemaErrorKind> {
    let actual = schema.type_.as_deref().unwrap_or("");
    if allowed.contains(&actual) {
        Ok(())
    } else {
        Err(SimpleSchemaErrorKind::MarkerNotApplicable {
            marker: marker.name(),
            type_name: type_name(schema),
        })
    }
}

fn parse_bool(marker: &Marker) -> Result<bool, SimpleSchemaErrorKind> {
    go_parse_bool(&marker.value)
        .ok_or_else(|| invalid(marker.kind, &marker.value, "expected true or false"))
}

/// Go's `strconv.ParseBool`: its spellings of true and false.
fn go_parse_bool(text: &str) -> Option<bool> {
    match text {
        "1" | "t" | "T" | "true" | "TRUE" | "True" => Some(true),
        "0" | "f" | "F" | "false" | "FALSE" | "False" => Some(false),
        _ => None,
    }
}

fn parse_count(marker: &Marker) -> Result<u64, SimpleSchemaErrorKind> {
    let value: i64 = marker
        .value
        .parse()
        .map_err(|_| invalid(marker.kind, &marker.value, "expected an integer"))?;
    u64::try_from(value).map_err(|_| invalid(marker.kind, &marker.value, "must not be negative"))
}

/// A number as written: integral values stay integers in JSON (`1`, not `1.0`).
fn parse_number(marker: &Marker) -> Result<serde_json::Number, SimpleSchemaErrorKind> {
    let value: f64 = marker
        .value
        .parse()
        .map_err(|_| invalid(marker.kind, &marker.value, "expected a number"))?;
    if !value.is_finite() {
        return Err(invalid(
            marker.kind,
            &marker.value,
            "expected a finite number",
        ));
    }
    if value.fract() == 0.0 && value.abs() < 9.0e15 {
        return Ok(serde_json::Number::from(value as i64));
    }
    serde_json::Number::from_f64(value)
        .ok_or_else(|| invalid(marker.kind, &marker.value, "expected a number"))
}

fn apply_marker(
    schema: &mut Schema,
    marker: &Marker,
    name: &str,
    parent: &mut Schema,
    null_default: &mut bool,
) -> Result<(), SimpleSchemaErrorKind> {
    let value = marker.value.as_str();
    match marker.kind {
        MarkerKind::Required => {
            if parse_bool(marker)? {
                parent.required.push(name.to_string());
            }
        }
        MarkerKind::Default => {
            schema.default = default_value(schema, marker)?;
            // A null default is no default, but upstream's parent still counts it as one.
            *null_default = schema.default.is_none();
        }
        // An empty description is no description, as in upstream's CRD (Go omits "").
        MarkerKind::Description => {
            schema.description = (!value.is_empty()).then(|| value.to_string());
        }
        MarkerKind::Enum => {
            let mut values = Vec::new();
            for item in value.split(',') {
                let item = item.trim();
                if item.is_empty() {
                    return Err(invalid(
                        marker.kind,
                        value,
                        "empty enum values are not allowed",
                    ));
                }
                values.push(match schema.type_.as_deref() {
                    Some("string") => Json::String(item.to_string()),
                    Some("integer") => Json::from(
                        item.parse::<i64>()
                            .map_err(|_| invalid(marker.kind, item, "expected an integer"))?,
                    ),
                    _ => {
                        return Err(SimpleSchemaErrorKind::MarkerNotApplicable {
                            marker: marker.kind.name(),
                            type_name: type_name(schema),
                        });
                    }
                });
            }
            schema.enum_ = Some(values);
        }
        // Any type, as upstream: kube-apiserver accepts bounds that never apply.
        MarkerKind::Minimum => schema.minimum = Some(parse_number(marker)?),
        MarkerKind::Maximum => schema.maximum = Some(parse_number(marker)?),
        MarkerKind::Pattern => {
            require_type(schema, marker.kind, &["string"])?;
            if value.is_empty() {
                return Err(invalid(marker.kind, value, "the pattern must not be empty"));
            }
            regex::Regex::new(value)
                .map_err(|error| invalid(marker.kind, value, error.to_string()))?;
            schema.pattern = Some(value.to_string());
        }
        MarkerKind::MinLength => {
            require_type(schema, marker.kind, &["string"])?;
            schema.min_length = Some(parse_count(marker)?);
        }
        MarkerKind::MaxLength => {
            require_type(schema, marker.kind, &["string"])?;
            schema.max_length = Some(parse_count(marker)?);
        }
        MarkerKind::MinItems => {
            require_type(schema, marker.kind, &["array"])?;
            schema.min_items = Some(parse_count(marker)?);
        }
        MarkerKind::MaxItems => {
            require_type(schema, marker.kind, &["array"])?;
            schema.max_items = Some(parse_count(marker)?);
        }
        MarkerKind::UniqueItems => {
            require_type(schema, marker.kind, &["array"])?;
            if parse_bool(marker)? {
                // CRDs may not use uniqueItems; a set list gives the same guarantee.
                set_list_type(schema, "set", marker)?;
            }
        }
        MarkerKind::ListType => {
            require_type(schema, marker.kind, &["array"])?;
            if !matches!(value, "atomic" | "set" | "map") {
                return Err(invalid(marker.kind, value, "expected atomic, set or map"));
            }
            set_list_type(schema, value, marker)?;
        }
        MarkerKind::ListMapKey => {
            require_type(schema, marker.kind, &["array"])?;
            if value.is_empty() {
                return Err(invalid(marker.kind, value, "the key must not be empty"));
            }
            if schema
                .x_kubernetes_list_map_keys
                .iter()
                .any(|key| key == value)
            {
                return Err(SimpleSchemaErrorKind::ConflictingMarkers(format!(
                    "listMapKey={value} is given twice"
                )));
            }
            schema.x_kubernetes_list_map_keys.push(value.to_string());
        }
        MarkerKind::Immutable => {
            if parse_bool(marker)? {
                schema.x_kubernetes_validations.push(ValidationRule {
                    rule: "self == oldSelf".to_string(),
                    message: Some("field is immutable".to_string()),
                    ..ValidationRule::default()
                });
            }
        }
        MarkerKind::Validation => {
            if value.trim().is_empty() {
                return Err(invalid(marker.kind, value, "the rule must not be empty"));
            }
            kro_cel::parse(value)
                .map_err(|error| invalid(marker.kind, value, error.to_string()))?;
            schema.x_kubernetes_validations.push(ValidationRule {
                rule: value.to_string(),
                message: Some("validation failed".to_string()),
                ..ValidationRule::default()
            });
        }
        MarkerKind::Scale => {
            if schema.type_.as_deref() != Some("integer") {
                return Err(SimpleSchemaErrorKind::InvalidScaleMarker(format!(
                    "scale applies to integer fields only, not {}",
                    type_name(schema)
                )));
            }
        }
        MarkerKind::ScaleSelector => {
            if schema.type_.as_deref() != Some("string") {
                return Err(SimpleSchemaErrorKind::InvalidScaleMarker(format!(
                    "scaleSelector applies to string fields only, not {}",
                    type_name(schema)
                )));
            }
        }
    }
    Ok(())
}

fn set_list_type(
    schema: &mut Schema,
    list_type: &str,
    marker: &Marker,
) -> Result<(), SimpleSchemaErrorKind> {
    match schema.x_kubernetes_list_type.as_deref() {
        Some(existing) if existing != list_type => {
            Err(SimpleSchemaErrorKind::ConflictingMarkers(format!(
                "{}={} conflicts with listType {existing}",
                marker.kind.name(),
                marker.value
            )))
        }
        _ => {
            schema.x_kubernetes_list_type = Some(list_type.to_string());
            Ok(())
        }
    }
}

/// The `default=` value, as upstream writes it: the marker's text is the default's JSON text
/// (a string's between double quotes), after checking that an integer, number or boolean
/// parses as Go's `strconv` would. Text that is not JSON then is an error (upstream cannot
/// encode the CRD), so `default=007` and `default="say \"hi\""` fail, and an escape such as
/// `\n` in a string default is JSON's. `None` for the text `null` or no text on a type whose
/// text is taken as JSON as it is: upstream sends that default as JSON `null`, which
/// kube-apiserver reads as no default.
fn default_value(schema: &Schema, marker: &Marker) -> Result<Option<Json>, SimpleSchemaErrorKind> {
    let text = marker.value.as_str();
    let json = |text: &str| {
        serde_json::from_str::<Json>(text)
            .map_err(|error| invalid(marker.kind, text, format!("not valid JSON: {error}")))
    };
    match schema.type_.as_deref() {
        Some("string") => json(&format!("\"{text}\"")).map(Some),
        Some("integer") => {
            text.parse::<i64>()
                .map_err(|_| invalid(marker.kind, text, "expected an integer"))?;
            json(text).map(Some)
        }
        Some("number") => {
            let number: f64 = text
                .parse()
                .map_err(|_| invalid(marker.kind, text, "expected a number"))?;
            if !number.is_finite() {
                return Err(invalid(marker.kind, text, "expected a finite number"));
            }
            json(text).map(Some)
        }
        Some("boolean") => {
            go_parse_bool(text)
                .ok_or_else(|| invalid(marker.kind, text, "expected true or false"))?;
            json(text).map(Some)
        }
        _ if text.is_empty() => Ok(None),
        _ => json(text).map(|value| (!value.is_null()).then_some(value)),
    }
}

/// Rules about markers together, upstream's: `listMapKey` only on map lists. Bounds out of
/// order (`minimum=5 maximum=1`) are upstream's and kube-apiserver's to accept: no value fits.
fn check_marker_combination(schema: &Schema) -> Result<(), SimpleSchemaErrorKind> {
    let conflict = |message: String| Err(SimpleSchemaErrorKind::ConflictingMarkers(message));
    let is_map_list = schema.x_kubernetes_list_type.as_deref() == Some("map");
    if !schema.x_kubernetes_list_map_keys.is_empty() && !is_map_list {
        return conflict("listMapKey requires listType=map".to_string());
    }
    if is_map_list && schema.x_kubernetes_list_map_keys.is_empty() {
        return conflict("listType=map requires at least one listMapKey".to_string());
    }
    check_list_items(schema)
}

/// What kube-apiserver requires of a list's items for its `x-kubernetes-list-type`: a set
/// holds no objects (unless atomic), a map list holds objects with each key as a property.
/// Upstream writes such lists and the API server refuses the CRD; here the field is the error.
fn check_list_items(schema: &Schema) -> Result<(), SimpleSchemaErrorKind> {
    let Some(items) = &schema.items else {
        return Ok(());
    };
    let conflict = |message: String| Err(SimpleSchemaErrorKind::ConflictingMarkers(message));
    let item_type = items.type_.as_deref().unwrap_or("");
    match schema.x_kubernetes_list_type.as_deref() {
        Some("set")
            if item_type == "object"
                && items.x_kubernetes_map_type.as_deref() != Some("atomic") =>
        {
            conflict("a set (uniqueItems or listType=set) cannot hold objects".to_string())
        }
        Some("map") if item_type != "object" => conflict(format!(
            "listType=map needs object items, not {}",
            type_name(items)
        )),
        Some("map") => match schema
            .x_kubernetes_list_map_keys
            .iter()
            .find(|key| !items.properties.contains_key(*key))
        {
            Some(key) => conflict(format!(
                "listMapKey={key} is not a property of the list's items"
            )),
            None => Ok(()),
        },
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests;
