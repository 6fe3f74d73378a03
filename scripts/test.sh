#!/usr/bin/env bash
# Every test: the Rust workspace's (`cargo test --workspace`), then the Python package's
# (bindings/python, built with maturin into a virtual environment under target/, then pytest)
# and the Python client stacks against `tern serve` (clients/python: SQLAlchemy, Alembic,
# pandas, psycopg, asyncpg). The virtual environment is made on first use and gets maturin,
# pytest, pyarrow and the client libraries from PyPI.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo test --workspace

venv="$PWD/target/python-venv"
if [ ! -x "$venv/bin/python" ]; then
    if ! python3 -m venv "$venv" >/dev/null 2>&1; then
        # Debian splits venv out of python3.
        apt-get update -qq && apt-get install -y -qq python3-venv >/dev/null
        python3 -m venv "$venv"
    fi
fi
"$venv/bin/pip" install -q --upgrade maturin pytest pyarrow
# The client stacks clients/python runs against `tern serve` (the debug binary cargo test built).
"$venv/bin/pip" install -q --upgrade "sqlalchemy>=2" "psycopg[binary]>=3.1" "asyncpg>=0.29" "pandas>=2" "alembic>=1.13"
(cd bindings/python && VIRTUAL_ENV="$venv" PYO3_PYTHON="$venv/bin/python" CARGO_TARGET_DIR="$PWD/../../target" \
    "$venv/bin/maturin" develop -q)
"$venv/bin/python" -m pytest -q bindings/python/tests clients/python
