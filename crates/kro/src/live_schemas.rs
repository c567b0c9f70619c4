//! Schemas of the kinds RGDs use, read from a live API server (`--kubeconfig`) by the
//! controller's reader ([`kro_controller::read_schemas`]).

use std::collections::BTreeSet;
use std::path::Path;

use anyhow::Context;
use kro_graph::CatalogSchemas;
use kro_schema::Gvk;
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};

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
    let mut config = Config::from_custom_kubeconfig(file, &options)
        .await
        .with_context(|| format!("{}: cannot use the kubeconfig", kubeconfig.display()))?;
    crate::kube_client::identify(&mut config, "schemas");
    let server = config.cluster_url.to_string();
    let client = Client::try_from(config).context("creating the API client")?;
    kro_controller::read_schemas(&client, &format!("the API server at {server}"), gvks)
        .await
        .with_context(|| format!("cannot read schemas from the API server at {server}"))
}
