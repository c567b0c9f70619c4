//! The controllers' clock: the instant `time.now()` reads at each reconcile (gate
//! `CELTimeFunctions`), and the timers that bring an instance back at the instant what it read
//! changes its answer. Tests drive a [`ManualClock`] instead of waiting.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::hash::Hash;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};

use kro_cel::Timestamp;
use tokio::sync::watch;
use tokio::task::AbortHandle;

use crate::queue::WorkQueue;

/// A source of the current instant.
pub trait TimeSource: Send + Sync + fmt::Debug {
    /// Now.
    fn now(&self) -> Timestamp;
    /// A future that completes once it is `at` or later.
    fn sleep_until(&self, at: Timestamp) -> Pin<Box<dyn Future<Output = ()> + Send>>;
}

/// The clock the controllers read: the system's unless a test sets another.
#[derive(Clone, Debug)]
pub struct Clock(Arc<dyn TimeSource>);

impl Default for Clock {
    fn default() -> Self {
        Clock(Arc::new(SystemClock))
    }
}

impl Clock {
    /// This machine's clock.
    pub fn system() -> Clock {
        Clock::default()
    }

    /// A clock that stands still at `start` until the returned handle moves it.
    pub fn manual(start: Timestamp) -> (Clock, ManualClock) {
        let (sender, _) = watch::channel(start);
        let sender = Arc::new(sender);
        (Clock(Arc::new(Manual(sender.clone()))), ManualClock(sender))
    }

    /// Now.
    pub fn now(&self) -> Timestamp {
        self.0.now()
    }

    fn sleep_until(&self, at: Timestamp) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        self.0.sleep_until(at)
    }
}

/// The system clock.
#[derive(Debug)]
struct SystemClock;

fn system_now() -> Timestamp {
    let since_epoch = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let seconds = i64::try_from(since_epoch.as_secs()).unwrap_or(i64::MAX);
    Timestamp::new(seconds, since_epoch.subsec_nanos()).unwrap_or(Timestamp::UNIX_EPOCH)
}

impl TimeSource for SystemClock {
    fn now(&self) -> Timestamp {
        system_now()
    }

    fn sleep_until(&self, at: Timestamp) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        Box::pin(async move {
            // Slept in steps of at most an hour, so that a clock set forward (NTP, a suspended
            // laptop) is noticed within the hour rather than after the whole span.
            loop {
                let left = at.since(system_now()).map(|left| left.total_nanos());
                let nanos = match left {
                    Ok(nanos) if nanos > 0 => nanos,
                    _ => return,
                };
                let step = u64::try_from(nanos)
                    .unwrap_or(u64::MAX)
                    .min(3_600_000_000_000);
                tokio::time::sleep(std::time::Duration::from_nanos(step)).await;
            }
        })
    }
}

/// A clock moved by hand.
#[derive(Debug)]
struct Manual(Arc<watch::Sender<Timestamp>>);

impl TimeSource for Manual {
    fn now(&self) -> Timestamp {
        *self.0.borrow()
    }

    fn sleep_until(&self, at: Timestamp) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        let mut receiver = self.0.subscribe();
        Box::pin(async move {
            let _ = receiver.wait_for(|now| *now >= at).await;
        })
    }
}

/// The handle of a [`Clock::manual`] clock.
#[derive(Debug, Clone)]
pub struct ManualClock(Arc<watch::Sender<Timestamp>>);

impl ManualClock {
    /// Sets the clock to `at` (backwards too), waking every timer due by then.
    pub fn set(&self, at: Timestamp) {
        self.0.send_replace(at);
    }

    /// The clock's instant.
    pub fn now(&self) -> Timestamp {
        *self.0.borrow()
    }
}

/// One timer per key: the key is queued again at its instant. Setting a key's timer replaces
/// the one it had.
pub(crate) struct Timers<K> {
    timers: Mutex<HashMap<K, (Timestamp, AbortHandle)>>,
}

impl<K> Default for Timers<K> {
    fn default() -> Self {
        Timers {
            timers: Mutex::new(HashMap::new()),
        }
    }
}

impl<K: Clone + Eq + Hash + Send + Sync + 'static> Timers<K> {
    /// Queues `key` on `queue` at `at` by `clock` (once; a timer for another instant is
    /// replaced, one for the same instant kept), or cancels its timer when `at` is `None`.
    pub(crate) fn set(&self, key: &K, at: Option<Timestamp>, clock: &Clock, queue: &WorkQueue<K>) {
        let mut timers = self.timers.lock().unwrap_or_else(PoisonError::into_inner);
        timers.retain(|_, (_, handle)| !handle.is_finished());
        let Some(at) = at else {
            if let Some((_, handle)) = timers.remove(key) {
                handle.abort();
            }
            return;
        };
        if let Some((current, handle)) = timers.get(key) {
            if *current == at && !handle.is_finished() {
                return;
            }
            handle.abort();
        }
        let sleep = clock.sleep_until(at);
        let queue = queue.clone();
        let queued = key.clone();
        let task = tokio::spawn(async move {
            sleep.await;
            queue.add(queued);
        });
        timers.insert(key.clone(), (at, task.abort_handle()));
    }

    /// Cancels the timers of the keys `keep` refuses.
    pub(crate) fn retain(&self, keep: impl Fn(&K) -> bool) {
        let mut timers = self.timers.lock().unwrap_or_else(PoisonError::into_inner);
        timers.retain(|key, (_, handle)| {
            let kept = keep(key);
            if !kept {
                handle.abort();
            }
            kept
        });
    }

    /// The instant each key's timer is set for.
    #[cfg(test)]
    pub(crate) fn instants(&self) -> HashMap<K, Timestamp> {
        let timers = self.timers.lock().unwrap_or_else(PoisonError::into_inner);
        timers
            .iter()
            .map(|(key, (at, _))| (key.clone(), *at))
            .collect()
    }
}

impl<K> Drop for Timers<K> {
    fn drop(&mut self) {
        let timers = self
            .timers
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner);
        for (_, handle) in timers.values() {
            handle.abort();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> Timestamp {
        Timestamp::parse(text).expect("RFC 3339")
    }

    #[tokio::test]
    async fn a_timer_queues_its_key_when_the_manual_clock_reaches_it() {
        let (clock, hand) = Clock::manual(at("2026-01-01T00:00:00Z"));
        let queue: WorkQueue<String> = WorkQueue::default();
        let timers = Timers::default();
        timers.set(
            &"a".to_owned(),
            Some(at("2026-01-01T01:00:00Z")),
            &clock,
            &queue,
        );
        timers.set(
            &"b".to_owned(),
            Some(at("2026-01-02T00:00:00Z")),
            &clock,
            &queue,
        );
        tokio::task::yield_now().await;
        assert_eq!(queue.len(), 0);
        hand.set(at("2026-01-01T00:59:59Z"));
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        assert_eq!(queue.len(), 0, "nothing is due yet");
        hand.set(at("2026-01-01T01:00:00Z"));
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        assert_eq!(queue.len(), 1, "a is due");
        // Replaced and cancelled timers never fire.
        timers.set(
            &"b".to_owned(),
            Some(at("2026-01-03T00:00:00Z")),
            &clock,
            &queue,
        );
        timers.retain(|key| key != "b");
        hand.set(at("2026-01-04T00:00:00Z"));
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        assert_eq!(queue.len(), 1);
        assert!(timers.instants().is_empty());
    }
}
