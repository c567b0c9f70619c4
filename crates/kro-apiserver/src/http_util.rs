//! HTTP details shared by the handlers: JSON responses, content negotiation, request bodies.

use axum::body::Body;
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, HeaderValue, StatusCode, header};
use serde_json::Value;

use crate::error::ApiError;

/// Every API error answers as a `Status` with its code: the one place errors become HTTP.
impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let code = StatusCode::from_u16(self.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut response = json_response(code, &self.to_status());
        if let Some(seconds) = self.details.retry_after_seconds {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        response
    }
}

/// A JSON response with `code`.
pub fn json_response(code: StatusCode, body: &Value) -> Response {
    json_response_typed(code, body, "application/json")
}

/// A JSON response with an explicit content type (aggregated discovery is recognised by it).
pub fn json_response_typed(code: StatusCode, body: &Value, content_type: &str) -> Response {
    let bytes = serde_json::to_vec(body).unwrap_or_default();
    let mut response = Response::new(Body::from(bytes));
    *response.status_mut() = code;
    if let Ok(value) = HeaderValue::from_str(content_type) {
        response.headers_mut().insert(header::CONTENT_TYPE, value);
    }
    response
}

/// One entry of an `Accept` header: the media type and its parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MediaRange {
    /// `application/json`.
    pub media_type: String,
    /// Parameters such as `as=Table`, `g=meta.k8s.io`, `v=v1`.
    pub parameters: Vec<(String, String)>,
}

impl MediaRange {
    /// The value of a parameter.
    pub fn parameter(&self, name: &str) -> Option<&str> {
        self.parameters
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }
}

/// The entries of the `Accept` header, in order (an absent header accepts anything).
pub fn accepted(headers: &HeaderMap) -> Vec<MediaRange> {
    let Some(accept) = headers
        .get(header::ACCEPT)
        .and_then(|value| value.to_str().ok())
    else {
        return anything();
    };
    let ranges: Vec<MediaRange> = accept
        .split(',')
        .filter_map(|entry| {
            let mut parts = entry.split(';').map(str::trim);
            let media_type = parts.next().filter(|media| !media.is_empty())?;
            let parameters = parts
                .filter_map(|parameter| {
                    let (key, value) = parameter.split_once('=')?;
                    Some((key.trim().to_owned(), value.trim().to_owned()))
                })
                .collect();
            Some(MediaRange {
                media_type: media_type.to_ascii_lowercase(),
                parameters,
            })
        })
        .collect();
    // An empty header asks for nothing in particular, as no header does: kube-apiserver
    // answers with its first serializer (JSON), not 406.
    if ranges.is_empty() {
        return anything();
    }
    ranges
}

/// What a client that names no media type accepts: `*/*`.
fn anything() -> Vec<MediaRange> {
    vec![MediaRange {
        media_type: "*/*".to_owned(),
        parameters: Vec::new(),
    }]
}

/// Whether the client accepts plain JSON (listed anywhere, or via a wildcard).
pub fn accepts_json(ranges: &[MediaRange]) -> bool {
    ranges.iter().any(|range| {
        range.parameter("as").is_none()
            && matches!(
                range.media_type.as_str(),
                "application/json" | "application/*" | "*/*" | "application/yaml"
            )
    })
}

/// Fails with 406 unless plain JSON is acceptable.
///
/// # Errors
/// 406 NotAcceptable.
pub fn require_json(headers: &HeaderMap) -> Result<(), ApiError> {
    if accepts_json(&accepted(headers)) {
        Ok(())
    } else {
        Err(ApiError::not_acceptable())
    }
}

/// The media type of the request body, without parameters, lower-cased.
pub fn content_type(headers: &HeaderMap) -> String {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.split(';').next())
        .map(|value| value.trim().to_ascii_lowercase())
        .unwrap_or_default()
}

/// The most nesting a YAML request body may have.
const MAX_YAML_DEPTH: usize = 100;

/// The media types kube-apiserver decodes request bodies of built-in kinds from.
pub const BODY_MEDIA_TYPES: [&str; 3] = [
    "application/json",
    "application/yaml",
    "application/vnd.kubernetes.protobuf",
];

/// How a request body of `media_type` is read: JSON (no type at all counts as JSON, as
/// kube-apiserver takes its first serializer), YAML, or not at all (415). Patch bodies are
/// decoded by the patch handler as the JSON or YAML their patch type says, after it has
/// checked that type.
fn body_syntax(media_type: &str) -> Result<bool, ApiError> {
    match media_type {
        "" | "application/json" => Ok(false),
        "application/yaml" => Ok(true),
        // Protobuf bodies of built-in kinds are turned into JSON by the protobuf layer
        // before any handler (custom resources get 415 there); CBOR is off by default in
        // kube-apiserver;
        // text/plain, XML, forms and multipart are not Kubernetes encodings.
        _ => Err(ApiError::unsupported_media_type(&BODY_MEDIA_TYPES)),
    }
}

/// Decodes a JSON or YAML request body into a value.
///
/// # Errors
/// 415 UnsupportedMediaType for a media type kube-apiserver does not decode (text/plain,
/// XML, forms, multipart, CBOR, and protobuf, which reaches here only in a patch); 400 BadRequest naming the line and
/// column of malformed input.
pub fn decode_body(bytes: &[u8], media_type: &str) -> Result<Value, ApiError> {
    let yaml = body_syntax(media_type)?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::bad_request("the request body is empty"));
    }
    if !yaml || bytes.first().is_some_and(|b| *b == b'{' || *b == b'[') {
        match serde_json::from_slice::<Value>(bytes) {
            Ok(value) => return Ok(value),
            Err(error) if !yaml => {
                return Err(ApiError::bad_request(format!(
                    "the request body is not valid JSON: {error}"
                )));
            }
            Err(_) => {}
        }
    }
    let text = std::str::from_utf8(bytes)
        .map_err(|_| ApiError::bad_request("the request body is not UTF-8"))?;
    let mut budget = serde_saphyr::Budget::default();
    budget.max_depth = MAX_YAML_DEPTH;
    let mut options = serde_saphyr::Options::default();
    options.budget = Some(budget);
    options.with_snippet = false;
    serde_saphyr::from_str_with_options::<Value>(text, options).map_err(|error| {
        ApiError::bad_request(format!("the request body is not valid YAML: {error}"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_lists_are_parsed_with_their_parameters() {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::ACCEPT,
            HeaderValue::from_static(
                "application/json;as=Table;v=v1;g=meta.k8s.io,application/json",
            ),
        );
        let ranges = accepted(&headers);
        assert_eq!(ranges.len(), 2);
        assert_eq!(ranges[0].parameter("as"), Some("Table"));
        assert!(accepts_json(&ranges));
        headers.insert(
            header::ACCEPT,
            HeaderValue::from_static("application/vnd.kubernetes.protobuf"),
        );
        assert!(require_json(&headers).is_err());
        headers.insert(
            header::ACCEPT,
            HeaderValue::from_static("application/vnd.kubernetes.protobuf,application/json"),
        );
        assert!(require_json(&headers).is_ok());
        // An empty header is no preference (kube-apiserver answers JSON), not a refusal.
        headers.insert(header::ACCEPT, HeaderValue::from_static(""));
        assert!(require_json(&headers).is_ok());
    }

    #[test]
    fn bodies_decode_as_json_or_yaml_with_clear_errors() {
        assert_eq!(
            decode_body(b"{\"a\":1}", "application/json").expect("json")["a"],
            1
        );
        assert_eq!(
            decode_body(b"a: 1\nb: [x]\n", "application/yaml").expect("yaml")["b"][0],
            "x"
        );
        let error = decode_body(b"{\"a\":", "application/json").expect_err("malformed");
        assert_eq!(error.code, 400);
        assert!(error.message.contains("line 1"), "{}", error.message);
        let deep = "[".repeat(200) + &"]".repeat(200);
        assert_eq!(
            decode_body(deep.as_bytes(), "application/yaml")
                .err()
                .map(|e| e.code),
            Some(400)
        );
    }

    #[test]
    fn media_types_kube_apiserver_refuses_are_answered_415() {
        for media_type in [
            "text/plain",
            "application/xml",
            "application/x-www-form-urlencoded",
            "multipart/form-data",
            "application/cbor",
            "application/vnd.kubernetes.protobuf",
        ] {
            let error = decode_body(b"{\"a\":1}", media_type).expect_err(media_type);
            assert_eq!((error.code, error.reason), (415, "UnsupportedMediaType"));
        }
        // No Content-Type at all is JSON, as kube-apiserver reads it.
        assert_eq!(decode_body(b"{\"a\":1}", "").expect("json")["a"], 1);
    }
}
