//! A dynamic provisioner, the volume binder and the protection controllers: a pending
//! PersistentVolumeClaim gets a PersistentVolume of its size (`pvc-<claim uid>`, reclaim
//! policy Delete) after the knob's delay and becomes Bound, with the binder's annotations; a
//! volume whose claim is gone is deleted (or Released, when it is retained); the
//! `kubernetes.io/pvc-protection` finalizer leaves a deleted claim no pod uses, and
//! `kubernetes.io/pv-protection` a deleted volume no claim holds.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim, Pod};
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, Patch};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use serde_json::{Value, json};
use tokio::sync::watch;

use super::replica_sets::normalized;
use super::support::{Context, ReconcileError, Reconciled, drive, to_json};

/// Runs the provisioner and the binder until `stop`.
pub(super) async fn run(context: Arc<Context>, stop: watch::Receiver<bool>) {
    let claims: Api<PersistentVolumeClaim> = Api::all(context.client.clone());
    let volumes: Api<PersistentVolume> = Api::all(context.client.clone());
    let pods: Api<Pod> = Api::all(context.client.clone());
    let binder = Controller::new(claims.clone(), watcher::Config::default()).watches(
        pods,
        watcher::Config::default(),
        |pod| {
            let namespace = pod.namespace().unwrap_or_default();
            pod.spec
                .iter()
                .flat_map(|spec| spec.volumes.iter().flatten())
                .filter_map(|volume| volume.persistent_volume_claim.as_ref())
                .map(|claim| ObjectRef::new(&claim.claim_name).within(&namespace))
                .collect::<Vec<_>>()
        },
    );
    let reclaimer = Controller::new(volumes, watcher::Config::default()).watches(
        claims,
        watcher::Config::default(),
        |claim| {
            claim
                .spec
                .as_ref()
                .and_then(|spec| spec.volume_name.as_deref())
                .map(ObjectRef::new)
        },
    );
    tokio::join!(
        drive("volumes", binder, bind, Arc::clone(&context), stop.clone()),
        drive("volumes", reclaimer, reclaim, context, stop),
    );
}

async fn bind(claim: Arc<PersistentVolumeClaim>, context: Arc<Context>) -> Reconciled {
    let (Some(namespace), Some(uid)) = (claim.namespace(), claim.metadata.uid.clone()) else {
        return Ok(Action::await_change());
    };
    let current = normalized(&to_json(&claim.status));
    if claim.metadata.deletion_timestamp.is_some() {
        let pods: Api<Pod> = Api::namespaced(context.client.clone(), &namespace);
        let name = claim.name_any();
        let in_use = pods
            .list(&Default::default())
            .await?
            .items
            .iter()
            .any(|pod| {
                super::support::pod_active(pod)
                    && pod
                        .spec
                        .iter()
                        .flat_map(|spec| spec.volumes.iter().flatten())
                        .filter_map(|volume| volume.persistent_volume_claim.as_ref())
                        .any(|source| source.claim_name == name)
            });
        if !in_use {
            let claims: Api<PersistentVolumeClaim> =
                Api::namespaced(context.client.clone(), &namespace);
            release(&context, &claims, claim.as_ref(), PVC_PROTECTION).await?;
        }
        return Ok(Action::await_change());
    }
    if current["phase"] == "Bound" {
        return Ok(Action::await_change());
    }
    if let Err(left) = context.stage_due(&uid, "bind", context.knobs.volume_bind_delay) {
        return Ok(Action::requeue(left));
    }
    let name = claim.name_any();
    let spec = to_json(&claim.spec);
    let storage = spec
        .pointer("/resources/requests/storage")
        .cloned()
        .unwrap_or(json!("1Gi"));
    let modes = spec
        .get("accessModes")
        .cloned()
        .unwrap_or(json!(["ReadWriteOnce"]));
    let volume_name = format!("pvc-{uid}");
    let mut volume = json!({
        "metadata": {
            "name": volume_name,
            "annotations": {"pv.kubernetes.io/provisioned-by": "kro.run/simulated-provisioner"},
        },
        "spec": {
            "capacity": {"storage": storage},
            "accessModes": modes,
            "persistentVolumeReclaimPolicy": "Delete",
            "volumeMode": spec.get("volumeMode").cloned().unwrap_or(json!("Filesystem")),
            "hostPath": {"path": format!("/var/lib/kro/volumes/{volume_name}"), "type": ""},
            "claimRef": {
                "apiVersion": "v1", "kind": "PersistentVolumeClaim",
                "namespace": namespace, "name": name, "uid": uid,
                "resourceVersion": claim.resource_version(),
            },
        },
    });
    if let Some(class) = spec
        .get("storageClassName")
        .filter(|class| !class.is_null())
    {
        volume["spec"]["storageClassName"] = class.clone();
    }
    let volume: PersistentVolume =
        serde_json::from_value(volume).map_err(|error| ReconcileError::Shape(error.to_string()))?;
    let volumes: Api<PersistentVolume> = Api::all(context.client.clone());
    match volumes.create(&context.post_params(), &volume).await {
        Ok(_) => {}
        Err(kube::Error::Api(status)) if status.code == 409 => {}
        Err(error) => return Err(error.into()),
    }
    volumes
        .patch_status(
            &volume_name,
            &context.patch_params(),
            &Patch::Merge(json!({"status": {"phase": "Bound"}})),
        )
        .await?;
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(context.client.clone(), &namespace);
    let bind = json!({
        "metadata": {"annotations": {
            "pv.kubernetes.io/bind-completed": "yes",
            "pv.kubernetes.io/bound-by-controller": "yes",
            "volume.kubernetes.io/storage-provisioner": "kro.run/simulated-provisioner",
        }},
        "spec": {"volumeName": volume_name},
    });
    claims
        .patch(&name, &context.patch_params(), &Patch::Merge(bind))
        .await?;
    let status = json!({
        "phase": "Bound",
        "accessModes": modes,
        "capacity": {"storage": storage},
    });
    context
        .write_status(&claims, &name, &current, status)
        .await?;
    Ok(Action::await_change())
}

async fn reclaim(volume: Arc<PersistentVolume>, context: Arc<Context>) -> Reconciled {
    let spec = to_json(&volume.spec);
    let volumes: Api<PersistentVolume> = Api::all(context.client.clone());
    // Whether the claim the volume is bound to still exists (the same one, by UID).
    let claimed = match (
        spec.pointer("/claimRef/namespace").and_then(Value::as_str),
        spec.pointer("/claimRef/name").and_then(Value::as_str),
    ) {
        (Some(namespace), Some(name)) => {
            let uid = spec.pointer("/claimRef/uid").and_then(Value::as_str);
            let claims: Api<PersistentVolumeClaim> =
                Api::namespaced(context.client.clone(), namespace);
            claims
                .get_opt(name)
                .await?
                .is_some_and(|claim| uid.is_none() || claim.metadata.uid.as_deref() == uid)
        }
        _ => false,
    };
    let phase = to_json(&volume.status)["phase"].clone();
    if volume.metadata.deletion_timestamp.is_some() {
        if !claimed || phase != "Bound" {
            release(&context, &volumes, volume.as_ref(), PV_PROTECTION).await?;
        }
        return Ok(Action::await_change());
    }
    if claimed || phase != "Bound" {
        return Ok(Action::await_change());
    }
    if spec["persistentVolumeReclaimPolicy"] != "Delete" {
        let patch = json!({"status": {"phase": "Released"}});
        volumes
            .patch_status(
                &volume.name_any(),
                &context.patch_params(),
                &Patch::Merge(patch),
            )
            .await?;
        return Ok(Action::await_change());
    }
    match volumes
        .delete(&volume.name_any(), &DeleteParams::default())
        .await
    {
        Ok(_) => Ok(Action::await_change()),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(Action::await_change()),
        Err(error) => Err(error.into()),
    }
}

/// The finalizer the claim protection controller removes.
const PVC_PROTECTION: &str = "kubernetes.io/pvc-protection";
/// The finalizer the volume protection controller removes.
const PV_PROTECTION: &str = "kubernetes.io/pv-protection";

/// Removes a protection finalizer, when present.
async fn release<K>(
    context: &Context,
    api: &Api<K>,
    object: &K,
    finalizer: &str,
) -> Result<(), ReconcileError>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let finalizers = object.meta().finalizers.clone().unwrap_or_default();
    if !finalizers.iter().any(|kept| kept == finalizer) {
        return Ok(());
    }
    let kept: Vec<&String> = finalizers
        .iter()
        .filter(|kept| *kept != finalizer)
        .collect();
    let patch = json!({"metadata": {
        "finalizers": kept,
        "resourceVersion": object.meta().resource_version,
    }});
    let name = object.meta().name.clone().unwrap_or_default();
    match api
        .patch(&name, &context.patch_params(), &Patch::Merge(patch))
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        Err(error) => Err(error.into()),
    }
}
