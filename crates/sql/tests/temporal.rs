//! Dates, times, timestamps and intervals as typed values in the postgres dialect, and
//! SQLite's date functions on text in the sqlite dialect. The postgres answers are PostgreSQL
//! 15's (the same statements run against PostgreSQL itself in
//! `crates/server/tests/pg/temporal.sql`).

use tern_sql::{Database, Options, Value};

mod common;
use common::{one, postgres, sqlstate, texts};

#[test]
fn literals_casts_and_output_forms() {
    let db = Database::open_in_memory().unwrap();
    let mut pg = postgres(&db);
    assert_eq!(one(&mut pg, "SELECT '2024-01-01'::date"), "2024-01-01");
    assert_eq!(one(&mut pg, "SELECT CAST('2024-01-01 10:00' AS DATE)"), "2024-01-01");
    assert_eq!(one(&mut pg, "SELECT date 'January 8, 1999'"), "1999-01-08");
    assert_eq!(one(&mut pg, "SELECT timestamp '2024-01-31 10:00:00.250'"), "2024-01-31 10:00:00.25");
    assert_eq!(one(&mut pg, "SELECT timestamptz '2024-01-31 12:00:00+02'"), "2024-01-31 10:00:00+00");
    assert_eq!(one(&mut pg, "SELECT interval '1 year 2 months 3 days 04:05:06'"), "1 year 2 mons 3 days 04:05:06");
    assert_eq!(one(&mut pg, "SELECT interval '90' day"), "90 days");
    assert_eq!(one(&mut pg, "SELECT time '04:05:06.5'"), "04:05:06.5");
    assert_eq!(one(&mut pg, "SELECT 'infinity'::date, '-infinity'::timestamp"), "infinity|-infinity");
    assert_eq!(
        one(&mut pg, "SELECT typeof(now()), typeof(current_date), typeof(localtimestamp)"),
        "timestamptz|date|timestamp"
    );
    assert_eq!(one(&mut pg, "SELECT date '2024-01-01' = timestamp '2024-01-01 00:00'"), "1");
    for bad in ["SELECT 'not a date'::date", "SELECT date 'garbage'", "SELECT '2024-01-01 xx'::timestamp"] {
        assert_eq!(sqlstate(&mut pg, bad), "22007", "{bad}");
    }
    for bad in ["SELECT '1997-02-29'::date", "SELECT '2024-01-01 25:00'::timestamp", "SELECT '2024-13-01'::date"] {
        assert_eq!(sqlstate(&mut pg, bad), "22008", "{bad}");
    }
}

#[test]
fn columns_validate_order_and_index() {
    let db = Database::open_in_memory().unwrap();
    let mut pg = postgres(&db);
    pg.execute(
        "CREATE TABLE e(id INT PRIMARY KEY, hired DATE, seen TIMESTAMPTZ, shift INTERVAL);
         CREATE INDEX e_hired ON e(hired);
         INSERT INTO e VALUES (1, '2020-02-29 +00', '2024-01-01T10:00:00Z', '8 hours'),
                              (2, 'March 1, 2020', '2024-01-01 12:00:00+01', '1 day'),
                              (3, '2019-12-31', NULL, '-2 hours'),
                              (4, 'infinity', '2023-06-30 23:59:59.999999', '30 days')",
        &[],
    )
    .unwrap();
    assert_eq!(sqlstate(&mut pg, "INSERT INTO e VALUES (5, 'not a date', NULL, NULL)"), "22007");
    assert_eq!(sqlstate(&mut pg, "INSERT INTO e VALUES (5, '2023-02-29', NULL, NULL)"), "22008");
    assert_eq!(sqlstate(&mut pg, "INSERT INTO e VALUES (5, NULL, NULL, 'forever')"), "22007");
    assert_eq!(one(&mut pg, "SELECT count(*) FROM e"), "4");
    // What pgjdbc's setDate sends is found by the date.
    assert_eq!(texts(&mut pg, "SELECT id FROM e WHERE hired = '2020-02-29'"), ["1"]);
    assert_eq!(texts(&mut pg, "SELECT id FROM e WHERE hired > date '2020-01-01' ORDER BY hired"), ["1", "2", "4"]);
    assert_eq!(texts(&mut pg, "SELECT id FROM e ORDER BY hired DESC"), ["4", "2", "1", "3"]);
    assert_eq!(texts(&mut pg, "SELECT id FROM e ORDER BY seen NULLS FIRST"), ["3", "4", "1", "2"]);
    assert_eq!(texts(&mut pg, "SELECT id FROM e ORDER BY shift"), ["3", "1", "2", "4"]);
    assert_eq!(texts(&mut pg, "SELECT id FROM e WHERE shift = interval '1 month'"), ["4"]);
    assert_eq!(
        texts(&mut pg, "SELECT id FROM e WHERE hired BETWEEN '2020-01-01' AND '2020-12-31' ORDER BY id"),
        ["1", "2"]
    );
    assert_eq!(texts(&mut pg, "SELECT id FROM e WHERE seen < timestamp '2024-01-01 10:30'"), ["1", "4"]);
    assert_eq!(one(&mut pg, "SELECT min(hired), max(seen) FROM e"), "2019-12-31|2024-01-01 11:00:00+00");
    // A parameter sent as text compares as a date.
    let (_, rows) = pg.query("SELECT id FROM e WHERE hired = $1", &[Value::from("2020-03-01")]).unwrap();
    assert_eq!(rows, vec![vec![Value::Integer(2)]]);
}

#[test]
fn arithmetic_and_tpch_predicates() {
    let db = Database::open_in_memory().unwrap();
    let mut pg = postgres(&db);
    assert_eq!(one(&mut pg, "SELECT date '1998-12-01' - interval '90' day"), "1998-09-02 00:00:00");
    assert_eq!(one(&mut pg, "SELECT date '2024-02-28' + 1, date '2024-03-01' - date '2024-02-01'"), "2024-02-29|29");
    assert_eq!(one(&mut pg, "SELECT timestamp '2024-01-31 10:00' + interval '1 month'"), "2024-02-29 10:00:00");
    assert_eq!(one(&mut pg, "SELECT timestamp '2024-01-02 01:00' - timestamp '2024-01-01'"), "1 day 01:00:00");
    assert_eq!(one(&mut pg, "SELECT interval '1 day' * 1.5, interval '3 hours' / 2"), "1 day 12:00:00|01:30:00");
    assert_eq!(one(&mut pg, "SELECT -interval '1 day', time '23:00' + interval '2 hours'"), "-1 days|01:00:00");
    assert_eq!(sqlstate(&mut pg, "SELECT date '2024-01-01' * 2"), "42883");
    assert_eq!(sqlstate(&mut pg, "SELECT interval '1 day' / 0"), "22012");
    pg.execute(
        "CREATE TABLE lineitem(l_orderkey INT, l_shipdate DATE);
         INSERT INTO lineitem VALUES (1, '1998-08-01'), (2, '1998-09-02'), (3, '1998-09-03'), (4, '1998-12-01')",
        &[],
    )
    .unwrap();
    assert_eq!(
        texts(
            &mut pg,
            "SELECT l_orderkey FROM lineitem WHERE l_shipdate <= date '1998-12-01' - interval '90' day ORDER BY 1"
        ),
        ["1", "2"]
    );
}

#[test]
fn functions() {
    let db = Database::open_in_memory().unwrap();
    let mut pg = postgres(&db);
    let stamp = "timestamp '2024-05-17 13:45:12.5'";
    assert_eq!(one(&mut pg, &format!("SELECT date_trunc('month', {stamp})")), "2024-05-01 00:00:00");
    assert_eq!(
        one(&mut pg, &format!("SELECT extract(year FROM {stamp}), extract(second FROM {stamp})")),
        "2024|12.500000"
    );
    assert_eq!(
        one(&mut pg, &format!("SELECT date_part('dow', {stamp}), extract(epoch FROM {stamp})")),
        "5.0|1715953512.500000"
    );
    assert_eq!(one(&mut pg, "SELECT age(timestamp '2024-03-01', timestamp '2023-01-31')"), "1 year 1 mon 1 day");
    assert_eq!(one(&mut pg, "SELECT make_date(2024, 2, 29), make_time(8, 15, 23.5)"), "2024-02-29|08:15:23.5");
    assert_eq!(one(&mut pg, "SELECT make_timestamp(2024, 2, 29, 8, 15, 0)"), "2024-02-29 08:15:00");
    assert_eq!(
        one(&mut pg, "SELECT to_char(timestamp '2024-03-05 14:07:09', 'FMDay, DD Mon YYYY HH12:MI AM')"),
        "Tuesday, 05 Mar 2024 02:07 PM"
    );
    assert_eq!(
        one(&mut pg, "SELECT to_char(1234.5, 'FM9,999.00'), to_number('1,234.50', '9,999.99')"),
        "1,234.50|1234.50"
    );
    assert_eq!(one(&mut pg, "SELECT to_date('05 Mar 2024', 'DD Mon YYYY')"), "2024-03-05");
    assert_eq!(one(&mut pg, "SELECT to_timestamp(0)"), "1970-01-01 00:00:00+00");
    assert_eq!(
        one(&mut pg, "SELECT timestamptz '2024-07-01 12:00:00+00' AT TIME ZONE 'Europe/Paris'"),
        "2024-07-01 14:00:00"
    );
    assert_eq!(
        one(&mut pg, "SELECT timestamp '2024-07-01 14:00' AT TIME ZONE 'Europe/Paris'"),
        "2024-07-01 12:00:00+00"
    );
    assert_eq!(
        one(&mut pg, "SELECT justify_hours(interval '27 hours'), isfinite(date 'infinity')"),
        "1 day 03:00:00|0"
    );
    assert_eq!(sqlstate(&mut pg, "SELECT make_date(2023, 2, 29)"), "22008");
    assert_eq!(sqlstate(&mut pg, "SELECT date_trunc('fortnight', now())"), "22023");
    assert_eq!(sqlstate(&mut pg, "SELECT timestamp '2024-01-01' AT TIME ZONE 'Mars/Olympus'"), "22023");
}

#[test]
fn sqlite_date_functions_on_text() {
    let db = Database::open_in_memory().unwrap();
    let mut lite = db.session();
    assert_eq!(one(&mut lite, "SELECT julianday('2000-01-01 12:00:00')"), "2451545.0");
    assert_eq!(
        one(&mut lite, "SELECT strftime('%Y-%m-%d %H:%M:%f', '2024-03-05 14:07:09.250')"),
        "2024-03-05 14:07:09.250"
    );
    assert_eq!(one(&mut lite, "SELECT strftime('%s', '1970-01-02'), strftime('%j', '2024-12-31')"), "86400|366");
    assert_eq!(one(&mut lite, "SELECT date('2024-03-05', 'weekday 0'), date(2451545.0)"), "2024-03-10|2000-01-01");
    assert_eq!(
        one(&mut lite, "SELECT datetime(1700000000, 'unixepoch'), unixepoch('2024-01-01', 'subsec')"),
        "2023-11-14 22:13:20|1704067200.0"
    );
    assert_eq!(one(&mut lite, "SELECT typeof(strftime('%Q', 'now')), typeof(date('garbage'))"), "null|null");
    // DATE columns keep SQLite's NUMERIC affinity and text in the sqlite dialect.
    lite.execute("CREATE TABLE d(x DATE); INSERT INTO d VALUES ('not a date')", &[]).unwrap();
    assert_eq!(one(&mut lite, "SELECT x, typeof(x) FROM d"), "not a date|text");
}

#[test]
fn typed_values_survive_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.db");
    {
        let db = Database::open(&path, Options::default()).unwrap();
        let mut pg = postgres(&db);
        pg.execute(
            "CREATE TABLE t(d DATE PRIMARY KEY, ts TIMESTAMP, i INTERVAL);
             INSERT INTO t VALUES ('2024-01-01', '2024-01-01 10:00:00.123456', '1 mon -2 days 03:00')",
            &[],
        )
        .unwrap();
    }
    let db = Database::open(&path, Options::default()).unwrap();
    let mut pg = postgres(&db);
    assert_eq!(
        one(&mut pg, "SELECT d, ts, i FROM t WHERE d = '2024-01-01'"),
        "2024-01-01|2024-01-01 10:00:00.123456|1 mon -2 days +03:00:00"
    );
}

#[test]
fn booleans_and_integer_widths() {
    let db = Database::open_in_memory().unwrap();
    let mut pg = postgres(&db);
    pg.execute("CREATE TABLE f(id SMALLINT, n INT, big BIGINT, ok BOOLEAN)", &[]).unwrap();
    pg.execute("INSERT INTO f VALUES (1, 2, 3, 't'), (2, 3, 4, 'yes'), (3, 4, 5, 'off'), (4, 5, 6, '1')", &[]).unwrap();
    assert_eq!(texts(&mut pg, "SELECT id FROM f WHERE ok = 'true' ORDER BY id"), ["1", "2", "4"]);
    assert_eq!(texts(&mut pg, "SELECT id FROM f WHERE ok = 'f'"), ["3"]);
    assert_eq!(sqlstate(&mut pg, "INSERT INTO f VALUES (100000, 1, 1, 't')"), "22003");
    assert_eq!(sqlstate(&mut pg, "INSERT INTO f VALUES (1, 3000000000, 1, 't')"), "22003");
    assert_eq!(sqlstate(&mut pg, "INSERT INTO f VALUES (1, 'abc', 1, 't')"), "22P02");
    assert_eq!(sqlstate(&mut pg, "INSERT INTO f VALUES (1, 1, 1, 'test')"), "22P02");
    assert_eq!(sqlstate(&mut pg, "SELECT int2 '100000'"), "22003");
    assert_eq!(sqlstate(&mut pg, "SELECT bool 'test'"), "22P02");
    assert_eq!(sqlstate(&mut pg, "SELECT 'x1'::int"), "22P02");
    assert_eq!(one(&mut pg, "SELECT count(*) FROM f"), "4");
    assert_eq!(one(&mut pg, "SELECT '42'::int4, 2.5::int, 3.5::int, 'on'::boolean"), "42|3|4|1");
}

#[test]
fn the_session_time_zone_rules_civil_time() {
    let db = Database::open_in_memory().unwrap();
    let mut pg = postgres(&db);
    let instant = "timestamptz '2024-01-15 23:30:00+00'";
    pg.execute("SET TimeZone = 'Europe/Paris'", &[]).unwrap();
    assert_eq!(one(&mut pg, &format!("SELECT {instant}::text")), "2024-01-16 00:30:00+01");
    assert_eq!(one(&mut pg, &format!("SELECT {instant}::date, {instant}::time")), "2024-01-16|00:30:00");
    assert_eq!(one(&mut pg, "SELECT timestamptz '2024-07-01 12:00'::text"), "2024-07-01 12:00:00+02");
    assert_eq!(one(&mut pg, &format!("SELECT date_trunc('day', {instant})::text")), "2024-01-16 00:00:00+01");
    assert_eq!(one(&mut pg, &format!("SELECT extract(hour FROM {instant})")), "0");
    // A day across the spring change is 23 hours of the instant.
    let spring = "timestamptz '2024-03-30 12:00:00+01'";
    assert_eq!(one(&mut pg, &format!("SELECT ({spring} + interval '1 day')::text")), "2024-03-31 12:00:00+02");
    // The same query text in another zone is not answered from the result cache.
    let query = "SELECT timestamptz '2024-01-15 12:00'::text";
    assert_eq!(one(&mut pg, query), "2024-01-15 12:00:00+01");
    pg.execute("SET TimeZone = 'UTC'", &[]).unwrap();
    assert_eq!(one(&mut pg, query), "2024-01-15 12:00:00+00");
    // Settings Tern cannot honour are refused, not ignored.
    assert_eq!(sqlstate(&mut pg, "SET TimeZone = 'Mars/Olympus'"), "22023");
    assert_eq!(sqlstate(&mut pg, "SET DateStyle = 'German'"), "0A000");
    assert_eq!(sqlstate(&mut pg, "SET IntervalStyle = 'iso_8601'"), "0A000");
    pg.execute("SET DateStyle = 'iso, mdy'", &[]).unwrap();
}

#[test]
fn now_is_the_transactions_time_and_plans_follow_the_zone() {
    let db = Database::open_in_memory().unwrap();
    let mut pg = postgres(&db);
    pg.execute("BEGIN", &[]).unwrap();
    let first = one(&mut pg, "SELECT now()::text");
    std::thread::sleep(std::time::Duration::from_millis(5));
    assert_eq!(one(&mut pg, "SELECT now()::text"), first);
    assert_eq!(one(&mut pg, "SELECT now() - now(), current_timestamp = now()"), "00:00:00|1");
    pg.execute("COMMIT", &[]).unwrap();
    // A bare number of hours is east of UTC, as in PostgreSQL.
    pg.execute("SET TIME ZONE -5", &[]).unwrap();
    assert_eq!(one(&mut pg, "SELECT timestamptz '2024-01-01 12:00+00'::text"), "2024-01-01 07:00:00-05");
    // A prepared statement's literal is read again in a new zone.
    let mut statement = pg.prepare("SELECT timestamptz '2024-01-01 12:00'::text").unwrap();
    let text = |pg: &mut tern_sql::Session, statement: &mut tern_sql::Statement| match pg
        .execute_prepared(statement, &[])
        .unwrap()
    {
        tern_sql::Outcome::Rows { rows, .. } => rows[0][0].to_text(),
        _ => panic!("no rows"),
    };
    assert_eq!(text(&mut pg, &mut statement), "2024-01-01 12:00:00-05");
    pg.execute("SET TIME ZONE 'UTC'", &[]).unwrap();
    assert_eq!(text(&mut pg, &mut statement), "2024-01-01 12:00:00+00");
}
