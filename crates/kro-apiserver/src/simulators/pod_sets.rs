//! What the controllers of pod sets (replica sets, stateful sets, daemon sets and jobs)
//! share: the pods a set controls, adopting the orphans its selector matches, and how many of
//! them are ready and available.

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams};

use super::support::{
    Context, ReconcileError, controlled_by, controller_reference, pod_active, pod_ready,
    selector_query,
};

/// The pods a controller with `uid` and `selector` has in `namespace`; with `adopter`, the
/// orphans its selector matches are adopted first (when the selector is not empty).
pub(super) async fn controlled_pods<K>(
    context: &Context,
    namespace: &str,
    selector: Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector>,
    uid: &str,
    adopter: Option<&K>,
) -> Result<Vec<Pod>, ReconcileError>
where
    K: kube::Resource<DynamicType = ()>,
{
    let pods: Api<Pod> = Api::namespaced(context.client.clone(), namespace);
    let mut params = ListParams::default();
    let query = selector.and_then(selector_query).unwrap_or_default();
    if !query.is_empty() {
        params = params.labels(&query);
    }
    let mut listed = pods.list(&params).await?.items;
    if let Some(adopter) = adopter.filter(|_| !query.is_empty()) {
        let owner = controller_reference(adopter)?;
        for pod in &mut listed {
            if super::support::orphaned(pod) && pod_active(pod) {
                *pod = super::support::adopt(context, &pods, pod, &owner).await?;
            }
        }
    }
    Ok(listed
        .into_iter()
        .filter(|pod| controlled_by(pod, uid))
        .collect())
}

/// How long the pod has been ready, when it is.
pub(super) fn ready_for(pod: &Pod) -> Option<Duration> {
    let condition = pod
        .status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|condition| condition.type_ == "Ready" && condition.status == "True")?;
    Some(super::support::age(
        condition.last_transition_time.as_ref()?,
    ))
}

/// Counts ready and available pods (ready for `min_ready` at least); with the wait until
/// the next pod becomes available, when one is ready but not yet available.
pub(super) fn availability(pods: &[&Pod], min_ready: Duration) -> (i64, i64, Option<Duration>) {
    let mut ready = 0;
    let mut available = 0;
    let mut next: Option<Duration> = None;
    for pod in pods {
        if !pod_ready(pod) {
            continue;
        }
        ready += 1;
        let since = ready_for(pod).unwrap_or_default();
        if min_ready.is_zero() || since >= min_ready {
            available += 1;
        } else {
            let left = min_ready - since;
            next = Some(next.map_or(left, |next| next.min(left)));
        }
    }
    (ready, available, next)
}
