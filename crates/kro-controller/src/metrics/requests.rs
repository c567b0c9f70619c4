//! The API client's request families: controller-runtime's `rest_client_requests_total`
//! (by code, host and method), our `rest_client_requests_by_verb_total`, durations by verb,
//! and client-go's request and response sizes, retries and client-side rate limiter waits; the
//! tower layer that counts them.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use super::Metrics;
use super::buckets::HistogramFamily;

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct VerbLabel {
    verb: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RetryLabels {
    code: String,
    method: String,
}

/// client-go's size buckets: 64 bytes to 2 MiB, doubling.
fn size_histogram() -> Histogram {
    Histogram::new(exponential_buckets(64.0, 2.0, 16))
}

/// client-go's rate limiter buckets: 1 ms to 32 s, doubling.
fn rate_limiter_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.001, 2.0, 16))
}

/// client-go's request families that controller-runtime registers.
pub(crate) struct RequestFamilies {
    request_size: HistogramFamily<VerbLabel>,
    response_size: HistogramFamily<VerbLabel>,
    retries: Family<RetryLabels, Counter>,
    rate_limiter: HistogramFamily<VerbLabel>,
}

impl RequestFamilies {
    /// Registers the families in `registry`.
    pub(crate) fn register(registry: &mut Registry) -> Self {
        let families = RequestFamilies {
            request_size: Family::new_with_constructor(size_histogram),
            response_size: Family::new_with_constructor(size_histogram),
            retries: Family::default(),
            rate_limiter: Family::new_with_constructor(rate_limiter_histogram),
        };
        registry.register(
            "rest_client_request_size_bytes",
            "Request size in bytes, partitioned by verb.",
            families.request_size.clone(),
        );
        registry.register(
            "rest_client_response_size_bytes",
            "Response size in bytes, partitioned by verb.",
            families.response_size.clone(),
        );
        registry.register(
            "rest_client_request_retries",
            "Total number of request retries, partitioned by status code and method.",
            families.retries.clone(),
        );
        registry.register(
            "rest_client_rate_limiter_duration_seconds",
            "Client-side rate limiter latency in seconds, partitioned by verb.",
            families.rate_limiter.clone(),
        );
        families
    }

    /// A request of `verb` was sent again after the server answered `code`.
    pub(crate) fn retried(&self, code: u16, method: &http::Method) {
        self.retries
            .get_or_create(&RetryLabels {
                code: code.to_string(),
                method: method.as_str().to_owned(),
            })
            .inc();
    }

    /// A request of `verb` waited `waited` for the client-side rate limiter.
    pub(crate) fn rate_limited(&self, verb: &'static str, waited: Duration) {
        self.rate_limiter
            .get_or_create(&VerbLabel { verb })
            .observe(waited.as_secs_f64());
    }

    fn sizes(&self, verb: &'static str, request: Option<u64>, response: Option<u64>) {
        // Sizes are at most a few MiB: exact as doubles.
        #[allow(clippy::cast_precision_loss)]
        let bytes = |size: u64| size as f64;
        if let Some(size) = request {
            self.request_size
                .get_or_create(&VerbLabel { verb })
                .observe(bytes(size));
        }
        if let Some(size) = response {
            self.response_size
                .get_or_create(&VerbLabel { verb })
                .observe(bytes(size));
        }
    }
}

/// The Kubernetes verb of a request, as kube-apiserver's audit log and metrics name it:
/// `get`, `list`, `watch`, `create`, `update`, `patch`, `apply`, `delete`, `deletecollection`.
pub fn request_verb(
    method: &http::Method,
    path: &str,
    query: &str,
    content_type: &str,
) -> &'static str {
    let is_collection = || {
        let segments: Vec<&str> = path.split('/').filter(|part| !part.is_empty()).collect();
        let rest = match segments.first() {
            Some(&"api") => segments.get(2..),
            Some(&"apis") => segments.get(3..),
            _ => None,
        };
        let Some(mut rest) = rest.filter(|rest| !rest.is_empty()) else {
            // Discovery and other paths are documents, not collections.
            return false;
        };
        if rest.first() == Some(&"namespaces") && rest.len() >= 3 {
            rest = &rest[2..];
        }
        rest.len() == 1
    };
    match *method {
        http::Method::GET => {
            let watching = query
                .split('&')
                .any(|pair| pair == "watch=true" || pair == "watch=1");
            if watching {
                "watch"
            } else if is_collection() {
                "list"
            } else {
                "get"
            }
        }
        http::Method::POST => "create",
        http::Method::PUT => "update",
        http::Method::PATCH if content_type.starts_with("application/apply-patch") => "apply",
        http::Method::PATCH => "patch",
        http::Method::DELETE if is_collection() => "deletecollection",
        http::Method::DELETE => "delete",
        _ => "other",
    }
}

/// Counts and times the requests of an API client; see [`Metrics::api_layer`].
#[derive(Debug, Clone)]
pub struct ApiRequestLayer {
    pub(super) metrics: Metrics,
}

impl<S> tower::Layer<S> for ApiRequestLayer {
    type Service = ApiRequestService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        ApiRequestService {
            inner,
            metrics: self.metrics.clone(),
        }
    }
}

/// The service [`ApiRequestLayer`] wraps around a client's stack.
#[derive(Debug, Clone)]
pub struct ApiRequestService<S> {
    inner: S,
    metrics: Metrics,
}

impl<S, RequestBody, ResponseBody> tower::Service<http::Request<RequestBody>>
    for ApiRequestService<S>
where
    S: tower::Service<http::Request<RequestBody>, Response = http::Response<ResponseBody>>,
    S::Future: Send + 'static,
    RequestBody: http_body::Body,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, context: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(context)
    }

    fn call(&mut self, request: http::Request<RequestBody>) -> Self::Future {
        let content_type = request
            .headers()
            .get(http::header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default();
        let verb = request_verb(
            request.method(),
            request.uri().path(),
            request.uri().query().unwrap_or_default(),
            content_type,
        );
        let method = request.method().clone();
        // client-go's `req.URL.Host`: the server's host and port.
        let host = request
            .uri()
            .authority()
            .map(|authority| authority.as_str().to_owned())
            .or_else(|| {
                request
                    .headers()
                    .get(http::header::HOST)
                    .and_then(|host| host.to_str().ok())
                    .map(str::to_owned)
            })
            .unwrap_or_default();
        let metrics = self.metrics.clone();
        let request_size = request.body().size_hint().exact();
        let started = Instant::now();
        let response = self.inner.call(request);
        Box::pin(async move {
            let response = response.await;
            let code = match &response {
                Ok(response) => response.status().as_u16().to_string(),
                Err(_) => "<error>".to_owned(),
            };
            metrics.request_done(verb, &method, host, code, started.elapsed());
            // client-go observes the size the server declares; a stream (a watch) has none.
            let response_size = response.as_ref().ok().and_then(|response| {
                response
                    .headers()
                    .get(http::header::CONTENT_LENGTH)?
                    .to_str()
                    .ok()?
                    .parse::<u64>()
                    .ok()
            });
            metrics.requests().sizes(verb, request_size, response_size);
            response
        })
    }
}
