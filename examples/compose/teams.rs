//! The seed's multi-team example: the platform team's Database composition
//! (`shared/database.rs`), and two app teams whose compositions each reference one Database
//! instance, `shared-postgres`, through its typed status: the web team reads its connection
//! string and readiness, the worker team its host. `cargo run -p kro-compose --example teams`
//! prints the three RGDs; `teams-database.yaml`, `teams-web.yaml` and `teams-workers.yaml`
//! beside this file have the same graphs and CRDs.

#[path = "shared/database.rs"]
pub mod database;
#[path = "shared/workloads.rs"]
mod workloads;

use database::{DatabaseSpec, DatabaseStatus};
use kro_compose::k8s::api::core::v1::{Container, EnvVar};
use kro_compose::{Composition, KroSchema, Resource, instance_name, spec};
use workloads::deployment;

/// The Database instance both teams use.
const SHARED_DATABASE: &str = "shared-postgres";

/// What the web team's app is asked for.
#[derive(KroSchema)]
pub struct WebSpec {
    /// The web server's image.
    #[kro(default = "nginx:1.27")]
    pub image: String,
}

/// What the web team's app reports.
#[derive(KroSchema)]
#[allow(dead_code)]
pub struct WebStatus {
    /// Whether the app and the database are ready.
    pub ready: bool,
    /// Whether the database is.
    pub database_connected: bool,
}

/// What the worker team's pool is asked for.
#[derive(KroSchema)]
pub struct WorkersSpec {
    /// The worker image.
    #[kro(default = "busybox:1.36")]
    pub image: String,
}

/// What the worker team's pool reports.
#[derive(KroSchema)]
#[allow(dead_code)]
pub struct WorkersStatus {
    /// Whether the workers are ready.
    pub workers_ready: bool,
    /// Whether they can process jobs: workers and database ready.
    pub can_process_jobs: bool,
}

/// A reference to the shared Database instance, typed by the platform team's structs.
fn shared_database<S: KroSchema, T: KroSchema>(
    composition: &mut Composition<S, T>,
) -> Resource<kro_compose::InstanceRef<DatabaseSpec, DatabaseStatus>> {
    composition.external_instance("database", &database::database(), SHARED_DATABASE, None)
}

/// The web team's composition.
pub fn web() -> Composition<WebSpec, WebStatus> {
    let name = instance_name();
    let mut web = Composition::new("team-web", "TeamWeb");
    let database = shared_database(&mut web);
    let app = web.add(
        "app",
        deployment(
            &name,
            &name,
            2,
            Container {
                name: "web".into(),
                image: spec::<WebSpec>().image().into(),
                env: [EnvVar {
                    name: "DATABASE_URL".into(),
                    value: database.status().connection_string().into(),
                    ..Default::default()
                }]
                .into(),
                ..Default::default()
            },
        ),
    );
    let app_ready = app.status().ready_replicas().or_default(0).gt(0);
    web.status(WebStatusValues {
        ready: app_ready.and(database.status().ready()).into(),
        database_connected: database.status().ready().into(),
    });
    web
}

/// The worker team's composition.
pub fn workers() -> Composition<WorkersSpec, WorkersStatus> {
    let name = instance_name();
    let mut workers = Composition::new("team-workers", "TeamWorkers");
    let database = shared_database(&mut workers);
    let pool = workers.add(
        "workers",
        deployment(
            &name,
            &name,
            3,
            Container {
                name: "worker".into(),
                image: spec::<WorkersSpec>().image().into(),
                env: [EnvVar {
                    name: "DATABASE_HOST".into(),
                    value: database.status().host().into(),
                    ..Default::default()
                }]
                .into(),
                ..Default::default()
            },
        ),
    );
    let ready = pool.status().ready_replicas().or_default(0).gt(0);
    workers.status(WorkersStatusValues {
        workers_ready: ready.clone().into(),
        can_process_jobs: database.status().ready().and(ready).into(),
    });
    workers
}

fn main() -> Result<(), kro_compose::ComposeError> {
    print!("{}", database::database().to_rgd_yaml()?);
    print!("---\n{}", web().to_rgd_yaml()?);
    print!("---\n{}", workers().to_rgd_yaml()?);
    Ok(())
}
