//! The instance status: `${...}` projections whose types become the status schema, typed
//! declarations (`integer | scale`), and author-defined conditions.

mod inferred;

use std::collections::HashMap;

use kro_cel::Type;
use kro_schema::{CompiledSchema, Schema};
use serde_json::Value as Json;

use super::collect::Standalone;
use super::{Builder, schema_path};
use crate::error::BuildErrorKind;
use crate::graph::{CompiledExpression, CompiledField, StatusField};
use crate::template::{
    FieldPath, PathSegment, ScaleMarker, Template, parse_template, split_scale_marker,
};

/// One status entry before checking.
pub(crate) enum StatusEntry {
    Expression {
        path: FieldPath,
        template: Template,
        marker: Option<ScaleMarker>,
    },
    Declared {
        path: FieldPath,
        compiled: Box<CompiledSchema>,
    },
}

/// The status section, collected.
#[derive(Default)]
pub(crate) struct StatusPlan {
    pub entries: Vec<StatusEntry>,
    pub conditions: Vec<Standalone>,
}

fn status_path() -> FieldPath {
    schema_path().key("status")
}

impl StatusPlan {
    /// Every expression with where it was written, for dependency discovery.
    pub(crate) fn sources(&self) -> Vec<(FieldPath, String)> {
        let mut sources: Vec<(FieldPath, String)> = self
            .entries
            .iter()
            .filter_map(|entry| match entry {
                StatusEntry::Expression { path, template, .. } => template
                    .cel()
                    .map(|source| (status_path().join(path), source.to_string())),
                StatusEntry::Declared { .. } => None,
            })
            .collect();
        sources.extend(
            self.conditions
                .iter()
                .map(|condition| (condition.path.clone(), condition.source.clone())),
        );
        sources
    }
}

impl Builder<'_> {
    pub(super) fn collect_status(&mut self, schema: &crate::api::SchemaSpec) -> StatusPlan {
        let mut plan = StatusPlan::default();
        let Some(status) = &schema.status else {
            return plan;
        };
        let Some(fields) = status.as_object() else {
            self.error(
                status_path(),
                None,
                BuildErrorKind::InvalidStatusField(describe(status)),
            );
            return plan;
        };
        for (name, value) in fields {
            let path = FieldPath::root().key(name.clone());
            let managed = name == crate::crd::MANAGED_RESOURCES
                && self
                    .config
                    .features
                    .enabled(crate::Feature::InstanceManagedResources);
            match name.as_str() {
                _ if managed => self.error(
                    status_path().join(&path),
                    None,
                    BuildErrorKind::ReservedStatusField(name.clone()),
                ),
                "state" => self.error(
                    status_path().join(&path),
                    None,
                    BuildErrorKind::ReservedStatusField(name.clone()),
                ),
                "conditions" => self.collect_conditions(value, &mut plan),
                _ => self.collect_status_value(value, path, &mut plan),
            }
        }
        plan
    }

    fn collect_conditions(&mut self, value: &Json, plan: &mut StatusPlan) {
        let path = status_path().key("conditions");
        let Some(entries) = value.as_array() else {
            self.error(
                path,
                None,
                BuildErrorKind::InvalidStatusField(describe(value)),
            );
            return;
        };
        for (index, entry) in entries.iter().enumerate() {
            let entry_path = path.index(index);
            match entry.as_str() {
                Some(text) => {
                    if let Some(standalone) =
                        self.standalone(text, &entry_path, None, "status.conditions")
                    {
                        plan.conditions.push(standalone);
                    }
                }
                None => self.error(
                    entry_path,
                    None,
                    BuildErrorKind::InvalidStatusField(describe(entry)),
                ),
            }
        }
    }

    fn collect_status_value(&mut self, value: &Json, path: FieldPath, plan: &mut StatusPlan) {
        let rgd_path = status_path().join(&path);
        match value {
            Json::Object(fields) => {
                for (name, child) in fields {
                    self.collect_status_value(child, path.key(name.clone()), plan);
                }
            }
            // A list of projections is a list in the status (upstream's `a[0]`, `a[1]`); an
            // empty one projects nothing.
            Json::Array(items) => {
                for (index, item) in items.iter().enumerate() {
                    self.collect_status_value(item, path.index(index), plan);
                }
            }
            Json::String(text) if text.contains("${") => match split_scale_marker(text) {
                Ok(Some(marked)) => plan.entries.push(StatusEntry::Expression {
                    path,
                    template: Template::Standalone(marked.expression),
                    marker: Some(marked.marker),
                }),
                Ok(None) => match parse_template(text) {
                    // `${` without its `}`: no expression, which upstream refuses in a status.
                    Ok(Template::Literal) => self.error(
                        rgd_path,
                        None,
                        BuildErrorKind::InvalidStatusField(
                            "text without a complete ${...} expression".to_string(),
                        ),
                    ),
                    Ok(template) => plan.entries.push(StatusEntry::Expression {
                        path,
                        template,
                        marker: None,
                    }),
                    Err(error) => self.error(rgd_path, None, BuildErrorKind::Template(error)),
                },
                Err(error) => self.error(rgd_path, None, BuildErrorKind::Template(error)),
            },
            // A declaration types a field of its own; a list item has none.
            Json::String(_) if in_list(&path) => self.error(
                rgd_path,
                None,
                BuildErrorKind::InvalidStatusField(
                    "a list item without a ${...} expression".to_string(),
                ),
            ),
            Json::String(declaration) => {
                match kro_schema::compile_field(declaration, &format!("status.{path}")) {
                    Ok(compiled) => plan.entries.push(StatusEntry::Declared {
                        path,
                        compiled: Box::new(compiled),
                    }),
                    Err(error) => self.error(rgd_path, None, BuildErrorKind::Schema(error)),
                }
            }
            other => self.error(
                rgd_path,
                None,
                BuildErrorKind::InvalidStatusField(describe(other)),
            ),
        }
    }

    /// Checks the status expressions against every node's type and builds the status schema.
    pub(super) fn check_status(
        &mut self,
        plan: StatusPlan,
        instance_type: &Type,
        node_types: &HashMap<String, Type>,
    ) -> (
        Vec<StatusField>,
        Vec<CompiledExpression>,
        Schema,
        CompiledSchema,
    ) {
        let mut env = self
            .base_env()
            .with_variable("schema", instance_type.clone())
            .with_variable(kro_cel::RUNTIME_VARIABLE, kro_cel::runtime_type());
        self.variables_declared += node_types.len();
        for (id, ty) in node_types {
            env = env.with_variable(id, ty.clone());
        }
        let ids: std::collections::HashSet<&str> = node_types.keys().map(String::as_str).collect();
        let mut schema = Schema::of_type("object");
        let mut scale = CompiledSchema {
            schema: Schema::of_type("object"),
            scale_fields: Vec::new(),
            scale_selector_fields: Vec::new(),
        };
        let mut fields = Vec::new();
        for entry in plan.entries {
            match entry {
                StatusEntry::Declared { path, compiled } => {
                    // Declarations are never list items (refused while collecting).
                    let _ = insert_at(&mut schema, &path, compiled.schema.clone());
                    scale
                        .scale_fields
                        .extend(compiled.scale_fields.iter().map(|_| path.to_string()));
                    scale.scale_selector_fields.extend(
                        compiled
                            .scale_selector_fields
                            .iter()
                            .map(|_| path.to_string()),
                    );
                    fields.push(StatusField::Declared {
                        path,
                        schema: Box::new(compiled.schema),
                    });
                }
                StatusEntry::Expression {
                    path,
                    template,
                    marker,
                } => {
                    let rgd_path = status_path().join(&path);
                    let Some(source) = template.cel().map(str::to_string) else {
                        continue;
                    };
                    let Some(expression) = self.compile(&env, &source, &rgd_path, None, &ids)
                    else {
                        continue;
                    };
                    if matches!(template, Template::Standalone(_))
                        && super::check::is_moving_time(&expression.output_type)
                    {
                        self.error(
                            rgd_path,
                            None,
                            BuildErrorKind::BareTimeValue {
                                expression: expression.source.clone(),
                                found: expression.output_type.clone(),
                            },
                        );
                        continue;
                    }
                    let reads_something = expression
                        .program
                        .variables()
                        .iter()
                        .any(|variable| &**variable == "schema" || ids.contains(&**variable));
                    if !reads_something {
                        self.error(rgd_path, None, BuildErrorKind::ConstantStatusField);
                        continue;
                    }
                    let output = match template {
                        Template::Interpolated(_) => Type::String,
                        _ => expression.output_type.clone(),
                    };
                    match marker {
                        Some(ScaleMarker::Scale)
                            if !matches!(output, Type::Int | Type::Uint | Type::Dyn) =>
                        {
                            self.error(
                                rgd_path.clone(),
                                None,
                                BuildErrorKind::Scaling(format!(
                                    "scale applies to integer fields only, not {output}"
                                )),
                            )
                        }
                        Some(ScaleMarker::ScaleSelector)
                            if !matches!(output, Type::String | Type::Dyn) =>
                        {
                            self.error(
                                rgd_path.clone(),
                                None,
                                BuildErrorKind::Scaling(format!(
                                    "scaleSelector applies to string fields only, not {output}"
                                )),
                            )
                        }
                        Some(ScaleMarker::Scale) => scale.scale_fields.push(path.to_string()),
                        Some(ScaleMarker::ScaleSelector) => {
                            scale.scale_selector_fields.push(path.to_string())
                        }
                        None => {}
                    }
                    let field_schema = if matches!(marker, Some(ScaleMarker::Scale)) {
                        Schema::of_type("integer")
                    } else {
                        inferred::inferred_schema(&self.types, &output)
                    };
                    if let Err(conflict) = insert_at(&mut schema, &path, field_schema) {
                        self.error(rgd_path, None, BuildErrorKind::InvalidStatusField(conflict));
                        continue;
                    }
                    fields.push(StatusField::Expression(CompiledField {
                        path,
                        template,
                        expression,
                    }));
                }
            }
        }
        let mut conditions = Vec::new();
        for condition in plan.conditions {
            let Some(expression) =
                self.compile(&env, &condition.source, &condition.path, None, &ids)
            else {
                continue;
            };
            let element = match &expression.output_type {
                Type::List(element) => element.as_ref(),
                other => other,
            };
            if *element == kro_cel::condition_type() || *element == Type::Dyn {
                conditions.push(expression);
            } else {
                let found = expression.output_type.clone();
                self.error(condition.path, None, BuildErrorKind::NotACondition(found));
            }
        }
        (fields, conditions, schema, scale)
    }
}

fn describe(value: &Json) -> String {
    match value {
        Json::Null => "null".into(),
        Json::Bool(_) => "a boolean".into(),
        Json::Number(_) => "a number".into(),
        Json::String(_) => "a string".into(),
        Json::Array(_) => "a list".into(),
        Json::Object(_) => "a map".into(),
    }
}

/// Whether `path` goes through a list.
fn in_list(path: &FieldPath) -> bool {
    path.segments()
        .iter()
        .any(|segment| matches!(segment, PathSegment::Index(_)))
}

/// Puts `schema` at `path` inside an object schema, creating intermediate objects, and lists
/// where the path has an index. All items of a list share one `items` schema: objects merge
/// their properties, and items of different types are refused, naming both (upstream keeps
/// whichever its map iteration visits last, so its CRD would differ from run to run).
fn insert_at(root: &mut Schema, path: &FieldPath, schema: Schema) -> Result<(), String> {
    let segments = path.segments();
    let Some((last, parents)) = segments.split_last() else {
        *root = schema;
        return Ok(());
    };
    let mut current = root;
    for (position, segment) in parents.iter().enumerate() {
        let next_is_index = matches!(segments.get(position + 1), Some(PathSegment::Index(_)));
        let container = || Schema::of_type(if next_is_index { "array" } else { "object" });
        current = match segment {
            PathSegment::Key(key) => current
                .properties
                .entry(key.clone())
                .or_insert_with(container),
            PathSegment::Index(_) => current.items.get_or_insert_with(|| Box::new(container())),
        };
    }
    let slot = match last {
        PathSegment::Key(key) => current.properties.entry(key.clone()),
        PathSegment::Index(_) => {
            match &current.items {
                Some(items) if **items != schema => {
                    return Err(format!(
                        "the items of a list must be of one type, found {} and {}",
                        describe_schema(items),
                        describe_schema(&schema)
                    ));
                }
                _ => {}
            }
            current.items = Some(Box::new(schema));
            return Ok(());
        }
    };
    match slot {
        std::collections::btree_map::Entry::Occupied(mut found) => {
            // Only items of one list write the same field twice.
            if *found.get() != schema {
                return Err(format!(
                    "the items of a list must be of one type, found {} and {} at {path}",
                    describe_schema(found.get()),
                    describe_schema(&schema)
                ));
            }
            found.insert(schema);
        }
        std::collections::btree_map::Entry::Vacant(vacant) => {
            vacant.insert(schema);
        }
    }
    Ok(())
}

/// A schema in a few words: its type, and an object's field names.
fn describe_schema(schema: &Schema) -> String {
    let kind = schema.type_.as_deref().unwrap_or("any value");
    if schema.properties.is_empty() {
        kind.to_string()
    } else {
        let names: Vec<&str> = schema.properties.keys().map(String::as_str).collect();
        format!("{kind} {{{}}}", names.join(", "))
    }
}
