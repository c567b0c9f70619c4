//! What direct deploy knows of the objects a plan needs: read from the server (at once,
//! bounded) when first needed, then kept up to date by the watches of the wait.

use std::collections::{BTreeSet, HashMap, HashSet};

use futures_util::{StreamExt, stream};
use kro_graph::{CompiledGraph, NodeKind};
use kro_runtime::{ObjectKey, Observed, Plan, Read};
use kro_schema::GroupKind;
use serde_json::Value as Json;

use super::error::DirectError;
use super::watch::{Seen, Selection, Target, Watches};
use crate::apply::Applier;
use crate::error::ObjectError;
use crate::json::{filed_as, text};
use crate::kinds::Kinds;

/// What reads for a deploy: the client, the discovery cache, and the applier whose last writes
/// a watched object is brought up to.
pub(super) struct Reader<'a> {
    pub(super) client: &'a kube::Client,
    pub(super) kinds: &'a Kinds,
    pub(super) applier: &'a Applier,
    /// Objects read at once.
    pub(super) concurrency: usize,
}

impl Reader<'_> {
    /// Starts the watches of what `current` waits for (see [`watch_targets`]); `true` when
    /// a kind to watch is not served yet (a CRD still being set up), so that discovery is
    /// asked again in a moment.
    pub(super) async fn follow_waits(
        &self,
        watches: &mut Watches,
        current: &Plan,
        reads: &BTreeSet<Read>,
        versions: &HashMap<GroupKind, String>,
        observed: &Observed,
        id: &str,
    ) -> bool {
        let mut unserved = false;
        for (target, key) in watch_targets(current, reads, versions, observed, id) {
            match self
                .kinds
                .resolve(&key.group, version_of(&target.api_version), &key.kind)
                .await
            {
                Ok(kind) => watches.follow(target, &kind),
                Err(error) => {
                    tracing::debug!(%error, "not watched yet");
                    unserved = true;
                }
            }
        }
        unserved
    }

    /// Learns from discovery whether the kinds `graph` uses are namespaced, for those whose
    /// scope neither the graph's schemas nor the built-in catalog say (a kind not served yet
    /// is asked about again next time).
    pub(super) async fn learn_scopes(
        &self,
        graph: &CompiledGraph,
        scopes: &mut std::collections::BTreeMap<kro_schema::GroupKind, bool>,
    ) {
        for node in &graph.nodes {
            let (gvk, known) = match &node.kind {
                NodeKind::Template {
                    gvk, namespaced, ..
                } => (gvk, *namespaced),
                NodeKind::ExternalRef { gvk, .. } => (gvk, None),
                _ => continue,
            };
            let group_kind = gvk.group_kind();
            if known.is_some()
                || scopes.contains_key(&group_kind)
                || kro_schema::Catalog::kubernetes_namespaced(gvk).is_some()
            {
                continue;
            }
            if let Ok(kind) = self
                .kinds
                .resolve(gvk.group(), gvk.version(), gvk.kind())
                .await
            {
                scopes.insert(group_kind, kind.namespaced);
            }
        }
    }

    /// Reads what the plan needs and has not seen: its objects (at once, bounded) and the
    /// objects and lists its externalRefs read. `true` when anything was learned.
    pub(super) async fn fill(
        &self,
        current: &Plan,
        versions: &HashMap<kro_schema::GroupKind, String>,
        observed: &mut Observed,
        reads: &mut BTreeSet<Read>,
    ) -> Result<bool, DirectError> {
        let mut wanted: Vec<(ObjectKey, String)> = current
            .nodes
            .iter()
            .flat_map(|node| &node.desired)
            .filter(|desired| !observed.is_known(&desired.key))
            .map(|desired| {
                let api_version = text(&desired.object, "/apiVersion");
                (desired.key.clone(), version_of(api_version).to_owned())
            })
            .collect();
        let mut lists = Vec::new();
        for read in &current.reads {
            reads.insert(read.clone());
            match read {
                Read::Object(key) if !observed.is_known(key) => {
                    if let Some(version) = versions.get(&key.group_kind()) {
                        wanted.push((key.clone(), version.clone()));
                    } else {
                        observed.insert_absent(key.clone());
                    }
                }
                Read::List(list) if !observed.is_listed(list) => lists.push(list.clone()),
                _ => {}
            }
        }
        if wanted.is_empty() && lists.is_empty() {
            return Ok(false);
        }
        // Each kind is looked up once (at once), not once per object of it.
        let mut kinds: Vec<(&str, &str, &str)> = wanted
            .iter()
            .map(|(key, version)| (key.group.as_str(), version.as_str(), key.kind.as_str()))
            .collect();
        kinds.sort_unstable();
        kinds.dedup();
        futures_util::future::join_all(
            kinds
                .into_iter()
                .map(|(group, version, kind)| self.kinds.resolve(group, version, kind)),
        )
        .await;
        let gets: Vec<_> = wanted
            .iter()
            .map(|(key, version)| async move { (key, self.get(key, version).await) })
            .collect();
        let answers: Vec<_> = stream::iter(gets)
            .buffer_unordered(self.concurrency.max(1))
            .collect()
            .await;
        for (key, answer) in answers {
            match answer? {
                Some(object) => {
                    observed.insert(filed_as(key, object));
                }
                None => observed.insert_absent(key.clone()),
            }
        }
        for list in lists {
            if let Some(version) = versions.get(&list.group_kind()) {
                for object in self.list(&list, version).await? {
                    observed.insert(object);
                }
            }
            observed.insert_listed(list);
        }
        Ok(true)
    }

    /// One object, `None` when it (or its kind) does not exist.
    async fn get(&self, key: &ObjectKey, version: &str) -> Result<Option<Json>, DirectError> {
        let Ok(kind) = self.kinds.resolve(&key.group, version, &key.kind).await else {
            return Ok(None);
        };
        let found = kind
            .api(self.client, key.namespace.as_deref())
            .get_opt(&key.name)
            .await
            .map_err(|source| ObjectError::Read {
                key: Box::new(key.clone()),
                source: Box::new(source),
            })?;
        found
            .map(|mut object| {
                object.types.get_or_insert_with(|| kube::api::TypeMeta {
                    api_version: kind.resource.api_version.clone(),
                    kind: kind.resource.kind.clone(),
                });
                serde_json::to_value(object).map_err(DirectError::Json)
            })
            .transpose()
    }

    /// Every object of a list an externalRef selects from (none when the kind is not served).
    async fn list(
        &self,
        list: &kro_runtime::ListKey,
        version: &str,
    ) -> Result<Vec<Json>, DirectError> {
        let Ok(kind) = self.kinds.resolve(&list.group, version, &list.kind).await else {
            return Ok(Vec::new());
        };
        let answer = kind
            .api(self.client, list.namespace.as_deref())
            .list(&kube::api::ListParams::default())
            .await
            .map_err(|source| ObjectError::List {
                kind: list.group_kind().to_string(),
                source: Box::new(source),
            })?;
        answer
            .items
            .into_iter()
            .map(|mut object| {
                object.types.get_or_insert_with(|| kube::api::TypeMeta {
                    api_version: kind.resource.api_version.clone(),
                    kind: kind.resource.kind.clone(),
                });
                serde_json::to_value(object).map_err(DirectError::Json)
            })
            .collect()
    }

    /// Records what a watch saw; an answer older than what is held is ignored, and an object
    /// cached at an earlier generation than this engine last applied is read as such.
    pub(super) fn learn(&self, uid: &str, observed: &mut Observed, seen: Seen) {
        match seen {
            Seen::Object(mut object) => {
                let Some(key) = ObjectKey::of(&object) else {
                    return;
                };
                if let Some(held) = observed.get(&key)
                    && is_older(&object, held)
                {
                    return;
                }
                self.applier.catch_up(uid, &key, &mut object);
                observed.insert(object);
            }
            Seen::Gone(key, uid) => {
                // A deletion of an earlier object of the same name says nothing of this one.
                let held = observed
                    .get(&key)
                    .map(|held| text(held, "/metadata/uid").to_owned());
                if held.is_none_or(|held| uid.is_empty() || held == uid) {
                    observed.insert_absent(key);
                }
            }
            Seen::Listed {
                target,
                group,
                present,
            } => {
                let gone: Vec<ObjectKey> = observed
                    .objects()
                    .filter(|(key, object)| {
                        !present.contains(*key) && target.selects(&group, key, object)
                    })
                    .map(|(key, _)| key.clone())
                    .collect();
                for key in gone {
                    observed.insert_absent(key);
                }
            }
        }
    }
}

/// The version `graph` uses of each kind it names (templates and externalRefs).
pub(super) fn graph_versions(graph: &CompiledGraph) -> HashMap<kro_schema::GroupKind, String> {
    graph
        .nodes
        .iter()
        .filter_map(|node| match &node.kind {
            NodeKind::Template { gvk, .. } | NodeKind::ExternalRef { gvk, .. } => {
                Some((gvk.group_kind(), gvk.version().to_owned()))
            }
            _ => None,
        })
        .collect()
}

/// The version of an apiVersion (`apps/v1` → `v1`).
pub(super) fn version_of(api_version: &str) -> &str {
    api_version.rsplit('/').next().unwrap_or(api_version)
}

/// Whether `seen` is an older state of `held` (both with numeric resource versions, as
/// etcd and kro's server give): a watch may report a state older than an apply's answer.
pub(super) fn is_older(seen: &Json, held: &Json) -> bool {
    let version = |object: &Json| {
        object
            .pointer("/metadata/resourceVersion")
            .and_then(Json::as_str)
            .and_then(|version| version.parse::<u64>().ok())
    };
    let same_object = text(seen, "/metadata/uid") == text(held, "/metadata/uid");
    same_object && matches!((version(seen), version(held)), (Some(seen), Some(held)) if seen < held)
}

/// What to watch while the plan waits, each with an object key naming its kind: the kinds
/// and namespaces of the instance's objects (by ApplySet label), and every externalRef read.
pub(super) fn watch_targets(
    current: &Plan,
    reads: &BTreeSet<Read>,
    versions: &HashMap<kro_schema::GroupKind, String>,
    observed: &Observed,
    id: &str,
) -> Vec<(Target, ObjectKey)> {
    let mut targets = Vec::new();
    let mut seen = HashSet::new();
    for desired in current.nodes.iter().flat_map(|node| &node.desired) {
        if observed.get(&desired.key).is_none() {
            continue;
        }
        let target = Target {
            api_version: text(&desired.object, "/apiVersion").to_owned(),
            kind: desired.key.kind.clone(),
            namespace: desired.key.namespace.clone(),
            selection: Selection::Members(id.to_owned()),
        };
        if seen.insert(target.clone()) {
            targets.push((target, desired.key.clone()));
        }
    }
    for read in reads {
        let (key, selection, namespace) = match read {
            Read::Object(key) => (
                key.clone(),
                Selection::Named(key.name.clone()),
                key.namespace.clone(),
            ),
            Read::List(list) => (
                ObjectKey {
                    group: list.group.clone(),
                    kind: list.kind.clone(),
                    namespace: list.namespace.clone(),
                    name: String::new(),
                },
                Selection::All,
                list.namespace.clone(),
            ),
        };
        let Some(version) = versions.get(&key.group_kind()) else {
            continue;
        };
        let api_version = if key.group.is_empty() {
            version.clone()
        } else {
            format!("{}/{version}", key.group)
        };
        let target = Target {
            api_version,
            kind: key.kind.clone(),
            namespace,
            selection,
        };
        if seen.insert(target.clone()) {
            targets.push((target, key));
        }
    }
    targets
}
