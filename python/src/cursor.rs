//! `beedb.Cursor`: the DB-API cursor, in Rust. A statement's per-call path (`execute`,
//! `fetchone`, iteration) is one call into this module with no Python frame of the
//! module's own: the implicit `BEGIN` is decided here from the statement's first word,
//! the connection's thread and closed checks are a thread token and an atomic flag,
//! and errors become the DB-API classes (`beedb/__init__.py`'s `_translate`) only when
//! one is raised. What stays Python: the `Connection`, the exception classes, the
//! module's constants and the batch path's NumPy / pyarrow assembly (one call per
//! result).

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyList, PyString, PyTuple};

use crate::{RawConnection, RawError, RawResult, boundary_error, thread_token};

static TRANSLATE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// The DB-API exception for an error of this module: a [`RawError`] becomes its class
/// by `beedb._translate` (`sql` turns its byte position into a character position),
/// keeping the `__cause__` (the exception a Python function raised); any other error
/// (one raised by a Python object, a `KeyboardInterrupt`) is left as it is.
pub(crate) fn translate(py: Python<'_>, e: PyErr, sql: Option<&str>) -> PyErr {
    if !e.is_instance_of::<RawError>(py) {
        return e;
    }
    match TRANSLATE
        .import(py, "beedb", "_translate")
        .and_then(|t| t.call1((e.value(py), sql)))
    {
        Ok(translated) => {
            let translated = PyErr::from_value(translated);
            translated.set_cause(py, e.cause(py));
            translated
        }
        Err(other) => other,
    }
}

fn programming_error(py: Python<'_>, message: &str) -> PyErr {
    translate(py, boundary_error("ProgrammingError", "", message.into()), None)
}

/// What a statement's first word says about it: whether it opens a transaction
/// implicitly when the connection is not in autocommit mode (data and schema changes,
/// as sqlite3 does for DML, and SAVEPOINT, as psycopg2 does), and whether the
/// cursor's `rowcount` is the number of rows it changed.
fn classify(sql: &str) -> (bool, bool) {
    let word = first_word(sql);
    let is = |w: &str| word.eq_ignore_ascii_case(w);
    let counted = ["insert", "update", "delete", "merge", "copy"].into_iter().any(is);
    let begins = counted || ["create", "drop", "alter", "truncate", "savepoint"].into_iter().any(is);
    (begins, counted)
}

/// The statement's first word (letters and `_`), after blanks and comments.
fn first_word(sql: &str) -> &str {
    let mut rest = sql;
    loop {
        let trimmed = rest.trim_start();
        if let Some(after) = trimmed.strip_prefix("--") {
            rest = after.find('\n').map_or("", |j| &after[j + 1..]);
        } else if let Some(after) = trimmed.strip_prefix("/*") {
            rest = after.find("*/").map_or("", |j| &after[j + 2..]);
        } else {
            rest = trimmed;
            break;
        }
    }
    let end = rest
        .char_indices()
        .find(|&(_, c)| !(c.is_alphabetic() || c == '_'))
        .map_or(rest.len(), |(i, _)| i);
    &rest[..end]
}

/// A DB-API cursor. A query's rows stream from the engine as they are fetched (never
/// held whole); closing the cursor, executing again on it or dropping it ends the
/// stream and cancels what is left of the query. Another statement on the same
/// connection first runs an open stream's query to its end (its remaining rows stay
/// readable here, as of the query's own snapshot). See python/README.md.
#[pyclass(module = "beedb", name = "Cursor", weakref)]
pub(crate) struct Cursor {
    /// The `beedb.Connection` (PEP 249's `cursor.connection`).
    #[pyo3(get)]
    connection: Py<PyAny>,
    /// Its engine session.
    raw: Py<RawConnection>,
    /// The connection's thread (a [`thread_token`]) when it checks that it is used
    /// only there (`check_same_thread`); 0 when it does not.
    thread: u64,
    /// PEP 249's `arraysize`: `fetchmany()`'s default.
    #[pyo3(get, set)]
    arraysize: isize,
    /// The last statement's result while it has rows to fetch.
    result: Option<RawResult>,
    description: Option<Py<PyTuple>>,
    rowcount: i64,
    closed: bool,
}

impl Cursor {
    /// Fails unless the cursor is open and its last statement returned rows.
    fn require_result(&self, py: Python<'_>) -> PyResult<()> {
        if self.closed {
            return Err(programming_error(py, "Cannot operate on a closed cursor."));
        }
        if self.result.is_none() && self.description.is_none() {
            return Err(programming_error(py, "no results to fetch: the last statement returned no rows"));
        }
        Ok(())
    }

    /// Ends the last statement's result (a query still running is cancelled) and
    /// forgets its description and count.
    fn reset(&mut self, py: Python<'_>) -> PyResult<()> {
        if self.closed {
            return Err(programming_error(py, "Cannot operate on a closed cursor."));
        }
        if let Some(mut result) = self.result.take() {
            result.end_stream(py);
        }
        self.description = None;
        self.rowcount = -1;
        Ok(())
    }

    /// The connection's checks (its thread, whether it is closed) and the statement
    /// as a `&str`; `begin`: whether the statement opens a transaction implicitly.
    fn check_call<'a>(&self, py: Python<'_>, operation: &'a Bound<'_, PyAny>) -> PyResult<&'a Bound<'a, PyString>> {
        let Ok(sql) = operation.cast::<PyString>() else {
            return Err(programming_error(py, "the SQL must be a str"));
        };
        if self.thread != 0 && self.thread != thread_token() {
            // The connection's own check raises its error.
            self.connection.bind(py).call_method0(intern!(py, "_check"))?;
        }
        if self.raw.get().is_closed() {
            return Err(programming_error(py, "Cannot operate on a closed database."));
        }
        Ok(sql)
    }

    fn autocommit(&self, py: Python<'_>) -> PyResult<bool> {
        self.connection.bind(py).getattr(intern!(py, "autocommit"))?.is_truthy()
    }

    /// The statement's text; a `str` UTF-8 cannot hold (a lone surrogate) is a
    /// `DataError`, as a parameter's is.
    fn sql_text<'a>(py: Python<'_>, sql: &'a Bound<'_, PyString>) -> PyResult<&'a str> {
        sql.to_str().map_err(|e| {
            translate(
                py,
                boundary_error("DataError", "22021", format!("invalid byte sequence for encoding \"UTF8\": {e}")),
                None,
            )
        })
    }

    /// Takes the rest of the result as columns for `target` (`"numpy"` or `"arrow"`)
    /// and hands them to `beedb`'s assembly function `assemble`.
    fn columns_to<'py>(&mut self, py: Python<'py>, target: &str, assemble: &str) -> PyResult<Bound<'py, PyAny>> {
        self.require_result(py)?;
        let columns = match self.result.as_mut() {
            Some(result) => result.take_columns(py, target).map_err(|e| translate(py, e, None))?,
            None => PyList::empty(py),
        };
        py.import(intern!(py, "beedb"))?.getattr(assemble)?.call1((columns,))
    }
}

#[pymethods]
impl Cursor {
    /// A cursor on `connection` (a `beedb.Connection`; `connection.cursor()` makes one).
    #[new]
    fn new(py: Python<'_>, connection: Bound<'_, PyAny>) -> PyResult<Cursor> {
        let raw = connection.getattr(intern!(py, "_raw"))?.cast_into::<RawConnection>()?.unbind();
        // The connection checked its thread before making the cursor: this is it.
        let checks_thread = !connection.getattr(intern!(py, "_thread"))?.is_none();
        Ok(Cursor {
            connection: connection.unbind(),
            raw,
            thread: if checks_thread { thread_token() } else { 0 },
            arraysize: 1,
            result: None,
            description: None,
            rowcount: -1,
            closed: false,
        })
    }

    /// PEP 249's `description`: per column `(name, type name, None, None, precision,
    /// scale, None)`; None before a statement and for one that returns no rows.
    #[getter]
    fn description(&self, py: Python<'_>) -> Option<Py<PyTuple>> {
        self.description.as_ref().map(|d| d.clone_ref(py))
    }

    /// The rows the last data change changed (also with `RETURNING`); -1 for a query
    /// (the count is not known before the end, as in sqlite3) and before a statement.
    #[getter]
    fn rowcount(&self) -> i64 {
        self.rowcount
    }

    /// Always None: BeeDB's tables have no row ids.
    #[getter]
    fn lastrowid(&self) -> Option<i64> {
        None
    }

    /// Runs `operation` with `parameters` (a sequence; `?` or `$n` placeholders); a
    /// query's rows are then fetched from this cursor. Returns the cursor.
    #[pyo3(signature = (operation, parameters = None))]
    fn execute<'py>(
        mut slf: PyRefMut<'py, Self>,
        operation: &Bound<'py, PyAny>,
        parameters: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<PyRefMut<'py, Self>> {
        let py = slf.py();
        slf.reset(py)?;
        let sql = slf.check_call(py, operation)?;
        let sql = Cursor::sql_text(py, sql)?;
        let (begins, counted) = classify(sql);
        let begin = begins && !slf.autocommit(py)?;
        let params = match parameters {
            Some(p) => p.clone(),
            None => PyTuple::empty(py).into_any(),
        };
        let result = slf.raw.get().execute(py, sql, &params, begin).map_err(|e| translate(py, e, Some(sql)))?;
        // A write counts the rows it changed, also when RETURNING makes it a result set.
        if counted {
            slf.rowcount = result.rows_affected().map_or(-1, |n| n as i64);
        }
        if result.has_rows() {
            slf.description = result.description.as_ref().map(|d| d.clone_ref(py));
            slf.result = Some(result);
        }
        Ok(slf)
    }

    /// Runs `operation` (a statement that returns no rows) once per parameter
    /// sequence of `seq_of_parameters`; `rowcount` is the total of rows changed.
    fn executemany<'py>(
        mut slf: PyRefMut<'py, Self>,
        operation: &Bound<'py, PyAny>,
        seq_of_parameters: &Bound<'py, PyAny>,
    ) -> PyResult<PyRefMut<'py, Self>> {
        let py = slf.py();
        slf.reset(py)?;
        let sql = slf.check_call(py, operation)?;
        let sql = Cursor::sql_text(py, sql)?;
        let begin = classify(sql).0 && !slf.autocommit(py)?;
        let n = slf
            .raw
            .get()
            .executemany(py, sql, seq_of_parameters, begin)
            .map_err(|e| translate(py, e, Some(sql)))?;
        slf.rowcount = n as i64;
        Ok(slf)
    }

    fn setinputsizes(&self, _sizes: &Bound<'_, PyAny>) {}

    #[pyo3(signature = (_size, _column = None))]
    fn setoutputsize(&self, _size: &Bound<'_, PyAny>, _column: Option<&Bound<'_, PyAny>>) {}

    /// The next row as a tuple, or None at the end.
    fn fetchone<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyTuple>>> {
        self.require_result(py)?;
        match self.result.as_mut() {
            Some(result) => result.next_tuple(py).map_err(|e| translate(py, e, None)),
            None => Ok(None),
        }
    }

    /// Up to `size` (default `arraysize`) more rows, as a list of tuples.
    #[pyo3(signature = (size = None))]
    fn fetchmany<'py>(&mut self, py: Python<'py>, size: Option<isize>) -> PyResult<Bound<'py, PyList>> {
        self.require_result(py)?;
        let size = size.unwrap_or(self.arraysize);
        match self.result.as_mut() {
            Some(result) if size > 0 => result.fetch(py, size as usize).map_err(|e| translate(py, e, None)),
            _ => Ok(PyList::empty(py)),
        }
    }

    /// The remaining rows, as a list of tuples.
    fn fetchall<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        self.require_result(py)?;
        match self.result.as_mut() {
            Some(result) => result.fetch(py, usize::MAX).map_err(|e| translate(py, e, None)),
            None => Ok(PyList::empty(py)),
        }
    }

    /// The remaining rows as `{column name: NumPy array}`, as DuckDB's `fetchnumpy`:
    /// numbers as their dtype (numeric as float64), date/timestamp as
    /// datetime64[D]/[us], interval as timedelta64[us] (a month = 30 days), text as
    /// object arrays; a column with NULLs is a `numpy.ma` masked array.
    fn fetchnumpy<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.columns_to(py, "numpy", "_numpy_dict")
    }

    /// The remaining rows as a `pyarrow.Table`: the columns' buffers are handed to
    /// Arrow as they are (numeric as decimal128 with the column's precision and scale,
    /// date as date32, timestamp as timestamp[us], text as large_string, interval as
    /// month_day_nano_interval).
    fn fetch_arrow_table<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.columns_to(py, "arrow", "_arrow_table")
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyResult<PyRef<'_, Self>> {
        if slf.closed {
            return Err(programming_error(slf.py(), "Cannot operate on a closed cursor."));
        }
        Ok(slf)
    }

    fn __next__<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyTuple>>> {
        self.fetchone(py)
    }

    /// Ends the cursor: a query still running is cancelled; the cursor cannot be used
    /// again.
    fn close(&mut self, py: Python<'_>) {
        if let Some(mut result) = self.result.take() {
            result.end_stream(py);
        }
        self.closed = true;
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&mut self, py: Python<'_>, _args: &Bound<'_, PyTuple>) -> bool {
        self.close(py);
        false
    }
}
