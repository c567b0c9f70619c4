use kro_compose::KroSchema;

#[derive(KroSchema)]
struct AppSpec {
    #[kro(minimun = 1)]
    replicas: i64,
}

fn main() {}
