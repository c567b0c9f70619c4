//! The server: the router (its fixed endpoints for version, health, discovery and OpenAPI in
//! `endpoints`), bearer-token authentication, the test knobs' middleware, and starting it on a
//! socket (in a task of the caller's runtime, or on a thread of its own).

mod endpoints;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use axum::Router;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use http::header;
use tokio::net::TcpListener;
use tokio::sync::oneshot;

use crate::config::ServerConfig;
use crate::error::ApiError;
use crate::objects;
use crate::registry::Registry;
use crate::state::AppState;
use crate::storage::Store;

use self::endpoints::{
    api_root, apis_root, health, openapi_document, openapi_index, openapi_v2_document,
    request_counts, reset_request_counts, version,
};

/// A kubeconfig for a server at `url` (context `kro`, namespace `default`), trusting
/// `authority_pem` when given.
pub fn kubeconfig(url: &str, token: Option<&str>, authority_pem: Option<&str>) -> String {
    use base64::Engine as _;
    let authority = authority_pem
        .map(|pem| {
            format!(
                "    certificate-authority-data: {}\n",
                base64::engine::general_purpose::STANDARD.encode(pem)
            )
        })
        .unwrap_or_default();
    let user = match token {
        Some(token) => format!("  user:\n    token: {token}\n"),
        None => "  user: {}\n".to_owned(),
    };
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: kro\n  cluster:\n    server: {url}\n{authority}\
         contexts:\n- name: kro\n  context:\n    cluster: kro\n    user: kro\n    namespace: default\n\
         current-context: kro\nusers:\n- name: kro\n{user}"
    )
}

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The address could not be bound.
    #[error("cannot listen on {address}: {source}")]
    Bind {
        /// The address.
        address: SocketAddr,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The serving certificate could not be made.
    #[error(transparent)]
    Tls(#[from] crate::tls::TlsError),
    /// The credentials could not be kept in the data directory.
    #[error("cannot write {path}: {source}")]
    Credentials {
        /// The file.
        path: std::path::PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The persistent store could not be opened.
    #[error(transparent)]
    Persistence(#[from] crate::storage::PersistenceError),
    /// The vendored discovery data did not load (a build defect).
    #[error(transparent)]
    Discovery(#[from] crate::registry::DiscoveryDataError),
    /// The thread of a background server could not start its runtime.
    #[error("cannot start the server's runtime: {0}")]
    Runtime(#[source] std::io::Error),
    /// The simulated controllers could not start.
    #[error(transparent)]
    Simulators(#[from] crate::simulators::SimulatorStartError),
}

/// A server listening on a socket.
pub struct RunningServer {
    address: SocketAddr,
    token: Option<String>,
    authority_pem: Option<String>,
    shutdown: Option<oneshot::Sender<()>>,
    /// The task serving connections (for a server started on the caller's runtime).
    served: Option<tokio::task::JoinHandle<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
    state: Arc<AppState>,
}

/// How long [`RunningServer::shutdown`] waits for requests in flight to finish.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

impl RunningServer {
    /// The address it listens on.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// `https://127.0.0.1:<port>`, or `http://` without TLS.
    pub fn url(&self) -> String {
        let scheme = if self.authority_pem.is_some() {
            "https"
        } else {
            "http"
        };
        format!("{scheme}://{}", self.address)
    }

    /// The PEM of the certificate authority that signed the serving certificate (with TLS).
    pub fn authority_pem(&self) -> Option<&str> {
        self.authority_pem.as_deref()
    }

    /// The bearer token, if authentication is on.
    pub fn token(&self) -> Option<&str> {
        self.token.as_deref()
    }

    /// A kubeconfig for this server (context `kro`, namespace `default`).
    pub fn kubeconfig(&self) -> String {
        kubeconfig(
            &self.url(),
            self.token.as_deref(),
            self.authority_pem.as_deref(),
        )
    }

    /// Drops the change log, so watches resuming from earlier revisions get 410 (test knob).
    pub fn compact(&self) {
        self.state.store.compact();
    }

    /// Ends every open watch with an in-stream `410 Expired` error event, as a real server
    /// does when a watcher falls too far behind; clients must re-list (test knob).
    pub fn expire_watches(&self) {
        self.state.watch_expiry.send_modify(|epoch| *epoch += 1);
    }

    /// Adds `latency` before every resource request is handled (test knob; zero turns it off).
    pub fn set_latency(&self, latency: Duration) {
        self.state.knobs.set_latency(latency);
    }

    /// Delivers every watch event `lag` after the change it tells of (test knob; zero turns it
    /// off): a watch cache running behind, so clients' caches lag their own writes.
    pub fn set_watch_lag(&self, lag: Duration) {
        self.state.knobs.set_watch_lag(lag);
    }

    /// Adds `delay` before every request naming an object called `name` is handled, whatever
    /// its kind and namespace (test knob; zero turns it off): one slow object among many.
    pub fn delay_object(&self, name: &str, delay: Duration) {
        self.state.knobs.delay_object(name, delay);
    }

    /// Fails a chosen request with a status code (test knob).
    pub fn inject_failure(&self, failure: crate::knobs::InjectedFailure) {
        self.state.knobs.inject(failure);
    }

    /// Drops the failures injected and not yet fired.
    pub fn clear_failures(&self) {
        self.state.knobs.clear_failures();
    }

    /// Fails a seeded random fraction of resource requests from now on (test knob), replacing
    /// any rate in force; returns the seed drawn from (the one asked for, or a random one, to
    /// replay the trial with).
    pub fn set_failure_rate(&self, rate: crate::knobs::FailureRate) -> u64 {
        let seed = self.state.knobs.set_failure_rate(rate);
        tracing::info!(seed, "failure rate set");
        seed
    }

    /// Stops failing a random fraction of requests.
    pub fn clear_failure_rate(&self) {
        self.state.knobs.clear_failure_rate();
    }

    /// The failure rate in force and the seed it draws from.
    pub fn failure_rate(&self) -> Option<(crate::knobs::FailureRate, u64)> {
        self.state.knobs.failure_rate()
    }

    /// How many watches are open (each holds a task and a buffer until its client goes).
    pub fn open_watches(&self) -> usize {
        self.state.watches.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// The latency added to every resource request.
    pub fn latency(&self) -> Duration {
        self.state.knobs.latency()
    }

    /// Resource requests received so far by client (`User-Agent`), verb and resource, with
    /// how many were failed by the knobs (test knob; also served at `/debug/kro/requests`).
    pub fn request_counts_by_client(&self) -> Vec<crate::knobs::RequestCount> {
        self.state.knobs.counts_by_client()
    }

    /// Resource requests served so far, by (verb, resource); `resource` carries
    /// `/<subresource>` for subresources (test knob).
    pub fn request_counts(&self) -> std::collections::BTreeMap<(String, String), u64> {
        self.state.knobs.counts()
    }

    /// How many requests with `verb` were served, over every resource.
    pub fn requests_with_verb(&self, verb: &str) -> u64 {
        self.state
            .knobs
            .counts()
            .iter()
            .filter(|((counted, _), _)| counted == verb)
            .map(|(_, count)| count)
            .sum()
    }

    /// Starts counting from zero.
    pub fn reset_request_counts(&self) {
        self.state.knobs.reset_counts();
    }

    /// The current resourceVersion of the store.
    pub fn revision(&self) -> u64 {
        self.state.store.revision()
    }

    /// Stops serving and waits for the server to end.
    pub fn stop(mut self) {
        self.stop_inner();
    }

    /// Stops gracefully: stops accepting connections, ends open watches (their clients see
    /// the stream end, as when kube-apiserver stops), waits up to 10 s (`SHUTDOWN_GRACE`) for the
    /// requests in flight, and lets the store close its database once the last user of it is
    /// gone (every acknowledged write is already durable).
    pub async fn shutdown(mut self) {
        self.state.stopping.send_replace(true);
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        if let Some(served) = self.served.take()
            && tokio::time::timeout(SHUTDOWN_GRACE, served).await.is_err()
        {
            tracing::warn!(
                grace = ?SHUTDOWN_GRACE,
                "requests still in flight when the server stopped"
            );
        }
    }

    fn stop_inner(&mut self) {
        self.state.stopping.send_replace(true);
        if let Some(served) = self.served.take() {
            // Dropping the handle would leave the task running unowned; it ends on the signal
            // sent below.
            drop(served);
        }
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for RunningServer {
    fn drop(&mut self) {
        self.stop_inner();
    }
}

async fn build_state(config: ServerConfig) -> Result<Arc<AppState>, StartError> {
    let store = match &config.data_dir {
        // Opening reads the whole database: off the async runtime.
        Some(directory) => {
            let (limits, directory) = (config.store_limits, directory.clone());
            tokio::task::spawn_blocking(move || Store::open(limits, &directory))
                .await
                .map_err(|error| StartError::Runtime(std::io::Error::other(error)))??
        }
        None => Store::new(config.store_limits),
    };
    let state = Arc::new(AppState {
        store,
        registry: RwLock::new(Registry::built_in()?),
        watches: AtomicUsize::new(0),
        watch_expiry: tokio::sync::watch::Sender::new(0),
        stopping: tokio::sync::watch::Sender::new(false),
        service_ips: Mutex::new(std::collections::BTreeSet::new()),
        knobs: crate::knobs::Knobs::default(),
        validators: Mutex::new(HashMap::new()),
        openapi: Mutex::new(HashMap::new()),
        openapi_v2: Mutex::new(None),
        config,
    });
    state.knobs.set_latency(state.config.latency);
    if let Some(rate) = state.config.failure_rate.clone() {
        let seed = state.knobs.set_failure_rate(rate);
        tracing::info!(seed, "failure rate set");
    }
    state.bootstrap().await;
    crate::defaults::seed_service_ips(&state);
    // Definitions found in a persisted store are served again.
    let definitions: Vec<String> = state
        .store
        .list(
            "apiextensions.k8s.io",
            "customresourcedefinitions",
            None,
            false,
        )
        .objects
        .iter()
        .filter_map(|crd| objects::meta_str(crd, "name").map(str::to_owned))
        .collect();
    for name in definitions {
        crate::crd::reconcile(&state, &name).await;
    }
    Ok(state)
}

/// The TLS credentials and token: those kept in the data directory when they fit, else new
/// ones (kept there for the next start).
fn credentials(
    config: &ServerConfig,
    address: std::net::IpAddr,
) -> Result<crate::tls::Credentials, StartError> {
    let Some(directory) = &config.data_dir else {
        return Ok(crate::tls::Credentials::generate(
            address,
            config.token.clone(),
        )?);
    };
    let path = directory.join("credentials.json");
    if let Ok(text) = std::fs::read_to_string(&path)
        && let Ok(stored) = serde_json::from_str::<crate::tls::Credentials>(&text)
        && stored.address == address.to_string()
        && stored.token.is_some() == config.token.is_some()
    {
        // Kept credentials are the owner's alone, whatever mode they were found with.
        crate::storage::private_directory(directory)
            .and_then(|()| crate::storage::private_file(&path))
            .map_err(|source| StartError::Credentials {
                path: path.clone(),
                source,
            })?;
        return Ok(stored);
    }
    let fresh = crate::tls::Credentials::generate(address, config.token.clone())?;
    crate::storage::private_directory(directory)
        .and_then(|()| write_private(&path, &serde_json::to_string(&fresh).unwrap_or_default()))
        .map_err(|source| StartError::Credentials { path, source })?;
    Ok(fresh)
}

/// Writes a file readable by its owner only (mode 0600 on Unix): credentials, and kubeconfigs
/// holding the bearer token. The contents go to a new file beside `path` that then takes its
/// place, so a symlink at `path` is replaced, never followed: its target is not rewritten.
///
/// # Errors
/// The I/O error of creating, writing or renaming the file.
pub fn write_private(path: &std::path::Path, contents: &str) -> std::io::Result<()> {
    use std::io::Write;
    let name = path.file_name().ok_or_else(|| {
        std::io::Error::new(std::io::ErrorKind::InvalidInput, "the path names no file")
    })?;
    let mut temporary_name = std::ffi::OsString::from(".");
    temporary_name.push(name);
    temporary_name.push(format!(".{}.tmp", std::process::id()));
    let temporary = path.with_file_name(temporary_name);
    // A leftover of an earlier run (or anything planted there) goes; a link is removed itself.
    match std::fs::remove_file(&temporary) {
        Ok(()) => {}
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(error) => return Err(error),
    }
    let mut options = std::fs::OpenOptions::new();
    // create_new: O_EXCL, which fails on any existing path, a symlink included.
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let written = options
        .open(&temporary)
        .and_then(|mut file| file.write_all(contents.as_bytes()))
        .and_then(|()| std::fs::rename(&temporary, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    written
}

/// Starts the server on the current tokio runtime.
///
/// # Errors
/// [`StartError`] when the address cannot be bound.
pub async fn start(config: ServerConfig) -> Result<RunningServer, StartError> {
    let address = config.address;
    let listener = TcpListener::bind(address)
        .await
        .map_err(|source| StartError::Bind { address, source })?;
    let local = listener
        .local_addr()
        .map_err(|source| StartError::Bind { address, source })?;
    let mut config = config;
    let tls = if config.tls || config.data_dir.is_some() {
        let credentials = credentials(&config, local.ip())?;
        // A persistent server keeps its token across restarts.
        if config.token.is_some() {
            config.token.clone_from(&credentials.token);
        }
        config.tls.then(|| credentials.serving()).transpose()?
    } else {
        None
    };
    let token = config.token.clone();
    let simulators = config.simulators.clone();
    let knobs = config.simulation.clone();
    let state = build_state(config).await?;
    let (shutdown, stopped) = oneshot::channel::<()>();
    // Turns true when the server stops; the simulators stop with it.
    let (stop_simulators, simulators_stop) = tokio::sync::watch::channel(false);
    let app = routes(Arc::clone(&state));
    let authority_pem = tls.as_ref().map(|tls| tls.authority_pem.clone());
    let served = match tls {
        Some(tls) => {
            let listener = crate::tls::TlsListener::new(listener, tls.config)
                .map_err(|source| StartError::Bind { address, source })?;
            tokio::spawn(crate::serve::serve(listener, app, async move {
                let _ = stopped.await;
                let _ = stop_simulators.send(true);
            }))
        }
        None => tokio::spawn(crate::serve::serve(listener, app, async move {
            let _ = stopped.await;
            let _ = stop_simulators.send(true);
        })),
    };
    let server = RunningServer {
        address: local,
        token,
        authority_pem,
        shutdown: Some(shutdown),
        served: Some(served),
        thread: None,
        state,
    };
    crate::simulators::spawn(&simulators, &knobs, &server.kubeconfig(), simulators_stop).await?;
    Ok(server)
}

/// Starts the server on a thread with its own runtime (for synchronous callers and tests).
///
/// # Errors
/// [`StartError`] when the runtime cannot start or the address cannot be bound.
pub fn start_in_background(config: ServerConfig) -> Result<RunningServer, StartError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(StartError::Runtime)?;
    let (ready, started) = std::sync::mpsc::channel();
    let thread = std::thread::Builder::new()
        .name("kro-apiserver".to_owned())
        .spawn(move || {
            runtime.block_on(async move {
                match start(config).await {
                    Ok(mut server) => {
                        let stopped = server.shutdown.take();
                        let (inner_shutdown, inner_stopped) = oneshot::channel::<()>();
                        let _ = ready.send(Ok((
                            server.address,
                            server.token.clone(),
                            server.authority_pem.clone(),
                            Arc::clone(&server.state),
                            inner_shutdown,
                        )));
                        let _ = inner_stopped.await;
                        server.shutdown = stopped;
                        server.shutdown().await;
                    }
                    Err(error) => {
                        let _ = ready.send(Err(error));
                    }
                }
            });
        })
        .map_err(StartError::Runtime)?;
    match started.recv() {
        Ok(Ok((address, token, authority_pem, state, shutdown))) => Ok(RunningServer {
            address,
            token,
            authority_pem,
            shutdown: Some(shutdown),
            served: None,
            thread: Some(thread),
            state,
        }),
        Ok(Err(error)) => Err(error),
        Err(_) => Err(StartError::Runtime(std::io::Error::other(
            "the server thread ended before it started",
        ))),
    }
}

/// The server's shared state, without a socket: what [`router`] serves.
#[derive(Clone)]
pub struct ServerState(Arc<AppState>);

impl ServerState {
    /// Builds the state [`start`] serves: the store (persistent in `config.data_dir` when
    /// set), the built-in resource types, the default namespaces, and the definitions found
    /// in a persistent store. No simulated controllers run (they need a socket to talk to).
    ///
    /// # Errors
    /// [`StartError`] when the persistent store or the vendored discovery data cannot be read.
    pub async fn new(config: ServerConfig) -> Result<Self, StartError> {
        Ok(ServerState(build_state(config).await?))
    }
}

impl std::fmt::Debug for ServerState {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("ServerState")
            .field("store", &self.0.store)
            .finish_non_exhaustive()
    }
}

/// The whole HTTP API as an axum [`Router`]: version, health, discovery, OpenAPI and the
/// resource API, behind bearer-token authentication (when the configuration has a token),
/// the body limit and the test knobs. [`start`] serves it on a socket; tests can drive it in
/// process with `tower::ServiceExt::oneshot`, with no port.
pub fn router(state: ServerState) -> Router {
    routes(state.0)
}

fn routes(state: Arc<AppState>) -> Router {
    let limit = state.config.max_body_bytes;
    Router::new()
        .route("/version", get(version))
        .route("/healthz", get(health))
        .route("/livez", get(health))
        .route("/readyz", get(health))
        .route("/api", get(api_root))
        .route("/apis", get(apis_root))
        .route("/openapi/v2", get(openapi_v2_document))
        .route("/openapi/v3", get(openapi_index))
        .route("/openapi/v3/{*path}", get(openapi_document))
        .route(
            "/debug/kro/requests",
            get(request_counts).delete(reset_request_counts),
        )
        .route(
            "/apis/authentication.k8s.io/{version}/selfsubjectreviews",
            axum::routing::post(self_subject_review),
        )
        .fallback(crate::handlers::resource_request)
        .layer(DefaultBodyLimit::max(limit))
        .layer(middleware::from_fn_with_state(
            Arc::clone(&state),
            crate::protobuf::negotiation::negotiate,
        ))
        .layer(middleware::from_fn_with_state(
            Arc::clone(&state),
            apply_knobs,
        ))
        .layer(middleware::from_fn_with_state(
            Arc::clone(&state),
            authenticate,
        ))
        .with_state(state)
}

/// Checks the bearer token (when the server has one) and settles who the request acts as
/// ([`UserInfo`](crate::identity::UserInfo), in the request's extensions): the holder of the
/// server's credentials, or whom it impersonates.
async fn authenticate(
    State(state): State<Arc<AppState>>,
    mut request: Request,
    next: Next,
) -> Response {
    if let Some(token) = &state.config.token {
        let presented = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.strip_prefix("Bearer "));
        // Health endpoints answer without credentials, as kube-apiserver's do for probes.
        let path = request.uri().path();
        let open = matches!(path, "/healthz" | "/livez" | "/readyz");
        if !open && !presented.is_some_and(|presented| constant_time_eq(presented, token)) {
            return ApiError::unauthorized().into_response();
        }
    }
    // Authenticated (or no credentials to check): who the request acts as.
    match crate::identity::UserInfo::acting_as(
        crate::identity::UserInfo::admin(),
        request.headers(),
    ) {
        Ok(user) => {
            request.extensions_mut().insert(user);
        }
        Err(message) => {
            // kube-apiserver's impersonation filter answers with a plain-text 500 (its
            // `responsewriters.InternalError`), not a Status.
            let uri = request
                .uri()
                .path_and_query()
                .map_or_else(|| request.uri().path().to_owned(), ToString::to_string);
            let mut response = Response::new(axum::body::Body::from(format!(
                "Internal Server Error: {uri:?}: {message}\n"
            )));
            *response.status_mut() = http::StatusCode::INTERNAL_SERVER_ERROR;
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                http::HeaderValue::from_static("text/plain; charset=utf-8"),
            );
            response.headers_mut().insert(
                "x-content-type-options",
                http::HeaderValue::from_static("nosniff"),
            );
            return response;
        }
    }
    next.run(request).await
}

/// `kubectl auth whoami`: a `SelfSubjectReview` (`authentication.k8s.io` v1, or the v1beta1
/// and v1alpha1 that kubectl 1.27 and older ask for) with the user the request acts as.
async fn self_subject_review(
    axum::extract::Path(version): axum::extract::Path<String>,
    request: Request,
) -> Response {
    if !matches!(version.as_str(), "v1" | "v1beta1" | "v1alpha1") {
        return ApiError::no_such_path().into_response();
    }
    let user = request
        .extensions()
        .get::<crate::identity::UserInfo>()
        .cloned()
        .unwrap_or_else(crate::identity::UserInfo::admin);
    let review = serde_json::json!({
        "kind": "SelfSubjectReview",
        "apiVersion": format!("authentication.k8s.io/{version}"),
        "metadata": {"creationTimestamp": crate::objects::now()},
        "status": {"userInfo": user.to_json()},
    });
    (http::StatusCode::CREATED, axum::Json(review)).into_response()
}

/// Counts resource requests, delays them and fails the chosen ones (test knobs); the
/// simulated controllers' requests are left alone.
async fn apply_knobs(State(state): State<Arc<AppState>>, request: Request, next: Next) -> Response {
    if request
        .headers()
        .contains_key(crate::simulators::SIMULATOR_HEADER)
    {
        return next.run(request).await;
    }
    let Some(kind) = crate::knobs::classify(
        request.method(),
        request.uri().path(),
        request.uri().query(),
    ) else {
        return next.run(request).await;
    };
    let latency = state.knobs.latency()
        + state
            .knobs
            .object_delay(request.uri().path())
            .unwrap_or_default();
    if !latency.is_zero() {
        tokio::time::sleep(latency).await;
    }
    let client = request
        .headers()
        .get(header::USER_AGENT)
        .and_then(|value| value.to_str().ok())
        .unwrap_or("unknown");
    if let Some(code) = state.knobs.observe(&kind, client) {
        return crate::knobs::injected_error(code, &kind).into_response();
    }
    next.run(request).await
}

fn constant_time_eq(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    fn mode(path: &std::path::Path) -> u32 {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(path)
            .expect("metadata")
            .permissions()
            .mode()
            & 0o777
    }

    #[cfg(unix)]
    #[test]
    fn a_private_file_replaces_a_symlink_instead_of_writing_through_it() {
        let directory = tempfile::tempdir().expect("a directory");
        let target = directory.path().join("target");
        std::fs::write(&target, "keep").expect("written");
        let link = directory.path().join("kubeconfig");
        std::os::unix::fs::symlink(&target, &link).expect("a symlink");
        write_private(&link, "secret").expect("written");
        assert_eq!(std::fs::read_to_string(&target).expect("read"), "keep");
        assert!(
            !std::fs::symlink_metadata(&link)
                .expect("metadata")
                .is_symlink()
        );
        assert_eq!(std::fs::read_to_string(&link).expect("read"), "secret");
        assert_eq!(mode(&link), 0o600);
        // Written again over itself, and nothing left beside it.
        write_private(&link, "again").expect("written");
        assert_eq!(
            std::fs::read_dir(directory.path()).expect("listed").count(),
            2
        );
    }

    #[cfg(unix)]
    #[test]
    fn kept_credentials_found_readable_by_others_are_tightened() {
        use std::os::unix::fs::PermissionsExt;
        let directory = tempfile::tempdir().expect("a directory");
        let config = ServerConfig {
            data_dir: Some(directory.path().to_path_buf()),
            token: Some("t".to_owned()),
            ..ServerConfig::default()
        };
        let address = std::net::IpAddr::from([127, 0, 0, 1]);
        let first = credentials(&config, address).expect("made");
        let path = directory.path().join("credentials.json");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).expect("loosened");
        let kept = credentials(&config, address).expect("kept");
        assert_eq!(kept.token, first.token, "the same credentials");
        assert_eq!(mode(&path), 0o600);
    }
}
