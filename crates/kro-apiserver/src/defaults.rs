//! What kube-apiserver fills in on built-in objects that readers (kro diffs desired against
//! observed) see: Service defaults and cluster IP allocation.

use std::collections::BTreeSet;
use std::net::Ipv4Addr;

use serde_json::{Value, json};

use crate::error::ApiError;
use crate::registry::ResourceType;
use crate::server::AppState;

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
    if let Some(custom) = &resource.custom {
        kro_schema::apply_defaults(&custom.schema, object);
    }
    Ok(())
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
