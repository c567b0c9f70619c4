//! The parser: tokens to an [`Ast`], with macros expanded and every node positioned.
//!
//! A precedence-climbing parser over the CEL grammar. Depth is bounded: every level of nesting
//! the tree gains (a parenthesis, an operand of a chained operator, a member suffix) counts
//! against [`ParserConfig::max_recursion_depth`], so the checker and the interpreter, which
//! recurse over the tree, cannot overflow the stack on hostile input.

use std::sync::Arc;

use crate::ast::{
    Ast, Call, Expr, ExprKind, FieldInit, ListExpr, Literal, MapEntry, MapExpr, NodeFactory,
    Select, StructExpr, operators,
};
use crate::error::{Issue, PResult, ParseError, SyntaxErrorKind};
use crate::lexer::{Punct, Spanned, Token, is_reserved, tokenize};
use crate::macros;
use crate::source::{Source, Span};

/// Limits and switches for parsing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParserConfig {
    /// How deeply the tree may nest.
    pub max_recursion_depth: u32,
    /// The longest accepted expression, in code points.
    pub max_code_points: usize,
    /// Whether macros (`has`, `all`, `map`, `cel.bind` ...) are expanded.
    pub enable_macros: bool,
}

impl Default for ParserConfig {
    fn default() -> Self {
        ParserConfig {
            max_recursion_depth: 250,
            max_code_points: 100_000,
            enable_macros: true,
        }
    }
}

impl ParserConfig {
    /// Sets the nesting limit.
    #[must_use]
    pub fn max_recursion_depth(mut self, limit: u32) -> Self {
        self.max_recursion_depth = limit;
        self
    }

    /// Sets the size limit in code points.
    #[must_use]
    pub fn max_code_points(mut self, limit: usize) -> Self {
        self.max_code_points = limit;
        self
    }

    /// Turns macro expansion on or off.
    #[must_use]
    pub fn enable_macros(mut self, enable: bool) -> Self {
        self.enable_macros = enable;
        self
    }
}

/// Parses an expression with the default limits.
///
/// # Errors
/// A [`ParseError`] naming the position of the problem.
pub fn parse(text: &str) -> Result<Ast, ParseError> {
    parse_with(text, &ParserConfig::default())
}

/// Parses an expression.
///
/// # Errors
/// A [`ParseError`] naming the position of the problem.
pub fn parse_with(text: &str, config: &ParserConfig) -> Result<Ast, ParseError> {
    let source = Arc::new(Source::new(text));
    let fail = |span: Span, kind: SyntaxErrorKind| ParseError {
        source: source.clone(),
        issues: vec![Issue { span, kind }],
    };
    let size = text.chars().count();
    if size > config.max_code_points {
        return Err(fail(
            Span::new(0, 0),
            SyntaxErrorKind::SizeLimitExceeded {
                size,
                limit: config.max_code_points,
            },
        ));
    }
    let tokens = tokenize(text).map_err(|(span, kind)| fail(span, kind))?;
    let mut parser = Parser {
        tokens,
        position: 0,
        depth: 0,
        config,
        nodes: NodeFactory::new(),
    };
    let expr = parser.expr().map_err(|(span, kind)| fail(span, kind))?;
    let trailing = parser.peek();
    if trailing.token != Token::Eof {
        let span = trailing.span;
        let found = trailing.token.describe();
        return Err(fail(
            span,
            SyntaxErrorKind::UnexpectedToken {
                found,
                expected: "end of input".to_string(),
            },
        ));
    }
    Ok(Ast {
        expr,
        source,
        next_id: parser.nodes.next_id(),
        macro_calls: parser.nodes.macro_calls,
    })
}

pub(crate) struct Parser<'c> {
    tokens: Vec<Spanned>,
    position: usize,
    depth: u32,
    config: &'c ParserConfig,
    nodes: NodeFactory,
}

impl Parser<'_> {
    fn peek(&self) -> &Spanned {
        // `tokenize` always ends with Eof and the parser never moves past it.
        &self.tokens[self.position.min(self.tokens.len() - 1)]
    }

    /// Consumes one token. Past the end it keeps returning `Eof` (and counting, so that a
    /// caller may step back by one).
    fn advance(&mut self) -> Spanned {
        let token = self.peek().clone();
        self.position += 1;
        token
    }

    fn previous_span(&self) -> Span {
        let index = self.position.saturating_sub(1).min(self.tokens.len() - 1);
        self.tokens[index].span
    }

    fn at(&self, punct: Punct) -> bool {
        self.peek().token == Token::Punct(punct)
    }

    fn eat(&mut self, punct: Punct) -> bool {
        if self.at(punct) {
            self.position += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, punct: Punct) -> PResult<Span> {
        if self.at(punct) {
            return Ok(self.advance().span);
        }
        Err(self.unexpected(&format!("'{}'", punct.text())))
    }

    fn unexpected(&self, expected: &str) -> (Span, SyntaxErrorKind) {
        let found = self.peek();
        (
            found.span,
            SyntaxErrorKind::UnexpectedToken {
                found: found.token.describe(),
                expected: expected.to_string(),
            },
        )
    }

    fn descend(&mut self, levels: u32, span: Span) -> PResult<()> {
        self.depth += levels;
        if self.depth > self.config.max_recursion_depth {
            return Err((
                span,
                SyntaxErrorKind::RecursionLimitExceeded {
                    limit: self.config.max_recursion_depth,
                },
            ));
        }
        Ok(())
    }

    fn ascend(&mut self, levels: u32) {
        self.depth -= levels;
    }

    /// `Expr = ConditionalOr ['?' ConditionalOr ':' Expr]`
    fn expr(&mut self) -> PResult<Expr> {
        crate::stack::guard(|| self.expr_unguarded())
    }

    fn expr_unguarded(&mut self) -> PResult<Expr> {
        let start = self.peek().span;
        self.descend(1, start)?;
        let condition = self.logical(Punct::OrOr)?;
        let result = if self.at(Punct::Question) {
            let operator = self.advance().span;
            let then = self.logical(Punct::OrOr)?;
            self.expect(Punct::Colon)?;
            let otherwise = self.expr()?;
            Ok(self.nodes.call(
                operator,
                operators::CONDITIONAL,
                vec![condition, then, otherwise],
            ))
        } else {
            Ok(condition)
        };
        self.ascend(1);
        result
    }

    /// `||` and `&&` chains, built as balanced trees so long chains stay shallow.
    fn logical(&mut self, operator: Punct) -> PResult<Expr> {
        let mut operands = vec![if operator == Punct::OrOr {
            self.logical(Punct::AndAnd)?
        } else {
            self.relation()?
        }];
        let mut operator_spans = Vec::new();
        while self.at(operator) {
            operator_spans.push(self.advance().span);
            operands.push(if operator == Punct::OrOr {
                self.logical(Punct::AndAnd)?
            } else {
                self.relation()?
            });
        }
        if operands.len() == 1 {
            return Ok(operands.remove(0));
        }
        let levels = usize::BITS - (operands.len() - 1).leading_zeros();
        self.descend(levels, operator_spans[0])?;
        self.ascend(levels);
        let function = if operator == Punct::OrOr {
            operators::LOGICAL_OR
        } else {
            operators::LOGICAL_AND
        };
        Ok(self.balance(function, operands, &operator_spans))
    }

    fn balance(&mut self, function: &str, mut operands: Vec<Expr>, spans: &[Span]) -> Expr {
        if operands.len() == 1 {
            return operands.remove(0);
        }
        let middle = operands.len() / 2;
        let right = operands.split_off(middle);
        let left = self.balance(function, operands, &spans[..middle - 1]);
        let right = self.balance(function, right, &spans[middle..]);
        self.nodes
            .call(spans[middle - 1], function, vec![left, right])
    }

    /// A left-associative chain of binary operators at one precedence level.
    fn binary_chain(
        &mut self,
        next: fn(&mut Self) -> PResult<Expr>,
        operator_of: fn(&Token) -> Option<&'static str>,
    ) -> PResult<Expr> {
        let mut left = next(self)?;
        let mut levels = 0;
        while let Some(function) = operator_of(&self.peek().token) {
            let span = self.advance().span;
            self.descend(1, span)?;
            levels += 1;
            let right = next(self)?;
            left = self.nodes.call(span, function, vec![left, right]);
        }
        self.ascend(levels);
        Ok(left)
    }

    fn relation(&mut self) -> PResult<Expr> {
        self.binary_chain(Self::addition, |token| match token {
            Token::Punct(Punct::Less) => Some(operators::LESS),
            Token::Punct(Punct::LessEqual) => Some(operators::LESS_EQUALS),
            Token::Punct(Punct::Greater) => Some(operators::GREATER),
            Token::Punct(Punct::GreaterEqual) => Some(operators::GREATER_EQUALS),
            Token::Punct(Punct::EqualEqual) => Some(operators::EQUALS),
            Token::Punct(Punct::BangEqual) => Some(operators::NOT_EQUALS),
            Token::In => Some(operators::IN),
            _ => None,
        })
    }

    fn addition(&mut self) -> PResult<Expr> {
        self.binary_chain(Self::multiplication, |token| match token {
            Token::Punct(Punct::Plus) => Some(operators::ADD),
            Token::Punct(Punct::Minus) => Some(operators::SUBTRACT),
            _ => None,
        })
    }

    fn multiplication(&mut self) -> PResult<Expr> {
        self.binary_chain(Self::unary, |token| match token {
            Token::Punct(Punct::Star) => Some(operators::MULTIPLY),
            Token::Punct(Punct::Slash) => Some(operators::DIVIDE),
            Token::Punct(Punct::Percent) => Some(operators::MODULO),
            _ => None,
        })
    }

    /// `Unary = Member | '!' {'!'} Member | '-' {'-'} Member`; a minus directly before a
    /// numeric literal is part of the literal, so `-9223372036854775808` is an int.
    fn unary(&mut self) -> PResult<Expr> {
        let operator = if self.at(Punct::Bang) {
            Punct::Bang
        } else if self.at(Punct::Minus) {
            Punct::Minus
        } else {
            return self.member();
        };
        let mut spans = Vec::new();
        while self.at(operator) {
            spans.push(self.advance().span);
        }
        if operator == Punct::Minus && matches!(self.peek().token, Token::Int(_) | Token::Double(_))
        {
            // The last minus belongs to the literal (`-9223372036854775808` is an int).
            spans.pop();
            self.position -= 1;
        }
        let levels = spans.len() as u32;
        if levels == 0 {
            return self.member();
        }
        self.descend(levels, spans[0])?;
        let mut operand = self.member()?;
        let function = if operator == Punct::Bang {
            operators::LOGICAL_NOT
        } else {
            operators::NEGATE
        };
        while let Some(span) = spans.pop() {
            operand = self.nodes.call(span, function, vec![operand]);
        }
        self.ascend(levels);
        Ok(operand)
    }

    /// A numeric literal after its minus sign (already consumed, at `sign`).
    fn negative_literal(&mut self, sign: Span) -> PResult<Expr> {
        let token = self.advance();
        let span = sign.to(token.span);
        let literal = match token.token {
            Token::Int(value) if value <= i64::MAX as u64 + 1 => {
                Literal::Int((value as i64).wrapping_neg())
            }
            Token::Int(value) => {
                return Err((
                    span,
                    SyntaxErrorKind::IntegerOutOfRange(format!("-{value}")),
                ));
            }
            Token::Double(value) => Literal::Double(-value),
            _ => {
                return Err((
                    token.span,
                    SyntaxErrorKind::InvalidNumber(token.token.describe()),
                ));
            }
        };
        Ok(self.nodes.node(span, ExprKind::Literal(literal)))
    }

    /// `Member = Primary | Member '.' SELECTOR ['(' args ')'] | Member '[' Expr ']' | ...`
    fn member(&mut self) -> PResult<Expr> {
        let primary = self.primary()?;
        self.member_suffixes(primary)
    }

    fn member_suffixes(&mut self, mut operand: Expr) -> PResult<Expr> {
        let mut levels = 0;
        loop {
            let span = self.peek().span;
            if self.at(Punct::Dot) {
                self.advance();
                self.descend(1, span)?;
                levels += 1;
                operand = self.dot_suffix(operand, span)?;
            } else if self.at(Punct::LeftBracket) {
                self.advance();
                self.descend(1, span)?;
                levels += 1;
                let optional = self.eat(Punct::Question);
                let index = self.expr()?;
                self.expect(Punct::RightBracket)?;
                let function = if optional {
                    operators::OPTIONAL_INDEX
                } else {
                    operators::INDEX
                };
                operand = self.nodes.call(span, function, vec![operand, index]);
            } else if self.at(Punct::LeftBrace) {
                let Some(type_name) = operand.qualified_name() else {
                    break;
                };
                self.advance();
                self.descend(1, span)?;
                levels += 1;
                operand = self.struct_literal(type_name, operand.span)?;
            } else {
                break;
            }
        }
        self.ascend(levels);
        Ok(operand)
    }

    /// After `operand.`: a field, an optional field `?f`, or a member call `f(args)`.
    fn dot_suffix(&mut self, operand: Expr, dot: Span) -> PResult<Expr> {
        let optional = self.eat(Punct::Question);
        let name_token = self.advance();
        let (name, quoted) = match name_token.token {
            Token::Ident(name) => (name, false),
            Token::QuotedIdent(name) => (name, true),
            Token::In => ("in".to_string(), false),
            Token::Null => ("null".to_string(), false),
            Token::Bool(value) => (value.to_string(), false),
            _ => {
                self.position -= 1;
                return Err(self.unexpected("an identifier"));
            }
        };
        if optional {
            let field = self.nodes.node(
                name_token.span,
                ExprKind::Literal(Literal::String(Arc::from(name.as_str()))),
            );
            return Ok(self
                .nodes
                .call(dot, operators::OPTIONAL_SELECT, vec![operand, field]));
        }
        if !quoted && self.at(Punct::LeftParen) {
            self.advance();
            let args = self.arguments(Punct::RightParen)?;
            let span = dot.to(self.previous_span());
            return self.member_call(operand, name, args, span);
        }
        Ok(self.nodes.node(
            dot,
            ExprKind::Select(Select {
                operand: Box::new(operand),
                field: name,
                test_only: false,
            }),
        ))
    }

    fn member_call(
        &mut self,
        target: Expr,
        function: String,
        args: Vec<Expr>,
        span: Span,
    ) -> PResult<Expr> {
        let call = self.nodes.node(
            span,
            ExprKind::Call(Call {
                target: Some(Box::new(target)),
                function,
                args,
            }),
        );
        if self.config.enable_macros {
            return macros::expand(&mut self.nodes, call);
        }
        Ok(call)
    }

    /// A comma-separated list of expressions up to `close` (consumed).
    fn arguments(&mut self, close: Punct) -> PResult<Vec<Expr>> {
        let mut args = Vec::new();
        if self.eat(close) {
            return Ok(args);
        }
        loop {
            args.push(self.expr()?);
            if self.eat(close) {
                return Ok(args);
            }
            self.expect(Punct::Comma)?;
        }
    }

    fn primary(&mut self) -> PResult<Expr> {
        let token = self.advance();
        let span = token.span;
        let literal = |value| Ok(ExprKind::Literal(value));
        let kind = match token.token {
            Token::Int(value) => match i64::try_from(value) {
                Ok(value) => literal(Literal::Int(value)),
                Err(_) => Err((span, SyntaxErrorKind::IntegerOutOfRange(value.to_string()))),
            },
            Token::Uint(value) => literal(Literal::Uint(value)),
            Token::Double(value) => literal(Literal::Double(value)),
            Token::String(value) => literal(Literal::String(value)),
            Token::Bytes(value) => literal(Literal::Bytes(value)),
            Token::Bool(value) => literal(Literal::Bool(value)),
            Token::Null => literal(Literal::Null),
            Token::Ident(name) => return self.ident_or_call(name, span),
            Token::Punct(Punct::Dot) => {
                let next = self.advance();
                match next.token {
                    Token::Ident(name) => return self.ident_or_call(format!(".{name}"), span),
                    _ => {
                        self.position -= 1;
                        return Err(self.unexpected("an identifier"));
                    }
                }
            }
            Token::Punct(Punct::Minus)
                if matches!(self.peek().token, Token::Int(_) | Token::Double(_)) =>
            {
                return self.negative_literal(span);
            }
            Token::Punct(Punct::LeftParen) => {
                let inner = self.expr()?;
                self.expect(Punct::RightParen)?;
                return Ok(inner);
            }
            Token::Punct(Punct::LeftBracket) => return self.list_literal(span),
            Token::Punct(Punct::LeftBrace) => return self.map_literal(span),
            _ => {
                self.position -= 1;
                return Err(self.unexpected("an expression"));
            }
        }?;
        Ok(self.nodes.node(span, kind))
    }

    fn ident_or_call(&mut self, name: String, span: Span) -> PResult<Expr> {
        let bare = name.trim_start_matches('.');
        if is_reserved(bare) {
            return Err((span, SyntaxErrorKind::ReservedIdentifier(bare.to_string())));
        }
        if self.at(Punct::LeftParen) {
            self.advance();
            let args = self.arguments(Punct::RightParen)?;
            let span = span.to(self.previous_span());
            let call = self.nodes.node(
                span,
                ExprKind::Call(Call {
                    target: None,
                    function: name,
                    args,
                }),
            );
            if self.config.enable_macros {
                return macros::expand(&mut self.nodes, call);
            }
            return Ok(call);
        }
        Ok(self.nodes.node(span, ExprKind::Ident(name)))
    }

    fn list_literal(&mut self, open: Span) -> PResult<Expr> {
        let mut elements = Vec::new();
        let mut optional_indices = Vec::new();
        while !self.at(Punct::RightBracket) {
            if self.eat(Punct::Question) {
                optional_indices.push(elements.len());
            }
            elements.push(self.expr()?);
            if !self.eat(Punct::Comma) {
                break;
            }
        }
        let close = self.expect(Punct::RightBracket)?;
        Ok(self.nodes.node(
            open.to(close),
            ExprKind::List(ListExpr {
                elements,
                optional_indices,
            }),
        ))
    }

    fn map_literal(&mut self, open: Span) -> PResult<Expr> {
        let mut entries = Vec::new();
        while !self.at(Punct::RightBrace) {
            let start = self.peek().span;
            let optional = self.eat(Punct::Question);
            let key = self.expr()?;
            let colon = self.expect(Punct::Colon)?;
            let value = self.expr()?;
            let id = self.nodes.new_id();
            entries.push(MapEntry {
                id,
                span: if optional { start } else { colon },
                key,
                value,
                optional,
            });
            if !self.eat(Punct::Comma) {
                break;
            }
        }
        let close = self.expect(Punct::RightBrace)?;
        Ok(self
            .nodes
            .node(open.to(close), ExprKind::Map(MapExpr { entries })))
    }

    fn struct_literal(&mut self, type_name: String, name_span: Span) -> PResult<Expr> {
        let mut fields: Vec<FieldInit> = Vec::new();
        while !self.at(Punct::RightBrace) {
            let start = self.peek().span;
            let optional = self.eat(Punct::Question);
            let name_token = self.advance();
            let field = match name_token.token {
                Token::Ident(name) | Token::QuotedIdent(name) => name,
                Token::In => "in".to_string(),
                Token::Null => "null".to_string(),
                Token::Bool(value) => value.to_string(),
                _ => {
                    self.position -= 1;
                    return Err(self.unexpected("a field name"));
                }
            };
            if fields.iter().any(|existing| existing.field == field) {
                return Err((name_token.span, SyntaxErrorKind::RepeatedField(field)));
            }
            self.expect(Punct::Colon)?;
            let value = self.expr()?;
            let id = self.nodes.new_id();
            fields.push(FieldInit {
                id,
                span: if optional { start } else { name_token.span },
                field,
                value,
                optional,
            });
            if !self.eat(Punct::Comma) {
                break;
            }
        }
        let close = self.expect(Punct::RightBrace)?;
        Ok(self.nodes.node(
            name_span.to(close),
            ExprKind::Struct(StructExpr { type_name, fields }),
        ))
    }
}

#[cfg(test)]
mod tests;
