//! The schema reader's families, with upstream kro v0.9.4's `schema_resolver_*` names: the
//! cache of OpenAPI documents by group-version (hits, misses, size, evictions), the reads
//! from the API server (durations, errors), and reads saved because another one of the same
//! group-version was under way.

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// The schema reader's families.
#[derive(Debug, Clone)]
pub struct SchemaResolverFamilies {
    hits: Counter,
    misses: Counter,
    evictions: Counter,
    size: Gauge,
    errors: Counter,
    deduplicated: Counter,
    api_call_duration: Histogram,
}

impl SchemaResolverFamilies {
    /// Registers the families in `registry`.
    pub(crate) fn register(registry: &mut Registry) -> Self {
        let families = SchemaResolverFamilies {
            hits: Counter::default(),
            misses: Counter::default(),
            evictions: Counter::default(),
            size: Gauge::default(),
            errors: Counter::default(),
            deduplicated: Counter::default(),
            api_call_duration: Histogram::new(exponential_buckets(0.01, 2.0, 10)),
        };
        registry.register(
            "schema_resolver_cache_hits",
            "Total number of schema resolver cache hits",
            families.hits.clone(),
        );
        registry.register(
            "schema_resolver_cache_misses",
            "Total number of schema resolver cache misses",
            families.misses.clone(),
        );
        registry.register(
            "schema_resolver_cache_evictions",
            "Total number of entries evicted from the schema resolver cache",
            families.evictions.clone(),
        );
        registry.register(
            "schema_resolver_cache_size",
            "Current number of entries in the schema resolver cache",
            families.size.clone(),
        );
        registry.register(
            "schema_resolver_errors",
            "Total number of schema resolution errors",
            families.errors.clone(),
        );
        registry.register(
            "schema_resolver_singleflight_deduplicated",
            "Total number of requests that were deduplicated by singleflight",
            families.deduplicated.clone(),
        );
        registry.register(
            "schema_resolver_api_call_duration_seconds",
            "Duration of API calls to fetch schemas",
            families.api_call_duration.clone(),
        );
        families
    }

    /// A group-version's document was found in the cache.
    pub(crate) fn hit(&self) {
        self.hits.inc();
    }

    /// A group-version's document was not in the cache (or had changed).
    pub(crate) fn miss(&self) {
        self.misses.inc();
    }

    /// An entry was replaced by a newer document.
    pub(crate) fn evicted(&self) {
        self.evictions.inc();
    }

    /// The cache holds `entries` group-versions.
    pub(crate) fn sized(&self, entries: usize) {
        self.size.set(i64::try_from(entries).unwrap_or(i64::MAX));
    }

    /// Reading a group-version from the server took `seconds`, and failed or not.
    pub(crate) fn read(&self, seconds: f64, failed: bool) {
        self.api_call_duration.observe(seconds);
        if failed {
            self.errors.inc();
        }
    }

    /// A read was saved: another read of the same group-version was under way.
    pub(crate) fn deduplicated(&self) {
        self.deduplicated.inc();
    }
}
