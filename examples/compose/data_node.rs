//! examples/data-node written in Rust: two data nodes (a naming scheme and sizing computed
//! once from the environment, a unit enum) read by a ConfigMap and a Deployment, written as
//! JSON templates. `cargo run -p kro-compose --example data_node` prints the RGD, which has the
//! same graph and CRD as `examples/data-node/rgd.yaml`.

use kro_compose::{Composition, KroSchema, fmt_cel, instance_name, spec};
use serde_json::json;

/// Where a tier runs.
#[derive(KroSchema)]
pub enum Environment {
    /// Development.
    #[kro(rename = "dev")]
    Dev,
    /// Staging.
    #[kro(rename = "staging")]
    Staging,
    /// Production.
    #[kro(rename = "prod")]
    Prod,
}

/// What a service tier is asked for.
#[derive(KroSchema)]
pub struct ServiceTierSpec {
    /// Where the tier runs.
    #[kro(default = "dev")]
    pub environment: Environment,
    /// The app's image.
    #[kro(default = "nginx:1.27")]
    pub image: String,
}

/// What an instance reports.
#[derive(KroSchema)]
pub struct ServiceTierStatus {
    /// The prefix of the tier's names.
    pub prefix: String,
    /// How many replicas the environment gets.
    pub replicas: i64,
}

/// The composition: examples/data-node.
pub fn composition() -> Composition<ServiceTierSpec, ServiceTierStatus> {
    let tier = spec::<ServiceTierSpec>();
    let mut composition = Composition::new("service-tier", "ServiceTier");
    let prod = tier.environment().eq(Environment::Prod);
    let naming = composition.data(
        "naming",
        json!({
            "prefix": fmt_cel!("{}-{}", instance_name(), tier.environment()),
            "team": "platform",
        }),
    );
    let sizing = composition.data(
        "sizing",
        json!({
            "replicas": kro_compose::expr::cond(&prod, 3, 1),
            "memory": kro_compose::expr::cond(&prod, "512Mi", "128Mi"),
        }),
    );
    let prefix = naming.path::<String>("prefix");
    let settings = composition.add(
        "settings",
        json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": prefix.concat("-settings"),
                "labels": {"team": naming.path::<String>("team")},
            },
            "data": {
                "environment": tier.environment(),
                "memory": sizing.path::<String>("memory"),
            },
        }),
    );
    composition.add(
        "app",
        json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": prefix, "labels": {"team": naming.path::<String>("team")}},
            "spec": {
                "replicas": sizing.path::<i64>("replicas"),
                "selector": {"matchLabels": {"app": prefix}},
                "template": {
                    "metadata": {"labels": {"app": prefix}},
                    "spec": {"containers": [{
                        "name": "app",
                        "image": tier.image(),
                        "envFrom": [{"configMapRef": {"name": settings.name()}}],
                        "resources": {"limits": {"memory": sizing.path::<String>("memory")}},
                    }]},
                },
            },
        }),
    );
    composition.status(ServiceTierStatusValues {
        prefix: prefix.into(),
        replicas: sizing.path::<i64>("replicas").into(),
    });
    composition
}

fn main() -> Result<(), kro_compose::ComposeError> {
    print!("{}", composition().to_rgd_yaml()?);
    Ok(())
}
