#!/usr/bin/env bash
# Runs PostgreSQL's own clients against `tern serve`: psql (simple queries, errors, \copy in and
# out, variables, TLS, the catalog commands \d, \dt, \d TABLE, \di, \dv, \dn, \du, \l), psycopg 3
# (scripts/psycopg-check.py, installed from PyPI into a temporary virtual environment) and a
# short pgbench (initialization with COPY and ALTER TABLE ADD PRIMARY KEY, then the TPC-B-like
# script with retries). Fails on any error.
#
#   scripts/pg-clients.sh            # builds the release binary first
#   TERN=path/to/tern scripts/pg-clients.sh
#
# Needs psql and pgbench (Debian: apt-get install -y postgresql-client-15).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
for tool in psql pgbench; do
    command -v "$tool" >/dev/null || { echo "pg-clients: $tool is not installed; skipping" >&2; exit 0; }
done
if [ -z "${TERN:-}" ]; then
    cargo build --release --bin tern --manifest-path "$root/Cargo.toml" >&2
    TERN="$root/target/release/tern"
fi

work="$(mktemp -d)"
# A free loopback port, and waiting (5 s at most) until a server accepts there.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_ready() {
    for _ in $(seq 50); do
        pg_isready -q -h 127.0.0.1 -p "$1" 2>/dev/null && return 0
        sleep 0.1
    done
    echo "pg-clients: no server answered on port $1" >&2
    cat "$work"/*.log >&2 2>/dev/null || true
    return 1
}
port="$(free_port)"
# TLS for clients that ask, when openssl can make a certificate.
tls=()
if command -v openssl >/dev/null; then
    openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost \
        -keyout "$work/server.key" -out "$work/server.crt" 2>/dev/null
    tls=(--tls-cert "$work/server.crt" --tls-key "$work/server.key")
fi
"$TERN" serve --data "$work/data" --listen "127.0.0.1:$port" --sync never "${tls[@]}" 2>"$work/server.log" &
server=$!
cleanup() {
    kill -TERM "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
wait_ready "$port"

export PGHOST=127.0.0.1 PGPORT="$port" PGUSER=tern PGDATABASE=tern
psql_run() { psql -X -v ON_ERROR_STOP=1 -q "$@"; }

echo "== psql"
psql_run <<SQL
CREATE TABLE city(id INT PRIMARY KEY, name TEXT NOT NULL, population BIGINT, founded DATE);
INSERT INTO city VALUES (1, 'Lisbon', 545000, '1147-10-25'), (2, 'Porto', 232000, NULL);
\set want 1
SELECT name, population FROM city WHERE id = :want;
SELECT version(), current_database(), current_setting('server_version');
SHOW server_version;
SET application_name = 'pg-clients';
BEGIN;
UPDATE city SET population = population + 1 WHERE id = 2;
COMMIT;
\copy city TO '$work/city.csv' WITH (FORMAT csv, HEADER)
CREATE TABLE city_copy(id INT PRIMARY KEY, name TEXT NOT NULL, population BIGINT, founded DATE);
\copy city_copy FROM '$work/city.csv' WITH (FORMAT csv, HEADER)
SELECT count(*) AS copied FROM city_copy;
SQL

echo "== psql describes the schema (pg_catalog)"
psql_run -c "CREATE INDEX city_name ON city(name)" -c "CREATE VIEW big_city AS SELECT name FROM city WHERE population > 300000"
for command in '\d' '\dt' '\d city' '\d+ city' '\di' '\d city_name' '\dv' '\d big_city' '\dn' '\du' '\l'; do
    # psql reports a failed catalog query on standard error; any such line is a failure.
    psql -X -v ON_ERROR_STOP=1 -c "$command" >"$work/describe.txt" 2>"$work/describe.err" || { cat "$work/describe.err" >&2; exit 1; }
    if [ -s "$work/describe.err" ]; then
        echo "psql $command:" >&2
        cat "$work/describe.err" >&2
        exit 1
    fi
done
psql -X -c '\d city' >"$work/describe.txt"
for expected in 'Table "public.city"' '"city_pkey" PRIMARY KEY, btree (id)' '"city_name" btree (name)' 'not null'; do
    grep -qF "$expected" "$work/describe.txt" || { echo "\\d city lacks: $expected" >&2; cat "$work/describe.txt" >&2; exit 1; }
done
psql -X -At -c '\dt' | grep -q '^public|city|table|' || { echo "\\dt does not list city" >&2; exit 1; }
psql -X -At -c '\l' | grep -q '^tern|' || { echo "\\l does not list the database" >&2; exit 1; }
missing="$(psql -X -c '\d no_such_table' 2>&1 || true)"
grep -q 'Did not find any relation named "no_such_table"' <<<"$missing" || { echo "$missing" >&2; exit 1; }

echo "== psql describes a schema of 1,000 tables"
# Each table has a SERIAL key, an index and a foreign key to the one before it. Each command
# must succeed and print what PostgreSQL 15 prints (the key lines checked here); the time of
# each is printed, not checked.
python3 - >"$work/schema1000.sql" <<'PY'
print("BEGIN;")
for i in range(1000):
    parent = f", parent_id INT REFERENCES s{i - 1}(id)" if i else ""
    print(f"CREATE TABLE s{i} (id SERIAL PRIMARY KEY, name TEXT NOT NULL, created DATE{parent});")
    print(f"CREATE INDEX s{i}_name ON s{i} (name);")
print("CREATE VIEW s0_names AS SELECT id, name FROM s0;")
print("COMMIT;")
PY
psql_run -f "$work/schema1000.sql"
describe_1000() {
    local command="$1"
    shift
    local started ended
    started=$(date +%s%N)
    psql -X -v ON_ERROR_STOP=1 -c "$command" >"$work/describe.txt" 2>"$work/describe.err" || { cat "$work/describe.err" >&2; exit 1; }
    ended=$(date +%s%N)
    if [ -s "$work/describe.err" ]; then
        echo "psql $command:" >&2
        cat "$work/describe.err" >&2
        exit 1
    fi
    for expected in "$@"; do
        grep -qF -- "$expected" "$work/describe.txt" || { echo "psql $command lacks: $expected" >&2; cat "$work/describe.txt" >&2; exit 1; }
    done
    printf '  %-14s %5d ms, %d lines\n' "$command" $(( (ended - started) / 1000000 )) "$(wc -l <"$work/describe.txt")"
}
describe_1000 '\d' ' public | s999_id_seq | sequence | tern'
describe_1000 '\d s500' 'Table "public.s500"' "nextval('s500_id_seq'::regclass)" '"s500_pkey" PRIMARY KEY, btree (id)' \
    '"s500_name" btree (name)' '"s500_parent_id_fkey" FOREIGN KEY (parent_id) REFERENCES s499(id)' \
    'TABLE "s501" CONSTRAINT "s501_parent_id_fkey" FOREIGN KEY (parent_id) REFERENCES s500(id)'
describe_1000 '\d+ s500' 'Access method: heap' '| Storage  | Compression |'
describe_1000 '\dt+' ' public | s999      | table | tern  | permanent   | heap          |'
describe_1000 '\di+' ' public | s500_name      | index | tern  | s500      | permanent   | btree '
describe_1000 '\dv+' 's0_names'
describe_1000 '\sv s0_names' 'CREATE OR REPLACE VIEW public.s0_names AS'
describe_1000 '\df' 'List of functions'
describe_1000 '\dx' 'List of installed extensions'
describe_1000 '\l+' '| UTF8     |'
describe_1000 '\dconfig' 'List of non-default configuration parameters'

if [ ${#tls[@]} -gt 0 ]; then
    echo "== psql over TLS"
    PGSSLMODE=require psql -X -v ON_ERROR_STOP=1 -q -c "SELECT count(*) AS over_tls FROM city"
fi

if [ ${#tls[@]} -gt 0 ]; then
    echo "== --tls required refuses plaintext"
    strict_port="$(free_port)"
    "$TERN" serve --data "$work/strict" --listen "127.0.0.1:$strict_port" --sync never "${tls[@]}" --tls required 2>"$work/strict.log" &
    strict=$!
    wait_ready "$strict_port"
    if PGSSLMODE=disable psql -X -p "$strict_port" -c "SELECT 1" >/dev/null 2>"$work/strict.err"; then
        echo "a plaintext client was served with --tls required" >&2
        kill -TERM "$strict"
        exit 1
    fi
    PGSSLMODE=require psql -X -p "$strict_port" -At -c "SELECT 'tls ok'" | grep -q 'tls ok'
    kill -TERM "$strict"
    wait "$strict" || true
fi

echo "== psql reports errors with their SQLSTATE"
if psql -X -v ON_ERROR_STOP=1 -q -c "SELECT * FROM no_such_table" 2>"$work/error.txt"; then
    echo "expected an error" >&2
    exit 1
fi
grep -q 'no such table' "$work/error.txt"

echo "== psycopg"
# psycopg 3 from PyPI in a throwaway virtual environment (skipped if Python or PyPI is missing).
if python3 -m venv "$work/venv" >/dev/null 2>&1 && "$work/venv/bin/pip" install -q "psycopg[binary]" >/dev/null 2>&1; then
    "$work/venv/bin/python" "$root/scripts/psycopg-check.py" 127.0.0.1 "$port"
else
    echo "psycopg could not be installed; skipping"
fi

echo "== pgbench"
pgbench -q -i -s 1 >/dev/null 2>"$work/init.txt" || { cat "$work/init.txt" >&2; exit 1; }
pgbench -c 4 -j 2 -T 5 --max-tries 10 | tee "$work/run.txt"
grep -q "tps = " "$work/run.txt"
if grep -q "aborted" "$work/run.txt"; then
    echo "a pgbench client aborted" >&2
    exit 1
fi
echo "pg-clients: all passed"
