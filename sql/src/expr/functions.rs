//! Scalar functions: resolution by name and argument types (PostgreSQL's names,
//! arities, argument and result types) and their vectorized kernels.
//!
//! Resolution follows PostgreSQL's choices where they matter for the result type:
//! `round`, `trunc`, `floor`, `ceil`, `sqrt`, `sign` and `power` of integers or reals
//! resolve to the `double precision` variants (PostgreSQL prefers `float8` in the
//! numeric category), of `numeric` to the `numeric` ones; `round(x, n)` and
//! `trunc(x, n)` exist only for `numeric`; `abs` and `mod` keep the integer type.
//! Text functions take `text`: a `character(n)` argument is passed without its
//! padding (`length('ab '::char(3))` = 2), except `octet_length`, which counts the
//! stored bytes as PostgreSQL's `bpcharoctetlen`, and `concat`, which prints its
//! arguments with their output functions (padding kept, booleans `t`/`f`).
//!
//! Where BeeDB differs: `sqrt` and non-integer `power` of `numeric` are computed in
//! double precision and converted back (15 significant digits; PostgreSQL computes
//! them exactly at its own scale); `upper`/`lower` map all of Unicode.

use super::cast::{cast_col, write_text};
use super::eval::{Col, StrS, compare_values, is_char, side, str_side};
use super::kernels::{S, internal};
use super::{CmpOp, Func};
use crate::error::{Error, Result};
use crate::types::number::{SqlInt, int_neg, int_rem};
use crate::types::{self, DataType, Decimal, Interval};
use crate::vector::{Data, PhysicalType, StrVec, Vector};

// ---------------------------------------------------------------------------------
// Resolution

/// The name PostgreSQL prints for a type in "function … does not exist".
fn type_name(t: &DataType) -> String {
    match t {
        DataType::Char(_) => "character".into(),
        DataType::Varchar(_) => "character varying".into(),
        DataType::Decimal { .. } => "numeric".into(),
        t => t.to_string(),
    }
}

fn no_such(name: &str, args: &[DataType]) -> Error {
    let list: Vec<String> = args.iter().map(type_name).collect();
    Error::undefined_function(format!(
        "function {name}({}) does not exist",
        list.join(", ")
    ))
}

fn is_int(t: &DataType) -> bool {
    matches!(t, DataType::SmallInt | DataType::Integer | DataType::BigInt)
}

fn txt(t: &DataType) -> Option<DataType> {
    t.is_string().then_some(DataType::Text)
}

fn int4(t: &DataType) -> Option<DataType> {
    matches!(t, DataType::SmallInt | DataType::Integer).then_some(DataType::Integer)
}

/// `double precision` for integers and floats, `numeric` for numeric.
fn float_or_numeric(t: &DataType) -> Option<DataType> {
    match t {
        DataType::Decimal { .. } => Some(DataType::NUMERIC),
        t if t.is_numeric() => Some(DataType::Double),
        _ => None,
    }
}

fn numeric_rank(t: &DataType) -> Option<u8> {
    Some(match t {
        DataType::SmallInt => 0,
        DataType::Integer => 1,
        DataType::BigInt => 2,
        DataType::Decimal { .. } => 3,
        DataType::Real => 4,
        DataType::Double => 5,
        _ => return None,
    })
}

/// The common type of `types` as PostgreSQL's UNION/CASE resolution decides it for
/// the types BeeDB has: the widest numeric type, `text` for mixed strings (the
/// longest `char(n)`/`varchar(n)` when all are of that kind), `timestamp` for dates
/// with timestamps; `None` when the types do not mix.
pub fn common_type(types: &[DataType]) -> Option<DataType> {
    let first = *types.first()?;
    if types.iter().all(|t| *t == first) {
        return Some(first);
    }
    if types.iter().all(|t| t.is_numeric()) {
        let max = types.iter().filter_map(numeric_rank).max()?;
        return Some(match max {
            0 => DataType::SmallInt,
            1 => DataType::Integer,
            2 => DataType::BigInt,
            3 => DataType::NUMERIC,
            4 => DataType::Real,
            _ => DataType::Double,
        });
    }
    if types.iter().all(|t| t.is_string()) {
        if types.iter().all(|t| matches!(t, DataType::Char(_))) {
            let n = types
                .iter()
                .filter_map(|t| match t {
                    DataType::Char(n) => Some(*n),
                    _ => None,
                })
                .max()?;
            return Some(DataType::Char(n));
        }
        if types.iter().all(|t| matches!(t, DataType::Varchar(_))) {
            let mut limit = Some(0);
            for t in types {
                if let DataType::Varchar(l) = t {
                    limit = match (limit, l) {
                        (Some(a), Some(b)) => Some(a.max(*b)),
                        _ => None,
                    };
                }
            }
            return Some(DataType::Varchar(limit));
        }
        return Some(DataType::Text);
    }
    if types
        .iter()
        .all(|t| matches!(t, DataType::Date | DataType::Timestamp))
    {
        return Some(DataType::Timestamp);
    }
    None
}

type Resolved = (Func, Vec<DataType>, DataType);

/// See [`Func::resolve`].
pub(super) fn resolve(name: &str, args: &[DataType]) -> Result<Option<Resolved>> {
    if !KNOWN.contains(&name) {
        return Ok(None);
    }
    match choose(name, args) {
        Some(r) => Ok(Some(r)),
        None => Err(no_such(name, args)),
    }
}

/// Every function name [`resolve`] knows.
const KNOWN: &[&str] = &[
    "upper",
    "lower",
    "reverse",
    "length",
    "char_length",
    "character_length",
    "octet_length",
    "substring",
    "substr",
    "btrim",
    "trim",
    "ltrim",
    "rtrim",
    "position",
    "strpos",
    "repeat",
    "textcat",
    "concat",
    "replace",
    "left",
    "right",
    "lpad",
    "rpad",
    "abs",
    "round",
    "trunc",
    "floor",
    "ceil",
    "ceiling",
    "sqrt",
    "sign",
    "power",
    "pow",
    "mod",
    "nullif",
    "greatest",
    "least",
    "gcd",
    "lcm",
    "date_trunc",
    "to_char",
];

fn choose(name: &str, a: &[DataType]) -> Option<Resolved> {
    use DataType as T;
    let text_fn = |f: Func, ret: DataType| -> Option<Resolved> {
        match a {
            [s] => Some((f, vec![txt(s)?], ret)),
            _ => None,
        }
    };
    let r: Option<Resolved> = match name {
        "upper" => text_fn(Func::Upper, T::Text),
        "lower" => text_fn(Func::Lower, T::Text),
        "reverse" => text_fn(Func::Reverse, T::Text),
        "length" | "char_length" | "character_length" => text_fn(Func::Length, T::Integer),
        "octet_length" => match a {
            [s @ T::Char(_)] => Some((Func::OctetLength, vec![*s], T::Integer)),
            [s] => Some((Func::OctetLength, vec![txt(s)?], T::Integer)),
            _ => None,
        },
        "substring" | "substr" => match a {
            [s, i] => Some((Func::Substring, vec![txt(s)?, int4(i)?], T::Text)),
            [s, i, c] => Some((Func::Substring, vec![txt(s)?, int4(i)?, int4(c)?], T::Text)),
            _ => None,
        },
        "btrim" | "trim" | "ltrim" | "rtrim" => {
            let f = match name {
                "ltrim" => Func::Ltrim,
                "rtrim" => Func::Rtrim,
                _ => Func::Btrim,
            };
            match a {
                [s] => Some((f, vec![txt(s)?], T::Text)),
                [s, c] => Some((f, vec![txt(s)?, txt(c)?], T::Text)),
                _ => None,
            }
        }
        "position" | "strpos" => match a {
            [s, sub] => Some((Func::Position, vec![txt(s)?, txt(sub)?], T::Integer)),
            _ => None,
        },
        "repeat" => match a {
            [s, n] => Some((Func::Repeat, vec![txt(s)?, int4(n)?], T::Text)),
            _ => None,
        },
        "textcat" => match a {
            [x, y] => Some((Func::Concat, vec![txt(x)?, txt(y)?], T::Text)),
            _ => None,
        },
        "concat" => (!a.is_empty()).then(|| (Func::ConcatAll, a.to_vec(), T::Text)),
        "replace" => match a {
            [s, f, t] => Some((Func::Replace, vec![txt(s)?, txt(f)?, txt(t)?], T::Text)),
            _ => None,
        },
        "left" | "right" => match a {
            [s, n] => Some((
                if name == "left" {
                    Func::Left
                } else {
                    Func::Right
                },
                vec![txt(s)?, int4(n)?],
                T::Text,
            )),
            _ => None,
        },
        "lpad" | "rpad" => {
            let f = if name == "lpad" {
                Func::Lpad
            } else {
                Func::Rpad
            };
            match a {
                [s, n] => Some((f, vec![txt(s)?, int4(n)?], T::Text)),
                [s, n, c] => Some((f, vec![txt(s)?, int4(n)?, txt(c)?], T::Text)),
                _ => None,
            }
        }
        "abs" => match a {
            [t @ T::Decimal { .. }] => Some((Func::Abs, vec![*t], T::NUMERIC)),
            [t] if t.is_numeric() => Some((Func::Abs, vec![*t], *t)),
            _ => None,
        },
        "round" | "trunc" => {
            let f = if name == "round" {
                Func::Round
            } else {
                Func::Trunc
            };
            match a {
                [x] => {
                    let t = float_or_numeric(x)?;
                    Some((f, vec![t], t))
                }
                [x, s] if is_int(x) || matches!(x, T::Decimal { .. }) => {
                    Some((f, vec![T::NUMERIC, int4(s)?], T::NUMERIC))
                }
                _ => None,
            }
        }
        "floor" | "ceil" | "ceiling" | "sqrt" | "sign" => {
            let f = match name {
                "floor" => Func::Floor,
                "sqrt" => Func::Sqrt,
                "sign" => Func::Sign,
                _ => Func::Ceil,
            };
            match a {
                [x] => {
                    let t = float_or_numeric(x)?;
                    Some((f, vec![t], t))
                }
                _ => None,
            }
        }
        "power" | "pow" => match a {
            [x, y] if x.is_numeric() && y.is_numeric() => {
                let exact = |t: &DataType| is_int(t) || matches!(t, T::Decimal { .. });
                let t = if (matches!(x, T::Decimal { .. }) || matches!(y, T::Decimal { .. }))
                    && exact(x)
                    && exact(y)
                {
                    T::NUMERIC
                } else {
                    T::Double
                };
                Some((Func::Power, vec![t, t], t))
            }
            _ => None,
        },
        "mod" => match a {
            [x, y] if is_int(x) && is_int(y) => {
                let t = common_type(&[*x, *y])?;
                Some((Func::Mod, vec![t, t], t))
            }
            [x, y]
                if (is_int(x) || matches!(x, T::Decimal { .. }))
                    && (is_int(y) || matches!(y, T::Decimal { .. })) =>
            {
                Some((Func::Mod, vec![T::NUMERIC, T::NUMERIC], T::NUMERIC))
            }
            _ => None,
        },
        "gcd" | "lcm" => {
            let f = if name == "gcd" { Func::Gcd } else { Func::Lcm };
            match a {
                // smallint arguments use the integer function, as PostgreSQL (which has
                // no smallint version) promotes them.
                [x, y] if is_int(x) && is_int(y) => {
                    let t = if matches!(x, T::BigInt) || matches!(y, T::BigInt) { T::BigInt } else { T::Integer };
                    Some((f, vec![t, t], t))
                }
                [x, y]
                    if (is_int(x) || matches!(x, T::Decimal { .. }))
                        && (is_int(y) || matches!(y, T::Decimal { .. })) =>
                {
                    Some((f, vec![T::NUMERIC, T::NUMERIC], T::NUMERIC))
                }
                _ => None,
            }
        }
        // A date is truncated as a timestamp (PostgreSQL converts it to timestamptz
        // and returns one; BeeDB has no time zones).
        "to_char" => match a {
            [T::Timestamp | T::Date, f] => Some((Func::ToChar, vec![T::Timestamp, txt(f)?], T::Text)),
            [T::Interval, f] => Some((Func::ToChar, vec![T::Interval, txt(f)?], T::Text)),
            // A smallint is formatted as an integer, as in PostgreSQL.
            [T::SmallInt | T::Integer, f] => Some((Func::ToChar, vec![T::Integer, txt(f)?], T::Text)),
            [x @ (T::BigInt | T::Real | T::Double), f] => Some((Func::ToChar, vec![*x, txt(f)?], T::Text)),
            [T::Decimal { .. }, f] => Some((Func::ToChar, vec![T::NUMERIC, txt(f)?], T::Text)),
            _ => None,
        },
        "date_trunc" => match a {
            [u, T::Timestamp | T::Date] => Some((Func::DateTrunc, vec![txt(u)?, T::Timestamp], T::Timestamp)),
            _ => None,
        },
        "nullif" => match a {
            [x, y] => {
                let t = common_type(&[*x, *y])?;
                Some((Func::NullIf, vec![t, t], t))
            }
            _ => None,
        },
        "greatest" | "least" => {
            if a.is_empty() {
                None
            } else {
                let t = common_type(a)?;
                Some((
                    if name == "greatest" {
                        Func::Greatest
                    } else {
                        Func::Least
                    },
                    vec![t; a.len()],
                    t,
                ))
            }
        }
        _ => None,
    };
    r
}

// ---------------------------------------------------------------------------------
// Kernels

fn data_err(sqlstate: &'static str, msg: &str) -> Error {
    Error::data(sqlstate, msg)
}

/// The largest string a function may build (PostgreSQL's 1 GB allocation limit).
const MAX_BYTES: usize = (1 << 30) - 5;

fn too_large() -> Error {
    Error::data("54000", "requested length too large")
}

/// Builds a string result row by row; NULL rows get the empty string.
fn str_out(
    m: usize,
    nulls: Option<&[bool]>,
    mut f: impl FnMut(usize, &mut String) -> Result<()>,
) -> Result<Data> {
    let mut out = StrVec::with_capacity(m, m * 8);
    let mut buf = String::new();
    for i in 0..m {
        buf.clear();
        if !nulls.is_some_and(|n| n[i]) {
            f(i, &mut buf)?;
        }
        out.push(&buf);
    }
    Ok(Data::Str(out))
}

fn out_vec<T: Clone>(
    m: usize,
    nulls: Option<&[bool]>,
    dflt: T,
    mut f: impl FnMut(usize) -> Result<T>,
) -> Result<Vec<T>> {
    let mut out = Vec::with_capacity(m);
    for i in 0..m {
        out.push(if nulls.is_some_and(|n| n[i]) {
            dflt.clone()
        } else {
            f(i)?
        });
    }
    Ok(out)
}

/// The byte offset after `n` characters of `s` (its length when shorter).
fn char_offset(s: &str, n: usize) -> usize {
    if s.is_ascii() {
        return n.min(s.len());
    }
    s.char_indices().nth(n).map_or(s.len(), |(i, _)| i)
}

fn char_count(s: &str) -> usize {
    if s.is_ascii() {
        s.len()
    } else {
        s.chars().count()
    }
}

/// PostgreSQL's `substring(s from start for count)`.
fn substring(s: &str, start: i32, count: Option<i32>) -> Result<&str> {
    let start = start as i64;
    let first = start.max(1);
    let end = match count {
        Some(c) if c < 0 => {
            return Err(data_err("22011", "negative substring length not allowed"));
        }
        Some(c) => Some(start + c as i64),
        None => None,
    };
    if let Some(e) = end
        && e <= first
    {
        return Ok("");
    }
    let from = char_offset(s, (first - 1) as usize);
    let rest = &s[from..];
    Ok(match end {
        Some(e) => &rest[..char_offset(rest, (e - first) as usize)],
        None => rest,
    })
}

fn pad(s: &str, len: i32, fill: &str, left: bool, out: &mut String) -> Result<()> {
    if len <= 0 {
        return Ok(());
    }
    let len = len as usize;
    if len.saturating_mul(4) > MAX_BYTES {
        return Err(too_large());
    }
    let count = char_count(s);
    if count >= len || fill.is_empty() {
        out.push_str(&s[..char_offset(s, len)]);
        return Ok(());
    }
    let need = len - count;
    if !left {
        out.push_str(s);
    }
    for c in fill.chars().cycle().take(need) {
        out.push(c);
    }
    if left {
        out.push_str(s);
    }
    Ok(())
}

fn trim<'s>(s: &'s str, chars: &str, leading: bool, trailing: bool) -> &'s str {
    let set = |c: char| chars.contains(c);
    let s = if leading {
        s.trim_start_matches(set)
    } else {
        s
    };
    if trailing { s.trim_end_matches(set) } else { s }
}

/// Casts an argument to `ty` when its layout differs (the binder normally did).
fn arg_as<'a>(c: Col<'a>, ty: DataType, n: usize) -> Result<Col<'a>> {
    if PhysicalType::of(&c.v().ty) != PhysicalType::of(&ty) {
        cast_col(c, ty, true, n)
    } else {
        Ok(c)
    }
}

fn dec_scale_pow(k: u32) -> types::Result<Decimal> {
    Decimal::new(10i128.pow(k), 0)
}

/// `round(d, s)`, PostgreSQL's rules: half away from zero, negative `s` rounds left
/// of the point, a larger `s` pads with zeros.
fn dec_round(d: Decimal, s: i32) -> types::Result<Decimal> {
    if s >= 0 {
        let s = s.min(38) as u8;
        return if s >= d.scale() {
            Ok(d.rescale(s).unwrap_or(d))
        } else {
            d.rescale(s)
        };
    }
    let k = s.unsigned_abs();
    let total = d.scale() as u32 + k;
    if k >= 38 || total > 38 {
        // |d| < 10^(38 - scale) ≤ 10^(k - 1): less than half of 10^k.
        return Ok(Decimal::ZERO);
    }
    Decimal::new(d.unscaled(), total as u8)?
        .rescale(0)?
        .mul(&dec_scale_pow(k)?)
}

/// `trunc(d, s)`: toward zero.
fn dec_trunc(d: Decimal, s: i32) -> types::Result<Decimal> {
    if s >= 0 {
        let s = s.min(38) as u8;
        if s >= d.scale() {
            return Ok(d.rescale(s).unwrap_or(d));
        }
        let drop = (d.scale() - s) as u32;
        return Decimal::new(d.unscaled() / 10i128.pow(drop), s);
    }
    let k = s.unsigned_abs();
    let total = d.scale() as u32 + k;
    if k >= 38 || total > 38 {
        return Ok(Decimal::ZERO);
    }
    let q = d.unscaled() / 10i128.pow(total);
    Decimal::new(q, 0)?.mul(&dec_scale_pow(k)?)
}

fn dec_floor_ceil(d: Decimal, floor: bool) -> types::Result<Decimal> {
    let t = dec_trunc(d, 0)?;
    let one = Decimal::from_i64(1);
    if t == d {
        return Ok(t);
    }
    if floor && d.is_negative() {
        t.sub(&one)
    } else if !floor && !d.is_negative() {
        t.add(&one)
    } else {
        Ok(t)
    }
}

fn invalid_power(msg: &str) -> Error {
    Error::data("2201F", msg)
}

fn pow_f64(x: f64, y: f64) -> Result<f64> {
    if x == 0.0 && y < 0.0 {
        return Err(invalid_power(
            "zero raised to a negative power is undefined",
        ));
    }
    if x < 0.0 && y.is_finite() && y.fract() != 0.0 {
        return Err(invalid_power(
            "a negative number raised to a non-integer power yields a complex result",
        ));
    }
    let r = x.powf(y);
    if r.is_infinite() && x.is_finite() && y.is_finite() {
        return Err(types::Error::FloatOverflow.into());
    }
    if r == 0.0 && x != 0.0 && x.is_finite() && y.is_finite() {
        return Err(types::Error::FloatUnderflow.into());
    }
    Ok(r)
}

fn pow_dec(x: Decimal, y: Decimal) -> Result<Decimal> {
    let y_norm = y.normalize();
    if x.unscaled() == 0 && y.is_negative() {
        return Err(invalid_power(
            "zero raised to a negative power is undefined",
        ));
    }
    if y_norm.scale() == 0
        && let Some(e) = y_norm.to_i64_rounded()
        && e.unsigned_abs() <= 10_000
    {
        // Exact by repeated squaring.
        let mut result = Decimal::from_i64(1);
        let mut base = x;
        let mut k = e.unsigned_abs();
        while k > 0 {
            if k & 1 == 1 {
                result = result.mul(&base)?;
            }
            k >>= 1;
            if k > 0 {
                base = base.mul(&base)?;
            }
        }
        if e < 0 {
            result = Decimal::from_i64(1).div(&result)?;
        }
        return Ok(result);
    }
    if x.is_negative() {
        return Err(invalid_power(
            "a negative number raised to a non-integer power yields a complex result",
        ));
    }
    let r = pow_f64(x.to_f64(), y.to_f64())?;
    Ok(Decimal::from_f64(r)?)
}

/// Calls `func` on evaluated arguments.
pub(super) fn call<'a>(func: Func, args: Vec<Col<'_>>, ty: DataType, n: usize) -> Result<Col<'a>> {
    if func == Func::SingleRow {
        return single_row(args, n);
    }
    // Functions read decimals as `Decimal`s.
    let args: Vec<Col<'_>> = args.into_iter().map(Col::wide_dec).collect();
    let konst = args.iter().all(|c| c.is_const());
    let m = if konst { 1 } else { n };
    match func {
        Func::ConcatAll => return concat_all(&args, m, konst),
        Func::Greatest | Func::Least => return greatest(func == Func::Greatest, args, ty, n),
        Func::NullIf => return nullif(args, ty, n),
        _ => {}
    }
    if args.iter().any(|c| c.is_null_const()) {
        return Ok(Col::null(ty));
    }
    // Strict: NULL when any argument is.
    let mut nulls: Option<Vec<bool>> = None;
    for c in &args {
        if let (false, Some(mask)) = (c.is_const(), &c.v().nulls) {
            match &mut nulls {
                None => nulls = Some(mask[..m].to_vec()),
                Some(acc) => acc.iter_mut().zip(mask).for_each(|(a, b)| *a |= *b),
            }
        }
    }
    let nm = nulls.as_deref();
    let arity = |k: usize| -> Result<()> {
        if args.len() == k {
            Ok(())
        } else {
            Err(internal(&format!(
                "{func:?} called with {} arguments",
                args.len()
            )))
        }
    };
    let strs = |i: usize| -> Result<StrS<'_>> {
        let c = args.get(i).ok_or_else(|| internal("missing argument"))?;
        str_side(c, is_char(&c.v().ty))
    };
    let data = match func {
        Func::Upper | Func::Lower | Func::Reverse => {
            arity(1)?;
            let s = strs(0)?;
            str_out(m, nm, |i, out| {
                let x = s.get(i);
                match func {
                    Func::Upper => out.push_str(&x.to_uppercase()),
                    Func::Lower => out.push_str(&x.to_lowercase()),
                    _ => out.extend(x.chars().rev()),
                }
                Ok(())
            })?
        }
        Func::Length => {
            arity(1)?;
            let s = strs(0)?;
            Data::I32(out_vec(m, nm, 0, |i| Ok(char_count(s.get(i)) as i32))?)
        }
        Func::OctetLength => {
            arity(1)?;
            let s = str_side(&args[0], false)?;
            Data::I32(out_vec(m, nm, 0, |i| Ok(s.get(i).len() as i32))?)
        }
        Func::Substring | Func::Repeat | Func::Left | Func::Right | Func::Lpad | Func::Rpad => {
            let s = strs(0)?;
            let mut args_it = args.iter();
            args_it.next();
            let num = args_it.next().ok_or_else(|| internal("missing argument"))?;
            let num = arg_as(num.view(), DataType::Integer, n)?;
            let k = side!(num, I32);
            let third = args.get(2);
            let count: Option<Col> = match (func, third) {
                (Func::Substring, Some(c)) => Some(arg_as(c.view(), DataType::Integer, n)?),
                _ => None,
            };
            let count_s: Option<S<i32>> = match &count {
                Some(c) => Some(side!(c, I32)),
                None => None,
            };
            let fill = match (func, third) {
                (Func::Lpad | Func::Rpad, Some(c)) => Some(str_side(c, is_char(&c.v().ty))?),
                _ => None,
            };
            str_out(m, nm, |i, out| {
                let x = s.get(i);
                let kv = k.get(i);
                match func {
                    Func::Substring => {
                        out.push_str(substring(x, kv, count_s.map(|c| c.get(i)))?);
                    }
                    Func::Repeat => {
                        if kv > 0 {
                            if x.len().saturating_mul(kv as usize) > MAX_BYTES {
                                return Err(too_large());
                            }
                            for _ in 0..kv {
                                out.push_str(x);
                            }
                        }
                    }
                    Func::Left => {
                        let take = if kv >= 0 {
                            kv as usize
                        } else {
                            char_count(x).saturating_sub(kv.unsigned_abs() as usize)
                        };
                        out.push_str(&x[..char_offset(x, take)]);
                    }
                    Func::Right => {
                        let skip = if kv >= 0 {
                            char_count(x).saturating_sub(kv as usize)
                        } else {
                            kv.unsigned_abs() as usize
                        };
                        out.push_str(&x[char_offset(x, skip)..]);
                    }
                    _ => {
                        let f = fill.as_ref().map_or(" ", |f| f.get(i));
                        pad(x, kv, f, func == Func::Lpad, out)?;
                    }
                }
                Ok(())
            })?
        }
        Func::Btrim | Func::Ltrim | Func::Rtrim => {
            let s = strs(0)?;
            let chars = if args.len() > 1 { Some(strs(1)?) } else { None };
            let (lead, trail) = match func {
                Func::Ltrim => (true, false),
                Func::Rtrim => (false, true),
                _ => (true, true),
            };
            str_out(m, nm, |i, out| {
                let c = chars.as_ref().map_or(" ", |c| c.get(i));
                out.push_str(trim(s.get(i), c, lead, trail));
                Ok(())
            })?
        }
        Func::Position => {
            arity(2)?;
            let (s, sub) = (strs(0)?, strs(1)?);
            Data::I32(out_vec(m, nm, 0, |i| {
                let (x, y) = (s.get(i), sub.get(i));
                Ok(match x.find(y) {
                    Some(at) => char_count(&x[..at]) as i32 + 1,
                    None => 0,
                })
            })?)
        }
        Func::Concat => {
            arity(2)?;
            let (x, y) = (strs(0)?, strs(1)?);
            str_out(m, nm, |i, out| {
                let (a, b) = (x.get(i), y.get(i));
                if a.len() + b.len() > MAX_BYTES {
                    return Err(too_large());
                }
                out.push_str(a);
                out.push_str(b);
                Ok(())
            })?
        }
        Func::Replace => {
            arity(3)?;
            let (s, from, to) = (strs(0)?, strs(1)?, strs(2)?);
            str_out(m, nm, |i, out| {
                let (x, f, t) = (s.get(i), from.get(i), to.get(i));
                if f.is_empty() {
                    out.push_str(x);
                } else {
                    out.push_str(&x.replace(f, t));
                }
                Ok(())
            })?
        }
        Func::Abs
        | Func::Round
        | Func::Trunc
        | Func::Floor
        | Func::Ceil
        | Func::Sqrt
        | Func::Sign => numeric_unary(func, &args, m, nm)?,
        Func::Power | Func::Mod => {
            arity(2)?;
            let (a, b) = (&args[0], &args[1]);
            match (&a.v().data, &b.v().data, func) {
                (Data::F64(_), Data::F64(_), Func::Power) => {
                    let (x, y) = (side!(a, F64), side!(b, F64));
                    Data::F64(out_vec(m, nm, 0.0, |i| pow_f64(x.get(i), y.get(i)))?)
                }
                (Data::Dec(_), Data::Dec(_), Func::Power) => {
                    let (x, y) = (side!(a, Dec), side!(b, Dec));
                    Data::Dec(out_vec(m, nm, Decimal::ZERO, |i| {
                        pow_dec(x.get(i), y.get(i))
                    })?)
                }
                (Data::I16(_), Data::I16(_), Func::Mod) => {
                    let (x, y) = (side!(a, I16), side!(b, I16));
                    Data::I16(out_vec(m, nm, 0, |i| Ok(int_rem(x.get(i), y.get(i))?))?)
                }
                (Data::I32(_), Data::I32(_), Func::Mod) => {
                    let (x, y) = (side!(a, I32), side!(b, I32));
                    Data::I32(out_vec(m, nm, 0, |i| Ok(int_rem(x.get(i), y.get(i))?))?)
                }
                (Data::I64(_), Data::I64(_), Func::Mod) => {
                    let (x, y) = (side!(a, I64), side!(b, I64));
                    Data::I64(out_vec(m, nm, 0, |i| Ok(int_rem(x.get(i), y.get(i))?))?)
                }
                (Data::Dec(_), Data::Dec(_), Func::Mod) => {
                    let (x, y) = (side!(a, Dec), side!(b, Dec));
                    Data::Dec(out_vec(m, nm, Decimal::ZERO, |i| {
                        Ok(x.get(i).rem(&y.get(i))?)
                    })?)
                }
                _ => return Err(internal("power/mod operands of unexpected types")),
            }
        }
        Func::Gcd | Func::Lcm => {
            arity(2)?;
            let lcm = func == Func::Lcm;
            let (a, b) = (&args[0], &args[1]);
            match (&a.v().data, &b.v().data) {
                (Data::I32(_), Data::I32(_)) => {
                    let (x, y) = (side!(a, I32), side!(b, I32));
                    Data::I32(out_vec(m, nm, 0, |i| {
                        let r = int_gcd_lcm(x.get(i) as i64, y.get(i) as i64, lcm);
                        r.filter(|&r| r <= i32::MAX as u128)
                            .map(|r| r as i32)
                            .ok_or_else(|| Error::data("22003", "integer out of range"))
                    })?)
                }
                (Data::I64(_), Data::I64(_)) => {
                    let (x, y) = (side!(a, I64), side!(b, I64));
                    Data::I64(out_vec(m, nm, 0, |i| {
                        let r = int_gcd_lcm(x.get(i), y.get(i), lcm);
                        r.filter(|&r| r <= i64::MAX as u128)
                            .map(|r| r as i64)
                            .ok_or_else(|| Error::data("22003", "bigint out of range"))
                    })?)
                }
                (Data::Dec(_), Data::Dec(_)) => {
                    let (x, y) = (side!(a, Dec), side!(b, Dec));
                    Data::Dec(out_vec(m, nm, Decimal::ZERO, |i| dec_gcd_lcm(x.get(i), y.get(i), lcm))?)
                }
                _ => return Err(internal("gcd/lcm operands of unexpected types")),
            }
        }
        Func::DateTrunc => {
            arity(2)?;
            let unit = strs(0)?;
            let t = side!(&args[1], I64);
            Data::I64(out_vec(m, nm, 0, |i| date_trunc(unit.get(i), t.get(i)))?)
        }
        Func::ToChar if !matches!(args[0].v().ty, DataType::Timestamp) => {
            arity(2)?;
            let template = strs(1)?;
            use crate::types::to_char::{self, Number};
            let value = |i: usize| -> Result<Result<Number, Interval>> {
                Ok(match &args[0].v().data {
                    Data::I32(_) => Ok(Number::Int4(side!(&args[0], I32).get(i))),
                    Data::I64(_) => Ok(Number::Int8(side!(&args[0], I64).get(i))),
                    Data::F32(_) => Ok(Number::Float4(side!(&args[0], F32).get(i))),
                    Data::F64(_) => Ok(Number::Float8(side!(&args[0], F64).get(i))),
                    Data::Dec(_) => Ok(Number::Numeric(side!(&args[0], Dec).get(i))),
                    Data::Interval(_) => Err(side!(&args[0], Interval).get(i)),
                    _ => return Err(internal("to_char of an unexpected type")),
                })
            };
            let data = str_out(m, nm, |i, out| {
                let text = match value(i)? {
                    Ok(n) => to_char::number(n, template.get(i))?,
                    Err(iv) => to_char::interval(iv, template.get(i))?,
                };
                out.push_str(&text);
                Ok(())
            })?;
            // An interval with an empty template gives NULL, as in PostgreSQL (a
            // number gives an empty text).
            if matches!(args[0].v().ty, DataType::Interval) {
                let mask: Vec<bool> =
                    (0..m).map(|i| nm.is_some_and(|n| n[i]) || template.get(i).is_empty()).collect();
                if mask.iter().any(|&x| x) {
                    return Ok(Col::make(Vector::from_data(ty, data, Some(mask)), konst));
                }
            }
            data
        }
        Func::ToChar => {
            arity(2)?;
            let t = side!(&args[0], I64);
            let template = strs(1)?;
            let data = str_out(m, nm, |i, out| {
                out.push_str(&crate::types::to_char::timestamp(t.get(i), template.get(i)));
                Ok(())
            })?;
            // An empty template gives NULL, as in PostgreSQL.
            let mask: Vec<bool> = (0..m).map(|i| nm.is_some_and(|n| n[i]) || template.get(i).is_empty()).collect();
            if mask.iter().any(|&x| x) {
                return Ok(Col::make(Vector::from_data(ty, data, Some(mask)), konst));
            }
            data
        }
        Func::ConcatAll | Func::Greatest | Func::Least | Func::NullIf | Func::NextVal | Func::CurrVal | Func::SetVal | Func::LastVal | Func::Now | Func::CurrentDate | Func::SingleRow => {
            return Err(internal("unreachable function"));
        }
    };
    let ty = if PhysicalType::of(&ty) == data.physical_type() {
        ty
    } else {
        return Err(internal(&format!("{func:?} result is not of type {ty}")));
    };
    Ok(Col::make(Vector::from_data(ty, data, nulls), konst))
}

/// [`Func::SingleRow`]`(rows, value)`: `value`, unless a row counted more than one
/// row — then the error a scalar subquery gives when it returns several.
fn single_row<'a>(mut args: Vec<Col<'_>>, n: usize) -> Result<Col<'a>> {
    if args.len() != 2 {
        return Err(internal("single_row called without (rows, value)"));
    }
    let rows = &args[0];
    let Data::I64(counts) = &rows.v().data else {
        return Err(internal("single_row's row count is not a bigint"));
    };
    let m = if rows.is_const() { 1 } else { n };
    if (0..m).any(|i| !rows.null_at(i) && counts[rows.idx(i)] > 1) {
        return Err(Error::data("21000", "more than one row returned by a subquery used as an expression"));
    }
    Ok(args.pop().expect("two arguments").into_static())
}

/// `gcd(a, b)` (or `lcm` when `lcm`) of two integers as a magnitude; the caller
/// checks it fits the type (gcd(-2147483648, 0) = 2^31 does not, as in PostgreSQL).
/// `None` when the least common multiple passes 128 bits (never for these inputs).
fn int_gcd_lcm(a: i64, b: i64, lcm: bool) -> Option<u128> {
    let (x, y) = (a.unsigned_abs() as u128, b.unsigned_abs() as u128);
    let g = gcd_u128(x, y);
    if !lcm {
        return Some(g);
    }
    if x == 0 || y == 0 {
        return Some(0);
    }
    (x / g).checked_mul(y)
}

fn gcd_u128(mut x: u128, mut y: u128) -> u128 {
    while y != 0 {
        (x, y) = (y, x % y);
    }
    x
}

/// `gcd` / `lcm` of numerics at the larger of their scales, exactly, as PostgreSQL's
/// numeric_gcd / numeric_lcm (gcd(1.5, 2.25) = 0.75, lcm = 4.50).
fn dec_gcd_lcm(a: Decimal, b: Decimal, lcm: bool) -> Result<Decimal> {
    let scale = a.scale().max(b.scale());
    let (x, y) = (a.rescale(scale)?, b.rescale(scale)?);
    let (x, y) = (x.unscaled().unsigned_abs(), y.unscaled().unsigned_abs());
    let g = gcd_u128(x, y);
    let r = if !lcm {
        g
    } else if x == 0 || y == 0 {
        0
    } else {
        (x / g).checked_mul(y).ok_or_else(|| Error::from(types::Error::NumericOverflow))?
    };
    let r = i128::try_from(r).map_err(|_| Error::from(types::Error::NumericOverflow))?;
    Ok(Decimal::new(r, scale)?)
}

/// `date_trunc(unit, ts)` as PostgreSQL's `timestamp_trunc`: the fields below the
/// unit reset (days and months to 1); `week` gives the Monday of the ISO week;
/// decades, centuries and millennia count as PostgreSQL does (the 21st century
/// starts in 2001; years ≤ 0 are BC, year 0 being 1 BC).
fn date_trunc(unit: &str, ts: i64) -> Result<i64> {
    use crate::types::{Date, DateField, Timestamp};
    const MICROS_PER_DAY: i64 = 86_400_000_000;
    let unit = unit.to_ascii_lowercase();
    let floor_to = |step: i64| Ok(ts.div_euclid(step) * step);
    let day = Timestamp(ts).date();
    let (year, month, _) = day.ymd();
    let start_of = |y: i64, mon: u32| -> Result<i64> {
        let d = Date::from_ymd(y, mon, 1).ok_or_else(|| Error::data("22008", "timestamp out of range"))?;
        Ok(d.to_timestamp().0)
    };
    if matches!(unit.as_str(), "week" | "weeks" | "w") {
        // 2000-01-01 was a Saturday: day 0 is 5 days after a Monday.
        let days = day.0 as i64;
        return Ok((days - (days + 5).rem_euclid(7)) * MICROS_PER_DAY);
    }
    match DateField::parse(&unit) {
        Some(DateField::Microseconds) => Ok(ts),
        Some(DateField::Milliseconds) => floor_to(1_000),
        Some(DateField::Second) => floor_to(1_000_000),
        Some(DateField::Minute) => floor_to(60_000_000),
        Some(DateField::Hour) => floor_to(3_600_000_000),
        Some(DateField::Day) => floor_to(MICROS_PER_DAY),
        Some(DateField::Month) => start_of(year, month),
        Some(DateField::Quarter) => start_of(year, 3 * ((month - 1) / 3) + 1),
        Some(DateField::Year) => start_of(year, 1),
        Some(DateField::Decade) => {
            start_of(if year > 0 { (year / 10) * 10 } else { -((8 - (year - 1)) / 10) * 10 }, 1)
        }
        Some(DateField::Century) => start_of(
            if year > 0 { ((year + 99) / 100) * 100 - 99 } else { -((99 - (year - 1)) / 100) * 100 + 1 },
            1,
        ),
        Some(DateField::Millennium) => start_of(
            if year > 0 { ((year + 999) / 1000) * 1000 - 999 } else { -((999 - (year - 1)) / 1000) * 1000 + 1 },
            1,
        ),
        // Fields that extract() knows but that are no unit to truncate to (dow, doy,
        // epoch, …) are unrecognized here, as in PostgreSQL.
        _ => Err(Error::data(
            "22023",
            format!("unit \"{unit}\" not recognized for type timestamp without time zone"),
        )),
    }
}

fn numeric_unary(func: Func, args: &[Col], m: usize, nm: Option<&[bool]>) -> Result<Data> {
    let a = args.first().ok_or_else(|| internal("missing argument"))?;
    let scale: Option<S<i32>> = match args.get(1) {
        Some(c) => Some(side!(c, I32)),
        None => None,
    };
    fn abs_int<T: SqlInt + PartialOrd + Default>(x: T) -> Result<T> {
        Ok(if x < T::default() { int_neg(x)? } else { x })
    }
    Ok(match (&a.v().data, func) {
        (Data::I16(_), Func::Abs) => {
            let x = side!(a, I16);
            Data::I16(out_vec(m, nm, 0, |i| abs_int(x.get(i)))?)
        }
        (Data::I32(_), Func::Abs) => {
            let x = side!(a, I32);
            Data::I32(out_vec(m, nm, 0, |i| abs_int(x.get(i)))?)
        }
        (Data::I64(_), Func::Abs) => {
            let x = side!(a, I64);
            Data::I64(out_vec(m, nm, 0, |i| abs_int(x.get(i)))?)
        }
        (Data::F32(_), Func::Abs) => {
            let x = side!(a, F32);
            Data::F32(out_vec(m, nm, 0.0, |i| Ok(x.get(i).abs()))?)
        }
        (Data::F64(_), _) => {
            let x = side!(a, F64);
            Data::F64(out_vec(m, nm, 0.0, |i| {
                let v = x.get(i);
                Ok(match func {
                    Func::Abs => v.abs(),
                    Func::Round => v.round_ties_even(),
                    Func::Trunc => v.trunc(),
                    Func::Floor => v.floor(),
                    Func::Ceil => v.ceil(),
                    Func::Sign => {
                        if v > 0.0 {
                            1.0
                        } else if v < 0.0 {
                            -1.0
                        } else {
                            0.0
                        }
                    }
                    _ => {
                        if v < 0.0 {
                            return Err(invalid_power(
                                "cannot take square root of a negative number",
                            ));
                        }
                        v.sqrt()
                    }
                })
            })?)
        }
        (Data::Dec(_), _) => {
            let x = side!(a, Dec);
            Data::Dec(out_vec(m, nm, Decimal::ZERO, |i| {
                let d = x.get(i);
                let s = scale.map_or(0, |s| s.get(i));
                Ok(match func {
                    Func::Abs => d.abs(),
                    Func::Round => dec_round(d, s)?,
                    Func::Trunc => dec_trunc(d, s)?,
                    Func::Floor => dec_floor_ceil(d, true)?,
                    Func::Ceil => dec_floor_ceil(d, false)?,
                    Func::Sign => Decimal::from_i64(d.unscaled().signum() as i64),
                    _ => {
                        if d.is_negative() {
                            return Err(invalid_power(
                                "cannot take square root of a negative number",
                            ));
                        }
                        Decimal::from_f64(d.to_f64().sqrt())?
                    }
                })
            })?)
        }
        _ => return Err(internal("numeric function on unexpected type")),
    })
}

fn concat_all<'a>(args: &[Col], m: usize, konst: bool) -> Result<Col<'a>> {
    let data = str_out(m, None, |i, out| {
        for c in args {
            if !c.null_at(i) {
                write_text(c.v(), c.idx(i), true, out);
                if out.len() > MAX_BYTES {
                    return Err(too_large());
                }
            }
        }
        Ok(())
    })?;
    Ok(Col::make(
        Vector::from_data(DataType::Text, data, None),
        konst,
    ))
}

fn greatest<'a>(is_greatest: bool, args: Vec<Col>, ty: DataType, n: usize) -> Result<Col<'a>> {
    let konst = args.iter().all(|c| c.is_const());
    let m = if konst { 1 } else { n };
    let mut fixed = Vec::with_capacity(args.len());
    for c in args {
        fixed.push(arg_as(c, ty, n)?);
    }
    let Some(first) = fixed.first() else {
        return Err(internal("greatest/least without arguments"));
    };
    // Index of the winning argument per row.
    let mut best: Vec<usize> = vec![0; m];
    let mut best_null: Vec<bool> = (0..m).map(|i| first.null_at(i)).collect();
    let op = if is_greatest { CmpOp::Gt } else { CmpOp::Lt };
    for (j, c) in fixed.iter().enumerate().skip(1) {
        // Compare against the current winner, row by row through its own operand.
        for i in 0..m {
            if c.null_at(i) {
                continue;
            }
            if best_null[i] {
                best[i] = j;
                best_null[i] = false;
                continue;
            }
            let w = &fixed[best[i]];
            let a = Col::Const(one_row(c, i));
            let b = Col::Const(one_row(w, i));
            if compare_values(op, &a, &b, 1)?[0] {
                best[i] = j;
            }
        }
    }
    let mut out = Vector::new(ty, m);
    for i in 0..m {
        if best_null[i] {
            out.push_null();
        } else {
            let c = &fixed[best[i]];
            out.push_from(c.v(), c.idx(i));
        }
    }
    Ok(Col::make(out, konst))
}

fn one_row(c: &Col, i: usize) -> Vector {
    let mut v = Vector::new(c.v().ty, 1);
    v.push_from(c.v(), c.idx(i));
    v
}

fn nullif<'a>(args: Vec<Col>, ty: DataType, n: usize) -> Result<Col<'a>> {
    if args.len() != 2 {
        return Err(internal("nullif takes two arguments"));
    }
    let konst = args.iter().all(|c| c.is_const());
    let m = if konst { 1 } else { n };
    let mut it = args.into_iter();
    let (Some(a), Some(b)) = (it.next(), it.next()) else {
        return Err(internal("nullif takes two arguments"));
    };
    let a = arg_as(a, ty, n)?;
    let b = arg_as(b, ty, n)?;
    let eq = compare_values(CmpOp::Eq, &a, &b, m)?;
    let nulls: Vec<bool> = (0..m)
        .map(|i| a.null_at(i) || (!b.null_at(i) && eq[i]))
        .collect();
    let mut v = if konst {
        a.v().clone()
    } else {
        a.into_vector(n)
    };
    if PhysicalType::of(&v.ty) == PhysicalType::of(&ty) {
        v.ty = ty;
    }
    v.nulls = nulls.iter().any(|&x| x).then_some(nulls);
    Ok(Col::make(v, konst))
}
