//! Stopping a run on request: what `kro apply` does on Ctrl-C. A run starts no new work once
//! asked, lets what is in flight finish, and fails naming what was left.

use tokio::time::Instant;

/// Asks a running deploy or delete to stop: it starts no new work, lets what is in flight
/// finish, and fails with [`DirectError::Stopped`](crate::direct::DirectError::Stopped) naming what was left.
#[derive(Debug)]
pub struct StopHandle(tokio::sync::watch::Sender<bool>);

impl StopHandle {
    /// Asks to stop.
    pub fn stop(&self) {
        self.0.send_replace(true);
    }
}

/// The side of a [`StopHandle`] a deploy watches.
#[derive(Debug, Clone)]
pub struct Stop(tokio::sync::watch::Receiver<bool>);

impl Stop {
    /// A handle and the signal it sets.
    pub fn new() -> (StopHandle, Stop) {
        let (sender, receiver) = tokio::sync::watch::channel(false);
        (StopHandle(sender), Stop(receiver))
    }

    /// A signal nothing sets.
    pub fn never() -> Stop {
        Stop::new().1
    }

    /// Whether stopping was asked.
    pub fn is_stopped(&self) -> bool {
        *self.0.borrow()
    }

    /// Returns once stopping is asked (never, when no handle can ask any more).
    pub(crate) async fn stopped(&mut self) {
        if self.0.wait_for(|stopped| *stopped).await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

/// Sleeps until `deadline`, or forever without one.
pub(crate) async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}
