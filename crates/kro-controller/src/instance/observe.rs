//! What the watch caches hold of the objects a plan needs: the objects it applies and the
//! objects and lists it reads.

use kro_runtime::{Observed, Plan, Read};

use super::graph_version::GraphVersion;
use kro_engine::Applier;

/// Fills `observed` with what the caches hold of the objects `current` needs and has not seen,
/// each brought up to the generation `applier` last wrote in `scope` (a cache may lag behind
/// that write); `true` when what was learned can change the plan (so it is made again).
///
/// A desired object found absent cannot: the plan reads a desired object only when it is
/// there, and one not looked up yet plans the same as one known absent (it waits to be
/// applied). So a new instance's plan is not made again just to learn that its objects do not
/// exist yet. An external object or list is another matter: not looked up, the plan asks to
/// read it; known absent, it waits for it to appear.
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
            Some((_, cache)) => {
                cache.wait_until_ready().await;
                match cache.get(key.namespace.as_deref(), &key.name) {
                    Some(mut object) => {
                        applier.catch_up(scope, key, &mut object);
                        observed.insert(object);
                        learned = true;
                    }
                    None => observed.insert_absent(key.clone()),
                }
            }
            None => observed.insert_absent(key.clone()),
        }
    }
    for read in &current.reads {
        match read {
            Read::Object(key) => {
                if observed.is_known(key) {
                    continue;
                }
                match graph.external.get(&key.group_kind()) {
                    Some((_, cache)) => {
                        cache.wait_until_ready().await;
                        match cache.get(key.namespace.as_deref(), &key.name) {
                            Some(object) => {
                                observed.insert(object);
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
                if let Some((_, cache)) = graph.external.get(&list.group_kind()) {
                    cache.wait_until_ready().await;
                    for object in cache.list(list.namespace.as_deref()) {
                        observed.insert(object);
                    }
                }
                observed.insert_listed(list.clone());
                learned = true;
            }
        }
    }
    learned
}
