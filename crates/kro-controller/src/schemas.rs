//! Schemas of the kinds RGDs use, read from the API server: the OpenAPI v3 document of each
//! group-version the RGDs name, and each kind's scope from discovery. Two requests per
//! group-version plus one for the OpenAPI index, whatever the number of kinds. The RGD
//! controller compiles against them (with the built-in catalog behind), and so does
//! `kro validate --kubeconfig`.

use std::collections::{BTreeMap, BTreeSet};

use kro_graph::CatalogSchemas;
use kro_schema::{Catalog, CatalogError, Gvk};
use kube::Client;
use serde_json::Value;

/// Why the schemas could not be read.
#[derive(Debug, thiserror::Error)]
pub enum SchemaReadError {
    /// A request failed.
    #[error("GET {url}: {source}")]
    Request {
        /// The path requested.
        url: String,
        /// What went wrong.
        #[source]
        source: kube::Error,
    },
    /// An answer was not JSON.
    #[error("GET {url}: the answer is not JSON: {source}")]
    NotJson {
        /// The path requested.
        url: String,
        /// The parse error.
        #[source]
        source: serde_json::Error,
    },
    /// The OpenAPI index lists no documents.
    #[error("/openapi/v3 has no paths")]
    NoPaths,
    /// The documents do not make a catalog.
    #[error("the OpenAPI v3 documents: {0}")]
    Catalog(#[from] CatalogError),
}

/// Reads the schemas of `gvks` from the server `client` talks to; `origin` names it in
/// messages. Kinds the server does not serve are absent (the builder warns about them).
///
/// # Errors
/// When a request fails or an answer is not an OpenAPI v3 document.
pub async fn read_schemas(
    client: &Client,
    origin: &str,
    gvks: &BTreeSet<Gvk>,
) -> Result<CatalogSchemas, SchemaReadError> {
    let index = get_json(client, "/openapi/v3").await?;
    let Some(paths) = index.get("paths").and_then(Value::as_object) else {
        return Err(SchemaReadError::NoPaths);
    };
    let mut by_group_version: BTreeMap<(&str, &str), Vec<&Gvk>> = BTreeMap::new();
    for gvk in gvks {
        by_group_version
            .entry((gvk.group(), gvk.version()))
            .or_default()
            .push(gvk);
    }
    let mut documents = Vec::new();
    let mut scopes = Vec::new();
    for ((group, version), kinds) in &by_group_version {
        let key = if group.is_empty() {
            format!("api/{version}")
        } else {
            format!("apis/{group}/{version}")
        };
        let Some(url) = paths
            .get(&key)
            .and_then(|path| path.get("serverRelativeURL"))
            .and_then(Value::as_str)
        else {
            // The server does not serve this group-version.
            continue;
        };
        documents.push(get_json(client, url).await?);
        let resources = if group.is_empty() {
            client.list_core_api_resources(version).await
        } else {
            client
                .list_api_group_resources(&format!("{group}/{version}"))
                .await
        }
        .map_err(|source| SchemaReadError::Request {
            url: format!("/{key}"),
            source,
        })?;
        for resource in resources.resources {
            if resource.name.contains('/') {
                continue; // a subresource
            }
            if let Some(gvk) = kinds.iter().find(|gvk| gvk.kind() == resource.kind) {
                scopes.push(((*gvk).clone(), resource.namespaced));
            }
        }
    }
    let catalog = Catalog::from_openapi_v3(&documents)?;
    let mut schemas = CatalogSchemas::new(catalog, origin.to_owned());
    for (gvk, namespaced) in scopes {
        schemas = schemas.with_scope(gvk, namespaced);
    }
    Ok(schemas)
}

async fn get_json(client: &Client, url: &str) -> Result<Value, SchemaReadError> {
    let request = http::Request::get(url)
        .header(http::header::ACCEPT, "application/json")
        .body(Vec::new())
        .map_err(|error| SchemaReadError::Request {
            url: url.to_owned(),
            source: kube::Error::HttpError(error),
        })?;
    let text = client
        .request_text(request)
        .await
        .map_err(|source| SchemaReadError::Request {
            url: url.to_owned(),
            source,
        })?;
    serde_json::from_str(&text).map_err(|source| SchemaReadError::NotJson {
        url: url.to_owned(),
        source,
    })
}
