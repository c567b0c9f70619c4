//! Schemas of the kinds RGDs use, read from a live API server (`--kubeconfig`) by the
//! controller's reader ([`kro_controller::read_schemas`]).

use std::collections::BTreeSet;
use std::path::Path;

use anyhow::Context;
use kro_graph::CatalogSchemas;
use kro_schema::Gvk;
use std::time::Duration;

use kube::Client;

/// Reads the schemas of `gvks` from the API server `kubeconfig` (and `context`) points at,
/// within `answer_within` when given. Kinds the server does not serve are simply absent (the
/// builder warns about them).
///
/// # Errors
/// When the kubeconfig cannot be read, the server cannot be reached or does not answer in
/// time, or it answers with something that is not an OpenAPI v3 document.
pub fn fetch(
    kubeconfig: &Path,
    context: Option<&str>,
    gvks: &BTreeSet<Gvk>,
    answer_within: Option<Duration>,
) -> anyhow::Result<CatalogSchemas> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the HTTP client")?;
    runtime.block_on(async {
        let config = crate::kube_client::config(Some(kubeconfig), context, "schemas").await?;
        let server = config.cluster_url.to_string();
        let client = Client::try_from(config).context("creating the API client")?;
        let source = format!("the API server at {server}");
        let reading = kro_controller::read_schemas(&client, &source, gvks);
        let read = match answer_within {
            Some(limit) => tokio::time::timeout(limit, reading).await.map_err(|_| {
                anyhow::anyhow!(
                    "cannot read schemas from the API server at {server}: no answer within {}",
                    crate::duration::format(limit)
                )
            })?,
            None => reading.await,
        };
        read.with_context(|| format!("cannot read schemas from the API server at {server}"))
    })
}
