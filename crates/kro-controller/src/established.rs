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

/// Waits until the CRD reports Established; reads that fail transiently are made again until
/// the timeout.
pub(crate) async fn wait_established(
    crds: &Api<DynamicObject>,
    name: &str,
) -> Result<(), EstablishError> {
    let started = Instant::now();
    loop {
        let crd = match crds.get(name).await {
            Ok(crd) => crd,
            Err(source)
                if crate::error::is_transient(&source) && started.elapsed() < ESTABLISH_TIMEOUT =>
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
        if established {
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
