//! Reading the files the CLI is handed with a cap, so that a huge file (or `/dev/zero`) costs
//! no more than the cap: RGD and instance files, and kubeconfigs.

use std::io::Read;
use std::path::Path;

use anyhow::Context;
use kro_graph::YamlLimits;

/// The most bytes read of any one input file: the YAML parser's input limit.
pub(crate) fn limit() -> usize {
    YamlLimits::default().input_byte_limit()
}

/// Reads `reader` up to one byte past [`limit`], so that a huge input costs no more than that
/// and is reported as too large by the parser (or by [`read_file`]).
pub(crate) fn read_bounded(reader: impl Read) -> std::io::Result<String> {
    let mut text = String::new();
    reader
        .take(u64::try_from(limit()).unwrap_or(u64::MAX).saturating_add(1))
        .read_to_string(&mut text)?;
    Ok(text)
}

/// The text of the file at `path`, refused when it is larger than [`limit`]; `what` names it
/// in errors (`the kubeconfig`).
pub(crate) fn read_file(path: &Path, what: &str) -> anyhow::Result<String> {
    let file = std::fs::File::open(path)
        .with_context(|| format!("{}: cannot read {what}", path.display()))?;
    let text =
        read_bounded(file).with_context(|| format!("{}: cannot read {what}", path.display()))?;
    if text.len() > limit() {
        anyhow::bail!(
            "{}: {what} is larger than {} MiB; not read further",
            path.display(),
            limit() >> 20
        );
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endless_file_is_read_no_further_than_the_cap() {
        let error = read_file(Path::new("/dev/zero"), "the kubeconfig").expect_err("too large");
        assert!(
            error
                .to_string()
                .starts_with("/dev/zero: the kubeconfig is larger than"),
            "{error}"
        );
    }
}
