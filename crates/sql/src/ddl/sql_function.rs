//! PostgreSQL's SQL-language functions: `CREATE [OR REPLACE] FUNCTION name(args) RETURNS type
//! LANGUAGE sql AS 'SELECT ...'` (or `$$...$$`, or `RETURN expression`) and `DROP FUNCTION`.
//!
//! A call evaluates its arguments, then runs the body with each parameter (by name or `$n`)
//! replaced by its value, as a scalar subquery (or the expression) cast to the return type, in
//! the calling statement's executor: the body sees the statement's own writes, and names in it
//! cannot be captured by the caller's columns. `STRICT` functions give NULL for a NULL argument. Built-in functions take precedence over
//! user functions of the same name, as `pg_catalog` comes first in PostgreSQL's search path.

use crate::bind::{Binder, Scope};
use sqlparser::ast::{self, VisitMut, VisitorMut};
use std::cell::Cell;
use std::ops::ControlFlow;
use std::sync::Arc;
use tern_exec::catalog::Catalog;
use tern_exec::catalog::objects::FunctionDef;
use tern_exec::error::{Error, Result};
use tern_exec::exec::{Env, Executor};
use tern_exec::plan::Expr;
use tern_exec::value::Value;

/// How deep SQL functions may call each other (a recursive function stops here).
const MAX_CALL_DEPTH: usize = 32;

thread_local! {
    static CALL_DEPTH: Cell<usize> = const { Cell::new(0) };
}

/// CREATE FUNCTION: false when it existed and IF NOT EXISTS was given.
pub fn create(catalog: &mut Catalog, create: &ast::CreateFunction) -> Result<bool> {
    let name = crate::bind::object_name(&create.name)?.to_ascii_lowercase();
    if let Some(language) = &create.language
        && !language.value.eq_ignore_ascii_case("sql")
    {
        return Err(Error::unsupported(format!("functions in language {} (SQL functions only)", language.value)));
    }
    let return_type = match &create.return_type {
        Some(ast::DataType::Custom(name, _)) if name.to_string().eq_ignore_ascii_case("trigger") => {
            return Err(Error::unsupported("trigger functions (use CREATE TRIGGER ... BEGIN ... END)"));
        }
        Some(ast::DataType::Table(_)) => return Err(Error::unsupported("functions returning a table")),
        Some(data_type) if data_type.to_string().to_ascii_uppercase().starts_with("SETOF") => {
            return Err(Error::unsupported("functions returning SETOF"));
        }
        Some(data_type) => data_type.to_string(),
        None => return Err(Error::new("42P13", "function result type must be specified")),
    };
    let mut params = Vec::new();
    for arg in create.args.iter().flatten() {
        if matches!(arg.mode, Some(ast::ArgMode::Out | ast::ArgMode::InOut)) {
            return Err(Error::unsupported("OUT parameters"));
        }
        if arg.default_expr.is_some() {
            return Err(Error::unsupported("parameter defaults"));
        }
        params.push((arg.name.as_ref().map(|name| name.value.to_ascii_lowercase()), arg.data_type.to_string()));
    }
    let (body, body_is_query) = body_of(create.function_body.as_ref())?;
    let strict = matches!(
        create.called_on_null,
        Some(ast::FunctionCalledOnNull::Strict | ast::FunctionCalledOnNull::ReturnsNullOnNullInput)
    );
    if tern_exec::functions::ScalarFunction::lookup(&name).is_some() {
        return Err(Error::duplicate_object(format!("function {name} is built in")));
    }
    if catalog.functions.contains_key(&name) && !create.or_replace {
        if create.if_not_exists {
            return Ok(false);
        }
        return Err(Error::new("42723", format!("function \"{name}\" already exists")));
    }
    let def = FunctionDef { name: name.clone(), params, return_type, body, body_is_query, strict };
    catalog.functions.insert(name, Arc::new(def));
    Ok(true)
}

/// The body's text: one SELECT given as a string, or `RETURN expression`.
fn body_of(body: Option<&ast::CreateFunctionBody>) -> Result<(String, bool)> {
    let text = match body {
        Some(ast::CreateFunctionBody::Return(expr)) => return Ok((expr.to_string(), false)),
        Some(ast::CreateFunctionBody::AsBeforeOptions(expr) | ast::CreateFunctionBody::AsAfterOptions(expr)) => {
            match expr {
                ast::Expr::Value(value) => match &value.value {
                    ast::Value::SingleQuotedString(text) => text.clone(),
                    ast::Value::DollarQuotedString(quoted) => quoted.value.clone(),
                    other => return Err(Error::syntax(format!("a function body must be a string, not {other}"))),
                },
                other => return Err(Error::syntax(format!("a function body must be a string, not {other}"))),
            }
        }
        Some(
            ast::CreateFunctionBody::AsBeginEnd(_)
            | ast::CreateFunctionBody::AsReturnExpr(_)
            | ast::CreateFunctionBody::AsReturnSelect(_),
        ) => return Err(Error::unsupported("this form of function body (SQL functions take AS '...' or RETURN)")),
        None => return Err(Error::new("42P13", "no function body specified")),
    };
    let statements = crate::session::parse(&text)?;
    match statements.as_slice() {
        [ast::Statement::Query(_)] => Ok((text.trim().trim_end_matches(';').to_string(), true)),
        _ => Err(Error::unsupported("SQL function bodies other than one SELECT")),
    }
}

/// DROP FUNCTION: false when a function was missing and IF EXISTS was given.
pub fn drop(catalog: &mut Catalog, names: &[ast::FunctionDesc], if_exists: bool) -> Result<bool> {
    let mut dropped = false;
    for desc in names {
        let name = crate::bind::object_name(&desc.name)?.to_ascii_lowercase();
        match catalog.functions.remove(&name) {
            Some(_) => dropped = true,
            None if if_exists => {}
            None => return Err(Error::new("42883", format!("function {name} does not exist"))),
        }
    }
    Ok(dropped)
}

impl Binder<'_> {
    /// A call of a SQL function: checked against its parameters, run by the executor
    /// ([`call`]) with the arguments' values.
    pub(crate) fn bind_sql_function_call(
        &mut self,
        def: &FunctionDef,
        args: &[&ast::Expr],
        scope: &Scope,
    ) -> Result<Expr> {
        if args.len() != def.params.len() {
            return Err(Error::new(
                "42883",
                format!("function {}() takes {} arguments, not {}", def.name, def.params.len(), args.len()),
            ));
        }
        let mut bound = vec![Expr::Literal(Value::Text(def.name.clone()))];
        for arg in args {
            bound.push(self.bind_expr(arg, scope)?);
        }
        Ok(Expr::Function(tern_exec::functions::ScalarFunction::SqlFunction, bound))
    }
}

/// Runs a SQL function on its arguments' values in the calling statement's executor: the body
/// with each parameter replaced by its value, cast to the return type; a query's first row's
/// first value (NULL without rows).
pub fn call(exec: &Executor, name: &str, values: &[Value]) -> Result<Value> {
    let catalog = exec.catalog().ok_or_else(|| Error::internal("a SQL function call without a catalog"))?;
    let def = catalog.functions.get(name).ok_or_else(|| Error::undefined_function(name))?;
    if def.strict && values.iter().any(Value::is_null) {
        return Ok(Value::Null);
    }
    let depth = CALL_DEPTH.with(Cell::get);
    if depth >= MAX_CALL_DEPTH {
        return Err(Error::program_limit(format!("SQL functions nested more than {MAX_CALL_DEPTH} deep")));
    }
    let mut body = if def.body_is_query {
        ast::Expr::Subquery(Box::new(crate::bind::parse_query(&def.body)?))
    } else {
        crate::bind::parse_expr(&def.body)?
    };
    // Each argument as its parameter's declared type (`half(5)` of a numeric parameter is 2.5).
    let literals = values
        .iter()
        .zip(&def.params)
        .map(|(value, (_, declared))| crate::bind::cast_to(crate::bind::parse_expr(&value.sql_literal())?, declared))
        .collect::<Result<Vec<_>>>()?;
    let _ = body.visit(&mut Parameters { def, args: &literals });
    let call = crate::bind::cast_to(ast::Expr::Nested(Box::new(body)), &def.return_type)?;
    let _depth = Depth::enter(depth);
    let mut binder = Binder::new(catalog).with_dialect(exec.dialect());
    let bound = binder.bind_expr(&call, &Scope::new(Vec::new(), None))?;
    exec.seeing_own_writes(|| exec.eval(&bound, &Env::new(&[], None)))
}

/// One level of SQL function calls, given back when dropped (a panic included).
struct Depth(usize);

impl Depth {
    fn enter(depth: usize) -> Depth {
        CALL_DEPTH.with(|calls| calls.set(depth + 1));
        Depth(depth)
    }
}

impl Drop for Depth {
    fn drop(&mut self) {
        CALL_DEPTH.with(|calls| calls.set(self.0));
    }
}

/// Replaces a SQL function's parameters in its body by the call's arguments.
struct Parameters<'a> {
    def: &'a FunctionDef,
    args: &'a [ast::Expr],
}

impl VisitorMut for Parameters<'_> {
    type Break = ();

    fn post_visit_expr(&mut self, expr: &mut ast::Expr) -> ControlFlow<()> {
        let index = match expr {
            ast::Expr::Identifier(ident) if ident.quote_style.is_none() => {
                let name = ident.value.to_ascii_lowercase();
                self.def.params.iter().position(|(param, _)| param.as_deref() == Some(name.as_str()))
            }
            ast::Expr::Value(value) => match &value.value {
                ast::Value::Placeholder(text) => text
                    .strip_prefix('$')
                    .and_then(|digits| digits.parse::<usize>().ok())
                    .and_then(|n| n.checked_sub(1)),
                _ => None,
            },
            _ => None,
        };
        if let Some(index) = index
            && let Some(arg) = self.args.get(index)
        {
            *expr = ast::Expr::Nested(Box::new(arg.clone()));
        }
        ControlFlow::Continue(())
    }
}
