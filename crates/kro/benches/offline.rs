//! The offline commands on large inputs, run as a user runs them: `kro validate` of N RGDs
//! that use each other's kinds, and `kro render` of a chain of N resources.
//!
//! `cargo bench -p kro --bench offline` (add `--profile dev` to skip the release build). Each
//! figure is per RGD (or per resource) and printed as a ratio to the smallest N of the same
//! run: a ratio near 1 is linear, a ratio growing with N is not. Memory is the peak resident
//! set of the kro process (VmHWM, read from /proc while it runs). With
//! `KRO_BASELINE_BIN=/path/to/an/older/kro` the same inputs also run through that binary,
//! and its figures are printed as ratios to this one's.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A run's wall time and peak resident set.
#[derive(Debug, Clone, Copy)]
struct Figures {
    time: Duration,
    peak_bytes: u64,
}

/// Peak resident set of a running process, from /proc (0 where there is no /proc).
fn peak_bytes(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|value| {
            value
                .trim()
                .trim_end_matches("kB")
                .trim()
                .parse::<u64>()
                .ok()
        })
        .map_or(0, |kib| kib * 1024)
}

/// Runs `binary args`, polling its peak memory until it exits; panics when it fails.
fn run(binary: &Path, args: &[&str]) -> Figures {
    let started = Instant::now();
    let mut child = Command::new(binary)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|error| panic!("{}: {error}", binary.display()));
    let mut peak = 0;
    loop {
        peak = peak.max(peak_bytes(child.id()));
        if let Some(status) = child.try_wait().expect("waiting for kro") {
            assert!(status.success(), "{} {args:?}: {status}", binary.display());
            return Figures {
                time: started.elapsed(),
                peak_bytes: peak,
            };
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// `count` RGDs in `dir`: RGD `i` defines kind `K{i}`, creates a ConfigMap and a Deployment
/// and, from the second on, an object of the kind RGD `i - 1` defines.
fn write_rgd_set(dir: &Path, count: usize) {
    for i in 0..count {
        let previous = if i == 0 {
            String::new()
        } else {
            format!(
                "
    - id: previous
      template:
        apiVersion: example.org/v1
        kind: K{}
        metadata:
          name: ${{schema.spec.name}}-prev
        spec:
          name: ${{config.data.name}}
",
                i - 1
            )
        };
        let text = format!(
            "apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: k{i}
spec:
  schema:
    apiVersion: v1
    group: example.org
    kind: K{i}
    spec:
      name: string
      replicas: integer | default=1
    status:
      ready: ${{deployment.status.readyReplicas}}
  resources:
    - id: config
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: ${{schema.spec.name}}
        data:
          name: ${{schema.spec.name}}
    - id: deployment
      template:
        apiVersion: apps/v1
        kind: Deployment
        metadata:
          name: ${{config.metadata.name}}
        spec:
          replicas: ${{schema.spec.replicas}}
          selector:
            matchLabels: {{app: \"${{schema.spec.name}}\"}}
          template:
            metadata:
              labels: {{app: \"${{schema.spec.name}}\"}}
            spec:
              containers:
                - name: app
                  image: nginx
{previous}"
        );
        std::fs::write(dir.join(format!("k{i:05}.yaml")), text).expect("writable");
    }
}

/// An RGD of a chain of `length` ConfigMaps, each reading the one before, and its instance.
fn write_chain(dir: &Path, length: usize) -> (PathBuf, PathBuf) {
    let mut text = format!(
        "apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: chain
spec:
  schema:
    apiVersion: v1alpha1
    kind: Chain
    spec:
      name: string
    status:
      last: ${{r{}.data.v}}
  resources:
",
        length - 1
    );
    for i in 0..length {
        let value = if i == 0 {
            "${schema.spec.name}".to_owned()
        } else {
            format!("${{r{}.data.v}}", i - 1)
        };
        text.push_str(&format!(
            "  - id: r{i}
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: ${{schema.spec.name}}-{i}
      data:
        v: \"{value}\"
"
        ));
    }
    let rgd = dir.join("chain.yaml");
    std::fs::write(&rgd, text).expect("writable");
    let instance = dir.join("instance.yaml");
    std::fs::write(
        &instance,
        "apiVersion: kro.run/v1alpha1\nkind: Chain\nmetadata:\n  name: demo\nspec:\n  name: demo\n",
    )
    .expect("writable");
    (rgd, instance)
}

/// Prints one case's rows: the cost of each unit past the first row's N (what the N − N₀
/// more units cost, per unit, so the process's fixed cost drops out), and that as a ratio to
/// the second row's.
fn report(
    title: &str,
    unit: &str,
    rows: &[(usize, Figures)],
    baseline: Option<&[(usize, Figures)]>,
) {
    println!("{title}");
    println!(
        "  {:>6}  {:>10}  {:>10}  {:>14}  {:>7}  {:>12}  {:>12}",
        "N",
        "total",
        "peak",
        format!("time/{unit}"),
        "ratio",
        format!("bytes/{unit}"),
        "ratio"
    );
    let Some((first_n, first)) = rows.first() else {
        return;
    };
    let marginal = |n: usize, figures: &Figures| {
        let more = n.saturating_sub(*first_n).max(1) as f64;
        (
            figures.time.saturating_sub(first.time).as_secs_f64() / more,
            figures.peak_bytes.saturating_sub(first.peak_bytes) as f64 / more,
        )
    };
    let reference = rows.get(1).map(|(n, figures)| marginal(*n, figures));
    for (n, figures) in rows {
        let (time, bytes) = marginal(*n, figures);
        let (time_ratio, bytes_ratio) = match reference {
            Some((time0, bytes0)) if *n != *first_n => (
                format!("{:.2}", time / time0.max(f64::MIN_POSITIVE)),
                format!("{:.2}", bytes / bytes0.max(1.0)),
            ),
            _ => ("-".to_owned(), "-".to_owned()),
        };
        println!(
            "  {n:>6}  {:>9.2}s  {:>7.1}MiB  {:>12.3}ms  {time_ratio:>7}  {:>10.1}KiB  {bytes_ratio:>12}",
            figures.time.as_secs_f64(),
            figures.peak_bytes as f64 / 1048576.0,
            time * 1e3,
            bytes / 1024.0,
        );
    }
    if let Some(old) = baseline {
        println!("  the baseline binary on the same inputs (its figures ÷ these):");
        for ((n, new), (_, old)) in rows.iter().zip(old) {
            println!(
                "  {n:>6}  time {:>7.2}x  peak {:>5.2}x  ({:.2}s, {:.1}MiB)",
                old.time.as_secs_f64() / new.time.as_secs_f64(),
                old.peak_bytes as f64 / new.peak_bytes.max(1) as f64,
                old.time.as_secs_f64(),
                old.peak_bytes as f64 / 1048576.0,
            );
        }
    }
}

fn main() {
    // `cargo test --benches` runs this with --test-ish arguments: keep that quick.
    let quick = std::env::args().any(|arg| arg == "--test" || arg == "--quick");
    let kro = PathBuf::from(env!("CARGO_BIN_EXE_kro"));
    let baseline = std::env::var_os("KRO_BASELINE_BIN").map(PathBuf::from);
    let sets: &[usize] = if quick {
        &[20, 40]
    } else {
        &[100, 200, 400, 1000, 2000]
    };
    let chains: &[usize] = if quick {
        &[50, 100]
    } else {
        &[100, 1000, 2000, 4000]
    };
    // The quadratic binary this replaces held gigabytes at 500 RGDs: the baseline runs the
    // sizes up to KRO_BASELINE_MAX (400 RGDs, 2,000 resources by default) only.
    let baseline_max: usize = std::env::var("KRO_BASELINE_MAX")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(400);

    let measure_sets = |binary: &Path, max: usize| -> Vec<(usize, Figures)> {
        sets.iter()
            .filter(|&&n| n <= max)
            .map(|&n| {
                let dir = tempfile::tempdir().expect("a temporary directory");
                write_rgd_set(dir.path(), n);
                let path = dir.path().to_string_lossy().into_owned();
                (n, run(binary, &["validate", "-f", &path]))
            })
            .collect()
    };
    let measure_chains = |binary: &Path, max: usize| -> Vec<(usize, Figures)> {
        chains
            .iter()
            .filter(|&&n| n <= max)
            .map(|&n| {
                let dir = tempfile::tempdir().expect("a temporary directory");
                let (rgd, instance) = write_chain(dir.path(), n);
                let (rgd, instance) = (rgd.to_string_lossy(), instance.to_string_lossy());
                (n, run(binary, &["render", "-f", &rgd, "-i", &instance]))
            })
            .collect()
    };
    let old_sets = baseline
        .as_deref()
        .map(|binary| measure_sets(binary, baseline_max));
    let new_sets = measure_sets(&kro, usize::MAX);
    report(
        "kro validate of N RGDs, each using the kind of the one before",
        "RGD",
        &new_sets,
        old_sets.as_deref(),
    );
    let old_chains = baseline
        .as_deref()
        .map(|binary| measure_chains(binary, baseline_max.saturating_mul(5)));
    let new_chains = measure_chains(&kro, usize::MAX);
    report(
        "kro render of a chain of N resources (one plan)",
        "resource",
        &new_chains,
        old_chains.as_deref(),
    );
}
