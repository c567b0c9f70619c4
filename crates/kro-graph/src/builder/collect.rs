//! Collecting the nodes: shape and naming rules, the expressions inside each node, the
//! schemas of the kinds used, and each node's dependencies.

use std::collections::{BTreeSet, HashSet};

use kro_cel::{Env, Type};
use kro_schema::Gvk;
use serde_json::Value as Json;

use super::{Builder, resource_path};
use crate::api::{ForEach, ResourceGraphDefinition, ResourceSpec};
use crate::error::BuildErrorKind;
use crate::features::Feature;
use crate::lifecycle::{DeletePolicy, LifecycleError, fixed_policy};
use crate::names::{is_lower_camel_case, is_reserved};
use crate::schema_source::{KindSchema, SchemaLookup};
use crate::template::{FieldPath, Template, TemplateField, parse_template, scan_json};

/// What kind of node, before types.
#[derive(Debug, Clone)]
pub(crate) enum Shape {
    Template { gvk: Gvk },
    ExternalRef { gvk: Gvk, by_selector: bool },
    Data,
}

/// A standalone expression written in a list field (readyWhen, includeWhen) or forEach.
#[derive(Debug, Clone)]
pub(crate) struct Standalone {
    /// Where it was written in the RGD.
    pub path: FieldPath,
    /// The CEL source.
    pub source: String,
}

/// How a node iterates.
#[derive(Debug, Clone)]
pub(crate) enum ForEachPlan {
    Dimensions(Vec<(String, Standalone)>),
    Each(Standalone),
}

/// A node on its way through the builder.
pub(crate) struct NodePlan {
    pub id: String,
    pub index: usize,
    /// `spec.resources[index]`.
    pub path: FieldPath,
    pub shape: Shape,
    /// The template, data value or externalRef metadata.
    pub value: Json,
    /// Where [`value`](Self::value) is in the RGD.
    pub value_path: FieldPath,
    pub fields: Vec<TemplateField>,
    pub ready_when: Vec<Standalone>,
    pub include_when: Vec<Standalone>,
    pub for_each: Option<ForEachPlan>,
    pub lifecycle: Option<LifecyclePlan>,
    pub schema: Option<KindSchema>,
    pub dependencies: BTreeSet<String>,
}

/// A resource's `lifecycle` as written: an expression to check, or a fixed policy.
#[derive(Debug, Clone)]
pub(crate) enum LifecyclePlan {
    Expression(Standalone),
    Fixed(DeletePolicy),
}

impl NodePlan {
    pub(crate) fn iterator_names(&self) -> Vec<&str> {
        match &self.for_each {
            Some(ForEachPlan::Dimensions(dimensions)) => {
                dimensions.iter().map(|(name, _)| name.as_str()).collect()
            }
            _ => Vec::new(),
        }
    }
}

impl Builder<'_> {
    pub(super) fn collect_nodes(&mut self, rgd: &ResourceGraphDefinition) -> Vec<NodePlan> {
        let ids: HashSet<&str> = rgd
            .spec
            .resources
            .iter()
            .map(|resource| resource.id.as_str())
            .collect();
        let mut seen = HashSet::new();
        let mut plans = Vec::new();
        for (index, resource) in rgd.spec.resources.iter().enumerate() {
            let path = resource_path(index);
            let id = resource.id.as_str();
            if !is_lower_camel_case(id) {
                self.error(
                    path.key("id"),
                    Some(id),
                    BuildErrorKind::InvalidId(id.to_string()),
                );
            } else if is_reserved(id)
                || (id == kro_cel::TIME_VARIABLE
                    && self.config.features.enabled(Feature::CelTimeFunctions))
            {
                self.error(
                    path.key("id"),
                    Some(id),
                    BuildErrorKind::ReservedId(id.to_string()),
                );
            }
            if !seen.insert(id) {
                self.error(
                    path.key("id"),
                    Some(id),
                    BuildErrorKind::DuplicateId(id.to_string()),
                );
            }
            if let Some(plan) = self.collect_node(index, resource, &ids) {
                plans.push(plan);
            }
        }
        plans
    }

    /// Labels and annotations under `kro.run/` and `internal.kro.run/` are kro's: a template
    /// may not set them (as upstream kro v0.9.4 rules).
    fn check_reserved_metadata(&mut self, template: &Json, path: &FieldPath, id: &str) {
        for field in ["labels", "annotations"] {
            let Some(entries) = template
                .get("metadata")
                .and_then(|metadata| metadata.get(field))
                .and_then(Json::as_object)
            else {
                continue;
            };
            for key in entries.keys() {
                if RESERVED_METADATA_PREFIXES
                    .iter()
                    .any(|prefix| key.starts_with(prefix))
                {
                    self.error(
                        path.key("metadata").key(field).key(key),
                        Some(id),
                        BuildErrorKind::ReservedMetadata {
                            field,
                            key: key.clone(),
                        },
                    );
                }
            }
        }
    }

    fn collect_node(
        &mut self,
        index: usize,
        resource: &ResourceSpec,
        ids: &HashSet<&str>,
    ) -> Option<NodePlan> {
        let path = resource_path(index);
        let id = resource.id.as_str();
        let present: Vec<&str> = [
            resource.template.as_ref().map(|_| "template"),
            resource.external_ref.as_ref().map(|_| "externalRef"),
            resource.data.as_ref().map(|_| "data"),
        ]
        .into_iter()
        .flatten()
        .collect();
        if present.len() != 1 {
            let found = if present.is_empty() {
                "none".to_string()
            } else {
                present.join(" and ")
            };
            self.error(path.clone(), Some(id), BuildErrorKind::NodeShape(found));
            return None;
        }
        let (shape, value, value_path) = if let Some(template) = &resource.template {
            let value_path = path.key("template");
            let gvk = self.template_gvk(template, &value_path, id)?;
            self.check_reserved_metadata(template, &value_path, id);
            (Shape::Template { gvk }, template.clone(), value_path)
        } else if let Some(external) = &resource.external_ref {
            let value_path = path.key("externalRef");
            let gvk = match Gvk::from_api_version(&external.api_version, &external.kind) {
                Ok(gvk) => gvk,
                Err(error) => {
                    self.error(
                        value_path,
                        Some(id),
                        BuildErrorKind::InvalidGvk(error.to_string()),
                    );
                    return None;
                }
            };
            let metadata = &external.metadata;
            if metadata.name.is_some() == metadata.selector.is_some() {
                self.error(
                    value_path.key("metadata"),
                    Some(id),
                    BuildErrorKind::ExternalRefTarget,
                );
                return None;
            }
            if resource.for_each.is_some() {
                self.error(
                    path.key("forEach"),
                    Some(id),
                    BuildErrorKind::ForEachOnExternalRef,
                );
            }
            if let Some(selector) = &metadata.selector
                && let Err((field, problem)) = check_selector_shape(selector)
            {
                self.error(
                    value_path.key("metadata").key("selector").join(&field),
                    Some(id),
                    BuildErrorKind::InvalidSelector(problem),
                );
            }
            let value = serde_json::to_value(metadata).unwrap_or(Json::Null);
            let by_selector = metadata.selector.is_some();
            (
                Shape::ExternalRef { gvk, by_selector },
                value,
                value_path.key("metadata"),
            )
        } else {
            let value = resource.data.clone().unwrap_or(Json::Null);
            if !resource.ready_when.is_empty() {
                self.error(
                    path.key("readyWhen"),
                    Some(id),
                    BuildErrorKind::ReadyWhenOnData,
                );
            }
            (Shape::Data, value, path.key("data"))
        };
        let fields = match scan_json(&value) {
            Ok(scanned) => scanned.fields,
            Err(errors) => {
                for error in errors.errors {
                    self.error(
                        value_path.join(&error.path),
                        Some(id),
                        BuildErrorKind::Template(error.error),
                    );
                }
                Vec::new()
            }
        };
        let ready_when = self.standalone_list(
            &resource.ready_when,
            &path.key("readyWhen"),
            id,
            "readyWhen",
        );
        let include_when = self.standalone_list(
            &resource.include_when,
            &path.key("includeWhen"),
            id,
            "includeWhen",
        );
        let for_each = resource
            .for_each
            .as_ref()
            .and_then(|for_each| self.collect_for_each(for_each, &path.key("forEach"), id, ids));
        let lifecycle = resource
            .lifecycle
            .as_ref()
            .and_then(|lifecycle| self.collect_lifecycle(lifecycle, &shape, &path, id));
        Some(NodePlan {
            id: id.to_string(),
            index,
            path,
            shape,
            value,
            value_path,
            fields,
            ready_when,
            include_when,
            for_each,
            lifecycle,
            schema: None,
            dependencies: BTreeSet::new(),
        })
    }

    /// A template's `lifecycle`: `${...}` or `{deletePolicy: ...}`; refused on the nodes kro
    /// never deletes.
    fn collect_lifecycle(
        &mut self,
        lifecycle: &Json,
        shape: &Shape,
        path: &FieldPath,
        id: &str,
    ) -> Option<LifecyclePlan> {
        let path = path.key("lifecycle");
        let not_a_template = match shape {
            Shape::Template { .. } => None,
            Shape::ExternalRef { .. } => Some("externalRef"),
            Shape::Data => Some("data node"),
        };
        if let Some(what) = not_a_template {
            self.error(
                path,
                Some(id),
                BuildErrorKind::Lifecycle(LifecycleError::NotATemplate(what)),
            );
            return None;
        }
        if let Json::String(text) = lifecycle {
            return self
                .standalone(text, &path, Some(id), "lifecycle")
                .map(LifecyclePlan::Expression);
        }
        match fixed_policy(lifecycle) {
            Ok(policy) => Some(LifecyclePlan::Fixed(policy)),
            Err(error) => {
                self.error(path, Some(id), BuildErrorKind::Lifecycle(error));
                None
            }
        }
    }

    fn template_gvk(&mut self, template: &Json, path: &FieldPath, id: &str) -> Option<Gvk> {
        let Some(object) = template.as_object() else {
            self.error(
                path.clone(),
                Some(id),
                BuildErrorKind::InvalidObject("not a map".into()),
            );
            return None;
        };
        let text = |field: &str| object.get(field).and_then(Json::as_str);
        let (Some(api_version), Some(kind)) = (text("apiVersion"), text("kind")) else {
            self.error(
                path.clone(),
                Some(id),
                BuildErrorKind::InvalidObject("apiVersion and kind must be strings".into()),
            );
            return None;
        };
        if !object.get("metadata").is_some_and(Json::is_object) {
            self.error(
                path.key("metadata"),
                Some(id),
                BuildErrorKind::InvalidObject("metadata must be a map".into()),
            );
            return None;
        }
        if api_version.contains("${") || kind.contains("${") {
            self.error(
                path.clone(),
                Some(id),
                BuildErrorKind::InvalidObject("apiVersion and kind cannot be expressions".into()),
            );
            return None;
        }
        match Gvk::from_api_version(api_version, kind) {
            Ok(gvk) => Some(gvk),
            Err(error) => {
                self.error(
                    path.key("apiVersion"),
                    Some(id),
                    BuildErrorKind::InvalidGvk(error.to_string()),
                );
                None
            }
        }
    }

    /// Each entry must be exactly one `${...}`.
    pub(crate) fn standalone(
        &mut self,
        text: &str,
        path: &FieldPath,
        id: Option<&str>,
        field: &'static str,
    ) -> Option<Standalone> {
        match parse_template(text) {
            Ok(Template::Standalone(expression)) => Some(Standalone {
                path: path.clone(),
                source: expression.cel,
            }),
            Ok(_) => {
                self.error(
                    path.clone(),
                    id,
                    BuildErrorKind::NotStandalone {
                        field,
                        value: text.to_string(),
                    },
                );
                None
            }
            Err(error) => {
                self.error(path.clone(), id, BuildErrorKind::Template(error));
                None
            }
        }
    }

    fn standalone_list(
        &mut self,
        entries: &[String],
        path: &FieldPath,
        id: &str,
        field: &'static str,
    ) -> Vec<Standalone> {
        entries
            .iter()
            .enumerate()
            .filter_map(|(index, entry)| {
                self.standalone(entry, &path.index(index), Some(id), field)
            })
            .collect()
    }

    fn collect_for_each(
        &mut self,
        for_each: &ForEach,
        path: &FieldPath,
        id: &str,
        ids: &HashSet<&str>,
    ) -> Option<ForEachPlan> {
        match for_each {
            ForEach::Expression(text) => self
                .standalone(text, path, Some(id), "forEach")
                .map(ForEachPlan::Each),
            ForEach::Dimensions(dimensions) => {
                let max = self.config.max_collection_dimensions;
                if dimensions.len() > max {
                    self.error(
                        path.clone(),
                        Some(id),
                        BuildErrorKind::TooManyDimensions {
                            count: dimensions.len(),
                            max,
                        },
                    );
                    return None;
                }
                let mut names = HashSet::new();
                let mut plan = Vec::new();
                for (index, dimension) in dimensions.iter().enumerate() {
                    let entry_path = path.index(index);
                    if dimension.len() != 1 {
                        self.error(
                            entry_path.clone(),
                            Some(id),
                            BuildErrorKind::InvalidIterator {
                                name: dimension.keys().cloned().collect::<Vec<_>>().join(","),
                                reason: "each forEach entry must have exactly one key".into(),
                            },
                        );
                        continue;
                    }
                    let Some((name, text)) = dimension.iter().next() else {
                        continue;
                    };
                    let reason = if !is_lower_camel_case(name) {
                        Some("must be lowerCamelCase")
                    } else if is_reserved(name) {
                        Some("is a reserved word")
                    } else if ids.contains(name.as_str()) {
                        Some("conflicts with a resource id")
                    } else if !names.insert(name.clone()) {
                        Some("is used twice")
                    } else {
                        None
                    };
                    if let Some(reason) = reason {
                        self.error(
                            entry_path.key(name.clone()),
                            Some(id),
                            BuildErrorKind::InvalidIterator {
                                name: name.clone(),
                                reason: reason.into(),
                            },
                        );
                        continue;
                    }
                    if let Some(expression) =
                        self.standalone(text, &entry_path.key(name.clone()), Some(id), "forEach")
                    {
                        plan.push((name.clone(), expression));
                    }
                }
                Some(ForEachPlan::Dimensions(plan))
            }
        }
    }

    /// Finds the schema of each template and externalRef kind; unknown kinds are a warning.
    pub(super) fn resolve_schemas(&mut self, plans: &mut [NodePlan]) {
        for plan in plans.iter_mut() {
            let gvk = match &plan.shape {
                Shape::Template { gvk } | Shape::ExternalRef { gvk, .. } => gvk.clone(),
                Shape::Data => continue,
            };
            match self.sources.lookup(&gvk) {
                SchemaLookup::Found(schema) => plan.schema = Some(*schema),
                SchemaLookup::Unknown => {
                    self.warnings.push(crate::graph::BuildWarning::UnknownKind {
                        resource: plan.id.clone(),
                        gvk,
                    })
                }
            }
        }
    }

    /// The environment for finding dependencies: every id (and `each`, the iterators and
    /// `runtime`) declared as `dyn`, so that checking an expression reports what it reads.
    ///
    /// Only the ids `sources` mention are declared: an expression can read no other, and
    /// declaring every id for every node made building a chain of N resources cost N² (the
    /// environment of each node held all N ids).
    fn discovery_env<'s>(
        &mut self,
        ids: &HashSet<String>,
        sources: impl IntoIterator<Item = &'s str>,
        instance_type: &Type,
        extra: &[&str],
    ) -> Env {
        let mut env = self
            .base_env()
            .with_variable("schema", instance_type.clone())
            .with_variable(kro_cel::RUNTIME_VARIABLE, kro_cel::runtime_type());
        let mut mentioned: Vec<&str> = sources
            .into_iter()
            .flat_map(identifiers)
            .filter(|word| ids.contains(*word))
            .collect();
        mentioned.sort_unstable();
        mentioned.dedup();
        self.variables_declared += mentioned.len();
        for id in mentioned {
            env = env.with_variable(id, Type::Dyn);
        }
        for name in extra {
            env = env.with_variable(name, Type::Dyn);
        }
        env
    }

    /// The node ids an expression reads, or `None` after reporting why it does not check.
    fn references(
        &mut self,
        env: &Env,
        source: &str,
        path: &FieldPath,
        resource: Option<&str>,
        ids: &HashSet<String>,
    ) -> Option<Vec<String>> {
        let checked = self.check_source(env, source, path, resource)?;
        Some(
            checked
                .referenced_variables()
                .into_iter()
                .filter(|name| ids.contains(*name))
                .map(str::to_string)
                .collect(),
        )
    }

    /// Fills each node's dependencies from the ids its expressions read, and checks the status
    /// expressions (`status_sources`, each with where it was written) the same way.
    pub(super) fn find_dependencies(
        &mut self,
        plans: &mut [NodePlan],
        instance_type: &Type,
        status_sources: &[(FieldPath, String)],
    ) {
        let ids: HashSet<String> = plans.iter().map(|plan| plan.id.clone()).collect();
        for plan in plans.iter_mut() {
            let mut extra: Vec<&str> = plan.iterator_names();
            extra.push("each");
            let id = plan.id.clone();
            let mut sources: Vec<(FieldPath, String, bool)> = Vec::new();
            for field in &plan.fields {
                if let Some(source) = field.template.cel() {
                    sources.push((plan.value_path.join(&field.path), source.to_string(), false));
                }
            }
            for standalone in &plan.include_when {
                sources.push((standalone.path.clone(), standalone.source.clone(), false));
            }
            for standalone in &plan.ready_when {
                // readyWhen reads the node itself: not a dependency.
                sources.push((standalone.path.clone(), standalone.source.clone(), true));
            }
            match &plan.for_each {
                Some(ForEachPlan::Each(standalone)) => {
                    sources.push((standalone.path.clone(), standalone.source.clone(), false));
                }
                Some(ForEachPlan::Dimensions(dimensions)) => {
                    for (_, standalone) in dimensions {
                        sources.push((standalone.path.clone(), standalone.source.clone(), false));
                    }
                }
                None => {}
            }
            let env = self.discovery_env(
                &ids,
                sources.iter().map(|(_, source, _)| source.as_str()),
                instance_type,
                &extra,
            );
            let mut dependencies = BTreeSet::new();
            for (path, source, self_allowed) in sources {
                let Some(references) = self.references(&env, &source, &path, Some(&id), &ids)
                else {
                    continue;
                };
                for reference in references {
                    if reference == id && self_allowed {
                        continue;
                    }
                    dependencies.insert(reference);
                }
            }
            plan.dependencies = dependencies;
        }
        let env = self.discovery_env(
            &ids,
            status_sources.iter().map(|(_, source)| source.as_str()),
            instance_type,
            &[],
        );
        for (path, source) in status_sources {
            let _ = self.references(&env, source, path, None, &ids);
        }
    }
}

/// The words of a CEL source that could name a variable (`[_a-zA-Z][_a-zA-Z0-9]*`), string
/// literals included: a superset of the variables it reads.
pub(super) fn identifiers(source: &str) -> impl Iterator<Item = &str> {
    source
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|word| word.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_'))
}

/// The prefixes of the labels and annotations kro keeps for itself.
const RESERVED_METADATA_PREFIXES: [&str; 2] = ["kro.run/", "internal.kro.run/"];

/// Checks the shape of an externalRef's label selector as written: a whole-selector
/// expression (a string), or an object with only `matchLabels` and `matchExpressions`, whose
/// requirements have only `key`, `operator` and `values` (values may be expressions, checked
/// when resolved). The field (relative to the selector) and the problem otherwise.
fn check_selector_shape(selector: &Json) -> Result<(), (FieldPath, String)> {
    let fields = match selector {
        Json::String(_) => return Ok(()),
        Json::Object(fields) => fields,
        _ => {
            return Err((
                FieldPath::root(),
                "a selector is an object (matchLabels, matchExpressions) or one ${...}".into(),
            ));
        }
    };
    for (key, value) in fields {
        match key.as_str() {
            "matchLabels" => {}
            "matchExpressions" => {
                let Json::Array(requirements) = value else {
                    continue;
                };
                for (index, requirement) in requirements.iter().enumerate() {
                    let Json::Object(requirement) = requirement else {
                        continue;
                    };
                    if let Some(unknown) = requirement
                        .keys()
                        .find(|field| !matches!(field.as_str(), "key" | "operator" | "values"))
                    {
                        return Err((
                            FieldPath::root()
                                .key("matchExpressions")
                                .index(index)
                                .key(unknown),
                            format!(
                                "unknown field {unknown:?} (a requirement has key, operator and values)"
                            ),
                        ));
                    }
                }
            }
            unknown => {
                return Err((
                    FieldPath::root().key(unknown),
                    format!(
                        "unknown field {unknown:?} (a selector has matchLabels and matchExpressions)"
                    ),
                ));
            }
        }
    }
    Ok(())
}
