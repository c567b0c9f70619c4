//! The seed's web application with its database, as one composition: Postgres and its Service,
//! the web Deployment reading the database's address from that Service, and the web Service.
//! The instance is ACTIVE once the database has a ready pod and every web server is ready, so
//! its status says the same whoever deploys it: the controller holds a resource without
//! readyWhen ready as soon as it exists, and direct deploy waits for its rollout.
//! `cargo run -p kro-compose --example web_with_database` prints the RGD, which has the same
//! graph and CRD as `web-with-database.yaml` beside this file.

#[path = "shared/workloads.rs"]
mod workloads;

use kro_compose::k8s::api::core::v1::{Container, EnvVar};
use kro_compose::{Composition, KroSchema, fmt_cel, instance_name, spec};
use serde::{Deserialize, Serialize};
use workloads::{deployment, service};

/// What a web app with a database is asked for.
#[derive(KroSchema, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WebAppSpec {
    /// The web server's image.
    #[kro(default = "nginx:1.27")]
    pub image: String,
    /// How many web servers.
    #[kro(default = 2, minimum = 1)]
    pub replicas: i64,
    /// The database's image.
    #[kro(default = "postgres:16")]
    pub database_image: String,
}

/// What an instance reports.
#[derive(Debug, PartialEq, KroSchema, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WebAppStatus {
    /// Where the web app answers.
    pub url: String,
    /// How many web servers are ready.
    pub ready_replicas: i64,
    /// Whether the database has a ready pod.
    pub database_ready: bool,
}

/// The composition.
pub fn composition() -> Composition<WebAppSpec, WebAppStatus> {
    let app = spec::<WebAppSpec>();
    let name = instance_name();
    let database_name = fmt_cel!("{}-db", name);
    let mut webapp = Composition::new("web-with-database", "WebAppWithDatabase");
    let postgres = webapp.add(
        "database",
        deployment(
            &database_name,
            &database_name,
            1,
            Container {
                name: "postgres".into(),
                image: app.database_image().into(),
                ..Default::default()
            },
        ),
    );
    let database_ready = postgres.status().ready_replicas().or_default(0).gt(0);
    webapp.ready_when(&postgres, &database_ready);
    let database_service = webapp.add(
        "databaseService",
        service(postgres.metadata().name(), &database_name, 5432),
    );
    let web = webapp.add(
        "app",
        deployment(
            &name,
            &name,
            app.replicas(),
            Container {
                name: "web".into(),
                image: app.image().into(),
                env: [EnvVar {
                    name: "DATABASE_URL".into(),
                    value: fmt_cel!(
                        "postgresql://{}:5432/app",
                        database_service.metadata().name()
                    )
                    .into(),
                    ..Default::default()
                }]
                .into(),
                ..Default::default()
            },
        ),
    );
    let ready = web.status().ready_replicas().or_default(0);
    webapp.ready_when(&web, &ready.eq(app.replicas()));
    let web_service = webapp.add("appService", service(web.metadata().name(), &name, 80));
    webapp.status(WebAppStatusValues {
        url: fmt_cel!("http://{}", web_service.metadata().name()).into(),
        ready_replicas: ready.into(),
        database_ready: database_ready.into(),
    });
    webapp
}

fn main() -> Result<(), kro_compose::ComposeError> {
    print!("{}", composition().to_rgd_yaml()?);
    Ok(())
}
