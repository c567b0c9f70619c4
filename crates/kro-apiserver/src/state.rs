//! The state the handlers share: the store, the served resource types, the configuration,
//! open watches, test knobs, and the caches of validators and OpenAPI documents.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use kro_schema::{Catalog, Gvk, Schema, ValidationConfig, Validator};
use serde_json::{Value, json};

use crate::config::ServerConfig;
use crate::objects;
use crate::registry::Registry;
use crate::storage::{Mutation, ObjectKey, Store};
use crate::{openapi, openapi_v2};

/// An OpenAPI document as served, with the hash it is addressed by.
pub(crate) struct PublishedDocument {
    pub(crate) document: Value,
    pub(crate) hash: String,
}

/// Shared state of the handlers.
pub(crate) struct AppState {
    pub(crate) store: Store,
    pub(crate) registry: RwLock<Registry>,
    pub(crate) config: ServerConfig,
    pub(crate) watches: AtomicUsize,
    /// Bumped to end every open watch with an in-stream 410 (a test knob).
    pub(crate) watch_expiry: tokio::sync::watch::Sender<u64>,
    /// Turns true when the server is stopping: open watches end, so a graceful shutdown
    /// does not wait for them.
    pub(crate) stopping: tokio::sync::watch::Sender<bool>,
    pub(crate) service_ips: Mutex<std::collections::BTreeSet<u32>>,
    pub(crate) knobs: crate::knobs::Knobs,
    pub(crate) validators: Mutex<HashMap<Gvk, Arc<Option<Validator>>>>,
    pub(crate) openapi: Mutex<HashMap<(String, String), Arc<PublishedDocument>>>,
    pub(crate) openapi_v2: Mutex<Option<Arc<PublishedV2Document>>>,
}

/// The OpenAPI v2 document in both encodings, built once per change of the served resources.
pub(crate) struct PublishedV2Document {
    pub(crate) json: axum::body::Bytes,
    pub(crate) protobuf: axum::body::Bytes,
    pub(crate) etag: String,
}

impl AppState {
    pub(crate) fn registry(&self) -> std::sync::RwLockReadGuard<'_, Registry> {
        self.registry
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(crate) fn registry_mut(&self) -> std::sync::RwLockWriteGuard<'_, Registry> {
        self.registry
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Drops the cached OpenAPI document of a group-version (its resources changed).
    pub(crate) fn forget_openapi(&self, group: &str, version: &str) {
        self.openapi
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(&(group.to_owned(), version.to_owned()));
        *self
            .openapi_v2
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = None;
    }

    /// The compiled validator of a built-in kind (`None` when the catalog has no schema).
    pub(crate) fn validator(&self, gvk: &Gvk) -> Arc<Option<Validator>> {
        let mut validators = self
            .validators
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        Arc::clone(validators.entry(gvk.clone()).or_insert_with(|| {
            let mut schema: Option<Schema> = Catalog::kubernetes()
                .resolve(gvk)
                .found()
                .map(|kind| kind.resolved_schema());
            if let Some(schema) = &mut schema
                && gvk.kind() == "Event"
                && matches!(gvk.group(), "" | crate::events::EVENTS_GROUP)
            {
                // kube-apiserver checks Events by hand (`crate::events::validate`), not by
                // the published `required` lists.
                schema.required.clear();
            }
            Arc::new(schema.map(|schema| {
                Validator::with_config(
                    &schema,
                    ValidationConfig::default().with_resource_root(true),
                )
            }))
        }))
    }

    /// The OpenAPI v3 document of a group-version and its hash.
    pub(crate) fn openapi_document(
        &self,
        group: &str,
        version: &str,
    ) -> Option<Arc<PublishedDocument>> {
        let key = (group.to_owned(), version.to_owned());
        if let Some(cached) = self
            .openapi
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(&key)
        {
            return Some(Arc::clone(cached));
        }
        let document = openapi::document(&self.registry(), group, version)?;
        let hash = openapi::document_hash(&document);
        let entry = Arc::new(PublishedDocument { document, hash });
        self.openapi
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(key, Arc::clone(&entry));
        Some(entry)
    }

    /// The OpenAPI v2 document (all group-versions), built from the v3 documents.
    pub(crate) fn openapi_v2_document(&self) -> Arc<PublishedV2Document> {
        if let Some(cached) = self
            .openapi_v2
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .as_ref()
        {
            return Arc::clone(cached);
        }
        let v3: Vec<Arc<PublishedDocument>> = self
            .served_group_versions()
            .iter()
            .filter_map(|(group, version)| self.openapi_document(group, version))
            .collect();
        let document = openapi_v2::document(v3.iter().map(|published| &published.document));
        let json = serde_json::to_vec(&document).unwrap_or_default();
        let protobuf = openapi_v2::encode_document(&document);
        let etag = format!("\"{}\"", openapi::document_hash(&document));
        let published = Arc::new(PublishedV2Document {
            json: json.into(),
            protobuf: protobuf.into(),
            etag,
        });
        *self
            .openapi_v2
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(Arc::clone(&published));
        published
    }

    /// Every served group-version, in discovery order.
    pub(crate) fn served_group_versions(&self) -> Vec<(String, String)> {
        self.registry().group_versions()
    }

    pub(crate) async fn bootstrap(&self) {
        let Some(namespaces) = self.registry().find("", "v1", "namespaces") else {
            return;
        };
        for name in ["default", "kube-system", "kube-public", "kube-node-lease"] {
            let key = ObjectKey::new("", "namespaces", "", name);
            let mut object =
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
            objects::prepare_create(&namespaces, &mut object);
            crate::typed::round_trip(&namespaces.gvk, &mut object);
            objects::finish_create(&namespaces, &mut object);
            // Creating a missing namespace cannot fail.
            let _ = self
                .store
                .mutate(&key, |current| match current {
                    Some(existing) => Ok(Mutation::Put((**existing).clone())),
                    None => Ok(Mutation::Put(object)),
                })
                .await;
        }
    }
}

/// Counts an open watch; the guard releases it.
pub(crate) struct WatchSlot(Arc<AppState>);

impl WatchSlot {
    pub(crate) fn acquire(state: &Arc<AppState>) -> Option<WatchSlot> {
        let open = state.watches.fetch_add(1, Ordering::SeqCst);
        if open >= state.config.max_watches {
            state.watches.fetch_sub(1, Ordering::SeqCst);
            None
        } else {
            Some(WatchSlot(Arc::clone(state)))
        }
    }
}

impl Drop for WatchSlot {
    fn drop(&mut self) {
        self.0.watches.fetch_sub(1, Ordering::SeqCst);
    }
}
