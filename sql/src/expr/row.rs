//! The row evaluator: an expression over one row of [`Value`]s, computed value by
//! value, for the statements that touch one row (the point path's filters,
//! projections and UPDATE's SET expressions, an INSERT's VALUES row, defaults).
//!
//! The vectorized evaluator ([`super::eval`]) is its generic twin and the reference:
//! over a one-row batch it gives the same value, of the same variant, or the same
//! error (a randomized differential test compares the two: `tests/row.rs`). What
//! the row evaluator saves is the batch machinery per row — one-row vectors made for
//! every column and every operand, a batch, and the value read back out — which cost
//! a point UPDATE most of its expression time and an allocation per step.
//!
//! It computes the nodes the single-row statements are made of natively: columns,
//! literals, parameters, the clock, arithmetic and negation of integers, floats and
//! numerics, comparisons of operands of one type (not blank-padded `char`, not
//! intervals), AND, OR, NOT, IS [NOT] NULL and IS [NOT] TRUE/FALSE, with the
//! vectorized evaluator's laziness (AND stops at the first FALSE, OR at the first
//! TRUE). Any other node — casts, functions, CASE, LIKE, IN lists, subqueries … — is
//! handed, with its whole subtree, to the vectorized evaluator over a one-row batch
//! of the row ([`eval_row_batch`]), so every expression is computed, and a native
//! node never has to agree with the twin on more than its own semantics.

use super::eval::value_vector;
use super::kernels::{SqlCmp, arith_dec, arith_f32, arith_f64};
use super::{ArithOp, CmpOp, EvalContext, Expr, ExprKind};
use crate::error::{Error, Result};
use crate::types::number::{SqlInt, int_add, int_div, int_mul, int_neg, int_rem, int_sub};
use crate::types::{DataType, Decimal, Value};
use crate::vector::{Batch, dec64_scale};

/// Evaluates `expr` on one row of values (column `i` is `row[i]`, a value of that
/// column's type, as the binder typed the column's references).
pub fn eval_row(expr: &Expr, row: &[Value], ctx: &EvalContext<'_>) -> Result<Value> {
    ev(expr, row, ctx)
}

/// `expr` over `row` through the vectorized evaluator: a one-row batch of the row's
/// values, each column typed as `expr`'s references to it are (a NULL value has no
/// type of its own). The row evaluator's fallback, and its reference in tests.
pub fn eval_row_batch(expr: &Expr, row: &[Value], ctx: &EvalContext<'_>) -> Result<Value> {
    let mut types: Vec<Option<DataType>> = vec![None; row.len()];
    column_types(expr, &mut types);
    let mut columns = Vec::with_capacity(row.len());
    for (i, v) in row.iter().enumerate() {
        let ty = types[i].or_else(|| v.data_type()).unwrap_or(DataType::Text);
        columns.push(value_vector(ty, v)?);
    }
    let batch = Batch::new(columns, 1);
    let out = super::eval(expr, &batch, ctx)?;
    Ok(out.value(0))
}

fn column_types(e: &Expr, out: &mut [Option<DataType>]) {
    if let ExprKind::Column(i) = e.kind
        && i < out.len()
        && out[i].is_none()
    {
        out[i] = Some(e.ty);
    }
    for c in e.children() {
        column_types(c, out);
    }
}

/// Stack headroom and segment, as the vectorized evaluator's (expressions nest as
/// deep as the parser allows).
const STACK_RED_ZONE: usize = 256 * 1024;
const STACK_SEGMENT: usize = 4 * 1024 * 1024;

fn ev(e: &Expr, row: &[Value], ctx: &EvalContext<'_>) -> Result<Value> {
    stacker::maybe_grow(STACK_RED_ZONE, STACK_SEGMENT, || node(e, row, ctx))
}

fn node(e: &Expr, row: &[Value], ctx: &EvalContext<'_>) -> Result<Value> {
    match &e.kind {
        ExprKind::Column(i) => {
            let v = row.get(*i).ok_or_else(|| Error::internal(format!("evaluator: column {i} is not in the batch")))?;
            conform(e.ty, v)
        }
        ExprKind::Literal(v) => conform(e.ty, v),
        ExprKind::Param(i) => {
            let v = ctx
                .params
                .get(*i)
                .ok_or_else(|| Error::semantic("42P02", format!("there is no parameter ${}", i + 1)))?;
            conform(e.ty, v)
        }
        // The clock: one value for the transaction.
        ExprKind::Func { func, args } if func.is_clock() && args.is_empty() => {
            conform(e.ty, &ctx.subqueries.sequence(*func, &[])?)
        }
        ExprKind::Arith { op, left, right } if arith_native(e.ty, left.ty, right.ty) => {
            let a = ev(left, row, ctx)?;
            let b = ev(right, row, ctx)?;
            arith(*op, a, b, e.ty)
        }
        ExprKind::Neg(x) if x.ty == e.ty && matches!(e.ty, T::SmallInt | T::Integer | T::BigInt | T::Real | T::Double) => {
            Ok(match ev(x, row, ctx)? {
                Value::Null => Value::Null,
                Value::SmallInt(v) => Value::SmallInt(int_neg(v)?),
                Value::Integer(v) => Value::Integer(int_neg(v)?),
                Value::BigInt(v) => Value::BigInt(int_neg(v)?),
                Value::Real(v) => Value::Real(-v),
                Value::Double(v) => Value::Double(-v),
                _ => return Err(Error::internal("evaluator: negation of an unexpected value")),
            })
        }
        ExprKind::Compare { op, left, right } if compare_native(left.ty, right.ty) => {
            let a = ev(left, row, ctx)?;
            let b = ev(right, row, ctx)?;
            compare(*op, &a, &b)
        }
        ExprKind::And(list) => and_or(list, true, row, ctx),
        ExprKind::Or(list) => and_or(list, false, row, ctx),
        ExprKind::Not(x) => Ok(match ev(x, row, ctx)? {
            Value::Null => Value::Null,
            Value::Boolean(b) => Value::Boolean(!b),
            _ => return Err(Error::internal("evaluator: NOT of a non-boolean")),
        }),
        ExprKind::IsNull { expr, negated } => Ok(Value::Boolean(ev(expr, row, ctx)?.is_null() != *negated)),
        ExprKind::IsBool { expr, value, negated } => match ev(expr, row, ctx)? {
            Value::Null => Ok(Value::Boolean(*negated)),
            Value::Boolean(b) => Ok(Value::Boolean((b == *value) != *negated)),
            _ => Err(Error::internal("evaluator: IS TRUE of a non-boolean")),
        },
        // Everything else through the vectorized twin, subtree and all.
        _ => eval_row_batch(e, row, ctx),
    }
}

use DataType as T;

/// `v` as a value of type `ty`, exactly as the vectorized evaluator gives it back
/// (a one-row vector of type `ty` holding `v`, read out): the value itself when it
/// is already of that type; a `numeric(p, s)` of at most 18 digits at the type's
/// scale (its vectors hold scaled integers); anything else through that vector,
/// which casts.
fn conform(ty: DataType, v: &Value) -> Result<Value> {
    let exact = match (&ty, v) {
        (_, Value::Null)
        | (T::Boolean, Value::Boolean(_))
        | (T::SmallInt, Value::SmallInt(_))
        | (T::Integer, Value::Integer(_))
        | (T::BigInt, Value::BigInt(_))
        | (T::Real, Value::Real(_))
        | (T::Double, Value::Double(_))
        | (T::Date, Value::Date(_))
        | (T::Timestamp, Value::Timestamp(_))
        | (T::Interval, Value::Interval(_))
        | (T::Text, Value::Text(_))
        | (T::Varchar(_), Value::Varchar(_))
        | (T::Char(_), Value::Char(_)) => true,
        (T::Decimal { .. }, Value::Decimal(d)) => {
            return Ok(Value::Decimal(match dec64_scale(&ty) {
                Some(s) => d.to_scaled_i64(s).map_or(*d, |x| Decimal::from_scaled_i64(x, s)),
                None => *d,
            }));
        }
        _ => false,
    };
    if exact {
        return Ok(v.clone());
    }
    Ok(value_vector(ty, v)?.value(0))
}

/// Whether arithmetic of result type `ty` over operands of types `l` and `r` is
/// computed natively: integers, floats or numerics, all three of one kind (the
/// binder gives both operands the result type).
fn arith_native(ty: DataType, l: DataType, r: DataType) -> bool {
    match ty {
        T::SmallInt | T::Integer | T::BigInt | T::Real | T::Double => l == ty && r == ty,
        T::Decimal { .. } => matches!(l, T::Decimal { .. }) && matches!(r, T::Decimal { .. }),
        _ => false,
    }
}

fn arith(op: ArithOp, a: Value, b: Value, ty: DataType) -> Result<Value> {
    fn int<X: SqlInt>(op: ArithOp, x: X, y: X) -> crate::types::Result<X> {
        match op {
            ArithOp::Add => int_add(x, y),
            ArithOp::Sub => int_sub(x, y),
            ArithOp::Mul => int_mul(x, y),
            ArithOp::Div => int_div(x, y),
            ArithOp::Mod => int_rem(x, y),
        }
    }
    Ok(match (a, b) {
        (Value::Null, _) | (_, Value::Null) => Value::Null,
        (Value::SmallInt(x), Value::SmallInt(y)) => Value::SmallInt(int(op, x, y)?),
        (Value::Integer(x), Value::Integer(y)) => Value::Integer(int(op, x, y)?),
        (Value::BigInt(x), Value::BigInt(y)) => Value::BigInt(int(op, x, y)?),
        (Value::Real(x), Value::Real(y)) => Value::Real(arith_f32(op, x, y)?),
        (Value::Double(x), Value::Double(y)) => Value::Double(arith_f64(op, x, y)?),
        (Value::Decimal(x), Value::Decimal(y)) => {
            let r = arith_dec(op, x, y)?;
            match ty {
                // As the vectorized path: the typmod applied, the wide value kept.
                T::Decimal { precision: Some(p), scale } => Value::Decimal(r.apply_typmod(p, scale)?),
                _ => Value::Decimal(r),
            }
        }
        _ => return Err(Error::internal("evaluator: numeric operands of unexpected layout")),
    })
}

/// Whether a comparison of operands of types `l` and `r` is computed natively: one
/// type whose values compare as the vectorized kernels compare them value by value
/// (not `char`, compared blank-padded, nor intervals, nor mixed types).
fn compare_native(l: DataType, r: DataType) -> bool {
    match (l, r) {
        (T::Decimal { .. }, T::Decimal { .. }) => true,
        (T::Text | T::Varchar(_), T::Text | T::Varchar(_)) => true,
        (T::Boolean | T::SmallInt | T::Integer | T::BigInt | T::Real | T::Double | T::Date | T::Timestamp, _) => l == r,
        _ => false,
    }
}

/// `x op y` as the vectorized comparison kernel computes it.
fn holds<X: SqlCmp>(op: CmpOp, x: X, y: X) -> bool {
    match op {
        CmpOp::Eq => x.eq(y),
        CmpOp::NotEq => !x.eq(y),
        CmpOp::Lt => x.lt(y),
        CmpOp::LtEq => !y.lt(x),
        CmpOp::Gt => y.lt(x),
        CmpOp::GtEq => !x.lt(y),
    }
}

fn compare(op: CmpOp, a: &Value, b: &Value) -> Result<Value> {
    Ok(Value::Boolean(match (a, b) {
        (Value::Null, _) | (_, Value::Null) => return Ok(Value::Null),
        (Value::Boolean(x), Value::Boolean(y)) => holds(op, *x, *y),
        (Value::SmallInt(x), Value::SmallInt(y)) => holds(op, *x, *y),
        (Value::Integer(x), Value::Integer(y)) => holds(op, *x, *y),
        (Value::BigInt(x), Value::BigInt(y)) => holds(op, *x, *y),
        (Value::Real(x), Value::Real(y)) => holds(op, *x, *y),
        (Value::Double(x), Value::Double(y)) => holds(op, *x, *y),
        (Value::Decimal(x), Value::Decimal(y)) => holds(op, *x, *y),
        (Value::Date(x), Value::Date(y)) => holds(op, x.0, y.0),
        (Value::Timestamp(x), Value::Timestamp(y)) => holds(op, x.0, y.0),
        (Value::Text(x) | Value::Varchar(x), Value::Text(y) | Value::Varchar(y)) => holds(op, x.as_str(), y.as_str()),
        _ => return Err(Error::internal("evaluator: comparison of operands of unexpected types")),
    }))
}

/// Three-valued AND (`is_and`) or OR, operand by operand: once the result is decided
/// (a FALSE for AND, a TRUE for OR) the later operands are not evaluated, as the
/// vectorized evaluator skips them for a decided row.
fn and_or(list: &[Expr], is_and: bool, row: &[Value], ctx: &EvalContext<'_>) -> Result<Value> {
    let dominant = !is_and;
    let mut null = false;
    for c in list {
        match ev(c, row, ctx)? {
            Value::Null => null = true,
            Value::Boolean(b) if b == dominant => return Ok(Value::Boolean(dominant)),
            Value::Boolean(_) => {}
            _ => return Err(Error::internal("evaluator: AND/OR operand is not boolean")),
        }
    }
    Ok(if null { Value::Null } else { Value::Boolean(!dominant) })
}
