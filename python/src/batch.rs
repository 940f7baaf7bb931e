//! The batch path: a result's columns handed to Python whole, as buffers in Arrow's
//! memory layout (little-endian values, validity bitmaps, UTF-8 with offsets), which
//! `beedb/__init__.py` wraps without copying as pyarrow arrays (`pa.Array.from_buffers`)
//! or NumPy arrays (`numpy.frombuffer`). One pass over the rows in Rust per column; no
//! Python object per value except for intervals.

use beedb::{Column, DataType, Value};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

use crate::boundary_error;

/// Days from 1970-01-01 (Arrow's and NumPy's epoch) to 2000-01-01 (BeeDB's).
const EPOCH_DAYS: i64 = 10_957;
const EPOCH_MICROS: i64 = EPOCH_DAYS * 86_400_000_000;

/// Column `c` of `rows` as a dict: `name`, `kind` (`bool`, `int16`, `int32`,
/// `int64`, `float32`, `float64`, `decimal128`, `date32`, `timestamp_us`,
/// `interval`, `utf8`), `len`, `data` (bytes), `valid` (Arrow validity bitmap, None
/// without NULLs), `nulls` (one byte per row, 1 = NULL; None without NULLs),
/// `offsets` (utf8: i64 offsets), `precision`/`scale` (decimal128), `float64`
/// (decimal128: the values as doubles, for NumPy).
pub fn column<'py>(
    py: Python<'py>,
    col: &Column,
    c: usize,
    rows: &[beedb::Row],
) -> PyResult<Bound<'py, PyDict>> {
    let n = rows.len();
    let d = PyDict::new(py);
    d.set_item("name", &col.name)?;
    d.set_item("len", n)?;
    let value = |k: usize| &rows[k].values()[c];
    let mut valid = vec![0u8; n.div_ceil(8)];
    let mut nulls = vec![0u8; n];
    let mut any_null = false;
    for k in 0..n {
        if value(k).is_null() {
            nulls[k] = 1;
            any_null = true;
        } else {
            valid[k / 8] |= 1 << (k % 8);
        }
    }
    macro_rules! fixed {
        ($kind:expr, $t:ty, $pat:pat => $x:expr) => {{
            let mut data: Vec<u8> = Vec::with_capacity(n * std::mem::size_of::<$t>());
            for k in 0..n {
                let x: $t = match value(k) {
                    $pat => $x,
                    _ => <$t>::default(),
                };
                data.extend_from_slice(&x.to_le_bytes());
            }
            ($kind, data)
        }};
    }
    let (kind, data): (&str, Vec<u8>) = match col.data_type {
        DataType::Boolean => {
            let data = (0..n)
                .map(|k| matches!(value(k), Value::Boolean(true)) as u8)
                .collect();
            ("bool", data)
        }
        DataType::SmallInt => fixed!("int16", i16, Value::SmallInt(x) => *x),
        DataType::Integer => fixed!("int32", i32, Value::Integer(x) => *x),
        DataType::BigInt => fixed!("int64", i64, Value::BigInt(x) => *x),
        DataType::Real => fixed!("float32", f32, Value::Real(x) => *x),
        DataType::Double => fixed!("float64", f64, Value::Double(x) => *x),
        DataType::Date => fixed!("date32", i32, Value::Date(x) => (x.0 as i64 + EPOCH_DAYS) as i32),
        DataType::Timestamp => {
            let mut data = Vec::with_capacity(n * 8);
            for k in 0..n {
                let x = match value(k) {
                    Value::Timestamp(t) => t.0.checked_add(EPOCH_MICROS).ok_or_else(|| {
                        boundary_error(
                            "DataError",
                            "22008",
                            "timestamp out of range for Arrow/NumPy".into(),
                        )
                    })?,
                    _ => 0,
                };
                data.extend_from_slice(&x.to_le_bytes());
            }
            ("timestamp_us", data)
        }
        DataType::Decimal { precision, scale } => {
            // Arrow's decimal128 has one scale per column: an unconstrained numeric
            // takes the largest scale among its values.
            let scale = match precision {
                Some(_) => scale,
                None => (0..n)
                    .filter_map(|k| match value(k) {
                        Value::Decimal(x) => Some(x.scale()),
                        _ => None,
                    })
                    .max()
                    .unwrap_or(0),
            };
            let mut data = Vec::with_capacity(n * 16);
            let mut doubles = Vec::with_capacity(n * 8);
            for k in 0..n {
                let (unscaled, double) = match value(k) {
                    Value::Decimal(x) => {
                        let r = x
                            .rescale(scale)
                            .map_err(|e| boundary_error("DataError", "22003", e.to_string()))?;
                        (r.unscaled(), r.unscaled() as f64 / 10f64.powi(scale as i32))
                    }
                    _ => (0i128, 0.0f64),
                };
                data.extend_from_slice(&unscaled.to_le_bytes());
                doubles.extend_from_slice(&double.to_le_bytes());
            }
            d.set_item("precision", precision.unwrap_or(38))?;
            d.set_item("scale", scale)?;
            d.set_item("float64", PyBytes::new(py, &doubles))?;
            ("decimal128", data)
        }
        DataType::Interval => {
            // (months, days, microseconds) per row: Arrow's month_day_nano takes
            // them as they are; NumPy's timedelta64 counts a month as 30 days.
            let list = PyList::empty(py);
            for k in 0..n {
                match value(k) {
                    Value::Interval(iv) => list.append((iv.months, iv.days, iv.micros))?,
                    _ => list.append(py.None())?,
                }
            }
            d.set_item("values", list)?;
            ("interval", Vec::new())
        }
        DataType::Char(_) | DataType::Varchar(_) | DataType::Text => {
            let mut offsets: Vec<u8> = Vec::with_capacity((n + 1) * 8);
            let mut data = Vec::new();
            offsets.extend_from_slice(&0i64.to_le_bytes());
            for k in 0..n {
                if let Value::Char(s) | Value::Varchar(s) | Value::Text(s) = value(k) {
                    data.extend_from_slice(s.as_bytes());
                }
                offsets.extend_from_slice(&(data.len() as i64).to_le_bytes());
            }
            d.set_item("offsets", PyBytes::new(py, &offsets))?;
            ("utf8", data)
        }
    };
    d.set_item("kind", kind)?;
    d.set_item("data", PyBytes::new(py, &data))?;
    if any_null {
        d.set_item("valid", PyBytes::new(py, &valid))?;
        d.set_item("nulls", PyBytes::new(py, &nulls))?;
    } else {
        d.set_item("valid", py.None())?;
        d.set_item("nulls", py.None())?;
    }
    Ok(d)
}
