//! Waiting until a CustomResourceDefinition is Established, that is served.

use std::time::{Duration, Instant};

use kube::api::{Api, DynamicObject};
use serde_json::Value as Json;

/// How long a CRD may take to be Established.
const ESTABLISH_TIMEOUT: Duration = Duration::from_secs(60);

/// Why a CRD is not Established.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EstablishError {
    /// The CRD could not be read.
    #[error("reading CRD {name}: {source}")]
    Read {
        /// The CRD's name.
        name: String,
        /// Why.
        #[source]
        source: kube::Error,
    },
    /// The CRD is not Established in time.
    #[error("CRD {name} is not Established after {}s", .after.as_secs())]
    Timeout {
        /// The CRD's name.
        name: String,
        /// How long kro waited.
        after: Duration,
    },
}

impl EstablishError {
    /// A stable CamelCase reason (for logs, events and metric labels).
    pub fn reason(&self) -> &'static str {
        match self {
            EstablishError::Read { .. } => "CRDReadFailed",
            EstablishError::Timeout { .. } => "CRDNotEstablished",
        }
    }
}

/// Waits until the CRD reports Established and discovery lists its resource in every served
/// version (kube-apiserver can answer 404 for a group-version a moment after Established, which
/// a client resolving the kind through discovery trips over); reads that fail transiently are
/// made again until the timeout.
pub(crate) async fn wait_established(
    crds: &Api<DynamicObject>,
    name: &str,
) -> Result<(), EstablishError> {
    let started = Instant::now();
    loop {
        let crd = match crds.get(name).await {
            Ok(crd) => crd,
            Err(source)
                if crate::retry::is_transient(&source) && started.elapsed() < ESTABLISH_TIMEOUT =>
            {
                tracing::debug!(crd = name, error = %source, "reading the CRD failed; retrying");
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
            Err(source) => {
                return Err(EstablishError::Read {
                    name: name.to_owned(),
                    source,
                });
            }
        };
        let established = crd
            .data
            .pointer("/status/conditions")
            .and_then(Json::as_array)
            .is_some_and(|conditions| {
                conditions.iter().any(|condition| {
                    condition["type"] == "Established" && condition["status"] == "True"
                })
            });
        if established && served_by_discovery(crds, &crd.data).await {
            return Ok(());
        }
        if started.elapsed() > ESTABLISH_TIMEOUT {
            return Err(EstablishError::Timeout {
                name: name.to_owned(),
                after: ESTABLISH_TIMEOUT,
            });
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Whether discovery lists the CRD's plural in each version it serves (`/apis/<group>/<version>`).
async fn served_by_discovery(crds: &Api<DynamicObject>, crd: &Json) -> bool {
    let client: kube::Client = crds.clone().into_client();
    let (Some(group), Some(plural)) = (
        crd.pointer("/spec/group").and_then(Json::as_str),
        crd.pointer("/spec/names/plural").and_then(Json::as_str),
    ) else {
        return true; // not a CRD discovery can confirm; Established is all there is
    };
    let versions = crd
        .pointer("/spec/versions")
        .and_then(Json::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    for version in versions {
        if version["served"] != true {
            continue;
        }
        let Some(name) = version["name"].as_str() else {
            continue;
        };
        let listed = client
            .list_api_group_resources(&format!("{group}/{name}"))
            .await
            .is_ok_and(|resources| resources.resources.iter().any(|r| r.name == plural));
        if !listed {
            return false;
        }
    }
    true
}
