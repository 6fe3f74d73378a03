//! Limits of the SQL layer, each with its reason.

/// Nesting of parentheses, subqueries and operators the parser follows (sqlparser's own
/// recursion limit). Deeper statements fail with SQLSTATE 54001 instead of exhausting the stack.
pub const MAX_PARSE_DEPTH: usize = 200;

/// Nesting of subqueries and views the binder follows (a view defined over itself through
/// others would otherwise recurse forever).
pub const MAX_QUERY_DEPTH: usize = 64;

/// Depth of one expression tree (SQLite's SQLITE_MAX_EXPR_DEPTH is 1000). Long chains of AND
/// and OR build left-deep trees, so this is what bounds binder and evaluator recursion.
pub const MAX_EXPRESSION_DEPTH: usize = 1000;

/// Terms of one statement's compound SELECTs (SQLite's SQLITE_MAX_COMPOUND_SELECT): the parser
/// builds `a UNION b UNION c ...` as a left-deep tree, one level per term.
pub const MAX_COMPOUND_SELECT: usize = 500;

/// Columns of a table (SQLite's SQLITE_MAX_COLUMN; 54011 beyond, as in PostgreSQL): the whole
/// catalog is one key-value entry, and every row carries every column.
pub const MAX_COLUMNS: usize = 2000;

/// Tables one FROM clause joins (SQLite's limit): the plan is a join tree as deep as the list,
/// and planning, running and dropping it recurse along it.
pub const MAX_JOIN_TABLES: usize = 64;

/// Operator tokens on any path through a statement's brackets (each level counting the tokens
/// of its open expression): an upper bound on the left-deep operator chains the parser builds
/// before [`MAX_EXPRESSION_DEPTH`] can be checked, small enough that dropping such a tree
/// inside the parser (after a syntax error) fits its stack (half of `PARSE_STACK` at least,
/// which holds about 100,000 levels in unoptimized builds).
pub const MAX_OPERATOR_TOKENS: usize = 50_000;

/// Stack kept free before a recursive step of parsing, binding or evaluation; below it the
/// step runs on a new stack segment, so deep but legal statements work on any thread's stack.
const STACK_RED_ZONE: usize = 1024 * 1024;
const STACK_SEGMENT: usize = 8 * 1024 * 1024;

/// Statements of at most this many tokens nest at most half as deep, which any thread's
/// stack holds; longer ones parse on a stack of `PARSE_STACK` bytes (mapping it costs
/// tens of microseconds, which short OLTP statements should not pay).
pub const SHORT_STATEMENT_TOKENS: usize = 128;

/// Tokens that can open a level of the parser's recursion (`(`, `NOT`, `CASE`, a sign) a short
/// statement may hold: each level of `f(g(h(...)))` takes tens of kilobytes of stack in
/// unoptimized builds, so more than this many parse on the `PARSE_STACK` as long ones do.
pub const SHORT_STATEMENT_NESTING: usize = 12;
// A short statement cannot hold an expression too deep to keep (the parser skips the check).
const _: () = assert!(SHORT_STATEMENT_TOKENS < MAX_EXPRESSION_DEPTH);

/// Stack a parse may need at most: sqlparser recurses several frames per nesting level, and
/// unoptimized builds use large frames.
const PARSE_STACK: usize = 64 * 1024 * 1024;

/// Compiled size a regular expression (`~`) may take: a hostile pattern (`(a{1000}){1000}`)
/// is refused instead of building a huge automaton.
pub const MAX_REGEX_BYTES: usize = 1 << 20;

/// Compiled patterns each thread keeps; past this the cache starts over. With each pattern's
/// program and lazy DFA bounded by [`MAX_REGEX_BYTES`], a thread holds at most 32 MiB.
pub const MAX_CACHED_REGEXES: usize = 16;

/// Savepoints one transaction may hold (each an undo frame in the transaction).
pub const MAX_SAVEPOINTS: usize = 1024;

/// Bytes a string or blob computed by a query may have (a lower query memory limit lowers it):
/// `replace()` multiplies lengths, so a short statement could otherwise ask for terabytes.
/// Stored values are far smaller (the key-value store's limit).
pub const MAX_VALUE_BYTES: usize = 256 << 20;

/// Bytes of a LIKE or GLOB pattern (SQLite's SQLITE_MAX_LIKE_PATTERN_LENGTH): matching costs
/// up to the text's length times the pattern's.
pub const MAX_LIKE_PATTERN_BYTES: usize = 50_000;

/// Rows `generate_series` may produce: a bound on one statement's work.
pub const MAX_SERIES_ROWS: i64 = 100_000_000;

/// Runs the parser with enough stack for [`MAX_PARSE_DEPTH`] levels (the segment is reserved,
/// not committed: only the pages a deep statement touches cost memory).
pub fn with_parse_stack<T>(parse: impl FnOnce() -> T) -> T {
    stacker::maybe_grow(PARSE_STACK / 2, PARSE_STACK, parse)
}

/// Runs a recursive step, growing the stack first when little is left.
pub fn with_stack<T>(step: impl FnOnce() -> T) -> T {
    stacker::maybe_grow(STACK_RED_ZONE, STACK_SEGMENT, step)
}
