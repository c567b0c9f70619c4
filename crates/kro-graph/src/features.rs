//! Feature gates: upstream kro's names, defaults and `--feature-gates` syntax.
//!
//! Upstream registers its gates with Kubernetes' `component-base/featuregate`: every one is
//! alpha and off unless `--feature-gates=Name=true,...` turns it on. The flag is a
//! comma-separated list of `Name=bool` pairs; a bool is what Go's `strconv.ParseBool` reads
//! (`1 t T TRUE true True`, `0 f F FALSE false False`); `AllAlpha=true` turns on every alpha gate
//! not named on its own (`AllBeta` likewise, and there are no beta gates). An unknown name, a
//! pair without `=` or a value that is not a bool refuses the whole flag.

use std::fmt;

/// One of upstream kro's feature gates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Feature {
    /// `omit()` in templates: without it an RGD that calls `omit()` is refused.
    CelOmitFunction,
    /// `time.now()` and the `kro.time` library (KREP-025; ours until upstream names a gate):
    /// without it an RGD that reads the time is refused.
    CelTimeFunctions,
    /// A Kubernetes Event on every transition of an instance's status condition.
    InstanceConditionEvents,
    /// The `instance_condition_current_status_seconds` gauge and a log line per transition.
    InstanceConditionMetrics,
    /// `status.managedResources` on every instance: the objects kro manages for it (ours;
    /// the shape of upstream's Graph kind).
    InstanceManagedResources,
    /// Controlled rollout of RGD changes: `spec.propagateWhen` and the
    /// `kro.run/propagation-rate` annotation (ours; the gate upstream's proposal #1259 names).
    PropagationControl,
}

impl Feature {
    /// Every gate, in name order.
    pub const ALL: [Feature; 6] = [
        Feature::CelOmitFunction,
        Feature::CelTimeFunctions,
        Feature::InstanceConditionEvents,
        Feature::InstanceConditionMetrics,
        Feature::InstanceManagedResources,
        Feature::PropagationControl,
    ];

    /// The gates upstream kro v0.9.4 has (the others are this project's own).
    pub const UPSTREAM: [Feature; 3] = [
        Feature::CelOmitFunction,
        Feature::InstanceConditionEvents,
        Feature::InstanceConditionMetrics,
    ];

    /// The gate's name as `--feature-gates` spells it.
    pub fn name(self) -> &'static str {
        match self {
            Feature::CelOmitFunction => "CELOmitFunction",
            Feature::CelTimeFunctions => "CELTimeFunctions",
            Feature::InstanceConditionEvents => "InstanceConditionEvents",
            Feature::InstanceConditionMetrics => "InstanceConditionMetrics",
            Feature::InstanceManagedResources => "InstanceManagedResources",
            Feature::PropagationControl => "PropagationControl",
        }
    }

    /// The gate named `name` (exactly as upstream spells it).
    pub fn from_name(name: &str) -> Option<Feature> {
        Feature::ALL
            .into_iter()
            .find(|feature| feature.name() == name)
    }
}

impl fmt::Display for Feature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Which feature gates are on. The default is upstream's: all off.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FeatureGates {
    /// One bit per [`Feature`], in [`Feature::ALL`] order.
    enabled: u8,
}

/// Why a `--feature-gates` value was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FeatureGateError {
    /// A pair without `=`.
    #[error("missing bool value for {0}")]
    MissingValue(String),
    /// A value that is not a bool.
    #[error("invalid value of {name}={value}: not a bool (true, false, 1, 0, t, f)")]
    InvalidValue {
        /// The gate's name as written.
        name: String,
        /// The value as written.
        value: String,
    },
    /// A name that is no gate of kro's.
    #[error("unrecognized feature gate: {name} (known: {known})", known = known_names())]
    Unrecognized {
        /// The name as written.
        name: String,
    },
}

fn known_names() -> String {
    let mut names: Vec<&str> = Feature::ALL.iter().map(|feature| feature.name()).collect();
    names.extend(["AllAlpha", "AllBeta"]);
    names.join(", ")
}

/// A bool as Go's `strconv.ParseBool` reads it.
fn parse_go_bool(value: &str) -> Option<bool> {
    match value {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

impl FeatureGates {
    /// Upstream's defaults: every gate off.
    pub const fn upstream_defaults() -> FeatureGates {
        FeatureGates { enabled: 0 }
    }

    /// Every gate on.
    pub const fn all() -> FeatureGates {
        FeatureGates {
            enabled: (1 << Feature::ALL.len()) - 1,
        }
    }

    fn bit(feature: Feature) -> u8 {
        1 << (feature as u8)
    }

    /// Whether `feature` is on.
    pub fn enabled(&self, feature: Feature) -> bool {
        self.enabled & Self::bit(feature) != 0
    }

    /// These gates with `feature` turned on or off.
    #[must_use]
    pub fn with(mut self, feature: Feature, on: bool) -> FeatureGates {
        if on {
            self.enabled |= Self::bit(feature);
        } else {
            self.enabled &= !Self::bit(feature);
        }
        self
    }

    /// The gates that are on, in name order.
    pub fn enabled_features(&self) -> Vec<Feature> {
        Feature::ALL
            .into_iter()
            .filter(|feature| self.enabled(*feature))
            .collect()
    }

    /// Upstream's defaults changed by a `--feature-gates` value (see the module doc).
    ///
    /// # Errors
    /// [`FeatureGateError`] for the first pair that is not `Name=bool` with a known name.
    pub fn parse(flag: &str) -> Result<FeatureGates, FeatureGateError> {
        FeatureGates::upstream_defaults().apply(flag)
    }

    /// These gates changed by a `--feature-gates` value: the names it gives take its values,
    /// `AllAlpha`/`AllBeta` set the gates it does not name, the rest keep theirs.
    ///
    /// # Errors
    /// [`FeatureGateError`] for the first pair that is not `Name=bool` with a known name.
    pub fn apply(self, flag: &str) -> Result<FeatureGates, FeatureGateError> {
        let mut named: Vec<(Feature, bool)> = Vec::new();
        let mut all_alpha = None;
        for pair in flag.split(',').filter(|pair| !pair.is_empty()) {
            let Some((name, value)) = pair.split_once('=') else {
                return Err(FeatureGateError::MissingValue(pair.trim().to_string()));
            };
            let (name, value) = (name.trim(), value.trim());
            let on = parse_go_bool(value).ok_or_else(|| FeatureGateError::InvalidValue {
                name: name.to_string(),
                value: value.to_string(),
            })?;
            match name {
                "AllAlpha" => all_alpha = Some(on),
                // Every kro gate is alpha: AllBeta is known and changes nothing.
                "AllBeta" => {}
                _ => {
                    let feature =
                        Feature::from_name(name).ok_or_else(|| FeatureGateError::Unrecognized {
                            name: name.to_string(),
                        })?;
                    named.retain(|(seen, _)| *seen != feature);
                    named.push((feature, on));
                }
            }
        }
        let mut gates = self;
        if let Some(on) = all_alpha {
            for feature in Feature::ALL {
                if !named.iter().any(|(seen, _)| *seen == feature) {
                    gates = gates.with(feature, on);
                }
            }
        }
        for (feature, on) in named {
            gates = gates.with(feature, on);
        }
        Ok(gates)
    }
}

/// Every gate as `Name=bool`, comma-separated in name order (what `--feature-gates` reads).
impl fmt::Display for FeatureGates {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (index, feature) in Feature::ALL.into_iter().enumerate() {
            if index > 0 {
                f.write_str(",")?;
            }
            write!(f, "{}={}", feature.name(), self.enabled(feature))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_are_upstreams_all_off() {
        let gates = FeatureGates::default();
        assert!(Feature::ALL.iter().all(|feature| !gates.enabled(*feature)));
        assert_eq!(
            gates.to_string(),
            "CELOmitFunction=false,CELTimeFunctions=false,InstanceConditionEvents=false,\
             InstanceConditionMetrics=false,InstanceManagedResources=false,PropagationControl=false"
        );
    }

    #[test]
    fn pairs_turn_gates_on_and_off_and_the_last_one_wins() {
        let gates = FeatureGates::parse(" CELOmitFunction = true ,,InstanceConditionEvents=T")
            .expect("valid");
        assert_eq!(
            gates.enabled_features(),
            [Feature::CelOmitFunction, Feature::InstanceConditionEvents]
        );
        let gates = FeatureGates::parse("CELOmitFunction=1,CELOmitFunction=0").expect("valid");
        assert!(!gates.enabled(Feature::CelOmitFunction));
        assert_eq!(
            FeatureGates::parse("").expect("valid"),
            FeatureGates::default()
        );
    }

    #[test]
    fn all_alpha_sets_the_gates_not_named() {
        let gates = FeatureGates::parse("InstanceConditionEvents=false,AllAlpha=true").expect("ok");
        assert_eq!(
            gates.enabled_features(),
            [
                Feature::CelOmitFunction,
                Feature::CelTimeFunctions,
                Feature::InstanceConditionMetrics,
                Feature::InstanceManagedResources,
                Feature::PropagationControl
            ]
        );
        assert_eq!(
            FeatureGates::parse("AllBeta=true").expect("ok"),
            FeatureGates::default()
        );
    }

    #[test]
    fn malformed_values_are_refused_with_what_is_wrong() {
        let error = FeatureGates::parse("CELOmitFunction").expect_err("no value");
        assert_eq!(error.to_string(), "missing bool value for CELOmitFunction");
        let error = FeatureGates::parse("CELOmitFunction=yes").expect_err("not a bool");
        assert!(error.to_string().contains("CELOmitFunction=yes"), "{error}");
        let error = FeatureGates::parse("celOmitFunction=true").expect_err("names are exact");
        assert!(
            error
                .to_string()
                .starts_with("unrecognized feature gate: celOmitFunction (known: CELOmitFunction,"),
            "{error}"
        );
    }
}
