//! `beedb._beedb`: the Rust half of the Python module. It owns the engine objects and
//! every conversion between Python objects and SQL values; the DB-API surface
//! (connections, cursors, transactions, the exception hierarchy) is Python, in
//! `beedb/__init__.py`, which calls the few methods here.
//!
//! Where the GIL is held: parameters are converted to [`Value`]s while it is held, then
//! the statement runs with the GIL released (`Python::detach`), so other Python threads
//! run while the engine works; result rows are converted back, a batch at a time, when
//! the cursor fetches them. A connection's engine session sits behind a mutex, so one
//! connection can be shared by threads: their statements take turns.

mod batch;
mod convert;
mod udf;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use beedb::{Column, Database, Value};
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};

create_exception!(
    _beedb,
    RawError,
    PyException,
    "An engine or conversion error: args are (class name or '', SQLSTATE, message, position, \
     detail, hint). beedb/__init__.py turns it into the DB-API exception class."
);

/// Raises [`RawError`] from an engine error; the Python side picks the DB-API class
/// from the SQLSTATE.
pub(crate) fn engine_error(e: beedb::Error) -> PyErr {
    RawError::new_err(("", e.sqlstate, e.message, e.position, e.detail, e.hint))
}

/// Raises [`RawError`] naming the DB-API class directly (for errors found at the
/// boundary, which have no SQLSTATE of their own from the engine).
pub(crate) fn boundary_error(class: &str, sqlstate: &str, message: String) -> PyErr {
    RawError::new_err((
        class.to_string(),
        sqlstate.to_string(),
        message,
        None::<usize>,
        None::<String>,
        None::<String>,
    ))
}

/// One engine session. `None` after `close()`.
#[pyclass(module = "beedb._beedb", frozen)]
struct RawConnection {
    session: Arc<Mutex<Option<beedb::Connection>>>,
    /// The key of this connection's database in [`OPEN`] (`None`: in memory).
    file: Option<PathBuf>,
    /// Stops the running statement; taken at connect so `interrupt()` needs no lock
    /// (the running statement holds it).
    interrupt: beedb::InterruptHandle,
    /// The thread running a statement on this connection (see [`thread_token`]), 0
    /// when none: a function called by that statement that uses the connection
    /// again gets an error instead of waiting for itself forever.
    running_on: Arc<AtomicU64>,
}

/// A number naming the current thread (never 0).
fn thread_token() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    thread_local! {
        static TOKEN: u64 = NEXT.fetch_add(1, Ordering::Relaxed);
    }
    TOKEN.with(|t| *t)
}

/// Marks the connection busy on this thread while a statement runs.
struct Running<'a>(&'a AtomicU64);

impl<'a> Running<'a> {
    fn start(flag: &'a AtomicU64) -> Running<'a> {
        flag.store(thread_token(), Ordering::SeqCst);
        Running(flag)
    }
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.0.store(0, Ordering::SeqCst);
    }
}

/// A statement run by a function that the same connection's statement is calling.
fn reentered() -> PyErr {
    boundary_error(
        "ProgrammingError",
        "",
        "a function called by a statement cannot use the connection running that statement \
         (use another connection)"
            .into(),
    )
}

/// The database files this process has open, with the number of Python connections
/// to each: BeeDB allows one open handle per file per process, so every `connect()`
/// to a file shares its one `Database`, which closes with its last connection.
static OPEN: Mutex<Option<HashMap<PathBuf, (Database, usize)>>> = Mutex::new(None);

fn open_database(path: &str) -> beedb::Result<(Database, Option<PathBuf>)> {
    if path == ":memory:" {
        return Ok((Database::open(path)?, None));
    }
    let p = Path::new(path);
    // The same file by any name: the canonical folder and the file name.
    let key = match (p.parent(), p.file_name()) {
        (Some(dir), Some(name)) => {
            let dir = if dir.as_os_str().is_empty() { Path::new(".") } else { dir };
            std::fs::canonicalize(dir).map(|d| d.join(name)).unwrap_or_else(|_| p.to_path_buf())
        }
        _ => p.to_path_buf(),
    };
    let mut open = OPEN.lock().unwrap_or_else(|e| e.into_inner());
    let open = open.get_or_insert_with(HashMap::new);
    if let Some((db, n)) = open.get_mut(&key) {
        *n += 1;
        return Ok((db.clone(), Some(key)));
    }
    let db = Database::open(path)?;
    open.insert(key.clone(), (db.clone(), 1));
    Ok((db, Some(key)))
}

fn release_database(key: &Path) {
    let mut open = OPEN.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(map) = open.as_mut()
        && let Some((_, n)) = map.get_mut(key)
    {
        *n -= 1;
        if *n == 0 {
            map.remove(key);
        }
    }
}

impl Drop for RawConnection {
    fn drop(&mut self) {
        let mut guard = self.session.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(conn) = guard.take() {
            drop(conn);
            if let Some(key) = &self.file {
                release_database(key);
            }
        }
    }
}

fn lock(session: &Mutex<Option<beedb::Connection>>) -> PyResult<MutexGuard<'_, Option<beedb::Connection>>> {
    // A panic while the lock was held is caught inside the engine (it returns an
    // internal error), so a poisoned lock still guards a consistent session.
    Ok(session.lock().unwrap_or_else(|p| p.into_inner()))
}

fn closed() -> PyErr {
    boundary_error("ProgrammingError", "", "Cannot operate on a closed database.".into())
}

#[pymethods]
impl RawConnection {
    /// Opens the database at `path` (`":memory:"`: a private in-memory one).
    #[new]
    fn new(py: Python<'_>, path: &str) -> PyResult<RawConnection> {
        let path = path.to_string();
        let (db, file) = py.detach(move || open_database(&path)).map_err(engine_error)?;
        let conn = db.connect();
        Ok(RawConnection {
            interrupt: conn.interrupt_handle(),
            session: Arc::new(Mutex::new(Some(conn))),
            file,
            running_on: Arc::new(AtomicU64::new(0)),
        })
    }

    /// Fails when called from a function the connection's running statement called.
    fn check_reentry(&self) -> PyResult<()> {
        if self.running_on.load(Ordering::SeqCst) == thread_token() {
            return Err(reentered());
        }
        Ok(())
    }

    /// Registers (`func` not None) or removes a scalar function; `nargs` -1 takes
    /// any number of arguments; `returns` is the SQL type name of its result.
    #[pyo3(signature = (name, nargs, func, returns, vectorized))]
    fn create_function(
        &self,
        py: Python<'_>,
        name: &str,
        nargs: i64,
        func: Option<Py<PyAny>>,
        returns: Option<&str>,
        vectorized: bool,
    ) -> PyResult<()> {
        self.check_reentry()?;
        let returns = returns
            .map(beedb::parse_data_type)
            .transpose()
            .map_err(engine_error)?;
        let nargs = arity(nargs)?;
        let function = func.map(|func| {
            Arc::new(udf::PyScalar {
                name: name.to_lowercase(),
                func,
                returns,
                vectorized,
            }) as Arc<dyn beedb::ScalarFunction>
        });
        self.with_session(py, |conn| conn.create_scalar_function(name, nargs, function))
    }

    /// Registers (`class` not None) or removes an aggregate: `class()` makes a
    /// group's state, `step(*args)` adds a row, `finalize()` gives the result.
    #[pyo3(signature = (name, nargs, class, returns))]
    fn create_aggregate(
        &self,
        py: Python<'_>,
        name: &str,
        nargs: i64,
        class: Option<Py<PyAny>>,
        returns: Option<&str>,
    ) -> PyResult<()> {
        self.check_reentry()?;
        let returns = returns
            .map(beedb::parse_data_type)
            .transpose()
            .map_err(engine_error)?;
        let nargs = arity(nargs)?;
        let function = class.map(|class| {
            Arc::new(udf::PyAggregate {
                name: name.to_lowercase(),
                class,
                returns,
            }) as Arc<dyn beedb::AggregateFunction>
        });
        self.with_session(py, |conn| conn.create_aggregate_function(name, nargs, function))
    }

    /// Runs one statement with positional parameters; returns its result.
    fn execute(&self, py: Python<'_>, sql: &str, params: &Bound<'_, PyAny>) -> PyResult<RawResult> {
        self.check_reentry()?;
        let values = convert::params_to_values(params)?;
        let sql = sql.to_string();
        let session = self.session.clone();
        let running_on = self.running_on.clone();
        udf::clear_exception();
        let result = py.detach(move || -> PyResult<beedb::QueryResult> {
            let mut guard = lock(&session)?;
            let conn = guard.as_mut().ok_or_else(closed)?;
            let _running = Running::start(&running_on);
            conn.execute(&sql, &values).map_err(engine_error)
        });
        Ok(RawResult::from(with_cause(py, result)?))
    }

    /// Prepares `sql` once and runs it for each parameter sequence of `seq` (any
    /// iterable, consumed lazily); returns the total of rows affected.
    fn executemany(&self, py: Python<'_>, sql: &str, seq: &Bound<'_, PyAny>) -> PyResult<u64> {
        self.check_reentry()?;
        let session = self.session.clone();
        let owned_sql = sql.to_string();
        let stmt = py.detach(|| -> PyResult<beedb::Statement> {
            let mut guard = lock(&session)?;
            let conn = guard.as_mut().ok_or_else(closed)?;
            conn.prepare(&owned_sql).map_err(engine_error)
        })?;
        let mut total = 0u64;
        for params in seq.try_iter()? {
            let values = convert::params_to_values(&params?)?;
            udf::clear_exception();
            let r = py.detach(|| -> PyResult<beedb::QueryResult> {
                let mut guard = lock(&session)?;
                let conn = guard.as_mut().ok_or_else(closed)?;
                let _running = Running::start(&self.running_on);
                stmt.execute(conn, &values).map_err(engine_error)
            });
            let r = with_cause(py, r)?;
            if r.has_rows() {
                return Err(boundary_error(
                    "ProgrammingError",
                    "",
                    "executemany() can only execute statements that return no rows".into(),
                ));
            }
            total += r.rows_affected;
        }
        Ok(total)
    }

    /// Asks the statement running on this connection (in any thread) to stop: it
    /// fails with SQLSTATE 57014.
    fn interrupt(&self) {
        self.interrupt.interrupt();
    }

    /// Whether a transaction block is open. (Waits for a statement another thread
    /// runs on this connection with the GIL released: that statement may call a
    /// Python function, which needs the GIL.)
    fn in_transaction(&self, py: Python<'_>) -> PyResult<bool> {
        if self.running_on.load(Ordering::SeqCst) == thread_token() {
            return Err(reentered());
        }
        py.detach(|| {
            let guard = lock(&self.session)?;
            Ok(guard.as_ref().ok_or_else(closed)?.in_transaction())
        })
    }

    fn is_closed(&self, py: Python<'_>) -> PyResult<bool> {
        if self.running_on.load(Ordering::SeqCst) == thread_token() {
            return Ok(false);
        }
        py.detach(|| Ok(lock(&self.session)?.is_none()))
    }

    /// Ends the session (an open transaction is rolled back, as PEP 249 asks).
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        self.check_reentry()?;
        let session = self.session.clone();
        let file = self.file.clone();
        py.detach(move || -> PyResult<()> {
            let mut guard = lock(&session)?;
            if let Some(mut conn) = guard.take() {
                let rolled_back = if conn.in_transaction() {
                    conn.execute("ROLLBACK", &[]).map(|_| ()).map_err(engine_error)
                } else {
                    Ok(())
                };
                drop(conn);
                if let Some(key) = &file {
                    release_database(key);
                }
                rolled_back?;
            }
            Ok(())
        })
    }
}

impl RawConnection {
    /// Runs `f` on the session with the GIL released (a statement another thread
    /// runs on this connection may be calling a Python function, which needs it).
    fn with_session<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut beedb::Connection) -> beedb::Result<T> + Send,
    ) -> PyResult<T> {
        py.detach(|| {
            let mut guard = lock(&self.session)?;
            let conn = guard.as_mut().ok_or_else(closed)?;
            f(conn).map_err(engine_error)
        })
    }
}

/// A statement's result: its columns, tag and rows, converted to Python a batch at a
/// time as the cursor fetches them.
#[pyclass(module = "beedb._beedb")]
struct RawResult {
    columns: Vec<Column>,
    rows: std::vec::IntoIter<beedb::Row>,
    tag: String,
    rows_affected: u64,
    has_rows: bool,
}

impl From<beedb::QueryResult> for RawResult {
    fn from(r: beedb::QueryResult) -> RawResult {
        RawResult {
            has_rows: r.has_rows(),
            columns: r.columns,
            rows: r.rows.into_iter(),
            tag: r.tag,
            rows_affected: r.rows_affected,
        }
    }
}

#[pymethods]
impl RawResult {
    /// `(name, type name, precision, scale)` per output column; empty for statements
    /// that return no rows.
    fn columns<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let items = self
            .columns
            .iter()
            .map(|c| {
                let (precision, scale) = match c.data_type {
                    beedb::DataType::Decimal {
                        precision: Some(p),
                        scale,
                    } => (Some(p), Some(scale)),
                    _ => (None, None),
                };
                (c.name.clone(), c.data_type.to_string(), precision, scale)
            })
            .collect::<Vec<_>>();
        PyList::new(py, items)
    }

    #[getter]
    fn tag(&self) -> &str {
        &self.tag
    }

    #[getter]
    fn rows_affected(&self) -> u64 {
        self.rows_affected
    }

    #[getter]
    fn has_rows(&self) -> bool {
        self.has_rows
    }

    /// Up to `n` more rows as a list of tuples (empty at the end).
    fn fetch<'py>(&mut self, py: Python<'py>, n: usize) -> PyResult<Bound<'py, PyList>> {
        let list = PyList::empty(py);
        for row in self.rows.by_ref().take(n) {
            list.append(row_to_tuple(py, row.values())?)?;
        }
        Ok(list)
    }

    /// The next row as a tuple, or None at the end.
    fn fetchone<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyTuple>>> {
        self.rows
            .next()
            .map(|row| row_to_tuple(py, row.values()))
            .transpose()
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    /// Iteration, used directly by `for row in cursor`: errors are raised as the
    /// DB-API classes (there is no Python frame to translate them).
    fn __next__<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyTuple>>> {
        self.fetchone(py).map_err(|e| {
            if !e.is_instance_of::<RawError>(py) {
                return e;
            }
            match py
                .import("beedb")
                .and_then(|m| m.getattr("_translate"))
                .and_then(|t| t.call1((e.value(py),)))
            {
                Ok(translated) => PyErr::from_value(translated),
                Err(other) => other,
            }
        })
    }

    /// The rows not fetched yet, column by column (see `batch::column`); the result
    /// is then exhausted.
    fn take_columns<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let rows: Vec<beedb::Row> = self.rows.by_ref().collect();
        let out = PyList::empty(py);
        for (c, col) in self.columns.iter().enumerate() {
            out.append(batch::column(py, col, c, &rows)?)?;
        }
        Ok(out)
    }

    /// The rows not fetched yet, dropped (a cursor re-executed or closed).
    fn discard(&mut self) {
        self.rows = Vec::new().into_iter();
    }
}

/// `nargs` as sqlite3 gives it: -1 for any number.
fn arity(nargs: i64) -> PyResult<Option<usize>> {
    match nargs {
        -1 => Ok(None),
        0..=127 => Ok(Some(nargs as usize)),
        _ => Err(boundary_error(
            "ProgrammingError",
            "",
            format!("narg must be -1 (any number) or between 0 and 127, not {nargs}"),
        )),
    }
}

/// The statement's error with the Python exception a function raised in it (if one
/// did) as its `__cause__`.
fn with_cause<T>(py: Python<'_>, r: PyResult<T>) -> PyResult<T> {
    r.map_err(|e| {
        if let Some(cause) = udf::take_exception() {
            e.set_cause(py, Some(cause));
        }
        e
    })
}

fn row_to_tuple<'py>(py: Python<'py>, values: &[Value]) -> PyResult<Bound<'py, PyTuple>> {
    let items = values
        .iter()
        .map(|v| convert::value_to_py(py, v))
        .collect::<PyResult<Vec<_>>>()?;
    PyTuple::new(py, items)
}

#[pymodule]
fn _beedb(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<RawConnection>()?;
    m.add_class::<RawResult>()?;
    m.add("RawError", m.py().get_type::<RawError>())?;
    Ok(())
}
