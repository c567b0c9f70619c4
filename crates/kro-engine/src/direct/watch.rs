//! Watches that follow what a direct deploy waits for: the instance's own objects (by their
//! ApplySet label), the objects externalRefs read (by name) and the lists they select from.
//! What they see is handed to the engine, which plans again; nothing polls.

use std::collections::HashSet;

use kro_runtime::ObjectKey;
use kube::api::DynamicObject;
use serde_json::Value as Json;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::kinds::ServedKind;
use crate::list_watch::{Event, ListWatch};

/// Which objects of a kind in a namespace a watch follows.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) enum Selection {
    /// The members of an ApplySet (by `applyset.kubernetes.io/part-of`).
    Members(String),
    /// One object, by name.
    Named(String),
    /// Every object.
    All,
}

/// What one watch follows.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) struct Target {
    /// `group/version/kind` of the kind, as resolved.
    pub(super) api_version: String,
    pub(super) kind: String,
    pub(super) namespace: Option<String>,
    pub(super) selection: Selection,
}

/// What a watch saw.
#[derive(Debug)]
pub(super) enum Seen {
    /// An object as it is now.
    Object(Json),
    /// An object is gone: its key and UID.
    Gone(ObjectKey, String),
    /// A (re-)list of the target ended: every object it selects is in `present`, so one held
    /// and not there was deleted while no watch was open.
    Listed {
        /// What was listed.
        target: Target,
        /// The group of its kind.
        group: String,
        /// The objects listed.
        present: HashSet<ObjectKey>,
    },
}

impl Target {
    /// Whether `object` (known by `key`) is one this target selects.
    pub(super) fn selects(&self, group: &str, key: &ObjectKey, object: &Json) -> bool {
        key.group == group
            && key.kind == self.kind
            && (self.namespace.is_none() || key.namespace == self.namespace)
            && match &self.selection {
                Selection::Members(id) => {
                    object
                        .pointer("/metadata/labels")
                        .and_then(|labels| labels.get(kro_graph::metadata::APPLYSET_PART_OF_LABEL))
                        .and_then(Json::as_str)
                        == Some(id.as_str())
                }
                Selection::Named(name) => key.name == *name,
                Selection::All => true,
            }
    }
}

/// The watches of one deploy; they stop when it is dropped.
pub(super) struct Watches {
    client: kube::Client,
    started: HashSet<Target>,
    sender: mpsc::UnboundedSender<Seen>,
    receiver: mpsc::UnboundedReceiver<Seen>,
    tasks: Vec<JoinHandle<()>>,
}

impl Drop for Watches {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

impl Watches {
    pub(super) fn new(client: kube::Client) -> Watches {
        let (sender, receiver) = mpsc::unbounded_channel();
        Watches {
            client,
            started: HashSet::new(),
            sender,
            receiver,
            tasks: Vec::new(),
        }
    }

    /// Starts a watch of `target` (served as `kind`) unless one runs already. A new watch
    /// first reports every object it selects, so nothing that changed before it started is
    /// missed.
    pub(super) fn follow(&mut self, target: Target, kind: &ServedKind) {
        if !self.started.insert(target.clone()) {
            return;
        }
        let api = kind.api(&self.client, target.namespace.as_deref());
        let (labels, fields) = match &target.selection {
            Selection::Members(id) => (
                Some(format!(
                    "{}={id}",
                    kro_graph::metadata::APPLYSET_PART_OF_LABEL
                )),
                None,
            ),
            Selection::Named(name) => (None, Some(format!("metadata.name={name}"))),
            Selection::All => (None, None),
        };
        let types = kube::api::TypeMeta {
            api_version: kind.resource.api_version.clone(),
            kind: kind.resource.kind.clone(),
        };
        let sender = self.sender.clone();
        let group = kind.resource.group.clone();
        self.tasks.push(tokio::spawn(async move {
            let mut stream = ListWatch::new(api, labels, fields);
            let mut listed = HashSet::new();
            loop {
                let seen = match stream.next().await {
                    Ok(Event::Apply(object)) => as_json(object, &types).map(Seen::Object),
                    Ok(Event::InitApply(object)) => as_json(object, &types)
                        .inspect(|object| {
                            listed.extend(ObjectKey::of(object));
                        })
                        .map(Seen::Object),
                    Ok(Event::Delete(object)) => {
                        let uid = object.metadata.uid.clone().unwrap_or_default();
                        as_json(object, &types)
                            .as_ref()
                            .and_then(ObjectKey::of)
                            .map(|key| Seen::Gone(key, uid))
                    }
                    Ok(Event::Init) => {
                        listed.clear();
                        None
                    }
                    Ok(Event::InitDone) => Some(Seen::Listed {
                        target: target.clone(),
                        group: group.clone(),
                        present: std::mem::take(&mut listed),
                    }),
                    Err(error) => {
                        tracing::debug!(%error, "watch failed; retrying");
                        None
                    }
                };
                if let Some(seen) = seen
                    && sender.send(seen).is_err()
                {
                    return;
                }
            }
        }));
    }

    /// The next thing seen (waits for it).
    pub(super) async fn next(&mut self) -> Option<Seen> {
        self.receiver.recv().await
    }

    /// What was seen and not taken yet, without waiting.
    pub(super) fn drain(&mut self) -> Vec<Seen> {
        let mut seen = Vec::new();
        while let Ok(next) = self.receiver.try_recv() {
            seen.push(next);
        }
        seen
    }
}

/// An object of a watch as JSON, with the apiVersion and kind that list answers leave out.
fn as_json(mut object: DynamicObject, types: &kube::api::TypeMeta) -> Option<Json> {
    object.types.get_or_insert_with(|| types.clone());
    serde_json::to_value(object).ok()
}
