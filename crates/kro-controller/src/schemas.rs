//! Schemas of the kinds RGDs use, read from the API server: the OpenAPI v3 document of each
//! group-version the RGDs name, and each kind's scope from discovery. Two requests per
//! group-version plus one for the OpenAPI index, whatever the number of kinds. The RGD
//! controller compiles against them (with the built-in catalog behind), and so does
//! `kro validate --kubeconfig`.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use kro_graph::CatalogSchemas;
use kro_schema::{Catalog, CatalogError, Gvk};
use kube::Client;
use serde_json::Value;

/// Why the schemas could not be read.
#[derive(Debug, thiserror::Error)]
pub enum SchemaReadError {
    /// A request failed.
    #[error("GET {url}: {source}")]
    Request {
        /// The path requested.
        url: String,
        /// What went wrong.
        #[source]
        source: kube::Error,
    },
    /// An answer was not JSON.
    #[error("GET {url}: the answer is not JSON: {source}")]
    NotJson {
        /// The path requested.
        url: String,
        /// The parse error.
        #[source]
        source: serde_json::Error,
    },
    /// The OpenAPI index lists no documents.
    #[error("/openapi/v3 has no paths")]
    NoPaths,
    /// The documents do not make a catalog.
    #[error("the OpenAPI v3 documents: {0}")]
    Catalog(#[from] CatalogError),
    /// A kind the server serves has no schema in its OpenAPI documents yet: kube-apiserver
    /// publishes a new CRD's schema a few seconds after it serves the kind. Building the graph
    /// without it would type the kind's fields as unknown, and the CRD written from that would
    /// be refused as a breaking change once the schema came.
    #[error(
        "the API server serves {kind} ({api_version}) but does not publish its OpenAPI schema yet"
    )]
    Unpublished {
        /// The kind.
        kind: String,
        /// Its apiVersion.
        api_version: String,
    },
}

/// Schemas read before, by group-version, with the address the OpenAPI index gave them. The
/// index addresses each document with a hash of its content (`?hash=`), so a document whose
/// address is unchanged is the same document: it is not read again, and neither is the scope of
/// its kinds. One entry per group-version, replaced when its address changes.
///
/// Reads of one group-version do not overlap: a reconcile that needs a document another one
/// is reading waits for it and takes it from the cache (`schema_resolver_singleflight_*`).
#[derive(Debug, Default)]
pub struct SchemaCache {
    group_versions: Mutex<HashMap<String, Arc<GroupVersionSchemas>>>,
    /// One lock per group-version being read.
    reading: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    /// Where hits, misses, reads and evictions are counted (`schema_resolver_*`).
    metrics: Option<crate::metrics::SchemaResolverFamilies>,
}

/// What was read of one group-version.
#[derive(Debug)]
struct GroupVersionSchemas {
    /// The address it was read from (with its content hash).
    url: String,
    /// The OpenAPI v3 document, as the server's JSON text: a tree of values is several times
    /// its size, and one is made only while the catalog is built.
    document: Box<str>,
    /// Each kind served and whether it is namespaced.
    scopes: Vec<(String, bool)>,
}

impl SchemaCache {
    /// An empty cache counted in `metrics`.
    pub fn counted(metrics: &crate::metrics::Metrics) -> Self {
        SchemaCache {
            metrics: Some(metrics.schema_resolver().clone()),
            ..SchemaCache::default()
        }
    }

    fn get(&self, key: &str, url: &str) -> Option<Arc<GroupVersionSchemas>> {
        let group_versions = self
            .group_versions
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        group_versions
            .get(key)
            .filter(|entry| entry.url == url)
            .cloned()
    }

    fn put(&self, key: &str, entry: Arc<GroupVersionSchemas>) {
        // Only a content-addressed document can be reused: without a hash the address says
        // nothing about what it holds.
        if entry.url.contains("hash=") {
            let mut group_versions = self
                .group_versions
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            let replaced = group_versions.insert(key.to_owned(), entry).is_some();
            let size = group_versions.len();
            drop(group_versions);
            if let Some(metrics) = &self.metrics {
                if replaced {
                    metrics.evicted();
                }
                metrics.sized(size);
            }
        }
    }

    /// The lock of reads of the group-version `key`.
    fn reading(&self, key: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut reading = self.reading.lock().unwrap_or_else(PoisonError::into_inner);
        Arc::clone(reading.entry(key.to_owned()).or_default())
    }

    /// The group-version `key` at `url`: from the cache, or read (once, however many ask at
    /// the same time).
    async fn group_version(
        &self,
        client: &Client,
        (group, version): (&str, &str),
        key: &str,
        url: &str,
    ) -> Result<Arc<GroupVersionSchemas>, SchemaReadError> {
        if let Some(entry) = self.get(key, url) {
            if let Some(metrics) = &self.metrics {
                metrics.hit();
            }
            return Ok(entry);
        }
        let lock = self.reading(key);
        let _reading = lock.lock().await;
        if let Some(entry) = self.get(key, url) {
            // Read meanwhile by the reconcile this one waited for.
            if let Some(metrics) = &self.metrics {
                metrics.deduplicated();
                metrics.hit();
            }
            return Ok(entry);
        }
        if let Some(metrics) = &self.metrics {
            metrics.miss();
        }
        let started = std::time::Instant::now();
        let read = read_group_version(client, group, version, key, url).await;
        if let Some(metrics) = &self.metrics {
            metrics.read(started.elapsed().as_secs_f64(), read.is_err());
        }
        let entry = Arc::new(read?);
        self.put(key, Arc::clone(&entry));
        Ok(entry)
    }
}

/// Reads the schemas of `gvks` from the server `client` talks to; `origin` names it in
/// messages. Kinds the server does not serve are absent (the builder warns about them).
///
/// # Errors
/// When a request fails or an answer is not an OpenAPI v3 document.
pub async fn read_schemas(
    client: &Client,
    origin: &str,
    gvks: &BTreeSet<Gvk>,
) -> Result<CatalogSchemas, SchemaReadError> {
    read_schemas_with(client, origin, gvks, &SchemaCache::default()).await
}

/// [`read_schemas`], reusing what `cache` holds of documents the server still serves unchanged
/// and adding what it reads. Each request that fails transiently (no answer, 429, 5xx) is made
/// again a few times with a short backoff before the read fails, so one failed request among
/// the dozen an RGD may need does not fail the RGD's reconcile.
///
/// # Errors
/// When a request fails for good or an answer is not an OpenAPI v3 document.
pub async fn read_schemas_with(
    client: &Client,
    origin: &str,
    gvks: &BTreeSet<Gvk>,
    cache: &SchemaCache,
) -> Result<CatalogSchemas, SchemaReadError> {
    let index = get_json(client, "/openapi/v3").await?;
    let Some(paths) = index.get("paths").and_then(Value::as_object) else {
        return Err(SchemaReadError::NoPaths);
    };
    let mut by_group_version: BTreeMap<(&str, &str), Vec<&Gvk>> = BTreeMap::new();
    for gvk in gvks {
        by_group_version
            .entry((gvk.group(), gvk.version()))
            .or_default()
            .push(gvk);
    }
    let mut read = Vec::new();
    for ((group, version), kinds) in &by_group_version {
        let key = if group.is_empty() {
            format!("api/{version}")
        } else {
            format!("apis/{group}/{version}")
        };
        let Some(url) = paths
            .get(&key)
            .and_then(|path| path.get("serverRelativeURL"))
            .and_then(Value::as_str)
        else {
            // The server does not serve this group-version.
            continue;
        };
        let entry = cache
            .group_version(client, (group, version), &key, url)
            .await?;
        read.push((entry, kinds));
    }
    // Each text was read as JSON when it was fetched; one that no longer parses would be a
    // document without schemas, which the catalog refuses.
    let catalog = Catalog::from_openapi_v3_owned(
        read.iter()
            .map(|(entry, _)| serde_json::from_str(&entry.document).unwrap_or(Value::Null)),
    )?;
    let mut schemas = CatalogSchemas::new(catalog, origin.to_owned());
    for (entry, kinds) in &read {
        for (kind, namespaced) in &entry.scopes {
            if let Some(gvk) = kinds.iter().find(|gvk| gvk.kind() == kind) {
                schemas = schemas.with_scope((*gvk).clone(), *namespaced);
            }
        }
    }
    Ok(schemas)
}

/// Reads the OpenAPI document of a group-version (at `url`) and the scopes of its kinds.
async fn read_group_version(
    client: &Client,
    group: &str,
    version: &str,
    key: &str,
    url: &str,
) -> Result<GroupVersionSchemas, SchemaReadError> {
    let document = get_text(client, url).await?;
    serde_json::from_str::<serde::de::IgnoredAny>(&document).map_err(|source| {
        SchemaReadError::NotJson {
            url: url.to_owned(),
            source,
        }
    })?;
    let resources = retrying(|| async {
        if group.is_empty() {
            client.list_core_api_resources(version).await
        } else {
            client
                .list_api_group_resources(&format!("{group}/{version}"))
                .await
        }
    })
    .await
    .map_err(|source| SchemaReadError::Request {
        url: format!("/{key}"),
        source,
    })?;
    let scopes = resources
        .resources
        .into_iter()
        // A name with a slash is a subresource.
        .filter(|resource| !resource.name.contains('/'))
        .map(|resource| (resource.kind, resource.namespaced))
        .collect();
    Ok(GroupVersionSchemas {
        url: url.to_owned(),
        document: document.into_boxed_str(),
        scopes,
    })
}

/// How many times a schema read is made in all when it fails transiently.
const READ_ATTEMPTS: u32 = 4;

/// Makes `request` until it succeeds, fails for good, or has failed transiently
/// [`READ_ATTEMPTS`] times (waiting 100 ms, 200 ms, 400 ms between).
async fn retrying<T, F, Fut>(mut request: F) -> Result<T, kube::Error>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, kube::Error>>,
{
    let mut delay = Duration::from_millis(100);
    let mut attempt = 1;
    loop {
        match request().await {
            Err(error) if attempt < READ_ATTEMPTS && crate::retry::is_transient(&error) => {
                tracing::debug!(%error, attempt, "schema read failed; retrying");
                tokio::time::sleep(delay).await;
                delay = delay.saturating_mul(2);
                attempt += 1;
            }
            outcome => return outcome,
        }
    }
}

async fn get_json(client: &Client, url: &str) -> Result<Value, SchemaReadError> {
    let text = get_text(client, url).await?;
    serde_json::from_str(&text).map_err(|source| SchemaReadError::NotJson {
        url: url.to_owned(),
        source,
    })
}

async fn get_text(client: &Client, url: &str) -> Result<String, SchemaReadError> {
    retrying(|| async {
        let request = http::Request::get(url)
            .header(http::header::ACCEPT, "application/json")
            .body(Vec::new())
            .map_err(kube::Error::HttpError)?;
        client.request_text(request).await
    })
    .await
    .map_err(|source| SchemaReadError::Request {
        url: url.to_owned(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use kube::client::Body;
    use serde_json::json;

    use super::*;

    /// A scripted API server: the OpenAPI index (its hash given by `hash`), the core/v1
    /// document and resource list; each path fails with `failing` the first `fail_first` times.
    #[derive(Clone)]
    struct Fake {
        requests: Arc<Mutex<Vec<String>>>,
        hash: Arc<Mutex<&'static str>>,
        failing: u16,
        fail_first: usize,
        seen: Arc<Mutex<HashMap<String, usize>>>,
        answered: Arc<AtomicUsize>,
    }

    impl Fake {
        fn new(failing: u16, fail_first: usize) -> Self {
            Fake {
                requests: Arc::default(),
                hash: Arc::new(Mutex::new("A")),
                failing,
                fail_first,
                seen: Arc::default(),
                answered: Arc::default(),
            }
        }

        fn client(&self) -> Client {
            let fake = self.clone();
            let service = tower::service_fn(move |request: http::Request<Body>| {
                let fake = fake.clone();
                async move { Ok::<_, std::convert::Infallible>(fake.answer(request.uri().path())) }
            });
            Client::new(service, "default")
        }

        fn answer(&self, path: &str) -> http::Response<Body> {
            self.requests.lock().unwrap().push(path.to_owned());
            let seen = {
                let mut seen = self.seen.lock().unwrap();
                let count = seen.entry(path.to_owned()).or_default();
                *count += 1;
                *count
            };
            if seen <= self.fail_first {
                let status = json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                    "message": "injected", "reason": "InternalError", "code": self.failing});
                return http::Response::builder()
                    .status(self.failing)
                    .body(Body::from(status.to_string().into_bytes()))
                    .unwrap();
            }
            self.answered.fetch_add(1, Ordering::SeqCst);
            let hash = *self.hash.lock().unwrap();
            let body = match path {
                "/openapi/v3" => json!({"paths": {"api/v1": {
                    "serverRelativeURL": format!("/openapi/v3/api/v1?hash={hash}")}}}),
                "/openapi/v3/api/v1" => json!({"openapi": "3.0.0", "components": {"schemas": {
                    "io.k8s.api.core.v1.ConfigMap": {
                        "type": "object",
                        "properties": {"data": {"type": "object",
                            "additionalProperties": {"type": "string"}}},
                        "x-kubernetes-group-version-kind": [
                            {"group": "", "version": "v1", "kind": "ConfigMap"}]}}}}),
                "/api/v1" => json!({"kind": "APIResourceList", "groupVersion": "v1", "resources": [
                    {"name": "configmaps", "singularName": "configmap", "namespaced": true,
                     "kind": "ConfigMap", "verbs": ["get", "list"]},
                    {"name": "configmaps/status", "singularName": "", "namespaced": true,
                     "kind": "ConfigMap", "verbs": ["get"]}]}),
                _ => {
                    return http::Response::builder()
                        .status(404)
                        .body(Body::from(b"{}".to_vec()))
                        .unwrap();
                }
            };
            http::Response::builder()
                .status(200)
                .header("content-type", "application/json")
                .body(Body::from(body.to_string().into_bytes()))
                .unwrap()
        }

        fn take_requests(&self) -> Vec<String> {
            std::mem::take(&mut *self.requests.lock().unwrap())
        }
    }

    fn config_map() -> BTreeSet<Gvk> {
        BTreeSet::from([Gvk::new("", "v1", "ConfigMap")])
    }

    #[tokio::test]
    async fn a_document_the_server_serves_unchanged_is_read_once() {
        let fake = Fake::new(500, 0);
        let client = fake.client();
        let metrics = crate::metrics::Metrics::new();
        let cache = SchemaCache::counted(&metrics);
        read_schemas_with(&client, "fake", &config_map(), &cache)
            .await
            .unwrap();
        assert_eq!(
            fake.take_requests(),
            ["/openapi/v3", "/openapi/v3/api/v1", "/api/v1"]
        );
        read_schemas_with(&client, "fake", &config_map(), &cache)
            .await
            .unwrap();
        assert_eq!(
            fake.take_requests(),
            ["/openapi/v3"],
            "only the index again"
        );
        // A CRD changed: the index gives the document a new address.
        *fake.hash.lock().unwrap() = "B";
        read_schemas_with(&client, "fake", &config_map(), &cache)
            .await
            .unwrap();
        assert_eq!(
            fake.take_requests(),
            ["/openapi/v3", "/openapi/v3/api/v1", "/api/v1"]
        );
        let scrape = metrics.encode();
        for line in [
            "schema_resolver_cache_hits_total 1",
            "schema_resolver_cache_misses_total 2",
            "schema_resolver_cache_evictions_total 1",
            "schema_resolver_cache_size 1",
            "schema_resolver_api_call_duration_seconds_count 2",
            "schema_resolver_errors_total 0",
        ] {
            assert!(scrape.lines().any(|seen| seen == line), "{line}:\n{scrape}");
        }
    }

    #[tokio::test]
    async fn reads_of_one_group_version_at_once_are_made_once() {
        let fake = Fake::new(500, 0);
        let client = fake.client();
        let metrics = crate::metrics::Metrics::new();
        let cache = SchemaCache::counted(&metrics);
        let kinds = config_map();
        let (first, second) = tokio::join!(
            read_schemas_with(&client, "fake", &kinds, &cache),
            read_schemas_with(&client, "fake", &kinds, &cache),
        );
        assert!(first.is_ok() && second.is_ok());
        let documents = fake
            .take_requests()
            .into_iter()
            .filter(|path| path == "/openapi/v3/api/v1")
            .count();
        assert_eq!(documents, 1, "the document is read once");
        assert!(
            metrics
                .encode()
                .lines()
                .any(|line| line == "schema_resolver_singleflight_deduplicated_total 1")
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_read_that_fails_transiently_is_made_again() {
        let fake = Fake::new(500, READ_ATTEMPTS as usize - 1);
        let schemas = read_schemas(&fake.client(), "fake", &config_map()).await;
        assert!(schemas.is_ok(), "{:?}", schemas.err());
        assert_eq!(fake.answered.load(Ordering::SeqCst), 3);
        assert_eq!(fake.take_requests().len(), 3 * READ_ATTEMPTS as usize);
    }

    #[tokio::test(start_paused = true)]
    async fn a_read_fails_after_its_attempts_or_at_once_when_refused() {
        let fake = Fake::new(503, READ_ATTEMPTS as usize);
        let error = read_schemas(&fake.client(), "fake", &config_map())
            .await
            .err()
            .map(|error| error.to_string());
        assert!(
            error
                .as_deref()
                .is_some_and(|error| error.contains("/openapi/v3")),
            "{error:?}"
        );
        assert_eq!(fake.take_requests().len(), READ_ATTEMPTS as usize);

        let fake = Fake::new(403, 1);
        assert!(
            read_schemas(&fake.client(), "fake", &config_map())
                .await
                .is_err()
        );
        assert_eq!(fake.take_requests(), ["/openapi/v3"], "403 is not retried");
    }
}
