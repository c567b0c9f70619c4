//! kro's Kubernetes names in one place, as upstream kro's `pkg/metadata`: the API group and
//! version, the labels and annotations kro puts on what it manages, its finalizer, and the
//! field managers it writes with.
//!
//! These are the names that make the project a drop-in for upstream kro: a cluster moves
//! between the two only while every one of them is spelled exactly as upstream spells it, so
//! nothing else in the workspace writes them out again.

// API group and version.

/// kro's API group; also the default group of generated kinds.
pub const GROUP: &str = "kro.run";
/// The version of kro's own API.
pub const VERSION: &str = "v1alpha1";
/// The `apiVersion` of ResourceGraphDefinitions.
pub const API_VERSION: &str = "kro.run/v1alpha1";
/// The kind of ResourceGraphDefinitions.
pub const RGD_KIND: &str = "ResourceGraphDefinition";
/// The resource (plural) name of ResourceGraphDefinitions.
pub const RGD_PLURAL: &str = "resourcegraphdefinitions";
/// The name of the ResourceGraphDefinition CRD.
pub const RGD_CRD_NAME: &str = "resourcegraphdefinitions.kro.run";

// Labels on everything kro manages.

/// `kro.run/owned: "true"` on everything kro manages.
pub const OWNED_LABEL: &str = "kro.run/owned";
/// The version of kro that last applied the object.
pub const KRO_VERSION_LABEL: &str = "kro.run/kro-version";
/// The UID of the RGD an instance or a CRD belongs to.
pub const RGD_ID_LABEL: &str = "kro.run/resource-graph-definition-id";
/// The name of the RGD an instance or a CRD belongs to.
pub const RGD_NAME_LABEL: &str = "kro.run/resource-graph-definition-name";
/// `app.kubernetes.io/managed-by: kro`.
pub const MANAGED_BY_LABEL: &str = "app.kubernetes.io/managed-by";
/// The instance's UID.
pub const INSTANCE_ID_LABEL: &str = "kro.run/instance-id";
/// The instance's name.
pub const INSTANCE_NAME_LABEL: &str = "kro.run/instance-name";
/// The instance's namespace (namespaced instances only).
pub const INSTANCE_NAMESPACE_LABEL: &str = "kro.run/instance-namespace";
/// The instance's API group.
pub const INSTANCE_GROUP_LABEL: &str = "kro.run/instance-group";
/// The instance's API version.
pub const INSTANCE_VERSION_LABEL: &str = "kro.run/instance-version";
/// The instance's kind.
pub const INSTANCE_KIND_LABEL: &str = "kro.run/instance-kind";
/// The id of the RGD resource the object was rendered from.
pub const NODE_ID_LABEL: &str = "kro.run/node-id";
/// A collection item's position.
pub const COLLECTION_INDEX_LABEL: &str = "kro.run/collection-index";
/// The size of the collection an item belongs to.
pub const COLLECTION_SIZE_LABEL: &str = "kro.run/collection-size";
/// A collection item's key: the map key it was rendered for (when it is a valid label value),
/// else its position (KREP-2).
pub const COLLECTION_KEY_LABEL: &str = "kro.run/collection-key";

// ApplySets (KEP-3659): an instance is the parent of its objects.

/// The ApplySet an object belongs to.
pub const APPLYSET_PART_OF_LABEL: &str = "applyset.kubernetes.io/part-of";
/// The ApplySet id label on the parent.
pub const APPLYSET_ID_LABEL: &str = "applyset.kubernetes.io/id";
/// The tool that manages the ApplySet (`kro/<version>`).
pub const APPLYSET_TOOLING_ANNOTATION: &str = "applyset.kubernetes.io/tooling";
/// The group-kinds of the members (`ConfigMap,Deployment.apps`).
pub const APPLYSET_GROUP_KINDS_ANNOTATION: &str = "applyset.kubernetes.io/contains-group-kinds";
/// The namespaces of members outside the parent's.
pub const APPLYSET_NAMESPACES_ANNOTATION: &str = "applyset.kubernetes.io/additional-namespaces";
/// kro's hash over the id, group-kinds and namespaces.
pub const APPLYSET_INVENTORY_HASH_ANNOTATION: &str = "internal.kro.run/applyset-inventory-hash";

// Annotations.

/// The deletion wave of an object, 1-based, highest deleted first.
pub const APPLY_ORDER_ANNOTATION: &str = "internal.kro.run/apply-order";
/// `kro.run/allow-breaking-changes: "true"` on an RGD lets its CRD change incompatibly.
pub const ALLOW_BREAKING_CHANGES_ANNOTATION: &str = "kro.run/allow-breaking-changes";
/// `kro.run/reconcile: suspended` on an instance stops kro from changing its objects.
pub const RECONCILE_ANNOTATION: &str = "kro.run/reconcile";
/// On an instance a `<Kind>Set` runs: the hash of the Set template the instance was last
/// written from (as `pod-template-hash` on a ReplicaSet's Pods), so a rollout knows which
/// instances are up to date, across restarts.
pub const SET_TEMPLATE_HASH_LABEL: &str = "kro.run/set-template-hash";
/// On an instance a `<Kind>Set` runs: the Set's name (the Set's selector, `status.selector`).
pub const SET_NAME_LABEL: &str = "kro.run/set-name";
/// Field manager of the `<Kind>Set` controller (instances it writes, its status).
pub const SET_MANAGER: &str = "kro.run/set";
/// Field manager of `kro apply` (a deploy with no controller): the objects it applies and
/// the ConfigMap that stands in for the instance as their ApplySet parent.
pub const DIRECT_MANAGER: &str = "kro.run/direct";
/// The prefix of the name of the ConfigMap `kro apply` makes the ApplySet parent of an
/// instance's objects: `kro-direct.<kind in lower case>.<group>.<instance name>`.
pub const DIRECT_PARENT_PREFIX: &str = "kro-direct";

/// The finalizer kro puts on instances and RGDs.
pub const FINALIZER: &str = "kro.run/finalizer";

// Field managers (server-side apply).

/// Applies an instance's objects.
pub const APPLY_MANAGER: &str = "kro.run/applyset";
/// Adds kro's labels to an instance.
pub const LABELLER_MANAGER: &str = "kro.run/labeller";
/// Writes the ApplySet parent metadata and the finalizer on an instance.
pub const PARENT_MANAGER: &str = "kro.run/applyset-parent";
/// Writes an instance's status.
pub const STATUS_MANAGER: &str = "kro.run/status";
/// Writes the CRDs generated from RGDs.
pub const CRD_MANAGER: &str = "kro.run/resource-graph-definition";

/// The name of the Lease the controller's replicas elect a leader through.
pub const LEADER_LEASE_NAME: &str = "controller.kro.run";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_version_is_group_and_version() {
        assert_eq!(API_VERSION, format!("{GROUP}/{VERSION}"));
        assert_eq!(RGD_CRD_NAME, format!("{RGD_PLURAL}.{GROUP}"));
    }
}
