//! A nested composition: a full stack is an app with its own database, the database being the
//! platform team's composition (`shared/database.rs`) used inside this one. Its resources join
//! the graph as `databasePostgres` and `databaseService`, its spec is given from the stack's,
//! and its status fields are read as the expressions they stand for.
//! `cargo run -p kro-compose --example full_stack` prints the RGD, which has the same graph and
//! CRD as `full-stack.yaml` beside this file.

#[path = "shared/database.rs"]
mod database;
#[path = "shared/workloads.rs"]
mod workloads;

use database::DatabaseSpecValues;
use kro_compose::k8s::api::core::v1::{Container, EnvVar};
use kro_compose::{Composition, KroSchema, Value, fmt_cel, instance_name, spec};
use workloads::{deployment, service};

/// What a full stack is asked for.
#[derive(KroSchema)]
pub struct FullStackSpec {
    /// The app's image.
    #[kro(default = "nginx:1.27")]
    pub image: String,
}

/// What an instance reports.
#[derive(KroSchema)]
#[allow(dead_code)]
pub struct FullStackStatus {
    /// Where the app answers.
    pub url: String,
    /// Where the app's database is.
    pub database: String,
    /// Whether the app and its database are ready.
    pub ready: bool,
}

/// The composition.
pub fn composition() -> Composition<FullStackSpec, FullStackStatus> {
    let stack = spec::<FullStackSpec>();
    let name = instance_name();
    let mut full_stack = Composition::new("full-stack", "FullStack");
    let store = full_stack.nest(
        "database",
        &database::database(),
        DatabaseSpecValues {
            name: fmt_cel!("{}-db", name).into(),
            image: Value::Unset,
        },
    );
    let app = full_stack.add(
        "app",
        deployment(
            &name,
            &name,
            1,
            Container {
                name: "app".into(),
                image: stack.image().into(),
                env: [EnvVar {
                    name: "DATABASE_URL".into(),
                    value: store.status().connection_string().into(),
                    ..Default::default()
                }]
                .into(),
                ..Default::default()
            },
        ),
    );
    let front = full_stack.add("service", service(app.metadata().name(), &name, 80));
    let app_ready = app.status().ready_replicas().or_default(0).gt(0);
    full_stack.status(FullStackStatusValues {
        url: fmt_cel!("http://{}", front.metadata().name()).into(),
        database: store.status().host().into(),
        ready: app_ready.and(store.status().ready()).into(),
    });
    full_stack
}

fn main() -> Result<(), kro_compose::ComposeError> {
    print!("{}", composition().to_rgd_yaml()?);
    Ok(())
}
