//! Type-parameter substitution and assignability: the unification at the heart of overload
//! resolution.

use std::collections::HashMap;
use std::sync::Arc;

use crate::types::Type;

/// Bindings of type parameters found so far.
#[derive(Debug, Clone, Default)]
pub(crate) struct Substitution {
    bindings: HashMap<Arc<str>, Type>,
}

impl Substitution {
    /// Follows bindings until reaching a type that is not a bound parameter.
    pub(crate) fn resolve<'a>(&'a self, mut ty: &'a Type) -> &'a Type {
        while let Type::Param(name) = ty {
            match self.bindings.get(name) {
                Some(bound) => ty = bound,
                None => break,
            }
        }
        ty
    }

    /// Replaces every bound parameter inside `ty`; unbound parameters become `dyn` when
    /// `default_dyn` is set, else stay as they are.
    pub(crate) fn apply(&self, ty: &Type, default_dyn: bool) -> Type {
        self.apply_bounded(ty, default_dyn, 0)
    }

    fn apply_bounded(&self, ty: &Type, default_dyn: bool, depth: u32) -> Type {
        if depth > 64 {
            return Type::Dyn;
        }
        let next = depth + 1;
        match self.resolve(ty) {
            Type::Param(name) => {
                if default_dyn {
                    Type::Dyn
                } else {
                    Type::Param(name.clone())
                }
            }
            Type::List(element) => Type::list(self.apply_bounded(element, default_dyn, next)),
            Type::Map(key, value) => Type::map(
                self.apply_bounded(key, default_dyn, next),
                self.apply_bounded(value, default_dyn, next),
            ),
            Type::Optional(inner) => Type::optional(self.apply_bounded(inner, default_dyn, next)),
            Type::Type(inner) => Type::type_of(self.apply_bounded(inner, default_dyn, next)),
            Type::Opaque(name, params) => Type::Opaque(
                name.clone(),
                params
                    .iter()
                    .map(|param| self.apply_bounded(param, default_dyn, next))
                    .collect(),
            ),
            other => other.clone(),
        }
    }

    fn occurs(&self, name: &str, ty: &Type) -> bool {
        match self.resolve(ty) {
            Type::Param(other) => other.as_ref() == name,
            Type::List(inner) | Type::Optional(inner) | Type::Type(inner) => {
                self.occurs(name, inner)
            }
            Type::Map(key, value) => self.occurs(name, key) || self.occurs(name, value),
            Type::Opaque(_, params) => params.iter().any(|param| self.occurs(name, param)),
            _ => false,
        }
    }

    fn bind(&mut self, name: &Arc<str>, ty: &Type) -> bool {
        if self.occurs(name, ty) {
            return matches!(self.resolve(ty), Type::Param(other) if other == name);
        }
        self.bindings.insert(name.clone(), ty.clone());
        true
    }

    /// Whether a value of type `actual` may be used where `expected` is required, binding type
    /// parameters on either side as needed. On failure the substitution may hold partial
    /// bindings: callers try on a copy.
    pub(crate) fn is_assignable(&mut self, expected: &Type, actual: &Type) -> bool {
        let expected = self.resolve(expected).clone();
        let actual = self.resolve(actual).clone();
        if expected == actual {
            return true;
        }
        match (&expected, &actual) {
            (Type::Param(name), _) => self.bind(name, &actual),
            (_, Type::Param(name)) => self.bind(name, &expected),
            (Type::Dyn | Type::Error, _) | (_, Type::Dyn | Type::Error) => {
                // dyn matches anything; parameters inside the other side learn nothing.
                true
            }
            (other, Type::Null) if is_nullable(other) => true,
            (Type::List(a), Type::List(b)) => self.is_assignable(a, b),
            (Type::Optional(a), Type::Optional(b)) => self.is_assignable(a, b),
            // Type values compare by name at run time: `type(x) == type(y)` always checks.
            (Type::Type(_), Type::Type(_)) => true,
            (Type::Map(k1, v1), Type::Map(k2, v2)) => {
                self.is_assignable(k1, k2) && self.is_assignable(v1, v2)
            }
            (Type::Opaque(n1, p1), Type::Opaque(n2, p2)) => {
                n1 == n2
                    && p1.len() == p2.len()
                    && p1
                        .iter()
                        .zip(p2.iter())
                        .all(|(a, b)| self.is_assignable(a, b))
            }
            _ => false,
        }
    }

    /// The type of an aggregate holding both: the more general of the two where one
    /// generalises the other (`optional(int)` and `optional(dyn)` give `optional(dyn)`), else
    /// `dyn`.
    pub(crate) fn join(&mut self, a: &Type, b: &Type) -> Type {
        self.generalize(a, b, 0).unwrap_or(Type::Dyn)
    }

    fn generalize(&mut self, a: &Type, b: &Type, depth: u32) -> Option<Type> {
        let a = self.resolve(a).clone();
        let b = self.resolve(b).clone();
        if a == b {
            return Some(a);
        }
        if depth > 64 {
            return Some(Type::Dyn);
        }
        let next = depth + 1;
        match (&a, &b) {
            (Type::Param(_), _) | (_, Type::Param(_)) => {
                let mut trial = self.clone();
                if trial.is_assignable(&a, &b) {
                    *self = trial;
                    Some(a)
                } else {
                    None
                }
            }
            (Type::Dyn | Type::Error, _) | (_, Type::Dyn | Type::Error) => Some(Type::Dyn),
            (Type::Null, other) | (other, Type::Null) if is_nullable(other) => Some(other.clone()),
            (Type::List(x), Type::List(y)) => Some(Type::list(self.generalize(x, y, next)?)),
            (Type::Optional(x), Type::Optional(y)) => {
                Some(Type::optional(self.generalize(x, y, next)?))
            }
            (Type::Type(x), Type::Type(y)) => Some(Type::type_of(
                self.generalize(x, y, next).unwrap_or(Type::Dyn),
            )),
            (Type::Map(k1, v1), Type::Map(k2, v2)) => {
                let key = self.generalize(k1, k2, next)?;
                let value = self.generalize(v1, v2, next)?;
                Some(Type::map(key, value))
            }
            (Type::Opaque(n1, p1), Type::Opaque(n2, p2)) if n1 == n2 && p1.len() == p2.len() => {
                let params = p1
                    .iter()
                    .zip(p2.iter())
                    .map(|(x, y)| self.generalize(x, y, next))
                    .collect::<Option<Vec<_>>>()?;
                Some(Type::Opaque(n1.clone(), params.into()))
            }
            _ => None,
        }
    }
}

/// Types that `null` may stand for (cel-go's "legacy nullable" types).
fn is_nullable(ty: &Type) -> bool {
    matches!(
        ty,
        Type::Object(_) | Type::Timestamp | Type::Duration | Type::Optional(_) | Type::Opaque(_, _)
    )
}

/// Renames the type parameters of an overload signature with a fresh suffix, so that two
/// uses of one function do not share bindings.
pub(crate) fn freshen(ty: &Type, suffix: u32) -> Type {
    match ty {
        Type::Param(name) => Type::Param(Arc::from(format!("{name}#{suffix}"))),
        Type::List(inner) => Type::list(freshen(inner, suffix)),
        Type::Optional(inner) => Type::optional(freshen(inner, suffix)),
        Type::Type(inner) => Type::type_of(freshen(inner, suffix)),
        Type::Map(key, value) => Type::map(freshen(key, suffix), freshen(value, suffix)),
        Type::Opaque(name, params) => Type::Opaque(
            name.clone(),
            params.iter().map(|param| freshen(param, suffix)).collect(),
        ),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_bind_once_and_then_constrain() {
        let mut substitution = Substitution::default();
        let a = Type::param("A");
        assert!(substitution.is_assignable(&Type::list(a.clone()), &Type::list(Type::Int)));
        assert!(substitution.is_assignable(&a, &Type::Int));
        assert!(!substitution.is_assignable(&a, &Type::String));
        assert_eq!(
            substitution.apply(&Type::map(Type::String, a), true),
            Type::map(Type::String, Type::Int)
        );
    }

    #[test]
    fn dyn_is_assignable_both_ways() {
        let mut substitution = Substitution::default();
        assert!(substitution.is_assignable(&Type::Int, &Type::Dyn));
        assert!(substitution.is_assignable(&Type::list(Type::Dyn), &Type::list(Type::String)));
    }

    #[test]
    fn occurs_check_rejects_infinite_types() {
        let mut substitution = Substitution::default();
        let a = Type::param("A");
        assert!(!substitution.is_assignable(&a, &Type::list(a.clone())));
    }

    #[test]
    fn join_of_different_types_is_dyn() {
        let mut substitution = Substitution::default();
        assert_eq!(substitution.join(&Type::Int, &Type::String), Type::Dyn);
        assert_eq!(substitution.join(&Type::Int, &Type::Int), Type::Int);
        let fresh = Type::param("T");
        assert_eq!(substitution.join(&fresh, &Type::Bool), Type::param("T"));
        assert_eq!(substitution.apply(&fresh, true), Type::Bool);
    }
}
