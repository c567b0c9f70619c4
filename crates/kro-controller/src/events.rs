//! Kubernetes Events about RGDs and instances (core/v1, what `kubectl describe` and
//! `kubectl get events` show), from the component `kro`. Recording is best effort: a failure is
//! logged, never fatal. The same event is not recorded twice in a row for one object, so a
//! reconcile retried with the same error does not flood the namespace.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, PostParams};
use serde_json::{Value as Json, json};

use crate::object::Object;

/// The component named on kro's events.
pub const COMPONENT: &str = "kro";

/// At most this many objects are remembered for de-duplication.
const MAX_REMEMBERED: usize = 100_000;

/// Normal or Warning.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    /// Something expected happened.
    Normal,
    /// Something needs attention.
    Warning,
}

/// Records events; clones are not needed (shared through the controllers' context).
pub struct Recorder {
    client: Client,
    last: Mutex<HashMap<String, (String, String)>>,
}

impl Recorder {
    /// A recorder writing through `client`.
    pub fn new(client: Client) -> Self {
        Recorder {
            client,
            last: Mutex::default(),
        }
    }

    /// Records an event about `object`, unless it is the last one recorded for it.
    pub(crate) async fn record(
        &self,
        object: &Object,
        kind: EventType,
        reason: &str,
        message: &str,
    ) {
        let text = |pointer: &str| {
            object
                .json()
                .pointer(pointer)
                .and_then(Json::as_str)
                .unwrap_or_default()
        };
        let uid = object.uid();
        {
            let mut last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
            let entry = (reason.to_owned(), message.to_owned());
            if last.get(uid) == Some(&entry) {
                return;
            }
            if last.len() >= MAX_REMEMBERED {
                last.clear();
            }
            last.insert(uid.to_owned(), entry);
        }
        let name = object.name();
        // Events about cluster-scoped objects go to `default`, as client-go's recorder does.
        let namespace = match object.namespace() {
            "" => "default",
            namespace => namespace,
        };
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.as_nanos());
        let now = crate::object_json::now();
        let mut involved = json!({
            "apiVersion": text("/apiVersion"),
            "kind": text("/kind"),
            "name": name,
            "uid": uid,
            "resourceVersion": object.resource_version(),
        });
        if !object.namespace().is_empty() {
            involved["namespace"] = json!(namespace);
        }
        let event = json!({
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": format!("{name}.{nanos:x}"), "namespace": namespace},
            "involvedObject": involved,
            "reason": reason,
            "message": message,
            "source": {"component": COMPONENT},
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
            "type": match kind {
                EventType::Normal => "Normal",
                EventType::Warning => "Warning",
            },
            "reportingComponent": COMPONENT,
            "reportingInstance": "",
        });
        let resource = ApiResource {
            group: String::new(),
            version: "v1".to_owned(),
            api_version: "v1".to_owned(),
            kind: "Event".to_owned(),
            plural: "events".to_owned(),
        };
        let result = match serde_json::from_value::<DynamicObject>(event) {
            Ok(event) => {
                Api::<DynamicObject>::namespaced_with(self.client.clone(), namespace, &resource)
                    .create(&PostParams::default(), &event)
                    .await
                    .map(drop)
            }
            Err(error) => {
                tracing::debug!(%error, "malformed event");
                Ok(())
            }
        };
        if let Err(error) = result {
            tracing::debug!(%error, reason, "cannot record an event");
        }
    }
}
