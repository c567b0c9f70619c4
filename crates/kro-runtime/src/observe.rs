//! What a plan reports while it is made, for the controller's metrics (upstream kro's
//! `runtime_*` and `cel_*` families): nothing is reported, and no clock is read, unless a
//! [`PlanObserver`] is given in [`PlanOptions::observer`](crate::PlanOptions::observer).
//!
//! The observer of the plan being made is kept for the current thread while [`plan`] runs
//! (a plan is made synchronously on one thread), so that the evaluation of each expression
//! reaches it without every function on the way carrying it.
//!
//! [`plan`]: crate::plan()

use std::cell::RefCell;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Receives what a plan reports; every method does nothing unless implemented.
pub trait PlanObserver: Send + Sync + std::fmt::Debug {
    /// The planner of one instance was set up in `elapsed` (upstream's runtime creation).
    fn planner_created(&self, _elapsed: Duration) {}
    /// A node was evaluated (rendered, read, its data or readiness computed) in `elapsed`;
    /// `failed` when it failed.
    fn node_evaluated(&self, _elapsed: Duration, _failed: bool) {}
    /// A node's includeWhen conditions were checked.
    fn include_checked(&self) {}
    /// A node was skipped: its includeWhen excluded it, or a node it depends on was skipped.
    fn node_skipped(&self) {}
    /// A node's readiness was checked; `ready` or not.
    fn ready_checked(&self, _ready: bool) {}
    /// A `forEach` expanded to `items` items.
    fn collection_expanded(&self, _items: usize) {}
    /// A CEL expression was evaluated in `elapsed`.
    fn expression_evaluated(&self, _elapsed: Duration) {}
}

thread_local! {
    static CURRENT: RefCell<Option<Arc<dyn PlanObserver>>> = const { RefCell::new(None) };
}

/// Keeps `observer` as the current thread's until dropped (then the previous one again).
pub(crate) struct Observing {
    previous: Option<Arc<dyn PlanObserver>>,
}

impl Observing {
    /// Makes `observer` the current thread's.
    pub(crate) fn start(observer: Option<&Arc<dyn PlanObserver>>) -> Observing {
        let previous = CURRENT.with(|current| current.replace(observer.cloned()));
        Observing { previous }
    }
}

impl Drop for Observing {
    fn drop(&mut self) {
        let previous = self.previous.take();
        CURRENT.with(|current| *current.borrow_mut() = previous);
    }
}

/// Calls `event` with the current thread's observer, when there is one (no reference is
/// counted: plans run on several threads at once, and share one observer).
fn with_current(event: impl FnOnce(&dyn PlanObserver)) {
    CURRENT.with(|current| {
        if let Some(observer) = current.borrow().as_deref() {
            event(observer);
        }
    });
}

/// Whether an observer is current.
fn observing() -> bool {
    CURRENT.with(|current| current.borrow().is_some())
}

/// Runs `work`, timing it when an observer is current, and reports the time to `report`.
pub(crate) fn timed<T>(
    work: impl FnOnce() -> T,
    report: impl FnOnce(&dyn PlanObserver, Duration, &T),
) -> T {
    if !observing() {
        return work();
    }
    let started = Instant::now();
    let result = work();
    let elapsed = started.elapsed();
    with_current(|observer| report(observer, elapsed, &result));
    result
}

/// Tells the current observer, when there is one.
pub(crate) fn report(event: impl FnOnce(&dyn PlanObserver)) {
    with_current(event);
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    #[derive(Debug, Default)]
    struct Recorded(Mutex<Vec<String>>);

    impl PlanObserver for Recorded {
        fn node_skipped(&self) {
            self.0.lock().unwrap().push("skipped".to_owned());
        }
        fn expression_evaluated(&self, _elapsed: Duration) {
            self.0.lock().unwrap().push("expression".to_owned());
        }
    }

    #[test]
    fn reports_reach_the_observer_only_while_it_is_current() {
        let recorded = Arc::new(Recorded::default());
        let observer: Arc<dyn PlanObserver> = recorded.clone();
        report(|observer| observer.node_skipped());
        {
            let _observing = Observing::start(Some(&observer));
            report(|observer| observer.node_skipped());
            let value = timed(
                || 7,
                |observer, _, _| observer.expression_evaluated(Duration::ZERO),
            );
            assert_eq!(value, 7);
            {
                let _nested = Observing::start(None);
                report(|observer| observer.node_skipped());
            }
            report(|observer| observer.node_skipped());
        }
        report(|observer| observer.node_skipped());
        assert_eq!(
            *recorded.0.lock().unwrap(),
            ["skipped", "expression", "skipped"]
        );
    }
}
