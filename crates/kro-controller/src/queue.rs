//! A work queue with client-go's guarantees: a key waits in the queue at most once however
//! often it is added, a key is never handed to two workers at once, and a key added while a
//! worker holds it is handed out again once that worker is done (so no event is lost).

use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::Hash;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use crate::metrics::QueueMetrics;

struct State<K> {
    /// Keys waiting, in the order they were first added.
    waiting: VecDeque<K>,
    /// The same keys, for de-duplication.
    queued: HashSet<K>,
    /// Keys a worker holds.
    processing: HashSet<K>,
    /// Keys added while a worker held them: queued again when it is done.
    dirty: HashSet<K>,
    /// No more keys are handed out.
    shut_down: bool,
    /// When each waiting (or dirty) key was added, for `workqueue_queue_duration_seconds`.
    added_at: HashMap<K, Instant>,
    /// The metrics token of each key being processed.
    tokens: HashMap<K, u64>,
}

/// Consecutive failed reconciles per key, for the backoff of the next retry.
#[derive(Debug)]
pub(crate) struct Failures<K>(Mutex<std::collections::HashMap<K, u32>>);

impl<K> Default for Failures<K> {
    fn default() -> Self {
        Failures(Mutex::default())
    }
}

impl<K: Eq + Hash + Clone> Failures<K> {
    /// `key` failed once more: how many times in a row now (from 1).
    pub(crate) fn failed(&self, key: &K) -> u32 {
        let mut failures = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let attempt = failures.entry(key.clone()).or_insert(0);
        *attempt = attempt.saturating_add(1);
        *attempt
    }

    /// `key` succeeded (or is gone): its count starts again.
    pub(crate) fn forget(&self, key: &K) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(key);
    }
}

/// The queue; clones share it.
pub struct WorkQueue<K> {
    state: Arc<Mutex<State<K>>>,
    ready: Arc<Notify>,
    /// Where adds, depth, waits and work are counted (`workqueue_*`), when anywhere.
    metrics: Option<Arc<QueueMetrics>>,
}

impl<K> Clone for WorkQueue<K> {
    fn clone(&self) -> Self {
        WorkQueue {
            state: Arc::clone(&self.state),
            ready: Arc::clone(&self.ready),
            metrics: self.metrics.clone(),
        }
    }
}

impl<K: Clone + Eq + Hash + Send + 'static> Default for WorkQueue<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: Clone + Eq + Hash + Send + 'static> WorkQueue<K> {
    /// An empty queue.
    pub fn new() -> Self {
        WorkQueue {
            state: Arc::new(Mutex::new(State {
                waiting: VecDeque::new(),
                queued: HashSet::new(),
                processing: HashSet::new(),
                dirty: HashSet::new(),
                shut_down: false,
                added_at: HashMap::new(),
                tokens: HashMap::new(),
            })),
            ready: Arc::new(Notify::new()),
            metrics: None,
        }
    }

    /// An empty queue counted in `metrics`.
    pub(crate) fn counted(metrics: Arc<QueueMetrics>) -> Self {
        WorkQueue {
            metrics: Some(metrics),
            ..Self::new()
        }
    }

    /// Counts a new key in the metrics, noting when it came.
    fn count_added(&self, state: &mut State<K>, key: &K) {
        if let Some(metrics) = &self.metrics {
            metrics.added();
            state.added_at.insert(key.clone(), Instant::now());
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State<K>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Adds `key` (nothing happens when it already waits).
    pub fn add(&self, key: K) {
        let mut state = self.lock();
        if state.shut_down {
            return;
        }
        if state.processing.contains(&key) {
            if state.dirty.insert(key.clone()) {
                self.count_added(&mut state, &key);
            }
            return;
        }
        if state.queued.insert(key.clone()) {
            self.count_added(&mut state, &key);
            state.waiting.push_back(key);
            drop(state);
            self.ready.notify_one();
        }
    }

    /// Adds `key` after `delay` as a retry after a failure (counted in `workqueue_retries`).
    pub(crate) fn retry_after(&self, key: K, delay: Duration) {
        if let Some(metrics) = &self.metrics {
            metrics.retried();
        }
        self.add_after(key, delay);
    }

    /// Adds `key` after `delay` (a timer task; shutting down drops it).
    pub fn add_after(&self, key: K, delay: Duration) {
        let queue = self.clone();
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            queue.add(key);
        });
    }

    /// The next key, once there is one; `None` after [`shut_down`](Self::shut_down). The
    /// caller must call [`done`](Self::done) with it.
    pub async fn next(&self) -> Option<K> {
        loop {
            let notified = self.ready.notified();
            {
                let mut state = self.lock();
                if state.shut_down {
                    return None;
                }
                if let Some(key) = state.waiting.pop_front() {
                    state.queued.remove(&key);
                    state.processing.insert(key.clone());
                    if let Some(metrics) = &self.metrics {
                        let since = state.added_at.remove(&key);
                        let token = metrics.taken(since);
                        state.tokens.insert(key.clone(), token);
                    }
                    let more = !state.waiting.is_empty();
                    drop(state);
                    if more {
                        // Wake another worker for the rest.
                        self.ready.notify_one();
                    }
                    return Some(key);
                }
            }
            notified.await;
        }
    }

    /// Releases a key from [`next`](Self::next); if it was added meanwhile it waits again.
    pub fn done(&self, key: &K) {
        let mut state = self.lock();
        state.processing.remove(key);
        if let (Some(metrics), Some(token)) = (&self.metrics, state.tokens.remove(key)) {
            metrics.done(token);
        }
        if state.shut_down && state.dirty.remove(key) {
            state.added_at.remove(key);
            if let Some(metrics) = &self.metrics {
                metrics.dropped(1);
            }
        }
        if state.dirty.remove(key) && !state.shut_down && state.queued.insert(key.clone()) {
            state.waiting.push_back(key.clone());
            drop(state);
            self.ready.notify_one();
        }
    }

    /// How many keys wait (not counting those being processed).
    pub fn len(&self) -> usize {
        self.lock().waiting.len()
    }

    /// Whether no key waits.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Stops handing out keys: every [`next`](Self::next) returns `None`.
    pub fn shut_down(&self) {
        let mut state = self.lock();
        if !state.shut_down
            && let Some(metrics) = &self.metrics
        {
            // What waits is dropped; a dirty key is dropped as its worker finishes.
            metrics.dropped(state.waiting.len());
        }
        state.shut_down = true;
        state.added_at.clear();
        drop(state);
        self.ready.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_count_in_a_row_per_key_until_forgotten() {
        let failures = Failures::default();
        assert_eq!(failures.failed(&"a"), 1);
        assert_eq!(failures.failed(&"a"), 2);
        assert_eq!(failures.failed(&"b"), 1);
        failures.forget(&"a");
        assert_eq!(failures.failed(&"a"), 1);
    }

    #[tokio::test]
    async fn a_key_waits_once_however_often_it_is_added() {
        let queue = WorkQueue::new();
        queue.add("a");
        queue.add("b");
        queue.add("a");
        assert_eq!(queue.len(), 2);
        assert_eq!(queue.next().await, Some("a"));
        assert_eq!(queue.next().await, Some("b"));
        assert!(queue.is_empty());
    }

    #[tokio::test]
    async fn a_key_added_while_processed_comes_back_after_done() {
        let queue = WorkQueue::new();
        queue.add("a");
        let key = queue.next().await;
        assert_eq!(key, Some("a"));
        queue.add("a");
        // Not handed out again while held.
        assert!(queue.is_empty());
        queue.done(&"a");
        assert_eq!(queue.len(), 1);
        assert_eq!(queue.next().await, Some("a"));
        queue.done(&"a");
        assert!(queue.is_empty());
    }

    #[tokio::test]
    async fn shutting_down_releases_waiting_workers() {
        let queue: WorkQueue<&str> = WorkQueue::new();
        let waiter = tokio::spawn({
            let queue = queue.clone();
            async move { queue.next().await }
        });
        tokio::task::yield_now().await;
        queue.shut_down();
        assert_eq!(waiter.await.ok(), Some(None));
        queue.add("late");
        assert!(queue.is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn add_after_waits_for_the_delay() {
        let queue = WorkQueue::new();
        queue.add_after("a", Duration::from_secs(3));
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert!(queue.is_empty());
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert_eq!(queue.len(), 1);
    }
}
