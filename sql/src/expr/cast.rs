//! Vectorized casts. Numeric ↔ numeric, date ↔ timestamp, string ↔ string, anything
//! → string and string → anything run as typed loops; the rare rest (booleans to and
//! from integers, intervals) goes through [`Value::cast`] row by row.

use std::fmt::Write;

use super::eval::{Col, side};
use super::kernels::{S, internal, try_map1};
use crate::error::Result;
use crate::types::number::{
    SqlInt, format_f32, format_f64, int_from_f64, int_from_i64, parse_bool, parse_f32, parse_f64,
    parse_int,
};
use crate::types::text::{LengthCheck, bpchar_trim, fit_char, fit_varchar};
use crate::types::{self, DataType, Date, Decimal, Interval, MICROS_PER_DAY, Timestamp, Value};
use crate::vector::{Data, PhysicalType, StrVec, Vector};

/// Casts an operand to `to`; `explicit` casts cut over-long strings, implicit
/// (assignment) casts report them.
pub(super) fn cast_col<'a>(c: Col<'a>, to: DataType, explicit: bool, n: usize) -> Result<Col<'a>> {
    let from = c.v().ty;
    if from == to {
        return Ok(c);
    }
    if c.is_null_const() {
        return Ok(Col::null(to));
    }
    if let Some(kept) = dec64_retyped(&c, to) {
        return Ok(kept);
    }
    // The rest reads decimals as `Decimal`s.
    let c = c.wide_dec();
    let check = if explicit {
        LengthCheck::Explicit
    } else {
        LengthCheck::Assignment
    };
    let konst = c.is_const();
    let m = if konst { 1 } else { n };
    let nulls = c.v().nulls.clone();
    let nm = nulls.as_deref();
    let data: Option<Data> = match to {
        DataType::SmallInt => to_int::<i16>(&c, m, nm)?.map(Data::I16),
        DataType::Integer => to_int::<i32>(&c, m, nm)?.map(Data::I32),
        DataType::BigInt => to_int::<i64>(&c, m, nm)?.map(Data::I64),
        DataType::Double => match &c.v().data {
            Data::I16(_) => Some(Data::F64(try_map1(side!(c, I16), m, nm, 0.0, |x| {
                Ok(x as f64)
            })?)),
            Data::I32(_) if is_int(&from) => {
                Some(Data::F64(try_map1(side!(c, I32), m, nm, 0.0, |x| {
                    Ok(x as f64)
                })?))
            }
            Data::I64(_) if is_int(&from) => {
                Some(Data::F64(try_map1(side!(c, I64), m, nm, 0.0, |x| {
                    Ok(x as f64)
                })?))
            }
            Data::F32(_) => Some(Data::F64(try_map1(side!(c, F32), m, nm, 0.0, |x| {
                Ok(x as f64)
            })?)),
            Data::Dec(_) => Some(Data::F64(try_map1(side!(c, Dec), m, nm, 0.0, |x| {
                Ok(x.to_f64())
            })?)),
            _ => None,
        },
        DataType::Real => match &c.v().data {
            Data::I16(_) => Some(Data::F32(try_map1(side!(c, I16), m, nm, 0.0, |x| {
                Ok(x as f32)
            })?)),
            Data::I32(_) if is_int(&from) => {
                Some(Data::F32(try_map1(side!(c, I32), m, nm, 0.0, |x| {
                    Ok(x as f32)
                })?))
            }
            Data::I64(_) if is_int(&from) => {
                Some(Data::F32(try_map1(side!(c, I64), m, nm, 0.0, |x| {
                    Ok(x as f32)
                })?))
            }
            Data::F64(_) => Some(Data::F32(try_map1(side!(c, F64), m, nm, 0.0, narrow_f32)?)),
            Data::Dec(_) => Some(Data::F32(try_map1(side!(c, Dec), m, nm, 0.0, |x| {
                Ok(x.to_f32())
            })?)),
            _ => None,
        },
        DataType::Decimal { precision, scale } => {
            let fit = move |d: Decimal| match precision {
                Some(p) => d.apply_typmod(p, scale),
                None => Ok(d),
            };
            let z = Decimal::ZERO;
            match &c.v().data {
                Data::I16(_) => Some(try_map1(side!(c, I16), m, nm, z, |x| {
                    fit(Decimal::from_i64(x as i64))
                })?),
                Data::I32(_) if is_int(&from) => Some(try_map1(side!(c, I32), m, nm, z, |x| {
                    fit(Decimal::from_i64(x as i64))
                })?),
                Data::I64(_) if is_int(&from) => Some(try_map1(side!(c, I64), m, nm, z, |x| {
                    fit(Decimal::from_i64(x))
                })?),
                Data::F32(_) => Some(try_map1(side!(c, F32), m, nm, z, |x| {
                    fit(Decimal::from_f32(x)?)
                })?),
                Data::F64(_) => Some(try_map1(side!(c, F64), m, nm, z, |x| {
                    fit(Decimal::from_f64(x)?)
                })?),
                Data::Dec(_) => Some(try_map1(side!(c, Dec), m, nm, z, fit)?),
                _ => None,
            }
            .map(Data::Dec)
        }
        DataType::Timestamp => match (&from, &c.v().data) {
            (DataType::Date, Data::I32(_)) => {
                Some(Data::I64(try_map1(side!(c, I32), m, nm, 0, |d| {
                    Ok(Date(d).to_timestamp().0)
                })?))
            }
            _ => None,
        },
        DataType::Date => match (&from, &c.v().data) {
            (DataType::Timestamp, Data::I64(_)) => {
                Some(Data::I32(try_map1(side!(c, I64), m, nm, 0, |t| {
                    Ok(t.div_euclid(MICROS_PER_DAY) as i32)
                })?))
            }
            _ => None,
        },
        DataType::Char(_) | DataType::Varchar(_) | DataType::Text => {
            Some(Data::Str(to_string_data(c.v(), to, check, m)?))
        }
        _ => None,
    };
    // Strings to anything else are parsed.
    let data = match data {
        Some(d) => Some(d),
        None if from.is_string() => Some(parse_strings(c.v(), to, m)?),
        None => None,
    };
    let data = match data {
        Some(d) => d,
        None => return rowwise(&c, to, check, m, konst),
    };
    if data.physical_type() != PhysicalType::of(&to) {
        return Err(internal("cast produced the wrong layout"));
    }
    Ok(Col::make(Vector::from_data(to, data, nulls), konst))
}

/// A cast of scaled-integer decimals to a numeric type that keeps every value as it
/// is (`numeric`, or `numeric(p, s)` at the same scale with room for every value):
/// the same vector under the new type, without a round trip through `Decimal`.
fn dec64_retyped<'a>(c: &Col<'a>, to: DataType) -> Option<Col<'a>> {
    let Data::Dec64(d) = &c.v().data else {
        return None;
    };
    let DataType::Decimal { precision, scale } = to else {
        return None;
    };
    if let Some(p) = precision {
        // numeric(p, s) keeps a value of scale s with fewer than p digits.
        let limit = 10i128.checked_pow(p as u32).unwrap_or(i128::MAX);
        if scale != d.scale || d.values.iter().any(|&v| (v as i128).abs() >= limit) {
            return None;
        }
    }
    let v = c.v();
    let kept = Vector::from_data(to, Data::Dec64(d.clone()), v.nulls.clone());
    Some(Col::make(kept, c.is_const()))
}

fn is_int(t: &DataType) -> bool {
    matches!(t, DataType::SmallInt | DataType::Integer | DataType::BigInt)
}

fn narrow_f32(v: f64) -> types::Result<f32> {
    let r = v as f32;
    if r.is_infinite() && v.is_finite() {
        return Err(types::Error::FloatOverflow);
    }
    if r == 0.0 && v != 0.0 {
        return Err(types::Error::FloatUnderflow);
    }
    Ok(r)
}

fn to_int<T: SqlInt + Default + Clone>(
    c: &Col,
    m: usize,
    nm: Option<&[bool]>,
) -> Result<Option<Vec<T>>> {
    let from = c.v().ty;
    let d = T::default();
    Ok(Some(match &c.v().data {
        Data::I16(_) => try_map1(side!(c, I16), m, nm, d, |x| int_from_i64::<T>(x as i64))?,
        Data::I32(_) if is_int(&from) => {
            try_map1(side!(c, I32), m, nm, d, |x| int_from_i64::<T>(x as i64))?
        }
        Data::I64(_) if is_int(&from) => try_map1(side!(c, I64), m, nm, d, int_from_i64::<T>)?,
        Data::F32(_) => try_map1(side!(c, F32), m, nm, d, |x| int_from_f64::<T>(x as f64))?,
        Data::F64(_) => try_map1(side!(c, F64), m, nm, d, int_from_f64::<T>)?,
        Data::Dec(_) => try_map1(side!(c, Dec), m, nm, d, |x: Decimal| {
            match x.to_i64_rounded() {
                Some(i) => int_from_i64::<T>(i),
                None => Err(types::Error::OutOfRange {
                    type_name: T::TYPE_NAME,
                }),
            }
        })?,
        _ => return Ok(None),
    }))
}

/// Writes row `i` (not NULL) of `v` as text. `pg_output` gives PostgreSQL's output
/// function's form (booleans `t`/`f`, `character` padded, as `concat` prints them);
/// otherwise the form of a cast to `text` (`true`/`false`, padding dropped).
pub(super) fn write_text(v: &Vector, i: usize, pg_output: bool, out: &mut String) {
    let _ = match (&v.data, &v.ty) {
        (Data::Bool(b), _) => {
            out.push_str(match (b[i], pg_output) {
                (true, true) => "t",
                (false, true) => "f",
                (true, false) => "true",
                (false, false) => "false",
            });
            Ok(())
        }
        (Data::I16(x), _) => write!(out, "{}", x[i]),
        (Data::I32(x), DataType::Date) => write!(out, "{}", Date(x[i])),
        (Data::I32(x), _) => write!(out, "{}", x[i]),
        (Data::I64(x), DataType::Timestamp) => write!(out, "{}", Timestamp(x[i])),
        (Data::I64(x), _) => write!(out, "{}", x[i]),
        (Data::F32(x), _) => {
            out.push_str(&format_f32(x[i]));
            Ok(())
        }
        (Data::F64(x), _) => {
            out.push_str(&format_f64(x[i]));
            Ok(())
        }
        (Data::Dec(x), _) => write!(out, "{}", x[i]),
        (Data::Dec64(x), _) => write!(out, "{}", x.get(i)),
        (Data::Interval(x), _) => write!(out, "{}", x[i]),
        (Data::Str(s), DataType::Char(_)) if !pg_output => {
            out.push_str(bpchar_trim(s.get(i)));
            Ok(())
        }
        (Data::Str(s), _) => {
            out.push_str(s.get(i));
            Ok(())
        }
    };
}

/// Every row as a string of type `to` (`text`, `varchar(n)`, `char(n)`).
fn to_string_data(v: &Vector, to: DataType, check: LengthCheck, m: usize) -> Result<StrVec> {
    let mut out = StrVec::with_capacity(m, m * 8);
    let mut buf = String::new();
    for i in 0..m {
        if v.is_null(i) {
            out.push("");
            continue;
        }
        buf.clear();
        write_text(v, i, false, &mut buf);
        match to {
            DataType::Text | DataType::Varchar(None) => out.push(&buf),
            DataType::Varchar(n) => out.push(&fit_varchar(&buf, n, check)?),
            DataType::Char(n) => out.push(&fit_char(&buf, n, check)?),
            _ => return Err(internal("string cast to a non-string")),
        }
    }
    Ok(out)
}

/// Parses every string row as a value of type `to`.
fn parse_strings(v: &Vector, to: DataType, m: usize) -> Result<Data> {
    let Data::Str(sv) = &v.data else {
        return Err(internal("parse of a non-string"));
    };
    let trim = matches!(v.ty, DataType::Char(_));
    let strs: Vec<&str> = (0..m)
        .map(|i| {
            let s = sv.get(i);
            if trim { bpchar_trim(s) } else { s }
        })
        .collect();
    let nm = v.nulls.as_deref();
    let s = S::Many(&strs[..]);
    Ok(match to {
        DataType::SmallInt => Data::I16(try_map1(s, m, nm, 0, parse_int::<i16>)?),
        DataType::Integer => Data::I32(try_map1(s, m, nm, 0, parse_int::<i32>)?),
        DataType::BigInt => Data::I64(try_map1(s, m, nm, 0, parse_int::<i64>)?),
        DataType::Real => Data::F32(try_map1(s, m, nm, 0.0, parse_f32)?),
        DataType::Double => Data::F64(try_map1(s, m, nm, 0.0, parse_f64)?),
        DataType::Boolean => Data::Bool(try_map1(s, m, nm, false, parse_bool)?),
        DataType::Date => Data::I32(try_map1(s, m, nm, 0, |x| Date::parse(x).map(|d| d.0))?),
        DataType::Timestamp => {
            Data::I64(try_map1(s, m, nm, 0, |x| Timestamp::parse(x).map(|t| t.0))?)
        }
        DataType::Interval => Data::Interval(try_map1(s, m, nm, Interval::ZERO, Interval::parse)?),
        DataType::Decimal { precision, scale } => {
            Data::Dec(try_map1(s, m, nm, Decimal::ZERO, |x| {
                let d = Decimal::parse(x)?;
                match precision {
                    Some(p) => d.apply_typmod(p, scale),
                    None => Ok(d),
                }
            })?)
        }
        DataType::Char(_) | DataType::Varchar(_) | DataType::Text => {
            return Err(internal("string parse to a string"));
        }
    })
}

/// The rare casts, one [`Value`] at a time.
fn rowwise<'a>(
    c: &Col,
    to: DataType,
    check: LengthCheck,
    m: usize,
    konst: bool,
) -> Result<Col<'a>> {
    let mut out = Vector::new(to, m);
    for i in 0..m {
        let v = c.v().value(i);
        let r = match check {
            LengthCheck::Explicit => v.cast(&to)?,
            LengthCheck::Assignment => v.cast_for_assignment(&to)?,
        };
        if !row_fits(&to, &r) {
            return Err(internal(&format!("cast to {to} produced {r:?}")));
        }
        out.push_value(&r);
    }
    Ok(Col::make(out, konst))
}

fn row_fits(to: &DataType, v: &Value) -> bool {
    matches!(
        (PhysicalType::of(to), v),
        (_, Value::Null)
            | (PhysicalType::Bool, Value::Boolean(_))
            | (PhysicalType::I16, Value::SmallInt(_))
            | (PhysicalType::I32, Value::Integer(_) | Value::Date(_))
            | (PhysicalType::I64, Value::BigInt(_) | Value::Timestamp(_))
            | (PhysicalType::F32, Value::Real(_))
            | (PhysicalType::F64, Value::Double(_))
            | (PhysicalType::Dec, Value::Decimal(_))
            | (PhysicalType::Interval, Value::Interval(_))
            | (
                PhysicalType::Str,
                Value::Char(_) | Value::Varchar(_) | Value::Text(_)
            )
    )
}
