//! From the SQL engine's terms to bee specs: a table's relation spec, and the
//! conjuncts of a scan filter a scan bee can evaluate.
//!
//! A conjunct is *pushable* when it is built from `column op constant` comparisons,
//! `IS [NOT] NULL`, `IN` lists of non-NULL constants, `LIKE 'prefix%'` and AND / OR /
//! NOT over those, with a column of a type the bee compares exactly like the
//! generic evaluator does:
//!
//! | column type                      | constants | bee comparison |
//! |----------------------------------|-----------|----------------|
//! | boolean, smallint, integer, bigint, date, timestamp | same type (an integer column may be widened by a cast) | as i64 |
//! | real, double                     | real, or double over a widened real | SQL float order (NaN largest) |
//! | numeric(p,s)                     | numeric (rounded onto the column's scale with the operator adjusted: `x > 0.333` ⇔ `x > 0.33`) | unscaled i128 |
//! | date cast to timestamp           | timestamp (the same rounding onto whole days) | days as i64 |
//! | interval                         | interval  | total span in µs (30-day months), i128 |
//! | varchar, text                    | strings   | bytewise |
//! | char(n)                          | `=`, `<>`, `IN` (constant padded to n), `LIKE` | bytewise on the padded value |
//!
//! Constants may be expressions of literals and parameters (`date '1994-01-01' +
//! interval '1' year`): they are evaluated once, at plan time.
//!
//! Anything else (unconstrained numeric, expressions of columns, casts
//! that change values, `ILIKE`, ordering comparisons on `char(n)`, …) stays with the
//! generic evaluator. The planner puts pushable conjuncts first in every scan filter
//! ([`order_conjuncts`]), so with bees on or off they are evaluated before the rest,
//! on the same rows.

use beedb_bees::spec::{CmpOp as BeeOp, Const, Pred, RelationSpec, ValueKind};

use crate::catalog::TableDef;
use crate::expr::{CmpOp, EvalContext, Expr, ExprKind, NoSubqueries, eval_row};
use crate::types::{DataType, MICROS_PER_DAY, Value};

/// How bees see a column of type `ty`.
pub fn value_kind(ty: &DataType) -> ValueKind {
    match ty {
        DataType::Boolean => ValueKind::Bool,
        DataType::SmallInt => ValueKind::Int(2),
        DataType::Integer | DataType::Date => ValueKind::Int(4),
        DataType::BigInt | DataType::Timestamp => ValueKind::Int(8),
        DataType::Real => ValueKind::Float(4),
        DataType::Double => ValueKind::Float(8),
        DataType::Decimal {
            precision: Some(_), ..
        } => ValueKind::Decimal,
        DataType::Interval => ValueKind::Interval,
        DataType::Decimal { precision: None, .. }
        | DataType::Char(_)
        | DataType::Varchar(_)
        | DataType::Text => ValueKind::Bytes,
    }
}

/// The relation spec of a table (its layout and a kind per column).
pub fn relation_spec(table: &TableDef) -> RelationSpec {
    let kinds = table.columns.iter().map(|c| value_kind(&c.ty)).collect();
    RelationSpec::new(table.layout.clone(), kinds)
        .expect("catalog layouts follow catalog::physical, which value_kind mirrors")
}

/// What the translator needs to know about the scan.
pub struct ScanCols<'a> {
    pub table: &'a TableDef,
    /// Scan output column → table column.
    pub columns: &'a [usize],
    /// Statement parameter values (plans are made per execution).
    pub params: &'a [Value],
}

/// How a comparison reads the stored column.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Via {
    /// As stored, or through a cast that preserves every value (integer widening,
    /// `real` → `double`, `numeric(p,s)` → `numeric`).
    Exact,
    /// A `date` column cast to `timestamp` (days × µs per day).
    DateAsTimestamp,
}

/// A column reference: table column, its stored type, and how it is read.
struct ColRef {
    attr: usize,
    ty: DataType,
    via: Via,
}

impl ScanCols<'_> {
    fn column(&self, e: &Expr) -> Option<ColRef> {
        match &e.kind {
            ExprKind::Column(i) => {
                let c = *self.columns.get(*i)?;
                Some(ColRef {
                    attr: c,
                    ty: self.table.columns[c].ty,
                    via: Via::Exact,
                })
            }
            ExprKind::Cast { expr, .. } => {
                let inner = self.column(expr)?;
                if inner.via != Via::Exact {
                    return None;
                }
                let via = match (inner.ty, e.ty) {
                    (DataType::SmallInt, DataType::Integer | DataType::BigInt)
                    | (DataType::Integer, DataType::BigInt)
                    | (DataType::Real, DataType::Double)
                    | (
                        DataType::Decimal {
                            precision: Some(_), ..
                        },
                        DataType::Decimal { precision: None, .. },
                    ) => Via::Exact,
                    (DataType::Date, DataType::Timestamp) => Via::DateAsTimestamp,
                    _ => return None,
                };
                Some(ColRef { via, ..inner })
            }
            _ => None,
        }
    }

    /// The value of a constant expression (literal, parameter, or an expression of
    /// those such as `date '1994-01-01' + interval '1' year`); `None` if it is not
    /// constant or its evaluation fails (the generic evaluator then reports it).
    fn constant(&self, e: &Expr) -> Option<Value> {
        match &e.kind {
            ExprKind::Literal(v) => Some(v.clone()),
            ExprKind::Param(n) => self.params.get(*n).cloned(),
            _ if e.is_constant() || only_params(e) => {
                let ctx = EvalContext {
                    params: self.params,
                    subqueries: &NoSubqueries,
                };
                eval_row(e, &[], &ctx).ok()
            }
            _ => None,
        }
    }
}

/// Whether `e` is built from literals and parameters only.
fn only_params(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Column(_) | ExprKind::Subquery(_) | ExprKind::Udf { .. } => false,
        _ => e.children().iter().all(|c| only_params(c)),
    }
}

/// `x op k` for an integer-valued `x` and a constant `k` known as `floor(k)` and
/// whether `k` is an integer: the equivalent comparison with an integer constant.
fn on_grid(op: CmpOp, floor: i128, exact: bool) -> Option<(CmpOp, i128)> {
    if exact {
        return Some((op, floor));
    }
    let ceil = floor.checked_add(1)?;
    match op {
        CmpOp::Lt => Some((CmpOp::Lt, ceil)),
        CmpOp::LtEq => Some((CmpOp::LtEq, floor)),
        CmpOp::Gt => Some((CmpOp::Gt, floor)),
        CmpOp::GtEq => Some((CmpOp::GtEq, ceil)),
        // Never equal / always unequal: rare enough to leave to the evaluator.
        CmpOp::Eq | CmpOp::NotEq => None,
    }
}

/// A non-NULL constant as the bee constant for column `c` compared with `op`:
/// the (possibly adjusted) operator and constant, or `None` when the bee would not
/// compare it exactly as SQL does.
fn bee_const(c: &ColRef, op: CmpOp, v: &Value) -> Option<(CmpOp, Const)> {
    let eq_only = matches!(op, CmpOp::Eq | CmpOp::NotEq);
    if c.via == Via::DateAsTimestamp {
        let Value::Timestamp(t) = v else { return None };
        let floor = t.0.div_euclid(MICROS_PER_DAY);
        let (op, k) = on_grid(op, floor as i128, t.0.rem_euclid(MICROS_PER_DAY) == 0)?;
        return Some((op, Const::Int(k as i64)));
    }
    let k = match (&c.ty, v) {
        (DataType::Boolean, Value::Boolean(b)) => Const::Bool(*b),
        (DataType::SmallInt | DataType::Integer | DataType::BigInt, Value::SmallInt(x)) => {
            Const::Int(*x as i64)
        }
        (DataType::SmallInt | DataType::Integer | DataType::BigInt, Value::Integer(x)) => {
            Const::Int(*x as i64)
        }
        (DataType::SmallInt | DataType::Integer | DataType::BigInt, Value::BigInt(x)) => {
            Const::Int(*x)
        }
        (DataType::Date, Value::Date(d)) => Const::Int(d.0 as i64),
        // Intervals compare by their total span, 30-day months (`Interval::cmp`).
        (DataType::Interval, Value::Interval(i)) => Const::I128(i.span_micros()),
        (DataType::Timestamp, Value::Timestamp(t)) => Const::Int(t.0),
        (DataType::Real, Value::Real(x)) => Const::F32(*x),
        (DataType::Real | DataType::Double, Value::Double(x)) => Const::F64(*x),
        (
            DataType::Decimal {
                precision: Some(_),
                scale,
            },
            Value::Decimal(d),
        ) => {
            // Stored values are integers at the column's scale.
            let r = d.rescale(*scale).ok()?;
            let floor = if r > *d { r.unscaled() - 1 } else { r.unscaled() };
            let (op, k) = on_grid(op, floor, r == *d)?;
            return Some((op, Const::I128(k)));
        }
        (DataType::Varchar(_) | DataType::Text, Value::Text(s) | Value::Varchar(s)) => {
            Const::Bytes(s.as_bytes().to_vec())
        }
        (DataType::Char(n), Value::Text(s) | Value::Varchar(s) | Value::Char(s)) => {
            if !eq_only {
                return None;
            }
            // Stored char(n) values are padded to n characters; trailing spaces do not
            // count in comparisons, so equality with the padded constant is equality.
            let core = s.trim_end_matches(' ');
            let len = core.chars().count();
            if len > *n as usize {
                return None;
            }
            let mut b = core.as_bytes().to_vec();
            b.extend(std::iter::repeat_n(b' ', *n as usize - len));
            Const::Bytes(b)
        }
        _ => return None,
    };
    Some((op, k))
}

fn bee_op(op: CmpOp) -> BeeOp {
    match op {
        CmpOp::Eq => BeeOp::Eq,
        CmpOp::NotEq => BeeOp::Ne,
        CmpOp::Lt => BeeOp::Lt,
        CmpOp::LtEq => BeeOp::Le,
        CmpOp::Gt => BeeOp::Gt,
        CmpOp::GtEq => BeeOp::Ge,
    }
}

/// The literal prefix of a `LIKE` pattern of the form `prefix%` (no other wildcard,
/// no escape), or the whole pattern when it has no wildcard at all (`exact`).
fn like_prefix(pattern: &str, escape: Option<char>) -> Option<(Vec<u8>, bool)> {
    let esc = escape.unwrap_or('\\');
    let body = pattern.strip_suffix('%');
    let core = body.unwrap_or(pattern);
    if core.contains(['%', '_', esc]) {
        return None;
    }
    Some((core.as_bytes().to_vec(), body.is_none()))
}

/// Translates one boolean expression, or `None` if any part is not expressible.
pub fn translate(e: &Expr, s: &ScanCols<'_>) -> Option<Pred> {
    match &e.kind {
        ExprKind::Compare { op, left, right } => {
            let (col, k, op) = match (s.column(left), s.column(right)) {
                (Some(c), None) => (c, s.constant(right)?, *op),
                (None, Some(c)) => (c, s.constant(left)?, op.flip()),
                _ => return None,
            };
            if k.is_null() {
                return None;
            }
            let (op, value) = bee_const(&col, op, &k)?;
            Some(Pred::Cmp {
                attr: col.attr,
                op: bee_op(op),
                value,
            })
        }
        ExprKind::IsNull { expr, negated } => {
            let attr = s.column(expr)?.attr;
            let p = Pred::IsNull { attr };
            Some(if *negated { Pred::Not(Box::new(p)) } else { p })
        }
        ExprKind::InList {
            expr,
            list,
            negated,
        } => {
            let col = s.column(expr)?;
            let mut values = Vec::with_capacity(list.len());
            for x in list {
                let v = s.constant(x)?;
                if v.is_null() {
                    return None;
                }
                // A string longer than a char(n) column can never equal a value of it.
                if let (DataType::Char(n), Value::Text(t) | Value::Varchar(t) | Value::Char(t)) =
                    (&col.ty, &v)
                    && t.trim_end_matches(' ').chars().count() > *n as usize
                {
                    continue;
                }
                match bee_const(&col, CmpOp::Eq, &v) {
                    Some((CmpOp::Eq, k)) => values.push(k),
                    _ => return None,
                }
            }
            if values.is_empty() {
                return None;
            }
            let p = Pred::InList {
                attr: col.attr,
                values,
            };
            Some(if *negated { Pred::Not(Box::new(p)) } else { p })
        }
        ExprKind::Like {
            expr,
            pattern,
            negated,
            case_insensitive: false,
            escape,
        } => {
            let col = s.column(expr)?;
            if col.via != Via::Exact
                || !matches!(col.ty, DataType::Char(_) | DataType::Varchar(_) | DataType::Text)
            {
                return None;
            }
            let attr = col.attr;
            let pat = match s.constant(pattern)? {
                Value::Text(p) | Value::Varchar(p) | Value::Char(p) => p,
                _ => return None,
            };
            let (bytes, exact) = like_prefix(&pat, *escape)?;
            let p = if exact {
                Pred::Cmp {
                    attr,
                    op: BeeOp::Eq,
                    value: Const::Bytes(bytes),
                }
            } else {
                Pred::Prefix {
                    attr,
                    prefix: bytes,
                }
            };
            Some(if *negated { Pred::Not(Box::new(p)) } else { p })
        }
        ExprKind::And(v) => Some(Pred::And(
            v.iter().map(|x| translate(x, s)).collect::<Option<_>>()?,
        )),
        ExprKind::Or(v) => Some(Pred::Or(
            v.iter().map(|x| translate(x, s)).collect::<Option<_>>()?,
        )),
        ExprKind::Not(x) => Some(Pred::Not(Box::new(translate(x, s)?))),
        ExprKind::Column(_) if e.ty == DataType::Boolean => Some(Pred::Cmp {
            attr: s.column(e)?.attr,
            op: BeeOp::Eq,
            value: Const::Bool(true),
        }),
        _ => None,
    }
}

/// Whether a conjunct only reads columns and constants in ways a bee expresses
/// (independent of parameter values, so the planner's order never depends on them).
pub fn pushable(e: &Expr, table: &TableDef, columns: &[usize]) -> bool {
    // Parameters stand for constants of their type: use a typed placeholder.
    fn placeholders(e: &Expr, out: &mut Vec<Value>) {
        if let ExprKind::Param(n) = e.kind {
            if out.len() <= n {
                out.resize(n + 1, Value::Null);
            }
            out[n] = placeholder(&e.ty);
        }
        for c in e.children() {
            placeholders(c, out);
        }
    }
    let mut params = Vec::new();
    placeholders(e, &mut params);
    let s = ScanCols {
        table,
        columns,
        params: &params,
    };
    translate(e, &s).is_some()
}

/// A non-NULL value of `ty` that every translation accepts like any other value.
fn placeholder(ty: &DataType) -> Value {
    use crate::types::{Date, Decimal, Timestamp};
    match ty {
        DataType::Boolean => Value::Boolean(false),
        DataType::SmallInt => Value::SmallInt(0),
        DataType::Integer => Value::Integer(0),
        DataType::BigInt => Value::BigInt(0),
        DataType::Real => Value::Real(0.0),
        DataType::Double => Value::Double(0.0),
        DataType::Decimal { .. } => Value::Decimal(Decimal::ZERO),
        DataType::Date => Value::Date(Date(0)),
        DataType::Timestamp => Value::Timestamp(Timestamp(0)),
        DataType::Interval => Value::Interval(crate::types::Interval::ZERO),
        DataType::Char(_) | DataType::Varchar(_) | DataType::Text => Value::Text(String::new()),
    }
}

/// Reorders `conjuncts` so that pushable ones come first (stable within each group).
pub fn order_conjuncts(conjuncts: &mut [Expr], table: &TableDef, columns: &[usize]) {
    conjuncts.sort_by_key(|c| !pushable(c, table, columns));
}

/// The conjuncts of a scan filter split into (pushed, residual), keeping order.
pub fn split(conjuncts: Vec<Expr>, s: &ScanCols<'_>) -> (Vec<(Expr, Pred)>, Vec<Expr>) {
    let mut pushed = Vec::new();
    let mut residual = Vec::new();
    for c in conjuncts {
        // Only a leading run is pushed: the planner ordered pushable conjuncts first,
        // and a parameter value the bee cannot take (e.g. an inexact decimal) must not
        // move a later conjunct ahead of an earlier one.
        if residual.is_empty()
            && let Some(p) = translate(&c, s)
        {
            pushed.push((c, p));
        } else {
            residual.push(c);
        }
    }
    (pushed, residual)
}
