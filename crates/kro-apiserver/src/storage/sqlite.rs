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
        private_directory(directory).map_err(|source| PersistenceError::Directory {
            path: directory.to_owned(),
            source,
        })?;
        let path = directory.join("kro-apiserver.sqlite");
        // SQLite gives its -wal and -shm files the mode of the database file, so a database
        // made private first keeps every file private.
        private_file(&path).map_err(|source| PersistenceError::Directory {
            path: path.clone(),
            source,
        })?;
        let connection = rusqlite::Connection::open(&path)?;
        for suffix in ["-wal", "-shm"] {
            let mut companion = path.clone().into_os_string();
            companion.push(suffix);
            let companion = std::path::PathBuf::from(companion);
            if companion.exists() {
                private_file(&companion).map_err(|source| PersistenceError::Directory {
                    path: companion.clone(),
                    source,
                })?;
            }
        }
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

/// Creates `directory` (and its parents) readable by its owner only (0700 on Unix), and
/// tightens it when it exists with a looser mode: it holds Secrets and the bearer token.
///
/// # Errors
/// The I/O error of creating the directory or changing its mode.
pub(crate) fn private_directory(directory: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(directory)?;
    tighten(directory, 0o700)
}

/// Creates `path` empty with mode 0600 when missing, and tightens it to 0600 when it exists
/// with a looser mode.
pub(crate) fn private_file(path: &Path) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options.open(path)?;
    tighten(path, 0o600)
}

#[cfg(unix)]
fn tighten(path: &Path, mode: u32) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let current = std::fs::metadata(path)?.permissions().mode() & 0o777;
    if current & !mode != 0 {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(current & mode))?;
    }
    Ok(())
}

#[cfg(not(unix))]
fn tighten(_path: &Path, _mode: u32) -> std::io::Result<()> {
    Ok(())
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

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path)
            .expect("exists")
            .permissions()
            .mode()
            & 0o777
    }

    #[test]
    fn a_new_data_directory_and_its_database_are_private() {
        let root = tempfile::tempdir().expect("temporary directory");
        let directory = root.path().join("nested").join("data");
        let store = Sqlite::open(&directory).expect("opens");
        drop(store);
        assert_eq!(mode(&directory), 0o700);
        for entry in std::fs::read_dir(&directory).expect("listed") {
            let path = entry.expect("entry").path();
            assert_eq!(mode(&path), 0o600, "{}", path.display());
        }
    }

    #[test]
    fn a_loose_data_directory_and_database_are_tightened() {
        let root = tempfile::tempdir().expect("temporary directory");
        let directory = root.path().join("data");
        std::fs::create_dir(&directory).expect("created");
        std::fs::set_permissions(&directory, std::fs::Permissions::from_mode(0o755))
            .expect("loosened");
        let database = directory.join("kro-apiserver.sqlite");
        drop(Sqlite::open(&directory).expect("opens"));
        std::fs::set_permissions(&database, std::fs::Permissions::from_mode(0o644))
            .expect("loosened");
        drop(Sqlite::open(&directory).expect("opens again"));
        assert_eq!(mode(&directory), 0o700);
        assert_eq!(mode(&database), 0o600);
    }
}
