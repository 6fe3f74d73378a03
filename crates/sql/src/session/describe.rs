//! What a statement will produce before it runs: the type of each result column and of each
//! parameter, inferred from the bound plan (PostgreSQL's Describe message needs both before
//! any row exists).
//!
//! Tern stores values dynamically typed, as SQLite does, so these are the types a column is
//! declared with or an expression is expected to produce; a row may still carry a value of
//! another kind (a text stored in an INTEGER column), and a client must be ready for that.
//! A type that cannot be known statically is [`SqlType::Unknown`].

use tern_exec::catalog::TableDef;
use tern_exec::dialect::Dialect;
use tern_exec::functions::ScalarFunction;
use tern_exec::plan::{Access, AggregateFunction, BinaryOp, CastType, Expr, Plan, UnaryOp, WindowFunction};
use tern_exec::types::temporal::TemporalKind;
use tern_exec::value::{Affinity, Value};

/// The expected type of a result column or parameter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SqlType {
    /// A table column's declared type, as written (`INT`, `VARCHAR(20)`, `TIMESTAMP`, ...).
    Declared(String),
    Integer,
    Real,
    Decimal,
    Text,
    Blob,
    /// Comparisons and logical operators: 0, 1 or NULL.
    Boolean,
    /// PostgreSQL's `smallint`/`integer`/`bigint` (width in bytes) from a cast.
    Int(u8),
    /// A date/time type.
    Temporal(TemporalKind),
    /// A PostgreSQL enum type.
    Enum(tern_exec::types::enum_type::EnumId),
    /// A PostgreSQL composite type.
    Composite(tern_exec::types::composite::CompositeId),
    /// An anonymous row value, `ROW(...)`.
    Record,
    Unknown,
}

/// A statement's result columns (name and type) and parameters (`$1`/`?1` is the first).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Description {
    pub columns: Vec<(String, SqlType)>,
    pub parameters: Vec<SqlType>,
    /// The table column each result column reads unchanged, as (table OID, 1-based column
    /// number) for PostgreSQL's RowDescription; empty or `None` where there is none.
    pub origins: Vec<Option<(u32, i16)>>,
}

/// The table column each output column of `plan` passes through unchanged (a column of a
/// table scan, projected, filtered, sorted or joined), as (table OID, column number).
pub fn origins(plan: &Plan) -> Vec<Option<(u32, i16)>> {
    match plan {
        Plan::Scan { table, .. } if table.id != 0 => (0..table.columns.len())
            .map(|column| Some((crate::catalog::system::table_oid(table) as u32, column as i16 + 1)))
            .collect(),
        Plan::Filter { input, .. }
        | Plan::Sort { input, .. }
        | Plan::Limit { input, .. }
        | Plan::Distinct { input, .. } => origins(input),
        Plan::Project { input, exprs } => {
            let inner = origins(input);
            exprs
                .iter()
                .map(|expr| match expr {
                    Expr::Column(index) => inner.get(*index).copied().flatten(),
                    _ => None,
                })
                .collect()
        }
        Plan::Join { left, kind, .. } if kind.keeps_left_only() => origins(left),
        Plan::Join { left, right, .. } => {
            let mut both = origins(left);
            both.extend(origins(right));
            both
        }
        Plan::LookupJoin { left, table, .. } => {
            let mut both = origins(left);
            both.extend(
                (0..table.columns.len())
                    .map(|column| Some((crate::catalog::system::table_oid(table) as u32, column as i16 + 1))),
            );
            both
        }
        other => vec![None; other.width()],
    }
}

impl SqlType {
    fn of_column(table: &TableDef, index: usize) -> SqlType {
        crate::dml::column_type(table, index)
    }

    /// The broad kind of the type, for arithmetic.
    fn kind(&self) -> SqlType {
        match self {
            SqlType::Declared(name) => match Affinity::of_declared_type_in(name, Dialect::Postgres) {
                Affinity::Integer | Affinity::Int(_) => SqlType::Integer,
                Affinity::Real => SqlType::Real,
                Affinity::Decimal(..) => SqlType::Decimal,
                Affinity::Text => SqlType::Text,
                Affinity::Boolean => SqlType::Boolean,
                Affinity::Float => SqlType::Real,
                Affinity::Number => SqlType::Decimal,
                Affinity::Bytea => SqlType::Blob,
                Affinity::Uuid | Affinity::Json(_) => SqlType::Text,
                Affinity::Temporal(kind) => SqlType::Temporal(kind),
                Affinity::Enum(id) => SqlType::Enum(id),
                Affinity::Composite(id) => SqlType::Composite(id),
                Affinity::Blob | Affinity::Numeric => SqlType::Unknown,
            },
            SqlType::Int(_) => SqlType::Integer,
            other => other.clone(),
        }
    }
}

/// Infers result and parameter types over plans, given the parameter count.
pub(crate) struct Inference {
    pub parameters: Vec<SqlType>,
}

impl Inference {
    pub fn new(count: usize) -> Inference {
        Inference { parameters: vec![SqlType::Unknown; count] }
    }

    /// The output types of `plan`, noting parameter types found on the way.
    pub fn plan(&mut self, plan: &Plan) -> Vec<SqlType> {
        match plan {
            Plan::Values { rows, width } => {
                let mut types = vec![SqlType::Unknown; *width];
                for row in rows {
                    for (slot, expr) in types.iter_mut().zip(row) {
                        let found = self.expr(expr, &[]);
                        if *slot == SqlType::Unknown {
                            *slot = found;
                        }
                    }
                }
                types
            }
            Plan::Scan { table, access, filter, .. } => {
                let types: Vec<SqlType> =
                    (0..table.columns.len()).map(|index| SqlType::of_column(table, index)).collect();
                self.access(table, access, &types);
                if let Some(filter) = filter {
                    self.expr(filter, &types);
                }
                types
            }
            Plan::Filter { input, predicate } => {
                let types = self.plan(input);
                self.expr(predicate, &types);
                types
            }
            Plan::Project { input, exprs } => {
                let types = self.plan(input);
                exprs.iter().map(|expr| self.expr(expr, &types)).collect()
            }
            Plan::Join { left, right, left_keys, right_keys, condition, kind } => {
                let mut types = self.plan(left);
                let left_width = types.len();
                let right_types = self.plan(right);
                for (left_key, right_key) in left_keys.iter().zip(right_keys) {
                    self.expr(left_key, &types);
                    self.expr(right_key, &right_types);
                }
                types.extend(right_types);
                if let Some(condition) = condition {
                    self.expr(condition, &types);
                }
                if kind.keeps_left_only() {
                    types.truncate(left_width);
                }
                types
            }
            Plan::LookupJoin { left, table, right_filter, condition, left_key, .. } => {
                let mut types = self.plan(left);
                self.expr(left_key, &types);
                let right: Vec<SqlType> =
                    (0..table.columns.len()).map(|index| SqlType::of_column(table, index)).collect();
                if let Some(filter) = right_filter {
                    self.expr(filter, &right);
                }
                types.extend(right);
                if let Some(condition) = condition {
                    self.expr(condition, &types);
                }
                types
            }
            Plan::Aggregate { input, group_by, aggregates } => {
                let input_types = self.plan(input);
                let mut types: Vec<SqlType> = group_by.iter().map(|expr| self.expr(expr, &input_types)).collect();
                for call in aggregates {
                    let args: Vec<SqlType> = call.args.iter().map(|arg| self.expr(arg, &input_types)).collect();
                    if let Some(filter) = &call.filter {
                        self.expr(filter, &input_types);
                    }
                    types.push(aggregate_type(call.function, args.first()));
                }
                types
            }
            Plan::Window { input, calls } => {
                let mut types = self.plan(input);
                let input_types = types.clone();
                for call in calls {
                    let args: Vec<SqlType> = call.args.iter().map(|arg| self.expr(arg, &input_types)).collect();
                    for expr in call.filter.iter().chain(&call.window.partition_by) {
                        self.expr(expr, &input_types);
                    }
                    for key in &call.window.order_by {
                        self.expr(&key.expr, &input_types);
                    }
                    types.push(match call.function {
                        WindowFunction::RowNumber
                        | WindowFunction::Rank
                        | WindowFunction::DenseRank
                        | WindowFunction::Ntile => SqlType::Integer,
                        WindowFunction::PercentRank | WindowFunction::CumeDist => SqlType::Real,
                        WindowFunction::Lag
                        | WindowFunction::Lead
                        | WindowFunction::FirstValue
                        | WindowFunction::LastValue
                        | WindowFunction::NthValue => args.first().cloned().unwrap_or(SqlType::Unknown),
                        WindowFunction::Aggregate(function) => aggregate_type(function, args.first()),
                    });
                }
                types
            }
            Plan::Sort { input, keys, limit } => {
                let types = self.plan(input);
                for key in keys {
                    self.expr(&key.expr, &types);
                }
                if let Some(limit) = limit {
                    self.expect(limit, &[], SqlType::Integer);
                }
                types
            }
            Plan::Limit { input, limit, offset } => {
                let types = self.plan(input);
                for bound in [limit, offset].into_iter().flatten() {
                    self.expect(bound, &[], SqlType::Integer);
                }
                types
            }
            Plan::Distinct { input } => self.plan(input),
            Plan::SetOperation { left, right, .. } => {
                let types = self.plan(left);
                self.plan(right);
                types
            }
            Plan::Recursive { anchor, step, .. } => {
                let types = self.plan(anchor);
                self.plan(step);
                types
            }
            Plan::WorkingTable { width, .. } => vec![SqlType::Unknown; *width],
            Plan::Shared { input, .. } => self.plan(input),
            Plan::SystemTable { table, .. } => {
                (0..table.columns.len()).map(|index| SqlType::of_column(table, index)).collect()
            }
            Plan::TableFunction { function, args, ordinality } => {
                let args: Vec<SqlType> = args.iter().map(|arg| self.expr(arg, &[])).collect();
                let mut types = vec![table_function_type(*function, &args)];
                if *ordinality {
                    types.push(SqlType::Integer);
                }
                types
            }
            Plan::ProjectSet { input, calls } => {
                let mut types = self.plan(input);
                let input_types = types.clone();
                for (function, args) in calls {
                    let args: Vec<SqlType> = args.iter().map(|arg| self.expr(arg, &input_types)).collect();
                    types.push(table_function_type(*function, &args));
                }
                types
            }
        }
    }

    fn access(&mut self, table: &TableDef, access: &Access, types: &[SqlType]) {
        let column_type = |index: usize| types.get(index).cloned().unwrap_or(SqlType::Unknown);
        match access {
            Access::Full => {}
            Access::PrimaryKeyPoints(keys) | Access::PrimaryKeyPrefix(keys) => {
                for key in keys {
                    for (expr, &column) in key.iter().zip(&table.primary_key) {
                        self.expect(expr, &[], column_type(column));
                    }
                }
            }
            Access::PrimaryKeyRange { lower, upper } => {
                let column = table.primary_key.first().copied().unwrap_or(usize::MAX);
                for (expr, _) in [lower, upper].into_iter().flatten() {
                    self.expect(expr, &[], column_type(column));
                }
            }
            Access::IndexPoints { index, keys } => {
                for key in keys {
                    for (expr, &column) in key.iter().zip(&index.columns) {
                        self.expect(expr, &[], column_type(column));
                    }
                }
            }
            Access::IndexRange { index, lower, upper } => {
                let column = index.columns.first().copied().unwrap_or(usize::MAX);
                for (expr, _) in [lower, upper].into_iter().flatten() {
                    self.expect(expr, &[], column_type(column));
                }
            }
        }
    }

    /// Notes that `expr` is expected to have type `wanted` (a parameter takes it).
    pub fn expect(&mut self, expr: &Expr, input: &[SqlType], wanted: SqlType) {
        match param_of(expr) {
            Some(index) => self.note(index, wanted),
            None => {
                self.expr(expr, input);
            }
        }
    }

    fn note(&mut self, index: usize, wanted: SqlType) {
        if let Some(slot) = self.parameters.get_mut(index)
            && *slot == SqlType::Unknown
        {
            *slot = wanted;
        }
    }

    /// The type of `expr` over a row of `input` types.
    pub fn expr(&mut self, expr: &Expr, input: &[SqlType]) -> SqlType {
        match expr {
            Expr::Literal(value) => match value {
                Value::Null => SqlType::Unknown,
                Value::Integer(_) => SqlType::Integer,
                Value::Real(_) => SqlType::Real,
                Value::Decimal(_) => SqlType::Decimal,
                Value::Text(_) => SqlType::Text,
                Value::Blob(_) => SqlType::Blob,
                Value::Temporal(temporal) => SqlType::Temporal(temporal.kind()),
                Value::Enum(_) => SqlType::Unknown,
                Value::Record(_) => SqlType::Record,
            },
            Expr::Column(index) => input.get(*index).cloned().unwrap_or(SqlType::Unknown),
            Expr::Outer { .. } | Expr::Param(_) | Expr::Aggregate(_) | Expr::Window(_) => SqlType::Unknown,
            Expr::Unary(op, inner) => {
                let inner = self.expr(inner, input);
                match op {
                    UnaryOp::Not => SqlType::Boolean,
                    UnaryOp::BitNot => SqlType::Integer,
                    UnaryOp::Neg | UnaryOp::Plus => inner.kind(),
                }
            }
            Expr::Binary(op, left, right) => {
                let left_type = self.expr(left, input);
                let right_type = self.expr(right, input);
                // A parameter compared with or combined with a typed operand takes its type.
                if let Some(index) = param_of(left) {
                    self.note(index, right_type.clone());
                }
                if let Some(index) = param_of(right) {
                    self.note(index, left_type.clone());
                }
                match op {
                    op if op.is_comparison() => SqlType::Boolean,
                    BinaryOp::And | BinaryOp::Or => SqlType::Boolean,
                    BinaryOp::Concat => SqlType::Text,
                    BinaryOp::BitAnd | BinaryOp::BitOr | BinaryOp::ShiftLeft | BinaryOp::ShiftRight => SqlType::Integer,
                    _ if matches!(left_type.kind(), SqlType::Temporal(_))
                        || matches!(right_type.kind(), SqlType::Temporal(_)) =>
                    {
                        temporal_result(*op, &left_type.kind(), &right_type.kind())
                    }
                    _ => match (left_type.kind(), right_type.kind()) {
                        (SqlType::Integer, SqlType::Integer) => SqlType::Integer,
                        (SqlType::Decimal, SqlType::Integer | SqlType::Decimal)
                        | (SqlType::Integer, SqlType::Decimal) => SqlType::Decimal,
                        (SqlType::Real, SqlType::Integer | SqlType::Real | SqlType::Decimal)
                        | (SqlType::Integer | SqlType::Decimal, SqlType::Real) => SqlType::Real,
                        _ => SqlType::Unknown,
                    },
                }
            }
            Expr::Is { left, right, .. } => {
                let left_type = self.expr(left, input);
                let right_type = self.expr(right, input);
                if let Some(index) = param_of(left) {
                    self.note(index, right_type);
                }
                if let Some(index) = param_of(right) {
                    self.note(index, left_type);
                }
                SqlType::Boolean
            }
            Expr::IsNull(inner, _) | Expr::InKeys { expr: inner, .. } => {
                self.expr(inner, input);
                SqlType::Boolean
            }
            Expr::InList { expr, list, .. } => {
                let wanted = self.expr(expr, input);
                for item in list {
                    self.expect(item, input, wanted.clone());
                }
                SqlType::Boolean
            }
            Expr::InSubquery { expr, subquery, .. } => {
                self.expr(expr, input);
                self.plan(&subquery.plan);
                SqlType::Boolean
            }
            Expr::Exists { subquery, .. } => {
                self.plan(&subquery.plan);
                SqlType::Boolean
            }
            Expr::ScalarSubquery(subquery) => self.plan(&subquery.plan).into_iter().next().unwrap_or(SqlType::Unknown),
            Expr::Case { operand, whens, otherwise } => {
                if let Some(operand) = operand {
                    self.expr(operand, input);
                }
                let mut result = SqlType::Unknown;
                for (when, then) in whens {
                    self.expr(when, input);
                    let then = self.expr(then, input);
                    if result == SqlType::Unknown {
                        result = then;
                    }
                }
                if let Some(otherwise) = otherwise {
                    let otherwise = self.expr(otherwise, input);
                    if result == SqlType::Unknown {
                        result = otherwise;
                    }
                }
                result
            }
            Expr::Cast(inner, to) => {
                let target = match to {
                    CastType::Integer => SqlType::Integer,
                    CastType::Oid => SqlType::Declared("oid".into()),
                    CastType::Bytea => SqlType::Blob,
                    CastType::Uuid => SqlType::Declared("uuid".into()),
                    CastType::Json(binary) => SqlType::Declared(if *binary { "jsonb" } else { "json" }.into()),
                    CastType::Array(oid) => SqlType::Declared(tern_exec::catalog::pgtype::format_type(*oid, -1)),
                    CastType::Real => SqlType::Real,
                    CastType::Decimal(..) => SqlType::Decimal,
                    CastType::Text => SqlType::Text,
                    CastType::Blob => SqlType::Blob,
                    CastType::Numeric => SqlType::Unknown,
                    CastType::Int(bytes) => SqlType::Int(*bytes),
                    CastType::Boolean => SqlType::Boolean,
                    CastType::Float => SqlType::Real,
                    CastType::Number => SqlType::Decimal,
                    CastType::Temporal(kind) => SqlType::Temporal(*kind),
                    CastType::Enum(id) => SqlType::Enum(*id),
                    CastType::Composite(id) => SqlType::Composite(*id),
                };
                // `$1::int8` gives the parameter the cast's type, as in PostgreSQL.
                self.expect(inner, input, target.clone());
                target
            }
            Expr::Affinity(inner, _) => self.expr(inner, input),
            Expr::Like { expr, pattern, escape, .. } => {
                self.expect(expr, input, SqlType::Text);
                self.expect(pattern, input, SqlType::Text);
                if let Some(escape) = escape {
                    self.expect(escape, input, SqlType::Text);
                }
                SqlType::Boolean
            }
            Expr::Function(function, args) => {
                let types: Vec<SqlType> = args.iter().map(|arg| self.expr(arg, input)).collect();
                function_type(*function, &types)
            }
        }
    }
}

/// The type of a set-returning function's column, given its arguments' types.
fn table_function_type(function: tern_exec::plan::TableFunction, args: &[SqlType]) -> SqlType {
    match function {
        tern_exec::plan::TableFunction::GenerateSeries | tern_exec::plan::TableFunction::GenerateSubscripts => {
            SqlType::Integer
        }
        tern_exec::plan::TableFunction::PartitionAncestors => SqlType::Declared("oid".into()),
        tern_exec::plan::TableFunction::ExpandArray => {
            SqlType::Composite(tern_exec::types::composite::expand_array_type())
        }
        tern_exec::plan::TableFunction::Unnest => match args.first() {
            Some(SqlType::Declared(name)) => tern_exec::catalog::pgtype::array_element_name(&name.to_ascii_lowercase())
                .map_or(SqlType::Text, |element| SqlType::Declared(element.to_string())),
            _ => SqlType::Text,
        },
    }
}

/// The array type whose elements have type `element` (an array of arrays stays the array:
/// Tern's arrays have one dimension). Elements without a type are text.
fn array_of(element: &SqlType) -> SqlType {
    let name = match element {
        SqlType::Declared(name)
            if tern_exec::catalog::pgtype::array_element_name(&name.to_ascii_lowercase()).is_some() =>
        {
            return element.clone();
        }
        SqlType::Declared(name) => name.as_str(),
        SqlType::Integer | SqlType::Int(8) => "bigint",
        SqlType::Int(2) => "smallint",
        SqlType::Int(_) => "integer",
        SqlType::Real => "double precision",
        SqlType::Decimal => "numeric",
        SqlType::Boolean => "boolean",
        SqlType::Blob => "bytea",
        SqlType::Temporal(kind) => kind.name(),
        SqlType::Text | SqlType::Unknown | SqlType::Enum(_) | SqlType::Composite(_) | SqlType::Record => "text",
    };
    SqlType::Declared(format!("{name}[]"))
}

/// The type of date/time arithmetic (see `temporal::arith`).
fn temporal_result(op: BinaryOp, left: &SqlType, right: &SqlType) -> SqlType {
    use TemporalKind as K;
    let temporal = |kind: &SqlType| match kind {
        SqlType::Temporal(kind) => Some(*kind),
        _ => None,
    };
    match (op, temporal(left), temporal(right)) {
        (BinaryOp::Sub, Some(K::Date), Some(K::Date)) => SqlType::Integer,
        (BinaryOp::Add | BinaryOp::Sub, Some(K::Date), None) | (BinaryOp::Add, None, Some(K::Date)) => {
            SqlType::Temporal(K::Date)
        }
        (BinaryOp::Add | BinaryOp::Sub, Some(K::Date), Some(K::Interval | K::Time))
        | (BinaryOp::Add, Some(K::Interval | K::Time), Some(K::Date)) => SqlType::Temporal(K::Timestamp),
        (
            BinaryOp::Sub,
            Some(K::Date | K::Timestamp | K::TimestampTz),
            Some(K::Date | K::Timestamp | K::TimestampTz),
        ) => SqlType::Temporal(K::Interval),
        (BinaryOp::Sub, Some(K::Time), Some(K::Time)) => SqlType::Temporal(K::Interval),
        (_, Some(kind), _) => SqlType::Temporal(kind),
        (_, None, Some(kind)) => SqlType::Temporal(kind),
        _ => SqlType::Unknown,
    }
}

/// The parameter `expr` is, possibly under a comparison affinity.
fn param_of(expr: &Expr) -> Option<usize> {
    match expr {
        Expr::Param(index) => Some(*index),
        Expr::Affinity(inner, _) => param_of(inner),
        _ => None,
    }
}

fn function_type(function: ScalarFunction, args: &[SqlType]) -> SqlType {
    use ScalarFunction::*;
    let first = args.first().cloned().unwrap_or(SqlType::Unknown);
    match function {
        Length | Instr | Unicode | Sign | UnixEpoch => SqlType::Integer,
        Lower | Upper | Substr | Trim | Ltrim | Rtrim | Replace | Typeof | Hex | Quote | Char | Concat | Date
        | Time | DateTime | CurrentSetting | SetConfig | Version | CurrentDatabase | CurrentSchema | CurrentUser => {
            SqlType::Text
        }
        Random | BackendPid => SqlType::Integer,
        RegexMatch | ArrayContains | AlwaysTrue | AlwaysFalse => SqlType::Boolean,
        ArrayElement | ArrayToString | FormatType | EncodingName | QuoteIdent | QuoteLiteral | QuoteNullable
        | AlwaysNull => SqlType::Text,
        SplitPart | Left | Right | Lpad | Rpad | Repeat | Reverse | Initcap | RegexpReplace | Format => SqlType::Text,
        RegexpMatch | RegexpSplitToArray => array_of(&SqlType::Text),
        RegexpSubstr => SqlType::Text,
        RegexpCount => SqlType::Integer,
        PgSizePretty => SqlType::Text,
        CheckDomain => first,
        Json(build) => SqlType::Declared(build.type_name().into()),
        JsonOperator(op) => match op.result_type() {
            "boolean" => SqlType::Boolean,
            "text" => SqlType::Text,
            name => SqlType::Declared(name.into()),
        },
        RegexpLike => SqlType::Boolean,
        NextVal | CurrVal | SetVal | LastVal | ObjectBytes => SqlType::Integer,
        Advisory(call) => match call.op {
            tern_exec::functions::AdvisoryOp::TryLock | tern_exec::functions::AdvisoryOp::Unlock => SqlType::Boolean,
            _ => SqlType::Text,
        },
        IsFinite => SqlType::Boolean,
        Extract | ToNumber => SqlType::Decimal,
        DatePart | JulianDay => SqlType::Real,
        ToChar | StrFTime => SqlType::Text,
        ToDate | MakeDate => SqlType::Temporal(TemporalKind::Date),
        MakeTime => SqlType::Temporal(TemporalKind::Time),
        MakeTimestamp => SqlType::Temporal(TemporalKind::Timestamp),
        ToTimestamp | MakeTimestampTz => SqlType::Temporal(TemporalKind::TimestampTz),
        MakeInterval | JustifyDays | JustifyHours | JustifyInterval | Age => SqlType::Temporal(TemporalKind::Interval),
        ArrayUpper | ArrayLower | Cardinality | ToRegtype | TypeOid | ArrayPosition => SqlType::Integer,
        ArrayConstruct => {
            array_of(&args.iter().find(|kind| **kind != SqlType::Unknown).cloned().unwrap_or(SqlType::Text))
        }
        ArrayAppend | ArrayCat | ArrayRemove => array_of(&first),
        ArrayPrepend => array_of(args.get(1).unwrap_or(&SqlType::Unknown)),
        StringToArray => array_of(&SqlType::Text),
        FirstArgument => first,
        Sqrt | Power | Exp | Ln | Log10 => SqlType::Real,
        Abs | Ceil | Floor | Round => match first.kind() {
            SqlType::Integer => SqlType::Integer,
            SqlType::Decimal => SqlType::Decimal,
            SqlType::Real => SqlType::Real,
            _ => SqlType::Unknown,
        },
        Coalesce | IfNull | Min | Max | Iif | NullIf | Greatest | Least => {
            args.iter().find(|kind| **kind != SqlType::Unknown).cloned().unwrap_or(SqlType::Unknown)
        }
        _ => SqlType::Unknown,
    }
}

/// The type an aggregate returns given its first argument's.
fn aggregate_type(function: AggregateFunction, first: Option<&SqlType>) -> SqlType {
    let first = first.cloned().unwrap_or(SqlType::Unknown);
    match function {
        AggregateFunction::Count | AggregateFunction::CountStar | AggregateFunction::Grouping => SqlType::Integer,
        AggregateFunction::Percentile { continuous: true, .. } => SqlType::Real,
        AggregateFunction::Percentile { continuous: false, .. } | AggregateFunction::Mode { .. } => first,
        AggregateFunction::Total | AggregateFunction::Avg | AggregateFunction::Statistic(_) => SqlType::Real,
        AggregateFunction::GroupConcat => SqlType::Text,
        AggregateFunction::ArrayAgg => array_of(&first),
        AggregateFunction::Sum => match first.kind() {
            SqlType::Integer => SqlType::Integer,
            SqlType::Decimal => SqlType::Decimal,
            SqlType::Real => SqlType::Real,
            _ => SqlType::Unknown,
        },
        AggregateFunction::Min | AggregateFunction::Max | AggregateFunction::AnyValue | AggregateFunction::First => {
            first
        }
    }
}
