//! Expression evaluation, apart from the executor.
//!
//! [`Evaluate`] holds the evaluator (its provided methods); what an expression needs from
//! its surroundings are the required methods: the statement's parameters and dialect, the
//! value-size limit, subquery results, and the functions that reach the session, sequences
//! or locks. The [`super::Executor`] provides all of them. A [`PureContext`] provides only
//! the first ones, and is `Sync`: the workers of a parallel scan evaluate with it the
//! expressions [`is_parallel_safe`] admits.

use super::in_set::{InSet, key_in};
use super::{Env, compare, ends_with_escape, text_bytes};
use crate::error::{Error, Result};
use crate::functions::{self, ScalarFunction};
use crate::plan::*;
use crate::value::{Affinity, Value};
use std::cmp::Ordering;
use std::collections::HashMap;
use std::sync::Arc;

/// The functions evaluated by [`Evaluate::context_function`]: they read or change the session,
/// sequences, advisory locks or the catalog, or run SQL.
pub fn is_context_function(function: ScalarFunction) -> bool {
    matches!(
        function,
        ScalarFunction::CurrentSetting
            | ScalarFunction::SetConfig
            | ScalarFunction::Version
            | ScalarFunction::CurrentDatabase
            | ScalarFunction::CurrentSchema
            | ScalarFunction::CurrentUser
            | ScalarFunction::BackendPid
            | ScalarFunction::NextVal
            | ScalarFunction::CurrVal
            | ScalarFunction::SetVal
            | ScalarFunction::LastVal
            | ScalarFunction::SequenceLastValue
            | ScalarFunction::SequenceIsCalled
            | ScalarFunction::Advisory(_)
            | ScalarFunction::ObjectBytes
            | ScalarFunction::SqlFunction
    )
}

/// What an expression needs from where it is evaluated, and the evaluator itself.
pub trait Evaluate {
    /// The statement's parameter values (`$1`, ...).
    fn params(&self) -> &[Value];
    fn dialect(&self) -> crate::dialect::Dialect;
    /// The statement's memory limit, which also bounds one value.
    fn memory_limit(&self) -> usize;
    /// The rows of a subquery, for the row `env` (cached when uncorrelated).
    fn subquery_rows(&self, subquery: &Subquery, env: &Env) -> Result<Arc<Vec<Row>>>;
    /// An uncorrelated subquery's first column hashed for `IN` (cached with its rows); `None`
    /// where there is no cache or the values cannot be hashed.
    fn subquery_in_set(&self, _subquery: &Subquery, _env: &Env) -> Result<Option<Arc<InSet>>> {
        Ok(None)
    }
    /// Notes that the statement called something volatile (random(), the current time).
    fn note_volatile(&self);
    /// A function of [`is_context_function`] on its argument values.
    fn context_function(&self, function: ScalarFunction, values: &[Value]) -> Result<Value>;

    /// Refuses to build a value larger than [`crate::limits::MAX_VALUE_BYTES`] or the
    /// statement's memory limit (54000), before its bytes are allocated.
    fn check_value_size(&self, bytes: usize) -> Result<()> {
        if bytes > crate::limits::MAX_VALUE_BYTES.min(self.memory_limit()) {
            return Err(Error::value_too_large(bytes));
        }
        Ok(())
    }

    fn eval(&self, expr: &Expr, env: &Env) -> Result<Value> {
        match expr {
            // Leaves do not recurse: no need to look at the stack (most evaluations are these).
            Expr::Column(_) | Expr::Literal(_) | Expr::Param(_) => Ok(self.operand(expr, env)?.into_owned()),
            _ => crate::limits::with_stack(|| self.eval_inner(expr, env)),
        }
    }

    /// An operand's value, borrowed from the row, the plan or the parameters when it is a
    /// column, a literal or a parameter (a comparison or arithmetic reads it without copying a
    /// string).
    fn operand<'a>(&'a self, expr: &'a Expr, env: &'a Env) -> Result<std::borrow::Cow<'a, Value>> {
        Ok(match expr {
            Expr::Column(index) => std::borrow::Cow::Borrowed(
                env.row.get(*index).ok_or_else(|| Error::internal(format!("column #{index} out of range")))?,
            ),
            Expr::Literal(value) => std::borrow::Cow::Borrowed(value),
            // A parameter compared on every row is borrowed, not copied per row.
            Expr::Param(index) => std::borrow::Cow::Borrowed(
                self.params()
                    .get(*index)
                    .ok_or_else(|| Error::invalid_parameter(format!("parameter ${} has no value", index + 1)))?,
            ),
            // The affinity a comparison gives a parameter (text for a text key) mostly leaves
            // it as it is.
            Expr::Affinity(inner, affinity)
                if matches!(**inner, Expr::Column(_) | Expr::Literal(_) | Expr::Param(_)) =>
            {
                let value = self.operand(inner, env)?;
                match affinity.leaves(&value) {
                    true => value,
                    false => std::borrow::Cow::Owned(self.eval(expr, env)?),
                }
            }
            other => std::borrow::Cow::Owned(self.eval(other, env)?),
        })
    }

    fn eval_inner(&self, expr: &Expr, env: &Env) -> Result<Value> {
        Ok(match expr {
            Expr::Literal(_) | Expr::Column(_) | Expr::Param(_) => self.operand(expr, env)?.into_owned(),
            Expr::Outer { depth, index } => {
                let mut scope = env;
                for _ in 0..*depth {
                    scope = scope.parent.ok_or_else(|| Error::internal("outer reference without an outer row"))?;
                }
                scope.row.get(*index).cloned().ok_or_else(|| Error::internal("outer column out of range"))?
            }
            Expr::Unary(op, inner) => self.eval_unary(op, inner, env)?,
            Expr::Binary(op, left, right) => self.eval_binary(op, left, right, env)?,
            Expr::Is { left, right, negated } => {
                let left = self.eval(left, env)?;
                let right = self.eval(right, env)?;
                let equal = match (left.is_null(), right.is_null()) {
                    (true, true) => true,
                    (false, false) => left.total_cmp(&right) == Ordering::Equal,
                    _ => false,
                };
                Value::Integer(i64::from(equal != *negated))
            }
            Expr::IsNull(inner, negated) => Value::Integer(i64::from(self.eval(inner, env)?.is_null() != *negated)),
            Expr::InList { .. } | Expr::InKeys { .. } | Expr::InSubquery { .. } => self.eval_in(expr, env)?,
            Expr::Exists { subquery, negated } => {
                let rows = self.subquery_rows(subquery, env)?;
                Value::Integer(i64::from(rows.is_empty() == *negated))
            }
            Expr::ScalarSubquery(subquery) => {
                let rows = self.subquery_rows(subquery, env)?;
                rows.first().map_or(Value::Null, |row| row[0].clone())
            }
            Expr::Case { .. } => self.eval_case(expr, env)?,
            Expr::Cast(inner, to) => to.cast(self.eval(inner, env)?)?,
            Expr::Affinity(inner, affinity) => match (affinity, self.eval(inner, env)?) {
                // Text meeting an enum must be one of its labels (22P02), as in PostgreSQL.
                (Affinity::Enum(_), text @ Value::Text(_)) => affinity.store(text)?,
                (_, value) => affinity.apply(value),
            },
            Expr::Like { .. } => self.eval_like(expr, env)?,
            Expr::Function(function, args) => self.eval_function(*function, args, env)?,
            Expr::Aggregate(_) => return Err(Error::grouping("misuse of aggregate function")),
            Expr::Window(_) => return Err(Error::new("42P20", "misuse of window function")),
        })
    }

    /// `CASE [operand] WHEN ... THEN ... [ELSE ...] END`: the first WHEN that holds (equals the
    /// operand, or is true) gives the result.
    fn eval_case(&self, expr: &Expr, env: &Env) -> Result<Value> {
        let Expr::Case { operand, whens, otherwise } = expr else {
            return Err(Error::internal("eval_case needs a CASE"));
        };
        let operand = match operand {
            Some(operand) => Some(self.eval(operand, env)?),
            None => None,
        };
        for (condition, result) in whens {
            let hit = match &operand {
                Some(operand) => operand.sql_cmp(&self.eval(condition, env)?) == Some(Ordering::Equal),
                None => self.eval(condition, env)?.truth() == Some(true),
            };
            if hit {
                return self.eval(result, env);
            }
        }
        match otherwise {
            Some(otherwise) => self.eval(otherwise, env),
            None => Ok(Value::Null),
        }
    }

    /// `LIKE` and `GLOB`, with an optional escape character.
    fn eval_like(&self, like: &Expr, env: &Env) -> Result<Value> {
        let Expr::Like { expr, pattern, escape, negated, glob, case_sensitive } = like else {
            return Err(Error::internal("eval_like needs a LIKE"));
        };
        let value = self.eval(expr, env)?;
        let pattern = self.eval(pattern, env)?;
        let escape = match escape {
            Some(escape) => match self.eval(escape, env)? {
                Value::Null => return Ok(Value::Null),
                other => {
                    let text = other.to_text();
                    let mut chars = text.chars();
                    match (chars.next(), chars.next()) {
                        (Some(c), None) => Some(c),
                        // PostgreSQL: ESCAPE '' turns escaping off.
                        (None, _) if self.dialect() == crate::dialect::Dialect::Postgres => None,
                        _ => return Err(Error::new("22025", "ESCAPE expression must be a single character")),
                    }
                }
            },
            None => None,
        };
        if value.is_null() || pattern.is_null() {
            return Ok(Value::Null);
        }
        let pattern = pattern.to_text();
        if pattern.len() > crate::limits::MAX_LIKE_PATTERN_BYTES {
            return Err(Error::new(
                "54000",
                format!(
                    "LIKE or GLOB pattern of {} bytes is too complex (at most {})",
                    pattern.len(),
                    crate::limits::MAX_LIKE_PATTERN_BYTES
                ),
            ));
        }
        if self.dialect() == crate::dialect::Dialect::Postgres
            && !*glob
            && let Some(escape) = escape
            && ends_with_escape(&pattern, escape)
        {
            return Err(Error::new("22025", "LIKE pattern must not end with escape character"));
        }
        let matched = functions::like(&value.to_text(), &pattern, escape, *glob, *case_sensitive);
        Ok(Value::Integer(i64::from(matched != *negated)))
    }

    /// A unary operator on `inner`'s value.
    fn eval_unary(&self, op: &UnaryOp, inner: &Expr, env: &Env) -> Result<Value> {
        let value = self.eval(inner, env)?;
        Ok(match op {
            UnaryOp::Plus => value,
            UnaryOp::Neg if matches!(value, Value::Temporal(_)) => match value {
                Value::Temporal(crate::types::temporal::Temporal::Interval(interval)) => Value::Temporal(
                    crate::types::temporal::Temporal::Interval(crate::types::temporal::arith::negate(interval)?),
                ),
                other => {
                    return Err(Error::new("42883", format!("operator does not exist: - {}", other.type_name())));
                }
            },
            UnaryOp::Neg => match value.to_numeric() {
                Value::Integer(integer) => match integer.checked_neg() {
                    Some(negated) => Value::Integer(negated),
                    None if self.dialect().strict_arithmetic() => {
                        return Err(Error::numeric_out_of_range("bigint out of range"));
                    }
                    None => Value::Real(-(integer as f64)),
                },
                Value::Real(real) => Value::Real(-real),
                Value::Decimal(exact) => Value::Decimal(crate::types::decimal::normalize_zero(-exact)),
                other => other,
            },
            UnaryOp::Not => match value.truth() {
                None => Value::Null,
                Some(truth) => Value::Integer(i64::from(!truth)),
            },
            UnaryOp::BitNot => match value.cast_integer() {
                Value::Integer(integer) => Value::Integer(!integer),
                other => other,
            },
        })
    }

    /// `IN` of a list, of a join's key set, or of a subquery.
    fn eval_in(&self, expr: &Expr, env: &Env) -> Result<Value> {
        match expr {
            Expr::InList { expr, list, negated } => {
                if list.is_empty() {
                    return Ok(Value::Integer(i64::from(*negated)));
                }
                let value = self.eval(expr, env)?;
                let candidates = list.iter().map(|item| self.eval(item, env).map(std::borrow::Cow::Owned));
                membership(&value, candidates, *negated)
            }
            Expr::InKeys { expr, keys } => {
                let value = self.operand(expr, env)?;
                Ok(Value::Integer(i64::from(!value.is_null() && key_in(keys, &value))))
            }
            Expr::InSubquery { expr, subquery, negated } => {
                let rows = self.subquery_rows(subquery, env)?;
                if rows.is_empty() {
                    return Ok(Value::Integer(i64::from(*negated)));
                }
                let value = self.eval(expr, env)?;
                if !value.is_null()
                    && let Some(set) = self.subquery_in_set(subquery, env)?
                    && let Some(found) = set.contains(&value)
                {
                    return Ok(found.map_or(Value::Null, |found| Value::Integer(i64::from(found != *negated))));
                }
                let candidates = rows.iter().map(|row| {
                    Ok(match subquery.row_affinity {
                        Some(affinity) => std::borrow::Cow::Owned(affinity.apply(row[0].clone())),
                        None => std::borrow::Cow::Borrowed(&row[0]),
                    })
                });
                membership(&value, candidates, *negated)
            }
            _ => Err(Error::internal("eval_in needs an IN expression")),
        }
    }

    /// A binary operator: AND and OR short-circuit, comparisons borrow their operands.
    fn eval_binary(&self, op: &BinaryOp, left: &Expr, right: &Expr, env: &Env) -> Result<Value> {
        Ok(match op {
            BinaryOp::And | BinaryOp::Or => {
                // The truth value that decides alone: false for AND, true for OR.
                let deciding = *op == BinaryOp::Or;
                let left = self.eval(left, env)?.truth();
                if left == Some(deciding) {
                    return Ok(Value::Integer(i64::from(deciding)));
                }
                match (left, self.eval(right, env)?.truth()) {
                    (_, Some(right)) if right == deciding => Value::Integer(i64::from(deciding)),
                    (Some(_), Some(_)) => Value::Integer(i64::from(!deciding)),
                    _ => Value::Null,
                }
            }
            op if op.is_comparison() => {
                let left = self.operand(left, env)?;
                let right = self.operand(right, env)?;
                compare(*op, &left, &right)
            }
            BinaryOp::Concat => {
                let (left, right) = (self.eval(left, env)?, self.eval(right, env)?);
                self.check_value_size(text_bytes(&left) + text_bytes(&right))?;
                functions::arithmetic(BinaryOp::Concat, &left, &right)?
            }
            op => {
                let (left, right) = (self.operand(left, env)?, self.operand(right, env)?);
                let value = functions::arithmetic(*op, &left, &right)?;
                if self.dialect().strict_arithmetic() {
                    functions::strict_arithmetic(*op, &left, &right, &value)?;
                }
                value
            }
        })
    }

    /// A scalar function call: COALESCE and IIF evaluate their arguments lazily, the others
    /// on all their values.
    fn eval_function(&self, function: ScalarFunction, args: &[Expr], env: &Env) -> Result<Value> {
        Ok(match function {
            ScalarFunction::Coalesce | ScalarFunction::IfNull => {
                for arg in args {
                    let value = self.eval(arg, env)?;
                    if !value.is_null() {
                        return Ok(value);
                    }
                }
                Value::Null
            }
            ScalarFunction::Iif => {
                if self.eval(&args[0], env)?.truth() == Some(true) {
                    self.eval(&args[1], env)?
                } else {
                    self.eval(&args[2], env)?
                }
            }
            _ => {
                let values = args.iter().map(|arg| self.eval(arg, env)).collect::<Result<Vec<_>>>()?;
                if functions::is_volatile(function, &values) {
                    self.note_volatile();
                }
                self.check_value_size(functions::result_bytes(function, &values))?;
                if is_context_function(function) {
                    self.context_function(function, &values)?
                } else {
                    functions::call(function, &values)?
                }
            }
        })
    }
}

/// An uncorrelated subquery run before a parallel scan starts, for its workers: its rows (or
/// the error running it gave, raised only where an evaluation reaches the subquery, as the
/// serial scan would raise it) and its first column hashed for `IN`.
pub struct ResolvedSubquery {
    pub rows: Result<Arc<Vec<Row>>>,
    pub in_set: Option<Arc<InSet>>,
}

/// Uncorrelated subqueries resolved for a parallel scan's workers, by [`Subquery::id`].
pub type ResolvedSubqueries = HashMap<usize, ResolvedSubquery>;

/// The evaluation context of a parallel worker: parameters, dialect, the value-size limit and
/// the uncorrelated subqueries resolved before the workers started; no session.
/// [`is_parallel_safe`] keeps the rest away from it.
pub struct PureContext<'a> {
    pub params: &'a [Value],
    pub subqueries: &'a ResolvedSubqueries,
    pub dialect: crate::dialect::Dialect,
    pub memory_limit: usize,
    /// What the statement had charged when the workers started, and what they charged since:
    /// together held to the limit.
    pub memory_used: usize,
    pub used: std::sync::atomic::AtomicUsize,
    /// Set when a worker calls something volatile (the statement's result is then not cached).
    pub volatile: std::sync::atomic::AtomicBool,
    /// The statement's interrupt flag (57014).
    pub interrupt: Option<&'a std::sync::atomic::AtomicBool>,
    /// Raised when the parallel scan ends early (an error, or the consumer is done).
    pub stop: &'a std::sync::atomic::AtomicBool,
    /// The statement's time zone and "now", which the session keeps per thread: every worker
    /// enters them ([`PureContext::enter_statement`]).
    pub zone: crate::types::temporal::zone::Zone,
    pub now: Option<i64>,
}

/// What [`PureContext::enter_statement`] entered, left when dropped.
pub struct StatementGuard {
    _zone: crate::types::temporal::session_zone::ZoneGuard,
    _now: Option<crate::types::temporal::clock::ClockGuard>,
}

impl PureContext<'_> {
    /// Makes the statement's time zone and "now" this thread's, until the guard is dropped:
    /// casts, `date_trunc`, `now()` and the like then give what they give on the statement's
    /// own thread.
    pub fn enter_statement(&self) -> StatementGuard {
        StatementGuard {
            _zone: crate::types::temporal::session_zone::enter(self.zone.clone()),
            _now: self.now.map(crate::types::temporal::clock::enter),
        }
    }

    /// Charges `bytes` the workers hold (53200 past the statement's limit).
    pub fn charge(&self, bytes: usize) -> Result<()> {
        let used = self.used.fetch_add(bytes, std::sync::atomic::Ordering::Relaxed) + bytes;
        if self.memory_used + used > self.memory_limit {
            return Err(Error::out_of_memory(self.memory_limit));
        }
        Ok(())
    }

    /// 57014 once the statement is interrupted.
    pub fn check_interrupt(&self) -> Result<()> {
        check_interrupt(self.interrupt)
    }
}

impl Evaluate for PureContext<'_> {
    fn params(&self) -> &[Value] {
        self.params
    }

    fn dialect(&self) -> crate::dialect::Dialect {
        self.dialect
    }

    fn memory_limit(&self) -> usize {
        self.memory_limit
    }

    fn subquery_rows(&self, subquery: &Subquery, _: &Env) -> Result<Arc<Vec<Row>>> {
        match self.subqueries.get(&subquery.id) {
            Some(resolved) => resolved.rows.clone(),
            None => Err(Error::internal("a parallel worker met a subquery not resolved for it")),
        }
    }

    fn subquery_in_set(&self, subquery: &Subquery, _: &Env) -> Result<Option<Arc<InSet>>> {
        Ok(self.subqueries.get(&subquery.id).and_then(|resolved| resolved.in_set.clone()))
    }

    fn note_volatile(&self) {
        self.volatile.store(true, std::sync::atomic::Ordering::Relaxed);
    }

    fn context_function(&self, _: ScalarFunction, _: &[Value]) -> Result<Value> {
        Err(Error::internal("a parallel worker met a session function"))
    }
}

/// `value IN (candidates)` by SQL comparison: true at the first equal one, else NULL when
/// `value` or a candidate is NULL, else false (`negated`: NOT IN).
fn membership<'a>(
    value: &Value,
    candidates: impl Iterator<Item = Result<std::borrow::Cow<'a, Value>>>,
    negated: bool,
) -> Result<Value> {
    if value.is_null() {
        return Ok(Value::Null);
    }
    let mut saw_null = false;
    for candidate in candidates {
        match value.sql_cmp(candidate?.as_ref()) {
            Some(Ordering::Equal) => return Ok(Value::Integer(i64::from(!negated))),
            None => saw_null = true,
            _ => {}
        }
    }
    Ok(if saw_null { Value::Null } else { Value::Integer(i64::from(negated)) })
}

/// 57014 when the statement's interrupt flag is raised (from another thread).
pub fn check_interrupt(flag: Option<&std::sync::atomic::AtomicBool>) -> Result<()> {
    match flag {
        Some(flag) if flag.load(std::sync::atomic::Ordering::Relaxed) => Err(Error::query_canceled()),
        _ => Ok(()),
    }
}

/// Whether a [`PureContext`] evaluates `expr` exactly as the executor would: no correlated
/// subquery (an uncorrelated one is resolved before the workers start:
/// [`resolvable_subqueries`]), no outer column, no function of [`is_context_function`].
pub fn is_parallel_safe(expr: &Expr) -> bool {
    let mut safe = true;
    expr.walk(&mut |node| match node {
        Expr::ScalarSubquery(subquery) | Expr::Exists { subquery, .. } | Expr::InSubquery { subquery, .. }
            if !resolvable(subquery) =>
        {
            safe = false
        }
        Expr::Outer { .. } => safe = false,
        Expr::Aggregate(_) | Expr::Window(_) => safe = false,
        Expr::Function(function, _) if is_context_function(*function) => safe = false,
        _ => {}
    });
    safe
}

/// Whether a subquery can be run once before a parallel scan and its result handed to the
/// workers: it reads no enclosing row.
fn resolvable(subquery: &Subquery) -> bool {
    !subquery.correlated && subquery.group_row.is_none()
}

/// The subqueries in `expr` (not inside other subqueries) that [`is_parallel_safe`] admits,
/// appended to `found`.
pub fn resolvable_subqueries(expr: &Expr, found: &mut Vec<Arc<Subquery>>) {
    expr.walk(&mut |node| {
        if let Expr::ScalarSubquery(subquery) | Expr::Exists { subquery, .. } | Expr::InSubquery { subquery, .. } = node
            && resolvable(subquery)
        {
            found.push(subquery.clone());
        }
    });
}
