//! The HTTP API at the wire: status codes, `Status` bodies, content types and watch streams
//! for requests kubectl does not make, including bad input.

use std::io::{Read, Write};
use std::net::TcpStream;

use kro_apiserver::{RunningServer, ServerConfig, start_in_background};
use serde_json::{Value, json};

fn server() -> RunningServer {
    start_in_background(ServerConfig {
        token: None,
        tls: false,
        max_body_bytes: 64 * 1024,
        ..ServerConfig::default()
    })
    .expect("the server starts")
}

struct Reply {
    code: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Reply {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|error| {
            panic!(
                "not JSON ({error}): {}",
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }
}

fn dechunk(mut body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let Some(end) = body.windows(2).position(|w| w == b"\r\n") else {
            return out;
        };
        let size = usize::from_str_radix(
            std::str::from_utf8(&body[..end])
                .expect("chunk size")
                .trim(),
            16,
        )
        .expect("hex chunk size");
        if size == 0 {
            return out;
        }
        out.extend_from_slice(&body[end + 2..end + 2 + size]);
        body = &body[end + 2 + size + 2..];
    }
}

fn request(
    server: &RunningServer,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Reply {
    let mut stream = TcpStream::connect(server.address()).expect("connect");
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).expect("write head");
    // The server may answer before reading a body it refuses.
    let _ = stream.write_all(body);
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).expect("read");
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a complete response head");
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let mut lines = head.lines();
    let code = lines
        .next()
        .and_then(|status| status.split(' ').nth(1))
        .and_then(|code| code.parse().ok())
        .expect("status code");
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(key, value)| (key.trim().to_owned(), value.trim().to_owned()))
        .collect();
    let mut body = raw[split + 4..].to_vec();
    if headers
        .iter()
        .any(|(key, value)| key.eq_ignore_ascii_case("transfer-encoding") && value == "chunked")
    {
        body = dechunk(&body);
    }
    Reply {
        code,
        headers,
        body,
    }
}

const JSON: (&str, &str) = ("Content-Type", "application/json");

fn create_config_map(server: &RunningServer, name: &str) -> Value {
    let body = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"a": "1"}});
    let reply = request(
        server,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        &[JSON],
        body.to_string().as_bytes(),
    );
    assert_eq!(reply.code, 201, "{}", String::from_utf8_lossy(&reply.body));
    reply.json()
}

#[test]
fn bad_input_gets_a_status_never_a_crash() {
    let server = server();
    let path = "/api/v1/namespaces/default/configmaps";
    let malformed = request(&server, "POST", path, &[JSON], b"{\"metadata\": ");
    assert_eq!(malformed.code, 400);
    assert_eq!(malformed.json()["kind"], "Status");
    assert_eq!(malformed.json()["reason"], "BadRequest");
    let not_object = request(&server, "POST", path, &[JSON], b"[1, 2]");
    assert_eq!(not_object.code, 400);
    let huge = vec![b' '; 128 * 1024];
    let too_large = request(&server, "POST", path, &[JSON], &huge);
    assert_eq!(too_large.code, 413);
    assert_eq!(too_large.json()["reason"], "RequestEntityTooLarge");
    let protobuf = request(
        &server,
        "POST",
        path,
        &[("Content-Type", "application/vnd.kubernetes.protobuf")],
        b"k8s\0",
    );
    // Protobuf bodies of built-in kinds are decoded; an empty envelope names no kind.
    assert_eq!(protobuf.code, 400);
    assert_eq!(protobuf.json()["reason"], "BadRequest");
    let selector = request(
        &server,
        "GET",
        &format!("{path}?labelSelector=a%20in%20(b"),
        &[],
        b"",
    );
    assert_eq!(selector.code, 400);
    // An unknown group falls through to kube-apiserver's plain-text 404; an unknown
    // resource of a served group is a NotFound Status.
    let unknown_group = request(&server, "GET", "/apis/nope.example.com/v1/things", &[], b"");
    assert_eq!(unknown_group.code, 404);
    assert_eq!(
        unknown_group.header("content-type"),
        Some("text/plain; charset=utf-8")
    );
    assert_eq!(unknown_group.body, b"404 page not found\n");
    let unknown = request(&server, "GET", "/apis/apps/v1/things", &[], b"");
    assert_eq!(unknown.code, 404);
    assert_eq!(
        unknown.json()["message"],
        "the server could not find the requested resource"
    );
    assert_eq!(unknown.json()["details"], json!({}));
    let protobuf_only = request(
        &server,
        "GET",
        path,
        &[("Accept", "application/vnd.kubernetes.protobuf")],
        b"",
    );
    assert_eq!(protobuf_only.code, 200);
    assert_eq!(
        protobuf_only.header("content-type"),
        Some("application/vnd.kubernetes.protobuf")
    );
    let html_only = request(&server, "GET", path, &[("Accept", "text/html")], b"");
    assert_eq!(html_only.code, 406);
    // The server still serves after all of that.
    create_config_map(&server, "after");
}

#[test]
fn aggregated_discovery_is_recognised_by_its_content_type() {
    let server = server();
    let reply = request(
        &server,
        "GET",
        "/apis",
        &[(
            "Accept",
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json",
        )],
        b"",
    );
    assert_eq!(reply.code, 200);
    assert_eq!(
        reply.header("content-type"),
        Some("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList")
    );
    assert_eq!(reply.json()["kind"], "APIGroupDiscoveryList");
    let legacy = request(
        &server,
        "GET",
        "/apis",
        &[("Accept", "application/json")],
        b"",
    );
    assert_eq!(legacy.json()["kind"], "APIGroupList");
    let index = request(&server, "GET", "/openapi/v3", &[], b"");
    let url = index.json()["paths"]["apis/apps/v1"]["serverRelativeURL"]
        .as_str()
        .expect("apps/v1 is indexed")
        .to_owned();
    let document = request(&server, "GET", &url, &[], b"");
    assert_eq!(document.code, 200);
    assert_eq!(document.json()["openapi"], "3.0.0");
}

#[test]
fn openapi_v2_is_negotiated_as_kube_apiserver_does() {
    let server = server();
    let json = request(&server, "GET", "/openapi/v2", &[], b"");
    assert_eq!(json.code, 200);
    assert_eq!(json.header("content-type"), Some("application/json"));
    let document = json.json();
    assert_eq!(document["swagger"], "2.0");
    assert!(
        document["definitions"]
            .get("io.k8s.api.core.v1.ConfigMap")
            .is_some()
    );
    let etag = json.header("etag").expect("an ETag").to_owned();

    let protobuf = request(
        &server,
        "GET",
        "/openapi/v2",
        &[(
            "Accept",
            "application/com.github.proto-openapi.spec.v2@v1.0+protobuf",
        )],
        b"",
    );
    assert_eq!(protobuf.code, 200);
    assert_eq!(
        protobuf.header("content-type"),
        Some("application/com.github.proto-openapi.spec.v2.v1.0+protobuf")
    );
    // Field 1 (swagger), length-delimited: "2.0".
    assert_eq!(&protobuf.body[..5], b"\x0a\x032.0");
    assert_eq!(protobuf.header("etag"), Some(etag.as_str()));

    let unchanged = request(
        &server,
        "GET",
        "/openapi/v2",
        &[("If-None-Match", etag.as_str())],
        b"",
    );
    assert_eq!(unchanged.code, 304);
    let refused = request(
        &server,
        "GET",
        "/openapi/v2",
        &[("Accept", "text/plain")],
        b"",
    );
    assert_eq!(refused.code, 406);
}

#[test]
fn a_write_that_changes_nothing_keeps_the_resource_version() {
    let server = server();
    let created = create_config_map(&server, "same");
    let version = created["metadata"]["resourceVersion"].clone();
    let path = "/api/v1/namespaces/default/configmaps/same";
    let reply = request(
        &server,
        "PUT",
        path,
        &[JSON],
        created.to_string().as_bytes(),
    );
    assert_eq!(reply.code, 200);
    assert_eq!(reply.json()["metadata"]["resourceVersion"], version);
    let patch = request(
        &server,
        "PATCH",
        path,
        &[("Content-Type", "application/merge-patch+json")],
        br#"{"data":{"a":"1"}}"#,
    );
    assert_eq!(patch.json()["metadata"]["resourceVersion"], version);
    let dry = request(
        &server,
        "PATCH",
        &format!("{path}?dryRun=All"),
        &[("Content-Type", "application/merge-patch+json")],
        br#"{"data":{"a":"2"}}"#,
    );
    assert_eq!(dry.code, 200);
    assert_eq!(dry.json()["data"]["a"], "2");
    let stored = request(&server, "GET", path, &[], b"").json();
    assert_eq!(stored["data"]["a"], "1", "a dry run stores nothing");
    assert_eq!(stored["metadata"]["resourceVersion"], version);
}

#[test]
fn a_watch_from_a_compacted_version_gets_410_in_the_stream() {
    let server = server();
    create_config_map(&server, "one");
    create_config_map(&server, "two");
    let path = "/api/v1/namespaces/default/configmaps";
    let resumed = request(
        &server,
        "GET",
        &format!("{path}?watch=true&resourceVersion=5&timeoutSeconds=1"),
        &[],
        b"",
    );
    assert_eq!(resumed.code, 200);
    let lines: Vec<Value> = resumed
        .body
        .split(|byte| *byte == b'\n')
        .filter(|line| !line.is_empty())
        .map(|line| serde_json::from_slice(line).expect("an event per line"))
        .collect();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0]["type"], "ADDED");
    assert_eq!(lines[0]["object"]["metadata"]["name"], "two");
    server.compact();
    let expired = request(
        &server,
        "GET",
        &format!("{path}?watch=true&resourceVersion=5"),
        &[],
        b"",
    );
    assert_eq!(expired.code, 200);
    let event: Value = serde_json::from_slice(expired.body.trim_ascii()).expect("one event");
    assert_eq!(event["type"], "ERROR");
    assert_eq!(event["object"]["code"], 410);
    assert_eq!(event["object"]["reason"], "Expired");
    let ahead = request(
        &server,
        "GET",
        &format!("{path}?watch=true&resourceVersion=999"),
        &[],
        b"",
    );
    assert_eq!(ahead.code, 504);
}

#[test]
fn test_knobs_delay_fail_and_count_requests() {
    let server = server();
    let path = "/api/v1/namespaces/default/configmaps";
    let created = request(
        &server,
        "POST",
        path,
        &[JSON],
        br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"k"}}"#,
    );
    assert_eq!(created.code, 201);
    server.reset_request_counts();

    server.inject_failure(kro_apiserver::InjectedFailure::new(
        "patch",
        "configmaps",
        2,
        503,
    ));
    let merge = ("Content-Type", "application/merge-patch+json");
    let item = format!("{path}/k");
    let patch = |value: &str| {
        request(
            &server,
            "PATCH",
            &item,
            &[merge],
            format!(r#"{{"data":{{"v":"{value}"}}}}"#).as_bytes(),
        )
    };
    assert_eq!(patch("1").code, 200);
    let failed = patch("2");
    assert_eq!(failed.code, 503);
    assert_eq!(failed.json()["reason"], "ServiceUnavailable");
    assert_eq!(patch("3").code, 200, "an injected failure fires once");
    let stored = request(&server, "GET", &item, &[], b"");
    assert_eq!(stored.json()["data"]["v"], "3");

    // Latency applies to resource requests (a lower bound, not a timing target).
    server.set_latency(std::time::Duration::from_millis(50));
    let started = std::time::Instant::now();
    assert_eq!(request(&server, "GET", &item, &[], b"").code, 200);
    assert!(started.elapsed() >= std::time::Duration::from_millis(50));
    server.set_latency(std::time::Duration::ZERO);

    let counts = server.request_counts();
    assert_eq!(counts[&("patch".to_owned(), "configmaps".to_owned())], 3);
    assert_eq!(counts[&("get".to_owned(), "configmaps".to_owned())], 2);
    assert_eq!(server.requests_with_verb("patch"), 3);
    assert_eq!(server.requests_with_verb("create"), 0);
}
