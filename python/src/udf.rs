//! Python functions and aggregates called from SQL (`Connection.create_function`,
//! `create_aggregate`).
//!
//! The engine calls a function once per batch of rows (up to 1,024), so the GIL is
//! taken once per batch, not once per row: the statement runs with the GIL released
//! and each batch's Python calls run with it held. A row-at-a-time function is called
//! per row inside that; a vectorized one once per batch with one list per argument.
//! A Python exception becomes an SQL error (SQLSTATE 38000) whose message names the
//! function and carries Python's; the exception itself is kept and chained as the
//! `__cause__` of the error the statement raises.

use std::cell::RefCell;
use std::sync::{Arc, Mutex};

use beedb::{AggregateFunction, AggregateState, DataType, ScalarFunction, Value};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};

use crate::convert;

/// The connection a function was registered on: its number (to refuse a call back
/// into it, see [`Calling`]) and where the Python exception that failed one of its
/// statements waits to be chained to the error the statement raises. Per connection,
/// not per thread: a streamed statement calls its functions on the stream's producer
/// thread, and the error reaches Python on the cursor's.
#[derive(Clone, Default)]
pub struct Owner {
    pub connection: u64,
    pub exception: Arc<Mutex<Option<PyErr>>>,
}

impl Owner {
    /// Takes the exception a function raised while the connection's last statement ran.
    pub fn take_exception(&self) -> Option<PyErr> {
        self.exception.lock().unwrap_or_else(|p| p.into_inner()).take()
    }

    pub fn clear_exception(&self) {
        self.take_exception();
    }
}

thread_local! {
    /// The connections whose functions this thread is running now (innermost last).
    static CALLING: RefCell<Vec<u64>> = const { RefCell::new(Vec::new()) };
}

/// Marks this thread as running a function of `connection` until dropped.
struct Calling;

impl Calling {
    fn enter(connection: u64) -> Calling {
        CALLING.with(|c| c.borrow_mut().push(connection));
        Calling
    }
}

impl Drop for Calling {
    fn drop(&mut self) {
        CALLING.with(|c| c.borrow_mut().pop());
    }
}

/// Whether this thread is running a function that a statement of `connection`
/// called: then using that connection again would wait for itself.
pub fn calling_back(connection: u64) -> bool {
    CALLING.with(|c| c.borrow().contains(&connection))
}

/// The engine error for exception `e` raised by function `name`.
fn raised(py: Python<'_>, owner: &Owner, name: &str, what: &str, e: PyErr) -> beedb::Error {
    let text = e
        .value(py)
        .str()
        .map(|s| s.to_string())
        .unwrap_or_else(|_| "<unprintable exception>".into());
    let class = e
        .get_type(py)
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "Exception".into());
    *owner.exception.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
    beedb::Error::new(
        beedb::ErrorKind::Data,
        "38000",
        format!("{what} {name} raised {class}: {text}"),
    )
}

/// A result value that Python could not turn into SQL (an unsupported type, a
/// string with lone surrogates).
fn unconvertible(py: Python<'_>, name: &str, e: PyErr) -> beedb::Error {
    let text = e.value(py).str().map(|s| s.to_string()).unwrap_or_default();
    // Conversion errors carry (class, SQLSTATE, message, position, detail, hint) in
    // their args ([`crate::boundary_error`]).
    type RawArgs = (String, String, String, Option<usize>, Option<String>, Option<String>);
    let (state, message) = match e.value(py).getattr("args").and_then(|a| a.extract::<RawArgs>()) {
        Ok((_, state, message, ..)) if state.len() == 5 => (state, message),
        _ => (String::new(), text),
    };
    let sqlstate: &'static str = match state.as_str() {
        "22003" => "22003",
        "22021" => "22021",
        "22008" => "22008",
        _ => "39004",
    };
    beedb::Error::new(
        beedb::ErrorKind::Data,
        sqlstate,
        format!("function {name} returned a value SQL cannot hold: {message}"),
    )
}

/// A function's result type: the declared one, else its first argument's.
fn result_type(declared: Option<DataType>, args: &[DataType]) -> DataType {
    declared
        .or_else(|| args.first().copied())
        .unwrap_or(DataType::Text)
}

fn to_py_args<'py>(
    py: Python<'py>,
    args: &[Vec<Value>],
    k: usize,
) -> PyResult<Bound<'py, PyTuple>> {
    let items = args
        .iter()
        .map(|col| convert::value_to_py(py, &col[k]))
        .collect::<PyResult<Vec<_>>>()?;
    PyTuple::new(py, items)
}

/// A Python callable as a scalar SQL function.
pub struct PyScalar {
    pub name: String,
    pub func: Py<PyAny>,
    /// The declared result type; `None`: the first argument's type (text without one).
    pub returns: Option<DataType>,
    /// Called once per batch with one list per argument; returns a sequence.
    pub vectorized: bool,
    pub owner: Owner,
}

impl ScalarFunction for PyScalar {
    fn return_type(&self, args: &[DataType]) -> beedb::Result<DataType> {
        Ok(result_type(self.returns, args))
    }

    fn call(&self, args: &[Vec<Value>], rows: usize) -> beedb::Result<Vec<Value>> {
        Python::attach(|py| {
            let _calling = Calling::enter(self.owner.connection);
            let func = self.func.bind(py);
            let mut out = Vec::with_capacity(rows);
            if self.vectorized {
                let columns = args
                    .iter()
                    .map(|col| {
                        let items = col
                            .iter()
                            .map(|v| convert::value_to_py(py, v))
                            .collect::<PyResult<Vec<_>>>()?;
                        PyList::new(py, items)
                    })
                    .collect::<PyResult<Vec<_>>>()
                    .map_err(|e| unconvertible(py, &self.name, e))?;
                let result = func
                    .call1(
                        PyTuple::new(py, columns)
                            .map_err(|e| raised(py, &self.owner, &self.name, "function", e))?,
                    )
                    .map_err(|e| raised(py, &self.owner, &self.name, "function", e))?;
                for item in result
                    .try_iter()
                    .map_err(|e| raised(py, &self.owner, &self.name, "function", e))?
                {
                    let item = item.map_err(|e| raised(py, &self.owner, &self.name, "function", e))?;
                    out.push(
                        convert::to_value(&item).map_err(|e| unconvertible(py, &self.name, e))?,
                    );
                }
            } else {
                for k in 0..rows {
                    let a =
                        to_py_args(py, args, k).map_err(|e| unconvertible(py, &self.name, e))?;
                    let r = func
                        .call1(a)
                        .map_err(|e| raised(py, &self.owner, &self.name, "function", e))?;
                    out.push(convert::to_value(&r).map_err(|e| unconvertible(py, &self.name, e))?);
                }
            }
            Ok(out)
        })
    }
}

/// A Python class with `step(*args)` and `finalize()` as an SQL aggregate: one
/// instance per group, made at the group's first row.
pub struct PyAggregate {
    pub name: String,
    pub class: Py<PyAny>,
    /// The declared result type; `None`: the first argument's type (text without one).
    pub returns: Option<DataType>,
    pub owner: Owner,
}

impl PyAggregate {
    fn instance(&self, py: Python<'_>) -> beedb::Result<Py<PyAny>> {
        self.class
            .bind(py)
            .call0()
            .map(|i| i.unbind())
            .map_err(|e| raised(py, &self.owner, &self.name, "aggregate", e))
    }
}

impl AggregateFunction for PyAggregate {
    fn return_type(&self, args: &[DataType]) -> beedb::Result<DataType> {
        Ok(result_type(self.returns, args))
    }

    fn update(
        &self,
        states: &mut [Option<AggregateState>],
        groups: &[u32],
        args: &[Vec<Value>],
    ) -> beedb::Result<()> {
        Python::attach(|py| {
            let _calling = Calling::enter(self.owner.connection);
            for (k, &g) in groups.iter().enumerate() {
                let state = &mut states[g as usize];
                if state.is_none() {
                    *state = Some(Box::new(self.instance(py)?));
                }
                let Some(instance) = state.as_ref().and_then(|s| s.downcast_ref::<Py<PyAny>>())
                else {
                    return Err(beedb::Error::internal("aggregate state of another kind"));
                };
                let a = to_py_args(py, args, k).map_err(|e| unconvertible(py, &self.name, e))?;
                instance
                    .bind(py)
                    .call_method1(pyo3::intern!(py, "step"), a)
                    .map_err(|e| raised(py, &self.owner, &self.name, "aggregate", e))?;
            }
            Ok(())
        })
    }

    fn finish(&self, state: Option<&AggregateState>) -> beedb::Result<Value> {
        Python::attach(|py| {
            let _calling = Calling::enter(self.owner.connection);
            let instance = match state.and_then(|s| s.downcast_ref::<Py<PyAny>>()) {
                Some(i) => i.clone_ref(py),
                // A group without rows (an aggregate over no rows): a fresh instance's
                // finalize, as sqlite3 does.
                None => self.instance(py)?,
            };
            let r = instance
                .bind(py)
                .call_method0(pyo3::intern!(py, "finalize"))
                .map_err(|e| raised(py, &self.owner, &self.name, "aggregate", e))?;
            convert::to_value(&r).map_err(|e| unconvertible(py, &self.name, e))
        })
    }
}
