//! Bound expressions and query plans: what the binder produces and the executor runs.
//!
//! A plan produces rows (vectors of values). Column references are positions in the row of the
//! plan node that evaluates them; references to an enclosing query's row (correlated
//! subqueries) say how many query levels up they point.

use crate::catalog::{IndexDef, TableDef};
use crate::error::{Error, Result};
use crate::value::{Affinity, Value};
use std::fmt;
use std::sync::Arc;

pub type Row = Vec<Value>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnaryOp {
    Neg,
    Plus,
    Not,
    BitNot,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinaryOp {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Concat,
    Eq,
    NotEq,
    Lt,
    LtEq,
    Gt,
    GtEq,
    And,
    Or,
    BitAnd,
    BitOr,
    ShiftLeft,
    ShiftRight,
}

impl BinaryOp {
    pub fn is_comparison(self) -> bool {
        matches!(self, BinaryOp::Eq | BinaryOp::NotEq | BinaryOp::Lt | BinaryOp::LtEq | BinaryOp::Gt | BinaryOp::GtEq)
    }

    /// The comparison with its operands swapped (`a < b` is `b > a`).
    pub fn flipped(self) -> BinaryOp {
        match self {
            BinaryOp::Lt => BinaryOp::Gt,
            BinaryOp::LtEq => BinaryOp::GtEq,
            BinaryOp::Gt => BinaryOp::Lt,
            BinaryOp::GtEq => BinaryOp::LtEq,
            other => other,
        }
    }

    pub fn symbol(self) -> &'static str {
        match self {
            BinaryOp::Add => "+",
            BinaryOp::Sub => "-",
            BinaryOp::Mul => "*",
            BinaryOp::Div => "/",
            BinaryOp::Mod => "%",
            BinaryOp::Concat => "||",
            BinaryOp::Eq => "=",
            BinaryOp::NotEq => "<>",
            BinaryOp::Lt => "<",
            BinaryOp::LtEq => "<=",
            BinaryOp::Gt => ">",
            BinaryOp::GtEq => ">=",
            BinaryOp::And => "AND",
            BinaryOp::Or => "OR",
            BinaryOp::BitAnd => "&",
            BinaryOp::BitOr => "|",
            BinaryOp::ShiftLeft => "<<",
            BinaryOp::ShiftRight => ">>",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CastType {
    Integer,
    Real,
    Numeric,
    /// Exact DECIMAL(precision, scale).
    Decimal(u8, u8),
    Text,
    Blob,
    /// PostgreSQL's `smallint`, `integer`, `bigint` (width in bytes): 22P02 and 22003 checked.
    Int(u8),
    Boolean,
    Temporal(crate::types::temporal::TemporalKind),
    /// PostgreSQL's `double precision` and unconstrained `numeric`, strict about their input.
    Float,
    Number,
    /// A PostgreSQL enum type: text by label (22P02), anything else 42846.
    Enum(crate::types::enum_type::EnumId),
    /// PostgreSQL's `oid`: an integer, described to clients as `oid`.
    Oid,
    /// PostgreSQL's `bytea`: text in bytea's input forms.
    Bytea,
    /// A PostgreSQL composite type: its text form or a row value, field by field.
    Composite(crate::types::composite::CompositeId),
    /// An array type (its OID, `pg_type`'s `_int4`, ...): an array literal whose elements each
    /// cast to the element type ([`crate::types::array`]).
    Array(u32),
    /// PostgreSQL's `uuid`, `json` (false) and `jsonb` (true), checked as their columns are.
    Uuid,
    Json(bool),
}

impl CastType {
    /// The affinity a value of this cast carries into comparisons.
    pub fn affinity(self) -> Affinity {
        match self {
            CastType::Integer | CastType::Oid => Affinity::Integer,
            CastType::Bytea => Affinity::Bytea,
            CastType::Uuid => Affinity::Uuid,
            CastType::Json(binary) => Affinity::Json(binary),
            CastType::Real => Affinity::Real,
            CastType::Numeric => Affinity::Numeric,
            CastType::Decimal(precision, scale) => Affinity::Decimal(precision, scale),
            CastType::Text => Affinity::Text,
            CastType::Blob => Affinity::Blob,
            CastType::Int(bytes) => Affinity::Int(bytes),
            CastType::Boolean => Affinity::Boolean,
            CastType::Temporal(kind) => Affinity::Temporal(kind),
            CastType::Float => Affinity::Float,
            CastType::Number => Affinity::Number,
            CastType::Enum(id) => Affinity::Enum(id),
            CastType::Composite(id) => Affinity::Composite(id),
            CastType::Array(_) => Affinity::Text,
        }
    }

    /// `CAST(value AS type)`: NULL stays NULL; an enum label casts only to text or an enum or
    /// composite type (42846 otherwise).
    pub fn cast(self, value: Value) -> Result<Value> {
        if value.is_null() {
            return Ok(Value::Null);
        }
        if let Value::Enum(label) = &value
            && !matches!(self, CastType::Text | CastType::Enum(_) | CastType::Composite(_))
        {
            return Err(Error::new(
                "42846",
                format!("cannot cast enum value '{}' to type {}", label.label, self.type_name()),
            ));
        }
        Ok(match self {
            CastType::Integer | CastType::Oid => value.cast_integer(),
            CastType::Real => value.cast_real(),
            CastType::Numeric => value.cast_numeric(),
            CastType::Decimal(precision, scale) => value.cast_decimal(precision, scale)?,
            CastType::Text => Value::Text(value.to_text()),
            CastType::Int(_)
            | CastType::Boolean
            | CastType::Temporal(_)
            | CastType::Float
            | CastType::Number
            | CastType::Enum(_)
            | CastType::Composite(_)
            | CastType::Bytea
            | CastType::Uuid
            | CastType::Json(_) => self.affinity().store(value)?,
            CastType::Blob => match value {
                Value::Blob(bytes) => Value::Blob(bytes),
                other => Value::Blob(other.to_text().into_bytes()),
            },
            CastType::Array(oid) => crate::types::array::cast(&value.to_text(), oid)?,
        })
    }

    /// The PostgreSQL name of the type this casts to, for messages.
    pub fn type_name(self) -> String {
        match self {
            CastType::Integer | CastType::Int(8) => "bigint".into(),
            CastType::Int(2) => "smallint".into(),
            CastType::Int(_) => "integer".into(),
            CastType::Real | CastType::Float => "double precision".into(),
            CastType::Numeric | CastType::Decimal(..) | CastType::Number => "numeric".into(),
            CastType::Text => "text".into(),
            CastType::Blob => "bytea".into(),
            CastType::Boolean => "boolean".into(),
            CastType::Temporal(kind) => kind.name().into(),
            CastType::Enum(id) => id.get().name.clone(),
            CastType::Oid => "oid".into(),
            CastType::Bytea => "bytea".into(),
            CastType::Uuid => "uuid".into(),
            CastType::Json(binary) => (if binary { "jsonb" } else { "json" }).into(),
            CastType::Composite(id) => id.get().name.clone(),
            CastType::Array(oid) => crate::catalog::pgtype::format_type(oid, -1),
        }
    }

    /// The cast to a type of this affinity.
    pub fn of_affinity(affinity: Affinity) -> CastType {
        match affinity {
            Affinity::Integer => CastType::Integer,
            Affinity::Real => CastType::Real,
            Affinity::Numeric => CastType::Numeric,
            Affinity::Decimal(precision, scale) => CastType::Decimal(precision, scale),
            Affinity::Text => CastType::Text,
            Affinity::Blob => CastType::Blob,
            Affinity::Int(bytes) => CastType::Int(bytes),
            Affinity::Boolean => CastType::Boolean,
            Affinity::Temporal(kind) => CastType::Temporal(kind),
            Affinity::Float => CastType::Float,
            Affinity::Number => CastType::Number,
            Affinity::Bytea => CastType::Bytea,
            Affinity::Uuid => CastType::Uuid,
            Affinity::Json(binary) => CastType::Json(binary),
            Affinity::Enum(id) => CastType::Enum(id),
            Affinity::Composite(id) => CastType::Composite(id),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AggregateFunction {
    Count,
    CountStar,
    Sum,
    Total,
    Avg,
    Min,
    Max,
    GroupConcat,
    /// `array_agg(x)`: the values as an array literal (see [`crate::types::array`]).
    ArrayAgg,
    /// `var_pop`, `var_samp`/`variance`, `stddev_pop`, `stddev_samp`/`stddev` of one argument;
    /// `covar_pop`, `covar_samp`, `corr` of two (Y, X). Reals, over the rows where no argument
    /// is NULL.
    Statistic(Statistic),
    /// A bare column in an aggregate query: the value from some row of the group (SQLite).
    AnyValue,
    /// The value in the group's first row, NULL included (the row correlated subqueries of an
    /// aggregate query's output see).
    First,
    /// `percentile_cont(f)` / `percentile_disc(f) WITHIN GROUP (ORDER BY x [DESC])`: arguments
    /// (x, f). Continuous interpolates between reals; discrete picks a value.
    Percentile {
        continuous: bool,
        descending: bool,
    },
    /// `mode() WITHIN GROUP (ORDER BY x [DESC])`: the most frequent value (the first in the
    /// order among equally frequent ones).
    Mode {
        descending: bool,
    },
    /// `grouping(a, ...)` while binding: replaced by each grouping set's bit mask before the
    /// plan runs (`tern_sql::grouping_sets`).
    Grouping,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Statistic {
    VarPop,
    VarSamp,
    StddevPop,
    StddevSamp,
    CovarPop,
    CovarSamp,
    Corr,
}

impl Statistic {
    /// The statistic `name` names, with its number of arguments.
    pub fn lookup(name: &str) -> Option<(Statistic, usize)> {
        Some(match name {
            "var_pop" => (Statistic::VarPop, 1),
            "var_samp" | "variance" => (Statistic::VarSamp, 1),
            "stddev_pop" => (Statistic::StddevPop, 1),
            "stddev_samp" | "stddev" => (Statistic::StddevSamp, 1),
            "covar_pop" => (Statistic::CovarPop, 2),
            "covar_samp" => (Statistic::CovarSamp, 2),
            "corr" => (Statistic::Corr, 2),
            _ => return None,
        })
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct AggregateCall {
    pub function: AggregateFunction,
    pub args: Vec<Expr>,
    pub distinct: bool,
    /// `FILTER (WHERE ...)`: only rows where it is true are aggregated.
    pub filter: Option<Box<Expr>>,
    /// `array_agg(x ORDER BY y)`: the order the call takes its rows in (the binder sorts the
    /// aggregate's input by it).
    pub order_by: Vec<SortKey>,
}

impl AggregateCall {
    /// A call of `function` on `args`, without DISTINCT, FILTER or ORDER BY.
    pub fn plain(function: AggregateFunction, args: Vec<Expr>) -> AggregateCall {
        AggregateCall { function, args, distinct: false, filter: None, order_by: Vec::new() }
    }
}

/// What an `OVER` clause calls: a ranking or value function, or any aggregate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WindowFunction {
    RowNumber,
    Rank,
    DenseRank,
    PercentRank,
    CumeDist,
    Ntile,
    Lag,
    Lead,
    FirstValue,
    LastValue,
    NthValue,
    Aggregate(AggregateFunction),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameUnits {
    Rows,
    Range,
    Groups,
}

/// One end of a window frame. Offsets are expressions over no column of the row (constants,
/// parameters, the enclosing query's columns), evaluated once per run.
#[derive(Debug, Clone, PartialEq)]
pub enum FrameBound {
    UnboundedPreceding,
    Preceding(Expr),
    CurrentRow,
    Following(Expr),
    UnboundedFollowing,
}

/// `EXCLUDE ...`: rows taken out of every row's frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameExclusion {
    NoOthers,
    CurrentRow,
    Group,
    Ties,
}

#[derive(Debug, Clone, PartialEq)]
pub struct WindowFrame {
    pub units: FrameUnits,
    pub start: FrameBound,
    pub end: FrameBound,
    pub exclusion: FrameExclusion,
}

/// A window: how rows are partitioned and ordered, and each row's frame.
#[derive(Debug, Clone, PartialEq)]
pub struct Window {
    pub partition_by: Vec<Expr>,
    pub order_by: Vec<SortKey>,
    pub frame: WindowFrame,
}

/// `function(args) [FILTER (WHERE filter)] OVER (window)`.
#[derive(Debug, Clone, PartialEq)]
pub struct WindowCall {
    pub function: WindowFunction,
    pub args: Vec<Expr>,
    /// For aggregates only: rows of the frame where it is not true are left out.
    pub filter: Option<Expr>,
    pub window: Window,
}

impl WindowCall {
    /// The expressions evaluated on each input row (not the frame offsets).
    fn row_exprs(&self) -> impl Iterator<Item = &Expr> {
        self.args
            .iter()
            .chain(&self.filter)
            .chain(&self.window.partition_by)
            .chain(self.window.order_by.iter().map(|key| &key.expr))
    }

    fn map_row_exprs(mut self, f: &mut dyn FnMut(Expr) -> Expr) -> WindowCall {
        self.args = std::mem::take(&mut self.args).into_iter().map(&mut *f).collect();
        self.filter = self.filter.map(&mut *f);
        self.window.partition_by = std::mem::take(&mut self.window.partition_by).into_iter().map(&mut *f).collect();
        for key in &mut self.window.order_by {
            key.expr = f(std::mem::replace(&mut key.expr, Expr::Literal(Value::Null)));
        }
        self
    }
}

/// A subquery inside an expression.
#[derive(Debug)]
pub struct Subquery {
    pub plan: Plan,
    /// Whether it refers to an enclosing query's row; uncorrelated ones run once per statement.
    pub correlated: bool,
    /// Identity for the executor's cache of uncorrelated results.
    pub id: usize,
    /// `x IN (subquery)`: the affinity applied to the subquery's values before comparing.
    pub row_affinity: Option<Affinity>,
    /// In the output of an aggregate query (select list, HAVING, ORDER BY): where in the
    /// aggregate row the group's representative input row starts. The subquery's references
    /// to the enclosing query read that row, not the aggregate row.
    pub group_row: Option<usize>,
}

impl PartialEq for Subquery {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
    }
}

/// Encoded keys ([`Expr::InKeys`]).
pub type KeySet = std::collections::HashSet<crate::key_bytes::KeyBytes, foldhash::fast::RandomState>;

#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    Literal(Value),
    Column(usize),
    /// A column of an enclosing query's row, `depth` levels up (1 = the directly enclosing one).
    Outer {
        depth: usize,
        index: usize,
    },
    Param(usize),
    Unary(UnaryOp, Box<Expr>),
    Binary(BinaryOp, Box<Expr>, Box<Expr>),
    /// `a IS b` / `a IS NOT b`: equality where NULL equals NULL.
    Is {
        left: Box<Expr>,
        right: Box<Expr>,
        negated: bool,
    },
    IsNull(Box<Expr>, bool),
    InList {
        expr: Box<Expr>,
        list: Vec<Expr>,
        negated: bool,
    },
    InSubquery {
        expr: Box<Expr>,
        subquery: Arc<Subquery>,
        negated: bool,
    },
    Exists {
        subquery: Arc<Subquery>,
        negated: bool,
    },
    ScalarSubquery(Arc<Subquery>),
    Case {
        operand: Option<Box<Expr>>,
        whens: Vec<(Expr, Expr)>,
        otherwise: Option<Box<Expr>>,
    },
    Cast(Box<Expr>, CastType),
    /// Applies a column affinity to the operand of a comparison (SQLite's comparison rules).
    Affinity(Box<Expr>, Affinity),
    Like {
        expr: Box<Expr>,
        pattern: Box<Expr>,
        escape: Option<Box<Expr>>,
        negated: bool,
        glob: bool,
        /// LIKE tells upper from lower case (PostgreSQL's LIKE; not ILIKE, not SQLite's LIKE).
        /// GLOB always does.
        case_sensitive: bool,
    },
    Function(crate::functions::ScalarFunction, Vec<Expr>),
    /// Only while executing, never bound from SQL: whether the operand's key encoding
    /// ([`crate::codec::encode_key_value`], what hash joins match by) is one of `keys`; a NULL
    /// operand is in no set. A join pushes its left rows' keys into its right input as this
    /// (`exec/join_filter.rs`).
    InKeys {
        expr: Box<Expr>,
        keys: Arc<KeySet>,
    },
    /// Only while binding: replaced by a column of the aggregate's output.
    Aggregate(Box<AggregateCall>),
    /// Only while binding: replaced by a column of the window operator's output.
    Window(Box<WindowCall>),
}

impl Expr {
    /// Calls `visit` on this expression and every sub-expression (not inside subqueries).
    pub fn walk(&self, visit: &mut dyn FnMut(&Expr)) {
        crate::limits::with_stack(|| self.walk_inner(visit))
    }

    fn walk_inner(&self, visit: &mut dyn FnMut(&Expr)) {
        visit(self);
        match self {
            Expr::Unary(_, inner) | Expr::Cast(inner, _) | Expr::Affinity(inner, _) | Expr::IsNull(inner, _) => {
                inner.walk(visit)
            }
            Expr::Binary(_, left, right) | Expr::Is { left, right, .. } => {
                left.walk(visit);
                right.walk(visit);
            }
            Expr::InList { expr, list, .. } => {
                expr.walk(visit);
                list.iter().for_each(|item| item.walk(visit));
            }
            Expr::InSubquery { expr, .. } | Expr::InKeys { expr, .. } => expr.walk(visit),
            Expr::Case { operand, whens, otherwise } => {
                if let Some(operand) = operand {
                    operand.walk(visit);
                }
                for (condition, result) in whens {
                    condition.walk(visit);
                    result.walk(visit);
                }
                if let Some(otherwise) = otherwise {
                    otherwise.walk(visit);
                }
            }
            Expr::Like { expr, pattern, escape, .. } => {
                expr.walk(visit);
                pattern.walk(visit);
                if let Some(escape) = escape {
                    escape.walk(visit);
                }
            }
            Expr::Function(_, args) => args.iter().for_each(|arg| arg.walk(visit)),
            Expr::Aggregate(call) => call.args.iter().chain(call.filter.as_deref()).for_each(|arg| arg.walk(visit)),
            Expr::Window(call) => call.row_exprs().for_each(|expr| expr.walk(visit)),
            Expr::Literal(_)
            | Expr::Column(_)
            | Expr::Outer { .. }
            | Expr::Param(_)
            | Expr::Exists { .. }
            | Expr::ScalarSubquery(_) => {}
        }
    }

    /// Rewrites this expression bottom-up (not inside subqueries).
    pub fn rewrite(self, f: &mut dyn FnMut(Expr) -> Expr) -> Expr {
        crate::limits::with_stack(|| {
            let rewritten = self.map_children(&mut |child| child.rewrite(f));
            f(rewritten)
        })
    }

    /// Replaces each direct child expression by `f(child)` (not inside subqueries).
    pub fn map_children(self, f: &mut dyn FnMut(Expr) -> Expr) -> Expr {
        let mut boxed = |inner: Box<Expr>| Box::new(f(*inner));
        match self {
            Expr::Unary(op, inner) => Expr::Unary(op, boxed(inner)),
            Expr::Cast(inner, to) => Expr::Cast(boxed(inner), to),
            Expr::Affinity(inner, affinity) => Expr::Affinity(boxed(inner), affinity),
            Expr::IsNull(inner, negated) => Expr::IsNull(boxed(inner), negated),
            Expr::Binary(op, left, right) => {
                let left = boxed(left);
                Expr::Binary(op, left, boxed(right))
            }
            Expr::Is { left, right, negated } => {
                let left = boxed(left);
                Expr::Is { left, right: boxed(right), negated }
            }
            Expr::InList { expr, list, negated } => {
                let expr = boxed(expr);
                Expr::InList { expr, list: list.into_iter().map(&mut *f).collect(), negated }
            }
            Expr::InSubquery { expr, subquery, negated } => Expr::InSubquery { expr: boxed(expr), subquery, negated },
            Expr::InKeys { expr, keys } => Expr::InKeys { expr: boxed(expr), keys },
            Expr::Case { operand, whens, otherwise } => {
                let operand = operand.map(&mut boxed);
                let whens = whens.into_iter().map(|(condition, result)| (f(condition), f(result))).collect();
                Expr::Case { operand, whens, otherwise: otherwise.map(|otherwise| Box::new(f(*otherwise))) }
            }
            Expr::Like { expr, pattern, escape, negated, glob, case_sensitive } => {
                let expr = boxed(expr);
                let pattern = boxed(pattern);
                Expr::Like { expr, pattern, escape: escape.map(boxed), negated, glob, case_sensitive }
            }
            Expr::Function(function, args) => Expr::Function(function, args.into_iter().map(f).collect()),
            Expr::Aggregate(mut call) => {
                call.args = std::mem::take(&mut call.args).into_iter().map(&mut *f).collect();
                call.filter = call.filter.map(|filter| Box::new(f(*filter)));
                Expr::Aggregate(call)
            }
            Expr::Window(call) => Expr::Window(Box::new(call.map_row_exprs(f))),
            leaf => leaf,
        }
    }

    /// The columns (of this query level) the expression reads.
    pub fn columns(&self) -> Vec<usize> {
        let mut columns = Vec::new();
        self.walk(&mut |expr| {
            if let Expr::Column(index) = expr {
                columns.push(*index);
            }
        });
        columns
    }

    /// Whether the expression reads no column of this level and no correlated subquery (its
    /// value is the same for every row of a scan).
    pub fn is_row_independent(&self) -> bool {
        let mut independent = true;
        self.walk(&mut |expr| match expr {
            Expr::Column(_) | Expr::Aggregate(_) | Expr::Window(_) => independent = false,
            Expr::InSubquery { subquery, .. } | Expr::Exists { subquery, .. } | Expr::ScalarSubquery(subquery)
                if subquery.correlated =>
            {
                independent = false
            }
            _ => {}
        });
        independent
    }

    pub fn contains_aggregate(&self) -> bool {
        let mut found = false;
        self.walk(&mut |expr| found |= matches!(expr, Expr::Aggregate(_)));
        found
    }

    /// A literal, or a signed literal: what ALTER TABLE ADD COLUMN accepts as a DEFAULT.
    pub fn is_constant(&self) -> bool {
        match self {
            Expr::Literal(_) => true,
            Expr::Unary(_, inner) => matches!(**inner, Expr::Literal(_)),
            _ => false,
        }
    }

    pub fn contains_window(&self) -> bool {
        let mut found = false;
        self.walk(&mut |expr| found |= matches!(expr, Expr::Window(_)));
        found
    }

    /// Shifts column references by `offset` (used when a row is placed after another).
    pub fn shift_columns(self, offset: usize) -> Expr {
        self.rewrite(&mut |expr| match expr {
            Expr::Column(index) => Expr::Column(index + offset),
            other => other,
        })
    }

    /// Renumbers column references through `map` (old position -> new position).
    pub fn remap_columns(self, map: &[usize]) -> Expr {
        if map.iter().enumerate().all(|(at, &to)| at == to) {
            return self;
        }
        self.rewrite(&mut |expr| match expr {
            Expr::Column(index) => Expr::Column(map[index]),
            other => other,
        })
    }
}

/// How a scan reaches a table's rows.
#[derive(Debug, Clone)]
pub enum Access {
    /// Every row in primary-key order.
    Full,
    /// Rows whose primary key equals one of the tuples.
    PrimaryKeyPoints(Vec<Vec<Expr>>),
    /// Rows whose leading primary-key columns (fewer than all) equal one of the tuples: a
    /// range of the key for each tuple.
    PrimaryKeyPrefix(Vec<Vec<Expr>>),
    /// Rows whose first primary-key column lies between the bounds.
    PrimaryKeyRange { lower: Option<(Expr, bool)>, upper: Option<(Expr, bool)> },
    /// Rows whose leading index columns equal one of the tuples.
    IndexPoints { index: Arc<IndexDef>, keys: Vec<Vec<Expr>> },
    /// Rows whose first index column lies between the bounds (inclusive flag per bound).
    IndexRange { index: Arc<IndexDef>, lower: Option<(Expr, bool)>, upper: Option<(Expr, bool)> },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JoinKind {
    Inner,
    Left,
    Right,
    Full,
    /// Each left row that has a match, once; the output is the left row alone (EXISTS).
    Semi,
    /// Each left row that has no match; the output is the left row alone (NOT EXISTS).
    Anti,
}

impl JoinKind {
    /// Whether the output is the left row alone (semi and anti joins).
    pub fn keeps_left_only(self) -> bool {
        matches!(self, JoinKind::Semi | JoinKind::Anti)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetOperator {
    Union,
    Intersect,
    Except,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SortKey {
    pub expr: Expr,
    pub descending: bool,
    pub nulls_first: bool,
}

/// The set-returning functions a FROM clause or a select list may call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableFunction {
    /// `generate_series(start, stop [, step])`: integers.
    GenerateSeries,
    /// `unnest(array)`: the elements of an array literal.
    Unnest,
    /// `generate_subscripts(array, dimension [, reverse])`: the array's subscripts, 1 to its
    /// length (Tern's arrays have one dimension).
    GenerateSubscripts,
    /// `information_schema._pg_expandarray(array)`: a row `(x, n)` per element, the element
    /// and its position ([`crate::types::composite::expand_array_type`]).
    ExpandArray,
    /// `pg_partition_ancestors(relation)`: the relation and the partitioned tables above it;
    /// Tern has no partitions, so the relation itself (a column `relid`).
    PartitionAncestors,
}

impl TableFunction {
    /// The function of a name, with the range of argument counts it accepts.
    pub fn lookup(name: &str) -> Option<(TableFunction, usize, usize)> {
        match name {
            "generate_series" => Some((TableFunction::GenerateSeries, 2, 3)),
            "unnest" => Some((TableFunction::Unnest, 1, 1)),
            "generate_subscripts" => Some((TableFunction::GenerateSubscripts, 2, 3)),
            "_pg_expandarray" => Some((TableFunction::ExpandArray, 1, 1)),
            "pg_partition_ancestors" => Some((TableFunction::PartitionAncestors, 1, 1)),
            _ => None,
        }
    }
}

#[derive(Debug, Clone)]
pub enum Plan {
    /// Literal rows (also the single empty row of a SELECT without FROM).
    Values {
        rows: Vec<Vec<Expr>>,
        width: usize,
    },
    Scan {
        table: Arc<TableDef>,
        access: Access,
        filter: Option<Expr>,
        reverse: bool,
    },
    Filter {
        input: Box<Plan>,
        predicate: Expr,
    },
    Project {
        input: Box<Plan>,
        exprs: Vec<Expr>,
    },
    /// Output: the left row followed by the right row. With keys, a hash join on
    /// `left_keys = right_keys` (NULL keys never match); `condition` is checked on each pair.
    Join {
        left: Box<Plan>,
        right: Box<Plan>,
        kind: JoinKind,
        left_keys: Vec<Expr>,
        right_keys: Vec<Expr>,
        condition: Option<Expr>,
    },
    /// Index nested-loop join. Output: the left row followed by the table's row. For each left
    /// row, `left_key` is looked up in the primary key's first column (`index` None) or in the first
    /// column of `index`; `right_filter` is checked on the table's row, `condition` on the pair.
    LookupJoin {
        left: Box<Plan>,
        table: Arc<TableDef>,
        index: Option<Arc<IndexDef>>,
        left_key: Expr,
        right_filter: Option<Expr>,
        condition: Option<Expr>,
        kind: JoinKind,
    },
    /// Output: the input row followed by each call's value (see [`crate::exec::window`]). Rows come
    /// out in the order of the last window computed.
    Window {
        input: Box<Plan>,
        calls: Vec<WindowCall>,
    },
    /// Output: the group-by values followed by the aggregates.
    Aggregate {
        input: Box<Plan>,
        group_by: Vec<Expr>,
        aggregates: Vec<AggregateCall>,
    },
    Sort {
        input: Box<Plan>,
        keys: Vec<SortKey>,
        limit: Option<Box<Expr>>,
    },
    Limit {
        input: Box<Plan>,
        limit: Option<Expr>,
        offset: Option<Expr>,
    },
    Distinct {
        input: Box<Plan>,
    },
    SetOperation {
        op: SetOperator,
        all: bool,
        left: Box<Plan>,
        right: Box<Plan>,
    },
    /// WITH RECURSIVE: the anchor's rows, then the step's rows run again and again over the
    /// rows the previous round added (the working table `id`) until a round adds none. Without
    /// `all` (UNION), rows already produced are not added again.
    Recursive {
        id: usize,
        anchor: Box<Plan>,
        step: Box<Plan>,
        all: bool,
    },
    /// The rows the previous round of recursive CTE `id` added.
    WorkingTable {
        id: usize,
        width: usize,
    },
    /// The rows of `input`, a subplan that appears more than once in the statement (a view or
    /// CTE named twice): every node of the same `id` has the same input, which runs once; the
    /// others get its rows (`optimizer/shared.rs`).
    Shared {
        id: usize,
        input: Box<Plan>,
    },
    /// A relation of `pg_catalog` or `information_schema` (`tern_sql::catalog::system`): rows computed
    /// from the catalog when the statement was bound, with the columns' PostgreSQL types.
    SystemTable {
        table: Arc<TableDef>,
        rows: Arc<Vec<Vec<Expr>>>,
        /// Rows computed when run instead (`tern_sql::session::activity`).
        live: Option<crate::catalog::live::LiveRelation>,
    },
    /// A set-returning function in FROM (`generate_series`, `unnest`): one column; its
    /// arguments may read the enclosing query's row.
    TableFunction {
        function: TableFunction,
        args: Vec<Expr>,
        /// `WITH ORDINALITY`: a second column numbering the rows from 1.
        ordinality: bool,
    },
    /// Set-returning functions in a select list, run for each input row: the row is repeated
    /// for as many rows as the longest call returns, with one column per call after the
    /// input's (NULL where a call has run out), as PostgreSQL's ProjectSet.
    ProjectSet {
        input: Box<Plan>,
        calls: Vec<(TableFunction, Vec<Expr>)>,
    },
}

impl Access {
    /// [`Access::exprs`], to change in place.
    pub fn exprs_mut(&mut self) -> Vec<&mut Expr> {
        match self {
            Access::Full => Vec::new(),
            Access::PrimaryKeyPoints(keys) | Access::PrimaryKeyPrefix(keys) | Access::IndexPoints { keys, .. } => {
                keys.iter_mut().flatten().collect()
            }
            Access::PrimaryKeyRange { lower, upper } | Access::IndexRange { lower, upper, .. } => {
                [lower, upper].into_iter().flatten().map(|(expr, _)| expr).collect()
            }
        }
    }

    /// The expressions the access path evaluates (its key values and bounds).
    pub fn exprs(&self) -> Vec<&Expr> {
        match self {
            Access::Full => Vec::new(),
            Access::PrimaryKeyPoints(keys) | Access::PrimaryKeyPrefix(keys) | Access::IndexPoints { keys, .. } => {
                keys.iter().flatten().collect()
            }
            Access::PrimaryKeyRange { lower, upper } | Access::IndexRange { lower, upper, .. } => {
                [lower, upper].into_iter().flatten().map(|(expr, _)| expr).collect()
            }
        }
    }
}

impl Plan {
    /// The plans this node reads.
    pub fn children(&self) -> Vec<&Plan> {
        match self {
            Plan::Values { .. }
            | Plan::Scan { .. }
            | Plan::WorkingTable { .. }
            | Plan::SystemTable { .. }
            | Plan::TableFunction { .. } => Vec::new(),
            Plan::Filter { input, .. }
            | Plan::Project { input, .. }
            | Plan::Window { input, .. }
            | Plan::Aggregate { input, .. }
            | Plan::Sort { input, .. }
            | Plan::Limit { input, .. }
            | Plan::Distinct { input }
            | Plan::Shared { input, .. }
            | Plan::ProjectSet { input, .. } => vec![input],
            Plan::LookupJoin { left, .. } => vec![left],
            Plan::Join { left, right, .. } | Plan::SetOperation { left, right, .. } => vec![left, right],
            Plan::Recursive { anchor, step, .. } => vec![anchor, step],
        }
    }

    /// Whether running the plan may read table `table` (by id): a scan or a lookup of it, in
    /// this plan or in a subquery inside it. A SQL function's body is not known here, so a
    /// call of one counts as a read.
    pub fn may_read_table(&self, table: u32) -> bool {
        crate::limits::with_stack(|| {
            let reads_here = match self {
                Plan::Scan { table: read, .. } | Plan::LookupJoin { table: read, .. } => read.id == table,
                _ => false,
            };
            let mut in_exprs = false;
            self.visit_exprs(&mut |expr| {
                expr.walk(&mut |expr| {
                    in_exprs |= match expr {
                        Expr::InSubquery { subquery, .. }
                        | Expr::Exists { subquery, .. }
                        | Expr::ScalarSubquery(subquery) => subquery.plan.may_read_table(table),
                        Expr::Function(crate::functions::ScalarFunction::SqlFunction, _) => true,
                        _ => false,
                    }
                })
            });
            reads_here || in_exprs || self.children().iter().any(|child| child.may_read_table(table))
        })
    }

    /// Calls `visit` on each expression this node evaluates (not its children's).
    pub fn visit_exprs(&self, visit: &mut dyn FnMut(&Expr)) {
        let mut each = |exprs: &mut dyn Iterator<Item = &Expr>| exprs.for_each(&mut *visit);
        match self {
            Plan::Values { rows, .. } => each(&mut rows.iter().flatten()),
            Plan::SystemTable { rows, .. } => each(&mut rows.iter().flatten()),
            Plan::Scan { access, filter, .. } => each(&mut access.exprs().into_iter().chain(filter)),
            Plan::Filter { predicate, .. } => each(&mut std::iter::once(predicate)),
            Plan::Project { exprs, .. } => each(&mut exprs.iter()),
            Plan::Join { left_keys, right_keys, condition, .. } => {
                each(&mut left_keys.iter().chain(right_keys).chain(condition))
            }
            Plan::LookupJoin { left_key, right_filter, condition, .. } => {
                each(&mut std::iter::once(left_key).chain(right_filter).chain(condition))
            }
            Plan::Window { calls, .. } => {
                for call in calls {
                    each(&mut call.row_exprs());
                    for bound in [&call.window.frame.start, &call.window.frame.end] {
                        if let FrameBound::Preceding(offset) | FrameBound::Following(offset) = bound {
                            each(&mut std::iter::once(offset));
                        }
                    }
                }
            }
            Plan::Aggregate { group_by, aggregates, .. } => {
                each(&mut group_by.iter());
                for call in aggregates {
                    each(
                        &mut call
                            .args
                            .iter()
                            .chain(call.filter.as_deref())
                            .chain(call.order_by.iter().map(|key| &key.expr)),
                    );
                }
            }
            Plan::Sort { keys, limit, .. } => each(&mut keys.iter().map(|key| &key.expr).chain(limit.as_deref())),
            Plan::Limit { limit, offset, .. } => each(&mut limit.iter().chain(offset)),
            Plan::TableFunction { args, .. } => each(&mut args.iter()),
            Plan::ProjectSet { calls, .. } => each(&mut calls.iter().flat_map(|(_, args)| args)),
            Plan::Distinct { .. }
            | Plan::SetOperation { .. }
            | Plan::Recursive { .. }
            | Plan::WorkingTable { .. }
            | Plan::Shared { .. } => {}
        }
    }

    /// The plans this node reads, to change in place.
    pub fn children_mut(&mut self) -> Vec<&mut Plan> {
        match self {
            Plan::Values { .. }
            | Plan::Scan { .. }
            | Plan::WorkingTable { .. }
            | Plan::SystemTable { .. }
            | Plan::TableFunction { .. } => Vec::new(),
            Plan::Filter { input, .. }
            | Plan::Project { input, .. }
            | Plan::Window { input, .. }
            | Plan::Aggregate { input, .. }
            | Plan::Sort { input, .. }
            | Plan::Limit { input, .. }
            | Plan::Distinct { input }
            | Plan::Shared { input, .. }
            | Plan::ProjectSet { input, .. } => vec![input],
            Plan::LookupJoin { left, .. } => vec![left],
            Plan::Join { left, right, .. } | Plan::SetOperation { left, right, .. } => vec![left, right],
            Plan::Recursive { anchor, step, .. } => vec![anchor, step],
        }
    }

    /// Calls `visit` on each expression this node evaluates (not its children's), to change
    /// in place: [`Plan::visit_exprs`]'s expressions.
    pub fn visit_exprs_mut(&mut self, visit: &mut dyn FnMut(&mut Expr)) {
        let mut each = |exprs: &mut dyn Iterator<Item = &mut Expr>| exprs.for_each(&mut *visit);
        match self {
            Plan::Values { rows, .. } => each(&mut rows.iter_mut().flatten()),
            // Shared among plans: left as they are.
            Plan::SystemTable { .. } => {}
            Plan::Scan { access, filter, .. } => each(&mut access.exprs_mut().into_iter().chain(filter)),
            Plan::Filter { predicate, .. } => each(&mut std::iter::once(predicate)),
            Plan::Project { exprs, .. } => each(&mut exprs.iter_mut()),
            Plan::Join { left_keys, right_keys, condition, .. } => {
                each(&mut left_keys.iter_mut().chain(right_keys).chain(condition))
            }
            Plan::LookupJoin { left_key, right_filter, condition, .. } => {
                each(&mut std::iter::once(left_key).chain(right_filter).chain(condition))
            }
            Plan::Window { calls, .. } => {
                for call in calls {
                    each(&mut call.args.iter_mut().chain(call.filter.as_mut()));
                    each(&mut call.window.partition_by.iter_mut());
                    each(&mut call.window.order_by.iter_mut().map(|key| &mut key.expr));
                    for bound in [&mut call.window.frame.start, &mut call.window.frame.end] {
                        if let FrameBound::Preceding(offset) | FrameBound::Following(offset) = bound {
                            each(&mut std::iter::once(offset));
                        }
                    }
                }
            }
            Plan::Aggregate { group_by, aggregates, .. } => {
                each(&mut group_by.iter_mut());
                for call in aggregates {
                    each(
                        &mut call
                            .args
                            .iter_mut()
                            .chain(call.filter.as_deref_mut())
                            .chain(call.order_by.iter_mut().map(|key| &mut key.expr)),
                    );
                }
            }
            Plan::Sort { keys, limit, .. } => {
                each(&mut keys.iter_mut().map(|key| &mut key.expr).chain(limit.as_deref_mut()))
            }
            Plan::Limit { limit, offset, .. } => each(&mut limit.iter_mut().chain(offset)),
            Plan::TableFunction { args, .. } => each(&mut args.iter_mut()),
            Plan::ProjectSet { calls, .. } => each(&mut calls.iter_mut().flat_map(|(_, args)| args)),
            Plan::Distinct { .. }
            | Plan::SetOperation { .. }
            | Plan::Recursive { .. }
            | Plan::WorkingTable { .. }
            | Plan::Shared { .. } => {}
        }
    }

    /// Number of columns the plan produces.
    pub fn width(&self) -> usize {
        match self {
            Plan::Values { width, .. } => *width,
            Plan::Scan { table, .. } => table.columns.len(),
            Plan::Filter { input, .. }
            | Plan::Sort { input, .. }
            | Plan::Limit { input, .. }
            | Plan::Distinct { input } => input.width(),
            Plan::Project { exprs, .. } => exprs.len(),
            Plan::Join { left, kind, .. } if kind.keeps_left_only() => left.width(),
            Plan::Join { left, right, .. } => left.width() + right.width(),
            Plan::LookupJoin { left, table, .. } => left.width() + table.columns.len(),
            Plan::Aggregate { group_by, aggregates, .. } => group_by.len() + aggregates.len(),
            Plan::Window { input, calls } => input.width() + calls.len(),
            Plan::SetOperation { left, .. } => left.width(),
            Plan::Recursive { anchor, .. } => anchor.width(),
            Plan::WorkingTable { width, .. } => *width,
            Plan::Shared { input, .. } => input.width(),
            Plan::SystemTable { table, .. } => table.columns.len(),
            Plan::TableFunction { ordinality, .. } => 1 + usize::from(*ordinality),
            Plan::ProjectSet { input, calls } => input.width() + calls.len(),
        }
    }

    /// Whether the rows of each group of `group_by` over this plan's rows arrive one after
    /// another: the rows come from a table scan in primary-key order (through filters and
    /// projections) and the GROUP BY columns are a prefix of that key, in any order. Rows whose
    /// key prefixes are equal are adjacent in a scan, and a row's group key is the same
    /// encoding of the same values (`exec/ordered_grouping.rs`).
    pub fn groups_arrive_together(&self, group_by: &[Expr]) -> bool {
        let Some(order) = self.key_columns_in_output() else { return false };
        if group_by.is_empty() || group_by.len() > order.len() {
            return false;
        }
        let prefix = &order[..group_by.len()];
        group_by.iter().all(|expr| matches!(expr, Expr::Column(column) if prefix.contains(column)))
            && prefix.iter().all(|column| group_by.contains(&Expr::Column(*column)))
    }

    /// The output positions of the primary-key columns of the scan under this plan, in key
    /// order, as far as the plan passes them through unchanged; `None` where its rows do not
    /// come in key order (no scan, a scan by index, or by a list of keys).
    fn key_columns_in_output(&self) -> Option<Vec<usize>> {
        match self {
            Plan::Scan { table, access, .. } => {
                let in_key_order = matches!(access, Access::Full | Access::PrimaryKeyRange { .. });
                (in_key_order && !table.primary_key.is_empty()).then(|| table.primary_key.clone())
            }
            Plan::Filter { input, .. } => input.key_columns_in_output(),
            Plan::Project { input, exprs } => {
                let inner = input.key_columns_in_output()?;
                Some(
                    inner
                        .iter()
                        .map_while(|column| exprs.iter().position(|expr| *expr == Expr::Column(*column)))
                        .collect(),
                )
            }
            _ => None,
        }
    }

    /// The plan as indented text (EXPLAIN).
    pub fn explain(&self) -> String {
        self.explain_with(&|_| None)
    }

    /// The plan as indented text, each operator's line followed by what `annotate` says of it
    /// (EXPLAIN ANALYZE: rows, loops and time).
    pub fn explain_with(&self, annotate: &dyn Fn(&Plan) -> Option<String>) -> String {
        let mut out = String::new();
        self.explain_into(0, &mut out, annotate);
        out
    }

    fn explain_into(&self, depth: usize, out: &mut String, annotate: &dyn Fn(&Plan) -> Option<String>) {
        let start = out.len();
        self.explain_node(depth, out, annotate);
        if let Some(note) = annotate(self)
            && let Some(end) = out[start..].find('\n')
        {
            out.insert_str(start + end, &format!("  ({note})"));
        }
    }

    fn explain_node(&self, depth: usize, out: &mut String, annotate: &dyn Fn(&Plan) -> Option<String>) {
        use std::fmt::Write;
        let pad = "  ".repeat(depth);
        match self {
            Plan::Values { rows, .. } => {
                let _ = writeln!(out, "{pad}Values rows={}", rows.len());
            }
            Plan::Scan { table, access, filter, reverse } => {
                let access = match access {
                    Access::Full => "full scan".to_string(),
                    Access::PrimaryKeyPoints(keys) => format!("primary key lookup ({} keys)", keys.len()),
                    Access::PrimaryKeyPrefix(keys) => format!(
                        "primary key prefix lookup ({} of {} columns, {} keys)",
                        keys.first().map_or(0, Vec::len),
                        table.primary_key.len(),
                        keys.len()
                    ),
                    Access::PrimaryKeyRange { .. } => "primary key range".to_string(),
                    Access::IndexPoints { index, keys } => format!("index {} lookup ({} keys)", index.name, keys.len()),
                    Access::IndexRange { index, .. } => format!("index {} range", index.name),
                };
                let _ = write!(out, "{pad}Scan {} ({access}{})", table.name, if *reverse { ", reverse" } else { "" });
                if let Some(filter) = filter {
                    let _ = write!(out, " filter={filter}");
                }
                out.push('\n');
            }
            Plan::Filter { input, predicate } => {
                let _ = writeln!(out, "{pad}Filter {predicate}");
                input.explain_into(depth + 1, out, annotate);
            }
            Plan::Project { input, exprs } => {
                let list: Vec<String> = exprs.iter().map(|expr| expr.to_string()).collect();
                let _ = writeln!(out, "{pad}Project {}", list.join(", "));
                input.explain_into(depth + 1, out, annotate);
            }
            Plan::Join { left, right, kind, left_keys, right_keys, condition } => {
                let method = if left_keys.is_empty() { "NestedLoopJoin" } else { "HashJoin" };
                let _ = write!(out, "{pad}{method} {kind:?}");
                for (left_key, right_key) in left_keys.iter().zip(right_keys) {
                    let _ = write!(out, " {left_key}={right_key}");
                }
                if let Some(condition) = condition {
                    let _ = write!(out, " on {condition}");
                }
                out.push('\n');
                left.explain_into(depth + 1, out, annotate);
                right.explain_into(depth + 1, out, annotate);
            }
            Plan::LookupJoin { left, table, index, left_key, right_filter, condition, kind } => {
                let via = match index {
                    Some(index) => format!("index {}", index.name),
                    None => "primary key".into(),
                };
                let _ = write!(out, "{pad}LookupJoin {kind:?} {} via {via} key={left_key}", table.name);
                if let Some(filter) = right_filter {
                    let _ = write!(out, " filter={filter}");
                }
                if let Some(condition) = condition {
                    let _ = write!(out, " on {condition}");
                }
                out.push('\n');
                left.explain_into(depth + 1, out, annotate);
            }
            Plan::Aggregate { input, group_by, aggregates } => {
                // Groups that arrive one after another are folded one at a time.
                let method = if input.groups_arrive_together(group_by) { "GroupAggregate" } else { "HashAggregate" };
                let _ = writeln!(out, "{pad}{method} groups={} aggregates={}", group_by.len(), aggregates.len());
                input.explain_into(depth + 1, out, annotate);
            }
            Plan::Window { input, calls } => {
                let _ = writeln!(out, "{pad}Window calls={}", calls.len());
                input.explain_into(depth + 1, out, annotate);
            }
            Plan::Sort { input, keys, limit } => {
                let _ = write!(out, "{pad}Sort keys={}", keys.len());
                if let Some(limit) = limit {
                    let _ = write!(out, " top={limit}");
                }
                out.push('\n');
                input.explain_into(depth + 1, out, annotate);
            }
            Plan::Limit { input, .. } => {
                let _ = writeln!(out, "{pad}Limit");
                input.explain_into(depth + 1, out, annotate);
            }
            Plan::Distinct { input } => {
                let _ = writeln!(out, "{pad}Distinct");
                input.explain_into(depth + 1, out, annotate);
            }
            Plan::SetOperation { op, all, left, right } => {
                let _ = writeln!(out, "{pad}{op:?}{}", if *all { " ALL" } else { "" });
                left.explain_into(depth + 1, out, annotate);
                right.explain_into(depth + 1, out, annotate);
            }
            Plan::Recursive { id, anchor, step, all } => {
                let _ = writeln!(out, "{pad}Recursive #{id}{}", if *all { " (UNION ALL)" } else { " (UNION)" });
                anchor.explain_into(depth + 1, out, annotate);
                step.explain_into(depth + 1, out, annotate);
            }
            Plan::WorkingTable { id, .. } => {
                let _ = writeln!(out, "{pad}WorkingTable #{id}");
            }
            // The id is unique in the process, so not shown: EXPLAIN's text stays the same
            // from run to run. Each place shows the same plan below.
            Plan::Shared { input, .. } => {
                let _ = writeln!(out, "{pad}Shared");
                input.explain_into(depth + 1, out, annotate);
            }
            Plan::SystemTable { table, rows, live: None } => {
                let _ = writeln!(out, "{pad}SystemTable {} rows={}", table.name, rows.len());
            }
            Plan::SystemTable { table, live: Some(_), .. } => {
                let _ = writeln!(out, "{pad}SystemTable {} (live)", table.name);
            }
            Plan::TableFunction { function, args, ordinality } => {
                let args: Vec<String> = args.iter().map(ToString::to_string).collect();
                let numbered = if *ordinality { " WITH ORDINALITY" } else { "" };
                let _ = writeln!(out, "{pad}TableFunction {function:?}({}){numbered}", args.join(", "));
            }
            Plan::ProjectSet { input, calls } => {
                let calls: Vec<String> = calls
                    .iter()
                    .map(|(function, args)| {
                        let args: Vec<String> = args.iter().map(ToString::to_string).collect();
                        format!("{function:?}({})", args.join(", "))
                    })
                    .collect();
                let _ = writeln!(out, "{pad}ProjectSet {}", calls.join(", "));
                input.explain_into(depth + 1, out, annotate);
            }
        }
    }
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expr::Literal(value) => match value {
                Value::Text(_) => f.write_str(&value.sql_literal()),
                other => write!(f, "{other}"),
            },
            Expr::Column(index) => write!(f, "#{index}"),
            Expr::Outer { depth, index } => write!(f, "outer{depth}#{index}"),
            Expr::Param(index) => write!(f, "${}", index + 1),
            Expr::Unary(op, inner) => write!(f, "{op:?}({inner})"),
            Expr::Binary(op, left, right) => write!(f, "({left} {} {right})", op.symbol()),
            Expr::Is { left, right, negated } => write!(f, "({left} IS {}{right})", if *negated { "NOT " } else { "" }),
            Expr::IsNull(inner, negated) => write!(f, "({inner} IS {}NULL)", if *negated { "NOT " } else { "" }),
            Expr::InList { expr, list, negated } => {
                write!(f, "({expr} {}IN ({} items))", if *negated { "NOT " } else { "" }, list.len())
            }
            Expr::InKeys { expr, keys } => write!(f, "({expr} IN ({} join keys))", keys.len()),
            Expr::InSubquery { expr, negated, .. } => {
                write!(f, "({expr} {}IN (subquery))", if *negated { "NOT " } else { "" })
            }
            Expr::Exists { negated, .. } => write!(f, "{}EXISTS(subquery)", if *negated { "NOT " } else { "" }),
            Expr::ScalarSubquery(_) => f.write_str("(subquery)"),
            Expr::Case { .. } => f.write_str("CASE"),
            Expr::Cast(inner, to) => write!(f, "CAST({inner} AS {to:?})"),
            Expr::Affinity(inner, _) => write!(f, "{inner}"),
            Expr::Like { expr, pattern, negated, glob, .. } => {
                write!(
                    f,
                    "({expr} {}{} {pattern})",
                    if *negated { "NOT " } else { "" },
                    if *glob { "GLOB" } else { "LIKE" }
                )
            }
            Expr::Function(function, args) => {
                let list: Vec<String> = args.iter().map(|arg| arg.to_string()).collect();
                write!(f, "{function:?}({})", list.join(", "))
            }
            Expr::Aggregate(call) => write!(f, "{:?}(..)", call.function),
            Expr::Window(call) => write!(f, "{:?}(..) OVER (..)", call.function),
        }
    }
}

/// Whether the expression holds a subquery of any kind (not looking inside it).
pub fn has_subquery(expr: &Expr) -> bool {
    let mut found = false;
    expr.walk(&mut |expr| {
        found |= matches!(expr, Expr::InSubquery { .. } | Expr::Exists { .. } | Expr::ScalarSubquery(_))
    });
    found
}

impl Expr {
    /// The expression with every column `by` places lower (read from a relation of its own).
    pub fn shift_columns_down(self, by: usize) -> Expr {
        self.rewrite(&mut |expr| match expr {
            Expr::Column(index) => Expr::Column(index - by),
            other => other,
        })
    }
}
