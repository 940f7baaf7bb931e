//! Integers (`smallint`, `integer`, `bigint`) and floats (`real`, `double precision`):
//! text input with PostgreSQL's range checks, checked arithmetic with PostgreSQL's
//! error messages, the conversions between them, and PostgreSQL 12+'s float output
//! (the shortest text that reads back to the same value).

use super::error::{Error, Result};

/// A Rust integer type that stores one of the SQL integer types, with the name
/// PostgreSQL uses in its messages.
pub trait SqlInt: Copy + Sized + TryFrom<i64> + Into<i64> {
    /// `smallint`, `integer` or `bigint`.
    const TYPE_NAME: &'static str;
    fn checked_add(self, other: Self) -> Option<Self>;
    fn checked_sub(self, other: Self) -> Option<Self>;
    fn checked_mul(self, other: Self) -> Option<Self>;
    fn checked_div(self, other: Self) -> Option<Self>;
    fn checked_rem(self, other: Self) -> Option<Self>;
    fn checked_neg(self) -> Option<Self>;
    fn is_zero(self) -> bool;
}

macro_rules! sql_int {
    ($t:ty, $name:literal) => {
        impl SqlInt for $t {
            const TYPE_NAME: &'static str = $name;
            fn checked_add(self, other: Self) -> Option<Self> {
                <$t>::checked_add(self, other)
            }
            fn checked_sub(self, other: Self) -> Option<Self> {
                <$t>::checked_sub(self, other)
            }
            fn checked_mul(self, other: Self) -> Option<Self> {
                <$t>::checked_mul(self, other)
            }
            fn checked_div(self, other: Self) -> Option<Self> {
                <$t>::checked_div(self, other)
            }
            fn checked_rem(self, other: Self) -> Option<Self> {
                <$t>::checked_rem(self, other)
            }
            fn checked_neg(self) -> Option<Self> {
                <$t>::checked_neg(self)
            }
            fn is_zero(self) -> bool {
                self == 0
            }
        }
    };
}

sql_int!(i16, "smallint");
sql_int!(i32, "integer");
sql_int!(i64, "bigint");

fn out_of_range<T: SqlInt>() -> Error {
    Error::OutOfRange {
        type_name: T::TYPE_NAME,
    }
}

/// Parses an integer as PostgreSQL's `int2in`/`int4in`/`int8in`: optional surrounding
/// whitespace, an optional sign, decimal digits only. A number too large for the type
/// is [`Error::OutOfRange`] (`smallint out of range`); PostgreSQL's input functions
/// word it `value "32768" is out of range for type smallint`.
pub fn parse_int<T: SqlInt>(text: &str) -> Result<T> {
    let s = text.trim_matches(|c: char| c.is_ascii_whitespace());
    let bytes = s.as_bytes();
    let (negative, digits) = match bytes.first() {
        Some(b'-') => (true, &bytes[1..]),
        Some(b'+') => (false, &bytes[1..]),
        _ => (false, bytes),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return Err(Error::syntax(T::TYPE_NAME, text));
    }
    let mut v: i64 = 0;
    for &d in digits {
        let digit = (d - b'0') as i64;
        v = v
            .checked_mul(10)
            .and_then(|v| {
                if negative {
                    v.checked_sub(digit)
                } else {
                    v.checked_add(digit)
                }
            })
            .ok_or_else(|| input_out_of_range::<T>(s))?;
    }
    T::try_from(v).map_err(|_| input_out_of_range::<T>(s))
}

fn input_out_of_range<T: SqlInt>(text: &str) -> Error {
    Error::IntInputOutOfRange {
        type_name: T::TYPE_NAME,
        input: text.to_string(),
    }
}

/// Converts an `i64` to the integer type, failing with the type's out-of-range error.
pub fn int_from_i64<T: SqlInt>(v: i64) -> Result<T> {
    T::try_from(v).map_err(|_| out_of_range::<T>())
}

/// `a + b`, an error on overflow.
pub fn int_add<T: SqlInt>(a: T, b: T) -> Result<T> {
    a.checked_add(b).ok_or_else(out_of_range::<T>)
}

/// `a - b`, an error on overflow.
pub fn int_sub<T: SqlInt>(a: T, b: T) -> Result<T> {
    a.checked_sub(b).ok_or_else(out_of_range::<T>)
}

/// `a * b`, an error on overflow.
pub fn int_mul<T: SqlInt>(a: T, b: T) -> Result<T> {
    a.checked_mul(b).ok_or_else(out_of_range::<T>)
}

/// `a / b`, truncating toward zero (`7 / -2 = -3`); division by zero and `MIN / -1`
/// are errors.
pub fn int_div<T: SqlInt>(a: T, b: T) -> Result<T> {
    if b.is_zero() {
        return Err(Error::DivisionByZero);
    }
    a.checked_div(b).ok_or_else(out_of_range::<T>)
}

/// `a % b` with the sign of the dividend (`-7 % 2 = -1`); `MIN % -1` is 0, as in
/// PostgreSQL.
pub fn int_rem<T: SqlInt>(a: T, b: T) -> Result<T> {
    if b.is_zero() {
        return Err(Error::DivisionByZero);
    }
    Ok(a.checked_rem(b).unwrap_or_else(|| {
        // Only MIN % -1 overflows, and its remainder is zero.
        T::try_from(0).ok().unwrap_or(a)
    }))
}

/// `-a`, an error for the type's minimum.
pub fn int_neg<T: SqlInt>(a: T) -> Result<T> {
    a.checked_neg().ok_or_else(out_of_range::<T>)
}

/// A double to an integer type as PostgreSQL's `float8 → int` casts: round half to
/// even (C's `rint`), then range-check; NaN is out of range.
pub fn int_from_f64<T: SqlInt>(v: f64) -> Result<T> {
    let r = v.round_ties_even();
    // i64's range is [-2^63, 2^63); comparing with these exact doubles is safe.
    if !(-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&r) {
        return Err(out_of_range::<T>());
    }
    int_from_i64(r as i64)
}

/// Parses a double as PostgreSQL's `float8in`: surrounding whitespace, decimal or
/// exponent notation, `Infinity`, `-Infinity`, `inf`, `NaN` in any case. Values that
/// overflow to infinity or underflow to zero are errors, as in PostgreSQL 12+.
pub fn parse_f64(text: &str) -> Result<f64> {
    let s = check_float_text(text, "double precision")?;
    let v: f64 = s
        .parse()
        .map_err(|_| Error::syntax("double precision", text))?;
    check_float_range(v.is_infinite(), v == 0.0, s, text, "double precision")?;
    Ok(v)
}

/// Parses a real as PostgreSQL's `float4in` (see [`parse_f64`]).
pub fn parse_f32(text: &str) -> Result<f32> {
    let s = check_float_text(text, "real")?;
    let v: f32 = s.parse().map_err(|_| Error::syntax("real", text))?;
    check_float_range(v.is_infinite(), v == 0.0, s, text, "real")?;
    Ok(v)
}

/// Trims whitespace and rejects what Rust's parser accepts but PostgreSQL does not.
fn check_float_text<'a>(text: &'a str, type_name: &'static str) -> Result<&'a str> {
    let s = text.trim_matches(|c: char| c.is_ascii_whitespace());
    let ok = !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'));
    if ok {
        Ok(s)
    } else {
        Err(Error::syntax(type_name, text))
    }
}

fn check_float_range(
    infinite: bool,
    zero: bool,
    s: &str,
    text: &str,
    type_name: &'static str,
) -> Result<()> {
    let mantissa = s.split(['e', 'E']).next().unwrap_or("");
    let is_literal_infinity = s
        .bytes()
        .any(|b| b.is_ascii_alphabetic() && b != b'e' && b != b'E');
    let nonzero_digits = mantissa.bytes().any(|b| (b'1'..=b'9').contains(&b));
    if (infinite && !is_literal_infinity) || (zero && nonzero_digits) {
        return Err(Error::FloatInputOutOfRange {
            type_name,
            input: text.to_string(),
        });
    }
    Ok(())
}

/// Formats a double as PostgreSQL 12+ does: the shortest digits that read back to the
/// same value, in fixed notation when the decimal exponent is in `-4..15`, otherwise
/// as `1.5e+20` / `1e-05`; `Infinity`, `-Infinity`, `NaN`; `-0` for negative zero.
pub fn format_f64(v: f64) -> String {
    if v.is_nan() {
        return "NaN".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    format_shortest(&format!("{v:e}"), 15)
}

/// Formats a real as PostgreSQL 12+ does (fixed notation for exponents in `-4..6`).
pub fn format_f32(v: f32) -> String {
    if v.is_nan() {
        return "NaN".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    format_shortest(&format!("{v:e}"), 6)
}

/// Rewrites Rust's shortest exponent form (`-1.2345e17`) in PostgreSQL's layout.
fn format_shortest(rust: &str, fixed_below: i32) -> String {
    let (mantissa, exp) = rust.split_once('e').unwrap_or((rust, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => ("-", m),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    if (-4..fixed_below).contains(&exp) {
        let n = digits.len() as i32;
        if exp < 0 {
            format!("{sign}0.{}{digits}", "0".repeat((-exp - 1) as usize))
        } else if exp + 1 >= n {
            format!("{sign}{digits}{}", "0".repeat((exp + 1 - n) as usize))
        } else {
            let (int, frac) = digits.split_at((exp + 1) as usize);
            format!("{sign}{int}.{frac}")
        }
    } else {
        let (first, rest) = digits.split_at(1);
        let point = if rest.is_empty() { "" } else { "." };
        let exp_sign = if exp < 0 { '-' } else { '+' };
        format!("{sign}{first}{point}{rest}e{exp_sign}{:02}", exp.abs())
    }
}

/// Parses PostgreSQL's boolean input: `true`/`false`, `yes`/`no`, `on`/`off`, `1`/`0`,
/// and any unambiguous prefix of the words (`t`, `f`, `y`, `n`, `tr`…), case-insensitive,
/// surrounding whitespace ignored.
pub fn parse_bool(text: &str) -> Result<bool> {
    let s = text
        .trim_matches(|c: char| c.is_ascii_whitespace())
        .to_ascii_lowercase();
    let bad = || Error::syntax("boolean", text);
    if s.is_empty() {
        return Err(bad());
    }
    let prefix_of = |word: &str, min: usize| s.len() >= min && word.starts_with(s.as_str());
    if prefix_of("true", 1) || prefix_of("yes", 1) || prefix_of("on", 2) || s == "1" {
        Ok(true)
    } else if prefix_of("false", 1) || prefix_of("no", 1) || prefix_of("off", 2) || s == "0" {
        Ok(false)
    } else {
        Err(bad())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_input() {
        assert_eq!(parse_int::<i32>(" 42 "), Ok(42));
        assert_eq!(parse_int::<i32>("-2147483648"), Ok(i32::MIN));
        assert_eq!(parse_int::<i16>("-32768"), Ok(i16::MIN));
        assert_eq!(
            parse_int::<i16>("32768").unwrap_err().to_string(),
            "value \"32768\" is out of range for type smallint"
        );
        assert_eq!(
            parse_int::<i64>("99999999999999999999")
                .unwrap_err()
                .to_string(),
            "value \"99999999999999999999\" is out of range for type bigint"
        );
        assert_eq!(
            parse_int::<i32>("abc").unwrap_err().to_string(),
            "invalid input syntax for type integer: \"abc\""
        );
        for bad in ["", "-", "1.5", "1e3", "+-1", "1 2"] {
            assert!(parse_int::<i32>(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn integer_arithmetic() {
        assert_eq!(int_div(7i32, -2), Ok(-3));
        assert_eq!(int_rem(-7i32, 2), Ok(-1));
        assert_eq!(int_rem(i32::MIN, -1), Ok(0));
        assert_eq!(int_div(1i32, 0), Err(Error::DivisionByZero));
        assert_eq!(int_rem(1i64, 0), Err(Error::DivisionByZero));
        assert_eq!(
            int_div(i32::MIN, -1).unwrap_err().to_string(),
            "integer out of range"
        );
        assert_eq!(
            int_add(i64::MAX, 1).unwrap_err().to_string(),
            "bigint out of range"
        );
        assert_eq!(
            int_mul(200i16, 200).unwrap_err().to_string(),
            "smallint out of range"
        );
        assert_eq!(
            int_neg(i16::MIN).unwrap_err().to_string(),
            "smallint out of range"
        );
        assert_eq!(int_sub(5i16, 7), Ok(-2));
    }

    #[test]
    fn float_to_int_rounds_half_to_even() {
        assert_eq!(int_from_f64::<i32>(2.5), Ok(2));
        assert_eq!(int_from_f64::<i32>(3.5), Ok(4));
        assert_eq!(int_from_f64::<i32>(-2.5), Ok(-2));
        assert!(int_from_f64::<i32>(f64::NAN).is_err());
        assert!(int_from_f64::<i32>(3e9).is_err());
        assert!(int_from_f64::<i64>(9.3e18).is_err());
        assert_eq!(int_from_f64::<i64>(-(2f64.powi(63))), Ok(i64::MIN));
    }

    #[test]
    fn float_output_matches_postgres() {
        assert_eq!(format_f64(1.0), "1");
        assert_eq!(format_f64(0.1), "0.1");
        assert_eq!(format_f64(-2.5), "-2.5");
        assert_eq!(format_f64(1e20), "1e+20");
        assert_eq!(format_f64(1e15), "1e+15");
        assert_eq!(format_f64(123456789012345.0), "123456789012345");
        assert_eq!(format_f64(0.0001), "0.0001");
        assert_eq!(format_f64(0.00001), "1e-05");
        assert_eq!(format_f64(1.2345678901234568e17), "1.2345678901234568e+17");
        assert_eq!(format_f64(1.0 / 3.0), "0.3333333333333333");
        assert_eq!(format_f64(-0.0), "-0");
        assert_eq!(format_f64(f64::INFINITY), "Infinity");
        assert_eq!(format_f64(f64::NEG_INFINITY), "-Infinity");
        assert_eq!(format_f64(f64::NAN), "NaN");
        assert_eq!(format_f64(1e-300), "1e-300");
        assert_eq!(format_f32(0.1), "0.1");
        assert_eq!(format_f32(1e6), "1e+06");
        assert_eq!(format_f32(123456.0), "123456");
    }

    #[test]
    fn float_input() {
        assert_eq!(parse_f64(" 1.5 "), Ok(1.5));
        assert_eq!(parse_f64("-Infinity"), Ok(f64::NEG_INFINITY));
        assert_eq!(parse_f64("inf"), Ok(f64::INFINITY));
        assert!(parse_f64("NaN").unwrap().is_nan());
        assert_eq!(parse_f64("1e3"), Ok(1000.0));
        assert_eq!(parse_f64("0"), Ok(0.0));
        assert_eq!(parse_f64("0e-400"), Ok(0.0));
        assert_eq!(
            parse_f64("1e400").unwrap_err().to_string(),
            "\"1e400\" is out of range for type double precision"
        );
        assert!(parse_f64("1e-400").is_err());
        assert!(parse_f32("1e39").is_err());
        assert!(parse_f64("abc").is_err());
        assert!(parse_f64("").is_err());
        assert!(parse_f64("1_0").is_err());
    }

    #[test]
    fn boolean_input() {
        for t in ["true", "  TRUE ", "t", "yes", "y", "on", "1", "tr"] {
            assert_eq!(parse_bool(t), Ok(true), "{t:?}");
        }
        for f in ["false", "F", "no", "n", "off", "0", "fal"] {
            assert_eq!(parse_bool(f), Ok(false), "{f:?}");
        }
        for bad in ["", "o", "2", "truee", "yess", "maybe"] {
            assert_eq!(
                parse_bool(bad),
                Err(Error::syntax("boolean", bad)),
                "{bad:?}"
            );
        }
    }
}
