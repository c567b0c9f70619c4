//! The controllers of one process, started and stopped together.

use std::sync::Arc;

use kube::Client;
use tokio::task::JoinHandle;

use crate::kinds::Kinds;
use crate::metrics::Metrics;
use crate::readiness::Readiness;
use crate::rgd::RgdController;
use crate::rgd_crd::install_rgd_crd;
use crate::settings::Settings;
use crate::watches::{Router, Watches};

/// What the controllers of a process share.
pub(crate) struct Shared {
    pub(crate) client: kube::Client,
    pub(crate) kinds: Kinds,
    pub(crate) watches: Watches,
    pub(crate) router: Arc<Router>,
    pub(crate) settings: Settings,
    pub(crate) events: crate::events::Recorder,
    pub(crate) metrics: crate::metrics::Metrics,
}

/// Stops a controller's tasks: the first is its watch (aborted); the others are workers that
/// end once its queue is shut down (awaited, so reconciles under way finish).
pub(crate) async fn stop_tasks(tasks: Vec<JoinHandle<()>>) {
    let mut tasks = tasks.into_iter();
    if let Some(watch) = tasks.next() {
        watch.abort();
    }
    for worker in tasks {
        let _ = worker.await;
    }
}

/// Why the controllers could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// A request to the API server failed.
    #[error(transparent)]
    Api(#[from] kube::Error),
    /// The ResourceGraphDefinition CRD did not become Established.
    #[error(transparent)]
    NotEstablished(crate::established::EstablishError),
}

/// The running controllers: the RGD controller and an instance controller per kind.
pub struct Manager {
    shared: Arc<Shared>,
    rgds: Arc<RgdController>,
    /// Where readiness is reported, once asked.
    readiness: Option<Readiness>,
}

impl Manager {
    /// Installs the ResourceGraphDefinition CRD if the server lacks it, then starts the
    /// controllers, which report into `metrics`.
    ///
    /// # Errors
    /// [`StartError`] when the CRD cannot be installed.
    pub async fn start(
        client: Client,
        settings: Settings,
        metrics: Metrics,
    ) -> Result<Manager, StartError> {
        install_rgd_crd(&client).await?;
        let router = Arc::new(Router::default());
        let shared = Arc::new(Shared {
            kinds: Kinds::new(client.clone()),
            watches: Watches::new(client.clone(), Arc::clone(&router)),
            router,
            events: crate::events::Recorder::new(client.clone()),
            client,
            settings: settings.clone(),
            metrics,
        });
        let rgds = RgdController::start(Arc::clone(&shared), settings.workers);
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
