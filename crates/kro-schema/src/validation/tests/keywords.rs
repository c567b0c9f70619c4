//! Each OpenAPI keyword, with its error text pinned to kube-openapi's messages as Kubernetes
//! reports them (`pkg/apiserver/validation/validation.go` and its tests).

use super::*;

/// `(case, schema of spec.x, value of spec.x, errors)`.
type Case = (&'static str, Value, Value, &'static [&'static str]);

fn check_cases(cases: &[Case]) {
    for (name, field, value, expected) in cases {
        let schema = with_field(field.clone());
        let object = json!({"spec": {"x": value}});
        assert_eq!(rendered(&schema, &object, None), *expected, "{name}");
    }
}

#[test]
fn types_are_checked_with_kube_openapi_messages() {
    check_cases(&[
        (
            "string for integer",
            json!({"type": "integer"}),
            json!("3"),
            &[
                r#"spec.x: Invalid value: "string": spec.x in body must be of type integer: "string""#,
            ],
        ),
        (
            "integer for string",
            json!({"type": "string"}),
            json!(3),
            &[
                r#"spec.x: Invalid value: "integer": spec.x in body must be of type string: "integer""#,
            ],
        ),
        (
            "list for object",
            json!({"type": "object"}),
            json!([]),
            &[r#"spec.x: Invalid value: "array": spec.x in body must be of type object: "array""#],
        ),
        (
            "float for boolean",
            json!({"type": "boolean"}),
            json!(1.5),
            &[
                r#"spec.x: Invalid value: "number": spec.x in body must be of type boolean: "number""#,
            ],
        ),
        (
            "integral float for integer",
            json!({"type": "integer"}),
            json!(2.0),
            &[],
        ),
        (
            "integer for number",
            json!({"type": "number"}),
            json!(2),
            &[],
        ),
        (
            "fraction for integer",
            json!({"type": "integer"}),
            json!(1.5),
            &[
                r#"spec.x: Invalid value: "number": spec.x in body must be of type integer: "number""#,
                r#"<nil>: Invalid value: "": Checked value must be of type integer (default format) in spec.x"#,
            ],
        ),
        (
            "no type accepts anything",
            json!({"x-kubernetes-preserve-unknown-fields": true}),
            json!({"a": [1]}),
            &[],
        ),
    ]);
}

#[test]
fn nullable_decides_whether_null_is_accepted() {
    check_cases(&[
        (
            "null for non-nullable",
            json!({"type": "string"}),
            json!(null),
            &[r#"spec.x: Invalid value: "null": spec.x in body must be of type string: "null""#],
        ),
        (
            "null for nullable",
            json!({"type": "string", "nullable": true}),
            json!(null),
            &[],
        ),
        ("null for no type", json!({}), json!(null), &[]),
    ]);
}

#[test]
fn numeric_formats_bound_their_ranges() {
    check_cases(&[
        (
            "int32 in range",
            json!({"type": "integer", "format": "int32"}),
            json!(2147483647),
            &[],
        ),
        (
            "int32 overflow",
            json!({"type": "integer", "format": "int32"}),
            json!(2147483648_i64),
            &[
                r#"<nil>: Invalid value: "": Checked value must be of type integer with format int32 in spec.x"#,
            ],
        ),
        (
            "int64 overflow",
            json!({"type": "integer", "format": "int64"}),
            json!(1e19),
            &[
                r#"spec.x: Invalid value: "float64": spec.x in body must be of type int64: "float64""#,
                r#"<nil>: Invalid value: "": Checked value must be of type integer with format int64 in spec.x"#,
            ],
        ),
        (
            "float overflow",
            json!({"type": "number", "format": "float"}),
            json!(1e39),
            &[
                r#"<nil>: Invalid value: "": Checked value must be of type number with format float in spec.x"#,
            ],
        ),
        (
            "double",
            json!({"type": "number", "format": "double"}),
            json!(1e300),
            &[],
        ),
        (
            "unsupported integer format is ignored",
            json!({"type": "integer", "format": "uint8"}),
            json!(-1),
            &[],
        ),
    ]);
}

#[test]
fn string_formats_are_checked() {
    check_cases(&[
        (
            "base64",
            json!({"type": "string", "format": "byte"}),
            json!("aGk="),
            &[],
        ),
        (
            "not base64",
            json!({"type": "string", "format": "byte"}),
            json!("hi!"),
            &[r#"spec.x: Invalid value: "hi!": spec.x in body must be of type byte: "hi!""#],
        ),
        (
            "date-time",
            json!({"type": "string", "format": "date-time"}),
            json!("2024-05-01T10:00:00Z"),
            &[],
        ),
        (
            "not a date-time",
            json!({"type": "string", "format": "date-time"}),
            json!("yesterday"),
            &[
                r#"spec.x: Invalid value: "yesterday": spec.x in body must be of type date-time: "yesterday""#,
            ],
        ),
        (
            "k8s-short-name",
            json!({"type": "string", "format": "k8s-short-name"}),
            json!("a-"),
            &[
                r#"spec.x: Invalid value: "a-": spec.x in body must be of type k8s-short-name: "a-""#,
            ],
        ),
        (
            "unknown formats are ignored",
            json!({"type": "string", "format": "quantity"}),
            json!("?"),
            &[],
        ),
    ]);
}

#[test]
fn bounds_and_multiples_are_checked() {
    check_cases(&[
        (
            "minimum",
            json!({"type": "integer", "minimum": 1}),
            json!(0),
            &["spec.x: Invalid value: 0: spec.x in body should be greater than or equal to 1"],
        ),
        (
            "exclusive minimum",
            json!({"type": "integer", "minimum": 1, "exclusiveMinimum": true}),
            json!(1),
            &["spec.x: Invalid value: 1: spec.x in body should be greater than 1"],
        ),
        (
            "maximum",
            json!({"type": "integer", "maximum": 10}),
            json!(11),
            &["spec.x: Invalid value: 11: spec.x in body should be less than or equal to 10"],
        ),
        (
            "exclusive maximum",
            json!({"type": "integer", "maximum": 10, "exclusiveMaximum": true}),
            json!(10),
            &["spec.x: Invalid value: 10: spec.x in body should be less than 10"],
        ),
        (
            "float minimum",
            json!({"type": "number", "minimum": 0.5}),
            json!(0.25),
            &["spec.x: Invalid value: 0.25: spec.x in body should be greater than or equal to 0.5"],
        ),
        (
            "multiple of an integer",
            json!({"type": "integer", "multipleOf": 5}),
            json!(7),
            &["spec.x: Invalid value: 7: spec.x in body should be a multiple of 5"],
        ),
        (
            "multiple of a fraction",
            json!({"type": "number", "multipleOf": 0.5}),
            json!(0.3),
            &["spec.x: Invalid value: 0.3: spec.x in body should be a multiple of 0.5"],
        ),
        (
            "a multiple",
            json!({"type": "number", "multipleOf": 0.5}),
            json!(1.5),
            &[],
        ),
    ]);
}

#[test]
fn string_lengths_count_characters_and_patterns_match() {
    check_cases(&[
        (
            "max length",
            json!({"type": "string", "maxLength": 5}),
            json!("toolong"),
            &["spec.x: Too long: may not be more than 5 bytes"],
        ),
        (
            "max length of one",
            json!({"type": "string", "maxLength": 1}),
            json!("ab"),
            &["spec.x: Too long: may not be more than 1 bytes"],
        ),
        (
            "characters, not bytes",
            json!({"type": "string", "maxLength": 3}),
            json!("héé"),
            &[],
        ),
        (
            "min length",
            json!({"type": "string", "minLength": 3}),
            json!("ab"),
            &[r#"spec.x: Invalid value: "ab": spec.x in body should be at least 3 chars long"#],
        ),
        (
            "pattern",
            json!({"type": "string", "pattern": "^[a-z]+$"}),
            json!("ABC"),
            &[r#"spec.x: Invalid value: "ABC": spec.x in body should match '^[a-z]+$'"#],
        ),
        (
            "go digits are ascii",
            json!({"type": "string", "pattern": "^\\d+$"}),
            json!("١٢"),
            &[r#"spec.x: Invalid value: "١٢": spec.x in body should match '^\d+$'"#],
        ),
    ]);
}

#[test]
fn enums_report_the_supported_values() {
    check_cases(&[
        (
            "strings",
            json!({"type": "string", "enum": ["a", "b"]}),
            json!("x"),
            &[r#"spec.x: Unsupported value: "x": supported values: "a", "b""#],
        ),
        (
            "numbers",
            json!({"type": "integer", "enum": [1, 2]}),
            json!(3),
            &[r#"spec.x: Unsupported value: 3: supported values: "1", "2""#],
        ),
        (
            "member",
            json!({"type": "string", "enum": ["a", "b"]}),
            json!("b"),
            &[],
        ),
        (
            "integer equals float member",
            json!({"type": "number", "enum": [1.0]}),
            json!(1),
            &[],
        ),
    ]);
}

#[test]
fn list_keywords_are_checked() {
    check_cases(&[
        (
            "min items",
            json!({"type": "array", "minItems": 2, "items": {"type": "integer"}}),
            json!([1]),
            &["spec.x: Invalid value: 1: spec.x in body should have at least 2 items"],
        ),
        (
            "max items",
            json!({"type": "array", "maxItems": 2, "items": {"type": "integer"}}),
            json!([1, 2, 3]),
            &["spec.x: Too many: 3: must have at most 2 items"],
        ),
        (
            "unique items",
            json!({"type": "array", "uniqueItems": true, "items": {"type": "integer"}}),
            json!([1, 1]),
            &[r#"spec.x: Invalid value: "": spec.x in body shouldn't contain duplicates"#],
        ),
        (
            "items",
            json!({"type": "array", "items": {"type": "integer"}}),
            json!([1, "two"]),
            &[
                r#"spec.x[1]: Invalid value: "string": spec.x[1] in body must be of type integer: "string""#,
            ],
        ),
    ]);
}

#[test]
fn object_keywords_are_checked() {
    check_cases(&[
        (
            "min properties",
            json!({"type": "object", "minProperties": 2, "additionalProperties": {"type": "integer"}}),
            json!({"a": 1}),
            &["spec.x: Invalid value: 1: spec.x in body should have at least 2 properties"],
        ),
        (
            "max properties",
            json!({"type": "object", "maxProperties": 1, "additionalProperties": {"type": "integer"}}),
            json!({"a": 1, "b": 2}),
            &["spec.x: Too many: 2: must have at most 1 items"],
        ),
        (
            "required",
            json!({"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}),
            json!({}),
            &["spec.x.name: Required value"],
        ),
        (
            "additional properties schema",
            json!({"type": "object", "additionalProperties": {"type": "integer"}}),
            json!({"a": "s"}),
            &[
                r#"spec.x.a: Invalid value: "string": spec.x.a in body must be of type integer: "string""#,
            ],
        ),
        (
            "no additional properties",
            json!({"type": "object", "additionalProperties": false}),
            json!({"a": 1}),
            &[r#"spec.x: Invalid value: "a": spec.x.a in body is a forbidden property"#],
        ),
        (
            "preserved unknown fields",
            json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
            json!({"anything": {"goes": [1, "two"]}}),
            &[],
        ),
    ]);
}

#[test]
fn compositions_are_checked() {
    check_cases(&[
        (
            "all of",
            json!({"type": "integer", "allOf": [{"minimum": 2}, {"maximum": 5}]}),
            json!(1),
            &[
                "spec.x: Invalid value: 1: spec.x in body should be greater than or equal to 2",
                r#"<nil>: Invalid value: "": "spec.x" must validate all the schemas (allOf)"#,
            ],
        ),
        (
            "any of",
            json!({"type": "integer", "anyOf": [{"minimum": 5}, {"maximum": 1}]}),
            json!(3),
            &[
                r#"<nil>: Invalid value: "": "spec.x" must validate at least one schema (anyOf)"#,
                "spec.x: Invalid value: 3: spec.x in body should be greater than or equal to 5",
            ],
        ),
        (
            "any of, one matching",
            json!({"type": "integer", "anyOf": [{"minimum": 5}, {"maximum": 3}]}),
            json!(3),
            &[],
        ),
        (
            "one of, two matching",
            json!({"type": "integer", "oneOf": [{"minimum": 0}, {"maximum": 10}]}),
            json!(5),
            &[
                r#"<nil>: Invalid value: "": "spec.x" must validate one and only one schema (oneOf). Found 2 valid alternatives"#,
            ],
        ),
        (
            "not",
            json!({"type": "integer", "not": {"maximum": 3}}),
            json!(2),
            &[r#"<nil>: Invalid value: "": "spec.x" must not validate the schema (not)"#],
        ),
    ]);
}

#[test]
fn int_or_string_accepts_integers_and_strings_only() {
    let field = json!({"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]});
    check_cases(&[
        ("integer", field.clone(), json!(80), &[]),
        ("string", field.clone(), json!("80%"), &[]),
        (
            "boolean",
            field.clone(),
            json!(true),
            &[
                r#"spec.x: Invalid value: "boolean": spec.x in body must be of type integer,string: "boolean""#,
                r#"<nil>: Invalid value: "": "spec.x" must validate at least one schema (anyOf)"#,
                r#"spec.x: Invalid value: "boolean": spec.x in body must be of type integer: "boolean""#,
            ],
        ),
        (
            "fraction",
            field,
            json!(1.5),
            &[
                r#"spec.x: Invalid value: "number": spec.x in body must be of type integer,string: "number""#,
                r#"<nil>: Invalid value: "": "spec.x" must validate at least one schema (anyOf)"#,
                r#"spec.x: Invalid value: "number": spec.x in body must be of type integer: "number""#,
                r#"<nil>: Invalid value: "": Checked value must be of type integer (default format) in spec.x"#,
            ],
        ),
    ]);
}

#[test]
fn required_fields_at_the_root_name_the_field() {
    let schema = schema(json!({
        "type": "object",
        "required": ["spec"],
        "properties": {"spec": {"type": "object"}}
    }));
    assert_eq!(
        rendered(&schema, &json!({}), None),
        ["spec: Required value"]
    );
}

#[test]
fn errors_carry_typed_paths_and_values() {
    let schema = with_field(json!({"type": "integer", "minimum": 1}));
    let errors = validate(&schema, &json!({"spec": {"x": 0}}), None);
    assert_eq!(
        errors,
        vec![FieldError::invalid(
            FieldPath::new("spec").child("x"),
            BadValue::from(0),
            "spec.x in body should be greater than or equal to 1",
        )]
    );
}
