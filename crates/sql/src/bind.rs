//! The binder and planner: turns sqlparser's syntax tree into a [`Plan`], resolving names
//! against the catalog, pushing predicates down to table scans, choosing primary-key or index
//! access, ordering inner joins greedily along equality predicates (hash joins), and planning
//! aggregation, sorting and set operations.

use crate::optimizer::{self, decorrelate, or_factor, prune};
use crate::window::bind::extract_windows;
use sqlparser::ast;
use sqlparser::ast::Spanned;
use std::cell::Cell;
use std::collections::HashMap;
use std::sync::Arc;
use tern_exec::catalog::{Catalog, IndexDef, TableDef};
use tern_exec::dialect::Dialect;
use tern_exec::error::{Error, Result};
use tern_exec::functions::ScalarFunction;
use tern_exec::plan::*;
use tern_exec::value::{Affinity, Value};

use tern_exec::limits::MAX_QUERY_DEPTH;

/// One column visible to expressions.
#[derive(Debug, Clone)]
pub struct ScopeColumn {
    /// Lower-case name of the table (or alias) it comes from.
    pub table: Option<String>,
    pub name: String,
    pub affinity: Option<Affinity>,
    /// Hidden from unqualified lookups and `*` (the right column of a USING/NATURAL pair).
    pub merged: bool,
    /// A system column (`tableoid` of a catalog relation): found by name, left out of `*`.
    pub system: bool,
}

/// The columns of one query level, and the enclosing level's scope.
pub struct Scope<'p> {
    pub columns: Vec<ScopeColumn>,
    pub parent: Option<&'p Scope<'p>>,
    /// Set when an expression of this level (or below) reads an enclosing level's column.
    correlated: Cell<bool>,
}

impl<'p> Scope<'p> {
    pub fn new(columns: Vec<ScopeColumn>, parent: Option<&'p Scope<'p>>) -> Scope<'p> {
        Scope { columns, parent, correlated: Cell::new(false) }
    }

    fn find(&self, table: Option<&str>, name: &str) -> Result<Option<usize>> {
        let mut found = None;
        for (index, column) in self.columns.iter().enumerate() {
            let table_matches = match table {
                Some(table) => column.table.as_deref() == Some(table),
                None => !column.merged,
            };
            if table_matches && column.name == name {
                if found.is_some() {
                    return Err(Error::ambiguous_column(name));
                }
                found = Some(index);
            }
        }
        Ok(found)
    }
}

/// A column of a query's output.
#[derive(Debug, Clone)]
pub struct OutputColumn {
    pub name: String,
    pub affinity: Option<Affinity>,
}

struct CteDef {
    query: ast::Query,
    columns: Vec<String>,
    /// Declared in `WITH RECURSIVE` with a UNION body: it may refer to itself.
    recursive: bool,
}

/// A recursive CTE's own name while its step is bound.
struct WorkingTable {
    name: String,
    id: usize,
    columns: Vec<OutputColumn>,
    /// Whether the step referred to it (if not, the CTE is a plain UNION).
    used: Cell<bool>,
    /// Pushed while the anchor is bound, where a reference is an error.
    in_anchor: bool,
    /// The binder's query depth of the step: a reference from deeper (a subquery) is refused,
    /// as in SQLite (its rows would be cached across rounds).
    depth: usize,
}

/// Binds statements against one catalog.
pub struct Binder<'c> {
    pub catalog: &'c Catalog,
    ctes: Vec<HashMap<String, Arc<CteDef>>>,
    working_tables: Vec<WorkingTable>,
    /// Queries (subqueries, views, CTEs) being bound, one inside the other.
    depth: usize,
    /// Expressions being bound, one inside the other (counted on through subqueries).
    expression_depth: usize,
    /// Highest parameter number seen (1-based), and named parameters in order of appearance.
    pub parameter_count: usize,
    pub named_parameters: Vec<String>,
    /// The WINDOW clause of the SELECT being bound.
    pub(crate) named_windows: Vec<ast::NamedWindowDefinition>,
    /// Why a window function may not appear where expressions are being bound (SQLSTATE and
    /// message); `None` where it may (a select list, an ORDER BY).
    pub(crate) window_refusal: Option<(&'static str, &'static str)>,
    /// Window calls bound so far (a query without any skips lifting them out).
    pub(crate) window_calls: usize,
    /// Set-returning calls bound so far: a select list only looks for them to move into a
    /// ProjectSet when it bound one.
    set_returning_calls: usize,
    /// NULL ordering and LIKE differ by dialect.
    pub(crate) dialect: tern_exec::dialect::Dialect,
}

const WINDOWS_NOT_HERE: Option<(&str, &str)> = Some(("42P20", "window functions are not allowed here"));

/// The scope columns of a table's row, qualified by `qualifier` (lower case).
pub fn table_columns(table: &TableDef, qualifier: &str) -> Vec<ScopeColumn> {
    table
        .columns
        .iter()
        .map(|column| ScopeColumn {
            table: Some(qualifier.to_string()),
            name: column.name.to_ascii_lowercase(),
            affinity: Some(column.affinity),
            merged: false,
            system: false,
        })
        .collect()
}

pub fn lower(ident: &ast::Ident) -> String {
    ident.value.to_ascii_lowercase()
}

/// The last part of an object name, lower-cased (schemas are ignored: `main.t` is `t`).
pub fn object_name(name: &ast::ObjectName) -> Result<String> {
    match name.0.last() {
        Some(ast::ObjectNamePart::Identifier(ident)) => Ok(lower(ident)),
        _ => Err(Error::syntax(format!("bad name {name}"))),
    }
}

/// The schema part of a qualified name (`pg_catalog` of `pg_catalog.pg_class`), lower case.
fn schema_name(name: &ast::ObjectName) -> Option<String> {
    match name.0.len().checked_sub(2).map(|at| &name.0[at]) {
        Some(ast::ObjectNamePart::Identifier(ident)) => Some(lower(ident)),
        _ => None,
    }
}

thread_local! {
    /// Set while a view's columns are computed for the system catalog: a view over the catalog
    /// would otherwise list itself again, without end.
    static LISTING_VIEW_COLUMNS: Cell<bool> = const { Cell::new(false) };
}

/// A view's column names and affinities, found by binding its query (empty if it no longer
/// binds, or while another view's columns are being computed).
fn view_output_columns(catalog: &Catalog, view: &tern_exec::catalog::ViewDef) -> Vec<(String, Option<Affinity>)> {
    if LISTING_VIEW_COLUMNS.with(Cell::get) {
        return Vec::new();
    }
    LISTING_VIEW_COLUMNS.with(|listing| listing.set(true));
    let bound = parse_query(&view.query).and_then(|query| Binder::new(catalog).bind_query(&query, None));
    LISTING_VIEW_COLUMNS.with(|listing| listing.set(false));
    let Ok((_, columns)) = bound else { return Vec::new() };
    columns
        .into_iter()
        .enumerate()
        .map(|(position, column)| (view.columns.get(position).cloned().unwrap_or(column.name), column.affinity))
        .collect()
}

/// `CAST(expr AS type_name)` as the parser would read it (a stored type name: a domain's base
/// type, a SQL function's parameter or result type).
pub fn cast_to(expr: ast::Expr, type_name: &str) -> Result<ast::Expr> {
    match parse_expr(&format!("CAST(NULL AS {type_name})"))? {
        ast::Expr::Cast { data_type, .. } => {
            Ok(ast::Expr::Cast { kind: ast::CastKind::Cast, expr: Box::new(expr), data_type, format: None })
        }
        _ => Err(Error::syntax(format!("bad type name {type_name}"))),
    }
}

/// Parses and binds an expression with no columns (a DEFAULT).
pub fn bind_standalone_expr(sql: &str) -> Result<Expr> {
    let expr = parse_expr(sql)?;
    let catalog = Catalog::new();
    let mut binder = Binder::new(&catalog);
    binder.bind_expr(&expr, &Scope::new(Vec::new(), None))
}

/// The affinity of a declared type; an out-of-range DECIMAL precision is an error.
pub fn affinity_of_type(data_type: &ast::DataType) -> Result<Affinity> {
    affinity_of_type_in(data_type, Dialect::Sqlite)
}

/// [`affinity_of_type`] in a dialect (PostgreSQL's typed columns and casts in postgres).
pub fn affinity_of_type_in(data_type: &ast::DataType, dialect: Dialect) -> Result<Affinity> {
    let name = data_type.to_string();
    tern_exec::types::decimal::declared_precision(&name)?;
    Ok(Affinity::of_declared_type_in(&name, dialect))
}

/// The affinity a column lends the other side of a comparison: its own for PostgreSQL's typed
/// columns, NUMERIC for numbers.
fn comparison_affinity(affinity: Affinity) -> Affinity {
    match affinity {
        Affinity::Boolean
        | Affinity::Temporal(_)
        | Affinity::Enum(_)
        | Affinity::Composite(_)
        | Affinity::Bytea
        | Affinity::Uuid
        | Affinity::Json(_) => affinity,
        affinity if affinity.is_numeric() => Affinity::Numeric,
        affinity => affinity,
    }
}

/// A literal compared with a value of `affinity`, converted to it; text that is no label of an
/// enum is an error there (22P02), as in PostgreSQL.
fn comparison_literal(affinity: Affinity, value: Value) -> Result<Value> {
    match (affinity, &value) {
        (
            Affinity::Enum(_) | Affinity::Composite(_) | Affinity::Bytea | Affinity::Uuid,
            Value::Text(_) | Value::Record(_),
        ) => affinity.store(value),
        _ => Ok(affinity.apply(value)),
    }
}

/// 42883 unless a function `name` gets from `min` to `max` arguments.
fn check_arity(name: &str, given: usize, min: usize, max: usize) -> Result<()> {
    if given < min || given > max {
        return Err(Error::new("42883", format!("wrong number of arguments to function {name}()")));
    }
    Ok(())
}

/// `CASE key WHEN a THEN x ... END` (NULL when none matches): a catalog function bound to the
/// answers of the catalog the statement sees.
fn lookup(key: Expr, pairs: Vec<(Expr, Expr)>) -> Expr {
    Expr::Case { operand: Some(Box::new(key)), whens: pairs, otherwise: None }
}

/// `result`, or NULL when `argument` is NULL: a strict catalog function.
fn strict(argument: Expr, result: Expr) -> Expr {
    Expr::Case {
        operand: None,
        whens: vec![(Expr::IsNull(Box::new(argument), false), Expr::Literal(Value::Null))],
        otherwise: Some(Box::new(result)),
    }
}

fn text(value: &str) -> Expr {
    Expr::Literal(Value::Text(value.to_string()))
}

fn integer(value: i64) -> Expr {
    Expr::Literal(Value::Integer(value))
}

struct Relation {
    plan: Plan,
    width: usize,
    offset: usize,
}

/// A conjunct of a WHERE clause with the relations it reads.
struct Conjunct {
    expr: Expr,
    relations: Vec<usize>,
}

impl<'c> Binder<'c> {
    pub fn new(catalog: &'c Catalog) -> Binder<'c> {
        Binder {
            catalog,
            ctes: Vec::new(),
            working_tables: Vec::new(),
            depth: 0,
            expression_depth: 0,
            parameter_count: 0,
            named_parameters: Vec::new(),
            named_windows: Vec::new(),
            window_refusal: WINDOWS_NOT_HERE,
            window_calls: 0,
            set_returning_calls: 0,
            dialect: tern_exec::dialect::Dialect::Sqlite,
        }
    }

    /// Binds as `dialect` speaks.
    pub fn with_dialect(mut self, dialect: tern_exec::dialect::Dialect) -> Binder<'c> {
        self.dialect = dialect;
        self
    }

    /// A fresh id for a subquery or a recursive CTE's working table (the executor's caches key
    /// by it). Ids are unique in the process, not just in one binder: a statement's triggers
    /// and SQL functions bind their own statements, run by the same executor.
    fn next_id(&self) -> usize {
        static NEXT_ID: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    }

    fn subquery(&mut self, query: &ast::Query, scope: &Scope) -> Result<Arc<Subquery>> {
        Ok(Arc::new(self.subquery_with_affinity(query, scope)?.0))
    }

    /// A subquery and the affinity of its first output column.
    fn subquery_with_affinity(&mut self, query: &ast::Query, scope: &Scope) -> Result<(Subquery, Option<Affinity>)> {
        let inner = Scope::new(Vec::new(), Some(scope));
        let (plan, columns) = self.bind_query_in(query, &inner)?;
        let id = self.next_id();
        let correlated = inner.correlated.get();
        let plan = if correlated { plan } else { prune::prune_columns(plan) };
        let affinity = columns.first().and_then(|column| column.affinity);
        Ok((Subquery { plan, correlated, id, row_affinity: None, group_row: None }, affinity))
    }

    // ---- queries ---------------------------------------------------------------------------

    /// Binds a query; `parent` is the enclosing query's scope (for correlated subqueries).
    pub fn bind_query(&mut self, query: &ast::Query, parent: Option<&Scope>) -> Result<(Plan, Vec<OutputColumn>)> {
        match parent {
            Some(parent) => {
                // The query's own scope chain starts at a level whose parent is `parent`.
                let holder = Scope::new(Vec::new(), Some(parent));
                let result = self.bind_query_in(query, &holder);
                if holder.correlated.get() {
                    parent.correlated.set(true);
                }
                result
            }
            None => {
                let (plan, columns) = self.bind_query_in(query, &Scope::new(Vec::new(), None))?;
                let plan = prune::prune_columns(plan);
                Ok((crate::optimizer::shared::share_repeated_subplans(plan, &mut || self.next_id()), columns))
            }
        }
    }

    /// Binds a query whose FROM scope will have `holder.parent` as parent. `holder` itself only
    /// records correlation.
    fn bind_query_in(&mut self, query: &ast::Query, holder: &Scope) -> Result<(Plan, Vec<OutputColumn>)> {
        self.depth += 1;
        if self.depth > MAX_QUERY_DEPTH {
            self.depth -= 1;
            return Err(Error::program_limit("queries are nested too deeply"));
        }
        let result = tern_exec::limits::with_stack(|| self.bind_query_body(query, holder));
        self.depth -= 1;
        result
    }

    fn bind_query_body(&mut self, query: &ast::Query, holder: &Scope) -> Result<(Plan, Vec<OutputColumn>)> {
        if query.fetch.is_some() || !query.locks.is_empty() || !query.pipe_operators.is_empty() {
            return Err(Error::unsupported("FETCH, locking clauses and pipe operators"));
        }
        let pushed_ctes = match &query.with {
            Some(with) => {
                let mut ctes = HashMap::new();
                for cte in &with.cte_tables {
                    let columns = cte.alias.columns.iter().map(|column| lower(&column.name)).collect();
                    let recursive = with.recursive
                        && matches!(
                            cte.query.body.as_ref(),
                            ast::SetExpr::SetOperation { op: ast::SetOperator::Union, .. }
                        );
                    ctes.insert(
                        lower(&cte.alias.name),
                        Arc::new(CteDef { query: (*cte.query).clone(), columns, recursive }),
                    );
                }
                self.ctes.push(ctes);
                true
            }
            None => false,
        };
        let result = self.bind_query_parts(query, holder);
        if pushed_ctes {
            self.ctes.pop();
        }
        result
    }

    fn bind_query_parts(&mut self, query: &ast::Query, holder: &Scope) -> Result<(Plan, Vec<OutputColumn>)> {
        let order_by: &[ast::OrderByExpr] = match &query.order_by {
            Some(ast::OrderBy { kind: ast::OrderByKind::Expressions(exprs), .. }) => exprs,
            Some(_) => return Err(Error::unsupported("ORDER BY ALL")),
            None => &[],
        };
        let (limit, offset) = match &query.limit_clause {
            None => (None, None),
            Some(ast::LimitClause::LimitOffset { limit, offset, limit_by }) => {
                if !limit_by.is_empty() {
                    return Err(Error::unsupported("LIMIT BY"));
                }
                (limit.clone(), offset.as_ref().map(|offset| offset.value.clone()))
            }
            Some(ast::LimitClause::OffsetCommaLimit { offset, limit }) => (Some(limit.clone()), Some(offset.clone())),
        };
        let empty = Scope::new(Vec::new(), holder.parent);
        let refusal = self.window_refusal.replace(("42P20", "window functions are not allowed in LIMIT or OFFSET"));
        let bound = limit
            .map(|limit| self.bind_expr(&limit, &empty))
            .transpose()
            .and_then(|limit| Ok((limit, offset.map(|offset| self.bind_expr(&offset, &empty)).transpose()?)));
        self.window_refusal = refusal;
        let (limit, offset) = bound?;
        if empty.correlated.get() {
            holder.correlated.set(true);
        }
        let sort_limit = match (&limit, &offset) {
            (Some(limit), None) => Some(Box::new(limit.clone())),
            // Top-k keeps LIMIT + OFFSET rows; a negative LIMIT is none and a negative OFFSET 0.
            (Some(limit), Some(offset)) => Some(Box::new(Expr::Case {
                operand: None,
                whens: vec![(
                    Expr::Binary(BinaryOp::Lt, Box::new(limit.clone()), Box::new(Expr::Literal(Value::Integer(0)))),
                    Expr::Literal(Value::Integer(-1)),
                )],
                otherwise: Some(Box::new(Expr::Binary(
                    BinaryOp::Add,
                    Box::new(limit.clone()),
                    Box::new(Expr::Function(
                        ScalarFunction::Max,
                        vec![offset.clone(), Expr::Literal(Value::Integer(0))],
                    )),
                ))),
            })),
            _ => None,
        };
        let (plan, columns) = match query.body.as_ref() {
            ast::SetExpr::Select(select) => self.bind_select(select, order_by, sort_limit, holder)?,
            body => {
                let (plan, columns) = self.bind_set_expr(body, holder)?;
                if order_by.is_empty() {
                    (plan, columns)
                } else {
                    let mut keys = Vec::new();
                    for term in order_by {
                        let index = self.output_position(&term.expr, &columns)?.ok_or_else(|| {
                            Error::syntax(format!(
                                "ORDER BY term {} does not match any column of the result",
                                term.expr
                            ))
                        })?;
                        keys.push(sort_key(Expr::Column(index), &term.options, self.dialect));
                    }
                    (Plan::Sort { input: Box::new(plan), keys, limit: sort_limit }, columns)
                }
            }
        };
        let plan = if limit.is_some() || offset.is_some() {
            Plan::Limit { input: Box::new(plan), limit, offset }
        } else {
            plan
        };
        Ok((plan, columns))
    }

    /// An ORDER BY term that names an output column: by number (1-based) or by name.
    fn output_position(&mut self, expr: &ast::Expr, columns: &[OutputColumn]) -> Result<Option<usize>> {
        match expr {
            ast::Expr::Value(ast::ValueWithSpan { value: ast::Value::Number(number, _), .. }) => {
                // A non-integer number is a constant expression, not a position.
                let Ok(position) = number.parse::<i64>() else { return Ok(None) };
                if position < 1 || position as usize > columns.len() {
                    return Err(Error::syntax(format!(
                        "ORDER BY term out of range - should be between 1 and {}",
                        columns.len()
                    )));
                }
                Ok(Some(position as usize - 1))
            }
            ast::Expr::Identifier(ident) => {
                Ok(columns.iter().position(|column| column.name.eq_ignore_ascii_case(&ident.value)))
            }
            ast::Expr::CompoundIdentifier(parts) => {
                let name = parts.last().map(lower).unwrap_or_default();
                Ok(columns.iter().position(|column| column.name.eq_ignore_ascii_case(&name)))
            }
            _ => Ok(None),
        }
    }

    fn bind_set_expr(&mut self, body: &ast::SetExpr, holder: &Scope) -> Result<(Plan, Vec<OutputColumn>)> {
        // A compound SELECT recurses once per term (at most MAX_COMPOUND_SELECT).
        tern_exec::limits::with_stack(|| self.bind_set_expr_inner(body, holder))
    }

    fn bind_set_expr_inner(&mut self, body: &ast::SetExpr, holder: &Scope) -> Result<(Plan, Vec<OutputColumn>)> {
        match body {
            ast::SetExpr::Select(select) => self.bind_select(select, &[], None, holder),
            ast::SetExpr::Query(query) => self.bind_query_in(query, holder),
            ast::SetExpr::Values(values) => {
                let scope = Scope::new(Vec::new(), holder.parent);
                let width = values.rows.first().map_or(0, Vec::len);
                let mut rows = Vec::new();
                let refusal = self.window_refusal.replace(("42P20", "window functions are not allowed in VALUES"));
                let mut bound = Ok(());
                for row in &values.rows {
                    if row.len() != width {
                        bound = Err(Error::syntax("all VALUES rows must have the same number of values"));
                        break;
                    }
                    match row.iter().map(|expr| self.bind_expr(expr, &scope)).collect::<Result<Vec<_>>>() {
                        Ok(row) => rows.push(row),
                        Err(error) => {
                            bound = Err(error);
                            break;
                        }
                    }
                }
                self.window_refusal = refusal;
                bound?;
                if scope.correlated.get() {
                    holder.correlated.set(true);
                }
                let columns =
                    (1..=width).map(|index| OutputColumn { name: format!("column{index}"), affinity: None }).collect();
                Ok((Plan::Values { rows, width }, columns))
            }
            ast::SetExpr::SetOperation { op, set_quantifier, left, right } => {
                let (left_plan, columns) = self.bind_set_expr(left, holder)?;
                let (right_plan, right_columns) = self.bind_set_expr(right, holder)?;
                if columns.len() != right_columns.len() {
                    return Err(Error::syntax(format!(
                        "SELECTs to the left and right of {op} do not have the same number of result columns"
                    )));
                }
                let op = match op {
                    ast::SetOperator::Union => SetOperator::Union,
                    ast::SetOperator::Intersect => SetOperator::Intersect,
                    ast::SetOperator::Except | ast::SetOperator::Minus => SetOperator::Except,
                };
                let all = matches!(set_quantifier, ast::SetQuantifier::All);
                Ok((Plan::SetOperation { op, all, left: Box::new(left_plan), right: Box::new(right_plan) }, columns))
            }
            other => Err(Error::unsupported(format!("{other} as a query"))),
        }
    }

    // ---- FROM ------------------------------------------------------------------------------

    /// The plan and columns of one table reference.
    fn bind_table_factor(&mut self, factor: &ast::TableFactor, holder: &Scope) -> Result<(Plan, Vec<ScopeColumn>)> {
        match factor {
            ast::TableFactor::Table { name, alias, args, with_ordinality, .. } => {
                if let Some(args) = args {
                    if object_name(name)? == "pg_options_to_table" {
                        return self.bind_options_to_table(&args.args, alias.as_ref(), holder);
                    }
                    return self.bind_table_function(name, &args.args, alias.as_ref(), *with_ordinality, holder);
                }
                if *with_ordinality {
                    return Err(Error::syntax("WITH ORDINALITY applies to a function in FROM"));
                }
                let table_name = object_name(name)?;
                let schema = schema_name(name);
                if matches!(schema.as_deref(), Some("pg_catalog" | "information_schema")) {
                    return match self.system_table(schema.as_deref(), &table_name, alias.as_ref()) {
                        Some(found) => Ok(found),
                        None => {
                            let span = name.span();
                            Err(Error::undefined_table(&name.to_string()).at(span.start.line, span.start.column))
                        }
                    };
                }
                let alias_name = alias.as_ref().map(|alias| lower(&alias.name)).unwrap_or_else(|| table_name.clone());
                if let Some(working) = self.working_tables.iter().rev().find(|working| working.name == table_name) {
                    if working.in_anchor {
                        return Err(Error::syntax(format!(
                            "the first part of recursive CTE {table_name} refers to {table_name}"
                        )));
                    }
                    if working.depth != self.depth {
                        return Err(Error::syntax(format!("recursive reference to {table_name} in a subquery")));
                    }
                    if working.used.replace(true) {
                        return Err(Error::syntax(format!("multiple references to recursive table {table_name}")));
                    }
                    let plan = Plan::WorkingTable { id: working.id, width: working.columns.len() };
                    return Ok((plan, derived_columns(&alias_name, &working.columns, &[], alias)?));
                }
                let cte = self.ctes.iter().rev().find_map(|ctes| ctes.get(&table_name).cloned());
                if let Some(cte) = cte {
                    let (plan, columns) = if cte.recursive {
                        self.bind_recursive_cte(&cte, &table_name, holder)?
                    } else {
                        self.bind_query_in(&cte.query, holder)?
                    };
                    return Ok((plan, derived_columns(&alias_name, &columns, &cte.columns, alias)?));
                }
                if let Some(view) = self.catalog.view(&table_name).cloned() {
                    let query = parse_query(&view.query)?;
                    let saved = std::mem::take(&mut self.ctes);
                    let saved_working = std::mem::take(&mut self.working_tables);
                    let result = self.bind_query_in(&query, &Scope::new(Vec::new(), None));
                    self.ctes = saved;
                    self.working_tables = saved_working;
                    let (plan, columns) = result?;
                    return Ok((plan, derived_columns(&alias_name, &columns, &view.columns, alias)?));
                }
                let Some(table) = self.catalog.table(&table_name).cloned() else {
                    // PostgreSQL searches pg_catalog too: `FROM pg_class` names the system relation.
                    if schema.is_none()
                        && let Some(found) = self.system_table(None, &table_name, alias.as_ref())
                    {
                        return Ok(found);
                    }
                    // A sequence: one row of its state.
                    if let Some(system) =
                        crate::catalog::system::sequence_relation(self.catalog, schema.as_deref(), &table_name)
                    {
                        let alias_name = alias.as_ref().map(|alias| lower(&alias.name)).unwrap_or(table_name.clone());
                        let columns = table_columns(&system.table, &alias_name);
                        return Ok((
                            Plan::SystemTable { table: system.table, rows: system.rows, live: system.live },
                            columns,
                        ));
                    }
                    let span = name.span();
                    return Err(Error::undefined_table(&name.to_string()).at(span.start.line, span.start.column));
                };
                let columns = table_columns(&table, &alias_name);
                Ok((Plan::Scan { table, access: Access::Full, filter: None, reverse: false }, columns))
            }
            ast::TableFactor::Derived { lateral, subquery, alias } => {
                if *lateral {
                    return Err(Error::unsupported("LATERAL"));
                }
                let (plan, columns) = self.bind_query_in(subquery, holder)?;
                let alias_name = alias.as_ref().map(|alias| lower(&alias.name)).unwrap_or_default();
                Ok((plan, derived_columns(&alias_name, &columns, &[], alias)?))
            }
            ast::TableFactor::NestedJoin { table_with_joins, alias } => {
                let (plan, mut columns) = self.bind_from_item(None, table_with_joins, holder)?;
                if let Some(alias) = alias {
                    for column in &mut columns {
                        column.table = Some(lower(&alias.name));
                    }
                }
                Ok((plan, columns))
            }
            // `unnest(array)`, which sqlparser reads as its own table factor.
            ast::TableFactor::UNNEST { alias, array_exprs, with_offset: false, with_ordinality, .. }
                if array_exprs.len() == 1 =>
            {
                let name = ast::ObjectName::from(vec![ast::Ident::new("unnest")]);
                let arg = ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(array_exprs[0].clone()));
                self.bind_table_function(&name, &[arg], alias.as_ref(), *with_ordinality, holder)
            }
            other => Err(Error::unsupported(format!("table reference {other}"))),
        }
    }

    /// A relation of `pg_catalog` / `information_schema` ([`crate::catalog::system`]), if `name` is one.
    fn system_table(
        &mut self,
        schema: Option<&str>,
        name: &str,
        alias: Option<&ast::TableAlias>,
    ) -> Option<(Plan, Vec<ScopeColumn>)> {
        let catalog = self.catalog;
        let view_columns = |view: &tern_exec::catalog::ViewDef| view_output_columns(catalog, view);
        let system = crate::catalog::system::lookup(catalog, schema, name, &view_columns)?;
        let alias_name = alias.map(|alias| lower(&alias.name)).unwrap_or_else(|| name.to_string());
        let mut columns = table_columns(&system.table, &alias_name);
        // The last column is the relation's `tableoid` ([`crate::catalog::system::lookup`]).
        if let Some(last) = columns.last_mut() {
            last.system = true;
        }
        Some((Plan::SystemTable { table: system.table, rows: system.rows, live: system.live }, columns))
    }

    /// `pg_options_to_table(options)`: the `name=value` elements of an options array as rows
    /// `(option_name, option_value)`, bound as the query over `unnest` it amounts to.
    fn bind_options_to_table(
        &mut self,
        args: &[ast::FunctionArg],
        alias: Option<&ast::TableAlias>,
        holder: &Scope,
    ) -> Result<(Plan, Vec<ScopeColumn>)> {
        let [ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(options))] = args else {
            return Err(Error::new("42883", "pg_options_to_table takes one argument"));
        };
        let mut query = parse_query(
            "SELECT substr(o, 1, strpos(o, '=') - 1) AS option_name, substr(o, strpos(o, '=') + 1) AS option_value \
             FROM unnest(NULL) AS u(o)",
        )?;
        let ast::SetExpr::Select(select) = query.body.as_mut() else {
            return Err(Error::internal("pg_options_to_table's query is not a SELECT"));
        };
        let Some(ast::TableFactor::Table { args: Some(unnest_args), .. }) =
            select.from.first_mut().map(|from| &mut from.relation)
        else {
            return Err(Error::internal("pg_options_to_table's query has no unnest"));
        };
        unnest_args.args = vec![ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(options.clone()))];
        let (plan, columns) = self.bind_query_in(&query, holder)?;
        let alias_name = alias.map(|alias| lower(&alias.name)).unwrap_or_else(|| "pg_options_to_table".into());
        Ok((plan, derived_columns(&alias_name, &columns, &[], &alias.cloned())?))
    }

    /// A set-returning function in FROM: `generate_series(start, stop [, step])`,
    /// `unnest(array)`, ... ([`TableFunction`]), with a row number column `WITH ORDINALITY`.
    /// Its arguments may read the enclosing query's columns.
    fn bind_table_function(
        &mut self,
        name: &ast::ObjectName,
        args: &[ast::FunctionArg],
        alias: Option<&ast::TableAlias>,
        ordinality: bool,
        holder: &Scope,
    ) -> Result<(Plan, Vec<ScopeColumn>)> {
        let function_name = object_name(name)?;
        let Some((function, min_args, max_args)) = TableFunction::lookup(&function_name) else {
            return Err(Error::unsupported(format!("table-valued function {function_name}")));
        };
        if args.len() < min_args || args.len() > max_args {
            return Err(Error::new("42883", format!("wrong number of arguments to function {function_name}()")));
        }
        let scope = Scope::new(Vec::new(), holder.parent);
        let mut bound = Vec::with_capacity(args.len());
        for arg in args {
            let ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(expr)) = arg else {
                return Err(Error::unsupported("named arguments to a table-valued function"));
            };
            bound.push(self.bind_expr(expr, &scope)?);
        }
        if scope.correlated.get() {
            holder.correlated.set(true);
        }
        let alias_name = alias.map(|alias| lower(&alias.name)).unwrap_or_else(|| function_name.clone());
        let default_name = match function {
            TableFunction::PartitionAncestors => "relid".to_string(),
            _ => alias_name.clone(),
        };
        let column_name =
            alias.and_then(|alias| alias.columns.first()).map(|column| lower(&column.name)).unwrap_or(default_name);
        let affinity = match function {
            TableFunction::Unnest => None,
            TableFunction::ExpandArray => Some(Affinity::Composite(tern_exec::types::composite::expand_array_type())),
            TableFunction::GenerateSeries | TableFunction::GenerateSubscripts | TableFunction::PartitionAncestors => {
                Some(Affinity::Integer)
            }
        };
        let mut columns = vec![ScopeColumn {
            table: Some(alias_name.clone()),
            name: column_name,
            affinity,
            merged: false,
            system: false,
        }];
        if ordinality {
            let name = alias
                .and_then(|alias| alias.columns.get(1))
                .map_or("ordinality".to_string(), |column| lower(&column.name));
            columns.push(ScopeColumn {
                table: Some(alias_name),
                name,
                affinity: Some(Affinity::Integer),
                merged: false,
                system: false,
            });
        }
        Ok((Plan::TableFunction { function, args: bound, ordinality }, columns))
    }

    /// A reference to a CTE of `WITH RECURSIVE` whose body is `anchor UNION [ALL] step`: the
    /// step reads the CTE's own name as the rows the previous round added.
    fn bind_recursive_cte(&mut self, cte: &CteDef, name: &str, holder: &Scope) -> Result<(Plan, Vec<OutputColumn>)> {
        let ast::SetExpr::SetOperation { set_quantifier, left, right, .. } = cte.query.body.as_ref() else {
            return Err(Error::internal("a recursive CTE without UNION"));
        };
        if cte.query.order_by.is_some() || cte.query.limit_clause.is_some() || cte.query.with.is_some() {
            return Err(Error::unsupported("ORDER BY, LIMIT or WITH inside a recursive CTE"));
        }
        let all = match set_quantifier {
            ast::SetQuantifier::All => true,
            ast::SetQuantifier::None | ast::SetQuantifier::Distinct => false,
            other => return Err(Error::unsupported(format!("UNION {other} in a recursive CTE"))),
        };
        // The anchor must not refer to the CTE: hide the name behind an unusable working table.
        let id = self.next_id();
        self.working_tables.push(WorkingTable {
            name: name.to_string(),
            id,
            columns: Vec::new(),
            used: Cell::new(false),
            in_anchor: true,
            depth: self.depth,
        });
        let anchor = self.bind_set_expr(left, holder);
        self.working_tables.pop();
        let (anchor, mut columns) = anchor?;
        if !cte.columns.is_empty() {
            if cte.columns.len() != columns.len() {
                return Err(Error::syntax(format!(
                    "{name} has {} columns but {} column names were given",
                    columns.len(),
                    cte.columns.len()
                )));
            }
            for (column, declared) in columns.iter_mut().zip(&cte.columns) {
                column.name = declared.clone();
            }
        }
        self.working_tables.push(WorkingTable {
            name: name.to_string(),
            id,
            columns: columns.clone(),
            used: Cell::new(false),
            in_anchor: false,
            depth: self.depth,
        });
        let step = self.bind_set_expr(right, holder);
        let working = self.working_tables.pop().expect("pushed above");
        let (step, step_columns) = step?;
        if step_columns.len() != columns.len() {
            return Err(Error::syntax(format!(
                "SELECTs to the left and right of UNION in {name} do not have the same number of result columns"
            )));
        }
        let plan = if working.used.get() {
            Plan::Recursive { id, anchor: Box::new(anchor), step: Box::new(step), all }
        } else {
            Plan::SetOperation { op: SetOperator::Union, all, left: Box::new(anchor), right: Box::new(step) }
        };
        Ok((plan, columns))
    }

    /// A FROM item with explicit joins, planned in syntax order.
    /// The tables of a FROM item of inner joins only, each a relation for the join planner,
    /// and its ON conditions.
    fn bind_inner_factors<'a>(
        &mut self,
        item: &'a ast::TableWithJoins,
        holder: &Scope,
        relations: &mut Vec<Relation>,
        columns: &mut Vec<ScopeColumn>,
        on_conditions: &mut Vec<&'a ast::Expr>,
    ) -> Result<()> {
        let factors = std::iter::once(&item.relation).chain(item.joins.iter().map(|join| &join.relation));
        for factor in factors {
            let (plan, factor_columns) = self.bind_table_factor(factor, holder)?;
            relations.push(Relation { width: factor_columns.len(), plan, offset: columns.len() });
            columns.extend(factor_columns);
        }
        for join in &item.joins {
            if let ast::JoinOperator::Join(ast::JoinConstraint::On(on))
            | ast::JoinOperator::Inner(ast::JoinConstraint::On(on)) = &join.join_operator
            {
                on_conditions.push(on);
            }
        }
        Ok(())
    }

    fn bind_from_item(
        &mut self,
        left: Option<(Plan, Vec<ScopeColumn>)>,
        item: &ast::TableWithJoins,
        holder: &Scope,
    ) -> Result<(Plan, Vec<ScopeColumn>)> {
        let (first_plan, first_columns) = self.bind_table_factor(&item.relation, holder)?;
        let (mut plan, mut columns) = match left {
            None => (first_plan, first_columns),
            Some((left_plan, mut left_columns)) => {
                let left_width = left_columns.len();
                left_columns.extend(first_columns);
                (make_join(left_plan, first_plan, left_width, JoinKind::Inner, Vec::new()), left_columns)
            }
        };
        for join in &item.joins {
            let (right_plan, right_columns) = self.bind_table_factor(&join.relation, holder)?;
            let (kind, constraint) = match &join.join_operator {
                ast::JoinOperator::Join(constraint) | ast::JoinOperator::Inner(constraint) => {
                    (JoinKind::Inner, constraint)
                }
                ast::JoinOperator::CrossJoin(constraint) => (JoinKind::Inner, constraint),
                ast::JoinOperator::Left(constraint) | ast::JoinOperator::LeftOuter(constraint) => {
                    (JoinKind::Left, constraint)
                }
                ast::JoinOperator::Right(constraint) | ast::JoinOperator::RightOuter(constraint) => {
                    (JoinKind::Right, constraint)
                }
                ast::JoinOperator::FullOuter(constraint) => (JoinKind::Full, constraint),
                other => return Err(Error::unsupported(format!("join {other:?}"))),
            };
            let left_width = columns.len();
            let mut combined = columns.clone();
            combined.extend(right_columns.iter().cloned());
            let mut conditions = Vec::new();
            let using: Vec<String> = match constraint {
                ast::JoinConstraint::Using(names) => names.iter().map(object_name).collect::<Result<_>>()?,
                ast::JoinConstraint::Natural => right_columns
                    .iter()
                    .filter(|right| columns.iter().any(|left| !left.merged && left.name == right.name))
                    .map(|right| right.name.clone())
                    .collect(),
                _ => Vec::new(),
            };
            for name in &using {
                let left_index = columns
                    .iter()
                    .position(|column| !column.merged && &column.name == name)
                    .ok_or_else(|| Error::undefined_column(name))?;
                let right_index = right_columns
                    .iter()
                    .position(|column| &column.name == name)
                    .ok_or_else(|| Error::undefined_column(name))?;
                combined[left_width + right_index].merged = true;
                conditions.push(Expr::Binary(
                    BinaryOp::Eq,
                    Box::new(Expr::Column(left_index)),
                    Box::new(Expr::Column(left_width + right_index)),
                ));
            }
            let scope = Scope::new(combined.clone(), holder.parent);
            if let ast::JoinConstraint::On(on) = constraint {
                conditions.push(self.bind_expr(on, &scope)?);
            }
            if scope.correlated.get() {
                holder.correlated.set(true);
            }
            plan = make_join(plan, right_plan, left_width, kind, conditions);
            columns = combined;
        }
        Ok((plan, columns))
    }

    /// Plans a FROM clause with a WHERE clause: inner joins are reordered greedily along
    /// equality predicates and predicates are pushed to scans. Returns the plan, whose columns
    /// are in FROM order, and the scope.
    fn bind_from_where(
        &mut self,
        from: &[ast::TableWithJoins],
        selection: Option<&ast::Expr>,
        holder: &Scope,
    ) -> Result<(Plan, Vec<ScopeColumn>)> {
        if from.is_empty() {
            let plan = Plan::Values { rows: vec![Vec::new()], width: 0 };
            let scope = Scope::new(Vec::new(), holder.parent);
            let plan = match selection {
                Some(selection) => {
                    let predicate = self.bind_expr(selection, &scope)?;
                    Plan::Filter { input: Box::new(plan), predicate }
                }
                None => plan,
            };
            if scope.correlated.get() {
                holder.correlated.set(true);
            }
            return Ok((plan, Vec::new()));
        }
        let tables: usize = from.iter().map(|item| 1 + item.joins.len()).sum();
        if tables > tern_exec::limits::MAX_JOIN_TABLES {
            return Err(Error::program_limit(format!(
                "statement too complex: {tables} tables in one FROM clause (at most {})",
                tern_exec::limits::MAX_JOIN_TABLES
            )));
        }
        // Only plain inner joins (comma, JOIN ... ON) are reordered; outer joins keep syntax order.
        let inner_only = |item: &ast::TableWithJoins| {
            item.joins.iter().all(|join| {
                matches!(
                    &join.join_operator,
                    ast::JoinOperator::Join(ast::JoinConstraint::On(_) | ast::JoinConstraint::None)
                        | ast::JoinOperator::Inner(ast::JoinConstraint::On(_) | ast::JoinConstraint::None)
                        | ast::JoinOperator::CrossJoin(ast::JoinConstraint::None)
                )
            })
        };
        let reorderable = from.iter().all(inner_only);
        // In PostgreSQL an ON clause sees only its own join tree, so the items of a comma list
        // are relations to order even when one has outer joins (which stays one relation, in
        // syntax order). SQLite lets a later ON see every table before it: one chain.
        let items_reorderable = !reorderable && self.dialect == Dialect::Postgres && from.len() > 1;
        let mut relations = Vec::new();
        let mut columns: Vec<ScopeColumn> = Vec::new();
        let mut on_conditions = Vec::new();
        if items_reorderable {
            for item in from {
                if inner_only(item) {
                    self.bind_inner_factors(item, holder, &mut relations, &mut columns, &mut on_conditions)?;
                } else {
                    let (plan, item_columns) = self.bind_from_item(None, item, holder)?;
                    relations.push(Relation { width: item_columns.len(), plan, offset: columns.len() });
                    columns.extend(item_columns);
                }
            }
        } else if reorderable {
            for item in from {
                self.bind_inner_factors(item, holder, &mut relations, &mut columns, &mut on_conditions)?;
            }
        } else {
            // One left-deep chain: a comma is a cross join, and a later ON clause sees every
            // table before it (SQLite).
            let mut chain: Option<(Plan, Vec<ScopeColumn>)> = None;
            for item in from {
                chain = Some(self.bind_from_item(chain, item, holder)?);
            }
            let (plan, chain_columns) = chain.expect("FROM has items");
            relations.push(Relation { width: chain_columns.len(), plan, offset: 0 });
            columns = chain_columns;
        }
        let scope = Scope::new(columns.clone(), holder.parent);
        let mut predicates = Vec::new();
        for on in on_conditions {
            predicates.push(self.bind_expr(on, &scope)?);
        }
        if let Some(selection) = selection {
            predicates.push(self.bind_expr(selection, &scope)?);
        }
        if scope.correlated.get() {
            holder.correlated.set(true);
        }
        let mut conjuncts = Vec::new();
        for predicate in predicates {
            split_conjuncts(predicate, &mut conjuncts);
        }
        let mut conjuncts: Vec<Expr> = conjuncts.into_iter().flat_map(or_factor::factor_common).collect();
        let relation_of = |column: usize| {
            relations.iter().position(|r| column >= r.offset && column < r.offset + r.width).unwrap_or(0)
        };
        if relations.len() > 1 {
            let implied: Vec<Expr> = conjuncts
                .iter()
                .flat_map(|conjunct| or_factor::implied_filters(conjunct, relations.len(), &relation_of))
                .filter(|implied| !conjuncts.contains(implied))
                .collect();
            conjuncts.extend(implied);
        }
        // Conjuncts with a correlated subquery read the whole row in FROM order (the subquery's
        // references to this level are FROM positions): they run after the joins, as joins
        // where they can be decorrelated.
        let (late, conjuncts): (Vec<Expr>, Vec<Expr>) = conjuncts.into_iter().partition(has_correlated_subquery);
        let conjuncts: Vec<Conjunct> = conjuncts
            .into_iter()
            .map(|expr| {
                let mut relations_read: Vec<usize> = expr
                    .columns()
                    .into_iter()
                    .map(|column| {
                        relations.iter().position(|r| column >= r.offset && column < r.offset + r.width).unwrap_or(0)
                    })
                    .collect();
                relations_read.sort_unstable();
                relations_read.dedup();
                Conjunct { expr, relations: relations_read }
            })
            .collect();
        let mut plan = plan_joins(self.catalog, relations, conjuncts, columns.len());
        let mut still_late = Vec::new();
        for conjunct in late {
            plan = match decorrelate::decorrelate(self.catalog, plan, columns.len(), conjunct) {
                decorrelate::Decorrelated::Joined(joined) => joined,
                decorrelate::Decorrelated::Kept(plan, conjunct) => {
                    still_late.push(conjunct);
                    plan
                }
            };
        }
        if let Some(predicate) = conjoin(still_late) {
            plan = Plan::Filter { input: Box::new(plan), predicate };
        }
        Ok((plan, columns))
    }

    // ---- SELECT ----------------------------------------------------------------------------

    fn bind_select(
        &mut self,
        select: &ast::Select,
        order_by: &[ast::OrderByExpr],
        sort_limit: Option<Box<Expr>>,
        holder: &Scope,
    ) -> Result<(Plan, Vec<OutputColumn>)> {
        let windows = std::mem::replace(&mut self.named_windows, select.named_window.clone());
        let refusal = self.window_refusal.replace(("42P20", "window functions are not allowed in FROM or WHERE"));
        let bound = self.bind_select_inner(select, order_by, sort_limit, holder);
        self.named_windows = windows;
        self.window_refusal = refusal;
        bound
    }

    fn bind_select_inner(
        &mut self,
        select: &ast::Select,
        order_by: &[ast::OrderByExpr],
        sort_limit: Option<Box<Expr>>,
        holder: &Scope,
    ) -> Result<(Plan, Vec<OutputColumn>)> {
        if select.top.is_some() || select.into.is_some() || !select.lateral_views.is_empty() || select.qualify.is_some()
        {
            return Err(Error::unsupported("TOP, INTO, LATERAL VIEW and QUALIFY"));
        }
        let distinct = match &select.distinct {
            None => false,
            Some(ast::Distinct::Distinct) => true,
            Some(ast::Distinct::On(_)) => return Err(Error::unsupported("DISTINCT ON")),
        };
        let (input, from_columns) = self.bind_from_where(&select.from, select.selection.as_ref(), holder)?;
        let scope = Scope::new(from_columns, holder.parent);
        check_named_windows(&select.named_window)?;
        self.window_refusal = None;
        let window_calls_before = self.window_calls;
        let set_returning_calls_before = self.set_returning_calls;

        // The select list, with `*` expanded.
        let mut items: Vec<(Expr, OutputColumn)> = Vec::new();
        for item in &select.projection {
            match item {
                ast::SelectItem::UnnamedExpr(expr) => {
                    let bound = self.bind_expr(expr, &scope)?;
                    let name = match expr {
                        ast::Expr::Identifier(ident) => ident.value.clone(),
                        ast::Expr::CompoundIdentifier(parts) => {
                            parts.last().map(|part| part.value.clone()).unwrap_or_default()
                        }
                        other => crate::window::syntax::restore_exclusions(&other.to_string()),
                    };
                    let affinity = self.expr_affinity(&bound, &scope);
                    items.push((bound, OutputColumn { name, affinity }));
                }
                ast::SelectItem::ExprWithAlias { expr, alias } => {
                    let bound = self.bind_expr(expr, &scope)?;
                    let affinity = self.expr_affinity(&bound, &scope);
                    items.push((bound, OutputColumn { name: alias.value.clone(), affinity }));
                }
                ast::SelectItem::Wildcard(_) => {
                    if scope.columns.is_empty() {
                        return Err(Error::syntax("no tables specified"));
                    }
                    for (index, column) in scope.columns.iter().enumerate() {
                        if !column.merged && !column.system {
                            items.push((
                                Expr::Column(index),
                                OutputColumn { name: column.name.clone(), affinity: column.affinity },
                            ));
                        }
                    }
                }
                ast::SelectItem::QualifiedWildcard(kind, _) => {
                    let ast::SelectItemQualifiedWildcardKind::ObjectName(name) = kind else {
                        return Err(Error::unsupported("expression.*"));
                    };
                    let table = object_name(name)?;
                    let before = items.len();
                    for (index, column) in scope.columns.iter().enumerate() {
                        if column.table.as_deref() == Some(table.as_str()) && !column.system {
                            items.push((
                                Expr::Column(index),
                                OutputColumn { name: column.name.clone(), affinity: column.affinity },
                            ));
                        }
                    }
                    if items.len() == before {
                        return Err(Error::undefined_table(&table));
                    }
                }
            }
        }

        let (group_by, grouping_sets): (Vec<ast::Expr>, Option<Vec<Vec<usize>>>) = match &select.group_by {
            ast::GroupByExpr::Expressions(exprs, modifiers) => {
                if !modifiers.is_empty() {
                    return Err(Error::unsupported("GROUP BY modifiers"));
                }
                match crate::grouping_sets::expand(exprs)? {
                    Some(expanded) => (expanded.exprs, Some(expanded.sets)),
                    None => (exprs.clone(), None),
                }
            }
            ast::GroupByExpr::All(_) => return Err(Error::unsupported("GROUP BY ALL")),
        };
        self.window_refusal = Some(("42P20", "window functions are not allowed in HAVING"));
        let having = select.having.as_ref().map(|having| self.bind_expr(having, &scope)).transpose()?;
        self.window_refusal = None;

        // ORDER BY terms: an output column, or an expression over the FROM columns.
        enum OrderTerm {
            Output(usize),
            Expr(Expr),
        }
        let mut order_terms = Vec::new();
        let outputs: Vec<OutputColumn> = items.iter().map(|(_, column)| column.clone()).collect();
        for term in order_by {
            let by_output = match &term.expr {
                // A bare name that is a column of the FROM clause refers to that column
                // unless it is also an output alias (SQLite prefers the alias).
                ast::Expr::Identifier(_) | ast::Expr::Value(_) => self.output_position(&term.expr, &outputs)?,
                _ => None,
            };
            order_terms.push(match by_output {
                Some(index) => OrderTerm::Output(index),
                None => OrderTerm::Expr(self.bind_expr(&term.expr, &scope)?),
            });
        }

        self.window_refusal = Some(("42P20", "window functions are not allowed in GROUP BY"));
        let mut group_exprs = Vec::new();
        for expr in &group_by {
            let position = match expr {
                ast::Expr::Value(ast::ValueWithSpan { value: ast::Value::Number(_, _), .. }) => {
                    self.output_position(expr, &outputs)?
                }
                ast::Expr::Identifier(ident) if scope.find(None, &lower(ident))?.is_none() => {
                    self.output_position(expr, &outputs)?
                }
                _ => None,
            };
            group_exprs.push(match position {
                Some(index) => {
                    if items[index].0.contains_aggregate() {
                        return Err(Error::grouping("aggregate functions are not allowed in GROUP BY"));
                    }
                    if items[index].0.contains_window() {
                        return Err(Error::new("42P20", "window functions are not allowed in GROUP BY"));
                    }
                    items[index].0.clone()
                }
                None => {
                    let bound = self.bind_expr(expr, &scope)?;
                    if bound.contains_aggregate() {
                        return Err(Error::grouping("aggregate functions are not allowed in GROUP BY"));
                    }
                    bound
                }
            });
        }

        let aggregated = !group_exprs.is_empty()
            || grouping_sets.is_some()
            || items.iter().any(|(expr, _)| expr.contains_aggregate())
            || having.as_ref().is_some_and(Expr::contains_aggregate)
            || order_terms.iter().any(|term| matches!(term, OrderTerm::Expr(expr) if expr.contains_aggregate()));
        if scope.correlated.get() {
            holder.correlated.set(true);
        }

        let mut plan = input;
        let mut project: Vec<Expr> = items.iter().map(|(expr, _)| expr.clone()).collect();
        let mut having = having;
        let mut order_exprs: Vec<Option<Expr>> = order_terms
            .iter()
            .map(|term| if let OrderTerm::Expr(expr) = term { Some(expr.clone()) } else { None })
            .collect();
        if aggregated {
            // Correlated subqueries in the output read the group's first input row: its columns
            // are the first aggregates, right after the group keys.
            let correlated_output =
                project.iter().chain(having.iter()).chain(order_exprs.iter().flatten()).any(has_correlated_subquery);
            let mut aggregates: Vec<AggregateCall> = Vec::new();
            let group_row = correlated_output.then(|| {
                aggregates.extend(
                    (0..plan.width())
                        .map(|column| AggregateCall::plain(AggregateFunction::First, vec![Expr::Column(column)])),
                );
                group_exprs.len()
            });
            let mut lift = |expr: Expr| lift_aggregates(expr, &group_exprs, &mut aggregates, group_row);
            project = project.into_iter().map(&mut lift).collect();
            having = having.map(&mut lift);
            order_exprs = order_exprs.into_iter().map(|expr| expr.map(&mut lift)).collect();
            plan = crate::grouping_sets::aggregate_plan(plan, group_exprs, aggregates, grouping_sets.as_deref())?;
            if let Some(having) = having {
                plan = Plan::Filter { input: Box::new(plan), predicate: having };
            }
        } else if having.is_some() {
            return Err(Error::grouping("a GROUP BY clause is required before HAVING"));
        }
        // Window functions run over the (grouped) rows, before the output is computed.
        if self.window_calls > window_calls_before {
            let base = plan.width();
            let mut windows = Vec::new();
            rewrite_outputs(&mut project, &mut order_exprs, |expr| extract_windows(expr, base, &mut windows));
            if !windows.is_empty() {
                plan = Plan::Window { input: Box::new(plan), calls: windows };
            }
        }
        // Set-returning functions of the select list run after windows, before the output.
        if self.set_returning_calls > set_returning_calls_before {
            let base = plan.width();
            let mut calls = Vec::new();
            rewrite_outputs(&mut project, &mut order_exprs, |expr| extract_set_returning(expr, base, &mut calls));
            if !calls.is_empty() {
                plan = Plan::ProjectSet { input: Box::new(plan), calls };
            }
        }

        // Hidden columns for ORDER BY expressions that are not in the select list.
        let visible = project.len();
        let mut keys = Vec::new();
        for (term, (order_expr, ast_term)) in order_terms.iter().zip(order_exprs.into_iter().zip(order_by)) {
            let column = match (term, order_expr) {
                (OrderTerm::Output(index), _) => *index,
                (_, Some(expr)) => match project.iter().position(|existing| *existing == expr) {
                    Some(index) => index,
                    None => {
                        project.push(expr);
                        project.len() - 1
                    }
                },
                _ => return Err(Error::internal("ORDER BY term without expression")),
            };
            keys.push(sort_key(Expr::Column(column), &ast_term.options, self.dialect));
        }
        if distinct && project.len() > visible {
            return Err(Error::new(
                "42P10",
                "for SELECT DISTINCT, ORDER BY expressions must appear in the select list",
            ));
        }
        plan = Plan::Project { input: Box::new(plan), exprs: project };
        if distinct {
            plan = Plan::Distinct { input: Box::new(plan) };
        }
        if !keys.is_empty() && !scan_order_satisfies(&mut plan, &keys) {
            plan = Plan::Sort { input: Box::new(plan), keys, limit: sort_limit };
        }
        if plan.width() > visible {
            plan = Plan::Project { input: Box::new(plan), exprs: (0..visible).map(Expr::Column).collect() };
        }
        Ok((plan, outputs))
    }

    /// The affinity an expression carries into comparisons: a column's, a CAST's, or a
    /// set-returning function's.
    fn expr_affinity(&self, expr: &Expr, scope: &Scope) -> Option<Affinity> {
        match expr {
            Expr::Column(index) => scope.columns.get(*index).and_then(|column| column.affinity),
            Expr::Outer { depth, index } => {
                let mut current = scope;
                for _ in 0..*depth {
                    current = current.parent?;
                }
                current.columns.get(*index).and_then(|column| column.affinity)
            }
            Expr::Cast(_, to) => Some(to.affinity()),
            Expr::Function(
                ScalarFunction::SetReturning(
                    tern_exec::plan::TableFunction::GenerateSeries
                    | tern_exec::plan::TableFunction::GenerateSubscripts
                    | tern_exec::plan::TableFunction::PartitionAncestors,
                ),
                _,
            ) => Some(Affinity::Integer),
            Expr::Function(ScalarFunction::SetReturning(tern_exec::plan::TableFunction::ExpandArray), _) => {
                Some(Affinity::Composite(tern_exec::types::composite::expand_array_type()))
            }
            _ => None,
        }
    }

    // ---- expressions -----------------------------------------------------------------------

    fn resolve_column(&self, table: Option<&str>, name: &str, scope: &Scope) -> Result<Option<Expr>> {
        let mut current = scope;
        let mut depth = 0;
        loop {
            if let Some(index) = current.find(table, name)? {
                if depth == 0 {
                    return Ok(Some(Expr::Column(index)));
                }
                // Every level between the reference and the column's level is correlated.
                let mut marking = scope;
                for _ in 0..depth {
                    marking.correlated.set(true);
                    match marking.parent {
                        Some(parent) => marking = parent,
                        None => break,
                    }
                }
                return Ok(Some(Expr::Outer { depth, index }));
            }
            match current.parent {
                Some(parent) => {
                    current = parent;
                    depth += 1;
                }
                None => return Ok(None),
            }
        }
    }

    pub fn bind_expr(&mut self, expr: &ast::Expr, scope: &Scope) -> Result<Expr> {
        self.expression_depth += 1;
        if self.expression_depth > tern_exec::limits::MAX_EXPRESSION_DEPTH {
            self.expression_depth -= 1;
            return Err(Error::program_limit("expression is nested too deeply"));
        }
        let result = tern_exec::limits::with_stack(|| self.bind_expr_inner(expr, scope)).map_err(|error| {
            // The innermost expression with a position names the place (a span is computed
            // from the whole subtree, so each enclosing level computing it again is quadratic).
            if error.position.is_some() {
                return error;
            }
            let span = expr.span();
            error.at(span.start.line, span.start.column)
        });
        self.expression_depth -= 1;
        result
    }

    fn bind_comparison(&mut self, op: BinaryOp, left: &ast::Expr, right: &ast::Expr, scope: &Scope) -> Result<Expr> {
        let left = self.bind_expr(left, scope)?;
        let right = self.bind_expr(right, scope)?;
        let (left, right) = self.apply_comparison_affinity(left, right, scope)?;
        Ok(Expr::Binary(op, Box::new(left), Box::new(right)))
    }

    /// SQLite's comparison affinity: a numeric side converts the other (if it is text or has no
    /// affinity) to a number; a text side converts a side without affinity to text.
    fn apply_comparison_affinity(&self, left: Expr, right: Expr, scope: &Scope) -> Result<(Expr, Expr)> {
        let left_affinity = self.expr_affinity(&left, scope);
        let right_affinity = self.expr_affinity(&right, scope);
        let wrap = |expr: Expr, affinity: Affinity| -> Result<Expr> {
            Ok(match expr {
                Expr::Literal(value) => Expr::Literal(comparison_literal(affinity, value)?),
                other => Expr::Affinity(Box::new(other), affinity),
            })
        };
        let numeric = |affinity: Option<Affinity>| affinity.is_some_and(Affinity::is_numeric);
        let weak = |affinity: Option<Affinity>| matches!(affinity, None | Some(Affinity::Blob));
        // PostgreSQL's typed columns read the other side as their type (text as a date).
        let typed = |affinity: Option<Affinity>| {
            matches!(
                affinity,
                Some(
                    Affinity::Boolean
                        | Affinity::Temporal(_)
                        | Affinity::Enum(_)
                        | Affinity::Composite(_)
                        | Affinity::Bytea
                        | Affinity::Uuid
                        | Affinity::Json(_)
                )
            )
        };
        Ok(if let Some(affinity) = left_affinity.filter(|_| typed(left_affinity) && !typed(right_affinity)) {
            (left, wrap(right, affinity)?)
        } else if let Some(affinity) = right_affinity.filter(|_| typed(right_affinity) && !typed(left_affinity)) {
            (wrap(left, affinity)?, right)
        } else if numeric(left_affinity) && !numeric(right_affinity) {
            (left, wrap(right, Affinity::Numeric)?)
        } else if numeric(right_affinity) && !numeric(left_affinity) {
            (wrap(left, Affinity::Numeric)?, right)
        } else if left_affinity == Some(Affinity::Text) && weak(right_affinity) {
            (left, wrap(right, Affinity::Text)?)
        } else if right_affinity == Some(Affinity::Text) && weak(left_affinity) {
            (wrap(left, Affinity::Text)?, right)
        } else {
            (left, right)
        })
    }

    fn bind_parameter(&mut self, text: &str) -> Result<Expr> {
        let index = if text == "?" {
            self.parameter_count += 1;
            self.parameter_count - 1
        } else if let Some(number) = text
            .strip_prefix('?')
            .or_else(|| text.strip_prefix('$'))
            .filter(|rest| rest.chars().all(|c| c.is_ascii_digit()))
        {
            let number: usize = number.parse().map_err(|_| Error::syntax(format!("bad parameter {text}")))?;
            if number == 0 || number > 32766 {
                return Err(Error::syntax(format!("parameter number {text} out of range")));
            }
            self.parameter_count = self.parameter_count.max(number);
            number - 1
        } else {
            let name = text.to_string();
            match self.named_parameters.iter().position(|existing| *existing == name) {
                Some(position) => position,
                None => {
                    self.named_parameters.push(name);
                    self.parameter_count = self.parameter_count.max(self.named_parameters.len());
                    self.named_parameters.len() - 1
                }
            }
        };
        Ok(Expr::Param(index))
    }

    fn bind_expr_inner(&mut self, expr: &ast::Expr, scope: &Scope) -> Result<Expr> {
        use ast::Expr as E;
        Ok(match expr {
            E::Identifier(ident) => {
                match self.resolve_column(None, &lower(ident), scope)? {
                    Some(column) => column,
                    // SQLite reads a double-quoted name that is no column as a string.
                    None if ident.quote_style == Some('"') => Expr::Literal(Value::Text(ident.value.clone())),
                    // SQL's niladic functions, written without parentheses.
                    None if ident.quote_style.is_none() => match lower(ident).as_str() {
                        "current_user" | "session_user" | "current_role" => {
                            Expr::Function(ScalarFunction::CurrentUser, Vec::new())
                        }
                        "current_catalog" => Expr::Function(ScalarFunction::CurrentDatabase, Vec::new()),
                        "current_schema" => Expr::Function(ScalarFunction::CurrentSchema, Vec::new()),
                        _ => return Err(Error::undefined_column(&ident.value)),
                    },
                    None => return Err(Error::undefined_column(&ident.value)),
                }
            }
            E::CompoundIdentifier(parts) => {
                let (table, column) = match parts.as_slice() {
                    [table, column] => (lower(table), lower(column)),
                    [_, table, column] => (lower(table), lower(column)),
                    _ => return Err(Error::syntax(format!("bad column reference {expr}"))),
                };
                self.resolve_column(Some(&table), &column, scope)?
                    .ok_or_else(|| Error::undefined_column(&format!("{table}.{column}")))?
            }
            E::Value(value) => self.bind_value(&value.value)?,
            E::Nested(inner) => self.bind_expr(inner, scope)?,
            E::UnaryOp { op, expr: inner } => {
                // Fold a negative numeric literal so that -9223372036854775808 is an integer.
                if let (
                    ast::UnaryOperator::Minus,
                    E::Value(ast::ValueWithSpan { value: ast::Value::Number(number, _), .. }),
                ) = (op, inner.as_ref())
                    && let Ok(negative) = format!("-{number}").parse::<i64>()
                {
                    return Ok(Expr::Literal(Value::Integer(negative)));
                }
                let inner = self.bind_expr(inner, scope)?;
                let op = match op {
                    ast::UnaryOperator::Minus => UnaryOp::Neg,
                    ast::UnaryOperator::Plus => UnaryOp::Plus,
                    ast::UnaryOperator::Not => UnaryOp::Not,
                    ast::UnaryOperator::PGBitwiseNot => UnaryOp::BitNot,
                    other => return Err(Error::unsupported(format!("operator {other}"))),
                };
                Expr::Unary(op, Box::new(inner))
            }
            E::BinaryOp { left, op, right } => self.bind_binary_op(left, op, right, scope)?,
            E::IsNull(inner) => Expr::IsNull(Box::new(self.bind_expr(inner, scope)?), false),
            E::IsNotNull(inner) => Expr::IsNull(Box::new(self.bind_expr(inner, scope)?), true),
            E::IsTrue(inner) | E::IsNotTrue(inner) | E::IsFalse(inner) | E::IsNotFalse(inner) => {
                let bound = self.bind_expr(inner, scope)?;
                let want = matches!(expr, E::IsTrue(_) | E::IsNotFalse(_));
                let negated = matches!(expr, E::IsNotTrue(_) | E::IsNotFalse(_));
                // x IS TRUE: true exactly when x is true; NULL gives false. A boolean (clients
                // read `t`/`f`).
                let truth = Expr::Case {
                    operand: None,
                    whens: vec![(bound, Expr::Literal(Value::Integer(1)))],
                    otherwise: Some(Box::new(Expr::Literal(Value::Integer(0)))),
                };
                let truth = Expr::Cast(Box::new(truth), CastType::Boolean);
                let is_true = if want != negated { truth } else { Expr::Unary(UnaryOp::Not, Box::new(truth)) };
                if matches!(expr, E::IsFalse(_) | E::IsNotFalse(_)) {
                    // x IS FALSE: x is not NULL and not true.
                    let bound = self.bind_expr(inner, scope)?;
                    let is_false = Expr::Binary(
                        BinaryOp::And,
                        Box::new(Expr::IsNull(Box::new(bound.clone()), true)),
                        Box::new(Expr::Unary(UnaryOp::Not, Box::new(bound))),
                    );
                    let is_false =
                        Expr::Function(ScalarFunction::Coalesce, vec![is_false, Expr::Literal(Value::Integer(0))]);
                    if negated { Expr::Unary(UnaryOp::Not, Box::new(is_false)) } else { is_false }
                } else {
                    is_true
                }
            }
            E::IsDistinctFrom(left, right) | E::IsNotDistinctFrom(left, right) => {
                let left = self.bind_expr(left, scope)?;
                let right = self.bind_expr(right, scope)?;
                let (left, right) = self.apply_comparison_affinity(left, right, scope)?;
                Expr::Is {
                    left: Box::new(left),
                    right: Box::new(right),
                    negated: matches!(expr, E::IsDistinctFrom(..)),
                }
            }
            E::Between { expr: inner, negated, low, high } => {
                // x BETWEEN lo AND hi is x >= lo AND x <= hi, each with its own affinity.
                let bound = self.bind_expr(inner, scope)?;
                let low = self.bind_expr(low, scope)?;
                let high = self.bind_expr(high, scope)?;
                let (bound_low, low) = self.apply_comparison_affinity(bound.clone(), low, scope)?;
                let (bound_high, high) = self.apply_comparison_affinity(bound, high, scope)?;
                let between = Expr::Binary(
                    BinaryOp::And,
                    Box::new(Expr::Binary(BinaryOp::GtEq, Box::new(bound_low), Box::new(low))),
                    Box::new(Expr::Binary(BinaryOp::LtEq, Box::new(bound_high), Box::new(high))),
                );
                if *negated { Expr::Unary(UnaryOp::Not, Box::new(between)) } else { between }
            }
            E::InList { expr: inner, list, negated } => {
                let bound = self.bind_expr(inner, scope)?;
                let mut items = Vec::with_capacity(list.len());
                for item in list {
                    let item = self.bind_expr(item, scope)?;
                    let item = match self.expr_affinity(&bound, scope) {
                        Some(affinity) if affinity != Affinity::Blob && self.expr_affinity(&item, scope).is_none() => {
                            match item {
                                Expr::Literal(value) => {
                                    Expr::Literal(comparison_literal(comparison_affinity(affinity), value)?)
                                }
                                other => Expr::Affinity(Box::new(other), comparison_affinity(affinity)),
                            }
                        }
                        _ => item,
                    };
                    items.push(item);
                }
                Expr::InList { expr: Box::new(bound), list: items, negated: *negated }
            }
            E::InSubquery { expr: inner, subquery, negated } => {
                let bound = self.bind_expr(inner, scope)?;
                let (subquery, right_affinity) = self.subquery_with_affinity(subquery, scope)?;
                // As for x = y: a numeric side makes the other numeric, a text side makes a
                // side without affinity text.
                let left_affinity = self.expr_affinity(&bound, scope);
                let numeric = |affinity: Option<Affinity>| affinity.is_some_and(Affinity::is_numeric);
                let weak = |affinity: Option<Affinity>| matches!(affinity, None | Some(Affinity::Blob));
                let (bound, convert_rows) = if numeric(left_affinity) && !numeric(right_affinity) {
                    (bound, Some(Affinity::Numeric))
                } else if numeric(right_affinity) && !numeric(left_affinity) {
                    (Expr::Affinity(Box::new(bound), Affinity::Numeric), None)
                } else if left_affinity == Some(Affinity::Text) && weak(right_affinity) {
                    (bound, Some(Affinity::Text))
                } else if right_affinity == Some(Affinity::Text) && weak(left_affinity) {
                    (Expr::Affinity(Box::new(bound), Affinity::Text), None)
                } else {
                    (bound, None)
                };
                let subquery = Arc::new(Subquery { row_affinity: convert_rows, ..subquery });
                if subquery.plan.width() != 1 {
                    return Err(Error::syntax(format!(
                        "sub-select returns {} columns - expected 1",
                        subquery.plan.width()
                    )));
                }
                Expr::InSubquery { expr: Box::new(bound), subquery, negated: *negated }
            }
            E::AnyOp { left, compare_op: ast::BinaryOperator::Eq, right, .. } => match right.as_ref() {
                // x = ANY(SELECT ...) is x IN (SELECT ...).
                E::Subquery(query) => {
                    let in_subquery = E::InSubquery { expr: left.clone(), subquery: query.clone(), negated: false };
                    return self.bind_expr(&in_subquery, scope);
                }
                array => Expr::Function(
                    ScalarFunction::ArrayContains,
                    vec![self.bind_expr(array, scope)?, self.bind_expr(left, scope)?],
                ),
            },
            E::CompoundFieldAccess { root, access_chain } => {
                self.bind_compound_access(expr, root, access_chain, scope)?
            }
            // `ARRAY[a, b, ...]`: an array literal of the elements' text ([`tern_exec::types::array`]).
            E::Array(array) => Expr::Function(
                ScalarFunction::ArrayConstruct,
                array.elem.iter().map(|item| self.bind_expr(item, scope)).collect::<Result<Vec<_>>>()?,
            ),
            // PostgreSQL's row constructor without ROW: `(a, b)`.
            E::Tuple(items) if self.dialect == Dialect::Postgres => Expr::Function(
                ScalarFunction::Row,
                items.iter().map(|item| self.bind_expr(item, scope)).collect::<Result<Vec<_>>>()?,
            ),
            E::Exists { subquery, negated } => {
                Expr::Exists { subquery: self.subquery(subquery, scope)?, negated: *negated }
            }
            E::Subquery(query) => {
                let subquery = self.subquery(query, scope)?;
                if subquery.plan.width() != 1 {
                    return Err(Error::syntax(format!(
                        "sub-select returns {} columns - expected 1",
                        subquery.plan.width()
                    )));
                }
                Expr::ScalarSubquery(subquery)
            }
            E::Case { operand, conditions, else_result, .. } => Expr::Case {
                // CASE x WHEN y compares as x = y does (with comparison affinity).
                operand: None,
                whens: conditions
                    .iter()
                    .map(|when| {
                        let condition = match operand {
                            Some(operand) => self.bind_comparison(BinaryOp::Eq, operand, &when.condition, scope)?,
                            None => self.bind_expr(&when.condition, scope)?,
                        };
                        Ok((condition, self.bind_expr(&when.result, scope)?))
                    })
                    .collect::<Result<_>>()?,
                otherwise: else_result
                    .as_ref()
                    .map(|otherwise| self.bind_expr(otherwise, scope).map(Box::new))
                    .transpose()?,
            },
            E::Cast { expr: inner, data_type, format, .. } => {
                if format.is_some() {
                    return Err(Error::unsupported("CAST ... FORMAT"));
                }
                if let Some(bound) = self.bind_catalog_cast(inner, data_type, scope)? {
                    return Ok(bound);
                }
                if let Some(domain) = crate::ddl::domain::of_type(self.catalog, &data_type.to_string()).cloned() {
                    return self.bind_domain_cast(inner, &domain, scope);
                }
                if let Some(id) = tern_exec::types::enum_type::of_type(self.catalog, &data_type.to_string()) {
                    return Ok(Expr::Cast(Box::new(self.bind_expr(inner, scope)?), CastType::Enum(id)));
                }
                if let Some(id) = tern_exec::types::composite::of_type(self.catalog, &data_type.to_string()) {
                    return Ok(Expr::Cast(Box::new(self.bind_expr(inner, scope)?), CastType::Composite(id)));
                }
                if self.dialect == Dialect::Postgres
                    && !tern_exec::catalog::pgtype::is_type_name(&data_type.to_string())
                {
                    return Err(Error::new("42704", format!("type \"{data_type}\" does not exist")));
                }
                let to = CastType::of_affinity(affinity_of_type_in(data_type, self.dialect)?);
                Expr::Cast(Box::new(self.bind_expr(inner, scope)?), to)
            }
            E::Like { negated, any, expr: inner, pattern, escape_char }
            | E::ILike { negated, any, expr: inner, pattern, escape_char } => {
                if *any {
                    return Err(Error::unsupported("LIKE ANY"));
                }
                // PostgreSQL's LIKE tells cases apart and escapes with a backslash unless told
                // otherwise; ILIKE and SQLite's LIKE fold ASCII case.
                let exact = self.dialect.exact_like();
                let escape = match escape_char {
                    Some(escape) => Some(Box::new(self.bind_value(escape)?)),
                    None if exact => Some(Box::new(Expr::Literal(Value::Text("\\".into())))),
                    None => None,
                };
                Expr::Like {
                    expr: Box::new(self.bind_expr(inner, scope)?),
                    pattern: Box::new(self.bind_expr(pattern, scope)?),
                    escape,
                    negated: *negated,
                    glob: false,
                    case_sensitive: exact && matches!(expr, E::Like { .. }),
                }
            }
            E::IsUnknown(inner) => Expr::IsNull(Box::new(self.bind_expr(inner, scope)?), false),
            E::IsNotUnknown(inner) => Expr::IsNull(Box::new(self.bind_expr(inner, scope)?), true),
            E::Function(function) => self.bind_function(function, scope)?,
            E::Substring { expr: inner, substring_from, substring_for, .. } => {
                let mut args = vec![self.bind_expr(inner, scope)?];
                args.push(match substring_from {
                    Some(from) => self.bind_expr(from, scope)?,
                    None => Expr::Literal(Value::Integer(1)),
                });
                if let Some(length) = substring_for {
                    args.push(self.bind_expr(length, scope)?);
                }
                Expr::Function(ScalarFunction::Substr, args)
            }
            E::Trim { expr: inner, trim_where, trim_what, trim_characters } => {
                if trim_characters.is_some() {
                    return Err(Error::unsupported("TRIM with a character list"));
                }
                let function = match trim_where {
                    Some(ast::TrimWhereField::Leading) => ScalarFunction::Ltrim,
                    Some(ast::TrimWhereField::Trailing) => ScalarFunction::Rtrim,
                    _ => ScalarFunction::Trim,
                };
                let mut args = vec![self.bind_expr(inner, scope)?];
                if let Some(what) = trim_what {
                    args.push(self.bind_expr(what, scope)?);
                }
                Expr::Function(function, args)
            }
            E::Ceil { expr: inner, .. } => Expr::Function(ScalarFunction::Ceil, vec![self.bind_expr(inner, scope)?]),
            E::Floor { expr: inner, .. } => Expr::Function(ScalarFunction::Floor, vec![self.bind_expr(inner, scope)?]),
            E::TypedString(typed) => self.bind_typed_string(typed)?,
            E::Interval(interval) => self.bind_interval(interval, scope)?,
            E::Extract { field, expr: inner, .. } => self.bind_extract(field, inner, scope)?,
            E::AtTimeZone { timestamp, time_zone } => self.bind_at_time_zone(timestamp, time_zone, scope)?,
            E::Collate { expr: inner, collation } => {
                let name = collation.to_string().to_ascii_lowercase().replace('"', "");
                let name = name.strip_prefix("pg_catalog.").unwrap_or(&name);
                if !matches!(name, "binary" | "c" | "posix" | "default") {
                    return Err(Error::unsupported(format!("collation {collation}")));
                }
                self.bind_expr(inner, scope)?
            }
            other => return Err(Error::unsupported(format!("expression {other}"))),
        })
    }

    fn bind_value(&mut self, value: &ast::Value) -> Result<Expr> {
        use ast::Value as V;
        Ok(Expr::Literal(match value {
            V::Number(text, _) => {
                if let Ok(integer) = text.parse::<i64>() {
                    Value::Integer(integer)
                } else if let Some(hex) = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
                    Value::Integer(
                        u64::from_str_radix(hex, 16)
                            .map_err(|_| Error::syntax(format!("hex literal too big: {text}")))?
                            as i64,
                    )
                } else {
                    Value::Real(text.parse::<f64>().map_err(|_| Error::syntax(format!("bad number {text}")))?)
                }
            }
            V::SingleQuotedString(text)
            | V::DoubleQuotedString(text)
            | V::EscapedStringLiteral(text)
            | V::NationalStringLiteral(text) => Value::Text(text.clone()),
            V::HexStringLiteral(hex) => {
                if hex.len() % 2 != 0 || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
                    return Err(Error::syntax(format!("malformed blob literal X'{hex}'")));
                }
                Value::Blob(
                    (0..hex.len()).step_by(2).map(|at| u8::from_str_radix(&hex[at..at + 2], 16).unwrap_or(0)).collect(),
                )
            }
            // PostgreSQL's TRUE and FALSE are booleans (a client reads `t`/`f`).
            V::Boolean(truth) if self.dialect == Dialect::Postgres => {
                return Ok(Expr::Cast(Box::new(Expr::Literal(Value::Integer(i64::from(*truth)))), CastType::Boolean));
            }
            V::Boolean(truth) => Value::Integer(i64::from(*truth)),
            V::Null => Value::Null,
            V::Placeholder(text) => return self.bind_parameter(text),
            other => return Err(Error::unsupported(format!("literal {other}"))),
        }))
    }

    fn bind_function(&mut self, function: &ast::Function, scope: &Scope) -> Result<Expr> {
        let name = match function.name.0.last() {
            Some(ast::ObjectNamePart::Identifier(ident)) => lower(ident),
            _ => return Err(Error::syntax(format!("bad function name {}", function.name))),
        };
        let (args, distinct, star) = match &function.args {
            ast::FunctionArguments::None => (Vec::new(), false, false),
            ast::FunctionArguments::Subquery(query) if name == "array" => {
                return self.bind_array_subquery(query, scope);
            }
            ast::FunctionArguments::Subquery(_) => {
                return Err(Error::unsupported("a subquery as the only function argument"));
            }
            ast::FunctionArguments::List(list) => {
                if list.clauses.iter().any(|clause| !matches!(clause, ast::FunctionArgumentClause::OrderBy(_))) {
                    return Err(Error::unsupported("clauses inside a function's arguments other than ORDER BY"));
                }
                let distinct = matches!(list.duplicate_treatment, Some(ast::DuplicateTreatment::Distinct));
                let mut args = Vec::new();
                let mut star = false;
                for arg in &list.args {
                    match arg {
                        ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(expr)) => args.push(expr),
                        ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Wildcard) => star = true,
                        _ => return Err(Error::unsupported("named or qualified-wildcard arguments")),
                    }
                }
                (args, distinct, star)
            }
        };
        if name == "raise" {
            return self.bind_raise(&args, scope);
        }
        if !function.within_group.is_empty() || matches!(name.as_str(), "percentile_cont" | "percentile_disc" | "mode")
        {
            return self.bind_ordered_set(&name, function, &args, scope);
        }
        if name == "grouping" && function.over.is_some() {
            return Err(Error::new("42809", "grouping() is not a window function"));
        }
        let aggregate = match (name.as_str(), args.len()) {
            ("count", 0) if star => Some(AggregateFunction::CountStar),
            ("count", 1) => Some(AggregateFunction::Count),
            ("sum", 1) => Some(AggregateFunction::Sum),
            ("total", 1) => Some(AggregateFunction::Total),
            ("avg", 1) => Some(AggregateFunction::Avg),
            // Booleans are 0 and 1: bool_and is their minimum, bool_or their maximum.
            ("min" | "bool_and" | "every", 1) => Some(AggregateFunction::Min),
            ("max" | "bool_or", 1) => Some(AggregateFunction::Max),
            ("group_concat", 1 | 2) | ("string_agg", 2) => Some(AggregateFunction::GroupConcat),
            ("array_agg", 1) => Some(AggregateFunction::ArrayAgg),
            ("grouping", count) if count > 0 && !star && !distinct => Some(AggregateFunction::Grouping),
            (name, count) if Statistic::lookup(name).is_some_and(|(_, arity)| arity == count) => {
                Statistic::lookup(name).map(|(statistic, _)| AggregateFunction::Statistic(statistic))
            }
            (name, _) if Statistic::lookup(name).is_some() => {
                return Err(Error::new("42883", format!("wrong number of arguments to function {name}()")));
            }
            ("count" | "sum" | "total" | "avg" | "group_concat" | "string_agg" | "array_agg", _) => {
                return Err(Error::new("42883", format!("wrong number of arguments to function {name}()")));
            }
            _ => None,
        };
        if function.over.is_some() {
            if star && aggregate.is_none() {
                return Err(Error::syntax(format!("{name}(*) is not a window function call")));
            }
            return self.bind_window_call(&name, function, &args, aggregate, distinct, scope);
        }
        let order_by: &[ast::OrderByExpr] = match &function.args {
            ast::FunctionArguments::List(list) => list
                .clauses
                .iter()
                .find_map(|clause| match clause {
                    ast::FunctionArgumentClause::OrderBy(order_by) => Some(order_by.as_slice()),
                    _ => None,
                })
                .unwrap_or_default(),
            _ => &[],
        };
        if !order_by.is_empty() && (aggregate.is_none() || function.over.is_some()) {
            return Err(Error::unsupported(format!("ORDER BY in the arguments of {name}() (only of aggregates)")));
        }
        if let Some(aggregate) = aggregate {
            let refusal =
                self.window_refusal.replace(("42803", "aggregate function calls cannot contain window function calls"));
            let bound = self.bind_aggregate_args(&args, function.filter.as_deref(), scope).and_then(|bound| {
                let keys = order_by
                    .iter()
                    .map(|term| Ok(sort_key(self.bind_expr(&term.expr, scope)?, &term.options, self.dialect)))
                    .collect::<Result<Vec<_>>>()?;
                Ok((bound, keys))
            });
            self.window_refusal = refusal;
            let ((bound, filter), order_by) = bound?;
            if distinct && bound.len() != 1 {
                return Err(Error::syntax("DISTINCT aggregates must have exactly one argument"));
            }
            if order_by.iter().any(|key| key.expr.contains_aggregate()) {
                return Err(Error::grouping("aggregate function calls cannot be nested"));
            }
            return Ok(Expr::Aggregate(Box::new(AggregateCall {
                function: aggregate,
                args: bound,
                distinct,
                filter,
                order_by,
            })));
        }
        if function.filter.is_some() {
            return Err(Error::new("42809", format!("FILTER specified, but {name} is not an aggregate function")));
        }
        if star || distinct {
            return Err(Error::syntax(format!("{name}() does not take * or DISTINCT")));
        }
        // glob(pattern, text) and like(pattern, text[, escape]) are the operators as functions.
        if (name == "glob" && args.len() == 2) || (name == "like" && (2..=3).contains(&args.len())) {
            let pattern = self.bind_expr(args[0], scope)?;
            let text = self.bind_expr(args[1], scope)?;
            let escape = args.get(2).map(|escape| self.bind_expr(escape, scope).map(Box::new)).transpose()?;
            return Ok(Expr::Like {
                expr: Box::new(text),
                pattern: Box::new(pattern),
                escape,
                negated: false,
                glob: name == "glob",
                case_sensitive: false,
            });
        }
        // CURRENT_TIMESTAMP / CURRENT_DATE / CURRENT_TIME (and PostgreSQL's now()): typed in
        // the postgres dialect, the time of day in UTC as text in SQLite's.
        if args.is_empty()
            && let Some(clock) = self.bind_clock(&name)
        {
            return Ok(clock);
        }
        // PostgreSQL's function-style cast `date(x)`.
        if name == "date" && args.len() == 1 && self.dialect == Dialect::Postgres {
            let inner = self.bind_expr(args[0], scope)?;
            return Ok(Expr::Cast(Box::new(inner), CastType::Temporal(tern_exec::types::temporal::TemporalKind::Date)));
        }
        if let Some(bound) = self.bind_catalog_function(&name, &args, scope)? {
            return Ok(bound);
        }
        let json = tern_exec::functions::json_functions::JsonBuild::lookup(&name)
            .or_else(|| tern_exec::functions::json_functions::JsonBuild::lookup_to(&name).map(|build| (build, 1, 1)));
        if let Some((build, min_args, max_args)) = json {
            if args.len() < min_args || args.len() > max_args {
                return Err(Error::new("42883", format!("wrong number of arguments to function {name}()")));
            }
            let mut bound = args.iter().map(|arg| self.bind_expr(arg, scope)).collect::<Result<Vec<_>>>()?;
            let kinds = json_argument_kinds(&bound, scope);
            bound.insert(0, Expr::Literal(Value::Text(kinds)));
            return Ok(Expr::Function(ScalarFunction::Json(build), bound));
        }
        if let Some((function, min_args, max_args)) = tern_exec::plan::TableFunction::lookup(&name) {
            if args.len() < min_args || args.len() > max_args {
                return Err(Error::new("42883", format!("wrong number of arguments to function {name}()")));
            }
            let bound = args.iter().map(|arg| self.bind_expr(arg, scope)).collect::<Result<Vec<_>>>()?;
            self.set_returning_calls += 1;
            return Ok(Expr::Function(ScalarFunction::SetReturning(function), bound));
        }
        let Some((scalar, min_args, max_args)) = ScalarFunction::lookup(&name) else {
            if let Some(def) = self.catalog.functions.get(&name).cloned() {
                return self.bind_sql_function_call(&def, &args, scope);
            }
            return Err(Error::undefined_function(&name));
        };
        if args.len() < min_args || args.len() > max_args {
            return Err(Error::new("42883", format!("wrong number of arguments to function {name}()")));
        }
        let bound = args.iter().map(|arg| self.bind_expr(arg, scope)).collect::<Result<Vec<_>>>()?;
        Ok(Expr::Function(scalar, bound))
    }

    /// A binary operator: arithmetic, comparisons, logic, bits, `||`, regular expressions and
    /// the JSON operators (`OPERATOR(pg_catalog.op)` is the operator itself).
    fn bind_binary_op(
        &mut self,
        left: &ast::Expr,
        op: &ast::BinaryOperator,
        right: &ast::Expr,
        scope: &Scope,
    ) -> Result<Expr> {
        use ast::BinaryOperator as B;
        // OPERATOR(pg_catalog.op) is the operator itself.
        let named;
        let op = match op {
            B::PGCustomBinaryOperator(parts) if parts.len() == 2 && parts[0].eq_ignore_ascii_case("pg_catalog") => {
                named = match parts[1].as_str() {
                    "~" => B::PGRegexMatch,
                    "~*" => B::PGRegexIMatch,
                    "!~" => B::PGRegexNotMatch,
                    "!~*" => B::PGRegexNotIMatch,
                    "=" => B::Eq,
                    "<>" | "!=" => B::NotEq,
                    "<" => B::Lt,
                    "<=" => B::LtEq,
                    ">" => B::Gt,
                    ">=" => B::GtEq,
                    "||" => B::StringConcat,
                    "+" => B::Plus,
                    "-" => B::Minus,
                    _ => return Err(Error::unsupported(format!("operator {op}"))),
                };
                &named
            }
            other => other,
        };
        let json_operator = match op {
            B::Arrow => Some(tern_exec::functions::json_operators::JsonOperator::Get),
            B::LongArrow => Some(tern_exec::functions::json_operators::JsonOperator::GetText),
            B::HashArrow => Some(tern_exec::functions::json_operators::JsonOperator::Path),
            B::HashLongArrow => Some(tern_exec::functions::json_operators::JsonOperator::PathText),
            B::AtArrow => Some(tern_exec::functions::json_operators::JsonOperator::Contains),
            B::ArrowAt => Some(tern_exec::functions::json_operators::JsonOperator::ContainedBy),
            _ => None,
        };
        if let Some(operator) = json_operator {
            return self.bind_json_operator(operator, left, right, scope);
        }
        if let B::PGRegexMatch | B::PGRegexIMatch | B::PGRegexNotMatch | B::PGRegexNotIMatch = op {
            let case_insensitive = matches!(op, B::PGRegexIMatch | B::PGRegexNotIMatch);
            let call = Expr::Function(
                ScalarFunction::RegexMatch,
                vec![
                    self.bind_expr(left, scope)?,
                    self.bind_expr(right, scope)?,
                    Expr::Literal(Value::Integer(i64::from(case_insensitive))),
                ],
            );
            let negated = matches!(op, B::PGRegexNotMatch | B::PGRegexNotIMatch);
            return Ok(if negated { Expr::Unary(UnaryOp::Not, Box::new(call)) } else { call });
        }
        let op = match op {
            B::Plus => BinaryOp::Add,
            B::Minus => BinaryOp::Sub,
            B::Multiply => BinaryOp::Mul,
            B::Divide => BinaryOp::Div,
            B::Modulo => BinaryOp::Mod,
            B::StringConcat => BinaryOp::Concat,
            B::Eq => BinaryOp::Eq,
            B::NotEq => BinaryOp::NotEq,
            B::Lt => BinaryOp::Lt,
            B::LtEq => BinaryOp::LtEq,
            B::Gt => BinaryOp::Gt,
            B::GtEq => BinaryOp::GtEq,
            B::And => BinaryOp::And,
            B::Or => BinaryOp::Or,
            B::BitwiseAnd => BinaryOp::BitAnd,
            B::BitwiseOr => BinaryOp::BitOr,
            B::PGBitwiseShiftLeft => BinaryOp::ShiftLeft,
            B::PGBitwiseShiftRight => BinaryOp::ShiftRight,
            other => return Err(Error::unsupported(format!("operator {other}"))),
        };
        if op.is_comparison() {
            return self.bind_comparison(op, left, right, scope);
        }
        let (left, right) = (self.bind_expr(left, scope)?, self.bind_expr(right, scope)?);
        Ok(fold_date_arithmetic(op, left, right))
    }

    /// A JSON operator: on `json` or `jsonb` by the left operand's type (for containment, either
    /// side's); an untyped literal reads as `json`, as PostgreSQL resolves it.
    fn bind_json_operator(
        &mut self,
        operator: tern_exec::functions::json_operators::JsonOperator,
        left: &ast::Expr,
        right: &ast::Expr,
        scope: &Scope,
    ) -> Result<Expr> {
        use tern_exec::functions::json_operators::{JsonOp, JsonOperator};
        let left = self.bind_expr(left, scope)?;
        let right = self.bind_expr(right, scope)?;
        let containment = matches!(operator, JsonOperator::Contains | JsonOperator::ContainedBy);
        let binary = match (json_type(&left, scope), json_type(&right, scope)) {
            (Some(binary), _) => binary,
            (None, Some(binary)) if containment => binary,
            (None, _) if containment => {
                return Err(Error::unsupported("@> and <@ on values other than jsonb"));
            }
            (None, _) => false,
        };
        if containment && !binary {
            return Err(Error::new("42883", "operator does not exist: json @> json (containment needs jsonb)"));
        }
        Ok(Expr::Function(ScalarFunction::JsonOperator(JsonOp { operator, binary }), vec![left, right]))
    }

    /// The ordered-set aggregates `percentile_cont(f)`, `percentile_disc(f)` and `mode()`
    /// `WITHIN GROUP (ORDER BY x [DESC])`: an aggregate of (x, f).
    fn bind_ordered_set(
        &mut self,
        name: &str,
        function: &ast::Function,
        args: &[&ast::Expr],
        scope: &Scope,
    ) -> Result<Expr> {
        let [order] = function.within_group.as_slice() else {
            return Err(Error::new(
                "42883",
                format!("{name} is an ordered-set aggregate: it needs WITHIN GROUP (ORDER BY one expression)"),
            ));
        };
        let descending = order.options.asc == Some(false);
        let aggregate = match (name, args.len()) {
            ("percentile_cont", 1) => AggregateFunction::Percentile { continuous: true, descending },
            ("percentile_disc", 1) => AggregateFunction::Percentile { continuous: false, descending },
            ("mode", 0) => AggregateFunction::Mode { descending },
            _ => {
                return Err(Error::new(
                    "42883",
                    format!("function {name} with {} arguments WITHIN GROUP does not exist", args.len()),
                ));
            }
        };
        if function.over.is_some() {
            return Err(Error::new("0A000", format!("OVER is not supported for ordered-set aggregate {name}")));
        }
        let mut arguments = vec![&order.expr];
        arguments.extend(args.iter().copied());
        let (bound, filter) = self.bind_aggregate_args(&arguments, function.filter.as_deref(), scope)?;
        Ok(Expr::Aggregate(Box::new(AggregateCall {
            function: aggregate,
            args: bound,
            distinct: false,
            filter,
            order_by: Vec::new(),
        })))
    }

    /// `CAST(x AS domain)`: the cast to the base type, checked against the domain's checks.
    fn bind_domain_cast(
        &mut self,
        inner: &ast::Expr,
        domain: &tern_exec::catalog::objects::DomainDef,
        scope: &Scope,
    ) -> Result<Expr> {
        let cast = cast_to(inner.clone(), &domain.base_type)?;
        let Some(condition) = crate::ddl::domain::check_over(domain, &cast)? else {
            return self.bind_expr(&cast, scope);
        };
        let value = self.bind_expr(&cast, scope)?;
        let condition = self.bind_expr(&condition, scope)?;
        Ok(Expr::Function(
            ScalarFunction::CheckDomain,
            vec![value, condition, Expr::Literal(Value::Text(domain.name.clone()))],
        ))
    }

    /// SQLite's `RAISE(IGNORE)` and `RAISE(ABORT|FAIL|ROLLBACK, message)` in a trigger.
    fn bind_raise(&mut self, args: &[&ast::Expr], scope: &Scope) -> Result<Expr> {
        let kind = match args.first() {
            Some(ast::Expr::Identifier(ident)) => ident.value.to_ascii_lowercase(),
            _ => return Err(Error::syntax("RAISE needs IGNORE, ABORT, FAIL or ROLLBACK")),
        };
        let message = match (kind.as_str(), args.get(1), args.len()) {
            ("ignore", None, 1) => Expr::Literal(Value::Null),
            ("abort" | "fail" | "rollback", Some(message), 2) => self.bind_expr(message, scope)?,
            _ => return Err(Error::syntax(format!("bad RAISE({kind}, ...)"))),
        };
        Ok(Expr::Function(ScalarFunction::Raise, vec![Expr::Literal(Value::Text(kind)), message]))
    }

    /// An aggregate's arguments and FILTER condition, which may not contain aggregates.
    fn bind_aggregate_args(
        &mut self,
        args: &[&ast::Expr],
        filter: Option<&ast::Expr>,
        scope: &Scope,
    ) -> Result<(Vec<Expr>, Option<Box<Expr>>)> {
        let bound = args.iter().map(|arg| self.bind_expr(arg, scope)).collect::<Result<Vec<_>>>()?;
        let filter = filter.map(|filter| self.bind_expr(filter, scope)).transpose()?;
        if bound.iter().chain(&filter).any(Expr::contains_aggregate) {
            return Err(Error::grouping("aggregate function calls cannot be nested"));
        }
        Ok((bound, filter.map(Box::new)))
    }

    /// `ARRAY(subquery)`: the subquery's values as an array literal (`{}` when it has no rows).
    fn bind_array_subquery(&mut self, query: &ast::Query, scope: &Scope) -> Result<Expr> {
        let mut wrapper =
            parse_query("SELECT coalesce(array_agg(element), '{}') FROM (SELECT 1) AS elements(element)")?;
        let ast::SetExpr::Select(select) = wrapper.body.as_mut() else {
            return Err(Error::internal("ARRAY() wrapper is not a SELECT"));
        };
        let ast::TableFactor::Derived { subquery, .. } = &mut select.from[0].relation else {
            return Err(Error::internal("ARRAY() wrapper has no derived table"));
        };
        **subquery = query.clone();
        Ok(Expr::ScalarSubquery(self.subquery(&wrapper, scope)?))
    }

    /// `array[i]`, and `(row).field.field...` on values of composite types.
    fn bind_compound_access(
        &mut self,
        expr: &ast::Expr,
        root: &ast::Expr,
        access_chain: &[ast::AccessExpr],
        scope: &Scope,
    ) -> Result<Expr> {
        // `t.column[i]`: the leading names are the qualified column the subscript applies to.
        if let ast::Expr::Identifier(first) = root
            && let Some(subscript) =
                access_chain.iter().position(|access| matches!(access, ast::AccessExpr::Subscript(_)))
            && subscript > 0
        {
            let names: Option<Vec<ast::Ident>> = std::iter::once(Some(first.clone()))
                .chain(access_chain[..subscript].iter().map(|access| match access {
                    ast::AccessExpr::Dot(ast::Expr::Identifier(name)) => Some(name.clone()),
                    _ => None,
                }))
                .collect();
            if let Some(names) = names {
                let column = ast::Expr::CompoundIdentifier(names);
                return self.bind_compound_access(expr, &column, &access_chain[subscript..], scope);
            }
        }
        Ok(match access_chain {
            [ast::AccessExpr::Subscript(ast::Subscript::Index { index })] => Expr::Function(
                ScalarFunction::ArrayElement,
                vec![self.bind_expr(root, scope)?, self.bind_expr(index, scope)?],
            ),
            chain => {
                // `(row).field.field...`: fields of composite values.
                let fields: Option<Vec<&ast::Ident>> = chain
                    .iter()
                    .map(|access| match access {
                        ast::AccessExpr::Dot(ast::Expr::Identifier(field)) => Some(field),
                        _ => None,
                    })
                    .collect();
                let Some(fields) = fields else { return Err(Error::unsupported(format!("expression {expr}"))) };
                let mut bound = self.bind_expr(root, scope)?;
                for field in fields {
                    bound = self.bind_field_access(bound, field, scope)?;
                }
                bound
            }
        })
    }

    /// `(value).field` on a value of a composite type: the field, typed as the field is.
    fn bind_field_access(&mut self, value: Expr, field: &ast::Ident, scope: &Scope) -> Result<Expr> {
        let Some(Affinity::Composite(id)) = self.expr_affinity(&value, scope) else {
            return Err(Error::new(
                "42809",
                format!("column notation .{} applied to a value that is not of a composite type", field.value),
            ));
        };
        let definition = id.get();
        let position = definition.field(&field.value).ok_or_else(|| {
            Error::new("42703", format!("column \"{}\" not found in data type {}", field.value, definition.name))
        })?;
        let access =
            Expr::Function(ScalarFunction::RecordField, vec![value, Expr::Literal(Value::Integer(position as i64))]);
        Ok(Expr::Cast(Box::new(access), CastType::of_affinity(definition.fields[position].affinity)))
    }

    /// Functions over the catalog's user types and SQL functions: `enum_first`, `enum_last`,
    /// `enum_range`, `format_type` of user types, `pg_get_function_result`,
    /// `pg_get_function_arguments`, `pg_function_is_visible`. `None` for other functions.
    fn bind_user_object_function(&mut self, name: &str, args: &[&ast::Expr], scope: &Scope) -> Result<Option<Expr>> {
        let arity = |min: usize, max: usize| check_arity(name, args.len(), min, max);
        Ok(Some(match name {
            "enum_first" | "enum_last" | "enum_range" => {
                let bound = args.iter().map(|arg| self.bind_expr(arg, scope)).collect::<Result<Vec<_>>>()?;
                let id = bound.iter().find_map(|arg| match self.expr_affinity(arg, scope) {
                    Some(Affinity::Enum(id)) => Some(id),
                    _ => None,
                });
                tern_exec::types::enum_type::functions::bind(name, id, bound)?
            }
            "format_type" if !self.catalog.enums.is_empty() || !self.catalog.composites.is_empty() => {
                arity(2, 2)?;
                let oid = self.bind_expr(args[0], scope)?;
                let typmod = self.bind_expr(args[1], scope)?;
                let enums = self.catalog.enums.values().map(|def| (def.oid, def.name.as_str()));
                let composites = self.catalog.composites.values().map(|def| (def.oid, def.name.as_str()));
                let user_types =
                    enums.chain(composites).map(|(oid, name)| (integer(i64::from(oid)), text(name))).collect();
                Expr::Case {
                    operand: Some(Box::new(oid.clone())),
                    whens: user_types,
                    otherwise: Some(Box::new(Expr::Function(ScalarFunction::FormatType, vec![oid, typmod]))),
                }
            }
            "pg_get_function_result" | "pg_get_function_arguments" | "pg_get_function_identity_arguments" => {
                arity(1, 1)?;
                let oid = self.bind_expr(args[0], scope)?;
                let describe = |def: &tern_exec::catalog::objects::FunctionDef| match name {
                    "pg_get_function_result" => crate::catalog::pg_proc::result(self.catalog, def),
                    _ => crate::catalog::pg_proc::arguments(self.catalog, def),
                };
                let pairs = self
                    .catalog
                    .functions
                    .values()
                    .map(|def| (integer(crate::catalog::pg_proc::function_oid(&def.name)), text(&describe(def))))
                    .collect();
                lookup(oid, pairs)
            }
            "pg_function_is_visible" => {
                arity(1, 1)?;
                let oid = self.bind_expr(args[0], scope)?;
                strict(oid, Expr::Literal(Value::Integer(1)))
            }
            _ => return Ok(None),
        }))
    }

    /// Functions that read the catalog (`pg_get_indexdef`, `pg_get_constraintdef`,
    /// `pg_get_viewdef`, `pg_get_userbyid`): bound to a CASE over the catalog this statement
    /// sees, so they cost nothing per row beyond the comparison. `None` for other functions.
    fn bind_catalog_function(&mut self, name: &str, args: &[&ast::Expr], scope: &Scope) -> Result<Option<Expr>> {
        if let Some(bound) = self.bind_user_object_function(name, args, scope)? {
            return Ok(Some(bound));
        }
        let arity = |min: usize, max: usize| check_arity(name, args.len(), min, max);
        Ok(Some(match name {
            // Built-in types by PostgreSQL's names, and the types CREATE TYPE made.
            "to_regtype" => {
                arity(1, 1)?;
                let bound = self.bind_expr(args[0], scope)?;
                self.type_oid_of_name(bound)
            }
            "pg_relation_size" | "pg_table_size" | "pg_indexes_size" | "pg_total_relation_size" => {
                arity(1, if name == "pg_relation_size" { 2 } else { 1 })?;
                // The argument is a regclass: a relation's name reads as its OID.
                let oid = match self.bind_expr(args[0], scope)? {
                    Expr::Literal(Value::Text(relation)) if relation.trim().parse::<i64>().is_err() => integer(
                        crate::catalog::system::relation_oid(self.catalog, relation.trim_matches('"'))
                            .ok_or_else(|| Error::undefined_table(&relation))?,
                    ),
                    other => other,
                };
                // Forks other than the main one are empty.
                let main_fork = match args.get(1) {
                    Some(fork) => Some(self.bind_expr(fork, scope)?),
                    None => None,
                };
                let objects = crate::catalog::system::relation_objects(self.catalog, name);
                let listed = Expr::Case {
                    operand: Some(Box::new(oid)),
                    whens: objects.into_iter().map(|(oid, ids)| (integer(oid), text(&ids))).collect(),
                    otherwise: None,
                };
                let bytes = Expr::Function(ScalarFunction::ObjectBytes, vec![listed]);
                match main_fork {
                    None => bytes,
                    Some(fork) => Expr::Case {
                        operand: Some(Box::new(fork)),
                        whens: vec![(text("main"), bytes)],
                        otherwise: Some(Box::new(integer(0))),
                    },
                }
            }
            // Every object is in `public`; `true` adds the implicit `pg_catalog`.
            "current_schemas" => {
                arity(1, 1)?;
                let implicit = self.bind_expr(args[0], scope)?;
                let schemas = Expr::Case {
                    operand: None,
                    whens: vec![(implicit, text("{pg_catalog,public}"))],
                    otherwise: Some(Box::new(text("{public}"))),
                };
                Expr::Cast(
                    Box::new(schemas),
                    CastType::Array(
                        tern_exec::catalog::pgtype::array_of(tern_exec::catalog::pgtype::NAME).unwrap_or(1003),
                    ),
                )
            }
            "pg_database_size" => {
                arity(1, 1)?;
                let database = self.bind_expr(args[0], scope)?;
                // The one database, by name or OID: every key stored.
                strict(database, Expr::Function(ScalarFunction::ObjectBytes, vec![text("*")]))
            }
            "pg_get_userbyid" => {
                arity(1, 1)?;
                self.bind_expr(args[0], scope)?;
                Expr::Function(ScalarFunction::CurrentUser, Vec::new())
            }
            "pg_get_indexdef" => {
                arity(1, 3)?;
                let oid = self.bind_expr(args[0], scope)?;
                let column = match args.get(1) {
                    Some(column) => self.bind_expr(column, scope)?,
                    None => integer(0),
                };
                let definitions = crate::catalog::system::definitions(self.catalog);
                let pairs = definitions
                    .indexes
                    .iter()
                    .map(|(index_oid, definition, columns)| {
                        let mut per_column = vec![(integer(0), text(definition))];
                        per_column.extend(
                            columns
                                .iter()
                                .enumerate()
                                .map(|(position, name)| (integer(position as i64 + 1), text(name))),
                        );
                        (integer(*index_oid), lookup(column.clone(), per_column))
                    })
                    .collect();
                lookup(oid, pairs)
            }
            "to_regclass" => {
                arity(1, 1)?;
                let name = self.bind_expr(args[0], scope)?;
                if let Expr::Literal(Value::Text(name)) = &name {
                    let oid = crate::catalog::system::relation_oid(self.catalog, name.trim_matches('"'));
                    return Ok(Some(oid.map_or(Expr::Literal(Value::Null), integer)));
                }
                let lowered = Expr::Function(ScalarFunction::Lower, vec![name]);
                let pairs = crate::catalog::system::relation_names(self.catalog)
                    .into_iter()
                    .map(|(oid, name)| (text(&name), integer(oid)))
                    .collect();
                lookup(lowered, pairs)
            }
            "pg_get_serial_sequence" => {
                // The sequence a SERIAL or identity column owns, by 'table' (or 'public.table')
                // and 'column'.
                arity(2, 2)?;
                let table = self.bind_expr(args[0], scope)?;
                let column = self.bind_expr(args[1], scope)?;
                let key = Expr::Function(
                    ScalarFunction::Lower,
                    vec![Expr::Binary(
                        BinaryOp::Concat,
                        Box::new(Expr::Binary(BinaryOp::Concat, Box::new(table), Box::new(text(".")))),
                        Box::new(column),
                    )],
                );
                let pairs = self
                    .catalog
                    .sequences
                    .values()
                    .filter_map(|def| def.owned_by.as_ref().map(|(table, column)| (table, column, &def.name)))
                    .flat_map(|(table, column, sequence)| {
                        let qualified = text(&format!("public.{sequence}"));
                        [
                            (text(&format!("{table}.{column}")), qualified.clone()),
                            (text(&format!("public.{table}.{column}")), qualified),
                        ]
                    })
                    .collect();
                lookup(key, pairs)
            }
            // On the search path (pg_catalog, public): every relation but information_schema's.
            "pg_table_is_visible" => {
                arity(1, 1)?;
                let oid = self.bind_expr(args[0], scope)?;
                let hidden = crate::catalog::system::information_schema_oids();
                let visible = Expr::Case {
                    operand: Some(Box::new(oid.clone())),
                    whens: hidden
                        .into_iter()
                        .map(|oid| (integer(oid), Expr::Function(ScalarFunction::AlwaysFalse, Vec::new())))
                        .collect(),
                    otherwise: Some(Box::new(Expr::Function(ScalarFunction::AlwaysTrue, Vec::new()))),
                };
                strict(oid, visible)
            }
            "obj_description" | "col_description" => {
                arity(if name == "col_description" { 2 } else { 1 }, 2)?;
                let oid = self.bind_expr(args[0], scope)?;
                let second = args.get(1).map(|arg| self.bind_expr(arg, scope)).transpose()?;
                self.description_lookup(name == "col_description", oid, second)
            }
            "pg_get_constraintdef" | "pg_get_viewdef" => {
                arity(1, 2)?;
                let oid = self.bind_expr(args[0], scope)?;
                let definitions = crate::catalog::system::definitions(self.catalog);
                let source = if name == "pg_get_viewdef" { &definitions.views } else { &definitions.constraints };
                lookup(oid, source.iter().map(|(oid, definition)| (integer(*oid), text(definition))).collect())
            }
            _ => return Ok(None),
        }))
    }

    /// `obj_description(oid [, 'catalog'])` (`columns` false) or `col_description(oid, attnum)`:
    /// the comment, looked up by a CASE over the comments of the catalog this statement sees.
    fn description_lookup(&self, columns: bool, oid: Expr, second: Option<Expr>) -> Expr {
        let mut by_oid: std::collections::BTreeMap<i64, Vec<(Expr, Expr)>> = Default::default();
        for (objoid, classoid, objsubid, description) in crate::ddl::comment::descriptions(self.catalog) {
            let key = match (columns, objsubid) {
                (true, 0) | (false, 1..) => continue,
                (true, _) => integer(objsubid),
                (false, _) => text(if classoid == 2615 { "pg_namespace" } else { "pg_class" }),
            };
            by_oid.entry(objoid).or_default().push((key, text(&description)));
        }
        let pairs = by_oid
            .into_iter()
            .map(|(objoid, mut described)| {
                let found = match &second {
                    None => described.swap_remove(0).1,
                    Some(key) => lookup(key.clone(), described),
                };
                (integer(objoid), found)
            })
            .collect();
        lookup(oid, pairs)
    }

    /// Casts to PostgreSQL's catalog types: `regclass` (a relation's name <-> OID),
    /// `regnamespace`, `regtype`, `oid`, `name`, and arrays (kept as their text). `None` for
    /// other types.
    fn bind_catalog_cast(
        &mut self,
        inner: &ast::Expr,
        data_type: &ast::DataType,
        scope: &Scope,
    ) -> Result<Option<Expr>> {
        let type_name = match data_type {
            ast::DataType::Array(_) => {
                let bound = self.bind_expr(inner, scope)?;
                let oid = tern_exec::catalog::pgtype::declared_oid(&data_type.to_string());
                return Ok(Some(Expr::Cast(Box::new(bound), CastType::Array(oid))));
            }
            ast::DataType::Regclass => "regclass".to_string(),
            ast::DataType::Custom(name, _) => object_name(name)?,
            _ => return Ok(None),
        };
        let mut bound = match type_name.as_str() {
            "regclass" | "regnamespace" | "regtype" | "oid" | "name" | "regproc" => self.bind_expr(inner, scope)?,
            "regprocedure" | "regrole" | "regoper" | "regconfig" => {
                return Err(Error::unsupported(format!("the type {type_name}")));
            }
            _ => return Ok(None),
        };
        let literal = |value: Value| Expr::Literal(value);
        Ok(Some(match type_name.as_str() {
            "regclass" => {
                if let Expr::Literal(Value::Text(name)) = &bound {
                    // An OID written as digits is an OID; anything else names a relation.
                    match name.trim().parse::<i64>() {
                        Ok(oid) => bound = literal(Value::Integer(oid)),
                        Err(_) => {
                            let oid = crate::catalog::system::relation_oid(self.catalog, name.trim_matches('"'))
                                .ok_or_else(|| Error::undefined_table(name))?;
                            return Ok(Some(literal(Value::Integer(oid))));
                        }
                    }
                }
                let names = crate::catalog::system::relation_names(self.catalog);
                // A value that is not a known OID may be a name (a parameter, a column of
                // names): it reads as its relation's OID.
                let by_name = Expr::Case {
                    operand: Some(Box::new(Expr::Function(ScalarFunction::Lower, vec![bound.clone()]))),
                    whens: crate::catalog::system::regclass_names(self.catalog)
                        .into_iter()
                        .map(|(name, oid)| (literal(Value::Text(name)), literal(Value::Integer(oid))))
                        .collect(),
                    otherwise: Some(Box::new(bound.clone())),
                };
                Expr::Case {
                    operand: Some(Box::new(bound)),
                    whens: names
                        .into_iter()
                        .map(|(oid, name)| (literal(Value::Integer(oid)), literal(Value::Text(name))))
                        .collect(),
                    otherwise: Some(Box::new(by_name)),
                }
            }
            // A schema's name reads as its OID, as a relation's does.
            "regnamespace"
                if let Expr::Literal(Value::Text(name)) = &bound
                    && name.trim().parse::<i64>().is_err() =>
            {
                let name = name.trim_matches('"').to_ascii_lowercase();
                let oid = crate::catalog::system::namespace_oid(&name)
                    .ok_or_else(|| Error::new("3F000", format!("schema \"{name}\" does not exist")))?;
                literal(Value::Integer(oid))
            }
            "regnamespace" => Expr::Case {
                operand: Some(Box::new(bound.clone())),
                whens: [
                    (crate::catalog::system::PG_CATALOG_OID, "pg_catalog"),
                    (crate::catalog::system::PUBLIC_OID, "public"),
                    (crate::catalog::system::INFORMATION_SCHEMA_OID, "information_schema"),
                ]
                .into_iter()
                .map(|(oid, name)| (literal(Value::Integer(oid)), literal(Value::Text(name.into()))))
                .collect(),
                otherwise: Some(Box::new(bound)),
            },
            "regtype" => match &bound {
                // A type's name (a literal, or a parameter as drivers send it): its OID, which
                // compares with `pg_type.oid` (42704 if there is no such type).
                Expr::Literal(Value::Text(name)) if name.trim().parse::<i64>().is_err() => {
                    let oid = tern_exec::catalog::pgtype::oid_of_name(name)
                        .or_else(|| self.user_type_oid(name))
                        .ok_or_else(|| Error::new("42704", format!("type \"{name}\" does not exist")))?;
                    literal(Value::Integer(i64::from(oid)))
                }
                Expr::Param(_) => {
                    Expr::Function(ScalarFunction::TypeOid, vec![self.type_oid_of_name(bound.clone()), bound])
                }
                // An OID: the type's name (what a regtype prints).
                _ => Expr::Function(ScalarFunction::FormatType, vec![bound, literal(Value::Integer(-1))]),
            },
            "name" => Expr::Cast(Box::new(bound), CastType::Text),
            // Tern's catalog names functions by their names (`pg_am.amhandler`); OID 0 is `-`.
            "regproc" => Expr::Case {
                operand: Some(Box::new(bound.clone())),
                whens: vec![(literal(Value::Integer(0)), literal(Value::Text("-".into())))],
                otherwise: Some(Box::new(Expr::Cast(Box::new(bound), CastType::Text))),
            },
            "oid" => Expr::Cast(Box::new(bound), CastType::Oid),
            _ => Expr::Cast(Box::new(bound), CastType::Integer),
        }))
    }

    /// The OIDs and names of the types CREATE TYPE made (enums and composites).
    fn user_type_oids(&self) -> Vec<(u32, String)> {
        let enums = self.catalog.enums.values().map(|def| (def.oid, def.name.to_ascii_lowercase()));
        let composites = self.catalog.composites.values().map(|def| (def.oid, def.name.to_ascii_lowercase()));
        enums.chain(composites).collect()
    }

    /// The OID of the type `name` names when it runs (NULL if none): the built-in types'
    /// names, and those of the types CREATE TYPE made.
    fn type_oid_of_name(&self, name: Expr) -> Expr {
        let literal = |value: Value| Expr::Literal(value);
        Expr::Case {
            operand: Some(Box::new(name.clone())),
            whens: self
                .user_type_oids()
                .into_iter()
                .map(|(oid, known)| (literal(Value::Text(known)), literal(Value::Integer(i64::from(oid)))))
                .collect(),
            otherwise: Some(Box::new(Expr::Function(ScalarFunction::ToRegtype, vec![name]))),
        }
    }

    /// The OID of a type CREATE TYPE made, by name.
    fn user_type_oid(&self, name: &str) -> Option<u32> {
        let name = name.trim().trim_matches('"').to_ascii_lowercase();
        let name = name.strip_prefix("public.").unwrap_or(&name);
        self.user_type_oids().into_iter().find(|(_, known)| known == name).map(|(oid, _)| oid)
    }

    /// Binds a table's single-table scan with a WHERE clause (UPDATE and DELETE), choosing
    /// its access path. The plan's rows are the table's full rows.
    pub fn bind_table_scan(
        &mut self,
        table: &Arc<TableDef>,
        selection: Option<&ast::Expr>,
    ) -> Result<(Plan, Scope<'static>)> {
        let scope = Scope::new(table_columns(table, &table.name.to_ascii_lowercase()), None);
        let mut conjuncts = Vec::new();
        if let Some(selection) = selection {
            let predicate = self.bind_expr(selection, &scope)?;
            split_conjuncts(predicate, &mut conjuncts);
        }
        let indexes = self.catalog.table_indexes(&table.name);
        let (access, _) = choose_access(table, &indexes, &conjuncts);
        let filter = conjoin(conjuncts);
        Ok((Plan::Scan { table: table.clone(), access, filter, reverse: false }, scope))
    }
}

pub fn parse_query(sql: &str) -> Result<ast::Query> {
    let dialect = sqlparser::dialect::SQLiteDialect {};
    let mut parser = sqlparser::parser::Parser::new(&dialect).try_with_sql(sql)?;
    Ok(*parser.parse_query()?)
}

fn derived_columns(
    alias_name: &str,
    columns: &[OutputColumn],
    names: &[String],
    alias: &Option<ast::TableAlias>,
) -> Result<Vec<ScopeColumn>> {
    let alias_columns: Vec<String> = match alias {
        Some(alias) if !alias.columns.is_empty() => alias.columns.iter().map(|column| lower(&column.name)).collect(),
        _ => names.to_vec(),
    };
    if !alias_columns.is_empty() && alias_columns.len() != columns.len() {
        return Err(Error::syntax(format!(
            "{alias_name} has {} columns but {} column names were given",
            columns.len(),
            alias_columns.len()
        )));
    }
    Ok(columns
        .iter()
        .enumerate()
        .map(|(index, column)| ScopeColumn {
            table: if alias_name.is_empty() { None } else { Some(alias_name.to_string()) },
            name: alias_columns.get(index).cloned().unwrap_or_else(|| column.name.to_ascii_lowercase()),
            affinity: column.affinity,
            merged: false,
            system: false,
        })
        .collect())
}

/// An ORDER BY term; where NULLs go when it does not say is the dialect's.
pub(crate) fn sort_key(expr: Expr, options: &ast::OrderByOptions, dialect: tern_exec::dialect::Dialect) -> SortKey {
    let descending = options.asc == Some(false);
    let nulls_first = options.nulls_first.unwrap_or(dialect.nulls_first(descending));
    SortKey { expr, descending, nulls_first }
}

/// Whether `plan` (a projection of one table's scan) already yields rows in the order of `keys`
/// because they are the table's primary key in order, all ascending or all descending; if
/// so the scan is set to run in that direction and no sort is needed.
fn scan_order_satisfies(plan: &mut Plan, keys: &[SortKey]) -> bool {
    let Plan::Project { input, exprs } = plan else { return false };
    let Plan::Scan { table, access, reverse, .. } = input.as_mut() else { return false };
    if !matches!(
        access,
        Access::Full | Access::PrimaryKeyRange { .. } | Access::PrimaryKeyPoints(_) | Access::PrimaryKeyPrefix(_)
    ) {
        return false;
    }
    if keys.len() > table.primary_key.len() || keys.is_empty() {
        return false;
    }
    let descending = keys[0].descending;
    for (key, &pk_column) in keys.iter().zip(&table.primary_key) {
        let Expr::Column(output) = key.expr else { return false };
        // NULL placement matters only for columns that can hold NULL (the row id cannot).
        let nullable = !table.columns[pk_column].not_null && table.rowid_alias != Some(pk_column);
        if key.descending != descending || exprs.get(output) != Some(&Expr::Column(pk_column)) || nullable {
            return false;
        }
    }
    *reverse = descending;
    true
}

/// A WINDOW clause names each window once.
fn check_named_windows(windows: &[ast::NamedWindowDefinition]) -> Result<()> {
    for (at, definition) in windows.iter().enumerate() {
        if windows[..at].iter().any(|earlier| lower(&earlier.0) == lower(&definition.0)) {
            return Err(Error::new("42P20", format!("window \"{}\" is already defined", lower(&definition.0))));
        }
    }
    Ok(())
}

/// `date '1994-01-01' + interval '1' year` of two literals is computed once, while binding,
/// instead of for every row it is compared with (TPC-H writes its date ranges so). Only
/// date and time arithmetic is folded, and only when it succeeds: an error is left to be
/// raised when (and if) the expression is evaluated.
fn fold_date_arithmetic(op: BinaryOp, left: Expr, right: Expr) -> Expr {
    if let (BinaryOp::Add | BinaryOp::Sub, Expr::Literal(a), Expr::Literal(b)) = (op, &left, &right)
        && (matches!(a, Value::Temporal(_)) || matches!(b, Value::Temporal(_)))
        && let Ok(value) = tern_exec::functions::arithmetic(op, a, b)
        && matches!(value, Value::Temporal(_))
    {
        return Expr::Literal(value);
    }
    Expr::Binary(op, Box::new(left), Box::new(right))
}

pub fn split_conjuncts(expr: Expr, out: &mut Vec<Expr>) {
    match expr {
        Expr::Binary(BinaryOp::And, left, right) => {
            split_conjuncts(*left, out);
            split_conjuncts(*right, out);
        }
        other => out.push(other),
    }
}

pub(crate) fn conjoin(exprs: Vec<Expr>) -> Option<Expr> {
    exprs.into_iter().reduce(|left, right| Expr::Binary(BinaryOp::And, Box::new(left), Box::new(right)))
}

/// Replaces aggregate calls by columns of the aggregate's output (group-by values first), and
/// bare columns by an any-value aggregate, top-down so that whole group-by expressions match.
/// Rewrites an output expression of an aggregate query over the aggregate row: group keys and
/// aggregate calls become its columns, bare columns `AnyValue` aggregates. Correlated
/// subqueries get `group_row` (see [`Subquery::group_row`]).
fn lift_aggregates(
    expr: Expr,
    group_by: &[Expr],
    aggregates: &mut Vec<AggregateCall>,
    group_row: Option<usize>,
) -> Expr {
    if let Some(index) = group_by.iter().position(|group| *group == expr) {
        return Expr::Column(index);
    }
    let regroup = |subquery: Arc<Subquery>| match group_row {
        Some(offset) if subquery.correlated => Arc::new(Subquery {
            plan: subquery.plan.clone(),
            correlated: true,
            id: subquery.id,
            row_affinity: subquery.row_affinity,
            group_row: Some(offset),
        }),
        _ => subquery,
    };
    let add = |call: AggregateCall, aggregates: &mut Vec<AggregateCall>| {
        let index = match aggregates.iter().position(|existing| *existing == call) {
            Some(index) => index,
            None => {
                aggregates.push(call);
                aggregates.len() - 1
            }
        };
        Expr::Column(group_by.len() + index)
    };
    match expr {
        Expr::Aggregate(call) => add(*call, aggregates),
        Expr::Column(index) => {
            add(AggregateCall::plain(AggregateFunction::AnyValue, vec![Expr::Column(index)]), aggregates)
        }
        Expr::ScalarSubquery(subquery) => Expr::ScalarSubquery(regroup(subquery)),
        Expr::Exists { subquery, negated } => Expr::Exists { subquery: regroup(subquery), negated },
        Expr::InSubquery { expr, subquery, negated } => Expr::InSubquery {
            expr: Box::new(lift_aggregates(*expr, group_by, aggregates, group_row)),
            subquery: regroup(subquery),
            negated,
        },
        other => tern_exec::limits::with_stack(|| {
            other.map_children(&mut |child| lift_aggregates(child, group_by, aggregates, group_row))
        }),
    }
}

/// Turns an inner hash join whose right side is a full scan of a table into an index
/// nested-loop join when one key of the right side is the table's (one-column) primary key or
/// the first column of one of its indexes. Returns the plan and whether it changed.
fn lookup_join(catalog: &Catalog, join: Plan) -> (Plan, bool) {
    let Plan::Join { left, right, kind: JoinKind::Inner, left_keys, right_keys, condition } = join else {
        return (join, false);
    };
    let Plan::Scan { table, access: Access::Full, filter, reverse: false } = *right else {
        return (Plan::Join { left, right, kind: JoinKind::Inner, left_keys, right_keys, condition }, false);
    };
    let indexes = catalog.table_indexes(&table.name);
    let choice = right_keys.iter().enumerate().find_map(|(position, key)| {
        let Expr::Column(column) = key else { return None };
        if table.primary_key.first() == Some(column) {
            return Some((position, None));
        }
        indexes.iter().find(|index| index.columns[0] == *column).map(|index| (position, Some(index.clone())))
    });
    let Some((position, index)) = choice else {
        let right = Box::new(Plan::Scan { table, access: Access::Full, filter, reverse: false });
        return (Plan::Join { left, right, kind: JoinKind::Inner, left_keys, right_keys, condition }, false);
    };
    let left_width = left.width();
    let mut rest = Vec::new();
    let mut left_key = None;
    for (at, (left_side, right_side)) in left_keys.into_iter().zip(right_keys).enumerate() {
        if at == position {
            left_key = Some(left_side);
        } else {
            rest.push(Expr::Binary(BinaryOp::Eq, Box::new(left_side), Box::new(right_side.shift_columns(left_width))));
        }
    }
    rest.extend(condition);
    let left_key = left_key.expect("the chosen key");
    (
        Plan::LookupJoin {
            left,
            table,
            index,
            left_key,
            right_filter: filter,
            condition: conjoin(rest),
            kind: JoinKind::Inner,
        },
        true,
    )
}

/// Builds a join of two plans; equalities between one column side of each become hash keys.
pub(crate) fn make_join(left: Plan, right: Plan, left_width: usize, kind: JoinKind, conditions: Vec<Expr>) -> Plan {
    let mut conjuncts = Vec::new();
    for condition in conditions {
        split_conjuncts(condition, &mut conjuncts);
    }
    let mut left_keys = Vec::new();
    let mut right_keys = Vec::new();
    let mut rest = Vec::new();
    for conjunct in conjuncts {
        match equi_sides(&conjunct, |column| column < left_width) {
            Some((left_key, right_key)) => {
                left_keys.push(left_key);
                right_keys.push(right_key.shift_columns_down(left_width));
            }
            None => rest.push(conjunct),
        }
    }
    // A conjunct of the right side alone decides which right rows can match at all: in an
    // inner, left, semi or anti join it filters the right input before the join (as
    // PostgreSQL pushes an outer join's ON restrictions of the nullable side to its scan).
    // Not in a right or full join, whose right rows all come out.
    let (pushed, rest): (Vec<Expr>, Vec<Expr>) = rest.into_iter().partition(|conjunct| {
        matches!(kind, JoinKind::Inner | JoinKind::Left | JoinKind::Semi | JoinKind::Anti)
            && reads_only_from(conjunct, left_width)
    });
    let right = match conjoin(pushed.into_iter().map(|conjunct| conjunct.shift_columns_down(left_width)).collect()) {
        None => right,
        Some(predicate) => match right {
            Plan::Scan { table, access, filter, reverse } => {
                let filter = Some(match filter {
                    Some(filter) => Expr::Binary(BinaryOp::And, Box::new(filter), Box::new(predicate)),
                    None => predicate,
                });
                Plan::Scan { table, access, filter, reverse }
            }
            other => Plan::Filter { input: Box::new(other), predicate },
        },
    };
    Plan::Join { left: Box::new(left), right: Box::new(right), kind, left_keys, right_keys, condition: conjoin(rest) }
}

/// Whether `expr` reads columns, all at or past `first`, and nothing a filter below the join
/// would evaluate differently: no subquery, no volatile or session function.
fn reads_only_from(expr: &Expr, first: usize) -> bool {
    let columns = expr.columns();
    let mut plain = true;
    expr.walk(&mut |node| {
        if let Expr::Function(function, _) = node
            && (tern_exec::functions::is_volatile(*function, &[]) || tern_exec::exec::is_context_function(*function))
        {
            plain = false;
        }
        if matches!(node, Expr::Outer { .. } | Expr::Aggregate(_) | Expr::Window(_)) {
            plain = false;
        }
    });
    plain && !columns.is_empty() && columns.iter().all(|&column| column >= first) && !has_subquery(expr)
}

/// If `expr` is `a = b` with `a` reading only left columns and `b` only right columns (or the
/// reverse), returns (left side, right side). Both sides must read at least one column and
/// no correlated subquery.
pub(crate) fn equi_sides(expr: &Expr, is_left: impl Fn(usize) -> bool) -> Option<(Expr, Expr)> {
    let Expr::Binary(BinaryOp::Eq, a, b) = expr else { return None };
    let side = |expr: &Expr| -> Option<bool> {
        let columns = expr.columns();
        if columns.is_empty() || has_subquery(expr) {
            return None;
        }
        let left = columns.iter().all(|&column| is_left(column));
        let right = columns.iter().all(|&column| !is_left(column));
        if left {
            Some(true)
        } else if right {
            Some(false)
        } else {
            None
        }
    };
    match (side(a)?, side(b)?) {
        (true, false) => Some(((**a).clone(), (**b).clone())),
        (false, true) => Some(((**b).clone(), (**a).clone())),
        _ => None,
    }
}

fn has_correlated_subquery(expr: &Expr) -> bool {
    let mut found = false;
    expr.walk(&mut |expr| {
        found |= matches!(expr, Expr::InSubquery { subquery, .. } | Expr::Exists { subquery, .. } | Expr::ScalarSubquery(subquery) if subquery.correlated)
    });
    found
}

/// Orders inner joins and pushes conjuncts down. The output columns are in FROM order.
fn plan_joins(catalog: &Catalog, relations: Vec<Relation>, conjuncts: Vec<Conjunct>, total_width: usize) -> Plan {
    let count = relations.len();
    let mut pending: Vec<Option<Conjunct>> = conjuncts.into_iter().map(Some).collect();
    // Push single-relation conjuncts (and constant ones, to the first relation).
    let mut plans: Vec<Option<(Plan, usize, usize, u32)>> = Vec::with_capacity(count);
    for (index, relation) in relations.into_iter().enumerate() {
        let mut own = Vec::new();
        for slot in pending.iter_mut() {
            let take = matches!(slot, Some(conjunct) if (conjunct.relations == [index]) || (index == 0 && conjunct.relations.is_empty()));
            if take && let Some(conjunct) = slot.take() {
                own.push(conjunct.expr.shift_columns_down(relation.offset));
            }
        }
        let (plan, score) = push_filters(catalog, relation.plan, own);
        plans.push(Some((plan, relation.offset, relation.width, score)));
    }
    let order = if count == 1 {
        vec![0]
    } else {
        let placed: Vec<optimizer::join_order::Relation> = plans
            .iter()
            .flatten()
            .map(|(plan, offset, _, _)| optimizer::join_order::Relation { plan, offset: *offset })
            .collect();
        let joining: Vec<(&[usize], &Expr)> =
            pending.iter().flatten().map(|conjunct| (conjunct.relations.as_slice(), &conjunct.expr)).collect();
        match optimizer::join_order::estimated_order(catalog, &placed, &joining) {
            Some(order) => {
                // Implied equalities join where the order needs them (and filter nothing more
                // where the stated ones already joined).
                pending.extend(order.implied.into_iter().map(|(relations, expr)| Some(Conjunct { expr, relations })));
                order.relations
            }
            None => {
                let scores: Vec<u32> = plans.iter().flatten().map(|(_, _, _, score)| *score).collect();
                rule_order(&scores, &joining)
            }
        }
    };
    let (mut plan, offset, width, start_score) = plans[order[0]].take().expect("relation");
    // Whether the joined rows so far come from a selective access (a key or index lookup or
    // range) and lookups: then the next table is joined by looking up each row in its primary
    // key or an index instead of scanning it whole for a hash join.
    let mut small = start_score >= 4;
    // position[from_column] = position in the current joined row
    let mut position = vec![usize::MAX; total_width];
    for column in 0..width {
        position[offset + column] = column;
    }
    let mut current_width = width;
    for (joined_count, &next) in order.iter().enumerate().skip(1) {
        let (right, right_offset, right_width, _) = plans[next].take().expect("relation");
        for column in 0..right_width {
            position[right_offset + column] = current_width + column;
        }
        let joined_so_far = &order[..=joined_count];
        // Conjuncts now fully covered become the join's keys or condition.
        let mut conditions = Vec::new();
        for slot in pending.iter_mut() {
            let ready = matches!(slot, Some(conjunct) if conjunct.relations.iter().all(|r| joined_so_far.contains(r)));
            if ready && let Some(conjunct) = slot.take() {
                conditions.push(conjunct.expr.remap_columns(&position));
            }
        }
        let joined = make_join(plan, right, current_width, JoinKind::Inner, conditions);
        let (joined, by_lookup) = if small { lookup_join(catalog, joined) } else { (joined, false) };
        small = small && by_lookup;
        plan = joined;
        current_width += right_width;
    }
    // Anything left (should not happen) is a filter.
    let leftover: Vec<Expr> =
        pending.into_iter().flatten().map(|conjunct| conjunct.expr.remap_columns(&position)).collect();
    if let Some(predicate) = conjoin(leftover) {
        plan = Plan::Filter { input: Box::new(plan), predicate };
    }
    let identity = order.len() == 1 || position.iter().enumerate().all(|(from, &to)| from == to);
    if identity {
        plan
    } else {
        Plan::Project { input: Box::new(plan), exprs: position.into_iter().map(Expr::Column).collect() }
    }
}

/// The join order without statistics: start with the relation of the most selective access
/// path (`scores`, by relation), then follow equalities (each step the connected relation with
/// the best access).
fn rule_order(scores: &[u32], conditions: &[(&[usize], &Expr)]) -> Vec<usize> {
    let count = scores.len();
    let score = |index: usize| scores[index];
    let start = (0..count).max_by_key(|&index| (score(index), std::cmp::Reverse(index))).unwrap_or(0);
    let mut order = vec![start];
    while order.len() < count {
        let connected = |index: usize| {
            conditions
                .iter()
                .any(|(joined, _)| joined.contains(&index) && joined.iter().all(|r| *r == index || order.contains(r)))
        };
        let next = (0..count)
            .filter(|index| !order.contains(index))
            .max_by_key(|&index| (connected(index), score(index), std::cmp::Reverse(index)))
            .expect("a relation is left");
        order.push(next);
    }
    order
}

/// Adds filters to a relation's plan, choosing an access path for a table scan. Returns the
/// plan and a selectivity score (higher = fewer rows expected).
fn push_filters(catalog: &Catalog, plan: Plan, filters: Vec<Expr>) -> (Plan, u32) {
    if filters.is_empty() {
        return (plan, 0);
    }
    match plan {
        Plan::Scan { table, access: Access::Full, filter: None, reverse } => {
            let indexes = catalog.table_indexes(&table.name);
            let (access, score) = choose_access(&table, &indexes, &filters);
            (Plan::Scan { table, access, filter: conjoin(filters), reverse }, score.max(1))
        }
        other => (Plan::Filter { input: Box::new(other), predicate: conjoin(filters).expect("filters") }, 1),
    }
}

/// `column op value` facts usable for access paths.
enum Fact {
    Equal(usize, Expr),
    In(usize, Vec<Expr>),
    Lower(usize, Expr, bool),
    Upper(usize, Expr, bool),
}

fn facts(filters: &[Expr]) -> Vec<Fact> {
    let mut facts = Vec::new();
    for filter in filters {
        match filter {
            Expr::Binary(op, left, right) if op.is_comparison() && *op != BinaryOp::NotEq => {
                let (column, value, op) = match (left.as_ref(), right.as_ref()) {
                    (Expr::Column(column), value) if value.is_row_independent() => (*column, value.clone(), *op),
                    (value, Expr::Column(column)) if value.is_row_independent() => {
                        (*column, value.clone(), op.flipped())
                    }
                    _ => continue,
                };
                facts.push(match op {
                    BinaryOp::Eq => Fact::Equal(column, value),
                    BinaryOp::Gt => Fact::Lower(column, value, false),
                    BinaryOp::GtEq => Fact::Lower(column, value, true),
                    BinaryOp::Lt => Fact::Upper(column, value, false),
                    _ => Fact::Upper(column, value, true),
                });
            }
            Expr::InList { expr, list, negated: false } => {
                if let Expr::Column(column) = expr.as_ref()
                    && list.iter().all(Expr::is_row_independent)
                    && !list.is_empty()
                {
                    facts.push(Fact::In(*column, list.clone()));
                }
            }
            _ => {}
        }
    }
    facts
}

/// Values a column must equal (one tuple element per alternative), if the filters say so.
fn equal_values(facts: &[Fact], column: usize) -> Option<Vec<Expr>> {
    facts
        .iter()
        .find_map(|fact| match fact {
            Fact::Equal(c, value) if *c == column => Some(vec![value.clone()]),
            _ => None,
        })
        .or_else(|| {
            facts.iter().find_map(|fact| match fact {
                Fact::In(c, values) if *c == column && values.len() <= 1024 => Some(values.clone()),
                _ => None,
            })
        })
}

/// A bound of a range: the value and whether it is included.
type RangeBound = Option<(Expr, bool)>;

/// The key tuples of the longest leading run of `columns` that the facts fix to values (each
/// column equal to one value or to one of an IN list's; at most 1,024 combinations), and how
/// many columns that run has.
fn equal_tuples(facts: &[Fact], columns: &[usize]) -> (Vec<Vec<Expr>>, usize) {
    let mut tuples: Vec<Vec<Expr>> = vec![Vec::new()];
    let mut matched = 0;
    for &column in columns {
        match equal_values(facts, column) {
            Some(values) if tuples.len() * values.len() <= 1024 => {
                tuples = tuples
                    .into_iter()
                    .flat_map(|tuple| {
                        values.iter().map(move |value| {
                            let mut extended = tuple.clone();
                            extended.push(value.clone());
                            extended
                        })
                    })
                    .collect();
                matched += 1;
            }
            _ => break,
        }
    }
    (tuples, matched)
}

fn range_of(facts: &[Fact], column: usize) -> (RangeBound, RangeBound) {
    let lower = facts.iter().find_map(|fact| match fact {
        Fact::Lower(c, value, inclusive) if *c == column => Some((value.clone(), *inclusive)),
        _ => None,
    });
    let upper = facts.iter().find_map(|fact| match fact {
        Fact::Upper(c, value, inclusive) if *c == column => Some((value.clone(), *inclusive)),
        _ => None,
    });
    (lower, upper)
}

/// Chooses the access path of a single-table scan from its filters: a primary-key lookup, an
/// index lookup on leading equal columns, a range on the primary key or an index, or a full
/// scan. The filters are always checked again on the rows found, so an access path only has
/// to find a superset of the matching rows.
pub fn choose_access(table: &TableDef, indexes: &[Arc<IndexDef>], filters: &[Expr]) -> (Access, u32) {
    let facts = facts(filters);
    if facts.is_empty() {
        return (Access::Full, 1);
    }
    // Primary key: every column equal (or one IN list); else its leading columns equal.
    let mut best: Option<(usize, Access)> = None;
    if !table.primary_key.is_empty() {
        let (tuples, matched) = equal_tuples(&facts, &table.primary_key);
        if matched == table.primary_key.len() {
            return (Access::PrimaryKeyPoints(tuples), 10);
        }
        if matched > 0 {
            best = Some((matched, Access::PrimaryKeyPrefix(tuples)));
        }
    }
    // An index with leading equal columns: the one with the most (the primary key's prefix on
    // a tie, as it needs no second read per row).
    for index in indexes {
        let (tuples, matched) = equal_tuples(&facts, &index.columns);
        if matched > 0 && best.as_ref().is_none_or(|(best_matched, _)| matched > *best_matched) {
            best = Some((matched, Access::IndexPoints { index: index.clone(), keys: tuples }));
        }
    }
    if let Some((matched, access)) = best {
        let full =
            matches!(&access, Access::IndexPoints { index, .. } if index.unique && index.columns.len() == matched);
        return (access, if full { 9 } else { 6 });
    }
    // A range on the primary key's first column, then on an index's first column.
    if !table.primary_key.is_empty() {
        let (lower, upper) = range_of(&facts, table.primary_key[0]);
        if lower.is_some() || upper.is_some() {
            return (Access::PrimaryKeyRange { lower, upper }, 4);
        }
    }
    for index in indexes {
        let (lower, upper) = range_of(&facts, index.columns[0]);
        if lower.is_some() || upper.is_some() {
            return (Access::IndexRange { index: index.clone(), lower, upper }, 3);
        }
    }
    (Access::Full, 1)
}

pub fn parse_expr(sql: &str) -> Result<ast::Expr> {
    let dialect = sqlparser::dialect::SQLiteDialect {};
    Ok(sqlparser::parser::Parser::new(&dialect).try_with_sql(sql)?.parse_expr()?)
}

/// Rewrites a select's output expressions and its ORDER BY expressions with `rewrite`.
fn rewrite_outputs(
    project: &mut Vec<Expr>,
    order_exprs: &mut Vec<Option<Expr>>,
    mut rewrite: impl FnMut(Expr) -> Expr,
) {
    *project = std::mem::take(project).into_iter().map(&mut rewrite).collect();
    *order_exprs = std::mem::take(order_exprs).into_iter().map(|expr| expr.map(&mut rewrite)).collect();
}

/// Replaces each set-returning call in `expr` by a column after the `base` columns of the
/// ProjectSet's input, adding the call to `calls` (a call written twice runs once, as in
/// PostgreSQL, where both read the same rows). A call inside another's arguments stays, and
/// is refused when evaluated (0A000).
fn extract_set_returning(
    expr: Expr,
    base: usize,
    calls: &mut Vec<(tern_exec::plan::TableFunction, Vec<Expr>)>,
) -> Expr {
    match expr {
        Expr::Function(ScalarFunction::SetReturning(function), args) => {
            let call = (function, args);
            let index = calls.iter().position(|existing| *existing == call).unwrap_or_else(|| {
                calls.push(call);
                calls.len() - 1
            });
            Expr::Column(base + index)
        }
        other => {
            tern_exec::limits::with_stack(|| other.map_children(&mut |child| extract_set_returning(child, base, calls)))
        }
    }
}

/// The kinds [`tern_exec::functions::json_functions`] needs of its arguments, from their SQL types: `b` for
/// booleans, `j` for JSON, `-` for the others.
fn json_argument_kinds(args: &[Expr], scope: &Scope) -> String {
    use crate::session::describe::SqlType;
    let input = scope_types(scope);
    let mut inference = crate::session::describe::Inference::new(0);
    args.iter()
        .map(|arg| match inference.expr(arg, &input) {
            SqlType::Boolean => 'b',
            SqlType::Declared(name) if name == "json" || name == "jsonb" => 'j',
            _ => '-',
        })
        .collect()
}

/// What type inference needs to know of the scope's columns: booleans and JSON.
fn scope_types(scope: &Scope) -> Vec<crate::session::describe::SqlType> {
    use crate::session::describe::SqlType;
    scope
        .columns
        .iter()
        .map(|column| match column.affinity {
            Some(Affinity::Boolean) => SqlType::Boolean,
            Some(Affinity::Json(binary)) => SqlType::Declared(if binary { "jsonb" } else { "json" }.into()),
            _ => SqlType::Unknown,
        })
        .collect()
}

/// Whether an expression is `jsonb` (`Some(true)`), `json` (`Some(false)`) or neither.
fn json_type(expr: &Expr, scope: &Scope) -> Option<bool> {
    match crate::session::describe::Inference::new(0).expr(expr, &scope_types(scope)) {
        crate::session::describe::SqlType::Declared(name) if name == "jsonb" => Some(true),
        crate::session::describe::SqlType::Declared(name) if name == "json" => Some(false),
        _ => None,
    }
}
