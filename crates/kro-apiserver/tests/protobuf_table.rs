//! The protobuf message table (`src/protobuf/messages.table`) is generated, not written by
//! hand: field numbers and wire kinds come from the `k8s-pb` crate's prost source, and what
//! prost cannot say — the JSON name, whether the Go field is a pointer (written only when
//! set) or a value (always written), `omitempty`, and embedded structs inlined into their
//! parent's JSON — comes from the Go types of `k8s.io/api` 1.33 in the module cache that
//! `scripts/controlplane.sh build` fills. The kinds come from the kro-schema 1.33 catalog.
//! k8s-pb is generated from a later release: the messages of 1.33 alphas it dropped
//! (`resource.k8s.io/v1alpha3` but DeviceTaintRule, `storagemigration.k8s.io/v1alpha1`) and the
//! fields a 1.33 Go type has that its message lost come from the `generated.proto` beside
//! that Go package, Kubernetes' own protobuf schema of it.
//!
//! `KRO_WRITE_PROTO_TABLE=1 cargo test -p kro-apiserver --test protobuf_table` rewrites the
//! table; without it the test fails when the committed table is stale. Where the Go sources
//! are not there (no control plane built) the comparison is skipped with a printed reason,
//! except under `CI=true`, where that is a failure.
//! `KRO_GO_MODCACHE` names another module cache.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use kro_schema::Catalog;

const TABLE: &str = "src/protobuf/messages.table";

/// Types whose Go marshalling is written by hand (the codec handles them by name), so their
/// Go fields carry no JSON tags.
const HAND_WRITTEN: [&str; 3] = ["IntOrString", "Quantity", "Time"];

/// A field of a prost message as `k8s-pb` declares it.
#[derive(Debug, Clone)]
struct ProstField {
    tag: u32,
    rust_name: String,
    /// `string`, `bool`, `int32`, `int64`, `double`, `bytes`, `message:<key>` or
    /// `map:<key type>:<value type>`.
    kind: String,
    repeated: bool,
}

/// A field of a Go struct: what its tags and type say.
#[derive(Debug, Clone)]
struct GoField {
    json: String,
    omitempty: bool,
    inline: bool,
    pointer: bool,
}

#[derive(Debug, Default)]
struct GoPackage {
    /// struct name -> protobuf field number -> field.
    structs: BTreeMap<String, BTreeMap<u32, GoField>>,
    /// Named slice types (`type ExtraValue []string`), which protobuf wraps in a message.
    slice_types: BTreeSet<String>,
    /// Types defined as another package's struct (`type MatchCondition v1.MatchCondition`):
    /// struct name -> (that package's table path, its type name).
    defined_as: BTreeMap<String, (String, String)>,
}

fn k8s_pb_source() -> Option<PathBuf> {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| Path::new(&home).join(".cargo")))?;
    let registry = std::fs::read_dir(home.join("registry/src")).ok()?;
    registry
        .filter_map(Result::ok)
        .map(|entry| entry.path().join("k8s-pb-0.9.0/src"))
        .find(|path| path.is_dir())
}

fn go_module_cache() -> PathBuf {
    std::env::var_os("KRO_GO_MODCACHE").map_or_else(
        || kro_test_support::repository_root().join("target/controlplane/gopath/pkg/mod"),
        PathBuf::from,
    )
}

/// The directory of a Go module at the 1.33 version (`k8s.io/api@v0.33.*`).
fn go_module(cache: &Path, module: &str) -> Option<PathBuf> {
    let (parent, name) = module.rsplit_once('/')?;
    let prefix = format!("{name}@v0.33.");
    let mut found: Vec<PathBuf> = std::fs::read_dir(cache.join(parent))
        .ok()?
        .filter_map(Result::ok)
        .filter(|entry| entry.file_name().to_string_lossy().starts_with(&prefix))
        .map(|entry| entry.path())
        .collect();
    found.sort();
    found.pop()
}

/// The Go package directory behind a k8s-pb module path (`api/core/v1`).
fn go_package_dir(cache: &Path, module: &str) -> Option<PathBuf> {
    let (first, rest) = module.split_once('/')?;
    let module_name = match first {
        "api" => "k8s.io/api",
        "apimachinery" => "k8s.io/apimachinery",
        "apiextensions_apiserver" => "k8s.io/apiextensions-apiserver",
        "kube_aggregator" => "k8s.io/kube-aggregator",
        _ => return None,
    };
    let dir = go_module(cache, module_name)?.join(rest);
    dir.is_dir().then_some(dir)
}

fn parse_prost_attribute(attribute: &str) -> Option<(String, bool, u32)> {
    let inner = attribute.strip_prefix("#[prost(")?.strip_suffix(")]")?;
    let tag = inner
        .split("tag = \"")
        .nth(1)?
        .split('"')
        .next()?
        .parse()
        .ok()?;
    if let Some(map) = inner.strip_prefix("btree_map = \"") {
        let types = map.split('"').next()?;
        let (key, value) = types.split_once(", ")?;
        return Some((format!("map:{key}:{value}"), false, tag));
    }
    let kind = inner.split([',', ' ']).next()?.to_owned();
    Some((kind, inner.contains("repeated"), tag))
}

/// The message a prost field type names, resolved against the module it is declared in.
fn message_type(module: &str, type_text: &str) -> Option<String> {
    const WRAPPERS: [&str; 5] = ["Option", "Vec", "String", "Box", "BTreeMap"];
    let path = type_text
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
        .rfind(|token| {
            let last = token.rsplit("::").next().unwrap_or_default();
            last.starts_with(|c: char| c.is_ascii_uppercase()) && !WRAPPERS.contains(&last)
        })?;
    let mut segments: Vec<&str> = module.split('/').collect();
    let mut parts = path.split("::").peekable();
    while parts.peek() == Some(&"super") {
        parts.next();
        segments.pop();
    }
    segments.extend(parts);
    Some(segments.join("."))
}

/// Every message of one k8s-pb module file.
fn parse_prost_module(module: &str, source: &str) -> BTreeMap<String, Vec<ProstField>> {
    let mut messages = BTreeMap::new();
    let mut current: Option<(String, Vec<ProstField>)> = None;
    let mut pending: Option<(String, bool, u32)> = None;
    let mut declaration = String::new();
    for line in source.lines() {
        let trimmed = line.trim();
        if let Some(rest) = line.strip_prefix("pub struct ") {
            let name = rest.split([' ', '{']).next().unwrap_or_default().to_owned();
            if rest.ends_with("{}") {
                messages.insert(format!("{}.{name}", module.replace('/', ".")), Vec::new());
            } else {
                current = Some((name, Vec::new()));
            }
            continue;
        }
        if line == "}" {
            if let Some((name, fields)) = current.take() {
                messages.insert(format!("{}.{name}", module.replace('/', ".")), fields);
            }
            continue;
        }
        let Some((_, fields)) = current.as_mut() else {
            continue;
        };
        if trimmed.starts_with("#[prost(") {
            pending = parse_prost_attribute(trimmed);
            declaration.clear();
            continue;
        }
        if pending.is_some() && !trimmed.starts_with("///") {
            declaration.push_str(trimmed);
            let balanced = declaration.matches('<').count() == declaration.matches('>').count();
            if !(trimmed.ends_with(',') && balanced) {
                continue;
            }
            let Some((mut kind, repeated, tag)) = pending.take() else {
                continue;
            };
            let (name, type_text) = declaration
                .trim_start_matches("pub ")
                .split_once(':')
                .unwrap_or_default();
            let rust_name = name.trim().trim_start_matches("r#").to_owned();
            if kind == "message" || kind.ends_with(":message") {
                let target = message_type(module, type_text).unwrap_or_default();
                kind = if kind == "message" {
                    format!("message:{target}")
                } else {
                    kind.replace(":message", &format!(":message:{target}"))
                };
            }
            fields.push(ProstField {
                tag,
                rust_name,
                kind,
                repeated,
            });
        }
    }
    messages
}

fn parse_go_tag(tag: &str, key: &str) -> Option<String> {
    let start = tag.find(&format!("{key}:\""))? + key.len() + 2;
    let end = tag[start..].find('"')? + start;
    Some(tag[start..end].to_owned())
}

fn parse_go_package(dir: &Path) -> GoPackage {
    let mut package = GoPackage::default();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return package;
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| {
            let name = path.file_name().unwrap_or_default().to_string_lossy();
            name.ends_with(".go") && !name.ends_with("_test.go")
        })
        .collect();
    files.sort();
    for file in files {
        let source = std::fs::read_to_string(&file).unwrap_or_default();
        let mut current: Option<String> = None;
        // Import names of k8s.io packages -> their table paths (`api.admissionregistration.v1`).
        let mut imports = BTreeMap::new();
        for line in source.lines() {
            let mut words = line.trim().trim_start_matches("import ").split_whitespace();
            if let (Some(alias), Some(path), None) = (words.next(), words.next(), words.next())
                && let Some(path) = path.trim_matches('"').strip_prefix("k8s.io/")
            {
                imports.insert(alias.to_owned(), path.replace(['/'], ".").replace('-', "_"));
            }
        }
        for line in source.lines() {
            if let Some(rest) = line.strip_prefix("type ") {
                let mut words = rest.split_whitespace();
                let name = words.next().unwrap_or_default().to_owned();
                match words.next() {
                    Some("struct") => current = Some(name),
                    Some(kind) if kind.starts_with("[]") && kind != "[]byte" => {
                        package.slice_types.insert(name.to_ascii_lowercase());
                    }
                    Some(kind) => {
                        if let Some((alias, type_name)) = kind.split_once('.')
                            && let Some(path) = imports.get(alias)
                        {
                            package.defined_as.insert(
                                name.to_ascii_lowercase(),
                                (path.clone(), type_name.to_ascii_lowercase()),
                            );
                        }
                    }
                    None => {}
                }
                continue;
            }
            if line.starts_with('}') {
                current = None;
                continue;
            }
            let Some(name) = &current else { continue };
            let trimmed = line.trim();
            if trimmed.starts_with("//") {
                continue;
            }
            let Some((declaration, tag)) = trimmed.split_once('`') else {
                continue;
            };
            let Some(protobuf) = parse_go_tag(tag, "protobuf") else {
                continue;
            };
            let Some(number) = protobuf.split(',').nth(1).and_then(|n| n.parse().ok()) else {
                continue;
            };
            let json = parse_go_tag(tag, "json").unwrap_or_default();
            let mut words = declaration.split_whitespace();
            let first = words.next().unwrap_or_default();
            let go_type = words.next().unwrap_or(first);
            let (json_name, options) = json.split_once(',').unwrap_or((&json, ""));
            package
                .structs
                .entry(name.to_ascii_lowercase())
                .or_default()
                .insert(
                    number,
                    GoField {
                        json: json_name.to_owned(),
                        omitempty: options.split(',').any(|option| option == "omitempty"),
                        inline: options.split(',').any(|option| option == "inline"),
                        pointer: go_type.starts_with('*'),
                    },
                );
        }
    }
    package
}

fn lower_camel(snake: &str) -> String {
    let mut out = String::new();
    let mut upper = false;
    for c in snake.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.push(c.to_ascii_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// The message key of a catalog definition name.
/// A message or field type of a `generated.proto` as the table names it: scalars as they are,
/// messages by their k8s-pb path (`k8s.io.api.core.v1.Pod` is `api.core.v1.Pod`; a bare name
/// is in `package`, the file's own).
fn proto_type(package: &str, type_name: &str) -> String {
    const SCALARS: [&str; 8] = [
        "string", "bool", "int32", "int64", "uint32", "uint64", "double", "bytes",
    ];
    if SCALARS.contains(&type_name) {
        return type_name.to_owned();
    }
    let path = match type_name.trim_start_matches('.').strip_prefix("k8s.io.") {
        Some(qualified) => qualified.replace('-', "_"),
        None => format!("{package}.{type_name}"),
    };
    format!("message:{path}")
}

/// Every message of a Kubernetes `generated.proto` (the Go package's own protobuf schema, which
/// fills what k8s-pb, generated from a later release, lacks): `module` is its k8s-pb path
/// (`api/resource/v1alpha3`).
fn parse_generated_proto(module: &str, source: &str) -> BTreeMap<String, Vec<ProstField>> {
    let package = module.replace('/', ".");
    let mut messages = BTreeMap::new();
    let mut current: Option<(String, Vec<ProstField>)> = None;
    for line in source.lines() {
        let line = line.split("//").next().unwrap_or_default().trim();
        if let Some(rest) = line.strip_prefix("message ") {
            let name = rest.trim_end_matches('{').trim().to_owned();
            current = Some((name, Vec::new()));
            continue;
        }
        if line == "}" {
            if let Some((name, fields)) = current.take() {
                messages.insert(format!("{package}.{name}"), fields);
            }
            continue;
        }
        let Some((_, fields)) = current.as_mut() else {
            continue;
        };
        let Some((declaration, tag)) = line.trim_end_matches(';').split_once(" = ") else {
            continue;
        };
        let Ok(tag) = tag.trim().parse::<u32>() else {
            continue;
        };
        let (kind, repeated, name) = if let Some(map) = declaration.strip_prefix("map<") {
            let Some((types, name)) = map.split_once('>') else {
                continue;
            };
            let (key, value) = types.split_once(',').unwrap_or_default();
            let value = proto_type(&package, value.trim());
            (format!("map:{}:{value}", key.trim()), false, name.trim())
        } else {
            let mut words = declaration.split_whitespace();
            let label = words.next().unwrap_or_default();
            let (Some(type_name), Some(name)) = (words.next(), words.next()) else {
                continue;
            };
            (proto_type(&package, type_name), label == "repeated", name)
        };
        fields.push(ProstField {
            tag,
            rust_name: snake_case(name),
            kind,
            repeated,
        });
    }
    messages
}

fn snake_case(camel: &str) -> String {
    let mut snake = String::new();
    for c in camel.chars() {
        if c.is_ascii_uppercase() {
            snake.push('_');
            snake.push(c.to_ascii_lowercase());
        } else {
            snake.push(c);
        }
    }
    snake
}

/// The messages of the `generated.proto` beside the Go package of `module`, if it has one.
fn generated_proto(cache: &Path, module: &str) -> BTreeMap<String, Vec<ProstField>> {
    go_package_dir(cache, module)
        .and_then(|dir| std::fs::read_to_string(dir.join("generated.proto")).ok())
        .map(|source| parse_generated_proto(module, &source))
        .unwrap_or_default()
}

fn definition_message(definition: &str) -> Option<String> {
    Some(definition.strip_prefix("io.k8s.")?.replace('-', "_"))
}

fn referenced(kind: &str) -> Option<&str> {
    kind.rsplit_once("message:").map(|(_, target)| target)
}

struct Generated {
    table: String,
    unmatched: Vec<String>,
}

fn generate(pb_source: &Path, cache: &Path) -> Generated {
    let mut messages = BTreeMap::new();
    let mut go_packages = BTreeMap::new();
    let mut modules = Vec::new();
    collect_modules(pb_source, pb_source, &mut modules);
    for module in modules {
        let Some(dir) = go_package_dir(cache, &module) else {
            continue;
        };
        let source =
            std::fs::read_to_string(pb_source.join(&module).join("mod.rs")).unwrap_or_default();
        messages.extend(parse_prost_module(&module, &source));
        go_packages.insert(module.replace('/', "."), parse_go_package(&dir));
    }
    let catalog = Catalog::kubernetes();
    let mut kinds = BTreeMap::new();
    let mut unmatched = Vec::new();
    // Kinds whose messages k8s-pb does not have (alphas a later release removed): their
    // messages come from Kubernetes' own generated.proto of that version.
    let mut completed = BTreeSet::new();
    for gvk in catalog.gvks() {
        let Some(message) = catalog
            .resolve(gvk)
            .found()
            .and_then(|kind| definition_message(kind.definition_name()))
        else {
            continue;
        };
        let Some((package, _)) = message.rsplit_once('.') else {
            continue;
        };
        if messages.contains_key(&message) || !completed.insert(package.to_owned()) {
            continue;
        }
        let module = package.replace('.', "/");
        if let Some(dir) = go_package_dir(cache, &module) {
            for (name, fields) in generated_proto(cache, &module) {
                messages.entry(name).or_insert(fields);
            }
            go_packages
                .entry(package.to_owned())
                .or_insert_with(|| parse_go_package(&dir));
        }
    }
    for gvk in catalog.gvks() {
        let Some(kind) = catalog.resolve(gvk).found() else {
            continue;
        };
        match definition_message(kind.definition_name()) {
            Some(message) if messages.contains_key(&message) => {
                kinds.insert((gvk.api_version(), gvk.kind().to_owned()), message);
            }
            _ => unmatched.push(format!("kind {gvk}: no k8s-pb message")),
        }
    }
    for extra in ["Status", "WatchEvent"] {
        kinds.insert(
            ("v1".to_owned(), extra.to_owned()),
            format!("apimachinery.pkg.apis.meta.v1.{extra}"),
        );
    }
    let mut reachable = BTreeSet::new();
    let mut queue: VecDeque<String> = kinds.values().cloned().collect();
    while let Some(name) = queue.pop_front() {
        if !reachable.insert(name.clone()) {
            continue;
        }
        for field in messages.get(&name).into_iter().flatten() {
            if let Some(target) = referenced(&field.kind) {
                queue.push_back(target.to_owned());
            }
        }
    }
    let mut table = String::from(
        "# Generated by `KRO_WRITE_PROTO_TABLE=1 cargo test -p kro-apiserver --test protobuf_table`\n\
         # from k8s-pb 0.9.0 (field numbers, wire kinds; what it lacks from 1.33's generated.proto)\n\
         # and the Go types of k8s.io/api 1.33 (JSON names, pointer, omitempty, inline). Do not edit.\n\
         #\n\
         # kind <apiVersion> <Kind> <message>\n\
         # message <name> [list]   (list: a named Go slice, JSON is the array of field 1)\n\
         #   <tag> <json name or - when inlined> <type> [repeated] [pointer] [omitempty]\n",
    );
    for ((api_version, kind), message) in &kinds {
        let _ = writeln!(table, "kind {api_version} {kind} {message}");
    }
    for name in &reachable {
        let Some(fields) = messages.get(name) else {
            unmatched.push(format!("message {name}: not in k8s-pb"));
            continue;
        };
        let (package, short) = name.rsplit_once('.').unwrap_or_default();
        let go = go_packages.get(package);
        let is_list = go.is_some_and(|go| go.slice_types.contains(&short.to_ascii_lowercase()));
        let _ = writeln!(
            table,
            "message {name}{}",
            if is_list { " list" } else { "" }
        );
        let go_struct = go.and_then(|go| {
            let short = short.to_ascii_lowercase();
            go.structs.get(&short).or_else(|| {
                let (package, type_name) = go.defined_as.get(&short)?;
                go_packages.get(package)?.structs.get(type_name)
            })
        });
        let mut fields = fields.clone();
        fields.sort_by_key(|field| field.tag);
        // Fields of the 1.33 Go type that k8s-pb's message lost (DeviceTaintSelector's 1 and
        // 5) come from the package's generated.proto.
        let lost: Vec<u32> = go_struct
            .into_iter()
            .flatten()
            .map(|(number, _)| *number)
            .filter(|number| !fields.iter().any(|field| field.tag == *number))
            .collect();
        if !lost.is_empty() {
            let from_proto = generated_proto(cache, &package.replace('.', "/"));
            for number in lost {
                match from_proto
                    .get(name)
                    .and_then(|proto| proto.iter().find(|field| field.tag == number))
                {
                    Some(field) => fields.push(field.clone()),
                    None => unmatched.push(format!(
                        "field {name} ({number}): in Go, not in k8s-pb nor generated.proto"
                    )),
                }
            }
            fields.sort_by_key(|field| field.tag);
        }
        for field in fields {
            let go_field = go_struct.and_then(|fields| fields.get(&field.tag));
            let (json, pointer, omitempty) = match go_field {
                Some(go) if go.inline => ("-".to_owned(), go.pointer, go.omitempty),
                Some(go) if !go.json.is_empty() && go.json != "-" => {
                    (go.json.clone(), go.pointer, go.omitempty)
                }
                _ => {
                    if !is_list && !HAND_WRITTEN.contains(&short) {
                        unmatched.push(format!(
                            "field {name}.{} ({}): no Go field, assumed a pointer",
                            field.rust_name, field.tag
                        ));
                    }
                    (lower_camel(&field.rust_name), true, true)
                }
            };
            let mut line = format!("  {} {json} {}", field.tag, field.kind);
            for (flag, set) in [
                ("repeated", field.repeated),
                ("pointer", pointer),
                ("omitempty", omitempty),
            ] {
                if set {
                    line.push(' ');
                    line.push_str(flag);
                }
            }
            let _ = writeln!(table, "{line}");
        }
    }
    Generated { table, unmatched }
}

fn collect_modules(root: &Path, dir: &Path, out: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<PathBuf> = entries.filter_map(Result::ok).map(|e| e.path()).collect();
    paths.sort();
    for path in paths {
        if path.is_dir() {
            collect_modules(root, &path, out);
        } else if path.file_name().is_some_and(|name| name == "mod.rs")
            && let Ok(relative) = dir.strip_prefix(root)
            && std::fs::read_to_string(&path).is_ok_and(|text| text.contains("prost::Message"))
        {
            out.push(relative.to_string_lossy().replace('\\', "/"));
        }
    }
}

/// Says why the comparison cannot run; under `CI=true`, where the control plane is built and
/// k8s-pb downloaded, that is a failure.
fn skip(reason: &str) {
    assert!(
        !kro_test_support::in_ci(),
        "protobuf_table: {reason}, and CI=true makes that a failure"
    );
    println!("protobuf_table: skipped: {reason}");
}

#[test]
fn the_committed_protobuf_table_is_generated_from_k8s_pb_and_the_go_types() {
    let Some(pb_source) = k8s_pb_source() else {
        skip("the k8s-pb 0.9.0 source is not in the cargo registry");
        return;
    };
    let cache = go_module_cache();
    if go_module(&cache, "k8s.io/api").is_none() {
        skip(&format!(
            "no k8s.io/api v0.33 in {} (run scripts/controlplane.sh build, or set \
             KRO_GO_MODCACHE)",
            cache.display()
        ));
        return;
    }
    let generated = generate(&pb_source, &cache);
    for line in &generated.unmatched {
        println!("unmatched: {line}");
    }
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(TABLE);
    if std::env::var_os("KRO_WRITE_PROTO_TABLE").is_some() {
        std::fs::write(&path, &generated.table).expect("write the table");
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated.table,
        "{TABLE} is stale: run KRO_WRITE_PROTO_TABLE=1 cargo test -p kro-apiserver --test protobuf_table"
    );
}
