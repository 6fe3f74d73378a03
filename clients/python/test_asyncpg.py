"""asyncpg against `tern serve`: binary protocol throughout, a connection pool (whose reset
runs pg_advisory_unlock_all), generated keys, joins and aggregates, transactions and
savepoints, a retried serialization failure, COPY (binary), every type, and a date written by
psycopg read back by asyncpg and the other way round."""

import asyncio
import datetime
import decimal
import uuid

import asyncpg
import psycopg
import pytest


def run(coroutine):
    return asyncio.run(coroutine)


def dsn(server):
    return f"postgresql://{server.user}@{server.host}:{server.port}/{server.database}"


async def application(server):
    connection = await asyncpg.connect(dsn(server))
    try:
        await connection.execute(
            """
            CREATE TABLE team (id BIGSERIAL PRIMARY KEY, name TEXT NOT NULL UNIQUE);
            CREATE TABLE member (
                id SERIAL PRIMARY KEY,
                team_id BIGINT NOT NULL REFERENCES team(id),
                name TEXT NOT NULL,
                since DATE NOT NULL,
                rating NUMERIC(4, 1));
            CREATE INDEX member_team ON member (team_id);
            """
        )
        red = await connection.fetchval("INSERT INTO team (name) VALUES ($1) RETURNING id", "red")
        blue = await connection.fetchval("INSERT INTO team (name) VALUES ($1) RETURNING id", "blue")
        assert (red, blue) == (1, 2)
        await connection.executemany(
            "INSERT INTO member (team_id, name, since, rating) VALUES ($1, $2, $3, $4)",
            [
                (red, "ana", datetime.date(2020, 2, 29), decimal.Decimal("7.5")),
                (red, "rui", datetime.date(2021, 1, 1), None),
                (blue, "eva", datetime.date(2019, 12, 31), decimal.Decimal("9.0")),
            ],
        )
        rows = await connection.fetch(
            "SELECT t.name, count(*) AS members, max(m.rating) AS best, min(m.since) AS first"
            " FROM team t JOIN member m ON m.team_id = t.id GROUP BY t.name ORDER BY t.name"
        )
        assert [tuple(row) for row in rows] == [
            ("blue", 1, decimal.Decimal("9.0"), datetime.date(2019, 12, 31)),
            ("red", 2, decimal.Decimal("7.5"), datetime.date(2020, 2, 29)),
        ]
        async with connection.transaction():
            await connection.execute("UPDATE member SET rating = 8 WHERE name = 'rui'")
            with pytest.raises(asyncpg.UniqueViolationError):
                async with connection.transaction():  # a savepoint
                    await connection.execute("INSERT INTO team (name) VALUES ('red')")
        assert await connection.fetchval("SELECT rating FROM member WHERE name = 'rui'") == decimal.Decimal("8.0")
        with pytest.raises(asyncpg.ForeignKeyViolationError):
            await connection.execute("INSERT INTO member (team_id, name, since) VALUES (99, 'x', '2020-01-01')")
        # COPY, which asyncpg does only in binary.
        await connection.copy_records_to_table(
            "member",
            records=[(blue, "zoe", datetime.date(2022, 5, 5), decimal.Decimal("6.5"))],
            columns=["team_id", "name", "since", "rating"],
        )
        assert await connection.fetchval("SELECT count(*) FROM member WHERE team_id = $1", blue) == 2
        # Arrays as parameters and results.
        names = await connection.fetchval("SELECT array_agg(name ORDER BY name) FROM member WHERE id = ANY($1::int[])", [1, 3])
        assert names == ["ana", "eva"]
    finally:
        await connection.close()


def test_application(server):
    run(application(server))


async def retried_conflict(server):
    first = await asyncpg.connect(dsn(server))
    second = await asyncpg.connect(dsn(server))
    try:
        first_transaction, second_transaction = first.transaction(), second.transaction()
        await first_transaction.start()
        await second_transaction.start()
        for connection in (first, second):
            await connection.fetchval("SELECT rating FROM member WHERE name = 'ana'")
            await connection.execute("UPDATE member SET rating = rating + 1 WHERE name = 'ana'")
        await first_transaction.commit()
        with pytest.raises(asyncpg.SerializationError):
            await second_transaction.commit()
        for attempt in range(5):
            try:
                async with second.transaction():
                    await second.execute("UPDATE member SET rating = rating + 1 WHERE name = 'ana'")
                break
            except asyncpg.SerializationError:
                assert attempt < 4
        assert await second.fetchval("SELECT rating FROM member WHERE name = 'ana'") == decimal.Decimal("9.5")
    finally:
        await first.close()
        await second.close()


def test_serialization_failure_is_retried(server):
    run(retried_conflict(server))


async def pooled(server):
    async with asyncpg.create_pool(dsn(server), min_size=2, max_size=4) as pool:

        async def count(team):
            async with pool.acquire() as connection:
                return await connection.fetchval("SELECT count(*) FROM member m JOIN team t ON t.id = m.team_id WHERE t.name = $1", team)

        assert await asyncio.gather(*(count(team) for team in ["red", "blue"] * 4)) == [2, 2] * 4


def test_pool(server):
    run(pooled(server))


TYPES = [
    ("smallint", -32768),
    ("integer", 2_147_483_647),
    ("bigint", -9_223_372_036_854_775_808),
    ("numeric(20,6)", decimal.Decimal("-12345678901234.567891")),
    ("real", 1.5),
    ("double precision", 0.1),
    ("text", "naïve ☃ 'q' \\"),
    ("varchar(10)", "short"),
    ("boolean", True),
    ("date", datetime.date(2024, 2, 29)),
    ("time", datetime.time(23, 59, 59, 999999)),
    ("timestamp", datetime.datetime(1999, 12, 31, 23, 59, 58, 123456)),
    ("timestamptz", datetime.datetime(2021, 6, 1, 10, 30, tzinfo=datetime.timezone.utc)),
    ("interval", datetime.timedelta(days=3, seconds=7200, microseconds=5)),
    ("bytea", bytes(range(256))),
    ("uuid", uuid.UUID("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11")),
    ("jsonb", '{"a": [1, 2]}'),
    ("integer[]", [1, None, 3]),
    ("text[]", ["a", "b c", None]),
]


async def every_type(server):
    connection = await asyncpg.connect(dsn(server))
    try:
        columns = ", ".join(f"c{index} {sql_type}" for index, (sql_type, _) in enumerate(TYPES))
        await connection.execute(f"CREATE TABLE typed (id INT PRIMARY KEY, {columns})")
        placeholders = ", ".join(f"${index + 1}" for index in range(len(TYPES) + 1))
        await connection.execute(f"INSERT INTO typed VALUES ({placeholders})", 1, *(value for _, value in TYPES))
        row = await connection.fetchrow("SELECT * FROM typed WHERE id = 1")
        for index, (sql_type, expected) in enumerate(TYPES):
            assert row[f"c{index}"] == expected, sql_type
        for index, (sql_type, value) in enumerate(TYPES):
            if sql_type in ("jsonb", "real", "double precision"):
                continue
            assert await connection.fetchval(f"SELECT id FROM typed WHERE c{index} = ${1}", value) == 1, sql_type
    finally:
        await connection.close()


def test_every_type_round_trips_in_binary(server):
    run(every_type(server))


WRITTEN = (datetime.date(2020, 2, 29), datetime.datetime(2020, 2, 29, 13, 14, 15, 123456))


async def dates_between_drivers(server):
    with psycopg.connect(server.conninfo, autocommit=True) as connection:
        connection.execute("CREATE TABLE dated (driver TEXT PRIMARY KEY, day DATE, moment TIMESTAMP)")
        connection.execute("INSERT INTO dated VALUES ('psycopg', %s, %s)", WRITTEN)
    connection = await asyncpg.connect(dsn(server))
    try:
        await connection.execute("INSERT INTO dated VALUES ('asyncpg', $1, $2)", *WRITTEN)
        rows = await connection.fetch("SELECT driver, day, moment FROM dated ORDER BY driver")
        assert [tuple(row) for row in rows] == [("asyncpg", *WRITTEN), ("psycopg", *WRITTEN)]
    finally:
        await connection.close()
    with psycopg.connect(server.conninfo) as connection:
        for binary in (False, True):
            cursor = connection.cursor(binary=binary)
            cursor.execute("SELECT driver, day, moment FROM dated WHERE day = %s ORDER BY driver", (WRITTEN[0],))
            assert cursor.fetchall() == [("asyncpg", *WRITTEN), ("psycopg", *WRITTEN)]


def test_a_date_written_by_one_driver_reads_back_equal_by_the_other(server):
    run(dates_between_drivers(server))
