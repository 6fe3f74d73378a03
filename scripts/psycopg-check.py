"""psycopg 3 against `tern serve`: connect, parameters of every common type in text and binary,
transactions, COPY both ways, errors mapped to psycopg's exception classes, and the catalog
lookups psycopg makes (TypeInfo). Run by scripts/pg-clients.sh; exits non-zero on any failure.

    python3 scripts/psycopg-check.py HOST PORT
"""

import datetime
import decimal
import sys

import psycopg
from psycopg import errors
from psycopg.types import TypeInfo


def main(host: str, port: int) -> None:
    conninfo = f"host={host} port={port} user=tern dbname=tern"
    with psycopg.connect(conninfo) as conn:
        assert conn.info.server_version >= 150000, conn.info.server_version
        conn.execute(
            "CREATE TABLE py_items(id INT PRIMARY KEY, name TEXT NOT NULL, price NUMERIC(10,2),"
            " born DATE, seen TIMESTAMP, ok BOOLEAN, ratio DOUBLE PRECISION, data BYTEA, big BIGINT)"
        )
        row = (
            1,
            "Ada Lovelace",
            decimal.Decimal("9.50"),
            datetime.date(1815, 12, 10),
            datetime.datetime(2026, 11, 25, 12, 30, 15),
            True,
            0.25,
            b"\x00\x01\xff",
            2**40,
        )
        conn.execute("INSERT INTO py_items VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)", row)
        conn.commit()
        for binary in (False, True):
            with conn.cursor(binary=binary) as cursor:
                cursor.execute("SELECT * FROM py_items WHERE id = %s", (1,))
                fetched = cursor.fetchone()
                assert fetched == row, (binary, fetched)
                assert [column.name for column in cursor.description][:3] == ["id", "name", "price"]

        # Transactions: a rollback leaves nothing.
        with conn.transaction():
            conn.execute("INSERT INTO py_items(id, name) VALUES (2, 'kept')")
        try:
            with conn.transaction():
                conn.execute("INSERT INTO py_items(id, name) VALUES (3, 'gone')")
                raise RuntimeError("roll back")
        except RuntimeError:
            pass
        ids = [r[0] for r in conn.execute("SELECT id FROM py_items ORDER BY id")]
        assert ids == [1, 2], ids

        # COPY in and out.
        with conn.cursor() as cursor:
            with cursor.copy("COPY py_items (id, name) FROM STDIN") as copy:
                for number in range(10, 20):
                    copy.write_row((number, f"copied {number}"))
        conn.commit()
        with conn.cursor() as cursor:
            with cursor.copy("COPY (SELECT id, name FROM py_items WHERE id >= 10 ORDER BY id) TO STDOUT") as copy:
                copied = [tuple(r) for r in copy.rows()]
        assert len(copied) == 10 and copied[0] == ("10", "copied 10"), copied[:2]

        # Errors arrive as psycopg's classes for their SQLSTATEs.
        for sql, kind in [
            ("SELECT * FROM no_such_table", errors.UndefinedTable),
            ("INSERT INTO py_items(id, name) VALUES (1, 'again')", errors.UniqueViolation),
            ("SELECT 1 +", errors.SyntaxError),
        ]:
            try:
                conn.execute(sql)
            except kind:
                conn.rollback()
            else:
                raise AssertionError(f"{sql} did not raise {kind.__name__}")

        # What psycopg asks the catalog for a type.
        info = TypeInfo.fetch(conn, "int4")
        assert info is not None and info.oid == 23, info
        tables = [r[0] for r in conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'")]
        assert "py_items" in tables, tables
    print("psycopg: all passed")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
