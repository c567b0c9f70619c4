//! What the controller scenarios share: an embedded API server with its simulated cluster,
//! the controllers running against it, and small helpers to apply YAML and wait for states.

#![allow(dead_code)]

use std::path::Path;
use std::time::{Duration, Instant};

use kro_apiserver::{RunningServer, ServerConfig, Simulators};
use kro_controller::kinds::{Kinds, ServedKind};
use kro_controller::{Manager, Metrics, Settings};
use kro_test_support::RealControlPlane;
use kube::api::{DeleteParams, DynamicObject, Patch, PatchParams};
use serde_json::Value;

/// An RGD with a `WebSet` kind (`spec.scaling`): a one-Pod Deployment per `Web` instance; an instance is Ready once its Deployment has rolled out
/// the current template (no old Pod left, the new one available).
pub const WEB_SET_RGD: &str = r#"
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata: {name: webs}
spec:
  scaling: {kind: WebSet, method: replicas}
  schema:
    apiVersion: v1alpha1
    kind: Web
    spec:
      version: string | default="1"
      track: string | default="stable"
  resources:
    - id: deployment
      readyWhen:
        - ${deployment.?status.?observedGeneration.orValue(0) == deployment.metadata.generation}
        - ${deployment.?status.?replicas.orValue(0) == 1}
        - ${deployment.?status.?updatedReplicas.orValue(0) == 1}
        - ${deployment.?status.?availableReplicas.orValue(0) == 1}
      template:
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: "${schema.metadata.name}"}
        spec:
          replicas: 1
          selector:
            matchLabels: {app: "${schema.metadata.name}"}
          template:
            metadata:
              labels: {app: "${schema.metadata.name}", track: "${schema.spec.track}"}
            spec:
              containers:
                - {name: web, image: "${'nginx:1.' + schema.spec.version}"}
"#;

/// One object: apiVersion, kind, namespace, name.
#[derive(Debug, Clone, Copy)]
pub struct Target<'a> {
    pub api_version: &'a str,
    pub kind: &'a str,
    pub namespace: Option<&'a str>,
    pub name: &'a str,
}

/// The namespaced object `kind` `name` in `default`.
pub fn at<'a>(api_version: &'a str, kind: &'a str, name: &'a str) -> Target<'a> {
    Target {
        api_version,
        kind,
        namespace: Some("default"),
        name,
    }
}

/// The cluster-scoped object `kind` `name`.
pub fn cluster_at<'a>(api_version: &'a str, kind: &'a str, name: &'a str) -> Target<'a> {
    Target {
        api_version,
        kind,
        namespace: None,
        name,
    }
}

/// Starts the controllers against `server` with a client of their own, so their metrics
/// count only their requests.
async fn start_controllers(config: &kube::Config, settings: Settings) -> (Manager, Metrics) {
    let metrics = Metrics::new();
    let client = kube::client::ClientBuilder::try_from(config.clone())
        .expect("a client")
        .with_layer(&metrics.api_layer())
        .build();
    let manager = Manager::start(client, settings, metrics.clone())
        .await
        .expect("the controllers start");
    (manager, metrics)
}

/// The API server the controllers run against.
pub enum Backend {
    /// The embedded server with every simulator on.
    Embedded(RunningServer),
    /// A real kube-apiserver + etcd (no controller-manager: nothing simulates workloads).
    Real(RealControlPlane),
}

/// A server and the controllers.
pub struct Cluster {
    pub backend: Backend,
    /// How to reach the server.
    config: kube::Config,
    pub client: kube::Client,
    pub kinds: Kinds,
    pub manager: Option<Manager>,
    /// The controllers' metrics (their client's requests included).
    pub metrics: Metrics,
    /// The controllers' settings, kept for their restarts.
    settings: Settings,
}

impl Cluster {
    /// Starts the server (every simulator on) and the controllers.
    pub async fn start() -> Cluster {
        Self::start_with(Settings::default()).await
    }

    /// Starts the server and the controllers with `settings`.
    pub async fn start_with(settings: Settings) -> Cluster {
        let server = kro_apiserver::start(ServerConfig {
            token: None,
            tls: false,
            simulators: Simulators::all(),
            ..ServerConfig::default()
        })
        .await
        .expect("the server starts");
        let config = kube::Config::new(server.url().parse().expect("URL"));
        Self::with_backend(Backend::Embedded(server), config, settings).await
    }

    /// Starts the server with the simulated cluster's `simulation` knobs, and the controllers.
    pub async fn start_with_simulation(simulation: kro_apiserver::SimulationKnobs) -> Cluster {
        Self::start_configured(Settings::default(), simulation).await
    }

    /// Starts the server with the simulated cluster's `simulation` knobs, and the controllers
    /// with `settings`.
    pub async fn start_configured(
        settings: Settings,
        simulation: kro_apiserver::SimulationKnobs,
    ) -> Cluster {
        let server = kro_apiserver::start(ServerConfig {
            token: None,
            tls: false,
            simulators: Simulators::all(),
            simulation,
            ..ServerConfig::default()
        })
        .await
        .expect("the server starts");
        let config = kube::Config::new(server.url().parse().expect("URL"));
        Self::with_backend(Backend::Embedded(server), config, settings).await
    }

    /// Starts the controllers against a real control plane.
    pub async fn start_real(control_plane: RealControlPlane) -> Cluster {
        Self::start_real_with(control_plane, Settings::default()).await
    }

    /// Starts the controllers with `settings` against a real control plane.
    pub async fn start_real_with(control_plane: RealControlPlane, settings: Settings) -> Cluster {
        let kubeconfig = kube::config::Kubeconfig::read_from(control_plane.kubeconfig())
            .expect("the control plane's kubeconfig");
        let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
            .await
            .expect("a client configuration");
        Self::with_backend(Backend::Real(control_plane), config, settings).await
    }

    async fn with_backend(backend: Backend, config: kube::Config, settings: Settings) -> Cluster {
        kro_test_support::log_to_test_output();
        let client = kube::Client::try_from(config.clone()).expect("a client");
        let (manager, metrics) = start_controllers(&config, settings.clone()).await;
        Cluster {
            kinds: Kinds::new(client.clone()),
            backend,
            config,
            client,
            manager: Some(manager),
            metrics,
            settings,
        }
    }

    /// The embedded server (its test knobs).
    ///
    /// # Panics
    /// On a real control plane.
    pub fn server(&self) -> &RunningServer {
        match &self.backend {
            Backend::Embedded(server) => server,
            Backend::Real(_) => panic!("this check needs the embedded server's test knobs"),
        }
    }

    /// Stops the controllers and starts new ones (fresh memory and metrics), as a restart
    /// of kro or a new leader would.
    pub async fn restart_controllers(&mut self) {
        self.stop_controllers().await;
        self.start_controllers().await;
    }

    /// Stops the controllers (the server keeps running).
    pub async fn stop_controllers(&mut self) {
        if let Some(manager) = self.manager.take() {
            manager.shutdown().await;
        }
    }

    /// Starts new controllers (fresh memory and metrics, the same settings).
    pub async fn start_controllers(&mut self) {
        let (manager, metrics) = start_controllers(&self.config, self.settings.clone()).await;
        self.manager = Some(manager);
        self.metrics = metrics;
    }

    /// The served kind of `object`.
    pub async fn kind_of(&self, object: &Value) -> ServedKind {
        let api_version = object["apiVersion"].as_str().expect("apiVersion");
        let kind = object["kind"].as_str().expect("kind");
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        // The cache would keep a kind that was not served yet; ask afresh every time.
        let kinds = Kinds::new(self.client.clone());
        kinds
            .resolve(group, version, kind)
            .await
            .unwrap_or_else(|error| panic!("{error}"))
    }

    /// Applies every document of `yaml` (server-side apply, as kubectl apply --server-side).
    pub async fn apply_yaml(&self, yaml: &str) {
        for document in kro_graph::parse_yaml_documents(yaml).expect("YAML") {
            self.apply(&document.value).await;
        }
    }

    /// Applies one object.
    pub async fn apply(&self, object: &Value) -> Value {
        let kind = self.kind_of(object).await;
        let name = object["metadata"]["name"].as_str().expect("name");
        let namespace = object["metadata"]["namespace"].as_str().or(Some("default"));
        let applied = kind
            .api(&self.client, namespace)
            .patch(
                name,
                &PatchParams::apply("test").force(),
                &Patch::Apply(object),
            )
            .await
            .unwrap_or_else(|error| panic!("applying {name}: {error}"));
        serde_json::to_value(applied).expect("JSON")
    }

    /// Applies the files of an example directory.
    pub async fn apply_example(&self, name: &str, file: &str) {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../examples")
            .join(name)
            .join(file);
        let text = std::fs::read_to_string(&path).expect("the example");
        self.apply_yaml(&text).await;
    }

    /// The object `apiVersion`/`kind` `namespace`/`name`, if it exists.
    pub async fn get(&self, target: Target<'_>) -> Option<Value> {
        let served = self
            .kind_of(&serde_json::json!({"apiVersion": target.api_version, "kind": target.kind}))
            .await;
        served
            .api(&self.client, target.namespace)
            .get_opt(target.name)
            .await
            .expect("GET")
            .map(|object: DynamicObject| serde_json::to_value(object).expect("JSON"))
    }

    /// Deletes an object (gone already is fine).
    pub async fn delete(&self, target: Target<'_>) {
        let name = target.name;
        let served = self
            .kind_of(&serde_json::json!({"apiVersion": target.api_version, "kind": target.kind}))
            .await;
        match served
            .api(&self.client, target.namespace)
            .delete(name, &DeleteParams::default())
            .await
        {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 404 => {}
            Err(error) => panic!("deleting {name}: {error}"),
        }
    }

    /// Changes an object with a JSON merge patch.
    pub async fn merge(&self, target: Target<'_>, patch: Value) -> Value {
        let served = self
            .kind_of(&serde_json::json!({"apiVersion": target.api_version, "kind": target.kind}))
            .await;
        let patched = served
            .api(&self.client, target.namespace)
            .patch(target.name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .unwrap_or_else(|error| panic!("patching {}: {error}", target.name));
        serde_json::to_value(patched).expect("JSON")
    }

    /// The names of the objects of a kind in `default` carrying `label=value`.
    pub async fn names_labelled(
        &self,
        api_version: &str,
        kind: &str,
        label: &str,
        value: &str,
    ) -> Vec<String> {
        let served = self
            .kind_of(&serde_json::json!({"apiVersion": api_version, "kind": kind}))
            .await;
        let list = served
            .api(&self.client, Some("default"))
            .list(&kube::api::ListParams::default().labels(&format!("{label}={value}")))
            .await
            .expect("LIST");
        let mut names: Vec<String> = list
            .items
            .into_iter()
            .filter_map(|object| object.metadata.name)
            .collect();
        names.sort();
        names
    }

    /// The reasons of the events recorded in `default` about the object named `name`, oldest
    /// first.
    pub async fn event_reasons(&self, name: &str) -> Vec<String> {
        let served = self
            .kind_of(&serde_json::json!({"apiVersion": "v1", "kind": "Event"}))
            .await;
        let list = served
            .api(&self.client, Some("default"))
            .list(&kube::api::ListParams::default())
            .await
            .expect("LIST events");
        list.items
            .into_iter()
            .filter(|event| event.data["involvedObject"]["name"] == name)
            .filter(|event| event.data["source"]["component"] == "kro")
            .filter_map(|event| event.data["reason"].as_str().map(str::to_owned))
            .collect()
    }

    /// Waits until `check` holds for the object (or its absence), up to a minute.
    pub async fn wait_for(
        &self,
        target: Target<'_>,
        what: &str,
        check: impl Fn(Option<&Value>) -> bool,
    ) -> Option<Value> {
        self.wait_for_within(target, what, Duration::from_secs(60), check)
            .await
    }

    /// Waits until `check` holds for the object (or its absence), up to `limit`.
    pub async fn wait_for_within(
        &self,
        target: Target<'_>,
        what: &str,
        limit: Duration,
        check: impl Fn(Option<&Value>) -> bool,
    ) -> Option<Value> {
        let (kind, name) = (target.kind, target.name);
        let started = Instant::now();
        loop {
            let object = self.get(target).await;
            if check(object.as_ref()) {
                return object;
            }
            assert!(
                started.elapsed() < limit,
                "{kind} {name}: not {what} after {limit:?}; last seen: {}",
                serde_json::to_string_pretty(&object).unwrap_or_default()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Applies the RGD `notes` (one ConfigMap per `Note`) and a `Note` named `name` in
    /// `default`, and waits until the instance is ACTIVE.
    pub async fn active_note(&self, name: &str) {
        self.apply_notes_rgd().await;
        self.wait_state(
            cluster_at("kro.run/v1alpha1", "ResourceGraphDefinition", "notes"),
            "Active",
        )
        .await;
        self.apply(&serde_json::json!({
            "apiVersion": "kro.run/v1alpha1", "kind": "Note",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"text": "hello"},
        }))
        .await;
        self.wait_state(at("kro.run/v1alpha1", "Note", name), "ACTIVE")
            .await;
    }

    /// Applies the RGD `notes`: one ConfigMap per `Note`, named after it, holding its text.
    pub async fn apply_notes_rgd(&self) {
        self.apply(&serde_json::json!({
            "apiVersion": "kro.run/v1alpha1", "kind": "ResourceGraphDefinition",
            "metadata": {"name": "notes"},
            "spec": {
                "schema": {"apiVersion": "v1alpha1", "kind": "Note", "spec": {"text": "string"}},
                "resources": [{"id": "note", "template": {
                    "apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "${schema.metadata.name}"},
                    "data": {"text": "${schema.spec.text}"},
                }}],
            },
        }))
        .await;
    }

    /// GraphRevisions (`internal.kro.run/v1alpha1`), cluster-wide.
    pub fn graph_revisions(&self) -> kube::Api<DynamicObject> {
        kube::Api::all_with(
            self.client.clone(),
            &kube::api::ApiResource {
                group: "internal.kro.run".into(),
                version: "v1alpha1".into(),
                api_version: "internal.kro.run/v1alpha1".into(),
                kind: "GraphRevision".into(),
                plural: "graphrevisions".into(),
            },
        )
    }

    /// Waits until `status.state` is `state`.
    pub async fn wait_state(&self, target: Target<'_>, state: &str) -> Value {
        self.wait_for(target, state, |object| {
            object.is_some_and(|object| object["status"]["state"] == state)
        })
        .await
        .expect("the object")
    }

    /// Waits until the object is gone.
    pub async fn wait_gone(&self, target: Target<'_>) {
        self.wait_for(target, "gone", |object| object.is_none())
            .await;
    }

    /// Writes (create, update, patch, delete) served since the counts were reset.
    pub fn writes(&self) -> u64 {
        ["create", "update", "patch", "delete", "deletecollection"]
            .iter()
            .map(|verb| self.server().requests_with_verb(verb))
            .sum()
    }

    /// The value of one series of the controllers' metrics (`name{labels}` as scraped).
    pub fn metric(&self, series: &str) -> Option<f64> {
        self.metrics.encode().lines().find_map(|line| {
            let value = line.strip_prefix(series)?.strip_prefix(' ')?;
            value.parse().ok()
        })
    }

    /// Writes the controllers made, by their own metrics (`rest_client_requests_by_verb_total`).
    pub fn controller_writes(&self) -> f64 {
        self.metrics
            .encode()
            .lines()
            .filter(|line| line.starts_with("rest_client_requests_by_verb_total{"))
            .filter(|line| {
                [
                    "create",
                    "update",
                    "patch",
                    "apply",
                    "delete",
                    "deletecollection",
                ]
                .iter()
                .any(|verb| line.contains(&format!("verb=\"{verb}\"")))
            })
            .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    }

    /// Stops the controllers, then the server.
    pub async fn stop(mut self) {
        if let Some(manager) = self.manager.take() {
            manager.shutdown().await;
        }
        match self.backend {
            Backend::Embedded(server) => server.stop(),
            Backend::Real(control_plane) => {
                tokio::task::spawn_blocking(move || control_plane.stop())
                    .await
                    .expect("the stop task")
                    .expect("the control plane stops");
            }
        }
    }
}
