//! The environment: declarations, implementations and limits; the front door for parsing,
//! checking and building programs.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use crate::ast::Ast;
use crate::checker::{self, CheckedAst, Declarations};
use crate::cost::DEFAULT_COST_LIMIT;
use crate::error::{CheckError, CompileError, ParseError};
use crate::functions::{Function, Library, ObjectType};
use crate::interpreter::Program;
use crate::parser::{self, ParserConfig};
use crate::types::{FieldLookup, Type, TypeProvider, builtin_type};

/// Everything needed to compile and run expressions: variables and their types, functions
/// with their overloads and implementations, object types, the container for name
/// resolution, and limits. Cheap to clone; build once, share, and compile many expressions.
#[derive(Clone)]
pub struct Env {
    functions: Arc<HashMap<String, Function>>,
    variables: Arc<HashMap<String, Type>>,
    types: Arc<HashMap<String, Type>>,
    object_types: Arc<HashMap<String, ObjectType>>,
    provider: Option<Arc<dyn TypeProvider>>,
    container: String,
    parser_config: ParserConfig,
    cost_limit: Option<u64>,
    max_check_errors: usize,
    libraries: Vec<&'static str>,
}

impl fmt::Debug for Env {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut variables: Vec<_> = self.variables.keys().collect();
        variables.sort();
        f.debug_struct("Env")
            .field("libraries", &self.libraries)
            .field("variables", &variables)
            .field("container", &self.container)
            .field("cost_limit", &self.cost_limit)
            .finish_non_exhaustive()
    }
}

impl Default for Env {
    fn default() -> Self {
        Env::standard()
    }
}

impl Env {
    /// An environment with no functions at all (not even operators).
    pub fn empty() -> Self {
        Env {
            functions: Arc::new(HashMap::new()),
            variables: Arc::new(HashMap::new()),
            types: Arc::new(HashMap::new()),
            object_types: Arc::new(HashMap::new()),
            provider: None,
            container: String::new(),
            parser_config: ParserConfig::default(),
            cost_limit: Some(DEFAULT_COST_LIMIT),
            max_check_errors: 20,
            libraries: Vec::new(),
        }
    }

    /// The standard environment: every function of the CEL specification, plus optional types.
    pub fn standard() -> Self {
        Env::empty()
            .with_library(crate::stdlib::library())
            .with_library(crate::stdlib::optionals::library())
    }

    /// The environment kro uses: the standard library plus every library in
    /// [`KRO_LIBRARIES`](crate::KRO_LIBRARIES).
    pub fn kro() -> Self {
        crate::ext::KRO_LIBRARIES
            .iter()
            .filter_map(|name| crate::ext::library(name))
            .fold(Env::standard(), Env::with_library)
    }

    /// Adds a library's functions (merging overloads into existing functions), the type
    /// names it declares and its object types.
    #[must_use]
    pub fn with_library(mut self, library: Library) -> Self {
        for function in library.functions {
            self = self.with_function(function);
        }
        if !library.types.is_empty() {
            Arc::make_mut(&mut self.types).extend(library.types);
        }
        if !library.object_types.is_empty() {
            let object_types = Arc::make_mut(&mut self.object_types);
            for object_type in library.object_types {
                object_types.insert(object_type.name.clone(), object_type);
            }
        }
        self.libraries.push(library.name);
        self
    }

    /// Adds a function, or more overloads of an existing one. An overload whose id already
    /// exists replaces the old one.
    #[must_use]
    pub fn with_function(mut self, function: Function) -> Self {
        let functions = Arc::make_mut(&mut self.functions);
        match functions.get_mut(&function.name) {
            Some(existing) => {
                for overload in function.overloads {
                    existing.overloads.retain(|old| old.id != overload.id);
                    existing.overloads.push(overload);
                }
            }
            None => {
                functions.insert(function.name.clone(), function);
            }
        }
        self
    }

    /// Declares a variable.
    #[must_use]
    pub fn with_variable(mut self, name: &str, ty: Type) -> Self {
        Arc::make_mut(&mut self.variables).insert(name.to_string(), ty);
        self
    }

    /// Supplies object types for field selection and message literals.
    #[must_use]
    pub fn with_type_provider(mut self, provider: Arc<dyn TypeProvider>) -> Self {
        self.provider = Some(provider);
        self
    }

    /// Sets the container (namespace) that unqualified names are resolved in.
    #[must_use]
    pub fn with_container(mut self, container: &str) -> Self {
        self.container = container.to_string();
        self
    }

    /// Sets the parser's limits and switches.
    #[must_use]
    pub fn with_parser_config(mut self, config: ParserConfig) -> Self {
        self.parser_config = config;
        self
    }

    /// Sets the cost budget of each evaluation; `None` disables the limit.
    #[must_use]
    pub fn with_cost_limit(mut self, limit: Option<u64>) -> Self {
        self.cost_limit = limit;
        self
    }

    /// Sets how many type errors are reported before the checker stops listing them.
    #[must_use]
    pub fn with_max_check_errors(mut self, limit: usize) -> Self {
        self.max_check_errors = limit.max(1);
        self
    }

    /// Parses an expression.
    ///
    /// # Errors
    /// A [`ParseError`] with the position of the problem.
    pub fn parse(&self, text: &str) -> Result<Ast, ParseError> {
        parser::parse_with(text, &self.parser_config)
    }

    /// Type-checks a parsed expression.
    ///
    /// # Errors
    /// A [`CheckError`] listing every problem found (up to the configured cap).
    pub fn check(&self, ast: &Ast) -> Result<CheckedAst, CheckError> {
        checker::check(self, ast)
    }

    /// Parses, checks and plans an expression.
    ///
    /// # Errors
    /// A [`CompileError`] from parsing or checking.
    pub fn compile(&self, text: &str) -> Result<Program, CompileError> {
        let ast = self.parse(text)?;
        let checked = self.check(&ast)?;
        Ok(self.program(&checked))
    }

    /// Plans a checked expression for evaluation.
    pub fn program(&self, checked: &CheckedAst) -> Program {
        Program::plan(self, self.cost_limit, &checked.ast, Some(checked))
    }

    /// Plans an expression that was parsed but not checked; names and overloads are resolved
    /// at run time.
    pub fn program_unchecked(&self, ast: &Ast) -> Program {
        Program::plan(self, self.cost_limit, ast, None)
    }

    /// The declared type of a variable (by its fully qualified name).
    pub fn variable(&self, name: &str) -> Option<&Type> {
        self.variables.get(name)
    }

    /// A function by its fully qualified name.
    pub fn function(&self, name: &str) -> Option<&Function> {
        self.functions.get(name)
    }

    /// The object-type provider, if any.
    pub fn type_provider(&self) -> Option<&dyn TypeProvider> {
        self.provider.as_deref()
    }

    /// The type of `field` on the object type `type_name`: from the enabled libraries' object
    /// types (such as `kro.run.Condition`), else from the type provider.
    pub fn field_type(&self, type_name: &str, field: &str) -> FieldLookup {
        if let Some(object_type) = self.object_types.get(type_name) {
            return object_type
                .field(field)
                .map_or(FieldLookup::NoSuchField, |ty| {
                    FieldLookup::Found(ty.clone())
                });
        }
        self.provider
            .as_ref()
            .map_or(FieldLookup::NoSuchField, |provider| {
                provider.field_type(type_name, field)
            })
    }

    /// The container names are resolved in.
    pub fn container(&self) -> &str {
        &self.container
    }

    /// The cost budget of each evaluation.
    pub fn cost_limit(&self) -> Option<u64> {
        self.cost_limit
    }

    /// The cap on reported type errors.
    pub fn max_check_errors(&self) -> usize {
        self.max_check_errors
    }

    /// The names of the enabled libraries.
    pub fn libraries(&self) -> &[&'static str] {
        &self.libraries
    }

    /// The fully qualified names `name` may refer to, most specific first: with container
    /// `a.b`, `x` may be `a.b.x`, `a.x` or `x`. A leading dot means only the root.
    pub fn candidate_names(&self, name: &str) -> Vec<String> {
        if let Some(rooted) = name.strip_prefix('.') {
            return vec![rooted.to_string()];
        }
        let mut candidates = Vec::new();
        let mut container = self.container.as_str();
        while !container.is_empty() {
            candidates.push(format!("{container}.{name}"));
            container = container.rsplit_once('.').map_or("", |(parent, _)| parent);
        }
        candidates.push(name.to_string());
        candidates
    }

    /// The type a type name denotes: a built-in type, a type declared by an enabled library,
    /// or one of the provider's object types.
    pub fn lookup_type_name(&self, name: &str) -> Option<(String, Type)> {
        for candidate in self.candidate_names(name) {
            if let Some(ty) = builtin_type(&candidate) {
                return Some((candidate, ty));
            }
            if let Some(ty) = self.types.get(&candidate) {
                let ty = ty.clone();
                return Some((candidate, ty));
            }
            if self
                .provider
                .as_ref()
                .is_some_and(|provider| provider.has_type(&candidate))
            {
                let ty = Type::object(&candidate);
                return Some((candidate, ty));
            }
        }
        None
    }
}

impl Declarations for Env {
    fn variable(&self, name: &str) -> Option<&Type> {
        Env::variable(self, name)
    }

    fn function(&self, name: &str) -> Option<&Function> {
        Env::function(self, name)
    }

    fn type_provider(&self) -> Option<&dyn TypeProvider> {
        Env::type_provider(self)
    }

    fn field_type(&self, type_name: &str, field: &str) -> FieldLookup {
        Env::field_type(self, type_name, field)
    }

    fn lookup_type_name(&self, name: &str) -> Option<(String, Type)> {
        Env::lookup_type_name(self, name)
    }

    fn container(&self) -> &str {
        Env::container(self)
    }

    fn candidate_names(&self, name: &str) -> Vec<String> {
        Env::candidate_names(self, name)
    }

    fn max_check_errors(&self) -> usize {
        Env::max_check_errors(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::functions::Overload;
    use crate::value::Value;

    #[test]
    fn library_type_names_resolve_as_type_values() {
        let library = Library::new(
            "widgets",
            vec![Function::new("widget").overload(Overload::global(
                "widget",
                &[],
                Type::opaque("acme.Widget"),
            ))],
        )
        .with_opaque_type("acme.Widget");
        let env = Env::standard().with_library(library);
        assert_eq!(
            env.lookup_type_name("acme.Widget"),
            Some(("acme.Widget".to_string(), Type::opaque("acme.Widget")))
        );
        let program = env
            .compile("acme.Widget")
            .expect("a declared type name checks");
        assert_eq!(
            program.evaluate(&crate::NoVariables).expect("evaluates"),
            Value::Type(Arc::from("acme.Widget"))
        );
    }

    #[test]
    fn undeclared_type_names_do_not_resolve() {
        let env = Env::standard();
        assert_eq!(env.lookup_type_name("acme.Widget"), None);
        assert!(env.compile("acme.Widget").is_err());
    }
}
