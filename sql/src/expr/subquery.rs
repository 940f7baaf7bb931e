//! Subquery expressions: uncorrelated ones run once per evaluation, correlated ones
//! once per distinct set of outer values in the batch. `IN` and quantified
//! comparisons combine the left value with the subquery's values three-valued:
//! `x IN (empty)` is false, `x NOT IN (…, NULL)` without a match is NULL, `x op ALL
//! (empty)` is true.

use std::cmp::Ordering;

use rustc_hash::FxHashMap;

use super::eval::{Col, Rows, bool_col, ev, is_char, push_value_as, side, str_side, value_vector};
use super::kernels::{S, in_set, internal};
use super::{CmpOp, EvalContext, SubqueryExpr, SubqueryKind, SubqueryResult};
use crate::error::{Error, Result};
use crate::types::text::bpchar_trim;
use crate::types::{DataType, Value};
use crate::vector::{Data, Vector};

pub(super) fn eval_subquery<'a>(
    s: &SubqueryExpr,
    ty: DataType,
    r: Rows<'a>,
    ctx: &EvalContext<'_>,
) -> Result<Col<'a>> {
    let n = r.n();
    if n == 0 {
        return Ok(Col::Own(Vector::new(ty, 0)));
    }
    let lhs = match &s.kind {
        SubqueryKind::In { expr, .. } | SubqueryKind::Quantified { expr, .. } => {
            Some(ev(expr, r, ctx)?)
        }
        _ => None,
    };
    // A row `(x, y, …) IN (q)`: its further operands; the subquery's rows come
    // flattened, one value per operand.
    let rest: Vec<Col> = match &s.kind {
        SubqueryKind::In { rest, .. } => rest.iter().map(|e| ev(e, r, ctx)).collect::<Result<_>>()?,
        _ => Vec::new(),
    };
    let operands = |k: usize| -> Result<Vec<Value>> {
        let mut row = vec![lhs_value(&lhs, k)?];
        row.extend(rest.iter().map(|c| c.v().value(c.idx(k))));
        Ok(row)
    };
    if s.correlated.is_empty() {
        let res = ctx.subqueries.run(s.id, &s.kind, &[])?;
        if let (SubqueryKind::In { negated, .. }, SubqueryResult::Values(vals)) = (&s.kind, &res)
            && !rest.is_empty()
        {
            let mut out = Vec::with_capacity(n);
            for k in 0..n {
                out.push(in_rows(&operands(k)?, vals)?.map(|b| b != *negated));
            }
            return Ok(tri_col(out, false));
        }
        return match (&s.kind, res, lhs) {
            (SubqueryKind::Scalar, SubqueryResult::Scalar(v), _) => {
                Ok(Col::Const(value_vector(ty, &v)?))
            }
            (SubqueryKind::Exists, SubqueryResult::Exists(b), _) => {
                Ok(bool_col(vec![b], None, true))
            }
            (SubqueryKind::In { negated, .. }, SubqueryResult::Values(vals), Some(lhs)) => {
                in_values(&lhs, &vals, *negated, n)
            }
            (SubqueryKind::Quantified { op, all, .. }, SubqueryResult::Values(vals), Some(lhs)) => {
                let m = if lhs.is_const() { 1 } else { n };
                let mut out = Vec::with_capacity(m);
                for i in 0..m {
                    out.push(quantified_row(
                        &lhs.v().value(lhs.idx(i)),
                        &vals,
                        *op,
                        *all,
                    )?);
                }
                Ok(tri_col(out, lhs.is_const()))
            }
            _ => Err(internal("subquery returned the wrong kind of result")),
        };
    }
    let mut params = Vec::with_capacity(s.correlated.len());
    for e in &s.correlated {
        params.push(ev(e, r, ctx)?);
    }
    let mut cache: FxHashMap<String, usize> = FxHashMap::default();
    let mut results: Vec<SubqueryResult> = Vec::new();
    let out_ty = match s.kind {
        SubqueryKind::Scalar => ty,
        _ => DataType::Boolean,
    };
    let mut out = Vector::new(out_ty, n);
    let mut tri: Vec<Option<bool>> = Vec::new();
    for k in 0..n {
        let vals: Vec<Value> = params.iter().map(|c| c.v().value(c.idx(k))).collect();
        let key = format!("{vals:?}");
        let idx = match cache.get(&key) {
            Some(&i) => i,
            None => {
                let res = ctx.subqueries.run(s.id, &s.kind, &vals)?;
                results.push(res);
                cache.insert(key, results.len() - 1);
                results.len() - 1
            }
        };
        match (&s.kind, &results[idx]) {
            (SubqueryKind::Scalar, SubqueryResult::Scalar(v)) => push_value_as(&mut out, v)?,
            (SubqueryKind::Exists, SubqueryResult::Exists(b)) => tri.push(Some(*b)),
            (SubqueryKind::In { negated, .. }, SubqueryResult::Values(set)) if !rest.is_empty() => {
                tri.push(in_rows(&operands(k)?, set)?.map(|b| b != *negated));
            }
            (SubqueryKind::In { negated, .. }, SubqueryResult::Values(set)) => {
                let x = lhs_value(&lhs, k)?;
                tri.push(in_row(&x, set)?.map(|b| b != *negated));
            }
            (SubqueryKind::Quantified { op, all, .. }, SubqueryResult::Values(set)) => {
                let x = lhs_value(&lhs, k)?;
                tri.push(quantified_row(&x, set, *op, *all)?);
            }
            _ => return Err(internal("subquery returned the wrong kind of result")),
        }
    }
    if matches!(s.kind, SubqueryKind::Scalar) {
        Ok(Col::Own(out))
    } else {
        Ok(tri_col(tri, false))
    }
}

fn lhs_value(lhs: &Option<Col>, k: usize) -> Result<Value> {
    let c = lhs
        .as_ref()
        .ok_or_else(|| internal("IN subquery without its operand"))?;
    Ok(c.v().value(c.idx(k)))
}

fn tri_col<'a>(vals: Vec<Option<bool>>, konst: bool) -> Col<'a> {
    let nulls: Vec<bool> = vals.iter().map(|v| v.is_none()).collect();
    bool_col(
        vals.into_iter().map(|v| v.unwrap_or(false)).collect(),
        Some(nulls),
        konst,
    )
}

fn mismatch(x: &Value, y: &Value) -> Error {
    Error::undefined_function(format!(
        "operator does not exist: {} = {}",
        x.data_type().map_or("unknown".into(), |t| t.to_string()),
        y.data_type().map_or("unknown".into(), |t| t.to_string())
    ))
}

/// `x IN (set)`, three-valued.
fn in_row(x: &Value, set: &[Value]) -> Result<Option<bool>> {
    if set.is_empty() {
        return Ok(Some(false));
    }
    if x.is_null() {
        return Ok(None);
    }
    let mut saw_null = false;
    for v in set {
        match x.cmp_sql(v) {
            Some(Ordering::Equal) => return Ok(Some(true)),
            Some(_) => {}
            None if v.is_null() => saw_null = true,
            None => return Err(mismatch(x, v)),
        }
    }
    Ok(if saw_null { None } else { Some(false) })
}

/// `(x, y, …) IN (rows)`, three-valued, with `rows` flattened (one value per
/// operand): true when some row equals the operands pair by pair, else NULL when
/// some row's comparison is NULL (no pair unequal, a pair with a NULL), else false.
/// A linear search per outer row (no hashed set for rows).
fn in_rows(x: &[Value], rows: &[Value]) -> Result<Option<bool>> {
    let mut saw_null = false;
    for row in rows.chunks_exact(x.len().max(1)) {
        let mut eq = Some(true);
        for (a, b) in x.iter().zip(row) {
            if a.is_null() || b.is_null() {
                eq = None;
                continue;
            }
            match a.cmp_sql(b) {
                Some(Ordering::Equal) => {}
                Some(_) => {
                    eq = Some(false);
                    break;
                }
                None => return Err(mismatch(a, b)),
            }
        }
        match eq {
            Some(true) => return Ok(Some(true)),
            None => saw_null = true,
            Some(false) => {}
        }
    }
    Ok(if saw_null { None } else { Some(false) })
}

/// `x op ANY|ALL (set)`, three-valued.
fn quantified_row(x: &Value, set: &[Value], op: CmpOp, all: bool) -> Result<Option<bool>> {
    if set.is_empty() {
        return Ok(Some(all));
    }
    if x.is_null() {
        return Ok(None);
    }
    let mut saw_null = false;
    for v in set {
        match x.cmp_sql(v) {
            Some(o) => {
                let holds = op.holds(o);
                if all && !holds {
                    return Ok(Some(false));
                }
                if !all && holds {
                    return Ok(Some(true));
                }
            }
            None if v.is_null() => saw_null = true,
            None => return Err(mismatch(x, v)),
        }
    }
    Ok(if saw_null { None } else { Some(all) })
}

/// Uncorrelated `lhs [NOT] IN (subquery)`: the values become a typed set searched per
/// row (a row-at-a-time comparison when they do not convert to the operand's type).
fn in_values<'a>(lhs: &Col, vals: &[Value], negated: bool, n: usize) -> Result<Col<'a>> {
    let konst = lhs.is_const();
    let m = if konst { 1 } else { n };
    if vals.is_empty() {
        return Ok(bool_col(vec![negated; m], None, konst));
    }
    let has_null = vals.iter().any(|v| v.is_null());
    let mut set = Vector::new(lhs.v().ty, vals.len());
    let mut typed = true;
    for v in vals.iter().filter(|v| !v.is_null()) {
        if push_value_as(&mut set, v).is_err() {
            typed = false;
            break;
        }
    }
    let found: Option<Vec<bool>> = if typed && !lhs.is_null_const() {
        macro_rules! go {
            ($var:ident) => {{
                let Data::$var(items) = &set.data else {
                    return Err(internal("IN set of another layout"));
                };
                Some(in_set(side!(lhs, $var), items.clone(), m))
            }};
        }
        match &lhs.v().data {
            Data::Bool(_) => go!(Bool),
            Data::I16(_) => go!(I16),
            Data::I32(_) => go!(I32),
            Data::I64(_) => go!(I64),
            Data::F32(_) => go!(F32),
            Data::F64(_) => go!(F64),
            Data::Dec(_) | Data::Dec64(_) => {
                set.data.widen_dec();
                let wide = lhs.view().wide_dec();
                let Data::Dec(items) = &set.data else {
                    return Err(internal("IN set of another layout"));
                };
                Some(in_set(side!(wide, Dec), items.clone(), m))
            }
            Data::Interval(_) => go!(Interval),
            Data::Str(_) => {
                let Data::Str(items) = &set.data else {
                    return Err(internal("IN set of another layout"));
                };
                let bp = is_char(&lhs.v().ty);
                let items: Vec<&str> = items
                    .iter()
                    .map(|s| if bp { bpchar_trim(s) } else { s })
                    .collect();
                let l = str_side(lhs, bp)?;
                let s: S<&str> = l.s();
                Some(in_set(s, items, m))
            }
        }
    } else {
        None
    };
    let mut out = Vec::with_capacity(m);
    for i in 0..m {
        let t = match &found {
            Some(f) => {
                if lhs.null_at(i) {
                    None
                } else if f[i] {
                    Some(true)
                } else if has_null {
                    None
                } else {
                    Some(false)
                }
            }
            None => in_row(&lhs.v().value(lhs.idx(i)), vals)?,
        };
        out.push(t.map(|b| b != negated));
    }
    Ok(tri_col(out, konst))
}
