//! The ConfigMap that stands in for an instance deployed with no controller: the ApplySet
//! parent (KEP-3659) of its objects. Its UID is the instance's UID in every object's
//! `kro.run/instance-id` label; its inventory annotations say which kinds and namespaces the
//! objects are in, so that they are found again (for pruning and `kro delete`) with no RGD.

use k8s_openapi::api::core::v1::ConfigMap;
use kro_graph::CompiledGraph;
use kro_graph::lifecycle::{DETACH_ON_DELETION_ANNOTATION, detaches_on_deletion};
use kro_graph::metadata::{
    APPLYSET_ID_LABEL, DIRECT_PARENT_PREFIX, INSTANCE_GROUP_LABEL, INSTANCE_KIND_LABEL,
    INSTANCE_NAME_LABEL, INSTANCE_NAMESPACE_LABEL, INSTANCE_VERSION_LABEL, MANAGED_BY_LABEL,
};
use kro_runtime::{Inventory, InventoryError, Parent};
use kube::Api;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, Preconditions};
use serde_json::{Value as Json, json};

use crate::error::api_message;
use crate::json::text;

/// Why the parent ConfigMap could not be named, read, written or trusted.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ParentError {
    /// Its name would be too long.
    #[error(
        "the parent ConfigMap name {0:?} is longer than 253 characters: use a shorter instance name"
    )]
    Name(String),
    /// It could not be read or written.
    #[error("{parent}: {}", api_message(source))]
    Api {
        /// Which.
        parent: ParentRef,
        /// The server's answer.
        source: Box<kube::Error>,
    },
    /// Its inventory is not one this tool can trust.
    #[error("{parent}: {source}; refusing to prune or delete from it")]
    Inventory {
        /// Which.
        parent: ParentRef,
        /// What is wrong.
        source: InventoryError,
    },
    /// The parents of an instance could not be listed.
    #[error("listing parent ConfigMaps in {namespace}: {}", api_message(source))]
    Find {
        /// The namespace.
        namespace: String,
        /// The server's answer.
        source: Box<kube::Error>,
    },
    /// An answer could not be represented as JSON (a bug).
    #[error("an object cannot be represented as JSON: {0}")]
    Json(#[source] serde_json::Error),
}

impl ParentError {
    /// A stable CamelCase reason.
    pub fn reason(&self) -> &'static str {
        match self {
            ParentError::Name(_) => "ParentNameTooLong",
            ParentError::Api { .. } | ParentError::Find { .. } => "ParentFailed",
            ParentError::Inventory { .. } => "InventoryUntrusted",
            ParentError::Json(_) => "InternalError",
        }
    }
}

/// Where the parent ConfigMap of a directly deployed instance is.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ParentRef {
    /// Its namespace: the instance's, or for a cluster-scoped instance the one chosen for it.
    pub namespace: String,
    /// `kro-direct.<kind in lower case>.<group>.<instance name>`.
    pub name: String,
}

impl std::fmt::Display for ParentRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ConfigMap {}/{}", self.namespace, self.name)
    }
}

impl ParentRef {
    /// The parent of `instance` (named, and for a namespaced kind in a namespace) of
    /// `graph`'s kind; a cluster-scoped instance's parent is put in `parent_namespace`.
    ///
    /// # Errors
    /// [`ParentError::Name`] when the name would be longer than a ConfigMap's may be.
    pub fn of_instance(
        graph: &CompiledGraph,
        instance: &Json,
        parent_namespace: &str,
    ) -> Result<ParentRef, ParentError> {
        let name = format!(
            "{DIRECT_PARENT_PREFIX}.{}.{}.{}",
            graph.names.kind.to_ascii_lowercase(),
            graph.names.group,
            text(instance, "/metadata/name")
        );
        if name.len() > 253 {
            return Err(ParentError::Name(name));
        }
        let namespace = match text(instance, "/metadata/namespace") {
            "" => parent_namespace,
            namespace => namespace,
        };
        Ok(ParentRef {
            namespace: namespace.to_owned(),
            name,
        })
    }

    /// Its ApplySet identity.
    pub fn applyset(&self) -> Parent<'_> {
        Parent {
            name: &self.name,
            namespace: &self.namespace,
            kind: "ConfigMap",
            group: "",
        }
    }

    /// The ApplySet id its members carry in `applyset.kubernetes.io/part-of`.
    pub fn id(&self) -> String {
        self.applyset().id()
    }

    fn api(&self, client: &kube::Client) -> Api<ConfigMap> {
        Api::namespaced(client.clone(), &self.namespace)
    }

    /// The parent as the server holds it, if it exists.
    pub(super) async fn read(&self, client: &kube::Client) -> Result<Option<Json>, ParentError> {
        let found = self
            .api(client)
            .get_opt(&self.name)
            .await
            .map_err(|source| ParentError::Api {
                parent: self.clone(),
                source: Box::new(source),
            })?;
        found
            .map(|config_map| serde_json::to_value(config_map).map_err(ParentError::Json))
            .transpose()
    }

    /// The inventory an existing parent carries, checked as deletion trusts it.
    pub(super) fn inventory(&self, existing: &Json) -> Result<Inventory, ParentError> {
        let empty = serde_json::Map::new();
        let map = |pointer: &str| {
            existing
                .pointer(pointer)
                .and_then(Json::as_object)
                .unwrap_or(&empty)
        };
        self.applyset()
            .inventory(map("/metadata/labels"), map("/metadata/annotations"))
            .map_err(|source| ParentError::Inventory {
                parent: self.clone(),
                source,
            })
    }

    /// Writes the parent (server-side apply, force) with `inventory` and the labels naming
    /// the instance; the server's answer.
    pub(super) async fn write(
        &self,
        client: &kube::Client,
        graph: &CompiledGraph,
        instance: &Json,
        inventory: &Inventory,
        kro_version: &str,
        params: &PatchParams,
    ) -> Result<Json, ParentError> {
        let mut metadata = self.applyset().metadata(inventory, kro_version);
        metadata["name"] = json!(self.name);
        metadata["namespace"] = json!(self.namespace);
        let labels = &mut metadata["labels"];
        labels[MANAGED_BY_LABEL] = json!("kro");
        labels[INSTANCE_NAME_LABEL] = json!(text(instance, "/metadata/name"));
        labels[INSTANCE_GROUP_LABEL] = json!(graph.names.group);
        labels[INSTANCE_VERSION_LABEL] = json!(graph.names.version);
        labels[INSTANCE_KIND_LABEL] = json!(graph.names.kind);
        let namespace = text(instance, "/metadata/namespace");
        if !namespace.is_empty() {
            labels[INSTANCE_NAMESPACE_LABEL] = json!(namespace);
        }
        // The parent stands in for the instance: it carries the instance's wish to release
        // its objects when deleted, so that `kro delete NAME` honours it with no file.
        if detaches_on_deletion(instance) {
            metadata["annotations"][DETACH_ON_DELETION_ANNOTATION] = json!("true");
        }
        let body = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata});
        let answer = self
            .api(client)
            .patch(&self.name, params, &Patch::Apply(&body))
            .await
            .map_err(|source| ParentError::Api {
                parent: self.clone(),
                source: Box::new(source),
            })?;
        serde_json::to_value(answer).map_err(ParentError::Json)
    }

    /// Deletes the parent (the ConfigMap with `uid`); gone already is success.
    pub(super) async fn delete(&self, client: &kube::Client, uid: &str) -> Result<(), ParentError> {
        let params = DeleteParams {
            preconditions: Some(Preconditions {
                uid: Some(uid.to_owned()),
                resource_version: None,
            }),
            ..DeleteParams::default()
        };
        match self.api(client).delete(&self.name, &params).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
            Err(source) => Err(ParentError::Api {
                parent: self.clone(),
                source: Box::new(source),
            }),
        }
    }

    /// The parents in `namespace` of instances named `name` (of any kind); with
    /// `cluster_scoped_only`, of cluster-scoped instances only (their parents live in the
    /// namespace chosen for them, among the parents of namespaced instances).
    ///
    /// # Errors
    /// When the ConfigMaps cannot be listed.
    pub async fn find(
        client: &kube::Client,
        namespace: &str,
        name: &str,
        cluster_scoped_only: bool,
    ) -> Result<Vec<ParentRef>, ParentError> {
        let api: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
        let mut selector = format!("{INSTANCE_NAME_LABEL}={name},{APPLYSET_ID_LABEL}");
        if cluster_scoped_only {
            selector.push_str(&format!(",!{INSTANCE_NAMESPACE_LABEL}"));
        }
        let list = api
            .list(&ListParams::default().labels(&selector))
            .await
            .map_err(|source| ParentError::Find {
                namespace: namespace.to_owned(),
                source: Box::new(source),
            })?;
        let prefix = format!("{DIRECT_PARENT_PREFIX}.");
        Ok(list
            .items
            .into_iter()
            .filter_map(|config_map| config_map.metadata.name)
            .filter(|found| found.starts_with(&prefix) && found.ends_with(&format!(".{name}")))
            .map(|found| ParentRef {
                namespace: namespace.to_owned(),
                name: found,
            })
            .collect())
    }
}
