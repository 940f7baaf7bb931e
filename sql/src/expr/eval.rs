//! The generic vectorized evaluator.

use super::{EvalContext, Expr, Func};
use crate::error::{Error, Result};
use crate::types::{DataType, Value};
use crate::vector::{Batch, Vector};

/// Evaluates `expr` over the live rows of `batch`: row `k` of the result is the value
/// for the `k`-th live row (the result has `batch.rows()` rows and no selection).
pub fn eval(expr: &Expr, batch: &Batch, ctx: &EvalContext<'_>) -> Result<Vector> {
    let _ = (expr, batch, ctx);
    Err(Error::not_supported("expression evaluation"))
}

/// Evaluates a boolean `expr` over the live rows of `batch` and returns the physical
/// positions (ascending) where it is true: the batch's new selection vector. NULL
/// counts as false.
pub fn eval_predicate(expr: &Expr, batch: &Batch, ctx: &EvalContext<'_>) -> Result<Vec<u32>> {
    let _ = (expr, batch, ctx);
    Err(Error::not_supported("predicate evaluation"))
}

/// Evaluates `expr` on one row of values (column `i` is `row[i]`).
pub fn eval_row(expr: &Expr, row: &[Value], ctx: &EvalContext<'_>) -> Result<Value> {
    let _ = (expr, row, ctx);
    Err(Error::not_supported("expression evaluation"))
}

pub(super) fn resolve_func(
    name: &str,
    args: &[DataType],
) -> Result<Option<(Func, Vec<DataType>, DataType)>> {
    let _ = (name, args);
    Ok(None)
}
