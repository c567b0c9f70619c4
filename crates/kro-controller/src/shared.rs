//! What the RGD, instance and Set controllers of one process share: the client, discovery,
//! the watches and their router, the settings, events, metrics and the schema cache.

use std::sync::Arc;

use kro_engine::kinds::Kinds;

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
    /// The schemas RGDs were compiled against, reused while the server serves them unchanged.
    pub(crate) schemas: crate::schemas::SchemaCache,
}
