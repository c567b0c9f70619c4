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
use crate::object_json::{text, to_json};
use crate::shared::Shared;

impl InstanceController {
    pub(super) fn parent(&self, instance: &Json) -> (String, String) {
        (
            text(instance, "/metadata/name").to_owned(),
            text(instance, "/metadata/namespace").to_owned(),
        )
    }

    pub(super) fn parent_id(&self, instance: &Json) -> String {
        let (name, namespace) = self.parent(instance);
        Parent {
            name: &name,
            namespace: &namespace,
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
        instance: &mut Json,
    ) -> Result<(), ReconcileError> {
        let labels = json!({
            OWNED_LABEL: "true",
            KRO_VERSION_LABEL: shared.settings.kro_version,
            RGD_ID_LABEL: graph.rgd.uid,
            RGD_NAME_LABEL: graph.rgd.name,
        });
        let has_finalizer = instance
            .pointer("/metadata/finalizers")
            .and_then(Json::as_array)
            .is_some_and(|finalizers| finalizers.iter().any(|f| f == FINALIZER));
        let labelled = labels.as_object().is_some_and(|wanted| {
            wanted.iter().all(|(key, value)| {
                instance
                    .pointer("/metadata/labels")
                    .and_then(|labels| labels.get(key))
                    == Some(value)
            })
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
    pub(super) fn metadata_body(&self, instance: &Json, mut metadata: Json) -> Json {
        let (name, namespace) = self.parent(instance);
        metadata["name"] = json!(name);
        if !namespace.is_empty() {
            metadata["namespace"] = json!(namespace);
        }
        let uid = text(instance, "/metadata/uid");
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
        instance: &Json,
        manager: &str,
        body: &Json,
    ) -> Result<Json, ReconcileError> {
        let (name, namespace) = self.parent(instance);
        let api = self.kind.api(&shared.client, Some(&namespace));
        let updated = api
            .patch(
                &name,
                &PatchParams::apply(manager).force(),
                &Patch::Apply(body),
            )
            .await
            .map_err(ReconcileError::api(Request::ApplyInstanceMetadata))?;
        self.own_writes.wrote(
            text(instance, "/metadata/uid"),
            updated.metadata.resource_version.as_deref(),
        );
        to_json(&updated)
    }

    /// The inventory the instance carries (empty when it carries none or a broken one).
    pub(super) fn inventory(&self, instance: &Json) -> Inventory {
        let (name, namespace) = self.parent(instance);
        let empty = serde_json::Map::new();
        let map = |pointer: &str| {
            instance
                .pointer(pointer)
                .and_then(Json::as_object)
                .unwrap_or(&empty)
                .clone()
        };
        Parent {
            name: &name,
            namespace: &namespace,
            kind: &self.kind.resource.kind,
            group: &self.kind.resource.group,
        }
        .inventory(&map("/metadata/labels"), &map("/metadata/annotations"))
        .unwrap_or_default()
    }

    /// Writes the ApplySet parent metadata for `inventory` when the instance says otherwise.
    pub(super) async fn write_inventory(
        &self,
        shared: &Shared,
        instance: &mut Json,
        inventory: &Inventory,
    ) -> Result<(), ReconcileError> {
        let (name, namespace) = self.parent(instance);
        let parent = Parent {
            name: &name,
            namespace: &namespace,
            kind: &self.kind.resource.kind,
            group: &self.kind.resource.group,
        };
        let wanted = parent.metadata(inventory, &shared.settings.kro_version);
        let current_matches = ["labels", "annotations"].iter().all(|part| {
            wanted[part].as_object().is_some_and(|entries| {
                entries.iter().all(|(key, value)| {
                    instance
                        .pointer(&format!("/metadata/{part}"))
                        .and_then(|map| map.get(key))
                        == Some(value)
                })
            })
        });
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
        instance: &mut Json,
        keys: impl Iterator<Item = &'a ObjectKey>,
    ) -> Result<(), ReconcileError> {
        let mut inventory = self.inventory(instance);
        let namespace = text(instance, "/metadata/namespace").to_owned();
        for key in keys {
            add_member(&mut inventory, key, &namespace);
        }
        inventory
            .group_kinds
            .extend(waiting_kinds(&graph.graph, current));
        self.write_inventory(shared, instance, &inventory).await
    }
}
