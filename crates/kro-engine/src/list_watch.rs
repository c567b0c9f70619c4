//! A list-then-watch of one kind (with label and field selectors), re-listing when the server
//! says the watch's resourceVersion is too old (`410 Gone`) and backing off after failures:
//! what kube's `runtime::watcher` does, in the little the engine needs, so that the engine (and
//! the SDK that deploys through it) needs only kube's client.

use std::collections::VecDeque;
use std::time::Duration;

use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use kube::Api;
use kube::api::{DynamicObject, ListParams, WatchEvent, WatchParams};

/// What a [`ListWatch`] saw.
#[derive(Debug)]
pub(crate) enum Event {
    /// A (re-)list starts: what follows up to [`InitDone`](Event::InitDone) is every object
    /// selected.
    Init,
    /// An object of the list.
    InitApply(DynamicObject),
    /// The list is complete.
    InitDone,
    /// An object was created or changed.
    Apply(DynamicObject),
    /// An object was deleted (its last state).
    Delete(DynamicObject),
}

/// The first wait after a failure; it doubles with each failure in a row up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(200);
/// The longest wait between attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// A list-then-watch of the objects of one kind a selector picks (see the module doc).
pub(crate) struct ListWatch {
    api: Api<DynamicObject>,
    labels: Option<String>,
    fields: Option<String>,
    /// Events of a list not handed out yet.
    pending: VecDeque<Event>,
    /// The open watch.
    watch: Option<BoxStream<'static, Result<WatchEvent<DynamicObject>, kube::Error>>>,
    /// Where the watch resumes; `None`: list first.
    version: Option<String>,
    /// Failures in a row (the next attempt waits for them).
    failures: u32,
}

impl ListWatch {
    /// A list-watch of the objects of `api` that `labels` and `fields` (selectors) pick.
    pub(crate) fn new(
        api: Api<DynamicObject>,
        labels: Option<String>,
        fields: Option<String>,
    ) -> ListWatch {
        ListWatch {
            api,
            labels,
            fields,
            pending: VecDeque::new(),
            watch: None,
            version: None,
            failures: 0,
        }
    }

    /// The next event. An error is the server's (or the connection's); the call after it
    /// waits a while (longer after each failure in a row) and tries again.
    pub(crate) async fn next(&mut self) -> Result<Event, kube::Error> {
        if self.failures > 0 {
            let exponent = (self.failures - 1).min(8);
            let wait = FIRST_BACKOFF.saturating_mul(1 << exponent).min(MAX_BACKOFF);
            tokio::time::sleep(wait).await;
        }
        let outcome = self.step().await;
        if outcome.is_err() {
            self.failures = self.failures.saturating_add(1);
        }
        outcome
    }

    async fn step(&mut self) -> Result<Event, kube::Error> {
        loop {
            if let Some(event) = self.pending.pop_front() {
                self.failures = 0;
                return Ok(event);
            }
            let Some(version) = self.version.clone() else {
                self.list().await?;
                continue;
            };
            let watch = match self.watch.as_mut() {
                Some(watch) => watch,
                None => {
                    let mut params = WatchParams::default().timeout(290);
                    params.label_selector.clone_from(&self.labels);
                    params.field_selector.clone_from(&self.fields);
                    match self.api.watch(&params, &version).await {
                        Ok(stream) => self.watch.insert(stream.boxed()),
                        Err(kube::Error::Api(status)) if status.code == 410 => {
                            self.version = None;
                            continue;
                        }
                        Err(error) => return Err(error),
                    }
                }
            };
            match watch.next().await {
                Some(Ok(WatchEvent::Added(object) | WatchEvent::Modified(object))) => {
                    self.resume_after(&object);
                    self.failures = 0;
                    return Ok(Event::Apply(object));
                }
                Some(Ok(WatchEvent::Deleted(object))) => {
                    self.resume_after(&object);
                    self.failures = 0;
                    return Ok(Event::Delete(object));
                }
                Some(Ok(WatchEvent::Bookmark(bookmark))) => {
                    self.version = Some(bookmark.metadata.resource_version);
                }
                Some(Ok(WatchEvent::Error(status))) => {
                    self.watch = None;
                    if status.code == 410 {
                        self.version = None;
                        continue;
                    }
                    return Err(kube::Error::Api(status));
                }
                Some(Err(error)) => {
                    self.watch = None;
                    return Err(error);
                }
                // The server ended the watch (its timeout): resume where it stopped.
                None => self.watch = None,
            }
        }
    }

    /// Lists the selected objects: their events are pending, and the watch resumes after them.
    async fn list(&mut self) -> Result<(), kube::Error> {
        let mut params = ListParams::default();
        params.label_selector.clone_from(&self.labels);
        params.field_selector.clone_from(&self.fields);
        let list = self.api.list(&params).await?;
        self.pending.push_back(Event::Init);
        self.pending
            .extend(list.items.into_iter().map(Event::InitApply));
        self.pending.push_back(Event::InitDone);
        self.version = Some(list.metadata.resource_version.unwrap_or_default());
        Ok(())
    }

    /// The watch resumes after `object`'s resourceVersion.
    fn resume_after(&mut self, object: &DynamicObject) {
        if let Some(version) = &object.metadata.resource_version {
            self.version = Some(version.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use kube::api::ApiResource;
    use kube::client::Body;
    use serde_json::{Value as Json, json};

    use super::*;

    /// A scripted server: each list and each watch request takes the next answer of its
    /// queue (status and body; a watch's body is its events, one JSON document a line), and
    /// the resourceVersion of every watch is recorded.
    /// A watch's answer: its status and its events.
    type WatchAnswer = (u16, Vec<Json>);

    #[derive(Clone, Default)]
    struct Script {
        lists: Arc<Mutex<VecDeque<(u16, Json)>>>,
        watches: Arc<Mutex<VecDeque<WatchAnswer>>>,
        watched_from: Arc<Mutex<Vec<String>>>,
    }

    impl Script {
        fn client(&self) -> kube::Client {
            let script = self.clone();
            let service = tower::service_fn(move |request: http::Request<Body>| {
                let script = script.clone();
                async move { Ok::<_, std::convert::Infallible>(script.answer(request.uri())) }
            });
            kube::Client::new(service, "default")
        }

        fn answer(&self, uri: &http::Uri) -> http::Response<Body> {
            let query = uri.query().unwrap_or_default();
            let (status, body) = if query.contains("watch=true") {
                let version = query
                    .split('&')
                    .find_map(|pair| pair.strip_prefix("resourceVersion="))
                    .unwrap_or_default();
                self.watched_from.lock().unwrap().push(version.to_owned());
                let (status, events) = self.watches.lock().unwrap().pop_front().unwrap_or((
                    500,
                    vec![json!({"kind": "Status", "code": 500, "message": "no more"})],
                ));
                let lines: Vec<String> = events.iter().map(Json::to_string).collect();
                (status, lines.join("\n"))
            } else {
                let (status, body) = self
                    .lists
                    .lock()
                    .unwrap()
                    .pop_front()
                    .unwrap_or((500, json!({"kind": "Status", "code": 500})));
                (status, body.to_string())
            };
            http::Response::builder()
                .status(status)
                .body(Body::from(body.into_bytes()))
                .unwrap()
        }
    }

    fn config_map(name: &str, version: &str) -> Json {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "default", "resourceVersion": version}})
    }

    fn list(version: &str, items: Vec<Json>) -> (u16, Json) {
        (
            200,
            json!({"apiVersion": "v1", "kind": "ConfigMapList",
                "metadata": {"resourceVersion": version}, "items": items}),
        )
    }

    fn api(script: &Script) -> Api<DynamicObject> {
        let resource = ApiResource {
            group: String::new(),
            version: "v1".to_owned(),
            api_version: "v1".to_owned(),
            kind: "ConfigMap".to_owned(),
            plural: "configmaps".to_owned(),
        };
        Api::namespaced_with(script.client(), "default", &resource)
    }

    /// `name@version` of an event, or its kind for the list markers.
    fn describe(event: Event) -> String {
        let of = |object: DynamicObject| {
            format!(
                "{}@{}",
                object.metadata.name.unwrap_or_default(),
                object.metadata.resource_version.unwrap_or_default()
            )
        };
        match event {
            Event::Init => "init".to_owned(),
            Event::InitApply(object) => format!("listed {}", of(object)),
            Event::InitDone => "listed".to_owned(),
            Event::Apply(object) => format!("applied {}", of(object)),
            Event::Delete(object) => format!("deleted {}", of(object)),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_watch_resumes_where_it_stopped_and_lists_again_when_its_version_is_gone() {
        let script = Script::default();
        script.lists.lock().unwrap().extend([
            list("10", vec![config_map("a", "5")]),
            list("20", vec![config_map("b", "19")]),
            list("30", vec![]),
        ]);
        script.watches.lock().unwrap().extend([
            // Ends after one event (the server's timeout): resumed from b's version.
            (
                200,
                vec![json!({"type": "ADDED", "object": config_map("b", "11")})],
            ),
            // Too old: listed again.
            (
                200,
                vec![
                    json!({"type": "ERROR", "object": {"kind": "Status", "apiVersion": "v1",
                    "status": "Failure", "reason": "Expired", "code": 410, "message": "too old"}}),
                ],
            ),
            (
                200,
                vec![
                    json!({"type": "BOOKMARK", "object": {"kind": "ConfigMap", "apiVersion": "v1",
                        "metadata": {"resourceVersion": "24"}}}),
                    json!({"type": "MODIFIED", "object": config_map("b", "25")}),
                    json!({"type": "DELETED", "object": config_map("b", "26")}),
                ],
            ),
            // Refused when it starts, with 410: listed again.
            (
                410,
                vec![
                    json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                    "reason": "Expired", "code": 410, "message": "too old"}),
                ],
            ),
        ]);
        let mut watch = ListWatch::new(api(&script), Some("app=web".to_owned()), None);
        let mut seen = Vec::new();
        for _ in 0..11 {
            seen.push(describe(watch.next().await.expect("no failure")));
        }
        assert_eq!(
            seen,
            [
                "init",
                "listed a@5",
                "listed",
                "applied b@11",
                "init",
                "listed b@19",
                "listed",
                "applied b@25",
                "deleted b@26",
                "init",
                "listed",
            ]
        );
        assert!(
            watch.next().await.is_err(),
            "the server's failure is reported (the script has no more watches)"
        );
        assert_eq!(
            *script.watched_from.lock().unwrap(),
            ["10", "11", "20", "26", "30"],
            "each watch resumes after the last version seen"
        );
    }
}
