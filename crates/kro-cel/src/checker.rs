//! The type checker: infers a type for every node, resolves names against the environment's
//! declarations and picks the overloads each call may use.
//!
//! It follows cel-go's algorithm: overload resolution by unification with fresh type
//! parameters, `dyn` assignable both ways, empty literals typed by fresh parameters that later
//! uses bind, and comprehension variables scoped to their loop.

mod unify;

use std::collections::HashMap;
use std::sync::Arc;

use crate::ast::{Ast, Call, Comprehension, Expr, ExprId, ExprKind, Literal, Select, operators};
use crate::error::{CheckError, Issue, TypeErrorKind};
use crate::functions::Function;
use crate::source::Span;
use crate::types::{FieldLookup, Type, TypeProvider};

use unify::{Substitution, freshen};

/// What the checker needs from an environment: the declarations names, calls and types are
/// resolved against, and the cap on reported errors. [`Env`](crate::Env) implements it, so the
/// checker does not depend on the environment; the planner resolves the names of unchecked
/// programs through it too.
pub(crate) trait Declarations {
    /// The declared type of a variable, by its fully qualified name.
    fn variable(&self, name: &str) -> Option<&Type>;

    /// A function by its fully qualified name.
    fn function(&self, name: &str) -> Option<&Function>;

    /// The object-type provider, if any.
    fn type_provider(&self) -> Option<&dyn TypeProvider>;

    /// The type of `field` on the object type `type_name`.
    fn field_type(&self, type_name: &str, field: &str) -> FieldLookup;

    /// The full name and type a type name denotes, if it denotes one.
    fn lookup_type_name(&self, name: &str) -> Option<(String, Type)>;

    /// The container names are resolved in.
    fn container(&self) -> &str;

    /// The fully qualified names `name` may refer to, most specific first.
    fn candidate_names(&self, name: &str) -> Vec<String>;

    /// The cap on reported type errors.
    fn max_check_errors(&self) -> usize;
}

/// What a name or call in a checked expression was resolved to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reference {
    /// A declared variable, by its fully qualified name.
    Variable(String),
    /// A type used as a value (`int`, `google.protobuf.Timestamp`), by its full name.
    Type(String),
    /// A function by its fully qualified name, with the overloads the call may use.
    Function {
        /// The function's name after container resolution (`optional.of`).
        name: String,
        /// Ids of the overloads whose signatures match the argument types.
        overloads: Vec<String>,
    },
}

/// An expression with the type of every node and the resolution of every name and call.
#[derive(Debug, Clone)]
pub struct CheckedAst {
    /// The parsed expression.
    pub ast: Ast,
    types: HashMap<ExprId, Type>,
    references: HashMap<ExprId, Reference>,
}

impl CheckedAst {
    /// The type of the whole expression.
    pub fn output_type(&self) -> &Type {
        self.types.get(&self.ast.expr.id).unwrap_or(&Type::Dyn)
    }

    /// The type of one node.
    pub fn type_of(&self, id: ExprId) -> Option<&Type> {
        self.types.get(&id)
    }

    /// What a node's name or call was resolved to.
    pub fn reference(&self, id: ExprId) -> Option<&Reference> {
        self.references.get(&id)
    }

    /// Every variable the expression reads, by fully qualified name, sorted.
    pub fn referenced_variables(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self
            .references
            .values()
            .filter_map(|reference| match reference {
                Reference::Variable(name) => Some(name.as_str()),
                _ => None,
            })
            .collect();
        names.sort_unstable();
        names.dedup();
        names
    }
}

/// Type-checks `ast` against the declarations of `env`.
pub(crate) fn check(env: &dyn Declarations, ast: &Ast) -> Result<CheckedAst, CheckError> {
    let mut checker = Checker {
        env,
        substitution: Substitution::default(),
        types: HashMap::new(),
        references: HashMap::new(),
        locals: Vec::new(),
        issues: Vec::new(),
        fresh: 0,
    };
    checker.check_expr(&ast.expr);
    if !checker.issues.is_empty() {
        return Err(CheckError {
            source: ast.source.clone(),
            issues: checker.issues,
        });
    }
    let substitution = checker.substitution;
    let types = checker
        .types
        .into_iter()
        .map(|(id, ty)| (id, substitution.apply(&ty, true)))
        .collect();
    Ok(CheckedAst {
        ast: ast.clone(),
        types,
        references: checker.references,
    })
}

struct Checker<'e> {
    env: &'e dyn Declarations,
    substitution: Substitution,
    types: HashMap<ExprId, Type>,
    references: HashMap<ExprId, Reference>,
    locals: Vec<(String, Type)>,
    issues: Vec<Issue<TypeErrorKind>>,
    fresh: u32,
}

impl Checker<'_> {
    fn report(&mut self, span: Span, kind: TypeErrorKind) {
        let cap = self.env.max_check_errors();
        if self.issues.len() < cap {
            self.issues.push(Issue { span, kind });
        } else if self.issues.len() == cap {
            self.issues.push(Issue {
                span,
                kind: TypeErrorKind::TooManyErrors(cap),
            });
        }
    }

    fn fresh_param(&mut self) -> Type {
        self.fresh += 1;
        Type::Param(Arc::from(format!("_var{}", self.fresh)))
    }

    fn local(&self, name: &str) -> Option<&Type> {
        self.locals
            .iter()
            .rev()
            .find(|(local, _)| local == name)
            .map(|(_, ty)| ty)
    }

    fn resolved(&self, ty: &Type) -> Type {
        self.substitution.resolve(ty).clone()
    }

    fn check_expr(&mut self, expr: &Expr) -> Type {
        crate::stack::guard(|| self.check_expr_unguarded(expr))
    }

    fn check_expr_unguarded(&mut self, expr: &Expr) -> Type {
        let ty = match &expr.kind {
            ExprKind::Literal(literal) => literal_type(literal),
            ExprKind::Ident(name) => self.check_ident(expr.id, name, expr.span),
            ExprKind::Select(select) => self.check_select(expr, select),
            ExprKind::Call(call) => self.check_call(expr, call),
            ExprKind::List(list) => {
                let mut element_type: Option<Type> = None;
                for (index, element) in list.elements.iter().enumerate() {
                    let mut ty = self.check_expr(element);
                    if list.optional_indices.contains(&index) {
                        ty = self.unwrap_optional(ty, element.span);
                    }
                    element_type = Some(match element_type {
                        None => ty,
                        Some(previous) => self.substitution.join(&previous, &ty),
                    });
                }
                let element_type = element_type.unwrap_or_else(|| self.fresh_param());
                Type::list(element_type)
            }
            ExprKind::Map(map) => {
                let mut key_type: Option<Type> = None;
                let mut value_type: Option<Type> = None;
                for entry in &map.entries {
                    let key = self.check_expr(&entry.key);
                    let resolved_key = self.resolved(&key);
                    if !matches!(
                        resolved_key,
                        Type::Int
                            | Type::Uint
                            | Type::Bool
                            | Type::String
                            | Type::Dyn
                            | Type::Error
                            | Type::Param(_)
                    ) {
                        self.report(entry.key.span, TypeErrorKind::InvalidMapKey(resolved_key));
                    }
                    let mut value = self.check_expr(&entry.value);
                    if entry.optional {
                        value = self.unwrap_optional(value, entry.value.span);
                    }
                    key_type = Some(match key_type {
                        None => key,
                        Some(previous) => self.substitution.join(&previous, &key),
                    });
                    value_type = Some(match value_type {
                        None => value,
                        Some(previous) => self.substitution.join(&previous, &value),
                    });
                }
                let key_type = key_type.unwrap_or_else(|| self.fresh_param());
                let value_type = value_type.unwrap_or_else(|| self.fresh_param());
                Type::map(key_type, value_type)
            }
            ExprKind::Struct(object) => self.check_struct(expr, object),
            ExprKind::Comprehension(comprehension) => self.check_comprehension(comprehension),
        };
        self.types.insert(expr.id, ty.clone());
        ty
    }

    fn unwrap_optional(&mut self, ty: Type, span: Span) -> Type {
        match self.resolved(&ty) {
            Type::Optional(inner) => (*inner).clone(),
            Type::Dyn | Type::Error => Type::Dyn,
            Type::Param(_) => {
                let inner = self.fresh_param();
                self.substitution
                    .is_assignable(&ty, &Type::optional(inner.clone()));
                inner
            }
            other => {
                let expected = self.fresh_param();
                self.report(
                    span,
                    TypeErrorKind::ExpectedOptional {
                        expected: Type::Dyn,
                        actual: other,
                    },
                );
                expected
            }
        }
    }

    fn check_ident(&mut self, id: ExprId, name: &str, span: Span) -> Type {
        if !name.starts_with('.')
            && let Some(ty) = self.local(name)
        {
            return ty.clone();
        }
        if let Some(ty) = self.resolve_variable(id, name) {
            return ty;
        }
        if let Some((full_name, ty)) = self.env.lookup_type_name(name) {
            self.references.insert(id, Reference::Type(full_name));
            return Type::type_of(ty);
        }
        self.report(
            span,
            TypeErrorKind::UndeclaredReference {
                name: name.trim_start_matches('.').to_string(),
                container: self.env.container().to_string(),
            },
        );
        Type::Error
    }

    fn resolve_variable(&mut self, id: ExprId, name: &str) -> Option<Type> {
        for candidate in self.env.candidate_names(name) {
            if let Some(ty) = self.env.variable(&candidate) {
                let ty = ty.clone();
                self.references.insert(id, Reference::Variable(candidate));
                return Some(ty);
            }
        }
        None
    }

    /// Whether a qualified name's first component is a comprehension variable (then the name
    /// is field selection on it, never a declared variable or type).
    fn is_rooted_in_local(&self, qualified: &str) -> bool {
        if qualified.starts_with('.') {
            return false;
        }
        let root = qualified.split('.').next().unwrap_or(qualified);
        self.local(root).is_some()
    }

    fn check_select(&mut self, expr: &Expr, select: &Select) -> Type {
        if !select.test_only
            && let Some(qualified) = expr.qualified_name()
            && !self.is_rooted_in_local(&qualified)
        {
            if let Some(ty) = self.resolve_variable(expr.id, &qualified) {
                return ty;
            }
            if let Some((full_name, ty)) = self.env.lookup_type_name(&qualified) {
                self.references.insert(expr.id, Reference::Type(full_name));
                return Type::type_of(ty);
            }
        }
        let operand = self.check_expr(&select.operand);
        let field = self.field_type(&operand, &select.field, expr.span);
        if select.test_only {
            return Type::Bool;
        }
        field
    }

    /// The type of `operand.field`; optional operands give optional results.
    fn field_type(&mut self, operand: &Type, field: &str, span: Span) -> Type {
        match self.resolved(operand) {
            Type::Map(_, value) => (*value).clone(),
            Type::Dyn | Type::Error | Type::Param(_) => Type::Dyn,
            Type::Optional(inner) => Type::optional(self.field_type(&inner, field, span)),
            Type::Object(name) => match self.env.field_type(&name, field) {
                FieldLookup::Found(ty) => ty,
                FieldLookup::NoSuchField => {
                    self.report(
                        span,
                        TypeErrorKind::UndefinedField {
                            object_type: Type::Object(name),
                            field: field.to_string(),
                        },
                    );
                    Type::Error
                }
            },
            other => {
                self.report(span, TypeErrorKind::NotSelectable(other));
                Type::Error
            }
        }
    }

    fn check_call(&mut self, expr: &Expr, call: &Call) -> Type {
        if call.function == operators::OPTIONAL_SELECT
            && call.target.is_none()
            && let [operand, field] = call.args.as_slice()
            && let ExprKind::Literal(Literal::String(name)) = &field.kind
        {
            let operand_type = self.check_expr(operand);
            self.check_expr(field);
            let inner = match self.resolved(&operand_type) {
                Type::Optional(inner) => (*inner).clone(),
                other => other,
            };
            let field_type = self.field_type(&inner, name, expr.span);
            self.references.insert(
                expr.id,
                Reference::Function {
                    name: call.function.clone(),
                    overloads: vec!["select_optional_field".to_string()],
                },
            );
            return Type::optional(field_type);
        }
        // `a.b.f(x)` may name the global function `a.b.f` rather than a member call on `a.b`.
        if let Some(target) = &call.target
            && let Some(namespace) = target.qualified_name()
            && !self.is_rooted_in_local(&namespace)
            && self
                .env
                .variable(namespace.trim_start_matches('.'))
                .is_none()
        {
            let qualified = format!("{namespace}.{}", call.function);
            if let Some(name) = self.resolve_function_name(&qualified) {
                return self.check_resolved_call(expr, &name, false, None, &call.args);
            }
        }
        let name = if call.target.is_some() {
            self.env
                .function(&call.function)
                .map(|function| function.name.clone())
        } else {
            self.resolve_function_name(&call.function)
        };
        let Some(name) = name else {
            if let Some(target) = &call.target {
                self.check_expr(target);
            }
            for arg in &call.args {
                self.check_expr(arg);
            }
            self.report(
                expr.span,
                TypeErrorKind::UndeclaredFunction {
                    name: call.function.trim_start_matches('.').to_string(),
                    container: self.env.container().to_string(),
                },
            );
            return Type::Error;
        };
        self.check_resolved_call(
            expr,
            &name,
            call.target.is_some(),
            call.target.as_deref(),
            &call.args,
        )
    }

    fn resolve_function_name(&self, name: &str) -> Option<String> {
        self.env
            .candidate_names(name)
            .into_iter()
            .find(|candidate| self.env.function(candidate).is_some())
    }

    fn check_resolved_call(
        &mut self,
        expr: &Expr,
        name: &str,
        is_member: bool,
        target: Option<&Expr>,
        args: &[Expr],
    ) -> Type {
        let mut arg_types = Vec::with_capacity(args.len() + 1);
        if let Some(target) = target {
            arg_types.push(self.check_expr(target));
        }
        for arg in args {
            arg_types.push(self.check_expr(arg));
        }
        let Some(function) = self.env.function(name) else {
            return Type::Error;
        };
        let mut matches: Vec<(String, Type, Substitution)> = Vec::new();
        for overload in &function.overloads {
            if overload.is_member != is_member || overload.params.len() != arg_types.len() {
                continue;
            }
            self.fresh += 1;
            let suffix = self.fresh;
            let mut trial = self.substitution.clone();
            let fits = overload
                .params
                .iter()
                .zip(&arg_types)
                .all(|(param, arg)| trial.is_assignable(&freshen(param, suffix), arg));
            if fits {
                let result = freshen(&overload.result, suffix);
                matches.push((overload.id.clone(), result, trial));
            }
        }
        if matches.is_empty() {
            if !arg_types
                .iter()
                .any(|ty| matches!(self.resolved(ty), Type::Error))
            {
                let mut resolved: Vec<Type> = arg_types
                    .iter()
                    .map(|ty| self.substitution.apply(ty, false))
                    .collect();
                let receiver = is_member.then(|| resolved.remove(0));
                self.report(
                    expr.span,
                    TypeErrorKind::NoMatchingOverload {
                        function: name.to_string(),
                        receiver,
                        arguments: resolved,
                    },
                );
            }
            return Type::Error;
        }
        let overloads = matches.iter().map(|(id, _, _)| id.clone()).collect();
        self.references.insert(
            expr.id,
            Reference::Function {
                name: name.to_string(),
                overloads,
            },
        );
        if matches.len() == 1 {
            let (_, result, trial) = matches.remove(0);
            self.substitution = trial;
            return self.substitution.apply(&result, false);
        }
        let results: Vec<Type> = matches
            .iter()
            .map(|(_, result, trial)| trial.apply(result, true))
            .collect();
        if results.windows(2).all(|pair| pair[0] == pair[1]) {
            results.into_iter().next().unwrap_or(Type::Dyn)
        } else {
            Type::Dyn
        }
    }

    fn check_struct(&mut self, expr: &Expr, object: &crate::ast::StructExpr) -> Type {
        let resolved = self.env.lookup_type_name(&object.type_name);
        let object_name = match &resolved {
            Some((name, Type::Object(_))) => Some(name.clone()),
            Some((name, _)) => {
                self.report(expr.span, TypeErrorKind::NotAMessageType(name.clone()));
                None
            }
            None => {
                self.report(
                    expr.span,
                    TypeErrorKind::NotAType(object.type_name.trim_start_matches('.').to_string()),
                );
                None
            }
        };
        for field in &object.fields {
            let mut value = self.check_expr(&field.value);
            let Some(type_name) = &object_name else {
                continue;
            };
            if field.optional {
                value = self.unwrap_optional(value, field.value.span);
            }
            let lookup = self
                .env
                .type_provider()
                .map_or(FieldLookup::NoSuchField, |provider| {
                    provider.field_type(type_name, &field.field)
                });
            match lookup {
                FieldLookup::Found(expected) => {
                    if !self.substitution.is_assignable(&expected, &value) {
                        let actual = self.substitution.apply(&value, false);
                        self.report(field.span, TypeErrorKind::TypeMismatch { expected, actual });
                    }
                }
                FieldLookup::NoSuchField => self.report(
                    field.span,
                    TypeErrorKind::UndefinedField {
                        object_type: Type::object(type_name),
                        field: field.field.clone(),
                    },
                ),
            }
        }
        match object_name {
            Some(name) => {
                self.references
                    .insert(expr.id, Reference::Type(name.clone()));
                Type::object(&name)
            }
            None => Type::Error,
        }
    }

    fn check_comprehension(&mut self, comprehension: &Comprehension) -> Type {
        let range = self.check_expr(&comprehension.iter_range);
        let two_variables = comprehension.iter_var2.is_some();
        let (first, second) = match self.resolved(&range) {
            Type::List(element) if two_variables => (Type::Int, (*element).clone()),
            Type::List(element) => ((*element).clone(), Type::Dyn),
            Type::Map(key, value) => ((*key).clone(), (*value).clone()),
            Type::Dyn | Type::Error | Type::Param(_) => (Type::Dyn, Type::Dyn),
            other => {
                self.report(
                    comprehension.iter_range.span,
                    TypeErrorKind::NotARange(other),
                );
                (Type::Error, Type::Error)
            }
        };
        let accumulator = self.check_expr(&comprehension.accu_init);
        self.locals
            .push((comprehension.accu_var.clone(), accumulator.clone()));
        let locals_before_loop = self.locals.len();
        self.locals.push((comprehension.iter_var.clone(), first));
        if let Some(second_name) = &comprehension.iter_var2 {
            self.locals.push((second_name.clone(), second));
        }
        let condition = self.check_expr(&comprehension.loop_condition);
        if !self.substitution.is_assignable(&Type::Bool, &condition) {
            let actual = self.substitution.apply(&condition, false);
            self.report(
                comprehension.loop_condition.span,
                TypeErrorKind::TypeMismatch {
                    expected: Type::Bool,
                    actual,
                },
            );
        }
        let step = self.check_expr(&comprehension.loop_step);
        if !self.substitution.is_assignable(&accumulator, &step) {
            let expected = self.substitution.apply(&accumulator, false);
            let actual = self.substitution.apply(&step, false);
            self.report(
                comprehension.loop_step.span,
                TypeErrorKind::TypeMismatch { expected, actual },
            );
        }
        self.locals.truncate(locals_before_loop);
        let result = self.check_expr(&comprehension.result);
        self.locals.pop();
        result
    }
}

fn literal_type(literal: &Literal) -> Type {
    match literal {
        Literal::Null => Type::Null,
        Literal::Bool(_) => Type::Bool,
        Literal::Int(_) => Type::Int,
        Literal::Uint(_) => Type::Uint,
        Literal::Double(_) => Type::Double,
        Literal::String(_) => Type::String,
        Literal::Bytes(_) => Type::Bytes,
    }
}

#[cfg(test)]
mod tests;
