//! Leader election through a `coordination.k8s.io/v1` Lease, with client-go's rules, so that of
//! several kro replicas exactly one runs the controllers.
//!
//! A candidate takes the Lease when nobody holds it, when it was released (empty holder), or
//! when its holder has not renewed it for the lease duration — measured on the candidate's own
//! clock from when it last saw the Lease change, so clocks that disagree between nodes do not
//! matter. The leader renews every retry period; when it cannot renew for the renew deadline it
//! has lost the lease and must stop. A leader that stops gracefully releases the Lease (empty
//! holder, one-second duration) so the next one takes over at once. Writes are optimistic
//! (the Lease's resourceVersion), so two candidates never both win.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use kro_graph::metadata::LEADER_LEASE_NAME;
use kube::Api;
use kube::api::{ObjectMeta, PostParams};
use tokio::sync::{Notify, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// How the lease is held.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseConfig {
    /// The Lease's name.
    pub name: String,
    /// The Lease's namespace.
    pub namespace: String,
    /// Who this process is (unique among the candidates).
    pub identity: String,
    /// How long others wait after the last renewal before taking the lease.
    pub lease_duration: Duration,
    /// How long the leader keeps trying to renew before it gives up leading.
    pub renew_deadline: Duration,
    /// How often candidates try to take the lease, and the leader renews it.
    pub retry_period: Duration,
}

impl LeaseConfig {
    /// The lease [`LEADER_LEASE_NAME`] in `namespace` for `identity`, with client-go's
    /// timings: 15 s duration, 10 s renew deadline, 2 s retry period.
    pub fn new(namespace: impl Into<String>, identity: impl Into<String>) -> Self {
        LeaseConfig {
            name: LEADER_LEASE_NAME.to_owned(),
            namespace: namespace.into(),
            identity: identity.into(),
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
        }
    }

    /// Checks the timings as client-go does: the duration exceeds the renew deadline, which
    /// exceeds 1.2 retry periods, and the identity is not empty.
    ///
    /// # Errors
    /// [`LeaseConfigError`] naming the rule broken.
    pub fn validate(&self) -> Result<(), LeaseConfigError> {
        if self.identity.is_empty() {
            return Err(LeaseConfigError::EmptyIdentity);
        }
        if self.name.is_empty() || self.namespace.is_empty() {
            return Err(LeaseConfigError::EmptyName);
        }
        if self.lease_duration <= self.renew_deadline {
            return Err(LeaseConfigError::DurationNotAboveDeadline {
                lease_duration: self.lease_duration,
                renew_deadline: self.renew_deadline,
            });
        }
        if self.renew_deadline.as_secs_f64() <= 1.2 * self.retry_period.as_secs_f64() {
            return Err(LeaseConfigError::DeadlineNotAboveRetries {
                renew_deadline: self.renew_deadline,
                retry_period: self.retry_period,
            });
        }
        if self.lease_duration.as_secs() < 1 || self.lease_duration.as_secs() > i32::MAX as u64 {
            return Err(LeaseConfigError::DurationOutOfRange(self.lease_duration));
        }
        Ok(())
    }
}

/// Why lease settings cannot work.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LeaseConfigError {
    /// The identity is empty.
    #[error("the leader election identity is empty")]
    EmptyIdentity,
    /// The Lease name or namespace is empty.
    #[error("the leader election lease needs a name and a namespace")]
    EmptyName,
    /// Others would take the lease while the leader still tries to renew it.
    #[error(
        "the lease duration ({lease_duration:?}) must be greater than the renew deadline ({renew_deadline:?})"
    )]
    DurationNotAboveDeadline {
        /// The lease duration.
        lease_duration: Duration,
        /// The renew deadline.
        renew_deadline: Duration,
    },
    /// The leader would give up before retrying once.
    #[error(
        "the renew deadline ({renew_deadline:?}) must be greater than 1.2 retry periods ({retry_period:?})"
    )]
    DeadlineNotAboveRetries {
        /// The renew deadline.
        renew_deadline: Duration,
        /// The retry period.
        retry_period: Duration,
    },
    /// The duration is not a whole number of seconds a Lease can carry.
    #[error("the lease duration ({0:?}) must be between 1 s and 2^31 s")]
    DurationOutOfRange(Duration),
}

/// What a candidate does with the Lease it read.
#[derive(Debug, Clone, PartialEq)]
enum Step {
    /// Someone else holds a valid lease.
    Wait,
    /// Write this spec (take or renew).
    Write(LeaseSpec),
}

/// The spec that makes `identity` the holder at `now`, or `Wait` when another holder's lease
/// is still `valid` (seen renewed within its duration).
fn next_step(current: &LeaseSpec, config: &LeaseConfig, valid: bool, now: Timestamp) -> Step {
    let holder = current.holder_identity.as_deref().unwrap_or_default();
    let mine = holder == config.identity;
    if !holder.is_empty() && !mine && valid {
        return Step::Wait;
    }
    let transitions = current.lease_transitions.unwrap_or(0);
    Step::Write(LeaseSpec {
        holder_identity: Some(config.identity.clone()),
        lease_duration_seconds: Some(duration_seconds(config.lease_duration)),
        acquire_time: if mine {
            current.acquire_time.clone()
        } else {
            Some(MicroTime(now))
        },
        renew_time: Some(MicroTime(now)),
        lease_transitions: Some(if mine {
            transitions
        } else {
            transitions.saturating_add(1)
        }),
        ..current.clone()
    })
}

fn duration_seconds(duration: Duration) -> i32 {
    i32::try_from(duration.as_secs()).unwrap_or(i32::MAX)
}

/// The parts of a Lease whose change shows its holder is alive.
#[derive(Debug, Clone, PartialEq)]
struct Record {
    holder: Option<String>,
    renew_time: Option<MicroTime>,
    transitions: Option<i32>,
    duration_seconds: Option<i32>,
}

impl Record {
    fn of(spec: &LeaseSpec) -> Self {
        Record {
            holder: spec.holder_identity.clone(),
            renew_time: spec.renew_time.clone(),
            transitions: spec.lease_transitions,
            duration_seconds: spec.lease_duration_seconds,
        }
    }
}

/// A candidate for leadership.
pub struct LeaderElector {
    api: Api<Lease>,
    config: LeaseConfig,
    /// The record last seen and when (on this process's clock) it was first seen.
    observed: std::sync::Mutex<Option<(Record, Instant)>>,
}

impl LeaderElector {
    /// A candidate writing the Lease through `client`.
    ///
    /// # Errors
    /// [`LeaseConfigError`] when the settings cannot work.
    pub fn new(client: kube::Client, config: LeaseConfig) -> Result<Self, LeaseConfigError> {
        config.validate()?;
        Ok(LeaderElector {
            api: Api::namespaced(client, &config.namespace),
            config,
            observed: std::sync::Mutex::default(),
        })
    }

    /// The settings.
    pub fn config(&self) -> &LeaseConfig {
        &self.config
    }

    /// Waits until this candidate holds the lease, trying every retry period; then renews it
    /// in the background until [`Leadership::release`] or until renewing fails for the renew
    /// deadline ([`Leadership::lost`]).
    pub async fn acquire(self) -> Leadership {
        let elector = Arc::new(self);
        loop {
            match elector.try_acquire_or_renew().await {
                Ok(true) => break,
                Ok(false) => {}
                Err(error) => {
                    tracing::warn!(lease = %elector.config.name, %error, "cannot read or take the lease; retrying");
                }
            }
            tokio::time::sleep(elector.config.retry_period).await;
        }
        tracing::info!(lease = %elector.config.name, identity = %elector.config.identity, "became the leader");
        let (lost_sender, lost) = watch::channel(false);
        let stop = Arc::new(Notify::new());
        let renewer = tokio::spawn(renew(Arc::clone(&elector), lost_sender, Arc::clone(&stop)));
        Leadership {
            elector,
            lost,
            stop,
            renewer: Some(renewer),
        }
    }

    /// One attempt: take or renew the lease. `Ok(false)` when another holder has it or another
    /// candidate wrote it first.
    async fn try_acquire_or_renew(&self) -> Result<bool, kube::Error> {
        let now = Timestamp::now();
        let Some(lease) = self.api.get_opt(&self.config.name).await? else {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(self.config.name.clone()),
                    namespace: Some(self.config.namespace.clone()),
                    ..ObjectMeta::default()
                },
                spec: match next_step(&LeaseSpec::default(), &self.config, false, now) {
                    Step::Write(spec) => Some(LeaseSpec {
                        lease_transitions: Some(0),
                        ..spec
                    }),
                    Step::Wait => None,
                },
            };
            return match self.api.create(&PostParams::default(), &lease).await {
                Ok(created) => {
                    self.observe(created.spec.as_ref());
                    Ok(true)
                }
                Err(kube::Error::Api(status)) if status.code == 409 => Ok(false),
                Err(error) => Err(error),
            };
        };
        let current = lease.spec.clone().unwrap_or_default();
        let valid = self.observe(Some(&current));
        match next_step(&current, &self.config, valid, now) {
            Step::Wait => Ok(false),
            Step::Write(spec) => {
                let updated = Lease {
                    spec: Some(spec),
                    ..lease
                };
                match self
                    .api
                    .replace(&self.config.name, &PostParams::default(), &updated)
                    .await
                {
                    Ok(written) => {
                        self.observe(written.spec.as_ref());
                        Ok(true)
                    }
                    Err(kube::Error::Api(status)) if status.code == 409 => Ok(false),
                    Err(error) => Err(error),
                }
            }
        }
    }

    /// Notes the record seen now; true while it is within its duration of when it was first
    /// seen.
    fn observe(&self, spec: Option<&LeaseSpec>) -> bool {
        let record = spec.map(Record::of).unwrap_or(Record {
            holder: None,
            renew_time: None,
            transitions: None,
            duration_seconds: None,
        });
        let mut observed = self
            .observed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let since = match &*observed {
            Some((seen, at)) if *seen == record => *at,
            _ => Instant::now(),
        };
        let duration = record
            .duration_seconds
            .filter(|seconds| *seconds > 0)
            .map_or(self.config.lease_duration, |seconds| {
                Duration::from_secs(seconds.unsigned_abs().into())
            });
        *observed = Some((record, since));
        since + duration > Instant::now()
    }

    /// Gives the lease up if this candidate holds it.
    async fn release(&self) -> Result<(), kube::Error> {
        let Some(lease) = self.api.get_opt(&self.config.name).await? else {
            return Ok(());
        };
        let current = lease.spec.clone().unwrap_or_default();
        if current.holder_identity.as_deref() != Some(self.config.identity.as_str()) {
            return Ok(());
        }
        let now = MicroTime(Timestamp::now());
        let released = Lease {
            spec: Some(LeaseSpec {
                holder_identity: None,
                lease_duration_seconds: Some(1),
                acquire_time: Some(now.clone()),
                renew_time: Some(now),
                ..current
            }),
            ..lease
        };
        self.api
            .replace(&self.config.name, &PostParams::default(), &released)
            .await?;
        Ok(())
    }
}

/// Renews every retry period until stopped (then releases) or until no renewal succeeded for
/// the renew deadline (then reports the loss).
async fn renew(elector: Arc<LeaderElector>, lost: watch::Sender<bool>, stop: Arc<Notify>) {
    let config = elector.config.clone();
    let mut renewed_at = Instant::now();
    loop {
        tokio::select! {
            () = stop.notified() => {
                if let Err(error) = elector.release().await {
                    tracing::warn!(lease = %config.name, %error, "cannot release the lease; it expires on its own");
                }
                return;
            }
            () = tokio::time::sleep(config.retry_period) => {}
        }
        let left = config.renew_deadline.saturating_sub(renewed_at.elapsed());
        let attempt = tokio::time::timeout(left, elector.try_acquire_or_renew()).await;
        match attempt {
            Ok(Ok(true)) => renewed_at = Instant::now(),
            Ok(Ok(false)) => {
                tracing::warn!(lease = %config.name, "the lease was written by another candidate; retrying");
            }
            Ok(Err(error)) => {
                tracing::warn!(lease = %config.name, %error, "cannot renew the lease; retrying");
            }
            Err(_) => {}
        }
        if renewed_at.elapsed() >= config.renew_deadline {
            tracing::error!(lease = %config.name, deadline = ?config.renew_deadline, "the lease could not be renewed in time");
            let _ = lost.send(true);
            return;
        }
    }
}

/// The lease, held: renewed in the background. Dropping it stops renewing without releasing
/// (as a crash would): others take the lease once it expires.
pub struct Leadership {
    elector: Arc<LeaderElector>,
    lost: watch::Receiver<bool>,
    stop: Arc<Notify>,
    renewer: Option<JoinHandle<()>>,
}

impl Leadership {
    /// Resolves when the lease is lost (not renewed within the renew deadline). The
    /// controllers must stop then.
    pub async fn lost(&mut self) {
        // An error means the renewer ended, which it does only after sending.
        let _ = self.lost.wait_for(|lost| *lost).await;
    }

    /// Whether the lease is lost.
    pub fn is_lost(&self) -> bool {
        *self.lost.borrow()
    }

    /// The identity holding the lease (this process).
    pub fn identity(&self) -> &str {
        &self.elector.config.identity
    }

    /// Stops renewing and gives the lease up, so another candidate can take it at once.
    pub async fn release(mut self) {
        self.stop.notify_one();
        if let Some(renewer) = self.renewer.take() {
            let _ = renewer.await;
        }
    }
}

impl Drop for Leadership {
    fn drop(&mut self) {
        if let Some(renewer) = self.renewer.take() {
            renewer.abort();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(identity: &str) -> LeaseConfig {
        LeaseConfig::new("kro-system", identity)
    }

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_second(seconds).expect("a time")
    }

    fn held_by(identity: &str, transitions: i32) -> LeaseSpec {
        LeaseSpec {
            holder_identity: Some(identity.to_owned()),
            lease_duration_seconds: Some(15),
            acquire_time: Some(MicroTime(at(100))),
            renew_time: Some(MicroTime(at(110))),
            lease_transitions: Some(transitions),
            ..LeaseSpec::default()
        }
    }

    #[test]
    fn a_valid_lease_of_another_holder_is_waited_for() {
        assert_eq!(
            next_step(&held_by("b", 3), &config("a"), true, at(120)),
            Step::Wait
        );
    }

    #[test]
    fn an_expired_lease_is_taken_with_one_more_transition() {
        assert_eq!(
            next_step(&held_by("b", 3), &config("a"), false, at(130)),
            Step::Write(LeaseSpec {
                holder_identity: Some("a".to_owned()),
                lease_duration_seconds: Some(15),
                acquire_time: Some(MicroTime(at(130))),
                renew_time: Some(MicroTime(at(130))),
                lease_transitions: Some(4),
                ..LeaseSpec::default()
            })
        );
    }

    #[test]
    fn renewing_keeps_the_acquire_time_and_the_transitions() {
        assert_eq!(
            next_step(&held_by("a", 3), &config("a"), true, at(140)),
            Step::Write(LeaseSpec {
                holder_identity: Some("a".to_owned()),
                lease_duration_seconds: Some(15),
                acquire_time: Some(MicroTime(at(100))),
                renew_time: Some(MicroTime(at(140))),
                lease_transitions: Some(3),
                ..LeaseSpec::default()
            })
        );
    }

    #[test]
    fn a_released_lease_is_taken_at_once() {
        let released = LeaseSpec {
            holder_identity: None,
            ..held_by("b", 2)
        };
        assert!(matches!(
            next_step(&released, &config("a"), true, at(111)),
            Step::Write(LeaseSpec {
                lease_transitions: Some(3),
                ..
            })
        ));
    }

    #[test]
    fn timings_that_cannot_work_are_refused() {
        let mut bad = config("a");
        bad.renew_deadline = Duration::from_secs(15);
        assert!(matches!(
            bad.validate(),
            Err(LeaseConfigError::DurationNotAboveDeadline { .. })
        ));
        let mut bad = config("a");
        bad.retry_period = Duration::from_secs(9);
        assert!(matches!(
            bad.validate(),
            Err(LeaseConfigError::DeadlineNotAboveRetries { .. })
        ));
        assert_eq!(config("").validate(), Err(LeaseConfigError::EmptyIdentity));
        assert_eq!(config("a").validate(), Ok(()));
    }
}
