//! Fault trials against real processes: `kro apiserver --data-dir` and `kro controller` are
//! started as the user would start them and killed with `-9` at chosen moments. Shared by the
//! trial tests (a few trials) and the trial benchmark (many).

#![allow(dead_code)] // each user of the harness takes what it needs

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use kube::ResourceExt as _;
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
    extra: Vec<String>,
}

impl Server {
    /// Starts a server keeping its data under `dir`.
    pub fn start(dir: &Path) -> Server {
        Self::start_with(dir, &[])
    }

    /// Starts a server keeping its data under `dir`, with more flags (`--failure-rate`, ...).
    pub fn start_with(dir: &Path, extra: &[&str]) -> Server {
        std::fs::create_dir_all(dir).expect("the trial's directory");
        let mut server = Server {
            child: None,
            port: free_port(),
            data_dir: dir.join("data"),
            kubeconfig: dir.join("kubeconfig"),
            extra: extra.iter().map(|flag| (*flag).to_owned()).collect(),
        };
        server.spawn();
        server
    }

    fn spawn(&mut self) {
        let _ = std::fs::remove_file(&self.kubeconfig);
        let child = Command::new(env!("CARGO_BIN_EXE_kro"))
            .args(["apiserver", "--port", &self.port.to_string(), "--data-dir"])
            .arg(&self.data_dir)
            .args(&self.extra)
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

/// `kro controller` as a process of its own, logging to a file (`KRO_TRIAL_LOG` sets its
/// `KRO_LOG` filter; by default `info,kro_controller=debug`).
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
                "--health-probe-bind-address",
                "0",
                "--kubeconfig",
            ])
            .arg(&self.kubeconfig)
            .env(
                "KRO_LOG",
                std::env::var("KRO_TRIAL_LOG")
                    .unwrap_or_else(|_| "info,kro_controller=debug".to_owned()),
            )
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
/// HPA, an Ingress) in four levels. With `ready_when`, the later levels wait until the
/// Deployment is available (the embedded server's simulators make it so), which stretches an
/// instance's creation over a second or so; a real kube-apiserver has no controller-manager,
/// so there the Deployment never becomes available.
pub fn trial_rgd(ready_when: bool) -> String {
    let rgd = TRIAL_RGD.to_owned();
    if ready_when {
        rgd.replace(
            "  - id: deployment\n",
            "  - id: deployment\n    readyWhen:\n    - ${deployment.status.availableReplicas >= 1}\n",
        )
    } else {
        rgd
    }
}

const TRIAL_RGD: &str = r#"
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
///
/// # Errors
/// What went wrong when the kind is not served within a minute.
pub async fn install_trial_rgd(client: &kube::Client, ready_when: bool) -> Result<(), String> {
    let rgd: Value = serde_saphyr::from_str(&trial_rgd(ready_when)).expect("the trial RGD parses");
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
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        match instances.list(&first).await {
            Ok(_) => return Ok(()),
            Err(error) if tokio::time::Instant::now() > deadline => {
                let status = rgds
                    .get_opt("trial-apps")
                    .await
                    .ok()
                    .flatten()
                    .map(|rgd| rgd.data["status"].to_string());
                return Err(format!(
                    "the TrialApp kind is not served after 60s ({error}); the RGD's status: {status:?}"
                ));
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
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

/// The API server of a trial: `kro apiserver --data-dir`, or a real kube-apiserver with etcd.
pub enum Crashing {
    /// `kro apiserver --data-dir`.
    Embedded(Server),
    /// kube-apiserver and etcd from `scripts/controlplane.sh`.
    Real(kro_test_support::RealControlPlane),
}

impl Crashing {
    /// The kubeconfig that reaches it.
    pub fn kubeconfig(&self) -> &Path {
        match self {
            Crashing::Embedded(server) => server.kubeconfig(),
            Crashing::Real(control_plane) => control_plane.kubeconfig(),
        }
    }

    /// Kills the API server with -9 and starts it again after `down`.
    pub async fn crash(&mut self, down: Duration) {
        match self {
            Crashing::Embedded(server) => {
                server.kill();
                tokio::time::sleep(down).await;
                server.restart();
            }
            Crashing::Real(control_plane) => tokio::task::block_in_place(|| {
                control_plane
                    .restart_apiserver(down)
                    .unwrap_or_else(|error| panic!("restarting kube-apiserver: {error}"));
            }),
        }
    }
}

/// What a series of trials found; every list is empty when all went well.
#[derive(Debug, Default)]
pub struct Report {
    /// Trials run.
    pub trials: usize,
    /// Instances that did not converge (not ACTIVE with the latest spec, or never deleted).
    pub not_converged: Vec<String>,
    /// Objects left behind once their instance was gone.
    pub orphans: Vec<String>,
    /// Two objects of one instance made from the same resource of the graph.
    pub duplicates: Vec<String>,
    /// Acknowledged writes the server no longer had after a restart.
    pub lost_writes: Vec<String>,
    /// How long each trial took, in seconds.
    pub seconds: Vec<f64>,
}

impl Report {
    /// Whether nothing went wrong.
    pub fn clean(&self) -> bool {
        self.not_converged.is_empty()
            && self.orphans.is_empty()
            && self.duplicates.is_empty()
            && self.lost_writes.is_empty()
    }

    /// One line for people.
    pub fn summary(&self) -> String {
        let mut seconds = self.seconds.clone();
        seconds.sort_by(f64::total_cmp);
        let median = seconds.get(seconds.len() / 2).copied().unwrap_or(0.0);
        let worst = seconds.last().copied().unwrap_or(0.0);
        format!(
            "{} trials: {} not converged, {} orphans, {} duplicates, {} acknowledged writes lost; \
             median {median:.1} s, worst {worst:.1} s per trial",
            self.trials,
            self.not_converged.len(),
            self.orphans.len(),
            self.duplicates.len(),
            self.lost_writes.len(),
        )
    }
}

/// Objects of the instance `name` made from the same node of the graph.
async fn duplicates_of(client: &kube::Client, name: &str) -> Vec<String> {
    let mut duplicates = Vec::new();
    for kind in trial_kinds() {
        let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &kind);
        let selector = ListParams::default().labels(&format!("kro.run/instance-name={name}"));
        let list = retried("listing objects", Duration::from_secs(60), || {
            api.list(&selector)
        })
        .await;
        let mut nodes = std::collections::BTreeMap::<String, usize>::new();
        for object in &list.items {
            let node = object
                .labels()
                .get("kro.run/node-id")
                .cloned()
                .unwrap_or_default();
            *nodes.entry(node).or_default() += 1;
        }
        for (node, count) in nodes {
            if count > 1 {
                duplicates.push(format!("{name}: {count} {} from {node}", kind.kind));
            }
        }
    }
    duplicates
}

/// The API server killed with -9 while the controller creates an instance's objects (or just
/// after), restarted after a moment, and the instance deleted at once: the instance must still
/// exist after the restart (its apply was acknowledged), be deleted completely, and leave
/// nothing behind. `ready_when` as in [`trial_rgd`].
pub async fn restart_trials(
    mut server: Crashing,
    trials: usize,
    seed: u64,
    ready_when: bool,
) -> Report {
    eprintln!("seed {seed} (KRO_TRIAL_SEED reruns it)");
    let mut random = Random::new(seed);
    let kubeconfig = server.kubeconfig().to_owned();
    let client = connect(&kubeconfig).await;
    let mut controller = Controller::start(&kubeconfig);
    if let Err(error) = install_trial_rgd(&client, ready_when).await {
        panic!(
            "{error}; the controller's log ends:\n{}",
            controller.log_tail(40)
        );
    }
    let mut report = Report::default();
    for trial in 0..trials {
        let started = std::time::Instant::now();
        let name = format!("restart-{trial}");
        apply_instance(&client, &name, 1).await;
        // While the controller is still creating the instance's objects, or just after.
        tokio::time::sleep(random.between(Duration::from_millis(20), Duration::from_millis(600)))
            .await;
        server
            .crash(random.between(Duration::from_millis(200), Duration::from_millis(3000)))
            .await;
        let client = connect(&kubeconfig).await;
        if instance(&client, &name).await.is_none() {
            report
                .lost_writes
                .push(format!("trial {trial}: the instance {name}"));
        }
        report
            .duplicates
            .extend(duplicates_of(&client, &name).await);
        delete_instance(&client, &name).await;
        // A reconcile held by a request the restarted server never answers is abandoned after
        // the controller's reconcile timeout (120 s) and retried: wait longer than that.
        let gone = wait_instance(&client, &name, Duration::from_secs(180), |instance| {
            instance.is_none()
        })
        .await;
        if !gone {
            report.not_converged.push(format!(
                "trial {trial}: {name} never deleted; the controller's log ends:\n{}",
                controller.log_tail(40)
            ));
            continue;
        }
        // A late write would show up after the instance is gone.
        tokio::time::sleep(Duration::from_millis(500)).await;
        let left = objects_of(&client, &name).await;
        if !left.is_empty() {
            report.orphans.push(format!("trial {trial}: {left:?}"));
        }
        assert!(
            controller.exited().is_none(),
            "the controller exited when the server restarted"
        );
        report.trials += 1;
        report.seconds.push(started.elapsed().as_secs_f64());
    }
    controller.kill();
    report
}

/// Waits until the Deployment of `name` has `replicas`.
async fn deployment_has(client: &kube::Client, name: &str, replicas: i64, limit: Duration) -> bool {
    let deployments: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), "default", &trial_kinds()[1]);
    let deadline = tokio::time::Instant::now() + limit;
    while tokio::time::Instant::now() < deadline {
        if let Ok(Some(deployment)) = deployments.get_opt(name).await
            && deployment.data["spec"]["replicas"] == replicas
        {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    false
}

/// The controller killed with -9 at random moments of an instance's life (its creation, an
/// update, its deletion) and started again: the instance converges to its latest spec each
/// time, and once deleted leaves nothing behind.
pub async fn controller_crash_trials(server: &Server, trials: usize, seed: u64) -> Report {
    eprintln!("seed {seed} (KRO_TRIAL_SEED reruns it)");
    let mut random = Random::new(seed);
    let client = server.client().await;
    let mut controller = Controller::start(server.kubeconfig());
    if let Err(error) = install_trial_rgd(&client, true).await {
        panic!(
            "{error}; the controller's log ends:\n{}",
            controller.log_tail(40)
        );
    }
    let limit = Duration::from_secs(60);
    let mut report = Report::default();
    for trial in 0..trials {
        let started = std::time::Instant::now();
        let name = format!("crash-{trial}");
        apply_instance(&client, &name, 1).await;
        tokio::time::sleep(random.between(Duration::ZERO, Duration::from_millis(1500))).await;
        controller.restart();
        if !wait_instance(&client, &name, limit, is_active).await {
            report.not_converged.push(format!(
                "trial {trial}: {name} not ACTIVE after a crash during its creation"
            ));
            continue;
        }
        apply_instance(&client, &name, 2).await;
        tokio::time::sleep(random.between(Duration::ZERO, Duration::from_millis(500))).await;
        controller.restart();
        if !deployment_has(&client, &name, 2, limit).await {
            report.not_converged.push(format!(
                "trial {trial}: {name}: the update made before a crash was never applied"
            ));
            continue;
        }
        report
            .duplicates
            .extend(duplicates_of(&client, &name).await);
        delete_instance(&client, &name).await;
        tokio::time::sleep(random.between(Duration::ZERO, Duration::from_millis(300))).await;
        controller.restart();
        if !wait_instance(&client, &name, limit, |instance| instance.is_none()).await {
            report.not_converged.push(format!(
                "trial {trial}: {name} never deleted after a crash during its deletion"
            ));
            continue;
        }
        let left = objects_of(&client, &name).await;
        if !left.is_empty() {
            report.orphans.push(format!("trial {trial}: {left:?}"));
        }
        report.trials += 1;
        report.seconds.push(started.elapsed().as_secs_f64());
    }
    controller.kill();
    report
}

/// How long an RGD and an instance of it take to converge: from applying the RGD until the
/// instance is ACTIVE, then from deleting the instance until it is gone. `None` when either
/// takes longer than `limit`.
pub async fn time_to_converge(server: &Server, limit: Duration) -> Option<(Duration, Duration)> {
    let client = server.client().await;
    let mut controller = Controller::start(server.kubeconfig());
    let started = std::time::Instant::now();
    install_trial_rgd(&client, true).await.ok()?;
    apply_instance(&client, "steady", 1).await;
    let active = wait_instance(&client, "steady", limit, is_active).await;
    let created = started.elapsed();
    let started = std::time::Instant::now();
    delete_instance(&client, "steady").await;
    let gone = wait_instance(&client, "steady", limit, |instance| instance.is_none()).await;
    let deleted = started.elapsed();
    let exited = controller.exited();
    controller.kill();
    assert!(exited.is_none(), "the controller exited: {exited:?}");
    (active && gone).then_some((created, deleted))
}
