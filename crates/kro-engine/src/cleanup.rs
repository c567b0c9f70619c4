//! Cleanup, written once for every driver: which members of an ApplySet a plan prunes and the
//! inventory that remains ([`pruning`]), deleting one wave of members at once
//! ([`delete_wave`]), and the requests under them: listing the members of one kind, and
//! deleting one member so that a namesake made since is spared. Which members a plan no longer
//! wants, and the waves, are the runtime's rules (`prunable`, `deletion_waves`); what a driver
//! does between waves (wait for them to go, or come back later) is its own. A member whose
//! lifecycle retains it is released instead ([`release_member`]).

use std::future::Future;

use futures_util::{StreamExt, stream};
use kro_graph::CompiledGraph;
use kro_graph::metadata::APPLYSET_PART_OF_LABEL;
use kro_runtime::release_patch;
use kro_runtime::{Inventory, ObjectKey, Plan, desired_keys, prunable};
use kube::api::{
    DeleteParams, ListParams, Patch, PatchParams, Preconditions, PropagationPolicy, TypeMeta,
};
use serde_json::Value as Json;

use crate::converge::trimmed_inventory;
use crate::kinds::ServedKind;

/// What a plan prunes of an ApplySet's members, and the inventory that remains.
#[derive(Debug, Default)]
pub struct Pruning {
    /// The members that left the plan, to be deleted in waves.
    pub prune: Vec<Json>,
    /// The inventory once they are gone: the kinds and namespaces of what the plan wants, of
    /// the members kept, and the kinds of the nodes still waiting.
    pub inventory: Inventory,
}

/// Splits `members` of the ApplySet of the instance whose objects carry `scope` (its UID, or
/// a direct deploy's parent UID) by `current`: those the runtime finds prunable go, the
/// others stay in the inventory with what the plan wants.
pub fn pruning(
    graph: &CompiledGraph,
    current: &Plan,
    members: Vec<Json>,
    scope: &str,
    parent_namespace: &str,
) -> Pruning {
    let desired = desired_keys(current);
    let mut kept = Vec::new();
    let mut prune = Vec::new();
    for member in members {
        if prunable(current, &desired, &member, scope) {
            prune.push(member);
        } else if let Some(key) = ObjectKey::of(&member) {
            kept.push(key);
        }
    }
    let inventory = trimmed_inventory(graph, current, desired, &kept, parent_namespace);
    Pruning { prune, inventory }
}

/// Whether a member is being deleted already (it has a `deletionTimestamp`).
///
/// ```
/// use kro_engine::cleanup::is_going;
/// let going = serde_json::json!({"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z"}});
/// assert!(is_going(&going));
/// assert!(!is_going(&serde_json::json!({"metadata": {"name": "web"}})));
/// ```
pub fn is_going(member: &Json) -> bool {
    member.pointer("/metadata/deletionTimestamp").is_some()
}

/// Deletes the objects `wave` names among `members` at once, with at most `concurrency`
/// requests under way, each through `delete` (handed the key and the member as listed); what
/// became of each, in the order they finished. A key with no member is passed over.
pub async fn delete_wave<'m, T, E, Fut>(
    members: &'m [Json],
    wave: &'m [ObjectKey],
    concurrency: usize,
    delete: impl Fn(&'m ObjectKey, &'m Json) -> Fut,
) -> Vec<(&'m ObjectKey, Result<T, E>)>
where
    Fut: Future<Output = Result<T, E>>,
{
    // Built in a loop, not an iterator adapter's closure: a future made in a closure is not
    // general enough over its lifetimes for a caller that must be Send.
    let mut deletions = Vec::with_capacity(wave.len());
    for key in wave {
        let listed = members
            .iter()
            .find(|member| ObjectKey::of(member).as_ref() == Some(key));
        if let Some(member) = listed {
            let deleting = delete(key, member);
            deletions.push(async move { (key, deleting.await) });
        }
    }
    stream::iter(deletions)
        .buffer_unordered(concurrency.max(1))
        .collect()
        .await
}

/// The objects of `kind` that are members of the ApplySet `applyset` (by their
/// `applyset.kubernetes.io/part-of` label) in `namespace`, or in every namespace when `None`;
/// each with the apiVersion and kind that list answers leave out of their items (as
/// kube-apiserver does for built-in kinds), since an object is known by them.
///
/// # Errors
/// The server's refusal of the list.
pub async fn list_members(
    client: &kube::Client,
    kind: &ServedKind,
    namespace: Option<&str>,
    applyset: &str,
) -> Result<Vec<Json>, kube::Error> {
    let list = kind
        .api(client, namespace)
        .list(&ListParams::default().labels(&format!("{APPLYSET_PART_OF_LABEL}={applyset}")))
        .await?;
    let types = TypeMeta {
        api_version: kind.resource.api_version.clone(),
        kind: kind.resource.kind.clone(),
    };
    list.items
        .into_iter()
        .map(|mut object| {
            object.types.get_or_insert_with(|| types.clone());
            serde_json::to_value(object).map_err(kube::Error::SerdeError)
        })
        .collect()
}

/// Deletes the object `key` of `kind` with background propagation, with its UID as a
/// precondition when `uid` is known (not empty). Success when the delete was accepted, when
/// the object is gone already (404), and when the name now belongs to a namesake made since
/// (409: the UID precondition failed), which is not kro's to delete.
///
/// # Errors
/// Any other refusal.
pub async fn delete_member(
    client: &kube::Client,
    kind: &ServedKind,
    key: &ObjectKey,
    uid: &str,
) -> Result<(), kube::Error> {
    let params = DeleteParams {
        preconditions: (!uid.is_empty()).then(|| Preconditions {
            uid: Some(uid.to_owned()),
            resource_version: None,
        }),
        propagation_policy: Some(PropagationPolicy::Background),
        ..DeleteParams::default()
    };
    match kind
        .api(client, key.namespace.as_deref())
        .delete(&key.name, &params)
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 404 || status.code == 409 => Ok(()),
        Err(error) => Err(error),
    }
}

/// How many times a release is tried when the object keeps changing under it.
const RELEASE_ATTEMPTS: usize = 5;

/// Releases the object `key` of `kind` instead of deleting it (a `retain` lifecycle, or an
/// instance that detaches on deletion): its kro labels, internal annotations and kro's
/// `managedFields` entries removed in one JSON patch guarded by its resourceVersion. The
/// object is read afresh first (a watch cache may hold it without `managedFields`); when a
/// write comes in between, it is read again and the release retried. `true` when this call
/// released it; `false` when it was gone, had nothing of kro's left on it (released
/// already), or the name now belongs to another object than the one with `uid` (when known).
///
/// # Errors
/// Any refusal of the read or the patch other than a conflict; the last conflict after
/// [`RELEASE_ATTEMPTS`] tries.
pub async fn release_member(
    client: &kube::Client,
    kind: &ServedKind,
    key: &ObjectKey,
    uid: &str,
) -> Result<bool, kube::Error> {
    let api = kind.api(client, key.namespace.as_deref());
    let mut attempt = 0;
    loop {
        attempt += 1;
        let Some(object) = api.get_opt(&key.name).await? else {
            return Ok(false);
        };
        if !uid.is_empty() && object.metadata.uid.as_deref() != Some(uid) {
            return Ok(false);
        }
        let object = serde_json::to_value(object).map_err(kube::Error::SerdeError)?;
        let Some(patch) = release_patch(&object) else {
            return Ok(false);
        };
        let patch: json_patch::Patch =
            serde_json::from_value(patch).map_err(kube::Error::SerdeError)?;
        match api
            .patch(
                &key.name,
                &PatchParams::default(),
                &Patch::Json::<()>(patch),
            )
            .await
        {
            Ok(_) => return Ok(true),
            Err(kube::Error::Api(status)) if status.code == 404 => return Ok(false),
            // 409: the resourceVersion moved; 422: the patch's test of it failed.
            Err(kube::Error::Api(status))
                if (status.code == 409 || status.code == 422) && attempt < RELEASE_ATTEMPTS =>
            {
                tracing::debug!(object = %key, attempt, "the object changed while being released; retrying");
            }
            Err(error) => return Err(error),
        }
    }
}
