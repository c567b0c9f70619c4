//! The platform team's database, as a composition: a Postgres Deployment and the Service in
//! front of it. Its status is the contract other compositions read: whether it is ready, its
//! host and a connection string. Nested in `full_stack.rs`, referenced by `teams.rs`.

use kro_compose::k8s::api::core::v1::{Container, ContainerPort, EnvVar};
use kro_compose::{Composition, KroSchema, fmt_cel, spec};
use serde::{Deserialize, Serialize};

use super::workloads::{deployment, service};

/// What a team asks of a database.
#[derive(KroSchema, Serialize)]
pub struct DatabaseSpec {
    /// The name of the Deployment and, with `-db`, of its Service.
    pub name: String,
    /// The Postgres image.
    #[kro(default = "postgres:16")]
    pub image: String,
}

/// What a database tells the teams that use it.
#[derive(Debug, KroSchema, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DatabaseStatus {
    /// Whether Postgres has a ready pod.
    pub ready: bool,
    /// The Service's cluster IP.
    pub host: String,
    /// Where to connect.
    pub connection_string: String,
}

/// The database composition.
pub fn database() -> Composition<DatabaseSpec, DatabaseStatus> {
    let db = spec::<DatabaseSpec>();
    let mut database = Composition::new("database", "Database");
    let postgres = database.add(
        "postgres",
        deployment(
            db.name(),
            &db.name(),
            1,
            Container {
                name: "postgres".into(),
                image: db.image().into(),
                ports: [ContainerPort {
                    container_port: 5432.into(),
                    ..Default::default()
                }]
                .into(),
                env: [EnvVar {
                    name: "POSTGRES_DB".into(),
                    value: "app".into(),
                    ..Default::default()
                }]
                .into(),
                ..Default::default()
            },
        ),
    );
    let endpoint = database.add(
        "service",
        service(fmt_cel!("{}-db", db.name()), &db.name(), 5432),
    );
    database.status(DatabaseStatusValues {
        ready: postgres
            .status()
            .ready_replicas()
            .or_default(0)
            .gt(0)
            .into(),
        host: endpoint.spec().cluster_ip().into(),
        connection_string: fmt_cel!(
            "postgresql://{}.{}:5432/app",
            endpoint.metadata().name(),
            endpoint.metadata().namespace()
        )
        .into(),
    });
    database
}
