//! Function declarations and implementations: what the checker resolves calls against and
//! what the interpreter runs.

use std::fmt;
use std::sync::Arc;

use crate::cost::Budget;
use crate::error::EvalResult;
use crate::types::Type;
use crate::value::Value;

/// The code behind an overload: the evaluated arguments (receiver first for member calls) and
/// the evaluation's budget, to charge for work proportional to the arguments' size.
pub type Implementation = Arc<dyn Fn(&[Value], &mut Budget) -> EvalResult<Value> + Send + Sync>;

/// Prepares an overload for the arguments known when a program is planned: given each
/// argument's value when it is a constant (`None` when it is computed at run time), an
/// implementation specialised to them, or `None` to keep the general one. The regex functions
/// use it to compile a constant pattern once per program instead of once per call.
pub type Preparation = Arc<dyn Fn(&[Option<&Value>]) -> Option<Implementation> + Send + Sync>;

/// One signature of a function.
#[derive(Clone)]
pub struct Overload {
    /// A unique id, such as `add_int64` (cel-go's names for standard overloads).
    pub id: String,
    /// True for member calls (`x.f(y)`): the receiver is the first parameter.
    pub is_member: bool,
    /// The parameter types, receiver first for member overloads; may use type parameters.
    pub params: Vec<Type>,
    /// The result type.
    pub result: Type,
    /// The implementation; `None` for declaration-only overloads (checked, not runnable).
    pub implementation: Option<Implementation>,
    /// Specialises the implementation to constant arguments when planning, if set.
    pub preparation: Option<Preparation>,
}

impl fmt::Debug for Overload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Overload")
            .field("id", &self.id)
            .field("is_member", &self.is_member)
            .field("params", &self.params)
            .field("result", &self.result)
            .field("implemented", &self.implementation.is_some())
            .field("prepared", &self.preparation.is_some())
            .finish()
    }
}

impl Overload {
    /// A global overload `f(params) -> result`.
    pub fn global(id: &str, params: &[Type], result: Type) -> Self {
        Overload {
            id: id.to_string(),
            is_member: false,
            params: params.to_vec(),
            result,
            implementation: None,
            preparation: None,
        }
    }

    /// A member overload `receiver.f(params) -> result`; `params` starts with the receiver.
    pub fn member(id: &str, params: &[Type], result: Type) -> Self {
        Overload {
            is_member: true,
            ..Overload::global(id, params, result)
        }
    }

    /// Attaches the implementation.
    #[must_use]
    pub fn with_impl(
        mut self,
        implementation: impl Fn(&[Value], &mut Budget) -> EvalResult<Value> + Send + Sync + 'static,
    ) -> Self {
        self.implementation = Some(Arc::new(implementation));
        self
    }

    /// Attaches an implementation shared with other overloads.
    #[must_use]
    pub fn with_shared_impl(mut self, implementation: &Implementation) -> Self {
        self.implementation = Some(implementation.clone());
        self
    }

    /// Attaches a preparation: a specialised implementation for constant arguments. It must
    /// give the same results and charge the same costs as the general implementation, except
    /// for work it has done once in advance (compiling a constant pattern).
    #[must_use]
    pub fn with_preparation(
        mut self,
        preparation: impl Fn(&[Option<&Value>]) -> Option<Implementation> + Send + Sync + 'static,
    ) -> Self {
        self.preparation = Some(Arc::new(preparation));
        self
    }

    /// Whether the runtime arguments fit this overload's parameter kinds.
    pub(crate) fn accepts(&self, args: &[Value]) -> bool {
        self.params.len() == args.len()
            && self
                .params
                .iter()
                .zip(args)
                .all(|(param, arg)| runtime_kind_matches(param, arg))
    }
}

/// Whether a runtime value can be an argument for a parameter of type `param`.
fn runtime_kind_matches(param: &Type, value: &Value) -> bool {
    match (param, value) {
        (Type::Dyn | Type::Param(_) | Type::Error, _) => true,
        (Type::Null, Value::Null) => true,
        (Type::Bool, Value::Bool(_)) => true,
        (Type::Int, Value::Int(_)) => true,
        (Type::Uint, Value::Uint(_)) => true,
        (Type::Double, Value::Double(_)) => true,
        (Type::String, Value::String(_)) => true,
        (Type::Bytes, Value::Bytes(_)) => true,
        (Type::Timestamp, Value::Timestamp(_)) => true,
        (Type::Duration, Value::Duration(_)) => true,
        (Type::List(_), Value::List(_)) => true,
        (Type::Map(_, _) | Type::Object(_), Value::Map(_)) => true,
        (Type::Object(_), Value::Null) => true,
        (Type::Optional(_), Value::Optional(_)) => true,
        (Type::Type(_), Value::Type(_)) => true,
        (Type::Opaque(name, _), Value::Opaque(value)) => value.type_name() == name.as_ref(),
        _ => false,
    }
}

/// A function: a name and its overloads.
#[derive(Debug, Clone)]
pub struct Function {
    /// The name, possibly qualified (`optional.of`, `base64.encode`).
    pub name: String,
    /// The overloads; their ids are unique across the environment.
    pub overloads: Vec<Overload>,
}

impl Function {
    /// A function with no overloads yet.
    pub fn new(name: &str) -> Self {
        Function {
            name: name.to_string(),
            overloads: Vec::new(),
        }
    }

    /// Adds an overload.
    #[must_use]
    pub fn overload(mut self, overload: Overload) -> Self {
        self.overloads.push(overload);
        self
    }
}

/// An object type a library defines, such as kro's `kro.run.Condition`: a name the checker
/// knows the fields of. Values of the type are maps at run time, like every object.
#[derive(Debug, Clone, PartialEq)]
pub struct ObjectType {
    /// The fully qualified type name.
    pub name: String,
    /// The fields and their types.
    pub fields: Vec<(String, Type)>,
}

impl ObjectType {
    /// The type of `field`, when the type has it.
    pub fn field(&self, field: &str) -> Option<&Type> {
        self.fields
            .iter()
            .find(|(name, _)| name == field)
            .map(|(_, ty)| ty)
    }
}

/// A named set of functions an embedder enables together.
#[derive(Debug, Clone)]
pub struct Library {
    /// The library's name, for `kro eval --library` and error messages.
    pub name: &'static str,
    /// The functions it adds; overloads of existing functions are merged.
    pub functions: Vec<Function>,
    /// The type names it declares, usable as values in expressions (`type(x) == net.IP`),
    /// each with the type it denotes.
    pub types: Vec<(String, Type)>,
    /// The object types its functions return, so the checker can type field selections on
    /// them; usually empty.
    pub object_types: Vec<ObjectType>,
}

impl Library {
    /// A library of functions that declares no type names and defines no object types.
    pub fn new(name: &'static str, functions: Vec<Function>) -> Self {
        Library {
            name,
            functions,
            types: Vec::new(),
            object_types: Vec::new(),
        }
    }

    /// Declares an opaque type's name, so expressions can name the type
    /// (`type(ip('10.0.0.1')) == net.IP`).
    #[must_use]
    pub fn with_opaque_type(mut self, name: &str) -> Self {
        self.types.push((name.to_string(), Type::opaque(name)));
        self
    }
}
