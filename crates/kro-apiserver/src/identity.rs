//! Who a request acts as: the user its credentials name, or the user it impersonates through
//! `Impersonate-User`, `Impersonate-Group`, `Impersonate-Uid` and `Impersonate-Extra-<key>`,
//! built as kube-apiserver's impersonation filter builds it (`k8s.io/apiserver`
//! `pkg/endpoints/filters/impersonation.go`): a ServiceAccount's username gets the
//! ServiceAccount groups when no group is given, every non-anonymous user gets
//! `system:authenticated` unless a group says `system:authenticated` or
//! `system:unauthenticated`, and groups, a UID or extras without a user are refused. The
//! server has one set of credentials and no authorizer yet, so the holder may impersonate
//! anyone; `SelfSubjectReview` (`kubectl auth whoami`) shows the result.

use std::collections::BTreeMap;

use http::HeaderMap;
use serde_json::{Value, json};

/// The user the server's own credentials (its bearer token, or none when it has none) name:
/// an administrator, as kubeadm's admin kubeconfig is.
pub const ADMIN_USERNAME: &str = "kro:admin";

const ALL_AUTHENTICATED: &str = "system:authenticated";
const ALL_UNAUTHENTICATED: &str = "system:unauthenticated";
const ANONYMOUS: &str = "system:anonymous";
const SERVICE_ACCOUNT_PREFIX: &str = "system:serviceaccount:";
const IMPERSONATE_USER: &str = "impersonate-user";
const IMPERSONATE_GROUP: &str = "impersonate-group";
const IMPERSONATE_UID: &str = "impersonate-uid";
const IMPERSONATE_EXTRA_PREFIX: &str = "impersonate-extra-";

/// A user as `authentication.k8s.io` describes one.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct UserInfo {
    /// The username.
    pub username: String,
    /// The UID, when known.
    pub uid: String,
    /// The groups, in order.
    pub groups: Vec<String>,
    /// Extra attributes.
    pub extra: BTreeMap<String, Vec<String>>,
}

impl UserInfo {
    /// The holder of the server's credentials.
    pub fn admin() -> UserInfo {
        UserInfo {
            username: ADMIN_USERNAME.to_owned(),
            groups: vec!["system:masters".to_owned(), ALL_AUTHENTICATED.to_owned()],
            ..UserInfo::default()
        }
    }

    /// The user `requester` acts as given the impersonation headers in `headers` (itself when
    /// there are none).
    ///
    /// # Errors
    /// Groups, a UID or extras without `Impersonate-User`, as kube-apiserver refuses them
    /// (with a 500).
    pub fn acting_as(requester: UserInfo, headers: &HeaderMap) -> Result<UserInfo, String> {
        let text =
            |value: &http::HeaderValue| String::from_utf8_lossy(value.as_bytes()).into_owned();
        let username = headers.get(IMPERSONATE_USER).map(text).unwrap_or_default();
        let named_groups: Vec<String> = headers
            .get_all(IMPERSONATE_GROUP)
            .iter()
            .map(text)
            .collect();
        let uid = headers.get(IMPERSONATE_UID).map(text).unwrap_or_default();
        let mut extra: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (name, value) in headers {
            if let Some(key) = name.as_str().strip_prefix(IMPERSONATE_EXTRA_PREFIX) {
                extra.entry(unescape(key)).or_default().push(text(value));
            }
        }
        if username.is_empty() {
            if named_groups.is_empty() && uid.is_empty() && extra.is_empty() {
                return Ok(requester);
            }
            // kube-apiserver's words: the impersonation requests as Go prints its
            // ObjectReferences (kind, namespace, name, uid, apiVersion, resourceVersion,
            // fieldPath), groups first, then extras, then the UID.
            let reference = |kind: &str, name: &str, api_version: &str, field: &str| {
                format!("{{{kind}  {name}  {api_version}  {field}}}")
            };
            let mut requests: Vec<String> = named_groups
                .iter()
                .map(|group| reference("Group", group, "", ""))
                .collect();
            for (key, values) in &extra {
                for value in values {
                    requests.push(reference(
                        "UserExtra",
                        value,
                        "authentication.k8s.io/v1",
                        key,
                    ));
                }
            }
            if !uid.is_empty() {
                requests.push(reference("UID", &uid, "authentication.k8s.io/v1", ""));
            }
            return Err(format!(
                "requested [{}] without impersonating a user",
                requests.join(" ")
            ));
        }
        let mut groups = named_groups.clone();
        if named_groups.is_empty()
            && let Some(namespace) = service_account_namespace(&username)
        {
            groups = vec![
                "system:serviceaccounts".to_owned(),
                format!("system:serviceaccounts:{namespace}"),
            ];
        }
        if username == ANONYMOUS {
            if !groups.iter().any(|group| group == ALL_UNAUTHENTICATED) {
                groups.push(ALL_UNAUTHENTICATED.to_owned());
            }
        } else if !groups
            .iter()
            .any(|group| group == ALL_AUTHENTICATED || group == ALL_UNAUTHENTICATED)
        {
            groups.push(ALL_AUTHENTICATED.to_owned());
        }
        Ok(UserInfo {
            username,
            uid,
            groups,
            extra,
        })
    }

    /// As `status.userInfo` of a `SelfSubjectReview`.
    pub fn to_json(&self) -> Value {
        let mut info = json!({"username": self.username, "groups": self.groups});
        if !self.uid.is_empty() {
            info["uid"] = json!(self.uid);
        }
        if !self.extra.is_empty() {
            info["extra"] = json!(self.extra);
        }
        info
    }
}

/// The namespace of a ServiceAccount's username (`system:serviceaccount:<ns>:<name>`), when
/// it is one.
fn service_account_namespace(username: &str) -> Option<&str> {
    let rest = username.strip_prefix(SERVICE_ACCOUNT_PREFIX)?;
    let (namespace, name) = rest.split_once(':')?;
    let valid = |part: &str| {
        !part.is_empty()
            && part.bytes().all(|byte| {
                byte.is_ascii_lowercase() || byte.is_ascii_digit() || matches!(byte, b'-' | b'.')
            })
    };
    (valid(namespace) && valid(name) && !namespace.contains('.')).then_some(namespace)
}

/// A header's extra key, `%`-decoded (a malformed escape is kept as written).
fn unescape(key: &str) -> String {
    let bytes = key.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] == b'%' {
            let hex = bytes
                .get(index + 1..index + 3)
                .and_then(|pair| std::str::from_utf8(pair).ok())
                .and_then(|pair| u8::from_str_radix(pair, 16).ok());
            match hex {
                Some(byte) => {
                    out.push(byte);
                    index += 3;
                    continue;
                }
                None => return key.to_owned(),
            }
        }
        out.push(bytes[index]);
        index += 1;
    }
    String::from_utf8(out).unwrap_or_else(|_| key.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.append(
                http::HeaderName::from_bytes(name.as_bytes()).expect("a header name"),
                http::HeaderValue::from_str(value).expect("a header value"),
            );
        }
        headers
    }

    fn acting(pairs: &[(&str, &str)]) -> Result<UserInfo, String> {
        UserInfo::acting_as(UserInfo::admin(), &headers(pairs))
    }

    #[test]
    fn without_headers_the_requester_acts() {
        assert_eq!(acting(&[]), Ok(UserInfo::admin()));
    }

    #[test]
    fn a_service_account_gets_its_groups_unless_groups_are_named() {
        let account = acting(&[("Impersonate-User", "system:serviceaccount:apps:deployer")])
            .expect("allowed");
        assert_eq!(
            account.groups,
            [
                "system:serviceaccounts",
                "system:serviceaccounts:apps",
                "system:authenticated"
            ]
        );
        let named = acting(&[
            ("Impersonate-User", "system:serviceaccount:apps:deployer"),
            ("Impersonate-Group", "team-a"),
            ("Impersonate-Group", "system:authenticated"),
        ])
        .expect("allowed");
        assert_eq!(named.groups, ["team-a", "system:authenticated"]);
    }

    #[test]
    fn users_get_extras_uids_and_the_authenticated_group() {
        let user = acting(&[
            ("Impersonate-User", "jane"),
            ("Impersonate-Uid", "u-1"),
            ("Impersonate-Extra-Scopes", "openid"),
            ("Impersonate-Extra-Scopes", "profile"),
            ("Impersonate-Extra-acme.com%2Fproject", "x"),
        ])
        .expect("allowed");
        assert_eq!(user.username, "jane");
        assert_eq!(user.uid, "u-1");
        assert_eq!(user.groups, ["system:authenticated"]);
        assert_eq!(user.extra["scopes"], ["openid", "profile"]);
        assert_eq!(user.extra["acme.com/project"], ["x"]);
        let anonymous = acting(&[("Impersonate-User", "system:anonymous")]).expect("allowed");
        assert_eq!(anonymous.groups, ["system:unauthenticated"]);
    }

    #[test]
    fn groups_without_a_user_are_refused() {
        let error = acting(&[("Impersonate-Group", "devs")]).expect_err("refused");
        assert_eq!(
            error,
            "requested [{Group  devs    }] without impersonating a user"
        );
        let error = acting(&[("Impersonate-Uid", "u-1")]).expect_err("refused");
        assert_eq!(
            error,
            "requested [{UID  u-1  authentication.k8s.io/v1  }] without impersonating a user"
        );
    }
}
