"""Tern for Python: a DB-API 2.0 (PEP 249) interface to Tern's embedded SQL engine.

    import tern
    with tern.connect("app.tern") as conn:          # or tern.connect(":memory:")
        conn.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT)")
        conn.execute("INSERT INTO t(name) VALUES (?)", ("ada",))
    print(conn.execute("SELECT id, name FROM t").fetchall())

Statements run with the GIL released. Transactions follow PEP 249: the first statement opens
one, `commit()` and `rollback()` end it (`autocommit = True` runs each statement on its own).
Tern's transactions are serializable and optimistic: a commit that conflicts with a concurrent
one raises `OperationalError` with `sqlstate == "40001"`; run the transaction again.
"""

from __future__ import annotations

import datetime
import os
import threading
import weakref
from typing import Any, Iterable, Iterator, Mapping, Optional, Sequence

from tern import _tern

apilevel = "2.0"
threadsafety = 2  # threads may share the module and connections (calls take turns), not cursors
paramstyle = "qmark"  # also "named" (:name with a mapping) and "numeric" ($1, ?1)

__all__ = [
    "connect",
    "Connection",
    "Cursor",
    "Warning",
    "Error",
    "InterfaceError",
    "DatabaseError",
    "DataError",
    "OperationalError",
    "IntegrityError",
    "InternalError",
    "ProgrammingError",
    "NotSupportedError",
    "Binary",
    "Date",
    "Time",
    "Timestamp",
    "DateFromTicks",
    "TimeFromTicks",
    "TimestampFromTicks",
    "STRING",
    "BINARY",
    "NUMBER",
    "DATETIME",
    "ROWID",
]


# ---- exceptions (PEP 249), each carrying the engine's SQLSTATE --------------------------------


class Warning(Exception):  # noqa: A001 - the name PEP 249 prescribes
    pass


class Error(Exception):
    def __init__(self, message: str = "", sqlstate: Optional[str] = None):
        super().__init__(message)
        self.sqlstate = sqlstate


class InterfaceError(Error):
    pass


class DatabaseError(Error):
    pass


class DataError(DatabaseError):
    pass


class OperationalError(DatabaseError):
    pass


class IntegrityError(DatabaseError):
    pass


class InternalError(DatabaseError):
    pass


class ProgrammingError(DatabaseError):
    pass


class NotSupportedError(DatabaseError):
    pass


# SQLSTATE classes (the first two characters) and the exception each becomes.
_CLASSES = {
    "22": DataError,
    "23": IntegrityError,
    "0A": NotSupportedError,
    "42": ProgrammingError,
    "2B": ProgrammingError,
    "34": ProgrammingError,
    "3B": ProgrammingError,
    "25": ProgrammingError,
    "40": OperationalError,
    "08": OperationalError,
    "53": OperationalError,
    "54": OperationalError,
    "57": OperationalError,
    "58": OperationalError,
    "XX": InternalError,
}


def _error(engine_error: _tern.EngineError) -> Error:
    sqlstate, message = engine_error.args
    kind = _CLASSES.get(sqlstate[:2], DatabaseError)
    return kind(f"{message} (SQLSTATE {sqlstate})", sqlstate)


# ---- type objects and constructors (PEP 249) --------------------------------------------------


class _TypeSet(frozenset):
    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            return other.split("(")[0].strip().upper() in self
        return super().__eq__(other)

    def __hash__(self) -> int:
        return super().__hash__()


STRING = _TypeSet({"TEXT", "VARCHAR", "CHAR", "CHARACTER", "CLOB", "CHARACTER VARYING", "NAME"})
BINARY = _TypeSet({"BLOB", "BYTEA"})
NUMBER = _TypeSet(
    {"INTEGER", "INT", "BIGINT", "SMALLINT", "REAL", "DOUBLE", "DOUBLE PRECISION", "FLOAT", "NUMERIC", "DECIMAL"}
)
DATETIME = _TypeSet({"DATE", "TIME", "TIMESTAMP", "DATETIME", "TIMESTAMPTZ"})
ROWID = _TypeSet({"ROWID"})

Date = datetime.date
Time = datetime.time
Timestamp = datetime.datetime
Binary = bytes


def DateFromTicks(ticks: float) -> datetime.date:
    return datetime.date.fromtimestamp(ticks)


def TimeFromTicks(ticks: float) -> datetime.time:
    return datetime.datetime.fromtimestamp(ticks).time()


def TimestampFromTicks(ticks: float) -> datetime.datetime:
    return datetime.datetime.fromtimestamp(ticks)


# ---- values -----------------------------------------------------------------------------------


def _converter(declared: Optional[str]):
    """How a column of this declared type is read back (None: as the engine gives it)."""
    if not declared:
        return None
    base = declared.split("(")[0].strip().upper()
    if base in ("BOOL", "BOOLEAN"):
        return lambda value: value if value is None or isinstance(value, str) else bool(value)
    if base == "DATE":
        return lambda value: _parse(value, datetime.date.fromisoformat)
    if base in ("TIMESTAMP", "DATETIME", "TIMESTAMP WITHOUT TIME ZONE"):
        return lambda value: _parse(value, datetime.datetime.fromisoformat)
    if base in ("TIME", "TIME WITHOUT TIME ZONE"):
        return lambda value: _parse(value, datetime.time.fromisoformat)
    return None


def _parse(value: Any, parse) -> Any:
    if isinstance(value, str):
        try:
            return parse(value)
        except ValueError:
            return value  # a value that is not a date in a DATE column stays as stored
    return value


def _named_to_numbered(sql: str) -> tuple[str, list[str]]:
    """Rewrites :name placeholders (outside quotes and comments) as ?N; returns the names in
    the order of their numbers."""
    names: list[str] = []
    out: list[str] = []
    at, length = 0, len(sql)
    while at < length:
        char = sql[at]
        if char in "'\"`":
            end = at + 1
            while end < length:
                if sql[end] == char:
                    if end + 1 < length and sql[end + 1] == char:
                        end += 2
                        continue
                    break
                end += 1
            out.append(sql[at : end + 1])
            at = end + 1
        elif sql.startswith("--", at):
            end = sql.find("\n", at)
            end = length if end < 0 else end
            out.append(sql[at:end])
            at = end
        elif sql.startswith("/*", at):
            end = sql.find("*/", at + 2)
            end = length if end < 0 else end + 2
            out.append(sql[at:end])
            at = end
        elif char == ":" and sql.startswith("::", at):
            out.append("::")
            at += 2
        elif char == ":" and at + 1 < length and (sql[at + 1].isalpha() or sql[at + 1] == "_"):
            end = at + 1
            while end < length and (sql[end].isalnum() or sql[end] == "_"):
                end += 1
            name = sql[at + 1 : end]
            if name not in names:
                names.append(name)
            out.append(f"?{names.index(name) + 1}")
            at = end
        else:
            out.append(char)
            at += 1
    return "".join(out), names


def _bind(sql: str, parameters: Any) -> tuple[str, Any]:
    """The SQL and positional values for `parameters` (values are converted natively: dates
    and times to ISO-8601 text, what Tern's date functions read)."""
    kind = type(parameters)
    if kind is tuple or kind is list:
        return sql, parameters
    if parameters is None:
        return sql, ()
    if isinstance(parameters, Mapping):
        sql, names = _named_to_numbered(sql)
        try:
            return sql, [parameters[name] for name in names]
        except KeyError as missing:
            raise ProgrammingError(f"no value for parameter :{missing.args[0]}") from None
    if isinstance(parameters, (str, bytes)) or not isinstance(parameters, Sequence):
        raise ProgrammingError("parameters must be a sequence or a mapping")
    return sql, parameters


# ---- connections and cursors ------------------------------------------------------------------


def connect(
    database: str,
    *,
    autocommit: bool = False,
    buffer_pool_mib: Optional[int] = None,
    memtable_mib: Optional[int] = None,
    result_cache_mib: Optional[int] = None,
    memory_budget_mib: Optional[int] = None,
    sync: Optional[str] = None,
) -> "Connection":
    """Opens (creating if missing) the database file `database`, or a private in-memory
    database for ":memory:". `sync` is "every-commit" (the default: a commit is on disk when
    it returns) or "never".

    A file is opened once per process: further connections to it share the open database (and
    the options it was first opened with) until the last one is gone."""
    key = None if database == ":memory:" else os.path.realpath(database)
    with _registry_lock:
        handle = _open_databases.get(key) if key is not None else None
        if handle is None:
            try:
                handle = _tern.Database(
                    database,
                    buffer_pool_mib=buffer_pool_mib,
                    memtable_mib=memtable_mib,
                    result_cache_mib=result_cache_mib,
                    memory_budget_mib=memory_budget_mib,
                    sync=sync,
                )
            except _tern.EngineError as error:
                raise _error(error) from None
            except ValueError as error:
                raise ProgrammingError(str(error)) from None
            if key is not None:
                _open_databases[key] = handle
    return Connection(handle, autocommit)


# Open database files by real path; an entry goes when no connection holds the database.
_open_databases: "weakref.WeakValueDictionary[str, Any]" = weakref.WeakValueDictionary()
_registry_lock = threading.Lock()


# Statements that open or end transactions themselves (SAVEPOINT and RELEASE need one open:
# an implicit BEGIN goes first, as in psycopg).
_TRANSACTION_CONTROL = ("BEGIN", "START", "COMMIT", "END", "ROLLBACK", "ABORT")
_SHAPES_KEPT = 256
_KINDS_KEPT = 4096
_kinds: dict = {}


def _kind_of(sql: str) -> tuple:
    """(manages transactions itself, is an INSERT/REPLACE) for a statement text, remembered."""
    kind = _kinds.get(sql)
    if kind is None:
        first = sql.lstrip()[:9].upper()
        kind = (first.startswith(_TRANSACTION_CONTROL), first.startswith(("INSERT", "REPLACE")))
        if len(_kinds) >= _KINDS_KEPT:
            _kinds.clear()
        _kinds[sql] = kind
    return kind


class Connection:
    """A DB-API connection. `with conn:` commits at the end of the block, or rolls back if it
    raised; the connection stays open."""

    Warning = Warning
    Error = Error
    InterfaceError = InterfaceError
    DatabaseError = DatabaseError
    DataError = DataError
    OperationalError = OperationalError
    IntegrityError = IntegrityError
    InternalError = InternalError
    ProgrammingError = ProgrammingError
    NotSupportedError = NotSupportedError

    def __init__(self, database: Any, autocommit: bool):
        self._database = database
        self._native = database.connect()
        self._autocommit = autocommit
        self._closed = False
        self._shapes: dict = {}

    # -- transactions

    @property
    def autocommit(self) -> bool:
        return self._autocommit

    @autocommit.setter
    def autocommit(self, value: bool) -> None:
        if value and self.in_transaction:
            self.commit()
        self._autocommit = bool(value)

    @property
    def in_transaction(self) -> bool:
        return not self._closed and self._native.in_transaction()

    def commit(self) -> None:
        self._check_open()
        self._call(self._native.finish, True)

    def rollback(self) -> None:
        self._check_open()
        self._call(self._native.finish, False)

    def close(self) -> None:
        """Closes the connection; an open transaction is rolled back (PEP 249)."""
        if self._closed:
            return
        try:
            self._native.finish(False)
        finally:
            self._closed = True
            self._native = None
            self._database = None  # the file closes when no connection holds it

    def __enter__(self) -> "Connection":
        return self

    def __exit__(self, kind, value, traceback) -> None:
        if kind is None:
            self.commit()
        else:
            self.rollback()

    # -- statements

    def cursor(self) -> "Cursor":
        self._check_open()
        return Cursor(self)

    def execute(self, sql: str, parameters: Any = None) -> "Cursor":
        """Shortcut (as in sqlite3): a new cursor that ran `sql`."""
        return self.cursor().execute(sql, parameters)

    def executemany(self, sql: str, seq_of_parameters: Iterable[Any]) -> "Cursor":
        return self.cursor().executemany(sql, seq_of_parameters)

    def executescript(self, script: str) -> "Cursor":
        return self.cursor().executescript(script)

    def interrupt(self) -> None:
        """Cancels the statement running on this connection (from another thread); it raises
        OperationalError with SQLSTATE 57014."""
        self._native.interrupt()

    # -- internals

    def _check_open(self) -> None:
        if self._closed:
            raise InterfaceError("the connection is closed")

    def _opens_transaction(self, sql: str) -> bool:
        """Whether `sql` runs inside an implicit transaction (PEP 249): every statement but
        those that manage transactions themselves, unless in autocommit mode."""
        return not self._autocommit and not _kind_of(sql)[0]

    def _shape(self, columns: list, types: list) -> tuple:
        """The description and converters of a result with these columns (kept: a program
        runs the same queries again and again)."""
        key = (tuple(columns), tuple(types))
        shape = self._shapes.get(key)
        if shape is None:
            if len(self._shapes) >= _SHAPES_KEPT:
                self._shapes.clear()
            description = tuple((name, declared, None, None, None, None, None) for name, declared in zip(*key))
            converters = [_converter(declared) for declared in types]
            shape = self._shapes[key] = (description, converters if any(converters) else None)
        return shape

    @staticmethod
    def _call(method, *args):
        try:
            return method(*args)
        except _tern.EngineError as error:
            raise _error(error) from None
        except (TypeError, OverflowError) as error:
            raise InterfaceError(str(error)) from None


class Cursor:
    """A DB-API cursor: results are computed when `execute` runs and fetched from memory."""

    def __init__(self, connection: Connection):
        self.connection = connection
        self.arraysize = 1
        self.description: Optional[tuple] = None
        self.rowcount = -1
        self.lastrowid: Optional[int] = None
        self._rows: list = []
        self._columns: Optional[list] = None
        self._position = 0
        self._closed = False

    def _check(self) -> None:
        if self._closed:
            raise InterfaceError("the cursor is closed")
        self.connection._check_open()

    def _run(self, method, sql: str, parameters: Any):
        self._check()
        sql, values = _bind(sql, parameters)
        return Connection._call(method, sql, values, self.connection._opens_transaction(sql))

    def _load(self, columns, types, rows, count, rowid=None, columnar: bool = False) -> None:
        self._position = 0
        self.rowcount = count
        if columns is None:
            self.description = None
            self._rows, self._columns = [], None
            return
        self.description, converters = self.connection._shape(columns, types)
        if columnar:
            if converters is not None:
                rows = [
                    data if convert is None else [convert(value) for value in data]
                    for data, convert in zip(rows, converters)
                ]
            self._rows, self._columns = [], rows
            return
        if converters is not None:
            rows = [
                tuple(value if convert is None else convert(value) for value, convert in zip(row, converters))
                for row in rows
            ]
        self._rows, self._columns = rows, None

    def execute(self, sql: str, parameters: Any = None) -> "Cursor":
        produced = self._run(self.connection._native.execute, sql, parameters)
        self._load(*produced)
        rowid = produced[4]
        if rowid is not None and _kind_of(sql)[1]:
            # As sqlite3: after an INSERT, the row id of the last row it stored.
            self.lastrowid = rowid
        return self

    def executemany(self, sql: str, seq_of_parameters: Iterable[Any]) -> "Cursor":
        self._check()
        if not isinstance(seq_of_parameters, (list, tuple)):
            seq_of_parameters = list(seq_of_parameters)
        numbered = sql
        if seq_of_parameters and isinstance(seq_of_parameters[0], Mapping):
            bound = []
            for parameters in seq_of_parameters:
                numbered, values = _bind(sql, parameters)
                bound.append(values)
        else:
            for parameters in seq_of_parameters:
                # Tuples and lists first: the Sequence check is an abstract class's, and slow.
                kind = type(parameters)
                if kind is not tuple and kind is not list and (
                    isinstance(parameters, (str, bytes)) or not isinstance(parameters, Sequence)
                ):
                    raise ProgrammingError("parameters must be a sequence or a mapping")
            bound = seq_of_parameters
        begin = self.connection._opens_transaction(numbered)
        count = Connection._call(self.connection._native.execute_many, numbered, bound, begin)
        self._load(None, [], [], count)
        return self

    def executescript(self, script: str) -> "Cursor":
        """Runs statements separated by `;`, after committing an open transaction (sqlite3)."""
        self._check()
        self.connection.commit()
        Connection._call(self.connection._native.execute_script, script)
        self._load(None, [], [], -1)
        return self

    def fetchone(self) -> Optional[tuple]:
        if self._closed or self.description is None or self._columns is not None:
            self._check()
            if self.description is None:
                raise ProgrammingError("the last statement returned no rows")
            self._materialize_rows()
        position = self._position
        if position >= len(self._rows):
            return None
        self._position = position + 1
        return self._rows[position]

    def fetchmany(self, size: Optional[int] = None) -> list:
        self._check()
        if self.description is None:
            raise ProgrammingError("the last statement returned no rows")
        self._materialize_rows()
        size = self.arraysize if size is None else size
        rows = self._rows[self._position : self._position + size]
        self._position += len(rows)
        return rows

    def fetchall(self) -> list:
        self._check()
        if self.description is None:
            raise ProgrammingError("the last statement returned no rows")
        self._materialize_rows()
        rows = self._rows[self._position :]
        self._position = len(self._rows)
        return rows

    def fetch_arrow(self):
        """The remaining rows of the last query as a `pyarrow.Table` (needs pyarrow). Built
        from whole columns when the query ran through `execute_arrow`, else from the rows."""
        import pyarrow

        if self.description is None:
            raise ProgrammingError("the last statement returned no rows")
        names = [column[0] for column in self.description]
        if self._columns is not None and self._position == 0:
            columns = self._columns
        else:
            self._materialize_rows()
            rest = self._rows[self._position :]
            columns = [list(column) for column in zip(*rest)] if rest else [[] for _ in names]
        self._position = len(self._rows) if self._columns is None else 0
        self._rows, self._columns = [], None
        self.description = self.description
        return pyarrow.table(dict(zip(names, columns)))

    def execute_arrow(self, sql: str, parameters: Any = None):
        """Runs a query and returns its result as a `pyarrow.Table`: the engine hands over one
        list per column, so no Python tuple is made per row."""
        self._load(*self._run(self.connection._native.execute_columns, sql, parameters), columnar=True)
        return self.fetch_arrow()

    def _materialize_rows(self) -> None:
        if self._columns is not None:
            self._rows = list(zip(*self._columns)) if self._columns else []
            self._columns = None

    def setinputsizes(self, sizes: Any) -> None:
        pass

    def setoutputsize(self, size: Any, column: Any = None) -> None:
        pass

    def close(self) -> None:
        self._closed = True
        self._rows, self._columns = [], None

    def __iter__(self) -> Iterator[tuple]:
        return self

    def __next__(self) -> tuple:
        row = self.fetchone()
        if row is None:
            raise StopIteration
        return row

    def __enter__(self) -> "Cursor":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()
