//! The watch and routing families of upstream kro v0.9.4's dynamic controller, with its names
//! and labels: instance watch events by kind and type, watches running and how long each took
//! to list, child events routed to instances, and the instance controllers attached.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use super::buckets::{HistogramFamily, reconcile_histogram};

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct EventLabels {
    event_type: &'static str,
    gvr: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct GvrLabel {
    gvr: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TypeLabel {
    r#type: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct WatchRequestLabels {
    gvr: String,
    r#type: &'static str,
}

/// What a watch event did to the cache, as upstream's informer handlers name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WatchEventType {
    /// An object appeared.
    Add,
    /// An object changed.
    Update,
    /// An object went.
    Delete,
}

/// The dynamic controller's watch and routing families.
#[derive(Clone)]
pub(crate) struct DynamicFamilies {
    events: Family<EventLabels, Counter>,
    sync_duration: HistogramFamily<GvrLabel>,
    watches: Gauge,
    routed: Family<GvrLabel, Counter>,
    matched: Family<GvrLabel, Counter>,
    attached: Family<TypeLabel, Counter>,
    detached: Family<TypeLabel, Counter>,
    handlers: Family<TypeLabel, Gauge>,
}

impl DynamicFamilies {
    /// Registers the families in `registry`.
    pub(crate) fn register(registry: &mut Registry) -> Self {
        let families = DynamicFamilies {
            events: Family::default(),
            sync_duration: Family::new_with_constructor(reconcile_histogram),
            watches: Gauge::default(),
            routed: Family::default(),
            matched: Family::default(),
            attached: Family::default(),
            detached: Family::default(),
            handlers: Family::default(),
        };
        registry.register(
            "dynamic_controller_informer_events",
            "Total number of events processed by informers per GVR and event type",
            families.events.clone(),
        );
        registry.register(
            "dynamic_controller_informer_sync_duration_seconds",
            "Duration of informer cache sync per GVR",
            families.sync_duration.clone(),
        );
        registry.register(
            "dynamic_controller_watch_count",
            "Number of active informers managed by the WatchManager",
            families.watches.clone(),
        );
        registry.register(
            "dynamic_controller_route",
            "Total events routed through the coordinator by GVR",
            families.routed.clone(),
        );
        registry.register(
            "dynamic_controller_route_match",
            "Total events that matched at least one instance by GVR",
            families.matched.clone(),
        );
        registry.register(
            "dynamic_controller_handler_attach",
            "Total number of handler attachments by handler type",
            families.attached.clone(),
        );
        registry.register(
            "dynamic_controller_handler_detach",
            "Total number of handler detachments by handler type",
            families.detached.clone(),
        );
        // Upstream registers this gauge under a counter-like name; so does this.
        registry.register(
            "dynamic_controller_handler_count_total",
            "Number of active handlers used for distributing events to instance controllers",
            families.handlers.clone(),
        );
        // Upstream's instances register a watch request per object (or selector) they read;
        // here events are routed by the labels kro writes, so there are no such requests.
        registry.register(
            "dynamic_controller_watch_request_count",
            "Number of active watch requests by GVR and type (scalar/collection)",
            Family::<WatchRequestLabels, Gauge>::default(),
        );
        families
    }

    /// The instance watch of kind `gvr` saw an event.
    pub(crate) fn instance_event(&self, gvr: &str, kind: WatchEventType) {
        let event_type = match kind {
            WatchEventType::Add => "add",
            WatchEventType::Update => "update",
            WatchEventType::Delete => "delete",
        };
        self.events
            .get_or_create(&EventLabels {
                event_type,
                gvr: gvr.to_owned(),
            })
            .inc();
    }

    /// A watch of `gvr` started (`1`) or stopped (`-1`).
    pub(crate) fn watching(&self, delta: i64) {
        self.watches.inc_by(delta);
    }

    /// The watch of `gvr` completed its first list in `seconds`.
    pub(crate) fn synced(&self, gvr: &str, seconds: f64) {
        self.sync_duration
            .get_or_create(&GvrLabel {
                gvr: gvr.to_owned(),
            })
            .observe(seconds);
    }

    /// An event of a `gvr` object was routed; `matched` when it woke an instance.
    pub(crate) fn routed(&self, gvr: &str, matched: bool) {
        let label = GvrLabel {
            gvr: gvr.to_owned(),
        };
        self.routed.get_or_create(&label).inc();
        if matched {
            self.matched.get_or_create(&label).inc();
        }
    }

    /// An instance controller started (`attached`) or stopped.
    pub(crate) fn parent_handler(&self, attached: bool) {
        let label = TypeLabel { r#type: "parent" };
        if attached {
            self.attached.get_or_create(&label).inc();
            self.handlers.get_or_create(&label).inc();
        } else {
            self.detached.get_or_create(&label).inc();
            self.handlers.get_or_create(&label).dec();
        }
    }
}
