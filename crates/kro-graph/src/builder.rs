//! The graph builder: an RGD becomes a [`CompiledGraph`], or every problem found in it.
//!
//! Phases: validate names and node shapes; compile the instance schema (SimpleSchema); find
//! the schemas of the kinds used; find every expression's dependencies (by checking it with
//! all ids declared); order the nodes into a DAG with levels; type-check every expression in
//! dependency order against the field it lands in; infer the status schema; generate CRDs.

mod check;
mod collect;
mod status;

use std::collections::BTreeSet;
use std::sync::Arc;

use kro_cel::{Env, Type};
use kro_schema::{ScaleFields, Schema};

use crate::api::ResourceGraphDefinition;
use crate::crd::{KindNames, instance_crd, set_crd};
use crate::dag::{Dag, DagError};
use crate::error::{BuildError, BuildErrorKind, BuildErrors};
use crate::features::{Feature, FeatureGates};
use crate::graph::CompiledGraph;
use crate::schema_source::SchemaSource;
use crate::template::FieldPath;
use crate::types::GraphTypes;

use collect::NodePlan;

/// Settings of the builder.
#[derive(Debug, Clone)]
pub struct BuildConfig {
    /// The CEL environment expressions are checked in (kro's, by default).
    pub env: Env,
    /// The most dimensions a `forEach` may have (upstream's
    /// `--rgd-max-collection-dimension-size`, 10 by default).
    pub max_collection_dimensions: usize,
    /// The feature gates that change what compiles (`CELOmitFunction`); upstream's defaults
    /// (all off) unless configured.
    pub features: FeatureGates,
}

/// The most dimensions a `forEach` may have unless configured otherwise (upstream's default).
pub const DEFAULT_MAX_COLLECTION_DIMENSIONS: usize = 10;

impl Default for BuildConfig {
    fn default() -> Self {
        BuildConfig {
            env: Env::kro(),
            max_collection_dimensions: DEFAULT_MAX_COLLECTION_DIMENSIONS,
            features: FeatureGates::upstream_defaults(),
        }
    }
}

/// Builds a graph with the default configuration.
///
/// # Errors
/// [`BuildErrors`] listing every problem found.
pub fn build_graph(
    rgd: &ResourceGraphDefinition,
    sources: &dyn SchemaSource,
) -> Result<CompiledGraph, BuildErrors> {
    build_graph_with(rgd, sources, &BuildConfig::default())
}

/// Builds a graph.
///
/// # Errors
/// [`BuildErrors`] listing every problem found.
pub fn build_graph_with(
    rgd: &ResourceGraphDefinition,
    sources: &dyn SchemaSource,
    config: &BuildConfig,
) -> Result<CompiledGraph, BuildErrors> {
    let mut builder = Builder {
        config,
        sources,
        types: Arc::new(GraphTypes::new()),
        errors: Vec::new(),
        warnings: Vec::new(),
        variables_declared: 0,
        failed_expressions: std::collections::HashSet::new(),
        reads_time: false,
    };
    builder.build(rgd)
}

/// Where `spec.resources[index]` is.
pub(crate) fn resource_path(index: usize) -> FieldPath {
    FieldPath::root().key("spec").key("resources").index(index)
}

/// The path of `spec.schema` and its children.
pub(crate) fn schema_path() -> FieldPath {
    FieldPath::root().key("spec").key("schema")
}

pub(crate) struct Builder<'c> {
    pub(crate) config: &'c BuildConfig,
    pub(crate) sources: &'c dyn SchemaSource,
    pub(crate) types: Arc<GraphTypes>,
    pub(crate) errors: Vec<BuildError>,
    pub(crate) warnings: Vec<crate::graph::BuildWarning>,
    /// Node variables declared in the environments expressions were checked in: the builder's
    /// work grows with it (see [`crate::graph::BuildStats`]).
    pub(crate) variables_declared: usize,
    /// The places of expressions that failed to check: each is reported once, whichever
    /// phase (dependency discovery, type checking) meets it first.
    pub(crate) failed_expressions: std::collections::HashSet<FieldPath>,
    /// Whether an expression read `time` (gate `CELTimeFunctions`).
    pub(crate) reads_time: bool,
}

impl Builder<'_> {
    pub(crate) fn error(&mut self, path: FieldPath, resource: Option<&str>, kind: BuildErrorKind) {
        self.errors.push(BuildError {
            path,
            resource: resource.map(str::to_string),
            kind,
        });
    }

    /// The plural kro names a kind's CRD with (upstream's, flect's) must be a valid resource
    /// name; flect upper-cases some acronyms (`DNS` → `dnsDNSes`), a CRD Kubernetes refuses.
    fn check_plural(&mut self, names: &KindNames, path: FieldPath) {
        if !crate::names::is_dns_label(&names.plural) {
            self.error(
                path,
                None,
                BuildErrorKind::InvalidPlural {
                    kind: names.kind.clone(),
                    plural: names.plural.clone(),
                },
            );
        }
    }

    fn fail(&mut self) -> BuildErrors {
        BuildErrors {
            errors: std::mem::take(&mut self.errors),
        }
    }

    /// The base environment: kro's functions and the graph's object types.
    pub(crate) fn base_env(&self) -> Env {
        let env = self
            .config
            .env
            .clone()
            .with_type_provider(self.types.clone());
        if self.config.features.enabled(Feature::CelTimeFunctions) {
            // `time` is reserved as a resource id with the gate on, so it names the clock.
            let time =
                kro_cel::library("kro.time").map_or(env.clone(), |time| env.with_library(time));
            time.with_variable(kro_cel::TIME_VARIABLE, kro_cel::time_type())
        } else {
            env
        }
    }

    fn build(&mut self, rgd: &ResourceGraphDefinition) -> Result<CompiledGraph, BuildErrors> {
        let schema_spec = &rgd.spec.schema;
        // An RGD read from a file may have no name (it is then reported by its position);
        // one it has must be a name the API server would store.
        if !rgd.metadata.name.is_empty()
            && let Err(error) = crate::names::NameRule::Subdomain.check(&rgd.metadata.name)
        {
            self.error(
                FieldPath::root().key("metadata").key("name"),
                None,
                BuildErrorKind::InvalidRgdName(error),
            );
        }
        self.validate_schema_names(schema_spec);
        let (spec_schema, spec_scale) = self.compile_instance_spec(schema_spec);
        let instance_type = self.register_instance(&spec_schema);
        let mut plans = self.collect_nodes(rgd);
        if !self.errors.is_empty() {
            return Err(self.fail());
        }
        self.resolve_schemas(&mut plans);
        let status_plan = self.collect_status(schema_spec);
        // An expression that fails here is reported once and left out of its node's
        // dependencies; the other expressions (of its node, of its dependents, of the status)
        // are still checked below, so that one run reports every error the RGD has.
        self.find_dependencies(&mut plans, &instance_type, &status_plan.sources());
        let Some(dag) = self.order(&plans) else {
            return Err(self.fail());
        };
        let positions: std::collections::HashMap<&str, usize> = plans
            .iter()
            .enumerate()
            .map(|(position, plan)| (plan.id.as_str(), position))
            .collect();
        let levels: Vec<Vec<usize>> = dag
            .levels()
            .iter()
            .map(|level| {
                level
                    .iter()
                    .filter_map(|id| positions.get(id).copied())
                    .collect()
            })
            .collect();
        let order: Vec<usize> = levels.iter().flatten().copied().collect();
        let (nodes, node_types) = self.check_nodes(&mut plans, &order, &instance_type);
        self.check_identity_omit(&nodes, schema_spec.scope() == crate::api::Scope::Cluster);
        let (status, status_conditions, status_schema, status_scale) =
            self.check_status(status_plan, &instance_type, &node_types);
        let scale = self.scale_fields(&spec_scale, &status_scale);
        if !self.errors.is_empty() {
            return Err(self.fail());
        }
        let mut nodes: Vec<_> = nodes.into_iter().flatten().collect();
        let names = KindNames::new(
            schema_spec.group(),
            &schema_spec.api_version,
            &schema_spec.kind,
            schema_spec.scope(),
        );
        self.check_plural(&names, schema_path().key("kind"));
        let propagation = self.propagation_policy(rgd, &names);
        self.resource_propagation(rgd, &mut nodes);
        let mut crd = instance_crd(&names, schema_spec, &spec_schema, &status_schema, &scale);
        if propagation.is_some() {
            crate::crd::with_observed_revision(&mut crd, schema_spec);
        }
        if self
            .config
            .features
            .enabled(crate::Feature::InstanceManagedResources)
        {
            crate::crd::with_managed_resources(&mut crd);
        }
        let (set_crd, set_names) = match &rgd.spec.scaling {
            Some(scaling) => {
                let set_names = KindNames::new(
                    schema_spec.group(),
                    &schema_spec.api_version,
                    &scaling.kind,
                    schema_spec.scope(),
                );
                let path = FieldPath::root().key("spec").key("scaling").key("kind");
                self.check_plural(&set_names, path);
                (Some(set_crd(&set_names, &spec_schema)), Some(set_names))
            }
            None => (None, None),
        };
        if !self.errors.is_empty() {
            return Err(self.fail());
        }
        let node_positions = nodes
            .iter()
            .enumerate()
            .map(|(position, node)| (node.id.to_string(), position))
            .collect();
        Ok(CompiledGraph {
            node_positions,
            stats: crate::graph::BuildStats {
                variables_declared: self.variables_declared,
            },
            name: rgd.metadata.name.clone(),
            names,
            spec_schema,
            status_schema,
            crd,
            set_crd,
            set_names,
            scale,
            propagation,
            nodes,
            levels,
            status,
            status_conditions,
            types: self.types.clone(),
            instance_type,
            warnings: std::mem::take(&mut self.warnings),
            reads_time: self.reads_time,
        })
    }

    /// The `propagateWhen` of each collection resource (KREP-006); refused without the gate
    /// `PropagationControl`, and on resources that are not collections.
    fn resource_propagation(
        &mut self,
        rgd: &ResourceGraphDefinition,
        nodes: &mut [crate::graph::CompiledNode],
    ) {
        let gated = self
            .config
            .features
            .enabled(crate::Feature::PropagationControl);
        for node in nodes {
            let Some(resource) = rgd.spec.resources.get(node.index) else {
                continue;
            };
            let Some(first) = resource.propagate_when.first() else {
                continue;
            };
            let at = resource_path(node.index).key("propagateWhen");
            if !gated {
                self.error(
                    at.index(0),
                    Some(&resource.id),
                    BuildErrorKind::FeatureGateDisabled {
                        expression: first.clone(),
                        function: "propagateWhen",
                        feature: crate::Feature::PropagationControl,
                    },
                );
                continue;
            }
            let items: Vec<String> = match &node.for_each {
                Some(crate::graph::CompiledForEach::Dimensions(dimensions)) => {
                    dimensions.iter().map(|(name, _)| name.clone()).collect()
                }
                Some(crate::graph::CompiledForEach::Each(_)) => Vec::new(),
                None => {
                    self.error(
                        at,
                        Some(&resource.id),
                        BuildErrorKind::Propagation(crate::propagation::PolicyError::OnResource {
                            index: node.index,
                        }),
                    );
                    continue;
                }
            };
            match crate::propagation::PropagationPolicy::for_collection(
                node.index,
                &resource.propagate_when,
                &resource.id,
                &items,
                self.config.env.cost_limit(),
            ) {
                Ok(policy) => node.propagation = Some(policy),
                Err(errors) => {
                    for error in errors {
                        let path = match &error {
                            crate::propagation::PolicyError::Expression { index, .. } => {
                                at.index(*index)
                            }
                            _ => at.clone(),
                        };
                        self.error(path, Some(&resource.id), BuildErrorKind::Propagation(error));
                    }
                }
            }
        }
    }

    /// The RGD's propagation policy: `spec.propagateWhen` (refused without the gate
    /// `PropagationControl`) and the rollout annotations (read only with the gate).
    fn propagation_policy(
        &mut self,
        rgd: &ResourceGraphDefinition,
        names: &KindNames,
    ) -> Option<crate::propagation::PropagationPolicy> {
        let path = FieldPath::root().key("spec").key("propagateWhen");
        if !self
            .config
            .features
            .enabled(crate::Feature::PropagationControl)
        {
            if let Some(first) = rgd.spec.propagate_when.first() {
                self.error(
                    path.index(0),
                    None,
                    BuildErrorKind::FeatureGateDisabled {
                        expression: first.clone(),
                        function: "spec.propagateWhen",
                        feature: crate::Feature::PropagationControl,
                    },
                );
            }
            return None;
        }
        match crate::propagation::PropagationPolicy::compile(
            &rgd.spec.propagate_when,
            &rgd.metadata.annotations,
            &names.singular,
            &names.plural,
            self.config.env.cost_limit(),
        ) {
            Ok(policy) => policy,
            Err(errors) => {
                for error in errors {
                    let at = match &error {
                        crate::propagation::PolicyError::Expression { index, .. } => {
                            path.index(*index)
                        }
                        crate::propagation::PolicyError::OnResource { index } => {
                            resource_path(*index).key("propagateWhen")
                        }
                        crate::propagation::PolicyError::Annotation { annotation, .. } => {
                            FieldPath::root()
                                .key("metadata")
                                .key("annotations")
                                .key(*annotation)
                        }
                    };
                    self.error(at, None, BuildErrorKind::Propagation(error));
                }
                None
            }
        }
    }

    fn validate_schema_names(&mut self, schema: &crate::api::SchemaSpec) {
        let path = schema_path();
        // The group names the CRD (`<plural>.<group>`) and every instance's apiVersion.
        let group = schema.group();
        if crate::names::NameRule::Subdomain.check(group).is_err() || !group.contains('.') {
            self.error(
                path.key("group"),
                None,
                BuildErrorKind::InvalidGroup(group.to_owned()),
            );
        }
        if !crate::names::is_valid_kind(&schema.kind) {
            self.error(
                path.key("kind"),
                None,
                BuildErrorKind::InvalidKind(schema.kind.clone()),
            );
        }
        if !crate::names::is_valid_version(&schema.api_version) {
            self.error(
                path.key("apiVersion"),
                None,
                BuildErrorKind::InvalidVersion(schema.api_version.clone()),
            );
        }
        for (field, names) in [
            ("shortNames", &schema.short_names),
            ("categories", &schema.categories),
        ] {
            for (index, name) in names.iter().enumerate() {
                if !crate::names::is_dns_label(name) {
                    self.error(
                        path.key(field).index(index),
                        None,
                        BuildErrorKind::InvalidName(name.clone()),
                    );
                }
            }
        }
    }

    fn compile_instance_spec(
        &mut self,
        schema: &crate::api::SchemaSpec,
    ) -> (Schema, kro_schema::CompiledSchema) {
        let empty = serde_json::json!({});
        let spec = schema.spec.as_ref().unwrap_or(&empty);
        match kro_schema::compile_spec(spec, schema.types.as_ref()) {
            Ok(compiled) => (compiled.schema.clone(), compiled),
            Err(error) => {
                let path = schema_error_path(&error.path);
                self.error(path, None, BuildErrorKind::Schema(error));
                let fallback = kro_schema::CompiledSchema {
                    schema: Schema::of_type("object"),
                    scale_fields: Vec::new(),
                    scale_selector_fields: Vec::new(),
                };
                (Schema::of_type("object"), fallback)
            }
        }
    }

    /// `schema` in expressions: the instance without its status.
    fn register_instance(&mut self, spec: &Schema) -> Type {
        let mut root = Schema::of_type("object");
        root.properties
            .insert("apiVersion".into(), Schema::of_type("string"));
        root.properties
            .insert("kind".into(), Schema::of_type("string"));
        root.properties
            .insert("metadata".into(), Schema::of_type("object"));
        root.properties.insert("spec".into(), spec.clone());
        self.types
            .schemas()
            .register("__type_schema", &root, &kro_schema::NoDefinitions)
    }

    fn order(&mut self, plans: &[NodePlan]) -> Option<Dag> {
        let mut dag = Dag::new();
        for plan in plans {
            if let Err(error) = dag.add_node(plan.id.clone(), plan.index) {
                self.error(
                    plan.path.clone(),
                    Some(&plan.id),
                    BuildErrorKind::DuplicateId(error.to_string()),
                );
            }
        }
        let edges = plans.iter().flat_map(|plan| {
            plan.dependencies
                .iter()
                .map(move |dependency| (plan.id.as_str(), dependency.as_str()))
        });
        if self.errors.is_empty() && dag.add_all_dependencies(edges).is_ok() {
            return Some(dag);
        }
        // Some edge is wrong: add them one by one to report each, at its resource.
        let mut ok = true;
        for plan in plans {
            let dependencies: BTreeSet<&str> =
                plan.dependencies.iter().map(String::as_str).collect();
            for dependency in dependencies {
                match dag.add_dependency(&plan.id, dependency) {
                    Ok(()) => {}
                    Err(DagError::Cycle(cycle)) => {
                        ok = false;
                        self.error(
                            plan.path.clone(),
                            Some(&plan.id),
                            BuildErrorKind::Cycle(cycle.path),
                        );
                    }
                    Err(other) => {
                        ok = false;
                        self.error(
                            plan.path.clone(),
                            Some(&plan.id),
                            BuildErrorKind::Dependency(other),
                        );
                    }
                }
            }
        }
        ok.then_some(dag)
    }

    fn scale_fields(
        &mut self,
        spec: &kro_schema::CompiledSchema,
        status: &kro_schema::CompiledSchema,
    ) -> ScaleFields {
        match kro_schema::scale_fields(spec, status) {
            Ok(fields) => fields,
            Err(error) => {
                self.error(
                    schema_path(),
                    None,
                    BuildErrorKind::Scaling(error.to_string()),
                );
                ScaleFields::default()
            }
        }
    }
}

/// The RGD path of a SimpleSchema error (`spec.a.b` relative to `spec.schema`, or
/// `types.T.x`).
fn schema_error_path(path: &str) -> FieldPath {
    let relative: FieldPath = path.parse().unwrap_or_default();
    schema_path().join(&relative)
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod gate_tests;

#[cfg(test)]
mod lifecycle_tests;
