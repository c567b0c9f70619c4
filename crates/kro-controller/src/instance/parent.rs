//! The instance as kro's managed object and ApplySet parent: the finalizer and labels kro
//! puts on it, and the ApplySet inventory (the group-kinds and namespaces of its objects) it
//! carries, widened before objects are applied and trimmed after pruning. The inventory
//! names the kinds of the nodes still waiting as well as those of the objects applied: an
//! instance whose levels bring new kinds (a Deployment, then its Service, then an Ingress)
//! has its inventory written once, not once per level; ApplySet allows a superset, and once
//! nothing waits it is exactly the kinds of the members.

use kro_engine::converge::{add_member, waiting_kinds};
use kro_graph::metadata::{
    FINALIZER, KRO_VERSION_LABEL, LABELLER_MANAGER, OWNED_LABEL, PARENT_MANAGER, RGD_ID_LABEL,
    RGD_NAME_LABEL,
};
use kro_runtime::{Inventory, ObjectKey, Parent, Plan};
use kube::api::{Patch, PatchParams};
use serde_json::{Value as Json, json};

use super::InstanceController;
use super::graph_version::GraphVersion;
use crate::error::{ReconcileError, Request};
use crate::object::Object;
use crate::shared::Shared;

impl InstanceController {
    pub(super) fn parent_id(&self, instance: &Object) -> String {
        Parent {
            name: instance.name(),
            namespace: instance.namespace(),
            kind: &self.kind.resource.kind,
            group: &self.kind.resource.group,
        }
        .id()
    }

    /// Puts kro's finalizer and labels on the instance (only when missing).
    pub(super) async fn ensure_managed(
        &self,
        shared: &Shared,
        graph: &GraphVersion,
        instance: &mut Object,
    ) -> Result<(), ReconcileError> {
        let labels = json!({
            OWNED_LABEL: "true",
            KRO_VERSION_LABEL: shared.settings.kro_version,
            RGD_ID_LABEL: graph.rgd.uid,
            RGD_NAME_LABEL: graph.rgd.name,
        });
        let has_finalizer = instance.has_finalizer(FINALIZER);
        let labelled = labels.as_object().is_some_and(|wanted| {
            wanted
                .iter()
                .all(|(key, value)| instance.label(key) == value.as_str())
        });
        if has_finalizer && labelled {
            return Ok(());
        }
        let body = self.metadata_body(
            instance,
            json!({"finalizers": [FINALIZER], "labels": labels}),
        );
        *instance = self
            .patch_instance(shared, instance, LABELLER_MANAGER, &body)
            .await?;
        Ok(())
    }

    /// An apply body of the instance's `metadata`, with its UID: a precondition, so that an
    /// instance deleted since the cache showed it is not created again by the apply (which
    /// would bring it back, with kro's finalizer, and its objects after it).
    pub(super) fn metadata_body(&self, instance: &Object, mut metadata: Json) -> Json {
        metadata["name"] = json!(instance.name());
        if !instance.namespace().is_empty() {
            metadata["namespace"] = json!(instance.namespace());
        }
        let uid = instance.uid();
        if !uid.is_empty() {
            metadata["uid"] = json!(uid);
        }
        json!({
            "apiVersion": self.kind.resource.api_version,
            "kind": self.kind.resource.kind,
            "metadata": metadata,
        })
    }

    pub(super) async fn patch_instance(
        &self,
        shared: &Shared,
        instance: &Object,
        manager: &str,
        body: &Json,
    ) -> Result<Object, ReconcileError> {
        let api = self.kind.api(&shared.client, Some(instance.namespace()));
        let updated = api
            .patch(
                instance.name(),
                &PatchParams::apply(manager).force(),
                &Patch::Apply(body),
            )
            .await
            .map_err(ReconcileError::api(Request::ApplyInstanceMetadata))?;
        self.own_writes
            .wrote(instance.uid(), updated.metadata.resource_version.as_deref());
        Object::new(&updated)
    }

    /// The inventory the instance carries (empty when it carries none or a broken one).
    pub(super) fn inventory(&self, instance: &Object) -> Inventory {
        let map = |entries: &Option<std::collections::BTreeMap<String, String>>| {
            entries
                .iter()
                .flatten()
                .map(|(key, value)| (key.clone(), Json::String(value.clone())))
                .collect::<serde_json::Map<String, Json>>()
        };
        let meta = instance.meta();
        Parent {
            name: instance.name(),
            namespace: instance.namespace(),
            kind: &self.kind.resource.kind,
            group: &self.kind.resource.group,
        }
        .inventory(&map(&meta.labels), &map(&meta.annotations))
        .unwrap_or_default()
    }

    /// Writes the ApplySet parent metadata for `inventory` when the instance says otherwise.
    pub(super) async fn write_inventory(
        &self,
        shared: &Shared,
        instance: &mut Object,
        inventory: &Inventory,
    ) -> Result<(), ReconcileError> {
        let parent = Parent {
            name: instance.name(),
            namespace: instance.namespace(),
            kind: &self.kind.resource.kind,
            group: &self.kind.resource.group,
        };
        let wanted = parent.metadata(inventory, &shared.settings.kro_version);
        let holds = |part: &str, held: for<'o> fn(&'o Object, &str) -> Option<&'o str>| {
            wanted[part].as_object().is_some_and(|entries| {
                entries
                    .iter()
                    .all(|(key, value)| held(instance, key) == value.as_str())
            })
        };
        let current_matches =
            holds("labels", Object::label) && holds("annotations", Object::annotation);
        if current_matches {
            return Ok(());
        }
        let body = self.metadata_body(instance, wanted);
        *instance = self
            .patch_instance(shared, instance, PARENT_MANAGER, &body)
            .await?;
        Ok(())
    }

    /// Widens the inventory to cover `keys` before they are applied, so that deletion finds
    /// them even if kro stops right after, and the kinds of the nodes of `current` still
    /// waiting.
    pub(super) async fn grow_inventory<'a>(
        &self,
        shared: &Shared,
        graph: &GraphVersion,
        current: &Plan,
        instance: &mut Object,
        keys: impl Iterator<Item = &'a ObjectKey>,
    ) -> Result<(), ReconcileError> {
        let mut inventory = self.inventory(instance);
        let namespace = instance.namespace().to_owned();
        for key in keys {
            add_member(&mut inventory, key, &namespace);
        }
        inventory
            .group_kinds
            .extend(waiting_kinds(&graph.graph, current));
        self.write_inventory(shared, instance, &inventory).await
    }
}
