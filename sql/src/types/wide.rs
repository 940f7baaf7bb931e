//! A minimal unsigned 256-bit integer for decimal arithmetic. Products and scaled
//! dividends of two 38-digit decimals need up to 77 digits, more than `u128` holds;
//! computing them exactly and rounding once gives PostgreSQL's results without any
//! intermediate overflow.

use std::cmp::Ordering;

/// An unsigned 256-bit integer: `hi * 2^128 + lo`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct U256 {
    pub hi: u128,
    pub lo: u128,
}

impl PartialOrd for U256 {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for U256 {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.hi, self.lo).cmp(&(other.hi, other.lo))
    }
}

impl U256 {
    pub const ZERO: U256 = U256 { hi: 0, lo: 0 };

    pub fn from_u128(v: u128) -> U256 {
        U256 { hi: 0, lo: v }
    }

    /// The exact product of two `u128`s.
    pub fn mul_u128(a: u128, b: u128) -> U256 {
        let (a0, a1) = (a as u64 as u128, a >> 64);
        let (b0, b1) = (b as u64 as u128, b >> 64);
        let p00 = a0 * b0;
        let p01 = a0 * b1;
        let p10 = a1 * b0;
        let p11 = a1 * b1;
        let mid = (p00 >> 64) + (p01 as u64 as u128) + (p10 as u64 as u128);
        let lo = (p00 as u64 as u128) | (mid << 64);
        let hi = p11 + (p01 >> 64) + (p10 >> 64) + (mid >> 64);
        U256 { hi, lo }
    }

    /// `self * m`, or `None` past 256 bits.
    pub fn checked_mul_u128(self, m: u128) -> Option<U256> {
        let low = U256::mul_u128(self.lo, m);
        let high = U256::mul_u128(self.hi, m);
        if high.hi != 0 {
            return None;
        }
        let hi = high.lo.checked_add(low.hi)?;
        Some(U256 { hi, lo: low.lo })
    }

    /// `self * 10^exp`, or `None` past 256 bits.
    pub fn checked_mul_pow10(self, mut exp: u32) -> Option<U256> {
        let mut v = self;
        while exp > 0 {
            let step = exp.min(38);
            v = v.checked_mul_u128(10u128.pow(step))?;
            exp -= step;
        }
        Some(v)
    }

    /// `self + 1`, or `None` past 256 bits.
    pub fn checked_inc(self) -> Option<U256> {
        let (lo, carry) = self.lo.overflowing_add(1);
        let hi = self.hi.checked_add(carry as u128)?;
        Some(U256 { hi, lo })
    }

    /// Quotient and remainder of the division by `d` (which must not be zero; the
    /// callers check), by shifting one bit at a time: simple and exact.
    pub fn div_rem(self, d: u128) -> (U256, u128) {
        debug_assert!(d != 0);
        let mut q = U256::ZERO;
        let mut r: u128 = 0;
        for i in (0..256).rev() {
            let bit = if i >= 128 {
                (self.hi >> (i - 128)) & 1
            } else {
                (self.lo >> i) & 1
            };
            let carry = r >> 127;
            r = (r << 1) | bit;
            if carry == 1 || r >= d {
                r = r.wrapping_sub(d);
                if i >= 128 {
                    q.hi |= 1 << (i - 128);
                } else {
                    q.lo |= 1 << i;
                }
            }
        }
        (q, r)
    }

    /// `self - other`, wrapping below zero (callers subtract a smaller value).
    pub fn wrapping_sub(self, other: U256) -> U256 {
        let (lo, borrow) = self.lo.overflowing_sub(other.lo);
        let hi = self.hi.wrapping_sub(other.hi).wrapping_sub(borrow as u128);
        U256 { hi, lo }
    }

    /// `floor(sqrt(self))` (always fits: the root of a value below 2^256 is below
    /// 2^128). Newton's iteration from a floating-point overestimate, which only
    /// decreases until it reaches the floor of the root.
    pub fn isqrt(self) -> u128 {
        if self == U256::ZERO {
            return 0;
        }
        let approx = (self.hi as f64) * 2f64.powi(128) + self.lo as f64;
        let start = approx.sqrt() * (1.0 + 1e-9) + 2.0;
        let mut x = if start >= 2f64.powi(128) { u128::MAX } else { start as u128 };
        loop {
            let Some(q) = self.div_rem(x).0.to_u128() else {
                // x is below the root (cannot happen from an overestimate); step up.
                x = x.saturating_mul(2);
                continue;
            };
            let y = x / 2 + q / 2 + (x % 2 + q % 2) / 2;
            if y >= x {
                return x;
            }
            x = y;
        }
    }

    /// The value as a `u128`, when it fits.
    pub fn to_u128(self) -> Option<u128> {
        (self.hi == 0).then_some(self.lo)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mul_and_div_round_trip() {
        let a = u128::MAX / 3;
        let b = 10u128.pow(38) - 7;
        let p = U256::mul_u128(a, b);
        let (q, r) = p.div_rem(b);
        assert_eq!(q.to_u128(), Some(a));
        assert_eq!(r, 0);
        let (q, r) = p.checked_inc().unwrap().div_rem(b);
        assert_eq!((q.to_u128(), r), (Some(a), 1));
        assert!(U256::from_u128(u128::MAX).checked_mul_pow10(77).is_none());
        assert_eq!(
            U256::from_u128(5)
                .checked_mul_pow10(40)
                .unwrap()
                .div_rem(10u128.pow(38))
                .0,
            U256::from_u128(500)
        );
    }
}
