//! What changes between two versions of a generated CRD, and which changes would break
//! instances that already exist: the check the RGD controller runs before it updates a CRD
//! (refused unless the RGD carries `kro.run/allow-breaking-changes: "true"`).
//!
//! A change is breaking when an object valid under the old schema may be invalid (or read
//! differently) under the new one: a property or an array's item schema removed, a type
//! changed, an existing property newly required, a required property added without a
//! default or losing its default, an enum value removed, a pattern added or changed, a
//! bound (`minimum`, `maximum`, `minLength`, `maxLength`, `minItems`, `maxItems`) added or
//! tightened, the version renamed or no longer served, the status subresource removed.
//! Everything else (properties added as optional or with a default, descriptions and
//! defaults, requirements dropped, enums widened, patterns removed, bounds relaxed, printer
//! columns) is recorded as a non-breaking change, so the caller knows the CRD needs an update.
//! The kinds and their names follow upstream kro's report (`PROPERTY_REMOVED`, …).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde_json::Value as Json;

/// How deep the schemas are compared (the CRD's own validation bounds nesting far below).
const MAX_DEPTH: usize = 64;
/// How many breaking changes a summary names before it counts the rest.
const SUMMARY_LIMIT: usize = 3;

/// The kind of one change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ChangeKind {
    /// A property (or item schema) was removed.
    PropertyRemoved,
    /// A property (or item schema) was added.
    PropertyAdded,
    /// The type changed (or, at the version, the name or `served`).
    TypeChanged,
    /// An existing property became required.
    RequiredAdded,
    /// A property is no longer required.
    RequiredRemoved,
    /// A required property lost its default.
    RequiredDefaultRemoved,
    /// An enum value was removed.
    EnumRestricted,
    /// An enum value was added.
    EnumExpanded,
    /// A pattern was added where there was none.
    PatternAdded,
    /// A pattern was changed.
    PatternChanged,
    /// A pattern was removed.
    PatternRemoved,
    /// The description changed.
    DescriptionChanged,
    /// The default changed.
    DefaultChanged,
    /// The additional printer columns changed.
    PrinterColumnsChanged,
    /// The CEL rules (`x-kubernetes-validations`) changed: `validation=` and `immutable=true`
    /// markers. Not breaking: kube-apiserver ratchets rules, so an object whose field does not
    /// change is not checked again.
    ValidationRulesChanged,
    /// Another keyword of the schema (`format`, `nullable`, `x-kubernetes-*`, …) or of the
    /// version (`subresources`, `selectableFields`) changed: the CRD needs an update, and the
    /// change is not judged breaking.
    KeywordChanged,
    /// A bound was added.
    BoundAdded(Bound),
    /// A bound was removed.
    BoundRemoved(Bound),
    /// A bound now admits fewer values.
    BoundTightened(Bound),
    /// A bound now admits more values.
    BoundRelaxed(Bound),
}

/// A numeric, length or size bound of a schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Bound {
    /// `minimum`.
    Minimum,
    /// `maximum`.
    Maximum,
    /// `minLength`.
    MinLength,
    /// `maxLength`.
    MaxLength,
    /// `minItems`.
    MinItems,
    /// `maxItems`.
    MaxItems,
}

impl Bound {
    const ALL: [Bound; 6] = [
        Bound::Minimum,
        Bound::Maximum,
        Bound::MinLength,
        Bound::MaxLength,
        Bound::MinItems,
        Bound::MaxItems,
    ];

    /// The schema keyword.
    pub fn keyword(self) -> &'static str {
        match self {
            Bound::Minimum => "minimum",
            Bound::Maximum => "maximum",
            Bound::MinLength => "minLength",
            Bound::MaxLength => "maxLength",
            Bound::MinItems => "minItems",
            Bound::MaxItems => "maxItems",
        }
    }

    /// Whether the bound is a lower one (raising it tightens).
    fn is_lower(self) -> bool {
        matches!(self, Bound::Minimum | Bound::MinLength | Bound::MinItems)
    }

    /// The word upstream's change names use (`MIN_LENGTH`).
    fn upstream(self) -> &'static str {
        match self {
            Bound::Minimum => "MINIMUM",
            Bound::Maximum => "MAXIMUM",
            Bound::MinLength => "MIN_LENGTH",
            Bound::MaxLength => "MAX_LENGTH",
            Bound::MinItems => "MIN_ITEMS",
            Bound::MaxItems => "MAX_ITEMS",
        }
    }

    /// Upstream's capitalised name (`MinLength`).
    fn title(self) -> &'static str {
        match self {
            Bound::Minimum => "Minimum",
            Bound::Maximum => "Maximum",
            Bound::MinLength => "MinLength",
            Bound::MaxLength => "MaxLength",
            Bound::MinItems => "MinItems",
            Bound::MaxItems => "MaxItems",
        }
    }
}

impl ChangeKind {
    /// Whether changes of this kind break objects valid before (a property added breaks only
    /// when it is required without a default: see [`SchemaChange::breaking`]).
    pub fn is_breaking(self) -> bool {
        matches!(
            self,
            ChangeKind::PropertyRemoved
                | ChangeKind::TypeChanged
                | ChangeKind::RequiredAdded
                | ChangeKind::RequiredDefaultRemoved
                | ChangeKind::EnumRestricted
                | ChangeKind::PatternAdded
                | ChangeKind::PatternChanged
                | ChangeKind::BoundAdded(_)
                | ChangeKind::BoundTightened(_)
        )
    }

    /// Upstream kro's name of the change (`PROPERTY_REMOVED`, `MAX_LENGTH_DECREASED`).
    pub fn name(self) -> String {
        let fixed = match self {
            ChangeKind::PropertyRemoved => "PROPERTY_REMOVED",
            ChangeKind::PropertyAdded => "PROPERTY_ADDED",
            ChangeKind::TypeChanged => "TYPE_CHANGED",
            ChangeKind::RequiredAdded => "REQUIRED_ADDED",
            ChangeKind::RequiredRemoved => "REQUIRED_REMOVED",
            ChangeKind::RequiredDefaultRemoved => "REQUIRED_DEFAULT_REMOVED",
            ChangeKind::EnumRestricted => "ENUM_RESTRICTED",
            ChangeKind::EnumExpanded => "ENUM_EXPANDED",
            ChangeKind::PatternAdded => "PATTERN_ADDED",
            ChangeKind::PatternChanged => "PATTERN_CHANGED",
            ChangeKind::PatternRemoved => "PATTERN_REMOVED",
            ChangeKind::DescriptionChanged => "DESCRIPTION_CHANGED",
            ChangeKind::DefaultChanged => "DEFAULT_CHANGED",
            ChangeKind::PrinterColumnsChanged => "ADDITIONAL_PRINTER_COLUMNS_CHANGED",
            ChangeKind::ValidationRulesChanged => "VALIDATION_RULES_CHANGED",
            ChangeKind::KeywordChanged => "KEYWORD_CHANGED",
            ChangeKind::BoundAdded(bound) => return format!("{}_ADDED", bound.upstream()),
            ChangeKind::BoundRemoved(bound) => return format!("{}_REMOVED", bound.upstream()),
            ChangeKind::BoundTightened(bound) | ChangeKind::BoundRelaxed(bound) => {
                let raised = bound.is_lower() == matches!(self, ChangeKind::BoundTightened(_));
                let direction = if raised { "INCREASED" } else { "DECREASED" };
                return format!("{}_{direction}", bound.upstream());
            }
        };
        fixed.to_owned()
    }
}

/// One change, at a path in the schema (`.properties.spec.properties.replicas.maximum`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaChange {
    /// Where, in upstream's path notation.
    pub path: String,
    /// What.
    pub kind: ChangeKind,
    /// The value before, when there is one to show.
    pub old: String,
    /// The value after, when there is one to show.
    pub new: String,
    /// Whether objects valid under the old schema may be invalid under the new one.
    pub breaking: bool,
}

impl fmt::Display for SchemaChange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let property = self.path.rsplit('.').next().unwrap_or(&self.path);
        let (old, new) = (&self.old, &self.new);
        match self.kind {
            ChangeKind::PropertyRemoved => write!(f, "Property {property} was removed"),
            ChangeKind::PropertyAdded if new == "required=true" => {
                write!(f, "Required property {property} was added")
            }
            ChangeKind::PropertyAdded => write!(f, "Optional property {property} was added"),
            ChangeKind::TypeChanged => write!(f, "Type changed from {old} to {new}"),
            ChangeKind::RequiredAdded => write!(f, "Field {new} is newly required"),
            ChangeKind::RequiredRemoved => write!(f, "Field {old} is no longer required"),
            ChangeKind::RequiredDefaultRemoved => {
                write!(f, "Default value removed from required field {old}")
            }
            ChangeKind::EnumRestricted => write!(f, "Enum value {old} was removed"),
            ChangeKind::EnumExpanded => write!(f, "Enum value {new} was added"),
            ChangeKind::PatternAdded => write!(f, "Validation pattern {new} was added"),
            ChangeKind::PatternChanged => {
                write!(f, "Validation pattern changed from {old} to {new}")
            }
            ChangeKind::PatternRemoved => write!(f, "Validation pattern {old} was removed"),
            ChangeKind::DescriptionChanged => {
                write!(f, "Description field was changed from {old} to {new}")
            }
            ChangeKind::DefaultChanged => {
                write!(f, "Default value was changed from {old} to {new}")
            }
            ChangeKind::PrinterColumnsChanged => {
                f.write_str("Additional printer columns were changed")
            }
            ChangeKind::ValidationRulesChanged => {
                write!(f, "Validation rules were changed from {old} to {new}")
            }
            ChangeKind::KeywordChanged => {
                write!(f, "{property} was changed from {old} to {new}")
            }
            ChangeKind::BoundAdded(bound) => {
                write!(f, "{} constraint {new} was added", bound.title())
            }
            ChangeKind::BoundRemoved(bound) => {
                write!(f, "{} constraint {old} was removed", bound.title())
            }
            ChangeKind::BoundTightened(bound) | ChangeKind::BoundRelaxed(bound) => {
                let raised = bound.is_lower() == matches!(self.kind, ChangeKind::BoundTightened(_));
                let direction = if raised { "increased" } else { "decreased" };
                write!(f, "{} was {direction} from {old} to {new}", bound.title())
            }
        }
    }
}

/// Every change found between two schemas (or CRD versions).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SchemaChanges {
    /// The changes, breaking and not, in a stable order (schema order, names sorted).
    pub changes: Vec<SchemaChange>,
}

impl SchemaChanges {
    /// The breaking changes.
    pub fn breaking(&self) -> impl Iterator<Item = &SchemaChange> {
        self.changes.iter().filter(|change| change.breaking)
    }

    /// Whether any change breaks existing objects.
    pub fn is_breaking(&self) -> bool {
        self.breaking().next().is_some()
    }

    /// Whether anything changed at all (the CRD needs an update).
    pub fn is_empty(&self) -> bool {
        self.changes.is_empty()
    }

    /// The breaking changes for a condition message: the first three, then how many more.
    pub fn summary(&self) -> String {
        let breaking: Vec<&SchemaChange> = self.breaking().collect();
        if breaking.is_empty() {
            return "no breaking changes".to_owned();
        }
        let mut parts: Vec<String> = breaking
            .iter()
            .take(SUMMARY_LIMIT)
            .map(ToString::to_string)
            .collect();
        if breaking.len() > SUMMARY_LIMIT {
            parts.push(format!(
                "and {} more changes",
                breaking.len() - SUMMARY_LIMIT
            ));
        }
        parts.join("; ")
    }

    fn add(
        &mut self,
        path: String,
        kind: ChangeKind,
        old: impl Into<String>,
        new: impl Into<String>,
    ) {
        let new = new.into();
        let breaking =
            kind.is_breaking() || (kind == ChangeKind::PropertyAdded && new == "required=true");
        self.changes.push(SchemaChange {
            path,
            kind,
            old: old.into(),
            new,
            breaking,
        });
    }
}

/// Why two CRDs could not be compared.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CrdComparisonError {
    /// kro's CRDs have exactly one version.
    #[error("expected exactly one version in each CRD, got {old} old and {new} new versions")]
    VersionCount {
        /// Versions of the old CRD.
        old: usize,
        /// Versions of the new CRD.
        new: usize,
    },
    /// A version without `schema.openAPIV3Schema`.
    #[error("{which} version {version} has no schema")]
    NoSchema {
        /// `old` or `new`.
        which: &'static str,
        /// The version's name.
        version: String,
    },
}

/// Compares the single versions of two CRDs (JSON as served): the schema, the version's name,
/// `served`, the status subresource and the printer columns.
///
/// # Errors
/// When either CRD does not have exactly one version with a schema.
pub fn compare_crds(old: &Json, new: &Json) -> Result<SchemaChanges, CrdComparisonError> {
    let versions = |crd: &Json| {
        crd.pointer("/spec/versions")
            .and_then(Json::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let (old_versions, new_versions) = (versions(old), versions(new));
    let ([old], [new]) = (old_versions.as_slice(), new_versions.as_slice()) else {
        return Err(CrdComparisonError::VersionCount {
            old: old_versions.len(),
            new: new_versions.len(),
        });
    };
    let name = |version: &Json| version["name"].as_str().unwrap_or_default().to_owned();
    let mut changes = SchemaChanges::default();
    if name(old) != name(new) {
        changes.add(
            "version".to_owned(),
            ChangeKind::TypeChanged,
            name(old),
            name(new),
        );
        return Ok(changes);
    }
    let schema = |version: &Json, which: &'static str| {
        version
            .pointer("/schema/openAPIV3Schema")
            .filter(|schema| schema.is_object())
            .cloned()
            .ok_or_else(|| CrdComparisonError::NoSchema {
                which,
                version: name(version),
            })
    };
    compare_at(
        &mut changes,
        "",
        &schema(old, "old")?,
        &schema(new, "new")?,
        0,
    );
    let served = |version: &Json| version["served"].as_bool().unwrap_or(false);
    if served(old) && !served(new) {
        changes.add(
            "version.served".to_owned(),
            ChangeKind::TypeChanged,
            "true",
            "false",
        );
    }
    let status = |version: &Json| {
        version
            .pointer("/subresources/status")
            .is_some_and(|s| !s.is_null())
    };
    match (status(old), status(new)) {
        (true, false) => changes.add(
            "version.subresources.status".to_owned(),
            ChangeKind::PropertyRemoved,
            "",
            "",
        ),
        (false, true) => changes.add(
            "version.subresources.status".to_owned(),
            ChangeKind::PropertyAdded,
            "",
            "",
        ),
        _ => {}
    }
    let columns = |version: &Json| {
        let mut columns = version
            .get("additionalPrinterColumns")
            .filter(|columns| !columns.is_null())
            .cloned()
            .unwrap_or(Json::Array(Vec::new()));
        // kube-apiserver stores zero values of the column fields it omits when empty
        // (`priority: 0`, `description: ""`, `format: ""`) as absent: they are the same column.
        if let Json::Array(columns) = &mut columns {
            for column in columns.iter_mut().filter_map(Json::as_object_mut) {
                column.retain(|key, value| {
                    !matches!(
                        (key.as_str(), &*value),
                        ("priority", Json::Number(_)) if value.as_i64() == Some(0)
                    ) && !matches!(
                        (key.as_str(), &*value),
                        ("description" | "format", Json::String(text)) if text.is_empty()
                    )
                });
            }
        }
        columns
    };
    if columns(old) != columns(new) {
        changes.add(
            "version.additionalPrinterColumns".to_owned(),
            ChangeKind::PrinterColumnsChanged,
            "",
            "",
        );
    }
    // The rest of the subresources (`scale`) and the selectable fields, as they are; a removed
    // status subresource was judged above.
    let without_status = |version: &Json| {
        let mut subresources = version
            .get("subresources")
            .filter(|subresources| !subresources.is_null())
            .cloned()
            .unwrap_or_default();
        if let Json::Object(map) = &mut subresources {
            map.remove("status");
        }
        subresources
            .as_object()
            .filter(|map| !map.is_empty())
            .cloned()
    };
    let (old_subresources, new_subresources) = (without_status(old), without_status(new));
    if old_subresources != new_subresources {
        let show = |map: Option<serde_json::Map<String, Json>>| {
            map.map(|map| Json::Object(map).to_string())
                .unwrap_or_default()
        };
        changes.add(
            "version.subresources".to_owned(),
            ChangeKind::KeywordChanged,
            show(old_subresources),
            show(new_subresources),
        );
    }
    let selectable = |version: &Json| {
        version
            .get("selectableFields")
            .filter(|fields| !fields.is_null())
            .cloned()
    };
    if selectable(old) != selectable(new) {
        changes.add(
            "version.selectableFields".to_owned(),
            ChangeKind::KeywordChanged,
            shown(selectable(old).as_ref()),
            shown(selectable(new).as_ref()),
        );
    }
    Ok(changes)
}

/// Compares two OpenAPI v3 schemas (a CRD version's `openAPIV3Schema`).
pub fn compare_schemas(old: &Json, new: &Json) -> SchemaChanges {
    let mut changes = SchemaChanges::default();
    compare_at(&mut changes, "", old, new, 0);
    changes
}

fn text(schema: &Json, key: &str) -> String {
    schema
        .get(key)
        .and_then(Json::as_str)
        .unwrap_or_default()
        .to_owned()
}

fn default_of(schema: &Json) -> Option<&Json> {
    schema.get("default").filter(|value| !value.is_null())
}

fn compare_at(changes: &mut SchemaChanges, path: &str, old: &Json, new: &Json, depth: usize) {
    if depth > MAX_DEPTH {
        // Too deep to compare field by field: any difference counts as breaking.
        if old != new {
            let why = format!("a schema nested deeper than {MAX_DEPTH} levels");
            changes.add(path.to_owned(), ChangeKind::TypeChanged, why.clone(), why);
        }
        return;
    }
    let (old_description, new_description) = (text(old, "description"), text(new, "description"));
    if old_description != new_description {
        changes.add(
            format!("{path}.description"),
            ChangeKind::DescriptionChanged,
            old_description,
            new_description,
        );
    }
    let (old_default, new_default) = (default_of(old), default_of(new));
    if old_default != new_default {
        let show = |value: Option<&Json>| value.map(Json::to_string).unwrap_or_default();
        changes.add(
            format!("{path}.default"),
            ChangeKind::DefaultChanged,
            show(old_default),
            show(new_default),
        );
    }
    let (old_type, new_type) = (text(old, "type"), text(new, "type"));
    if old_type != new_type {
        changes.add(
            format!("{path}.type"),
            ChangeKind::TypeChanged,
            old_type,
            new_type,
        );
        return;
    }
    let (old_pattern, new_pattern) = (text(old, "pattern"), text(new, "pattern"));
    if old_pattern != new_pattern {
        let kind = match (old_pattern.is_empty(), new_pattern.is_empty()) {
            (true, _) => ChangeKind::PatternAdded,
            (_, true) => ChangeKind::PatternRemoved,
            _ => ChangeKind::PatternChanged,
        };
        changes.add(format!("{path}.pattern"), kind, old_pattern, new_pattern);
    }
    for bound in Bound::ALL {
        compare_bound(
            changes,
            path,
            bound,
            old.get(bound.keyword()),
            new.get(bound.keyword()),
        );
    }
    compare_properties(changes, path, old, new, depth);
    compare_required(changes, path, old, new);
    compare_enums(changes, path, old, new);
    compare_rules(changes, path, old, new);
    compare_other_keywords(changes, path, old, new);
    if old_type == "array" {
        let items = |schema: &Json| {
            schema
                .get("items")
                .filter(|items| items.is_object())
                .cloned()
        };
        match (items(old), items(new)) {
            (Some(old), Some(new)) => {
                compare_at(changes, &format!("{path}.items"), &old, &new, depth + 1);
            }
            (Some(_), None) => {
                changes.add(format!("{path}.items"), ChangeKind::PropertyRemoved, "", "")
            }
            (None, Some(_)) => {
                changes.add(format!("{path}.items"), ChangeKind::PropertyAdded, "", "")
            }
            (None, None) => {}
        }
    }
}

/// The keywords [`compare_at`] judges one by one; [`compare_other_keywords`] compares the rest
/// as they are.
const JUDGED_KEYWORDS: [&str; 15] = [
    "description",
    "default",
    "type",
    "pattern",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "properties",
    "required",
    "enum",
    "items",
    RULES,
];

/// Where a schema keeps its CEL rules.
const RULES: &str = "x-kubernetes-validations";

/// Shows a keyword's value in a change: its JSON, or nothing when absent.
fn shown(value: Option<&Json>) -> String {
    value.map(Json::to_string).unwrap_or_default()
}

fn compare_rules(changes: &mut SchemaChanges, path: &str, old: &Json, new: &Json) {
    let rules = |schema: &Json| schema.get(RULES).filter(|rules| !rules.is_null()).cloned();
    let (old_rules, new_rules) = (rules(old), rules(new));
    if old_rules != new_rules {
        changes.add(
            format!("{path}.{RULES}"),
            ChangeKind::ValidationRulesChanged,
            shown(old_rules.as_ref()),
            shown(new_rules.as_ref()),
        );
    }
}

fn compare_other_keywords(changes: &mut SchemaChanges, path: &str, old: &Json, new: &Json) {
    let keywords: BTreeSet<&str> = [old, new]
        .into_iter()
        .filter_map(Json::as_object)
        .flat_map(|schema| schema.keys().map(String::as_str))
        .filter(|keyword| !JUDGED_KEYWORDS.contains(keyword))
        .collect();
    for keyword in keywords {
        let (old_value, new_value) = (old.get(keyword), new.get(keyword));
        if old_value != new_value {
            changes.add(
                format!("{path}.{keyword}"),
                ChangeKind::KeywordChanged,
                shown(old_value),
                shown(new_value),
            );
        }
    }
}

fn compare_bound(
    changes: &mut SchemaChanges,
    path: &str,
    bound: Bound,
    old: Option<&Json>,
    new: Option<&Json>,
) {
    let number = |value: Option<&Json>| value.and_then(Json::as_f64);
    let show = |value: f64| {
        if value.fract() == 0.0 && value.abs() < 1e15 {
            format!("{value:.0}")
        } else {
            value.to_string()
        }
    };
    let path = format!("{path}.{}", bound.keyword());
    match (number(old), number(new)) {
        (None, None) => {}
        (None, Some(new)) => changes.add(path, ChangeKind::BoundAdded(bound), "", show(new)),
        (Some(old), None) => changes.add(path, ChangeKind::BoundRemoved(bound), show(old), ""),
        (Some(old), Some(new)) if old == new => {}
        (Some(old), Some(new)) => {
            let tightened = if bound.is_lower() {
                new > old
            } else {
                new < old
            };
            let kind = if tightened {
                ChangeKind::BoundTightened(bound)
            } else {
                ChangeKind::BoundRelaxed(bound)
            };
            changes.add(path, kind, show(old), show(new));
        }
    }
}

fn properties(schema: &Json) -> BTreeMap<&str, &Json> {
    schema
        .get("properties")
        .and_then(Json::as_object)
        .map(|map| {
            map.iter()
                .map(|(name, value)| (name.as_str(), value))
                .collect()
        })
        .unwrap_or_default()
}

fn required(schema: &Json) -> BTreeSet<&str> {
    schema
        .get("required")
        .and_then(Json::as_array)
        .map(|names| names.iter().filter_map(Json::as_str).collect())
        .unwrap_or_default()
}

fn compare_properties(
    changes: &mut SchemaChanges,
    path: &str,
    old: &Json,
    new: &Json,
    depth: usize,
) {
    let (old_properties, new_properties) = (properties(old), properties(new));
    for (name, old_property) in &old_properties {
        let property_path = format!("{path}.properties.{name}");
        match new_properties.get(name) {
            Some(new_property) => {
                compare_at(
                    changes,
                    &property_path,
                    old_property,
                    new_property,
                    depth + 1,
                );
            }
            None => changes.add(property_path, ChangeKind::PropertyRemoved, "", ""),
        }
    }
    let new_required = required(new);
    for (name, new_property) in &new_properties {
        if old_properties.contains_key(name) {
            continue;
        }
        let property_path = format!("{path}.properties.{name}");
        // A new required property without a default makes existing objects invalid.
        if new_required.contains(name) && default_of(new_property).is_none() {
            changes.add(
                property_path,
                ChangeKind::PropertyAdded,
                "required=false",
                "required=true",
            );
        } else {
            changes.add(property_path, ChangeKind::PropertyAdded, "", "");
        }
    }
}

fn compare_required(changes: &mut SchemaChanges, path: &str, old: &Json, new: &Json) {
    let (old_required, new_required) = (required(old), required(new));
    let (old_properties, new_properties) = (properties(old), properties(new));
    let at = format!("{path}.required");
    for name in new_required.difference(&old_required) {
        // Newly added properties were judged with their addition.
        if old_properties.contains_key(name) {
            changes.add(at.clone(), ChangeKind::RequiredAdded, "", *name);
        }
    }
    for name in old_required.difference(&new_required) {
        changes.add(at.clone(), ChangeKind::RequiredRemoved, *name, "");
    }
    for name in old_required.intersection(&new_required) {
        let had_default = old_properties
            .get(name)
            .is_some_and(|p| default_of(p).is_some());
        let has_default = new_properties
            .get(name)
            .is_some_and(|p| default_of(p).is_some());
        if old_properties.contains_key(name) && had_default && !has_default {
            changes.add(at.clone(), ChangeKind::RequiredDefaultRemoved, *name, "");
        }
    }
}

fn compare_enums(changes: &mut SchemaChanges, path: &str, old: &Json, new: &Json) {
    let values = |schema: &Json| -> BTreeSet<String> {
        schema
            .get("enum")
            .and_then(Json::as_array)
            .map(|values| values.iter().map(Json::to_string).collect())
            .unwrap_or_default()
    };
    let (old_values, new_values) = (values(old), values(new));
    if old_values.is_empty() || new_values.is_empty() {
        return;
    }
    let at = format!("{path}.enum");
    for value in old_values.difference(&new_values) {
        changes.add(at.clone(), ChangeKind::EnumRestricted, value.clone(), "");
    }
    for value in new_values.difference(&old_values) {
        changes.add(at.clone(), ChangeKind::EnumExpanded, "", value.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(properties: Json, required: &[&str]) -> Json {
        json!({"type": "object", "properties": properties, "required": required})
    }

    fn kinds(changes: &SchemaChanges) -> Vec<(String, String, bool)> {
        changes
            .changes
            .iter()
            .map(|change| (change.path.clone(), change.kind.name(), change.breaking))
            .collect()
    }

    #[test]
    fn identical_schemas_have_no_changes() {
        let schema = object(
            json!({"name": {"type": "string", "maxLength": 10}}),
            &["name"],
        );
        assert!(compare_schemas(&schema, &schema).is_empty());
    }

    #[test]
    fn removals_type_changes_and_new_requirements_break() {
        let old = object(
            json!({
                "name": {"type": "string"},
                "port": {"type": "integer"},
                "tier": {"type": "string"},
            }),
            &[],
        );
        let new = object(
            json!({
                "port": {"type": "string"},
                "tier": {"type": "string"},
                "zone": {"type": "string"},
                "size": {"type": "integer", "default": 1},
            }),
            &["tier", "zone", "size"],
        );
        let changes = compare_schemas(&old, &new);
        assert_eq!(
            kinds(&changes),
            [
                (
                    ".properties.name".to_owned(),
                    "PROPERTY_REMOVED".to_owned(),
                    true
                ),
                (
                    ".properties.port.type".to_owned(),
                    "TYPE_CHANGED".to_owned(),
                    true
                ),
                (
                    ".properties.size".to_owned(),
                    "PROPERTY_ADDED".to_owned(),
                    false
                ),
                (
                    ".properties.zone".to_owned(),
                    "PROPERTY_ADDED".to_owned(),
                    true
                ),
                (".required".to_owned(), "REQUIRED_ADDED".to_owned(), true),
            ]
        );
        assert_eq!(
            changes.summary(),
            "Property name was removed; Type changed from integer to string; Required property zone was added; and 1 more changes"
        );
    }

    #[test]
    fn bounds_enums_and_patterns_break_when_they_tighten() {
        let old = object(
            json!({
                "replicas": {"type": "integer", "minimum": 1, "maximum": 10},
                "size": {"type": "string", "enum": ["s", "m"], "pattern": "^[a-z]+$"},
                "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 5},
            }),
            &[],
        );
        let new = object(
            json!({
                "replicas": {"type": "integer", "minimum": 2, "maximum": 20},
                "size": {"type": "string", "enum": ["m", "l"]},
                "tags": {"type": "array", "items": {"type": "string", "minLength": 1}, "maxItems": 3},
            }),
            &[],
        );
        let changes = compare_schemas(&old, &new);
        assert_eq!(
            kinds(&changes),
            [
                (
                    ".properties.replicas.minimum".to_owned(),
                    "MINIMUM_INCREASED".to_owned(),
                    true
                ),
                (
                    ".properties.replicas.maximum".to_owned(),
                    "MAXIMUM_INCREASED".to_owned(),
                    false
                ),
                (
                    ".properties.size.pattern".to_owned(),
                    "PATTERN_REMOVED".to_owned(),
                    false
                ),
                (
                    ".properties.size.enum".to_owned(),
                    "ENUM_RESTRICTED".to_owned(),
                    true
                ),
                (
                    ".properties.size.enum".to_owned(),
                    "ENUM_EXPANDED".to_owned(),
                    false
                ),
                (
                    ".properties.tags.maxItems".to_owned(),
                    "MAX_ITEMS_DECREASED".to_owned(),
                    true
                ),
                (
                    ".properties.tags.items.minLength".to_owned(),
                    "MIN_LENGTH_ADDED".to_owned(),
                    true
                ),
            ]
        );
        let described: Vec<String> = changes.changes.iter().map(ToString::to_string).collect();
        assert_eq!(described[0], "Minimum was increased from 1 to 2");
        assert_eq!(described[3], "Enum value \"s\" was removed");
        assert_eq!(described[5], "MaxItems was decreased from 5 to 3");
    }

    #[test]
    fn relaxations_descriptions_and_defaults_do_not_break() {
        let old = object(
            json!({"name": {"type": "string", "description": "a", "default": "x", "minLength": 3}}),
            &["name"],
        );
        let new = object(
            json!({"name": {"type": "string", "description": "b", "default": "y", "minLength": 1}}),
            &[],
        );
        let changes = compare_schemas(&old, &new);
        assert!(!changes.is_empty());
        assert!(!changes.is_breaking(), "{:?}", kinds(&changes));
        assert_eq!(changes.summary(), "no breaking changes");
    }

    #[test]
    fn a_required_property_losing_its_default_breaks() {
        let old = object(
            json!({"mode": {"type": "string", "default": "a"}}),
            &["mode"],
        );
        let new = object(json!({"mode": {"type": "string"}}), &["mode"]);
        let changes = compare_schemas(&old, &new);
        assert!(changes.is_breaking());
        assert!(changes.breaking().any(
            |change| change.kind == ChangeKind::RequiredDefaultRemoved && change.old == "mode"
        ));
    }

    fn crd(version: &str, served: bool, status: bool, schema: Json) -> Json {
        let mut version = json!({
            "name": version,
            "served": served,
            "storage": true,
            "schema": {"openAPIV3Schema": schema},
        });
        if status {
            version["subresources"] = json!({"status": {}});
        }
        json!({"spec": {"versions": [version]}})
    }

    #[test]
    fn crd_versions_compare_name_serving_status_and_columns() {
        let schema = object(json!({"spec": {"type": "object"}}), &[]);
        let before = crd("v1alpha1", true, true, schema.clone());
        assert!(
            compare_crds(&before, &before)
                .expect("comparable")
                .is_empty()
        );
        let renamed =
            compare_crds(&before, &crd("v1", true, true, schema.clone())).expect("comparable");
        assert_eq!(renamed.summary(), "Type changed from v1alpha1 to v1");
        let unserved = compare_crds(&before, &crd("v1alpha1", false, false, schema.clone()))
            .expect("comparable");
        assert_eq!(
            kinds(&unserved),
            [
                ("version.served".to_owned(), "TYPE_CHANGED".to_owned(), true),
                (
                    "version.subresources.status".to_owned(),
                    "PROPERTY_REMOVED".to_owned(),
                    true
                ),
            ]
        );
        let mut columns = before.clone();
        columns["spec"]["versions"][0]["additionalPrinterColumns"] =
            json!([{"name": "State", "type": "string", "jsonPath": ".status.state"}]);
        let changed = compare_crds(&before, &columns).expect("comparable");
        assert_eq!(kinds(&changed)[0].1, "ADDITIONAL_PRINTER_COLUMNS_CHANGED");
        assert!(!changed.is_breaking());
        // As kube-apiserver stores it: the zero priority and empty description left out.
        let mut stored = columns.clone();
        columns["spec"]["versions"][0]["additionalPrinterColumns"][0]["priority"] = json!(0);
        columns["spec"]["versions"][0]["additionalPrinterColumns"][0]["description"] = json!("");
        assert!(
            compare_crds(&stored, &columns)
                .expect("comparable")
                .is_empty()
        );
        stored["spec"]["versions"][0]["additionalPrinterColumns"][0]["priority"] = json!(1);
        assert!(
            !compare_crds(&stored, &columns)
                .expect("comparable")
                .is_empty()
        );
        let two = json!({"spec": {"versions": [{"name": "a"}, {"name": "b"}]}});
        assert_eq!(
            compare_crds(&two, &before)
                .expect_err("two versions")
                .to_string(),
            "expected exactly one version in each CRD, got 2 old and 1 new versions"
        );
    }

    #[test]
    fn validation_rules_and_other_keywords_are_changes_the_crd_needs() {
        let immutable = json!([{"rule": "self == oldSelf", "message": "field is immutable"}]);
        let with_rule = object(
            json!({"name": {"type": "string", "x-kubernetes-validations": immutable}}),
            &[],
        );
        let without_rule = object(json!({"name": {"type": "string"}}), &[]);
        // `immutable=true` removed: the CRD must lose the rule, and nothing breaks.
        let removed = compare_schemas(&with_rule, &without_rule);
        assert_eq!(
            kinds(&removed),
            [(
                ".properties.name.x-kubernetes-validations".to_owned(),
                "VALIDATION_RULES_CHANGED".to_owned(),
                false
            )]
        );
        assert_eq!(
            removed.changes[0].to_string(),
            "Validation rules were changed from \
             [{\"message\":\"field is immutable\",\"rule\":\"self == oldSelf\"}] to "
        );
        // Only the rule of a `validation=` marker changed.
        let other_rule = object(
            json!({"name": {"type": "string", "x-kubernetes-validations":
                [{"rule": "self != oldSelf", "message": "validation failed"}]}}),
            &[],
        );
        assert_eq!(
            kinds(&compare_schemas(&with_rule, &other_rule))[0].1,
            "VALIDATION_RULES_CHANGED"
        );
        // Any other keyword, as it is.
        let formatted = object(
            json!({"name": {"type": "string", "format": "date-time"}}),
            &[],
        );
        assert_eq!(
            kinds(&compare_schemas(&without_rule, &formatted)),
            [(
                ".properties.name.format".to_owned(),
                "KEYWORD_CHANGED".to_owned(),
                false
            )]
        );
        assert!(compare_schemas(&formatted, &formatted).is_empty());
    }

    #[test]
    fn the_scale_subresource_and_selectable_fields_are_compared() {
        let schema = object(json!({"spec": {"type": "object"}}), &[]);
        let before = crd("v1alpha1", true, true, schema.clone());
        let mut scaled = before.clone();
        scaled["spec"]["versions"][0]["subresources"]["scale"] =
            json!({"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"});
        let changes = compare_crds(&before, &scaled).expect("comparable");
        assert_eq!(kinds(&changes)[0].0, "version.subresources");
        assert!(!changes.is_breaking());
        let mut selectable = before.clone();
        selectable["spec"]["versions"][0]["selectableFields"] =
            json!([{"jsonPath": ".spec.color"}]);
        let changes = compare_crds(&before, &selectable).expect("comparable");
        assert_eq!(kinds(&changes)[0].0, "version.selectableFields");
        let added =
            compare_crds(&crd("v1alpha1", true, false, schema), &before).expect("comparable");
        assert_eq!(kinds(&added)[0].0, "version.subresources.status");
        assert!(!added.is_breaking());
    }

    #[test]
    fn deep_schemas_are_bounded() {
        let mut old = json!({"type": "string"});
        let mut new = json!({"type": "integer"});
        for _ in 0..200 {
            old = json!({"type": "object", "properties": {"a": old}});
            new = json!({"type": "object", "properties": {"a": new}});
        }
        // The difference is below the depth compared field by field: it still counts, and
        // nothing overflows.
        let changes = compare_schemas(&old, &new);
        assert!(changes.is_breaking());
        assert_eq!(changes.changes.len(), 1);
    }
}
