//! One compiled graph of an instance controller, with the watch caches of the kinds it uses.

use std::collections::HashMap;

use kro_graph::{CompiledGraph, NodeKind};

use crate::cache::ObjectCache;
use crate::crd_plan::RgdIdentity;
use crate::shared::Shared;
use crate::watches::{GroupKind, Selection};
use kro_engine::kinds::ServedKind;

/// A compiled graph with the caches of the kinds it uses.
pub(crate) struct GraphVersion {
    pub(crate) graph: CompiledGraph,
    pub(crate) rgd: RgdIdentity,
    /// The GraphRevision this graph is (its number), once the RGD controller resolved it.
    pub(crate) revision: Option<i64>,
    /// Managed objects, by the kinds the templates create.
    pub(super) children: HashMap<GroupKind, (ServedKind, ObjectCache)>,
    /// Every object, by the kinds externalRefs read.
    pub(super) external: HashMap<GroupKind, (ServedKind, ObjectCache)>,
    /// Whether each kind the graph uses is namespaced, as the server serves it: the planner
    /// needs it for kinds the graph's schemas leave unscoped (a cluster-scoped custom kind
    /// an externalRef reads is known by its name alone).
    pub(super) scopes: std::collections::BTreeMap<GroupKind, bool>,
}

impl GraphVersion {
    /// The kinds the graph uses, each with the verbs the controller needs on them.
    pub(crate) fn needs(&self) -> Vec<(&ServedKind, &'static [&'static str])> {
        let mut needs: Vec<(&ServedKind, &'static [&'static str])> = self
            .children
            .values()
            .map(|(kind, _)| (kind, &crate::access::MANAGED_VERBS[..]))
            .collect();
        needs.extend(
            self.external
                .values()
                .map(|(kind, _)| (kind, &crate::access::READ_VERBS[..])),
        );
        needs.sort_by(|a, b| a.0.resource.plural.cmp(&b.0.resource.plural));
        needs
    }

    /// Resolves the kinds `graph` uses and starts (or joins) their watches.
    pub(crate) async fn prepare(
        shared: &Shared,
        graph: CompiledGraph,
        rgd: RgdIdentity,
        revision: Option<i64>,
    ) -> Result<GraphVersion, kro_engine::kinds::KindError> {
        let mut children = HashMap::new();
        let mut external = HashMap::new();
        for node in &graph.nodes {
            let (gvk, into, selection) = match &node.kind {
                NodeKind::Template { gvk, .. } => (gvk, &mut children, Selection::Managed),
                NodeKind::ExternalRef { gvk, .. } => (gvk, &mut external, Selection::All),
                _ => continue,
            };
            let key = gvk.group_kind();
            if into.contains_key(&key) {
                continue;
            }
            let kind = shared
                .kinds
                .resolve(gvk.group(), gvk.version(), gvk.kind())
                .await?;
            let cache = shared.watches.cache(&kind, selection);
            into.insert(key, (kind, cache));
        }
        let scopes = children
            .iter()
            .chain(&external)
            .map(|(group_kind, (kind, _))| (group_kind.clone(), kind.namespaced))
            .collect();
        Ok(GraphVersion {
            graph,
            rgd,
            revision,
            children,
            external,
            scopes,
        })
    }
}
