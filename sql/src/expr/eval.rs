//! The generic vectorized evaluator.
//!
//! Every node evaluates to a [`Col`]: a borrowed input column (no copy when the batch
//! has no selection), an owned vector with one value per live row, or a *constant*
//! (a one-row vector standing for every row). Kernels take typed slices or the
//! single constant value ([`S`]), so `col < 42` never materializes `42`, and an
//! expression of constants is computed once.
//!
//! Laziness: `AND`/`OR`, `CASE` and `COALESCE` evaluate each operand only on the rows
//! still undecided, so `x <> 0 AND 10 / x > 1` and `CASE WHEN x = 0 THEN 0 ELSE 1 / x
//! END` never divide by zero. [`eval_predicate`] narrows the selection conjunct by
//! conjunct.

use super::cast::cast_col;
use super::dec64;
use super::kernels::{
    S, SqlCmp, arith_dec, arith_f32, arith_f64, arith_int, cmp_kernel, cmp_select, difference,
    in_set, internal, map2, merge_sorted, try_map1, try_map2,
};
use super::{ArithOp, CmpOp, EvalContext, Expr, ExprKind, Func};
use crate::error::{Error, Result};
use crate::types::{self, DataType, Date, Decimal, Interval, Timestamp, Value, text::bpchar_trim};
use crate::vector::{Batch, Data, PhysicalType, StrVec, Vector};

/// Evaluates `expr` over the live rows of `batch`: row `k` of the result is the value
/// for the `k`-th live row (the result has `batch.rows()` rows and no selection).
pub fn eval(expr: &Expr, batch: &Batch, ctx: &EvalContext<'_>) -> Result<Vector> {
    let r = Rows::of(batch)?;
    let n = r.n();
    let c = ev(expr, r, ctx)?;
    let mut v = c.into_vector(n);
    retype(&mut v, expr.ty);
    Ok(v)
}

/// Evaluates a boolean `expr` over the live rows of `batch` and returns the physical
/// positions (ascending) where it is true: the batch's new selection vector. NULL
/// counts as false.
pub fn eval_predicate(expr: &Expr, batch: &Batch, ctx: &EvalContext<'_>) -> Result<Vec<u32>> {
    let r = Rows::of(batch)?;
    pred(expr, r, ctx)
}

pub(super) fn resolve_func(
    name: &str,
    args: &[DataType],
) -> Result<Option<(Func, Vec<DataType>, DataType)>> {
    super::functions::resolve(name, args)
}

// ---------------------------------------------------------------------------------
// Rows and columns

/// The rows an expression is evaluated on: the input columns and the physical
/// positions of the live rows.
#[derive(Clone, Copy)]
pub(super) struct Rows<'a> {
    pub cols: &'a [Vector],
    pub sel: Option<&'a [u32]>,
    pub len: usize,
}

impl<'a> Rows<'a> {
    fn of(batch: &'a Batch) -> Result<Rows<'a>> {
        if let Some(s) = &batch.sel
            && s.iter().any(|&p| p as usize >= batch.len)
        {
            return Err(internal("selection vector beyond the batch"));
        }
        Ok(Rows {
            cols: &batch.columns,
            sel: batch.sel.as_deref(),
            len: batch.len,
        })
    }

    /// Number of live rows.
    pub fn n(&self) -> usize {
        self.sel.map_or(self.len, |s| s.len())
    }

    /// Physical position of live row `k`.
    #[inline]
    pub fn pos(&self, k: usize) -> u32 {
        match self.sel {
            Some(s) => s[k],
            None => k as u32,
        }
    }

    /// Physical positions of the live rows `idx` (dense indices).
    pub fn subset(&self, idx: &[u32]) -> Vec<u32> {
        match self.sel {
            Some(s) => idx.iter().map(|&k| s[k as usize]).collect(),
            None => idx.to_vec(),
        }
    }

    /// Physical positions of all live rows.
    pub fn positions(&self) -> Vec<u32> {
        match self.sel {
            Some(s) => s.to_vec(),
            None => (0..self.len as u32).collect(),
        }
    }

    /// The same input restricted to the physical positions `sel`.
    pub fn with<'b>(&self, sel: &'b [u32]) -> Rows<'b>
    where
        'a: 'b,
    {
        Rows {
            cols: self.cols,
            sel: Some(sel),
            len: self.len,
        }
    }
}

/// An evaluated operand.
pub(super) enum Col<'a> {
    /// An input column read in place (only when there is no selection).
    Ref(&'a Vector),
    /// One value per live row.
    Own(Vector),
    /// One value (a one-row vector) for every row.
    Const(Vector),
}

impl<'a> Col<'a> {
    #[inline]
    pub fn v(&self) -> &Vector {
        match self {
            Col::Ref(v) => v,
            Col::Own(v) | Col::Const(v) => v,
        }
    }

    #[inline]
    pub fn is_const(&self) -> bool {
        matches!(self, Col::Const(_))
    }

    /// A constant NULL.
    pub fn is_null_const(&self) -> bool {
        matches!(self, Col::Const(v) if v.is_null(0))
    }

    /// Index into the vector for row `i`.
    #[inline]
    pub fn idx(&self, i: usize) -> usize {
        if self.is_const() { 0 } else { i }
    }

    #[inline]
    pub fn null_at(&self, i: usize) -> bool {
        self.v().is_null(self.idx(i))
    }

    pub fn null(ty: DataType) -> Col<'static> {
        let mut v = Vector::new(ty, 1);
        v.push_null();
        Col::Const(v)
    }

    /// A borrowed view of this operand (a constant is copied: one row).
    pub fn view(&self) -> Col<'_> {
        match self {
            Col::Const(v) => Col::Const(v.clone()),
            Col::Ref(v) => Col::Ref(v),
            Col::Own(v) => Col::Ref(v),
        }
    }

    /// This operand with a scaled-integer decimal vector ([`Data::Dec64`]) turned
    /// into [`Data::Dec`], for code that has no scaled-integer path; anything else
    /// is returned as it is.
    pub fn wide_dec(self) -> Col<'a> {
        let Data::Dec64(d) = &self.v().data else {
            return self;
        };
        let v = self.v();
        let wide = Vector::from_data(v.ty, Data::Dec(d.to_decimals()), v.nulls.clone());
        Col::make(wide, self.is_const())
    }

    pub fn make(v: Vector, konst: bool) -> Col<'static> {
        if konst { Col::Const(v) } else { Col::Own(v) }
    }

    pub fn into_vector(self, n: usize) -> Vector {
        match self {
            Col::Ref(v) => v.clone(),
            Col::Own(v) => v,
            Col::Const(v) => broadcast(&v, n),
        }
    }

    /// The operand as an owned vector of `n` rows, or a constant.
    pub fn into_static(self) -> Col<'static> {
        match self {
            Col::Ref(v) => Col::Own(v.clone()),
            Col::Own(v) => Col::Own(v),
            Col::Const(v) => Col::Const(v),
        }
    }
}

/// `n` copies of row 0 of `v`.
pub(super) fn broadcast(v: &Vector, n: usize) -> Vector {
    fn rep<T: Copy>(x: &[T], n: usize) -> Vec<T> {
        x.first().map_or_else(Vec::new, |&v| vec![v; n])
    }
    let data = match &v.data {
        Data::Bool(x) => Data::Bool(rep(x, n)),
        Data::I16(x) => Data::I16(rep(x, n)),
        Data::I32(x) => Data::I32(rep(x, n)),
        Data::I64(x) => Data::I64(rep(x, n)),
        Data::F32(x) => Data::F32(rep(x, n)),
        Data::F64(x) => Data::F64(rep(x, n)),
        Data::Dec(x) => Data::Dec(rep(x, n)),
        Data::Dec64(x) => Data::Dec64(crate::vector::Dec64Vec {
            scale: x.scale,
            values: rep(&x.values, n),
        }),
        Data::Interval(x) => Data::Interval(rep(x, n)),
        Data::Str(x) => {
            let s = if x.is_empty() { "" } else { x.get(0) };
            let mut out = StrVec::with_capacity(n, s.len() * n);
            for _ in 0..n {
                out.push(s);
            }
            Data::Str(out)
        }
    };
    let nulls = (!v.is_empty() && v.is_null(0)).then(|| vec![true; n]);
    Vector::from_data(v.ty, data, nulls)
}

/// Gives a result vector the expression's type when the physical layout agrees.
fn retype(v: &mut Vector, ty: DataType) {
    if v.ty != ty && PhysicalType::of(&v.ty) == PhysicalType::of(&ty) {
        v.ty = ty;
    }
}

/// Whether `v` can be pushed into a vector of type `ty` as is.
fn value_fits(ty: &DataType, v: &Value) -> bool {
    use DataType as T;
    matches!(
        (ty, v),
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
            | (
                T::Decimal {
                    precision: None,
                    ..
                },
                Value::Decimal(_)
            )
            | (T::Text, Value::Text(_) | Value::Varchar(_))
            | (T::Varchar(None), Value::Text(_) | Value::Varchar(_))
    )
}

/// A one-row vector of type `ty` holding `v`, cast (as an explicit cast) when it is
/// of another type.
pub(super) fn value_vector(ty: DataType, v: &Value) -> Result<Vector> {
    let mut out = Vector::new(ty, 1);
    push_value_as(&mut out, v)?;
    Ok(out)
}

/// Pushes `v` into `out`, casting it to the vector's type when needed; never panics.
pub(crate) fn push_value_as(out: &mut Vector, v: &Value) -> Result<()> {
    if value_fits(&out.ty, v) {
        out.push_value(v);
        return Ok(());
    }
    let ty = out.ty;
    // Values already of the type with a modifier (numeric(p,s), varchar(n), char(n))
    // were fitted by whoever made them; others are cast.
    let c = match (&ty, v) {
        (DataType::Decimal { .. }, Value::Decimal(_)) => v.clone(),
        (DataType::Varchar(Some(_)), Value::Varchar(_) | Value::Text(_)) => v.clone(),
        (DataType::Char(_), Value::Char(_)) => v.clone(),
        _ => v.cast(&ty)?,
    };
    let ok = match (PhysicalType::of(&ty), &c) {
        (_, Value::Null) => true,
        (PhysicalType::Str, Value::Char(_) | Value::Varchar(_) | Value::Text(_)) => true,
        (PhysicalType::Dec, Value::Decimal(_)) => true,
        _ => value_fits(&ty, &c),
    };
    if !ok {
        return Err(internal(&format!("value {c:?} does not fit type {ty}")));
    }
    out.push_value(&c);
    Ok(())
}

macro_rules! side {
    ($col:expr, $var:ident) => {
        match &$col.v().data {
            Data::$var(v) => {
                if $col.is_const() {
                    S::One(v[0])
                } else {
                    S::Many(&v[..])
                }
            }
            _ => return Err(internal("operand of an unexpected physical type")),
        }
    };
}
pub(super) use side;

/// String operand: borrowed slices of every row, or one string for all rows.
pub(super) enum StrS<'a> {
    One(&'a str),
    Many(Vec<&'a str>),
}

impl<'a> StrS<'a> {
    pub fn s(&self) -> S<'_, &'a str> {
        match self {
            StrS::One(x) => S::One(x),
            StrS::Many(v) => S::Many(v),
        }
    }
    #[inline]
    pub fn get(&self, i: usize) -> &'a str {
        match self {
            StrS::One(x) => x,
            StrS::Many(v) => v[i],
        }
    }
}

/// The strings of a string operand; `trim` drops `character(n)` padding.
pub(super) fn str_side<'a>(c: &'a Col<'_>, trim: bool) -> Result<StrS<'a>> {
    let Data::Str(sv) = &c.v().data else {
        return Err(internal("string operand expected"));
    };
    let t = |s: &'a str| if trim { bpchar_trim(s) } else { s };
    Ok(if c.is_const() {
        StrS::One(t(sv.get(0)))
    } else {
        StrS::Many(sv.iter().map(t).collect())
    })
}

/// Whether the type is `character(n)`.
pub(super) fn is_char(ty: &DataType) -> bool {
    matches!(ty, DataType::Char(_))
}

/// Length of a binary operation's result and whether it is a constant.
fn extent(a: &Col, b: &Col, n: usize) -> (usize, bool) {
    if a.is_const() && b.is_const() {
        (1, true)
    } else {
        (n, false)
    }
}

/// The union of two operands' NULL masks over `n` rows.
pub(super) fn union_nulls(a: &Col, b: &Col, n: usize) -> Option<Vec<bool>> {
    let ma = if a.is_const() {
        None
    } else {
        a.v().nulls.as_ref()
    };
    let mb = if b.is_const() {
        None
    } else {
        b.v().nulls.as_ref()
    };
    let ca = a.is_null_const();
    let cb = b.is_null_const();
    if ca || cb {
        return Some(vec![true; n]);
    }
    match (ma, mb) {
        (None, None) => None,
        (Some(m), None) | (None, Some(m)) => Some(m[..n].to_vec()),
        (Some(x), Some(y)) => Some(x[..n].iter().zip(&y[..n]).map(|(a, b)| *a | *b).collect()),
    }
}

// ---------------------------------------------------------------------------------
// Dispatch

/// Stack headroom below which a recursive step moves to a new stack segment, and
/// that segment's size: expressions nest as deep as the parser allows.
const STACK_RED_ZONE: usize = 256 * 1024;
const STACK_SEGMENT: usize = 4 * 1024 * 1024;

pub(super) fn ev<'a>(e: &Expr, r: Rows<'a>, ctx: &EvalContext<'_>) -> Result<Col<'a>> {
    stacker::maybe_grow(STACK_RED_ZONE, STACK_SEGMENT, || ev_node(e, r, ctx))
}

fn ev_node<'a>(e: &Expr, r: Rows<'a>, ctx: &EvalContext<'_>) -> Result<Col<'a>> {
    let n = r.n();
    match &e.kind {
        ExprKind::Column(i) => {
            let col = r
                .cols
                .get(*i)
                .ok_or_else(|| internal(&format!("column {i} is not in the batch")))?;
            if col.len() != r.len {
                return Err(internal("column length differs from the batch"));
            }
            Ok(match r.sel {
                None => Col::Ref(col),
                Some(s) => Col::Own(col.gather(s)),
            })
        }
        ExprKind::Literal(v) => Ok(Col::Const(value_vector(e.ty, v)?)),
        ExprKind::Param(i) => {
            let v = ctx.params.get(*i).ok_or_else(|| {
                Error::semantic("42P02", format!("there is no parameter ${}", i + 1))
            })?;
            Ok(Col::Const(value_vector(e.ty, v)?))
        }
        ExprKind::Cast { expr, explicit } => {
            let c = ev(expr, r, ctx)?;
            cast_col(c, e.ty, *explicit, n)
        }
        ExprKind::Neg(x) => {
            let c = ev(x, r, ctx)?;
            neg(c, e.ty, n)
        }
        ExprKind::Arith { op, left, right } => {
            let a = ev(left, r, ctx)?;
            let b = ev(right, r, ctx)?;
            arith(*op, a, b, e.ty, n)
        }
        ExprKind::Compare { op, left, right } => {
            let a = ev(left, r, ctx)?;
            let b = ev(right, r, ctx)?;
            compare(*op, &a, &b, n)
        }
        ExprKind::IsDistinctFrom {
            left,
            right,
            negated,
        } => {
            let a = ev(left, r, ctx)?;
            let b = ev(right, r, ctx)?;
            let (m, konst) = extent(&a, &b, n);
            let eq = compare_values(CmpOp::Eq, &a, &b, m)?;
            let out: Vec<bool> = (0..m)
                .map(|i| {
                    let d = match (a.null_at(i), b.null_at(i)) {
                        (true, true) => false,
                        (true, false) | (false, true) => true,
                        (false, false) => !eq[i],
                    };
                    d != *negated
                })
                .collect();
            Ok(bool_col(out, None, konst))
        }
        ExprKind::And(list) => and_or(list, true, r, ctx),
        ExprKind::Or(list) => and_or(list, false, r, ctx),
        ExprKind::Not(x) => {
            let c = ev(x, r, ctx)?;
            let konst = c.is_const();
            let Data::Bool(b) = &c.v().data else {
                return Err(internal("NOT of a non-boolean"));
            };
            let vals: Vec<bool> = b.iter().map(|x| !x).collect();
            let nulls = c.v().nulls.clone();
            Ok(bool_col(vals, nulls, konst))
        }
        ExprKind::IsNull { expr, negated } => {
            let c = ev(expr, r, ctx)?;
            let konst = c.is_const();
            let m = if konst { 1 } else { n };
            let vals = match &c.v().nulls {
                None => vec![*negated; m],
                Some(nm) => nm.iter().map(|&x| x != *negated).collect(),
            };
            Ok(bool_col(vals, None, konst))
        }
        ExprKind::IsBool {
            expr,
            value,
            negated,
        } => {
            let c = ev(expr, r, ctx)?;
            let konst = c.is_const();
            let m = if konst { 1 } else { n };
            let Data::Bool(b) = &c.v().data else {
                return Err(internal("IS TRUE of a non-boolean"));
            };
            let vals = (0..m)
                .map(|i| (!c.v().is_null(i) && b[i] == *value) != *negated)
                .collect();
            Ok(bool_col(vals, None, konst))
        }
        ExprKind::Case { whens, else_ } => eval_case(whens, else_.as_deref(), e.ty, r, ctx),
        ExprKind::Coalesce(list) => eval_coalesce(list, e.ty, r, ctx),
        ExprKind::InList {
            expr,
            list,
            negated,
        } => eval_in_list(expr, list, *negated, r, ctx),
        ExprKind::Like {
            expr,
            pattern,
            negated,
            case_insensitive,
            escape,
        } => {
            let s = ev(expr, r, ctx)?;
            let p = ev(pattern, r, ctx)?;
            super::like::like(&s, &p, *negated, *case_insensitive, *escape, n)
        }
        ExprKind::Func { func, args } => {
            let mut cols = Vec::with_capacity(args.len());
            for a in args {
                cols.push(ev(a, r, ctx)?);
            }
            if func.is_sequence() {
                return sequence_call(*func, &cols, e.ty, n, ctx);
            }
            if func.is_clock() {
                // One value for the whole transaction: read once, broadcast.
                let v = ctx.subqueries.sequence(*func, &[])?;
                return Ok(Col::Const(value_vector(e.ty, &v)?));
            }
            super::functions::call(*func, cols, e.ty, n)
        }
        ExprKind::Udf { udf, args } => {
            let mut cols = Vec::with_capacity(args.len());
            for a in args {
                let c = ev(a, r, ctx)?;
                let v = c.v();
                cols.push(if c.is_const() {
                    vec![v.value(0); n]
                } else {
                    (0..n).map(|i| v.value(i)).collect()
                });
            }
            let out = super::udf::call_scalar(udf, &cols, n, &e.ty)?;
            let mut v = Vector::new(e.ty, n);
            for x in &out {
                v.push_value(x);
            }
            Ok(Col::make(v, false))
        }
        ExprKind::Extract { field, expr } => {
            let c = ev(expr, r, ctx)?;
            extract(*field, c, n)
        }
        ExprKind::Subquery(s) => super::subquery::eval_subquery(s, e.ty, r, ctx),
    }
}

/// A sequence function, called once per row in row order (never once for a batch of
/// constant arguments: `nextval('s')` gives each row its own value). NULL
/// arguments give NULL, as PostgreSQL's strict functions.
fn sequence_call<'a>(func: Func, args: &[Col<'_>], ty: DataType, n: usize, ctx: &EvalContext<'_>) -> Result<Col<'a>> {
    let mut out = Vector::new(ty, n);
    let mut values = Vec::with_capacity(args.len());
    for i in 0..n {
        values.clear();
        values.extend(args.iter().map(|c| if c.null_at(i) { Value::Null } else { c.v().value(c.idx(i)) }));
        let v = if values.iter().any(Value::is_null) { Value::Null } else { ctx.subqueries.sequence(func, &values)? };
        push_value_as(&mut out, &v)?;
    }
    Ok(Col::make(out, false))
}

pub(super) fn bool_col(vals: Vec<bool>, nulls: Option<Vec<bool>>, konst: bool) -> Col<'static> {
    let nulls = nulls.filter(|m| m.iter().any(|&b| b));
    Col::make(
        Vector::from_data(DataType::Boolean, Data::Bool(vals), nulls),
        konst,
    )
}

// ---------------------------------------------------------------------------------
// Predicates

fn pred(e: &Expr, r: Rows<'_>, ctx: &EvalContext<'_>) -> Result<Vec<u32>> {
    stacker::maybe_grow(STACK_RED_ZONE, STACK_SEGMENT, || pred_node(e, r, ctx))
}

fn pred_node(e: &Expr, r: Rows<'_>, ctx: &EvalContext<'_>) -> Result<Vec<u32>> {
    match &e.kind {
        ExprKind::And(list) => {
            let mut cur: Option<Vec<u32>> = None;
            for c in list {
                let rr = match &cur {
                    Some(s) => r.with(s),
                    None => r,
                };
                let next = pred(c, rr, ctx)?;
                if next.is_empty() {
                    return Ok(next);
                }
                cur = Some(next);
            }
            Ok(cur.unwrap_or_else(|| r.positions()))
        }
        ExprKind::Or(list) => {
            let mut result: Vec<u32> = Vec::new();
            let mut remaining: Option<Vec<u32>> = None;
            for c in list {
                let rr = match &remaining {
                    Some(s) => r.with(s),
                    None => r,
                };
                if rr.n() == 0 {
                    break;
                }
                let t = pred(c, rr, ctx)?;
                if t.is_empty() {
                    continue;
                }
                let rest = difference(&rr.positions(), &t);
                result = merge_sorted(&result, &t);
                remaining = Some(rest);
            }
            Ok(result)
        }
        ExprKind::Literal(v) => Ok(match v {
            Value::Boolean(true) => r.positions(),
            _ => Vec::new(),
        }),
        ExprKind::Compare { op, left, right } => {
            if let Some(out) = pred_compare_fast(*op, left, right, r, ctx)? {
                return Ok(out);
            }
            pred_general(e, r, ctx)
        }
        _ => pred_general(e, r, ctx),
    }
}

fn pred_general(e: &Expr, r: Rows<'_>, ctx: &EvalContext<'_>) -> Result<Vec<u32>> {
    let c = ev(e, r, ctx)?;
    let Data::Bool(b) = &c.v().data else {
        return Err(internal("predicate is not boolean"));
    };
    if c.is_const() {
        return Ok(if !c.v().is_null(0) && b[0] {
            r.positions()
        } else {
            Vec::new()
        });
    }
    let mut out = Vec::new();
    match &c.v().nulls {
        None => {
            for (k, &x) in b.iter().enumerate() {
                if x {
                    out.push(r.pos(k));
                }
            }
        }
        Some(m) => {
            for (k, &x) in b.iter().enumerate() {
                if x && !m[k] {
                    out.push(r.pos(k));
                }
            }
        }
    }
    Ok(out)
}

/// `column op constant` (either order) read in place through the selection.
fn pred_compare_fast(
    op: CmpOp,
    left: &Expr,
    right: &Expr,
    r: Rows<'_>,
    ctx: &EvalContext<'_>,
) -> Result<Option<Vec<u32>>> {
    let is_k = |e: &Expr| matches!(e.kind, ExprKind::Literal(_) | ExprKind::Param(_));
    let (col_e, k_e, op) = match (&left.kind, &right.kind) {
        (ExprKind::Column(_), _) if is_k(right) => (left, right, op),
        (_, ExprKind::Column(_)) if is_k(left) => (right, left, op.flip()),
        _ => return Ok(None),
    };
    let ExprKind::Column(i) = col_e.kind else {
        return Ok(None);
    };
    let Some(col) = r.cols.get(i) else {
        return Ok(None);
    };
    if col.len() != r.len {
        return Ok(None);
    }
    let k = ev(k_e, r, ctx)?;
    if k.is_null_const() {
        return Ok(Some(Vec::new()));
    }
    if PhysicalType::of(&col.ty) != PhysicalType::of(&k.v().ty)
        || (PhysicalType::of(&col.ty) != PhysicalType::Str && col.ty != k.v().ty)
    {
        return Ok(None);
    }
    let nulls = col.nulls.as_deref();
    let mut out = Vec::with_capacity(r.n());
    macro_rules! go {
        ($var:ident) => {{
            let (Data::$var(c), Data::$var(kv)) = (&col.data, &k.v().data) else {
                return Ok(None);
            };
            cmp_select(op, c, kv[0], r.sel, nulls, &mut out);
        }};
    }
    match &col.data {
        Data::Bool(_) => go!(Bool),
        Data::I16(_) => go!(I16),
        Data::I32(_) => go!(I32),
        Data::I64(_) => go!(I64),
        Data::F32(_) => go!(F32),
        Data::F64(_) => go!(F64),
        Data::Dec(_) => go!(Dec),
        Data::Dec64(c) => {
            let key = match &k.v().data {
                Data::Dec64(kd) => kd.get(0),
                Data::Dec(kv) => kv[0],
                _ => return Ok(None),
            };
            // A constant with more fractional digits than the column: the generic
            // comparison (no exact scaled integer stands for it).
            let Some(key) = key.to_scaled_i64(c.scale) else {
                return Ok(None);
            };
            cmp_select(op, &c.values, key, r.sel, nulls, &mut out);
        }
        Data::Interval(_) => go!(Interval),
        Data::Str(sv) => {
            let Data::Str(kv) = &k.v().data else {
                return Ok(None);
            };
            let bp = is_char(&col.ty) || is_char(&k.v().ty);
            let key = if bp {
                bpchar_trim(kv.get(0))
            } else {
                kv.get(0)
            };
            let test = |p: usize| {
                let s = sv.get(p);
                let s = if bp { bpchar_trim(s) } else { s };
                op.holds(SqlCmp::ord(s, key))
            };
            match r.sel {
                None => {
                    for p in 0..r.len {
                        if !nulls.is_some_and(|m| m[p]) && test(p) {
                            out.push(p as u32);
                        }
                    }
                }
                Some(s) => {
                    for &p in s {
                        if !nulls.is_some_and(|m| m[p as usize]) && test(p as usize) {
                            out.push(p);
                        }
                    }
                }
            }
        }
    }
    Ok(Some(out))
}

// ---------------------------------------------------------------------------------
// Comparison

/// `a op b` for `n` rows, ignoring NULLs (the caller masks them).
pub(super) fn compare_values(op: CmpOp, a: &Col, b: &Col, n: usize) -> Result<Vec<bool>> {
    let bp = is_char(&a.v().ty) || is_char(&b.v().ty);
    Ok(match (&a.v().data, &b.v().data) {
        (Data::Bool(_), Data::Bool(_)) => cmp_kernel(op, side!(a, Bool), side!(b, Bool), n),
        (Data::I16(_), Data::I16(_)) => cmp_kernel(op, side!(a, I16), side!(b, I16), n),
        (Data::I32(_), Data::I32(_)) if same_kind(a, b) => {
            cmp_kernel(op, side!(a, I32), side!(b, I32), n)
        }
        (Data::I64(_), Data::I64(_)) if same_kind(a, b) => {
            cmp_kernel(op, side!(a, I64), side!(b, I64), n)
        }
        (Data::F32(_), Data::F32(_)) => cmp_kernel(op, side!(a, F32), side!(b, F32), n),
        (Data::F64(_), Data::F64(_)) => cmp_kernel(op, side!(a, F64), side!(b, F64), n),
        (Data::Dec(_), Data::Dec(_)) => cmp_kernel(op, side!(a, Dec), side!(b, Dec), n),
        (Data::Dec64(_) | Data::Dec(_), Data::Dec64(_) | Data::Dec(_)) => {
            match dec64::comparable(a, b) {
                Some((x, y)) => cmp_kernel(op, x, y, n),
                None => {
                    let (a, b) = (a.view().wide_dec(), b.view().wide_dec());
                    cmp_kernel(op, side!(a, Dec), side!(b, Dec), n)
                }
            }
        }
        (Data::Interval(_), Data::Interval(_)) => {
            cmp_kernel(op, side!(a, Interval), side!(b, Interval), n)
        }
        (Data::Str(_), Data::Str(_)) => {
            let x = str_side(a, bp)?;
            let y = str_side(b, bp)?;
            cmp_kernel(op, x.s(), y.s(), n)
        }
        _ => compare_rows(op, a, b, n)?,
    })
}

/// Same physical layout but possibly different meaning (date vs integer)?
fn same_kind(a: &Col, b: &Col) -> bool {
    let special = |t: &DataType| matches!(t, DataType::Date | DataType::Timestamp);
    special(&a.v().ty) == special(&b.v().ty)
}

/// Row-at-a-time comparison of operands of different types (the binder normally
/// makes them equal; this keeps mixed numeric or date/timestamp comparisons exact).
fn compare_rows(op: CmpOp, a: &Col, b: &Col, n: usize) -> Result<Vec<bool>> {
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let (x, y) = (a.v().value(a.idx(i)), b.v().value(b.idx(i)));
        if x.is_null() || y.is_null() {
            out.push(false);
            continue;
        }
        match x.cmp_sql(&y) {
            Some(o) => out.push(op.holds(o)),
            None => {
                return Err(Error::undefined_function(format!(
                    "operator does not exist: {} {} {}",
                    a.v().ty,
                    cmp_symbol(op),
                    b.v().ty
                )));
            }
        }
    }
    Ok(out)
}

fn cmp_symbol(op: CmpOp) -> &'static str {
    op.symbol()
}

fn compare<'a>(op: CmpOp, a: &Col, b: &Col, n: usize) -> Result<Col<'a>> {
    let (m, konst) = extent(a, b, n);
    if a.is_null_const() || b.is_null_const() {
        return Ok(if konst {
            Col::null(DataType::Boolean)
        } else {
            bool_col(vec![false; m], Some(vec![true; m]), false)
        });
    }
    let vals = compare_values(op, a, b, m)?;
    Ok(bool_col(vals, union_nulls(a, b, m), konst))
}

// ---------------------------------------------------------------------------------
// Arithmetic

fn arith<'a>(op: ArithOp, a: Col, b: Col, ty: DataType, n: usize) -> Result<Col<'a>> {
    let (m, konst) = extent(&a, &b, n);
    if a.is_null_const() || b.is_null_const() {
        return Ok(if konst {
            Col::null(ty)
        } else {
            Col::Own(broadcast(&value_vector(ty, &Value::Null)?, m))
        });
    }
    let nulls = union_nulls(&a, &b, m);
    let nm = nulls.as_deref();
    use DataType as T;
    let (lt, rt) = (a.v().ty, b.v().ty);
    let data = match (op, lt, rt) {
        // date ± integer, date - date
        (ArithOp::Add, T::Date, T::Integer) => {
            Data::I32(try_map2(side!(a, I32), side!(b, I32), m, nm, 0, |d, k| {
                Date(d).add_days(k as i64).map(|d| d.0)
            })?)
        }
        (ArithOp::Add, T::Integer, T::Date) => {
            Data::I32(try_map2(side!(a, I32), side!(b, I32), m, nm, 0, |k, d| {
                Date(d).add_days(k as i64).map(|d| d.0)
            })?)
        }
        (ArithOp::Sub, T::Date, T::Integer) => {
            Data::I32(try_map2(side!(a, I32), side!(b, I32), m, nm, 0, |d, k| {
                Date(d).sub_days(k as i64).map(|d| d.0)
            })?)
        }
        (ArithOp::Sub, T::Date, T::Date) => {
            Data::I32(map2(side!(a, I32), side!(b, I32), m, |x, y| {
                Date(x).days_since(Date(y))
            }))
        }
        // date/timestamp ± interval → timestamp
        (ArithOp::Add | ArithOp::Sub, T::Date | T::Timestamp, T::Interval) => {
            let iv = side!(b, Interval);
            let sub = op == ArithOp::Sub;
            let f = move |t: Timestamp, i: Interval| {
                if sub {
                    t.sub_interval(&i)
                } else {
                    t.add_interval(&i)
                }
                .map(|t| t.0)
            };
            if lt == T::Date {
                Data::I64(try_map2(side!(a, I32), iv, m, nm, 0, |d, i| {
                    f(Date(d).to_timestamp(), i)
                })?)
            } else {
                Data::I64(try_map2(side!(a, I64), iv, m, nm, 0, |t, i| {
                    f(Timestamp(t), i)
                })?)
            }
        }
        (ArithOp::Add, T::Interval, T::Date) => Data::I64(try_map2(
            side!(a, Interval),
            side!(b, I32),
            m,
            nm,
            0,
            |i, d| Date(d).add_interval(&i).map(|t| t.0),
        )?),
        (ArithOp::Add, T::Interval, T::Timestamp) => Data::I64(try_map2(
            side!(a, Interval),
            side!(b, I64),
            m,
            nm,
            0,
            |i, t| Timestamp(t).add_interval(&i).map(|t| t.0),
        )?),
        (ArithOp::Sub, T::Timestamp, T::Timestamp) => Data::Interval(try_map2(
            side!(a, I64),
            side!(b, I64),
            m,
            nm,
            Interval::ZERO,
            |x, y| Timestamp(x).sub_timestamp(Timestamp(y)),
        )?),
        (ArithOp::Add, T::Interval, T::Interval) => Data::Interval(try_map2(
            side!(a, Interval),
            side!(b, Interval),
            m,
            nm,
            Interval::ZERO,
            |x, y| x.checked_add(&y),
        )?),
        (ArithOp::Sub, T::Interval, T::Interval) => Data::Interval(try_map2(
            side!(a, Interval),
            side!(b, Interval),
            m,
            nm,
            Interval::ZERO,
            |x, y| x.checked_sub(&y),
        )?),
        (ArithOp::Mul, T::Interval, T::Double) => Data::Interval(try_map2(
            side!(a, Interval),
            side!(b, F64),
            m,
            nm,
            Interval::ZERO,
            |x, y| x.checked_mul_f64(y),
        )?),
        (ArithOp::Mul, T::Double, T::Interval) => Data::Interval(try_map2(
            side!(a, F64),
            side!(b, Interval),
            m,
            nm,
            Interval::ZERO,
            |y, x| x.checked_mul_f64(y),
        )?),
        (ArithOp::Div, T::Interval, T::Double) => Data::Interval(try_map2(
            side!(a, Interval),
            side!(b, F64),
            m,
            nm,
            Interval::ZERO,
            |x, y| x.checked_div_f64(y),
        )?),
        _ if ty.is_numeric() && lt.is_numeric() && rt.is_numeric() => {
            // The binder gives both operands the result type; cast defensively.
            let a = if PhysicalType::of(&lt) != PhysicalType::of(&ty) {
                cast_col(a, ty, true, n)?
            } else {
                a
            };
            let b = if PhysicalType::of(&rt) != PhysicalType::of(&ty) {
                cast_col(b, ty, true, n)?
            } else {
                b
            };
            let nulls2 = union_nulls(&a, &b, m);
            let nm = nulls2.as_deref();
            // Scaled integers in, scaled integers out, while the results fit (a
            // typmod on the result is applied by the generic path).
            let narrow = match ty {
                T::Decimal { precision: None, .. } => dec64::arith(op, &a, &b, m, nm),
                _ => None,
            };
            if let Some(v) = narrow {
                Data::Dec64(v)
            } else {
            match (&a.v().data, &b.v().data) {
                (Data::I16(_), Data::I16(_)) => {
                    Data::I16(arith_int(op, side!(a, I16), side!(b, I16), m, nm)?)
                }
                (Data::I32(_), Data::I32(_)) => {
                    Data::I32(arith_int(op, side!(a, I32), side!(b, I32), m, nm)?)
                }
                (Data::I64(_), Data::I64(_)) => {
                    Data::I64(arith_int(op, side!(a, I64), side!(b, I64), m, nm)?)
                }
                (Data::F32(_), Data::F32(_)) => Data::F32(try_map2(
                    side!(a, F32),
                    side!(b, F32),
                    m,
                    nm,
                    0.0,
                    |x, y| arith_f32(op, x, y),
                )?),
                (Data::F64(_), Data::F64(_)) => Data::F64(try_map2(
                    side!(a, F64),
                    side!(b, F64),
                    m,
                    nm,
                    0.0,
                    |x, y| arith_f64(op, x, y),
                )?),
                (Data::Dec64(_) | Data::Dec(_), Data::Dec64(_) | Data::Dec(_)) => {
                    let (a, b) = (a.view().wide_dec(), b.view().wide_dec());
                    let typmod = match ty {
                        T::Decimal {
                            precision: Some(p),
                            scale,
                        } => Some((p, scale)),
                        _ => None,
                    };
                    Data::Dec(try_map2(
                        side!(a, Dec),
                        side!(b, Dec),
                        m,
                        nm,
                        Decimal::ZERO,
                        |x, y| {
                            let r = arith_dec(op, x, y)?;
                            match typmod {
                                Some((p, s)) => r.apply_typmod(p, s),
                                None => Ok(r),
                            }
                        },
                    )?)
                }
                _ => return Err(internal("numeric operands of unexpected layout")),
            }
            }
        }
        _ => {
            return Err(Error::undefined_function(format!(
                "operator does not exist: {lt} {} {rt}",
                op.symbol()
            )));
        }
    };
    if PhysicalType::of(&ty) != data.physical_type() {
        return Err(internal(&format!(
            "arithmetic result does not have the expected type {ty}"
        )));
    }
    Ok(Col::make(Vector::from_data(ty, data, nulls), konst))
}

fn neg<'a>(c: Col, ty: DataType, n: usize) -> Result<Col<'a>> {
    if c.is_null_const() {
        return Ok(Col::null(ty));
    }
    let konst = c.is_const();
    let m = if konst { 1 } else { n };
    let nulls = c.v().nulls.clone();
    let nm = nulls.as_deref();
    use crate::types::number::int_neg;
    let data = match &c.v().data {
        Data::I16(_) => Data::I16(try_map1(side!(c, I16), m, nm, 0, int_neg)?),
        Data::I32(_) => Data::I32(try_map1(side!(c, I32), m, nm, 0, int_neg)?),
        Data::I64(_) => Data::I64(try_map1(side!(c, I64), m, nm, 0, int_neg)?),
        Data::F32(v) => Data::F32(v.iter().map(|x| -x).collect()),
        Data::F64(v) => Data::F64(v.iter().map(|x| -x).collect()),
        Data::Dec(v) => Data::Dec(v.iter().map(|x| x.neg()).collect()),
        // Values below 10^18 in magnitude (every column value) negate exactly; a
        // computed i64::MIN goes the generic way.
        Data::Dec64(v) => match v.values.iter().map(|x| x.checked_neg()).collect() {
            Some(values) => Data::Dec64(crate::vector::Dec64Vec {
                scale: v.scale,
                values,
            }),
            None => Data::Dec(v.to_decimals().iter().map(|x| x.neg()).collect()),
        },
        Data::Interval(_) => {
            Data::Interval(try_map1(side!(c, Interval), m, nm, Interval::ZERO, |x| {
                x.checked_neg()
            })?)
        }
        _ => {
            return Err(Error::undefined_function(format!(
                "operator does not exist: - {}",
                c.v().ty
            )));
        }
    };
    let ty = if PhysicalType::of(&ty) == data.physical_type() {
        ty
    } else {
        c.v().ty
    };
    Ok(Col::make(Vector::from_data(ty, data, nulls), konst))
}

// ---------------------------------------------------------------------------------
// Extract

fn extract<'a>(field: types::DateField, c: Col, n: usize) -> Result<Col<'a>> {
    let ty = DataType::NUMERIC;
    if c.is_null_const() {
        return Ok(Col::null(ty));
    }
    let konst = c.is_const();
    let m = if konst { 1 } else { n };
    let nulls = c.v().nulls.clone();
    let nm = nulls.as_deref();
    let z = Decimal::ZERO;
    let vals = match (c.v().ty, &c.v().data) {
        (DataType::Date, Data::I32(_)) => {
            try_map1(side!(c, I32), m, nm, z, |d| Date(d).extract(field))?
        }
        (DataType::Timestamp, Data::I64(_)) => {
            try_map1(side!(c, I64), m, nm, z, |t| Timestamp(t).extract(field))?
        }
        (DataType::Interval, Data::Interval(_)) => {
            try_map1(side!(c, Interval), m, nm, z, |i| i.extract(field))?
        }
        (t, _) => {
            return Err(Error::undefined_function(format!(
                "function extract(unknown, {t}) does not exist"
            )));
        }
    };
    Ok(Col::make(
        Vector::from_data(ty, Data::Dec(vals), nulls),
        konst,
    ))
}

// ---------------------------------------------------------------------------------
// AND / OR, CASE, COALESCE, IN

/// Three-valued AND (`is_and`) or OR over the rows still undecided: once a row is
/// FALSE (AND) or TRUE (OR), later operands are not evaluated for it.
fn and_or<'a>(list: &[Expr], is_and: bool, r: Rows<'a>, ctx: &EvalContext<'_>) -> Result<Col<'a>> {
    let n = r.n();
    let dominant = !is_and;
    let mut decided = vec![false; n];
    let mut nulls = vec![false; n];
    // Dense indices of the undecided rows; `None` while that is every row.
    let mut active: Option<Vec<u32>> = None;
    let mut all_const = true;
    for c in list {
        let phys: Vec<u32>;
        let rr = match &active {
            None => r,
            Some(idx) => {
                phys = r.subset(idx);
                r.with(&phys)
            }
        };
        let m = rr.n();
        let col = ev(c, rr, ctx)?;
        all_const &= col.is_const();
        let Data::Bool(b) = &col.v().data else {
            return Err(internal("AND/OR operand is not boolean"));
        };
        let mut next = Vec::with_capacity(m);
        let mut changed = false;
        for j in 0..m {
            let k = match &active {
                None => j,
                Some(idx) => idx[j] as usize,
            };
            let jj = col.idx(j);
            if col.v().is_null(jj) {
                nulls[k] = true;
                next.push(k as u32);
            } else if b[jj] == dominant {
                decided[k] = true;
                changed = true;
            } else {
                next.push(k as u32);
            }
        }
        if changed || active.is_some() {
            active = Some(next);
        }
        if active.as_ref().is_some_and(|a| a.is_empty()) {
            break;
        }
    }
    let vals: Vec<bool> = (0..n)
        .map(|k| if decided[k] { dominant } else { !dominant })
        .collect();
    let nulls: Vec<bool> = (0..n).map(|k| !decided[k] && nulls[k]).collect();
    if all_const && n > 0 {
        return Ok(bool_col(vec![vals[0]], Some(vec![nulls[0]]), true));
    }
    Ok(bool_col(vals, Some(nulls), false))
}

const NONE: u32 = u32::MAX;

/// Builds a result from branch results: row `k` is row `choice[k].1` of branch
/// `choice[k].0` (NULL for [`NONE`]).
fn assemble(ty: DataType, parts: Vec<Col<'_>>, choice: &[(u32, u32)], n: usize) -> Result<Vector> {
    let mut fixed = Vec::with_capacity(parts.len());
    for p in parts {
        let p = if PhysicalType::of(&p.v().ty) != PhysicalType::of(&ty) {
            cast_col(p, ty, false, n)?
        } else {
            p
        };
        fixed.push(p);
    }
    // One branch for every row: return it as is.
    if fixed.len() == 1 && choice.iter().all(|c| c.0 == 0) && n > 0 {
        let p = fixed.pop().map(|p| p.into_vector(n));
        if let Some(mut v) = p
            && v.len() == n
        {
            retype(&mut v, ty);
            return Ok(v);
        }
        return Err(internal("CASE branch of the wrong length"));
    }
    let mut out = Vector::new(ty, n);
    for &(b, i) in choice {
        if b == NONE {
            out.push_null();
        } else {
            let p = &fixed[b as usize];
            out.push_from(p.v(), p.idx(i as usize));
        }
    }
    Ok(out)
}

fn eval_case<'a>(
    whens: &[(Expr, Expr)],
    else_: Option<&Expr>,
    ty: DataType,
    r: Rows<'a>,
    ctx: &EvalContext<'_>,
) -> Result<Col<'a>> {
    let n = r.n();
    let mut choice = vec![(NONE, 0u32); n];
    let mut parts: Vec<Col<'static>> = Vec::new();
    let mut active: Option<Vec<u32>> = None;
    let mut run_branch = |e: &Expr, rows: &[u32], parts: &mut Vec<Col<'static>>| -> Result<()> {
        let phys = r.subset(rows);
        let c = ev(e, r.with(&phys), ctx)?.into_static();
        let b = parts.len() as u32;
        for (i, &k) in rows.iter().enumerate() {
            choice[k as usize] = (b, i as u32);
        }
        parts.push(c);
        Ok(())
    };
    for (cond, then) in whens {
        let phys: Vec<u32>;
        let rr = match &active {
            None => r,
            Some(idx) => {
                phys = r.subset(idx);
                r.with(&phys)
            }
        };
        let m = rr.n();
        let c = ev(cond, rr, ctx)?;
        let Data::Bool(b) = &c.v().data else {
            return Err(internal("CASE condition is not boolean"));
        };
        let mut matched = Vec::new();
        let mut rest = Vec::new();
        for j in 0..m {
            let k = match &active {
                None => j as u32,
                Some(idx) => idx[j],
            };
            let jj = c.idx(j);
            if !c.v().is_null(jj) && b[jj] {
                matched.push(k);
            } else {
                rest.push(k);
            }
        }
        if !matched.is_empty() {
            run_branch(then, &matched, &mut parts)?;
        }
        active = Some(rest);
        if active.as_ref().is_some_and(|a| a.is_empty()) {
            break;
        }
    }
    if let Some(e) = else_ {
        let rest = active.unwrap_or_else(|| (0..n as u32).collect());
        if !rest.is_empty() {
            run_branch(e, &rest, &mut parts)?;
        }
    }
    Ok(Col::Own(assemble(ty, parts, &choice, n)?))
}

fn eval_coalesce<'a>(
    list: &[Expr],
    ty: DataType,
    r: Rows<'a>,
    ctx: &EvalContext<'_>,
) -> Result<Col<'a>> {
    let n = r.n();
    let mut choice = vec![(NONE, 0u32); n];
    let mut parts: Vec<Col<'static>> = Vec::new();
    let mut active: Option<Vec<u32>> = None;
    for e in list {
        let phys: Vec<u32>;
        let rr = match &active {
            None => r,
            Some(idx) => {
                phys = r.subset(idx);
                r.with(&phys)
            }
        };
        let m = rr.n();
        let c = ev(e, rr, ctx)?.into_static();
        let b = parts.len() as u32;
        let mut rest = Vec::new();
        for j in 0..m {
            let k = match &active {
                None => j as u32,
                Some(idx) => idx[j],
            };
            if c.null_at(j) {
                rest.push(k);
            } else {
                choice[k as usize] = (b, j as u32);
            }
        }
        parts.push(c);
        active = Some(rest);
        if active.as_ref().is_some_and(|a| a.is_empty()) {
            break;
        }
    }
    Ok(Col::Own(assemble(ty, parts, &choice, n)?))
}

fn eval_in_list<'a>(
    expr: &Expr,
    list: &[Expr],
    negated: bool,
    r: Rows<'a>,
    ctx: &EvalContext<'_>,
) -> Result<Col<'a>> {
    let n = r.n();
    // The constant-set path compares decimals as `Decimal`s.
    let lhs = ev(expr, r, ctx)?.wide_dec();
    let mut items = Vec::with_capacity(list.len());
    for e in list {
        items.push(ev(e, r, ctx)?.wide_dec());
    }
    let konst = lhs.is_const() && items.iter().all(|c| c.is_const());
    let m = if konst { 1 } else { n };
    let has_null_item = items.iter().any(|c| c.is_null_const());
    let all_const = items.iter().all(|c| c.is_const());
    let mut item_nulls = vec![has_null_item; m];
    let same_layout = items
        .iter()
        .all(|c| c.v().data.physical_type() == lhs.v().data.physical_type());
    let found: Vec<bool> = if all_const && same_layout && !lhs.is_null_const() {
        let live: Vec<&Col> = items.iter().filter(|c| !c.is_null_const()).collect();
        macro_rules! consts {
            ($var:ident) => {{
                let mut vals = Vec::with_capacity(live.len());
                for c in &live {
                    let Data::$var(v) = &c.v().data else {
                        return Err(internal("IN item of another type"));
                    };
                    vals.push(v[0]);
                }
                in_set(side!(lhs, $var), vals, m)
            }};
        }
        match &lhs.v().data {
            Data::Bool(_) => consts!(Bool),
            Data::I16(_) => consts!(I16),
            Data::I32(_) if live.iter().all(|c| same_kind(c, &lhs)) => consts!(I32),
            Data::I64(_) if live.iter().all(|c| same_kind(c, &lhs)) => consts!(I64),
            Data::F32(_) => consts!(F32),
            Data::F64(_) => consts!(F64),
            Data::Dec(_) => consts!(Dec),
            Data::Interval(_) => consts!(Interval),
            Data::Str(_) => {
                let bp = is_char(&lhs.v().ty) || live.iter().any(|c| is_char(&c.v().ty));
                let mut vals = Vec::with_capacity(live.len());
                for c in &live {
                    let Data::Str(v) = &c.v().data else {
                        return Err(internal("IN item of another type"));
                    };
                    vals.push(if bp { bpchar_trim(v.get(0)) } else { v.get(0) });
                }
                let l = str_side(&lhs, bp)?;
                in_set(l.s(), vals, m)
            }
            _ => in_list_general(&lhs, &items, m, &mut item_nulls)?,
        }
    } else {
        in_list_general(&lhs, &items, m, &mut item_nulls)?
    };
    let mut vals = Vec::with_capacity(m);
    let mut nulls = Vec::with_capacity(m);
    for i in 0..m {
        if lhs.null_at(i) {
            vals.push(false);
            nulls.push(true);
        } else if found[i] {
            vals.push(!negated);
            nulls.push(false);
        } else if item_nulls[i] {
            vals.push(false);
            nulls.push(true);
        } else {
            vals.push(negated);
            nulls.push(false);
        }
    }
    Ok(bool_col(vals, Some(nulls), konst))
}

/// `found[i]`: some non-NULL item equals the left side; `item_nulls[i]` is set when
/// some item is NULL on that row.
fn in_list_general(
    lhs: &Col,
    items: &[Col],
    m: usize,
    item_nulls: &mut [bool],
) -> Result<Vec<bool>> {
    let mut found = vec![false; m];
    for it in items {
        if it.is_null_const() {
            item_nulls.iter_mut().for_each(|x| *x = true);
            continue;
        }
        let eq = compare_values(CmpOp::Eq, lhs, it, m)?;
        for i in 0..m {
            if it.null_at(i) {
                item_nulls[i] = true;
            } else if eq[i] {
                found[i] = true;
            }
        }
    }
    Ok(found)
}
