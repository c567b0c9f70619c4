//! The controllers of one process, started and stopped together.

use std::sync::Arc;

use kube::Client;

use crate::metrics::Metrics;
use crate::readiness::Readiness;
use crate::rgd::RgdController;
use crate::rgd_crd::{StartError, install_kro_crds};
use crate::settings::Settings;
use crate::shared::Shared;
use crate::watches::{Router, Watches};
use kro_engine::kinds::Kinds;

/// The running controllers: the RGD controller and an instance controller per kind.
pub struct Manager {
    shared: Arc<Shared>,
    rgds: Arc<RgdController>,
    /// Where readiness is reported, once asked.
    readiness: Option<Readiness>,
}

impl Manager {
    /// Installs the CRDs of ResourceGraphDefinitions and GraphRevisions, or brings them to
    /// this controller's schemas ([`install_kro_crds`]), then starts the controllers, which
    /// report into `metrics`. Transient failures (the server unreachable,
    /// overloaded or failing) are retried with the settings' backoff for as long as it takes,
    /// as a controller in a pod must: the caller bounds the wait if it wants to.
    ///
    /// # Errors
    /// [`StartError`] when the server refuses to serve or install the CRD.
    pub async fn start(
        client: Client,
        settings: Settings,
        metrics: Metrics,
    ) -> Result<Manager, StartError> {
        let client = crate::retry::retrying(
            client,
            crate::retry::RequestRetries {
                attempts: settings.request_retries,
                delay: settings.backoff,
            },
            Some(metrics.clone()),
        );
        let mut attempt = 0u32;
        while let Err(error) = install_kro_crds(&client).await {
            if !error.is_transient() {
                return Err(error);
            }
            attempt = attempt.saturating_add(1);
            let delay = settings.retry_delay(attempt);
            tracing::warn!(%error, ?delay, attempt, "cannot install kro's CRDs yet; retrying");
            tokio::time::sleep(delay).await;
        }
        let schemas = crate::schemas::SchemaCache::counted(&metrics);
        let router = Arc::new(Router::counted(&metrics));
        let shared = Arc::new(Shared {
            kinds: Kinds::new(client.clone()),
            watches: Watches::new(client.clone(), Arc::clone(&router), Some(metrics.clone())),
            router,
            events: crate::events::Recorder::new(client.clone()),
            client,
            settings: settings.clone(),
            metrics,
            schemas,
        });
        let rgds = RgdController::start(Arc::clone(&shared), settings.rgd_workers);
        Ok(Manager {
            shared,
            rgds,
            readiness: None,
        })
    }

    /// Reconciles every RGD and every instance again now (as a periodic resync would).
    pub async fn resync(&self) {
        self.rgds.resync().await;
    }

    /// Reports into `readiness` from now on: ready once the controllers' watch caches have
    /// synced (see [`Readiness`]); not ready from the moment [`shutdown`](Self::shutdown)
    /// begins.
    pub fn report_readiness(&mut self, readiness: &Readiness) {
        readiness.running(self.rgds.caches());
        self.readiness = Some(readiness.clone());
    }

    /// Stops everything: reconciles under way finish, then the watches end.
    pub async fn shutdown(self) {
        if let Some(readiness) = &self.readiness {
            readiness.stopping();
        }
        self.rgds.stop().await;
        self.shared.watches.stop();
    }
}
