//! The CEL specification's conformance suite (`testdata/cel-spec/testdata/*.textproto`, vendored),
//! run against kro-cel.
//!
//! Every file is run. Tests that construct or name protobuf messages (TestAllTypes, wrappers,
//! `Any`, enums, extensions) are skipped by rule: kro has no protobuf types. Known failures are
//! listed, one reason each, in `tests/conformance/expected_failures.txt`; the run fails when an
//! unlisted test fails or a listed one passes, so the list stays true.
//!
//! Run with `cargo test -p kro-cel --test conformance`; `KRO_CONFORMANCE_VERBOSE=1` prints
//! every failure's details.

#[path = "conformance/textproto.rs"]
mod textproto;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use kro_cel::{Duration, Env, Key, Map, ParserConfig, Timestamp, Type, Value};
use textproto::{Field, Message};

const PROTOBUF_MARKERS: &[&str] = &[
    "TestAllTypes",
    "NestedTestAllTypes",
    "cel.expr.conformance",
    "google.protobuf.Any",
    "google.protobuf.Struct",
    "google.protobuf.Value",
    "google.protobuf.ListValue",
    "google.protobuf.NullValue",
    "google.protobuf.BoolValue",
    "google.protobuf.BytesValue",
    "google.protobuf.DoubleValue",
    "google.protobuf.FloatValue",
    "google.protobuf.Int32Value",
    "google.protobuf.Int64Value",
    "google.protobuf.StringValue",
    "google.protobuf.UInt32Value",
    "google.protobuf.UInt64Value",
    "google.protobuf.FieldMask",
    "google.protobuf.Empty",
    "GlobalEnum",
    "enum_value",
    "wrapper",
    "proto2_ext",
];

fn testdata_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/cel-spec/testdata")
}

#[derive(Debug, Default, Clone, Copy)]
struct Counts {
    passed: usize,
    failed: usize,
    skipped: usize,
}

enum Outcome {
    Pass,
    Fail(String),
    Skip(&'static str),
}

fn main() -> ExitCode {
    if let Err(problem) = textproto::self_check() {
        eprintln!("conformance: {problem}");
        return ExitCode::FAILURE;
    }
    let dir = testdata_dir();
    let mut files: Vec<PathBuf> = match std::fs::read_dir(&dir) {
        Ok(entries) => entries
            .filter_map(Result::ok)
            .map(|entry| entry.path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "textproto"))
            .collect(),
        Err(error) => {
            eprintln!(
                "conformance: cannot read {} ({error}); the CEL conformance data is vendored \
                 under testdata/cel-spec in the repository and is required",
                dir.display()
            );
            return ExitCode::FAILURE;
        }
    };
    files.sort();
    let expected = match load_expected_failures() {
        Ok(expected) => expected,
        Err(problem) => {
            eprintln!("conformance: {problem}");
            return ExitCode::FAILURE;
        }
    };
    let verbose = std::env::var_os("KRO_CONFORMANCE_VERBOSE").is_some();
    let mut per_file: BTreeMap<String, Counts> = BTreeMap::new();
    let mut unexpected_failures = Vec::new();
    let mut unexpected_passes = Vec::new();
    let mut seen = BTreeSet::new();
    let mut skip_reasons: BTreeMap<&'static str, usize> = BTreeMap::new();
    for path in &files {
        let file_name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(error) => {
                eprintln!("conformance: cannot read {}: {error}", path.display());
                return ExitCode::FAILURE;
            }
        };
        let document = match textproto::parse(&text) {
            Ok(document) => document,
            Err(error) => {
                eprintln!("conformance: {}: {error}", path.display());
                return ExitCode::FAILURE;
            }
        };
        let counts = per_file.entry(file_name.clone()).or_default();
        for section in document.all("section").filter_map(as_message) {
            let section_name = section.string("name").unwrap_or_default();
            for test in section.all("test").filter_map(as_message) {
                let test_name = test.string("name").unwrap_or_default();
                let id = format!("{file_name}/{section_name}/{test_name}");
                seen.insert(id.clone());
                let outcome = run_test(test);
                match outcome {
                    Outcome::Skip(reason) => {
                        counts.skipped += 1;
                        *skip_reasons.entry(reason).or_default() += 1;
                        if verbose {
                            eprintln!("SKIP {id}: {reason}");
                        }
                    }
                    Outcome::Pass => {
                        counts.passed += 1;
                        if expected.contains_key(&id) {
                            unexpected_passes.push(id);
                        }
                    }
                    Outcome::Fail(reason) => {
                        counts.failed += 1;
                        if verbose {
                            eprintln!("FAIL {id}: {reason}");
                        }
                        if !expected.contains_key(&id) {
                            unexpected_failures.push(format!("{id}: {reason}"));
                        }
                    }
                }
            }
        }
    }
    let table = table(&per_file);
    print!("{table}");
    println!("\nskipped by rule (KRO_CONFORMANCE_VERBOSE=1 lists each test):");
    for (reason, count) in &skip_reasons {
        println!("  {count:>5}  {reason}");
    }
    let stale: Vec<&String> = expected.keys().filter(|id| !seen.contains(*id)).collect();
    let mut ok = true;
    if !unexpected_failures.is_empty() {
        ok = false;
        println!("\n{} unexpected failures:", unexpected_failures.len());
        for failure in &unexpected_failures {
            println!("  {failure}");
        }
    }
    if !unexpected_passes.is_empty() {
        ok = false;
        println!(
            "\n{} tests pass but are listed in expected_failures.txt (remove them):",
            unexpected_passes.len()
        );
        for id in &unexpected_passes {
            println!("  {id}");
        }
    }
    if !stale.is_empty() {
        ok = false;
        println!(
            "\n{} entries in expected_failures.txt name no test:",
            stale.len()
        );
        for id in stale {
            println!("  {id}");
        }
    }
    if ok && let Err(problem) = check_readme(&table) {
        ok = false;
        println!("\n{problem}");
    }
    if ok {
        println!("\nconformance: ok");
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// The per-file table, as printed and as kept in the crate README.
fn table(per_file: &BTreeMap<String, Counts>) -> String {
    let mut out = format!("{:<22} {:>6} {:>6} {:>6}\n", "file", "pass", "fail", "skip");
    let mut total = Counts::default();
    for (file, counts) in per_file {
        out.push_str(&format!(
            "{file:<22} {:>6} {:>6} {:>6}\n",
            counts.passed, counts.failed, counts.skipped
        ));
        total.passed += counts.passed;
        total.failed += counts.failed;
        total.skipped += counts.skipped;
    }
    let run = total.passed + total.failed;
    let rate = if run == 0 {
        0.0
    } else {
        100.0 * total.passed as f64 / run as f64
    };
    out.push_str(&format!(
        "{:<22} {:>6} {:>6} {:>6}   ({rate:.1}% of the tests run pass)\n",
        "total", total.passed, total.failed, total.skipped
    ));
    out
}

const README_BEGIN: &str = "<!-- conformance:begin -->\n";
const README_END: &str = "<!-- conformance:end -->";

/// Checks (or with `KRO_BLESS=1` rewrites) the table in the crate README.
fn check_readme(table: &str) -> Result<(), String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md");
    let readme =
        std::fs::read_to_string(&path).map_err(|error| format!("{}: {error}", path.display()))?;
    let (Some(begin), Some(end)) = (readme.find(README_BEGIN), readme.find(README_END)) else {
        return Err(format!(
            "{}: the conformance markers are missing",
            path.display()
        ));
    };
    let block = format!("```text\n{table}```\n");
    let current = &readme[begin + README_BEGIN.len()..end];
    if current == block {
        return Ok(());
    }
    if std::env::var_os("KRO_BLESS").is_some() {
        let updated = format!(
            "{}{block}{}",
            &readme[..begin + README_BEGIN.len()],
            &readme[end..]
        );
        return std::fs::write(&path, updated)
            .map_err(|error| format!("{}: {error}", path.display()));
    }
    Err(format!(
        "the conformance table in {} is stale; rerun with KRO_BLESS=1 to update it",
        path.display()
    ))
}

fn load_expected_failures() -> Result<HashMap<String, String>, String> {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance/expected_failures.txt");
    let text =
        std::fs::read_to_string(&path).map_err(|error| format!("{}: {error}", path.display()))?;
    let mut entries = HashMap::new();
    for (number, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some((id, reason)) = line.split_once(" # ") else {
            return Err(format!(
                "{}:{}: expected 'file/section/test # reason'",
                path.display(),
                number + 1
            ));
        };
        entries.insert(id.trim().to_string(), reason.trim().to_string());
    }
    Ok(entries)
}

fn as_message(field: &Field) -> Option<&Message> {
    match field {
        Field::Message(message) => Some(message),
        _ => None,
    }
}

fn mentions_protobuf(test: &Message) -> bool {
    if test
        .string("container")
        .is_some_and(|container| container.starts_with("google.protobuf"))
    {
        return true;
    }
    let mut text = String::new();
    collect_text(test, &mut text);
    PROTOBUF_MARKERS.iter().any(|marker| text.contains(marker))
}

fn collect_text(message: &Message, out: &mut String) {
    for (name, value) in &message.fields {
        out.push_str(name);
        out.push(' ');
        match value {
            Field::String(bytes) => out.push_str(&String::from_utf8_lossy(bytes)),
            Field::Word(word) => out.push_str(word),
            Field::Message(inner) => collect_text(inner, out),
        }
        out.push(' ');
    }
}

fn run_test(test: &Message) -> Outcome {
    if mentions_protobuf(test) {
        return Outcome::Skip("protobuf messages");
    }
    if test.message("unknown").is_some() || test.message("any_unknowns").is_some() {
        return Outcome::Skip("unknown values");
    }
    let expr = test.string("expr").unwrap_or_default();
    let mut env = conformance_env()
        .with_parser_config(ParserConfig::default().enable_macros(!test.flag("disable_macros")));
    if let Some(container) = test.string("container") {
        env = env.with_container(&container);
    }
    for declaration in test.all("type_env").filter_map(as_message) {
        let Some(name) = declaration.string("name") else {
            continue;
        };
        if let Some(ident) = declaration.message("ident") {
            match ident.message("type").map(decode_type) {
                Some(Ok(ty)) => env = env.with_variable(&name, ty),
                Some(Err(problem)) => return Outcome::Fail(format!("type_env: {problem}")),
                None => env = env.with_variable(&name, Type::Dyn),
            }
        } else if let Some(function) = declaration.message("function") {
            match decode_function(&name, function) {
                Ok(function) => env = env.with_function(function),
                Err(problem) => return Outcome::Fail(format!("type_env {name}: {problem}")),
            }
        }
    }
    let mut bindings: HashMap<String, Value> = HashMap::new();
    for binding in test.all("bindings").filter_map(as_message) {
        let name = binding.string("key").unwrap_or_default();
        let value = binding
            .message("value")
            .and_then(|expr_value| expr_value.message("value"))
            .map(decode_value);
        match value {
            Some(Ok(value)) => {
                bindings.insert(name, value);
            }
            Some(Err(problem)) => return Outcome::Fail(format!("binding {name}: {problem}")),
            None => return Outcome::Skip("non-value bindings"),
        }
    }
    let ast = match env.parse(&expr) {
        Ok(ast) => ast,
        Err(error) => return Outcome::Fail(format!("parse error: {error}")),
    };
    let typed = test.message("typed_result");
    let program = if test.flag("disable_check") {
        env.program_unchecked(&ast)
    } else {
        let checked = match env.check(&ast) {
            Ok(checked) => checked,
            Err(error) => return Outcome::Fail(format!("check error: {error}")),
        };
        if let Some(expected) = typed.and_then(|typed| typed.message("deduced_type")) {
            match decode_type(expected) {
                Ok(expected) if &expected != checked.output_type() => {
                    return Outcome::Fail(format!(
                        "deduced type {} but expected {expected}",
                        checked.output_type()
                    ));
                }
                Ok(_) => {}
                Err(problem) => return Outcome::Fail(format!("deduced_type: {problem}")),
            }
        }
        if test.flag("check_only") {
            return Outcome::Pass;
        }
        env.program(&checked)
    };
    let result = program.evaluate(&bindings);
    let expects_error =
        test.message("eval_error").is_some() || test.message("any_eval_errors").is_some();
    if expects_error {
        return match result {
            Err(_) => Outcome::Pass,
            Ok(value) => Outcome::Fail(format!("expected an error, got {value}")),
        };
    }
    let expected = match test
        .message("value")
        .or_else(|| typed.and_then(|typed| typed.message("result")))
    {
        Some(message) => match decode_value(message) {
            Ok(value) => value,
            Err(problem) => return Outcome::Fail(format!("expected value: {problem}")),
        },
        None => Value::Bool(true),
    };
    match result {
        Ok(actual) if actual == expected => Outcome::Pass,
        Ok(actual) => Outcome::Fail(format!("got {actual}, expected {expected}")),
        Err(error) => Outcome::Fail(format!("error: {error}")),
    }
}

/// The environment every conformance test starts from: the standard library plus every
/// extension library kro-cel provides.
fn conformance_env() -> Env {
    kro_cel::ALL_LIBRARIES
        .iter()
        .filter_map(|name| kro_cel::library(name))
        .fold(Env::standard(), Env::with_library)
}

/// A declaration-only function from a `type_env` entry (these tests only check types).
fn decode_function(name: &str, message: &Message) -> Result<kro_cel::Function, String> {
    let mut function = kro_cel::Function::new(name);
    for overload in message.all("overloads").filter_map(as_message) {
        let id = overload.string("overload_id").unwrap_or_default();
        let params = overload
            .all("params")
            .filter_map(as_message)
            .map(decode_type)
            .collect::<Result<Vec<_>, _>>()?;
        let result = overload
            .message("result_type")
            .map(decode_type)
            .transpose()?
            .unwrap_or(Type::Dyn);
        let declared = if overload.flag("is_instance_function") {
            kro_cel::Overload::member(&id, &params, result)
        } else {
            kro_cel::Overload::global(&id, &params, result)
        };
        function = function.overload(declared);
    }
    Ok(function)
}

fn decode_type(message: &Message) -> Result<Type, String> {
    if let Some(primitive) = message.word("primitive") {
        return Ok(match primitive {
            "BOOL" => Type::Bool,
            "INT64" => Type::Int,
            "UINT64" => Type::Uint,
            "DOUBLE" => Type::Double,
            "STRING" => Type::String,
            "BYTES" => Type::Bytes,
            other => return Err(format!("primitive {other}")),
        });
    }
    if message.get("dyn").is_some() {
        return Ok(Type::Dyn);
    }
    if message.get("null").is_some() {
        return Ok(Type::Null);
    }
    if let Some(list) = message.message("list_type") {
        let element = list
            .message("elem_type")
            .map(decode_type)
            .transpose()?
            .unwrap_or(Type::Dyn);
        return Ok(Type::list(element));
    }
    if let Some(map) = message.message("map_type") {
        let key = map
            .message("key_type")
            .map(decode_type)
            .transpose()?
            .unwrap_or(Type::Dyn);
        let value = map
            .message("value_type")
            .map(decode_type)
            .transpose()?
            .unwrap_or(Type::Dyn);
        return Ok(Type::map(key, value));
    }
    if let Some(well_known) = message.word("well_known") {
        return match well_known {
            "TIMESTAMP" => Ok(Type::Timestamp),
            "DURATION" => Ok(Type::Duration),
            other => Err(format!("well_known {other}")),
        };
    }
    if let Some(name) = message.string("message_type") {
        return match name.as_str() {
            "google.protobuf.Timestamp" => Ok(Type::Timestamp),
            "google.protobuf.Duration" => Ok(Type::Duration),
            other => Err(format!("message type {other}")),
        };
    }
    if let Some(inner) = message.message("type") {
        return Ok(Type::type_of(decode_type(inner)?));
    }
    if let Some(name) = message.string("type_param") {
        return Ok(Type::param(&name));
    }
    if let Some(abstract_type) = message.message("abstract_type") {
        let name = abstract_type.string("name").unwrap_or_default();
        let params: Vec<Type> = abstract_type
            .all("parameter_types")
            .filter_map(as_message)
            .map(decode_type)
            .collect::<Result<_, _>>()?;
        if name == "optional_type" && params.len() == 1 {
            return Ok(Type::optional(params[0].clone()));
        }
        return Ok(Type::Opaque(Arc::from(name.as_str()), Arc::from(params)));
    }
    if message.get("error").is_some() {
        return Ok(Type::Error);
    }
    Err(format!("unsupported type {message:?}"))
}

fn decode_value(message: &Message) -> Result<Value, String> {
    let number_error = |field: &str, word: &str| format!("bad {field}: {word}");
    if message.get("null_value").is_some() {
        return Ok(Value::Null);
    }
    if let Some(word) = message.word("bool_value") {
        return Ok(Value::Bool(word == "true"));
    }
    if let Some(word) = message.word("int64_value") {
        return word
            .parse()
            .map(Value::Int)
            .map_err(|_| number_error("int64", word));
    }
    if let Some(word) = message.word("uint64_value") {
        return word
            .parse()
            .map(Value::Uint)
            .map_err(|_| number_error("uint64", word));
    }
    if let Some(word) = message.word("double_value") {
        let value = match word.to_ascii_lowercase().as_str() {
            "inf" | "infinity" => f64::INFINITY,
            "-inf" | "-infinity" => f64::NEG_INFINITY,
            "nan" => f64::NAN,
            _ => word.parse().map_err(|_| number_error("double", word))?,
        };
        return Ok(Value::Double(value));
    }
    if let Some(Field::String(bytes)) = message.get("string_value") {
        return String::from_utf8(bytes.clone())
            .map(Value::from)
            .map_err(|_| "string_value is not UTF-8".to_string());
    }
    if let Some(Field::String(bytes)) = message.get("bytes_value") {
        return Ok(Value::Bytes(Arc::from(bytes.as_slice())));
    }
    if let Some(name) = message.string("type_value") {
        return Ok(Value::Type(Arc::from(name.as_str())));
    }
    if let Some(list) = message.message("list_value") {
        let values = list
            .all("values")
            .filter_map(as_message)
            .map(decode_value)
            .collect::<Result<Vec<_>, _>>()?;
        return Ok(Value::list(values));
    }
    if let Some(map) = message.message("map_value") {
        let mut entries = Map::new();
        for entry in map.all("entries").filter_map(as_message) {
            let key = entry
                .message("key")
                .map(decode_value)
                .transpose()?
                .ok_or("map entry without key")?;
            let value = entry
                .message("value")
                .map(decode_value)
                .transpose()?
                .ok_or("map entry without value")?;
            let key = Key::from_value(&key).map_err(|error| error.to_string())?;
            entries.insert(key, value);
        }
        return Ok(Value::Map(entries));
    }
    if let Some(object) = message.message("object_value") {
        if let Some(duration) = object.message("[type.googleapis.com/google.protobuf.Duration]") {
            let seconds = duration
                .word("seconds")
                .unwrap_or("0")
                .parse()
                .map_err(|_| "seconds")?;
            let nanos = duration
                .word("nanos")
                .unwrap_or("0")
                .parse()
                .map_err(|_| "nanos")?;
            return Duration::new(seconds, nanos)
                .map(Value::Duration)
                .map_err(|e| e.to_string());
        }
        if let Some(timestamp) = object.message("[type.googleapis.com/google.protobuf.Timestamp]") {
            let seconds = timestamp
                .word("seconds")
                .unwrap_or("0")
                .parse()
                .map_err(|_| "seconds")?;
            let nanos = timestamp
                .word("nanos")
                .unwrap_or("0")
                .parse()
                .map_err(|_| "nanos")?;
            return Timestamp::new(seconds, nanos)
                .map(Value::Timestamp)
                .map_err(|e| e.to_string());
        }
        return Err("object_value of a protobuf message".to_string());
    }
    Err(format!("unsupported value {message:?}"))
}
