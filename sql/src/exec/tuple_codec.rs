//! The generic tuple codec: SQL rows ↔ the stored tuple format of a table (see the
//! table in `catalog::physical`), and SQL values → index keys.
//!
//! This is the generic twin of the relation bees in the engine: with bees off, and for
//! tuples a bee hands back, [`RowDecoder`] decodes and [`EncodedRow`] encodes; with
//! bees on, deform and form bees do (`crate::bees`), using this module's one
//! conversion each way (`push_attr` from stored bytes, [`encode_value_into`] to
//! them) so both paths produce the same values. [`decode_row`] is the slow path into
//! values; [`index_key`] / [`index_prefix`] make keys.

use beedb_storage::PageRead;
use beedb_storage::btree::key_encoding::{self, KeyValue};
use beedb_storage::heap::HeapFile;
use beedb_storage::tuple::{Attr, AttrValue};

use crate::catalog::{IndexDef, TableDef, index_key_spec};
use crate::error::{Error, Result};
use crate::types::text::bpchar_trim;
use crate::types::{DataType, Date, Decimal, Interval, Timestamp, Value};
use crate::vector::{Data, PhysicalType, Vector};

pub use crate::catalog::UNCONSTRAINED_KEY_SCALE;

fn bad_value(v: &Value, ty: &DataType) -> Error {
    Error::internal(format!("value {v:?} stored into a column of type {ty}"))
}

/// One row encoded attribute by attribute into one buffer, ready for the heap.
pub struct EncodedRow {
    buf: Vec<u8>,
    /// Each attribute's bytes in `buf`; `None` is NULL.
    spans: Vec<Option<(usize, usize)>>,
    fixed: Vec<bool>,
}

impl EncodedRow {
    /// Encodes `row` (values already of the column types; NULLs allowed) for `table`.
    pub fn encode(table: &TableDef, row: &[Value]) -> Result<EncodedRow> {
        // About the bytes the row takes, so the buffer is allocated once instead of
        // growing through reallocations (a TP1 row: four of them).
        let bytes: usize = row
            .iter()
            .map(|v| match v {
                Value::Char(s) | Value::Varchar(s) | Value::Text(s) => s.len(),
                Value::Null => 0,
                Value::Decimal(_) | Value::Interval(_) => 17,
                _ => 8,
            })
            .sum();
        let mut enc = EncodedRow {
            buf: Vec::with_capacity(bytes),
            spans: Vec::with_capacity(row.len()),
            fixed: Vec::with_capacity(row.len()),
        };
        enc.encode_into(table, row)?;
        Ok(enc)
    }

    /// Re-encodes into this row's buffers (no allocation once they are large enough).
    pub fn encode_into(&mut self, table: &TableDef, row: &[Value]) -> Result<()> {
        if row.len() != table.columns.len() {
            return Err(Error::internal(format!(
                "row of {} values for table \"{}\" of {} columns",
                row.len(),
                table.name,
                table.columns.len()
            )));
        }
        self.buf.clear();
        self.spans.clear();
        self.fixed.clear();
        for (i, (v, c)) in row.iter().zip(&table.columns).enumerate() {
            self.fixed.push(table.layout.column(i).fixed_width().is_some());
            let start = self.buf.len();
            let present = encode_value_into(v, &c.ty, &mut self.buf)?;
            self.spans.push(present.then_some((start, self.buf.len())));
        }
        Ok(())
    }

    /// Attribute `i`'s stored bytes, `None` for NULL.
    pub fn attr(&self, i: usize) -> Option<&[u8]> {
        self.spans[i].map(|(s, e)| &self.buf[s..e])
    }

    /// The attribute values the heap takes.
    pub fn attrs(&self) -> Vec<AttrValue<'_>> {
        (0..self.spans.len())
            .map(|i| match self.attr(i) {
                None => AttrValue::Null,
                Some(b) if self.fixed[i] => AttrValue::Fixed(b),
                Some(b) => AttrValue::Variable(b),
            })
            .collect()
    }
}

fn int_of(v: &Value) -> Option<i64> {
    match v {
        Value::SmallInt(x) => Some(*x as i64),
        Value::Integer(x) => Some(*x as i64),
        Value::BigInt(x) => Some(*x),
        _ => None,
    }
}

/// Appends one value's stored bytes to `out`; `false` (and nothing appended) for NULL.
/// This is the one conversion from values to stored bytes: the generic encoder and
/// the form bee's input both use it.
pub fn encode_value_into(v: &Value, ty: &DataType, out: &mut Vec<u8>) -> Result<bool> {
    if v.is_null() {
        return Ok(false);
    }
    match (ty, v) {
        (DataType::Boolean, Value::Boolean(b)) => out.push(*b as u8),
        (DataType::SmallInt, _) => {
            let x = int_of(v).ok_or_else(|| bad_value(v, ty))?;
            let x = i16::try_from(x).map_err(|_| Error::data("22003", "smallint out of range"))?;
            out.extend_from_slice(&x.to_le_bytes());
        }
        (DataType::Integer, _) => {
            let x = int_of(v).ok_or_else(|| bad_value(v, ty))?;
            let x = i32::try_from(x).map_err(|_| Error::data("22003", "integer out of range"))?;
            out.extend_from_slice(&x.to_le_bytes());
        }
        (DataType::BigInt, _) => {
            let x = int_of(v).ok_or_else(|| bad_value(v, ty))?;
            out.extend_from_slice(&x.to_le_bytes());
        }
        (DataType::Date, Value::Date(d)) => out.extend_from_slice(&d.0.to_le_bytes()),
        (DataType::Timestamp, Value::Timestamp(t)) => out.extend_from_slice(&t.0.to_le_bytes()),
        (DataType::Real, Value::Real(x)) => out.extend_from_slice(&x.to_le_bytes()),
        (DataType::Double, Value::Double(x)) => out.extend_from_slice(&x.to_le_bytes()),
        (DataType::Decimal { precision, scale }, _) => {
            let d = match v {
                Value::Decimal(d) => *d,
                _ => Decimal::from_i64(int_of(v).ok_or_else(|| bad_value(v, ty))?),
            };
            match precision {
                Some(p) => {
                    let d = d.apply_typmod(*p, *scale)?;
                    out.extend_from_slice(&d.unscaled().to_le_bytes());
                }
                None => {
                    out.extend_from_slice(&d.unscaled().to_le_bytes());
                    out.push(d.scale());
                }
            }
        }
        (DataType::Interval, Value::Interval(i)) => {
            out.extend_from_slice(&i.months.to_le_bytes());
            out.extend_from_slice(&i.days.to_le_bytes());
            out.extend_from_slice(&i.micros.to_le_bytes());
        }
        (
            DataType::Char(_) | DataType::Varchar(_) | DataType::Text,
            Value::Char(s) | Value::Varchar(s) | Value::Text(s),
        ) => out.extend_from_slice(s.as_bytes()),
        _ => return Err(bad_value(v, ty)),
    }
    Ok(true)
}

fn corrupt(what: &str) -> Error {
    Error::internal(format!("corrupt stored value: {what}"))
}

fn fixed<const N: usize>(b: &[u8]) -> Result<[u8; N]> {
    b.try_into().map_err(|_| corrupt("wrong width"))
}

/// The bytes of an attribute, fetching out-of-line values; `None` for NULL.
fn attr_bytes<'t, R: PageRead + ?Sized>(
    r: &R,
    a: Attr<'t>,
    buf: &'t mut Vec<u8>,
) -> Result<Option<&'t [u8]>> {
    match a {
        Attr::Null => Ok(None),
        Attr::Bytes(b) => Ok(Some(b)),
        Attr::External { len, first_page } => {
            *buf = HeapFile::fetch_external(r, len, first_page)?;
            Ok(Some(&buf[..]))
        }
    }
}

fn decode_unconstrained(b: &[u8]) -> Result<Decimal> {
    if b.len() != 17 {
        return Err(corrupt("numeric"));
    }
    let u = i128::from_le_bytes(fixed(&b[..16])?);
    Ok(Decimal::new(u, b[16])?)
}

fn decode_interval(b: &[u8]) -> Result<Interval> {
    if b.len() != 16 {
        return Err(corrupt("interval"));
    }
    Ok(Interval::new(
        i32::from_le_bytes(fixed(&b[0..4])?),
        i32::from_le_bytes(fixed(&b[4..8])?),
        i64::from_le_bytes(fixed(&b[8..16])?),
    ))
}

fn utf8(b: &[u8]) -> Result<&str> {
    std::str::from_utf8(b).map_err(|_| corrupt("invalid UTF-8"))
}

/// Pushes one stored attribute onto a vector of its column's type.
pub(crate) fn push_attr(out: &mut Vector, b: Option<&[u8]>) -> Result<()> {
    let Some(b) = b else {
        out.push_null();
        return Ok(());
    };
    let ty = out.ty;
    match &mut out.data {
        Data::Bool(v) => v.push(*b.first().ok_or_else(|| corrupt("boolean"))? != 0),
        Data::I16(v) => v.push(i16::from_le_bytes(fixed(b)?)),
        Data::I32(v) => v.push(i32::from_le_bytes(fixed(b)?)),
        Data::I64(v) => v.push(i64::from_le_bytes(fixed(b)?)),
        Data::F32(v) => v.push(f32::from_le_bytes(fixed(b)?)),
        Data::F64(v) => v.push(f64::from_le_bytes(fixed(b)?)),
        Data::Dec(v) => match ty {
            DataType::Decimal {
                precision: Some(_),
                scale,
            } => v.push(Decimal::new(i128::from_le_bytes(fixed(b)?), scale)?),
            _ => v.push(decode_unconstrained(b)?),
        },
        Data::Dec64(_) => {
            let d = match ty {
                DataType::Decimal {
                    precision: Some(_),
                    scale,
                } => Decimal::new(i128::from_le_bytes(fixed(b)?), scale)?,
                _ => decode_unconstrained(b)?,
            };
            out.data.push_decimal(d);
        }
        Data::Interval(v) => v.push(decode_interval(b)?),
        Data::Str(v) => v.push(utf8(b)?),
    }
    if let Some(n) = &mut out.nulls {
        n.push(false);
    }
    Ok(())
}

/// Decodes chosen columns of a table's stored tuples straight into column vectors.
pub struct RowDecoder {
    /// Table column positions to decode, in output order.
    pub columns: Vec<usize>,
    pub types: Vec<DataType>,
    natts: usize,
    /// See [`Picking::by_attribute`].
    by_attribute: bool,
}

/// How the attributes of chosen columns are found in a stored tuple.
struct Picking<'c> {
    columns: &'c [usize],
    natts: usize,
    /// Whether the columns are read one by one ([`TupleLayout::attributes`]): when
    /// they are few, or all at fixed offsets, where they are read where they lie;
    /// otherwise one deform up to the last column finds them all in one walk over
    /// the variable-width attributes.
    ///
    /// [`TupleLayout::attributes`]: beedb_storage::tuple::TupleLayout::attributes
    by_attribute: bool,
}

impl<'c> Picking<'c> {
    fn of(table: &TableDef, columns: &'c [usize]) -> Picking<'c> {
        let layout = &table.layout;
        Picking {
            columns,
            natts: table.columns.len(),
            by_attribute: columns.len() <= 2
                || columns.iter().all(|&c| c < layout.natts() && layout.fixed_offset(c).is_some()),
        }
    }

    /// How many attributes a deform must produce to reach the last column (0 when
    /// the columns are read one by one): the size of [`Self::locate`]'s `row`.
    fn deform_len(&self) -> usize {
        if self.by_attribute { 0 } else { self.columns.iter().max().map_or(0, |&c| c + 1).min(self.natts) }
    }

    /// The attributes of `tuple` for the columns, in output order, into `picked`
    /// (one per column); `row` holds [`Self::deform_len`] attributes.
    fn locate<'t>(&self, table: &TableDef, tuple: &'t [u8], row: &mut [Attr<'t>], picked: &mut [Attr<'t>]) -> Result<()> {
        if self.by_attribute {
            table.layout.attributes(tuple, self.columns, picked)?;
            return Ok(());
        }
        table.layout.deform(tuple, row)?;
        for (p, &c) in picked.iter_mut().zip(self.columns) {
            *p = row[c];
        }
        Ok(())
    }

    /// Calls `f` with the attributes of `tuple` for the columns, in output order.
    fn with_attributes(&self, table: &TableDef, tuple: &[u8], f: impl FnOnce(&[Attr<'_>]) -> Result<()>) -> Result<()> {
        // On the stack when the relation is not wide (no allocation per tuple).
        let (mut row_stack, mut picked_stack) = ([Attr::Null; 32], [Attr::Null; 32]);
        let (mut row_heap, mut picked_heap) = (Vec::new(), Vec::new());
        let (rows, k) = (self.deform_len(), self.columns.len());
        let row: &mut [Attr<'_>] = if rows <= 32 {
            &mut row_stack[..rows]
        } else {
            row_heap.resize(rows, Attr::Null);
            &mut row_heap
        };
        let picked: &mut [Attr<'_>] = if k <= 32 {
            &mut picked_stack[..k]
        } else {
            picked_heap.resize(k, Attr::Null);
            &mut picked_heap
        };
        self.locate(table, tuple, row, picked)?;
        f(picked)
    }
}

impl RowDecoder {
    pub fn new(table: &TableDef, columns: &[usize]) -> RowDecoder {
        let by_attribute = Picking::of(table, columns).by_attribute;
        RowDecoder {
            columns: columns.to_vec(),
            types: columns.iter().map(|&c| table.columns[c].ty).collect(),
            natts: table.columns.len(),
            by_attribute,
        }
    }

    fn picking(&self) -> Picking<'_> {
        Picking { columns: &self.columns, natts: self.natts, by_attribute: self.by_attribute }
    }

    /// Empty output vectors with room for `cap` rows.
    pub fn new_vectors(&self, cap: usize) -> Vec<Vector> {
        self.types.iter().map(|t| Vector::new(*t, cap)).collect()
    }

    /// Appends the decoded columns of `tuple` to `out` (one vector per column).
    pub fn decode_into<R: PageRead + ?Sized>(
        &self,
        r: &R,
        table: &TableDef,
        tuple: &[u8],
        out: &mut [Vector],
    ) -> Result<()> {
        self.picking().with_attributes(table, tuple, |picked| {
            let mut buf = Vec::new();
            for (col, &a) in out.iter_mut().zip(picked.iter()) {
                push_attr(col, attr_bytes(r, a, &mut buf)?)?;
            }
            Ok(())
        })
    }
}

/// Appends the `columns` of `tuple` (table column positions, in output order) to
/// `out` as values — the values [`RowDecoder::decode_into`] would put into one-row
/// vectors, read back — without making vectors or a decoder (no allocation but the
/// values' own): the point path's and DML's decoder of single tuples.
pub fn decode_values<R: PageRead + ?Sized>(
    r: &R,
    table: &TableDef,
    columns: &[usize],
    tuple: &[u8],
    out: &mut Vec<Value>,
) -> Result<()> {
    out.reserve(columns.len());
    Picking::of(table, columns).with_attributes(table, tuple, |picked| {
        let mut buf = Vec::new();
        for (&c, &a) in columns.iter().zip(picked.iter()) {
            out.push(attr_value(&table.columns[c].ty, attr_bytes(r, a, &mut buf)?)?);
        }
        Ok(())
    })
}

/// One stored attribute (`None`: NULL) of a column of type `ty` as a value: what
/// [`push_attr`] into a vector of that type, then [`Vector::value`], gives.
fn attr_value(ty: &DataType, b: Option<&[u8]>) -> Result<Value> {
    use crate::vector::PhysicalType as P;
    let Some(b) = b else { return Ok(Value::Null) };
    Ok(match PhysicalType::of(ty) {
        P::Bool => Value::Boolean(*b.first().ok_or_else(|| corrupt("boolean"))? != 0),
        P::I16 => Value::SmallInt(i16::from_le_bytes(fixed(b)?)),
        P::I32 if *ty == DataType::Date => Value::Date(Date(i32::from_le_bytes(fixed(b)?))),
        P::I32 => Value::Integer(i32::from_le_bytes(fixed(b)?)),
        P::I64 if *ty == DataType::Timestamp => Value::Timestamp(Timestamp(i64::from_le_bytes(fixed(b)?))),
        P::I64 => Value::BigInt(i64::from_le_bytes(fixed(b)?)),
        P::F32 => Value::Real(f32::from_le_bytes(fixed(b)?)),
        P::F64 => Value::Double(f64::from_le_bytes(fixed(b)?)),
        P::Dec => {
            let d = match ty {
                DataType::Decimal { precision: Some(_), scale } => Decimal::new(i128::from_le_bytes(fixed(b)?), *scale)?,
                _ => decode_unconstrained(b)?,
            };
            // A vector of a numeric(p ≤ 18, s) holds it as an integer at scale s.
            Value::Decimal(match crate::vector::dec64_scale(ty) {
                Some(s) => d.to_scaled_i64(s).map_or(d, |x| Decimal::from_scaled_i64(x, s)),
                None => d,
            })
        }
        P::Interval => Value::Interval(decode_interval(b)?),
        P::Str => {
            let s = utf8(b)?.to_string();
            match ty {
                DataType::Char(_) => Value::Char(s),
                DataType::Varchar(_) => Value::Varchar(s),
                _ => Value::Text(s),
            }
        }
    })
}

impl RowDecoder {
    /// Appends the decoded columns of a run of tuples (`items` give each tuple's
    /// bounds in `buf`, e.g. one page's) to `out`, as [`Self::decode_into`] would one
    /// by one. The attributes of every tuple are located first; then each column is
    /// appended over the whole run with one dispatch on its type, in a loop the
    /// compiler specializes, instead of one dispatch per value — how a vectorized
    /// engine's generic path turns rows into columns.
    pub fn decode_run<R: PageRead + ?Sized, T>(
        &self,
        r: &R,
        table: &TableDef,
        items: &[(T, usize, usize)],
        buf: &[u8],
        out: &mut [Vector],
    ) -> Result<()> {
        let (n, k) = (items.len(), self.columns.len());
        if n == 0 || k == 0 {
            return Ok(());
        }
        // Column-major: the attribute of column `j` in tuple `i` is `attrs[j * n + i]`.
        let mut attrs = vec![Attr::Null; n * k];
        let mut row = vec![Attr::Null; self.picking().deform_len()];
        let mut picked = vec![Attr::Null; k];
        for (i, &(_, s, e)) in items.iter().enumerate() {
            let tuple = buf.get(s..e).ok_or_else(|| corrupt("tuple bounds"))?;
            self.picking().locate(table, tuple, &mut row, &mut picked)?;
            for (j, &a) in picked.iter().enumerate() {
                attrs[j * n + i] = a;
            }
        }
        let mut external = Vec::new();
        for (j, col) in out.iter_mut().enumerate().take(k) {
            let run = &attrs[j * n..(j + 1) * n];
            let done = push_inline_run(col, run)?;
            for &a in &run[done..] {
                push_attr(col, attr_bytes(r, a, &mut external)?)?;
            }
        }
        Ok(())
    }
}

/// Appends the leading attributes of `run` that are stored inline and not NULL to
/// `col` with one type dispatch; returns how many it appended (the rest go through
/// [`push_attr`] one by one: NULLs, out-of-line values, types without a loop here).
fn push_inline_run(col: &mut Vector, run: &[Attr<'_>]) -> Result<usize> {
    let inline = run.iter().take_while(|a| matches!(a, Attr::Bytes(_))).count();
    let bytes = || {
        run[..inline].iter().map(|a| match a {
            Attr::Bytes(b) => *b,
            _ => unreachable!("counted as inline above"),
        })
    };
    macro_rules! fixed_run {
        ($v:expr, $t:ty) => {{
            $v.reserve(inline);
            for b in bytes() {
                $v.push(<$t>::from_le_bytes(fixed(b)?));
            }
            inline
        }};
    }
    let ty = col.ty;
    let pushed = match &mut col.data {
        Data::I16(v) => fixed_run!(v, i16),
        Data::I32(v) => fixed_run!(v, i32),
        Data::I64(v) => fixed_run!(v, i64),
        Data::F32(v) => fixed_run!(v, f32),
        Data::F64(v) => fixed_run!(v, f64),
        Data::Str(v) => {
            for b in bytes() {
                v.push(utf8(b)?);
            }
            inline
        }
        // numeric(p, s) with p ≤ 18 is stored as an i128 at scale s: it fits an i64
        // unless the stored value is damaged; from the first that does not, the
        // values go one by one (which widens the vector or reports the damage).
        Data::Dec64(v) if matches!(ty, DataType::Decimal { precision: Some(_), scale } if scale == v.scale) => {
            v.values.reserve(inline);
            let mut pushed = 0;
            for b in bytes() {
                match i64::try_from(i128::from_le_bytes(fixed(b)?)) {
                    Ok(x) => v.values.push(x),
                    Err(_) => break,
                }
                pushed += 1;
            }
            pushed
        }
        _ => 0,
    };
    if let Some(nulls) = &mut col.nulls {
        nulls.resize(nulls.len() + pushed, false);
    }
    Ok(pushed)
}

/// Decodes a whole stored tuple into values (DML, index builds).
pub fn decode_row<R: PageRead + ?Sized>(
    r: &R,
    table: &TableDef,
    tuple: &[u8],
) -> Result<Vec<Value>> {
    let all: Vec<usize> = (0..table.columns.len()).collect();
    let mut row = Vec::new();
    decode_values(r, table, &all, tuple, &mut row)?;
    Ok(row)
}

/// Why a value could not become a key of its column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyMiss {
    /// The value lies between two representable keys (e.g. `1.555` for a
    /// `numeric(5,2)` column): `below` and `above` are the neighbours.
    Between,
    /// Above every representable key.
    TooLarge,
    /// Below every representable key.
    TooSmall,
}

/// An owned key value (what [`KeyValue`] borrows from).
#[derive(Debug, Clone, PartialEq)]
pub enum OwnedKey {
    Null,
    Bool(bool),
    I16(i16),
    I32(i32),
    I64(i64),
    F32(f32),
    F64(f64),
    Dec(i128),
    Date(i32),
    Ts(i64),
    Interval(Interval),
    Text(String),
}

impl OwnedKey {
    pub fn as_key_value(&self) -> KeyValue<'_> {
        match self {
            OwnedKey::Null => KeyValue::Null,
            OwnedKey::Bool(b) => KeyValue::Bool(*b),
            OwnedKey::I16(x) => KeyValue::Int16(*x),
            OwnedKey::I32(x) => KeyValue::Int32(*x),
            OwnedKey::I64(x) => KeyValue::Int64(*x),
            OwnedKey::F32(x) => KeyValue::Float32(*x),
            OwnedKey::F64(x) => KeyValue::Float64(*x),
            OwnedKey::Dec(u) => KeyValue::Decimal { unscaled: *u },
            OwnedKey::Date(d) => KeyValue::Date(*d),
            OwnedKey::Ts(t) => KeyValue::Timestamp(*t),
            OwnedKey::Interval(i) => KeyValue::Interval {
                months: i.months,
                days: i.days,
                micros: i.micros,
            },
            OwnedKey::Text(s) => KeyValue::Text(s),
        }
    }
}

/// The scale a decimal column is keyed at.
pub fn key_scale(ty: &DataType) -> u8 {
    match ty {
        DataType::Decimal {
            precision: Some(_),
            scale,
        } => *scale,
        _ => UNCONSTRAINED_KEY_SCALE,
    }
}

/// The key of `v` in a column of type `ty`. For decimals that do not land exactly on
/// the key scale, `round` decides: `None` → `Err(KeyMiss::Between)`, `Some(true)` →
/// round up, `Some(false)` → round down.
pub fn key_of(
    v: &Value,
    ty: &DataType,
    round: Option<bool>,
) -> Result<std::result::Result<OwnedKey, KeyMiss>> {
    if v.is_null() {
        return Ok(Ok(OwnedKey::Null));
    }
    let mismatch = || Error::internal(format!("index key {v:?} for a column of type {ty}"));
    let int_key = |min: i64, max: i64| -> Result<std::result::Result<i64, KeyMiss>> {
        let x = int_of(v).ok_or_else(mismatch)?;
        Ok(if x < min {
            Err(KeyMiss::TooSmall)
        } else if x > max {
            Err(KeyMiss::TooLarge)
        } else {
            Ok(x)
        })
    };
    Ok(Ok(match (ty, v) {
        (DataType::Boolean, Value::Boolean(b)) => OwnedKey::Bool(*b),
        (DataType::SmallInt, _) => match int_key(i16::MIN as i64, i16::MAX as i64)? {
            Ok(x) => OwnedKey::I16(x as i16),
            Err(m) => return Ok(Err(m)),
        },
        (DataType::Integer, _) => match int_key(i32::MIN as i64, i32::MAX as i64)? {
            Ok(x) => OwnedKey::I32(x as i32),
            Err(m) => return Ok(Err(m)),
        },
        (DataType::BigInt, _) => OwnedKey::I64(int_of(v).ok_or_else(mismatch)?),
        (DataType::Real, Value::Real(x)) => OwnedKey::F32(*x),
        (DataType::Double, Value::Double(x)) => OwnedKey::F64(*x),
        (DataType::Double, Value::Real(x)) => OwnedKey::F64(*x as f64),
        (DataType::Date, Value::Date(Date(d))) => OwnedKey::Date(*d),
        (DataType::Timestamp, Value::Timestamp(Timestamp(t))) => OwnedKey::Ts(*t),
        (DataType::Interval, Value::Interval(i)) => OwnedKey::Interval(*i),
        (DataType::Decimal { .. }, _) => {
            let d = match v {
                Value::Decimal(d) => *d,
                _ => Decimal::from_i64(int_of(v).ok_or_else(mismatch)?),
            };
            let scale = key_scale(ty);
            let r = match d.rescale(scale) {
                Ok(r) => r,
                Err(_) => {
                    return Ok(Err(if d.is_negative() {
                        KeyMiss::TooSmall
                    } else {
                        KeyMiss::TooLarge
                    }));
                }
            };
            let mut u = r.unscaled();
            if r != d {
                match round {
                    None => return Ok(Err(KeyMiss::Between)),
                    Some(up) => {
                        // `rescale` rounded half away from zero; step to the wanted side.
                        if up && r < d {
                            u += 1;
                        } else if !up && r > d {
                            u -= 1;
                        }
                    }
                }
            }
            OwnedKey::Dec(u)
        }
        (DataType::Char(_), Value::Char(s) | Value::Varchar(s) | Value::Text(s)) => {
            OwnedKey::Text(bpchar_trim(s).to_string())
        }
        (DataType::Varchar(_) | DataType::Text, Value::Char(s)) => {
            OwnedKey::Text(bpchar_trim(s).to_string())
        }
        (DataType::Varchar(_) | DataType::Text, Value::Varchar(s) | Value::Text(s)) => {
            OwnedKey::Text(s.clone())
        }
        _ => return Err(mismatch()),
    }))
}

/// The keys of the index columns of a full table row.
fn row_keys(table: &TableDef, index: &IndexDef, row: &[Value]) -> Result<Vec<OwnedKey>> {
    index
        .columns
        .iter()
        .map(|&c| {
            let ty = &table.columns[c].ty;
            match key_of(&row[c], ty, None)? {
                Ok(k) => Ok(k),
                Err(_) => Err(Error::data(
                    "22003",
                    format!(
                        "value {} of column \"{}\" cannot be indexed: it does not fit the index key scale",
                        row[c], table.columns[c].name
                    ),
                )),
            }
        })
        .collect()
}

/// The B+tree key of a table row (all columns) in `index`.
pub fn index_key(table: &TableDef, index: &IndexDef, row: &[Value]) -> Result<Vec<u8>> {
    let keys = row_keys(table, index, row)?;
    let kv: Vec<KeyValue<'_>> = keys.iter().map(OwnedKey::as_key_value).collect();
    let mut out = Vec::new();
    key_encoding::encode(&index_key_spec(table, index), &kv, &mut out)?;
    Ok(out)
}

/// Whether any key column of `index` is NULL in `row`.
pub fn key_has_null(index: &IndexDef, row: &[Value]) -> bool {
    index.columns.iter().any(|&c| row[c].is_null())
}

/// Encodes the first `keys.len()` key columns of `index` (for scan bounds).
pub fn index_prefix(table: &TableDef, index: &IndexDef, keys: &[OwnedKey]) -> Result<Vec<u8>> {
    let kv: Vec<KeyValue<'_>> = keys.iter().map(OwnedKey::as_key_value).collect();
    let mut out = Vec::new();
    key_encoding::encode_prefix(&index_key_spec(table, index), &kv, &mut out)?;
    Ok(out)
}
