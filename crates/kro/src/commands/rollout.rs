//! `kro rollout history|status|undo rgd/NAME`: an RGD's GraphRevisions as a rollout history,
//! following the propagation of its newest revision over the instances, and writing an earlier
//! revision's spec back (as `kubectl rollout` does for a Deployment).
//!
//! `undo` writes the revision's snapshot as the RGD's `spec` (an update with the RGD's
//! resourceVersion, field manager `kro-rollout`): the controller issues it as a new revision,
//! which propagates under the RGD's policy like any change. `status` reads the RGD's
//! `Propagated` condition (gate `PropagationControl`): it exits 0 once every instance is on the
//! newest revision, 1 when the rollout halted, its policy failed, or the timeout passed.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use kro_graph::propagation::PROPAGATED;
use kro_graph::{
    GRAPH_REVISION_API_VERSION, GRAPH_REVISION_GROUP, GRAPH_REVISION_HASH_LABEL,
    GRAPH_REVISION_KIND, GRAPH_REVISION_PLURAL,
};
use kube::api::{Api, ApiResource, DynamicObject, ListParams, PostParams};
use serde_json::Value;

use crate::output::{OutputFormat, to_text};

/// The field manager of `kro rollout undo`'s writes.
const UNDO_MANAGER: &str = "kro-rollout";

/// Arguments of `kro rollout`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    action: Action,
}

/// What `kro rollout` does.
#[derive(Debug, clap::Subcommand)]
enum Action {
    /// List the RGD's revisions: number, spec hash, age; with --revision, print one's spec.
    History {
        #[command(flatten)]
        rgd: RgdArgs,
        /// Print the spec of this revision instead of the list.
        #[arg(long, value_name = "N")]
        revision: Option<i64>,
    },
    /// Follow the propagation of the newest revision until every instance is on it (exit 0)
    /// or it halts (exit 1).
    Status {
        #[command(flatten)]
        rgd: RgdArgs,
        /// Give up (exit 1) after this long; 0 waits as long as it takes.
        #[arg(long, value_name = "DURATION", default_value = "0s", value_parser = crate::duration::parse_duration)]
        timeout: Duration,
        /// Print the state once and exit (0 when done, 1 otherwise) instead of following it.
        #[arg(long)]
        no_watch: bool,
    },
    /// Write an earlier revision's spec back to the RGD (by default the one before the
    /// newest); the controller rolls it out as a new revision.
    Undo {
        #[command(flatten)]
        rgd: RgdArgs,
        /// The revision to go back to.
        #[arg(long, value_name = "N")]
        to_revision: Option<i64>,
    },
}

/// The RGD and the cluster.
#[derive(Debug, clap::Args)]
struct RgdArgs {
    /// The RGD: `rgd/NAME`, `resourcegraphdefinition/NAME`, or `NAME`.
    #[arg(value_name = "RGD")]
    rgd: String,
    /// The kubeconfig (by default `KUBECONFIG`, then `~/.kube/config`).
    #[arg(long, value_name = "PATH")]
    kubeconfig: Option<PathBuf>,
    /// The kubeconfig context (by default its current context).
    #[arg(long, value_name = "NAME")]
    context: Option<String>,
}

impl RgdArgs {
    /// The RGD's name, from any of the forms kubectl accepts for it.
    fn name(&self) -> anyhow::Result<&str> {
        let Some((kind, name)) = self.rgd.split_once('/') else {
            return Ok(&self.rgd);
        };
        match kind {
            "rgd"
            | "rgds"
            | "resourcegraphdefinition"
            | "resourcegraphdefinitions"
            | "resourcegraphdefinition.kro.run"
            | "resourcegraphdefinitions.kro.run"
                if !name.is_empty() =>
            {
                Ok(name)
            }
            _ => bail!(
                "{:?}: kro rollout works on ResourceGraphDefinitions: write rgd/NAME",
                self.rgd
            ),
        }
    }

    async fn client(&self) -> anyhow::Result<kube::Client> {
        let config = crate::kube_client::config(
            self.kubeconfig.as_deref(),
            self.context.as_deref(),
            "rollout",
        )
        .await?;
        kube::Client::try_from(config).context("creating the API client")
    }
}

/// Runs one `kro rollout` action.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async move {
        match args.action {
            Action::History { rgd, revision } => history(&rgd, revision).await,
            Action::Status {
                rgd,
                timeout,
                no_watch,
            } => status(&rgd, timeout, !no_watch).await,
            Action::Undo { rgd, to_revision } => undo(&rgd, to_revision).await,
        }
    })
}

fn rgds(client: &kube::Client) -> Api<DynamicObject> {
    Api::all_with(client.clone(), &kro_controller::rgd_resource())
}

/// One GraphRevision of the RGD.
struct Revision {
    number: i64,
    hash: String,
    /// When it was created, in seconds since the Unix epoch.
    created: Option<i64>,
    spec: Value,
}

/// The RGD's revisions, oldest first.
async fn revisions(client: &kube::Client, rgd: &str) -> anyhow::Result<Vec<Revision>> {
    let resource = ApiResource {
        group: GRAPH_REVISION_GROUP.to_owned(),
        version: GRAPH_REVISION_API_VERSION
            .rsplit('/')
            .next()
            .unwrap_or_default()
            .to_owned(),
        api_version: GRAPH_REVISION_API_VERSION.to_owned(),
        kind: GRAPH_REVISION_KIND.to_owned(),
        plural: GRAPH_REVISION_PLURAL.to_owned(),
    };
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
    let listed = api
        .list(&ListParams::default())
        .await
        .context("listing GraphRevisions")?;
    let mut found: Vec<Revision> = listed
        .items
        .into_iter()
        .filter(|revision| revision.data["spec"]["snapshot"]["name"] == rgd)
        .filter(|revision| revision.metadata.deletion_timestamp.is_none())
        .filter_map(|revision| {
            Some(Revision {
                number: revision.data["spec"]["revision"].as_i64()?,
                hash: revision
                    .metadata
                    .labels
                    .as_ref()
                    .and_then(|labels| labels.get(GRAPH_REVISION_HASH_LABEL))
                    .cloned()
                    .unwrap_or_default(),
                created: revision
                    .metadata
                    .creation_timestamp
                    .as_ref()
                    .map(|time| time.0.as_second()),
                spec: revision.data["spec"]["snapshot"]["spec"].clone(),
            })
        })
        .collect();
    found.sort_by_key(|revision| revision.number);
    Ok(found)
}

/// An age as kubectl prints one (`45s`, `12m`, `3h`, `5d`).
fn age(created: Option<i64>) -> String {
    let Some(created) = created else {
        return "<unknown>".to_owned();
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| {
            i64::try_from(since.as_secs()).unwrap_or(i64::MAX)
        });
    let seconds = now.saturating_sub(created).max(0);
    match seconds {
        0..120 => format!("{seconds}s"),
        120..7200 => format!("{}m", seconds / 60),
        7200..172_800 => format!("{}h", seconds / 3600),
        _ => format!("{}d", seconds / 86_400),
    }
}

async fn history(args: &RgdArgs, revision: Option<i64>) -> anyhow::Result<ExitCode> {
    let name = args.name()?;
    let client = args.client().await?;
    rgds(&client)
        .get(name)
        .await
        .with_context(|| format!("resourcegraphdefinition {name:?}"))?;
    let revisions = revisions(&client, name).await?;
    if let Some(number) = revision {
        let Some(found) = revisions.iter().find(|found| found.number == number) else {
            bail!(
                "resourcegraphdefinition {name:?} has no revision {number} (see kro rollout history rgd/{name})"
            );
        };
        print!("{}", to_text(&found.spec, OutputFormat::Yaml)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!("resourcegraphdefinition.kro.run/{name}");
    println!("{:<10}{:<18}AGE", "REVISION", "HASH");
    for revision in &revisions {
        println!(
            "{:<10}{:<18}{}",
            revision.number,
            revision.hash,
            age(revision.created)
        );
    }
    Ok(ExitCode::SUCCESS)
}

async fn undo(args: &RgdArgs, to_revision: Option<i64>) -> anyhow::Result<ExitCode> {
    let name = args.name()?;
    let client = args.client().await?;
    let api = rgds(&client);
    let mut rgd = api
        .get(name)
        .await
        .with_context(|| format!("resourcegraphdefinition {name:?}"))?;
    let revisions = revisions(&client, name).await?;
    let Some(latest) = revisions.last() else {
        bail!("resourcegraphdefinition {name:?} has no revisions yet");
    };
    let target = match to_revision {
        Some(number) => revisions
            .iter()
            .find(|revision| revision.number == number)
            .with_context(|| {
                format!("resourcegraphdefinition {name:?} has no revision {number} (see kro rollout history rgd/{name})")
            })?,
        None => revisions
            .iter()
            .rev()
            .find(|revision| revision.number < latest.number)
            .with_context(|| {
                format!("resourcegraphdefinition {name:?} has no revision before {}", latest.number)
            })?,
    };
    if rgd.data["spec"] == target.spec {
        println!(
            "resourcegraphdefinition.kro.run/{name} skipped rollback (current spec is already revision {})",
            target.number
        );
        return Ok(ExitCode::SUCCESS);
    }
    rgd.data["spec"] = target.spec.clone();
    rgd.metadata.managed_fields = None;
    let params = PostParams {
        field_manager: Some(UNDO_MANAGER.to_owned()),
        ..PostParams::default()
    };
    api.replace(name, &params, &rgd).await.with_context(|| {
        format!(
            "writing revision {} back to resourcegraphdefinition {name:?}",
            target.number
        )
    })?;
    println!(
        "resourcegraphdefinition.kro.run/{name} rolled back to revision {}",
        target.number
    );
    Ok(ExitCode::SUCCESS)
}

/// What `status` reads from the RGD.
enum Reading {
    /// Still going: what to print.
    Going(String),
    /// Done: what to print.
    Done(String),
    /// Halted (or failed): what to print.
    Halted(String),
}

fn read(rgd: &Value, name: &str) -> Reading {
    let generation = rgd["metadata"]["generation"].as_i64().unwrap_or_default();
    let conditions = rgd["status"]["conditions"].as_array();
    let condition = |kind: &str| {
        conditions.and_then(|conditions| conditions.iter().find(|c| c["type"] == kind))
    };
    let text =
        |condition: &Value, field: &str| condition[field].as_str().unwrap_or_default().to_owned();
    let Some(propagated) = condition(PROPAGATED) else {
        return match condition("Ready") {
            Some(ready)
                if ready["status"] == "True"
                    && ready["observedGeneration"].as_i64().unwrap_or_default() >= generation =>
            {
                Reading::Done(format!(
                    "resourcegraphdefinition {name:?} has no propagation policy: every instance is reconciled against its newest revision at once"
                ))
            }
            _ => Reading::Going(format!(
                "Waiting for resourcegraphdefinition {name:?} to be Ready..."
            )),
        };
    };
    if propagated["observedGeneration"]
        .as_i64()
        .unwrap_or_default()
        < generation
    {
        return Reading::Going(format!(
            "Waiting for the controller to observe generation {generation} of resourcegraphdefinition {name:?}..."
        ));
    }
    let message = text(propagated, "message");
    match (
        propagated["status"].as_str(),
        text(propagated, "reason").as_str(),
    ) {
        (Some("True"), _) => Reading::Done(format!(
            "resourcegraphdefinition {name:?} successfully rolled out: {message}"
        )),
        (Some("False"), "PropagationInProgress") => {
            Reading::Going(format!("Waiting for the rollout to finish: {message}..."))
        }
        (_, reason) => Reading::Halted(format!(
            "error: rollout of resourcegraphdefinition {name:?}: {reason}: {message}"
        )),
    }
}

async fn status(args: &RgdArgs, timeout: Duration, watch: bool) -> anyhow::Result<ExitCode> {
    let name = args.name()?;
    let client = args.client().await?;
    let api = rgds(&client);
    let started = Instant::now();
    let mut last = String::new();
    loop {
        let rgd = api
            .get(name)
            .await
            .with_context(|| format!("resourcegraphdefinition {name:?}"))?;
        let rgd = serde_json::to_value(&rgd)?;
        match read(&rgd, name) {
            Reading::Done(line) => {
                println!("{line}");
                return Ok(ExitCode::SUCCESS);
            }
            Reading::Halted(line) => {
                eprintln!("{line}");
                return Ok(ExitCode::FAILURE);
            }
            Reading::Going(line) => {
                if line != last {
                    println!("{line}");
                    last = line;
                }
                if !watch {
                    return Ok(ExitCode::FAILURE);
                }
            }
        }
        if !timeout.is_zero() && started.elapsed() >= timeout {
            eprintln!(
                "error: timed out after {} waiting for the rollout of resourcegraphdefinition {name:?}",
                crate::duration::format(timeout)
            );
            return Ok(ExitCode::FAILURE);
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rgd(propagated: Value) -> Value {
        json!({"metadata": {"generation": 2}, "status": {"conditions": [
            {"type": "Ready", "status": "True"}, propagated]}})
    }

    #[test]
    fn the_rgd_is_named_as_kubectl_names_it() {
        let named = |text: &str| RgdArgs {
            rgd: text.to_owned(),
            kubeconfig: None,
            context: None,
        };
        assert_eq!(named("rgd/web").name().ok(), Some("web"));
        assert_eq!(
            named("resourcegraphdefinitions.kro.run/web").name().ok(),
            Some("web")
        );
        assert_eq!(named("web").name().ok(), Some("web"));
        assert!(named("deployment/web").name().is_err());
        assert!(named("rgd/").name().is_err());
    }

    #[test]
    fn status_reads_propagated_at_the_current_generation() {
        let going = rgd(
            json!({"type": "Propagated", "status": "False", "observedGeneration": 2,
            "reason": "PropagationInProgress", "message": "4/20 instances on revision 2"}),
        );
        assert!(matches!(read(&going, "web"), Reading::Going(line) if line.contains("4/20")));
        let stale = rgd(json!({"type": "Propagated", "status": "True", "observedGeneration": 1}));
        assert!(
            matches!(read(&stale, "web"), Reading::Going(line) if line.contains("generation 2"))
        );
        let halted = rgd(
            json!({"type": "Propagated", "status": "False", "observedGeneration": 2,
            "reason": "PropagationHalted", "message": "instance default/a is not Ready"}),
        );
        assert!(
            matches!(read(&halted, "web"), Reading::Halted(line) if line.contains("default/a"))
        );
        let done = rgd(
            json!({"type": "Propagated", "status": "True", "observedGeneration": 2,
            "reason": "AllInstancesUpdated", "message": "all 20 instances on revision 2"}),
        );
        assert!(matches!(read(&done, "web"), Reading::Done(_)));
        let unpolicied = json!({"metadata": {"generation": 1}, "status": {"conditions": [
            {"type": "Ready", "status": "True", "observedGeneration": 1}]}});
        assert!(
            matches!(read(&unpolicied, "web"), Reading::Done(line) if line.contains("no propagation policy"))
        );
        let unobserved = json!({"metadata": {"generation": 2}, "status": {"conditions": [
            {"type": "Ready", "status": "True", "observedGeneration": 1}]}});
        assert!(matches!(read(&unobserved, "web"), Reading::Going(_)));
    }

    #[test]
    fn ages_read_as_kubectl_prints_them() {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| {
                i64::try_from(since.as_secs()).unwrap_or(i64::MAX)
            });
        let ago = |seconds: i64| Some(now - seconds);
        assert_eq!(age(ago(30)), "30s");
        assert_eq!(age(ago(600)), "10m");
        assert_eq!(age(ago(3 * 86_400)), "3d");
        assert_eq!(age(None), "<unknown>");
    }
}
