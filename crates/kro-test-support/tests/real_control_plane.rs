//! The real control plane from `scripts/controlplane.sh`: it starts, real kubectl uses it
//! (namespaces, a CRD, an instance of it), and stopping it leaves no process behind.

use std::path::Path;

use kro_test_support::{real_control_plane_or_skip, run_kubectl};

const CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.kro.run
spec:
  group: example.kro.run
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer, minimum: 1}
              color: {type: string, default: blue}
"#;

const WIDGET: &str = r#"
apiVersion: example.kro.run/v1
kind: Widget
metadata: {name: w1, namespace: default}
spec: {size: 3}
"#;

fn processes_mentioning(needle: &str) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|entry| std::fs::read(entry.path().join("cmdline")).ok())
        .map(|bytes| String::from_utf8_lossy(&bytes).replace('\0', " "))
        .filter(|command| command.contains(needle) && !command.contains("real_control_plane"))
        .collect()
}

#[test]
fn kubectl_uses_the_real_control_plane_and_stop_leaves_nothing_behind() {
    let Some(control_plane) = real_control_plane_or_skip("real_control_plane") else {
        return;
    };
    let home = std::env::temp_dir().join(format!("kro-test-home-{}", std::process::id()));
    std::fs::create_dir_all(&home).expect("a fresh HOME");
    let kubeconfig = control_plane.kubeconfig().to_path_buf();

    let namespaces = run_kubectl(&kubeconfig, &home, &["get", "ns", "-o", "name"], None);
    assert!(
        namespaces.status.success(),
        "{}",
        String::from_utf8_lossy(&namespaces.stderr)
    );
    let names = String::from_utf8_lossy(&namespaces.stdout);
    for expected in [
        "namespace/default",
        "namespace/kube-system",
        "namespace/kube-public",
    ] {
        assert!(
            names.lines().any(|line| line == expected),
            "{expected} missing from:\n{names}"
        );
    }

    let applied = run_kubectl(&kubeconfig, &home, &["apply", "-f", "-"], Some(CRD));
    assert!(
        applied.status.success(),
        "{}",
        String::from_utf8_lossy(&applied.stderr)
    );
    let established = run_kubectl(
        &kubeconfig,
        &home,
        &[
            "wait",
            "--for=condition=Established",
            "crd/widgets.example.kro.run",
            "--timeout=60s",
        ],
        None,
    );
    assert!(
        established.status.success(),
        "{}",
        String::from_utf8_lossy(&established.stderr)
    );
    let created = run_kubectl(&kubeconfig, &home, &["apply", "-f", "-"], Some(WIDGET));
    assert!(
        created.status.success(),
        "{}",
        String::from_utf8_lossy(&created.stderr)
    );
    let spec = run_kubectl(
        &kubeconfig,
        &home,
        &[
            "get",
            "widget",
            "w1",
            "-o",
            "jsonpath={.spec.color}/{.spec.size}",
        ],
        None,
    );
    assert_eq!(
        String::from_utf8_lossy(&spec.stdout),
        "blue/3",
        "the CRD default applies"
    );

    let instance_dir = kubeconfig
        .parent()
        .map(|dir| dir.to_string_lossy().into_owned())
        .expect("the kubeconfig is inside the instance directory");
    control_plane.stop().expect("the control plane stops");
    std::fs::remove_dir_all(&home).ok();
    if std::env::var_os(kro_test_support::KUBECONFIG_VARIABLE).is_none() {
        assert!(
            !Path::new(&instance_dir).exists(),
            "{instance_dir} was not removed"
        );
        let left = processes_mentioning(&instance_dir);
        assert!(left.is_empty(), "processes left behind: {left:?}");
    }
}
