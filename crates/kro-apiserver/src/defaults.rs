//! What kube-apiserver fills in on built-in objects that readers (kro diffs desired against
//! observed, kubectl describe dereferences) see: Service defaults and cluster IP allocation,
//! and the defaults of workloads and their pod templates (`pkg/apis/*/v1/defaults.go`).

use std::collections::BTreeSet;
use std::net::Ipv4Addr;

use serde_json::{Value, json};

use crate::error::ApiError;
use crate::registry::ResourceType;
use crate::state::AppState;

/// The service cluster IP range: 10.96.0.0/16 (`10.96.0.1` is the `kubernetes` Service).
const SERVICE_RANGE_START: u32 = u32::from_be_bytes([10, 96, 0, 1]);
const SERVICE_RANGE_SIZE: u32 = 1 << 16;

/// Applies the defaults of the resource's kind. `old` is the stored object on updates.
///
/// # Errors
/// 500 when the service IP range is exhausted.
pub(crate) fn apply(
    state: &AppState,
    resource: &ResourceType,
    object: &mut Value,
    old: Option<&Value>,
) -> Result<(), ApiError> {
    if resource.group().is_empty() && resource.plural == "services" {
        service(state, object, old)?;
    }
    match (resource.group(), resource.plural.as_str()) {
        ("apps", "deployments") => deployment(object),
        ("apps", "replicasets") => replica_set(object),
        ("apps", "statefulsets") => stateful_set(object),
        ("apps", "daemonsets") => daemon_set(object),
        ("batch", "jobs") => job(object),
        ("batch", "cronjobs") => cron_job(object),
        ("", "pods") => {
            if let Some(spec) = object.get_mut("spec") {
                pod_spec(spec);
            }
        }
        ("", "secrets") => secret(object),
        ("", "persistentvolumeclaims") => {
            if let Some(spec) = child(object, "spec") {
                default(spec, "volumeMode", json!("Filesystem"));
            }
        }
        ("", "persistentvolumes") => {
            if let Some(spec) = child(object, "spec") {
                default(spec, "persistentVolumeReclaimPolicy", json!("Retain"));
                default(spec, "volumeMode", json!("Filesystem"));
                if let Some(host_path) = spec.get_mut("hostPath") {
                    default(host_path, "type", json!(""));
                }
            }
        }
        ("autoscaling", "horizontalpodautoscalers") => {
            if let Some(spec) = child(object, "spec") {
                default(spec, "minReplicas", json!(1));
                let no_metrics = spec
                    .get("metrics")
                    .and_then(Value::as_array)
                    .is_none_or(Vec::is_empty);
                if no_metrics {
                    spec["metrics"] = json!([{
                        "type": "Resource",
                        "resource": {
                            "name": "cpu",
                            "target": {"type": "Utilization", "averageUtilization": 80},
                        },
                    }]);
                }
            }
        }
        _ => {}
    }
    if let Some(custom) = &resource.custom {
        kro_schema::apply_defaults(&custom.schema, object);
    }
    Ok(())
}

/// A Secret as kube-apiserver stores it: `stringData` merged into `data` base64-encoded (its
/// entries win over `data`'s) and dropped, as the conversion to the internal type does, and
/// `type` defaulted to `Opaque`. An entry that is not a string stays in `stringData` for
/// validation to refuse.
fn secret(object: &mut Value) {
    use base64::Engine as _;
    let Value::Object(map) = object else {
        return;
    };
    if map
        .get("type")
        .is_none_or(|kind| kind.is_null() || kind.as_str() == Some(""))
    {
        map.insert("type".to_owned(), json!("Opaque"));
    }
    let Some(Value::Object(string_data)) = map.remove("stringData") else {
        return;
    };
    let (texts, others): (Vec<_>, Vec<_>) = string_data
        .into_iter()
        .partition(|(_, value)| value.is_string());
    if !others.is_empty() {
        map.insert(
            "stringData".to_owned(),
            Value::Object(others.into_iter().collect()),
        );
    }
    if texts.is_empty() {
        return;
    }
    let data = map.entry("data").or_insert_with(|| json!({}));
    if !data.is_object() {
        *data = json!({});
    }
    if let Value::Object(data) = data {
        for (key, value) in texts {
            let text = value.as_str().unwrap_or_default();
            let encoded = base64::engine::general_purpose::STANDARD.encode(text);
            data.insert(key, Value::String(encoded));
        }
    }
}

/// Sets `field` of `object` (an object) to `value` unless it is set.
fn default(object: &mut Value, field: &str, value: Value) {
    if let Value::Object(map) = object
        && map.get(field).is_none_or(Value::is_null)
    {
        map.insert(field.to_owned(), value);
    }
}

/// The object at `field`, created empty when missing.
fn child<'a>(object: &'a mut Value, field: &str) -> Option<&'a mut Value> {
    default(object, field, json!({}));
    object.get_mut(field).filter(|value| value.is_object())
}

fn pod_template(spec: &mut Value) {
    if let Some(template) = child(spec, "template")
        && let Some(pod) = child(template, "spec")
    {
        pod_spec(pod);
    }
}

fn pod_spec(spec: &mut Value) {
    if !spec.is_object() {
        return;
    }
    default(spec, "restartPolicy", json!("Always"));
    default(spec, "terminationGracePeriodSeconds", json!(30));
    default(spec, "dnsPolicy", json!("ClusterFirst"));
    default(spec, "schedulerName", json!("default-scheduler"));
    default(spec, "securityContext", json!({}));
    for list in ["containers", "initContainers"] {
        for container in spec
            .get_mut(list)
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            let image = container["image"].as_str().unwrap_or_default().to_owned();
            let tag = image.rsplit('/').next().and_then(|last| {
                if last.contains('@') {
                    Some("digest")
                } else {
                    last.split_once(':').map(|(_, tag)| tag)
                }
            });
            let pull = match tag {
                None | Some("latest") => "Always",
                Some(_) => "IfNotPresent",
            };
            default(container, "imagePullPolicy", json!(pull));
            default(
                container,
                "terminationMessagePath",
                json!("/dev/termination-log"),
            );
            default(container, "terminationMessagePolicy", json!("File"));
            default(container, "resources", json!({}));
            for port in container
                .get_mut("ports")
                .and_then(Value::as_array_mut)
                .into_iter()
                .flatten()
            {
                default(port, "protocol", json!("TCP"));
            }
        }
    }
}

fn deployment(object: &mut Value) {
    let Some(spec) = child(object, "spec") else {
        return;
    };
    default(spec, "replicas", json!(1));
    default(spec, "revisionHistoryLimit", json!(10));
    default(spec, "progressDeadlineSeconds", json!(600));
    if let Some(strategy) = child(spec, "strategy") {
        default(strategy, "type", json!("RollingUpdate"));
        if strategy["type"] == "RollingUpdate"
            && let Some(rolling) = child(strategy, "rollingUpdate")
        {
            default(rolling, "maxSurge", json!("25%"));
            default(rolling, "maxUnavailable", json!("25%"));
        }
    }
    pod_template(spec);
}

fn replica_set(object: &mut Value) {
    if let Some(spec) = child(object, "spec") {
        default(spec, "replicas", json!(1));
        pod_template(spec);
    }
}

fn stateful_set(object: &mut Value) {
    let Some(spec) = child(object, "spec") else {
        return;
    };
    default(spec, "replicas", json!(1));
    default(spec, "podManagementPolicy", json!("OrderedReady"));
    default(spec, "revisionHistoryLimit", json!(10));
    if let Some(strategy) = child(spec, "updateStrategy") {
        default(strategy, "type", json!("RollingUpdate"));
        if strategy["type"] == "RollingUpdate"
            && let Some(rolling) = child(strategy, "rollingUpdate")
        {
            default(rolling, "partition", json!(0));
        }
    }
    if let Some(retention) = child(spec, "persistentVolumeClaimRetentionPolicy") {
        default(retention, "whenDeleted", json!("Retain"));
        default(retention, "whenScaled", json!("Retain"));
    }
    pod_template(spec);
}

fn daemon_set(object: &mut Value) {
    let Some(spec) = child(object, "spec") else {
        return;
    };
    default(spec, "revisionHistoryLimit", json!(10));
    if let Some(strategy) = child(spec, "updateStrategy") {
        default(strategy, "type", json!("RollingUpdate"));
        if strategy["type"] == "RollingUpdate"
            && let Some(rolling) = child(strategy, "rollingUpdate")
        {
            default(rolling, "maxUnavailable", json!(1));
            default(rolling, "maxSurge", json!(0));
        }
    }
    pod_template(spec);
}

fn job_spec(spec: &mut Value) {
    default(spec, "parallelism", json!(1));
    default(spec, "completions", json!(1));
    default(spec, "backoffLimit", json!(6));
    default(spec, "completionMode", json!("NonIndexed"));
    default(spec, "suspend", json!(false));
    default(spec, "podReplacementPolicy", json!("TerminatingOrFailed"));
    if let Some(template) = child(spec, "template")
        && let Some(pod) = child(template, "spec")
    {
        // Jobs' pods must set restartPolicy (Never or OnFailure); none is defaulted.
        let restart = pod.get("restartPolicy").cloned();
        pod_spec(pod);
        match restart {
            Some(value) => pod["restartPolicy"] = value,
            None => {
                if let Value::Object(map) = pod {
                    map.remove("restartPolicy");
                }
            }
        }
    }
}

fn job(object: &mut Value) {
    if let Some(spec) = child(object, "spec") {
        job_spec(spec);
        default(spec, "manualSelector", json!(false));
    }
}

fn cron_job(object: &mut Value) {
    let Some(spec) = child(object, "spec") else {
        return;
    };
    default(spec, "concurrencyPolicy", json!("Allow"));
    default(spec, "suspend", json!(false));
    default(spec, "successfulJobsHistoryLimit", json!(3));
    default(spec, "failedJobsHistoryLimit", json!(1));
    if let Some(template) = child(spec, "jobTemplate")
        && let Some(job) = child(template, "spec")
    {
        job_spec(job);
    }
}

fn service(state: &AppState, object: &mut Value, old: Option<&Value>) -> Result<(), ApiError> {
    if !object.get("spec").is_some_and(Value::is_object) {
        object["spec"] = json!({});
    }
    let spec = &mut object["spec"];
    let service_type = spec
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("ClusterIP")
        .to_owned();
    spec["type"] = json!(service_type);
    if service_type == "ExternalName" {
        return Ok(());
    }
    if spec.get("sessionAffinity").is_none() {
        spec["sessionAffinity"] = json!("None");
    }
    if spec.get("internalTrafficPolicy").is_none() {
        spec["internalTrafficPolicy"] = json!("Cluster");
    }
    if let Some(ports) = spec.get_mut("ports").and_then(Value::as_array_mut) {
        for port in ports {
            if port.get("protocol").is_none() {
                port["protocol"] = json!("TCP");
            }
            if port.get("targetPort").is_none()
                && let Some(number) = port.get("port").cloned()
            {
                port["targetPort"] = number;
            }
        }
    }
    let old_ip = old
        .and_then(|old| old.pointer("/spec/clusterIP"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    let requested = spec
        .get("clusterIP")
        .and_then(Value::as_str)
        .filter(|ip| !ip.is_empty())
        .map(str::to_owned);
    let ip = match (requested, old_ip) {
        (Some(ip), _) => ip,
        (None, Some(old)) => old,
        (None, None) => allocate(state)?,
    };
    spec["clusterIP"] = json!(ip);
    spec["clusterIPs"] = json!([ip]);
    if ip != "None" {
        spec["ipFamilies"] = json!(["IPv4"]);
        spec["ipFamilyPolicy"] = json!("SingleStack");
    }
    Ok(())
}

/// The lowest address of the range never handed out. Runs inside a store write, so it must
/// not read the store: the set of allocated addresses is seeded from the stored Services
/// when the server starts ([`seed_service_ips`]).
fn allocate(state: &AppState) -> Result<String, ApiError> {
    let mut allocated = state
        .service_ips
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    // The first addresses are left to well-known services (kubernetes, kube-dns).
    for offset in 9..SERVICE_RANGE_SIZE - 2 {
        let candidate = SERVICE_RANGE_START + offset;
        if !allocated.contains(&candidate) {
            allocated.insert(candidate);
            return Ok(Ipv4Addr::from(candidate).to_string());
        }
    }
    Err(ApiError::internal(
        "failed to allocate a serviceIP: range is full".to_owned(),
    ))
}

/// The cluster IPs of stored Services (after a restart of a persistent server).
pub(crate) fn seed_service_ips(state: &AppState) {
    let used: BTreeSet<u32> = state
        .store
        .list("", "services", None, false)
        .objects
        .iter()
        .filter_map(|service| {
            service
                .pointer("/spec/clusterIP")?
                .as_str()?
                .parse::<Ipv4Addr>()
                .ok()
        })
        .map(u32::from)
        .collect();
    state
        .service_ips
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .extend(used);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deployments_get_kube_apiserver_defaults() {
        let mut object = json!({"spec": {"selector": {"matchLabels": {"app": "d"}},
            "template": {"spec": {"containers": [{"name": "a", "image": "nginx:1.27",
                "ports": [{"containerPort": 80}]}, {"name": "b", "image": "busybox"}]}}}});
        deployment(&mut object);
        let spec = &object["spec"];
        assert_eq!(spec["replicas"], 1);
        assert_eq!(spec["strategy"]["rollingUpdate"]["maxSurge"], "25%");
        let pod = &spec["template"]["spec"];
        assert_eq!(pod["dnsPolicy"], "ClusterFirst");
        assert_eq!(pod["containers"][0]["imagePullPolicy"], "IfNotPresent");
        assert_eq!(pod["containers"][1]["imagePullPolicy"], "Always");
        assert_eq!(pod["containers"][0]["ports"][0]["protocol"], "TCP");
        // Values given are kept.
        let mut recreate = json!({"spec": {"replicas": 0, "strategy": {"type": "Recreate"}}});
        deployment(&mut recreate);
        assert_eq!(recreate["spec"]["replicas"], 0);
        assert!(recreate["spec"]["strategy"].get("rollingUpdate").is_none());
    }

    #[test]
    fn secret_string_data_is_merged_into_data_and_dropped() {
        let mut secret_object = json!({
            "metadata": {"name": "s"},
            "data": {"kept": "a2VwdA==", "both": "b2xk"},
            "stringData": {"both": "new", "plain": "héllo"},
        });
        secret(&mut secret_object);
        assert_eq!(
            secret_object,
            json!({
                "metadata": {"name": "s"},
                "type": "Opaque",
                "data": {"kept": "a2VwdA==", "both": "bmV3", "plain": "aMOpbGxv"},
            })
        );
    }

    #[test]
    fn secret_type_is_kept_when_given_and_defaulted_when_empty() {
        let mut typed = json!({"type": "kubernetes.io/tls", "stringData": {"tls.crt": "x"}});
        secret(&mut typed);
        assert_eq!(
            typed,
            json!({"type": "kubernetes.io/tls", "data": {"tls.crt": "eA=="}})
        );
        let mut empty = json!({"type": ""});
        secret(&mut empty);
        assert_eq!(empty, json!({"type": "Opaque"}));
    }

    #[test]
    fn secret_string_data_that_is_not_text_stays_for_validation() {
        let mut odd = json!({"stringData": {"n": 1, "t": "x"}});
        secret(&mut odd);
        assert_eq!(
            odd,
            json!({"type": "Opaque", "stringData": {"n": 1}, "data": {"t": "eA=="}})
        );
    }
}
