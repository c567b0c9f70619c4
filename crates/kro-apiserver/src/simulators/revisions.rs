//! ControllerRevisions: the history the stateful set and daemon set controllers keep of a
//! workload's pod templates, one object per template (`<name>-<hash>`, `revision` counting
//! up, owned by the workload), which `kubectl rollout history` reads.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::ControllerRevision;
use kube::api::{Api, ListParams};
use kube::{Resource, ResourceExt};
use serde_json::{Value, json};

use super::support::{Context, ReconcileError, controller_reference};

/// Makes sure `owner` has a ControllerRevision of `template` named `name`, labelled with the
/// template's labels and `hash_label: hash`, numbered after the owner's other revisions.
///
/// # Errors
/// When the server cannot be read or written.
pub(super) async fn ensure_revision<K>(
    context: &Context,
    owner: &K,
    name: &str,
    (hash_label, hash): (&str, &str),
    template: &Value,
) -> Result<(), ReconcileError>
where
    K: Resource<DynamicType = ()>,
{
    let Some(namespace) = owner.meta().namespace.clone() else {
        return Ok(());
    };
    let owner_uid = owner.meta().uid.clone().unwrap_or_default();
    let api: Api<ControllerRevision> = Api::namespaced(context.client.clone(), &namespace);
    let owned: Vec<ControllerRevision> =
        api.list(&ListParams::default())
            .await?
            .items
            .into_iter()
            .filter(|revision| {
                revision.owner_references().iter().any(|reference| {
                    reference.uid == owner_uid && reference.controller == Some(true)
                })
            })
            .collect();
    if owned.iter().any(|revision| revision.name_any() == name) {
        return Ok(());
    }
    let number = owned
        .iter()
        .map(|revision| revision.revision)
        .max()
        .unwrap_or(0)
        + 1;
    let mut labels: BTreeMap<String, String> = template
        .pointer("/metadata/labels")
        .and_then(|labels| serde_json::from_value(labels.clone()).ok())
        .unwrap_or_default();
    labels.insert(hash_label.to_owned(), hash.to_owned());
    let mut replaced = template.clone();
    replaced["$patch"] = json!("replace");
    let revision: ControllerRevision = serde_json::from_value(json!({
        "metadata": {
            "name": name,
            "labels": labels,
            "ownerReferences": [controller_reference(owner)?],
        },
        "data": {"spec": {"template": replaced}},
        "revision": number,
    }))
    .map_err(|error| ReconcileError::Shape(error.to_string()))?;
    match api.create(&context.post_params(), &revision).await {
        Ok(_) => Ok(()),
        // Made meanwhile, or the namespace is terminating.
        Err(kube::Error::Api(status)) if status.code == 409 || status.code == 403 => Ok(()),
        Err(error) => Err(error.into()),
    }
}
