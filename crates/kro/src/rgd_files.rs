//! Reading ResourceGraphDefinitions and CRDs from files, building them offline, and reporting
//! problems as `file:line:column: error: ...` lines: what `kro validate`, `kro generate crd`
//! and `kro graph` share.
//!
//! Schemas come from, in order: CRDs given with `--crds`, CRDs found among the `-f` documents,
//! the API server of `--kubeconfig` when given, the built-in Kubernetes 1.33 catalog, and the
//! CRDs generated from the other RGDs being read (so an RGD may use the kind another one
//! defines).

use std::collections::{BTreeSet, HashSet};
use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::Context;
use kro_graph::{
    BuildConfig, BuildWarning, BuiltinCatalog, CatalogSchemas, CompiledGraph, CrdSchemas,
    FeatureGates, FieldPath, GeneratedSchemas, Location, ResourceGraphDefinition, SchemaSources,
    SourceMap, YamlDocument, build_graph_with, parse_yaml_documents,
};
use kro_schema::Gvk;

/// The file name extensions read from a directory, as kubectl does.
const EXTENSIONS: [&str; 3] = ["yaml", "yml", "json"];

/// Where documents come from: `-f` paths (files, directories, `-` for standard input).
#[derive(Debug, Clone, clap::Args)]
pub struct InputArgs {
    /// A file, a directory of .yaml/.yml/.json files, or `-` for standard input. Repeatable.
    #[arg(short = 'f', long = "filename", value_name = "FILE", required = true)]
    pub files: Vec<PathBuf>,
    /// Read the directories given with -f recursively.
    #[arg(short = 'R', long)]
    pub recursive: bool,
    /// CustomResourceDefinitions (a file, or a directory read recursively) whose kinds the
    /// RGDs use. Repeatable.
    #[arg(long = "crds", value_name = "PATH")]
    pub crds: Vec<PathBuf>,
    /// Also read the schemas of the kinds the RGDs use from the API server this kubeconfig
    /// points at (its OpenAPI v3 documents). Without it nothing leaves the machine.
    #[arg(long, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context to use (default: its current context).
    #[arg(long, value_name = "NAME", requires = "kubeconfig")]
    pub context: Option<String>,
    /// How long reading the schemas from the API server may take (no limit when `None`): a
    /// command with a `--timeout` spends it here too.
    #[arg(skip)]
    pub answer_within: Option<std::time::Duration>,
    /// The feature gates of the controller the RGDs are meant for, as its `--feature-gates`
    /// (`CELOmitFunction=true` lets them use `omit()`); upstream's defaults, all off, unless
    /// given.
    #[arg(long, value_name = "GATES", default_value = "", value_parser = crate::commands::controller::parse_feature_gates)]
    pub feature_gates: FeatureGates,
}

/// How bad a [`Diagnostic`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    /// The input is rejected.
    Error,
    /// Worth knowing; the input is accepted.
    Warning,
}

/// One problem, with the place it was found.
#[derive(Debug, Clone)]
pub struct Diagnostic {
    /// The file, as given on the command line (`<stdin>` for standard input).
    pub file: String,
    /// The line and column, when known.
    pub location: Option<Location>,
    /// Error or warning.
    pub severity: Severity,
    /// What is wrong, with the field path when there is one.
    pub message: String,
}

/// `file:line:column: error: message`, the form editors and CI annotations understand.
impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:", self.file)?;
        if let Some(location) = self.location {
            write!(f, "{location}:")?;
        }
        let severity = match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        write!(f, " {severity}: {}", self.message)
    }
}

/// A ResourceGraphDefinition read from a file.
#[derive(Debug)]
pub struct LoadedRgd {
    /// The file it came from.
    pub file: String,
    /// Where each field of the document is, for locations.
    pub source_map: SourceMap,
    /// The document's position in its file (from 0).
    pub index: usize,
    /// The decoded RGD.
    pub rgd: ResourceGraphDefinition,
}

impl LoadedRgd {
    /// The RGD's name, or `#N` when it has none.
    pub fn name(&self) -> String {
        match self.rgd.metadata.name.as_str() {
            "" => format!("#{}", self.index + 1),
            name => name.to_owned(),
        }
    }

    fn diagnostic(&self, path: &FieldPath, severity: Severity, message: String) -> Diagnostic {
        Diagnostic {
            file: self.file.clone(),
            location: self.source_map.nearest(path),
            severity,
            message,
        }
    }
}

/// An RGD and what building it gave.
#[derive(Debug)]
pub struct BuiltRgd {
    /// The input.
    pub loaded: LoadedRgd,
    /// The graph, or `None` when the RGD has errors (they are in the diagnostics).
    pub graph: Option<CompiledGraph>,
}

/// Everything read and built.
#[derive(Debug, Default)]
pub struct Workspace {
    /// Each RGD in input order.
    pub rgds: Vec<BuiltRgd>,
    /// Every problem, in input order.
    pub diagnostics: Vec<Diagnostic>,
}

impl Workspace {
    /// Whether any diagnostic is an error.
    pub fn has_errors(&self) -> bool {
        self.diagnostics
            .iter()
            .any(|diagnostic| diagnostic.severity == Severity::Error)
    }

    /// Prints every diagnostic to standard error.
    pub fn print_diagnostics(&self) {
        for diagnostic in &self.diagnostics {
            eprintln!("{diagnostic}");
        }
    }
}

/// A file's text and the name to report it by.
struct InputFile {
    name: String,
    text: String,
}

/// Reads, decodes and builds every RGD in the inputs, keeping every graph.
///
/// # Errors
/// Only for unreadable paths; problems inside the files become diagnostics.
pub fn load_and_build(args: &InputArgs) -> anyhow::Result<Workspace> {
    let mut rgds = Vec::new();
    let mut workspace = load_and_visit(args, &mut |built| rgds.push(built))?;
    workspace.rgds = rgds;
    Ok(workspace)
}

/// Reads, decodes and builds every RGD in the inputs, handing each to `visit` as soon as it is
/// built (in input order) and keeping none: the returned workspace holds the diagnostics only.
///
/// # Errors
/// Only for unreadable paths; problems inside the files become diagnostics.
pub fn load_and_visit(
    args: &InputArgs,
    visit: &mut dyn FnMut(BuiltRgd),
) -> anyhow::Result<Workspace> {
    let mut workspace = Workspace::default();
    let mut crds = CrdSchemas::new();
    let mut file_order = Vec::new();
    for path in &args.crds {
        for file in read_path(path, true, &mut workspace.diagnostics)? {
            file_order.push(file.name.clone());
            for document in documents(&file, &mut workspace.diagnostics) {
                add_crd(&mut crds, &file.name, &document, &mut workspace.diagnostics);
            }
        }
    }
    let mut loaded = Vec::new();
    for path in &args.files {
        for file in read_path(path, args.recursive, &mut workspace.diagnostics)? {
            file_order.push(file.name.clone());
            for document in documents(&file, &mut workspace.diagnostics) {
                // A document of kind ResourceGraphDefinition with another apiVersion is an RGD
                // written wrong, and decoding says how.
                if document.is_resource_graph_definition()
                    || document.kind.as_deref() == Some(kro_graph::metadata::RGD_KIND)
                {
                    match document.to_resource_graph_definition() {
                        // The decoded RGD and the source map are all that is kept of the
                        // document: its JSON value would double the memory of every RGD.
                        Ok(rgd) => loaded.push(LoadedRgd {
                            file: file.name.clone(),
                            source_map: document.source_map,
                            index: document.index,
                            rgd,
                        }),
                        Err(error) => workspace.diagnostics.push(Diagnostic {
                            file: file.name.clone(),
                            location: error.location,
                            severity: Severity::Error,
                            message: error_without_location(&error.path, &error.kind),
                        }),
                    }
                } else if document.kind.as_deref() == Some("CustomResourceDefinition") {
                    add_crd(&mut crds, &file.name, &document, &mut workspace.diagnostics);
                } else if is_resource_list(&document.value) {
                    workspace.diagnostics.push(Diagnostic {
                        file: file.name.clone(),
                        location: document.location(),
                        severity: Severity::Error,
                        message: "this document is a list of RGD resources (items with an `id`), \
                                  not a ResourceGraphDefinition: put the list under \
                                  `spec.resources` of one"
                            .to_owned(),
                    });
                }
            }
        }
    }
    let live = match &args.kubeconfig {
        Some(kubeconfig) => Some(crate::live_schemas::fetch(
            kubeconfig,
            args.context.as_deref(),
            &used_kinds(&loaded),
            args.answer_within,
        )?),
        None => None,
    };
    let config = BuildConfig {
        features: args.feature_gates,
        ..BuildConfig::default()
    };
    build_all(
        loaded,
        crds,
        live,
        &config,
        &mut workspace.diagnostics,
        visit,
    );
    // Report file by file, in the order the files were read.
    let mut positions = std::collections::HashMap::new();
    for (position, file) in file_order.into_iter().enumerate() {
        positions.entry(file).or_insert(position);
    }
    workspace.diagnostics.sort_by_key(|diagnostic| {
        positions
            .get(&diagnostic.file)
            .copied()
            .unwrap_or(usize::MAX)
    });
    Ok(workspace)
}

/// Builds each RGD once, in input order, against the schema sources then the kinds the other
/// RGDs define (generated on first use, see [`GeneratedSchemas`]), and hands it to `visit`
/// with its diagnostics recorded. What `visit` does not keep is dropped before the next RGD is
/// built, so memory does not grow with the graphs of RGDs already reported.
fn build_all(
    loaded: Vec<LoadedRgd>,
    crds: CrdSchemas,
    live: Option<CatalogSchemas>,
    config: &BuildConfig,
    diagnostics: &mut Vec<Diagnostic>,
    visit: &mut dyn FnMut(BuiltRgd),
) {
    let mut base = SchemaSources::new().with(crds);
    if let Some(live) = live {
        base = base.with(live);
    }
    let base = base.with(BuiltinCatalog);
    let (rgds, places): (Vec<_>, Vec<_>) = loaded
        .into_iter()
        .map(|loaded| (loaded.rgd, (loaded.file, loaded.source_map, loaded.index)))
        .unzip();
    let files: Vec<String> = places.iter().map(|(file, _, _)| file.clone()).collect();
    let generated = GeneratedSchemas::new(&rgds, &base).with_config(config.clone());
    for (position, (rgd, (file, source_map, index))) in rgds.iter().zip(places).enumerate() {
        let outcome = build_graph_with(rgd, &generated.for_rgd(position), config);
        let loaded = LoadedRgd {
            file,
            source_map,
            index,
            rgd: rgd.clone(),
        };
        let graph = match outcome {
            Ok(graph) => {
                for warning in &graph.warnings {
                    let path = warning_path(&loaded.rgd, warning);
                    let diagnostic =
                        loaded.diagnostic(&path, Severity::Warning, warning.to_string());
                    diagnostics.push(diagnostic);
                }
                Some(graph)
            }
            Err(errors) => {
                for error in errors.errors {
                    let message = format!("{}: {error}", loaded.name());
                    let diagnostic = loaded.diagnostic(&error.path, Severity::Error, message);
                    diagnostics.push(diagnostic);
                }
                None
            }
        };
        visit(BuiltRgd { loaded, graph });
    }
    // A generated CRD is well formed; one that is not usable as a schema is our bug, shown as
    // a warning while the RGDs using its kind saw it as unknown.
    for (position, error) in generated.unusable() {
        if let (Some(rgd), Some(file)) = (rgds.get(position), files.get(position)) {
            diagnostics.push(Diagnostic {
                file: file.clone(),
                location: None,
                severity: Severity::Warning,
                message: format!(
                    "{}: the generated CRD is not usable as a schema: {error}",
                    rgd.metadata.name
                ),
            });
        }
    }
}

/// The kinds the RGDs' templates and externalRefs name literally.
fn used_kinds(loaded: &[LoadedRgd]) -> BTreeSet<Gvk> {
    loaded
        .iter()
        .flat_map(|loaded| kro_controller::used_kinds(&loaded.rgd))
        .collect()
}

/// Where a warning points: the kind of the resource it is about.
fn warning_path(rgd: &ResourceGraphDefinition, warning: &BuildWarning) -> FieldPath {
    match warning {
        BuildWarning::UnknownKind { resource, .. } => {
            let index = rgd
                .spec
                .resources
                .iter()
                .position(|candidate| &candidate.id == resource);
            match index {
                Some(index) => FieldPath::root()
                    .key("spec")
                    .key("resources")
                    .index(index)
                    .key("template")
                    .key("kind"),
                None => FieldPath::root(),
            }
        }
        _ => FieldPath::root(),
    }
}

fn error_without_location(path: &FieldPath, kind: &impl fmt::Display) -> String {
    if path.is_root() {
        kind.to_string()
    } else {
        format!("{path}: {kind}")
    }
}

fn add_crd(
    crds: &mut CrdSchemas,
    file: &str,
    document: &YamlDocument,
    diagnostics: &mut Vec<Diagnostic>,
) {
    if document.kind.as_deref() != Some("CustomResourceDefinition") {
        return;
    }
    if let Err(error) = crds.add(&document.value) {
        diagnostics.push(Diagnostic {
            file: file.to_owned(),
            location: document.location(),
            severity: Severity::Error,
            message: error.to_string(),
        });
    }
}

/// Every YAML document at `path` (a file, a directory, or `-`), with the file it came from.
///
/// # Errors
/// For unreadable paths and for text that is not valid YAML (naming file, line and column).
pub fn read_yaml_documents(
    path: &Path,
    recursive: bool,
) -> anyhow::Result<Vec<(String, YamlDocument)>> {
    let mut all = Vec::new();
    let mut warnings = Vec::new();
    let files = read_path(path, recursive, &mut warnings)?;
    for warning in warnings {
        eprintln!("{warning}");
    }
    for file in files {
        let documents = parse_yaml_documents(&file.text).map_err(|error| {
            let location = error
                .location
                .map(|at| format!("{at}:"))
                .unwrap_or_default();
            anyhow::anyhow!("{}:{location} {}", file.name, error.kind)
        })?;
        all.extend(
            documents
                .into_iter()
                .map(|document| (file.name.clone(), document)),
        );
    }
    Ok(all)
}

/// The documents of a file; a file that is not valid YAML becomes a diagnostic.
fn documents(file: &InputFile, diagnostics: &mut Vec<Diagnostic>) -> Vec<YamlDocument> {
    match parse_yaml_documents(&file.text) {
        Ok(documents) => {
            for document in &documents {
                for warning in &document.warnings {
                    diagnostics.push(Diagnostic {
                        file: file.name.clone(),
                        location: warning.location,
                        severity: Severity::Warning,
                        message: warning.kind.to_string(),
                    });
                }
            }
            documents
        }
        Err(error) => {
            diagnostics.push(Diagnostic {
                file: file.name.clone(),
                location: error.location,
                severity: Severity::Error,
                message: error.kind.to_string(),
            });
            Vec::new()
        }
    }
}

/// Whether a document is a bare list of RGD resources, as documentation writes them.
fn is_resource_list(value: &serde_json::Value) -> bool {
    value
        .as_array()
        .is_some_and(|items| !items.is_empty() && items.iter().all(|item| item.get("id").is_some()))
}

/// The files at `path`: the file itself, standard input for `-`, or a directory's regular
/// files with a YAML or JSON extension (sorted; into subdirectories when `recursive`).
///
/// A path given explicitly is read whatever it is (`-f <(command)` is a pipe). Inside a
/// directory, symbolic links are followed, but a directory already visited (by its canonical
/// path: a link back to a parent makes a loop) is not visited again, and what is not a regular
/// file or a directory (a FIFO would block the read forever; sockets, devices) is never
/// opened. Each is skipped with a warning naming it in `warnings`.
fn read_path(
    path: &Path,
    recursive: bool,
    warnings: &mut Vec<Diagnostic>,
) -> anyhow::Result<Vec<InputFile>> {
    if path == Path::new("-") {
        return Ok(vec![InputFile {
            name: "<stdin>".to_owned(),
            text: crate::bounded_read::read_bounded(std::io::stdin())
                .context("reading standard input")?,
        }]);
    }
    let metadata =
        std::fs::metadata(path).with_context(|| format!("{}: cannot read", path.display()))?;
    if !metadata.is_dir() {
        return Ok(vec![read_file(path)?]);
    }
    let files = directory_files(path, recursive, warnings)?;
    files.iter().map(|file| read_file(file)).collect()
}

/// The regular files with a YAML or JSON extension under `root`, sorted, each directory
/// visited once.
fn directory_files(
    root: &Path,
    recursive: bool,
    warnings: &mut Vec<Diagnostic>,
) -> anyhow::Result<Vec<PathBuf>> {
    let mut skip = |path: &Path, why: &str| {
        warnings.push(Diagnostic {
            file: path.display().to_string(),
            location: None,
            severity: Severity::Warning,
            message: format!("skipped: {why}"),
        });
    };
    let mut visited = HashSet::new();
    let mut files = Vec::new();
    let mut directories = vec![root.to_path_buf()];
    while let Some(directory) = directories.pop() {
        let canonical = std::fs::canonicalize(&directory)
            .with_context(|| format!("{}: cannot resolve the directory", directory.display()))?;
        if !visited.insert(canonical) {
            skip(
                &directory,
                "a directory already read (a symbolic link loop, or two links to one directory)",
            );
            continue;
        }
        let entries = std::fs::read_dir(&directory)
            .with_context(|| format!("{}: cannot list the directory", directory.display()))?;
        for entry in entries {
            let entry = entry.with_context(|| format!("{}: cannot list", directory.display()))?;
            let path = entry.path();
            let has_extension = path
                .extension()
                .and_then(|extension| extension.to_str())
                .is_some_and(|extension| EXTENSIONS.contains(&extension));
            // Follows a symbolic link; a dangling one has no metadata.
            let Ok(metadata) = std::fs::metadata(&path) else {
                if has_extension {
                    skip(&path, "a symbolic link to nothing, or unreadable");
                }
                continue;
            };
            if metadata.is_dir() {
                if recursive {
                    directories.push(path);
                }
                continue;
            }
            if !has_extension {
                continue;
            }
            if metadata.is_file() {
                files.push(path);
            } else {
                skip(
                    &path,
                    "not a regular file (a FIFO, socket or device is not read)",
                );
            }
        }
    }
    files.sort();
    Ok(files)
}

/// Reads a file, stopping one byte past the YAML size limit so that a huge file costs no more
/// than that and is reported as too large by the parser.
fn read_file(path: &Path) -> anyhow::Result<InputFile> {
    let name = path.display().to_string();
    let file = std::fs::File::open(path).with_context(|| format!("{name}: cannot read"))?;
    Ok(InputFile {
        text: crate::bounded_read::read_bounded(file)
            .with_context(|| format!("{name}: cannot read"))?,
        name,
    })
}
