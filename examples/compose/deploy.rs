//! Deploys the seed's web app with its database (`web_with_database.rs`) both ways and prints
//! the typed status each gives: through the kro controller (`Mode::Kro`: the RGD and an
//! instance are applied, and kro makes the objects) and directly (`Mode::Direct`: kro's engine
//! runs here, no controller needed). Against a sandbox with kro's controllers:
//!
//! ```sh
//! kro dev --port 0 --kubeconfig-out /tmp/dev.kc &
//! KUBECONFIG=/tmp/dev.kc cargo run -p kro-compose --example deploy
//! ```
//!
//! The instances are `shop-kro` and `shop-direct` in the namespace `default`; both are deleted
//! again at the end.

// The composition, from its own example (whose `main` prints the RGD and is not used here).
#[allow(dead_code)]
#[path = "web_with_database.rs"]
mod web_with_database;

use std::time::Duration;

use kro_compose::{DirectConfig, Mode, Progress};
use web_with_database::{WebAppSpec, composition};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let client = kube::Client::try_default().await?;
    let shop = composition();
    let spec = WebAppSpec {
        image: "nginx:1.27".to_owned(),
        replicas: 2,
        database_image: "postgres:16".to_owned(),
    };
    let config = || DirectConfig {
        timeout: Some(Duration::from_secs(120)),
        ..DirectConfig::default()
    };
    let report = |progress: &Progress| eprintln!("{progress:?}");
    for (mode, name) in [(Mode::Kro, "shop-kro"), (Mode::Direct, "shop-direct")] {
        let deployed = shop
            .deploy(
                mode,
                &client,
                name,
                Some("default"),
                &spec,
                config(),
                &report,
            )
            .await?;
        println!("{name} ({mode:?}): {:?}", deployed.status);
    }
    for (mode, name) in [(Mode::Kro, "shop-kro"), (Mode::Direct, "shop-direct")] {
        let deleted = shop
            .delete(mode, &client, name, Some("default"), config(), &report)
            .await?;
        println!("{name} deleted: {} objects", deleted.len());
    }
    Ok(())
}
