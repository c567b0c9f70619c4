//! A client-side rate limit on API requests (upstream kro's `--client-qps` and
//! `--client-burst`, client-go's token bucket): up to `burst` requests at once, then `qps` per
//! second on average. Requests wait for a token before they are sent; none is refused.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::time::{Instant, Sleep};

/// The rate: `qps` requests per second on average, `burst` at once.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClientRate {
    /// Requests per second, on average.
    pub qps: f64,
    /// Requests sent at once before the average applies.
    pub burst: u32,
}

/// The tokens left and when they were counted, shared by every clone of a service.
#[derive(Debug)]
struct Bucket {
    rate: ClientRate,
    tokens: f64,
    counted_at: Instant,
}

impl Bucket {
    /// Takes a token, or says how long until one is there.
    fn take(&mut self) -> Result<(), Duration> {
        let now = Instant::now();
        let elapsed = now.saturating_duration_since(self.counted_at).as_secs_f64();
        self.tokens = (self.tokens + elapsed * self.rate.qps).min(f64::from(self.rate.burst));
        self.counted_at = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            Ok(())
        } else {
            Err(Duration::from_secs_f64((1.0 - self.tokens) / self.rate.qps))
        }
    }
}

/// A [`tower::Layer`] limiting the requests of a client's stack to a [`ClientRate`].
#[derive(Debug, Clone)]
pub struct ClientRateLayer {
    bucket: Arc<Mutex<Bucket>>,
    /// Where each request's wait is observed (`rest_client_rate_limiter_duration_seconds`).
    metrics: Option<crate::metrics::Metrics>,
}

impl ClientRateLayer {
    /// A limit of `rate`. A `qps` that is not positive, or a `burst` of 0, limits nothing
    /// (`None`).
    pub fn new(rate: ClientRate) -> Option<ClientRateLayer> {
        (rate.qps > 0.0 && rate.qps.is_finite() && rate.burst > 0).then(|| ClientRateLayer {
            bucket: Arc::new(Mutex::new(Bucket {
                rate,
                tokens: f64::from(rate.burst),
                counted_at: Instant::now(),
            })),
            metrics: None,
        })
    }

    /// The same limit, with each request's wait observed in `metrics`.
    #[must_use]
    pub fn observed_in(self, metrics: &crate::metrics::Metrics) -> ClientRateLayer {
        ClientRateLayer {
            metrics: Some(metrics.clone()),
            ..self
        }
    }
}

impl<S> tower::Layer<S> for ClientRateLayer {
    type Service = ClientRateService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        ClientRateService {
            inner,
            bucket: Arc::clone(&self.bucket),
            waiting: None,
            has_token: false,
            metrics: self.metrics.clone(),
            waited_since: None,
        }
    }
}

/// The service [`ClientRateLayer`] wraps around a client's stack: not ready until it holds a
/// token.
pub struct ClientRateService<S> {
    inner: S,
    bucket: Arc<Mutex<Bucket>>,
    waiting: Option<Pin<Box<Sleep>>>,
    has_token: bool,
    metrics: Option<crate::metrics::Metrics>,
    /// When the request about to be sent started waiting for a token.
    waited_since: Option<Instant>,
}

impl<S: Clone> Clone for ClientRateService<S> {
    /// A clone shares the bucket but holds no token of its own.
    fn clone(&self) -> Self {
        ClientRateService {
            inner: self.inner.clone(),
            bucket: Arc::clone(&self.bucket),
            waiting: None,
            has_token: false,
            metrics: self.metrics.clone(),
            waited_since: None,
        }
    }
}

impl<S, Body> tower::Service<http::Request<Body>> for ClientRateService<S>
where
    S: tower::Service<http::Request<Body>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, context: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        if !self.has_token && self.waited_since.is_none() {
            self.waited_since = Some(Instant::now());
        }
        while !self.has_token {
            if let Some(waiting) = self.waiting.as_mut() {
                if waiting.as_mut().poll(context).is_pending() {
                    return Poll::Pending;
                }
                self.waiting = None;
            }
            // A poisoned lock only means another request panicked while counting; the count
            // is still a number.
            let taken = match self.bucket.lock() {
                Ok(mut bucket) => bucket.take(),
                Err(poisoned) => poisoned.into_inner().take(),
            };
            match taken {
                Ok(()) => self.has_token = true,
                Err(wait) => self.waiting = Some(Box::pin(tokio::time::sleep(wait))),
            }
        }
        self.inner.poll_ready(context)
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        self.has_token = false;
        let waited = self
            .waited_since
            .take()
            .map(|since| since.elapsed())
            .unwrap_or_default();
        if let Some(metrics) = &self.metrics {
            let content_type = request
                .headers()
                .get(http::header::CONTENT_TYPE)
                .and_then(|value| value.to_str().ok())
                .unwrap_or_default();
            let verb = crate::metrics::request_verb(
                request.method(),
                request.uri().path(),
                request.uri().query().unwrap_or_default(),
                content_type,
            );
            metrics.requests().rate_limited(verb, waited);
        }
        self.inner.call(request)
    }
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;

    use tower::{Layer, Service, ServiceExt};

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_burst_goes_at_once_and_the_rest_at_the_rate() {
        let layer = ClientRateLayer::new(ClientRate {
            qps: 10.0,
            burst: 3,
        })
        .expect("a limit");
        let metrics = crate::metrics::Metrics::new();
        let layer = layer.observed_in(&metrics);
        let mut service = layer.layer(tower::service_fn(|_: http::Request<()>| async {
            Ok::<Instant, Infallible>(Instant::now())
        }));
        let start = Instant::now();
        let mut sent = Vec::new();
        for _ in 0..7 {
            let request = http::Request::new(());
            let at = service.ready().await.expect("ready").call(request).await;
            sent.push(at.expect("sent").duration_since(start));
        }
        let millis: Vec<u128> = sent.iter().map(Duration::as_millis).collect();
        // Three at once, then one every 100 ms.
        assert_eq!(millis, [0, 0, 0, 100, 200, 300, 400]);
        // Each request's wait is observed by its verb (a GET of `/` is a `get`).
        let scrape = metrics.encode();
        assert!(
            scrape.contains("rest_client_rate_limiter_duration_seconds_count{verb=\"get\"} 7"),
            "{scrape}"
        );
    }

    #[test]
    fn no_rate_limits_nothing() {
        for (qps, burst) in [(0.0, 10), (-1.0, 10), (10.0, 0), (f64::NAN, 1)] {
            assert!(ClientRateLayer::new(ClientRate { qps, burst }).is_none());
        }
    }
}
