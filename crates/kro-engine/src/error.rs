//! What the engine's errors share: the server's own words for a refusal.

/// The message of an API server's refusal (its `Status` message, not kube-rs's wrapping of
/// it), or the error itself when the server said nothing.
pub fn api_message(error: &kube::Error) -> String {
    match error {
        kube::Error::Api(status) if !status.message.is_empty() => status.message.clone(),
        other => other.to_string(),
    }
}
