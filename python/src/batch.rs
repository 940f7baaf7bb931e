//! The batch path: a result's columns handed to Python whole, as buffers in Arrow's
//! memory layout (little-endian values, validity bitmaps, UTF-8 with offsets), handed
//! over as [`Buffer`]s, which `beedb/__init__.py` wraps without copying as pyarrow
//! arrays (`pa.Array.from_buffers`) or NumPy arrays (`numpy.frombuffer`).
//!
//! The engine's batches arrive as typed column vectors ([`beedb::ColumnSlice`]): each
//! column of each batch is appended to its [`ColumnBuilder`] in one loop over the
//! slice (a copy for integers and floats, a widening for `Dec64` decimals, one copy of
//! the string bytes plus rebased offsets for text), with the GIL released and no
//! [`Value`] per cell. Only a batch that holds rows (a finished statement's, such as
//! `RETURNING`) goes value by value. Python objects are made per value only for
//! intervals and for NumPy's text (an object array).

use beedb::types::{Decimal, Interval};
use beedb::{Column, ColumnValues, DataType, ResultBatch, Value};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString};

/// A column buffer handed to Python without a copy: an object with the buffer
/// protocol over a Rust `Vec` (read-only), which `numpy.frombuffer` and
/// `pyarrow.py_buffer` wrap as they would `bytes`.
#[pyclass(module = "beedb._beedb", frozen)]
pub struct Buffer {
    data: Vec<u8>,
}

#[pymethods]
impl Buffer {
    /// # Safety
    /// Called by Python with a valid `view`. The data never changes or moves while
    /// the object lives (frozen), and the view holds a reference to the object.
    unsafe fn __getbuffer__(
        slf: Bound<'_, Self>,
        view: *mut pyo3::ffi::Py_buffer,
        flags: std::os::raw::c_int,
    ) -> PyResult<()> {
        let data = &slf.get().data;
        // SAFETY: as above; PyBuffer_FillInfo takes its own reference to `slf`.
        let r = unsafe {
            pyo3::ffi::PyBuffer_FillInfo(
                view,
                slf.as_ptr(),
                data.as_ptr() as *mut std::os::raw::c_void,
                data.len() as pyo3::ffi::Py_ssize_t,
                1,
                flags,
            )
        };
        if r == -1 {
            return Err(PyErr::fetch(slf.py()));
        }
        Ok(())
    }

    unsafe fn __releasebuffer__(&self, _view: *mut pyo3::ffi::Py_buffer) {}

    fn __len__(&self) -> usize {
        self.data.len()
    }
}

/// `data` as a [`Buffer`] (its spare capacity given back first).
fn buffer(py: Python<'_>, mut data: Vec<u8>) -> PyResult<Bound<'_, Buffer>> {
    data.shrink_to_fit();
    Bound::new(py, Buffer { data })
}

/// Days from 1970-01-01 (Arrow's and NumPy's epoch) to 2000-01-01 (BeeDB's).
const EPOCH_DAYS: i32 = 10_957;
const EPOCH_MICROS: i64 = EPOCH_DAYS as i64 * 86_400_000_000;

/// Which consumer the buffers are for: NumPy takes decimals as float64, booleans as
/// bytes and text as objects; Arrow decimal128, bit-packed booleans and offsets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    Numpy,
    Arrow,
}

/// Primitive values copied into a little-endian byte buffer.
trait Le: Copy {
    fn put(self, out: &mut Vec<u8>);
}

macro_rules! le {
    ($($t:ty),*) => {$(
        impl Le for $t {
            #[inline]
            fn put(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
        }
    )*};
}
le!(i16, i32, i64, i128, f32, f64);

/// Appends `v` to `out` in little-endian order: one copy on a little-endian machine.
fn extend_le<T: Le>(out: &mut Vec<u8>, v: &[T]) {
    #[cfg(target_endian = "little")]
    {
        // SAFETY: `T` is a primitive integer or float (no padding, every byte
        // initialized), laid out in little-endian order on this target.
        let bytes = unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u8, std::mem::size_of_val(v)) };
        out.extend_from_slice(bytes);
    }
    #[cfg(not(target_endian = "little"))]
    for &x in v {
        x.put(out);
    }
}

/// What a column's values accumulate into.
enum Values {
    /// One byte per row (0/1).
    Bool(Vec<u8>),
    /// Fixed-width little-endian values: `int16`, `int32`, `int64`, `float32`,
    /// `float64`.
    Fixed(&'static str, Vec<u8>),
    /// Days since 1970 as i32.
    Date(Vec<u8>),
    /// Microseconds since 1970 as i64.
    Timestamp(Vec<u8>),
    /// `numeric(p, s)` for Arrow: i128 at scale `s`.
    Decimal128 { precision: u8, scale: u8, data: Vec<u8> },
    /// `numeric` for NumPy: float64.
    DecimalF64(Vec<u8>),
    /// Unconstrained `numeric` for Arrow: the values with their scales, until the
    /// column's scale (the largest) is known.
    DecimalAny(Vec<(i128, u8)>),
    Interval(Vec<Interval>),
    /// Text: i64 offsets (`len + 1`) and the UTF-8 bytes.
    Utf8 { offsets: Vec<i64>, data: Vec<u8> },
}

/// One result column being built, batch by batch.
pub struct ColumnBuilder {
    name: String,
    values: Values,
    /// One byte per row, 1 = NULL; `any_null` says whether there is one.
    nulls: Vec<u8>,
    any_null: bool,
    len: usize,
}

fn pow10_i128(k: u8) -> Option<i128> {
    10i128.checked_pow(k as u32)
}

/// A value Arrow or NumPy cannot hold: SQLSTATE and message.
pub type ConvError = (&'static str, String);

/// A decimal out of range for its column's scale.
fn out_of_range(e: impl std::fmt::Display) -> ConvError {
    ("22003", e.to_string())
}

fn timestamp_range() -> ConvError {
    ("22008", "timestamp out of range for Arrow/NumPy".into())
}

impl ColumnBuilder {
    pub fn new(col: &Column, target: Target) -> ColumnBuilder {
        let values = match col.data_type {
            DataType::Boolean => Values::Bool(Vec::new()),
            DataType::SmallInt => Values::Fixed("int16", Vec::new()),
            DataType::Integer => Values::Fixed("int32", Vec::new()),
            DataType::BigInt => Values::Fixed("int64", Vec::new()),
            DataType::Real => Values::Fixed("float32", Vec::new()),
            DataType::Double => Values::Fixed("float64", Vec::new()),
            DataType::Date => Values::Date(Vec::new()),
            DataType::Timestamp => Values::Timestamp(Vec::new()),
            DataType::Decimal { .. } if target == Target::Numpy => Values::DecimalF64(Vec::new()),
            DataType::Decimal { precision: Some(precision), scale } => {
                Values::Decimal128 { precision, scale, data: Vec::new() }
            }
            DataType::Decimal { precision: None, .. } => Values::DecimalAny(Vec::new()),
            DataType::Interval => Values::Interval(Vec::new()),
            DataType::Char(_) | DataType::Varchar(_) | DataType::Text => {
                Values::Utf8 { offsets: vec![0], data: Vec::new() }
            }
        };
        ColumnBuilder { name: col.name.clone(), values, nulls: Vec::new(), any_null: false, len: 0 }
    }

    /// Appends rows `from..` of a batch's column; `false` if the slice's physical
    /// type is not the one this column expects (the caller then goes value by value).
    fn push_slice(&mut self, values: ColumnValues<'_>, nulls: Option<&[bool]>, from: usize) -> Result<bool, ConvError> {
        let n = slice_len(values);
        let rows = n.saturating_sub(from);
        match (&mut self.values, values) {
            (Values::Bool(out), ColumnValues::Bool(v)) => out.extend(v[from..].iter().map(|&b| b as u8)),
            (Values::Fixed("int16", out), ColumnValues::I16(v)) => extend_le(out, &v[from..]),
            (Values::Fixed("int32", out), ColumnValues::I32(v)) => extend_le(out, &v[from..]),
            (Values::Fixed("int64", out), ColumnValues::I64(v)) => extend_le(out, &v[from..]),
            (Values::Fixed("float32", out), ColumnValues::F32(v)) => extend_le(out, &v[from..]),
            (Values::Fixed("float64", out), ColumnValues::F64(v)) => extend_le(out, &v[from..]),
            (Values::Date(out), ColumnValues::I32(v)) => {
                out.reserve(rows * 4);
                for &d in &v[from..] {
                    d.wrapping_add(EPOCH_DAYS).put(out);
                }
            }
            (Values::Timestamp(out), ColumnValues::I64(v)) => {
                out.reserve(rows * 8);
                for (k, &t) in v.iter().enumerate().skip(from) {
                    let x = match t.checked_add(EPOCH_MICROS) {
                        Some(x) => x,
                        None if nulls.is_some_and(|n| n[k]) => 0,
                        None => return Err(timestamp_range()),
                    };
                    x.put(out);
                }
            }
            (Values::DecimalF64(out), ColumnValues::Dec64 { scale, values }) => {
                out.reserve(rows * 8);
                let div = 10f64.powi(scale as i32);
                for &x in &values[from..] {
                    (x as f64 / div).put(out);
                }
            }
            (Values::DecimalF64(out), ColumnValues::Dec(v)) => {
                out.reserve(rows * 8);
                for d in &v[from..] {
                    decimal_f64(d).put(out);
                }
            }
            (Values::Decimal128 { scale: to, data, .. }, ColumnValues::Dec64 { scale, values }) if scale <= *to => {
                data.reserve(rows * 16);
                if scale == *to {
                    for &x in &values[from..] {
                        (x as i128).put(data);
                    }
                } else {
                    let m = pow10_i128(*to - scale).ok_or_else(|| out_of_range("decimal scale out of range"))?;
                    for &x in &values[from..] {
                        (x as i128).checked_mul(m).ok_or_else(|| out_of_range("numeric value out of range for decimal128"))?.put(data);
                    }
                }
            }
            (Values::Decimal128 { scale: to, data, .. }, ColumnValues::Dec64 { scale, values }) => {
                data.reserve(rows * 16);
                for &x in &values[from..] {
                    let d = Decimal::from_scaled_i64(x, scale).rescale(*to).map_err(out_of_range)?;
                    d.unscaled().put(data);
                }
            }
            (Values::Decimal128 { scale: to, data, .. }, ColumnValues::Dec(v)) => {
                data.reserve(rows * 16);
                for (k, d) in v.iter().enumerate().skip(from) {
                    let x = if nulls.is_some_and(|n| n[k]) {
                        0
                    } else {
                        d.rescale(*to).map_err(out_of_range)?.unscaled()
                    };
                    x.put(data);
                }
            }
            (Values::DecimalAny(out), ColumnValues::Dec64 { scale, values }) => {
                out.extend(values[from..].iter().map(|&x| (x as i128, scale)))
            }
            (Values::DecimalAny(out), ColumnValues::Dec(v)) => {
                out.extend(v[from..].iter().map(|d| (d.unscaled(), d.scale())))
            }
            (Values::Interval(out), ColumnValues::Interval(v)) => out.extend_from_slice(&v[from..]),
            (Values::Utf8 { offsets, data }, ColumnValues::Str { offsets: o, bytes }) => {
                let (first, last) = (o[from] as usize, o[n] as usize);
                let base = data.len() as i64 - first as i64;
                data.extend_from_slice(&bytes[first..last]);
                offsets.extend(o[from + 1..].iter().map(|&x| x as i64 + base));
            }
            _ => return Ok(false),
        }
        match nulls {
            Some(m) => {
                let m = &m[from..n];
                // SAFETY: a bool is one byte, 0 or 1.
                let bytes = unsafe { std::slice::from_raw_parts(m.as_ptr() as *const u8, m.len()) };
                self.nulls.extend_from_slice(bytes);
                self.any_null |= m.contains(&true);
            }
            None => self.nulls.resize(self.nulls.len() + rows, 0),
        }
        self.len += rows;
        Ok(true)
    }

    /// Appends one value (the slow path: a batch of rows).
    fn push_value(&mut self, v: &Value) -> Result<(), ConvError> {
        let null = v.is_null();
        match &mut self.values {
            Values::Bool(out) => out.push(matches!(v, Value::Boolean(true)) as u8),
            Values::Fixed(kind, out) => {
                let int = match v {
                    Value::SmallInt(x) => Some(*x as i64),
                    Value::Integer(x) => Some(*x as i64),
                    Value::BigInt(x) => Some(*x),
                    _ => None,
                };
                let float = match v {
                    Value::Real(x) => *x as f64,
                    Value::Double(x) => *x,
                    _ => int.unwrap_or(0) as f64,
                };
                let int = int.unwrap_or(0);
                match *kind {
                    "int16" => (int as i16).put(out),
                    "int32" => (int as i32).put(out),
                    "int64" => int.put(out),
                    "float32" => (float as f32).put(out),
                    _ => float.put(out),
                }
            }
            Values::Date(out) => match v {
                Value::Date(d) => d.0.wrapping_add(EPOCH_DAYS).put(out),
                _ => 0i32.put(out),
            },
            Values::Timestamp(out) => match v {
                Value::Timestamp(t) => {
                    t.0.checked_add(EPOCH_MICROS).ok_or_else(timestamp_range)?.put(out)
                }
                _ => 0i64.put(out),
            },
            Values::DecimalF64(out) => match v {
                Value::Decimal(d) => decimal_f64(d).put(out),
                _ => 0f64.put(out),
            },
            Values::Decimal128 { scale, data, .. } => match v {
                Value::Decimal(d) => d.rescale(*scale).map_err(out_of_range)?.unscaled().put(data),
                _ => 0i128.put(data),
            },
            Values::DecimalAny(out) => match v {
                Value::Decimal(d) => out.push((d.unscaled(), d.scale())),
                _ => out.push((0, 0)),
            },
            Values::Interval(out) => match v {
                Value::Interval(iv) => out.push(*iv),
                _ => out.push(Interval::new(0, 0, 0)),
            },
            Values::Utf8 { offsets, data } => {
                if let Value::Char(s) | Value::Varchar(s) | Value::Text(s) = v {
                    data.extend_from_slice(s.as_bytes());
                }
                offsets.push(data.len() as i64);
            }
        }
        self.nulls.push(null as u8);
        self.any_null |= null;
        self.len += 1;
        Ok(())
    }

    /// The column as the dict `beedb/__init__.py` reads: `name`, `kind` (`bool`,
    /// `int16`, `int32`, `int64`, `float32`, `float64`, `decimal128`, `date32`,
    /// `timestamp_us`, `interval`, `utf8`), `len`, `data` (bytes: the values; for
    /// Arrow booleans bit-packed, for NumPy decimals float64), `valid` (Arrow's
    /// validity bitmap) and `nulls` (a byte per row, 1 = NULL), both None without
    /// NULLs; `offsets` (utf8 for Arrow: i64), `strings` (utf8 for NumPy: a list of
    /// str, None for NULL), `values` (interval: (months, days, µs) tuples or None),
    /// `precision`/`scale` (decimal128).
    pub fn finish<'py>(self, py: Python<'py>, target: Target) -> PyResult<Bound<'py, PyDict>> {
        let n = self.len;
        let d = PyDict::new(py);
        d.set_item("name", &self.name)?;
        d.set_item("len", n)?;
        let is_null = |k: usize| self.nulls[k] != 0;
        let (kind, data): (&str, Vec<u8>) = match self.values {
            Values::Bool(bytes) => match target {
                Target::Numpy => ("bool", bytes),
                Target::Arrow => ("bool", pack_bits(bytes.iter().map(|&b| b != 0), n)),
            },
            Values::Fixed(kind, data) => (kind, data),
            Values::Date(data) => ("date32", data),
            Values::Timestamp(data) => ("timestamp_us", data),
            Values::DecimalF64(data) => ("decimal128", data),
            Values::Decimal128 { precision, scale, data } => {
                d.set_item("precision", precision)?;
                d.set_item("scale", scale)?;
                ("decimal128", data)
            }
            Values::DecimalAny(values) => {
                // Arrow's decimal128 has one scale per column: an unconstrained
                // numeric takes the largest scale among its values.
                let scale = (0..n).filter(|&k| !is_null(k)).map(|k| values[k].1).max().unwrap_or(0);
                let mut data = Vec::with_capacity(n * 16);
                for (k, &(x, s)) in values.iter().enumerate() {
                    let x = if is_null(k) {
                        0
                    } else {
                        Decimal::new(x, s)
                            .and_then(|d| d.rescale(scale))
                            .map_err(|e| crate::boundary_error("DataError", "22003", e.to_string()))?
                            .unscaled()
                    };
                    x.put(&mut data);
                }
                d.set_item("precision", 38)?;
                d.set_item("scale", scale)?;
                ("decimal128", data)
            }
            Values::Interval(values) => {
                // (months, days, microseconds) per row: Arrow's month_day_nano takes
                // them as they are; NumPy's timedelta64 counts a month as 30 days.
                let list = PyList::empty(py);
                for (k, iv) in values.iter().enumerate() {
                    if is_null(k) {
                        list.append(py.None())?;
                    } else {
                        list.append((iv.months, iv.days, iv.micros))?;
                    }
                }
                d.set_item("values", list)?;
                ("interval", Vec::new())
            }
            Values::Utf8 { offsets, data } => match target {
                Target::Arrow => {
                    let mut raw = Vec::with_capacity(offsets.len() * 8);
                    extend_le(&mut raw, &offsets);
                    drop(offsets);
                    d.set_item("offsets", buffer(py, raw)?)?;
                    ("utf8", data)
                }
                Target::Numpy => {
                    let mut strings = Vec::with_capacity(n);
                    for k in 0..n {
                        if is_null(k) {
                            strings.push(py.None().into_bound(py));
                        } else {
                            let s = &data[offsets[k] as usize..offsets[k + 1] as usize];
                            // The engine's text is UTF-8 (StrVec holds a String).
                            let s = std::str::from_utf8(s).map_err(|e| {
                                crate::boundary_error("InternalError", "XX000", e.to_string())
                            })?;
                            strings.push(PyString::new(py, s).into_any());
                        }
                    }
                    d.set_item("strings", PyList::new(py, strings)?)?;
                    ("utf8", Vec::new())
                }
            },
        };
        d.set_item("kind", kind)?;
        d.set_item("data", buffer(py, data)?)?;
        if self.any_null {
            let valid = pack_bits(self.nulls.iter().map(|&b| b == 0), n);
            d.set_item("valid", buffer(py, valid)?)?;
            d.set_item("nulls", buffer(py, self.nulls)?)?;
        } else {
            d.set_item("valid", py.None())?;
            d.set_item("nulls", py.None())?;
        }
        Ok(d)
    }
}

fn decimal_f64(d: &Decimal) -> f64 {
    d.unscaled() as f64 / 10f64.powi(d.scale() as i32)
}

/// Arrow's bit-packed layout (bit `k % 8` of byte `k / 8`).
fn pack_bits(bits: impl Iterator<Item = bool>, n: usize) -> Vec<u8> {
    let mut out = vec![0u8; n.div_ceil(8)];
    for (k, b) in bits.enumerate() {
        out[k / 8] |= (b as u8) << (k % 8);
    }
    out
}

/// Appends rows `from..` of `batch` to `builders` (one per column): column by
/// column from the typed vectors when the batch has them, else value by value.
pub fn append(builders: &mut [ColumnBuilder], batch: &mut ResultBatch, from: usize) -> Result<(), ConvError> {
    let rows = batch.len();
    if from >= rows {
        return Ok(());
    }
    let mut slow: Vec<usize> = Vec::new();
    match batch.column_slices() {
        Some(slices) if slices.len() == builders.len() => {
            for (c, (b, s)) in builders.iter_mut().zip(&slices).enumerate() {
                let fits = s.nulls.is_none_or(|m| m.len() == rows) && slice_len(s.values) == rows;
                if !(fits && b.push_slice(s.values, s.nulls, from)?) {
                    slow.push(c);
                }
            }
        }
        _ => slow.extend(0..builders.len()),
    }
    for c in slow {
        for k in from..rows {
            builders[c].push_value(&batch.value(k, c))?;
        }
    }
    Ok(())
}

fn slice_len(v: ColumnValues<'_>) -> usize {
    match v {
        ColumnValues::Bool(v) => v.len(),
        ColumnValues::I16(v) => v.len(),
        ColumnValues::I32(v) => v.len(),
        ColumnValues::I64(v) => v.len(),
        ColumnValues::F32(v) => v.len(),
        ColumnValues::F64(v) => v.len(),
        ColumnValues::Dec64 { values, .. } => values.len(),
        ColumnValues::Dec(v) => v.len(),
        ColumnValues::Interval(v) => v.len(),
        ColumnValues::Str { offsets, .. } => offsets.len().saturating_sub(1),
    }
}
