//! A failure rate: a fraction of resource requests answered with an error, drawn from a seeded
//! random sequence so a fault trial can be replayed.

use super::RequestKind;

/// The verbs a [`FailureRate`] can be limited to.
pub const VERBS: [&str; 8] = [
    "get",
    "list",
    "watch",
    "create",
    "update",
    "patch",
    "delete",
    "deletecollection",
];

/// The status codes an injected failure can carry: 409 Conflict, 429 TooManyRequests (with
/// `Retry-After`), 500 InternalError, 503 ServiceUnavailable (with `Retry-After`) and 504
/// Timeout.
pub const SUPPORTED_CODES: [u16; 5] = [409, 429, 500, 503, 504];

/// The codes a failure rate draws from unless told otherwise: the transient answers a client
/// is expected to retry.
pub const DEFAULT_CODES: [u16; 3] = [500, 503, 429];

/// A failure-rate setting that cannot be used.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum KnobError {
    /// The rate is not a number in `0..=1`.
    #[error("the failure rate must be between 0 and 1, not {rate}")]
    RateOutOfRange {
        /// The rate given.
        rate: f64,
    },
    /// A status code the knobs cannot answer with.
    #[error("the failure code {code} is not supported (use 409, 429, 500, 503 or 504)")]
    UnsupportedCode {
        /// The code given.
        code: u16,
    },
    /// An empty list of codes.
    #[error("the list of failure codes is empty")]
    NoCodes,
    /// A verb that is not a Kubernetes resource verb.
    #[error(
        "{verb:?} is not a resource verb (use get, list, watch, create, update, patch, delete \
         or deletecollection)"
    )]
    UnknownVerb {
        /// The verb given.
        verb: String,
    },
}

/// A fraction of resource requests to fail, the codes to fail them with, the verbs it applies
/// to, and the seed of the random sequence that picks them.
///
/// A watch fails only when it is requested: a stream already open is never cut by the rate
/// (ending open watches is what `RunningServer::expire_watches` does).
#[derive(Debug, Clone, PartialEq)]
pub struct FailureRate {
    rate: f64,
    codes: Vec<u16>,
    verbs: Vec<String>,
    seed: Option<u64>,
}

impl FailureRate {
    /// Fails `rate` (0 to 1) of the requests of every verb with [`DEFAULT_CODES`], from a
    /// random seed.
    ///
    /// # Errors
    /// [`KnobError::RateOutOfRange`] when `rate` is not within `0..=1`.
    pub fn new(rate: f64) -> Result<Self, KnobError> {
        if !(0.0..=1.0).contains(&rate) {
            return Err(KnobError::RateOutOfRange { rate });
        }
        Ok(FailureRate {
            rate,
            codes: DEFAULT_CODES.to_vec(),
            verbs: Vec::new(),
            seed: None,
        })
    }

    /// Fails with one of `codes`, chosen at random for each failure.
    ///
    /// # Errors
    /// [`KnobError::NoCodes`] for an empty list, [`KnobError::UnsupportedCode`] for a code
    /// outside [`SUPPORTED_CODES`].
    pub fn with_codes(mut self, codes: &[u16]) -> Result<Self, KnobError> {
        if codes.is_empty() {
            return Err(KnobError::NoCodes);
        }
        if let Some(&code) = codes.iter().find(|code| !SUPPORTED_CODES.contains(code)) {
            return Err(KnobError::UnsupportedCode { code });
        }
        self.codes = codes.to_vec();
        Ok(self)
    }

    /// Fails only requests with one of `verbs` (an empty list: every verb).
    ///
    /// # Errors
    /// [`KnobError::UnknownVerb`] for a verb outside [`VERBS`].
    pub fn with_verbs<S: AsRef<str>>(mut self, verbs: &[S]) -> Result<Self, KnobError> {
        let mut chosen = Vec::with_capacity(verbs.len());
        for verb in verbs {
            let verb = verb.as_ref();
            if !VERBS.contains(&verb) {
                return Err(KnobError::UnknownVerb {
                    verb: verb.to_owned(),
                });
            }
            chosen.push(verb.to_owned());
        }
        self.verbs = chosen;
        Ok(self)
    }

    /// Draws from the sequence of `seed`, so the same requests in the same order fail the same
    /// way.
    #[must_use]
    pub fn with_seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }

    /// The fraction of requests failed.
    pub fn rate(&self) -> f64 {
        self.rate
    }

    /// The codes failures are answered with.
    pub fn codes(&self) -> &[u16] {
        &self.codes
    }

    /// The verbs failed; empty for every verb.
    pub fn verbs(&self) -> &[String] {
        &self.verbs
    }

    /// The seed asked for, if any.
    pub fn seed(&self) -> Option<u64> {
        self.seed
    }

    fn applies_to(&self, kind: &RequestKind) -> bool {
        self.verbs.is_empty() || self.verbs.contains(&kind.verb)
    }
}

/// A failure rate in force, with its random sequence.
#[derive(Debug)]
pub(crate) struct ActiveRate {
    pub(crate) setting: FailureRate,
    /// The seed in use (the one asked for, or one drawn at random).
    pub(crate) seed: u64,
    random: SplitMix64,
}

impl ActiveRate {
    pub(crate) fn new(setting: FailureRate) -> Self {
        let seed = setting.seed.unwrap_or_else(random_seed);
        ActiveRate {
            setting,
            seed,
            random: SplitMix64(seed),
        }
    }

    /// The code to fail this request with, or `None` to serve it.
    pub(crate) fn draw(&mut self, kind: &RequestKind) -> Option<u16> {
        if !self.setting.applies_to(kind) {
            return None;
        }
        // Always two draws per request that applies, so one request's outcome does not shift
        // the sequence of the next.
        let roll = self.random.next_fraction();
        let pick = self.random.next_u64();
        if roll >= self.setting.rate {
            return None;
        }
        let codes = &self.setting.codes;
        let index = usize::try_from(pick % codes.len() as u64).unwrap_or(0);
        codes.get(index).copied()
    }
}

fn random_seed() -> u64 {
    let bytes = uuid::Uuid::new_v4().into_bytes();
    let mut seed = [0u8; 8];
    seed.copy_from_slice(&bytes[..8]);
    u64::from_le_bytes(seed)
}

/// SplitMix64 (Steele, Lea and Flood): small, fast and good enough to pick failures; not for
/// anything secret.
#[derive(Debug, Clone)]
struct SplitMix64(u64);

impl SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A fraction in `[0, 1)` from the top 53 bits.
    fn next_fraction(&mut self) -> f64 {
        #[allow(clippy::cast_precision_loss)] // 53 bits fit an f64 exactly
        let top = (self.next_u64() >> 11) as f64;
        top / (1u64 << 53) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(verb: &str) -> RequestKind {
        RequestKind {
            verb: verb.to_owned(),
            resource: "configmaps".to_owned(),
        }
    }

    fn outcomes(rate: &FailureRate, count: usize) -> Vec<Option<u16>> {
        let mut active = ActiveRate::new(rate.clone());
        (0..count).map(|_| active.draw(&kind("get"))).collect()
    }

    #[test]
    fn rates_outside_zero_to_one_are_refused() {
        assert_eq!(
            FailureRate::new(1.5),
            Err(KnobError::RateOutOfRange { rate: 1.5 })
        );
        assert!(matches!(
            FailureRate::new(-0.1),
            Err(KnobError::RateOutOfRange { .. })
        ));
        assert!(matches!(
            FailureRate::new(f64::NAN),
            Err(KnobError::RateOutOfRange { .. })
        ));
        assert!(FailureRate::new(0.0).is_ok() && FailureRate::new(1.0).is_ok());
    }

    #[test]
    fn codes_and_verbs_are_checked() {
        let rate = FailureRate::new(0.5).expect("valid rate");
        assert_eq!(
            rate.clone().with_codes(&[500, 418]),
            Err(KnobError::UnsupportedCode { code: 418 })
        );
        assert_eq!(rate.clone().with_codes(&[]), Err(KnobError::NoCodes));
        assert_eq!(
            rate.clone().with_verbs(&["get", "fetch"]),
            Err(KnobError::UnknownVerb {
                verb: "fetch".to_owned()
            })
        );
        let chosen = rate
            .with_codes(&[409])
            .and_then(|rate| rate.with_verbs(&["patch"]))
            .expect("valid");
        assert_eq!(
            (chosen.codes(), chosen.verbs()),
            (&[409][..], &["patch".to_owned()][..])
        );
    }

    #[test]
    fn the_same_seed_fails_the_same_requests() {
        let rate = FailureRate::new(0.3).expect("valid rate").with_seed(42);
        let first = outcomes(&rate, 500);
        assert_eq!(first, outcomes(&rate, 500));
        let other = outcomes(&rate.clone().with_seed(43), 500);
        assert_ne!(first, other);
    }

    #[test]
    fn the_fraction_failed_is_close_to_the_rate_and_uses_every_code() {
        let rate = FailureRate::new(0.2).expect("valid rate").with_seed(7);
        let drawn = outcomes(&rate, 10_000);
        let failed: Vec<u16> = drawn.iter().flatten().copied().collect();
        assert!(
            (1_800..=2_200).contains(&failed.len()),
            "{} of 10000 failed",
            failed.len()
        );
        for code in DEFAULT_CODES {
            assert!(failed.contains(&code), "{code} never drawn");
        }
    }

    #[test]
    fn rates_zero_and_one_are_exact() {
        let never = FailureRate::new(0.0).expect("valid").with_seed(1);
        assert!(outcomes(&never, 1_000).iter().all(Option::is_none));
        let always = FailureRate::new(1.0).expect("valid").with_seed(1);
        assert!(outcomes(&always, 1_000).iter().all(Option::is_some));
    }

    #[test]
    fn verbs_not_chosen_are_never_failed() {
        let rate = FailureRate::new(1.0)
            .and_then(|rate| rate.with_verbs(&["patch"]))
            .expect("valid")
            .with_seed(3);
        let mut active = ActiveRate::new(rate);
        assert_eq!(active.draw(&kind("get")), None);
        assert_eq!(active.draw(&kind("watch")), None);
        assert!(active.draw(&kind("patch")).is_some());
    }

    #[test]
    fn without_a_seed_one_is_drawn_and_reported() {
        let first = ActiveRate::new(FailureRate::new(0.5).expect("valid"));
        let second = ActiveRate::new(FailureRate::new(0.5).expect("valid"));
        assert_ne!(first.seed, second.seed);
    }
}
