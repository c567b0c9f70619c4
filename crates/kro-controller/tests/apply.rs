//! The apply engine through its public API, on the embedded API server without controllers:
//! one level applied, then applied again unchanged, then changed; objects that cannot be
//! applied fail alone with typed errors.

use std::time::Duration;

use kro_apiserver::{ServerConfig, Simulators};
use kro_controller::{AppliedObject, Applier, ApplyConfig, ApplyError, ApplyOutcome};
use kro_runtime::{DesiredObject, ObjectKey, Observed};
use serde_json::{Value, json};

fn desired(object: Value) -> DesiredObject {
    DesiredObject {
        key: ObjectKey::of(&object).expect("a key"),
        object,
        collection_index: None,
    }
}

fn config_map(name: &str, value: &str) -> DesiredObject {
    desired(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default"},
        "data": {"value": value},
    }))
}

/// The outcome of `name` among `results`.
fn outcome<'a>(results: &'a [AppliedObject], name: &str) -> &'a Result<ApplyOutcome, ApplyError> {
    &results
        .iter()
        .find(|result| result.key.name == name)
        .unwrap_or_else(|| panic!("no result for {name}: {results:?}"))
        .outcome
}

/// Applies `level` with a timeout.
async fn apply(
    applier: &Applier,
    level: &[DesiredObject],
    observed: &Observed,
) -> Vec<AppliedObject> {
    tokio::time::timeout(
        Duration::from_secs(30),
        applier.apply_level("scope", level, observed),
    )
    .await
    .expect("the level is applied in time")
}

#[tokio::test]
async fn a_level_is_created_then_left_unchanged_then_updated() {
    let server = kro_apiserver::start(ServerConfig {
        token: None,
        tls: false,
        simulators: Simulators::none(),
        ..ServerConfig::default()
    })
    .await
    .expect("the server starts");
    let client = kube::Client::try_from(kube::Config::new(server.url().parse().expect("URL")))
        .expect("a client");
    let applier = Applier::new(
        client,
        ApplyConfig::default()
            .concurrency(2)
            .field_manager("kro.run/test"),
    );
    let level = [
        config_map("a", "1"),
        config_map("b", "1"),
        config_map("c", "1"),
    ];

    let mut observed = Observed::new();
    let results = apply(&applier, &level, &observed).await;
    assert_eq!(results.len(), 3);
    for result in results {
        let Ok(ApplyOutcome::Created(object)) = result.outcome else {
            panic!("{:?} was not created: {:?}", result.key, result.outcome);
        };
        assert_eq!(object["data"]["value"], "1");
        assert_eq!(
            object["metadata"]["managedFields"][0]["manager"],
            "kro.run/test"
        );
        observed.insert(object);
    }

    // The same intent, and nobody changed the objects: nothing is applied.
    let results = apply(&applier, &level, &observed).await;
    assert!(
        results
            .iter()
            .all(|result| matches!(result.outcome, Ok(ApplyOutcome::Unchanged))),
        "{results:?}"
    );

    // A new intent for one object: only it is applied.
    let changed = [
        config_map("a", "2"),
        config_map("b", "1"),
        config_map("c", "1"),
    ];
    let results = apply(&applier, &changed, &observed).await;
    assert!(
        matches!(outcome(&results, "a"), Ok(ApplyOutcome::Updated(object)) if object["data"]["value"] == "2"),
        "{results:?}"
    );
    assert!(matches!(
        outcome(&results, "b"),
        Ok(ApplyOutcome::Unchanged)
    ));
    assert!(matches!(
        outcome(&results, "c"),
        Ok(ApplyOutcome::Unchanged)
    ));

    // Forgotten, the scope applies everything again.
    applier.forget("scope");
    assert!(applier.needs_apply("scope", &changed[1], observed.get(&changed[1].key)));
}

#[tokio::test]
async fn an_object_that_cannot_be_applied_fails_alone_with_a_typed_error() {
    let server = kro_apiserver::start(ServerConfig {
        token: None,
        tls: false,
        simulators: Simulators::none(),
        ..ServerConfig::default()
    })
    .await
    .expect("the server starts");
    let client = kube::Client::try_from(kube::Config::new(server.url().parse().expect("URL")))
        .expect("a client");
    let applier = Applier::new(client, ApplyConfig::default());
    let level = [
        config_map("fine", "1"),
        desired(json!({
            "apiVersion": "example.com/v1", "kind": "Unserved",
            "metadata": {"name": "nowhere", "namespace": "default"},
        })),
        desired(json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "Not_Valid", "namespace": "default"},
        })),
    ];

    let results = apply(&applier, &level, &Observed::new()).await;
    assert!(matches!(
        outcome(&results, "fine"),
        Ok(ApplyOutcome::Created(_))
    ));
    let unserved = outcome(&results, "nowhere");
    assert!(matches!(unserved, Err(ApplyError::Kind(_))), "{unserved:?}");
    let invalid = outcome(&results, "Not_Valid");
    assert!(
        matches!(invalid, Err(ApplyError::Api(kube::Error::Api(status))) if status.code == 422),
        "{invalid:?}"
    );
    assert_eq!(
        invalid.as_ref().map_err(ApplyError::reason).err(),
        Some("ApplyFailed")
    );
}
