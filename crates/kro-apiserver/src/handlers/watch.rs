//! Watches: the initial events, resumption from a resourceVersion, selector transitions,
//! bookmarks, Tables and expiry.

use std::borrow::Cow;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::response::Response;
use http::HeaderValue;
use serde_json::{Value, json};
use tokio::sync::{Semaphore, broadcast, mpsc};

use crate::error::ApiError;
use crate::objects::meta_str;
use crate::state::{AppState, WatchSlot};
use crate::storage::{Change, ChangeType};
use crate::tables;

use super::request::ResourceRequest;
use super::request::{Selection, Target, require_verb};
use super::response::{metadata_only, partial_object, table_request};

/// How watch events carry objects: as they are, or as one-row Tables (the first with the
/// column definitions) when the client asked for Tables.
pub(super) struct EventFormat {
    pub(super) table: Option<(&'static str, tables::IncludeObject, tables::Printer)>,
    pub(super) headers_sent: bool,
    /// Objects as `PartialObjectMetadata`.
    pub(super) metadata_only: bool,
}

impl EventFormat {
    /// A BOOKMARK event: as `PartialObjectMetadata` too when objects are, since
    /// kube-apiserver transforms every event's object (client-go's metadata informers
    /// refuse any other kind).
    fn bookmark_line(&self, bookmark: &Value) -> Bytes {
        if self.metadata_only {
            let mut partial = partial_object(bookmark);
            // The typed ObjectMeta of PartialObjectMetadata writes its zero time as null.
            partial["metadata"]["creationTimestamp"] = Value::Null;
            return event_line("BOOKMARK", &partial);
        }
        event_line("BOOKMARK", bookmark)
    }

    fn line(&mut self, event_type: &str, object: &Value) -> Bytes {
        let Some((version, include, printer)) = &self.table else {
            if self.metadata_only {
                return event_line(event_type, &partial_object(object));
            }
            return event_line(event_type, object);
        };
        let metadata =
            json!({"resourceVersion": meta_str(object, "resourceVersion").unwrap_or_default()});
        let table = printer.table(
            version,
            std::iter::once(object),
            metadata,
            *include,
            !self.headers_sent,
        );
        self.headers_sent = true;
        event_line(event_type, &table)
    }
}

/// The most bytes of events a watch holds for a client that has not read them yet; a line
/// larger than this is still sent, alone.
pub const WATCH_BUFFER_BYTES: usize = 256 * 1024;

/// The most events a watch holds for a client that has not read them yet.
const WATCH_BUFFER_EVENTS: usize = 256;

/// The events a watch starts with.
enum Initial {
    /// A watch from now: the objects listed (shared with the store), as ADDED.
    Objects(Vec<Arc<Value>>),
    /// A watch resumed from a resourceVersion: the changes since.
    Changes(Vec<Arc<Change>>),
    /// A resumption from a resourceVersion older than the change log: the 410 ERROR event.
    Expired(Bytes),
}

/// The sending side of a watch's buffer, bounded in events and in bytes.
struct Outbox {
    sender: mpsc::Sender<(Bytes, u32, tokio::time::Instant)>,
    budget: Arc<Semaphore>,
}

/// The receiving side: gives each line's bytes back to the budget as the client takes it.
struct Inbox {
    receiver: mpsc::Receiver<(Bytes, u32, tokio::time::Instant)>,
    budget: Arc<Semaphore>,
    /// The server's knobs, for the watch lag they may add.
    state: Arc<AppState>,
}

impl Outbox {
    fn new(state: Arc<AppState>) -> (Outbox, Inbox) {
        let (sender, receiver) = mpsc::channel(WATCH_BUFFER_EVENTS);
        let budget = Arc::new(Semaphore::new(WATCH_BUFFER_BYTES));
        let inbox = Inbox {
            receiver,
            budget: Arc::clone(&budget),
            state,
        };
        (Outbox { sender, budget }, inbox)
    }

    /// Queues a line once the buffer has room; false when the client is gone.
    async fn send(&self, line: Bytes) -> bool {
        let cost = u32::try_from(line.len().clamp(1, WATCH_BUFFER_BYTES)).unwrap_or(u32::MAX);
        tokio::select! {
            permit = self.budget.acquire_many(cost) => match permit {
                Ok(permit) => permit.forget(),
                Err(_) => return false,
            },
            () = self.sender.closed() => return false,
        }
        self.sender
            .send((line, cost, tokio::time::Instant::now()))
            .await
            .is_ok()
    }

    async fn closed(&self) {
        self.sender.closed().await;
    }
}

impl Inbox {
    /// The next line, no earlier than the watch lag knob after it was queued.
    async fn next(&mut self) -> Option<Bytes> {
        let (line, cost, queued) = self.receiver.recv().await?;
        let lag = self.state.knobs.watch_lag();
        if !lag.is_zero() {
            tokio::time::sleep_until(queued + lag).await;
        }
        self.budget.add_permits(cost as usize);
        Some(line)
    }
}

/// A watch event as it is encoded, borrowing its object.
#[derive(serde::Serialize)]
struct Event<'a> {
    #[serde(rename = "type")]
    event_type: &'a str,
    object: &'a Value,
}

/// One line of a watch stream. The object is encoded where it is (a `json!` event would copy
/// it first), and the line keeps no spare capacity: the watch's buffer is counted in line
/// lengths, and a `Vec` grown by doubling can hold twice its length.
pub(super) fn event_line(event_type: &str, object: &Value) -> Bytes {
    let mut line = serde_json::to_vec(&Event { event_type, object }).unwrap_or_default();
    line.push(b'\n');
    line.shrink_to_fit();
    Bytes::from(line)
}

/// What a change means to a watcher with a selection: the event to send, if any.
/// The event a watcher of `target` with `selection` gets for `change`, if any. An object that
/// leaves the selection is DELETED with its previous content at the change's
/// resourceVersion, as kube-apiserver's watch cache sends it.
pub(super) fn filter_change<'a>(
    target: &Target,
    selection: &Selection,
    change: &'a Change,
) -> Option<(&'static str, Cow<'a, Value>)> {
    if change.key.group != target.storage_group() || change.key.resource != target.resource.plural {
        return None;
    }
    if let Some(namespace) = &target.namespace
        && change.key.namespace != *namespace
    {
        return None;
    }
    if target.storage_group() != target.group() {
        // Kept in another group's form (an events.k8s.io Event): seen as this one serves it.
        let served = Change {
            object: target.served(Arc::clone(&change.object)),
            previous: change
                .previous
                .as_ref()
                .map(|previous| target.served(Arc::clone(previous))),
            key: change.key.clone(),
            ..*change
        };
        return select_change(selection, &served)
            .map(|(event_type, object)| (event_type, Cow::Owned(object.into_owned())));
    }
    select_change(selection, change)
}

/// The event a watcher with `selection` gets for `change` of the resource it watches.
fn select_change<'a>(
    selection: &Selection,
    change: &'a Change,
) -> Option<(&'static str, Cow<'a, Value>)> {
    let now = selection.matches(&change.object);
    let before = change
        .previous
        .as_deref()
        .is_some_and(|previous| selection.matches(previous));
    let current = || Cow::Borrowed(&*change.object);
    match change.change_type {
        ChangeType::Added => now.then(|| ("ADDED", current())),
        ChangeType::Deleted => before.then(|| ("DELETED", current())),
        ChangeType::Modified => match (before, now) {
            (true, true) => Some(("MODIFIED", current())),
            (false, true) => Some(("ADDED", current())),
            (true, false) => {
                let mut last = change
                    .previous
                    .as_deref()
                    .cloned()
                    .unwrap_or_else(|| Value::clone(&change.object));
                if let Some(version) = change.object.pointer("/metadata/resourceVersion") {
                    last["metadata"]["resourceVersion"] = version.clone();
                }
                Some(("DELETED", Cow::Owned(last)))
            }
            (false, false) => None,
        },
    }
}

pub(super) fn watch(request: &ResourceRequest) -> Result<Response, ApiError> {
    let ResourceRequest {
        state,
        target,
        query,
        headers,
        ..
    } = request;
    require_verb(target, "watch")?;
    let mut format = EventFormat {
        table: table_request(query, headers)?
            .map(|(version, include)| (version, include, tables::Printer::of(&target.resource))),
        headers_sent: false,
        metadata_only: metadata_only(headers),
    };
    if query.flag("sendInitialEvents") {
        return Err(ApiError::invalid_request(
            "ListOptions.meta.k8s.io \"\" is invalid: sendInitialEvents: Forbidden: sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled".to_owned(),
        ));
    }
    let selection = Selection::parse(target, query)?;
    let bookmarks = query.flag("allowWatchBookmarks");
    let timeout = match query.get("timeoutSeconds") {
        Some(text) => Duration::from_secs(
            text.parse::<u64>()
                .map_err(|_| ApiError::bad_request(format!("invalid timeoutSeconds {text:?}")))?,
        ),
        None => Duration::from_secs(1800 + u64::from(uuid::Uuid::new_v4().as_bytes()[0]) * 7),
    };
    let Some(slot) = WatchSlot::acquire(state) else {
        return Err(ApiError::new(
            429,
            "TooManyRequests",
            "too many watches are open".to_owned(),
        ));
    };
    // The initial events are kept as the store's shared objects and formatted one at a time
    // as the client reads, so a watch costs no more than its buffer however much it lists.
    let (initial, live, start_revision) = match query
        .get("resourceVersion")
        .filter(|v| !v.is_empty() && *v != "0")
    {
        None => {
            let listed = target.list(state, true);
            let objects = listed
                .objects
                .into_iter()
                .filter(|object| selection.matches(object))
                .collect();
            (Initial::Objects(objects), listed.live, listed.revision)
        }
        Some(text) => {
            let revision: u64 = text
                .parse()
                .map_err(|_| ApiError::bad_request(format!("invalid resource version {text:?}")))?;
            match state.store.watch_from(revision) {
                Ok(start) => (
                    Initial::Changes(start.backlog),
                    Some(start.live),
                    start.revision,
                ),
                Err(error) if error.code == 410 => (
                    Initial::Expired(event_line("ERROR", &error.to_status())),
                    None,
                    revision,
                ),
                Err(error) => return Err(error),
            }
        }
    };
    let (outbox, receiver) = Outbox::new(Arc::clone(state));
    let target = Target {
        resource: Arc::clone(&target.resource),
        namespace: target.namespace.clone(),
        name: None,
        subresource: None,
    };
    let interval = state.config.bookmark_interval;
    let mut expiry = state.watch_expiry.subscribe();
    let mut stopping = state.stopping.subscribe();
    tokio::spawn(async move {
        let _slot = slot;
        let sent = match initial {
            Initial::Objects(objects) => {
                let mut sent = true;
                for object in objects {
                    sent = sent && outbox.send(format.line("ADDED", &object)).await;
                }
                sent
            }
            Initial::Changes(changes) => {
                let mut sent = true;
                for change in changes {
                    if let Some((event_type, object)) = filter_change(&target, &selection, &change)
                    {
                        sent = sent && outbox.send(format.line(event_type, &object)).await;
                    }
                }
                sent
            }
            Initial::Expired(line) => {
                outbox.send(line).await;
                false
            }
        };
        let (true, Some(mut live)) = (sent, live) else {
            return;
        };
        let mut last_revision = start_revision;
        let deadline = tokio::time::sleep(timeout);
        tokio::pin!(deadline);
        let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + interval, interval);
        loop {
            tokio::select! {
                () = &mut deadline => return,
                () = outbox.closed() => return,
                _ = stopping.changed() => return,
                _ = expiry.changed() => {
                    let error = ApiError::expired(format!(
                        "too old resource version: {last_revision} (the watch was expired)"
                    ));
                    outbox.send(event_line("ERROR", &error.to_status())).await;
                    return;
                }
                _ = ticker.tick(), if bookmarks => {
                    let bookmark = json!({
                        "kind": target.resource.gvk.kind(),
                        "apiVersion": target.resource.api_version(),
                        "metadata": { "resourceVersion": last_revision.to_string() },
                    });
                    if !outbox.send(format.bookmark_line(&bookmark)).await {
                        return;
                    }
                }
                received = live.recv() => match received {
                    Ok(change) => {
                        if change.revision <= last_revision {
                            continue;
                        }
                        last_revision = change.revision;
                        if let Some((event_type, object)) = filter_change(&target, &selection, &change)
                            && !outbox.send(format.line(event_type, &object)).await
                        {
                            return;
                        }
                    }
                    Err(broadcast::error::RecvError::Lagged(_)) => {
                        let error = ApiError::expired(format!(
                            "too old resource version: {last_revision} (the watch fell behind)"
                        ));
                        outbox.send(event_line("ERROR", &error.to_status())).await;
                        return;
                    }
                    Err(broadcast::error::RecvError::Closed) => return,
                },
            }
        }
    });
    let stream = futures_util::stream::unfold(receiver, |mut receiver| async move {
        receiver
            .next()
            .await
            .map(|line| (Ok::<Bytes, Infallible>(line), receiver))
    });
    let mut response = Response::new(Body::from_stream(stream));
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response.headers_mut().insert(
        http::header::CACHE_CONTROL,
        HeaderValue::from_static("no-cache, private"),
    );
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_line_is_the_type_then_the_object_as_kube_apiserver_writes_it() {
        let object = json!({"kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"k": "v\n"}});
        let line = event_line("MODIFIED", &object);
        assert_eq!(
            String::from_utf8_lossy(&line),
            "{\"type\":\"MODIFIED\",\"object\":{\"data\":{\"k\":\"v\\n\"},\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"a\"}}}\n"
        );
        let parsed: Value = serde_json::from_slice(&line).expect("one JSON value");
        assert_eq!(parsed, json!({"type": "MODIFIED", "object": object}));
    }
}
