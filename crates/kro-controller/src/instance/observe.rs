//! What the watch caches hold of the objects a plan needs: the objects it applies and the
//! objects and lists it reads.

use kro_runtime::{Observed, Plan, Read};
use serde_json::Value as Json;

use super::GraphVersion;
use crate::apply::Applier;
use crate::watches::cached;

/// Fills `observed` with what the caches hold of the objects `current` needs and has not seen,
/// each brought up to the generation `applier` last wrote in `scope` (a cache may lag behind
/// that write); `true` when anything was learned (so the plan is made again).
pub(super) async fn fill(
    graph: &GraphVersion,
    current: &Plan,
    observed: &mut Observed,
    applier: &Applier,
    scope: &str,
) -> bool {
    let mut learned = false;
    for desired in current.nodes.iter().flat_map(|node| &node.desired) {
        if observed.is_known(&desired.key) {
            continue;
        }
        let key = &desired.key;
        match graph.children.get(&key.group_kind()) {
            Some((kind, store)) => {
                let _ = store.wait_until_ready().await;
                match cached(store, &kind.resource, key.namespace.as_deref(), &key.name) {
                    Some(object) => {
                        let mut object = serde_json::to_value(&*object).unwrap_or(Json::Null);
                        applier.catch_up(scope, key, &mut object);
                        observed.insert(object);
                    }
                    None => observed.insert_absent(key.clone()),
                }
            }
            None => observed.insert_absent(key.clone()),
        }
        learned = true;
    }
    for read in &current.reads {
        match read {
            Read::Object(key) => {
                if observed.is_known(key) {
                    continue;
                }
                match graph.external.get(&key.group_kind()) {
                    Some((kind, store)) => {
                        let _ = store.wait_until_ready().await;
                        match cached(store, &kind.resource, key.namespace.as_deref(), &key.name) {
                            Some(object) => {
                                observed
                                    .insert(serde_json::to_value(&*object).unwrap_or(Json::Null));
                            }
                            None => observed.insert_absent(key.clone()),
                        }
                    }
                    None => observed.insert_absent(key.clone()),
                }
                learned = true;
            }
            Read::List(list) => {
                if observed.is_listed(list) {
                    continue;
                }
                if let Some((_, store)) = graph.external.get(&list.group_kind()) {
                    let _ = store.wait_until_ready().await;
                    for object in store.state() {
                        if list.namespace.is_none() || object.metadata.namespace == list.namespace {
                            observed.insert(serde_json::to_value(&*object).unwrap_or(Json::Null));
                        }
                    }
                }
                observed.insert_listed(list.clone());
                learned = true;
            }
        }
    }
    learned
}
