//! CEL (Common Expression Language) for kro, implemented in Rust with no I/O.
//!
//! Every expression in a ResourceGraphDefinition is CEL: resource templates, `readyWhen`,
//! `includeWhen`, `forEach` and instance status. This crate owns the language end to end, so
//! that kro can type-check an RGD before anything runs and evaluate it with bounded cost.
//!
//! **Owns:** the lexer and parser (positions on every node, bounded depth and size); macro
//! expansion into comprehensions; the type checker (overload resolution, type parameters, object
//! types supplied by the embedder through [`TypeProvider`]); the interpreter with a cost budget;
//! the standard library and optional types; the extension libraries enabled by name (among them
//! Kubernetes' lists, regex, URL, quantity, IP, CIDR, semver and format libraries); conversion
//! between CEL values and JSON.
//!
//! **Must not:** do I/O, read clocks or the environment, or know Kubernetes object types.
//!
//! **kro's own functions** are the `kro.*` libraries that [`Env::kro`] enables: `random`,
//! `merge`/`deepMerge`, `json`, `hash`, `lists.*AtIndex`, `omit` and `runtime`, with upstream
//! kro's results. Two of them hand the rest of kro values to act on:
//!
//! - `omit()` returns a sentinel: a [`Value::Opaque`] whose type is [`OMIT_TYPE_NAME`]
//!   (`kro.omit`), recognised by [`is_omit`]. The template resolver removes a field or list
//!   element whose value is the sentinel. It supports no operation, and `omit() == x` is an
//!   error unless `x` is `null`.
//! - `runtime.newCondition({...})` and `runtime.condition(obj, 'Type')` are members of the
//!   `runtime` variable, which the embedder declares with [`runtime_type`] and binds to
//!   [`runtime_value`] where conditions may be written. Conditions check as the object type
//!   [`condition_type`] (`kro.run.Condition`: string fields `type`, `status`, `reason`,
//!   `message`) and are maps with exactly those entries at run time.
//!
//! ```
//! use kro_cel::{Env, Type, Value};
//!
//! let env = Env::standard().with_variable("replicas", Type::Int);
//! let program = env.compile("replicas > 2 ? 'scaled' : 'single'").expect("valid CEL");
//! assert_eq!(program.output_type(), Some(&Type::String));
//! let result = program.evaluate(&[("replicas", Value::Int(3))]).expect("evaluates");
//! assert_eq!(result, Value::string("scaled"));
//! ```

mod ast;
mod checker;
mod cost;
mod env;
mod error;
mod estimate;
mod ext;
mod functions;
mod interpreter;
mod json;
mod lexer;
mod macros;
mod parser;
mod paths;
mod pattern;
mod source;
mod stack;
mod stdlib;
mod time;
mod types;
mod unparse;
mod value;

pub use ast::{
    Ast, Call, Comprehension, Expr, ExprId, ExprKind, FieldInit, ListExpr, Literal, MapEntry,
    MapExpr, Select, StructExpr, operators,
};
pub use checker::{CheckedAst, Reference};
pub use cost::{
    Budget, DEFAULT_COST_LIMIT, ELEMENTS_PER_COMPARE_UNIT, ELEMENTS_PER_COPY_UNIT, MAP_CREATE_COST,
    TRAVERSAL_UNIT, compare_cost, copy_cost, traversal_cost,
};
pub use env::Env;
pub use error::{
    CheckError, CompileError, ConditionError, ConditionSyntaxError, Diagnostics, EvalError,
    EvalErrorKind, EvalResult, Issue, MacroError, MacroProblem, ParseError, SyntaxErrorKind,
    TypeErrorKind,
};
pub use estimate::{
    CelGoCostConfig, CostEstimate, CostRange, NoSizeHints, PathSizes, SizeHints, SizeRange,
    estimate_cel_go_cost, estimate_cost,
};
pub use ext::{
    ALL_LIBRARIES, CONDITION_TYPE_NAME, Clock, KRO_LIBRARIES, MOVING_DURATION_TYPE_NAME,
    MOVING_TIMESTAMP_TYPE_NAME, OMIT_TYPE_NAME, RUNTIME_TYPE_NAME, RUNTIME_VARIABLE,
    TIME_TYPE_NAME, TIME_VARIABLE, condition_type, is_go_date, is_moving, is_omit,
    is_valid_condition_status, library, moving_duration_type, moving_timestamp_type, omit_value,
    push_go_json_string, runtime_type, runtime_value, time_type, time_value,
};
pub use functions::{Function, Implementation, Library, ObjectType, Overload, Preparation};
pub use interpreter::{Activation, Evaluation, NoVariables, Program};
pub use json::{JsonError, MAX_JSON_DEPTH, from_json, to_json};
pub use lexer::is_reserved_word;
pub use parser::{ParserConfig, parse, parse_with};
pub use paths::{VariablePath, variable_paths};
pub use source::{Location, Source, Span};
pub use time::{CalendarFields, Duration, Timestamp};
pub use types::{FieldLookup, Type, TypeProvider};
pub use unparse::unparse;
pub use value::{Key, Map, OpaqueValue, Value};
