//! Scalar functions, arithmetic and pattern matching, with SQLite's semantics (this file), and
//! the families apart: PostgreSQL's array, JSON, regular expression and string functions,
//! SQLite's date and time functions, advisory locks, and SQL-language functions the user
//! defines.

pub mod advisory;
pub mod array_functions;
pub mod datetime;
pub mod json_functions;
pub mod json_operators;
pub mod raise;
pub mod regex_functions;
pub mod text_functions;

use crate::error::{Error, Result};
use crate::plan::BinaryOp;
use crate::types::decimal::{self, Decimal};
use crate::value::{Value, format_real};
use std::cmp::Ordering;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScalarFunction {
    Abs,
    Coalesce,
    IfNull,
    NullIf,
    Length,
    Lower,
    Upper,
    Substr,
    Trim,
    Ltrim,
    Rtrim,
    Replace,
    Instr,
    Round,
    Typeof,
    Min,
    Max,
    Hex,
    Random,
    Sign,
    Ceil,
    Floor,
    Sqrt,
    Power,
    Exp,
    Ln,
    Log10,
    Mod,
    Concat,
    Quote,
    Char,
    Unicode,
    Iif,
    Date,
    Time,
    DateTime,
    UnixEpoch,
    /// `current_setting(name [, missing_ok])`: a session setting (`tern_sql::Session::settings`).
    CurrentSetting,
    /// `set_config(name, value, is_local)`: SET as a function; returns the new value.
    SetConfig,
    /// `version()`, `current_database()`, `current_schema()`, `current_user`: read from the
    /// session's settings (`tern.version`, `tern.database`, `tern.schema`, `tern.user`), with
    /// embedded defaults.
    Version,
    CurrentDatabase,
    CurrentSchema,
    CurrentUser,
    /// `pg_backend_pid()`: the session's `pg_stat_activity.pid`.
    BackendPid,
    /// `text ~ pattern` (POSIX regular expression, in the `regex` crate's syntax); the third
    /// argument is 1 for the case-insensitive `~*`.
    RegexMatch,
    /// `value = ANY(array)` with the array as its first argument (see [`crate::types::array`]).
    ArrayContains,
    /// `array[index]` (1-based).
    ArrayElement,
    /// `array_to_string(array, separator [, null_text])`.
    ArrayToString,
    /// `array_upper(array, 1)` / `array_length(array, 1)`: the number of elements (NULL if none).
    ArrayUpper,
    /// `array_lower(array, 1)`: 1, or NULL for an empty array.
    ArrayLower,
    /// `cardinality(array)`: the number of elements.
    Cardinality,
    /// `format_type(type_oid, typmod)`.
    FormatType,
    /// `pg_get_expr(expression, relation [, pretty])`: Tern keeps expressions as SQL text.
    FirstArgument,
    /// `pg_table_is_visible(oid)` and the `has_*_privilege` family: every object is in `public`
    /// and every user may do everything.
    AlwaysTrue,
    /// `pg_relation_is_publishable(oid)`, `pg_is_in_recovery()`.
    AlwaysFalse,
    /// `shobj_description`: Tern keeps no comments on databases or roles.
    AlwaysNull,
    /// `pg_encoding_to_char(encoding)`: Tern's only encoding is UTF8.
    EncodingName,
    /// `quote_ident(text)`.
    QuoteIdent,
    /// `quote_literal(x)` (NULL for NULL) and `quote_nullable(x)` (`NULL` for NULL):
    /// PostgreSQL's string literal of the value's text, `E'...'` when it has a backslash.
    QuoteLiteral,
    QuoteNullable,
    /// `to_regtype(name)`: a type's OID, or NULL if there is no such type.
    ToRegtype,
    /// `name::regtype` for a name known only when the statement runs: (the OID found, the
    /// name); 42704 if none was found.
    TypeOid,
    /// `nextval(sequence)`, `currval(sequence)`, `setval(sequence, value [, is_called])`,
    /// `lastval()` (`tern_sql::sequence`): evaluated by the executor.
    NextVal,
    CurrVal,
    SetVal,
    LastVal,
    /// PostgreSQL's string functions ([`crate::functions::text_functions`]).
    SplitPart,
    Left,
    Right,
    Lpad,
    Rpad,
    Repeat,
    Reverse,
    Initcap,
    RegexpReplace,
    /// `regexp_match`, `regexp_split_to_array`, `regexp_count`, `regexp_like`, `regexp_substr`
    /// ([`crate::functions::regex_functions`]).
    RegexpMatch,
    RegexpSplitToArray,
    RegexpCount,
    RegexpLike,
    RegexpSubstr,
    Format,
    /// `greatest(...)` / `least(...)`: PostgreSQL's, which leave NULLs out (SQLite's `max` and
    /// `min` of several arguments are NULL if any is).
    Greatest,
    Least,
    /// PostgreSQL's date/time functions ([`crate::types::temporal::functions`]).
    DateTrunc,
    /// `extract(field FROM x)` (NUMERIC) and `date_part(field, x)` (double precision).
    Extract,
    DatePart,
    Age,
    MakeDate,
    MakeTime,
    MakeTimestamp,
    MakeTimestampTz,
    MakeInterval,
    JustifyDays,
    JustifyHours,
    JustifyInterval,
    IsFinite,
    /// `timezone(zone, x)`, which `x AT TIME ZONE zone` binds to.
    Timezone,
    /// A typed clock; its argument names the type (`now()`, `current_date`, ...).
    Clock,
    /// `to_char`, `to_date`, `to_timestamp`, `to_number` ([`crate::types::temporal::pattern`]).
    ToChar,
    ToDate,
    ToTimestamp,
    ToNumber,
    /// SQLite's `strftime(format, time, modifiers...)` and `julianday(time, modifiers...)`.
    StrFTime,
    JulianDay,
    /// SQLite's `RAISE(kind, message)` in a trigger (`tern_sql::dml::trigger::fire::raise`).
    Raise,
    /// A call of a SQL-language function: its name, then the arguments (`tern_sql::ddl::sql_function`).
    SqlFunction,
    /// `pg_size_pretty(bytes)`: `10 kB`, `5 MB`, ... as PostgreSQL rounds them.
    PgSizePretty,
    /// A cast to a domain: (value, the domain's checks on it, the domain's name); 23514 when a
    /// check is false (`tern_sql::ddl::domain`).
    CheckDomain,
    /// `enum_range(low, high)`: (low, high, every label of the type in order); the labels from
    /// low to high as an array, NULL bounds open ([`crate::types::enum_type::functions`]).
    EnumRange,
    /// `ROW(a, b, ...)`: an anonymous row value ([`crate::types::composite`]).
    Row,
    /// The advisory lock functions ([`crate::functions::advisory`]), run by the executor.
    Advisory(AdvisoryCall),
    /// `ARRAY[a, b, ...]` and the array functions of [`crate::functions::array_functions`].
    ArrayConstruct,
    ArrayAppend,
    ArrayPrepend,
    ArrayCat,
    ArrayRemove,
    ArrayPosition,
    StringToArray,
    /// A sequence's `last_value` and `is_called` (`SELECT ... FROM seq`): (sequence name).
    SequenceLastValue,
    SequenceIsCalled,
    /// `(record).field`: (record, the field's position); NULL for a NULL record.
    RecordField,
    /// A set-returning function in a select list, which the binder moves into a
    /// [`crate::plan::Plan::ProjectSet`]; anywhere else it is refused when evaluated.
    SetReturning(crate::plan::TableFunction),
    /// The bytes stored for objects (tables' rows, indexes' entries): the argument lists their
    /// ids separated by commas, or is `*` for the whole database; NULL for NULL. The binder
    /// turns `pg_relation_size`, `pg_table_size`, `pg_indexes_size`,
    /// `pg_total_relation_size` and `pg_database_size` into it (`tern_sql::catalog::system`).
    ObjectBytes,
    /// `json_build_object`, `json_build_array`, `to_json` and their `jsonb_` forms
    /// ([`crate::functions::json_functions`]): (argument kinds, arguments...).
    Json(crate::functions::json_functions::JsonBuild),
    /// `->`, `->>`, `#>`, `#>>`, `@>`, `<@` on `json`/`jsonb` ([`crate::functions::json_operators`]).
    JsonOperator(crate::functions::json_operators::JsonOp),
}

/// Which advisory lock function: what it does, in which mode, for how long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AdvisoryCall {
    pub op: AdvisoryOp,
    pub shared: bool,
    pub transaction: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AdvisoryOp {
    Lock,
    TryLock,
    Unlock,
    UnlockAll,
}

impl AdvisoryCall {
    /// The call a function name makes: `pg_[try_]advisory_[xact_]lock[_shared]`,
    /// `pg_advisory_unlock[_shared]`, `pg_advisory_unlock_all`.
    fn of_name(name: &str) -> Option<AdvisoryCall> {
        let rest = name.strip_prefix("pg_")?;
        if rest == "advisory_unlock_all" {
            return Some(AdvisoryCall { op: AdvisoryOp::UnlockAll, shared: false, transaction: false });
        }
        let (rest, shared) = rest.strip_suffix("_shared").map_or((rest, false), |rest| (rest, true));
        let (op, transaction) = match rest {
            "advisory_lock" => (AdvisoryOp::Lock, false),
            "advisory_xact_lock" => (AdvisoryOp::Lock, true),
            "try_advisory_lock" => (AdvisoryOp::TryLock, false),
            "try_advisory_xact_lock" => (AdvisoryOp::TryLock, true),
            "advisory_unlock" => (AdvisoryOp::Unlock, false),
            _ => return None,
        };
        Some(AdvisoryCall { op, shared, transaction })
    }
}

impl ScalarFunction {
    /// The function of a name, with the range of argument counts it accepts.
    pub fn lookup(name: &str) -> Option<(ScalarFunction, usize, usize)> {
        use ScalarFunction::*;
        let many = usize::MAX;
        let lower = name.to_ascii_lowercase();
        if let Some(call) = AdvisoryCall::of_name(&lower) {
            let arity = if call.op == AdvisoryOp::UnlockAll { (0, 0) } else { (1, 2) };
            return Some((Advisory(call), arity.0, arity.1));
        }
        Some(match lower.as_str() {
            "abs" => (Abs, 1, 1),
            "coalesce" => (Coalesce, 1, many),
            "ifnull" => (IfNull, 2, 2),
            "nullif" => (NullIf, 2, 2),
            "length" | "char_length" | "character_length" => (Length, 1, 1),
            "lower" => (Lower, 1, 1),
            "upper" => (Upper, 1, 1),
            "substr" | "substring" => (Substr, 2, 3),
            "trim" | "btrim" => (Trim, 1, 2),
            "ltrim" => (Ltrim, 1, 2),
            "rtrim" => (Rtrim, 1, 2),
            "replace" => (Replace, 3, 3),
            "instr" => (Instr, 2, 2),
            "round" => (Round, 1, 2),
            "typeof" => (Typeof, 1, 1),
            "min" => (Min, 2, many),
            "max" => (Max, 2, many),
            "hex" => (Hex, 1, 1),
            "random" => (Random, 0, 0),
            "sign" => (Sign, 1, 1),
            "ceil" | "ceiling" => (Ceil, 1, 1),
            "floor" => (Floor, 1, 1),
            "sqrt" => (Sqrt, 1, 1),
            "pow" | "power" => (Power, 2, 2),
            "exp" => (Exp, 1, 1),
            "ln" => (Ln, 1, 1),
            "log10" | "log" => (Log10, 1, 1),
            "mod" => (Mod, 2, 2),
            "concat" => (Concat, 1, many),
            "quote" => (Quote, 1, 1),
            "char" | "chr" => (Char, 1, many),
            "unicode" | "ascii" => (Unicode, 1, 1),
            "iif" => (Iif, 3, 3),
            "date" => (Date, 1, many),
            "time" => (Time, 1, many),
            "datetime" => (DateTime, 1, many),
            "unixepoch" => (UnixEpoch, 1, many),
            "current_setting" => (CurrentSetting, 1, 2),
            "set_config" => (SetConfig, 3, 3),
            "nextval" => (NextVal, 1, 1),
            "currval" => (CurrVal, 1, 1),
            "setval" => (SetVal, 2, 3),
            "lastval" => (LastVal, 0, 0),
            "split_part" => (SplitPart, 3, 3),
            "left" => (Left, 2, 2),
            "right" => (Right, 2, 2),
            "lpad" => (Lpad, 2, 3),
            "rpad" => (Rpad, 2, 3),
            "repeat" => (Repeat, 2, 2),
            "reverse" => (Reverse, 1, 1),
            "initcap" => (Initcap, 1, 1),
            "strpos" => (Instr, 2, 2),
            "regexp_replace" => (RegexpReplace, 3, 4),
            "pg_size_pretty" => (PgSizePretty, 1, 1),
            "row" => (Row, 0, many),
            "regexp_match" => (RegexpMatch, 2, 3),
            "regexp_split_to_array" => (RegexpSplitToArray, 2, 3),
            "regexp_count" => (RegexpCount, 2, 4),
            "regexp_like" => (RegexpLike, 2, 3),
            "regexp_substr" => (RegexpSubstr, 2, 6),
            "format" => (Format, 1, many),
            "greatest" => (Greatest, 1, many),
            "date_trunc" => (DateTrunc, 2, 3),
            "date_part" => (DatePart, 2, 2),
            "age" => (Age, 1, 2),
            "make_date" => (MakeDate, 3, 3),
            "make_time" => (MakeTime, 3, 3),
            "make_timestamp" => (MakeTimestamp, 6, 6),
            "make_timestamptz" => (MakeTimestampTz, 6, 7),
            "make_interval" => (MakeInterval, 0, 7),
            "justify_days" => (JustifyDays, 1, 1),
            "justify_hours" => (JustifyHours, 1, 1),
            "justify_interval" => (JustifyInterval, 1, 1),
            "isfinite" => (IsFinite, 1, 1),
            "timezone" => (Timezone, 2, 2),
            "to_char" => (ToChar, 2, 2),
            "to_date" => (ToDate, 2, 2),
            "to_timestamp" => (ToTimestamp, 1, 2),
            "to_number" => (ToNumber, 2, 2),
            "strftime" => (StrFTime, 2, many),
            "julianday" => (JulianDay, 1, many),
            "least" => (Least, 1, many),
            "version" => (Version, 0, 0),
            "current_database" | "current_catalog" => (CurrentDatabase, 0, 0),
            "current_schema" => (CurrentSchema, 0, 0),
            "current_user" | "session_user" | "user" => (CurrentUser, 0, 0),
            "pg_backend_pid" => (BackendPid, 0, 0),
            "array_to_string" => (ArrayToString, 2, 3),
            "array_upper" | "array_length" => (ArrayUpper, 2, 2),
            "array_lower" => (ArrayLower, 2, 2),
            "cardinality" => (Cardinality, 1, 1),
            "array_append" => (ArrayAppend, 2, 2),
            "array_prepend" => (ArrayPrepend, 2, 2),
            "array_cat" => (ArrayCat, 2, 2),
            "array_remove" => (ArrayRemove, 2, 2),
            "array_position" => (ArrayPosition, 2, 3),
            "string_to_array" => (StringToArray, 2, 3),
            "format_type" => (FormatType, 2, 2),
            "pg_get_expr" => (FirstArgument, 2, 3),
            "pg_type_is_visible"
            | "pg_function_is_visible"
            | "pg_collation_is_visible"
            | "pg_conversion_is_visible"
            | "pg_operator_is_visible"
            | "pg_opclass_is_visible"
            | "pg_opfamily_is_visible"
            | "pg_statistics_obj_is_visible"
            | "pg_ts_config_is_visible"
            | "pg_ts_dict_is_visible"
            | "pg_ts_parser_is_visible"
            | "pg_ts_template_is_visible" => (AlwaysTrue, 1, 1),
            "has_table_privilege" | "has_schema_privilege" | "has_database_privilege" | "has_column_privilege" => {
                (AlwaysTrue, 2, 4)
            }
            "pg_relation_is_publishable" => (AlwaysFalse, 1, 1),
            "pg_is_in_recovery" => (AlwaysFalse, 0, 0),
            "shobj_description"
            | "pg_get_statisticsobjdef_columns"
            | "pg_get_ruledef"
            // pg_trigger lists no rows (Tern's triggers are in `.dump`), so there is no OID
            // of a trigger to describe.
            | "pg_get_triggerdef"
            // Tern has no privileges: every ACL is NULL, the default.
            | "acldefault" => (AlwaysNull, 1, 2),
            "pg_encoding_to_char" => (EncodingName, 1, 1),
            "quote_ident" => (QuoteIdent, 1, 1),
            "quote_literal" => (QuoteLiteral, 1, 1),
            "quote_nullable" => (QuoteNullable, 1, 1),
            "to_regtype" => (ToRegtype, 1, 1),
            _ => return None,
        })
    }
}

/// PostgreSQL's string literal of `text`: quotes doubled, and `E'...'` with backslashes
/// doubled when it has one (as `quote_literal` writes it).
fn postgres_literal(text: &str) -> String {
    let quoted = text.replace('\'', "''");
    if text.contains('\\') { format!("E'{}'", quoted.replace('\\', "\\\\")) } else { format!("'{quoted}'") }
}

fn real_or_integer(value: f64) -> Value {
    Value::Real(value)
}

fn numeric_arg(value: &Value) -> Option<f64> {
    value.to_numeric().as_f64()
}

/// Evaluates a scalar function on evaluated arguments. `Coalesce`, `IfNull` and `Iif` are
/// evaluated lazily by the executor; here they get all their arguments.
/// Whether this call's result depends on something other than its arguments (the clock, a
/// random generator): a query that made one cannot be cached.
pub fn is_volatile(function: ScalarFunction, args: &[Value]) -> bool {
    use ScalarFunction::*;
    match function {
        Random | CurrentSetting | SetConfig | Version | CurrentDatabase | CurrentSchema | CurrentUser | BackendPid
        | Clock => true,
        ObjectBytes => true,
        // What the body calls is not known here.
        SqlFunction => true,
        NextVal | CurrVal | SetVal | LastVal | SequenceLastValue | SequenceIsCalled | Advisory(_) => true,
        // age(x) counts from today.
        Age => args.len() == 1,
        Date | Time | DateTime | UnixEpoch | JulianDay => {
            matches!(args.first(), Some(Value::Text(text)) if text.trim().eq_ignore_ascii_case("now"))
        }
        StrFTime => matches!(args.get(1), Some(Value::Text(text)) if text.trim().eq_ignore_ascii_case("now")),
        ToTimestamp | ToDate | DateTrunc | Extract | DatePart | Timezone => {
            args.iter().any(|arg| matches!(arg, Value::Text(text) if crate::types::temporal::parse::reads_clock(text)))
        }
        _ => false,
    }
}

/// At least as many bytes as the result of `function` on `args` takes, for the functions whose
/// result can outgrow their arguments (0 for the others): checked against the value limit
/// before the result is built.
pub fn result_bytes(function: ScalarFunction, args: &[Value]) -> usize {
    use ScalarFunction::*;
    let bytes = |index: usize| match args.get(index) {
        Some(Value::Text(text)) => text.len(),
        Some(Value::Blob(bytes)) => bytes.len(),
        Some(_) => 32,
        None => 0,
    };
    match function {
        Replace => match (args.first(), args.get(1)) {
            (Some(text), Some(pattern)) if !text.is_null() && !pattern.is_null() => {
                let (text, pattern) = (text.to_text(), pattern.to_text());
                let grows = bytes(2).saturating_sub(pattern.len());
                if pattern.is_empty() || grows == 0 {
                    return 0;
                }
                text.len().saturating_add(text.matches(pattern.as_str()).count().saturating_mul(grows))
            }
            _ => 0,
        },
        Concat => (0..args.len()).map(bytes).fold(0, usize::saturating_add),
        // Escapes take up to six bytes for one (`\u001f`), plus quotes and separators.
        Json(_) => {
            (0..args.len()).map(bytes).fold(0, usize::saturating_add).saturating_mul(6).saturating_add(8 * args.len())
        }
        // PostgreSQL's string functions: what they can build at most, from their arguments.
        Lpad | Rpad => {
            args.get(1).and_then(Value::as_i64).map_or(0, |length| (length.max(0) as usize).saturating_mul(4))
        }
        Repeat => args.get(1).and_then(Value::as_i64).map_or(0, |n| bytes(0).saturating_mul(n.max(0) as usize)),
        Initcap => bytes(0).saturating_mul(3),
        Format => {
            let specifiers = match args.first() {
                Some(Value::Text(template)) => template.matches('%').count(),
                _ => 0,
            };
            let widest = (1..args.len()).map(bytes).max().unwrap_or(0).saturating_add(8);
            bytes(0).saturating_add(specifiers.saturating_mul(widest))
        }
        Hex | Quote => bytes(0).saturating_mul(2).saturating_add(3),
        Upper | Lower => bytes(0).saturating_mul(3),
        Char => args.len().saturating_mul(4),
        // Each element (at least a byte of the array's text) may become the NULL text.
        ArrayToString => bytes(0).saturating_mul(1 + bytes(1) + if args.len() > 2 { bytes(2) } else { 0 }),
        _ => 0,
    }
}

pub fn call(function: ScalarFunction, args: &[Value]) -> Result<Value> {
    use ScalarFunction::*;
    let arg = |index: usize| args.get(index).cloned().unwrap_or(Value::Null);
    let any_null = args.iter().any(Value::is_null);
    Ok(match function {
        // Text and blobs become reals first (SQLite: abs('3') is 3.0).
        Abs => match if matches!(arg(0), Value::Text(_) | Value::Blob(_)) { arg(0).cast_real() } else { arg(0) } {
            Value::Integer(integer) => Value::Integer(
                integer.checked_abs().ok_or_else(|| Error::numeric_out_of_range("integer overflow in abs()"))?,
            ),
            Value::Real(real) => Value::Real(real.abs()),
            Value::Decimal(exact) => Value::Decimal(exact.abs()),
            other => other,
        },
        Coalesce | IfNull => args.iter().find(|value| !value.is_null()).cloned().unwrap_or(Value::Null),
        Iif => {
            if arg(0).truth() == Some(true) {
                arg(1)
            } else {
                arg(2)
            }
        }
        NullIf => {
            if arg(0).sql_cmp(&arg(1)) == Some(Ordering::Equal) {
                Value::Null
            } else {
                arg(0)
            }
        }
        Length => match arg(0) {
            Value::Null => Value::Null,
            Value::Blob(bytes) => Value::Integer(bytes.len() as i64),
            other => Value::Integer(other.to_text().chars().count() as i64),
        },
        Lower => text_map(arg(0), |text| text.to_lowercase()),
        Upper => text_map(arg(0), |text| text.to_uppercase()),
        Substr => substr(&arg(0), &arg(1), args.get(2)),
        Trim | Ltrim | Rtrim => {
            if any_null {
                return Ok(Value::Null);
            }
            let text = arg(0).to_text();
            let set: Vec<char> = if args.len() > 1 { arg(1).to_text().chars().collect() } else { vec![' '] };
            let matches = |c: char| set.contains(&c);
            Value::Text(match function {
                Trim => text.trim_matches(matches).to_string(),
                Ltrim => text.trim_start_matches(matches).to_string(),
                _ => text.trim_end_matches(matches).to_string(),
            })
        }
        Replace => {
            if any_null {
                return Ok(Value::Null);
            }
            let pattern = arg(1).to_text();
            if pattern.is_empty() { arg(0) } else { Value::Text(arg(0).to_text().replace(&pattern, &arg(2).to_text())) }
        }
        Instr => {
            if any_null {
                return Ok(Value::Null);
            }
            let haystack = arg(0).to_text();
            let needle = arg(1).to_text();
            Value::Integer(haystack.find(&needle).map_or(0, |at| haystack[..at].chars().count() as i64 + 1))
        }
        Round => {
            if any_null {
                return Ok(Value::Null);
            }
            let digits = match arg(1).cast_integer() {
                Value::Integer(digits) => digits.clamp(0, 30) as i32,
                _ => 0,
            };
            if let Value::Decimal(exact) = arg(0) {
                // Exact rounding, half away from zero (PostgreSQL's round(numeric, int)).
                let digits = match arg(1).cast_integer() {
                    Value::Integer(digits) => digits,
                    _ => 0,
                };
                return Ok(Value::Decimal(decimal::round(exact, digits)));
            }
            match numeric_arg(&arg(0)) {
                Some(number) => {
                    let factor = 10f64.powi(digits);
                    let rounded = (number * factor).abs().round().copysign(number) / factor;
                    if number.is_nan() {
                        Value::Null
                    } else {
                        Value::Real(if rounded.is_finite() { rounded } else { number })
                    }
                }
                None => Value::Real(0.0),
            }
        }
        Typeof => Value::Text(arg(0).type_name().to_string()),
        Min | Max => {
            if any_null {
                return Ok(Value::Null);
            }
            let mut best = arg(0);
            for value in &args[1..] {
                let order = value.total_cmp(&best);
                if (function == Min && order == Ordering::Less) || (function == Max && order == Ordering::Greater) {
                    best = value.clone();
                }
            }
            best
        }
        Hex => {
            let bytes = match arg(0) {
                Value::Blob(bytes) => bytes,
                Value::Null => Vec::new(),
                other => other.to_text().into_bytes(),
            };
            Value::Text(crate::value::hex(&bytes))
        }
        Random => Value::Integer(random_i64()),
        Sign => match numeric_arg(&arg(0)) {
            _ if any_null => Value::Null,
            Some(number) => Value::Integer(if number > 0.0 {
                1
            } else if number < 0.0 {
                -1
            } else {
                0
            }),
            None => Value::Null,
        },
        Ceil | Floor => match arg(0).to_numeric() {
            Value::Integer(integer) => Value::Integer(integer),
            Value::Real(real) => Value::Real(if function == Ceil { real.ceil() } else { real.floor() }),
            Value::Decimal(exact) => {
                Value::Decimal(decimal::normalize_zero(if function == Ceil { exact.ceil() } else { exact.floor() }))
            }
            other => other,
        },
        Sqrt | Exp | Ln | Log10 => {
            let Some(number) = numeric_arg(&arg(0)) else { return Ok(Value::Null) };
            let result = match function {
                Sqrt => number.sqrt(),
                Exp => number.exp(),
                Ln => number.ln(),
                _ => number.log10(),
            };
            if result.is_nan() { Value::Null } else { real_or_integer(result) }
        }
        Power => match (numeric_arg(&arg(0)), numeric_arg(&arg(1))) {
            (Some(base), Some(exponent)) if !any_null => {
                let power = base.powf(exponent);
                if power.is_nan() { Value::Null } else { Value::Real(power) }
            }
            _ => Value::Null,
        },
        Mod => arithmetic(BinaryOp::Mod, &arg(0), &arg(1))?,
        Concat => Value::Text(args.iter().map(Value::to_text).collect()),
        // Numbers in their text form (as SQLite prints them); the rest as literals.
        Quote => Value::Text(match arg(0) {
            number @ (Value::Integer(_) | Value::Real(_) | Value::Decimal(_)) => number.to_text(),
            other => other.sql_literal(),
        }),
        Char => Value::Text(
            args.iter()
                .filter_map(|value| match value.cast_integer() {
                    Value::Integer(code) => u32::try_from(code).ok().and_then(char::from_u32),
                    _ => None,
                })
                .collect(),
        ),
        Unicode => match arg(0) {
            Value::Null => Value::Null,
            other => other.to_text().chars().next().map_or(Value::Null, |c| Value::Integer(c as i64)),
        },
        Date | Time | DateTime | UnixEpoch | StrFTime | JulianDay => crate::functions::datetime::call(function, args)?,
        Raise => return Err(raise::raise(&arg(0).to_text(), &arg(1))),
        SqlFunction => return Err(Error::internal("a SQL function is called by the executor")),
        CheckDomain => {
            if arg(1).truth() == Some(false) {
                return Err(Error::check_violation(format!(
                    "value for domain {} violates check constraint",
                    arg(2).to_text()
                )));
            }
            arg(0)
        }
        EnumRange => crate::types::enum_type::functions::range(args),
        ArrayConstruct | ArrayAppend | ArrayPrepend | ArrayCat | ArrayRemove | ArrayPosition | StringToArray => {
            crate::functions::array_functions::call(function, args)?
        }
        Row => Value::Record(std::sync::Arc::new(crate::types::composite::Record::nested(args.to_vec())?)),
        RecordField => match (arg(0), arg(1).as_i64()) {
            (Value::Record(record), Some(position)) => usize::try_from(position)
                .ok()
                .and_then(|position| record.fields.get(position).cloned())
                .unwrap_or(Value::Null),
            _ => Value::Null,
        },
        Json(build) => crate::functions::json_functions::call(build, args)?,
        JsonOperator(op) => crate::functions::json_operators::apply(op, &arg(0), &arg(1))?,
        SetReturning(_) => {
            return Err(Error::new("0A000", "set-returning functions are not allowed here (only in a select list)"));
        }
        PgSizePretty => match arg(0) {
            Value::Null => Value::Null,
            bytes => Value::Text(size_pretty(bytes.cast_integer().as_i64().unwrap_or(0))),
        },
        DateTrunc | Extract | DatePart | Age | MakeDate | MakeTime | MakeTimestamp | MakeTimestampTz | MakeInterval
        | JustifyDays | JustifyHours | JustifyInterval | IsFinite | Timezone | Clock | ToChar | ToDate
        | ToTimestamp | ToNumber => crate::types::temporal::functions::call(function, args)?,
        Greatest | Least => {
            let mut best: Option<Value> = None;
            for value in args.iter().filter(|value| !value.is_null()) {
                let better = best.as_ref().is_none_or(|current| {
                    let order = value.total_cmp(current);
                    if function == Greatest { order.is_gt() } else { order.is_lt() }
                });
                if better {
                    best = Some(value.clone());
                }
            }
            best.unwrap_or(Value::Null)
        }
        Format => {
            if arg(0).is_null() {
                return Ok(Value::Null);
            }
            crate::functions::text_functions::format(&arg(0).to_text(), &args[1..])?
        }
        SplitPart | Left | Right | Lpad | Rpad | Repeat | Reverse | Initcap if any_null => Value::Null,
        SplitPart => crate::functions::text_functions::split_part(&arg(0).to_text(), &arg(1).to_text(), &arg(2))?,
        Left | Right => crate::functions::text_functions::left_or_right(&arg(0).to_text(), &arg(1), function == Left)?,
        Lpad | Rpad => {
            let fill = args.get(2).map(Value::to_text);
            crate::functions::text_functions::pad(&arg(0).to_text(), &arg(1), fill.as_deref(), function == Lpad)?
        }
        Repeat => crate::functions::text_functions::repeat(&arg(0).to_text(), &arg(1))?,
        Reverse => crate::functions::text_functions::reverse(&arg(0).to_text()),
        Initcap => crate::functions::text_functions::initcap(&arg(0).to_text()),
        RegexpReplace | RegexpMatch | RegexpSplitToArray | RegexpCount | RegexpLike | RegexpSubstr => {
            crate::functions::regex_functions::call(function, args)?
        }
        RegexMatch => {
            if any_null {
                return Ok(Value::Null);
            }
            Value::from(regex_match(&arg(0).to_text(), &arg(1).to_text(), arg(2).truth() == Some(true))?)
        }
        ArrayContains => {
            let (Value::Text(array), wanted) = (arg(0), arg(1)) else { return Ok(Value::Null) };
            if wanted.is_null() {
                return Ok(Value::Null);
            }
            let elements = parse_array(&array)?;
            let wanted = wanted.to_text();
            if elements.iter().any(|element| element.as_deref() == Some(wanted.as_str())) {
                Value::from(true)
            } else if elements.iter().any(Option::is_none) {
                Value::Null
            } else {
                Value::from(false)
            }
        }
        ArrayElement => {
            let (Value::Text(array), Some(index)) = (arg(0), arg(1).as_i64()) else {
                return Ok(Value::Null);
            };
            // PostgreSQL's `name` is a character array indexed from 0 (`typname[0] = '_'`,
            // which pg_dump asks): text that is no array literal is read so.
            if crate::types::array::parse(&array).is_none() {
                return Ok(usize::try_from(index)
                    .ok()
                    .and_then(|position| array.chars().nth(position))
                    .map_or(Value::Null, |c| Value::Text(c.to_string())));
            }
            let elements = parse_array(&array)?;
            index
                .checked_sub(1)
                .and_then(|position| usize::try_from(position).ok())
                .and_then(|position| elements.into_iter().nth(position).flatten())
                .map_or(Value::Null, Value::Text)
        }
        ArrayToString => {
            let (Value::Text(array), Value::Text(separator)) = (arg(0), arg(1)) else { return Ok(Value::Null) };
            let null_text = match arg(2) {
                Value::Null => None,
                other => Some(other.to_text()),
            };
            let elements: Vec<String> =
                parse_array(&array)?.into_iter().filter_map(|element| element.or_else(|| null_text.clone())).collect();
            Value::Text(elements.join(&separator))
        }
        ArrayUpper | ArrayLower | Cardinality => {
            let Value::Text(array) = arg(0) else { return Ok(Value::Null) };
            let count = parse_array(&array)?.len() as i64;
            match function {
                Cardinality => Value::Integer(count),
                _ if count == 0 || arg(1).as_i64() != Some(1) => Value::Null,
                ArrayLower => Value::Integer(1),
                _ => Value::Integer(count),
            }
        }
        FormatType => match arg(0).as_i64().and_then(|oid| u32::try_from(oid).ok()) {
            None => Value::Null,
            Some(oid) => Value::Text(crate::catalog::pgtype::format_type(oid, arg(1).as_i64().unwrap_or(-1))),
        },
        FirstArgument => arg(0),
        AlwaysTrue => Value::from(true),
        AlwaysFalse => Value::from(false),
        AlwaysNull => Value::Null,
        EncodingName => Value::from("UTF8"),
        QuoteIdent => text_map(arg(0), text_functions::quote_ident),
        QuoteLiteral | QuoteNullable => match arg(0) {
            Value::Null if function == QuoteNullable => Value::from("NULL"),
            Value::Null => Value::Null,
            value => Value::Text(postgres_literal(&value.to_text())),
        },
        TypeOid => match (arg(0), arg(1)) {
            (Value::Null, Value::Null) => Value::Null,
            (Value::Null, name) => {
                return Err(Error::new("42704", format!("type \"{}\" does not exist", name.to_text())));
            }
            (oid, _) => oid,
        },
        ToRegtype => match arg(0) {
            Value::Null => Value::Null,
            name => crate::catalog::pgtype::oid_of_name(&name.to_text())
                .map_or(Value::Null, |oid| Value::Integer(i64::from(oid))),
        },
        CurrentSetting | SetConfig | Version | CurrentDatabase | CurrentSchema | CurrentUser | BackendPid | NextVal
        | CurrVal | SetVal | LastVal | SequenceLastValue | SequenceIsCalled | Advisory(_) | ObjectBytes => {
            return Err(Error::internal("session functions are evaluated by the executor"));
        }
    })
}

fn text_map(value: Value, f: impl Fn(&str) -> String) -> Value {
    match value {
        Value::Null => Value::Null,
        other => Value::Text(f(&other.to_text())),
    }
}

fn substr(value: &Value, start: &Value, length: Option<&Value>) -> Value {
    if value.is_null() || start.is_null() || length.is_some_and(Value::is_null) {
        return Value::Null;
    }
    let as_int = |value: &Value| match value.cast_integer() {
        Value::Integer(integer) => integer,
        _ => 0,
    };
    let (units, is_blob): (Vec<u32>, bool) = match value {
        Value::Blob(bytes) => (bytes.iter().map(|&byte| byte as u32).collect(), true),
        other => (other.to_text().chars().map(|c| c as u32).collect(), false),
    };
    let total = units.len() as i64;
    let mut start = as_int(start);
    let mut length = length.map_or(i64::MAX / 4, as_int);
    // SQLite: positions are 1-based; a negative start counts from the end; a negative length
    // takes characters before the start.
    if start < 0 {
        start = start.saturating_add(total + 1);
        if start < 1 {
            length = length.saturating_add(start - 1);
            start = 1;
        }
    } else if start == 0 {
        start = 1;
        length = length.saturating_sub(1);
    }
    let (mut from, mut to) = if length < 0 { (start + length, start) } else { (start, start.saturating_add(length)) };
    from = from.clamp(1, total + 1);
    to = to.clamp(1, total + 1);
    let slice = &units[(from - 1) as usize..(to - 1).max(from - 1) as usize];
    if is_blob {
        Value::Blob(slice.iter().map(|&unit| unit as u8).collect())
    } else {
        Value::Text(slice.iter().filter_map(|&unit| char::from_u32(unit)).collect())
    }
}

fn random_i64() -> i64 {
    use std::cell::Cell;
    use std::hash::{BuildHasher, Hasher};
    thread_local! {
        static STATE: Cell<u64> = Cell::new(std::collections::hash_map::RandomState::new().build_hasher().finish() | 1);
    }
    STATE.with(|state| {
        // xorshift64*
        let mut x = state.get();
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        state.set(x);
        x.wrapping_mul(0x2545F4914F6CDD1D) as i64
    })
}

/// `a op b` on exact decimals (NULL for a zero divisor).
fn decimal_arithmetic(op: BinaryOp, a: Decimal, b: Decimal) -> Result<Value> {
    let result = match op {
        BinaryOp::Add => decimal::checked('+', a, b)?,
        BinaryOp::Sub => decimal::checked('-', a, b)?,
        BinaryOp::Mul => decimal::checked('*', a, b)?,
        BinaryOp::Div => decimal::divide(a, b)?,
        BinaryOp::Mod => decimal::checked('%', a, b)?,
        _ => return Err(Error::internal(format!("{op:?} is not arithmetic"))),
    };
    Ok(result.map_or(Value::Null, Value::Decimal))
}

/// Both operands as exact decimals, when one is a decimal and the other a decimal or an
/// integer: decimals stay exact with those (with a real they become reals).
fn exact_pair(left: &Value, right: &Value) -> Option<(Decimal, Decimal)> {
    let exact = |value: &Value| match value {
        Value::Decimal(exact) => Some(*exact),
        Value::Integer(integer) => Some(Decimal::from(*integer)),
        _ => None,
    };
    if !matches!(left, Value::Decimal(_)) && !matches!(right, Value::Decimal(_)) {
        return None;
    }
    Some((exact(left)?, exact(right)?))
}

/// Arithmetic with SQLite's rules: integers stay integers unless they overflow (then real),
/// division by zero is NULL, text is read by its numeric prefix.
pub fn arithmetic(op: BinaryOp, left: &Value, right: &Value) -> Result<Value> {
    if left.is_null() || right.is_null() {
        return Ok(Value::Null);
    }
    if op == BinaryOp::Concat {
        return Ok(Value::Text(left.to_text() + &right.to_text()));
    }
    if matches!(left, Value::Temporal(_)) || matches!(right, Value::Temporal(_)) {
        return crate::types::temporal::arith::arithmetic(op, left, right);
    }
    // Decimals with decimals or integers (prices times rates), the common case of analytic
    // queries, before the conversions below (which only text operands need).
    if matches!(op, BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div | BinaryOp::Mod)
        && let Some((a, b)) = exact_pair(left, right)
    {
        return decimal_arithmetic(op, a, b);
    }
    let left = left.to_numeric();
    let right = right.to_numeric();
    if matches!(op, BinaryOp::BitAnd | BinaryOp::BitOr | BinaryOp::ShiftLeft | BinaryOp::ShiftRight) {
        let to_int = |value: &Value| match value.cast_integer() {
            Value::Integer(integer) => integer,
            _ => 0,
        };
        let (a, b) = (to_int(&left), to_int(&right));
        return Ok(Value::Integer(match op {
            BinaryOp::BitAnd => a & b,
            BinaryOp::BitOr => a | b,
            BinaryOp::ShiftLeft => shift(a, b),
            _ => shift(a, b.saturating_neg()),
        }));
    }
    if let (Value::Integer(a), Value::Integer(b)) = (&left, &right) {
        let (a, b) = (*a, *b);
        let exact = match op {
            BinaryOp::Add => a.checked_add(b),
            BinaryOp::Sub => a.checked_sub(b),
            BinaryOp::Mul => a.checked_mul(b),
            BinaryOp::Div => {
                if b == 0 {
                    return Ok(Value::Null);
                }
                a.checked_div(b)
            }
            BinaryOp::Mod => {
                if b == 0 {
                    return Ok(Value::Null);
                }
                Some(a.checked_rem(b).unwrap_or(0))
            }
            _ => return Err(Error::internal(format!("{op:?} is not arithmetic"))),
        };
        if let Some(result) = exact {
            return Ok(Value::Integer(result));
        }
    }
    // A decimal with text read as an integer.
    if let Some((a, b)) = exact_pair(&left, &right) {
        return decimal_arithmetic(op, a, b);
    }
    let a = numeric_arg(&left).unwrap_or(0.0);
    let b = numeric_arg(&right).unwrap_or(0.0);
    let result = match op {
        BinaryOp::Add => a + b,
        BinaryOp::Sub => a - b,
        BinaryOp::Mul => a * b,
        BinaryOp::Div => {
            if b == 0.0 {
                return Ok(Value::Null);
            }
            a / b
        }
        BinaryOp::Mod => {
            let (a, b) = (a.trunc(), b.trunc());
            if b == 0.0 {
                return Ok(Value::Null);
            }
            a % b
        }
        _ => return Err(Error::internal(format!("{op:?} is not arithmetic"))),
    };
    Ok(if result.is_nan() { Value::Null } else { Value::Real(result) })
}

/// PostgreSQL's errors where SQLite's [`arithmetic`] gave NULL (division by zero: 22012) or a
/// REAL (integer overflow: 22003), given the operands and that result. Operands are converted
/// only on the paths that can fail.
pub fn strict_arithmetic(op: BinaryOp, left: &Value, right: &Value, result: &Value) -> Result<()> {
    if left.is_null() || right.is_null() {
        return Ok(());
    }
    let zero = |value: &Value| match value.to_numeric() {
        Value::Integer(number) => number == 0,
        Value::Real(number) => number == 0.0,
        Value::Decimal(number) => number.is_zero(),
        _ => false,
    };
    if matches!(op, BinaryOp::Div | BinaryOp::Mod) && zero(right) {
        return Err(Error::new("22012", "division by zero"));
    }
    let integers = || matches!((left.to_numeric(), right.to_numeric()), (Value::Integer(_), Value::Integer(_)));
    match (op, result) {
        // SQLite's answer to an integer result past 64 bits is a REAL.
        (BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div, Value::Real(_)) if integers() => {
            Err(Error::numeric_out_of_range("bigint out of range"))
        }
        _ => Ok(()),
    }
}

/// PostgreSQL's `pg_size_pretty`: bytes below 10240, then kB, MB, GB, TB and PB, each rounded
/// half away from zero and kept below 10240 of its unit.
fn size_pretty(bytes: i64) -> String {
    const LIMIT: i128 = 10 * 1024;
    let half_rounded = |value: i128| (value + if value < 0 { -1 } else { 1 }) / 2;
    let mut size = i128::from(bytes);
    if size.abs() < LIMIT {
        return format!("{size} bytes");
    }
    // In half-units from here on, so the last shift can round.
    size >>= 9;
    for unit in ["kB", "MB", "GB", "TB"] {
        if size.abs() < LIMIT * 2 - 1 {
            return format!("{} {unit}", half_rounded(size));
        }
        size >>= 10;
    }
    format!("{} PB", half_rounded(size))
}

fn shift(value: i64, by: i64) -> i64 {
    if by >= 64 {
        0
    } else if by >= 0 {
        value << by
    } else if by <= -64 {
        if value < 0 { -1 } else { 0 }
    } else {
        value >> (-by)
    }
}

/// SQL LIKE (`%` and `_`, optional escape; case-insensitive for ASCII unless `case_sensitive`)
/// or GLOB (case-sensitive, `*`, `?` and `[...]`).
pub fn like(text: &str, pattern: &str, escape: Option<char>, glob: bool, case_sensitive: bool) -> bool {
    let text: Vec<char> = text.chars().collect();
    let pattern: Vec<char> = pattern.chars().collect();
    if glob { glob_match(&text, &pattern) } else { like_match(&text, &pattern, escape, case_sensitive) }
}

/// What one pattern element does at a text position.
enum Step {
    /// It matches the character; the next element starts at this pattern position.
    Match(usize),
    /// A wildcard for any run of characters (`%`, `*`).
    Star,
    NoMatch,
}

/// Matching with backtracking to the last star, for LIKE and GLOB: every element other than
/// the star consumes exactly one character, so this is O(text x pattern) at worst (a recursive
/// matcher is exponential in the number of stars). `element(p, c)` says what the element at
/// `pattern[p]` does with the character `c`; trailing `star` characters match the empty rest.
fn wildcard_match(text: &[char], pattern: &[char], star: char, element: impl Fn(usize, char) -> Step) -> bool {
    let (mut t, mut p) = (0, 0);
    let mut backtrack: Option<(usize, usize)> = None;
    while t < text.len() {
        if p < pattern.len() {
            match element(p, text[t]) {
                Step::Match(next) => {
                    t += 1;
                    p = next;
                    continue;
                }
                Step::Star => {
                    backtrack = Some((p, t));
                    p += 1;
                    continue;
                }
                Step::NoMatch => {}
            }
        }
        match backtrack {
            Some((star_p, star_t)) => {
                p = star_p + 1;
                t = star_t + 1;
                backtrack = Some((star_p, star_t + 1));
            }
            None => return false,
        }
    }
    while p < pattern.len() && pattern[p] == star {
        p += 1;
    }
    p == pattern.len()
}

fn like_match(text: &[char], pattern: &[char], escape: Option<char>, case_sensitive: bool) -> bool {
    let same = |a: char, b: char| if case_sensitive { a == b } else { a.eq_ignore_ascii_case(&b) };
    wildcard_match(text, pattern, '%', |p, c| {
        let element = pattern[p];
        if Some(element) == escape && p + 1 < pattern.len() {
            if same(pattern[p + 1], c) { Step::Match(p + 2) } else { Step::NoMatch }
        } else if element == '%' {
            Step::Star
        } else if element == '_' || same(element, c) {
            Step::Match(p + 1)
        } else {
            Step::NoMatch
        }
    })
}

fn glob_match(text: &[char], pattern: &[char]) -> bool {
    wildcard_match(text, pattern, '*', |p, c| match pattern[p] {
        '*' => Step::Star,
        _ => glob_element(pattern, p, c).map_or(Step::NoMatch, Step::Match),
    })
}

/// Matches the GLOB element at `pattern[p]` (not `*`) against one character: the position of
/// the next element when it matches. `[...]` is a class (`^` negates, `a-z` ranges; a `]`
/// right after the opening bracket, or after `[^`, is part of the class); a `[` without a
/// closing bracket matches nothing, as in SQLite.
fn glob_element(pattern: &[char], p: usize, c: char) -> Option<usize> {
    match pattern[p] {
        '?' => Some(p + 1),
        '[' => {
            let rest = &pattern[p + 1..];
            // The class's first member (after a `^`) may be `]` itself.
            let first = if rest.first() == Some(&'^') { 2 } else { 1 };
            let Some(close) = rest.iter().skip(first).position(|&c| c == ']').map(|at| at + first) else {
                return None; // SQLite: a class without its closing bracket matches nothing
            };
            let mut class = &rest[..close];
            let negate = class.first() == Some(&'^');
            if negate {
                class = &class[1..];
            }
            let mut matched = false;
            let mut i = 0;
            while i < class.len() {
                if i + 2 < class.len() && class[i + 1] == '-' {
                    matched |= class[i] <= c && c <= class[i + 2];
                    i += 3;
                } else {
                    matched |= class[i] == c;
                    i += 1;
                }
            }
            (matched != negate).then_some(p + 1 + close + 1)
        }
        literal => (literal == c).then_some(p + 1),
    }
}

/// Formats a value for group_concat and similar text contexts.
pub fn text_of(value: &Value) -> String {
    match value {
        Value::Real(real) => format_real(*real),
        other => other.to_text(),
    }
}

fn parse_array(text: &str) -> Result<Vec<Option<String>>> {
    crate::types::array::parse(text).ok_or_else(|| Error::new("22P02", format!("malformed array literal: \"{text}\"")))
}

/// Compiled patterns of `~`, kept per thread: a query applies one pattern to many rows.
fn regex_match(text: &str, pattern: &str, case_insensitive: bool) -> Result<bool> {
    use std::cell::RefCell;
    use std::collections::HashMap;
    thread_local! {
        static COMPILED: RefCell<HashMap<(String, bool), regex::Regex>> = RefCell::new(HashMap::new());
    }
    COMPILED.with(|compiled| {
        let mut compiled = compiled.borrow_mut();
        let key = (pattern.to_string(), case_insensitive);
        if !compiled.contains_key(&key) {
            let regex = regex::RegexBuilder::new(pattern)
                .case_insensitive(case_insensitive)
                .size_limit(crate::limits::MAX_REGEX_BYTES)
                .dfa_size_limit(crate::limits::MAX_REGEX_BYTES)
                .build()
                .map_err(|error| Error::new("2201B", format!("invalid regular expression: {error}")))?;
            if compiled.len() >= crate::limits::MAX_CACHED_REGEXES {
                compiled.clear();
            }
            compiled.insert(key.clone(), regex);
        }
        Ok(compiled[&key].is_match(text))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn like_and_glob() {
        assert!(like("Hello", "h%o", None, false, false));
        assert!(like("Hello", "_ello", None, false, false));
        assert!(!like("Hello", "h%x", None, false, false));
        assert!(like("100%", "100!%", Some('!'), false, false));
        assert!(!like("100x", "100!%", Some('!'), false, false));
        assert!(like("abc", "a*", None, true, false));
        assert!(!like("Abc", "a*", None, true, false));
        assert!(like("b1", "[a-c]?", None, true, false));
        assert!(like("aaaaaaaaaaaaaaaaaaaaaaaaaab", "%a%a%a%a%a%b", None, false, false));
        // Many stars against a long text that does not match: quick, not exponential.
        let text = "a".repeat(5000);
        assert!(!like(&text, &"*a".repeat(40).add("b"), None, true, false));
        assert!(!like(&text, &"%a".repeat(40).add("b"), None, false, false));
    }

    trait Add {
        fn add(self, tail: &str) -> String;
    }
    impl Add for String {
        fn add(mut self, tail: &str) -> String {
            self.push_str(tail);
            self
        }
    }

    proptest::proptest! {
        /// GLOB and LIKE agree with SQLite on texts and patterns made of their special
        /// characters.
        #[test]
        fn patterns_match_like_sqlite(text in "[abAB\\[\\]^*?%_-]{0,8}", pattern in "[abAB\\[\\]^*?%_-]{0,8}") {
            let sqlite = rusqlite::Connection::open_in_memory().unwrap();
            let (glob, like_sqlite): (bool, bool) = sqlite
                .query_row("SELECT ?1 GLOB ?2, ?1 LIKE ?2", [&text, &pattern], |row| Ok((row.get(0)?, row.get(1)?)))
                .unwrap();
            proptest::prop_assert_eq!(like(&text, &pattern, None, true, false), glob, "{} GLOB {}", text, pattern);
            proptest::prop_assert_eq!(like(&text, &pattern, None, false, false), like_sqlite, "{} LIKE {}", text, pattern);
        }
    }

    #[test]
    fn a_bracket_right_after_a_negation_is_a_member() {
        for (text, pattern, matches) in
            [("[", "[^]", false), ("a", "[^]]", true), ("]", "[^]]", false), ("]", "[]]", true)]
        {
            assert_eq!(like(text, pattern, None, true, false), matches, "{text} GLOB {pattern}");
        }
    }

    #[test]
    fn arithmetic_follows_sqlite() {
        assert_eq!(arithmetic(BinaryOp::Div, &Value::Integer(7), &Value::Integer(2)).unwrap(), Value::Integer(3));
        assert_eq!(arithmetic(BinaryOp::Div, &Value::Integer(7), &Value::Integer(0)).unwrap(), Value::Null);
        assert_eq!(arithmetic(BinaryOp::Mod, &Value::Integer(-7), &Value::Integer(2)).unwrap(), Value::Integer(-1));
        assert_eq!(
            arithmetic(BinaryOp::Add, &Value::Integer(i64::MAX), &Value::Integer(1)).unwrap(),
            Value::Real(9.223_372_036_854_776e18)
        );
        assert_eq!(arithmetic(BinaryOp::Add, &Value::from("3x"), &Value::Integer(1)).unwrap(), Value::Integer(4));
        assert_eq!(arithmetic(BinaryOp::Concat, &Value::Integer(1), &Value::Real(2.5)).unwrap(), Value::from("12.5"));
    }

    #[test]
    fn substr_positions() {
        let text = Value::from("hello");
        assert_eq!(substr(&text, &Value::Integer(2), Some(&Value::Integer(3))), Value::from("ell"));
        assert_eq!(substr(&text, &Value::Integer(-3), None), Value::from("llo"));
        assert_eq!(substr(&text, &Value::Integer(0), Some(&Value::Integer(2))), Value::from("h"));
        assert_eq!(substr(&text, &Value::Integer(3), Some(&Value::Integer(-2))), Value::from("he"));
    }
}
