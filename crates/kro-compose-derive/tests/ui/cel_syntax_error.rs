use kro_compose::{Ref, cel};

fn main() {
    let _: Ref<bool> = cel!("schema.spec.replicas >");
}
