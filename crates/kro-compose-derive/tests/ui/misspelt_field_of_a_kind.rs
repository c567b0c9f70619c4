use kro_compose::k8s::api::apps::v1::{Deployment, DeploymentSpec};

fn main() {
    let _ = Deployment {
        spec: DeploymentSpec {
            replica: 3.into(),
            ..Default::default()
        }
        .into(),
        ..Default::default()
    };
}
