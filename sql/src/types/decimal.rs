//! `numeric` / `decimal`: exact decimal numbers of up to 38 digits, as an `i128` of
//! unscaled digits and a scale (the number of digits after the point).
//!
//! Semantics follow PostgreSQL's `numeric`, with one limit: 38 digits in all (PostgreSQL
//! allows 131072 before the point and 16383 after). Where a PostgreSQL result would
//! need more digits, the fractional part is rounded (half away from zero) to as many
//! digits as fit; only a result whose integer part needs more than 38 digits is an
//! error ([`Error::NumericOverflow`]). Scales above 38 are rounded to 38 on input.
//!
//! Result scales are PostgreSQL's: `+`/`-` the larger scale, `*` the sum of the scales,
//! `/` the rule of `select_div_scale` in PostgreSQL's `numeric.c` (at least 16
//! significant digits, never fewer fractional digits than either operand), all capped
//! as above. Rounding when a scale shrinks is half away from zero, as PostgreSQL's
//! `round_var`. `NaN` and the infinities of PostgreSQL 14+ are not supported.

use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};

use super::error::{Error, Result};
use super::wide::U256;

/// The most digits a decimal holds, before and after the point together.
pub const MAX_PRECISION: u8 = 38;
/// The largest scale a decimal holds.
pub const MAX_SCALE: u8 = 38;

/// 10^38: every unscaled magnitude is strictly below it.
const LIMIT: u128 = 100_000_000_000_000_000_000_000_000_000_000_000_000;

/// 10^0 … 10^38, so scaling by a power of ten is one load, not a loop of multiplies.
const POW10: [u128; 39] = {
    let mut t = [1u128; 39];
    let mut i = 1;
    while i < 39 {
        t[i] = t[i - 1] * 10;
        i += 1;
    }
    t
};

/// `unscaled × 10^digits`, or `None` when it overflows an i128. Values that fit an
/// i64 scaled by at most 18 digits (a literal `1` against a price) take one widening
/// multiply instead of i128's checked multiply.
#[inline]
fn align(unscaled: i128, digits: u8) -> Option<i128> {
    if digits == 0 {
        return Some(unscaled);
    }
    if digits <= 18
        && let Ok(small) = i64::try_from(unscaled)
    {
        // |small| < 2^63 and 10^18 < 2^60: the product is below 2^123.
        return Some(small as i128 * POW10[digits as usize] as i128);
    }
    unscaled.checked_mul(pow10(digits) as i128)
}

/// 10^exp for exp ≤ 38 (callers pass scale differences, which never exceed 38).
fn pow10(exp: u8) -> u128 {
    POW10[exp as usize]
}

/// An exact decimal number: `unscaled / 10^scale`. Equality, ordering and hashing look
/// at the number, not its scale: `1.0 = 1.00`, as in PostgreSQL.
#[derive(Debug, Clone, Copy)]
pub struct Decimal {
    unscaled: i128,
    scale: u8,
}

/// Rounds `magnitude / 10^drop` half away from zero (magnitudes are non-negative, so
/// "half up" on the magnitude).
fn round_div_pow10(magnitude: U256, drop: u32) -> U256 {
    if drop == 0 {
        return magnitude;
    }
    if drop <= 38 {
        let d = 10u128.pow(drop);
        let (q, r) = magnitude.div_rem(d);
        return if r >= d - r {
            q.checked_inc().unwrap_or(q)
        } else {
            q
        };
    }
    // Every U256 is below 10^78, so dropping 78 digits or more leaves less than a half.
    if drop >= 78 {
        return U256::ZERO;
    }
    // Truncating division in steps is exact; then compare the dropped part with half.
    let mut q = magnitude;
    let mut left = drop;
    while left > 0 {
        let step = left.min(38);
        q = q.div_rem(10u128.pow(step)).0;
        left -= step;
    }
    let kept = q.checked_mul_pow10(drop).unwrap_or(magnitude);
    let dropped = magnitude.wrapping_sub(kept);
    let half = U256::from_u128(5).checked_mul_pow10(drop - 1);
    match half {
        Some(h) if dropped >= h => q.checked_inc().unwrap_or(q),
        _ => q,
    }
}

/// Builds a decimal from a sign and a magnitude at `scale`, lowering the scale (with
/// rounding) until the magnitude fits 38 digits: the fractional part gives way before
/// an overflow is reported.
fn fit(negative: bool, magnitude: U256, scale: u32) -> Result<Decimal> {
    let mut scale = scale;
    let mut m = magnitude;
    if scale > MAX_SCALE as u32 {
        m = round_div_pow10(m, scale - MAX_SCALE as u32);
        scale = MAX_SCALE as u32;
    }
    loop {
        if let Some(v) = m.to_u128()
            && v < LIMIT
        {
            let unscaled = if negative { -(v as i128) } else { v as i128 };
            return Ok(Decimal {
                unscaled,
                scale: scale as u8,
            });
        }
        if scale == 0 {
            return Err(Error::NumericOverflow);
        }
        // Drop as many digits as needed at once, from the original magnitude, so
        // rounding happens once.
        let digits = digit_count_wide(m);
        let excess = (digits - MAX_PRECISION as u32).min(scale).max(1);
        m = round_div_pow10(m, excess);
        scale -= excess;
    }
}

/// Number of decimal digits of a value (1 for zero).
fn digit_count_wide(v: U256) -> u32 {
    let mut n = 1;
    let mut x = v;
    while x >= U256::from_u128(10) {
        x = x.div_rem(10).0;
        n += 1;
    }
    n
}

fn digit_count(v: u128) -> u32 {
    if v == 0 { 1 } else { v.ilog10() + 1 }
}

impl Decimal {
    /// Zero with scale 0.
    pub const ZERO: Decimal = Decimal {
        unscaled: 0,
        scale: 0,
    };

    /// `unscaled / 10^scale`; fails when the scale or the digit count exceeds 38.
    pub fn new(unscaled: i128, scale: u8) -> Result<Decimal> {
        if scale > MAX_SCALE || unscaled.unsigned_abs() >= LIMIT {
            return Err(Error::NumericOverflow);
        }
        Ok(Decimal { unscaled, scale })
    }

    /// The unscaled digits: the value times `10^scale`.
    pub fn unscaled(&self) -> i128 {
        self.unscaled
    }

    /// The number of digits after the decimal point.
    pub fn scale(&self) -> u8 {
        self.scale
    }

    /// True when the value is below zero.
    pub fn is_negative(&self) -> bool {
        self.unscaled < 0
    }

    /// `unscaled / 10^scale` from an i64 (the scaled-integer vectors' values); always
    /// valid, since 19 digits are within the 38 a decimal holds. `scale` must be at
    /// most [`MAX_SCALE`].
    #[inline]
    pub fn from_scaled_i64(unscaled: i64, scale: u8) -> Decimal {
        debug_assert!(scale <= MAX_SCALE);
        Decimal {
            unscaled: unscaled as i128,
            scale,
        }
    }

    /// `self + x / 10^self.scale` (an addend already at this decimal's scale, as a
    /// scaled-integer vector holds it); `None` past 38 digits.
    #[inline]
    pub fn add_scaled_i64(&self, x: i64) -> Option<Decimal> {
        let sum = self.unscaled.checked_add(x as i128)?;
        (sum.unsigned_abs() < LIMIT).then_some(Decimal {
            unscaled: sum,
            scale: self.scale,
        })
    }

    /// The unscaled digits at exactly `scale`, as an i64: `None` when the value has
    /// more fractional digits than `scale` (it would need rounding) or does not fit.
    #[inline]
    pub fn to_scaled_i64(&self, scale: u8) -> Option<i64> {
        let u = if scale >= self.scale {
            align(self.unscaled, scale - self.scale)?
        } else {
            let d = pow10(self.scale - scale) as i128;
            if self.unscaled % d != 0 {
                return None;
            }
            self.unscaled / d
        };
        i64::try_from(u).ok()
    }

    /// An integer as a decimal of scale 0 (always exact: 64-bit integers have at most
    /// 19 digits).
    pub fn from_i64(v: i64) -> Decimal {
        Decimal {
            unscaled: v as i128,
            scale: 0,
        }
    }

    /// Parses PostgreSQL's numeric input: optional surrounding whitespace, a sign,
    /// digits with an optional point, and an optional exponent (`1e3`, `2.5E-2`).
    pub fn parse(text: &str) -> Result<Decimal> {
        let bad = || Error::syntax("numeric", text);
        let s = text.trim_matches(|c: char| c.is_ascii_whitespace());
        let bytes = s.as_bytes();
        let mut i = 0;
        let mut negative = false;
        if i < bytes.len() && (bytes[i] == b'+' || bytes[i] == b'-') {
            negative = bytes[i] == b'-';
            i += 1;
        }
        let mut digits: Vec<u8> = Vec::new();
        let mut frac_len: i64 = 0;
        let mut seen_point = false;
        let mut any_digit = false;
        while i < bytes.len() {
            match bytes[i] {
                b'0'..=b'9' => {
                    any_digit = true;
                    // Leading zeros carry no value; skip them to bound the vector.
                    if !(digits.is_empty() && bytes[i] == b'0') {
                        digits.push(bytes[i] - b'0');
                    }
                    if seen_point {
                        frac_len += 1;
                    }
                }
                b'.' if !seen_point => seen_point = true,
                _ => break,
            }
            i += 1;
        }
        if !any_digit {
            return Err(bad());
        }
        let mut exponent: i64 = 0;
        if i < bytes.len() && (bytes[i] == b'e' || bytes[i] == b'E') {
            i += 1;
            let mut exp_negative = false;
            if i < bytes.len() && (bytes[i] == b'+' || bytes[i] == b'-') {
                exp_negative = bytes[i] == b'-';
                i += 1;
            }
            let start = i;
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                // PostgreSQL limits the exponent too; past this any value overflows
                // or rounds to zero.
                exponent = (exponent * 10 + (bytes[i] - b'0') as i64).min(1_000_000);
                i += 1;
            }
            if i == start {
                return Err(bad());
            }
            if exp_negative {
                exponent = -exponent;
            }
        }
        if i != bytes.len() {
            return Err(bad());
        }
        // The value is digits × 10^(exponent − frac_len); `digits` has no leading zero.
        let mut scale = frac_len - exponent;
        if scale < 0 {
            if digits.is_empty() {
                scale = 0;
            } else if digits.len() as i64 - scale > MAX_PRECISION as i64 {
                return Err(Error::NumericOverflow);
            } else {
                digits.extend(std::iter::repeat_n(0, (-scale) as usize));
                scale = 0;
            }
        }
        // Round away digits beyond scale 38 (half away from zero).
        let mut round_up = false;
        if scale > MAX_SCALE as i64 {
            let drop = (scale - MAX_SCALE as i64) as usize;
            if drop > digits.len() {
                digits.clear();
            } else {
                let keep = digits.len() - drop;
                round_up = digits[keep] >= 5;
                digits.truncate(keep);
            }
            scale = MAX_SCALE as i64;
        }
        let mut magnitude: u128 = 0;
        for d in digits {
            magnitude = magnitude
                .checked_mul(10)
                .and_then(|m| m.checked_add(d as u128))
                .ok_or(Error::NumericOverflow)?;
        }
        if round_up {
            magnitude += 1;
        }
        if magnitude >= LIMIT {
            return Err(Error::NumericOverflow);
        }
        let unscaled = if negative {
            -(magnitude as i128)
        } else {
            magnitude as i128
        };
        Ok(Decimal {
            unscaled,
            scale: scale as u8,
        })
    }

    /// The same number rounded (half away from zero) or zero-extended to `scale` digits
    /// after the point.
    pub fn rescale(&self, scale: u8) -> Result<Decimal> {
        // The common cases (a value already at the scale, or a few digits more or
        // fewer) in i128; magnitudes are below 10^38, so the wide path is needed only
        // when extending overflows an i128.
        if scale <= MAX_SCALE {
            if scale == self.scale {
                return Ok(*self);
            }
            let m = self.unscaled.unsigned_abs();
            let v = if scale > self.scale {
                m.checked_mul(pow10(scale - self.scale))
            } else {
                let d = pow10(self.scale - scale);
                let (q, r) = (m / d, m % d);
                Some(if r >= d - r { q + 1 } else { q })
            };
            if let Some(v) = v {
                if v >= LIMIT {
                    return Err(Error::NumericOverflow);
                }
                let unscaled = if self.unscaled < 0 { -(v as i128) } else { v as i128 };
                return Ok(Decimal { unscaled, scale });
            }
        }
        let negative = self.unscaled < 0;
        let m = U256::from_u128(self.unscaled.unsigned_abs());
        let m = if scale >= self.scale {
            m.checked_mul_pow10((scale - self.scale) as u32)
                .ok_or(Error::NumericOverflow)?
        } else {
            round_div_pow10(m, (self.scale - scale) as u32)
        };
        match m.to_u128() {
            Some(v) if v < LIMIT && scale <= MAX_SCALE => Ok(Decimal {
                unscaled: if negative { -(v as i128) } else { v as i128 },
                scale,
            }),
            _ => Err(Error::NumericOverflow),
        }
    }

    /// Applies the type modifier of `numeric(precision, scale)`: rounds to `scale`
    /// digits, then fails with "numeric field overflow" when more than `precision`
    /// digits remain.
    pub fn apply_typmod(&self, precision: u8, scale: u8) -> Result<Decimal> {
        let overflow = Error::NumericFieldOverflow { precision, scale };
        let v = self.rescale(scale).map_err(|_| overflow.clone())?;
        if precision < MAX_PRECISION && v.unscaled.unsigned_abs() >= pow10(precision) {
            return Err(overflow);
        }
        Ok(v)
    }

    /// The value with trailing fractional zeros removed (`1.500` → `1.5`).
    pub fn normalize(&self) -> Decimal {
        let mut v = *self;
        while v.scale > 0 && v.unscaled % 10 == 0 {
            v.unscaled /= 10;
            v.scale -= 1;
        }
        v
    }

    /// `self + other`, at the larger of the two scales.
    pub fn add(&self, other: &Decimal) -> Result<Decimal> {
        // Sums of one column: the scales agree, and no alignment multiply is needed.
        if self.scale == other.scale
            && let Some(sum) = self.unscaled.checked_add(other.unscaled)
            && sum.unsigned_abs() < LIMIT
        {
            return Ok(Decimal { unscaled: sum, scale: self.scale });
        }
        let scale = self.scale.max(other.scale);
        let a = align(self.unscaled, scale - self.scale);
        let b = align(other.unscaled, scale - other.scale);
        // Aligning to the larger scale can need up to 76 digits; the common case fits
        // an i128, the rest takes the 256-bit path.
        if let (Some(a), Some(b)) = (a, b)
            && let Some(sum) = a.checked_add(b)
        {
            if sum.unsigned_abs() < LIMIT {
                return Ok(Decimal { unscaled: sum, scale });
            }
            return fit(sum < 0, U256::from_u128(sum.unsigned_abs()), scale as u32);
        }
        self.add_wide(other, scale)
    }

    fn add_wide(&self, other: &Decimal, scale: u8) -> Result<Decimal> {
        let am = U256::from_u128(self.unscaled.unsigned_abs())
            .checked_mul_pow10((scale - self.scale) as u32)
            .ok_or(Error::NumericOverflow)?;
        let bm = U256::from_u128(other.unscaled.unsigned_abs())
            .checked_mul_pow10((scale - other.scale) as u32)
            .ok_or(Error::NumericOverflow)?;
        let (an, bn) = (self.unscaled < 0, other.unscaled < 0);
        let (negative, m) = if an == bn {
            let (lo, c) = am.lo.overflowing_add(bm.lo);
            let hi = am
                .hi
                .checked_add(bm.hi)
                .and_then(|h| h.checked_add(c as u128))
                .ok_or(Error::NumericOverflow)?;
            (an, U256 { hi, lo })
        } else {
            let (big, small, neg) = if am >= bm { (am, bm, an) } else { (bm, am, bn) };
            let (lo, borrow) = big.lo.overflowing_sub(small.lo);
            let hi = big.hi - small.hi - borrow as u128;
            (neg, U256 { hi, lo })
        };
        fit(negative, m, scale as u32)
    }

    /// `self - other`, at the larger of the two scales.
    pub fn sub(&self, other: &Decimal) -> Result<Decimal> {
        self.add(&other.neg())
    }

    /// `-self` (always exact: the range is symmetric).
    pub fn neg(&self) -> Decimal {
        Decimal {
            unscaled: -self.unscaled,
            scale: self.scale,
        }
    }

    /// The absolute value.
    pub fn abs(&self) -> Decimal {
        Decimal {
            unscaled: self.unscaled.abs(),
            scale: self.scale,
        }
    }

    /// `self * other`, at the sum of the two scales.
    pub fn mul(&self, other: &Decimal) -> Result<Decimal> {
        // Most products (prices times rates) fit 38 digits at the summed scale: one
        // i128 multiply. [`fit`] gives the same answer on the wide path.
        let scale = self.scale as u32 + other.scale as u32;
        if scale <= MAX_SCALE as u32
            && let Some(p) = self.unscaled.checked_mul(other.unscaled)
            && p.unsigned_abs() < LIMIT
        {
            return Ok(Decimal { unscaled: p, scale: scale as u8 });
        }
        let m = U256::mul_u128(self.unscaled.unsigned_abs(), other.unscaled.unsigned_abs());
        let negative = (self.unscaled < 0) != (other.unscaled < 0);
        fit(negative, m, self.scale as u32 + other.scale as u32)
    }

    /// PostgreSQL's `select_div_scale`: enough fractional digits for at least 16
    /// significant digits of the quotient, never fewer than either operand's scale.
    /// Weights are counted in PostgreSQL's base-10000 digits, as it does, so the
    /// scales match PostgreSQL's exactly (before the 38-digit cap).
    pub fn div_scale(&self, other: &Decimal) -> u8 {
        let (w1, d1) = self.base10000_lead();
        let (w2, d2) = other.base10000_lead();
        let mut qweight = w1 - w2;
        if d1 <= d2 {
            qweight -= 1;
        }
        let rscale = (16 - qweight * 4)
            .max(self.scale as i64)
            .max(other.scale as i64)
            .clamp(0, MAX_SCALE as i64);
        rscale as u8
    }

    /// The weight and value of the leading base-10000 digit, as PostgreSQL's `NumericVar`
    /// holds them (0 and 0 for zero).
    fn base10000_lead(&self) -> (i64, u128) {
        let u = self.unscaled.unsigned_abs();
        if u == 0 {
            return (0, 0);
        }
        let exp10 = digit_count(u) as i64 - 1 - self.scale as i64;
        let weight = exp10.div_euclid(4);
        let shift = 4 * weight + self.scale as i64;
        let lead = if shift >= 0 {
            u / 10u128.pow(shift as u32)
        } else {
            u * 10u128.pow((-shift) as u32)
        };
        (weight, lead % 10_000)
    }

    /// `self / other` at PostgreSQL's scale ([`Decimal::div_scale`]), rounded half
    /// away from zero; fails on a zero divisor.
    pub fn div(&self, other: &Decimal) -> Result<Decimal> {
        if other.unscaled == 0 {
            return Err(Error::DivisionByZero);
        }
        let rscale = self.div_scale(other);
        let negative = (self.unscaled < 0) != (other.unscaled < 0);
        let divisor = other.unscaled.unsigned_abs();
        // Try the full scale first, then fewer digits when the quotient would not fit.
        let mut scale = rscale as i64;
        while scale >= 0 {
            // quotient = a × 10^(scale − sa + sb) / b; the exponent is never negative
            // because scale ≥ sa.
            let exp = scale - self.scale as i64 + other.scale as i64;
            if exp >= 0
                && let Some(n) =
                    U256::from_u128(self.unscaled.unsigned_abs()).checked_mul_pow10(exp as u32)
            {
                let (q, r) = n.div_rem(divisor);
                let q = if r >= divisor - r {
                    q.checked_inc().ok_or(Error::NumericOverflow)?
                } else {
                    q
                };
                if let Some(v) = q.to_u128()
                    && v < LIMIT
                {
                    return Ok(Decimal {
                        unscaled: if negative { -(v as i128) } else { v as i128 },
                        scale: scale as u8,
                    });
                }
            }
            scale -= 1;
        }
        Err(Error::NumericOverflow)
    }

    /// The square root at `scale` fractional digits, rounded half up, as PostgreSQL's
    /// `sqrt_var` (fewer digits when the root would not fit 38); `self` must not be
    /// negative (the callers check).
    pub fn sqrt(&self, scale: u8) -> Result<Decimal> {
        let u = self.unscaled.unsigned_abs();
        if self.unscaled <= 0 {
            return Ok(Decimal { unscaled: 0, scale });
        }
        let mut scale = scale as i64;
        while scale >= 0 {
            // root × 10^(scale + 1) = sqrt(u × 10^(2·scale + 2 − s)); one digit more
            // than wanted, for the rounding. Truncating the radicand does not change
            // the floor of its root.
            let exp = 2 * scale + 2 - self.scale as i64;
            let n = if exp >= 0 {
                U256::from_u128(u).checked_mul_pow10(exp as u32)
            } else if -exp < 39 {
                Some(U256::from_u128(u / 10u128.pow((-exp) as u32)))
            } else {
                Some(U256::ZERO)
            };
            if let Some(n) = n {
                let r = n.isqrt();
                let rounded = r / 10 + u128::from(r % 10 >= 5);
                if rounded < LIMIT {
                    return Ok(Decimal { unscaled: rounded as i128, scale: scale as u8 });
                }
            }
            scale -= 1;
        }
        Err(Error::NumericOverflow)
    }

    /// `self % other` with the sign of the dividend and the larger scale, as
    /// PostgreSQL's `numeric_mod`.
    pub fn rem(&self, other: &Decimal) -> Result<Decimal> {
        if other.unscaled == 0 {
            return Err(Error::DivisionByZero);
        }
        let scale = self.scale.max(other.scale);
        let a = U256::from_u128(self.unscaled.unsigned_abs())
            .checked_mul_pow10((scale - self.scale) as u32)
            .ok_or(Error::NumericOverflow)?;
        let b = U256::from_u128(other.unscaled.unsigned_abs())
            .checked_mul_pow10((scale - other.scale) as u32)
            .ok_or(Error::NumericOverflow)?;
        // b < 10^76 may not fit u128; then |a| < |b| unless a is also wide.
        let r = match b.to_u128() {
            Some(b) => U256::from_u128(a.div_rem(b).1),
            None if a < b => a,
            None => return Err(Error::NumericOverflow),
        };
        fit(self.unscaled < 0, r, scale as u32)
    }

    /// Rounds to `scale` digits after the point (SQL `round(x, s)`, half away from zero).
    pub fn round(&self, scale: u8) -> Result<Decimal> {
        if scale >= self.scale {
            Ok(*self)
        } else {
            self.rescale(scale)
        }
    }

    /// Rounds to an integer (half away from zero, as PostgreSQL's numeric → integer
    /// casts) and converts to `i64`; `None` when it does not fit.
    pub fn to_i64_rounded(&self) -> Option<i64> {
        let v = self.rescale(0).ok()?;
        i64::try_from(v.unscaled).ok()
    }

    /// The nearest `f64`, correctly rounded (PostgreSQL converts through the text form
    /// too).
    pub fn to_f64(&self) -> f64 {
        self.to_string().parse().unwrap_or(f64::NAN)
    }

    /// The nearest `f32`, correctly rounded.
    pub fn to_f32(&self) -> f32 {
        self.to_string().parse().unwrap_or(f32::NAN)
    }

    /// A double as a decimal, as PostgreSQL's `float8_numeric`: the value printed
    /// with 15 significant digits, trailing zeros dropped. NaN and the infinities fail.
    pub fn from_f64(v: f64) -> Result<Decimal> {
        Self::from_float_text(v.is_nan(), v.is_infinite(), &format!("{v:.14e}"))
    }

    /// A real as a decimal, as PostgreSQL's `float4_numeric`: 6 significant digits.
    pub fn from_f32(v: f32) -> Result<Decimal> {
        Self::from_float_text(v.is_nan(), v.is_infinite(), &format!("{v:.5e}"))
    }

    fn from_float_text(nan: bool, infinite: bool, text: &str) -> Result<Decimal> {
        if nan {
            return Err(Error::NotNumeric("NaN"));
        }
        if infinite {
            return Err(Error::NotNumeric("infinity"));
        }
        Ok(Decimal::parse(text)?.normalize())
    }

    /// Exact three-way comparison across scales.
    fn compare(&self, other: &Decimal) -> Ordering {
        let (an, bn) = (self.unscaled < 0, other.unscaled < 0);
        if an != bn {
            return if an {
                Ordering::Less
            } else {
                Ordering::Greater
            };
        }
        let scale = self.scale.max(other.scale);
        let a = U256::mul_u128(self.unscaled.unsigned_abs(), pow10(scale - self.scale));
        let b = U256::mul_u128(other.unscaled.unsigned_abs(), pow10(scale - other.scale));
        if an { b.cmp(&a) } else { a.cmp(&b) }
    }

    /// Exact comparison with a finite double (PostgreSQL compares through a cast;
    /// BeeDB compares the exact values so that no two distinct numbers compare equal).
    /// NaN is greater than every number, as in PostgreSQL's float ordering.
    pub fn cmp_f64(&self, f: f64) -> Ordering {
        if f.is_nan() {
            return Ordering::Less;
        }
        if f == f64::INFINITY {
            return Ordering::Less;
        }
        if f == f64::NEG_INFINITY {
            return Ordering::Greater;
        }
        let (dn, fneg) = (self.unscaled < 0, f < 0.0);
        if self.unscaled == 0 || f == 0.0 {
            let ds = self.unscaled.signum();
            let fs = if f > 0.0 {
                1
            } else if f < 0.0 {
                -1
            } else {
                0
            };
            return ds.cmp(&fs);
        }
        if dn != fneg {
            return if dn {
                Ordering::Less
            } else {
                Ordering::Greater
            };
        }
        // Magnitudes: |d| = u / 10^s, |f| = m × 2^e. Compare u × 2^-e with m × 10^s
        // (or u with m × 2^e × 10^s when e ≥ 0).
        let bits = f.abs().to_bits();
        let raw_exp = ((bits >> 52) & 0x7ff) as i32;
        let frac = bits & ((1 << 52) - 1);
        let (m, e) = if raw_exp == 0 {
            (frac as u128, -1074)
        } else {
            ((frac | (1 << 52)) as u128, raw_exp - 1075)
        };
        let u = U256::from_u128(self.unscaled.unsigned_abs());
        let mag = if e >= 0 {
            // |f| ≥ 2^52 × 2^e; shift m left by e bits.
            let fm = shl(U256::from_u128(m), e as u32)
                .and_then(|v| v.checked_mul_pow10(self.scale as u32));
            match fm {
                Some(fm) => u.cmp(&fm),
                None => Ordering::Less,
            }
        } else {
            let left = shl(u, (-e) as u32);
            let right = U256::from_u128(m).checked_mul_pow10(self.scale as u32);
            match (left, right) {
                (Some(l), Some(r)) => l.cmp(&r),
                (None, _) => Ordering::Greater,
                (_, None) => Ordering::Less,
            }
        };
        if dn { mag.reverse() } else { mag }
    }
}

/// `v << bits`, or `None` past 256 bits.
fn shl(v: U256, bits: u32) -> Option<U256> {
    if bits == 0 {
        return Some(v);
    }
    if bits >= 256 {
        return (v == U256::ZERO).then_some(v);
    }
    let (hi, lo) = if bits >= 128 {
        if v.hi != 0 || (bits > 128 && v.lo >> (256 - bits) != 0) {
            return None;
        }
        (v.lo << (bits - 128), 0)
    } else {
        if v.hi >> (128 - bits) != 0 {
            return None;
        }
        ((v.hi << bits) | (v.lo >> (128 - bits)), v.lo << bits)
    };
    Some(U256 { hi, lo })
}

impl PartialEq for Decimal {
    fn eq(&self, other: &Self) -> bool {
        self.compare(other) == Ordering::Equal
    }
}

impl Eq for Decimal {}

impl PartialOrd for Decimal {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Decimal {
    fn cmp(&self, other: &Self) -> Ordering {
        self.compare(other)
    }
}

impl Hash for Decimal {
    fn hash<H: Hasher>(&self, state: &mut H) {
        let n = self.normalize();
        n.unscaled.hash(state);
        n.scale.hash(state);
    }
}

impl fmt::Display for Decimal {
    /// Exactly `scale` digits after the point, as PostgreSQL prints numerics.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let u = self.unscaled.unsigned_abs();
        let sign = if self.unscaled < 0 { "-" } else { "" };
        if self.scale == 0 {
            return write!(f, "{sign}{u}");
        }
        let p = pow10(self.scale);
        write!(
            f,
            "{sign}{}.{:0width$}",
            u / p,
            u % p,
            width = self.scale as usize
        )
    }
}

impl std::str::FromStr for Decimal {
    type Err = Error;
    fn from_str(s: &str) -> Result<Decimal> {
        Decimal::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> Decimal {
        Decimal::parse(s).unwrap()
    }

    #[test]
    fn parses_and_formats() {
        assert_eq!(d("12.340").to_string(), "12.340");
        assert_eq!(d("-0.5").to_string(), "-0.5");
        assert_eq!(d("  +7 ").to_string(), "7");
        assert_eq!(d("1e3").to_string(), "1000");
        assert_eq!(d("1.5e-3").to_string(), "0.0015");
        assert_eq!(d(".5").to_string(), "0.5");
        assert_eq!(d("5.").to_string(), "5");
        assert_eq!(d("-0").to_string(), "0");
        assert_eq!(d("0.000").to_string(), "0.000");
        for bad in [
            "", "abc", "1.2.3", "1e", "--1", "1 2", ".", "e5", "NaN", "inf",
        ] {
            assert_eq!(
                Decimal::parse(bad),
                Err(Error::syntax("numeric", bad)),
                "{bad:?}"
            );
        }
        assert_eq!(
            Decimal::parse("1e38"),
            Err(Error::NumericOverflow),
            "39 digits"
        );
        assert_eq!(d("99999999999999999999999999999999999999").scale(), 0);
        // Scales above 38 round.
        assert_eq!(d("1e-39").to_string(), format!("0.{}", "0".repeat(38)));
        assert_eq!(d("5e-39").to_string(), format!("0.{}1", "0".repeat(37)));
        assert_eq!(
            d("1e-1000000000").to_string(),
            format!("0.{}", "0".repeat(38))
        );
    }

    #[test]
    fn postgres_arithmetic_examples() {
        // select 1.10::numeric(5,2) * 2.5 → 2.750
        let a = d("1.10").apply_typmod(5, 2).unwrap();
        assert_eq!(a.mul(&d("2.5")).unwrap().to_string(), "2.750");
        assert_eq!(d("1.5").add(&d("2.25")).unwrap().to_string(), "3.75");
        assert_eq!(d("1.5").sub(&d("2.25")).unwrap().to_string(), "-0.75");
        // select 1::numeric / 3 → 0.33333333333333333333
        assert_eq!(
            d("1").div(&d("3")).unwrap().to_string(),
            "0.33333333333333333333"
        );
        // select 10::numeric / 4 → 2.5000000000000000
        assert_eq!(
            d("10").div(&d("4")).unwrap().to_string(),
            "2.5000000000000000"
        );
        // select 2::numeric / 3 → 0.66666666666666666667
        assert_eq!(
            d("2").div(&d("3")).unwrap().to_string(),
            "0.66666666666666666667"
        );
        // select 100::numeric / 7 → 14.2857142857142857
        assert_eq!(
            d("100").div(&d("7")).unwrap().to_string(),
            "14.2857142857142857"
        );
        // select 1.000000000000000000001 / 1 keeps the dividend's scale.
        assert_eq!(
            d("1.000000000000000000001").div(&d("1")).unwrap().scale(),
            21
        );
        assert_eq!(d("1").div(&d("0.00")), Err(Error::DivisionByZero));
        assert_eq!(d("-7.5").rem(&d("2")).unwrap().to_string(), "-1.5");
        assert_eq!(d("1").rem(&d("0")), Err(Error::DivisionByZero));
    }

    #[test]
    fn rounding_is_half_away_from_zero() {
        assert_eq!(d("2.5").rescale(0).unwrap().to_string(), "3");
        assert_eq!(d("-2.5").rescale(0).unwrap().to_string(), "-3");
        assert_eq!(d("2.449").rescale(1).unwrap().to_string(), "2.4");
        assert_eq!(d("0.125").round(2).unwrap().to_string(), "0.13");
        assert_eq!(d("1.5").rescale(3).unwrap().to_string(), "1.500");
        assert_eq!(d("2.5").to_i64_rounded(), Some(3));
        assert_eq!(d("-2.5").to_i64_rounded(), Some(-3));
    }

    #[test]
    fn typmod_overflow() {
        assert_eq!(
            d("123.456").apply_typmod(5, 2).unwrap().to_string(),
            "123.46"
        );
        assert_eq!(
            d("1234.5").apply_typmod(5, 2),
            Err(Error::NumericFieldOverflow {
                precision: 5,
                scale: 2
            })
        );
        // 999.995 rounds to 1000.00, which no longer fits numeric(5,2).
        assert!(d("999.995").apply_typmod(5, 2).is_err());
        assert!(d("5").apply_typmod(38, 38).is_err());
        assert_eq!(
            Error::NumericFieldOverflow {
                precision: 5,
                scale: 2
            }
            .to_string(),
            "numeric field overflow: a field with precision 5, scale 2 must round to an absolute value less than 10^3"
        );
    }

    #[test]
    fn compares_across_scales() {
        assert_eq!(d("1.0"), d("1.00"));
        assert!(d("1.01") > d("1.001"));
        assert!(d("-1.01") < d("-1.001"));
        assert!(d("-0.5") < d("0"));
        assert!(
            d("99999999999999999999999999999999999999")
                > d("0.99999999999999999999999999999999999999")
        );
    }

    #[test]
    fn overflow_is_an_error() {
        let max = d("99999999999999999999999999999999999999");
        assert_eq!(max.add(&d("1")), Err(Error::NumericOverflow));
        assert_eq!(max.mul(&d("10")), Err(Error::NumericOverflow));
        // A fractional part gives way before an overflow is reported.
        let big = d("9999999999999999999999999999999999999.9");
        assert_eq!(
            big.add(&d("0.1")).unwrap().to_string(),
            "10000000000000000000000000000000000000"
        );
        assert_eq!(max.div(&d("0.1")), Err(Error::NumericOverflow));
    }

    #[test]
    fn float_conversions() {
        assert_eq!(Decimal::from_f64(0.1).unwrap().to_string(), "0.1");
        assert_eq!(
            Decimal::from_f64(1e20).unwrap().to_string(),
            "100000000000000000000"
        );
        assert_eq!(
            Decimal::from_f64(1.0 / 3.0).unwrap().to_string(),
            "0.333333333333333"
        );
        assert_eq!(Decimal::from_f32(0.1).unwrap().to_string(), "0.1");
        assert!(Decimal::from_f64(f64::NAN).is_err());
        assert_eq!(d("0.1").to_f64(), 0.1);
        assert_eq!(d("0.1").cmp_f64(0.1), Ordering::Less); // 0.1 as f64 is above 0.1
        assert_eq!(d("0.5").cmp_f64(0.5), Ordering::Equal);
        assert_eq!(d("-3").cmp_f64(-2.5), Ordering::Less);
        assert_eq!(d("1e37").cmp_f64(1e300), Ordering::Less);
        assert_eq!(d("0").cmp_f64(-0.0), Ordering::Equal);
        assert_eq!(d("1").cmp_f64(f64::NAN), Ordering::Less);
    }

    /// The i128 fast paths of `mul`, `add` and `rescale` give what the 256-bit path
    /// gives, on values drawn to hit every edge: small, near 10^18, near 10^38,
    /// scales 0 to 38, results that overflow.
    #[test]
    fn fast_paths_agree_with_the_wide_path() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(0xdec);
        let draw = |rng: &mut rand::rngs::StdRng| {
            let digits = rng.random_range(0..=38u32);
            let m = if digits == 0 { 0 } else { rng.random_range(0..10u128.pow(digits)) };
            let m = m.min(LIMIT - 1) as i128;
            let scale = rng.random_range(0..=MAX_SCALE);
            Decimal { unscaled: if rng.random_bool(0.5) { -m } else { m }, scale }
        };
        for _ in 0..20_000 {
            let (a, b) = (draw(&mut rng), draw(&mut rng));
            let wide_mul = fit(
                (a.unscaled < 0) != (b.unscaled < 0),
                U256::mul_u128(a.unscaled.unsigned_abs(), b.unscaled.unsigned_abs()),
                a.scale as u32 + b.scale as u32,
            );
            let fast = a.mul(&b);
            assert_eq!(fast.as_ref().map(|d| (d.unscaled, d.scale)).ok(), wide_mul.map(|d| (d.unscaled, d.scale)).ok(), "{a:?} * {b:?}");
            let scale = a.scale.max(b.scale);
            assert_eq!(a.add(&b).map(|d| (d.unscaled, d.scale)).ok(), a.add_wide(&b, scale).map(|d| (d.unscaled, d.scale)).ok(), "{a:?} + {b:?}");
            let to = rng.random_range(0..=MAX_SCALE + 2);
            let m = U256::from_u128(a.unscaled.unsigned_abs());
            let wide = if to >= a.scale {
                m.checked_mul_pow10((to - a.scale) as u32)
            } else {
                Some(round_div_pow10(m, (a.scale - to) as u32))
            };
            let wide = match wide.and_then(|m| m.to_u128()) {
                Some(v) if v < LIMIT && to <= MAX_SCALE => Some((if a.unscaled < 0 { -(v as i128) } else { v as i128 }, to)),
                _ => None,
            };
            assert_eq!(a.rescale(to).map(|d| (d.unscaled, d.scale)).ok(), wide, "{a:?} to scale {to}");
        }
    }
}
