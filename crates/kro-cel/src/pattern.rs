//! Regular expressions: compiled with RE2 syntax under a size bound, and charged to the cost
//! budget for what compiling and matching them really cost.
//!
//! cel-go charges a match `ceil((1 + text bytes) / 10) * ceil(pattern bytes / 4)` and nothing
//! for compiling. The length of a pattern undercounts counted repetition: `(a{0,100}){0,50}`
//! is 16 bytes but compiles to an automaton of about 10,000 states, and compiling it anew on
//! every iteration of a loop held a reconcile worker for 39 seconds before the budget ran out.
//! So here a pattern's *size* is the number of automaton states it compiles to, estimated from
//! its syntax tree before anything is compiled (and never less than its length):
//!
//! - compiling charges one unit per ten bytes of pattern for parsing it,
//!   [`UNICODE_CLASS_UNITS`] per Unicode class it names (translating `\w` into its ranges
//!   takes tens of microseconds), then [`COMPILE_UNITS_PER_STATE`] per state; a pattern
//!   larger than [`MAX_PATTERN_STATES`] is a [`EvalErrorKind::PatternTooLarge`] error and is
//!   never compiled;
//! - matching charges cel-go's formula with the size in place of the length.
//!
//! A constant pattern is compiled once, when the program is planned (see
//! [`crate::Overload::with_preparation`]), and its evaluations charge only for matching.

use regex::Regex;
use regex_syntax::ast::{Ast, ClassSetItem};
use regex_syntax::hir::{Class, Hir, HirKind};
use regex_syntax::utf8::Utf8Sequences;

use crate::cost::{Budget, traversal_cost};
use crate::error::{EvalError, EvalErrorKind, EvalResult};

/// The largest pattern accepted, in automaton states. Patterns people write have tens to a few
/// hundred states; this leaves room for large Unicode classes repeated a few times.
pub(crate) const MAX_PATTERN_STATES: u64 = 100_000;

/// Cost units charged per state when a pattern is compiled during an evaluation: compiling
/// takes about 100 ns per state (the adversarial bench measures it), and a unit should stand
/// for well under 100 ns of work.
pub(crate) const COMPILE_UNITS_PER_STATE: u64 = 3;

/// The most Unicode classes a pattern may name; translating each takes tens of
/// microseconds.
const MAX_UNICODE_CLASSES: u64 = 100;

/// Cost units charged per Unicode class named when a pattern is compiled during an
/// evaluation, before it is translated.
const UNICODE_CLASS_UNITS: u64 = 1_000;

/// The regex crate's own bound on the compiled program, in bytes: a backstop behind
/// [`MAX_PATTERN_STATES`].
const REGEX_SIZE_LIMIT: usize = 8 << 20;

/// A compiled pattern and its size.
#[derive(Debug)]
pub(crate) struct Pattern {
    regex: Regex,
    size: u64,
}

impl Pattern {
    /// Compiles `pattern` without charging: for constant patterns, compiled once when the
    /// program is planned.
    ///
    /// # Errors
    /// `InvalidArgument` for a malformed pattern, `PatternTooLarge` for one over the limit.
    pub(crate) fn compile(function: &str, pattern: &str) -> EvalResult<Pattern> {
        let size = size_of(function, pattern)?;
        Self::build(function, pattern, size)
    }

    /// Compiles `pattern` during an evaluation, charging for parsing it and then for the
    /// states it compiles to, before the work is done.
    ///
    /// # Errors
    /// As [`Pattern::compile`], or `CostLimitExceeded`.
    pub(crate) fn compile_charged(
        function: &str,
        pattern: &str,
        budget: &mut Budget,
    ) -> EvalResult<Pattern> {
        budget.charge(traversal_cost(pattern.len()))?;
        let size = measure(function, pattern, budget)?;
        budget.charge(compile_cost(size))?;
        Self::build(function, pattern, size)
    }

    fn build(function: &str, pattern: &str, size: u64) -> EvalResult<Pattern> {
        let regex = regex::RegexBuilder::new(pattern)
            .size_limit(REGEX_SIZE_LIMIT)
            .build()
            .map_err(|error| match error {
                regex::Error::CompiledTooBig(_) => too_large(function, size),
                other => invalid(function, &other),
            })?;
        Ok(Pattern { regex, size })
    }

    /// The compiled expression.
    pub(crate) fn regex(&self) -> &Regex {
        &self.regex
    }

    /// Charges for searching `text`.
    ///
    /// # Errors
    /// `CostLimitExceeded`.
    pub(crate) fn charge_search(&self, text: &str, budget: &mut Budget) -> EvalResult<()> {
        budget.charge(search_cost(text.len() as u64, self.size))
    }
}

fn invalid(function: &str, error: &dyn std::fmt::Display) -> EvalError {
    EvalError::invalid_argument(function, format!("invalid regular expression: {error}"))
}

fn too_large(function: &str, size: u64) -> EvalError {
    EvalError::new(EvalErrorKind::PatternTooLarge {
        function: function.to_string(),
        size,
        limit: MAX_PATTERN_STATES,
    })
}

/// The cost of compiling a pattern of `size` states (parsing is charged apart).
pub(crate) fn compile_cost(size: u64) -> u64 {
    size.saturating_mul(COMPILE_UNITS_PER_STATE)
}

/// The cost of searching `text_bytes` of text with a pattern of `size` states: cel-go's
/// `ceil((1 + text) / 10) * ceil(size / 4)`, since a search may step every state on every
/// byte.
pub(crate) fn search_cost(text_bytes: u64, size: u64) -> u64 {
    let text_cost = text_bytes.saturating_add(1).div_ceil(10);
    let pattern_cost = size.div_ceil(4).max(1);
    text_cost.saturating_mul(pattern_cost)
}

/// A pattern's size: the automaton states it compiles to, and at least its length.
///
/// # Errors
/// `InvalidArgument` for a malformed pattern, `PatternTooLarge` for one over the limit.
pub(crate) fn size_of(function: &str, pattern: &str) -> EvalResult<u64> {
    measure(function, pattern, &mut Budget::new(None))
}

/// The most that compiling a pattern of `length` bytes during an evaluation can charge:
/// parsing, the Unicode classes it may name, and the largest automaton accepted.
pub(crate) fn max_compile_cost(length: u64) -> u64 {
    let classes = (length / 2).min(MAX_UNICODE_CLASSES);
    traversal_cost(usize::try_from(length).unwrap_or(usize::MAX))
        .saturating_add(classes.saturating_mul(UNICODE_CLASS_UNITS))
        .saturating_add(compile_cost(MAX_PATTERN_STATES))
}

/// Sizes `pattern`, charging `budget` for the work before it is done: no pattern can be
/// larger than its length, so a pattern longer than the limit is not even parsed; parsing
/// is linear in the length; then each Unicode class is charged before it is translated
/// into its ranges (`\w` alone has 770), since that is where the time of sizing goes.
fn measure(function: &str, pattern: &str, budget: &mut Budget) -> EvalResult<u64> {
    let length = pattern.len() as u64;
    if length > MAX_PATTERN_STATES {
        return Err(too_large(function, length));
    }
    let ast = regex_syntax::ast::parse::ParserBuilder::new()
        .build()
        .parse(pattern)
        .map_err(|error| invalid(function, &error))?;
    let classes = regex_syntax::ast::visit(&ast, UnicodeClasses(0)).unwrap_or(u64::MAX);
    if classes > MAX_UNICODE_CLASSES {
        return Err(too_large(
            function,
            classes.saturating_mul(MAX_PATTERN_STATES / MAX_UNICODE_CLASSES),
        ));
    }
    budget.charge(classes.saturating_mul(UNICODE_CLASS_UNITS))?;
    let hir = regex_syntax::hir::translate::TranslatorBuilder::new()
        .build()
        .translate(pattern, &ast)
        .map_err(|error| invalid(function, &error))?;
    let size = states(&hir).max(length);
    if size > MAX_PATTERN_STATES {
        return Err(too_large(function, size));
    }
    Ok(size)
}

/// Counts the Unicode classes a pattern names (`\pL`, `\w`, `[\d\s]`), each of which
/// translates into up to about a thousand ranges.
struct UnicodeClasses(u64);

impl regex_syntax::ast::Visitor for UnicodeClasses {
    type Output = u64;
    type Err = std::convert::Infallible;

    fn finish(self) -> Result<u64, Self::Err> {
        Ok(self.0)
    }

    fn visit_pre(&mut self, ast: &Ast) -> Result<(), Self::Err> {
        if matches!(ast, Ast::ClassUnicode(_) | Ast::ClassPerl(_)) {
            self.0 += 1;
        }
        Ok(())
    }

    fn visit_class_set_item_pre(&mut self, item: &ClassSetItem) -> Result<(), Self::Err> {
        if matches!(item, ClassSetItem::Unicode(_) | ClassSetItem::Perl(_)) {
            self.0 += 1;
        }
        Ok(())
    }
}

/// The states a Thompson construction makes for `hir`: counted repetition copies its
/// operand once per count, and a Unicode class becomes one state per byte of each of its
/// UTF-8 sequences. An upper estimate; the syntax's nesting limit bounds the recursion.
fn states(hir: &Hir) -> u64 {
    crate::stack::guard(|| match hir.kind() {
        HirKind::Empty | HirKind::Look(_) => 1,
        HirKind::Literal(literal) => literal.0.len() as u64,
        HirKind::Class(Class::Bytes(class)) => class.ranges().len() as u64,
        HirKind::Class(Class::Unicode(class)) => class
            .ranges()
            .iter()
            .flat_map(|range| Utf8Sequences::new(range.start(), range.end()))
            .map(|sequence| sequence.as_slice().len() as u64)
            .sum(),
        HirKind::Repetition(repetition) => {
            let copies = match repetition.max {
                Some(max) => u64::from(max.max(repetition.min)),
                None => u64::from(repetition.min) + 1,
            };
            copies
                .max(1)
                .saturating_mul(states(&repetition.sub).saturating_add(1))
        }
        HirKind::Capture(capture) => states(&capture.sub).saturating_add(2),
        HirKind::Concat(items) => items
            .iter()
            .fold(0u64, |total, item| total.saturating_add(states(item))),
        HirKind::Alternation(items) => items.iter().fold(items.len() as u64, |total, item| {
            total.saturating_add(states(item))
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn size(pattern: &str) -> u64 {
        size_of("matches", pattern).expect("a valid pattern under the limit")
    }

    #[test]
    fn plain_patterns_are_sized_by_their_length() {
        assert_eq!(size("abc"), 3);
        let dns_label = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$";
        assert_eq!(size(dns_label), dns_label.len() as u64);
    }

    #[test]
    fn counted_repetition_multiplies_the_size_of_its_operand() {
        // Two states per copy of `a` (the byte and the split), a hundred copies, fifty
        // times over, plus the group's two.
        assert_eq!(size("(a{0,100}){0,50}"), 50 * (100 * 2 + 2 + 1));
        assert!(size("a{1000}") >= 1000);
        assert!(size("(a{0,100}){0,50}") > 100 * size("a{0,100}") / 4);
    }

    #[test]
    fn unicode_classes_count_their_utf8_sequences() {
        assert!(size("\\w") > 100, "{}", size("\\w"));
        assert!(size("\\w{10}") >= 10 * size("\\w"));
    }

    #[test]
    fn a_pattern_over_the_limit_is_an_error_and_never_compiled() {
        let error =
            Pattern::compile("matches", "((a{0,100}){0,100}){0,100}").expect_err("too large");
        assert!(matches!(
            error.kind(),
            EvalErrorKind::PatternTooLarge { size, limit: MAX_PATTERN_STATES, .. }
                if *size > MAX_PATTERN_STATES
        ));
        // Checked before any budget is spent on compiling.
        let mut budget = Budget::new(None);
        let error = Pattern::compile_charged("matches", "(\\w{1000}){1000}", &mut budget)
            .expect_err("too large");
        assert!(matches!(
            error.kind(),
            EvalErrorKind::PatternTooLarge { .. }
        ));
        let parse_and_class = traversal_cost("(\\w{1000}){1000}".len()) + UNICODE_CLASS_UNITS;
        assert_eq!(budget.used(), parse_and_class);
    }

    #[test]
    fn many_unicode_classes_are_refused_before_they_are_translated() {
        // Translating `\w` costs tens of microseconds: a loop that sized a new pattern of
        // two classes per iteration ran 6 s on the default budget when only its length was
        // charged.
        let pattern = "\\w".repeat(101);
        let mut budget = Budget::new(None);
        let error = Pattern::compile_charged("matches", &pattern, &mut budget)
            .expect_err("too many classes");
        assert!(matches!(
            error.kind(),
            EvalErrorKind::PatternTooLarge { .. }
        ));
        assert_eq!(budget.used(), traversal_cost(pattern.len()));
        let mut budget = Budget::new(None);
        Pattern::compile_charged("matches", "\\w\\pL", &mut budget).expect("compiles");
        assert!(budget.used() >= 2 * UNICODE_CLASS_UNITS);
    }

    #[test]
    fn a_pattern_longer_than_the_limit_is_refused_unparsed() {
        let pattern = "(".repeat(usize::try_from(MAX_PATTERN_STATES).expect("small") + 1);
        let error = Pattern::compile("matches", &pattern).expect_err("too long");
        assert!(matches!(
            error.kind(),
            EvalErrorKind::PatternTooLarge { .. }
        ));
    }

    #[test]
    fn malformed_patterns_are_invalid_arguments() {
        let error = Pattern::compile("find", "(").expect_err("malformed");
        assert!(matches!(
            error.kind(),
            EvalErrorKind::InvalidArgument { .. }
        ));
    }

    #[test]
    fn compiling_during_evaluation_charges_for_every_state() {
        let mut budget = Budget::new(None);
        let pattern = "(a{0,100}){0,50}";
        Pattern::compile_charged("matches", pattern, &mut budget).expect("compiles");
        assert_eq!(
            budget.used(),
            traversal_cost(pattern.len()) + size(pattern) * COMPILE_UNITS_PER_STATE
        );
    }

    #[test]
    fn searching_charges_text_times_pattern_size() {
        assert_eq!(search_cost(0, 1), 1);
        assert_eq!(search_cost(99, 20), 10 * 5);
        let pattern = Pattern::compile("matches", "(a{0,100}){0,50}").expect("compiles");
        let mut budget = Budget::new(None);
        pattern.charge_search("b", &mut budget).expect("unlimited");
        assert_eq!(budget.used(), pattern.size.div_ceil(4));
    }
}
