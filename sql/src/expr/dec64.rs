//! Kernels over decimals held as scaled i64 ([`Data::Dec64`]): `+`, `-`, `*` and
//! comparisons as integer loops.
//!
//! Each kernel gives exactly the generic [`Decimal`] path's answer, value and scale:
//! `+`/`-` at the larger scale, `*` at the sum of the scales, as
//! [`Decimal::add`]/[`Decimal::mul`] compute them. When that answer does not fit the
//! i64 representation (a product past 2^63, a scale above 38) or the operands are
//! not scaled integers, the kernel returns `None` and the caller takes the generic
//! path, which also raises the overflow errors: there is one definition of every
//! result, and this module is only a faster way to reach it.

use super::ArithOp;
use super::eval::Col;
use super::kernels::S;
use crate::types::MAX_SCALE;
use crate::vector::{Data, Dec64Vec};

/// 10^0 … 10^18, the factors an i64 can be scaled by.
const POW10: [i64; 19] = {
    let mut t = [1i64; 19];
    let mut i = 1;
    while i < 19 {
        t[i] = t[i - 1] * 10;
        i += 1;
    }
    t
};

/// An operand as scaled integers and their scale: a `Dec64` vector, or a decimal
/// constant whose digits fit an i64 at its own scale.
pub(super) fn narrow<'b>(c: &'b Col<'_>) -> Option<(S<'b, i64>, u8)> {
    match &c.v().data {
        Data::Dec64(d) if c.is_const() => Some((S::One(*d.values.first()?), d.scale)),
        Data::Dec64(d) => Some((S::Many(&d.values), d.scale)),
        Data::Dec(d) if c.is_const() => {
            let x = d.first()?;
            Some((S::One(x.to_scaled_i64(x.scale())?), x.scale()))
        }
        _ => None,
    }
}

/// `x × 10^digits` for a constant operand, or the operand itself when `digits` is 0;
/// `None` when a vector would need scaling (the loops scale per element instead).
fn scale_const(x: S<'_, i64>, digits: u8) -> Option<S<'_, i64>> {
    match x {
        S::One(v) => Some(S::One(v.checked_mul(*POW10.get(digits as usize)?)?)),
        S::Many(_) if digits == 0 => Some(x),
        S::Many(_) => None,
    }
}

/// `a op b` over `n` rows for `+`, `-` and `*`, NULL rows (`nulls`) set to 0; `None`
/// when a result would not fit or `op` has no scaled-integer kernel.
pub(super) fn arith(
    op: ArithOp,
    a: &Col,
    b: &Col,
    n: usize,
    nulls: Option<&[bool]>,
) -> Option<Dec64Vec> {
    let (x, sx) = narrow(a)?;
    let (y, sy) = narrow(b)?;
    let (scale, values) = match op {
        ArithOp::Add | ArithOp::Sub => {
            let scale = sx.max(sy);
            let sub = op == ArithOp::Sub;
            // Align the operand of the smaller scale: a constant once, a vector
            // element by element.
            let (fx, fy) = (scale - sx, scale - sy);
            let values = match (scale_const(x, fx), scale_const(y, fy)) {
                (Some(x), Some(y)) => add_loop(x, y, n, sub)?,
                _ => add_loop_aligned(x, *POW10.get(fx as usize)?, y, *POW10.get(fy as usize)?, n, sub)?,
            };
            (scale, values)
        }
        ArithOp::Mul => {
            let scale = sx as u32 + sy as u32;
            if scale > MAX_SCALE as u32 {
                return None;
            }
            (scale as u8, mul_loop(x, y, n)?)
        }
        ArithOp::Div | ArithOp::Mod => return None,
    };
    let mut values = values;
    if let Some(m) = nulls {
        for (v, &null) in values.iter_mut().zip(m) {
            if null {
                *v = 0;
            }
        }
    }
    Some(Dec64Vec { scale, values })
}

/// `x ± y` with overflow checked once for the whole loop (the loop stays branch-free).
fn add_loop(x: S<'_, i64>, y: S<'_, i64>, n: usize, sub: bool) -> Option<Vec<i64>> {
    let mut out = Vec::with_capacity(n);
    let mut overflow = false;
    macro_rules! run {
        ($a:expr, $b:expr) => {
            for i in 0..n {
                let (r, o) = if sub {
                    $a(i).overflowing_sub($b(i))
                } else {
                    $a(i).overflowing_add($b(i))
                };
                overflow |= o;
                out.push(r);
            }
        };
    }
    match (x, y) {
        (S::Many(a), S::Many(b)) => {
            let (a, b) = (&a[..n], &b[..n]);
            run!(|i: usize| a[i], |i: usize| b[i])
        }
        (S::Many(a), S::One(k)) => {
            let a = &a[..n];
            run!(|i: usize| a[i], |_| k)
        }
        (S::One(k), S::Many(b)) => {
            let b = &b[..n];
            run!(|_| k, |i: usize| b[i])
        }
        (S::One(k), S::One(l)) => run!(|_| k, |_| l),
    }
    (!overflow).then_some(out)
}

/// `x·fx ± y·fy`: operands of different scales, aligned element by element.
fn add_loop_aligned(x: S<'_, i64>, fx: i64, y: S<'_, i64>, fy: i64, n: usize, sub: bool) -> Option<Vec<i64>> {
    let mut out = Vec::with_capacity(n);
    let mut overflow = false;
    for i in 0..n {
        let (p, o1) = x.get(i).overflowing_mul(fx);
        let (q, o2) = y.get(i).overflowing_mul(fy);
        let (r, o3) = if sub { p.overflowing_sub(q) } else { p.overflowing_add(q) };
        overflow |= o1 | o2 | o3;
        out.push(r);
    }
    (!overflow).then_some(out)
}

/// `x × y`, overflow checked once for the whole loop.
fn mul_loop(x: S<'_, i64>, y: S<'_, i64>, n: usize) -> Option<Vec<i64>> {
    let mut out = Vec::with_capacity(n);
    let mut overflow = false;
    match (x, y) {
        (S::Many(a), S::Many(b)) => {
            for (&p, &q) in a[..n].iter().zip(&b[..n]) {
                let (r, o) = p.overflowing_mul(q);
                overflow |= o;
                out.push(r);
            }
        }
        (S::Many(a), S::One(k)) | (S::One(k), S::Many(a)) => {
            for &p in &a[..n] {
                let (r, o) = p.overflowing_mul(k);
                overflow |= o;
                out.push(r);
            }
        }
        (S::One(k), S::One(l)) => {
            let (r, o) = k.overflowing_mul(l);
            overflow |= o;
            out.resize(n, r);
        }
    }
    (!overflow).then_some(out)
}

/// Both operands as scaled integers at one scale, for comparison: vectors of the
/// same scale, or a constant that is exact at the other side's scale.
pub(super) fn comparable<'b>(a: &'b Col<'_>, b: &'b Col<'_>) -> Option<(S<'b, i64>, S<'b, i64>)> {
    let (x, sx) = narrow(a)?;
    let (y, sy) = narrow(b)?;
    if sx == sy {
        return Some((x, y));
    }
    // Scale the side of the smaller scale up (exact); a vector is not rescaled here.
    if sx < sy {
        Some((scale_const(x, sy - sx)?, y))
    } else {
        Some((x, scale_const(y, sx - sy)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pow10_table_is_exact() {
        assert_eq!(POW10[18], 1_000_000_000_000_000_000);
    }
}
