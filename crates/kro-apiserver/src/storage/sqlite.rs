//! The SQLite database a persistent store writes through to.

use serde_json::Value;

use super::{Inner, ObjectKey};
use crate::error::ApiError;

/// Why a persistent store could not be opened.
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
}

/// Writes one change through to the database (nothing for an in-memory store).
pub(super) fn persist(
    inner: &Inner,
    key: &ObjectKey,
    object: Option<&Value>,
    revision: u64,
) -> Result<(), ApiError> {
    let Some(connection) = &inner.durable else {
        return Ok(());
    };
    let write = || -> rusqlite::Result<()> {
        let transaction = connection.unchecked_transaction()?;
        match object {
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
            rusqlite::params![i64::try_from(revision).unwrap_or(i64::MAX)],
        )?;
        transaction.commit()
    };
    write().map_err(|error| {
        tracing::error!(%error, "writing to the store's database failed");
        ApiError::internal(format!("storage failure: {error}"))
    })
}
