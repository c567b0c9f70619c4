//! Fault trials against real processes: `kro apiserver --data-dir` and `kro controller` are
//! started as the user would start them and killed with `-9` at chosen moments. Shared by the
//! trial tests (a few trials) and the trial benchmark (many).

#![allow(dead_code)] // each user of the harness takes what it needs

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use serde_json::Value;

/// A seeded pseudo-random sequence (SplitMix64): trials are reproducible from their seed.
pub struct Random(u64);

impl Random {
    /// The sequence of `seed`.
    pub fn new(seed: u64) -> Self {
        Random(seed)
    }

    /// The next number.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A duration between `low` and `high`.
    pub fn between(&mut self, low: Duration, high: Duration) -> Duration {
        let span = high.saturating_sub(low).as_millis().max(1) as u64;
        low + Duration::from_millis(self.next_u64() % span)
    }
}

/// The seed of a run: `KRO_TRIAL_SEED` when set, else `default`.
pub fn seed(default: u64) -> u64 {
    std::env::var("KRO_TRIAL_SEED")
        .ok()
        .and_then(|seed| seed.parse().ok())
        .unwrap_or(default)
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .expect("a free port")
}

/// `kro apiserver` with a data directory, on a fixed port so clients find it after a restart.
pub struct Server {
    child: Option<Child>,
    port: u16,
    data_dir: PathBuf,
    kubeconfig: PathBuf,
}

impl Server {
    /// Starts a server keeping its data under `dir`.
    pub fn start(dir: &Path) -> Server {
        let mut server = Server {
            child: None,
            port: free_port(),
            data_dir: dir.join("data"),
            kubeconfig: dir.join("kubeconfig"),
        };
        server.spawn();
        server
    }

    fn spawn(&mut self) {
        let _ = std::fs::remove_file(&self.kubeconfig);
        let child = Command::new(env!("CARGO_BIN_EXE_kro"))
            .args(["apiserver", "--port", &self.port.to_string(), "--data-dir"])
            .arg(&self.data_dir)
            .arg("--kubeconfig-out")
            .arg(&self.kubeconfig)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("kro apiserver starts");
        self.child = Some(child);
    }

    /// The kubeconfig it wrote (the same across restarts).
    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    /// `kill -9`.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts it again on the same port and data.
    pub fn restart(&mut self) {
        self.kill();
        self.spawn();
    }

    /// A client, once the server answers.
    pub async fn client(&self) -> kube::Client {
        connect(&self.kubeconfig).await
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A client of the server `kubeconfig` names, once it answers (at most 30 s).
pub async fn connect(kubeconfig: &Path) -> kube::Client {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(config) = Kubeconfig::read_from(kubeconfig)
            && let Ok(config) =
                kube::Config::from_custom_kubeconfig(config, &KubeConfigOptions::default()).await
            && let Ok(client) = kube::Client::try_from(config)
            && client.apiserver_version().await.is_ok()
        {
            return client;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the server did not come up"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// `kro controller` as a process of its own, logging (at `info`) to a file.
pub struct Controller {
    child: Option<Child>,
    kubeconfig: PathBuf,
    log: PathBuf,
}

impl Controller {
    /// Starts a controller against the server of `kubeconfig`.
    pub fn start(kubeconfig: &Path) -> Controller {
        let log = kubeconfig.with_file_name("controller.log");
        let mut controller = Controller {
            child: None,
            kubeconfig: kubeconfig.to_owned(),
            log,
        };
        controller.spawn();
        controller
    }

    fn spawn(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .expect("the controller's log file");
        let child = Command::new(env!("CARGO_BIN_EXE_kro"))
            .args([
                "controller",
                "--metrics-addr",
                "127.0.0.1:0",
                "--kubeconfig",
            ])
            .arg(&self.kubeconfig)
            .env("KRO_LOG", "info,kro_controller=debug")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("kro controller starts");
        self.child = Some(child);
    }

    /// The last `lines` lines of its log (for a failure's message).
    pub fn log_tail(&self, lines: usize) -> String {
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        let all: Vec<&str> = log.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }

    /// `kill -9`.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts it again.
    pub fn restart(&mut self) {
        self.kill();
        self.spawn();
    }

    /// Whether it has exited (it must not, whatever the server does).
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child
            .as_mut()
            .and_then(|child| child.try_wait().ok().flatten())
    }
}

impl Drop for Controller {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The RGD of the trials: the objects the adversarial trial found stranded (a Deployment, an
/// HPA, an Ingress) in four levels.
pub const TRIAL_RGD: &str = r#"
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: trial-apps
spec:
  schema:
    apiVersion: v1alpha1
    kind: TrialApp
    spec:
      image: string | default="nginx"
      replicas: integer | default=1
  resources:
  - id: config
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: ${schema.metadata.name}-config
      data:
        image: ${schema.spec.image}
  - id: deployment
    readyWhen:
    - ${deployment.status.availableReplicas >= 1}
    template:
      apiVersion: apps/v1
      kind: Deployment
      metadata:
        name: ${schema.metadata.name}
      spec:
        replicas: ${schema.spec.replicas}
        selector:
          matchLabels:
            app: ${schema.metadata.name}
        template:
          metadata:
            labels:
              app: ${schema.metadata.name}
          spec:
            containers:
            - name: app
              image: ${config.data.image}
  - id: service
    template:
      apiVersion: v1
      kind: Service
      metadata:
        name: ${deployment.metadata.name}
      spec:
        selector:
          app: ${schema.metadata.name}
        ports:
        - port: 80
  - id: autoscaler
    template:
      apiVersion: autoscaling/v2
      kind: HorizontalPodAutoscaler
      metadata:
        name: ${deployment.metadata.name}
      spec:
        scaleTargetRef:
          apiVersion: apps/v1
          kind: Deployment
          name: ${deployment.metadata.name}
        minReplicas: 1
        maxReplicas: 3
  - id: ingress
    template:
      apiVersion: networking.k8s.io/v1
      kind: Ingress
      metadata:
        name: ${service.metadata.name}
      spec:
        rules:
        - http:
            paths:
            - path: /
              pathType: Prefix
              backend:
                service:
                  name: ${service.metadata.name}
                  port:
                    number: 80
"#;

/// The kinds the trial RGD creates.
pub fn trial_kinds() -> Vec<ApiResource> {
    let resource = |group: &str, version: &str, kind: &str, plural: &str| ApiResource {
        group: group.to_owned(),
        version: version.to_owned(),
        api_version: if group.is_empty() {
            version.to_owned()
        } else {
            format!("{group}/{version}")
        },
        kind: kind.to_owned(),
        plural: plural.to_owned(),
    };
    vec![
        resource("", "v1", "ConfigMap", "configmaps"),
        resource("apps", "v1", "Deployment", "deployments"),
        resource("", "v1", "Service", "services"),
        resource(
            "autoscaling",
            "v2",
            "HorizontalPodAutoscaler",
            "horizontalpodautoscalers",
        ),
        resource("networking.k8s.io", "v1", "Ingress", "ingresses"),
    ]
}

/// The instance kind of the trial RGD.
pub fn trial_app() -> ApiResource {
    ApiResource {
        group: "kro.run".to_owned(),
        version: "v1alpha1".to_owned(),
        api_version: "kro.run/v1alpha1".to_owned(),
        kind: "TrialApp".to_owned(),
        plural: "trialapps".to_owned(),
    }
}

fn rgd_resource() -> ApiResource {
    ApiResource {
        group: "kro.run".to_owned(),
        version: "v1alpha1".to_owned(),
        api_version: "kro.run/v1alpha1".to_owned(),
        kind: "ResourceGraphDefinition".to_owned(),
        plural: "resourcegraphdefinitions".to_owned(),
    }
}

/// Retries `attempt` (the server may be restarting) for at most `limit`.
pub async fn retried<T, F, Fut>(what: &str, limit: Duration, mut attempt: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, kube::Error>>,
{
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        match attempt().await {
            Ok(value) => return value,
            Err(error) => {
                assert!(
                    tokio::time::Instant::now() < deadline,
                    "{what}: still failing after {limit:?}: {error}"
                );
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

/// Applies the trial RGD (server-side) and waits until its kind is served.
pub async fn install_trial_rgd(client: &kube::Client) {
    let rgd: Value = serde_saphyr::from_str(TRIAL_RGD).expect("the trial RGD parses");
    let rgds: Api<DynamicObject> = Api::all_with(client.clone(), &rgd_resource());
    let params = PatchParams::apply("trials").force();
    let patch = Patch::Apply(&rgd);
    retried("applying the RGD", Duration::from_secs(60), || {
        rgds.patch("trial-apps", &params, &patch)
    })
    .await;
    let instances: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), "default", &trial_app());
    let first = ListParams::default().limit(1);
    retried(
        "the TrialApp kind is served",
        Duration::from_secs(60),
        || instances.list(&first),
    )
    .await;
}

/// Applies an instance named `name` with `replicas`.
pub async fn apply_instance(client: &kube::Client, name: &str, replicas: i64) {
    let instances: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), "default", &trial_app());
    let instance = serde_json::json!({
        "apiVersion": "kro.run/v1alpha1", "kind": "TrialApp",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"replicas": replicas},
    });
    let params = PatchParams::apply("trials").force();
    let patch = Patch::Apply(&instance);
    retried("applying the instance", Duration::from_secs(60), || {
        instances.patch(name, &params, &patch)
    })
    .await;
}

/// Deletes the instance `name` (the server may be restarting).
pub async fn delete_instance(client: &kube::Client, name: &str) {
    let instances: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), "default", &trial_app());
    retried("deleting the instance", Duration::from_secs(60), || async {
        match instances.delete(name, &DeleteParams::default()).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
            Err(error) => Err(error),
        }
    })
    .await;
}

/// The instance `name`, if it exists.
pub async fn instance(client: &kube::Client, name: &str) -> Option<DynamicObject> {
    let instances: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), "default", &trial_app());
    retried("reading the instance", Duration::from_secs(60), || {
        instances.get_opt(name)
    })
    .await
}

/// Waits (at most `limit`) until `check` of the instance `name` holds; false when it never did.
pub async fn wait_instance(
    client: &kube::Client,
    name: &str,
    limit: Duration,
    check: impl Fn(Option<&DynamicObject>) -> bool,
) -> bool {
    let deadline = tokio::time::Instant::now() + limit;
    while tokio::time::Instant::now() < deadline {
        if check(instance(client, name).await.as_ref()) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    false
}

/// Whether an instance reports ACTIVE.
pub fn is_active(instance: Option<&DynamicObject>) -> bool {
    instance.is_some_and(|instance| instance.data["status"]["state"] == "ACTIVE")
}

/// The objects labelled as belonging to the instance `name`, as `Kind/name`.
pub async fn objects_of(client: &kube::Client, name: &str) -> Vec<String> {
    let mut found = Vec::new();
    for kind in trial_kinds() {
        let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &kind);
        let selector = ListParams::default().labels(&format!("kro.run/instance-name={name}"));
        let list = retried("listing what is left", Duration::from_secs(60), || {
            api.list(&selector)
        })
        .await;
        for object in list.items {
            found.push(format!(
                "{}/{} {:?} deleting={}",
                kind.kind,
                object.metadata.name.unwrap_or_default(),
                object.metadata.labels.unwrap_or_default(),
                object.metadata.deletion_timestamp.is_some(),
            ));
        }
    }
    found
}
