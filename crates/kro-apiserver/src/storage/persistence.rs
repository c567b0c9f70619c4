//! Where the store's changes are made durable: the [`Persistence`] seam, and [`Memory`], which
//! keeps nothing.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;
use tokio::sync::oneshot;

use super::ObjectKey;

/// Why a persistent store could not be opened or written.
#[derive(Debug, thiserror::Error)]
pub enum PersistenceError {
    /// The data directory could not be created.
    #[error("cannot create the data directory {path}: {source}")]
    Directory {
        /// The directory.
        path: std::path::PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// SQLite failed.
    #[error("the store's database: {0}")]
    Database(#[from] rusqlite::Error),
    /// A stored object is not JSON.
    #[error("the stored object {key} is not valid JSON: {source}")]
    Corrupt {
        /// Which object.
        key: String,
        /// The parse error.
        #[source]
        source: serde_json::Error,
    },
    /// The thread that writes to the database has stopped.
    #[error("the store's writer thread has stopped")]
    WriterStopped,
    /// The writer thread could not be started.
    #[error("cannot start the store's writer thread: {0}")]
    Thread(#[source] std::io::Error),
}

/// What persistent storage holds when a store opens.
#[derive(Debug, Default)]
pub struct Snapshot {
    /// The objects, by key.
    pub objects: BTreeMap<ObjectKey, Arc<Value>>,
    /// The last revision written.
    pub revision: u64,
}

/// One change to make durable.
#[derive(Debug, Clone)]
pub struct PersistedChange {
    /// The object changed.
    pub key: ObjectKey,
    /// Its new state, with its resourceVersion; `None` when it was deleted.
    pub object: Option<Arc<Value>>,
    /// The revision of the change (the store's revision once it is durable).
    pub revision: u64,
}

/// A write on its way to durable storage: finished already, or waiting for a writer.
#[derive(Debug)]
pub struct PendingWrite(Pending);

#[derive(Debug)]
enum Pending {
    Finished(Result<(), PersistenceError>),
    Waiting(oneshot::Receiver<Result<(), PersistenceError>>),
}

impl PendingWrite {
    /// A write that has already ended with `result`.
    pub fn finished(result: Result<(), PersistenceError>) -> Self {
        PendingWrite(Pending::Finished(result))
    }

    /// A write whose writer answers on `receiver` once it is durable.
    pub fn waiting(receiver: oneshot::Receiver<Result<(), PersistenceError>>) -> Self {
        PendingWrite(Pending::Waiting(receiver))
    }

    /// The result, when the write has already ended (then nothing needs to be awaited).
    pub(super) fn into_finished(self) -> Result<Result<(), PersistenceError>, Self> {
        match self.0 {
            Pending::Finished(result) => Ok(result),
            waiting @ Pending::Waiting(_) => Err(PendingWrite(waiting)),
        }
    }

    /// Waits until the write is durable (or failed).
    ///
    /// # Errors
    /// The writer's error, or [`PersistenceError::WriterStopped`] when it went away.
    pub async fn wait(self) -> Result<(), PersistenceError> {
        match self.0 {
            Pending::Finished(result) => result,
            Pending::Waiting(receiver) => receiver
                .await
                .unwrap_or(Err(PersistenceError::WriterStopped)),
        }
    }
}

/// Where a store's changes are made durable. Writes arrive one at a time, in revision order;
/// the store applies a change (and answers its client) only once its write is durable.
pub trait Persistence: Send + Sync + std::fmt::Debug {
    /// What storage holds now (read when the store opens). May block.
    ///
    /// # Errors
    /// [`PersistenceError`] when storage cannot be read or holds something that is not a store.
    fn load(&self) -> Result<Snapshot, PersistenceError>;

    /// Starts making `change` durable. Must not block: slow work belongs on a thread of the
    /// implementation's own, which answers through the returned [`PendingWrite`].
    fn write(&self, change: PersistedChange) -> PendingWrite;
}

/// Persistence that keeps nothing: a store in memory only.
#[derive(Debug, Default, Clone, Copy)]
pub struct Memory;

impl Persistence for Memory {
    fn load(&self) -> Result<Snapshot, PersistenceError> {
        Ok(Snapshot::default())
    }

    fn write(&self, _change: PersistedChange) -> PendingWrite {
        PendingWrite::finished(Ok(()))
    }
}
