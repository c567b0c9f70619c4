//! What the controllers of pod sets (replica sets, stateful sets, daemon sets and jobs)
//! share: the pods a set controls, adopting the orphans its selector matches, and how many of
//! them are ready and available.

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::api::{Api, DeleteParams, ListParams};
use kube::{Resource, ResourceExt};

use super::support::{
    Context, ReconcileError, acting_on, controlled_by, controller_reference, pod_active, pod_ready,
    selector_query,
};

/// The pods a controller with `uid` and `selector` has in `namespace`; with `adopter`, the
/// orphans its selector matches are adopted first (when the selector is not empty).
async fn controlled_pods<K>(
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

/// The pods of one set, as its reconcile reads them first: the set's namespace and name, the
/// pods it controls (terminating ones included), and the pod API of its namespace.
pub(super) struct PodSet {
    /// The set's namespace.
    pub(super) namespace: String,
    /// The set's name.
    pub(super) name: String,
    /// The pods the set controls.
    pub(super) pods: Vec<Pod>,
    /// Pods in the set's namespace.
    pub(super) api: Api<Pod>,
}

impl PodSet {
    /// The pods `set` controls, after adopting the orphans `selector` matches; `None` for a set
    /// that is being deleted (the controllers leave it alone).
    pub(super) async fn adopting<K>(
        context: &Context,
        set: &K,
        selector: &LabelSelector,
    ) -> Result<Option<PodSet>, ReconcileError>
    where
        K: Resource<DynamicType = ()>,
    {
        Self::read(context, set, Some(selector), Some(set)).await
    }

    /// The pods `set` controls among those `selector` matches, adopting none; `None` for a
    /// set that is being deleted.
    pub(super) async fn controlled<K>(
        context: &Context,
        set: &K,
        selector: Option<&LabelSelector>,
    ) -> Result<Option<PodSet>, ReconcileError>
    where
        K: Resource<DynamicType = ()>,
    {
        Self::read(context, set, selector, None).await
    }

    async fn read<K>(
        context: &Context,
        set: &K,
        selector: Option<&LabelSelector>,
        adopter: Option<&K>,
    ) -> Result<Option<PodSet>, ReconcileError>
    where
        K: Resource<DynamicType = ()>,
    {
        let Some((namespace, uid)) = acting_on(set) else {
            return Ok(None);
        };
        let pods = controlled_pods(context, &namespace, selector, &uid, adopter).await?;
        Ok(Some(PodSet {
            api: Api::namespaced(context.client.clone(), &namespace),
            name: set.name_any(),
            namespace,
            pods,
        }))
    }

    /// The pods that are neither terminating nor finished.
    pub(super) fn active(&self) -> Vec<&Pod> {
        self.pods.iter().filter(|pod| pod_active(pod)).collect()
    }

    /// Deletes pod `name`; `false` when it was gone already.
    pub(super) async fn delete(
        &self,
        name: &str,
        params: &DeleteParams,
    ) -> Result<bool, kube::Error> {
        match self.api.delete(name, params).await {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(false),
            Err(error) => Err(error),
        }
    }
}

/// A set's `minReadySeconds`, as a duration (none when absent or negative).
pub(super) fn min_ready(seconds: Option<i32>) -> Duration {
    Duration::from_secs(u64::try_from(seconds.unwrap_or(0)).unwrap_or(0))
}
