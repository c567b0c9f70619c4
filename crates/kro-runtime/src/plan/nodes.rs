//! Evaluating each kind of node: data, templates (one object or a collection), and
//! externalRefs; then the namespace and kro's labels on what is rendered.

use kro_cel::{Type, Value};
use kro_graph::lifecycle::{DeletePolicy, LIFECYCLE_POLICY_ANNOTATION};
use kro_graph::{CompiledNode, FieldPath, Lifecycle};
use serde_json::Value as Json;

use super::node_state::problem_state;
use super::{
    DesiredObject, NodeError, NodePlan, NodeState, Planner, Wait, field_problem_state, ready_state,
    resource_path, uses_each, value_path,
};
use crate::evaluate::{Problem, Scope, evaluate, render};
use crate::foreach::Iteration;
use crate::kind_readiness::{KindReadiness, kind_readiness};
use crate::metadata;
use crate::observed::{ListKey, ObjectKey, Read};
use crate::selector::LabelSelector;

impl Planner<'_> {
    /// Renders the node's value once, or once per iteration.
    pub(super) fn render_all(
        &self,
        node: &CompiledNode,
        iterations: &Option<Vec<Iteration>>,
    ) -> Result<Vec<(Json, Option<String>)>, NodeState> {
        let base = resource_path(node.index).join(&value_path(node));
        let one = |bindings: &[(String, Value)]| {
            let scope = Scope::new(&self.values).extend(bindings.iter().cloned());
            render(&node.value, &node.fields, &scope)
                .map_err(|problems| field_problem_state(&base, problems))
        };
        match iterations {
            None => Ok(vec![(one(&[])?, None)]),
            Some(iterations) => iterations
                .iter()
                .map(|iteration| Ok((one(&iteration.bindings)?, Some(iteration.key.clone()))))
                .collect(),
        }
    }

    pub(super) fn evaluate_data(
        &mut self,
        node: &CompiledNode,
        iterations: Option<Vec<Iteration>>,
        plan: &mut NodePlan,
    ) -> NodeState {
        let rendered = match self.render_all(node, &iterations) {
            Ok(rendered) => rendered,
            Err(state) => return state,
        };
        let value = if iterations.is_some() {
            Json::Array(rendered.into_iter().map(|(value, _)| value).collect())
        } else {
            rendered
                .into_iter()
                .next()
                .map(|(value, _)| value)
                .unwrap_or(Json::Null)
        };
        match self.convert(&value, &node.cel_type) {
            Ok(converted) => {
                self.values.insert(node.id.to_string(), converted);
                plan.value = Some(value);
                NodeState::Ready
            }
            Err(message) => NodeState::Failed(NodeError {
                path: resource_path(node.index).key("data"),
                expression: None,
                message,
            }),
        }
    }

    pub(super) fn evaluate_template(
        &mut self,
        node: &CompiledNode,
        iterations: Option<Vec<Iteration>>,
        namespaced: Option<bool>,
        plan: &mut NodePlan,
    ) -> NodeState {
        let template_path = resource_path(node.index).key("template");
        let lifecycle = match self.lifecycle(node) {
            Ok(lifecycle) => lifecycle,
            Err(state) => return state,
        };
        let rendered = match self.render_all(node, &iterations) {
            Ok(rendered) => rendered,
            Err(state) => return state,
        };
        let size = rendered.len();
        let is_collection = iterations.is_some();
        let mut desired = Vec::with_capacity(size);
        for (position, (mut object, key)) in rendered.into_iter().enumerate() {
            if let Err(message) = self.normalize_namespace(&mut object, namespaced) {
                return NodeState::Failed(NodeError {
                    path: template_path.key("metadata").key("namespace"),
                    expression: None,
                    message,
                });
            }
            let Some(object_key) = ObjectKey::of(&object) else {
                return NodeState::Failed(NodeError {
                    path: template_path.key("metadata").key("name"),
                    expression: None,
                    message: "the rendered object has no metadata.name".to_owned(),
                });
            };
            if let Some(owner) = self.targets.get(&object_key) {
                let message = if *owner == node.id {
                    format!(
                        "two items of the collection render the same object {object_key}: metadata.name must differ between items"
                    )
                } else {
                    format!("{object_key} is also rendered by resource {owner}")
                };
                return NodeState::Failed(NodeError {
                    path: template_path.key("metadata").key("name"),
                    expression: None,
                    message,
                });
            }
            self.targets.insert(object_key.clone(), node.id.clone());
            self.add_metadata(
                &mut object,
                node,
                is_collection.then_some((position, size, key.as_deref())),
                lifecycle,
            );
            desired.push(DesiredObject {
                key: object_key,
                object,
                collection_index: is_collection.then_some(position),
            });
        }
        // What has been observed of the desired objects, in desired order.
        let observed: Vec<&Json> = desired
            .iter()
            .filter_map(|object| self.observed.get(&object.key))
            .collect();
        let missing: Vec<ObjectKey> = desired
            .iter()
            .filter(|object| self.observed.get(&object.key).is_none())
            .map(|object| object.key.clone())
            .collect();
        plan.desired = desired;
        if plan.propagation.is_some() {
            plan.items_ready = plan
                .desired
                .iter()
                .map(|object| {
                    let observed = self.observed.get(&object.key);
                    observed.is_some_and(|observed| self.item_ready(node, observed))
                })
                .collect();
        }
        let value = if is_collection {
            self.convert_list(&observed, &node.cel_type)
        } else {
            match observed.first() {
                Some(object) => self.convert(object, &node.cel_type),
                None => return NodeState::Waiting(Wait::Applied(missing)),
            }
        };
        if let Some(failed) = self.bind(node, value, template_path) {
            return failed;
        }
        if !missing.is_empty() {
            return NodeState::Waiting(Wait::Applied(missing));
        }
        let terminating: Vec<ObjectKey> = plan
            .desired
            .iter()
            .filter(|object| {
                self.observed
                    .get(&object.key)
                    .and_then(|observed| observed.pointer("/metadata/deletionTimestamp"))
                    .is_some_and(|stamp| !stamp.is_null())
            })
            .map(|object| object.key.clone())
            .collect();
        if !terminating.is_empty() {
            return NodeState::Waiting(Wait::Terminating(terminating));
        }
        if node.ready_when.is_empty() && self.options.kind_readiness {
            let keys: Vec<ObjectKey> = plan
                .desired
                .iter()
                .map(|object| object.key.clone())
                .collect();
            return self.kind_readiness(node, &keys);
        }
        self.readiness(node, &observed, is_collection)
    }

    pub(super) fn evaluate_external(
        &mut self,
        node: &CompiledNode,
        group: &str,
        kind: &str,
        by_selector: bool,
    ) -> NodeState {
        let path = resource_path(node.index).key("externalRef").key("metadata");
        let rendered = match self.render_all(node, &None) {
            Ok(mut rendered) => rendered.pop().map(|(value, _)| value).unwrap_or(Json::Null),
            Err(state) => return state,
        };
        let namespace = rendered["namespace"]
            .as_str()
            .filter(|namespace| !namespace.is_empty())
            .map(str::to_owned);
        let namespaced =
            kro_schema::Catalog::kubernetes_namespaced(&kro_schema::Gvk::new(group, "", kind))
                .or_else(|| {
                    self.options
                        .served_scopes
                        .get(&kro_schema::GroupKind::new(group, kind))
                        .copied()
                });
        if by_selector {
            let selector = match LabelSelector::parse(&rendered["selector"]) {
                Ok(selector) => selector,
                Err(error) => {
                    return NodeState::Failed(NodeError {
                        path: path.key("selector"),
                        expression: None,
                        message: error.to_string(),
                    });
                }
            };
            let list = ListKey {
                group: group.to_owned(),
                kind: kind.to_owned(),
                namespace: if namespaced == Some(false) {
                    None
                } else {
                    namespace
                },
            };
            if !self.observed.is_listed(&list) {
                self.reads.insert(Read::List(list.clone()));
                return NodeState::Waiting(Wait::Read(Read::List(list)));
            }
            let items: Vec<&Json> = self
                .observed
                .list(&list)
                .filter(|object| selector.matches(object))
                .collect();
            let value = self.convert_list(&items, &node.cel_type);
            if let Some(failed) = self.bind(node, value, path) {
                return failed;
            }
            return self.readiness(node, &items, true);
        }
        let Some(name) = rendered["name"].as_str().filter(|name| !name.is_empty()) else {
            return NodeState::Failed(NodeError {
                path: path.key("name"),
                expression: None,
                message: "the externalRef has no name".to_owned(),
            });
        };
        let key = ObjectKey {
            group: group.to_owned(),
            kind: kind.to_owned(),
            namespace: match namespaced {
                Some(false) => None,
                _ => namespace.or_else(|| self.info.namespace.clone()),
            },
            name: name.to_owned(),
        };
        let Some(object) = self.observed.get(&key) else {
            if self.observed.is_known(&key) {
                return NodeState::Waiting(Wait::NotFound(key));
            }
            self.reads.insert(Read::Object(key.clone()));
            return NodeState::Waiting(Wait::Read(Read::Object(key)));
        };
        let value = self.convert(object, &node.cel_type);
        if let Some(failed) = self.bind(node, value, path) {
            return failed;
        }
        self.readiness(node, &[object], false)
    }

    /// Binds the node's value for the expressions that read it; a value that cannot be
    /// converted fails the node (the returned state).
    pub(super) fn bind(
        &mut self,
        node: &CompiledNode,
        value: Result<Value, String>,
        path: FieldPath,
    ) -> Option<NodeState> {
        match value {
            Ok(value) => {
                self.values.insert(node.id.to_string(), value);
                None
            }
            Err(message) => Some(NodeState::Failed(NodeError {
                path,
                expression: None,
                message,
            })),
        }
    }

    /// readyWhen (all must hold), or ready when observed; reported to the observer.
    pub(super) fn readiness(
        &mut self,
        node: &CompiledNode,
        observed: &[&Json],
        is_collection: bool,
    ) -> NodeState {
        let state = self.ready_when(node, observed, is_collection);
        crate::observe::report(|observer| observer.ready_checked(state == NodeState::Ready));
        state
    }

    /// Whether one observed item of a collection is ready: not being deleted, and its
    /// `readyWhen` conditions on `each` hold (or its kind's readiness, with
    /// [`PlanOptions::kind_readiness`], when it has none).
    fn item_ready(&mut self, node: &CompiledNode, object: &Json) -> bool {
        if object
            .pointer("/metadata/deletionTimestamp")
            .is_some_and(|stamp| !stamp.is_null())
        {
            return false;
        }
        if node.ready_when.is_empty() {
            return !self.options.kind_readiness
                || matches!(kind_readiness(object), KindReadiness::Ready);
        }
        let element = match &node.cel_type {
            Type::List(element) => element.as_ref().clone(),
            other => other.clone(),
        };
        let Ok(value) = self.convert(object, &element) else {
            return false;
        };
        node.ready_when
            .iter()
            .filter(|condition| uses_each(condition))
            .all(|condition| {
                let scope = Scope::new(&self.values).with("each", value.clone());
                matches!(super::evaluate_condition(condition, &scope), Ok(true))
            })
    }

    /// readyWhen (all must hold), or ready when observed.
    fn ready_when(
        &mut self,
        node: &CompiledNode,
        observed: &[&Json],
        is_collection: bool,
    ) -> NodeState {
        let element = match &node.cel_type {
            Type::List(element) if is_collection => element.as_ref().clone(),
            other => other.clone(),
        };
        for (position, condition) in node.ready_when.iter().enumerate() {
            let path = resource_path(node.index).key("readyWhen").index(position);
            let per_item = is_collection && uses_each(condition);
            if per_item {
                for (item, object) in observed.iter().enumerate() {
                    let value = match self.convert(object, &element) {
                        Ok(value) => value,
                        Err(message) => {
                            return NodeState::Failed(NodeError {
                                path,
                                expression: Some(condition.source.clone()),
                                message,
                            });
                        }
                    };
                    let scope = Scope::new(&self.values).with("each", value);
                    if let Some(state) = ready_state(condition, &scope, Some(item), &path) {
                        match self.assume(node, state) {
                            Some(state) => return state,
                            None => break,
                        }
                    }
                }
            } else {
                let scope = Scope::new(&self.values);
                if let Some(state) = ready_state(condition, &scope, None, &path)
                    && let Some(state) = self.assume(node, state)
                {
                    return state;
                }
            }
        }
        NodeState::Ready
    }

    /// [`PlanOptions::kind_readiness`]: every object (observed, in desired order) ready by
    /// the rules of its kind; the first failed one fails the node, the first waiting one
    /// makes it wait (unless assumed ready, when the rest are checked still).
    fn kind_readiness(&mut self, node: &CompiledNode, keys: &[ObjectKey]) -> NodeState {
        let observed = self.observed;
        for key in keys {
            let Some(object) = observed.get(key) else {
                continue;
            };
            let state = match kind_readiness(object) {
                KindReadiness::Ready => continue,
                KindReadiness::Waiting(reason) => NodeState::Waiting(Wait::Kind {
                    key: key.clone(),
                    reason,
                }),
                KindReadiness::Failed(reason) => NodeState::Failed(NodeError {
                    path: resource_path(node.index),
                    expression: None,
                    message: format!("{key}: {reason}"),
                }),
            };
            if let Some(state) = self.assume(node, state) {
                return state;
            }
        }
        NodeState::Ready
    }

    /// With [`PlanOptions::assume_ready`], records a readiness wait as assumed met (`None`);
    /// otherwise, and for errors, returns the state.
    pub(super) fn assume(&mut self, node: &CompiledNode, state: NodeState) -> Option<NodeState> {
        match state {
            NodeState::Waiting(wait) if self.options.assume_ready => {
                self.assumed.entry(node.id.clone()).or_default().push(wait);
                None
            }
            other => Some(other),
        }
    }

    /// A namespaced child without a namespace gets the instance's; under a cluster-scoped
    /// instance it must name one.
    pub(super) fn normalize_namespace(
        &self,
        object: &mut Json,
        namespaced: Option<bool>,
    ) -> Result<(), String> {
        if namespaced == Some(false) {
            // The API server ignores a namespace on a cluster-scoped object; so does the key.
            if let Some(metadata) = object.get_mut("metadata").and_then(Json::as_object_mut) {
                metadata.remove("namespace");
            }
            return Ok(());
        }
        let has_namespace = object
            .pointer("/metadata/namespace")
            .and_then(Json::as_str)
            .is_some_and(|namespace| !namespace.is_empty());
        if has_namespace {
            return Ok(());
        }
        match &self.info.namespace {
            Some(namespace) => {
                if let Some(metadata) = object.get_mut("metadata").and_then(Json::as_object_mut) {
                    metadata.insert("namespace".to_owned(), Json::String(namespace.clone()));
                }
                Ok(())
            }
            None => Err(
                "a namespaced object under a cluster-scoped instance must set metadata.namespace"
                    .to_owned(),
            ),
        }
    }

    /// The delete policy of the node's objects, when it has a `lifecycle`: the fixed one, or
    /// its expression's (which reads `schema` only, so it cannot wait for data: a missing
    /// field is an error, as for an includeWhen on the instance).
    fn lifecycle(&self, node: &CompiledNode) -> Result<Option<DeletePolicy>, NodeState> {
        let expression = match &node.lifecycle {
            None => return Ok(None),
            Some(Lifecycle::Fixed(policy)) => return Ok(Some(*policy)),
            Some(Lifecycle::Expression(expression)) => expression,
        };
        let path = resource_path(node.index).key("lifecycle");
        let fail = |expression: String, message: String| {
            NodeState::Failed(NodeError {
                path: path.clone(),
                expression: Some(expression),
                message,
            })
        };
        match evaluate(expression, &Scope::new(&self.values)) {
            Ok(value) => DeletePolicy::of_value(&value)
                .map(Some)
                .map_err(|message| fail(expression.source.clone(), message)),
            Err(Problem::Pending { expression, reason }) => Err(fail(expression, reason)),
            Err(problem) => Err(problem_state(path.clone(), problem)),
        }
    }

    pub(super) fn add_metadata(
        &self,
        object: &mut Json,
        node: &CompiledNode,
        collection: Option<(usize, usize, Option<&str>)>,
        lifecycle: Option<DeletePolicy>,
    ) {
        let info = &self.info;
        let mut labels = vec![
            (metadata::OWNED_LABEL, "true".to_owned()),
            (
                metadata::KRO_VERSION_LABEL,
                self.options.kro_version.clone(),
            ),
            (metadata::MANAGED_BY_LABEL, "kro".to_owned()),
            (metadata::INSTANCE_NAME_LABEL, info.name.clone()),
            (metadata::INSTANCE_GROUP_LABEL, info.group.clone()),
            (metadata::INSTANCE_VERSION_LABEL, info.version.clone()),
            (metadata::INSTANCE_KIND_LABEL, info.kind.clone()),
            (metadata::NODE_ID_LABEL, node.id.to_string()),
            (metadata::APPLYSET_PART_OF_LABEL, info.applyset.clone()),
        ];
        if let Some(uid) = &info.uid {
            labels.push((metadata::INSTANCE_ID_LABEL, uid.clone()));
        }
        if let Some(namespace) = &info.namespace {
            labels.push((metadata::INSTANCE_NAMESPACE_LABEL, namespace.clone()));
        }
        if let Some((index, size, key)) = collection {
            labels.push((metadata::COLLECTION_INDEX_LABEL, index.to_string()));
            labels.push((metadata::COLLECTION_SIZE_LABEL, size.to_string()));
            let key = key
                .filter(|key| metadata::is_label_value(key))
                .map_or_else(|| index.to_string(), str::to_owned);
            labels.push((metadata::COLLECTION_KEY_LABEL, key));
        }
        metadata::add_labels(object, labels);
        if let Some(order) = self.apply_order.get(&node.id) {
            metadata::add_annotations(
                object,
                [(metadata::APPLY_ORDER_ANNOTATION, order.to_string())],
            );
        }
        if let Some(policy) = lifecycle {
            metadata::add_annotations(
                object,
                [(LIFECYCLE_POLICY_ANNOTATION, policy.as_str().to_owned())],
            );
        }
    }
}
