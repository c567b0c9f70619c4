//! The router serves the API in process: requests go through `tower::ServiceExt::oneshot`,
//! with no socket, no port and no sleep.

use axum::body::Body;
use http::{Request, StatusCode, header};
use kro_apiserver::{ServerConfig, ServerState, router};
use serde_json::{Value, json};
use tower::ServiceExt as _;

async fn state(token: Option<&str>) -> ServerState {
    ServerState::new(ServerConfig {
        token: token.map(str::to_owned),
        tls: false,
        ..ServerConfig::default()
    })
    .await
    .expect("the state builds")
}

async fn body_json(response: axum::response::Response) -> Value {
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .expect("the body is read");
    serde_json::from_slice(&bytes).expect("the body is JSON")
}

#[tokio::test]
async fn a_created_object_is_read_back_through_the_router() {
    let app = router(state(None).await);
    let object = json!({"metadata": {"name": "settings"}, "data": {"mode": "fast"}});
    let create = Request::post("/api/v1/namespaces/default/configmaps")
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(object.to_string()))
        .expect("a request");
    let created = app.clone().oneshot(create).await.expect("answered");
    assert_eq!(created.status(), StatusCode::CREATED);
    let created = body_json(created).await;
    assert_eq!(created["metadata"]["namespace"], "default");

    let read = Request::get("/api/v1/namespaces/default/configmaps/settings")
        .body(Body::empty())
        .expect("a request");
    let read = app.clone().oneshot(read).await.expect("answered");
    assert_eq!(read.status(), StatusCode::OK);
    let read = body_json(read).await;
    assert_eq!(read["data"]["mode"], "fast");
    assert_eq!(
        read["metadata"]["resourceVersion"],
        created["metadata"]["resourceVersion"]
    );

    let missing = Request::get("/api/v1/namespaces/default/configmaps/absent")
        .body(Body::empty())
        .expect("a request");
    let missing = app.oneshot(missing).await.expect("answered");
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);
    assert_eq!(body_json(missing).await["reason"], "NotFound");
}

#[tokio::test]
async fn the_router_asks_for_the_token_except_on_health_endpoints() {
    let app = router(state(Some("secret")).await);
    let anonymous = Request::get("/api/v1/namespaces")
        .body(Body::empty())
        .expect("a request");
    let anonymous = app.clone().oneshot(anonymous).await.expect("answered");
    assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);

    let with_token = Request::get("/api/v1/namespaces")
        .header(header::AUTHORIZATION, "Bearer secret")
        .body(Body::empty())
        .expect("a request");
    let with_token = app.clone().oneshot(with_token).await.expect("answered");
    assert_eq!(with_token.status(), StatusCode::OK);

    let health = Request::get("/readyz")
        .body(Body::empty())
        .expect("a request");
    let health = app.oneshot(health).await.expect("answered");
    assert_eq!(health.status(), StatusCode::OK);
}

async fn send(
    app: &axum::Router,
    method: &str,
    path: &str,
    content_type: Option<&str>,
    body: &str,
) -> (StatusCode, Value) {
    let mut request = Request::builder().method(method).uri(path);
    if let Some(content_type) = content_type {
        request = request.header(header::CONTENT_TYPE, content_type);
    }
    let request = request
        .body(Body::from(body.to_owned()))
        .expect("a request");
    let response = app.clone().oneshot(request).await.expect("answered");
    let status = response.status();
    (status, body_json(response).await)
}

#[tokio::test]
async fn secret_string_data_is_stored_as_base64_data_on_every_write() {
    let app = router(state(None).await);
    let secrets = "/api/v1/namespaces/default/secrets";
    let (status, created) = send(
        &app,
        "POST",
        secrets,
        Some("application/json"),
        r#"{"metadata":{"name":"s"},"stringData":{"password":"hunter2"}}"#,
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    assert_eq!(created["data"], json!({"password": "aHVudGVyMg=="}));
    assert_eq!(created["type"], "Opaque");
    assert!(created.get("stringData").is_none());

    let (status, patched) = send(
        &app,
        "PATCH",
        &format!("{secrets}/s"),
        Some("application/merge-patch+json"),
        r#"{"stringData":{"user":"admin"}}"#,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        patched["data"],
        json!({"password": "aHVudGVyMg==", "user": "YWRtaW4="})
    );
    assert!(patched.get("stringData").is_none());

    let (status, applied) = send(
        &app,
        "PATCH",
        &format!("{secrets}/applied?fieldManager=test"),
        Some("application/apply-patch+yaml"),
        "apiVersion: v1\nkind: Secret\nmetadata: {name: applied}\nstringData: {token: abc}\n",
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    assert_eq!(applied["data"], json!({"token": "YWJj"}));
    assert!(applied.get("stringData").is_none());

    let mut replaced = applied.clone();
    replaced["stringData"] = json!({"token": "xyz"});
    let (status, updated) = send(
        &app,
        "PUT",
        &format!("{secrets}/applied"),
        Some("application/json"),
        &replaced.to_string(),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(updated["data"], json!({"token": "eHl6"}));
    assert!(updated.get("stringData").is_none());
}

#[tokio::test]
async fn bodies_are_decoded_by_content_type_as_kube_apiserver_does() {
    let app = router(state(None).await);
    let configmaps = "/api/v1/namespaces/default/configmaps";
    for content_type in [
        "text/plain",
        "application/xml",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
        "application/json-patch+json",
    ] {
        let (status, answer) = send(
            &app,
            "POST",
            configmaps,
            Some(content_type),
            r#"{"metadata":{"name":"x"}}"#,
        )
        .await;
        assert_eq!(status, StatusCode::UNSUPPORTED_MEDIA_TYPE, "{content_type}");
        assert_eq!(
            answer,
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                   "message": "the body of the request was in an unknown format - accepted \
                               media types include: application/json, application/yaml, \
                               application/vnd.kubernetes.protobuf",
                   "reason": "UnsupportedMediaType", "code": 415})
        );
    }
    // No Content-Type at all: JSON, as kube-apiserver takes its first serializer.
    let (status, _) = send(
        &app,
        "POST",
        configmaps,
        None,
        r#"{"metadata":{"name":"x"}}"#,
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    // A PATCH with none of the patch types is refused before any handler.
    for content_type in [None, Some("text/plain"), Some("application/json")] {
        let (status, answer) = send(
            &app,
            "PATCH",
            &format!("{configmaps}/x"),
            content_type,
            r#"{"data":{"a":"b"}}"#,
        )
        .await;
        assert_eq!(
            status,
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "{content_type:?}"
        );
        assert_eq!(
            answer,
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                   "message": "415: Unsupported Media Type", "reason": "UnsupportedMediaType",
                   "details": {}, "code": 415})
        );
    }
}

#[tokio::test]
async fn a_definition_whose_rule_does_not_compile_is_refused_with_the_rule_path() {
    let app = router(state(None).await);
    let definition = |rule: &str| {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "gadgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                        "spec": {"type": "object",
                            "properties": {"size": {"type": "integer"}},
                            "x-kubernetes-validations": [{"rule": rule}]}}}}}]}
        })
        .to_string()
    };
    let crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    let (status, answer) = send(
        &app,
        "POST",
        crds,
        Some("application/json"),
        &definition("self.size =="),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{answer}");
    assert_eq!(answer["reason"], "Invalid");
    assert_eq!(
        answer["details"]["causes"][0]["field"],
        "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule"
    );
    assert_eq!(
        answer["details"]["causes"][0]["reason"],
        "FieldValueInvalid"
    );

    let (status, answer) = send(
        &app,
        "POST",
        crds,
        Some("application/json"),
        &definition("self.size <= 10"),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{}", answer["message"]);
}

#[tokio::test]
async fn a_definition_whose_rule_costs_too_much_is_refused_with_kube_apiservers_message() {
    let app = router(state(None).await);
    let definition = |max_items: Option<u64>| {
        let mut names = json!({"type": "array", "items": {"type": "string", "maxLength": 20},
            "x-kubernetes-validations": [{"rule": "self.all(x, x.matches('^[a-z]+$'))"}]});
        if let Some(max_items) = max_items {
            names["maxItems"] = json!(max_items);
        }
        json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "gizmos.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                "names": {"plural": "gizmos", "singular": "gizmo", "kind": "Gizmo"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                        "spec": {"type": "object", "properties": {"names": names}}}}}}]}
        })
    };
    let crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    // Unbounded: up to 1,048,575 strings ("" and a comma each in 3 MiB) of 80 bytes (20
    // characters), each matched for 22 units: 23,068,652. With 1,000 items: 22,002.
    let (status, answer) = send(
        &app,
        "POST",
        crds,
        Some("application/json"),
        &definition(None).to_string(),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{answer}");
    assert_eq!(answer["reason"], "Invalid");
    let cause = &answer["details"]["causes"][0];
    assert_eq!(
        cause["field"],
        "spec.validation.openAPIV3Schema.properties[spec].properties[names]\
         .x-kubernetes-validations[0].rule"
    );
    assert_eq!(cause["reason"], "FieldValueForbidden");
    assert!(
        cause["message"].as_str().is_some_and(|message| message
            .starts_with("Forbidden: estimated rule cost exceeds budget by factor of 2.3x (try")),
        "{answer}"
    );

    let (status, answer) = send(
        &app,
        "POST",
        crds,
        Some("application/json"),
        &definition(Some(1000)).to_string(),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{}", answer["message"]);
}

/// client-go's metadata informers decode every watch event as `PartialObjectMetadata`, and
/// kube-apiserver transforms bookmarks like any other event's object.
#[tokio::test]
async fn a_metadata_only_watch_gets_its_bookmarks_as_partial_object_metadata() {
    let state = ServerState::new(ServerConfig {
        token: None,
        tls: false,
        bookmark_interval: std::time::Duration::from_millis(200),
        ..ServerConfig::default()
    })
    .await
    .expect("the state builds");
    let app = router(state);
    let request = Request::builder()
        .uri("/api/v1/namespaces/default/configmaps?watch=1&allowWatchBookmarks=true&timeoutSeconds=1")
        .header(
            header::ACCEPT,
            "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1",
        )
        .body(Body::empty())
        .expect("a request");
    let response = app.oneshot(request).await.expect("answered");
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .expect("the stream ends at its timeout");
    let events: Vec<Value> = bytes
        .split(|byte| *byte == b'\n')
        .filter(|line| !line.is_empty())
        .map(|line| serde_json::from_slice(line).expect("an event"))
        .collect();
    let bookmark = events
        .iter()
        .find(|event| event["type"] == "BOOKMARK")
        .unwrap_or_else(|| panic!("a bookmark within the second: {events:?}"));
    let mut object = bookmark["object"].clone();
    assert!(object["metadata"]["resourceVersion"].is_string());
    object["metadata"]["resourceVersion"] = json!("<set>");
    assert_eq!(
        object,
        json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
            "metadata": {"resourceVersion": "<set>", "creationTimestamp": null}})
    );
}

/// Events are one resource seen through two versions: what a controller records through
/// `events.k8s.io/v1` (kube-rs's recorder) is what `kubectl describe` lists through core/v1 by
/// `involvedObject`, and the other way round.
#[tokio::test]
async fn events_written_through_one_version_are_read_through_the_other() {
    let app = router(state(None).await);
    let recorded = json!({
        "apiVersion": "events.k8s.io/v1", "kind": "Event",
        "metadata": {"name": "web.1", "namespace": "default"},
        "eventTime": "2026-01-01T00:00:00.000000Z",
        "reportingController": "kro.run/controller",
        "reportingInstance": "kro-1",
        "action": "Reconcile",
        "reason": "Ready",
        "regarding": {"kind": "ConfigMap", "name": "web", "namespace": "default", "apiVersion": "v1"},
        "note": "all resources are ready",
        "type": "Normal",
    });
    let (status, _) = send(
        &app,
        "POST",
        "/apis/events.k8s.io/v1/namespaces/default/events",
        Some("application/json"),
        &recorded.to_string(),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    let (status, listed) = send(
        &app,
        "GET",
        "/api/v1/namespaces/default/events?fieldSelector=involvedObject.name%3Dweb,involvedObject.kind%3DConfigMap",
        None,
        "",
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let items = listed["items"].as_array().cloned().unwrap_or_default();
    assert_eq!(items.len(), 1, "{listed}");
    assert_eq!(items[0]["message"], "all resources are ready");
    assert_eq!(items[0]["reportingComponent"], "kro.run/controller");
    assert_eq!(items[0]["involvedObject"]["name"], "web");
    let (status, core) = send(
        &app,
        "GET",
        "/api/v1/namespaces/default/events/web.1",
        None,
        "",
    )
    .await;
    assert_eq!((status, &core["reason"]), (StatusCode::OK, &json!("Ready")));

    let core_event = json!({
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": "web.2", "namespace": "default"},
        "involvedObject": {"kind": "ConfigMap", "name": "web", "namespace": "default"},
        "reason": "Changed", "message": "data changed", "type": "Normal",
        "source": {"component": "tests"}, "count": 3,
        "firstTimestamp": "2026-01-01T00:00:00Z", "lastTimestamp": "2026-01-01T00:00:02Z",
    });
    let (status, _) = send(
        &app,
        "POST",
        "/api/v1/namespaces/default/events",
        Some("application/json"),
        &core_event.to_string(),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    let (_, listed) = send(
        &app,
        "GET",
        "/apis/events.k8s.io/v1/namespaces/default/events",
        None,
        "",
    )
    .await;
    let names: Vec<&str> = listed["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|item| item["metadata"]["name"].as_str())
        .collect();
    assert_eq!(names, ["web.1", "web.2"]);
    let converted = &listed["items"][1];
    assert_eq!(converted["note"], "data changed");
    assert_eq!(converted["deprecatedCount"], 3);
    assert_eq!(converted["deprecatedSource"]["component"], "tests");
    assert_eq!(converted["regarding"]["name"], "web");

    // One store: a name is taken in both versions, and each version updates the other's.
    let (status, _) = send(
        &app,
        "POST",
        "/api/v1/namespaces/default/events",
        Some("application/json"),
        &json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "web.1"},
            "involvedObject": {"kind": "ConfigMap", "name": "web"}})
        .to_string(),
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT);
    let mut replaced = core.clone();
    replaced["message"] = json!("replaced through core/v1");
    let (status, _) = send(
        &app,
        "PUT",
        "/api/v1/namespaces/default/events/web.1",
        Some("application/json"),
        &replaced.to_string(),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    // Through events.k8s.io only metadata and the series change, as kube-apiserver checks.
    let (status, patched) = send(
        &app,
        "PATCH",
        "/apis/events.k8s.io/v1/namespaces/default/events/web.2",
        Some("application/merge-patch+json"),
        &json!({"metadata": {"labels": {"seen": "yes"}}}).to_string(),
    )
    .await;
    assert_eq!(
        (status, &patched["deprecatedCount"]),
        (StatusCode::OK, &json!(3))
    );
    let (status, refused) = send(
        &app,
        "PATCH",
        "/apis/events.k8s.io/v1/namespaces/default/events/web.2",
        Some("application/merge-patch+json"),
        &json!({"note": "changed"}).to_string(),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        refused["message"],
        "Event \"web.2\" is invalid: message: Invalid value: \"changed\": field is immutable"
    );
    let (_, listed) = send(&app, "GET", "/api/v1/namespaces/default/events", None, "").await;
    let seen: Vec<(&str, &str)> = listed["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|item| {
            (
                item["message"].as_str().unwrap_or_default(),
                item["metadata"]["labels"]["seen"]
                    .as_str()
                    .unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [("replaced through core/v1", ""), ("data changed", "yes")]
    );
    let (_, recorded) = send(
        &app,
        "GET",
        "/apis/events.k8s.io/v1/namespaces/default/events/web.1",
        None,
        "",
    )
    .await;
    assert_eq!(recorded["note"], "replaced through core/v1");
    assert_eq!(recorded["reportingController"], "kro.run/controller");
}

/// A UID in an apply configuration is a precondition, as kube-apiserver holds it
/// (`TestCreateOnApplyFailsWithUID`): an apply with a UID never creates the object, and one
/// whose UID is not the stored object's is refused; with the stored UID it applies.
#[tokio::test]
async fn an_apply_with_a_uid_needs_the_object_with_that_uid() {
    let app = router(state(None).await);
    let maps = "/api/v1/namespaces/default/configmaps";
    let apply = |uid: &str| {
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: held, uid: \"{uid}\"}}\ndata: {{b: c}}\n"
        )
    };
    let path = format!("{maps}/held?fieldManager=test");
    let (status, refused) = send(
        &app,
        "PATCH",
        &path,
        Some("application/apply-patch+yaml"),
        &apply("88e00824-7f0e-11e8-94a1-c8d3ffb15800"),
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT, "{refused}");
    assert_eq!(
        refused["message"],
        "Operation cannot be fulfilled on ConfigMap \"held\": Precondition failed: UID in precondition: 88e00824-7f0e-11e8-94a1-c8d3ffb15800, UID in object meta: "
    );
    let (status, _) = send(&app, "GET", &format!("{maps}/held"), None, "").await;
    assert_eq!(status, StatusCode::NOT_FOUND, "the apply created nothing");

    let (status, created) = send(
        &app,
        "POST",
        maps,
        Some("application/json"),
        r#"{"metadata":{"name":"held"},"data":{"a":"a"}}"#,
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    let uid = created["metadata"]["uid"]
        .as_str()
        .expect("a UID")
        .to_owned();
    let (status, refused) = send(
        &app,
        "PATCH",
        &path,
        Some("application/apply-patch+yaml"),
        &apply("88e00824-7f0e-11e8-94a1-c8d3ffb15800"),
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT, "{refused}");
    let (status, applied) = send(
        &app,
        "PATCH",
        &path,
        Some("application/apply-patch+yaml"),
        &apply(&uid),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{applied}");
    assert_eq!(applied["data"], json!({"a": "a", "b": "c"}));
    assert_eq!(applied["metadata"]["uid"], uid.as_str());
}

/// A Pod of `containers` containers named and imaged only: what defaulting and the managed
/// fields make of it is several times the request.
fn pod_of_containers(name: &str, containers: usize) -> Value {
    let containers: Vec<Value> = (0..containers)
        .map(|index| json!({"name": format!("c{index}"), "image": "i"}))
        .collect();
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": containers},
    })
}

#[tokio::test]
async fn the_size_limit_holds_for_the_object_as_stored_not_as_sent() {
    let app = router(state(None).await);
    // 12,000 bare containers: under 500 KB sent, over 3 MiB once every container has its
    // defaults and its managed fields (such a Pod used to be stored, and every later write
    // to it was refused).
    let pod = pod_of_containers("wide", 12_000);
    let sent = pod.to_string().len();
    assert!(sent < 1 << 20, "{sent} bytes sent");
    let (status, answer) = send(
        &app,
        "POST",
        "/api/v1/namespaces/default/pods",
        Some("application/json"),
        &pod.to_string(),
    )
    .await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{}", answer["kind"]);
    assert_eq!(answer["reason"], "RequestEntityTooLarge");
    assert_eq!(
        answer["message"],
        "Request entity too large: the object as stored would be larger than 3145728 bytes"
    );
    let read = Request::get("/api/v1/namespaces/default/pods/wide")
        .body(Body::empty())
        .expect("a request");
    let read = app.clone().oneshot(read).await.expect("answered");
    assert_eq!(read.status(), StatusCode::NOT_FOUND, "nothing was stored");
    // A dry run is refused alike, and a Pod a tenth as wide is stored.
    let (status, _) = send(
        &app,
        "POST",
        "/api/v1/namespaces/default/pods?dryRun=All",
        Some("application/json"),
        &pod.to_string(),
    )
    .await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    let (status, answer) = send(
        &app,
        "POST",
        "/api/v1/namespaces/default/pods",
        Some("application/json"),
        &pod_of_containers("narrower", 1_000).to_string(),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{}", answer["message"]);
}
