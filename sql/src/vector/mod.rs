//! Column vectors and batches: the unit of data the executor moves.
//!
//! A [`Vector`] holds one column of a batch in a typed buffer ([`Data`]): no enum per
//! value on the hot path. NULLs are a separate mask; a NULL position holds the type's
//! default value so kernels can run over the whole buffer without branching. The
//! physical representation per SQL type:
//!
//! | SQL type                      | [`Data`]            |
//! |-------------------------------|---------------------|
//! | boolean                       | `Bool(Vec<bool>)`   |
//! | smallint / integer / bigint   | `I16` / `I32` / `I64` |
//! | real / double precision       | `F32` / `F64`       |
//! | numeric(p, s), p ≤ 18         | `Dec64(Dec64Vec)`: i64 at scale s |
//! | other numeric                 | `Dec(Vec<Decimal>)` |
//! | date (days since 2000-01-01)  | `I32`               |
//! | timestamp (µs since 2000-01-01) | `I64`             |
//! | interval                      | `Interval`          |
//! | char / varchar / text         | `Str(StrVec)`       |
//!
//! A decimal vector has two representations. [`Data::Dec64`] holds every value as
//! an i64 of unscaled digits at one scale for the whole vector: 8 bytes a value, and
//! arithmetic, comparison and sums are plain integer loops. It is what scans of
//! `numeric(p, s)` columns with p ≤ 18 produce, and what `+`, `-` and `*` on such
//! vectors produce while the results fit. [`Data::Dec`] holds [`Decimal`]s (an i128
//! and a scale each) and takes everything else: unconstrained columns, mixed scales,
//! wider values. Both are [`PhysicalType::Dec`]; a `Dec64` vector that receives a
//! value it cannot hold turns itself into `Dec` ([`Data::widen_dec`]), and code that
//! has no `Dec64` fast path reads it through [`Data::widen_dec`] or [`Dec64Vec::get`].
//!
//! A [`Batch`] is a set of equally long vectors plus an optional *selection vector*:
//! the positions still live after a filter. Filters narrow the selection instead of
//! copying; projection and materializing operators compact.

mod strvec;

pub use strvec::StrVec;

use crate::types::{DataType, Date, Decimal, Interval, Timestamp, Value};

/// Rows per batch the scans produce.
pub const BATCH_SIZE: usize = 1024;

/// A typed column buffer.
#[derive(Debug, Clone, PartialEq)]
pub enum Data {
    Bool(Vec<bool>),
    I16(Vec<i16>),
    I32(Vec<i32>),
    I64(Vec<i64>),
    F32(Vec<f32>),
    F64(Vec<f64>),
    Dec(Vec<Decimal>),
    Dec64(Dec64Vec),
    Interval(Vec<Interval>),
    Str(StrVec),
}

/// Decimals of one scale as i64 unscaled digits (see the module documentation).
#[derive(Debug, Clone, PartialEq)]
pub struct Dec64Vec {
    /// Digits after the point, the same for every value (at most 38).
    pub scale: u8,
    /// `value × 10^scale` per row; a NULL row holds 0.
    pub values: Vec<i64>,
}

impl Dec64Vec {
    pub fn with_capacity(scale: u8, cap: usize) -> Dec64Vec {
        Dec64Vec {
            scale,
            values: Vec::with_capacity(cap),
        }
    }

    /// Element `i` as a [`Decimal`].
    #[inline]
    pub fn get(&self, i: usize) -> Decimal {
        Decimal::from_scaled_i64(self.values[i], self.scale)
    }

    /// Every element as a [`Decimal`].
    pub fn to_decimals(&self) -> Vec<Decimal> {
        self.values
            .iter()
            .map(|&v| Decimal::from_scaled_i64(v, self.scale))
            .collect()
    }

    /// Appends `d` if it is exactly representable at this scale in an i64.
    #[inline]
    fn try_push(&mut self, d: &Decimal) -> bool {
        match d.to_scaled_i64(self.scale) {
            Some(v) => {
                self.values.push(v);
                true
            }
            None => false,
        }
    }
}

/// The scale of the i64 representation of `ty`, when its vectors use one: a
/// `numeric(p, s)` whose every value fits 18 digits.
pub fn dec64_scale(ty: &DataType) -> Option<u8> {
    match ty {
        DataType::Decimal {
            precision: Some(p),
            scale,
        } if *p <= 18 => Some(*scale),
        _ => None,
    }
}

/// The physical kind of a type's vectors (see the module table).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PhysicalType {
    Bool,
    I16,
    I32,
    I64,
    F32,
    F64,
    Dec,
    Interval,
    Str,
}

impl PhysicalType {
    pub fn of(ty: &DataType) -> PhysicalType {
        match ty {
            DataType::Boolean => PhysicalType::Bool,
            DataType::SmallInt => PhysicalType::I16,
            DataType::Integer | DataType::Date => PhysicalType::I32,
            DataType::BigInt | DataType::Timestamp => PhysicalType::I64,
            DataType::Real => PhysicalType::F32,
            DataType::Double => PhysicalType::F64,
            DataType::Decimal { .. } => PhysicalType::Dec,
            DataType::Interval => PhysicalType::Interval,
            DataType::Char(_) | DataType::Varchar(_) | DataType::Text => PhysicalType::Str,
        }
    }
}

impl Data {
    pub fn with_capacity(ty: &DataType, cap: usize) -> Data {
        match PhysicalType::of(ty) {
            PhysicalType::Bool => Data::Bool(Vec::with_capacity(cap)),
            PhysicalType::I16 => Data::I16(Vec::with_capacity(cap)),
            PhysicalType::I32 => Data::I32(Vec::with_capacity(cap)),
            PhysicalType::I64 => Data::I64(Vec::with_capacity(cap)),
            PhysicalType::F32 => Data::F32(Vec::with_capacity(cap)),
            PhysicalType::F64 => Data::F64(Vec::with_capacity(cap)),
            PhysicalType::Dec => match dec64_scale(ty) {
                Some(scale) => Data::Dec64(Dec64Vec::with_capacity(scale, cap)),
                None => Data::Dec(Vec::with_capacity(cap)),
            },
            PhysicalType::Interval => Data::Interval(Vec::with_capacity(cap)),
            PhysicalType::Str => Data::Str(StrVec::with_capacity(cap, cap * 8)),
        }
    }

    /// Turns a [`Data::Dec64`] buffer into [`Data::Dec`] in place (the same values);
    /// any other buffer is left as it is.
    pub fn widen_dec(&mut self) {
        if let Data::Dec64(d) = self {
            *self = Data::Dec(d.to_decimals());
        }
    }

    /// This buffer with [`Data::Dec64`] turned into [`Data::Dec`]: borrowed when it
    /// is anything else.
    pub fn wide_dec(&self) -> std::borrow::Cow<'_, Data> {
        match self {
            Data::Dec64(d) => std::borrow::Cow::Owned(Data::Dec(d.to_decimals())),
            other => std::borrow::Cow::Borrowed(other),
        }
    }

    /// Appends a decimal to a decimal buffer, widening a [`Data::Dec64`] buffer that
    /// cannot hold it exactly.
    pub fn push_decimal(&mut self, d: Decimal) {
        match self {
            Data::Dec(v) => v.push(d),
            Data::Dec64(v) => {
                if !v.try_push(&d) {
                    self.widen_dec();
                    self.push_decimal(d);
                }
            }
            other => panic!("decimal pushed into a {:?} vector", other.physical_type()),
        }
    }

    pub fn len(&self) -> usize {
        match self {
            Data::Bool(v) => v.len(),
            Data::I16(v) => v.len(),
            Data::I32(v) => v.len(),
            Data::I64(v) => v.len(),
            Data::F32(v) => v.len(),
            Data::F64(v) => v.len(),
            Data::Dec(v) => v.len(),
            Data::Dec64(v) => v.values.len(),
            Data::Interval(v) => v.len(),
            Data::Str(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn physical_type(&self) -> PhysicalType {
        match self {
            Data::Bool(_) => PhysicalType::Bool,
            Data::I16(_) => PhysicalType::I16,
            Data::I32(_) => PhysicalType::I32,
            Data::I64(_) => PhysicalType::I64,
            Data::F32(_) => PhysicalType::F32,
            Data::F64(_) => PhysicalType::F64,
            Data::Dec(_) | Data::Dec64(_) => PhysicalType::Dec,
            Data::Interval(_) => PhysicalType::Interval,
            Data::Str(_) => PhysicalType::Str,
        }
    }

    /// Appends the type's default value (what a NULL position holds).
    pub fn push_default(&mut self) {
        match self {
            Data::Bool(v) => v.push(false),
            Data::I16(v) => v.push(0),
            Data::I32(v) => v.push(0),
            Data::I64(v) => v.push(0),
            Data::F32(v) => v.push(0.0),
            Data::F64(v) => v.push(0.0),
            Data::Dec(v) => v.push(Decimal::ZERO),
            Data::Dec64(v) => v.values.push(0),
            Data::Interval(v) => v.push(Interval::ZERO),
            Data::Str(v) => v.push(""),
        }
    }

    /// Appends element `i` of `other`, which must have the same physical type.
    pub fn push_from(&mut self, other: &Data, i: usize) {
        match (&mut *self, other) {
            (Data::Dec64(a), Data::Dec64(b)) if a.scale == b.scale => {
                a.values.push(b.values[i]);
                return;
            }
            (Data::Dec(a), Data::Dec64(b)) => {
                a.push(b.get(i));
                return;
            }
            (Data::Dec64(_), Data::Dec64(b)) => {
                self.push_decimal(b.get(i));
                return;
            }
            (Data::Dec64(_), Data::Dec(b)) => {
                self.push_decimal(b[i]);
                return;
            }
            _ => {}
        }
        match (self, other) {
            (Data::Bool(a), Data::Bool(b)) => a.push(b[i]),
            (Data::I16(a), Data::I16(b)) => a.push(b[i]),
            (Data::I32(a), Data::I32(b)) => a.push(b[i]),
            (Data::I64(a), Data::I64(b)) => a.push(b[i]),
            (Data::F32(a), Data::F32(b)) => a.push(b[i]),
            (Data::F64(a), Data::F64(b)) => a.push(b[i]),
            (Data::Dec(a), Data::Dec(b)) => a.push(b[i]),
            (Data::Interval(a), Data::Interval(b)) => a.push(b[i]),
            (Data::Str(a), Data::Str(b)) => a.push(b.get(i)),
            (a, b) => panic!(
                "push_from between {:?} and {:?} vectors",
                a.physical_type(),
                b.physical_type()
            ),
        }
    }

    /// Shrinks to `len` elements.
    pub fn truncate(&mut self, len: usize) {
        match self {
            Data::Bool(v) => v.truncate(len),
            Data::I16(v) => v.truncate(len),
            Data::I32(v) => v.truncate(len),
            Data::I64(v) => v.truncate(len),
            Data::F32(v) => v.truncate(len),
            Data::F64(v) => v.truncate(len),
            Data::Dec(v) => v.truncate(len),
            Data::Dec64(v) => v.values.truncate(len),
            Data::Interval(v) => v.truncate(len),
            Data::Str(v) => v.truncate(len),
        }
    }

    /// Bytes of heap memory the buffer holds (for memory accounting).
    pub fn heap_bytes(&self) -> usize {
        match self {
            Data::Bool(v) => v.capacity(),
            Data::I16(v) => v.capacity() * 2,
            Data::I32(v) => v.capacity() * 4,
            Data::I64(v) => v.capacity() * 8,
            Data::F32(v) => v.capacity() * 4,
            Data::F64(v) => v.capacity() * 8,
            Data::Dec(v) => v.capacity() * size_of::<Decimal>(),
            Data::Dec64(v) => v.values.capacity() * 8,
            Data::Interval(v) => v.capacity() * size_of::<Interval>(),
            Data::Str(v) => v.heap_bytes(),
        }
    }
}

/// One column of a batch: typed values and a NULL mask.
#[derive(Debug, Clone, PartialEq)]
pub struct Vector {
    pub ty: DataType,
    pub data: Data,
    /// `nulls[i]` is true when row `i` is NULL; `None` when no row is NULL.
    pub nulls: Option<Vec<bool>>,
}

impl Vector {
    pub fn new(ty: DataType, cap: usize) -> Vector {
        Vector {
            data: Data::with_capacity(&ty, cap),
            ty,
            nulls: None,
        }
    }

    pub fn from_data(ty: DataType, data: Data, nulls: Option<Vec<bool>>) -> Vector {
        debug_assert_eq!(PhysicalType::of(&ty), data.physical_type());
        debug_assert!(nulls.as_ref().is_none_or(|n| n.len() == data.len()));
        Vector { ty, data, nulls }
    }

    /// A vector of `len` copies of `value` (NULL allowed), of type `ty`.
    pub fn constant(ty: DataType, value: &Value, len: usize) -> Vector {
        let mut v = Vector::new(ty, len);
        for _ in 0..len {
            v.push_value(value);
        }
        v
    }

    pub fn len(&self) -> usize {
        self.data.len()
    }

    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    #[inline]
    pub fn is_null(&self, i: usize) -> bool {
        self.nulls.as_ref().is_some_and(|n| n[i])
    }

    pub fn has_nulls(&self) -> bool {
        self.nulls.as_ref().is_some_and(|n| n.iter().any(|&b| b))
    }

    /// Marks the last pushed element NULL (creating the mask lazily).
    fn mark_last_null(&mut self) {
        let len = self.data.len();
        let nulls = self.nulls.get_or_insert_with(|| vec![false; len - 1]);
        nulls.push(true);
    }

    fn mark_last_valid(&mut self) {
        if let Some(n) = &mut self.nulls {
            n.push(false);
        }
    }

    pub fn push_null(&mut self) {
        self.data.push_default();
        self.mark_last_null();
    }

    /// Appends row `i` of `other` (same physical type), NULL or not.
    pub fn push_from(&mut self, other: &Vector, i: usize) {
        self.data.push_from(&other.data, i);
        if other.is_null(i) {
            self.mark_last_null();
        } else {
            self.mark_last_valid();
        }
    }

    /// Appends a value, which must already be of this vector's type (or NULL).
    /// Numeric values of another integer width are widened or narrowed exactly.
    pub fn push_value(&mut self, value: &Value) {
        if value.is_null() {
            self.push_null();
            return;
        }
        match (&mut self.data, value) {
            (Data::Bool(v), Value::Boolean(b)) => v.push(*b),
            (Data::I16(v), Value::SmallInt(x)) => v.push(*x),
            (Data::I32(v), Value::Integer(x)) => v.push(*x),
            (Data::I32(v), Value::Date(d)) => v.push(d.0),
            (Data::I64(v), Value::BigInt(x)) => v.push(*x),
            (Data::I64(v), Value::Timestamp(t)) => v.push(t.0),
            (Data::F32(v), Value::Real(x)) => v.push(*x),
            (Data::F64(v), Value::Double(x)) => v.push(*x),
            (Data::Dec(v), Value::Decimal(d)) => v.push(*d),
            (data @ Data::Dec64(_), Value::Decimal(d)) => data.push_decimal(*d),
            (Data::Interval(v), Value::Interval(x)) => v.push(*x),
            (Data::Str(v), Value::Char(s) | Value::Varchar(s) | Value::Text(s)) => v.push(s),
            (data, value) => panic!(
                "value {value:?} pushed into a {:?} vector of type {}",
                data.physical_type(),
                self.ty
            ),
        }
        self.mark_last_valid();
    }

    /// Row `i` as a [`Value`] of the vector's type (slow path: results, constants).
    pub fn value(&self, i: usize) -> Value {
        if self.is_null(i) {
            return Value::Null;
        }
        match (&self.data, &self.ty) {
            (Data::Bool(v), _) => Value::Boolean(v[i]),
            (Data::I16(v), _) => Value::SmallInt(v[i]),
            (Data::I32(v), DataType::Date) => Value::Date(Date(v[i])),
            (Data::I32(v), _) => Value::Integer(v[i]),
            (Data::I64(v), DataType::Timestamp) => Value::Timestamp(Timestamp(v[i])),
            (Data::I64(v), _) => Value::BigInt(v[i]),
            (Data::F32(v), _) => Value::Real(v[i]),
            (Data::F64(v), _) => Value::Double(v[i]),
            (Data::Dec(v), _) => Value::Decimal(v[i]),
            (Data::Dec64(v), _) => Value::Decimal(v.get(i)),
            (Data::Interval(v), _) => Value::Interval(v[i]),
            (Data::Str(v), DataType::Char(_)) => Value::Char(v.get(i).to_string()),
            (Data::Str(v), DataType::Varchar(_)) => Value::Varchar(v.get(i).to_string()),
            (Data::Str(v), _) => Value::Text(v.get(i).to_string()),
        }
    }

    /// The rows of `self` at `positions`, in that order.
    pub fn gather(&self, positions: &[u32]) -> Vector {
        let mut out = Vector::new(self.ty, positions.len());
        out.data = gather_data(&self.data, positions);
        if let Some(n) = &self.nulls {
            let g: Vec<bool> = positions.iter().map(|&p| n[p as usize]).collect();
            if g.iter().any(|&b| b) {
                out.nulls = Some(g);
            }
        }
        out
    }

    /// Appends every row of `other` (same type).
    pub fn extend(&mut self, other: &Vector) {
        let start = self.len();
        match (&mut self.data, &other.data) {
            (Data::Dec64(a), Data::Dec64(b)) if a.scale == b.scale => {
                a.values.extend_from_slice(&b.values)
            }
            (Data::Dec(a), Data::Dec64(b)) => a.extend(b.to_decimals()),
            (a @ Data::Dec64(_), b @ (Data::Dec64(_) | Data::Dec(_))) => {
                for i in 0..b.len() {
                    a.push_from(b, i);
                }
            }
            (Data::Bool(a), Data::Bool(b)) => a.extend_from_slice(b),
            (Data::I16(a), Data::I16(b)) => a.extend_from_slice(b),
            (Data::I32(a), Data::I32(b)) => a.extend_from_slice(b),
            (Data::I64(a), Data::I64(b)) => a.extend_from_slice(b),
            (Data::F32(a), Data::F32(b)) => a.extend_from_slice(b),
            (Data::F64(a), Data::F64(b)) => a.extend_from_slice(b),
            (Data::Dec(a), Data::Dec(b)) => a.extend_from_slice(b),
            (Data::Interval(a), Data::Interval(b)) => a.extend_from_slice(b),
            (Data::Str(a), Data::Str(b)) => a.extend(b),
            (a, b) => panic!(
                "extend between {:?} and {:?} vectors",
                a.physical_type(),
                b.physical_type()
            ),
        }
        match (&mut self.nulls, &other.nulls) {
            (Some(a), Some(b)) => a.extend_from_slice(b),
            (Some(a), None) => a.resize(start + other.len(), false),
            (None, Some(b)) => {
                let mut n = vec![false; start];
                n.extend_from_slice(b);
                self.nulls = Some(n);
            }
            (None, None) => {}
        }
    }

    pub fn heap_bytes(&self) -> usize {
        self.data.heap_bytes() + self.nulls.as_ref().map_or(0, |n| n.capacity())
    }
}

fn gather_data(data: &Data, positions: &[u32]) -> Data {
    fn g<T: Copy>(v: &[T], p: &[u32]) -> Vec<T> {
        p.iter().map(|&i| v[i as usize]).collect()
    }
    match data {
        Data::Bool(v) => Data::Bool(g(v, positions)),
        Data::I16(v) => Data::I16(g(v, positions)),
        Data::I32(v) => Data::I32(g(v, positions)),
        Data::I64(v) => Data::I64(g(v, positions)),
        Data::F32(v) => Data::F32(g(v, positions)),
        Data::F64(v) => Data::F64(g(v, positions)),
        Data::Dec(v) => Data::Dec(g(v, positions)),
        Data::Dec64(v) => Data::Dec64(Dec64Vec {
            scale: v.scale,
            values: g(&v.values, positions),
        }),
        Data::Interval(v) => Data::Interval(g(v, positions)),
        Data::Str(v) => {
            let mut out = StrVec::with_capacity(positions.len(), positions.len() * 8);
            for &p in positions {
                out.push(v.get(p as usize));
            }
            Data::Str(out)
        }
    }
}

/// A set of column vectors of equal length, with an optional selection vector.
#[derive(Debug, Clone, PartialEq)]
pub struct Batch {
    pub columns: Vec<Vector>,
    /// Physical rows in every column.
    pub len: usize,
    /// Positions (ascending) of the live rows; `None` means all `len` rows.
    pub sel: Option<Vec<u32>>,
}

impl Batch {
    pub fn new(columns: Vec<Vector>, len: usize) -> Batch {
        debug_assert!(columns.iter().all(|c| c.len() == len));
        Batch {
            columns,
            len,
            sel: None,
        }
    }

    /// A batch of `len` rows and no columns (`SELECT 1` without FROM, `count(*)`).
    pub fn empty_rows(len: usize) -> Batch {
        Batch {
            columns: Vec::new(),
            len,
            sel: None,
        }
    }

    /// Number of live rows.
    pub fn rows(&self) -> usize {
        self.sel.as_ref().map_or(self.len, |s| s.len())
    }

    /// Physical position of the `k`-th live row.
    #[inline]
    pub fn position(&self, k: usize) -> usize {
        match &self.sel {
            Some(s) => s[k] as usize,
            None => k,
        }
    }

    /// The live rows, densely: no selection vector.
    pub fn compact(self) -> Batch {
        match &self.sel {
            None => self,
            Some(sel) => {
                let columns = self.columns.iter().map(|c| c.gather(sel)).collect();
                Batch::new(columns, sel.len())
            }
        }
    }

    /// Row `k` of the live rows as values (slow path: results).
    pub fn row_values(&self, k: usize) -> Vec<Value> {
        let p = self.position(k);
        self.columns.iter().map(|c| c.value(p)).collect()
    }

    pub fn heap_bytes(&self) -> usize {
        self.columns.iter().map(|c| c.heap_bytes()).sum::<usize>()
            + self.sel.as_ref().map_or(0, |s| s.capacity() * 4)
    }
}
