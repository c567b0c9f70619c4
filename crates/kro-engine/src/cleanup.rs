//! The requests of cleanup, written once for every driver: listing the members of an
//! ApplySet of one kind, and deleting one member so that a namesake made since is spared.
//! Which members to delete, and in which waves, is the runtime's (`prunable`,
//! `deletion_waves`); when to wait for them to go is the driver's.

use kro_graph::metadata::APPLYSET_PART_OF_LABEL;
use kro_runtime::ObjectKey;
use kube::api::{DeleteParams, ListParams, Preconditions, PropagationPolicy, TypeMeta};
use serde_json::Value as Json;

use crate::kinds::ServedKind;

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
