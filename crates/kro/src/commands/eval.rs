//! `kro eval 'EXPR' [--var name=JSON]... [--check]`: evaluate one CEL expression in kro's CEL
//! environment, as RGD templates would, and print the result as JSON.

use std::process::ExitCode;

use anyhow::{Context, bail};
use kro_cel::{Env, Type, Value};

/// Flags of `kro eval`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The CEL expression. It may begin with `-` (`kro eval '-7 / 2'`); flags go before it or
    /// after it, and `--` ends the flags.
    #[arg(allow_hyphen_values = true)]
    expression: String,
    /// Binds a variable: NAME=JSON, for example `--var 'spec={"replicas":3}'`. Repeatable.
    #[arg(long = "var", value_name = "NAME=JSON")]
    variables: Vec<String>,
    /// Print the expression's checked type instead of evaluating it.
    #[arg(long)]
    check: bool,
    /// The evaluation's cost budget; 0 disables the limit.
    #[arg(long, value_name = "UNITS", default_value_t = kro_cel::DEFAULT_COST_LIMIT)]
    cost_limit: u64,
}

/// Parses, checks and evaluates the expression; prints JSON or a positioned error.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let Args {
        expression,
        variables,
        check,
        cost_limit,
    } = args;
    let mut env = Env::kro().with_cost_limit((cost_limit > 0).then_some(cost_limit));
    let mut bindings = Vec::with_capacity(variables.len());
    for variable in &variables {
        let (name, json) = variable
            .split_once('=')
            .with_context(|| format!("--var {variable:?}: expected NAME=JSON"))?;
        if name.is_empty() {
            bail!("--var {variable:?}: the variable name is empty");
        }
        let json: serde_json::Value = serde_json::from_str(json)
            .with_context(|| format!("--var {name}: the value is not valid JSON"))?;
        let value = kro_cel::from_json(&json, None, None)
            .with_context(|| format!("--var {name}: the value cannot be a CEL value"))?;
        env = env.with_variable(name, type_of_json(&json));
        bindings.push((name.to_string(), value));
    }
    let program = match env.compile(&expression) {
        Ok(program) => program,
        Err(error) => {
            eprintln!("{error}");
            return Ok(ExitCode::FAILURE);
        }
    };
    if check {
        let output = program.output_type().cloned().unwrap_or(Type::Dyn);
        println!("{output}");
        return Ok(ExitCode::SUCCESS);
    }
    let activation: std::collections::HashMap<String, Value> = bindings.into_iter().collect();
    match program.evaluate(&activation) {
        Ok(value) => {
            let json = kro_cel::to_json(&value).context("the result has no JSON form")?;
            println!("{json}");
            Ok(ExitCode::SUCCESS)
        }
        Err(error) => {
            let offset = error.span().map_or(0, |span| span.start);
            let location = program.source().location(offset);
            eprintln!(
                "ERROR: <input>:{location}: {error}\n{}",
                program.source().snippet(offset)
            );
            Ok(ExitCode::FAILURE)
        }
    }
}

/// The type a `--var` value is declared with: exact for scalars, `dyn` inside containers (a
/// JSON value does not say what other values of its kind may hold).
fn type_of_json(json: &serde_json::Value) -> Type {
    match json {
        serde_json::Value::Null => Type::Dyn,
        serde_json::Value::Bool(_) => Type::Bool,
        serde_json::Value::Number(number) if number.is_i64() => Type::Int,
        serde_json::Value::Number(_) => Type::Double,
        serde_json::Value::String(_) => Type::String,
        serde_json::Value::Array(_) => Type::list(Type::Dyn),
        serde_json::Value::Object(_) => Type::map(Type::String, Type::Dyn),
    }
}
