//! `beedb._beedb`: the Rust half of the Python module. It owns the engine objects and
//! every conversion between Python objects and SQL values; the DB-API surface
//! (connections, cursors, transactions, the exception hierarchy) is Python, in
//! `beedb/__init__.py`, which calls the few methods here.
//!
//! Where the GIL is held: parameters are converted to [`Value`]s while it is held, then
//! the statement starts with the GIL released (`Python::detach`), so other Python
//! threads run while the engine works. A query's result is a [`beedb::ResultStream`]:
//! the executor produces it batch by batch on the stream's thread while the cursor
//! fetches, and each batch is awaited with the GIL released and converted to Python
//! rows with it held. A connection's engine session sits behind a mutex, so one
//! connection can be shared by threads: their statements take turns (a statement
//! started while a cursor's stream is open first runs that stream's statement to its
//! end, keeping the rest of its rows for the cursor).

mod batch;
mod convert;
mod cursor;
mod udf;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
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
    /// Set by `close()`: whether the session is gone, read without the lock (every
    /// statement checks it).
    closed: AtomicBool,
    /// The last few results' columns and their DB-API `description`s (most recent
    /// first), reused while statements return the same columns (queries run again
    /// and again, as a loop running two lookups per row).
    described: Mutex<Vec<(Vec<Column>, Py<PyTuple>)>>,
    /// The key of this connection's database in [`OPEN`] (`None`: in memory).
    file: Option<PathBuf>,
    /// Stops the running statement; taken at connect so `interrupt()` needs no lock
    /// (the running statement holds it).
    interrupt: beedb::InterruptHandle,
    /// The thread running a statement on this connection (see [`thread_token`]), 0
    /// when none: a function called by that statement that uses the connection
    /// again gets an error instead of waiting for itself forever.
    running_on: Arc<AtomicU64>,
    /// What this connection's Python functions share with it: its number (a function
    /// running on a stream's thread that uses the connection is refused as well) and
    /// the exception that failed its last statement.
    owner: udf::Owner,
}

/// Descriptions a connection keeps for reuse ([`RawConnection::describe`]).
const DESCRIPTIONS_KEPT: usize = 8;

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
        static NEXT_CONNECTION: AtomicU64 = AtomicU64::new(1);
        Ok(RawConnection {
            interrupt: conn.interrupt_handle(),
            session: Arc::new(Mutex::new(Some(conn))),
            closed: AtomicBool::new(false),
            described: Mutex::new(Vec::new()),
            file,
            running_on: Arc::new(AtomicU64::new(0)),
            owner: udf::Owner {
                connection: NEXT_CONNECTION.fetch_add(1, Ordering::Relaxed),
                exception: Default::default(),
            },
        })
    }

    /// Fails when called from a function the connection's running statement called.
    fn check_reentry(&self) -> PyResult<()> {
        if self.called_back() {
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
                owner: self.owner.clone(),
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
                owner: self.owner.clone(),
            }) as Arc<dyn beedb::AggregateFunction>
        });
        self.with_session(py, |conn| conn.create_aggregate_function(name, nargs, function))
    }

    /// Starts one statement with positional parameters; returns its result, a query's
    /// streaming from the executor as the cursor fetches. `begin`: open a transaction
    /// block first unless one is open (the DB-API's implicit BEGIN before a change),
    /// under the same lock.
    #[pyo3(signature = (sql, params, begin=false))]
    fn execute(&self, py: Python<'_>, sql: &str, params: &Bound<'_, PyAny>, begin: bool) -> PyResult<RawResult> {
        self.check_reentry()?;
        let values = convert::params_to_values(params)?;
        let session = &self.session;
        let running_on = &self.running_on;
        self.owner.clear_exception();
        let result = py.detach(|| -> PyResult<(beedb::ResultStream, Option<beedb::ResultBatch>)> {
            let mut guard = lock(session)?;
            let conn = guard.as_mut().ok_or_else(closed)?;
            let _running = Running::start(running_on);
            if begin && !conn.in_transaction() {
                conn.execute("BEGIN", &[]).map_err(engine_error)?;
            }
            let mut stream = conn.query_stream(sql, &values).map_err(engine_error)?;
            // The first batch before execute returns, as sqlite3 steps to the first
            // row: an error in it is raised by execute.
            let first = match stream.has_rows() {
                true => stream.next_batch().map_err(engine_error)?,
                false => None,
            };
            Ok((stream, first))
        });
        let (stream, first) = with_cause(py, &self.owner, result)?;
        let description = self.describe(py, stream.columns())?;
        let mut result = RawResult::new(stream, self.owner.clone(), description);
        result.current = first.map(|b| (b, 0));
        Ok(result)
    }

    /// Prepares `sql` once and runs it for each parameter sequence of `seq` (any
    /// iterable, consumed lazily); returns the total of rows affected.
    #[pyo3(signature = (sql, seq, begin=false))]
    fn executemany(&self, py: Python<'_>, sql: &str, seq: &Bound<'_, PyAny>, begin: bool) -> PyResult<u64> {
        self.check_reentry()?;
        let session = self.session.clone();
        let stmt = py.detach(|| -> PyResult<beedb::Statement> {
            let mut guard = lock(&session)?;
            let conn = guard.as_mut().ok_or_else(closed)?;
            if begin && !conn.in_transaction() {
                conn.execute("BEGIN", &[]).map_err(engine_error)?;
            }
            conn.prepare(sql).map_err(engine_error)
        })?;
        let mut total = 0u64;
        for params in seq.try_iter()? {
            let values = convert::params_to_values(&params?)?;
            self.owner.clear_exception();
            let r = py.detach(|| -> PyResult<beedb::QueryResult> {
                let mut guard = lock(&session)?;
                let conn = guard.as_mut().ok_or_else(closed)?;
                let _running = Running::start(&self.running_on);
                stmt.execute(conn, &values).map_err(engine_error)
            });
            let r = with_cause(py, &self.owner, r)?;
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
        if self.called_back() {
            return Err(reentered());
        }
        py.detach(|| {
            let guard = lock(&self.session)?;
            Ok(guard.as_ref().ok_or_else(closed)?.in_transaction())
        })
    }

    fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    /// Ends the session (an open transaction is rolled back, as PEP 249 asks).
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        self.check_reentry()?;
        let session = self.session.clone();
        let file = self.file.clone();
        let closed = &self.closed;
        py.detach(move || -> PyResult<()> {
            let mut guard = lock(&session)?;
            if let Some(mut conn) = guard.take() {
                closed.store(true, Ordering::SeqCst);
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
    /// The DB-API `description` of `columns` (None for a statement without rows):
    /// per column `(name, type name, None, None, precision, scale, None)`; one of the
    /// last [`DESCRIPTIONS_KEPT`] is reused when its columns are the same.
    fn describe(&self, py: Python<'_>, columns: &[Column]) -> PyResult<Option<Py<PyTuple>>> {
        if columns.is_empty() {
            return Ok(None);
        }
        // The lock is not held while Python objects are made (a collection they
        // set off may run a finalizer that uses this connection).
        if let Some((_, d)) = self
            .described
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .find(|(cols, _)| cols.as_slice() == columns)
        {
            return Ok(Some(d.clone_ref(py)));
        }
        let items = columns
            .iter()
            .map(|c| {
                let (precision, scale) = match c.data_type {
                    beedb::DataType::Decimal { precision: Some(p), scale } => (Some(p), Some(scale)),
                    _ => (None, None),
                };
                PyTuple::new(
                    py,
                    [
                        c.name.as_str().into_pyobject(py)?.into_any(),
                        c.data_type.to_string().into_pyobject(py)?.into_any(),
                        py.None().into_bound(py),
                        py.None().into_bound(py),
                        precision.into_pyobject(py)?.into_any(),
                        scale.into_pyobject(py)?.into_any(),
                        py.None().into_bound(py),
                    ],
                )
            })
            .collect::<PyResult<Vec<_>>>()?;
        let d = PyTuple::new(py, items)?.unbind();
        let mut described = self.described.lock().unwrap_or_else(|p| p.into_inner());
        described.truncate(DESCRIPTIONS_KEPT - 1);
        described.insert(0, (columns.to_vec(), d.clone_ref(py)));
        Ok(Some(d))
    }

    /// Whether this thread is inside a function that one of this connection's
    /// statements called: on the thread that started the statement, or on its
    /// stream's thread (where the session's lock may be held by a statement waiting
    /// for that stream to end).
    fn called_back(&self) -> bool {
        self.running_on.load(Ordering::SeqCst) == thread_token() || udf::calling_back(self.owner.connection)
    }

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

/// A statement's result: its columns and tag, and its rows as a stream, converted
/// to Python a batch at a time as the cursor fetches them.
#[pyclass(module = "beedb._beedb")]
struct RawResult {
    columns: Vec<Column>,
    /// `None` once discarded.
    stream: Option<beedb::ResultStream>,
    /// The batch being converted, and its next row.
    current: Option<(beedb::ResultBatch, usize)>,
    owner: udf::Owner,
    /// The DB-API `description` (None without columns).
    description: Option<Py<PyTuple>>,
}

impl RawResult {
    fn new(stream: beedb::ResultStream, owner: udf::Owner, description: Option<Py<PyTuple>>) -> RawResult {
        RawResult { columns: stream.columns().to_vec(), stream: Some(stream), current: None, owner, description }
    }

    /// Makes a next batch current (waiting for it with the GIL released); `false` at
    /// the end.
    fn advance(&mut self, py: Python<'_>) -> PyResult<bool> {
        self.current = None;
        let Some(stream) = self.stream.as_mut() else {
            return Ok(false);
        };
        if stream.is_done() {
            return Ok(false);
        }
        let next = py.detach(|| stream.next_batch()).map_err(engine_error);
        match with_cause(py, &self.owner, next)? {
            Some(batch) => {
                self.current = Some((batch, 0));
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// The next row as a tuple, or None at the end.
    fn next_tuple<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyTuple>>> {
        loop {
            if let Some((batch, at)) = &mut self.current
                && *at < batch.len()
            {
                let k = *at;
                *at += 1;
                return batch_row_to_tuple(py, &self.columns, batch, k).map(Some);
            }
            if !self.advance(py)? {
                return Ok(None);
            }
        }
    }

    /// Ends the stream: a statement still running is cancelled. With the GIL released,
    /// since its thread may be waiting for the GIL to call a Python function.
    fn end_stream(&mut self, py: Python<'_>) {
        self.current = None;
        if let Some(stream) = self.stream.take() {
            if stream.is_done() {
                drop(stream);
            } else {
                py.detach(move || drop(stream));
            }
        }
    }
}

impl Drop for RawResult {
    fn drop(&mut self) {
        if self.stream.as_ref().is_some_and(|s| !s.is_done()) {
            Python::attach(|py| self.end_stream(py));
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

    /// The DB-API `description`: per column `(name, type name, None, None,
    /// precision, scale, None)`; None for a statement that returns no rows.
    #[getter]
    fn description<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyTuple>> {
        self.description.as_ref().map(|d| d.bind(py).clone())
    }

    /// The command tag (`INSERT 0 5`); a query's once all its rows were fetched, else
    /// None.
    #[getter]
    fn tag(&self) -> Option<String> {
        self.stream.as_ref().and_then(|s| s.tag())
    }

    /// Rows the statement changed; for a query, the rows it returned once all were
    /// fetched, else None.
    #[getter]
    fn rows_affected(&self) -> Option<u64> {
        self.stream.as_ref().and_then(|s| s.rows_affected())
    }

    #[getter]
    fn has_rows(&self) -> bool {
        !self.columns.is_empty()
    }

    /// Up to `n` more rows as a list of tuples (empty at the end).
    fn fetch<'py>(&mut self, py: Python<'py>, n: usize) -> PyResult<Bound<'py, PyList>> {
        let list = PyList::empty(py);
        let mut left = n;
        while left > 0 {
            if let Some((batch, at)) = &mut self.current
                && *at < batch.len()
            {
                let end = *at + left.min(batch.len() - *at);
                match batch.column_slices() {
                    Some(slices) if slices.len() == self.columns.len() => {
                        for k in *at..end {
                            list.append(slices_to_tuple(py, &self.columns, &slices, k)?)?;
                        }
                    }
                    _ => {
                        for k in *at..end {
                            list.append(row_to_tuple(py, batch.row(k).values())?)?;
                        }
                    }
                }
                left -= end - *at;
                *at = end;
                continue;
            }
            if !self.advance(py)? {
                break;
            }
        }
        Ok(list)
    }

    /// The next row as a tuple, or None at the end.
    fn fetchone<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyTuple>>> {
        self.next_tuple(py)
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    /// Iteration, used directly by `for row in cursor`: errors are raised as the
    /// DB-API classes (there is no Python frame to translate them).
    fn __next__<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyTuple>>> {
        self.next_tuple(py).map_err(|e| {
            if !e.is_instance_of::<RawError>(py) {
                return e;
            }
            match py
                .import("beedb")
                .and_then(|m| m.getattr("_translate"))
                .and_then(|t| t.call1((e.value(py),)))
            {
                Ok(translated) => {
                    let translated = PyErr::from_value(translated);
                    translated.set_cause(py, e.cause(py));
                    translated
                }
                Err(other) => other,
            }
        })
    }

    /// The rows not fetched yet, column by column, for `target` (`"numpy"` or
    /// `"arrow"`; see `batch::ColumnBuilder::finish`); the result is then exhausted.
    /// The engine's batches are copied into the columns as they arrive, with the GIL
    /// released.
    fn take_columns<'py>(&mut self, py: Python<'py>, target: &str) -> PyResult<Bound<'py, PyList>> {
        let target = match target {
            "numpy" => batch::Target::Numpy,
            _ => batch::Target::Arrow,
        };
        let mut builders: Vec<batch::ColumnBuilder> =
            self.columns.iter().map(|c| batch::ColumnBuilder::new(c, target)).collect();
        let current = self.current.take();
        let stream = self.stream.as_mut();
        let filled = py.detach(|| -> PyResult<()> {
            let conversion = |(state, message): batch::ConvError| boundary_error("DataError", state, message);
            if let Some((mut batch, at)) = current {
                batch::append(&mut builders, &mut batch, at).map_err(conversion)?;
            }
            if let Some(stream) = stream {
                while let Some(mut batch) = stream.next_batch().map_err(engine_error)? {
                    batch::append(&mut builders, &mut batch, 0).map_err(conversion)?;
                }
            }
            Ok(())
        });
        with_cause(py, &self.owner, filled)?;
        let out = PyList::empty(py);
        for b in builders {
            out.append(b.finish(py, target)?)?;
        }
        Ok(out)
    }

    /// Ends the result (a cursor re-executed or closed): a query still running stops.
    fn discard(&mut self, py: Python<'_>) {
        self.end_stream(py);
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
fn with_cause<T>(py: Python<'_>, owner: &udf::Owner, r: PyResult<T>) -> PyResult<T> {
    r.map_err(|e| {
        if let Some(cause) = owner.take_exception() {
            e.set_cause(py, Some(cause));
        }
        e
    })
}

/// Row `k` of a batch as a tuple: from the column vectors when the batch has them.
fn batch_row_to_tuple<'py>(
    py: Python<'py>,
    columns: &[Column],
    batch: &mut beedb::ResultBatch,
    k: usize,
) -> PyResult<Bound<'py, PyTuple>> {
    if let Some(slices) = batch.column_slices()
        && slices.len() == columns.len()
    {
        return slices_to_tuple(py, columns, &slices, k);
    }
    row_to_tuple(py, batch.row(k).values())
}

fn slices_to_tuple<'py>(
    py: Python<'py>,
    columns: &[Column],
    slices: &[beedb::ColumnSlice<'_>],
    k: usize,
) -> PyResult<Bound<'py, PyTuple>> {
    let items = columns
        .iter()
        .zip(slices)
        .map(|(c, s)| convert::slice_value_to_py(py, &c.data_type, s, k))
        .collect::<PyResult<Vec<_>>>()?;
    PyTuple::new(py, items)
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
    m.add_class::<cursor::Cursor>()?;
    m.add("RawError", m.py().get_type::<RawError>())?;
    Ok(())
}
