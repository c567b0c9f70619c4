//! Resource lifecycles under direct deploy (`kro apply` / `kro delete`), on `kro dev` and on
//! the real kube-apiserver: a `retain` lifecycle releases its object instead of deleting it,
//! when includeWhen turns false and when the instance is deleted; a later apply adopts it;
//! `kro delete --detach` and the instance annotation `kro.run/detach-on-deletion` release
//! everything.

use std::path::Path;
use std::process::{Command, Output};

use kro_test_support::{KroDev, kubectl_succeeds};
use serde_json::Value;

const RGD: &str = r#"apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: keeper
spec:
  schema:
    apiVersion: v1alpha1
    kind: Keeper
    spec:
      environment: string | default=dev
      cache: boolean | default=true
  resources:
    - id: database
      lifecycle: '${schema.spec.environment == "production" ? policy().withRetain() : policy()}'
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: ${schema.metadata.name}-db
        data:
          environment: ${schema.spec.environment}
    - id: cache
      includeWhen: ["${schema.spec.cache}"]
      lifecycle: {deletePolicy: retain}
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: ${schema.metadata.name}-cache
    - id: temp
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: ${schema.metadata.name}-temp
"#;

/// A cluster reached through `kubeconfig`, with a scratch directory for files.
struct Target<'a> {
    kubeconfig: &'a Path,
    home: &'a Path,
}

impl Target<'_> {
    fn kro(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_kro"))
            .args(args)
            .arg("--kubeconfig")
            .arg(self.kubeconfig)
            .output()
            .expect("kro runs")
    }

    fn kro_succeeds(&self, args: &[&str]) -> String {
        let output = self.kro(args);
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        assert!(output.status.success(), "kro {args:?} failed:\n{stderr}");
        format!("{}{stderr}", String::from_utf8_lossy(&output.stdout))
    }

    /// `kro apply` of the keeper RGD with an instance `name` of `spec` (YAML flow map).
    fn apply(&self, name: &str, spec: &str, annotations: &str) -> String {
        let rgd = self.home.join("rgd.yaml");
        std::fs::write(&rgd, RGD).expect("the RGD file");
        let instance = self.home.join(format!("{name}.yaml"));
        std::fs::write(
            &instance,
            format!(
                "apiVersion: kro.run/v1alpha1\nkind: Keeper\nmetadata:\n  name: {name}\n  \
                 namespace: default\n  annotations: {annotations}\nspec: {spec}\n"
            ),
        )
        .expect("the instance file");
        self.kro_succeeds(&[
            "apply",
            "-f",
            rgd.to_str().expect("UTF-8"),
            "-i",
            instance.to_str().expect("UTF-8"),
            "--timeout",
            "60s",
        ])
    }

    fn config_map(&self, name: &str) -> Option<Value> {
        let listed = kubectl_succeeds(
            33,
            self.kubeconfig,
            self.home,
            &[
                "get",
                "configmaps",
                "-n",
                "default",
                "--field-selector",
                &format!("metadata.name={name}"),
                "--show-managed-fields",
                "-o",
                "json",
            ],
        );
        let list: Value = serde_json::from_str(&listed).expect("JSON");
        list["items"]
            .as_array()
            .and_then(|items| items.first())
            .cloned()
    }

    /// What of kro's is still on the ConfigMap `name` (which must exist).
    fn kro_traces(&self, name: &str) -> Vec<String> {
        let object = self
            .config_map(name)
            .unwrap_or_else(|| panic!("ConfigMap {name} is gone: it should stay"));
        let metadata = &object["metadata"];
        let mut traces: Vec<String> = metadata["labels"]
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(key, value)| {
                key.starts_with("kro.run/")
                    || key.starts_with("applyset.kubernetes.io/")
                    || (*key == "app.kubernetes.io/managed-by" && *value == "kro")
            })
            .map(|(key, _)| format!("label {key}"))
            .collect();
        traces.extend(
            metadata["annotations"]
                .as_object()
                .into_iter()
                .flatten()
                .filter(|(key, _)| key.starts_with("internal.kro.run/"))
                .map(|(key, _)| format!("annotation {key}")),
        );
        traces.extend(
            metadata["managedFields"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|entry| entry["manager"].as_str())
                .filter(|manager| manager.starts_with("kro.run/"))
                .map(|manager| format!("field manager {manager}")),
        );
        traces
    }

    fn policy_of(&self, name: &str) -> Value {
        let object = self.config_map(name).expect("the ConfigMap");
        object["metadata"]["annotations"]["internal.kro.run/lifecycle-policy"].clone()
    }
}

fn scenario(target: &Target<'_>) {
    target.apply("prod", "{environment: production}", "{}");
    assert_eq!(target.policy_of("prod-db"), "retain");
    assert_eq!(target.policy_of("prod-cache"), "retain");
    assert_eq!(target.policy_of("prod-temp"), Value::Null);
    assert!(!target.kro_traces("prod-db").is_empty());

    // includeWhen turns false: the cache is released, not pruned.
    let applied = target.apply("prod", "{environment: production, cache: false}", "{}");
    assert!(
        applied.contains("released ConfigMap/default/prod-cache"),
        "{applied}"
    );
    assert_eq!(target.kro_traces("prod-cache"), Vec::<String>::new());

    // Deleting the instance releases the production database and deletes the rest.
    let deleted = target.kro_succeeds(&["delete", "prod", "--timeout", "60s"]);
    assert!(
        deleted.contains("released ConfigMap/default/prod-db")
            && deleted.contains("released 1 object(s)"),
        "{deleted}"
    );
    assert_eq!(target.kro_traces("prod-db"), Vec::<String>::new());
    assert!(target.config_map("prod-temp").is_none(), "temp survived");

    // A later apply with the same names adopts the database; in dev it would be deleted,
    // but --detach releases everything.
    target.apply("prod", "{environment: dev, cache: false}", "{}");
    assert_eq!(target.policy_of("prod-db"), "delete");
    assert!(!target.kro_traces("prod-db").is_empty(), "adopted again");
    let detached = target.kro_succeeds(&["delete", "prod", "--detach", "--timeout", "60s"]);
    assert!(detached.contains("released 2 object(s)"), "{detached}");
    for name in ["prod-db", "prod-temp"] {
        assert_eq!(target.kro_traces(name), Vec::<String>::new(), "{name}");
    }

    // The instance annotation does the same with no flag.
    target.apply(
        "annotated",
        "{}",
        "{\"kro.run/detach-on-deletion\": \"true\"}",
    );
    let deleted = target.kro_succeeds(&["delete", "annotated", "--timeout", "60s"]);
    assert!(deleted.contains("released 3 object(s)"), "{deleted}");
    for name in ["annotated-db", "annotated-cache", "annotated-temp"] {
        assert_eq!(target.kro_traces(name), Vec::<String>::new(), "{name}");
    }
}

#[test]
fn direct_deploy_releases_what_its_lifecycle_retains_on_kro_dev() {
    let home = tempfile::tempdir().expect("a HOME");
    let kubeconfig = home.path().join("kubeconfig");
    let _dev = KroDev::start(Path::new(env!("CARGO_BIN_EXE_kro")), &kubeconfig, &[]);
    scenario(&Target {
        kubeconfig: &kubeconfig,
        home: home.path(),
    });
}

#[test]
fn direct_deploy_releases_what_its_lifecycle_retains_on_a_real_control_plane() {
    let Some(control_plane) = kro_test_support::real_control_plane_or_skip("direct lifecycles")
    else {
        return;
    };
    let home = tempfile::tempdir().expect("a HOME");
    scenario(&Target {
        kubeconfig: control_plane.kubeconfig(),
        home: home.path(),
    });
}
