//! The namespace controller of kube-controller-manager: when a namespace is deleted, delete
//! everything in it (discovery-driven, every namespaced resource that can be listed and
//! deleted), report progress in the namespace's conditions with the controller's reasons and
//! messages, and once nothing is left remove the `kubernetes` finalizer through
//! `PUT /api/v1/namespaces/<name>/finalize`, which lets the namespace go.

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::discovery::{Discovery, Scope, verbs};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};
use tokio::sync::watch;

/// The finalizer the namespace controller owns.
const FINALIZER: &str = "kubernetes";
/// The field manager of its writes, as on a cluster.
const MANAGER: &str = "kube-controller-manager";
/// How long it waits before looking again at a namespace whose content is still going.
const RECHECK: Duration = Duration::from_millis(200);

/// The condition types the controller maintains, in its order, with the reason and message
/// of their "all is well" form (status False).
const CONDITIONS: [(&str, &str, &str); 5] = [
    (
        "NamespaceDeletionDiscoveryFailure",
        "ResourcesDiscovered",
        "All resources successfully discovered",
    ),
    (
        "NamespaceDeletionGroupVersionParsingFailure",
        "ParsedGroupVersions",
        "All legacy kube types successfully parsed",
    ),
    (
        "NamespaceDeletionContentFailure",
        "ContentDeleted",
        "All content successfully deleted, may be waiting on finalization",
    ),
    (
        "NamespaceContentRemaining",
        "ContentRemoved",
        "All content successfully removed",
    ),
    (
        "NamespaceFinalizersRemaining",
        "ContentHasNoFinalizers",
        "All content-preserving finalizers finished",
    ),
];

/// Watches namespaces and finalizes each deleted one, until `stop`.
pub(super) async fn run(client: Client, mut stop: watch::Receiver<bool>) {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let in_progress: Arc<Mutex<HashSet<String>>> = Arc::default();
    let events = watcher(namespaces, watcher::Config::default())
        .default_backoff()
        .applied_objects();
    futures_util::pin_mut!(events);
    loop {
        tokio::select! {
            _ = stop.changed() => return,
            event = events.next() => match event {
                Some(Ok(namespace)) if namespace.metadata.deletion_timestamp.is_some() => {
                    let name = namespace.name_any();
                    let claimed = in_progress
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .insert(name.clone());
                    if claimed {
                        tokio::spawn(finalize(
                            client.clone(),
                            name,
                            Arc::clone(&in_progress),
                            stop.clone(),
                        ));
                    }
                }
                Some(Ok(_)) => {}
                Some(Err(error)) => tracing::debug!(%error, "namespace simulator: watch error"),
                None => return,
            },
        }
    }
}

/// Works on one deleted namespace until it is gone (or no longer the controller's).
async fn finalize(
    client: Client,
    name: String,
    in_progress: Arc<Mutex<HashSet<String>>>,
    mut stop: watch::Receiver<bool>,
) {
    loop {
        match step(&client, &name).await {
            Ok(true) => break,
            Ok(false) => {}
            Err(error) => tracing::debug!(%error, namespace = %name, "namespace simulator"),
        }
        tokio::select! {
            _ = stop.changed() => break,
            () = tokio::time::sleep(RECHECK) => {}
        }
    }
    in_progress
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .remove(&name);
}

/// One pass: delete the content, report what remains; finalize when nothing does. `true` when
/// the namespace needs nothing more.
async fn step(client: &Client, name: &str) -> Result<bool, kube::Error> {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let Some(namespace) = namespaces.get_opt(name).await? else {
        return Ok(true);
    };
    let finalizers = namespace
        .spec
        .as_ref()
        .and_then(|spec| spec.finalizers.clone())
        .unwrap_or_default();
    if namespace.metadata.deletion_timestamp.is_none()
        || !finalizers.iter().any(|finalizer| finalizer == FINALIZER)
    {
        return Ok(true);
    }
    let discovery = Discovery::new(client.clone()).run().await?;
    let mut remaining: BTreeMap<String, usize> = BTreeMap::new();
    let mut by_finalizer: BTreeMap<String, usize> = BTreeMap::new();
    for group in discovery.groups() {
        for (resource, capabilities) in group.recommended_resources() {
            if capabilities.scope != Scope::Namespaced
                || !capabilities.supports_operation(verbs::LIST)
                || !capabilities.supports_operation(verbs::DELETE)
            {
                continue;
            }
            let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), name, &resource);
            let background = DeleteParams::background();
            if capabilities.supports_operation(verbs::DELETE_COLLECTION) {
                api.delete_collection(&background, &ListParams::default())
                    .await?;
            } else {
                for object in api.list(&ListParams::default()).await? {
                    api.delete(&object.name_any(), &background).await?;
                }
            }
            let left = api.list(&ListParams::default()).await?;
            if left.items.is_empty() {
                continue;
            }
            remaining.insert(
                format!("{}.{}", resource.plural, resource.group),
                left.items.len(),
            );
            for object in &left.items {
                for finalizer in object.finalizers() {
                    *by_finalizer.entry(finalizer.clone()).or_default() += 1;
                }
            }
        }
    }
    report(&namespaces, &namespace, &remaining, &by_finalizer).await?;
    if !remaining.is_empty() {
        return Ok(false);
    }
    let mut finalized = namespace.clone();
    if let Some(spec) = finalized.spec.as_mut() {
        spec.finalizers = Some(
            finalizers
                .into_iter()
                .filter(|finalizer| finalizer != FINALIZER)
                .collect(),
        );
    }
    let params = PostParams {
        field_manager: Some(MANAGER.to_owned()),
        ..PostParams::default()
    };
    namespaces
        .replace_subresource("finalize", name, &params, &finalized)
        .await?;
    Ok(true)
}

/// Writes the controller's conditions to the namespace's status when they changed.
async fn report(
    namespaces: &Api<Namespace>,
    namespace: &Namespace,
    remaining: &BTreeMap<String, usize>,
    by_finalizer: &BTreeMap<String, usize>,
) -> Result<(), kube::Error> {
    let current: Vec<Value> = namespace
        .status
        .as_ref()
        .and_then(|status| status.conditions.as_ref())
        .map(|conditions| {
            conditions
                .iter()
                .filter_map(|condition| serde_json::to_value(condition).ok())
                .collect()
        })
        .unwrap_or_default();
    let content = (!remaining.is_empty()).then(|| {
        let parts: Vec<String> = remaining
            .iter()
            .map(|(resource, count)| format!("{resource} has {count} resource instances"))
            .collect();
        (
            "SomeResourcesRemain",
            format!("Some resources are remaining: {}", parts.join(", ")),
        )
    });
    let finalizers = (!by_finalizer.is_empty()).then(|| {
        let parts: Vec<String> = by_finalizer
            .iter()
            .map(|(finalizer, count)| format!("{finalizer} in {count} resource instances"))
            .collect();
        (
            "SomeFinalizersRemain",
            format!(
                "Some content in the namespace has finalizers remaining: {}",
                parts.join(", ")
            ),
        )
    });
    let mut conditions = current.clone();
    for (condition_type, ok_reason, ok_message) in CONDITIONS {
        let failing = match condition_type {
            "NamespaceContentRemaining" => content.clone(),
            "NamespaceFinalizersRemaining" => finalizers.clone(),
            _ => None,
        };
        let (status, reason, message) = match failing {
            Some((reason, message)) => ("True", reason, message),
            None => ("False", ok_reason, ok_message.to_owned()),
        };
        let wanted = json!({
            "type": condition_type,
            "status": status,
            "reason": reason,
            "message": message,
            "lastTransitionTime": crate::objects::now(),
        });
        match conditions
            .iter_mut()
            .find(|condition| condition["type"] == condition_type)
        {
            Some(existing) => {
                let same = existing["status"] == wanted["status"]
                    && existing["reason"] == wanted["reason"]
                    && existing["message"] == wanted["message"];
                if !same {
                    *existing = wanted;
                }
            }
            None => conditions.push(wanted),
        }
    }
    if conditions == current {
        return Ok(());
    }
    let patch = json!({"status": {"conditions": conditions}});
    let params = PatchParams {
        field_manager: Some(MANAGER.to_owned()),
        ..PatchParams::default()
    };
    namespaces
        .patch_status(&namespace.name_any(), &params, &Patch::Merge(&patch))
        .await?;
    Ok(())
}
