//! How a resource's objects are read from and written to the store: under the key of the group
//! that keeps them, converted from and to the form that group stores. Every resource keeps its
//! own objects as served, but `events.k8s.io/v1` Events, which live with core/v1 Events in one
//! store (as on a cluster) and are converted on the way in and out.

use std::sync::Arc;

use serde_json::Value;

use crate::error::ApiError;
use crate::state::AppState;
use crate::storage::{Committed, ListStart, Mutation, ObjectKey};

use super::request::Target;

impl Target {
    /// The store key of `name` in the request's namespace.
    pub(super) fn key(&self, name: &str) -> ObjectKey {
        self.key_in(self.namespace.as_deref().unwrap_or(""), name)
    }

    /// The store key of `name` in `namespace` (`""` for cluster-scoped objects).
    pub(super) fn key_in(&self, namespace: &str, name: &str) -> ObjectKey {
        ObjectKey::new(self.storage_group(), self.plural(), namespace, name)
    }

    /// The group whose store keeps this resource's objects.
    pub(super) fn storage_group(&self) -> &str {
        crate::events::storage_group(self.group(), self.plural())
    }

    fn stored_as_core(&self) -> bool {
        crate::events::is_stored_as_core(self.group(), self.plural())
    }

    /// A stored object as this resource serves it.
    pub(super) fn served(&self, stored: Arc<Value>) -> Arc<Value> {
        if self.stored_as_core() {
            Arc::new(crate::events::convert(&stored, self.group()))
        } else {
            stored
        }
    }

    /// An object this resource serves, in the form its store keeps.
    fn to_stored(&self, object: Value) -> Value {
        if self.stored_as_core() {
            crate::events::convert(&object, "")
        } else {
            object
        }
    }

    /// The object `name` in the request's namespace, as served.
    pub(super) fn get(&self, state: &AppState, name: &str) -> Option<Arc<Value>> {
        state
            .store
            .get(&self.key(name))
            .map(|stored| self.served(stored))
    }

    /// The objects in the request's namespace (or all), as served; with `subscribe`, the
    /// store's changes after them too (as stored: see [`Target::served`]).
    pub(super) fn list(&self, state: &AppState, subscribe: bool) -> ListStart {
        let mut listed = state.store.list(
            self.storage_group(),
            self.plural(),
            self.namespace.as_deref(),
            subscribe,
        );
        if self.stored_as_core() {
            listed.objects = listed
                .objects
                .into_iter()
                .map(|stored| self.served(stored))
                .collect();
        }
        listed
    }

    /// [`crate::storage::Store::mutate_with`] on `name` in the request's namespace, with
    /// `decide` seeing and returning objects as served.
    pub(super) async fn mutate<F>(
        &self,
        state: &AppState,
        name: &str,
        dry_run: bool,
        decide: F,
    ) -> Result<Committed, ApiError>
    where
        F: FnOnce(Option<&Arc<Value>>) -> Result<Mutation, ApiError>,
    {
        let namespace = self.namespace.clone().unwrap_or_default();
        self.mutate_in(state, &namespace, name, dry_run, decide)
            .await
    }

    /// [`Target::mutate`] on `name` in `namespace`.
    pub(super) async fn mutate_in<F>(
        &self,
        state: &AppState,
        namespace: &str,
        name: &str,
        dry_run: bool,
        decide: F,
    ) -> Result<Committed, ApiError>
    where
        F: FnOnce(Option<&Arc<Value>>) -> Result<Mutation, ApiError>,
    {
        let key = self.key_in(namespace, name);
        if !self.stored_as_core() {
            return state.store.mutate_with(&key, dry_run, decide).await;
        }
        let committed = state
            .store
            .mutate_with(&key, dry_run, |current| {
                let served = current.map(|stored| self.served(Arc::clone(stored)));
                Ok(match decide(served.as_ref())? {
                    Mutation::Put(object) => Mutation::Put(self.to_stored(object)),
                    Mutation::Delete => Mutation::Delete,
                })
            })
            .await
            .map_err(|error| {
                if error.code == 404 {
                    ApiError::not_found(self.group(), self.plural(), name)
                } else {
                    error
                }
            })?;
        Ok(match committed {
            Committed::Stored {
                object,
                created,
                changed,
            } => Committed::Stored {
                object: self.served(object),
                created,
                changed,
            },
            Committed::Deleted(object) => Committed::Deleted(self.served(object)),
        })
    }
}
