//! `tern._tern`: the native half of Tern's Python package. It opens databases, runs statements
//! with the GIL released, and converts values between Python and Tern. The DB-API 2.0 surface
//! (connections, cursors, transactions, paramstyles, exceptions) is Python, in `tern/`.

use pyo3::exceptions::{PyException, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyByteArray, PyBytes, PyFloat, PyInt, PyList, PyString, PyTuple, PyType};
use std::str::FromStr;
use std::sync::Mutex;
use tern::Value;

/// mimalloc for the module's Rust allocations (as the `tern` command: see its `main.rs`);
/// Python's own objects keep Python's allocator.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

pyo3::create_exception!(_tern, EngineError, PyException, "An error from the engine: args are (sqlstate, message).");

/// `decimal.Decimal`, `datetime.datetime`, `datetime.date`, `datetime.time` and
/// `datetime.timezone.utc`, imported once.
static DECIMAL: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static DATETIME: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static DATE: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static TIME: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static UTC: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

fn decimal_type(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
    DECIMAL.import(py, "decimal", "Decimal")
}

/// A date, time or datetime as ISO-8601 text (what Tern's date functions read); an aware
/// datetime in UTC. `None` for other objects.
fn iso_text(object: &Bound<'_, PyAny>) -> PyResult<Option<String>> {
    let py = object.py();
    // datetime is a subclass of date: test it first.
    if object.is_instance(DATETIME.import(py, "datetime", "datetime")?)? {
        let mut moment = object.clone();
        if !moment.getattr("tzinfo")?.is_none() {
            let utc = UTC.get_or_try_init(py, || -> PyResult<Py<PyAny>> {
                Ok(py.import("datetime")?.getattr("timezone")?.getattr("utc")?.unbind())
            })?;
            let kwargs = pyo3::types::PyDict::new(py);
            kwargs.set_item("tzinfo", py.None())?;
            moment = moment.call_method1("astimezone", (utc.bind(py),))?.call_method("replace", (), Some(&kwargs))?;
        }
        return Ok(Some(moment.call_method1("isoformat", (" ",))?.extract()?));
    }
    if object.is_instance(DATE.import(py, "datetime", "date")?)?
        || object.is_instance(TIME.import(py, "datetime", "time")?)?
    {
        return Ok(Some(object.call_method0("isoformat")?.extract()?));
    }
    Ok(None)
}

fn engine_error(error: tern::Error) -> PyErr {
    EngineError::new_err((error.sqlstate.to_string(), error.message.clone()))
}

/// A database: a file (and its log), or an in-memory one for `":memory:"`. A file is opened
/// once per process (it is locked); `tern.connect` shares the handle between connections.
#[pyclass(frozen, weakref)]
struct Database {
    inner: tern::Database,
}

#[pymethods]
impl Database {
    #[new]
    #[pyo3(signature = (path, *, buffer_pool_mib=None, memtable_mib=None, result_cache_mib=None, memory_budget_mib=None, sync=None))]
    fn open(
        py: Python<'_>,
        path: &str,
        buffer_pool_mib: Option<usize>,
        memtable_mib: Option<usize>,
        result_cache_mib: Option<usize>,
        memory_budget_mib: Option<usize>,
        sync: Option<&str>,
    ) -> PyResult<Database> {
        let mut options = tern::Options::default();
        let mib = |value: usize| value.saturating_mul(1 << 20);
        if let Some(size) = buffer_pool_mib {
            options.buffer_pool_size = mib(size);
        }
        if let Some(size) = memtable_mib {
            options.memtable_size = mib(size);
        }
        if let Some(size) = result_cache_mib {
            options.result_cache_size = mib(size);
        }
        if let Some(size) = memory_budget_mib {
            options.memory_budget = Some(mib(size));
        }
        match sync {
            None => {}
            Some("every-commit" | "full") => options.sync = tern::SyncPolicy::EveryCommit,
            Some("never" | "off") => options.sync = tern::SyncPolicy::Never,
            Some(other) => {
                return Err(PyValueError::new_err(format!("sync must be 'every-commit' or 'never', not {other:?}")));
            }
        }
        let path = path.to_string();
        let inner = py
            .detach(move || {
                if path == ":memory:" {
                    tern::Database::open_in_memory_with(options)
                } else {
                    tern::Database::open(path, options)
                }
            })
            .map_err(engine_error)?;
        Ok(Database { inner })
    }

    /// A new connection (its own session and transactions).
    fn connect(&self) -> Connection {
        let connection = self.inner.connect();
        let interrupt = connection.interrupt_handle();
        Connection { inner: Mutex::new(connection), interrupt }
    }
}

/// One session. Calls from several Python threads take turns.
#[pyclass(frozen)]
struct Connection {
    inner: Mutex<tern::Connection>,
    interrupt: tern::InterruptHandle,
}

/// What a statement produced: column names (None when it returns no rows), their declared
/// types, the rows (tuples) or columns (lists), the count of rows changed or returned, and the
/// connection's last inserted row id (read under the same lock as the statement ran).
type Produced = (Option<Vec<String>>, Vec<Option<String>>, Py<PyAny>, u64, Option<i64>);

enum Shape {
    Rows,
    Columns,
}

impl Connection {
    /// The connection, for the calling thread (call without the GIL: a thread holding the
    /// connection may need the GIL back before it lets go).
    fn lock(&self) -> tern::Result<std::sync::MutexGuard<'_, tern::Connection>> {
        self.inner.lock().map_err(|_| tern::Error::new("XX000", "a thread panicked while using this connection"))
    }

    fn run(
        &self,
        py: Python<'_>,
        sql: &str,
        params: &Bound<'_, PyAny>,
        begin: bool,
        shape: Shape,
    ) -> PyResult<Produced> {
        let params = to_values(params)?;
        // The statement runs without the GIL: other Python threads go on meanwhile. Texts run
        // again are found parsed and planned in the connection's statement cache.
        let ((outcome, types), rowid) = py
            .detach(|| -> tern::Result<_> {
                let connection = self.lock()?;
                if begin && connection.is_autocommit() {
                    connection.run_cached("BEGIN", ())?;
                }
                let produced = connection.run_cached(sql, params)?;
                Ok((produced, connection.last_insert_rowid()))
            })
            .map_err(engine_error)?;
        Ok(match outcome {
            tern::Outcome::Rows(rows) => {
                let columns = rows.column_names().to_vec();
                let count = rows.len() as u64;
                let mut types = types;
                types.resize(columns.len(), None);
                let values = rows.into_values();
                let data = match shape {
                    Shape::Rows => {
                        let list = PyList::empty(py);
                        for row in &values {
                            let items: Vec<Py<PyAny>> =
                                row.iter().map(|value| to_python(py, value)).collect::<PyResult<_>>()?;
                            list.append(PyTuple::new(py, items)?)?;
                        }
                        list.into_any().unbind()
                    }
                    Shape::Columns => {
                        let list = PyList::empty(py);
                        for column in 0..columns.len() {
                            let items: Vec<Py<PyAny>> =
                                values.iter().map(|row| to_python(py, &row[column])).collect::<PyResult<_>>()?;
                            list.append(PyList::new(py, items)?)?;
                        }
                        list.into_any().unbind()
                    }
                };
                (Some(columns), types, data, count, rowid)
            }
            tern::Outcome::Changed(count) => (None, Vec::new(), PyList::empty(py).into_any().unbind(), count, rowid),
            tern::Outcome::Done(_) => (None, Vec::new(), PyList::empty(py).into_any().unbind(), 0, rowid),
        })
    }
}

#[pymethods]
impl Connection {
    /// Runs one statement with positional parameters (a sequence); with `begin`, opens a
    /// transaction first if none is open.
    #[pyo3(signature = (sql, params, begin=false))]
    fn execute(&self, py: Python<'_>, sql: &str, params: &Bound<'_, PyAny>, begin: bool) -> PyResult<Produced> {
        self.run(py, sql, params, begin, Shape::Rows)
    }

    /// As `execute`, with the result as one list per column.
    #[pyo3(signature = (sql, params, begin=false))]
    fn execute_columns(&self, py: Python<'_>, sql: &str, params: &Bound<'_, PyAny>, begin: bool) -> PyResult<Produced> {
        self.run(py, sql, params, begin, Shape::Columns)
    }

    /// Runs one statement once per parameter sequence (parsed once); returns the total count.
    #[pyo3(signature = (sql, seq_of_params, begin=false))]
    fn execute_many(&self, py: Python<'_>, sql: &str, seq_of_params: &Bound<'_, PyAny>, begin: bool) -> PyResult<u64> {
        let mut all = Vec::new();
        for params in seq_of_params.try_iter()? {
            all.push(to_values(&params?)?);
        }
        py.detach(|| -> tern::Result<u64> {
            let connection = self.lock()?;
            if begin && connection.is_autocommit() {
                connection.run_cached("BEGIN", ())?;
            }
            let mut statement = connection.prepare(sql)?;
            let mut total = 0;
            for params in &all {
                total += statement.execute_values(params)?;
            }
            Ok(total)
        })
        .map_err(engine_error)
    }

    /// Runs a script of statements separated by `;` (no parameters).
    fn execute_script(&self, py: Python<'_>, sql: &str) -> PyResult<()> {
        py.detach(|| self.lock()?.execute_batch(sql)).map_err(engine_error)
    }

    /// Whether a transaction (BEGIN) is open.
    fn in_transaction(&self, py: Python<'_>) -> PyResult<bool> {
        py.detach(|| self.lock().map(|connection| !connection.is_autocommit())).map_err(engine_error)
    }

    /// Ends the open transaction, if any: COMMIT with `commit`, else ROLLBACK (one call, so
    /// that another thread's statement cannot come between the check and the end).
    fn finish(&self, py: Python<'_>, commit: bool) -> PyResult<()> {
        py.detach(|| -> tern::Result<()> {
            let connection = self.lock()?;
            if !connection.is_autocommit() {
                connection.run_cached(if commit { "COMMIT" } else { "ROLLBACK" }, ())?;
            }
            Ok(())
        })
        .map_err(engine_error)
    }

    /// Cancels the statement running on this connection (from any thread).
    fn interrupt(&self) {
        self.interrupt.interrupt();
    }
}

/// Parameters (a sequence) as Tern values.
fn to_values(params: &Bound<'_, PyAny>) -> PyResult<Vec<Value>> {
    if params.is_instance_of::<PyString>() || params.is_instance_of::<PyBytes>() {
        return Err(PyTypeError::new_err("parameters must be a sequence, not a string"));
    }
    let mut values = Vec::new();
    for item in params.try_iter()? {
        values.push(to_value(&item?)?);
    }
    Ok(values)
}

fn to_value(object: &Bound<'_, PyAny>) -> PyResult<Value> {
    if object.is_none() {
        return Ok(Value::Null);
    }
    if object.is_instance_of::<PyBool>() {
        return Ok(Value::Integer(i64::from(object.extract::<bool>()?)));
    }
    if object.is_instance_of::<PyInt>() {
        return object
            .extract::<i64>()
            .map(Value::Integer)
            .map_err(|_| EngineError::new_err(("22003".to_string(), format!("integer out of range: {object}"))));
    }
    if object.is_instance_of::<PyFloat>() {
        return Ok(Value::Real(object.extract::<f64>()?));
    }
    if object.is_instance_of::<PyString>() {
        return Ok(Value::Text(object.extract::<String>()?));
    }
    if object.is_instance_of::<PyBytes>() || object.is_instance_of::<PyByteArray>() {
        return Ok(Value::Blob(object.extract::<Vec<u8>>()?));
    }
    if let Some(text) = iso_text(object)? {
        return Ok(Value::Text(text));
    }
    if let Ok(view) = object.cast::<pyo3::types::PyMemoryView>() {
        return Ok(Value::Blob(view.call_method0("tobytes")?.extract::<Vec<u8>>()?));
    }
    if object.is_instance(decimal_type(object.py())?)? {
        let text = object.str()?.to_string();
        return rust_decimal::Decimal::from_str(&text)
            .or_else(|_| rust_decimal::Decimal::from_scientific(&text))
            .map(Value::Decimal)
            .map_err(|_| EngineError::new_err(("22003".to_string(), format!("decimal out of range: {text}"))));
    }
    Err(PyTypeError::new_err(format!("unsupported parameter type {}", object.get_type().name()?)))
}

fn to_python(py: Python<'_>, value: &Value) -> PyResult<Py<PyAny>> {
    use pyo3::IntoPyObjectExt;
    match value {
        Value::Null => Ok(py.None()),
        Value::Integer(integer) => integer.into_py_any(py),
        Value::Real(real) => real.into_py_any(py),
        Value::Text(text) => text.into_py_any(py),
        Value::Blob(bytes) => Ok(PyBytes::new(py, bytes).into_any().unbind()),
        Value::Decimal(exact) => Ok(decimal_type(py)?.call1((exact.to_string(),))?.into_any().unbind()),
        // Dates and times of the postgres dialect: their ISO text, as SQLite's date functions give.
        Value::Temporal(_) => value.to_text().into_py_any(py),
        // An enum label is its text; a row value a tuple of its fields.
        Value::Enum(label) => label.label.to_string().into_py_any(py),
        Value::Record(record) => {
            let fields = record.fields.iter().map(|field| to_python(py, field)).collect::<PyResult<Vec<_>>>()?;
            Ok(pyo3::types::PyTuple::new(py, fields)?.into_any().unbind())
        }
    }
}

#[pymodule]
fn _tern(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<Database>()?;
    module.add_class::<Connection>()?;
    module.add("EngineError", module.py().get_type::<EngineError>())?;
    Ok(())
}
