use serde_json::json;

use super::*;

/// `(cel, start, end)` of every expression found.
fn found(text: &str) -> Result<Vec<(String, usize, usize)>, TemplateError> {
    Ok(find_expressions(text)?
        .into_iter()
        .map(|expression| (expression.cel, expression.start, expression.end))
        .collect())
}

/// `(cel, start, end)` of one expected expression.
type Found = (&'static str, usize, usize);

fn matches(list: &[Found]) -> Vec<(String, usize, usize)> {
    list.iter()
        .map(|(cel, start, end)| (cel.to_string(), *start, *end))
        .collect()
}

#[test]
fn expressions_are_found_with_their_offsets_as_upstream_finds_them() {
    // The cases of upstream's TestExtractExpressions, plus the scanner rules of kro-upstream.md.
    let cases: &[(&str, &[Found])] = &[
        ("${resource.field}", &[("resource.field", 0, 17)]),
        (
            "${length(resource.list)}",
            &[("length(resource.list)", 0, 24)],
        ),
        ("prefix-${resource.field}", &[("resource.field", 7, 24)]),
        ("${resource.field}-suffix", &[("resource.field", 0, 17)]),
        (
            "${resource1.field}-middle-${resource2.field}",
            &[("resource1.field", 0, 18), ("resource2.field", 26, 44)],
        ),
        ("${resource.map['key']}", &[("resource.map['key']", 0, 22)]),
        ("${resource.list[0]}", &[("resource.list[0]", 0, 19)]),
        (
            "${resource.field == 'value' && resource.number > 5}",
            &[("resource.field == 'value' && resource.number > 5", 0, 51)],
        ),
        ("plain string", &[]),
        ("", &[]),
        ("${incomplete", &[]),
        ("$not_an_expression", &[]),
        ("incomplete}", &[]),
        (
            "${resource.field == \"escaped\\\"quote\"}",
            &[("resource.field == \"escaped\\\"quote\"", 0, 37)],
        ),
        (
            "  ${resource1.field}  ${resource2.field}  ",
            &[("resource1.field", 2, 20), ("resource2.field", 22, 40)],
        ),
        (
            "${resource.list.map(\n  x,\n  x * 2\n)}",
            &[("resource.list.map(\n  x,\n  x * 2\n)", 0, 36)],
        ),
        ("${outer(\"${inner}\")}", &[("outer(\"${inner}\")", 0, 20)]),
        (
            "${\"text with }} inside\"}",
            &[("\"text with }} inside\"", 0, 24)],
        ),
        (
            "${\"text with { inside\"}",
            &[("\"text with { inside\"", 0, 23)],
        ),
        ("${\"}\"}", &[("\"}\"", 0, 6)]),
        (
            "${true ? {'key': 'value'} : {'key': 'value2'}}",
            &[("true ? {'key': 'value'} : {'key': 'value2'}", 0, 46)],
        ),
        (
            "${true ? {'key': 'value'} : {'key': 'value2'}} somewhat ${resource.field} then ${false ? {'key': {'nestedKey':'value'}} : {'key': 'value2'}}",
            &[
                ("true ? {'key': 'value'} : {'key': 'value2'}", 0, 46),
                ("resource.field", 56, 73),
                (
                    "false ? {'key': {'nestedKey':'value'}} : {'key': 'value2'}",
                    79,
                    140,
                ),
            ],
        ),
        (
            "${complete} ${complete2} ${incomplete",
            &[("complete", 0, 11), ("complete2", 12, 24)],
        ),
        (
            "${condition ? value : {}}",
            &[("condition ? value : {}", 0, 25)],
        ),
        ("${condition ? {} : {}}", &[("condition ? {} : {}", 0, 22)]),
        // The way to write a literal `${VAR}`.
        ("${\"${VAR}\"}", &[("\"${VAR}\"", 0, 11)]),
        // Single quotes are not tracked: the brace inside them counts.
        ("${'}'}", &[("'", 0, 4)]),
        // An escaped backslash ends the escape; the quote after it closes the string.
        ("${\"a\\\\\"}", &[("\"a\\\\\"", 0, 8)]),
        // An unclosed string swallows the rest; scanning resumes after the first `${`.
        ("${\"abc ${x}", &[("x", 7, 11)]),
        // A `${` right after a closing quote is allowed outside strings too.
        ("${f(\"a\"${b})}", &[("f(\"a\"${b})", 0, 13)]),
        // Offsets are bytes.
        ("é-${x}", &[("x", 3, 7)]),
        ("${a}${b}", &[("a", 0, 4), ("b", 4, 8)]),
    ];
    for (text, expected) in cases {
        assert_eq!(found(text), Ok(matches(expected)), "{text:?}");
    }
}

#[test]
fn nested_expressions_are_errors_at_the_inner_dollar() {
    let cases = [
        ("${outer(${inner})} ${outer}", 8, 0),
        ("${outer(${inner})}", 8, 0),
        ("${incomplete1 ${incomplete2", 14, 0),
        ("${incomplete ${complete}", 13, 0),
        ("ok ${${x}}", 5, 3),
        ("${a} ${b + ${c}}", 11, 5),
        // A single-quoted string does not protect a nested expression.
        ("${'${x}'}", 3, 0),
    ];
    for (text, offset, outer_start) in cases {
        let error = find_expressions(text).expect_err(text);
        assert_eq!(
            error,
            TemplateError {
                template: text.to_string(),
                offset,
                kind: TemplateErrorKind::NestedExpression { outer_start },
            },
            "{text:?}"
        );
        assert_eq!(error.reason(), "NestedExpression");
    }
}

#[test]
fn empty_expressions_are_errors_at_their_start() {
    for (text, offset) in [("${}", 0), ("${    }", 0), ("a-${ \n }", 2), ("${x}${}", 4)] {
        let error = find_expressions(text).expect_err(text);
        assert_eq!(error.kind, TemplateErrorKind::EmptyExpression, "{text:?}");
        assert_eq!(error.offset, offset, "{text:?}");
    }
}

#[test]
fn strings_are_classified_as_upstream_classifies_them() {
    // Upstream's TestIsOneShotExpression: (text, standalone?).
    let cases = [
        ("${resource.field}", true),
        ("${length(resource.list)}", true),
        ("prefix-${resource.field}", false),
        ("${resource.field}-suffix", false),
        ("${resource1.field}${resource2.field}", false),
        ("${resource.map['key']}", true),
        ("${resource.list[0]}", true),
        ("${resource.field == \"escaped\\\"quote\"}", true),
        ("${resource.list.map(\n  x,\n  x * 2\n)}", true),
        ("${resource.list.map(x, x.field).filter(y, y > 5)}", true),
        ("${outer(\"${inner}\")}", true),
        ("${\"text with }} inside\"}", true),
        ("${\"text with { inside\"}", true),
        ("${\"${VAR}\"}", true),
        (" ${a}", false),
        ("${a}\n", false),
    ];
    for (text, standalone) in cases {
        let template = parse_template(text).expect(text);
        assert_eq!(
            matches!(template, Template::Standalone(_)),
            standalone,
            "{text:?}"
        );
        assert!(template.has_expressions(), "{text:?}");
    }
    for literal in ["plain string", "", "${incomplete", "$x {y}"] {
        assert_eq!(
            parse_template(literal),
            Ok(Template::Literal),
            "{literal:?}"
        );
    }
}

#[test]
fn standalone_expression_keeps_its_source_and_offsets() {
    let template = parse_template("${a ? {} : {'k': 1}}").expect("valid");
    assert_eq!(
        template,
        Template::Standalone(Expression {
            cel: "a ? {} : {'k': 1}".to_string(),
            start: 0,
            end: 20,
        })
    );
    assert_eq!(template.cel(), Some("a ? {} : {'k': 1}"));
    assert_eq!(template.expressions()[0].cel_offset(), 2);
}

#[test]
fn interpolated_strings_become_one_cel_concatenation() {
    // Upstream's TestBuildStringTemplate and the schemaless "Multiple expressions" case.
    let cases = [
        ("prefix-${expr}", r#""prefix-" + (expr)"#),
        ("${expr}-suffix", r#"(expr) + "-suffix""#),
        ("prefix-${expr}-suffix", r#""prefix-" + (expr) + "-suffix""#),
        (
            "a-${expr1}-b-${expr2}-c",
            r#""a-" + (expr1) + "-b-" + (expr2) + "-c""#,
        ),
        ("${expr1}${expr2}", "(expr1) + (expr2)"),
        (r#"say "hello" ${expr}"#, r#""say \"hello\" " + (expr)"#),
        (
            "Start ${expr1} middle ${expr2} end",
            r#""Start " + (expr1) + " middle " + (expr2) + " end""#,
        ),
        (
            "${nested.string1}-${nested.string2}",
            r#"(nested.string1) + "-" + (nested.string2)"#,
        ),
        ("tab\t${x}\\", r#""tab\t" + (x) + "\\""#),
        ("${x}\u{1}\u{7f}\u{85}", r#"(x) + "\x01\x7f\u0085""#),
    ];
    for (text, cel) in cases {
        let Ok(Template::Interpolated(interpolation)) = parse_template(text) else {
            panic!("{text:?} is not interpolated");
        };
        assert_eq!(interpolation.cel, cel, "{text:?}");
        assert_eq!(interpolation.template, text);
    }
}

#[test]
fn interpolation_parts_alternate_text_and_expressions() {
    let Ok(Template::Interpolated(interpolation)) = parse_template("a-${x}${y}-b") else {
        panic!("not interpolated");
    };
    assert_eq!(
        interpolation.parts,
        vec![
            TemplatePart::Text("a-".to_string()),
            TemplatePart::Expression(Expression {
                cel: "x".to_string(),
                start: 2,
                end: 6,
            }),
            TemplatePart::Expression(Expression {
                cel: "y".to_string(),
                start: 6,
                end: 10,
            }),
            TemplatePart::Text("-b".to_string()),
        ]
    );
    let cels: Vec<&str> = interpolation
        .expressions()
        .map(|e| e.cel.as_str())
        .collect();
    assert_eq!(cels, ["x", "y"]);
}

#[test]
fn interpolation_cel_evaluates_to_the_text_around_the_values() {
    use kro_cel::{Env, Type, Value};
    // `'${x}'` would be a nested expression: only a double-quoted literal protects `${`.
    assert!(parse_template("a ${'${x}'}").is_err());
    let text = "say \"hi\" \\ ${name}\n\t\u{1}é ${\"${x}\"}";
    let cel = parse_template(text)
        .expect("valid")
        .cel()
        .map(str::to_string)
        .expect("has expressions");
    let env = Env::standard().with_variable("name", Type::String);
    let program = env.compile(&cel).expect("compiles");
    let result = program
        .evaluate(&[("name", Value::string("kro"))])
        .expect("evaluates");
    assert_eq!(result, Value::string("say \"hi\" \\ kro\n\t\u{1}é ${x}"));
}

#[test]
fn many_unclosed_openings_stop_the_scan_instead_of_taking_quadratic_time() {
    let hostile = "${\"".repeat(400_000);
    let error = find_expressions(&hostile).expect_err("too much work");
    assert_eq!(error.kind, TemplateErrorKind::TooManyUnclosed);
    // A few unclosed openings in a long string are fine.
    let mut text = "${\"".repeat(50);
    text.push_str(&"x".repeat(100_000));
    assert_eq!(found(&text), Ok(matches(&[])));
}

#[test]
fn json_values_are_scanned_with_paths_and_keys_are_never_scanned() {
    let value = json!({
        "string": "${string.value}",
        "number": 42,
        "bool": true,
        "null": null,
        "${key.is.not.scanned}": "plain",
        "nested": {"array": ["${array.value}", 123, {"deep": "a-${b}"}], "empty": {}},
        "list": [],
        "weird.key": ["${w}"],
        "incomplete": "${expr3-incomplete"
    });
    let scanned = scan_json(&value).expect("valid");
    let fields: Vec<(String, Option<&str>)> = scanned
        .fields
        .iter()
        .map(|field| (field.path.to_string(), field.template.cel()))
        .collect();
    assert_eq!(
        fields,
        vec![
            ("nested.array[0]".to_string(), Some("array.value")),
            ("nested.array[2].deep".to_string(), Some(r#""a-" + (b)"#)),
            ("string".to_string(), Some("string.value")),
            ("[\"weird.key\"][0]".to_string(), Some("w")),
        ]
    );
    let plain: Vec<String> = scanned.plain.iter().map(ToString::to_string).collect();
    assert_eq!(
        plain,
        [
            "[\"${key.is.not.scanned}\"]",
            "bool",
            "incomplete",
            "nested.array[1]",
            "null",
            "number",
        ]
    );
}

#[test]
fn scanning_a_scalar_root_uses_the_empty_path() {
    let scanned = scan_json(&json!("${x}")).expect("valid");
    assert_eq!(scanned.fields.len(), 1);
    assert!(scanned.fields[0].path.is_root());
    assert_eq!(
        scan_json(&json!(3)).expect("valid").plain,
        vec![FieldPath::root()]
    );
}

#[test]
fn every_bad_string_of_a_tree_is_reported_with_its_path() {
    let value = json!({"a": ["ok", "${x(${y})}"], "b": {"c": "${}"}});
    let errors = scan_json(&value).expect_err("two bad strings");
    let reported: Vec<(String, &'static str, usize)> = errors
        .errors
        .iter()
        .map(|error| {
            (
                error.path.to_string(),
                error.error.reason(),
                error.error.offset,
            )
        })
        .collect();
    assert_eq!(
        reported,
        [
            ("a[1]".to_string(), "NestedExpression", 4),
            ("b.c".to_string(), "EmptyExpression", 0),
        ]
    );
    assert_eq!(errors.omitted, 0);
}

#[test]
fn scan_errors_are_capped() {
    let value = json!(vec!["${}"; MAX_SCAN_ERRORS + 5]);
    let errors = scan_json(&value).expect_err("bad strings");
    assert_eq!(errors.errors.len(), MAX_SCAN_ERRORS);
    assert_eq!(errors.omitted, 5);
}

#[test]
fn deep_trees_are_walked_without_recursion() {
    let mut value = json!("${leaf}");
    for _ in 0..10_000 {
        value = serde_json::Value::Array(vec![value]);
    }
    let scanned = scan_json(&value).expect("valid");
    assert_eq!(scanned.fields[0].path.len(), 10_000);
    // serde_json's Drop is recursive too; take the tree apart without it.
    let mut pending = vec![value];
    while let Some(mut value) = pending.pop() {
        if let serde_json::Value::Array(items) = &mut value {
            pending.append(items);
        }
    }
}
