//! Printing objects as kubectl does: YAML documents, or JSON indented by four spaces.

use anyhow::Context;
use serde::Serialize;

/// How objects are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormat {
    /// YAML, one document per object.
    Yaml,
    /// JSON indented by four spaces.
    Json,
}

/// One value as YAML or JSON text, ending with a newline. Structs keep their field order.
pub fn to_text<T: Serialize>(value: &T, format: OutputFormat) -> anyhow::Result<String> {
    match format {
        OutputFormat::Yaml => serde_saphyr::to_string(value).context("writing YAML"),
        OutputFormat::Json => {
            let mut out = Vec::new();
            let formatter = serde_json::ser::PrettyFormatter::with_indent(b"    ");
            let mut serializer = serde_json::Serializer::with_formatter(&mut out, formatter);
            value.serialize(&mut serializer).context("writing JSON")?;
            out.push(b'\n');
            String::from_utf8(out).context("writing JSON")
        }
    }
}
