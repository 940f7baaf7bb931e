//! Functions an application defines: scalar functions and aggregates registered on a
//! [`Connection`](crate::Connection) and called from SQL like built-in ones.
//!
//! The engine calls them a batch at a time — one call per batch of up to 1,024 rows,
//! not one per row — so a host language that must take a lock to run code (Python's
//! GIL) takes it once per batch. Values cross as [`Value`]s; the result of a scalar
//! function is cast to the type it declared (an assignment cast: a value that does not
//! fit is an error, never a silent conversion).
//!
//! They are the generic path only: no bee is made for an expression that calls one,
//! a statement calling one is planned again at each execution (a function can be
//! replaced between two executions), and a call is never folded into a constant.

use std::any::Any;
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::types::{DataType, Value};

/// A scalar function defined by the application.
pub trait ScalarFunction: Send + Sync {
    /// The result type for arguments of these types; an error refuses the call
    /// when the statement is bound.
    fn return_type(&self, args: &[DataType]) -> Result<DataType>;

    /// Computes `rows` results: `args[i][k]` is argument `i` of row `k` (NULLs
    /// included). Returns exactly `rows` values.
    fn call(&self, args: &[Vec<Value>], rows: usize) -> Result<Vec<Value>>;
}

/// The running state of one group of an application-defined aggregate.
pub type AggregateState = Box<dyn Any + Send>;

/// An aggregate function defined by the application.
pub trait AggregateFunction: Send + Sync {
    /// The result type for arguments of these types.
    fn return_type(&self, args: &[DataType]) -> Result<DataType>;

    /// Adds rows to their groups: row `k` (argument `i` in `args[i][k]`, NULLs
    /// included) belongs to group `groups[k]`, whose state is `states[groups[k]]`,
    /// `None` until the group's first row.
    fn update(
        &self,
        states: &mut [Option<AggregateState>],
        groups: &[u32],
        args: &[Vec<Value>],
    ) -> Result<()>;

    /// The result of a group (`None`: a group that saw no rows, such as the one
    /// group of an aggregate over an empty table).
    fn finish(&self, state: Option<&AggregateState>) -> Result<Value>;
}

/// A registered scalar function: its name and argument count with the code.
#[derive(Clone)]
pub struct ScalarUdf {
    pub name: String,
    pub function: Arc<dyn ScalarFunction>,
}

/// A registered aggregate.
#[derive(Clone)]
pub struct AggregateUdf {
    pub name: String,
    pub function: Arc<dyn AggregateFunction>,
}

// Two references to a function are the same call target only if they are the same
// registration (plans compare expressions to find shared subexpressions).
impl PartialEq for ScalarUdf {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.function, &other.function)
    }
}

impl PartialEq for AggregateUdf {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.function, &other.function)
    }
}

impl fmt::Debug for ScalarUdf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ScalarUdf({})", self.name)
    }
}

impl fmt::Debug for AggregateUdf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "AggregateUdf({})", self.name)
    }
}

/// How many arguments a registration accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Arity {
    Exactly(usize),
    /// Any number (sqlite3's `narg = -1`).
    Any,
}

/// The functions registered on one connection, by lower-case name and arity. A
/// registration with an exact arity is preferred over one accepting any number.
/// Application functions are found before built-in ones of the same name, as in
/// SQLite.
#[derive(Clone, Default)]
pub struct Functions {
    scalars: HashMap<(String, Arity), ScalarUdf>,
    aggregates: HashMap<(String, Arity), AggregateUdf>,
}

impl Functions {
    pub fn is_empty(&self) -> bool {
        self.scalars.is_empty() && self.aggregates.is_empty()
    }

    /// Registers (or with `None` removes) scalar function `name`.
    pub fn set_scalar(
        &mut self,
        name: &str,
        arity: Arity,
        function: Option<Arc<dyn ScalarFunction>>,
    ) -> Result<()> {
        let name = checked_name(name)?;
        match function {
            Some(function) => {
                self.scalars
                    .insert((name.clone(), arity), ScalarUdf { name, function });
            }
            None => {
                self.scalars.remove(&(name, arity));
            }
        }
        Ok(())
    }

    /// Registers (or with `None` removes) aggregate `name`.
    pub fn set_aggregate(
        &mut self,
        name: &str,
        arity: Arity,
        function: Option<Arc<dyn AggregateFunction>>,
    ) -> Result<()> {
        let name = checked_name(name)?;
        match function {
            Some(function) => {
                self.aggregates
                    .insert((name.clone(), arity), AggregateUdf { name, function });
            }
            None => {
                self.aggregates.remove(&(name, arity));
            }
        }
        Ok(())
    }

    /// The scalar function a call of `name` with `nargs` arguments runs.
    pub fn scalar(&self, name: &str, nargs: usize) -> Option<&ScalarUdf> {
        if self.scalars.is_empty() {
            return None;
        }
        let name = name.to_string();
        self.scalars
            .get(&(name.clone(), Arity::Exactly(nargs)))
            .or_else(|| self.scalars.get(&(name, Arity::Any)))
    }

    /// The aggregate a call of `name` with `nargs` arguments runs.
    pub fn aggregate(&self, name: &str, nargs: usize) -> Option<&AggregateUdf> {
        if self.aggregates.is_empty() {
            return None;
        }
        let name = name.to_string();
        self.aggregates
            .get(&(name.clone(), Arity::Exactly(nargs)))
            .or_else(|| self.aggregates.get(&(name, Arity::Any)))
    }

    /// Whether some aggregate of this name is registered (with any arity).
    pub fn has_aggregate_named(&self, name: &str) -> bool {
        !self.aggregates.is_empty() && self.aggregates.keys().any(|(n, _)| n == name)
    }
}

/// Names are matched as SQL matches unquoted identifiers: case-insensitively.
fn checked_name(name: &str) -> Result<String> {
    let ok = !name.is_empty()
        && name.len() <= 255
        && name.chars().all(|c| c.is_alphanumeric() || c == '_')
        && !name.starts_with(|c: char| c.is_ascii_digit());
    if !ok {
        return Err(Error::semantic(
            "42602",
            format!(
                "invalid function name \"{name}\": use letters, digits and underscores, not starting with a digit"
            ),
        ));
    }
    Ok(name.to_lowercase())
}

/// Calls `f` on `rows` rows of argument columns and casts the results to `ty`.
pub(crate) fn call_scalar(
    udf: &ScalarUdf,
    args: &[Vec<Value>],
    rows: usize,
    ty: &DataType,
) -> Result<Vec<Value>> {
    let out = udf.function.call(args, rows)?;
    if out.len() != rows {
        return Err(Error::semantic(
            "39004",
            format!(
                "function {} returned {} values for {rows} rows",
                udf.name,
                out.len()
            ),
        ));
    }
    out.into_iter()
        .map(|v| fit_result(&udf.name, v, ty))
        .collect()
}

/// A function's result as a value of its declared type.
pub(crate) fn fit_result(name: &str, v: Value, ty: &DataType) -> Result<Value> {
    if v.is_null() || v.data_type().as_ref() == Some(ty) {
        return Ok(v);
    }
    v.cast_for_assignment(ty).map_err(|e| {
        let e = Error::from(e);
        Error::new(
            e.kind,
            e.sqlstate,
            format!(
                "function {name} returned a value that is not of its declared type {ty}: {}",
                e.message
            ),
        )
    })
}
