//! Naming rules of an RGD: kinds, versions, resource ids, iterator names and reserved words.

mod plural;

/// kro's own words, which no resource id or iterator may use (beside CEL's, see [`is_reserved`]).
///
/// Upstream also reserves `vars` and `variables`; data nodes (seed 001) are commonly named
/// `vars`, so they are allowed here.
const RESERVED_WORDS: &[&str] = &[
    "apiVersion",
    "context",
    "dependency",
    "dependencies",
    "each",
    "externalRef",
    "externalReference",
    "externalRefs",
    "externalReferences",
    "graph",
    "instance",
    "item",
    "items",
    "kind",
    "kro",
    "metadata",
    "object",
    "resource",
    "resourcegraphdefinition",
    "resourceGraphDefinition",
    "resources",
    "root",
    "runtime",
    "schema",
    "self",
    "serviceAccountName",
    "spec",
    "status",
    "this",
    "version",
];

/// Whether `word` is reserved: by CEL (its keywords and reserved words) or by kro.
pub fn is_reserved(word: &str) -> bool {
    kro_cel::is_reserved_word(word) || RESERVED_WORDS.contains(&word)
}

/// `^[a-z][a-zA-Z0-9]*$`: resource ids and forEach iterator names.
pub fn is_lower_camel_case(word: &str) -> bool {
    let mut chars = word.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_alphanumeric())
}

/// `^[A-Z][a-zA-Z0-9]{0,62}$`: the kind of the generated API.
pub fn is_valid_kind(kind: &str) -> bool {
    let mut chars = kind.chars();
    kind.len() <= 63
        && matches!(chars.next(), Some(c) if c.is_ascii_uppercase())
        && chars.all(|c| c.is_ascii_alphanumeric())
}

/// `^v[0-9]+((alpha|beta)[0-9]+)?$`: the version of the generated API.
pub fn is_valid_version(version: &str) -> bool {
    let Some(rest) = version.strip_prefix('v') else {
        return false;
    };
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return false;
    }
    let rest = &rest[digits..];
    if rest.is_empty() {
        return true;
    }
    let Some(number) = rest
        .strip_prefix("alpha")
        .or_else(|| rest.strip_prefix("beta"))
    else {
        return false;
    };
    !number.is_empty() && number.bytes().all(|b| b.is_ascii_digit())
}

/// A DNS-1123 label (`^[a-z]([-a-z0-9]*[a-z0-9])?$`, at most 63 characters): short names and
/// categories.
pub fn is_dns_label(word: &str) -> bool {
    let bytes = word.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 63
        && bytes[0].is_ascii_lowercase()
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
        && bytes[bytes.len() - 1] != b'-'
}

/// The plural of a lower-case kind exactly as upstream kro computes it for a generated CRD's
/// name: `flect.Pluralize` of `github.com/gobuffalo/flect` v1.0.3, ported rule for rule (its
/// dictionary, its ordered suffix rules and its acronyms). `webapp` → `webapps`, `policy` →
/// `policies`, `ingress` → `ingresses`, `person` → `people`; a word ending in `s` that no rule
/// knows is taken as plural already (`redis`, `postgres`, `nats`, `metrics` stay as they are).
///
/// flect's quirks are kept, since the point is the same CRD name as upstream: a kind that is
/// one of flect's acronyms ending in `S` comes out as flect writes it (`dns` → `dnsDNSes`,
/// which Kubernetes then rejects as a CRD name, as it does upstream's). Any text is accepted;
/// ASCII text gets exactly flect's answer.
///
/// ```
/// assert_eq!(kro_graph::pluralize("webapp"), "webapps");
/// assert_eq!(kro_graph::pluralize("redis"), "redis");
/// ```
pub fn pluralize(word: &str) -> String {
    plural::pluralize(word)
}

/// The rules Kubernetes applies to the name of an object, as kube-apiserver validates them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameRule {
    /// A DNS-1123 subdomain (`metadata.name` of custom resources and most kinds): at most 253
    /// characters, dot-separated labels.
    Subdomain,
    /// A DNS-1123 label (namespaces): at most 63 characters.
    Label,
}

/// Why a name breaks a [`NameRule`]; the messages are kube-apiserver's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NameError {
    /// Longer than the rule allows.
    #[error("{value:?}: must be no more than {limit} characters")]
    TooLong {
        /// The name.
        value: String,
        /// The limit.
        limit: usize,
    },
    /// Characters or shape outside the rule.
    #[error(
        "{value:?}: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric \
         characters, '-' or '.', and must start and end with an alphanumeric character (e.g. \
         'example.com', regex used for validation is \
         '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
    )]
    NotSubdomain {
        /// The name.
        value: String,
    },
    /// Characters or shape outside the rule.
    #[error(
        "{value:?}: a lowercase RFC 1123 label must consist of lower case alphanumeric \
         characters or '-', and must start and end with an alphanumeric character (e.g. \
         'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
    )]
    NotLabel {
        /// The name.
        value: String,
    },
}

impl NameRule {
    /// Checks `value` against the rule.
    ///
    /// # Errors
    /// [`NameError`] saying what the rule allows.
    pub fn check(self, value: &str) -> Result<(), NameError> {
        let (limit, valid) = match self {
            NameRule::Subdomain => (253, value.split('.').all(is_dns1123_label_text)),
            NameRule::Label => (63, is_dns1123_label_text(value)),
        };
        if value.len() > limit {
            return Err(NameError::TooLong {
                value: value.to_owned(),
                limit,
            });
        }
        if valid {
            return Ok(());
        }
        Err(match self {
            NameRule::Subdomain => NameError::NotSubdomain {
                value: value.to_owned(),
            },
            NameRule::Label => NameError::NotLabel {
                value: value.to_owned(),
            },
        })
    }
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?` (kube-apiserver limits the parts of a subdomain by the
/// whole name's length only).
fn is_dns1123_label_text(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes
        .first()
        .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        && bytes
            .last()
            .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_lower_camel_case() {
        for good in ["deployment", "myService2", "a"] {
            assert!(is_lower_camel_case(good), "{good}");
        }
        for bad in ["", "Deployment", "my-service", "my_service", "2fa"] {
            assert!(!is_lower_camel_case(bad), "{bad}");
        }
    }

    #[test]
    fn kinds_and_versions_follow_upstream_patterns() {
        assert!(is_valid_kind("WebApp"));
        assert!(!is_valid_kind("webApp"));
        assert!(!is_valid_kind(&format!("A{}", "b".repeat(63))));
        for good in ["v1", "v1alpha1", "v2beta3", "v10"] {
            assert!(is_valid_version(good), "{good}");
        }
        for bad in ["1", "v", "v1alpha", "v1gamma1", "V1"] {
            assert!(!is_valid_version(bad), "{bad}");
        }
    }

    #[test]
    fn reserved_words_include_cel_and_kro_words_but_not_vars() {
        assert!(is_reserved("schema") && is_reserved("each") && is_reserved("in"));
        assert!(!is_reserved("vars"));
    }

    #[test]
    fn object_names_follow_kube_apiservers_rules() {
        for good in ["a", "web-1", "my.app.example", "0abc", &"a".repeat(253)] {
            assert_eq!(NameRule::Subdomain.check(good), Ok(()), "{good}");
        }
        for bad in [
            "",
            "../../etc/passwd",
            "Web",
            "a/b",
            "-a",
            "a.",
            "a..b",
            "a b",
        ] {
            assert!(
                matches!(
                    NameRule::Subdomain.check(bad),
                    Err(NameError::NotSubdomain { .. })
                ),
                "{bad}"
            );
        }
        assert!(matches!(
            NameRule::Subdomain.check(&"a".repeat(254)),
            Err(NameError::TooLong { limit: 253, .. })
        ));
        assert_eq!(NameRule::Label.check("team-1"), Ok(()));
        assert_eq!(NameRule::Label.check("1team"), Ok(()));
        for bad in ["a.b", "..", "/", "Team", ""] {
            assert!(
                matches!(NameRule::Label.check(bad), Err(NameError::NotLabel { .. })),
                "{bad}"
            );
        }
        assert!(matches!(
            NameRule::Label.check(&"a".repeat(64)),
            Err(NameError::TooLong { limit: 63, .. })
        ));
    }
}
