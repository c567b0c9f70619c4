//! The SQLite database a persistent store writes through to, owned by a writer thread of its
//! own so that no write blocks the async runtime.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex, mpsc};

use serde_json::Value;
use tokio::sync::oneshot;

use super::ObjectKey;
use super::persistence::{PendingWrite, PersistedChange, Persistence, PersistenceError, Snapshot};

/// What the writer thread is asked to do.
enum Request {
    Write(
        PersistedChange,
        oneshot::Sender<Result<(), PersistenceError>>,
    ),
    Load(mpsc::Sender<Result<Snapshot, PersistenceError>>),
}

/// A SQLite database (WAL) in a data directory, written by a dedicated thread.
#[derive(Debug)]
pub struct Sqlite {
    requests: Mutex<Option<mpsc::Sender<Request>>>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl Sqlite {
    /// Opens (creating them if missing) the directory and its database, and starts the writer
    /// thread.
    ///
    /// # Errors
    /// [`PersistenceError`] when the directory or database cannot be opened or the thread
    /// cannot start.
    pub fn open(directory: &Path) -> Result<Self, PersistenceError> {
        std::fs::create_dir_all(directory).map_err(|source| PersistenceError::Directory {
            path: directory.to_owned(),
            source,
        })?;
        let path = directory.join("kro-apiserver.sqlite");
        let connection = rusqlite::Connection::open(&path)?;
        connection.pragma_update(None, "journal_mode", "WAL")?;
        // NORMAL in WAL mode loses nothing when the process dies; only a machine crash can
        // lose the last transactions.
        connection.pragma_update(None, "synchronous", "NORMAL")?;
        connection.execute_batch(
            "CREATE TABLE IF NOT EXISTS objects (
                grp TEXT NOT NULL, resource TEXT NOT NULL, namespace TEXT NOT NULL,
                name TEXT NOT NULL, body TEXT NOT NULL,
                PRIMARY KEY (grp, resource, namespace, name));
             CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);",
        )?;
        let (requests, received) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("kro-apiserver-sqlite".to_owned())
            .spawn(move || serve(&connection, &received))
            .map_err(PersistenceError::Thread)?;
        Ok(Sqlite {
            requests: Mutex::new(Some(requests)),
            thread: Mutex::new(Some(thread)),
        })
    }

    fn send(&self, request: Request) -> Result<(), PersistenceError> {
        self.requests
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .as_ref()
            .ok_or(PersistenceError::WriterStopped)?
            .send(request)
            .map_err(|_| PersistenceError::WriterStopped)
    }
}

impl Persistence for Sqlite {
    fn load(&self) -> Result<Snapshot, PersistenceError> {
        let (reply, answer) = mpsc::channel();
        self.send(Request::Load(reply))?;
        answer
            .recv()
            .unwrap_or(Err(PersistenceError::WriterStopped))
    }

    fn write(&self, change: PersistedChange) -> PendingWrite {
        let (reply, answer) = oneshot::channel();
        match self.send(Request::Write(change, reply)) {
            Ok(()) => PendingWrite::waiting(answer),
            Err(error) => PendingWrite::finished(Err(error)),
        }
    }
}

impl Drop for Sqlite {
    fn drop(&mut self) {
        // Closing the channel ends the thread once it has written what it was sent.
        self.requests
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        let thread = self
            .thread
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(thread) = thread
            && thread.join().is_err()
        {
            tracing::error!("the store's writer thread panicked");
        }
    }
}

/// The writer thread: answers requests in the order they were sent.
fn serve(connection: &rusqlite::Connection, requests: &mpsc::Receiver<Request>) {
    for request in requests {
        match request {
            Request::Write(change, reply) => {
                let result = persist(connection, &change).map_err(|error| {
                    tracing::error!(%error, "writing to the store's database failed");
                    PersistenceError::Database(error)
                });
                // The client may have gone; the write stands either way.
                let _ = reply.send(result);
            }
            Request::Load(reply) => {
                let _ = reply.send(load(connection));
            }
        }
    }
}

/// Writes one change in a transaction, with the store's revision.
fn persist(connection: &rusqlite::Connection, change: &PersistedChange) -> rusqlite::Result<()> {
    let key = &change.key;
    let transaction = connection.unchecked_transaction()?;
    match &change.object {
        Some(object) => {
            transaction.execute(
                "INSERT INTO objects (grp, resource, namespace, name, body)
                 VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT (grp, resource, namespace, name) DO UPDATE SET body = ?5",
                rusqlite::params![
                    key.group,
                    key.resource,
                    key.namespace,
                    key.name,
                    object.to_string()
                ],
            )?;
        }
        None => {
            transaction.execute(
                "DELETE FROM objects WHERE grp = ?1 AND resource = ?2 AND namespace = ?3 AND name = ?4",
                rusqlite::params![key.group, key.resource, key.namespace, key.name],
            )?;
        }
    }
    transaction.execute(
        "INSERT INTO meta (key, value) VALUES ('revision', ?1)
         ON CONFLICT (key) DO UPDATE SET value = ?1",
        rusqlite::params![i64::try_from(change.revision).unwrap_or(i64::MAX)],
    )?;
    transaction.commit()
}

/// Reads every object and the revision.
fn load(connection: &rusqlite::Connection) -> Result<Snapshot, PersistenceError> {
    let revision: u64 = connection
        .query_row("SELECT value FROM meta WHERE key = 'revision'", [], |row| {
            row.get::<_, i64>(0)
        })
        .map(|value| u64::try_from(value).unwrap_or(0))
        .or_else(|error| match error {
            rusqlite::Error::QueryReturnedNoRows => Ok(0),
            other => Err(other),
        })?;
    let mut objects = BTreeMap::new();
    let mut statement =
        connection.prepare("SELECT grp, resource, namespace, name, body FROM objects")?;
    let rows = statement.query_map([], |row| {
        Ok((
            ObjectKey {
                group: row.get(0)?,
                resource: row.get(1)?,
                namespace: row.get(2)?,
                name: row.get(3)?,
            },
            row.get::<_, String>(4)?,
        ))
    })?;
    for row in rows {
        let (key, body) = row?;
        let object: Value =
            serde_json::from_str(&body).map_err(|source| PersistenceError::Corrupt {
                key: format!(
                    "{}/{}/{}/{}",
                    key.group, key.resource, key.namespace, key.name
                ),
                source,
            })?;
        objects.insert(key, Arc::new(object));
    }
    Ok(Snapshot { objects, revision })
}
