use kro_compose::{KroSchema, spec};

#[derive(KroSchema)]
struct AppSpec {
    replicas: i64,
}

fn main() {
    let _ = spec::<AppSpec>().replica();
}
