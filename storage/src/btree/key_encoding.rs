//! Order-preserving byte encoding of composite B+tree keys.
//!
//! A B+tree compares keys at every step of every search, split and range scan. It
//! compares them as plain byte strings (`<[u8]>::cmp`, i.e. memcmp): no type dispatch,
//! no decoding, one comparison for leaf keys, separator keys and range bounds alike, and
//! separators can be shortened byte-wise. This module turns a list of typed column
//! values into such a byte string, so that for two keys `a` and `b` of one [`KeySpec`]
//!
//! ```text
//! encode(a).cmp(&encode(b)) == the order of (a, b) under the spec's ASC/DESC and NULLS FIRST/LAST
//! ```
//!
//! where the order of each kind is PostgreSQL's: `false < true`; integers, dates and
//! timestamps numerically; floats numerically with `-0.0 == 0.0` and every NaN equal to
//! every other NaN and greater than `+inf`; intervals by their total span with
//! 1 month = 30 days and 1 day = 24 hours (so `'1 month' = '30 days'`); text bytewise on
//! its UTF-8 (the C collation); bytes bytewise. NULL equals NULL and sorts after every
//! value (`NULLS LAST`) or before it (`NULLS FIRST`) *in the final order*, whatever the
//! column's direction; the default is PostgreSQL's, `ASC NULLS LAST` and
//! `DESC NULLS FIRST` ([`KeyColumn::asc`], [`KeyColumn::desc`]).
//!
//! The storage crate knows no SQL types: the caller maps each SQL type onto a
//! [`KeyKind`] and converts values (e.g. casts, collation keys) before encoding.
//!
//! # Layout
//!
//! A key is the concatenation of its columns' encodings, with no header and no lengths.
//! Each column:
//!
//! | offset | size | field   | meaning                                                                              |
//! |-------:|-----:|---------|--------------------------------------------------------------------------------------|
//! | 0      | 1    | tag     | `0x01` NULL in a NULLS FIRST column, `0x02` not NULL, `0x03` NULL in a NULLS LAST column |
//! | 1      | n    | payload | the value, by kind (table below); absent for NULL; every byte inverted (`!b`) if DESC |
//!
//! Payload by kind, in its ascending form (`flip(x)` = `x` with its sign bit inverted,
//! i.e. two's complement turned into offset binary; all multi-byte fields big-endian):
//!
//! | kind                   | size | payload                                                                                  |
//! |------------------------|-----:|------------------------------------------------------------------------------------------|
//! | `Bool`                 | 1    | `0x00` false, `0x01` true                                                                |
//! | `Int16`                | 2    | `flip(i16)`                                                                              |
//! | `Int32`, `Date`        | 4    | `flip(i32)`; a date is days from an epoch the caller fixes                               |
//! | `Int64`, `Timestamp`   | 8    | `flip(i64)`; a timestamp is microseconds from an epoch the caller fixes                  |
//! | `Float32`              | 4    | IEEE bits `b` after `-0.0 → +0.0` and NaN → `0x7FC0_0000`; `b \| 0x8000_0000` if the sign is clear, else `!b` |
//! | `Float64`              | 8    | the same with 64 bits; NaN → `0x7FF8_0000_0000_0000`                                      |
//! | `Decimal`              | 16   | `flip(i128)` of the unscaled value                                                       |
//! | `Interval`             | 16   | `flip(i128)` of the span `(months * 30 + days) * 86_400_000_000 + micros`                |
//! | `Text`, `Bytes`        | ≥ 2  | the bytes, each `0x00` written as `0x00 0xFF`; then the terminator `0x00 0x01`           |
//!
//! Why it is laid out this way:
//!
//! - **Concatenation works because every column encoding is self-delimiting and
//!   prefix-free**: no encoding of a column is a proper prefix of another encoding of
//!   that column. Two keys then first differ inside the first column whose values
//!   differ, and there the column encodings alone decide. Fixed-width kinds are
//!   prefix-free trivially; strings end at the first `0x00 0x01`, which cannot occur
//!   inside an escaped string because every other `0x00` is followed by `0xFF`.
//! - **Strings**: at the first difference of two strings, a non-zero byte compares as
//!   itself, a `0x00` byte (`0x00 0xFF`) sorts below any non-zero byte, and the end of the
//!   shorter string (`0x00 0x01`) sorts below both, so a string sorts before its
//!   extensions (`"a" < "a\0" < "a\x01"`), exactly like `<[u8]>::cmp` on the raw bytes.
//! - **DESC inverts the payload**, which reverses memcmp order for any prefix-free set of
//!   byte strings (the first differing byte decides and inversion flips it). That is why
//!   strings have an explicit terminator rather than ending at the end of the key: with
//!   one, inversion still works (the escape becomes `0xFF 0x00`, the terminator
//!   `0xFF 0xFE`, so a DESC string sorts *after* its extensions, as it must).
//! - **The tag is not inverted**: SQL states NULLS FIRST/LAST in the final order,
//!   independently of the direction, so the tag is written in its final form. `0x00` and
//!   `0xFF` are never tags, leaving room below and above every column for bounds.
//! - **Integers**: flipping the sign bit maps two's complement onto unsigned order.
//! - **Floats**: with the sign bit set on non-negative numbers and all bits inverted on
//!   negative ones, IEEE bit patterns sort as their values (the "total order" trick).
//!   `-0.0` is stored as `+0.0` and every NaN as one positive quiet NaN, which the trick
//!   places above `+inf`; so the encoding has PostgreSQL's float order, not IEEE's.
//! - **Decimal**: an exact decimal is its unscaled integer. **Every value of one key
//!   column must use the same scale**, fixed by the caller (e.g. the declared scale of
//!   `NUMERIC(p, s)`): `1.5` is `150` at scale 2 and `1500` at scale 3, and the encoding
//!   cannot tell them apart.
//! - **Interval**: PostgreSQL orders (and equates) intervals by their span, so only the
//!   span is stored. Decoding returns an equivalent interval in justified form (see
//!   [`OwnedKeyValue::Interval`]), not necessarily the fields that were encoded. The span
//!   needs 74 bits; it is stored in 16 bytes like a decimal.
//!
//! # Prefixes and bounds
//!
//! [`encode_prefix`] encodes the first `k` columns. Because column encodings are
//! prefix-free, the encoding `P` of a prefix sorts before every full key that starts with
//! it (it is a proper prefix of their encodings), after every key whose first `k` columns
//! sort before it, and before every key whose first `k` columns sort after it.
//! [`prefix_successor`]`(P)` is the smallest byte string greater than every string that
//! starts with `P`; [`prefix_range`] combines the two into the bounds of a range scan for
//! `(c1, …, ck) = (v1, …, vk)`. The successor also gives strict bounds on the next column:
//! the keys with `c1 = v1 AND c2 > v2` are the keys `>= prefix_successor(encode_prefix([v1, v2]))`
//! and `< prefix_successor(encode_prefix([v1]))`.
//!
//! A key may be followed by more bytes (e.g. a [`crate::TupleId`] making the keys of a
//! non-unique index distinct); [`decode_leading`] returns where the key ends.

use std::ops::Bound;

use crate::error::{Error, Result};

/// Tag of a NULL in a NULLS FIRST column: below [`TAG_VALUE`].
const TAG_NULL_FIRST: u8 = 0x01;
/// Tag of a non-NULL value.
const TAG_VALUE: u8 = 0x02;
/// Tag of a NULL in a NULLS LAST column: above [`TAG_VALUE`].
const TAG_NULL_LAST: u8 = 0x03;

/// In an (ascending) string payload, `0x00` starts a two-byte sequence…
const STRING_ESCAPE: u8 = 0x00;
/// …which is an escaped `0x00` byte of the string when followed by this…
const STRING_ESCAPED_ZERO: u8 = 0xFF;
/// …and the end of the string when followed by this.
const STRING_TERMINATOR: u8 = 0x01;

const F32_SIGN: u32 = 1 << 31;
const F64_SIGN: u64 = 1 << 63;
/// The one NaN every `f32` NaN is stored as: positive, quiet, no payload. Spelled out
/// because Rust does not promise `f32::NAN`'s bit pattern.
const F32_CANONICAL_NAN: u32 = 0x7FC0_0000;
/// The one NaN every `f64` NaN is stored as.
const F64_CANONICAL_NAN: u64 = 0x7FF8_0000_0000_0000;

/// Microseconds in the day of an interval span (24 hours, no leap seconds).
pub const INTERVAL_MICROS_PER_DAY: i128 = 86_400_000_000;
/// Microseconds in the month of an interval span: 30 days, as PostgreSQL compares them.
pub const INTERVAL_MICROS_PER_MONTH: i128 = 30 * INTERVAL_MICROS_PER_DAY;
/// Smallest and largest spans an interval's fields can add up to. A stored span outside
/// them cannot come from [`encode`], so decoding one reports a malformed key.
const MIN_INTERVAL_SPAN: i128 = i32::MIN as i128 * INTERVAL_MICROS_PER_MONTH
    + i32::MIN as i128 * INTERVAL_MICROS_PER_DAY
    + i64::MIN as i128;
const MAX_INTERVAL_SPAN: i128 = i32::MAX as i128 * INTERVAL_MICROS_PER_MONTH
    + i32::MAX as i128 * INTERVAL_MICROS_PER_DAY
    + i64::MAX as i128;

/// The type of a key column, as far as ordering is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KeyKind {
    Bool,
    Int16,
    Int32,
    Int64,
    Float32,
    Float64,
    /// Exact decimal stored as its unscaled value; one scale per column, fixed by the
    /// caller (see the module documentation).
    Decimal,
    /// Days from an epoch; only the order of the `i32` matters.
    Date,
    /// Microseconds from an epoch; only the order of the `i64` matters.
    Timestamp,
    /// PostgreSQL-style interval, ordered by its span.
    Interval,
    /// UTF-8 text in bytewise (C collation) order.
    Text,
    /// Arbitrary bytes in bytewise order.
    Bytes,
}

impl KeyKind {
    /// Size of the payload of a non-NULL value, or `None` for the variable-width kinds.
    pub fn fixed_payload_size(self) -> Option<usize> {
        Some(match self {
            KeyKind::Bool => 1,
            KeyKind::Int16 => 2,
            KeyKind::Int32 | KeyKind::Date | KeyKind::Float32 => 4,
            KeyKind::Int64 | KeyKind::Timestamp | KeyKind::Float64 => 8,
            KeyKind::Decimal | KeyKind::Interval => 16,
            KeyKind::Text | KeyKind::Bytes => return None,
        })
    }
}

/// One column of a key: its kind, direction and where its NULLs go.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct KeyColumn {
    pub kind: KeyKind,
    /// Sort this column from greatest to smallest.
    pub descending: bool,
    /// NULLs come before every value in the final order (after them if false). Like in
    /// SQL, this is independent of `descending`.
    pub nulls_first: bool,
}

impl KeyColumn {
    /// `ASC NULLS LAST`, PostgreSQL's default for an ascending column.
    pub fn asc(kind: KeyKind) -> Self {
        KeyColumn {
            kind,
            descending: false,
            nulls_first: false,
        }
    }

    /// `DESC NULLS FIRST`, PostgreSQL's default for a descending column.
    pub fn desc(kind: KeyKind) -> Self {
        KeyColumn {
            kind,
            descending: true,
            nulls_first: true,
        }
    }

    /// The same column with `NULLS FIRST`.
    pub fn with_nulls_first(self) -> Self {
        KeyColumn {
            nulls_first: true,
            ..self
        }
    }

    /// The same column with `NULLS LAST`.
    pub fn with_nulls_last(self) -> Self {
        KeyColumn {
            nulls_first: false,
            ..self
        }
    }

    fn null_tag(self) -> u8 {
        if self.nulls_first {
            TAG_NULL_FIRST
        } else {
            TAG_NULL_LAST
        }
    }

    /// XOR mask applied to every payload byte: inversion for DESC.
    fn payload_mask(self) -> u8 {
        if self.descending { 0xFF } else { 0x00 }
    }
}

/// The columns of a key, in significance order.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct KeySpec {
    columns: Vec<KeyColumn>,
}

impl KeySpec {
    /// A key of `columns`; a key needs at least one column.
    pub fn new(columns: Vec<KeyColumn>) -> Result<Self> {
        if columns.is_empty() {
            return Err(Error::InvalidArgument(
                "a key needs at least one column".into(),
            ));
        }
        Ok(KeySpec { columns })
    }

    pub fn columns(&self) -> &[KeyColumn] {
        &self.columns
    }
}

/// A value to encode into one key column. [`KeyValue::Null`] fits every kind; any other
/// value must be of its column's kind exactly (the caller casts, the codec does not).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum KeyValue<'a> {
    Null,
    Bool(bool),
    Int16(i16),
    Int32(i32),
    Int64(i64),
    /// Any `f32`; `-0.0` is stored as `0.0` and every NaN as one NaN.
    Float32(f32),
    /// Any `f64`; `-0.0` is stored as `0.0` and every NaN as one NaN.
    Float64(f64),
    /// The unscaled integer of an exact decimal: `12.34` at scale 2 is `1234`. Every
    /// value of a column must use that column's one scale, which the caller fixes.
    Decimal {
        unscaled: i128,
    },
    /// Days from an epoch the caller fixes; `i32::MIN`/`MAX` can stand for ±infinity.
    Date(i32),
    /// Microseconds from an epoch the caller fixes; `i64::MIN`/`MAX` can stand for
    /// ±infinity.
    Timestamp(i64),
    /// Ordered by [`interval_span`]: `{ months: 1 }` equals `{ days: 30 }`.
    Interval {
        months: i32,
        days: i32,
        micros: i64,
    },
    /// UTF-8 text, ordered bytewise.
    Text(&'a str),
    Bytes(&'a [u8]),
}

/// A decoded key column: what [`KeyValue::normalized`] makes of the encoded value.
#[derive(Clone, Debug, PartialEq)]
pub enum OwnedKeyValue {
    Null,
    Bool(bool),
    Int16(i16),
    Int32(i32),
    Int64(i64),
    /// Never `-0.0`; a NaN is always the one canonical NaN.
    Float32(f32),
    /// Never `-0.0`; a NaN is always the one canonical NaN.
    Float64(f64),
    Decimal {
        unscaled: i128,
    },
    Date(i32),
    Timestamp(i64),
    /// Only the span is stored, so decoding yields the justified interval with that span:
    /// as many whole 30-day months as fit, then whole days, then microseconds, all with
    /// the span's sign (like PostgreSQL's `justify_interval`), except that months and days
    /// stop at the `i32` limits and the rest goes to the next field. Encoding it gives
    /// back the same bytes.
    Interval {
        months: i32,
        days: i32,
        micros: i64,
    },
    Text(String),
    Bytes(Vec<u8>),
}

/// The span PostgreSQL compares intervals by: 1 month = 30 days, 1 day = 24 hours.
pub fn interval_span(months: i32, days: i32, micros: i64) -> i128 {
    months as i128 * INTERVAL_MICROS_PER_MONTH
        + days as i128 * INTERVAL_MICROS_PER_DAY
        + micros as i128
}

/// Splits a span into justified interval fields (see [`OwnedKeyValue::Interval`]).
/// Exact for every span in `MIN_INTERVAL_SPAN..=MAX_INTERVAL_SPAN`: months take what
/// fits in an `i32`, days what fits of the rest, and the remainder is then within an
/// `i64` by the definition of those bounds.
fn justify_interval_span(span: i128) -> (i32, i32, i64) {
    let months = (span / INTERVAL_MICROS_PER_MONTH).clamp(i32::MIN as i128, i32::MAX as i128);
    let rest = span.saturating_sub(months * INTERVAL_MICROS_PER_MONTH);
    let days = (rest / INTERVAL_MICROS_PER_DAY).clamp(i32::MIN as i128, i32::MAX as i128);
    let micros = rest.saturating_sub(days * INTERVAL_MICROS_PER_DAY);
    (
        months as i32,
        days as i32,
        micros.clamp(i64::MIN as i128, i64::MAX as i128) as i64,
    )
}

impl KeyValue<'_> {
    /// The kind of the value, `None` for NULL (which fits every kind).
    pub fn kind(&self) -> Option<KeyKind> {
        Some(match self {
            KeyValue::Null => return None,
            KeyValue::Bool(_) => KeyKind::Bool,
            KeyValue::Int16(_) => KeyKind::Int16,
            KeyValue::Int32(_) => KeyKind::Int32,
            KeyValue::Int64(_) => KeyKind::Int64,
            KeyValue::Float32(_) => KeyKind::Float32,
            KeyValue::Float64(_) => KeyKind::Float64,
            KeyValue::Decimal { .. } => KeyKind::Decimal,
            KeyValue::Date(_) => KeyKind::Date,
            KeyValue::Timestamp(_) => KeyKind::Timestamp,
            KeyValue::Interval { .. } => KeyKind::Interval,
            KeyValue::Text(_) => KeyKind::Text,
            KeyValue::Bytes(_) => KeyKind::Bytes,
        })
    }

    /// The value [`decode`] returns for this one: floats without `-0.0` and with one
    /// NaN, intervals justified. Two values are equal in key order exactly when their
    /// normalized forms are equal (comparing floats by bits).
    pub fn normalized(&self) -> OwnedKeyValue {
        match *self {
            KeyValue::Null => OwnedKeyValue::Null,
            KeyValue::Bool(v) => OwnedKeyValue::Bool(v),
            KeyValue::Int16(v) => OwnedKeyValue::Int16(v),
            KeyValue::Int32(v) => OwnedKeyValue::Int32(v),
            KeyValue::Int64(v) => OwnedKeyValue::Int64(v),
            KeyValue::Float32(v) => OwnedKeyValue::Float32(f32::from_bits(canonical_f32_bits(v))),
            KeyValue::Float64(v) => OwnedKeyValue::Float64(f64::from_bits(canonical_f64_bits(v))),
            KeyValue::Decimal { unscaled } => OwnedKeyValue::Decimal { unscaled },
            KeyValue::Date(v) => OwnedKeyValue::Date(v),
            KeyValue::Timestamp(v) => OwnedKeyValue::Timestamp(v),
            KeyValue::Interval {
                months,
                days,
                micros,
            } => {
                let (months, days, micros) =
                    justify_interval_span(interval_span(months, days, micros));
                OwnedKeyValue::Interval {
                    months,
                    days,
                    micros,
                }
            }
            KeyValue::Text(s) => OwnedKeyValue::Text(s.to_owned()),
            KeyValue::Bytes(b) => OwnedKeyValue::Bytes(b.to_vec()),
        }
    }
}

impl OwnedKeyValue {
    /// Borrows the value for [`encode`].
    pub fn as_key_value(&self) -> KeyValue<'_> {
        match *self {
            OwnedKeyValue::Null => KeyValue::Null,
            OwnedKeyValue::Bool(v) => KeyValue::Bool(v),
            OwnedKeyValue::Int16(v) => KeyValue::Int16(v),
            OwnedKeyValue::Int32(v) => KeyValue::Int32(v),
            OwnedKeyValue::Int64(v) => KeyValue::Int64(v),
            OwnedKeyValue::Float32(v) => KeyValue::Float32(v),
            OwnedKeyValue::Float64(v) => KeyValue::Float64(v),
            OwnedKeyValue::Decimal { unscaled } => KeyValue::Decimal { unscaled },
            OwnedKeyValue::Date(v) => KeyValue::Date(v),
            OwnedKeyValue::Timestamp(v) => KeyValue::Timestamp(v),
            OwnedKeyValue::Interval {
                months,
                days,
                micros,
            } => KeyValue::Interval {
                months,
                days,
                micros,
            },
            OwnedKeyValue::Text(ref s) => KeyValue::Text(s),
            OwnedKeyValue::Bytes(ref b) => KeyValue::Bytes(b),
        }
    }

    /// The kind of the value, `None` for NULL.
    pub fn kind(&self) -> Option<KeyKind> {
        self.as_key_value().kind()
    }
}

fn canonical_f32_bits(v: f32) -> u32 {
    if v.is_nan() {
        F32_CANONICAL_NAN
    } else if v == 0.0 {
        0 // both zeros
    } else {
        v.to_bits()
    }
}

fn canonical_f64_bits(v: f64) -> u64 {
    if v.is_nan() {
        F64_CANONICAL_NAN
    } else if v == 0.0 {
        0
    } else {
        v.to_bits()
    }
}

/// Canonical IEEE bits → bits that sort like the value (ascending payload).
fn f32_order_bits(v: f32) -> u32 {
    let bits = canonical_f32_bits(v);
    if bits & F32_SIGN == 0 {
        bits | F32_SIGN
    } else {
        !bits
    }
}

fn f64_order_bits(v: f64) -> u64 {
    let bits = canonical_f64_bits(v);
    if bits & F64_SIGN == 0 {
        bits | F64_SIGN
    } else {
        !bits
    }
}

/// Inverse of [`f32_order_bits`]; `None` for patterns it never produces (`-0.0`, NaNs
/// other than the canonical one), so that every decodable key has one encoding.
fn f32_from_order_bits(stored: u32) -> Option<f32> {
    let bits = if stored & F32_SIGN != 0 {
        stored & !F32_SIGN
    } else {
        !stored
    };
    let v = f32::from_bits(bits);
    (bits == canonical_f32_bits(v)).then_some(v)
}

fn f64_from_order_bits(stored: u64) -> Option<f64> {
    let bits = if stored & F64_SIGN != 0 {
        stored & !F64_SIGN
    } else {
        !stored
    };
    let v = f64::from_bits(bits);
    (bits == canonical_f64_bits(v)).then_some(v)
}

/// Encodes a full key (one value per column of `spec`) and appends it to `out`.
///
/// Fails with [`Error::InvalidArgument`] if the number of values is not the number of
/// columns or a non-NULL value is not of its column's kind; `out` is then unchanged.
pub fn encode(spec: &KeySpec, values: &[KeyValue<'_>], out: &mut Vec<u8>) -> Result<()> {
    if values.len() != spec.columns.len() {
        return Err(Error::InvalidArgument(format!(
            "a key of {} columns was given {} values",
            spec.columns.len(),
            values.len()
        )));
    }
    encode_prefix(spec, values, out)
}

/// Encodes the first `values.len()` columns of a key (at most all of them) and appends
/// them to `out`. The result is the encoding of every full key with those leading
/// values, cut after the last given column: it sorts before all of them and is the
/// inclusive lower bound of a scan for them (see [`prefix_range`]). With every column
/// given it is the same as [`encode`].
///
/// Fails like [`encode`], or if more values than columns are given.
pub fn encode_prefix(spec: &KeySpec, values: &[KeyValue<'_>], out: &mut Vec<u8>) -> Result<()> {
    if values.len() > spec.columns.len() {
        return Err(Error::InvalidArgument(format!(
            "a key prefix of {} values is longer than the key's {} columns",
            values.len(),
            spec.columns.len()
        )));
    }
    let start = out.len();
    for (index, (column, value)) in spec.columns.iter().zip(values).enumerate() {
        if let Err(e) = encode_column(index, *column, value, out) {
            out.truncate(start);
            return Err(e);
        }
    }
    Ok(())
}

fn encode_column(
    index: usize,
    column: KeyColumn,
    value: &KeyValue<'_>,
    out: &mut Vec<u8>,
) -> Result<()> {
    let Some(kind) = value.kind() else {
        out.push(column.null_tag());
        return Ok(());
    };
    if kind != column.kind {
        return Err(Error::InvalidArgument(format!(
            "key column {index} is of kind {:?} but was given a {kind:?} value",
            column.kind
        )));
    }
    out.push(TAG_VALUE);
    let payload_start = out.len();
    match *value {
        KeyValue::Null => {} // handled above
        KeyValue::Bool(v) => out.push(u8::from(v)),
        KeyValue::Int16(v) => out.extend_from_slice(&(v as u16 ^ (1 << 15)).to_be_bytes()),
        KeyValue::Int32(v) | KeyValue::Date(v) => {
            out.extend_from_slice(&(v as u32 ^ (1 << 31)).to_be_bytes())
        }
        KeyValue::Int64(v) | KeyValue::Timestamp(v) => {
            out.extend_from_slice(&(v as u64 ^ (1 << 63)).to_be_bytes())
        }
        KeyValue::Float32(v) => out.extend_from_slice(&f32_order_bits(v).to_be_bytes()),
        KeyValue::Float64(v) => out.extend_from_slice(&f64_order_bits(v).to_be_bytes()),
        KeyValue::Decimal { unscaled } => {
            out.extend_from_slice(&(unscaled as u128 ^ (1 << 127)).to_be_bytes())
        }
        KeyValue::Interval {
            months,
            days,
            micros,
        } => {
            let span = interval_span(months, days, micros);
            out.extend_from_slice(&(span as u128 ^ (1 << 127)).to_be_bytes())
        }
        KeyValue::Text(s) => escape_string(s.as_bytes(), out),
        KeyValue::Bytes(b) => escape_string(b, out),
    }
    if column.descending {
        for b in &mut out[payload_start..] {
            *b = !*b;
        }
    }
    Ok(())
}

/// Writes a string payload in ascending form: `0x00` → `0x00 0xFF`, then `0x00 0x01`.
fn escape_string(bytes: &[u8], out: &mut Vec<u8>) {
    out.reserve(bytes.len() + 2);
    for (i, run) in bytes.split(|&b| b == 0).enumerate() {
        if i > 0 {
            out.extend_from_slice(&[STRING_ESCAPE, STRING_ESCAPED_ZERO]);
        }
        out.extend_from_slice(run);
    }
    out.extend_from_slice(&[STRING_ESCAPE, STRING_TERMINATOR]);
}

/// Decodes a full key: exactly one value per column of `spec`, and nothing after it.
///
/// Malformed bytes (truncated, trailing bytes, unknown tag, bad escape, invalid UTF-8,
/// a float or interval pattern [`encode`] never writes…) give
/// [`Error::InvalidArgument`] naming the column and byte offset; a caller that read the
/// key from a page should report it as corruption of that page. Whenever decoding
/// succeeds, encoding the result gives back exactly `bytes`.
pub fn decode(spec: &KeySpec, bytes: &[u8]) -> Result<Vec<OwnedKeyValue>> {
    let (values, used) = decode_columns(spec, bytes, false)?;
    expect_consumed(bytes, used)?;
    Ok(values)
}

/// Decodes the output of [`encode_prefix`]: the leading columns of a key, as many as
/// `bytes` holds (from none to all). Fails if `bytes` ends inside a column or continues
/// after the last one.
pub fn decode_prefix(spec: &KeySpec, bytes: &[u8]) -> Result<Vec<OwnedKeyValue>> {
    let (values, used) = decode_columns(spec, bytes, true)?;
    expect_consumed(bytes, used)?;
    Ok(values)
}

/// Decodes a full key at the start of `bytes` and returns it with the number of bytes it
/// took; whatever follows (e.g. a [`crate::TupleId`] suffix) is left to the caller.
pub fn decode_leading(spec: &KeySpec, bytes: &[u8]) -> Result<(Vec<OwnedKeyValue>, usize)> {
    decode_columns(spec, bytes, false)
}

fn expect_consumed(bytes: &[u8], used: usize) -> Result<()> {
    if used == bytes.len() {
        Ok(())
    } else {
        Err(Error::InvalidArgument(format!(
            "malformed key: {} bytes follow the last column at byte {used}",
            bytes.len() - used
        )))
    }
}

/// Reads a key front to back. Every read is checked, so no input can make it index out
/// of bounds.
struct Reader<'b> {
    bytes: &'b [u8],
    pos: usize,
}

impl Reader<'_> {
    fn at_end(&self) -> bool {
        self.pos >= self.bytes.len()
    }

    /// Next byte XOR `mask`, or an error at the end of the key.
    fn byte(&mut self, mask: u8) -> Result<u8, String> {
        let b = *self
            .bytes
            .get(self.pos)
            .ok_or("the key ends inside the column")?;
        self.pos += 1;
        Ok(b ^ mask)
    }

    /// Next `N` bytes, each XOR `mask`.
    fn array<const N: usize>(&mut self, mask: u8) -> Result<[u8; N], String> {
        let src = self
            .bytes
            .get(self.pos..)
            .and_then(|rest| rest.get(..N))
            .ok_or_else(|| {
                format!(
                    "the key ends inside the column ({N}-byte payload, {} bytes left)",
                    self.bytes.len().saturating_sub(self.pos)
                )
            })?;
        let mut a = [0u8; N];
        for (dst, s) in a.iter_mut().zip(src) {
            *dst = s ^ mask;
        }
        self.pos += N;
        Ok(a)
    }

    /// An escaped string payload up to and including its terminator.
    fn string(&mut self, mask: u8) -> Result<Vec<u8>, String> {
        let mut v = Vec::new();
        loop {
            let b = self.byte(mask)?;
            if b != STRING_ESCAPE {
                v.push(b);
                continue;
            }
            match self.byte(mask)? {
                STRING_ESCAPED_ZERO => v.push(0),
                STRING_TERMINATOR => return Ok(v),
                other => {
                    return Err(format!(
                        "string escape byte is followed by {other:#04x}, neither {STRING_ESCAPED_ZERO:#04x} nor {STRING_TERMINATOR:#04x} (in ascending form)"
                    ));
                }
            }
        }
    }
}

fn decode_columns(
    spec: &KeySpec,
    bytes: &[u8],
    allow_fewer_columns: bool,
) -> Result<(Vec<OwnedKeyValue>, usize)> {
    let mut reader = Reader { bytes, pos: 0 };
    let mut values = Vec::with_capacity(spec.columns.len());
    for (index, column) in spec.columns.iter().enumerate() {
        if allow_fewer_columns && reader.at_end() {
            break;
        }
        let start = reader.pos;
        let value = decode_column(&mut reader, *column).map_err(|detail| {
            Error::InvalidArgument(format!(
                "malformed key: column {index} ({:?}{}) starting at byte {start}: {detail}",
                column.kind,
                if column.descending { " DESC" } else { "" }
            ))
        })?;
        values.push(value);
    }
    Ok((values, reader.pos))
}

fn decode_column(r: &mut Reader<'_>, column: KeyColumn) -> Result<OwnedKeyValue, String> {
    let tag = r
        .byte(0)
        .map_err(|_| "the key ends before the column".to_string())?;
    if tag == column.null_tag() {
        return Ok(OwnedKeyValue::Null);
    }
    if tag != TAG_VALUE {
        return Err(format!(
            "tag {tag:#04x} is neither {TAG_VALUE:#04x} (value) nor {:#04x} (NULL {})",
            column.null_tag(),
            if column.nulls_first { "FIRST" } else { "LAST" }
        ));
    }
    let m = column.payload_mask();
    Ok(match column.kind {
        KeyKind::Bool => match r.byte(m)? {
            0 => OwnedKeyValue::Bool(false),
            1 => OwnedKeyValue::Bool(true),
            other => return Err(format!("boolean byte {other:#04x} is neither 0 nor 1")),
        },
        KeyKind::Int16 => {
            OwnedKeyValue::Int16((u16::from_be_bytes(r.array(m)?) ^ (1 << 15)) as i16)
        }
        KeyKind::Int32 => OwnedKeyValue::Int32(decode_i32(r.array(m)?)),
        KeyKind::Date => OwnedKeyValue::Date(decode_i32(r.array(m)?)),
        KeyKind::Int64 => OwnedKeyValue::Int64(decode_i64(r.array(m)?)),
        KeyKind::Timestamp => OwnedKeyValue::Timestamp(decode_i64(r.array(m)?)),
        KeyKind::Float32 => {
            let stored = u32::from_be_bytes(r.array(m)?);
            OwnedKeyValue::Float32(f32_from_order_bits(stored).ok_or_else(|| {
                format!("{stored:#010x} is not the encoding of a float (it would be -0.0 or a non-canonical NaN)")
            })?)
        }
        KeyKind::Float64 => {
            let stored = u64::from_be_bytes(r.array(m)?);
            OwnedKeyValue::Float64(f64_from_order_bits(stored).ok_or_else(|| {
                format!("{stored:#018x} is not the encoding of a float (it would be -0.0 or a non-canonical NaN)")
            })?)
        }
        KeyKind::Decimal => OwnedKeyValue::Decimal {
            unscaled: decode_i128(r.array(m)?),
        },
        KeyKind::Interval => {
            let span = decode_i128(r.array(m)?);
            if !(MIN_INTERVAL_SPAN..=MAX_INTERVAL_SPAN).contains(&span) {
                return Err(format!(
                    "interval span {span} µs is beyond what interval fields can add up to"
                ));
            }
            let (months, days, micros) = justify_interval_span(span);
            OwnedKeyValue::Interval {
                months,
                days,
                micros,
            }
        }
        KeyKind::Text => {
            let bytes = r.string(m)?;
            OwnedKeyValue::Text(
                String::from_utf8(bytes).map_err(|e| format!("text is not UTF-8: {e}"))?,
            )
        }
        KeyKind::Bytes => OwnedKeyValue::Bytes(r.string(m)?),
    })
}

fn decode_i32(b: [u8; 4]) -> i32 {
    (u32::from_be_bytes(b) ^ (1 << 31)) as i32
}

fn decode_i64(b: [u8; 8]) -> i64 {
    (u64::from_be_bytes(b) ^ (1 << 63)) as i64
}

fn decode_i128(b: [u8; 16]) -> i128 {
    (u128::from_be_bytes(b) ^ (1 << 127)) as i128
}

/// The smallest byte string greater than every byte string that starts with `prefix`:
/// `prefix` without its trailing `0xFF` bytes, with its last byte incremented. It is the
/// exclusive upper bound of a scan for the keys starting with `prefix`, and the
/// inclusive lower bound of a scan for the keys after all of them. `None` if no such
/// string exists (`prefix` is empty or all `0xFF`): the bound is then "unbounded". An
/// encoded non-empty prefix starts with a tag below `0xFF`, so it always has one.
///
/// The result is a bound, not necessarily a decodable key.
pub fn prefix_successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let last = prefix.iter().rposition(|&b| b != 0xFF)?;
    let mut successor = prefix[..=last].to_vec();
    if let Some(b) = successor.last_mut() {
        *b += 1; // not 0xFF, so no overflow
    }
    Some(successor)
}

/// Lower and upper bound of a range of encoded keys, as `RangeBounds` takes them.
pub type KeyBounds = (Bound<Vec<u8>>, Bound<Vec<u8>>);

/// Bounds of the encoded keys whose first `prefix.len()` columns equal `prefix` in key
/// order (so a `-0.0` prefix also finds `0.0`, and `{ months: 1 }` finds `{ days: 30 }`),
/// including keys followed by a suffix such as a tuple id. Ready for a range scan, e.g.
/// `BTreeMap::range`. An empty prefix gives `(Unbounded, Unbounded)`.
pub fn prefix_range(spec: &KeySpec, prefix: &[KeyValue<'_>]) -> Result<KeyBounds> {
    let mut lower = Vec::new();
    encode_prefix(spec, prefix, &mut lower)?;
    if lower.is_empty() {
        return Ok((Bound::Unbounded, Bound::Unbounded));
    }
    let upper = match prefix_successor(&lower) {
        Some(s) => Bound::Excluded(s),
        None => Bound::Unbounded,
    };
    Ok((Bound::Included(lower), upper))
}

#[cfg(test)]
mod tests {
    use std::cmp::Ordering;
    use std::collections::BTreeMap;

    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    use super::*;

    // ---------------------------------------------------------------------------------
    // Reference semantics, written from the SQL/PostgreSQL rules and not from the
    // encoding: the property tests check the byte order against these.
    // ---------------------------------------------------------------------------------

    /// PostgreSQL float order: NaN equals NaN and is above everything, -0 equals 0.
    fn pg_float_cmp(a: f64, b: f64) -> Ordering {
        match (a.is_nan(), b.is_nan()) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Greater,
            (false, true) => Ordering::Less,
            (false, false) => a.partial_cmp(&b).expect("neither is NaN"),
        }
    }

    fn pg_interval_micros(months: i32, days: i32, micros: i64) -> i128 {
        const DAY: i128 = 24 * 60 * 60 * 1_000_000;
        (i128::from(months) * 30 + i128::from(days)) * DAY + i128::from(micros)
    }

    /// Order of two non-NULL values of one kind, ascending.
    fn reference_value_cmp(a: &KeyValue<'_>, b: &KeyValue<'_>) -> Ordering {
        use KeyValue as V;
        match (a, b) {
            (V::Bool(x), V::Bool(y)) => x.cmp(y),
            (V::Int16(x), V::Int16(y)) => x.cmp(y),
            (V::Int32(x), V::Int32(y)) | (V::Date(x), V::Date(y)) => x.cmp(y),
            (V::Int64(x), V::Int64(y)) | (V::Timestamp(x), V::Timestamp(y)) => x.cmp(y),
            (V::Float32(x), V::Float32(y)) => pg_float_cmp(f64::from(*x), f64::from(*y)),
            (V::Float64(x), V::Float64(y)) => pg_float_cmp(*x, *y),
            (V::Decimal { unscaled: x }, V::Decimal { unscaled: y }) => x.cmp(y),
            (
                V::Interval {
                    months: m1,
                    days: d1,
                    micros: u1,
                },
                V::Interval {
                    months: m2,
                    days: d2,
                    micros: u2,
                },
            ) => pg_interval_micros(*m1, *d1, *u1).cmp(&pg_interval_micros(*m2, *d2, *u2)),
            (V::Text(x), V::Text(y)) => x.as_bytes().cmp(y.as_bytes()),
            (V::Bytes(x), V::Bytes(y)) => x.cmp(y),
            _ => panic!("test bug: comparing {a:?} with {b:?}"),
        }
    }

    /// `ORDER BY c1 [DESC] NULLS {FIRST|LAST}, c2 …` over the first `min(len)` columns.
    fn reference_compare(spec: &KeySpec, a: &[KeyValue<'_>], b: &[KeyValue<'_>]) -> Ordering {
        for ((col, x), y) in spec.columns().iter().zip(a).zip(b) {
            let o = match (x, y) {
                (KeyValue::Null, KeyValue::Null) => Ordering::Equal,
                (KeyValue::Null, _) if col.nulls_first => Ordering::Less,
                (KeyValue::Null, _) => Ordering::Greater,
                (_, KeyValue::Null) if col.nulls_first => Ordering::Greater,
                (_, KeyValue::Null) => Ordering::Less,
                _ if col.descending => reference_value_cmp(x, y).reverse(),
                _ => reference_value_cmp(x, y),
            };
            if o != Ordering::Equal {
                return o;
            }
        }
        Ordering::Equal
    }

    /// Equality of decoded values, floats by bit pattern (decode output is canonical).
    fn same_value(a: &OwnedKeyValue, b: &OwnedKeyValue) -> bool {
        match (a, b) {
            (OwnedKeyValue::Float32(x), OwnedKeyValue::Float32(y)) => x.to_bits() == y.to_bits(),
            (OwnedKeyValue::Float64(x), OwnedKeyValue::Float64(y)) => x.to_bits() == y.to_bits(),
            _ => a == b,
        }
    }

    fn same_values(a: &[OwnedKeyValue], b: &[OwnedKeyValue]) -> bool {
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same_value(x, y))
    }

    // ---------------------------------------------------------------------------------
    // Random keys, biased towards the values that break encodings.
    // ---------------------------------------------------------------------------------

    const KINDS: [KeyKind; 12] = [
        KeyKind::Bool,
        KeyKind::Int16,
        KeyKind::Int32,
        KeyKind::Int64,
        KeyKind::Float32,
        KeyKind::Float64,
        KeyKind::Decimal,
        KeyKind::Date,
        KeyKind::Timestamp,
        KeyKind::Interval,
        KeyKind::Text,
        KeyKind::Bytes,
    ];

    const DAY_MICROS: i64 = 86_400_000_000;

    fn pick<T: Copy>(rng: &mut StdRng, specials: &[T], random: impl FnOnce(&mut StdRng) -> T) -> T {
        if rng.random_bool(0.6) {
            specials[rng.random_range(0..specials.len())]
        } else {
            random(rng)
        }
    }

    fn f64_specials() -> Vec<f64> {
        vec![
            f64::MIN,
            f64::MAX,
            -0.0,
            0.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            -f64::NAN,
            f64::from_bits(0x7FF0_0000_0000_0001), // signalling NaN
            f64::from_bits(0xFFF8_0000_0000_0123), // negative NaN with payload
            f64::MIN_POSITIVE,
            -f64::MIN_POSITIVE,
            f64::from_bits(1), // smallest subnormal
            -f64::from_bits(1),
            f64::from_bits(0x000F_FFFF_FFFF_FFFF), // largest subnormal
            1.0,
            -1.0,
            1.0 + f64::EPSILON,
            2.0,
        ]
    }

    fn f32_specials() -> Vec<f32> {
        vec![
            f32::MIN,
            f32::MAX,
            -0.0,
            0.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            -f32::NAN,
            f32::from_bits(0x7F80_0001),
            f32::from_bits(0xFFC0_0042),
            f32::MIN_POSITIVE,
            -f32::MIN_POSITIVE,
            f32::from_bits(1),
            -f32::from_bits(1),
            f32::from_bits(0x007F_FFFF),
            1.0,
            -1.0,
            1.0 + f32::EPSILON,
        ]
    }

    const TEXT_CHARS: [char; 10] = [
        '\0',
        '\u{1}',
        'a',
        'b',
        '\u{7f}',
        'é',
        'ÿ',
        '\u{FFFF}',
        '\u{10FFFF}',
        '😀',
    ];
    const BYTE_POOL: [u8; 8] = [0x00, 0x01, 0x02, 0x61, 0x7F, 0x80, 0xFE, 0xFF];

    fn random_text(rng: &mut StdRng) -> String {
        let len = rng.random_range(0..5);
        (0..len)
            .map(|_| TEXT_CHARS[rng.random_range(0..TEXT_CHARS.len())])
            .collect()
    }

    fn random_bytes(rng: &mut StdRng) -> Vec<u8> {
        let len = rng.random_range(0..6);
        (0..len)
            .map(|_| BYTE_POOL[rng.random_range(0..BYTE_POOL.len())])
            .collect()
    }

    fn random_value(rng: &mut StdRng, kind: KeyKind) -> OwnedKeyValue {
        use OwnedKeyValue as O;
        if rng.random_ratio(1, 8) {
            return O::Null;
        }
        match kind {
            KeyKind::Bool => O::Bool(rng.random()),
            KeyKind::Int16 => O::Int16(pick(
                rng,
                &[i16::MIN, i16::MIN + 1, -1, 0, 1, i16::MAX - 1, i16::MAX],
                |r| r.random(),
            )),
            KeyKind::Int32 => O::Int32(pick(
                rng,
                &[i32::MIN, i32::MIN + 1, -1, 0, 1, i32::MAX - 1, i32::MAX],
                |r| r.random(),
            )),
            KeyKind::Date => O::Date(pick(rng, &[i32::MIN, -1, 0, 1, i32::MAX], |r| {
                r.random_range(-3..3)
            })),
            KeyKind::Int64 => O::Int64(pick(
                rng,
                &[i64::MIN, i64::MIN + 1, -1, 0, 1, i64::MAX - 1, i64::MAX],
                |r| r.random(),
            )),
            KeyKind::Timestamp => {
                O::Timestamp(pick(rng, &[i64::MIN, -1, 0, 1, i64::MAX], |r| r.random()))
            }
            KeyKind::Float32 => {
                let specials = f32_specials();
                O::Float32(pick(rng, &specials, |r| {
                    if r.random_bool(0.5) {
                        f32::from_bits(r.random())
                    } else {
                        r.random_range(-3i8..3).into()
                    }
                }))
            }
            KeyKind::Float64 => {
                let specials = f64_specials();
                O::Float64(pick(rng, &specials, |r| {
                    if r.random_bool(0.5) {
                        f64::from_bits(r.random())
                    } else {
                        r.random_range(-3i8..3).into()
                    }
                }))
            }
            KeyKind::Decimal => O::Decimal {
                unscaled: pick(
                    rng,
                    &[i128::MIN, i128::MIN + 1, -1, 0, 1, i128::MAX - 1, i128::MAX],
                    |r| r.random(),
                ),
            },
            KeyKind::Interval => O::Interval {
                months: pick(rng, &[i32::MIN, -1, 0, 1, i32::MAX], |r| {
                    r.random_range(-2..3)
                }),
                days: pick(rng, &[i32::MIN, -30, -1, 0, 1, 30, 60, i32::MAX], |r| {
                    r.random()
                }),
                micros: pick(
                    rng,
                    &[
                        i64::MIN,
                        -30 * DAY_MICROS,
                        -DAY_MICROS,
                        -1,
                        0,
                        1,
                        DAY_MICROS,
                        30 * DAY_MICROS,
                        i64::MAX,
                    ],
                    |r| r.random(),
                ),
            },
            KeyKind::Text => O::Text(random_text(rng)),
            KeyKind::Bytes => O::Bytes(random_bytes(rng)),
        }
    }

    fn random_spec(rng: &mut StdRng) -> KeySpec {
        let n = rng.random_range(1..=4);
        let columns = (0..n)
            .map(|_| KeyColumn {
                kind: KINDS[rng.random_range(0..KINDS.len())],
                descending: rng.random(),
                nulls_first: rng.random(),
            })
            .collect();
        KeySpec::new(columns).unwrap()
    }

    fn random_key(rng: &mut StdRng, spec: &KeySpec) -> Vec<OwnedKeyValue> {
        spec.columns()
            .iter()
            .map(|c| random_value(rng, c.kind))
            .collect()
    }

    /// A key that shares a random number of leading columns with `a` and is often close
    /// to it after that (same value, or a string one byte longer or shorter).
    fn related_key(rng: &mut StdRng, spec: &KeySpec, a: &[OwnedKeyValue]) -> Vec<OwnedKeyValue> {
        let shared = rng.random_range(0..=a.len());
        let mut b: Vec<OwnedKeyValue> = a[..shared].to_vec();
        for (col, x) in spec.columns()[shared..].iter().zip(&a[shared..]) {
            let v = match (rng.random_range(0..4), x) {
                (0, _) => x.clone(),
                (1, OwnedKeyValue::Text(s)) => {
                    let mut s = s.clone();
                    if rng.random_bool(0.5) {
                        s.push(TEXT_CHARS[rng.random_range(0..TEXT_CHARS.len())])
                    } else {
                        s.pop();
                    }
                    OwnedKeyValue::Text(s)
                }
                (1, OwnedKeyValue::Bytes(v)) => {
                    let mut v = v.clone();
                    if rng.random_bool(0.5) {
                        v.push(BYTE_POOL[rng.random_range(0..BYTE_POOL.len())])
                    } else {
                        v.pop();
                    }
                    OwnedKeyValue::Bytes(v)
                }
                _ => random_value(rng, col.kind),
            };
            b.push(v);
        }
        b
    }

    fn borrowed(values: &[OwnedKeyValue]) -> Vec<KeyValue<'_>> {
        values.iter().map(OwnedKeyValue::as_key_value).collect()
    }

    fn enc(spec: &KeySpec, values: &[OwnedKeyValue]) -> Vec<u8> {
        let mut out = Vec::new();
        encode(spec, &borrowed(values), &mut out).unwrap();
        out
    }

    fn enc_prefix(spec: &KeySpec, values: &[OwnedKeyValue]) -> Vec<u8> {
        let mut out = Vec::new();
        encode_prefix(spec, &borrowed(values), &mut out).unwrap();
        out
    }

    // ---------------------------------------------------------------------------------
    // Property tests.
    // ---------------------------------------------------------------------------------

    #[test]
    fn byte_order_matches_reference_order_for_random_key_pairs() {
        let mut rng = StdRng::seed_from_u64(0x6b65_7973);
        let mut seen = [0usize; 3];
        for _ in 0..2_000 {
            let spec = random_spec(&mut rng);
            for _ in 0..20 {
                let a = random_key(&mut rng, &spec);
                let b = related_key(&mut rng, &spec, &a);
                let expected = reference_compare(&spec, &borrowed(&a), &borrowed(&b));
                let (ea, eb) = (enc(&spec, &a), enc(&spec, &b));
                assert_eq!(
                    ea.cmp(&eb),
                    expected,
                    "spec {spec:?}\na = {a:?} -> {ea:02x?}\nb = {b:?} -> {eb:02x?}"
                );
                assert_eq!(ea == eb, expected == Ordering::Equal);
                seen[(expected as i8 + 1) as usize] += 1;
            }
        }
        // The generator must exercise every outcome, ties included.
        assert!(
            seen.iter().all(|&n| n > 2_000),
            "outcomes <, =, >: {seen:?}"
        );
    }

    #[test]
    fn decode_inverts_encode_up_to_normalization() {
        let mut rng = StdRng::seed_from_u64(2);
        for _ in 0..5_000 {
            let spec = random_spec(&mut rng);
            let key = random_key(&mut rng, &spec);
            let normalized: Vec<OwnedKeyValue> =
                key.iter().map(|v| v.as_key_value().normalized()).collect();
            let bytes = enc(&spec, &key);
            let decoded = decode(&spec, &bytes).unwrap();
            assert!(
                same_values(&decoded, &normalized),
                "spec {spec:?}\nkey {key:?}\ndecoded {decoded:?}"
            );
            // Normalization does not change the encoding.
            assert_eq!(enc(&spec, &decoded), bytes);

            // Every prefix decodes to the leading values.
            for k in 0..=key.len() {
                let p = enc_prefix(&spec, &key[..k]);
                assert!(bytes.starts_with(&p));
                assert!(same_values(
                    &decode_prefix(&spec, &p).unwrap(),
                    &normalized[..k]
                ));
            }

            // A suffix after the key is left to the caller.
            let mut with_tid = bytes.clone();
            with_tid.extend_from_slice(&crate::TupleId::new(crate::PageId(7), 3).to_bytes());
            let (lead, used) = decode_leading(&spec, &with_tid).unwrap();
            assert_eq!(used, bytes.len());
            assert!(same_values(&lead, &normalized));
            assert!(decode(&spec, &with_tid).is_err());
        }
    }

    #[test]
    fn prefix_bounds_enclose_exactly_the_keys_with_that_prefix() {
        let mut rng = StdRng::seed_from_u64(3);
        for _ in 0..150 {
            let spec = random_spec(&mut rng);
            // Few distinct values per column, so that prefixes are shared by many keys.
            let pools: Vec<Vec<OwnedKeyValue>> = spec
                .columns()
                .iter()
                .map(|c| (0..4).map(|_| random_value(&mut rng, c.kind)).collect())
                .collect();
            let from_pools = |rng: &mut StdRng| -> Vec<OwnedKeyValue> {
                pools
                    .iter()
                    .map(|p| p[rng.random_range(0..p.len())].clone())
                    .collect()
            };
            let keys: Vec<Vec<OwnedKeyValue>> = (0..60).map(|_| from_pools(&mut rng)).collect();
            let mut tree: BTreeMap<Vec<u8>, Vec<usize>> = BTreeMap::new();
            for (i, key) in keys.iter().enumerate() {
                // Suffix with a tuple id, like a non-unique index, so equal keys coexist.
                let mut k = enc(&spec, key);
                k.extend_from_slice(&crate::TupleId::new(crate::PageId(i as u32), 0).to_bytes());
                tree.entry(k).or_default().push(i);
            }

            // The tree's byte order is the reference order.
            let in_tree_order: Vec<usize> = tree.values().flatten().copied().collect();
            for w in in_tree_order.windows(2) {
                let (a, b) = (borrowed(&keys[w[0]]), borrowed(&keys[w[1]]));
                assert_ne!(reference_compare(&spec, &a, &b), Ordering::Greater);
            }

            for _ in 0..20 {
                let k = rng.random_range(0..=spec.columns().len());
                let probe = from_pools(&mut rng);
                let prefix = &probe[..k];
                let bounds = prefix_range(&spec, &borrowed(prefix)).unwrap();
                let mut found: Vec<usize> = tree
                    .range(bounds)
                    .flat_map(|(_, v)| v.iter().copied())
                    .collect();
                found.sort_unstable();
                let expected: Vec<usize> = (0..keys.len())
                    .filter(|&i| {
                        reference_compare(&spec, &borrowed(&keys[i][..k]), &borrowed(prefix))
                            == Ordering::Equal
                    })
                    .collect();
                assert_eq!(found, expected, "spec {spec:?}\nprefix {prefix:?}");

                // And the raw bounds order every key against the prefix like the reference.
                let lower = enc_prefix(&spec, prefix);
                let upper = prefix_successor(&lower);
                assert_eq!(upper.is_none(), k == 0);
                for key in &keys {
                    let e = enc(&spec, key);
                    match reference_compare(&spec, &borrowed(&key[..k]), &borrowed(prefix)) {
                        Ordering::Less => assert!(e < lower),
                        Ordering::Equal => {
                            assert!(lower <= e);
                            assert!(upper.as_ref().is_none_or(|u| e < *u));
                        }
                        Ordering::Greater => assert!(upper.as_ref().is_some_and(|u| *u <= e)),
                    }
                }
            }
        }
    }

    #[test]
    fn truncated_or_mutated_keys_are_rejected_or_decode_canonically() {
        let mut rng = StdRng::seed_from_u64(4);
        let (mut rejected, mut accepted) = (0usize, 0usize);
        for _ in 0..1_500 {
            let spec = random_spec(&mut rng);
            let key = random_key(&mut rng, &spec);
            let bytes = enc(&spec, &key);
            for len in 0..bytes.len() {
                assert!(
                    decode(&spec, &bytes[..len]).is_err(),
                    "truncated to {len}: {:02x?}",
                    &bytes[..len]
                );
                assert!(decode_leading(&spec, &bytes[..len]).is_err());
            }
            for _ in 0..4 {
                let mut m = bytes.clone();
                for _ in 0..rng.random_range(1..=3) {
                    let at = rng.random_range(0..=m.len());
                    let byte = if rng.random_bool(0.5) {
                        rng.random()
                    } else {
                        [0x00, 0x01, 0x02, 0x03, 0xFE, 0xFF][rng.random_range(0..6)]
                    };
                    match rng.random_range(0..4) {
                        0 if at < m.len() => m[at] = byte,
                        1 if at < m.len() => m[at] ^= 1 << rng.random_range(0..8),
                        2 if at < m.len() => {
                            m.remove(at);
                        }
                        _ => m.insert(at, byte),
                    }
                }
                for bytes in [&m[..], &m[..m.len() / 2]] {
                    match decode(&spec, bytes) {
                        Err(Error::InvalidArgument(msg)) => {
                            assert!(msg.starts_with("malformed key"), "{msg}");
                            rejected += 1;
                        }
                        Err(other) => panic!("unexpected error kind {other:?}"),
                        // Whatever decodes is the one canonical encoding of its values.
                        Ok(values) => {
                            assert_eq!(enc(&spec, &values), bytes, "{values:?}");
                            accepted += 1;
                        }
                    }
                    let _ = decode_prefix(&spec, bytes);
                    let _ = decode_leading(&spec, bytes);
                }
            }
        }
        assert!(
            rejected > 1_000 && accepted > 100,
            "rejected {rejected}, accepted {accepted}"
        );
    }

    #[test]
    fn interval_spans_justify_exactly_over_the_whole_range() {
        let mut rng = StdRng::seed_from_u64(5);
        let extremes = [
            MIN_INTERVAL_SPAN,
            MAX_INTERVAL_SPAN,
            -1,
            0,
            1,
            INTERVAL_MICROS_PER_MONTH - 1,
        ];
        for span in extremes
            .into_iter()
            .chain((0..10_000).map(|_| interval_span(rng.random(), rng.random(), rng.random())))
        {
            let (m, d, u) = justify_interval_span(span);
            assert_eq!(interval_span(m, d, u), span);
        }
        assert_eq!(
            KeyValue::Interval {
                months: 0,
                days: 30,
                micros: -1
            }
            .normalized(),
            OwnedKeyValue::Interval {
                months: 0,
                days: 29,
                micros: DAY_MICROS - 1
            }
        );
        assert_eq!(
            KeyValue::Interval {
                months: 0,
                days: 0,
                micros: -1
            }
            .normalized(),
            OwnedKeyValue::Interval {
                months: 0,
                days: 0,
                micros: -1
            }
        );
    }

    // ---------------------------------------------------------------------------------
    // Worked examples of the documented layout and of the error paths.
    // ---------------------------------------------------------------------------------

    fn one(column: KeyColumn, value: KeyValue<'_>) -> Vec<u8> {
        let spec = KeySpec::new(vec![column]).unwrap();
        let mut out = Vec::new();
        encode(&spec, &[value], &mut out).unwrap();
        out
    }

    #[test]
    fn encodings_match_the_documented_table() {
        use KeyKind as K;
        use KeyValue as V;
        let asc = KeyColumn::asc;
        let desc = KeyColumn::desc;
        assert_eq!(one(asc(K::Int32), V::Int32(1)), [0x02, 0x80, 0, 0, 1]);
        assert_eq!(
            one(asc(K::Int32), V::Int32(-1)),
            [0x02, 0x7F, 0xFF, 0xFF, 0xFF]
        );
        assert_eq!(
            one(desc(K::Int32), V::Int32(1)),
            [0x02, 0x7F, 0xFF, 0xFF, 0xFE]
        );
        assert_eq!(one(asc(K::Int16), V::Int16(i16::MIN)), [0x02, 0, 0]);
        assert_eq!(one(asc(K::Bool), V::Bool(true)), [0x02, 0x01]);
        assert_eq!(one(asc(K::Int32), V::Null), [0x03]);
        assert_eq!(one(desc(K::Int32), V::Null), [0x01]);
        assert_eq!(one(asc(K::Int32).with_nulls_first(), V::Null), [0x01]);
        assert_eq!(one(desc(K::Int32).with_nulls_last(), V::Null), [0x03]);
        assert_eq!(
            one(asc(K::Text), V::Text("a\0")),
            [0x02, 0x61, 0x00, 0xFF, 0x00, 0x01]
        );
        assert_eq!(one(asc(K::Bytes), V::Bytes(&[])), [0x02, 0x00, 0x01]);
        assert_eq!(
            one(desc(K::Bytes), V::Bytes(&[0x00, 0xFF])),
            [0x02, 0xFF, 0x00, 0x00, 0xFF, 0xFE]
        );
        assert_eq!(
            one(asc(K::Float64), V::Float64(1.0)),
            [0x02, 0xBF, 0xF0, 0, 0, 0, 0, 0, 0]
        );
        assert_eq!(
            one(asc(K::Float64), V::Float64(-0.0)),
            one(asc(K::Float64), V::Float64(0.0))
        );
        assert_eq!(
            one(asc(K::Float32), V::Float32(-f32::NAN)),
            [0x02, 0xFF, 0xC0, 0, 0]
        );
        assert!(
            one(asc(K::Float32), V::Float32(f32::NAN))
                > one(asc(K::Float32), V::Float32(f32::INFINITY))
        );
        assert_eq!(
            one(
                asc(K::Interval),
                V::Interval {
                    months: 1,
                    days: 0,
                    micros: 0
                }
            ),
            one(
                asc(K::Interval),
                V::Interval {
                    months: 0,
                    days: 30,
                    micros: 0
                }
            )
        );
        let mut decimal = vec![0x02, 0x80];
        decimal.extend_from_slice(&[0; 14]);
        decimal.push(150);
        assert_eq!(one(asc(K::Decimal), V::Decimal { unscaled: 150 }), decimal);
        for kind in KINDS {
            let v = random_value(&mut StdRng::seed_from_u64(9), kind);
            if let (Some(size), false) = (kind.fixed_payload_size(), v == OwnedKeyValue::Null) {
                assert_eq!(one(asc(kind), v.as_key_value()).len(), 1 + size, "{kind:?}");
            }
        }
    }

    #[test]
    fn defaults_are_postgresql_asc_nulls_last_and_desc_nulls_first() {
        let spec = KeySpec::new(vec![
            KeyColumn::asc(KeyKind::Int64),
            KeyColumn::desc(KeyKind::Int64),
        ])
        .unwrap();
        let key = |a: KeyValue<'static>, b: KeyValue<'static>| {
            let mut out = Vec::new();
            encode(&spec, &[a, b], &mut out).unwrap();
            out
        };
        let (null, max, min) = (
            KeyValue::Null,
            KeyValue::Int64(i64::MAX),
            KeyValue::Int64(i64::MIN),
        );
        assert!(key(max, null) < key(null, null)); // ASC: NULL after the greatest value
        assert!(key(max, null) < key(max, max)); // DESC: NULL before the greatest value
        assert!(key(max, max) < key(max, min)); // DESC: greatest first
    }

    #[test]
    fn wrong_kinds_and_counts_are_invalid_arguments_and_leave_out_untouched() {
        let spec = KeySpec::new(vec![
            KeyColumn::asc(KeyKind::Int64),
            KeyColumn::asc(KeyKind::Text),
        ])
        .unwrap();
        let mut out = vec![0xAA];
        let err = encode(
            &spec,
            &[KeyValue::Int64(1), KeyValue::Bytes(b"x")],
            &mut out,
        )
        .unwrap_err();
        assert!(
            matches!(err, Error::InvalidArgument(ref m) if m.contains("column 1")),
            "{err}"
        );
        assert!(encode(&spec, &[KeyValue::Int32(1), KeyValue::Null], &mut out).is_err());
        assert!(encode(&spec, &[KeyValue::Int64(1)], &mut out).is_err());
        assert!(
            encode_prefix(
                &spec,
                &[KeyValue::Null, KeyValue::Null, KeyValue::Null],
                &mut out
            )
            .is_err()
        );
        assert!(prefix_range(&spec, &[KeyValue::Bool(true)]).is_err());
        assert_eq!(out, [0xAA]);
        assert!(KeySpec::new(Vec::new()).is_err());

        // NULL fits any kind; encode appends after what `out` holds.
        encode(&spec, &[KeyValue::Null, KeyValue::Text("")], &mut out).unwrap();
        assert_eq!(out, [0xAA, 0x03, 0x02, 0x00, 0x01]);
    }

    #[test]
    fn decode_rejects_each_kind_of_malformation_with_its_position() {
        let text = KeySpec::new(vec![KeyColumn::asc(KeyKind::Text)]).unwrap();
        let cases: [(&KeySpec, &[u8], &str); 6] = [
            (&text, &[], "ends before the column"),
            (&text, &[0x05], "tag 0x05"),
            (&text, &[0x01], "tag 0x01"), // a NULLS FIRST null in a NULLS LAST column
            (&text, &[0x02, 0x61, 0x00, 0x02], "escape"),
            (&text, &[0x02, 0xC3, 0x00, 0x01], "not UTF-8"),
            (&text, &[0x03, 0x03], "1 bytes follow"),
        ];
        for (spec, bytes, needle) in cases {
            let err = decode(spec, bytes).unwrap_err().to_string();
            assert!(err.contains(needle), "{bytes:02x?}: {err}");
        }
        let float = KeySpec::new(vec![KeyColumn::asc(KeyKind::Float64)]).unwrap();
        let neg_zero = [0x02, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF];
        assert!(
            decode(&float, &neg_zero)
                .unwrap_err()
                .to_string()
                .contains("-0.0")
        );
        let interval = KeySpec::new(vec![KeyColumn::asc(KeyKind::Interval)]).unwrap();
        let mut too_long = vec![0x02];
        too_long.extend_from_slice(&((MAX_INTERVAL_SPAN + 1) as u128 ^ (1 << 127)).to_be_bytes());
        assert!(
            decode(&interval, &too_long)
                .unwrap_err()
                .to_string()
                .contains("beyond")
        );
        let boolean = KeySpec::new(vec![KeyColumn::desc(KeyKind::Bool)]).unwrap();
        assert!(decode(&boolean, &[0x02, 0x00]).is_err()); // DESC: 0x00 would be !0xFF
    }

    #[test]
    fn prefix_successor_edge_cases() {
        assert_eq!(prefix_successor(&[]), None);
        assert_eq!(prefix_successor(&[0xFF, 0xFF]), None);
        assert_eq!(prefix_successor(&[0x01, 0x02]), Some(vec![0x01, 0x03]));
        assert_eq!(
            prefix_successor(&[0x01, 0xFE, 0xFF]),
            Some(vec![0x01, 0xFF])
        );
        let spec = KeySpec::new(vec![KeyColumn::asc(KeyKind::Int32)]).unwrap();
        assert_eq!(
            prefix_range(&spec, &[]).unwrap(),
            (Bound::Unbounded, Bound::Unbounded)
        );
    }
}
