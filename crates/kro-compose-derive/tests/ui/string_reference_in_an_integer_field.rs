use kro_compose::k8s::api::apps::v1::DeploymentSpec;
use kro_compose::{KroSchema, spec};

#[derive(KroSchema)]
struct AppSpec {
    image: String,
}

fn main() {
    let _ = DeploymentSpec {
        replicas: spec::<AppSpec>().image().into(),
        ..Default::default()
    };
}
