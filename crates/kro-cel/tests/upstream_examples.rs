//! Every `${...}` expression in upstream kro's example ResourceGraphDefinitions
//! (`testdata/kro-upstream/examples/`) must parse in kro's environment and call only functions
//! that environment declares.
//!
//! The YAML is read as text, not parsed: comment lines are skipped, one-line quoted scalars are
//! unquoted (`\"` in double quotes, `''` in single quotes), and expressions are found as
//! upstream's template scanner finds them: from `${`, counting braces outside double-quoted
//! strings, to the brace that balances it. Function names are resolved as the checker
//! resolves them: `a.b.f(x)` is the global `a.b.f` when that exists, else the member `f`.
//! Every problem is reported at once.

use std::fs;
use std::path::{Path, PathBuf};

use kro_cel::{Env, Expr, ExprKind, operators};

/// Functions upstream's examples call that kro-cel deliberately does not provide, with why.
const OUT_OF_SCOPE: &[(&str, &str)] = &[];

fn examples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/kro-upstream/examples")
}

/// Every file under `dir`, sorted.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(next) = pending.pop() {
        let entries = fs::read_dir(&next)
            .unwrap_or_else(|error| panic!("cannot list {}: {error}", next.display()));
        for entry in entries {
            let path = entry
                .unwrap_or_else(|error| panic!("cannot list {}: {error}", next.display()))
                .path();
            if path.is_dir() {
                pending.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// The value of a one-line YAML quoted scalar, unquoted; other lines unchanged. Comment lines
/// become empty.
fn unquote_line(line: &str) -> String {
    let trimmed = line.trim_start();
    if trimmed.starts_with('#') {
        return String::new();
    }
    let mut value = trimmed;
    while let Some(rest) = value.strip_prefix("- ") {
        value = rest.trim_start();
    }
    if let Some((key, rest)) = value.split_once(": ")
        && !key.contains(['"', '\'', '$'])
    {
        value = rest.trim();
    }
    let value = value.trim_end();
    let prefix = &line[..line.len() - trimmed.len()];
    if value.len() >= 2 && value.starts_with('"') && value.ends_with('"') {
        let inner = &value[1..value.len() - 1];
        let mut decoded = String::with_capacity(inner.len());
        let mut chars = inner.chars();
        while let Some(c) = chars.next() {
            match (c, c == '\\') {
                (_, true) => match chars.next() {
                    Some('n') => decoded.push('\n'),
                    Some('t') => decoded.push('\t'),
                    Some(other) => decoded.push(other),
                    None => decoded.push('\\'),
                },
                (other, false) => decoded.push(other),
            }
        }
        return format!("{prefix}{decoded}");
    }
    if value.len() >= 2 && value.starts_with('\'') && value.ends_with('\'') {
        return format!("{prefix}{}", value[1..value.len() - 1].replace("''", "'"));
    }
    line.to_string()
}

/// The `${...}` expressions in `text`, as upstream's scanner finds them.
fn expressions(text: &str) -> Vec<String> {
    let bytes = text.as_bytes();
    let mut found = Vec::new();
    let mut at = 0;
    while let Some(offset) = text[at..].find("${") {
        let start = at + offset + 2;
        let mut depth = 1;
        let mut in_string = false;
        let mut escaped = false;
        let mut end = None;
        for (index, byte) in bytes.iter().enumerate().skip(start) {
            match (*byte, in_string, escaped) {
                (_, true, true) => escaped = false,
                (b'\\', true, false) => escaped = true,
                (b'"', _, _) => in_string = !in_string,
                (b'{', false, _) => depth += 1,
                (b'}', false, _) => {
                    depth -= 1;
                    if depth == 0 {
                        end = Some(index);
                        break;
                    }
                }
                _ => {}
            }
        }
        match end {
            Some(end) => {
                found.push(text[start..end].to_string());
                at = end + 1;
            }
            // Unbalanced: literal text, as upstream treats it.
            None => at = start,
        }
    }
    found
}

/// The name of the declared function a call resolves to, or the name it was looked up as.
fn resolve(env: &Env, call: &kro_cel::Call) -> Result<(), String> {
    if call.function == operators::OPTIONAL_SELECT {
        return Ok(());
    }
    if let Some(target) = &call.target
        && let Some(namespace) = target.qualified_name()
    {
        let qualified = format!("{namespace}.{}", call.function);
        if env.function(qualified.trim_start_matches('.')).is_some() {
            return Ok(());
        }
    }
    let name = call.function.trim_start_matches('.');
    match env.function(name) {
        Some(_) => Ok(()),
        None if call.target.is_some() => Err(format!(".{name}()")),
        None => Err(format!("{name}()")),
    }
}

/// The undeclared functions `expr` calls.
fn undeclared_calls(env: &Env, expr: &Expr) -> Vec<String> {
    let mut missing = Vec::new();
    expr.walk(&mut |node| {
        if let ExprKind::Call(call) = &node.kind
            && let Err(name) = resolve(env, call)
        {
            missing.push(name);
        }
    });
    missing
}

#[test]
fn every_example_expression_parses_and_calls_declared_functions() {
    let dir = examples_dir();
    assert!(
        dir.is_dir(),
        "upstream kro's examples are missing: expected a directory at {} \
         (vendored under testdata/kro-upstream/examples in the repository)",
        dir.display()
    );
    let env = Env::kro();
    for (name, reason) in OUT_OF_SCOPE {
        assert!(
            env.function(name).is_none(),
            "{name} is now declared; remove it from OUT_OF_SCOPE ({reason})"
        );
    }
    let mut offenders = Vec::new();
    let mut checked = 0;
    for path in files_under(&dir) {
        let Ok(text) = fs::read_to_string(&path) else {
            continue;
        };
        let unquoted: Vec<String> = text.lines().map(unquote_line).collect();
        let name = path
            .strip_prefix(&dir)
            .unwrap_or(&path)
            .display()
            .to_string();
        for expression in expressions(&unquoted.join("\n")) {
            checked += 1;
            let ast = match env.parse(&expression) {
                Ok(ast) => ast,
                Err(error) => {
                    offenders.push(format!(
                        "{name}: ${{{expression}}} does not parse:\n{error}"
                    ));
                    continue;
                }
            };
            for function in undeclared_calls(&env, &ast.expr) {
                let bare = function.trim_start_matches('.').trim_end_matches("()");
                if OUT_OF_SCOPE.iter().any(|(name, _)| *name == bare) {
                    continue;
                }
                offenders.push(format!(
                    "{name}: ${{{expression}}} calls undeclared {function}"
                ));
            }
        }
    }
    assert!(checked > 0, "no expressions found under {}", dir.display());
    assert!(
        offenders.is_empty(),
        "{} of {checked} example expressions have problems:\n{}",
        offenders.len(),
        offenders.join("\n")
    );
}

#[test]
fn the_scanner_finds_balanced_expressions() {
    assert_eq!(
        expressions(r#"a-${x.y}-${ {"k": "}"}.k }-${"#),
        ["x.y", r#" {"k": "}"}.k "#]
    );
    assert_eq!(
        unquote_line(r#"  value: "${a == \"b\"}""#),
        r#"  ${a == "b"}"#
    );
    assert_eq!(unquote_line("  # ${comment}"), "");
}
