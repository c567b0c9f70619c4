//! One reconcile's batch of a `<Kind>Set`'s writes ([`SetBatch`], at most
//! [`BURST_REPLICAS`](crate::set_plan::BURST_REPLICAS)), sent as a ReplicaSet's sync sends them:
//! the deletes together, the creates and updates in slow-start rounds of 1, 2, 4, …, each round
//! together. At most the settings' `apply_concurrency` requests are in flight at once. A change
//! of the Set (a new generation in its cache) ends the batch before its next round: the rounds
//! of a batch of 500 on a busy cluster take seconds, and a Set scaled to 0 meanwhile should
//! not wait for them.

use std::future::Future;

use futures_util::StreamExt;
use futures_util::stream;
use kube::api::{Api, DynamicObject};
use kube::runtime::reflector::ObjectRef;

use super::{SetController, Written};
use crate::error::ReconcileError;
use crate::object::Object;
use crate::set_plan::{SetBatch, SetSpec, slow_start_rounds};
use crate::shared::Shared;
use crate::watches::InstanceRef;

/// What the rounds of one kind of write achieved.
#[derive(Default)]
struct Rounds {
    /// The instances written.
    written: Vec<String>,
    /// Why the API server refused what the template makes, if it did.
    refused: Option<String>,
    /// The first request that failed otherwise.
    failed: Option<ReconcileError>,
    /// Rounds were left unsent because the Set changed.
    superseded: bool,
}

impl Rounds {
    fn stopped(&self) -> bool {
        self.refused.is_some() || self.failed.is_some() || self.superseded
    }
}

/// Sends `write` for each of `items`, in rounds of the sizes `rounds`, each round's writes
/// together (at most `concurrency` in flight); a round with a refusal or a failure is the last,
/// and no round is sent once `superseded` says the Set changed.
async fn in_rounds<T, F, Fut>(
    items: impl IntoIterator<Item = T>,
    rounds: &[usize],
    concurrency: usize,
    superseded: impl Fn() -> bool,
    write: F,
) -> Rounds
where
    F: Fn(T) -> Fut,
    Fut: Future<Output = Result<Written, ReconcileError>>,
{
    let mut items = items.into_iter();
    let mut outcome = Rounds::default();
    for &round in rounds {
        if round > 0 && superseded() {
            outcome.superseded = true;
            break;
        }
        let results: Vec<Result<Written, ReconcileError>> =
            stream::iter(items.by_ref().take(round).map(&write))
                .buffer_unordered(concurrency.max(1))
                .collect()
                .await;
        for result in results {
            match result {
                Ok(Written::Yes(name)) => outcome.written.push(name),
                Ok(Written::Refused(message)) => {
                    outcome.refused.get_or_insert(message);
                }
                Err(error) => {
                    outcome.failed.get_or_insert(error);
                }
            }
        }
        if outcome.stopped() {
            break;
        }
    }
    outcome
}

impl SetController {
    /// Deletes, creates and updates what `batch` says, noting each write as awaited as soon as
    /// it is made (also when a later one fails); the message of a write the server refused, if
    /// one was (a refused create stops the creates, a refused update the updates).
    ///
    /// Once the Set's cache shows it changed, no further round is sent: the next reconcile
    /// decides from the new spec.
    ///
    /// # Errors
    /// The first request that failed (the writes of its round that succeeded are noted).
    pub(super) async fn carry_out(
        &self,
        shared: &Shared,
        key: &InstanceRef,
        set: &Object,
        spec: &SetSpec,
        batch: &SetBatch,
        instances: &Api<DynamicObject>,
    ) -> Result<Option<String>, ReconcileError> {
        let concurrency = shared.settings.apply_concurrency;
        let superseded = || self.is_superseded(set);
        // Deletes go together, as a ReplicaSet's: a delete is refused only when the instance is
        // gone already.
        // (The writes take their names by value: a closure over borrowed names makes the
        // reconcile's future not `Send`, rust-lang/rust#64552.)
        let deleted = in_rounds(
            batch.delete.iter().cloned(),
            &[batch.delete.len()],
            concurrency,
            superseded,
            |name: String| async move {
                self.delete_instance(shared, set, instances, &name).await?;
                self.await_write(key, |writes| writes.deleted.push(name.clone()));
                Ok(Written::Yes(name))
            },
        )
        .await;
        if let Some(error) = deleted.failed {
            return Err(error);
        }
        if deleted.superseded {
            return Ok(None);
        }
        let created = in_rounds(
            std::iter::repeat_n((), batch.create),
            &slow_start_rounds(batch.create),
            concurrency,
            superseded,
            |()| async move {
                let written = self.create_instance(shared, set, spec, instances).await?;
                if let Written::Yes(name) = &written {
                    self.await_write(key, |writes| writes.created.push(name.clone()));
                }
                Ok(written)
            },
        )
        .await;
        if let Some(error) = created.failed {
            return Err(error);
        }
        if created.superseded {
            return Ok(created.refused);
        }
        let updated = in_rounds(
            batch.update.iter().cloned(),
            &slow_start_rounds(batch.update.len()),
            concurrency,
            superseded,
            |name: String| async move {
                let written = self
                    .update_instance(shared, set, spec, instances, &name)
                    .await?;
                if let Written::Yes(name) = &written {
                    let hash = spec.template_hash.clone();
                    self.await_write(key, |writes| writes.updated.push((name.clone(), hash)));
                }
                Ok(written)
            },
        )
        .await;
        tracing::debug!(
            deleted = deleted.written.len(),
            created = created.written.len(),
            updated = updated.written.len(),
            "sent a batch"
        );
        if let Some(error) = updated.failed {
            return Err(error);
        }
        Ok(created.refused.or(updated.refused))
    }

    /// Whether the Set's cache holds a newer Set than `set` (another generation, or another
    /// Set of the name), or none.
    fn is_superseded(&self, set: &Object) -> bool {
        let reference = ObjectRef::new_with(set.name(), self.kind.resource.clone());
        let reference = match set.namespace() {
            "" => reference,
            namespace => reference.within(namespace),
        };
        self.store.get(&reference).is_none_or(|latest| {
            latest.metadata.generation != set.meta().generation
                || latest.metadata.uid.as_deref() != Some(set.uid())
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    /// Writes that succeed, except those in `refused`, recorded in order of sending.
    struct Writer {
        refused: Vec<usize>,
        sent: Mutex<Vec<usize>>,
    }

    impl Writer {
        async fn write(&self, item: usize) -> Result<Written, ReconcileError> {
            self.sent
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(item);
            tokio::task::yield_now().await;
            if self.refused.contains(&item) {
                Ok(Written::Refused(format!("{item} refused")))
            } else {
                Ok(Written::Yes(item.to_string()))
            }
        }
    }

    #[tokio::test]
    async fn every_round_is_sent_when_nothing_fails() {
        let writer = Writer {
            refused: Vec::new(),
            sent: Mutex::default(),
        };
        let rounds = slow_start_rounds(10);
        let outcome = in_rounds(0..10, &rounds, 4, || false, |item| writer.write(item)).await;
        assert_eq!(outcome.written.len(), 10);
        assert!(!outcome.stopped());
    }

    #[tokio::test]
    async fn a_refusal_ends_the_slow_start_after_its_round() {
        // Rounds 1, 2, 4, 8: item 2 is in the second round (items 1 and 2).
        let writer = Writer {
            refused: vec![2],
            sent: Mutex::default(),
        };
        let rounds = slow_start_rounds(15);
        let outcome = in_rounds(0..15, &rounds, 16, || false, |item| writer.write(item)).await;
        let mut sent = writer
            .sent
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        sent.sort_unstable();
        assert_eq!(sent, [0, 1, 2], "the third round is never sent");
        let mut written = outcome.written.clone();
        written.sort();
        assert_eq!(written, ["0", "1"]);
        assert_eq!(outcome.refused.as_deref(), Some("2 refused"));
    }

    #[tokio::test]
    async fn a_change_of_the_set_ends_the_batch_before_its_next_round() {
        let writer = Writer {
            refused: Vec::new(),
            sent: Mutex::default(),
        };
        let rounds = slow_start_rounds(500);
        // The Set changes while the third round (4 writes) is under way.
        let changed = || {
            writer
                .sent
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .len()
                >= 7
        };
        let outcome = in_rounds(0..500, &rounds, 16, changed, |item| writer.write(item)).await;
        assert_eq!(outcome.written.len(), 7, "rounds of 1, 2 and 4");
        assert!(outcome.superseded && outcome.stopped());
        assert!(outcome.refused.is_none() && outcome.failed.is_none());
    }
}
