//! Fault injection into the embedded API server for trials (`kro apiserver`, `kro dev`): the
//! flags that ask for it and the report of what is injected.

use std::time::Duration;

use anyhow::Context;

/// Fault injection for trials (`kro apiserver` and `kro dev`): latency and a seeded random
/// fraction of failed requests. They apply to the resource API only (not discovery, OpenAPI
/// or health), and never to the simulated controllers; the requests received are counted by
/// client at `GET /debug/kro/requests`.
#[derive(Debug, Clone, clap::Args)]
pub struct FaultArgs {
    /// Latency added before every resource request is handled (`50ms`, `1s`).
    #[arg(long, value_name = "DURATION", default_value = "0ms", value_parser = crate::duration::parse_duration)]
    latency: Duration,
    /// Fraction of resource requests (0 to 1) answered with an injected error.
    #[arg(long, value_name = "RATE", value_parser = parse_rate)]
    failure_rate: Option<f64>,
    /// Seed of the random sequence choosing the failed requests, to replay a trial (by
    /// default a random seed, logged at start and shown at /debug/kro/requests).
    #[arg(long, value_name = "SEED", requires = "failure_rate")]
    failure_seed: Option<u64>,
    /// Status codes the failures are answered with, chosen at random: any of 409, 429, 500,
    /// 503, 504 (429, 503 and 504 carry Retry-After).
    #[arg(long, value_name = "CODES", value_delimiter = ',', default_value = "500,503,429",
          value_parser = parse_failure_code, requires = "failure_rate")]
    failure_codes: Vec<u16>,
    /// Verbs whose requests may fail (comma-separated: get, list, watch, create, update,
    /// patch, delete, deletecollection); by default all. A watch fails only when it is
    /// requested, never once it streams.
    #[arg(long, value_name = "VERBS", value_delimiter = ',', value_parser = parse_failure_verb,
          requires = "failure_rate")]
    failure_verbs: Vec<String>,
}

impl FaultArgs {
    /// The latency and failure rate these flags ask for.
    ///
    /// # Errors
    /// A rate, code or verb the knobs refuse (clap has checked each already).
    pub fn knobs(&self) -> anyhow::Result<(Duration, Option<kro_apiserver::FailureRate>)> {
        let FaultArgs {
            latency,
            failure_rate,
            failure_seed,
            failure_codes,
            failure_verbs,
        } = self;
        let Some(rate) = failure_rate else {
            return Ok((*latency, None));
        };
        let mut rate = kro_apiserver::FailureRate::new(*rate)
            .and_then(|rate| rate.with_codes(failure_codes))
            .and_then(|rate| rate.with_verbs(failure_verbs))
            .context("--failure-rate")?;
        if let Some(seed) = failure_seed {
            rate = rate.with_seed(*seed);
        }
        Ok((*latency, Some(rate)))
    }
}

/// Says which faults are injected, with the seed that replays them.
pub fn report_faults(server: &kro_apiserver::RunningServer) {
    if !server.latency().is_zero() {
        eprintln!(
            "kro apiserver: adding {:?} to every resource request",
            server.latency()
        );
    }
    if let Some((rate, seed)) = server.failure_rate() {
        eprintln!(
            "kro apiserver: failing {} of resource requests with {:?} (--failure-seed {seed})",
            rate.rate(),
            rate.codes()
        );
    }
}

fn parse_rate(text: &str) -> Result<f64, String> {
    let rate: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a number between 0 and 1"))?;
    kro_apiserver::FailureRate::new(rate)
        .map(|_| rate)
        .map_err(|error| error.to_string())
}

fn parse_failure_code(text: &str) -> Result<u16, String> {
    let code: u16 = text
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not an HTTP status code"))?;
    if kro_apiserver::knobs::SUPPORTED_CODES.contains(&code) {
        Ok(code)
    } else {
        Err(kro_apiserver::KnobError::UnsupportedCode { code }.to_string())
    }
}

fn parse_failure_verb(text: &str) -> Result<String, String> {
    let verb = text.trim();
    if kro_apiserver::knobs::FAILURE_VERBS.contains(&verb) {
        Ok(verb.to_owned())
    } else {
        Err(kro_apiserver::KnobError::UnknownVerb {
            verb: verb.to_owned(),
        }
        .to_string())
    }
}
