//! Typed errors for each phase: parsing, checking and evaluation.
//!
//! Variants carry data (names, types, positions), not prose; `Display` renders them for people
//! in cel-go's wording. Callers branch on variants, never on message text: in particular
//! [`EvalError::is_pending`] tells "the data is not there yet" from a real failure.

use std::fmt;
use std::sync::Arc;

use crate::source::{Source, Span};
use crate::types::Type;

mod condition;

pub use condition::{ConditionError, ConditionSyntaxError};

/// The result of one step of parsing or macro expansion: the value, or where the text is
/// wrong and how.
pub(crate) type PResult<T> = Result<T, (Span, SyntaxErrorKind)>;

/// What is wrong with an expression's text.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SyntaxErrorKind {
    /// A character that starts no token.
    #[error("token recognition error at: '{0}'")]
    UnexpectedCharacter(char),
    /// A token where the grammar does not allow it.
    #[error("syntax error: mismatched input {found} expecting {expected}")]
    UnexpectedToken {
        /// What was found.
        found: String,
        /// What the grammar allowed there.
        expected: String,
    },
    /// A string or bytes literal without its closing quote.
    #[error("syntax error: unterminated string literal")]
    UnterminatedString,
    /// A backtick-quoted field name without its closing backtick.
    #[error("syntax error: unterminated quoted identifier")]
    UnterminatedQuotedIdentifier,
    /// A backtick-quoted field name with characters CEL does not allow there.
    #[error("syntax error: invalid quoted identifier '`{0}`'")]
    InvalidQuotedIdentifier(String),
    /// An escape sequence that is malformed or names no valid character.
    #[error("syntax error: invalid escape sequence '{0}'")]
    InvalidEscape(String),
    /// A string literal whose bytes are not UTF-8.
    #[error("syntax error: string literal is not valid UTF-8")]
    InvalidUtf8InString,
    /// A numeric literal that does not parse.
    #[error("syntax error: invalid number '{0}'")]
    InvalidNumber(String),
    /// An integer literal outside its type's range.
    #[error("integer literal out of range: {0}")]
    IntegerOutOfRange(String),
    /// A reserved word used as an identifier.
    #[error("reserved identifier: {0}")]
    ReservedIdentifier(String),
    /// A macro called with arguments it cannot expand.
    #[error("{0}")]
    InvalidMacro(MacroError),
    /// The expression nests deeper than the parser allows.
    #[error("expression recursion limit exceeded: {limit}")]
    RecursionLimitExceeded {
        /// The configured limit.
        limit: u32,
    },
    /// The expression text is longer than the parser allows.
    #[error("expression code point size exceeds limit: size: {size}, limit {limit}")]
    SizeLimitExceeded {
        /// The expression's size in code points.
        size: usize,
        /// The configured limit.
        limit: usize,
    },
    /// A map or message literal with a repeated field name.
    #[error("field '{0}' is initialized more than once")]
    RepeatedField(String),
    /// A `runtime.newCondition(...)` call whose argument breaks kro's rules.
    #[error("{0}")]
    InvalidCondition(ConditionSyntaxError),
}

/// Why a macro call could not be expanded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MacroError {
    /// The macro's name (`all`, `map`, `cel.bind` ...).
    pub name: &'static str,
    /// What is wrong with its arguments.
    pub problem: MacroProblem,
}

/// The ways a macro's arguments can be wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum MacroProblem {
    /// A loop-variable argument is not a simple identifier.
    ArgumentMustBeSimpleName,
    /// The two loop variables of a two-variable macro have the same name.
    DuplicateVariableName,
    /// `has()` needs a field selection.
    InvalidHasArgument,
    /// A loop variable uses a name reserved for the accumulator.
    ReservedAccumulatorName,
    /// `cel.index`, `cel.iterVar` and `cel.accuVar` take non-negative integer literals.
    ExpectedNonNegativeLiteral,
    /// `cel.block` takes a list literal of bindings and a result.
    ExpectedListOfBindings,
    /// A variadic macro (`math.greatest`, `math.least`) called with no arguments.
    MissingArguments,
    /// The single argument of `math.greatest` or `math.least` is neither a number nor a
    /// non-empty list of numbers.
    InvalidSingleArgument,
    /// A literal argument of `math.greatest` or `math.least` that is not a number.
    NonNumericArgument,
    /// `sortBy` applied to a literal or a map, which cannot be a list.
    UnsupportedTarget,
}

impl fmt::Display for MacroError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.problem {
            MacroProblem::ArgumentMustBeSimpleName => {
                write!(
                    f,
                    "{}() variable name must be a simple identifier",
                    self.name
                )
            }
            MacroProblem::DuplicateVariableName => write!(
                f,
                "{}() second variable name must be different from the first variable name",
                self.name
            ),
            MacroProblem::InvalidHasArgument => write!(f, "invalid argument to has() macro"),
            MacroProblem::ExpectedNonNegativeLiteral => {
                write!(
                    f,
                    "{}() arguments must be non-negative integer literals",
                    self.name
                )
            }
            MacroProblem::ExpectedListOfBindings => {
                write!(
                    f,
                    "{}() expects a list literal of bindings and a result",
                    self.name
                )
            }
            MacroProblem::ReservedAccumulatorName => write!(
                f,
                "{}() variable name cannot be the reserved accumulator name",
                self.name
            ),
            MacroProblem::MissingArguments => {
                write!(f, "{}() requires at least one argument", self.name)
            }
            MacroProblem::InvalidSingleArgument => {
                write!(f, "{}() invalid single argument value", self.name)
            }
            MacroProblem::NonNumericArgument => write!(
                f,
                "{}() simple literal arguments must be numeric",
                self.name
            ),
            MacroProblem::UnsupportedTarget => write!(
                f,
                "{} can only be applied to a list, identifier, comprehension, call or select \
                 expression",
                self.name
            ),
        }
    }
}

/// One problem at one place.
#[derive(Debug, Clone, PartialEq)]
pub struct Issue<K> {
    /// Where in the expression.
    pub span: Span,
    /// What is wrong.
    pub kind: K,
}

/// Problems found in an expression, rendered in cel-go's layout with a caret under each place.
#[derive(Debug, Clone, PartialEq)]
pub struct Diagnostics<K> {
    /// The expression text the spans point into.
    pub source: Arc<Source>,
    /// The problems, in the order found (at most the configured cap).
    pub issues: Vec<Issue<K>>,
}

impl<K: fmt::Display> fmt::Display for Diagnostics<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (index, issue) in self.issues.iter().enumerate() {
            if index > 0 {
                writeln!(f)?;
            }
            let location = self.source.location(issue.span.start);
            write!(
                f,
                "ERROR: <input>:{location}: {}\n{}",
                issue.kind,
                self.source.snippet(issue.span.start)
            )?;
        }
        Ok(())
    }
}

impl<K: fmt::Display + fmt::Debug> std::error::Error for Diagnostics<K> {}

/// The expression's text is not valid CEL.
pub type ParseError = Diagnostics<SyntaxErrorKind>;

/// The expression is valid CEL but does not type-check.
pub type CheckError = Diagnostics<TypeErrorKind>;

/// What the type checker found wrong.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum TypeErrorKind {
    /// A name that is not a declared variable, type or enum constant.
    #[error("undeclared reference to '{name}' (in container '{container}')")]
    UndeclaredReference {
        /// The name as written.
        name: String,
        /// The container names were resolved in.
        container: String,
    },
    /// A function name with no declaration.
    #[error("undeclared reference to '{name}' (in container '{container}')")]
    UndeclaredFunction {
        /// The function name as written.
        name: String,
        /// The container names were resolved in.
        container: String,
    },
    /// No overload of a function accepts the argument types.
    #[error("found no matching overload for '{function}' applied to '{}'", format_argument_types(.receiver.as_ref(), .arguments))]
    NoMatchingOverload {
        /// The function name.
        function: String,
        /// The receiver's type, for member calls.
        receiver: Option<Type>,
        /// The argument types.
        arguments: Vec<Type>,
    },
    /// Field selection on a type that has no fields.
    #[error("type '{0}' does not support field selection")]
    NotSelectable(Type),
    /// A field that the object type does not have.
    #[error("undefined field '{field}'")]
    UndefinedField {
        /// The object type.
        object_type: Type,
        /// The missing field.
        field: String,
    },
    /// A message literal naming a type that is not an object type.
    #[error("'{0}' is not a type")]
    NotAType(String),
    /// A message literal naming a type with no fields (for example `int{}`).
    #[error("'{0}' is not a message type")]
    NotAMessageType(String),
    /// A comprehension over something that is not a list or a map.
    #[error(
        "expression of type '{0}' cannot be range of a comprehension (must be list, map, or dynamic)"
    )]
    NotARange(Type),
    /// A value whose type does not fit where it is used.
    #[error("expected type '{expected}' but found '{actual}'")]
    TypeMismatch {
        /// The type required there.
        expected: Type,
        /// The type found.
        actual: Type,
    },
    /// A map literal whose keys cannot be map keys.
    #[error("unsupported map key type: '{0}'")]
    InvalidMapKey(Type),
    /// An optional element, entry or field written where the value is not optional.
    #[error("expected type 'optional_type({expected})' but found '{actual}'")]
    ExpectedOptional {
        /// The element type.
        expected: Type,
        /// The type found.
        actual: Type,
    },
    /// More issues were found than the cap allows; the rest are not reported.
    #[error("more than {0} type errors; the rest are not reported")]
    TooManyErrors(usize),
}

fn format_argument_types(receiver: Option<&Type>, arguments: &[Type]) -> String {
    let arguments = arguments
        .iter()
        .map(Type::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    match receiver {
        Some(receiver) => format!("{receiver}.({arguments})"),
        None => format!("({arguments})"),
    }
}

/// Parsing or checking failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CompileError {
    /// The text is not valid CEL.
    #[error(transparent)]
    Parse(#[from] ParseError),
    /// The expression does not type-check.
    #[error(transparent)]
    Check(#[from] CheckError),
}

impl CompileError {
    /// The span of the first reported issue.
    pub fn first_span(&self) -> Option<Span> {
        match self {
            CompileError::Parse(error) => error.issues.first().map(|issue| issue.span),
            CompileError::Check(error) => error.issues.first().map(|issue| issue.span),
        }
    }

    /// The expression text the errors point into.
    pub fn source(&self) -> &Source {
        match self {
            CompileError::Parse(error) => &error.source,
            CompileError::Check(error) => &error.source,
        }
    }
}

/// Evaluation failed. Small (one pointer) so that results stay cheap to pass around.
#[derive(Clone, PartialEq)]
pub struct EvalError {
    inner: Box<EvalErrorInner>,
}

#[derive(Clone, PartialEq)]
struct EvalErrorInner {
    kind: EvalErrorKind,
    span: Option<Span>,
}

/// What went wrong while evaluating.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum EvalErrorKind {
    /// A map has no entry for the key. Usually "data not there yet".
    #[error("no such key: {0}")]
    NoSuchKey(String),
    /// An object has no such field. Usually "data not there yet".
    #[error("no such field: {0}")]
    NoSuchField(String),
    /// A list index past the end. Usually "data not there yet".
    #[error("index out of bounds: {index} (size {size})")]
    IndexOutOfBounds {
        /// The index asked for.
        index: i64,
        /// The list's size.
        size: usize,
    },
    /// A variable the activation does not bind.
    #[error("no such attribute: {0}")]
    NoSuchAttribute(String),
    /// No overload of the function accepts the runtime argument types.
    #[error("no such overload: {function}({})", .arguments.join(", "))]
    NoSuchOverload {
        /// The function name.
        function: String,
        /// The runtime type names of the arguments.
        arguments: Vec<String>,
    },
    /// Integer division by zero.
    #[error("division by zero")]
    DivisionByZero,
    /// Integer modulus by zero.
    #[error("modulus by zero")]
    ModulusByZero,
    /// Integer arithmetic that does not fit in 64 bits.
    #[error("integer overflow in {0}")]
    Overflow(&'static str),
    /// A conversion or time operation whose result is out of its type's range.
    #[error("{0} out of range")]
    OutOfRange(&'static str),
    /// A conversion that cannot be made from this value.
    #[error("type conversion error from '{from}' to '{to}': {reason}")]
    Conversion {
        /// The source type.
        from: String,
        /// The target type.
        to: String,
        /// Why not.
        reason: String,
    },
    /// A function argument with a value the function cannot use.
    #[error("{function}: {reason}")]
    InvalidArgument {
        /// The function name.
        function: String,
        /// What is wrong with the argument.
        reason: String,
    },
    /// A regular expression that compiles to more automaton states than the limit.
    #[error(
        "{function}: regular expression too large: it compiles to about {size} states, the limit is {limit}"
    )]
    PatternTooLarge {
        /// The function name.
        function: String,
        /// The estimated number of states.
        size: u64,
        /// The largest number of states accepted.
        limit: u64,
    },
    /// A map literal or insertion with a repeated key.
    #[error("Failed with repeated key: {0}")]
    DuplicateKey(String),
    /// A value of a type that cannot be a map key.
    #[error("unsupported key type: {0}")]
    InvalidMapKey(String),
    /// `.value()` of an empty optional.
    #[error("optional.none() dereference")]
    EmptyOptional,
    /// The evaluation used up its cost budget.
    #[error("operation cancelled: actual cost limit exceeded (limit {limit})")]
    CostLimitExceeded {
        /// The budget.
        limit: u64,
    },
    /// A value nested deeper than the converters allow.
    #[error("value nesting exceeds the limit of {0} levels")]
    NestingTooDeep(usize),
    /// kro's `runtime.newCondition` or `runtime.condition` was given values it cannot use.
    #[error("{0}")]
    InvalidCondition(ConditionError),
    /// An error raised by an embedder's function.
    #[error("{0}")]
    Custom(String),
    /// A bug in this crate: an invariant did not hold.
    #[error("internal error: {0}")]
    Internal(String),
}

impl EvalError {
    /// An error of the given kind, not yet tied to a place.
    pub fn new(kind: EvalErrorKind) -> Self {
        EvalError {
            inner: Box::new(EvalErrorInner { kind, span: None }),
        }
    }

    /// What went wrong.
    pub fn kind(&self) -> &EvalErrorKind {
        &self.inner.kind
    }

    /// Where in the expression, when known.
    pub fn span(&self) -> Option<Span> {
        self.inner.span
    }

    /// Ties the error to a place unless it already has one (the innermost place wins).
    #[must_use]
    pub fn at(mut self, span: Span) -> Self {
        if self.inner.span.is_none() {
            self.inner.span = Some(span);
        }
        self
    }

    /// True when the error means "the data is not there yet" (a missing key, field, list
    /// element or variable) rather than a defect: kro waits and retries instead of failing.
    pub fn is_pending(&self) -> bool {
        matches!(
            self.inner.kind,
            EvalErrorKind::NoSuchKey(_)
                | EvalErrorKind::NoSuchField(_)
                | EvalErrorKind::IndexOutOfBounds { .. }
                | EvalErrorKind::NoSuchAttribute(_)
        )
    }

    /// A stable CamelCase name for the error's kind, for condition reasons and metric labels.
    pub fn reason(&self) -> &'static str {
        match self.inner.kind {
            EvalErrorKind::NoSuchKey(_) => "NoSuchKey",
            EvalErrorKind::NoSuchField(_) => "NoSuchField",
            EvalErrorKind::IndexOutOfBounds { .. } => "IndexOutOfBounds",
            EvalErrorKind::NoSuchAttribute(_) => "NoSuchAttribute",
            EvalErrorKind::NoSuchOverload { .. } => "NoSuchOverload",
            EvalErrorKind::DivisionByZero => "DivisionByZero",
            EvalErrorKind::ModulusByZero => "ModulusByZero",
            EvalErrorKind::Overflow(_) => "Overflow",
            EvalErrorKind::OutOfRange(_) => "OutOfRange",
            EvalErrorKind::Conversion { .. } => "ConversionError",
            EvalErrorKind::InvalidArgument { .. } => "InvalidArgument",
            EvalErrorKind::PatternTooLarge { .. } => "PatternTooLarge",
            EvalErrorKind::DuplicateKey(_) => "DuplicateKey",
            EvalErrorKind::InvalidMapKey(_) => "InvalidMapKey",
            EvalErrorKind::EmptyOptional => "EmptyOptional",
            EvalErrorKind::CostLimitExceeded { .. } => "CostLimitExceeded",
            EvalErrorKind::NestingTooDeep(_) => "NestingTooDeep",
            EvalErrorKind::InvalidCondition(_) => "InvalidCondition",
            EvalErrorKind::Custom(_) => "FunctionError",
            EvalErrorKind::Internal(_) => "InternalError",
        }
    }

    /// A function-argument error.
    pub fn invalid_argument(function: &str, reason: impl Into<String>) -> Self {
        EvalError::new(EvalErrorKind::InvalidArgument {
            function: function.to_string(),
            reason: reason.into(),
        })
    }
}

impl From<EvalErrorKind> for EvalError {
    fn from(kind: EvalErrorKind) -> Self {
        EvalError::new(kind)
    }
}

impl fmt::Debug for EvalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EvalError")
            .field("kind", &self.inner.kind)
            .field("span", &self.inner.span)
            .finish()
    }
}

impl fmt::Display for EvalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.kind.fmt(f)
    }
}

impl std::error::Error for EvalError {}

/// A `Result` whose error is an [`EvalError`].
pub type EvalResult<T> = Result<T, EvalError>;
