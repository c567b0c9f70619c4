//! Which resource serves a kind: discovery answers, cached. A miss asks the API server about
//! that one group-version (a CRD created a moment ago is found on the next ask).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject};
use kube::core::GroupVersionKind;
use kube::discovery::{Scope, pinned_kind};

/// A served kind: its resource and whether it is namespaced.
#[derive(Debug, Clone)]
pub struct ServedKind {
    /// Group, version, kind and plural.
    pub resource: ApiResource,
    /// Whether objects of the kind live in namespaces.
    pub namespaced: bool,
}

impl ServedKind {
    /// A client for objects of the kind in `namespace` (ignored for cluster-scoped kinds),
    /// or in all namespaces when `None`.
    pub fn api(&self, client: &Client, namespace: Option<&str>) -> Api<DynamicObject> {
        match namespace {
            Some(namespace) if self.namespaced => {
                Api::namespaced_with(client.clone(), namespace, &self.resource)
            }
            _ => Api::all_with(client.clone(), &self.resource),
        }
    }
}

/// Why a kind could not be resolved.
#[derive(Debug, thiserror::Error)]
#[error("{kind} in {api_version} is not served: {source}")]
pub struct KindError {
    /// The apiVersion asked for.
    pub api_version: String,
    /// The kind asked for.
    pub kind: String,
    /// Discovery's answer.
    #[source]
    pub source: kube::Error,
}

/// `(group, version, kind)`.
type KindKey = (String, String, String);

/// Discovery results, cached; clones share the cache.
#[derive(Clone)]
pub struct Kinds {
    client: Client,
    cache: Arc<Mutex<HashMap<KindKey, ServedKind>>>,
}

impl Kinds {
    /// An empty cache over `client`.
    pub fn new(client: Client) -> Self {
        Kinds {
            client,
            cache: Arc::default(),
        }
    }

    /// Records a kind known without asking (a CRD kro created).
    pub fn insert(&self, kind: ServedKind) {
        let key = (
            kind.resource.group.clone(),
            kind.resource.version.clone(),
            kind.resource.kind.clone(),
        );
        self.cache
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(key, kind);
    }

    /// The resource serving `group`/`version` `kind`.
    ///
    /// # Errors
    /// [`KindError`] when the server does not serve it (or cannot be asked).
    pub async fn resolve(
        &self,
        group: &str,
        version: &str,
        kind: &str,
    ) -> Result<ServedKind, KindError> {
        let key = (group.to_owned(), version.to_owned(), kind.to_owned());
        if let Some(found) = self
            .cache
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&key)
        {
            return Ok(found.clone());
        }
        let gvk = GroupVersionKind::gvk(group, version, kind);
        let (resource, capabilities) =
            pinned_kind(&self.client, &gvk)
                .await
                .map_err(|source| KindError {
                    api_version: gvk.api_version(),
                    kind: kind.to_owned(),
                    source,
                })?;
        let served = ServedKind {
            resource,
            namespaced: capabilities.scope == Scope::Namespaced,
        };
        self.insert(served.clone());
        Ok(served)
    }

    /// A served version of `group_kind` (an ApplySet inventory names kinds without versions),
    /// found by discovery of its group: its preferred version, or any version serving it;
    /// `None` when the server does not serve it.
    ///
    /// # Errors
    /// When discovery fails.
    pub async fn discover(
        &self,
        group_kind: &kro_schema::GroupKind,
    ) -> Result<Option<ServedKind>, kube::Error> {
        let discovery = kube::discovery::Discovery::new(self.client.clone())
            .filter(&[group_kind.group()])
            .run()
            .await?;
        let found = discovery
            .groups()
            .flat_map(|api_group| api_group.recommended_resources())
            .find(|(resource, _)| resource.kind == group_kind.kind());
        Ok(found.map(|(resource, capabilities)| {
            let served = ServedKind {
                resource,
                namespaced: capabilities.scope == Scope::Namespaced,
            };
            self.insert(served.clone());
            served
        }))
    }

    /// Forgets what is cached of a group (its CRD changed or went away).
    pub fn forget_group(&self, group: &str) {
        self.cache
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|(cached, _, _), _| cached != group);
    }
}

/// The resource of kro's ResourceGraphDefinitions (`kro.run/v1alpha1`).
pub fn rgd_resource() -> ApiResource {
    use kro_graph::metadata;
    ApiResource {
        group: metadata::GROUP.to_owned(),
        version: metadata::VERSION.to_owned(),
        api_version: metadata::API_VERSION.to_owned(),
        kind: metadata::RGD_KIND.to_owned(),
        plural: metadata::RGD_PLURAL.to_owned(),
    }
}
