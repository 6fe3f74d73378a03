#!/usr/bin/env bash
# Runs the client-stack applications of clients/ against one `tern serve`: Go with pgx v5
# (clients/go), Java with pgjdbc (clients/jdbc) and Node.js with node-postgres (clients/node).
# Each creates its own schema, runs its checks and writes a row of the shared driver_dates
# table, then reads back every row the others wrote; at the end psql checks that the rows of
# every stack that ran are there and equal; psycopg and asyncpg (from the virtual environment
# scripts/test.sh makes) write and read that table too. A stack whose toolchain (go; java,
# javac and mvn; node and npm) is missing is skipped with a line saying so. Dependencies come
# from the registries (Go module proxy, Maven Central, npm). Fails on any error. The Python
# stacks' own applications run in the pytest suite of scripts/test.sh (clients/python).
#
#   scripts/client-stacks.sh                 # builds the release binary first
#   TERN=path/to/tern scripts/client-stacks.sh
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
if [ -z "${TERN:-}" ]; then
    cargo build --release --bin tern --manifest-path "$root/Cargo.toml" >&2
    TERN="$root/target/release/tern"
fi

work="$(mktemp -d)"
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
"$TERN" serve --data "$work/data" --listen "127.0.0.1:$port" --sync never 2>"$work/server.log" &
server=$!
cleanup() {
    kill -TERM "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
for _ in $(seq 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
    sleep 0.1
done

ran=()
have() { for tool in "$@"; do command -v "$tool" >/dev/null || return 1; done; }

if have go; then
    echo "== Go, pgx v5"
    (cd "$root/clients/go" && go build -o "$work/pgx-app" .)
    "$work/pgx-app" "postgres://tern@127.0.0.1:$port/tern"
    ran+=(pgx)
else
    echo "client-stacks: go is not installed; skipping pgx"
fi

if have java javac mvn; then
    echo "== Java, pgjdbc"
    (cd "$root/clients/jdbc" && mvn -q -B -Dstyle.color=never dependency:copy-dependencies -DoutputDirectory=target/lib >/dev/null \
        && javac -d target/classes -cp "target/lib/*" src/main/java/dev/tern/clients/JdbcApp.java)
    java -cp "$root/clients/jdbc/target/classes:$root/clients/jdbc/target/lib/*" dev.tern.clients.JdbcApp \
        "jdbc:postgresql://127.0.0.1:$port/tern?user=tern"
    ran+=(pgjdbc)
else
    echo "client-stacks: java, javac or mvn is not installed; skipping pgjdbc"
fi

if have node npm; then
    echo "== Node.js, node-postgres"
    (cd "$root/clients/node" && npm ci --no-audit --no-fund --silent)
    node "$root/clients/node/app.js" "postgres://tern@127.0.0.1:$port/tern"
    ran+=(node-postgres)
else
    echo "client-stacks: node or npm is not installed; skipping node-postgres"
fi

# psycopg and asyncpg write and read the same table, from the virtual environment
# scripts/test.sh makes (skipped without it).
python="$root/target/python-venv/bin/python"
if [ -x "$python" ] && "$python" -c 'import psycopg, asyncpg' 2>/dev/null; then
    echo "== Python, psycopg and asyncpg"
    "$python" - "$port" <<'PY'
import asyncio, datetime, sys
import asyncpg, psycopg
port = sys.argv[1]
day = datetime.date(2020, 2, 29)
moment = datetime.datetime(2020, 2, 29, 13, 14, 15, 123456)
instant = moment.replace(tzinfo=datetime.timezone.utc)
with psycopg.connect(f"host=127.0.0.1 port={port} user=tern dbname=tern", autocommit=True) as connection:
    connection.execute("CREATE TABLE IF NOT EXISTS driver_dates (driver TEXT PRIMARY KEY, day DATE, moment TIMESTAMP, instant TIMESTAMPTZ)")
    connection.execute("INSERT INTO driver_dates VALUES ('psycopg', %s, %s, %s)", (day, moment, instant))
async def main():
    connection = await asyncpg.connect(f"postgresql://tern@127.0.0.1:{port}/tern")
    await connection.execute("INSERT INTO driver_dates VALUES ('asyncpg', $1, $2, $3)", day, moment, instant)
    for row in await connection.fetch("SELECT driver, day, moment, instant FROM driver_dates ORDER BY driver"):
        assert (row["day"], row["moment"], row["instant"]) == (day, moment, instant), row
    await connection.close()
asyncio.run(main())
with psycopg.connect(f"host=127.0.0.1 port={port} user=tern dbname=tern") as connection:
    for binary in (False, True):
        for row in connection.cursor(binary=binary).execute("SELECT driver, day, moment, instant FROM driver_dates").fetchall():
            assert row[1:] == (day, moment, instant), row
print("psycopg and asyncpg: all checks passed")
PY
    ran+=(psycopg asyncpg)
else
    echo "client-stacks: no virtual environment with psycopg and asyncpg (scripts/test.sh makes it); skipping them"
fi

# Every stack's date row, read back here through psql (text) as well.
if [ "${#ran[@]}" -gt 0 ] && have psql; then
    expected=""
    for driver in $(printf '%s\n' "${ran[@]}" | sort); do
        expected+="$driver|2020-02-29|2020-02-29 13:14:15.123456|2020-02-29 13:14:15.123456+00"$'\n'
    done
    got="$(PGTZ=UTC psql -X -A -t -h 127.0.0.1 -p "$port" -U tern tern \
        -c "SELECT driver, day, moment, instant FROM driver_dates ORDER BY driver")"$'\n'
    if [ "$got" != "$expected" ]; then
        echo "client-stacks: driver_dates differs" >&2
        diff <(echo "$expected") <(echo "$got") >&2 || true
        exit 1
    fi
fi
echo "client stacks: ${#ran[@]} passed (${ran[*]:-none})"
