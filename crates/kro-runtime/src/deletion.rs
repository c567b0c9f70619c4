//! The order in which an instance's managed objects are deleted: waves by
//! `internal.kro.run/apply-order`, highest first, so that dependents go before what they
//! depend on. Like upstream, the order comes from the objects themselves (the annotation kro
//! wrote when applying them), so deletion needs neither CEL nor the current graph; objects
//! without a usable order are deleted last.

use std::collections::BTreeMap;

use kro_graph::CompiledGraph;
use serde_json::Value as Json;

use crate::apply_order::apply_orders;
use crate::metadata::{APPLY_ORDER_ANNOTATION, NODE_ID_LABEL};
use crate::observed::ObjectKey;

/// Objects deleted together.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeletionWave {
    /// The apply order shared by the wave's objects (0: unknown, deleted last).
    pub order: usize,
    /// The objects, sorted.
    pub objects: Vec<ObjectKey>,
}

/// The deletion waves of `managed` objects, first wave first. An object whose annotation is
/// missing or malformed takes the order of its `kro.run/node-id` in `graph` when one is given,
/// else 0. Objects without an identity are left out.
pub fn deletion_waves(managed: &[Json], graph: Option<&CompiledGraph>) -> Vec<DeletionWave> {
    let orders = graph.map(apply_orders).unwrap_or_default();
    let mut waves: BTreeMap<usize, Vec<ObjectKey>> = BTreeMap::new();
    for object in managed {
        let Some(key) = ObjectKey::of(object) else {
            continue;
        };
        let annotated = object
            .pointer("/metadata/annotations")
            .and_then(|annotations| annotations.get(APPLY_ORDER_ANNOTATION))
            .and_then(Json::as_str)
            .and_then(|order| order.parse::<usize>().ok())
            .filter(|order| *order > 0);
        let from_graph = || {
            object
                .pointer("/metadata/labels")
                .and_then(|labels| labels.get(NODE_ID_LABEL))
                .and_then(Json::as_str)
                .and_then(|id| orders.get(id).copied())
        };
        let order = annotated.or_else(from_graph).unwrap_or(0);
        waves.entry(order).or_default().push(key);
    }
    waves
        .into_iter()
        .rev()
        .map(|(order, mut objects)| {
            objects.sort();
            DeletionWave { order, objects }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(name: &str, order: Option<&str>, node: &str) -> Json {
        let mut object = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "default", "labels": {NODE_ID_LABEL: node}}
        });
        if let Some(order) = order {
            object["metadata"]["annotations"] = json!({ APPLY_ORDER_ANNOTATION: order });
        }
        object
    }

    #[test]
    fn highest_order_first_and_unknown_last() {
        let waves = deletion_waves(
            &[
                object("a", Some("1"), "a"),
                object("c", Some("3"), "c"),
                object("b2", Some("2"), "b"),
                object("b1", Some("2"), "b"),
                object("stray", Some("not-a-number"), "gone"),
                object("zero", Some("0"), "gone"),
            ],
            None,
        );
        let summary: Vec<(usize, Vec<String>)> = waves
            .iter()
            .map(|wave| {
                (
                    wave.order,
                    wave.objects.iter().map(|key| key.name.clone()).collect(),
                )
            })
            .collect();
        assert_eq!(
            summary,
            vec![
                (3, vec!["c".to_owned()]),
                (2, vec!["b1".to_owned(), "b2".to_owned()]),
                (1, vec!["a".to_owned()]),
                (0, vec!["stray".to_owned(), "zero".to_owned()]),
            ]
        );
    }
}
