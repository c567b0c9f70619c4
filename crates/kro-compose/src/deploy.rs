//! Deploying a composition (feature `deploy`): through a kro controller in the cluster
//! ([`Mode::Kro`]) or straight from here with kro's own engine ([`Mode::Direct`],
//! `kro_engine::direct`), with the status read back into the status struct.

use kro_engine::direct::{
    ApplyFailure, DirectConfig, DirectEngine, DirectError, ParentRef, Progress, Stop,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value as Json, json};

use crate::composition::{ComposeError, Composition};
use crate::schema::KroSchema;

/// How a composition is deployed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Apply the RGD and the instance for the kro controller in the cluster, and wait.
    Kro,
    /// Apply the instance's resources from here with kro's engine; no controller needed.
    Direct,
}

/// Why a deploy failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DeployError {
    /// The composition is not a valid RGD, or the spec does not serialize.
    #[error(transparent)]
    Compose(#[from] ComposeError),
    /// The spec could not be written as JSON.
    #[error("the spec cannot be written as JSON: {0}")]
    Spec(#[source] serde_json::Error),
    /// Deploying failed (the resource, its level and why).
    #[error(transparent)]
    Apply(Box<ApplyFailure>),
    /// Handing the RGD and the instance to kro failed.
    #[error(transparent)]
    Kro(Box<DirectError>),
    /// The status does not read as the status struct.
    #[error("the instance's status does not read as the status type: {0}")]
    Status(#[source] serde_json::Error),
}

/// A deployed instance: its status, typed, and the instance as JSON.
#[derive(Debug)]
pub struct Deployment<Status> {
    /// The status read into the status struct.
    pub status: Status,
    /// The instance with its status.
    pub instance: Json,
}

impl<Spec: KroSchema + Serialize, Status: KroSchema + DeserializeOwned> Composition<Spec, Status> {
    /// The instance `name` (in `namespace`, for a namespaced kind) of this composition's kind
    /// with `spec`.
    ///
    /// # Errors
    /// When the spec does not serialize.
    ///
    /// ```
    /// # use kro_compose::*;
    /// #[derive(KroSchema, serde::Serialize)]
    /// struct AppSpec { replicas: i64 }
    ///
    /// let app = Composition::<AppSpec>::new("app", "App");
    /// let instance = app.instance("shop", Some("default"), &AppSpec { replicas: 3 })?;
    /// assert_eq!(instance["apiVersion"], "kro.run/v1alpha1");
    /// assert_eq!(instance["spec"]["replicas"], 3);
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn instance(
        &self,
        name: &str,
        namespace: Option<&str>,
        spec: &Spec,
    ) -> Result<Json, serde_json::Error> {
        let mut metadata = json!({"name": name});
        if let Some(namespace) = namespace {
            metadata["namespace"] = json!(namespace);
        }
        Ok(json!({
            "apiVersion": self.api_version(),
            "kind": self.kind(),
            "metadata": metadata,
            "spec": serde_json::to_value(spec)?,
        }))
    }

    /// Deploys the instance `name` with `spec` through `client`, waits until it is ready,
    /// and returns its status read into `Status`. `config` says how (timeout, concurrency…);
    /// `report` hears the progress.
    ///
    /// # Errors
    /// [`DeployError`]: the composition, the deploy (naming the resource) or the status.
    #[allow(clippy::too_many_arguments)]
    ///
    /// ```no_run
    /// # use kro_compose::*;
    /// # #[derive(KroSchema, serde::Serialize)]
    /// # struct AppSpec { replicas: i64 }
    /// # #[derive(KroSchema, serde::Deserialize, Debug)]
    /// # struct AppStatus { url: String }
    /// # async fn run(app: Composition<AppSpec, AppStatus>) -> Result<(), Box<dyn std::error::Error>> {
    /// let client = kube::Client::try_default().await?;
    /// let deployed = app
    ///     .deploy(Mode::Direct, &client, "shop", Some("default"), &AppSpec { replicas: 2 },
    ///         DirectConfig::default(), &|progress| eprintln!("{progress}"))
    ///     .await?;
    /// println!("{}", deployed.status.url);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn deploy(
        &self,
        mode: Mode,
        client: &kube::Client,
        name: &str,
        namespace: Option<&str>,
        spec: &Spec,
        config: DirectConfig,
        report: &(dyn Fn(&Progress) + Send + Sync),
    ) -> Result<Deployment<Status>, DeployError> {
        let (rgd, graph) = self.compile()?;
        let instance = self
            .instance(name, namespace, spec)
            .map_err(DeployError::Spec)?;
        let engine = DirectEngine::new(client.clone(), config);
        let instance = match mode {
            Mode::Direct => {
                engine
                    .apply(&graph, &instance, report, &Stop::never())
                    .await
                    .map_err(|failure| DeployError::Apply(Box::new(failure)))?
                    .instance
            }
            Mode::Kro => engine
                .apply_through_kro(&rgd, &graph, &instance, report, &Stop::never())
                .await
                .map_err(|error| DeployError::Kro(Box::new(error)))?,
        };
        // A composition with no status fields (`Status = ()`) reads none of what kro writes
        // there itself (state, conditions).
        let status = if self.declares_status() {
            instance["status"].clone()
        } else {
            serde_json::Value::Null
        };
        let status = serde_json::from_value(status).map_err(DeployError::Status)?;
        Ok(Deployment { status, instance })
    }

    /// Deletes what [`deploy`](Self::deploy) made for the instance `name`: in
    /// [`Mode::Direct`] its objects in reverse order, then its parent ConfigMap; in
    /// [`Mode::Kro`] the instance, once the controller has deleted its objects and let it go
    /// (the RGD stays). The objects deleted (in `Mode::Kro`, the instance).
    ///
    /// # Errors
    /// When something could not be deleted, or the timeout passed.
    ///
    /// ```no_run
    /// # use kro_compose::*;
    /// # #[derive(KroSchema, serde::Serialize)]
    /// # struct AppSpec { replicas: i64 }
    /// # async fn run(app: Composition<AppSpec>) -> Result<(), Box<dyn std::error::Error>> {
    /// let client = kube::Client::try_default().await?;
    /// let deleted = app
    ///     .delete(Mode::Direct, &client, "shop", Some("default"), DirectConfig::default(), &|_| {})
    ///     .await?;
    /// println!("{} objects deleted", deleted.len());
    /// # Ok(())
    /// # }
    /// ```
    pub async fn delete(
        &self,
        mode: Mode,
        client: &kube::Client,
        name: &str,
        namespace: Option<&str>,
        config: DirectConfig,
        report: &(dyn Fn(&Progress) + Send + Sync),
    ) -> Result<Vec<kro_runtime::ObjectKey>, DeployError> {
        let (_, graph) = self.compile()?;
        let engine = DirectEngine::new(client.clone(), config.clone());
        let kro_error = |error| DeployError::Kro(Box::new(error));
        match mode {
            Mode::Direct => {
                let instance = json!({"metadata": {"name": name, "namespace": namespace}});
                let parent = ParentRef::of_instance(&graph, &instance, &config.parent_namespace)
                    .map_err(|error| kro_error(error.into()))?;
                engine
                    .delete(&parent, Some(&graph), report, &Stop::never())
                    .await
                    .map_err(kro_error)
            }
            Mode::Kro => {
                let deleted = std::sync::Mutex::new(Vec::new());
                let record = |progress: &Progress| {
                    if let Progress::Deleted { key, .. } = progress
                        && let Ok(mut deleted) = deleted.lock()
                    {
                        deleted.push(key.clone());
                    }
                    report(progress);
                };
                engine
                    .delete_through_kro(&graph, name, namespace, &record, &Stop::never())
                    .await
                    .map_err(kro_error)?;
                Ok(deleted.into_inner().unwrap_or_default())
            }
        }
    }
}
