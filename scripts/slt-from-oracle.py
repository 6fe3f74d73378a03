#!/usr/bin/env python3
"""Writes a sqllogictest script whose expected results come from an oracle: PostgreSQL (one
session through psycopg, values in PostgreSQL's text form) or SQLite (python's sqlite3).

    scripts/slt-from-oracle.py postgres|sqlite DATABASE INPUT OUTPUT.slt

INPUT holds one statement per line; `--` lines become `#` comments, and `!` lines are copied
as they are to the head of the script (e.g. `!statement ok` and `!SET tern.dialect =
'postgres'`, which the oracle does not run). A statement the oracle refuses becomes `statement
error`; one that returns rows becomes a `query` with type letters from the values (`t`/`f` are
written as 1/0, as Tern's sessions return booleans). For PostgreSQL, a scratch server must
listen on /tmp/pgslt port 54329 (initdb -A trust; pg_ctl -o '-p 54329 -k /tmp/pgslt -c
TimeZone=UTC' start); DATABASE is dropped and created. The postgres_*.slt and triggers.slt
scripts under crates/sql/tests/slt were written this way from crates/server/tests/pg/*.sql."""
import re
import sqlite3
import subprocess
import sys

INTEGER = re.compile(r"^-?\d+$")
REAL = re.compile(r"^-?(\d+\.\d*|\.\d+)(e[-+]?\d+)?$", re.I)


class Postgres:
    """One session (currval and SET are per session), results in PostgreSQL's text form."""

    def __init__(self, database):
        import psycopg
        admin = psycopg.connect(host="/tmp/pgslt", port=54329, user="postgres", dbname="postgres", autocommit=True)
        admin.execute(f"DROP DATABASE IF EXISTS {database}")
        admin.execute(f"CREATE DATABASE {database}")
        admin.close()
        self.connection = psycopg.connect(host="/tmp/pgslt", port=54329, user="postgres", dbname=database, autocommit=True)
        # Every value as PostgreSQL's text output.
        from psycopg.adapt import Loader

        class Text(Loader):
            def load(self, data):
                return bytes(data).decode()

        for oid in range(0, 5000):
            try:
                self.connection.adapters.register_loader(oid, Text)
            except Exception:  # noqa: BLE001
                pass

    def run(self, sql):
        try:
            cursor = self.connection.execute(sql)
            rows = cursor.fetchall() if cursor.description else []
        except Exception as error:  # noqa: BLE001
            return None, str(error)
        return [["NULL" if value is None else value for value in row] for row in rows], None


class Sqlite:
    def __init__(self, _database):
        self.connection = sqlite3.connect(":memory:", isolation_level=None)

    def run(self, sql):
        try:
            cursor = self.connection.execute(sql)
            rows = cursor.fetchall()
        except Exception as error:  # noqa: BLE001
            return None, str(error)
        def text(value):
            if value is None:
                return "NULL"
            if isinstance(value, float):
                return repr(value)
            return str(value)
        return [[text(value) for value in row] for row in rows], None


def letter(value):
    if value in ("t", "f"):
        return "I"
    if INTEGER.match(value):
        return "I"
    if REAL.match(value):
        return "R"
    return "T"


def render(value, kind):
    if value == "NULL":
        return "NULL"
    if kind == "I" and value in ("t", "f"):
        return "1" if value == "t" else "0"
    if kind == "R":
        return "%.3f" % float(value)
    if value == "":
        return "(empty)"
    return value


def main(oracle_name, database, source, target):
    oracle = Postgres(database) if oracle_name == "postgres" else Sqlite(database)
    out = []
    header = []
    for line in open(source):
        line = line.rstrip("\n")
        if not line.strip():
            continue
        if line.startswith("--"):
            out.append("# " + line[2:].strip())
            continue
        if line.startswith("!"):
            # A record for Tern only (no oracle run), copied as written after the `!`.
            header.append(line[1:])
            continue
        sql = line.strip().rstrip(";")
        rows, error = oracle.run(sql)
        is_query = (re.match(r"^\s*(SELECT|WITH|VALUES|TABLE)\b", sql, re.I) and not re.search(r"\bINTO\s+\w+\s+FROM\b", sql, re.I)) or re.search(r"\bRETURNING\b", sql, re.I)
        if error is not None:
            out.append(f"statement error\n{sql}\n")
            continue
        if not is_query:
            out.append(f"statement ok\n{sql}\n")
            continue
        width = len(rows[0]) if rows else len(sql.split(","))
        kinds = []
        for column in range(width):
            values = [row[column] for row in rows if column < len(row) and row[column] != "NULL"]
            letters = {letter(value) for value in values}
            if not letters:
                kind = "T"
            elif len(letters) == 1:
                kind = letters.pop()
            elif letters <= {"I", "R"}:
                kind = "R"
            else:
                kind = "T"
            kinds.append(kind)
        if not rows:
            # Unknown width: count output columns from the oracle's header instead.
            kinds = ["T"] * max(1, width)
        sort = "" if re.search(r"\bORDER\s+BY\b", sql, re.I) or len(rows) <= 1 else " rowsort"
        lines = [render(value, kinds[index]) for row in rows for index, value in enumerate(row)]
        out.append(f"query {''.join(kinds)}{sort}\n{sql}\n----\n" + "\n".join(lines) + ("\n" if lines else ""))
    with open(target, "w") as file:
        file.write("\n".join(header) + ("\n\n" if header else "") + "\n".join(out))


if __name__ == "__main__":
    main(*sys.argv[1:])
