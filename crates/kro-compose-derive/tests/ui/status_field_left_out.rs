use kro_compose::{Composition, KroSchema, instance_name};

#[derive(KroSchema)]
struct AppSpec {
    image: String,
}

#[derive(KroSchema)]
struct AppStatus {
    url: String,
    ready: bool,
}

fn main() {
    let mut app = Composition::<AppSpec, AppStatus>::new("app", "App");
    app.status(AppStatusValues {
        url: instance_name().into(),
    });
}
