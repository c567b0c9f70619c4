//! Schemas of the kinds RGDs use, read from a live API server (`--kubeconfig`): the OpenAPI v3
//! document of each group-version the RGDs name, and each kind's scope from discovery. Two
//! requests per group-version plus one for the OpenAPI index, whatever the number of RGDs.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use anyhow::{Context, bail};
use kro_graph::CatalogSchemas;
use kro_schema::{Catalog, Gvk};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use serde_json::Value;

/// Reads the schemas of `gvks` from the API server `kubeconfig` (and `context`) points at.
/// Kinds the server does not serve are simply absent (the builder warns about them).
///
/// # Errors
/// When the kubeconfig cannot be read, the server cannot be reached, or it answers with
/// something that is not an OpenAPI v3 document.
pub fn fetch(
    kubeconfig: &Path,
    context: Option<&str>,
    gvks: &BTreeSet<Gvk>,
) -> anyhow::Result<CatalogSchemas> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the HTTP client")?;
    runtime.block_on(fetch_async(kubeconfig, context, gvks))
}

async fn fetch_async(
    kubeconfig: &Path,
    context: Option<&str>,
    gvks: &BTreeSet<Gvk>,
) -> anyhow::Result<CatalogSchemas> {
    let file = Kubeconfig::read_from(kubeconfig)
        .with_context(|| format!("{}: cannot read the kubeconfig", kubeconfig.display()))?;
    let options = KubeConfigOptions {
        context: context.map(str::to_owned),
        ..KubeConfigOptions::default()
    };
    let config = Config::from_custom_kubeconfig(file, &options)
        .await
        .with_context(|| format!("{}: cannot use the kubeconfig", kubeconfig.display()))?;
    let server = config.cluster_url.to_string();
    let client = Client::try_from(config).context("creating the API client")?;
    let unreachable = || format!("cannot read schemas from the API server at {server}");

    let index: Value = get_json(&client, "/openapi/v3")
        .await
        .with_context(unreachable)?;
    let Some(paths) = index.get("paths").and_then(Value::as_object) else {
        bail!("{}: /openapi/v3 has no paths", unreachable());
    };
    let mut by_group_version: BTreeMap<(String, String), Vec<&Gvk>> = BTreeMap::new();
    for gvk in gvks {
        by_group_version
            .entry((gvk.group().to_owned(), gvk.version().to_owned()))
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
        documents.push(get_json(&client, url).await.with_context(unreachable)?);
        let resources = if group.is_empty() {
            client.list_core_api_resources(version).await
        } else {
            client
                .list_api_group_resources(&format!("{group}/{version}"))
                .await
        }
        .with_context(unreachable)?;
        for resource in resources.resources {
            if resource.name.contains('/') {
                continue; // a subresource
            }
            if let Some(gvk) = kinds.iter().find(|gvk| gvk.kind() == resource.kind) {
                scopes.push(((*gvk).clone(), resource.namespaced));
            }
        }
    }
    let catalog = Catalog::from_openapi_v3(&documents)
        .with_context(|| format!("the OpenAPI v3 documents of {server}"))?;
    let mut schemas = CatalogSchemas::new(catalog, format!("the API server at {server}"));
    for (gvk, namespaced) in scopes {
        schemas = schemas.with_scope(gvk, namespaced);
    }
    Ok(schemas)
}

async fn get_json(client: &Client, url: &str) -> anyhow::Result<Value> {
    let request = http::Request::get(url)
        .header(http::header::ACCEPT, "application/json")
        .body(Vec::new())
        .context("building the request")?;
    let text = client
        .request_text(request)
        .await
        .with_context(|| format!("GET {url}"))?;
    serde_json::from_str(&text).with_context(|| format!("GET {url}: the answer is not JSON"))
}
