//! A `kro dev` process for the tests of the `kro` binary.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// `kro dev` on a free port, killed when dropped.
pub struct KroDev {
    child: Child,
}

impl KroDev {
    /// Starts `binary dev --port 0 --kubeconfig-out KUBECONFIG` with the flags `extra`, and
    /// returns once it says its controllers run (its later output is drained, so it never
    /// blocks on a full pipe).
    ///
    /// # Panics
    /// When it cannot be started or says something else first.
    pub fn start(binary: &Path, kubeconfig: &Path, extra: &[&str]) -> KroDev {
        let mut child = Command::new(binary)
            .args(["dev", "--port", "0"])
            .args(extra)
            .arg("--kubeconfig-out")
            .arg(kubeconfig)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("kro dev starts");
        let stdout = child.stdout.take().expect("stdout");
        let mut lines = BufReader::new(stdout).lines();
        let first = lines.next().and_then(Result::ok).unwrap_or_default();
        assert!(
            first.contains("controllers running"),
            "kro dev said: {first:?}"
        );
        std::thread::spawn(move || for _ in lines.by_ref() {});
        KroDev { child }
    }
}

impl Drop for KroDev {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
