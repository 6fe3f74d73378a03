"""The PEP 249 surface of `tern`: module globals, connections, cursors, transactions, the three
paramstyles, type conversion, errors and their SQLSTATEs, threads, and results compared with the
standard `sqlite3` module on the same script."""

import datetime
import decimal
import sqlite3
import sys
import threading
import time

import pytest

import tern


@pytest.fixture
def conn():
    connection = tern.connect(":memory:")
    yield connection
    connection.close()


def test_module_globals_and_exception_hierarchy():
    assert tern.apilevel == "2.0"
    assert tern.threadsafety == 2
    assert tern.paramstyle == "qmark"
    assert issubclass(tern.Warning, Exception)
    assert issubclass(tern.Error, Exception)
    assert issubclass(tern.InterfaceError, tern.Error)
    assert issubclass(tern.DatabaseError, tern.Error)
    for kind in (
        tern.DataError,
        tern.OperationalError,
        tern.IntegrityError,
        tern.InternalError,
        tern.ProgrammingError,
        tern.NotSupportedError,
    ):
        assert issubclass(kind, tern.DatabaseError)
    connection = tern.connect(":memory:")
    assert connection.Error is tern.Error and connection.IntegrityError is tern.IntegrityError
    assert tern.Binary(b"x") == b"x"
    assert tern.Date(2020, 1, 2) == datetime.date(2020, 1, 2)
    assert tern.Timestamp(2020, 1, 2, 3, 4, 5).hour == 3
    assert isinstance(tern.DateFromTicks(0), datetime.date)
    assert isinstance(tern.TimestampFromTicks(0), datetime.datetime)
    assert isinstance(tern.TimeFromTicks(0), datetime.time)
    assert tern.NUMBER == "INTEGER" and tern.STRING == "VARCHAR(20)" and tern.DATETIME == "DATE"
    assert tern.BINARY == "BLOB" and tern.NUMBER != "TEXT"


def test_cursor_fetching_description_rowcount_and_iteration(conn):
    cursor = conn.cursor()
    cursor.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT)")
    assert cursor.description is None
    cursor.executemany("INSERT INTO t VALUES (?, ?)", [(n, f"n{n}") for n in range(1, 8)])
    assert cursor.rowcount == 7
    cursor.execute("UPDATE t SET name = name || '!' WHERE id > ?", (4,))
    assert cursor.rowcount == 3
    assert cursor.lastrowid is None, "no INSERT ran through execute() yet"
    cursor.execute("CREATE TABLE auto(id INTEGER PRIMARY KEY, note TEXT)")
    cursor.execute("INSERT INTO auto(note) VALUES ('a')")
    assert cursor.lastrowid == 1
    cursor.execute("INSERT INTO auto(note) VALUES ('b'), ('c')")
    assert cursor.lastrowid == 3
    cursor.execute("CREATE TABLE hidden(note TEXT)")
    cursor.execute("INSERT INTO hidden VALUES ('x')")
    first = cursor.lastrowid
    cursor.execute("INSERT INTO hidden VALUES ('y')")
    assert cursor.lastrowid > first
    assert conn.execute("SELECT note FROM auto WHERE id = ?", (3,)).fetchone() == ("c",)
    cursor.execute("SELECT id, name FROM t ORDER BY id")
    assert [column[0] for column in cursor.description] == ["id", "name"]
    assert all(len(column) == 7 for column in cursor.description)
    assert cursor.description[0][1] == tern.NUMBER and cursor.description[1][1] == tern.STRING
    assert cursor.rowcount == 7
    assert cursor.fetchone() == (1, "n1")
    assert cursor.arraysize == 1 and cursor.fetchmany() == [(2, "n2")]
    assert cursor.fetchmany(2) == [(3, "n3"), (4, "n4")]
    assert list(cursor) == [(5, "n5!"), (6, "n6!"), (7, "n7!")]
    assert cursor.fetchone() is None and cursor.fetchall() == [] and cursor.fetchmany(5) == []
    cursor.execute("DELETE FROM t WHERE id = 99")
    with pytest.raises(tern.ProgrammingError):
        cursor.fetchall()
    cursor.setinputsizes([None])
    cursor.setoutputsize(10)
    cursor.close()
    with pytest.raises(tern.InterfaceError):
        cursor.execute("SELECT 1")
    with conn.cursor() as scoped:
        assert scoped.execute("SELECT count(*) FROM t").fetchone() == (7,)


def test_commit_rollback_context_manager_and_autocommit(tmp_path):
    path = str(tmp_path / "app.tern")
    conn = tern.connect(path)
    conn.execute("CREATE TABLE t(x INTEGER)")
    assert conn.in_transaction
    conn.commit()
    assert not conn.in_transaction
    conn.execute("INSERT INTO t VALUES (1)")
    conn.rollback()
    assert conn.execute("SELECT count(*) FROM t").fetchone() == (0,)
    with conn:
        conn.execute("INSERT INTO t VALUES (2)")
    with pytest.raises(ZeroDivisionError):
        with conn:
            conn.execute("INSERT INTO t VALUES (3)")
            1 / 0
    conn.execute("INSERT INTO t VALUES (4)")
    conn.close()  # an open transaction is rolled back
    conn.close()  # twice is fine
    with pytest.raises(tern.InterfaceError):
        conn.cursor()

    again = tern.connect(path, autocommit=True)
    assert again.execute("SELECT x FROM t ORDER BY x").fetchall() == [(2,)]
    again.execute("INSERT INTO t VALUES (5)")
    assert not again.in_transaction
    other = tern.connect(path)
    assert other.execute("SELECT count(*) FROM t").fetchone() == (2,), "autocommit statements are committed"
    other.commit()  # its snapshot (and the range it counted) would conflict with the insert below
    # Explicit BEGIN/COMMIT in autocommit mode; switching autocommit on commits.
    again.execute("BEGIN")
    again.execute("INSERT INTO t VALUES (6)")
    again.execute("COMMIT")
    other.autocommit = False
    other.execute("INSERT INTO t VALUES (7)")
    other.autocommit = True
    assert again.execute("SELECT count(*) FROM t").fetchone() == (4,)


def test_paramstyles_qmark_named_and_numeric(conn):
    conn.execute("CREATE TABLE p(a INTEGER, b TEXT)")
    conn.execute("INSERT INTO p VALUES (?, ?)", [1, "one"])
    conn.execute("INSERT INTO p VALUES (:a, :b)", {"b": "two", "a": 2})
    conn.execute("INSERT INTO p VALUES ($1, $2)", (3, "three"))
    conn.execute("INSERT INTO p VALUES (?2, ?1)", ("four", 4))
    # A name used twice, names inside quotes and comments, and a :: cast are left alone.
    rows = conn.execute(
        "SELECT a, ':a' AS quoted, b -- :b in a comment\n FROM p WHERE a = :a OR a = :a + 2 ORDER BY a::INTEGER",
        {"a": 1},
    ).fetchall()
    assert rows == [(1, ":a", "one"), (3, ":a", "three")]
    assert conn.execute("SELECT b FROM p WHERE a = ?", (4,)).fetchone() == ("four",)
    with pytest.raises(tern.ProgrammingError):
        conn.execute("SELECT :missing", {"other": 1})
    with pytest.raises(tern.ProgrammingError):
        conn.execute("SELECT ?", "not a sequence")
    with pytest.raises(tern.InterfaceError):
        conn.execute("SELECT ?", (object(),))


def test_types_round_trip(conn):
    conn.execute(
        "CREATE TABLE v(i BIGINT, f DOUBLE PRECISION, s TEXT, b BLOB, flag BOOLEAN, n NUMERIC(20,4),"
        " d DATE, ts TIMESTAMP, nothing TEXT)"
    )
    values = (
        2**62,
        -1.5,
        "naïve ☃",
        b"\x00\xff",
        True,
        decimal.Decimal("12345678.9012"),
        datetime.date(1999, 12, 31),
        datetime.datetime(2024, 2, 29, 23, 59, 58, 123456),
        None,
    )
    conn.execute("INSERT INTO v VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", values)
    assert conn.execute("SELECT * FROM v").fetchone() == values
    conn.execute("INSERT INTO v(i, flag, b) VALUES (?, ?, ?)", (0, False, bytearray(b"ab")))
    assert conn.execute("SELECT flag, b FROM v WHERE i = 0").fetchone() == (False, b"ab")
    # A timezone-aware timestamp is stored in UTC.
    aware = datetime.datetime(2024, 1, 1, 12, tzinfo=datetime.timezone(datetime.timedelta(hours=2)))
    conn.execute("INSERT INTO v(i, ts) VALUES (1, ?)", (aware,))
    assert conn.execute("SELECT ts FROM v WHERE i = 1").fetchone() == (datetime.datetime(2024, 1, 1, 10),)
    # Expressions are not converted by declared type; arithmetic keeps integers exact.
    assert conn.execute("SELECT ? + 1, ? * 2, typeof(?)", (2**62, decimal.Decimal("0.1"), None)).fetchone() == (
        2**62 + 1,
        decimal.Decimal("0.2"),
        "null",
    )
    with pytest.raises(tern.DataError) as out_of_range:
        conn.execute("SELECT ?", (2**70,))
    assert out_of_range.value.sqlstate == "22003"


def test_errors_map_sqlstates_to_pep249_classes(conn):
    conn.execute("CREATE TABLE e(id INTEGER PRIMARY KEY, name TEXT NOT NULL)")
    cases = [
        ("SELEC 1", tern.ProgrammingError, "42601"),
        ("SELECT * FROM missing", tern.ProgrammingError, "42P01"),
        ("SELECT nope FROM e", tern.ProgrammingError, "42703"),
        ("INSERT INTO e VALUES (1, NULL)", tern.IntegrityError, "23502"),
        ("SELECT * FROM generate_series(1, 9000000000000)", tern.OperationalError, "54000"),
        ("SELECT 'a' ~ '('", tern.DataError, "2201B"),
    ]
    for sql, kind, sqlstate in cases:
        with pytest.raises(kind) as caught:
            conn.execute(sql)
        assert caught.value.sqlstate == sqlstate, sql
        assert sqlstate in str(caught.value)
    conn.execute("INSERT INTO e VALUES (1, 'a')")
    with pytest.raises(tern.IntegrityError):
        conn.execute("INSERT INTO e VALUES (1, 'b')")
    # A failed statement leaves the transaction usable.
    conn.execute("INSERT INTO e VALUES (2, 'c')")
    conn.commit()
    assert conn.execute("SELECT count(*) FROM e").fetchone() == (2,)


def test_serialization_failures_are_operational_errors_and_retry(tmp_path):
    path = str(tmp_path / "occ.tern")
    first, second = tern.connect(path), tern.connect(path)
    first.execute("CREATE TABLE acct(id INTEGER PRIMARY KEY, balance INTEGER)")
    first.execute("INSERT INTO acct VALUES (1, 100)")
    first.commit()
    # Both read the row, both write it: the second commit must fail.
    (balance,) = first.execute("SELECT balance FROM acct WHERE id = 1").fetchone()
    first.execute("UPDATE acct SET balance = ? WHERE id = 1", (balance + 1,))
    (balance,) = second.execute("SELECT balance FROM acct WHERE id = 1").fetchone()
    second.execute("UPDATE acct SET balance = ? WHERE id = 1", (balance + 10,))
    first.commit()
    with pytest.raises(tern.OperationalError) as conflict:
        second.commit()
    assert conflict.value.sqlstate == "40001"
    assert not second.in_transaction
    # Blind increments (deltas) of the same row commute: neither fails.
    first.execute("UPDATE acct SET balance = balance + 10 WHERE id = 1")
    second.execute("UPDATE acct SET balance = balance + 100 WHERE id = 1")
    second.commit()
    first.commit()
    assert first.execute("SELECT balance FROM acct").fetchone() == (211,)


def test_threads_with_their_own_connections_and_a_shared_one(tmp_path):
    path = str(tmp_path / "threads.tern")
    setup = tern.connect(path)
    setup.execute("CREATE TABLE counter(id INTEGER PRIMARY KEY, n INTEGER)")
    setup.execute("INSERT INTO counter VALUES (1, 0)")
    setup.execute("CREATE TABLE log(thread INTEGER, k INTEGER)")
    setup.commit()
    errors = []

    def increment(number):
        conn = tern.connect(path, sync="never")
        try:
            for k in range(25):
                while True:  # retry on serialization failure
                    try:
                        conn.execute("UPDATE counter SET n = n + 1 WHERE id = 1")
                        conn.execute("INSERT INTO log VALUES (?, ?)", (number, k))
                        conn.commit()
                        break
                    except tern.OperationalError as error:
                        assert error.sqlstate == "40001"
                        conn.rollback()
        except Exception as error:  # noqa: BLE001 - reported below
            errors.append(error)

    threads = [threading.Thread(target=increment, args=(number,)) for number in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert setup.execute("SELECT n FROM counter").fetchone() == (100,)
    assert setup.execute("SELECT count(*) FROM log").fetchone() == (100,)

    # One connection shared by threads (threadsafety 2): calls take turns.
    shared = tern.connect(":memory:", autocommit=True)
    shared.execute("CREATE TABLE s(x INTEGER)")

    def insert_many(base):
        for k in range(50):
            shared.execute("INSERT INTO s VALUES (?)", (base + k,))

    threads = [threading.Thread(target=insert_many, args=(1000 * n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert shared.execute("SELECT count(DISTINCT x) FROM s").fetchone() == (200,)


def test_the_gil_is_released_while_a_statement_runs(conn):
    ticks = [0]
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            ticks[0] += 1
            time.sleep(0)  # hands the GIL back at once to a thread that waits for it

    # With a switch interval far longer than the query, the spinner can run while this thread
    # is busy only if this thread gives the GIL up: as the native call does while it runs.
    interval = sys.getswitchinterval()
    sys.setswitchinterval(5)
    spinner = threading.Thread(target=spin)
    try:
        spinner.start()
        before = ticks[0]
        count = conn.execute("SELECT count(*) FROM generate_series(1, 3000000)").fetchone()[0]
        during = ticks[0] - before
    finally:
        stop.set()
        spinner.join()
        sys.setswitchinterval(interval)
    assert count == 3_000_000
    assert during > 0, "another Python thread ran while the query did"


def test_interrupt_cancels_a_running_statement(conn):
    timer = threading.Timer(0.05, conn.interrupt)
    timer.start()
    with pytest.raises(tern.OperationalError) as cancelled:
        conn.execute("SELECT count(*) FROM generate_series(1, 50000000) a")
    timer.join()
    assert cancelled.value.sqlstate == "57014"
    assert conn.execute("SELECT 1").fetchone() == (1,), "the connection goes on"


def test_executescript_and_savepoints(conn):
    conn.executescript(
        """
        CREATE TABLE s(x INTEGER);
        INSERT INTO s VALUES (1);
        INSERT INTO s VALUES (2);
        """
    )
    conn.execute("INSERT INTO s VALUES (3)")
    conn.execute("SAVEPOINT before_four")
    conn.execute("INSERT INTO s VALUES (4)")
    conn.execute("ROLLBACK TO SAVEPOINT before_four")
    conn.commit()
    assert conn.execute("SELECT x FROM s ORDER BY x").fetchall() == [(1,), (2,), (3,)]
    # A SAVEPOINT may open the transaction (an implicit BEGIN goes first, as in psycopg).
    conn.execute("SAVEPOINT first_thing")
    conn.execute("INSERT INTO s VALUES (5)")
    conn.execute("ROLLBACK TO first_thing")
    conn.execute("RELEASE first_thing")
    conn.commit()
    assert conn.execute("SELECT count(*) FROM s").fetchone() == (3,)


SCRIPT = [
    "CREATE TABLE dept(id INTEGER PRIMARY KEY, name TEXT NOT NULL)",
    "CREATE TABLE emp(id INTEGER PRIMARY KEY, dept INTEGER, name TEXT, salary INTEGER, boss INTEGER)",
    "INSERT INTO dept VALUES (1, 'eng'), (2, 'ops'), (3, 'empty')",
    "INSERT INTO emp VALUES (1, 1, 'ada', 300, NULL), (2, 1, 'bob', 200, 1), (3, 2, 'cy', 150, 1),"
    " (4, 2, 'di', NULL, 3), (5, NULL, 'eve', 100, NULL)",
    "UPDATE emp SET salary = salary + 10 WHERE dept = 2",
    "DELETE FROM emp WHERE name = 'nobody'",
]

QUERIES = [
    "SELECT d.name, count(e.id), sum(e.salary), max(e.salary) FROM dept d LEFT JOIN emp e ON e.dept = d.id"
    " GROUP BY d.name ORDER BY d.name",
    "SELECT e.name, b.name FROM emp e LEFT JOIN emp b ON e.boss = b.id ORDER BY e.id",
    "SELECT name FROM emp WHERE salary > (SELECT avg(salary) FROM emp) ORDER BY name",
    "SELECT upper(name), length(name), substr(name, 1, 1) || '.' FROM emp ORDER BY 1",
    "SELECT dept, coalesce(salary, -1) FROM emp WHERE dept IS NOT NULL ORDER BY dept, 2 DESC",
    "SELECT name FROM emp WHERE name LIKE '_o%' OR salary BETWEEN 150 AND 200 ORDER BY name",
    "SELECT DISTINCT dept FROM emp ORDER BY dept",
    "SELECT name FROM emp WHERE dept IN (SELECT id FROM dept WHERE name <> 'eng') ORDER BY 1",
    "SELECT count(*), count(salary), total(salary) FROM emp",
    "SELECT name, CASE WHEN salary >= 200 THEN 'high' WHEN salary IS NULL THEN '?' ELSE 'low' END FROM emp"
    " ORDER BY id",
    "WITH RECURSIVE chain(id, depth) AS (SELECT id, 0 FROM emp WHERE boss IS NULL UNION ALL"
    " SELECT e.id, c.depth + 1 FROM emp e JOIN chain c ON e.boss = c.id) SELECT id, depth FROM chain ORDER BY id",
    "SELECT name FROM emp ORDER BY salary DESC, name LIMIT 2 OFFSET 1",
]


def test_results_match_sqlite3_on_the_same_script(tmp_path):
    ours = tern.connect(str(tmp_path / "same.tern"))
    theirs = sqlite3.connect(str(tmp_path / "same.sqlite"))
    for statement in SCRIPT:
        ours.execute(statement)
        theirs.execute(statement)
    ours.commit()
    theirs.commit()
    for query in QUERIES:
        expected = theirs.execute(query).fetchall()
        got = ours.execute(query).fetchall()
        assert got == expected, query
    # Parameters through both modules.
    for value in (1, 2, 3):
        query = "SELECT name FROM emp WHERE dept = ? ORDER BY id"
        assert ours.execute(query, (value,)).fetchall() == theirs.execute(query, (value,)).fetchall()


def test_arrow_results():
    pyarrow = pytest.importorskip("pyarrow")
    conn = tern.connect(":memory:")
    conn.execute("CREATE TABLE a(k INTEGER, v TEXT, d DATE)")
    conn.executemany("INSERT INTO a VALUES (?, ?, ?)", [(n, f"v{n}", datetime.date(2020, 1, 1 + n)) for n in range(5)])
    table = conn.cursor().execute_arrow("SELECT k, v, d FROM a ORDER BY k")
    assert isinstance(table, pyarrow.Table)
    assert table.column_names == ["k", "v", "d"]
    assert table.column("k").to_pylist() == [0, 1, 2, 3, 4]
    assert table.column("d").to_pylist()[1] == datetime.date(2020, 1, 2)
    cursor = conn.execute("SELECT k FROM a ORDER BY k")
    assert cursor.fetchone() == (0,)
    assert cursor.fetch_arrow().column("k").to_pylist() == [1, 2, 3, 4], "the rows not yet fetched"
