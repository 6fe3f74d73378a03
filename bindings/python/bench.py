"""Insert and point-select rates from Python: `tern` against the standard `sqlite3` module, on the
same rows, in the same run.

    python bindings/python/bench.py [--rows N] [--lookups N] [--sync never|every-commit]

Both sides run the same statements through their DB-API: rows are inserted with `executemany`
in transactions of 1,000 rows, then looked up one at a time by primary key with `execute`.
Durability is matched: `--sync never` (the default) is Tern's SyncPolicy::Never against SQLite's
`journal_mode=WAL, synchronous=OFF`; `--sync every-commit` is Tern's fsync per commit group
against `synchronous=FULL`. The last line is `RESULT python tern/sqlite3 = X`, the geometric mean
of the insert and lookup rate ratios (each ratio is also printed).
"""

import argparse
import json
import math
import os
import random
import sqlite3
import tempfile
import time

import tern


def run(connect, rows: int, lookups: int, seed: int) -> dict:
    conn = connect()
    cursor = conn.cursor()
    cursor.execute("CREATE TABLE kv(k INTEGER PRIMARY KEY, v TEXT NOT NULL)")
    conn.commit()
    value = "x" * 64
    started = time.perf_counter()
    for start in range(0, rows, 1000):
        cursor.executemany("INSERT INTO kv VALUES (?, ?)", [(k, value) for k in range(start, min(rows, start + 1000))])
        conn.commit()
    insert_seconds = time.perf_counter() - started
    keys = random.Random(seed).choices(range(rows), k=lookups)
    started = time.perf_counter()
    for key in keys:
        cursor.execute("SELECT v FROM kv WHERE k = ?", (key,))
        if cursor.fetchone() is None:
            raise AssertionError(f"key {key} missing")
    lookup_seconds = time.perf_counter() - started
    conn.commit()
    conn.close()
    return {"inserts_per_second": rows / insert_seconds, "lookups_per_second": lookups / lookup_seconds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--lookups", type=int, default=100_000)
    parser.add_argument("--sync", choices=["never", "every-commit"], default="never")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", default="bench-results/python.json")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        def tern_connect():
            return tern.connect(os.path.join(work, "bench.tern"), sync=args.sync)

        def sqlite_connect():
            conn = sqlite3.connect(os.path.join(work, "bench.sqlite"))
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=" + ("OFF" if args.sync == "never" else "FULL"))
            return conn

        ours = run(tern_connect, args.rows, args.lookups, args.seed)
        theirs = run(sqlite_connect, args.rows, args.lookups, args.seed)
    insert_ratio = ours["inserts_per_second"] / theirs["inserts_per_second"]
    lookup_ratio = ours["lookups_per_second"] / theirs["lookups_per_second"]
    overall = math.sqrt(insert_ratio * lookup_ratio)
    for name, result in (("tern", ours), ("sqlite3", theirs)):
        print(
            f"{name:<8} {result['inserts_per_second']:>10.0f} inserts/s  {result['lookups_per_second']:>10.0f} lookups/s"
        )
    print(f"durability: {args.sync} on both sides; {args.rows} rows of 64 bytes, {args.lookups} point lookups")
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out, "w") as out:
        json.dump(
            {
                "workload": "python",
                "rows": args.rows,
                "lookups": args.lookups,
                "sync": args.sync,
                "tern": ours,
                "sqlite3": theirs,
                "insert_ratio": insert_ratio,
                "lookup_ratio": lookup_ratio,
                "tern_vs_sqlite3": overall,
            },
            out,
            indent=2,
        )
    print(f"RESULT python inserts tern/sqlite3 = {insert_ratio:.3f}")
    print(f"RESULT python lookups tern/sqlite3 = {lookup_ratio:.3f}")
    print(f"RESULT python tern/sqlite3 = {overall:.3f}")


if __name__ == "__main__":
    main()
