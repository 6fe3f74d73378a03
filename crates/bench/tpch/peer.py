"""The peers of `tern bench tpch`: DuckDB and SQLite on the same TPC-H data and query text.

generate: makes the dbgen-format files (`<table>.tbl`, `|`-separated) for a scale factor with
DuckDB's tpch extension (its dbgen is the TPC's), unless they are there already.
run: loads the files into an in-memory DuckDB and an on-disk SQLite database, runs each query
`--repeats` times on each, and writes the best times and DuckDB's answers as JSON.

Answers are normalised as the Rust side normalises Tern's: numbers to two decimals (TPC-H
checks money to the cent), everything else as text with trailing blanks removed.
"""

import argparse
import datetime
import decimal
import json
import os
import re
import sqlite3
import sys
import time

TABLES = ["nation", "region", "part", "supplier", "partsupp", "customer", "orders", "lineitem"]


def tpch_extension():
    import duckdb_ext

    root = list(duckdb_ext.__path__)[0]
    for folder, _, files in os.walk(root):
        if "tpch.duckdb_extension" in files:
            return os.path.join(folder, "tpch.duckdb_extension")
    raise SystemExit("duckdb-ext-tpch has no tpch.duckdb_extension")


def connect_duckdb(threads):
    import duckdb

    connection = duckdb.connect(config={"allow_unsigned_extensions": "true"})
    connection.execute(f"SET threads = {threads}")
    return connection


def generate(args):
    if all(os.path.exists(os.path.join(args.data, f"{table}.tbl")) for table in TABLES):
        print(f"dbgen files for scale {args.scale} already in {args.data}")
        return
    os.makedirs(args.data, exist_ok=True)
    connection = connect_duckdb(args.threads)
    connection.execute(f"LOAD '{tpch_extension()}'")
    started = time.perf_counter()
    connection.execute(f"CALL dbgen(sf={args.scale})")
    for table in TABLES:
        path = os.path.join(args.data, f"{table}.tbl")
        # dbgen's format: no quoting (no field holds a `|` or a line break).
        connection.execute(f"COPY {table} TO '{path}' (DELIMITER '|', HEADER false, QUOTE '')")
    print(f"dbgen scale {args.scale}: {time.perf_counter() - started:.1f} s into {args.data}")


def split_queries(text):
    """{n: [statement, ...]} from the `-- Q<n>` sections of queries.sql."""
    queries = {}
    current = None
    for line in text.splitlines():
        match = re.fullmatch(r"-- Q(\d+)", line.strip())
        if match:
            current = int(match.group(1))
            queries[current] = ""
        elif current is not None and not line.startswith("--"):
            queries[current] += line + "\n"
    return {n: [s.strip() for s in body.split(";") if s.strip()] for n, body in queries.items()}


def normalise(value):
    if value is None:
        return None
    if isinstance(value, (int, float, decimal.Decimal)) and not isinstance(value, bool):
        return f"{decimal.Decimal(value).quantize(decimal.Decimal('0.01'), rounding=decimal.ROUND_HALF_EVEN):f}"
    if isinstance(value, (datetime.date, datetime.datetime)):
        return value.isoformat()
    return str(value).rstrip()


SQLITE_UNITS = {"day": "days", "month": "months", "year": "years"}


def sqlite_text(statement):
    """The spec's text in SQLite's words: date arithmetic folded to literals, extract(year)
    and substring(x FROM a FOR b) as strftime and substr. Dates are ISO text in SQLite."""

    def fold(match):
        day = match.group(1)
        sign, amount, unit = match.group(2), match.group(3), match.group(4).lower()
        modifier = f"{sign}{amount} {SQLITE_UNITS[unit]}"
        (folded,) = sqlite3.connect(":memory:").execute("SELECT date(?, ?)", (day, modifier)).fetchone()
        return f"'{folded}'"

    statement = re.sub(
        r"date '([0-9-]+)'\s*([+-])\s*interval '(\d+)' (day|month|year)", fold, statement, flags=re.I
    )
    statement = re.sub(r"date '([0-9-]+)'", r"'\1'", statement, flags=re.I)
    statement = re.sub(
        r"extract\(year FROM ([a-z_.]+)\)", r"CAST(strftime('%Y', \1) AS INTEGER)", statement, flags=re.I
    )
    statement = re.sub(
        r"substring\(([a-z_.]+) FROM (\d+) FOR (\d+)\)", r"substr(\1, \2, \3)", statement, flags=re.I
    )
    # A derived table's column list (Q13) as aliases in its select list.
    listed = re.search(r"\)\s+AS (\w+)\s*\(([\w,\s]+)\)", statement)
    if listed:
        names = [name.strip() for name in listed.group(2).split(",")]
        start = statement.index("(", statement.upper().index("FROM")) + 1
        select = re.search(r"SELECT\s+(.*?)\s+FROM", statement[start:], flags=re.S)
        items = [item.strip() for item in select.group(1).split(",")]
        aliased = ", ".join(f"{item} AS {name}" for item, name in zip(items, names))
        statement = (
            statement[: start + select.start(1)] + aliased + statement[start + select.end(1) : listed.start()]
            + f") AS {listed.group(1)}" + statement[listed.end() :]
        )
    return statement


def timed(run, statements, repeats):
    """Best wall time of `repeats` runs of the statements, and the last SELECT's rows."""
    best, rows = None, None
    for _ in range(repeats):
        started = time.perf_counter()
        for statement in statements:
            result = run(statement)
            if statement.lstrip().upper().startswith(("SELECT", "WITH")):
                rows = result
        elapsed = time.perf_counter() - started
        best = elapsed if best is None else min(best, elapsed)
    return best, rows


class Deadline:
    """Interrupts a SQLite statement that runs past `seconds` (its progress handler)."""

    def __init__(self, connection, seconds):
        self.seconds = seconds
        self.ends = None
        connection.set_progress_handler(lambda: 1 if self.ends and time.perf_counter() > self.ends else 0, 100_000)

    def start(self):
        self.ends = time.perf_counter() + self.seconds


def load_duckdb(args, schema):
    connection = connect_duckdb(args.threads)
    connection.execute(schema)
    started = time.perf_counter()
    for table in TABLES:
        path = os.path.join(args.data, f"{table}.tbl")
        connection.execute(f"COPY {table} FROM '{path}' (DELIMITER '|', HEADER false, QUOTE '')")
    return connection, time.perf_counter() - started


def load_sqlite(args, schema):
    path = os.path.join(args.work, "tpch.sqlite")
    if os.path.exists(path):
        os.remove(path)
    connection = sqlite3.connect(path)
    if args.cache_mib:
        # The same page cache as Tern's buffer pool (a negative size is in KiB).
        connection.execute(f"PRAGMA cache_size = -{args.cache_mib * 1024}")
    connection.execute("PRAGMA journal_mode = OFF")
    connection.execute("PRAGMA synchronous = OFF")
    connection.executescript(schema)
    started = time.perf_counter()
    for table in TABLES:
        with open(os.path.join(args.data, f"{table}.tbl")) as lines:
            rows = (line.rstrip("\n").split("|") for line in lines)
            first = next(rows)
            marks = ",".join("?" * len(first))
            connection.execute(f"INSERT INTO {table} VALUES ({marks})", first)
            connection.executemany(f"INSERT INTO {table} VALUES ({marks})", rows)
    connection.commit()
    connection.execute("ANALYZE")
    return connection, time.perf_counter() - started


def run(args):
    schema = open(args.schema).read()
    queries = split_queries(open(args.queries).read())
    wanted = sorted(queries) if not args.only else [int(n) for n in args.only.split(",")]
    report = {"duckdb": {}, "sqlite": {}, "load_seconds": {}}
    import duckdb

    report["versions"] = {"duckdb": duckdb.__version__, "sqlite": sqlite3.sqlite_version}
    duck, report["load_seconds"]["duckdb"] = load_duckdb(args, schema)
    print(f"duckdb {duckdb.__version__}: loaded in {report['load_seconds']['duckdb']:.1f} s", flush=True)

    def duck_run(statement):
        cursor = duck.execute(statement)
        return cursor.fetchall() if cursor.description else None

    for n in wanted:
        seconds, rows = timed(duck_run, queries[n], args.repeats)
        answer = [[normalise(value) for value in row] for row in rows or []]
        report["duckdb"][str(n)] = {"seconds": seconds, "rows": answer}
        print(f"  duckdb Q{n}: {seconds * 1000:.1f} ms, {len(answer)} rows", flush=True)
    duck.close()
    if not args.no_sqlite:
        lite, report["load_seconds"]["sqlite"] = load_sqlite(args, schema)
        print(f"sqlite {sqlite3.sqlite_version}: loaded in {report['load_seconds']['sqlite']:.1f} s", flush=True)

        def lite_run(statement):
            cursor = lite.execute(sqlite_text(statement))
            return cursor.fetchall() if cursor.description else None

        deadline = Deadline(lite, args.sqlite_timeout)
        for n in wanted:
            deadline.start()
            try:
                seconds, rows = timed(lite_run, queries[n], args.repeats)
                report["sqlite"][str(n)] = {"seconds": seconds, "row_count": len(rows or []), "timed_out": False}
                print(f"  sqlite Q{n}: {seconds * 1000:.1f} ms, {len(rows or [])} rows", flush=True)
            except sqlite3.OperationalError as error:
                if "interrupted" not in str(error):
                    raise
                # Q15's view may be left behind by the interrupted run.
                lite.execute("DROP VIEW IF EXISTS revenue0")
                seconds = float(args.sqlite_timeout)
                report["sqlite"][str(n)] = {"seconds": seconds, "row_count": 0, "timed_out": True}
                print(f"  sqlite Q{n}: stopped after {seconds:.0f} s", flush=True)
        lite.close()
    with open(args.out, "w") as out:
        json.dump(report, out)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("command", choices=["generate", "run"])
    parser.add_argument("--scale", type=float, required=True)
    parser.add_argument("--data", required=True)
    parser.add_argument("--work", default=".")
    parser.add_argument("--schema")
    parser.add_argument("--queries")
    parser.add_argument("--out")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--only", default="")
    parser.add_argument("--no-sqlite", action="store_true")
    parser.add_argument("--sqlite-timeout", type=float, default=300)
    parser.add_argument("--cache-mib", type=int, default=0)
    args = parser.parse_args()
    if args.command == "generate":
        generate(args)
    else:
        run(args)


if __name__ == "__main__":
    sys.exit(main())
