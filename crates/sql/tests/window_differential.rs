//! Window functions against SQLite (rusqlite, in memory) as the oracle.
//!
//! Each case, generated from a `u64` seed, fills one table with up to forty rows drawn from
//! small domains (NULLs, ties and equal partitions are common), then runs random queries that
//! call every window function and aggregate over random windows: PARTITION BY and ORDER BY
//! subsets with directions and NULL placement, ROWS / RANGE / GROUPS frames with offsets, and
//! EXCLUDE; some through a WINDOW clause, some over a GROUP BY, some with FILTER. Both engines
//! must agree on success or failure and on the rows (reals within 1e-9 relative).
//!
//! Rows that tie under a window's ORDER BY may be visited in any order, so wherever the result
//! would depend on that order (ROWS frames, row_number, lag, first_value, group_concat, ...)
//! the generator adds `id` as the last ORDER BY term; the outer query is ordered by `id`.
//!
//! ```text
//! cargo test -p tern-sql --test window_differential
//! TERN_WINDOW_CASES=5000 cargo test -p tern-sql --test window_differential   # a longer run
//! TERN_WINDOW_SEED=17 TERN_WINDOW_CASES=1 cargo test -p tern-sql --test window_differential
//! ```

use rand::rngs::SmallRng;
use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use rusqlite::types::ValueRef;
use tern_sql::{Database, Value};

const DEFAULT_CASES: u64 = 200;
const QUERIES_PER_CASE: usize = 12;

/// Functions with how their result depends on the order of peers.
const FUNCTIONS: &[(&str, bool)] = &[
    ("row_number()", true),
    ("rank()", false),
    ("dense_rank()", false),
    ("percent_rank()", false),
    ("cume_dist()", false),
    ("ntile(3)", true),
    ("ntile(1)", true),
    ("lag(o)", true),
    ("lag(s, 2, 'none')", true),
    ("lead(o, 1, -1)", true),
    ("lead(r)", true),
    ("first_value(s)", true),
    ("last_value(o)", true),
    ("nth_value(s, 2)", true),
    ("nth_value(o, 3)", true),
    ("count(*)", false),
    ("count(o)", false),
    ("sum(o)", false),
    ("avg(o)", false),
    ("total(r)", false),
    ("min(s)", false),
    ("max(r)", false),
    ("group_concat(s, '.')", true),
    ("sum(o) FILTER (WHERE g > 1)", false),
    ("count(*) FILTER (WHERE s IS NOT NULL)", false),
];

struct Gen {
    rng: SmallRng,
}

impl Gen {
    fn chance(&mut self, p: f64) -> bool {
        self.rng.random_bool(p)
    }

    fn setup(&mut self) -> Vec<String> {
        let mut statements =
            vec!["CREATE TABLE t(id INTEGER PRIMARY KEY, g INTEGER, h TEXT, o INTEGER, r REAL, s TEXT)".to_string()];
        let rows = self.rng.random_range(0..40);
        for id in 1..=rows {
            let g = *["NULL", "1", "2", "3"].choose(&mut self.rng).unwrap();
            let h = *["NULL", "'a'", "'b'"].choose(&mut self.rng).unwrap();
            let o = if self.chance(0.15) { "NULL".to_string() } else { self.rng.random_range(-3..8).to_string() };
            let r = if self.chance(0.15) {
                "NULL".to_string()
            } else {
                format!("{}.{}", self.rng.random_range(-5..6), self.rng.random_range(0..4) * 25)
            };
            let s = if self.chance(0.15) {
                "NULL".to_string()
            } else {
                format!("'{}'", ["x", "y", "z", "w"][self.rng.random_range(0..4)])
            };
            statements.push(format!("INSERT INTO t VALUES ({id}, {g}, {h}, {o}, {r}, {s})"));
        }
        statements
    }

    fn order_term(&mut self, column: &str) -> String {
        let mut term = column.to_string();
        if self.chance(0.4) {
            term.push_str(" DESC");
        }
        if self.chance(0.2) {
            term.push_str(if self.chance(0.5) { " NULLS FIRST" } else { " NULLS LAST" });
        }
        term
    }

    fn offset(&mut self) -> String {
        self.rng.random_range(0..4).to_string()
    }

    fn bound(&mut self, is_start: bool) -> String {
        match self.rng.random_range(0..4) {
            0 if is_start => "UNBOUNDED PRECEDING".into(),
            0 => "UNBOUNDED FOLLOWING".into(),
            1 => "CURRENT ROW".into(),
            2 => format!("{} PRECEDING", self.offset()),
            _ => format!("{} FOLLOWING", self.offset()),
        }
    }

    /// A window specification's contents.
    fn window(&mut self, order_sensitive: bool) -> String {
        let mut parts = Vec::new();
        let partition: Vec<&str> = ["g", "h"].into_iter().filter(|_| self.rng.random_bool(0.35)).collect();
        if !partition.is_empty() {
            parts.push(format!("PARTITION BY {}", partition.join(", ")));
        }
        let mut order = Vec::new();
        let single_numeric = self.chance(0.35);
        if single_numeric {
            order.push(self.order_term("o"));
        } else {
            for column in ["h", "o", "r"] {
                if self.chance(0.35) {
                    order.push(self.order_term(column));
                }
            }
        }
        let units = *["ROWS", "RANGE", "GROUPS", ""].choose(&mut self.rng).unwrap();
        let mut frame = String::new();
        let mut range_offsets = false;
        let framed = !units.is_empty() && (units != "GROUPS" || !order.is_empty());
        if framed {
            let (start, end) = (self.bound(true), self.bound(false));
            let is_offset = |bound: &str| bound.ends_with("ING") && !bound.starts_with("UNBOUNDED");
            range_offsets = units == "RANGE" && (is_offset(&start) || is_offset(&end));
            if !range_offsets || (single_numeric && order.len() == 1) {
                frame = if self.chance(0.2) && start != "CURRENT ROW" && !start.contains("FOLLOWING") {
                    format!("{units} {start}")
                } else {
                    format!("{units} BETWEEN {start} AND {end}")
                };
                if self.chance(0.4) {
                    let exclusion = ["CURRENT ROW", "GROUP", "TIES", "NO OTHERS"].choose(&mut self.rng).unwrap();
                    frame.push_str(&format!(" EXCLUDE {exclusion}"));
                }
            } else {
                range_offsets = false;
            }
        }
        // Ties visited in another order must not change the answer: order by id last. RANGE
        // with offsets takes exactly one ORDER BY term, so such a frame goes instead.
        if order_sensitive || units == "ROWS" {
            if range_offsets {
                frame.clear();
            }
            order.push("id".into());
        }
        if !order.is_empty() {
            parts.push(format!("ORDER BY {}", order.join(", ")));
        }
        if !frame.is_empty() {
            parts.push(frame);
        }
        parts.join(" ")
    }

    fn call(&mut self) -> String {
        let (function, sensitive) = *FUNCTIONS.choose(&mut self.rng).unwrap();
        format!("{function} OVER ({})", self.window(sensitive))
    }

    fn query(&mut self) -> String {
        match self.rng.random_range(0..6) {
            0 => {
                // Through a WINDOW clause, one call refining the named window.
                let (function, sensitive) = *FUNCTIONS.choose(&mut self.rng).unwrap();
                let partition = if self.chance(0.5) { "PARTITION BY g" } else { "" };
                let order = if sensitive { "ORDER BY o, id" } else { "ORDER BY o" };
                format!(
                    "SELECT id, {function} OVER w, {function} OVER (w2 {order}) FROM t \
                     WINDOW w AS ({partition} {order}), w2 AS ({partition}) ORDER BY id"
                )
            }
            1 => {
                // Over groups.
                let order = self.order_term("sum(o)");
                format!(
                    "SELECT g, sum(o), rank() OVER (ORDER BY {order}), sum(count(*)) OVER (ORDER BY g), \
                     max(sum(o)) OVER () FROM t GROUP BY g ORDER BY g"
                )
            }
            2 => {
                let filter = ["o > 2", "g = 1", "h IS NOT NULL"].choose(&mut self.rng).unwrap();
                format!("SELECT id, {} FROM t WHERE {filter} ORDER BY id", self.call())
            }
            _ => {
                let calls: Vec<String> = (0..self.rng.random_range(1..4)).map(|_| self.call()).collect();
                format!("SELECT id, {} FROM t ORDER BY id", calls.join(", "))
            }
        }
    }
}

type Rows = Vec<Vec<Value>>;

fn sqlite_rows(conn: &rusqlite::Connection, sql: &str) -> Result<Rows, String> {
    let mut statement = conn.prepare(sql).map_err(|error| error.to_string())?;
    let width = statement.column_count();
    let mut rows = statement.query([]).map_err(|error| error.to_string())?;
    let mut out = Vec::new();
    while let Some(row) = rows.next().map_err(|error| error.to_string())? {
        let mut values = Vec::with_capacity(width);
        for at in 0..width {
            values.push(match row.get_ref(at).map_err(|error| error.to_string())? {
                ValueRef::Null => Value::Null,
                ValueRef::Integer(number) => Value::Integer(number),
                ValueRef::Real(number) => Value::Real(number),
                ValueRef::Text(text) => Value::Text(String::from_utf8_lossy(text).into_owned()),
                ValueRef::Blob(bytes) => Value::Blob(bytes.to_vec()),
            });
        }
        out.push(values);
    }
    Ok(out)
}

fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Real(x), Value::Real(y)) => x == y || (x - y).abs() <= 1e-9 * x.abs().max(y.abs()),
        _ => a == b,
    }
}

fn same_rows(a: &Rows, b: &Rows) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.len() == y.len() && x.iter().zip(y).all(|(v, w)| same(v, w)))
}

/// Runs one seed; returns the statements and the mismatch, if any.
fn run_case(seed: u64) -> Result<usize, String> {
    let mut generator = Gen { rng: SmallRng::seed_from_u64(seed) };
    let sqlite = rusqlite::Connection::open_in_memory().unwrap();
    let database = Database::open_in_memory().unwrap();
    let mut session = database.session();
    let setup = generator.setup();
    for statement in &setup {
        sqlite.execute(statement, []).unwrap();
        session.execute(statement, &[]).unwrap();
    }
    let mut compared = 0;
    for _ in 0..QUERIES_PER_CASE {
        let sql = generator.query();
        let expected = sqlite_rows(&sqlite, &sql);
        let actual = session.query(&sql, &[]).map(|(_, rows)| rows).map_err(|error| error.to_string());
        let agree = match (&expected, &actual) {
            (Ok(expected), Ok(actual)) => same_rows(expected, actual),
            (Err(_), Err(_)) => true,
            _ => false,
        };
        if !agree {
            return Err(format!(
                "seed {seed}\n{};\n{sql};\nsqlite: {expected:?}\ntern:   {actual:?}",
                setup.join(";\n")
            ));
        }
        compared += 1;
    }
    Ok(compared)
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|value| value.parse().ok()).unwrap_or(default)
}

#[test]
fn window_functions_match_sqlite() {
    let first = env_u64("TERN_WINDOW_SEED", 0);
    let cases = env_u64("TERN_WINDOW_CASES", DEFAULT_CASES);
    let mut compared = 0;
    for seed in first..first + cases {
        match run_case(seed) {
            Ok(count) => compared += count,
            Err(mismatch) => panic!("{mismatch}"),
        }
    }
    assert!(compared >= cases as usize * QUERIES_PER_CASE);
}
