//! `generate_series(start, stop [, step])` in FROM: a leaf operator that produces the
//! series batch by batch, so a series of billions of rows streams (LIMIT stops it,
//! cancel and `statement_timeout` reach it at every batch through `Exec::node`) and
//! is never held whole.
//!
//! As PostgreSQL's generate_series_int4/int8/numeric/timestamp: the step defaults
//! to 1 (not for timestamps), a zero step is 22023 "step size cannot equal zero",
//! NULL arguments give no rows, the series ends before the value that would pass
//! `stop` (or overflow the type), and a timestamp series adds the interval to the
//! previous value each time (January 31 + 1 month = February 29, then March 29).

use std::cmp::Ordering;

use super::{Exec, Flow, Out, make_batch};
use crate::error::{Error, Result};
use crate::expr::Expr;
use crate::plan::Plan;
use crate::types::{DataType, Decimal, Interval, Value};
use crate::vector::{BATCH_SIZE, Data, Vector};

fn zero_step() -> Error {
    Error::data("22023", "step size cannot equal zero")
}

pub(super) fn generate_series(ex: &Exec<'_>, plan: &Plan, args: &[Expr], out: Out) -> Result<Flow> {
    let ty = plan.types().first().copied().ok_or_else(|| Error::internal("series without a column"))?;
    let mut vals = Vec::with_capacity(args.len());
    for a in args {
        let v = ex.eval_const(a)?;
        if v.is_null() {
            return Ok(Flow::Continue);
        }
        vals.push(v);
    }
    let int = |v: &Value| -> Result<i64> {
        match v {
            Value::SmallInt(x) => Ok(*x as i64),
            Value::Integer(x) => Ok(*x as i64),
            Value::BigInt(x) => Ok(*x),
            _ => Err(Error::internal("integer series over a non-integer value")),
        }
    };
    match (ty, vals.as_slice()) {
        (DataType::Integer | DataType::BigInt, [start, stop, rest @ ..]) => {
            let step = match rest.first() {
                Some(s) => int(s)?,
                None => 1,
            };
            if step == 0 {
                return Err(zero_step());
            }
            let (mut cur, stop) = (Some(int(start)?), int(stop)?);
            let (lo, hi) = if ty == DataType::Integer { (i32::MIN as i64, i32::MAX as i64) } else { (i64::MIN, i64::MAX) };
            emit(ty, out, |buf: &mut Vec<i64>| {
                while let Some(x) = cur {
                    if (step > 0 && x > stop) || (step < 0 && x < stop) {
                        cur = None;
                        break;
                    }
                    buf.push(x);
                    // The series ends where the next value would overflow the type.
                    cur = x.checked_add(step).filter(|n| (lo..=hi).contains(n));
                    if buf.len() == BATCH_SIZE {
                        break;
                    }
                }
                cur.is_some()
            })
        }
        (DataType::Decimal { .. }, [start, stop, rest @ ..]) => {
            let dec = |v: &Value| -> Result<Decimal> {
                match v {
                    Value::Decimal(d) => Ok(*d),
                    _ => Err(Error::internal("numeric series over a non-numeric value")),
                }
            };
            let step = match rest.first() {
                Some(s) => dec(s)?,
                None => Decimal::from_i64(1),
            };
            let sign = step.unscaled().signum();
            if sign == 0 {
                return Err(zero_step());
            }
            let stop = dec(stop)?;
            let mut cur = Some(dec(start)?);
            let mut cols_out = |cols: Vec<Decimal>| Vector::from_data(ty, Data::Dec(cols), None);
            stream(out, &mut cols_out, |buf: &mut Vec<Decimal>| {
                while let Some(x) = cur {
                    let past = x.cmp(&stop);
                    if (sign > 0 && past == Ordering::Greater) || (sign < 0 && past == Ordering::Less) {
                        cur = None;
                        break;
                    }
                    buf.push(x);
                    cur = Some(x.add(&step)?);
                    if buf.len() == BATCH_SIZE {
                        break;
                    }
                }
                Ok(cur.is_some())
            })
        }
        (DataType::Timestamp, [Value::Timestamp(start), Value::Timestamp(stop), Value::Interval(step)]) => {
            let dir = step.cmp(&Interval::ZERO);
            if dir == Ordering::Equal {
                return Err(zero_step());
            }
            let stop = *stop;
            let mut cur = Some(*start);
            let mut cols_out = |cols: Vec<i64>| Vector::from_data(ty, Data::I64(cols), None);
            stream(out, &mut cols_out, |buf: &mut Vec<i64>| {
                while let Some(x) = cur {
                    if (dir == Ordering::Greater && x > stop) || (dir == Ordering::Less && x < stop) {
                        cur = None;
                        break;
                    }
                    buf.push(x.0);
                    cur = Some(x.add_interval(step)?);
                    if buf.len() == BATCH_SIZE {
                        break;
                    }
                }
                Ok(cur.is_some())
            })
        }
        _ => Err(Error::internal(format!("generate_series of type {ty}"))),
    }
}

/// Integer series: fills batches of `ty` (integer or bigint) by `fill` until it
/// reports the end.
fn emit(ty: DataType, out: Out, mut fill: impl FnMut(&mut Vec<i64>) -> bool) -> Result<Flow> {
    let mut to_vector = |vals: Vec<i64>| match ty {
        DataType::Integer => Vector::from_data(ty, Data::I32(vals.into_iter().map(|x| x as i32).collect()), None),
        _ => Vector::from_data(ty, Data::I64(vals), None),
    };
    stream(out, &mut to_vector, |buf| Ok(fill(buf)))
}

/// Pushes the batches `fill` produces (it returns whether more follow) as one-column
/// batches built by `to_vector`.
fn stream<T>(
    out: Out,
    to_vector: &mut dyn FnMut(Vec<T>) -> Vector,
    mut fill: impl FnMut(&mut Vec<T>) -> Result<bool>,
) -> Result<Flow> {
    loop {
        let mut buf = Vec::with_capacity(BATCH_SIZE);
        let more = fill(&mut buf)?;
        let n = buf.len();
        if n > 0 && out(make_batch(vec![to_vector(buf)], n))? == Flow::Stop {
            return Ok(Flow::Stop);
        }
        if !more {
            return Ok(Flow::Continue);
        }
    }
}

