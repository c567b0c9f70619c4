//! Requests retried where one failed answer should not cost a whole reconcile.
//!
//! kube-rs already retries 429, 503 and 504, honouring `Retry-After` as client-go does. A 500
//! or 502 carries no such hint, and without a retry here it fails the reconcile that sent it:
//! every request of that reconcile is then sent again after the reconcile's backoff. With a
//! fifth of requests failing, a reconcile of a dozen requests succeeds only one time in
//! fourteen, and the doubling backoff makes the unlucky runs many times slower. Retrying the
//! one request a few times, after a few milliseconds, keeps the cost of a failure to that
//! request.
//!
//! Only requests that are safe to send twice are retried: reads, deletes, patches and
//! replaces. A replace or delete that was carried out before its answer was lost comes back
//! as a conflict or a 404, which the callers already handle. Creates (`POST`) are not
//! retried: a second create could make a second Event or fail with `AlreadyExists` for an
//! object this client made.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use http::{Method, Request, Response, StatusCode};
use kube::Client;
use kube::client::Body;

/// How a client retries server errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RequestRetries {
    /// Retries after the first attempt.
    pub attempts: u32,
    /// The delay before the first retry, doubled for each next one.
    pub delay: Duration,
}

/// `client` with idempotent requests answered 500 or 502 sent again up to
/// `retries.attempts` times.
pub(crate) fn retrying(
    client: Client,
    retries: RequestRetries,
    metrics: Option<crate::metrics::Metrics>,
) -> Client {
    if retries.attempts == 0 {
        return client;
    }
    let default_namespace = client.default_namespace().to_owned();
    Client::new(
        RetryServerErrors {
            client,
            retries,
            metrics,
        },
        default_namespace,
    )
}

#[derive(Clone)]
struct RetryServerErrors {
    client: Client,
    retries: RequestRetries,
    /// Where retries are counted (`rest_client_request_retries_total`).
    metrics: Option<crate::metrics::Metrics>,
}

fn is_idempotent(method: &Method) -> bool {
    matches!(
        *method,
        Method::GET | Method::HEAD | Method::PUT | Method::PATCH | Method::DELETE
    )
}

fn is_retried(status: StatusCode) -> bool {
    matches!(
        status,
        StatusCode::INTERNAL_SERVER_ERROR | StatusCode::BAD_GATEWAY
    )
}

/// A copy of `request` to send, when its body is held in memory (every body kube-rs builds).
fn copy_of(request: &Request<Body>) -> Option<Request<Body>> {
    let body = request.body().try_clone()?;
    let mut copy = Request::new(body);
    *copy.method_mut() = request.method().clone();
    *copy.uri_mut() = request.uri().clone();
    *copy.version_mut() = request.version();
    *copy.headers_mut() = request.headers().clone();
    *copy.extensions_mut() = request.extensions().clone();
    Some(copy)
}

type Answer = Pin<Box<dyn Future<Output = Result<Response<Body>, kube::Error>> + Send>>;

impl tower::Service<Request<Body>> for RetryServerErrors {
    type Response = Response<Body>;
    type Error = kube::Error;
    type Future = Answer;

    fn poll_ready(&mut self, _context: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        // `Client::send` waits for its own buffer's capacity.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        let client = self.client.clone();
        let retries = self.retries;
        let metrics = self.metrics.clone();
        Box::pin(async move {
            if !is_idempotent(request.method()) {
                return client.send(request).await;
            }
            let mut delay = retries.delay;
            for attempt in 1..=retries.attempts {
                let Some(copy) = copy_of(&request) else { break };
                let response = client.send(copy).await?;
                if !is_retried(response.status()) {
                    return Ok(response);
                }
                tracing::debug!(
                    method = %request.method(),
                    uri = %request.uri(),
                    status = response.status().as_u16(),
                    attempt,
                    ?delay,
                    "server error; sending the request again"
                );
                if let Some(metrics) = &metrics {
                    metrics
                        .requests()
                        .retried(response.status().as_u16(), request.method());
                }
                tokio::time::sleep(delay).await;
                delay = delay.saturating_mul(2);
            }
            client.send(request).await
        })
    }
}

/// Whether a failed request may succeed when made again unchanged: the server or the way to it
/// failed (no answer, a broken connection, 408, 429, 5xx), as client-go decides what to retry.
/// An answer about the request itself (400, 401, 403, 404, 409, 422) is not transient.
pub(crate) fn is_transient(error: &kube::Error) -> bool {
    match error {
        kube::Error::Api(status) => matches!(status.code, 408 | 429 | 500..=599),
        kube::Error::HyperError(_) | kube::Error::Service(_) | kube::Error::ReadEvents(_) => true,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
    use serde_json::json;

    use super::*;

    /// A server that answers each request with the next status of `script` (then 200), and
    /// records the methods it saw.
    #[derive(Clone, Default)]
    struct Scripted {
        script: Arc<Mutex<Vec<u16>>>,
        seen: Arc<Mutex<Vec<String>>>,
        metrics: crate::metrics::Metrics,
    }

    impl Scripted {
        fn new(script: &[u16]) -> Self {
            Scripted {
                script: Arc::new(Mutex::new(script.iter().rev().copied().collect())),
                seen: Arc::default(),
                metrics: crate::metrics::Metrics::new(),
            }
        }

        fn client(&self, attempts: u32) -> Client {
            let scripted = self.clone();
            let service = tower::service_fn(move |request: Request<Body>| {
                let scripted = scripted.clone();
                async move { Ok::<_, std::convert::Infallible>(scripted.answer(&request)) }
            });
            let retries = RequestRetries {
                attempts,
                delay: Duration::from_millis(1),
            };
            retrying(
                Client::new(service, "default"),
                retries,
                Some(self.metrics.clone()),
            )
        }

        fn answer(&self, request: &Request<Body>) -> Response<Body> {
            self.seen.lock().unwrap().push(request.method().to_string());
            let status = self.script.lock().unwrap().pop().unwrap_or(200);
            let body = if status == 200 {
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "default"}})
            } else {
                json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                    "message": "injected", "reason": "InternalError", "code": status})
            };
            Response::builder()
                .status(status)
                .body(Body::from(body.to_string().into_bytes()))
                .unwrap()
        }

        fn seen(&self) -> Vec<String> {
            self.seen.lock().unwrap().clone()
        }
    }

    #[tokio::test]
    async fn reads_and_applies_answered_500_or_502_are_sent_again() {
        let server = Scripted::new(&[500, 502, 500]);
        let api: Api<ConfigMap> = Api::default_namespaced(server.client(3));
        api.get("a").await.expect("the fourth attempt succeeds");
        assert_eq!(server.seen(), ["GET"; 4]);
        let scrape = server.metrics.encode();
        for line in [
            "rest_client_request_retries_total{code=\"500\",method=\"GET\"} 2",
            "rest_client_request_retries_total{code=\"502\",method=\"GET\"} 1",
        ] {
            assert!(scrape.lines().any(|seen| seen == line), "{line}:\n{scrape}");
        }

        let server = Scripted::new(&[500]);
        let api: Api<ConfigMap> = Api::default_namespaced(server.client(3));
        let patch = Patch::Apply(json!({"apiVersion": "v1", "kind": "ConfigMap"}));
        api.patch("a", &PatchParams::apply("kro").force(), &patch)
            .await
            .expect("the apply is sent again with its body");
        assert_eq!(server.seen(), ["PATCH"; 2]);

        let server = Scripted::new(&[502]);
        let api: Api<ConfigMap> = Api::default_namespaced(server.client(3));
        api.delete("a", &DeleteParams::default())
            .await
            .expect("the delete is sent again");
        assert_eq!(server.seen(), ["DELETE"; 2]);
    }

    #[tokio::test]
    async fn a_request_failing_every_attempt_reports_the_last_answer() {
        let server = Scripted::new(&[500, 500, 500, 502]);
        let api: Api<ConfigMap> = Api::default_namespaced(server.client(3));
        match api.get("a").await {
            Err(kube::Error::Api(status)) => assert_eq!(status.code, 502),
            other => panic!("expected the last 502, got {other:?}"),
        }
        assert_eq!(server.seen().len(), 4, "one attempt and three retries");
    }

    #[tokio::test]
    async fn creates_and_client_errors_are_not_sent_again() {
        let server = Scripted::new(&[500]);
        let api: Api<ConfigMap> = Api::default_namespaced(server.client(3));
        let config_map: ConfigMap =
            serde_json::from_value(json!({"metadata": {"name": "a"}})).expect("a ConfigMap");
        assert!(
            api.create(&PostParams::default(), &config_map)
                .await
                .is_err()
        );
        assert_eq!(server.seen(), ["POST"], "a create is never sent twice");

        for status in [404, 409, 422] {
            let server = Scripted::new(&[status]);
            let api: Api<ConfigMap> = Api::default_namespaced(server.client(3));
            assert!(api.get("a").await.is_err());
            assert_eq!(
                server.seen(),
                ["GET"],
                "{status} is an answer, not a failure"
            );
        }

        let server = Scripted::new(&[500]);
        let api: Api<ConfigMap> = Api::default_namespaced(server.client(0));
        assert!(api.get("a").await.is_err(), "retries can be turned off");
        assert_eq!(server.seen(), ["GET"]);
    }
}
