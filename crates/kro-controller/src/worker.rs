//! The one reconcile worker every controller runs (RGDs, instances, `<Kind>Set`s): take a key
//! from the queue, reconcile it in its span within the reconcile timeout, count it in the
//! metrics, and put it back after the delay its outcome asks for (backoff after a failure);
//! and the tasks a controller owns, stopped together.

use std::fmt::Display;
use std::future::Future;
use std::hash::Hash;
use std::time::{Duration, Instant};

use tokio::task::JoinSet;
use tracing::Instrument;

use futures_util::FutureExt;

use crate::error::ReconcileError;
use crate::metrics::ReconcileResult;
use crate::queue::{Failures, WorkQueue};
use crate::settings::Settings;

/// What the worker needs of a controller.
pub(crate) trait Reconciler: Send + Sync {
    /// What the queue holds.
    type Key: Clone + Eq + Hash + Display + Send + Sync + 'static;
    /// What a reconcile that succeeded says.
    type Done: Send;
    /// What the controller's reconciles share (the process's client, metrics, settings).
    type Context: Sync;

    /// The controller's queue.
    fn queue(&self) -> &WorkQueue<Self::Key>;

    /// The failures in a row of each key (for the backoff).
    fn failures(&self) -> &Failures<Self::Key>;

    /// The span a reconcile of `key` runs in (its log lines carry it).
    fn span(&self, key: &Self::Key) -> tracing::Span;

    /// Reconciles `key`.
    fn reconcile<'a>(
        &'a self,
        context: &'a Self::Context,
        key: &'a Self::Key,
    ) -> impl Future<Output = Result<Self::Done, ReconcileError>> + Send + 'a;

    /// Counts a reconcile in the metrics.
    fn reconciled(&self, context: &Self::Context, elapsed: Duration, result: ReconcileResult);

    /// A worker started (`1`) or finished (`-1`) a reconcile (for the active workers gauge).
    fn working(&self, _context: &Self::Context, _delta: i64) {}

    /// What a reconcile that succeeded leads to: the delay after which `key` is reconciled
    /// again, if it asks for one.
    fn succeeded(
        &self,
        context: &Self::Context,
        key: &Self::Key,
        done: Self::Done,
    ) -> Option<Duration>;
}

/// Runs `reconciler`'s reconciles until its queue is shut down, with the reconcile timeout and
/// the backoff of `settings`.
pub(crate) async fn work<R: Reconciler>(reconciler: &R, context: &R::Context, settings: &Settings) {
    let queue = reconciler.queue();
    while let Some(key) = queue.next().await {
        let started = Instant::now();
        let span = reconciler.span(&key);
        let limit = settings.reconcile_timeout;
        reconciler.working(context, 1);
        // A panic in a reconcile is recovered (as controller-runtime and upstream's dynamic
        // controller recover it): the key is retried with backoff, and the worker lives on.
        let run = std::panic::AssertUnwindSafe(
            reconciler.reconcile(context, &key).instrument(span.clone()),
        )
        .catch_unwind();
        let (outcome, panicked) = match tokio::time::timeout(limit, run).await {
            Ok(Ok(outcome)) => (outcome, false),
            Ok(Err(panic)) => (Err(ReconcileError::Panicked(panic_message(&panic))), true),
            Err(_) => (Err(ReconcileError::TimedOut(limit)), false),
        };
        reconciler.working(context, -1);
        queue.done(&key);
        match outcome {
            Ok(done) => {
                reconciler.failures().forget(&key);
                let delay = reconciler.succeeded(context, &key, done);
                let result = if delay.is_some() {
                    ReconcileResult::RequeueAfter
                } else {
                    ReconcileResult::Success
                };
                reconciler.reconciled(context, started.elapsed(), result);
                if let Some(delay) = delay {
                    queue.add_after(key, delay);
                }
            }
            Err(error) => {
                let result = match &error {
                    _ if panicked => ReconcileResult::Panicked,
                    ReconcileError::TimedOut(_) => ReconcileResult::TimedOut,
                    _ => ReconcileResult::Error,
                };
                reconciler.reconciled(context, started.elapsed(), result);
                let attempt = reconciler.failures().failed(&key);
                let delay = settings.retry_delay(attempt);
                tracing::warn!(parent: &span, reason = error.reason(), %error, ?delay, "reconcile failed");
                queue.retry_after(key, delay);
            }
        }
    }
}

/// What a panic said, when it said it as text.
fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|text| (*text).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_owned())
}

#[derive(Default)]
pub(crate) struct Tasks {
    watches: JoinSet<()>,
    workers: JoinSet<()>,
}

impl Tasks {
    /// Runs a watch.
    pub(crate) fn watch(&mut self, task: impl Future<Output = ()> + Send + 'static) {
        self.watches.spawn(task);
    }

    /// Runs a worker.
    pub(crate) fn worker(&mut self, task: impl Future<Output = ()> + Send + 'static) {
        self.workers.spawn(task);
    }

    /// Aborts the watches and waits for the workers (their queue must be shut down first).
    pub(crate) async fn stop(mut self) {
        self.watches.abort_all();
        while self.workers.join_next().await.is_some() {}
        while self.watches.join_next().await.is_some() {}
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex};

    use super::*;

    /// Fails each key's first reconcile, then succeeds, asking to be called again once.
    #[derive(Default)]
    struct Flaky {
        queue: WorkQueue<String>,
        failures: Failures<String>,
        /// Each reconcile counted: whether it succeeded, and when.
        counted: Mutex<Vec<(bool, tokio::time::Instant)>>,
        calls: Mutex<HashMap<String, u32>>,
    }

    impl Reconciler for Flaky {
        type Key = String;
        type Done = Option<Duration>;
        type Context = ();

        fn queue(&self) -> &WorkQueue<String> {
            &self.queue
        }

        fn failures(&self) -> &Failures<String> {
            &self.failures
        }

        fn span(&self, key: &String) -> tracing::Span {
            tracing::info_span!("reconcile", key = %key)
        }

        async fn reconcile(
            &self,
            _context: &(),
            key: &String,
        ) -> Result<Option<Duration>, ReconcileError> {
            let call = {
                let mut calls = self.calls.lock().unwrap();
                let call = calls.entry(key.clone()).or_default();
                *call += 1;
                *call
            };
            match call {
                1 => Err(ReconcileError::MissingPermissions("not yet".to_owned())),
                2 => Ok(Some(Duration::from_secs(30))),
                _ => Ok(None),
            }
        }

        fn reconciled(&self, _context: &(), _elapsed: Duration, result: ReconcileResult) {
            let succeeded = matches!(
                result,
                ReconcileResult::Success | ReconcileResult::RequeueAfter
            );
            self.counted
                .lock()
                .unwrap()
                .push((succeeded, tokio::time::Instant::now()));
        }

        fn succeeded(
            &self,
            _context: &(),
            _key: &String,
            requeue: Option<Duration>,
        ) -> Option<Duration> {
            requeue
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_failure_is_retried_after_the_backoff_and_a_success_after_the_delay_it_asks() {
        let flaky = Arc::new(Flaky::default());
        let settings = Settings::default();
        let worker = {
            let flaky = Arc::clone(&flaky);
            let settings = settings.clone();
            tokio::spawn(async move { work(&*flaky, &(), &settings).await })
        };
        let started = tokio::time::Instant::now();
        flaky.queue.add("a".to_owned());
        let three = async {
            while flaky.counted.lock().unwrap().len() < 3 {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        };
        tokio::time::timeout(Duration::from_secs(3600), three)
            .await
            .expect("three reconciles within an hour of (paused) time");
        let counted = flaky.counted.lock().unwrap().clone();
        let outcomes: Vec<bool> = counted.iter().map(|(ok, _)| *ok).collect();
        assert_eq!(outcomes, [false, true, true]);
        let after_failure = counted[1].1 - started;
        assert!(
            after_failure >= settings.retry_delay(1),
            "retried after the backoff: {after_failure:?}"
        );
        let after_success = counted[2].1 - counted[1].1;
        assert!(
            after_success >= Duration::from_secs(30),
            "reconciled again after the delay asked: {after_success:?}"
        );
        assert_eq!(
            flaky.failures.failed(&"a".to_owned()),
            1,
            "the failure was forgotten"
        );
        flaky.queue.shut_down();
        worker.await.unwrap();
    }
}
