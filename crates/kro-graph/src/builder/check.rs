//! Type-checking every expression of every node, in dependency order, against the field it
//! lands in; then each node's own type as other expressions see it.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use kro_cel::{CheckedAst, Env, Type, TypeErrorKind};
use kro_schema::NoDefinitions;

use super::Builder;
use super::collect::{ForEachPlan, LifecyclePlan, NodePlan, Shape, Standalone, identifiers};
use crate::NodeId;
use crate::compat::is_compatible;
use crate::error::{BuildErrorKind, Hint};
use crate::features::Feature;
use crate::graph::Lifecycle;
use crate::graph::{CompiledExpression, CompiledField, CompiledForEach, CompiledNode, NodeKind};
use crate::lifecycle::{LifecycleError, POLICY_TYPE, lifecycle_env};
use crate::template::{FieldPath, Template};
use crate::types::{constant_type, field_schema, join};

impl Builder<'_> {
    /// Parses and checks one expression, reporting problems at `path`.
    pub(crate) fn check_source(
        &mut self,
        env: &Env,
        source: &str,
        path: &FieldPath,
        resource: Option<&str>,
    ) -> Option<CheckedAst> {
        if self.failed_expressions.contains(path) {
            return None;
        }
        let result = env
            .parse(source)
            .map_err(kro_cel::CompileError::from)
            .and_then(|ast| env.check(&ast).map_err(kro_cel::CompileError::from));
        match result {
            Ok(checked) => {
                if self.config.features.enabled(Feature::CelTimeFunctions)
                    && checked
                        .referenced_variables()
                        .contains(&kro_cel::TIME_VARIABLE)
                    && env.variable(kro_cel::TIME_VARIABLE) == Some(&kro_cel::time_type())
                {
                    self.reads_time = true;
                }
                if !self.config.features.enabled(Feature::CelOmitFunction) && calls_omit(&checked) {
                    let gate = (Feature::CelOmitFunction, "omit()");
                    self.refuse_gated(path, resource, source, gate);
                    return None;
                }
                Some(checked)
            }
            Err(_)
                if !self.config.features.enabled(Feature::CelTimeFunctions)
                    && env.variable(kro_cel::TIME_VARIABLE).is_none()
                    && source.contains("time.now(") =>
            {
                let gate = (Feature::CelTimeFunctions, "time.now()");
                self.refuse_gated(path, resource, source, gate);
                None
            }
            Err(error) => {
                self.failed_expressions.insert(path.clone());
                let hints = hints(env, source, &error);
                self.error(
                    path.clone(),
                    resource,
                    BuildErrorKind::Cel {
                        expression: source.to_string(),
                        error,
                        hints,
                    },
                );
                None
            }
        }
    }

    /// Reports that `source` uses `function`, which `feature` (off) would allow.
    fn refuse_gated(
        &mut self,
        path: &FieldPath,
        resource: Option<&str>,
        source: &str,
        (feature, function): (Feature, &'static str),
    ) {
        self.failed_expressions.insert(path.clone());
        self.error(
            path.clone(),
            resource,
            BuildErrorKind::FeatureGateDisabled {
                expression: source.to_string(),
                function,
                feature,
            },
        );
    }

    /// Checks and plans one expression.
    pub(crate) fn compile(
        &mut self,
        env: &Env,
        source: &str,
        path: &FieldPath,
        resource: Option<&str>,
        ids: &HashSet<&str>,
    ) -> Option<CompiledExpression> {
        let checked = self.check_source(env, source, path, resource)?;
        let references = checked
            .referenced_variables()
            .into_iter()
            .filter(|name| ids.contains(*name))
            .map(str::to_string)
            .collect();
        Some(CompiledExpression {
            source: source.to_string(),
            program: env.program(&checked),
            output_type: checked.output_type().clone(),
            references,
        })
    }

    /// The element type of a forEach collection, or `None` after reporting it is not one.
    fn element_type(
        &mut self,
        expression: &CompiledExpression,
        path: &FieldPath,
        id: &str,
    ) -> Option<(Type, Type)> {
        match &expression.output_type {
            Type::List(element) => Some((Type::Int, (**element).clone())),
            Type::Map(key, value) => Some(((**key).clone(), (**value).clone())),
            Type::Dyn => Some((Type::Dyn, Type::Dyn)),
            other => {
                self.error(
                    path.clone(),
                    Some(id),
                    BuildErrorKind::NotIterable {
                        expression: expression.source.clone(),
                        found: other.clone(),
                    },
                );
                None
            }
        }
    }

    /// Checks every node in `order` and returns them by position (`None` where checking
    /// failed), with the type each id has for later expressions: a node that failed keeps its
    /// schema's type, or `dyn`, so that its dependents report only their own errors.
    pub(super) fn check_nodes(
        &mut self,
        plans: &mut [NodePlan],
        order: &[usize],
        instance_type: &Type,
    ) -> (Vec<Option<CompiledNode>>, HashMap<String, Type>) {
        let ids: Vec<String> = plans.iter().map(|plan| plan.id.clone()).collect();
        let id_refs: HashSet<&str> = ids.iter().map(String::as_str).collect();
        let mut node_types: HashMap<String, Type> = HashMap::new();
        // Templates and externalRefs have their types from their schemas up front.
        for plan in plans.iter() {
            if let Some(ty) = self.schema_type(plan) {
                node_types.insert(plan.id.clone(), ty);
            }
        }
        let mut compiled: Vec<Option<CompiledNode>> = (0..plans.len()).map(|_| None).collect();
        for &position in order {
            let plan = &plans[position];
            // Only what the node reads (its dependencies, found by checking its expressions
            // with every id declared): declaring all N ids for each of N nodes was quadratic.
            let mut env = self
                .base_env()
                .with_variable("schema", instance_type.clone());
            for id in &plan.dependencies {
                if *id != plan.id
                    && let Some(ty) = node_types.get(id)
                {
                    self.variables_declared += 1;
                    env = env.with_variable(id, ty.clone());
                }
            }
            match self.check_node(plan, &env, &id_refs) {
                Some(mut node) => {
                    node.lifecycle = self.check_lifecycle(plan, instance_type, &id_refs);
                    node_types.insert(node.id.to_string(), node.cel_type.clone());
                    compiled[position] = Some(node);
                }
                None => {
                    node_types.entry(plan.id.clone()).or_insert(Type::Dyn);
                }
            }
        }
        (compiled, node_types)
    }

    /// A template's `lifecycle`: the fixed policy, or its expression checked with `schema`
    /// and the `kro.policy` library, refused when it reads a resource or is not a policy.
    fn check_lifecycle(
        &mut self,
        plan: &NodePlan,
        instance_type: &Type,
        ids: &HashSet<&str>,
    ) -> Option<Lifecycle> {
        let standalone = match plan.lifecycle.as_ref()? {
            LifecyclePlan::Fixed(policy) => return Some(Lifecycle::Fixed(*policy)),
            LifecyclePlan::Expression(standalone) => standalone,
        };
        let id = plan.id.as_str();
        // The ids it mentions are declared, so that reading one is refused for what it is
        // rather than as an unknown name.
        let mut env = lifecycle_env(
            self.base_env()
                .with_variable("schema", instance_type.clone()),
        );
        let mut mentioned: Vec<&str> = identifiers(&standalone.source)
            .filter(|word| ids.contains(word) && *word != "schema")
            .collect();
        mentioned.sort_unstable();
        mentioned.dedup();
        for word in mentioned {
            env = env.with_variable(word, Type::Dyn);
        }
        let expression = self.compile(&env, &standalone.source, &standalone.path, Some(id), ids)?;
        let mut read = expression.references.clone();
        if expression
            .program
            .variables()
            .iter()
            .any(|variable| &**variable == kro_cel::TIME_VARIABLE)
        {
            read.push(kro_cel::TIME_VARIABLE.to_owned());
        }
        let problem = if !read.is_empty() {
            Some(LifecycleError::ReadsResource {
                expression: expression.source.clone(),
                resources: read.join(", "),
            })
        } else if !matches!(&expression.output_type, Type::Dyn)
            && expression.output_type != Type::opaque(POLICY_TYPE)
        {
            Some(LifecycleError::NotAPolicy {
                expression: expression.source.clone(),
                found: expression.output_type.clone(),
            })
        } else {
            None
        };
        if let Some(problem) = problem {
            self.error(
                standalone.path.clone(),
                Some(id),
                BuildErrorKind::Lifecycle(problem),
            );
            return None;
        }
        Some(Lifecycle::Expression(expression))
    }

    /// The type of a template or externalRef element from its schema (`dyn` when unknown).
    fn schema_type(&self, plan: &NodePlan) -> Option<Type> {
        let element = match (&plan.shape, &plan.schema) {
            (Shape::Data, _) => return None,
            (_, Some(schema)) => self.types.schemas().register_shared(
                &format!("__type_{}", plan.id),
                &schema.schema,
                &schema.definitions,
            ),
            (_, None) => Type::Dyn,
        };
        let is_list = plan.for_each.is_some()
            || matches!(
                plan.shape,
                Shape::ExternalRef {
                    by_selector: true,
                    ..
                }
            );
        Some(if is_list {
            Type::list(element)
        } else {
            element
        })
    }

    fn check_node(
        &mut self,
        plan: &NodePlan,
        env: &Env,
        ids: &HashSet<&str>,
    ) -> Option<CompiledNode> {
        let id = plan.id.as_str();
        let errors_before = self.errors.len();
        // Iteration variables.
        let mut field_env = env.clone();
        let for_each = match &plan.for_each {
            None => None,
            Some(ForEachPlan::Dimensions(dimensions)) => {
                let mut compiled = Vec::new();
                for (name, standalone) in dimensions {
                    // A dimension that fails is still declared (as `dyn`), so that the
                    // template reports only its own errors.
                    let Some(expression) =
                        self.compile(env, &standalone.source, &standalone.path, Some(id), ids)
                    else {
                        field_env = field_env.with_variable(name, Type::Dyn);
                        continue;
                    };
                    let element = self
                        .element_type(&expression, &standalone.path, id)
                        .map_or(Type::Dyn, |(_, element)| element);
                    field_env = field_env.with_variable(name, element);
                    compiled.push((name.clone(), expression));
                }
                Some(CompiledForEach::Dimensions(compiled))
            }
            Some(ForEachPlan::Each(standalone)) => {
                let expression =
                    self.compile(env, &standalone.source, &standalone.path, Some(id), ids);
                let element = expression
                    .as_ref()
                    .and_then(|expression| self.element_type(expression, &standalone.path, id));
                let Some((expression, (key, element))) = expression.zip(element) else {
                    // Failed (and reported): `each` is still declared, so that the template
                    // reports only its own errors.
                    field_env = field_env.with_variable("each", Type::Dyn);
                    let _ = self.check_fields(plan, &field_env, ids);
                    return None;
                };
                let each_type = format!("__each_{id}");
                self.types.define(
                    &each_type,
                    HashMap::from([
                        ("item".to_string(), element.clone()),
                        ("value".to_string(), element),
                        ("index".to_string(), Type::Int),
                        ("key".to_string(), key),
                        ("length".to_string(), Type::Int),
                    ]),
                );
                field_env = field_env.with_variable("each", Type::object(&each_type));
                Some(CompiledForEach::Each(expression))
            }
        };
        let fields = self.check_fields(plan, &field_env, ids);
        let include_when = self.check_conditions(&plan.include_when, env, id, ids, "includeWhen");
        let element_type = self.element_of_node(plan, &fields);
        let cel_type = if plan.for_each.is_some()
            || matches!(
                plan.shape,
                Shape::ExternalRef {
                    by_selector: true,
                    ..
                }
            ) {
            Type::list(element_type.clone())
        } else {
            element_type.clone()
        };
        // readyWhen sees the node itself (and, for collections, `each` as one item).
        let mut ready_env = env.clone().with_variable(id, cel_type.clone());
        if plan.for_each.is_some() {
            ready_env = ready_env.with_variable("each", element_type);
        }
        let ready_when = self.check_conditions(&plan.ready_when, &ready_env, id, ids, "readyWhen");
        if self.errors.len() > errors_before {
            return None;
        }
        let kind = match &plan.shape {
            Shape::Template { gvk } => NodeKind::Template {
                gvk: gvk.clone(),
                namespaced: plan.schema.as_ref().and_then(|schema| schema.namespaced),
                schema_known: plan.schema.is_some(),
            },
            Shape::ExternalRef { gvk, by_selector } => NodeKind::ExternalRef {
                gvk: gvk.clone(),
                by_selector: *by_selector,
            },
            Shape::Data => NodeKind::Data,
        };
        Some(CompiledNode {
            id: NodeId::from(plan.id.as_str()),
            index: plan.index,
            kind,
            value: plan.value.clone(),
            fields,
            ready_when,
            include_when,
            for_each,
            dependencies: plan
                .dependencies
                .iter()
                .map(String::as_str)
                .map(NodeId::from)
                .collect(),
            cel_type,
            propagation: None,
            lifecycle: None,
        })
    }

    fn check_conditions(
        &mut self,
        conditions: &[Standalone],
        env: &Env,
        id: &str,
        ids: &HashSet<&str>,
        field: &'static str,
    ) -> Vec<CompiledExpression> {
        let mut compiled = Vec::new();
        for standalone in conditions {
            let Some(expression) =
                self.compile(env, &standalone.source, &standalone.path, Some(id), ids)
            else {
                continue;
            };
            if !matches!(expression.output_type, Type::Bool | Type::Dyn) {
                self.error(
                    standalone.path.clone(),
                    Some(id),
                    BuildErrorKind::NotBool {
                        field,
                        expression: expression.source.clone(),
                        found: expression.output_type.clone(),
                    },
                );
                continue;
            }
            compiled.push(expression);
        }
        compiled
    }

    /// Checks each expression inside the node's value against the type of its field.
    fn check_fields(
        &mut self,
        plan: &NodePlan,
        env: &Env,
        ids: &HashSet<&str>,
    ) -> Vec<CompiledField> {
        let id = plan.id.as_str();
        let mut compiled = Vec::new();
        for field in &plan.fields {
            let Some(source) = field.template.cel() else {
                continue;
            };
            let path = plan.value_path.join(&field.path);
            let Some(expression) = self.compile(env, source, &path, Some(id), ids) else {
                continue;
            };
            if matches!(field.template, Template::Standalone(_))
                && is_moving_time(&expression.output_type)
            {
                self.error(
                    path,
                    Some(id),
                    BuildErrorKind::BareTimeValue {
                        expression: expression.source.clone(),
                        found: expression.output_type.clone(),
                    },
                );
                continue;
            }
            if let Some(expected) = self.expected_type(plan, &field.path) {
                let found = match field.template {
                    Template::Interpolated(_) => Type::String,
                    _ => expression.output_type.clone(),
                };
                if !is_compatible(&expected, &found, self.types.as_ref()) {
                    self.error(
                        path,
                        Some(id),
                        BuildErrorKind::TypeMismatch {
                            expression: field_text(&field.template, source),
                            expected,
                            found,
                        },
                    );
                    continue;
                }
            }
            compiled.push(CompiledField {
                path: field.path.clone(),
                template: field.template.clone(),
                expression,
            });
        }
        compiled
    }

    /// Refuses `omit()` where an object cannot be without the field: its `metadata.name`, and
    /// its `metadata.namespace` when it is namespaced and the instance is not (there is no
    /// namespace to inherit). Upstream checks this only with `CELOmitFunction` on; with it off
    /// every `omit()` is refused already.
    pub(super) fn check_identity_omit(
        &mut self,
        nodes: &[Option<CompiledNode>],
        instance_cluster_scoped: bool,
    ) {
        let name = FieldPath::root().key("metadata").key("name");
        let namespace = FieldPath::root().key("metadata").key("namespace");
        for node in nodes.iter().flatten() {
            let NodeKind::Template { namespaced, .. } = &node.kind else {
                continue;
            };
            let namespace_required = instance_cluster_scoped && *namespaced == Some(true);
            for field in &node.fields {
                let identity =
                    field.path == name || (namespace_required && field.path == namespace);
                if !identity {
                    continue;
                }
                let uses_omit = self
                    .config
                    .env
                    .parse(&field.expression.source)
                    .is_ok_and(|ast| expr_calls_omit(&ast.expr));
                if uses_omit {
                    let path = crate::builder::resource_path(node.index)
                        .key("template")
                        .join(&field.path);
                    let expression = field_text(&field.template, &field.expression.source);
                    self.error(
                        path,
                        Some(node.id.as_str()),
                        BuildErrorKind::OmitOnIdentity(expression),
                    );
                }
            }
        }
    }

    /// The type the schema gives a field of a node's value; `None` where anything goes.
    fn expected_type(&self, plan: &NodePlan, path: &FieldPath) -> Option<Type> {
        match &plan.shape {
            Shape::Data => None,
            Shape::ExternalRef { .. } => {
                // name and namespace are strings; selector values are strings too.
                Some(match path.segments().first() {
                    Some(crate::template::PathSegment::Key(key)) if key == "selector" => Type::Dyn,
                    _ => Type::String,
                })
            }
            Shape::Template { .. } => {
                let schema = plan.schema.as_ref()?;
                let (field, name) = field_schema(
                    &schema.schema,
                    &format!("__type_{}", plan.id),
                    schema.definitions.as_ref(),
                    path,
                )?;
                Some(
                    self.types
                        .schemas()
                        .type_of(&field, &name, schema.definitions.as_ref()),
                )
            }
        }
    }

    /// A node's element type: its schema's type, or for data nodes the shape of its value.
    fn element_of_node(&self, plan: &NodePlan, fields: &[CompiledField]) -> Type {
        match &plan.shape {
            Shape::Data => {
                let field_types: HashMap<&FieldPath, Type> = fields
                    .iter()
                    .map(|field| {
                        let ty = match field.template {
                            Template::Interpolated(_) => Type::String,
                            _ => field.expression.output_type.clone(),
                        };
                        (&field.path, ty)
                    })
                    .collect();
                data_type(
                    &self.types,
                    &plan.value,
                    &FieldPath::root(),
                    &field_types,
                    &format!("__data_{}", plan.id),
                )
            }
            _ => match &plan.schema {
                Some(_) => Type::object(&format!("__type_{}", plan.id)),
                None => {
                    let _ = NoDefinitions;
                    Type::Dyn
                }
            },
        }
    }
}

/// The expression as the user wrote it, for messages: the template text for interpolations.
fn field_text(template: &Template, source: &str) -> String {
    match template {
        Template::Interpolated(interpolation) => interpolation.template.clone(),
        _ => source.to_string(),
    }
}

/// The type of a data node's value: expression results where there are expressions, the
/// constants' types elsewhere; maps become object types named after their path.
fn data_type(
    types: &Arc<crate::types::GraphTypes>,
    value: &serde_json::Value,
    path: &FieldPath,
    field_types: &HashMap<&FieldPath, Type>,
    name: &str,
) -> Type {
    if let Some(ty) = field_types.get(path) {
        return ty.clone();
    }
    match value {
        serde_json::Value::Array(items) => {
            Type::list(join(items.iter().enumerate().map(|(index, item)| {
                data_type(
                    types,
                    item,
                    &path.index(index),
                    field_types,
                    &format!("{name}[{index}]"),
                )
            })))
        }
        serde_json::Value::Object(fields) => {
            let defined = fields
                .iter()
                .map(|(field, item)| {
                    (
                        field.clone(),
                        data_type(
                            types,
                            item,
                            &path.key(field.clone()),
                            field_types,
                            &format!("{name}.{field}"),
                        ),
                    )
                })
                .collect();
            types.define(name, defined);
            Type::object(name)
        }
        constant => constant_type(types, constant, name),
    }
}

/// The known mistakes among an expression's diagnostics, each with what was most likely meant.
fn hints(env: &Env, source: &str, error: &kro_cel::CompileError) -> Vec<Hint> {
    let kro_cel::CompileError::Check(diagnostics) = error else {
        return Vec::new();
    };
    let mut hints: Vec<Hint> = Vec::new();
    for issue in &diagnostics.issues {
        let at = issue.span.start as usize;
        let hint = match &issue.kind {
            TypeErrorKind::UndeclaredReference { name, .. }
                if INSTANCE_FIELDS.contains(&name.as_str()) && env.variable("schema").is_some() =>
            {
                let written: String = source
                    .get(at..)
                    .unwrap_or_default()
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.'))
                    .collect();
                Hint::InstanceIsSchema {
                    written: written.trim_end_matches('.').to_string(),
                }
            }
            TypeErrorKind::NotSelectable(Type::List(_)) => {
                // The span of a selection starts at its `.`: the collection's name ends there
                // and the field's name follows.
                let before = source.get(..at).unwrap_or_default();
                let id: String = before
                    .chars()
                    .rev()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect::<Vec<_>>()
                    .into_iter()
                    .rev()
                    .collect();
                let field: String = source
                    .get(at + 1..)
                    .unwrap_or_default()
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                let is_collection =
                    matches!(env.variable(&id), Some(Type::List(_))) && !field.is_empty();
                if !is_collection {
                    continue;
                }
                Hint::CollectionIsAList { id, field }
            }
            _ => continue,
        };
        if !hints.contains(&hint) {
            hints.push(hint);
        }
    }
    hints
}

/// The top-level fields of an instance, which expressions reach through `schema`.
const INSTANCE_FIELDS: [&str; 3] = ["spec", "metadata", "status"];

/// Whether a checked expression calls kro's `omit()`.
/// Whether `ty` is a time value that moves with the clock (`kro.Timestamp`, `kro.Duration`).
pub(crate) fn is_moving_time(ty: &Type) -> bool {
    matches!(ty, Type::Opaque(name, _)
        if name.as_ref() == kro_cel::MOVING_TIMESTAMP_TYPE_NAME
            || name.as_ref() == kro_cel::MOVING_DURATION_TYPE_NAME)
}

pub(crate) fn calls_omit(checked: &CheckedAst) -> bool {
    expr_calls_omit(&checked.ast.expr)
}

fn expr_calls_omit(root: &kro_cel::Expr) -> bool {
    let mut found = false;
    root.walk(&mut |expr| {
        if let Some(("omit", [])) = expr.as_global_call() {
            found = true;
        }
    });
    found
}
