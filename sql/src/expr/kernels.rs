//! Typed kernels shared by the evaluator: operand access (a column slice or one
//! broadcast constant), comparison with PostgreSQL's ordering per type, checked
//! arithmetic, and small map helpers that skip NULL rows for fallible operations.

use std::cmp::Ordering;

use super::CmpOp;
use crate::error::{Error, Result};
use crate::types::number::{SqlInt, int_add, int_div, int_mul, int_rem, int_sub};
use crate::types::{self, Decimal, Interval};

/// One operand of a kernel: a slice with one value per row, or a single value that
/// stands for every row (a constant: never materialized into a vector).
#[derive(Clone, Copy)]
pub(super) enum S<'a, T> {
    One(T),
    Many(&'a [T]),
}

impl<T: Copy> S<'_, T> {
    #[inline(always)]
    pub fn get(&self, i: usize) -> T {
        match self {
            S::One(x) => *x,
            S::Many(v) => v[i],
        }
    }
}

/// Applies `f` row by row to one operand.
#[inline]
pub(super) fn map1<A: Copy, O: Clone>(a: S<A>, n: usize, f: impl Fn(A) -> O) -> Vec<O> {
    match a {
        S::Many(x) => x[..n].iter().map(|&a| f(a)).collect(),
        S::One(x) => vec![f(x); n],
    }
}

/// Applies `f` row by row to two operands; the loop is specialized for each
/// vector/constant combination.
#[inline]
pub(super) fn map2<A: Copy, B: Copy, O: Clone>(
    a: S<A>,
    b: S<B>,
    n: usize,
    f: impl Fn(A, B) -> O,
) -> Vec<O> {
    match (a, b) {
        (S::Many(x), S::Many(y)) => x[..n].iter().zip(&y[..n]).map(|(&a, &b)| f(a, b)).collect(),
        (S::Many(x), S::One(y)) => x[..n].iter().map(|&a| f(a, y)).collect(),
        (S::One(x), S::Many(y)) => y[..n].iter().map(|&b| f(x, b)).collect(),
        (S::One(x), S::One(y)) => vec![f(x, y); n],
    }
}

/// A fallible `map1` that does not call `f` on NULL rows (they get `dflt`), so a
/// NULL's placeholder value never raises an error.
pub(super) fn try_map1<A: Copy, O: Clone>(
    a: S<A>,
    n: usize,
    nulls: Option<&[bool]>,
    dflt: O,
    f: impl Fn(A) -> types::Result<O>,
) -> Result<Vec<O>> {
    let mut out = Vec::with_capacity(n);
    match nulls {
        None => {
            for i in 0..n {
                out.push(f(a.get(i))?);
            }
        }
        Some(m) => {
            for (i, &null) in m[..n].iter().enumerate() {
                out.push(if null { dflt.clone() } else { f(a.get(i))? });
            }
        }
    }
    Ok(out)
}

/// A fallible `map2` skipping NULL rows (see [`try_map1`]).
pub(super) fn try_map2<A: Copy, B: Copy, O: Clone>(
    a: S<A>,
    b: S<B>,
    n: usize,
    nulls: Option<&[bool]>,
    dflt: O,
    f: impl Fn(A, B) -> types::Result<O>,
) -> Result<Vec<O>> {
    let mut out = Vec::with_capacity(n);
    match nulls {
        None => {
            for i in 0..n {
                out.push(f(a.get(i), b.get(i))?);
            }
        }
        Some(m) => {
            for (i, &null) in m[..n].iter().enumerate() {
                out.push(if null {
                    dflt.clone()
                } else {
                    f(a.get(i), b.get(i))?
                });
            }
        }
    }
    Ok(out)
}

/// PostgreSQL's ordering of one type: floats put NaN above everything and equal to
/// itself, `-0 = 0`; decimals compare by value; strings by bytes.
pub(super) trait SqlCmp: Copy {
    fn lt(self, other: Self) -> bool;
    fn eq(self, other: Self) -> bool;
    #[inline]
    fn ord(self, other: Self) -> Ordering {
        if self.lt(other) {
            Ordering::Less
        } else if self.eq(other) {
            Ordering::Equal
        } else {
            Ordering::Greater
        }
    }
}

macro_rules! sql_cmp_ord {
    ($($t:ty),*) => {$(
        impl SqlCmp for $t {
            #[inline(always)]
            fn lt(self, other: Self) -> bool { self < other }
            #[inline(always)]
            fn eq(self, other: Self) -> bool { self == other }
        }
    )*};
}
sql_cmp_ord!(bool, i16, i32, i64, Interval);

impl SqlCmp for &str {
    #[inline(always)]
    fn lt(self, other: Self) -> bool {
        self.as_bytes() < other.as_bytes()
    }
    #[inline(always)]
    fn eq(self, other: Self) -> bool {
        self == other
    }
}

macro_rules! sql_cmp_float {
    ($($t:ty),*) => {$(
        impl SqlCmp for $t {
            #[inline(always)]
            fn lt(self, other: Self) -> bool {
                // NaN is the largest value: a < NaN unless a is NaN.
                if other.is_nan() { !self.is_nan() } else { self < other }
            }
            #[inline(always)]
            fn eq(self, other: Self) -> bool {
                self == other || (self.is_nan() && other.is_nan())
            }
        }
    )*};
}
sql_cmp_float!(f32, f64);

impl SqlCmp for Decimal {
    #[inline]
    fn lt(self, other: Self) -> bool {
        if self.scale() == other.scale() {
            self.unscaled() < other.unscaled()
        } else {
            self < other
        }
    }
    #[inline]
    fn eq(self, other: Self) -> bool {
        if self.scale() == other.scale() {
            self.unscaled() == other.unscaled()
        } else {
            self == other
        }
    }
}

/// `a op b` for every row (NULLs are the caller's business).
pub(super) fn cmp_kernel<T: SqlCmp>(op: CmpOp, a: S<T>, b: S<T>, n: usize) -> Vec<bool> {
    match op {
        CmpOp::Eq => map2(a, b, n, |x, y| x.eq(y)),
        CmpOp::NotEq => map2(a, b, n, |x, y| !x.eq(y)),
        CmpOp::Lt => map2(a, b, n, |x, y| x.lt(y)),
        CmpOp::LtEq => map2(a, b, n, |x, y| !y.lt(x)),
        CmpOp::Gt => map2(a, b, n, |x, y| y.lt(x)),
        CmpOp::GtEq => map2(a, b, n, |x, y| !x.lt(y)),
    }
}

/// Appends to `out` the positions `p` of `sel` (or of `0..len`) where `col[p] op k`
/// holds and the row is not NULL: the `WHERE col < 42` fast path, reading the column
/// in place through the selection.
pub(super) fn cmp_select<T: SqlCmp>(
    op: CmpOp,
    col: &[T],
    k: T,
    sel: Option<&[u32]>,
    nulls: Option<&[bool]>,
    out: &mut Vec<u32>,
) {
    #[inline(always)]
    fn run<T: SqlCmp>(
        col: &[T],
        k: T,
        sel: Option<&[u32]>,
        nulls: Option<&[bool]>,
        out: &mut Vec<u32>,
        f: impl Fn(T, T) -> bool,
    ) {
        match (sel, nulls) {
            (None, None) => {
                for (p, &v) in col.iter().enumerate() {
                    if f(v, k) {
                        out.push(p as u32);
                    }
                }
            }
            (None, Some(m)) => {
                for (p, &v) in col.iter().enumerate() {
                    if !m[p] && f(v, k) {
                        out.push(p as u32);
                    }
                }
            }
            (Some(s), None) => {
                for &p in s {
                    if f(col[p as usize], k) {
                        out.push(p);
                    }
                }
            }
            (Some(s), Some(m)) => {
                for &p in s {
                    if !m[p as usize] && f(col[p as usize], k) {
                        out.push(p);
                    }
                }
            }
        }
    }
    match op {
        CmpOp::Eq => run(col, k, sel, nulls, out, |x, y| x.eq(y)),
        CmpOp::NotEq => run(col, k, sel, nulls, out, |x, y| !x.eq(y)),
        CmpOp::Lt => run(col, k, sel, nulls, out, |x, y| x.lt(y)),
        CmpOp::LtEq => run(col, k, sel, nulls, out, |x, y| !y.lt(x)),
        CmpOp::Gt => run(col, k, sel, nulls, out, |x, y| y.lt(x)),
        CmpOp::GtEq => run(col, k, sel, nulls, out, |x, y| !x.lt(y)),
    }
}

/// Whether each row's value is among `items` (exact SQL equality).
pub(super) fn in_set<T: SqlCmp>(lhs: S<T>, mut items: Vec<T>, n: usize) -> Vec<bool> {
    if items.len() <= 8 {
        return map1(lhs, n, |x| items.iter().any(|&y| x.eq(y)));
    }
    items.sort_by(|a, b| a.ord(*b));
    map1(lhs, n, |x| items.binary_search_by(|y| y.ord(x)).is_ok())
}

/// Integer arithmetic with PostgreSQL's overflow and division errors.
pub(super) fn arith_int<T: SqlInt + Default>(
    op: super::ArithOp,
    a: S<T>,
    b: S<T>,
    n: usize,
    nulls: Option<&[bool]>,
) -> Result<Vec<T>> {
    use super::ArithOp::*;
    let d = T::default();
    match op {
        Add => try_map2(a, b, n, nulls, d, int_add),
        Sub => try_map2(a, b, n, nulls, d, int_sub),
        Mul => try_map2(a, b, n, nulls, d, int_mul),
        Div => try_map2(a, b, n, nulls, d, int_div),
        Mod => try_map2(a, b, n, nulls, d, int_rem),
    }
}

macro_rules! float_arith {
    ($name:ident, $t:ty) => {
        /// Float arithmetic as PostgreSQL's `float4`/`float8` operators: an
        /// infinite result from finite operands overflows, a zero product or
        /// quotient from non-zero operands underflows, division by zero fails.
        #[inline]
        pub(super) fn $name(op: super::ArithOp, a: $t, b: $t) -> types::Result<$t> {
            use super::ArithOp::*;
            let r = match op {
                Add => a + b,
                Sub => a - b,
                Mul => a * b,
                Div => {
                    if b == 0.0 && !a.is_nan() {
                        return Err(types::Error::DivisionByZero);
                    }
                    a / b
                }
                Mod => {
                    if b == 0.0 && !a.is_nan() {
                        return Err(types::Error::DivisionByZero);
                    }
                    a % b
                }
            };
            if r.is_infinite() && !a.is_infinite() && !b.is_infinite() {
                return Err(types::Error::FloatOverflow);
            }
            if r == 0.0 && a != 0.0 {
                let underflow = match op {
                    Mul => b != 0.0,
                    Div => !b.is_infinite(),
                    _ => false,
                };
                if underflow {
                    return Err(types::Error::FloatUnderflow);
                }
            }
            Ok(r)
        }
    };
}
float_arith!(arith_f32, f32);
float_arith!(arith_f64, f64);

pub(super) fn arith_dec(op: super::ArithOp, a: Decimal, b: Decimal) -> types::Result<Decimal> {
    use super::ArithOp::*;
    match op {
        Add => a.add(&b),
        Sub => a.sub(&b),
        Mul => a.mul(&b),
        Div => a.div(&b),
        Mod => a.rem(&b),
    }
}

/// Merges two ascending position lists.
pub(super) fn merge_sorted(a: &[u32], b: &[u32]) -> Vec<u32> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            Ordering::Less => {
                out.push(a[i]);
                i += 1;
            }
            Ordering::Greater => {
                out.push(b[j]);
                j += 1;
            }
            Ordering::Equal => {
                out.push(a[i]);
                i += 1;
                j += 1;
            }
        }
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
    out
}

/// `a` without the elements of `b` (both ascending, `b` a subset of `a`).
pub(super) fn difference(a: &[u32], b: &[u32]) -> Vec<u32> {
    let mut out = Vec::with_capacity(a.len().saturating_sub(b.len()));
    let mut j = 0;
    for &x in a {
        while j < b.len() && b[j] < x {
            j += 1;
        }
        if j < b.len() && b[j] == x {
            continue;
        }
        out.push(x);
    }
    out
}

pub(super) fn internal(what: &str) -> Error {
    Error::internal(format!("evaluator: {what}"))
}
