//! The logs of what a suite runs in its own process (the controllers, the engine, the
//! embedded API server), in the test's output.

/// Sends this process's `tracing` output to the test's output (what libtest captures, and
/// prints for a failed test or under `--nocapture`), filtered by `RUST_LOG`; with `RUST_LOG`
/// unset, or once a subscriber is set, it does nothing. `scripts/flake-loop` sets `RUST_LOG`,
/// so each run's log says what the controllers did.
pub fn log_to_test_output() {
    let Ok(filter) = tracing_subscriber::EnvFilter::try_from_default_env() else {
        return;
    };
    // A second suite of the same process finds the subscriber set: that one serves both.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_test_writer()
        .try_init();
}
