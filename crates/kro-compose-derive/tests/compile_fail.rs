//! Mistakes a compiler can catch fail to compile, each with a readable message (the expected
//! messages are in `tests/ui/*.stderr`; `TRYBUILD=overwrite` rewrites them after a deliberate
//! change): a misspelt field of a built-in kind, a reference of the wrong type in a field, a
//! CEL syntax error, a misspelt field of a spec, a marker the derive does not know, and a
//! status field left without a value.

#[test]
fn mistakes_fail_to_compile_with_readable_messages() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/*.rs");
}
