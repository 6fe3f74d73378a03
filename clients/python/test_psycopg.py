"""psycopg 3 against `tern serve`: a small order-book application (keys, foreign keys, indexes,
generated keys, joins, aggregates, transactions, savepoints, a retried serialization failure,
COPY), and every type round-tripped in text and in binary."""

import datetime
import decimal
import uuid

import psycopg
import pytest
from psycopg.types.json import Jsonb


@pytest.fixture(scope="module")
def connection(server):
    with psycopg.connect(server.conninfo, autocommit=True) as connection:
        connection.execute(
            "CREATE TABLE customer (id SERIAL PRIMARY KEY, email TEXT NOT NULL UNIQUE, joined DATE NOT NULL)"
        )
        connection.execute(
            "CREATE TABLE purchase (id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
            " customer_id INTEGER NOT NULL REFERENCES customer(id) ON DELETE CASCADE,"
            " amount NUMERIC(10, 2) NOT NULL CHECK (amount > 0), at TIMESTAMPTZ NOT NULL DEFAULT now())"
        )
        connection.execute("CREATE INDEX purchase_by_customer ON purchase (customer_id, at)")
        yield connection


def test_generated_keys_joins_and_aggregates(connection):
    ids = []
    for email, joined in [("ana@example.com", datetime.date(2020, 2, 29)), ("rui@example.com", datetime.date(2021, 1, 5))]:
        row = connection.execute(
            "INSERT INTO customer (email, joined) VALUES (%s, %s) RETURNING id", (email, joined)
        ).fetchone()
        ids.append(row[0])
    assert ids == [1, 2]
    with connection.cursor() as cursor:
        cursor.executemany(
            "INSERT INTO purchase (customer_id, amount) VALUES (%s, %s)",
            [(ids[0], decimal.Decimal("10.50")), (ids[0], decimal.Decimal("4.25")), (ids[1], decimal.Decimal("99.99"))],
        )
    rows = connection.execute(
        "SELECT c.email, count(p.id), sum(p.amount) FROM customer c JOIN purchase p ON p.customer_id = c.id"
        " GROUP BY c.email ORDER BY sum(p.amount) DESC"
    ).fetchall()
    assert rows == [("rui@example.com", 1, decimal.Decimal("99.99")), ("ana@example.com", 2, decimal.Decimal("14.75"))]
    # A date filter with the driver's own date parameter finds the row.
    assert connection.execute("SELECT email FROM customer WHERE joined = %s", (datetime.date(2020, 2, 29),)).fetchall() == [
        ("ana@example.com",)
    ]


def test_constraint_errors_carry_sqlstates(connection):
    with pytest.raises(psycopg.errors.UniqueViolation):
        connection.execute("INSERT INTO customer (email, joined) VALUES ('ana@example.com', '2022-01-01')")
    with pytest.raises(psycopg.errors.ForeignKeyViolation):
        connection.execute("INSERT INTO purchase (customer_id, amount) VALUES (999, 1)")
    with pytest.raises(psycopg.errors.CheckViolation):
        connection.execute("INSERT INTO purchase (customer_id, amount) VALUES (1, -1)")
    with pytest.raises(psycopg.errors.InvalidDatetimeFormat):
        connection.execute("INSERT INTO customer (email, joined) VALUES ('x@example.com', 'not a date')")
    with pytest.raises(psycopg.errors.GeneratedAlways):
        connection.execute("INSERT INTO purchase (id, customer_id, amount) VALUES (7, 1, 1)")


def test_transactions_and_savepoints(server):
    with psycopg.connect(server.conninfo) as connection:
        with connection.transaction():
            connection.execute("INSERT INTO customer (email, joined) VALUES ('eva@example.com', '2023-03-03')")
            with pytest.raises(psycopg.errors.UniqueViolation):
                with connection.transaction():  # a savepoint
                    connection.execute("INSERT INTO customer (email, joined) VALUES ('eva@example.com', '2023-03-03')")
            connection.execute("UPDATE customer SET joined = '2023-04-04' WHERE email = 'eva@example.com'")
        assert connection.execute("SELECT joined FROM customer WHERE email = 'eva@example.com'").fetchone() == (
            datetime.date(2023, 4, 4),
        )
        connection.execute("DELETE FROM customer WHERE email = 'eva@example.com'")
        connection.rollback()
        assert connection.execute("SELECT count(*) FROM customer WHERE email = 'eva@example.com'").fetchone() == (1,)


def test_serialization_failure_is_retried(server):
    first = psycopg.connect(server.conninfo)
    second = psycopg.connect(server.conninfo)
    try:
        for connection in (first, second):
            (total,) = connection.execute("SELECT sum(amount) FROM purchase WHERE customer_id = 1").fetchone()
            connection.execute("UPDATE purchase SET amount = amount + 1 WHERE customer_id = 1")
        first.commit()
        with pytest.raises(psycopg.errors.SerializationFailure):
            second.commit()
        for attempt in range(5):
            try:
                with second.transaction():
                    second.execute("UPDATE purchase SET amount = amount + 1 WHERE customer_id = 1")
                break
            except psycopg.errors.SerializationFailure:
                assert attempt < 4
        assert second.execute("SELECT sum(amount) FROM purchase WHERE customer_id = 1").fetchone() == (
            decimal.Decimal("18.75"),
        )
    finally:
        first.close()
        second.close()


def test_copy_in_and_out(connection):
    connection.execute("CREATE TABLE reading (sensor INT, at TIMESTAMP, value DOUBLE PRECISION)")
    readings = [(1, datetime.datetime(2024, 1, 1) + datetime.timedelta(seconds=i), i * 0.5) for i in range(100)]
    with connection.cursor() as cursor:
        with cursor.copy("COPY reading (sensor, at, value) FROM STDIN") as copy:
            for reading in readings:
                copy.write_row(reading)
        with cursor.copy("COPY reading FROM STDIN (FORMAT BINARY)") as copy:
            copy.set_types(["int4", "timestamp", "float8"])
            copy.write_row((2, datetime.datetime(2024, 1, 2), 7.25))
        assert cursor.execute("SELECT count(*), sum(value) FROM reading").fetchone() == (101, 2482.25)
        with cursor.copy("COPY (SELECT * FROM reading WHERE sensor = 2) TO STDOUT (FORMAT BINARY)") as copy:
            copy.set_types(["int4", "timestamp", "float8"])
            assert list(copy.rows()) == [(2, datetime.datetime(2024, 1, 2), 7.25)]
        # A column of an enum type (named with its schema, as pg_dump writes it) takes COPY's text.
        cursor.execute("CREATE TYPE size AS ENUM ('small', 'large')")
        cursor.execute("CREATE TABLE sized (id INT PRIMARY KEY, s public.size)")
        with cursor.copy("COPY sized FROM STDIN") as copy:
            copy.write_row((1, "large"))
            copy.write_row((2, None))
        assert cursor.execute("SELECT id, s::text FROM sized ORDER BY id").fetchall() == [(1, "large"), (2, None)]


SAMPLES = [
    ("smallint", -32768),
    ("integer", 2_147_483_647),
    ("bigint", -9_223_372_036_854_775_808),
    ("numeric(20,6)", decimal.Decimal("-12345678901234.567891")),
    ("real", 1.5),
    ("double precision", 0.1),
    ("text", "naïve ☃ 'quoted' \\ back"),
    ("varchar(10)", "short"),
    ("boolean", False),
    ("date", datetime.date(2024, 2, 29)),
    ("time", datetime.time(23, 59, 59, 999999)),
    ("timestamp", datetime.datetime(1999, 12, 31, 23, 59, 58, 123456)),
    ("timestamptz", datetime.datetime(2021, 6, 1, 10, 30, tzinfo=datetime.timezone.utc)),
    ("interval", datetime.timedelta(days=-3, seconds=7200, microseconds=5)),
    ("bytea", bytes(range(256))),
    ("uuid", uuid.UUID("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11")),
    ("jsonb", {"a": [1, 2, {"b": None}], "c": "d"}),
    ("integer[]", [1, None, 3]),
    ("text[]", ["a", "b c", "", None, 'q"uote']),
]


@pytest.mark.parametrize("binary", [False, True], ids=["text", "binary"])
def test_every_type_round_trips(connection, binary):
    table = f"types_{'binary' if binary else 'text'}"
    columns = ", ".join(f"c{index} {sql_type}" for index, (sql_type, _) in enumerate(SAMPLES))
    connection.execute(f"CREATE TABLE {table} (id INT PRIMARY KEY, {columns})")
    values = [Jsonb(value) if sql_type == "jsonb" else value for sql_type, value in SAMPLES]
    placeholders = ", ".join(["%s"] * (len(SAMPLES) + 1))
    with connection.cursor(binary=binary) as cursor:
        cursor.execute(f"INSERT INTO {table} VALUES ({placeholders})", [1, *values])
        cursor.execute(f"INSERT INTO {table} (id) VALUES (2)")
        row = cursor.execute(f"SELECT * FROM {table} WHERE id = 1").fetchone()
        for (sql_type, expected), got in zip(SAMPLES, row[1:]):
            assert got == expected, sql_type
        assert cursor.execute(f"SELECT * FROM {table} WHERE id = 2").fetchone() == (2,) + (None,) * len(SAMPLES)
        # Each value finds its row again as a parameter.
        for index, (sql_type, value) in enumerate(SAMPLES):
            if sql_type in ("jsonb", "real", "double precision"):
                continue
            found = cursor.execute(f"SELECT id FROM {table} WHERE c{index} = %s", (value,)).fetchall()
            assert found == [(1,)], sql_type


def test_catalog_type_lookup(connection):
    # psycopg's TypeInfo reads pg_type for types it does not know, as applications do for enums.
    connection.execute("CREATE TYPE colour AS ENUM ('red', 'green')")
    info = psycopg.types.enum.EnumInfo.fetch(connection, "colour")
    assert info.labels == ["red", "green"]
    psycopg.types.enum.register_enum(info, connection)
    assert connection.execute("SELECT 'green'::colour").fetchone()[0].name == "green"
