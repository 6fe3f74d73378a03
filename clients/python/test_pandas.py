"""pandas `to_sql` and `read_sql` against `tern serve` (through SQLAlchemy and psycopg)."""

import datetime

import pandas as pd
from sqlalchemy import create_engine, inspect


def test_to_sql_and_read_sql_round_trip(server):
    engine = create_engine(server.url("postgresql+psycopg"))
    frame = pd.DataFrame(
        {
            "city": ["Lisbon", "Porto", "Braga"],
            "population": [545_000, 232_000, 193_000],
            "area": [100.05, 41.42, 183.4],
            "coastal": [True, True, False],
            "founded": pd.to_datetime(["1147-10-25", "1123-01-01", "1112-06-01"], format="%Y-%m-%d").date,
            "measured": pd.to_datetime(["2021-01-01 10:00:00", "2021-06-30 23:59:59", "2022-03-15 08:30:00"]),
        }
    )
    # The count is the driver's rowcount, which is -1 for batched inserts (as with PostgreSQL).
    assert frame.to_sql("cities", engine, index=False) in (3, -1)
    # Appending to the table pandas made, with its own insert.
    more = frame.head(1).assign(city="Faro", population=64_000)
    more.to_sql("cities", engine, index=False, if_exists="append", method="multi")
    assert "cities" in inspect(engine).get_table_names()

    back = pd.read_sql("SELECT * FROM cities ORDER BY population DESC", engine)
    assert list(back.columns) == list(frame.columns)
    assert back["city"].tolist() == ["Lisbon", "Porto", "Braga", "Faro"]
    assert back["population"].tolist() == [545_000, 232_000, 193_000, 64_000]
    assert back["coastal"].tolist() == [True, True, False, True]
    assert back["founded"].tolist()[0] == datetime.date(1147, 10, 25)
    assert back["measured"].tolist()[1] == pd.Timestamp("2021-06-30 23:59:59")
    assert abs(back["area"].sum() - (100.05 * 2 + 41.42 + 183.4)) < 1e-9

    totals = pd.read_sql_query(
        "SELECT coastal, count(*) AS n, sum(population) AS people FROM cities GROUP BY coastal ORDER BY coastal",
        engine,
    )
    assert totals.to_dict("records") == [
        {"coastal": False, "n": 1, "people": 193_000},
        {"coastal": True, "n": 3, "people": 841_000},
    ]
    # Replacing drops and recreates the table.
    frame.head(2).to_sql("cities", engine, index=False, if_exists="replace")
    assert pd.read_sql("SELECT count(*) AS n FROM cities", engine)["n"].tolist() == [2]
    engine.dispose()
