//! Row keys for hashing (join, aggregate, distinct, set operations) and the
//! PostgreSQL ordering of vector elements (sort, min/max).
//!
//! The hash key of a row is a compact byte string equal for two rows exactly when
//! their values are equal as SQL's grouping sees them: NULL = NULL, decimals by value
//! whatever their scale, `-0.0 = 0.0`, NaN = NaN, `char(n)` without trailing blanks,
//! intervals by their span, integers of any width by value.

use std::cmp::Ordering;

use crate::types::text::bpchar_trim;
use crate::types::{DataType, Decimal, Value};
use crate::vector::{Data, Vector};

/// Appends the hash-key encoding of element `i` of `v` to `out`.
pub fn push_key(v: &Vector, i: usize, out: &mut Vec<u8>) {
    if v.is_null(i) {
        out.push(0);
        return;
    }
    out.push(1);
    match &v.data {
        Data::Bool(d) => out.push(d[i] as u8),
        Data::I16(d) => out.extend_from_slice(&(d[i] as i64).to_le_bytes()),
        Data::I32(d) => out.extend_from_slice(&(d[i] as i64).to_le_bytes()),
        Data::I64(d) => out.extend_from_slice(&d[i].to_le_bytes()),
        Data::F32(d) => out.extend_from_slice(&float_bits(d[i] as f64).to_le_bytes()),
        Data::F64(d) => out.extend_from_slice(&float_bits(d[i]).to_le_bytes()),
        Data::Dec(d) => push_dec_key(&d[i], out),
        Data::Dec64(d) => push_dec_key(&d.get(i), out),
        Data::Interval(d) => out.extend_from_slice(&d[i].span_micros().to_le_bytes()),
        Data::Str(d) => {
            let s = d.get(i);
            let s = if matches!(v.ty, DataType::Char(_)) {
                bpchar_trim(s)
            } else {
                s
            };
            out.extend_from_slice(&(s.len() as u32).to_le_bytes());
            out.extend_from_slice(s.as_bytes());
        }
    }
}

/// A decimal's key by value, whatever its scale (`1.0` and `1.00` alike).
fn push_dec_key(d: &Decimal, out: &mut Vec<u8>) {
    let n = d.normalize();
    out.extend_from_slice(&n.unscaled().to_le_bytes());
    out.push(n.scale());
}

fn float_bits(f: f64) -> u64 {
    if f.is_nan() {
        0x7FF8_0000_0000_0000
    } else if f == 0.0 {
        0
    } else {
        f.to_bits()
    }
}

/// Appends the key of row `i` over `cols` to `out`; returns whether any column is NULL.
pub fn row_key(cols: &[Vector], i: usize, out: &mut Vec<u8>) -> bool {
    let mut null = false;
    for c in cols {
        null |= c.is_null(i);
        push_key(c, i, out);
    }
    null
}

/// PostgreSQL's float order: NaN equal to NaN and above everything; `-0 = 0`.
pub fn float_cmp(a: f64, b: f64) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        (false, false) => a.partial_cmp(&b).unwrap_or(Ordering::Equal),
    }
}

/// Compares two non-NULL elements of vectors of the same physical type.
pub fn cmp_values(a: &Vector, i: usize, b: &Vector, j: usize) -> Ordering {
    match (&a.data, &b.data) {
        (Data::Bool(x), Data::Bool(y)) => x[i].cmp(&y[j]),
        (Data::I16(x), Data::I16(y)) => x[i].cmp(&y[j]),
        (Data::I32(x), Data::I32(y)) => x[i].cmp(&y[j]),
        (Data::I64(x), Data::I64(y)) => x[i].cmp(&y[j]),
        (Data::F32(x), Data::F32(y)) => float_cmp(x[i] as f64, y[j] as f64),
        (Data::F64(x), Data::F64(y)) => float_cmp(x[i], y[j]),
        (Data::Dec(x), Data::Dec(y)) => x[i].cmp(&y[j]),
        (Data::Dec64(x), Data::Dec64(y)) if x.scale == y.scale => x.values[i].cmp(&y.values[j]),
        (Data::Dec64(x), Data::Dec64(y)) => x.get(i).cmp(&y.get(j)),
        (Data::Dec64(x), Data::Dec(y)) => x.get(i).cmp(&y[j]),
        (Data::Dec(x), Data::Dec64(y)) => x[i].cmp(&y.get(j)),
        (Data::Interval(x), Data::Interval(y)) => x[i].cmp(&y[j]),
        (Data::Str(x), Data::Str(y)) => {
            let (s, t) = (x.get(i), y.get(j));
            if matches!(a.ty, DataType::Char(_)) || matches!(b.ty, DataType::Char(_)) {
                bpchar_trim(s).cmp(bpchar_trim(t))
            } else {
                s.cmp(t)
            }
        }
        _ => a.value(i).cmp_sql(&b.value(j)).unwrap_or(Ordering::Equal),
    }
}

/// Compares element `i` of `a` (not NULL) with a non-NULL value of the same type.
pub fn cmp_with_value(a: &Vector, i: usize, v: &Value) -> Ordering {
    match (&a.data, v) {
        (Data::I16(x), Value::SmallInt(y)) => x[i].cmp(y),
        (Data::I32(x), Value::Integer(y)) => x[i].cmp(y),
        (Data::I32(x), Value::Date(y)) => x[i].cmp(&y.0),
        (Data::I64(x), Value::BigInt(y)) => x[i].cmp(y),
        (Data::I64(x), Value::Timestamp(y)) => x[i].cmp(&y.0),
        (Data::F32(x), Value::Real(y)) => float_cmp(x[i] as f64, *y as f64),
        (Data::F64(x), Value::Double(y)) => float_cmp(x[i], *y),
        (Data::Dec(x), Value::Decimal(y)) => x[i].cmp(y),
        (Data::Dec64(x), Value::Decimal(y)) => x.get(i).cmp(y),
        (Data::Interval(x), Value::Interval(y)) => x[i].cmp(y),
        (Data::Str(x), Value::Char(y) | Value::Varchar(y) | Value::Text(y)) => {
            if matches!(a.ty, DataType::Char(_)) {
                bpchar_trim(x.get(i)).cmp(bpchar_trim(y))
            } else {
                x.get(i).cmp(y.as_str())
            }
        }
        _ => a.value(i).cmp_sql(v).unwrap_or(Ordering::Equal),
    }
}

/// Ordering of element `i` of `a` and `j` of `b` under one sort key: NULLs placed
/// per `nulls_first` in the final order, values reversed when `desc`.
pub fn cmp_sort(
    a: &Vector,
    i: usize,
    b: &Vector,
    j: usize,
    desc: bool,
    nulls_first: bool,
) -> Ordering {
    match (a.is_null(i), b.is_null(j)) {
        (true, true) => Ordering::Equal,
        (true, false) => {
            if nulls_first {
                Ordering::Less
            } else {
                Ordering::Greater
            }
        }
        (false, true) => {
            if nulls_first {
                Ordering::Greater
            } else {
                Ordering::Less
            }
        }
        (false, false) => {
            let o = cmp_values(a, i, b, j);
            if desc { o.reverse() } else { o }
        }
    }
}
