//! Sort bees on the SQL side: a sort's keys as a [`SortSpec`] (plan time), and its
//! key vectors as the bee's input columns (run time).
//!
//! A key's kind comes from its type: `boolean` → `Bool`; `smallint`, `integer` and
//! `date`, `bigint` and `timestamp` → `Int`; `real`, `double` → `Float`;
//! `numeric(p, s)` with p ≤ 18 → `Int(8)` (its vectors are `Dec64`: i64 at one
//! scale), other `numeric` → `Decimal`; `interval` → `Interval`; `char`, `varchar`,
//! `text` → `Bytes` (`char(n)` without its trailing blanks, as it compares). At run
//! time a decimal vector that is not in its plan-time form is converted: `Dec64` to
//! i128 at its scale, `Dec` to one scale (the largest among its values) — and when
//! that does not fit (i128, or i64 for an `Int(8)` key) the sort uses the
//! comparator ([`key_columns`] returns `None`).

use std::sync::Arc;

use beedb_bees::abi::ByteRef;
use beedb_bees::spec::{SortPart, SortSpec, ValueKind};
use beedb_bees::{SortBee, SortData, SortInput};

use crate::plan::SortKey;
use crate::types::DataType;
use crate::types::text::bpchar_trim;
use crate::vector::{Data, Vector};

/// The kind of a sort key of type `ty`; `None` when no sort bee handles it. As the
/// scan bees see the column, except numerics, which a key vector holds as scaled
/// i64 (`Dec64`) or as i128 whatever their stored form.
pub fn kind_of(ty: &DataType) -> Option<ValueKind> {
    Some(match ty {
        t @ DataType::Decimal { .. } if crate::vector::dec64_scale(t).is_some() => ValueKind::Int(8),
        DataType::Decimal { .. } => ValueKind::Decimal,
        other => super::translate::value_kind(other),
    })
}

/// The spec of a sort bee for `keys`; `None` when some key has no kind.
pub fn spec(keys: &[SortKey]) -> Option<SortSpec> {
    let parts = keys
        .iter()
        .map(|k| Some(SortPart { kind: kind_of(&k.expr.ty)?, desc: k.desc, nulls_first: k.nulls_first }))
        .collect::<Option<Vec<_>>>()?;
    Some(SortSpec { parts })
}

/// The slots of one key vector, owned when they had to be converted.
enum Slots<'a> {
    Borrowed(SortData<'a>),
    I64(Vec<i64>),
    I128(Vec<i128>),
    Interval(Vec<[u8; 16]>),
    Bytes(Vec<ByteRef>),
}

/// The unscaled values of a decimal vector at one scale (the largest of its non-NULL
/// values); `None` when one does not fit an i128 there.
fn dec_at_one_scale(v: &Vector) -> Option<Vec<i128>> {
    let d = match &v.data {
        Data::Dec64(d) => return Some(d.values.iter().map(|&x| x as i128).collect()),
        Data::Dec(d) => d,
        _ => return None,
    };
    let scale = (0..d.len()).filter(|&i| !v.is_null(i)).map(|i| d[i].scale()).max().unwrap_or(0);
    (0..d.len())
        .map(|i| {
            if v.is_null(i) {
                return Some(0);
            }
            let x = &d[i];
            10i128.checked_pow((scale - x.scale()) as u32)?.checked_mul(x.unscaled())
        })
        .collect()
}

fn slots<'a>(v: &'a Vector, kind: ValueKind) -> Option<Slots<'a>> {
    Some(match (&v.data, kind) {
        (Data::Bool(d), ValueKind::Bool) => Slots::Borrowed(SortData::Bool(d)),
        (Data::I16(d), ValueKind::Int(2)) => Slots::Borrowed(SortData::I16(d)),
        (Data::I32(d), ValueKind::Int(4)) => Slots::Borrowed(SortData::I32(d)),
        (Data::I64(d), ValueKind::Int(8)) => Slots::Borrowed(SortData::I64(d)),
        (Data::F32(d), ValueKind::Float(4)) => Slots::Borrowed(SortData::F32(d)),
        (Data::F64(d), ValueKind::Float(8)) => Slots::Borrowed(SortData::F64(d)),
        (Data::Dec64(d), ValueKind::Int(8)) => Slots::Borrowed(SortData::I64(&d.values)),
        (Data::Dec(_), ValueKind::Int(8)) => {
            Slots::I64(dec_at_one_scale(v)?.into_iter().map(i64::try_from).collect::<Result<_, _>>().ok()?)
        }
        (Data::Dec(_) | Data::Dec64(_), ValueKind::Decimal) => Slots::I128(dec_at_one_scale(v)?),
        (Data::Interval(d), ValueKind::Interval) => Slots::Interval(
            d.iter()
                .map(|x| {
                    let mut b = [0u8; 16];
                    b[0..4].copy_from_slice(&x.months.to_le_bytes());
                    b[4..8].copy_from_slice(&x.days.to_le_bytes());
                    b[8..16].copy_from_slice(&x.micros.to_le_bytes());
                    b
                })
                .collect(),
        ),
        (Data::Str(d), ValueKind::Bytes) => {
            let char_n = matches!(v.ty, DataType::Char(_));
            Slots::Bytes(
                d.iter()
                    .map(|s| ByteRef::of(if char_n { bpchar_trim(s) } else { s }.as_bytes()))
                    .collect(),
            )
        }
        _ => return None,
    })
}

/// The normalized keys of rows `0..n` of `keys` (the sort's key vectors, one per
/// part of `bee`'s spec); `None` when a vector does not fit its part (see the
/// module documentation): the caller sorts with the comparator.
pub fn encode(bee: &SortBee, keys: &[Vector], n: usize) -> Option<Vec<u8>> {
    let parts = &bee.spec().parts;
    if keys.len() != parts.len() {
        return None;
    }
    let slots = keys.iter().zip(parts).map(|(v, p)| slots(v, p.kind)).collect::<Option<Vec<_>>>()?;
    let inputs: Vec<SortInput<'_>> = slots
        .iter()
        .zip(keys)
        .map(|(s, v)| SortInput {
            data: match s {
                Slots::Borrowed(d) => *d,
                Slots::I64(d) => SortData::I64(d),
                Slots::I128(d) => SortData::I128(d),
                Slots::Interval(d) => SortData::Interval(d),
                Slots::Bytes(d) => SortData::Bytes(d),
            },
            nulls: v.nulls.as_deref(),
        })
        .collect();
    // SAFETY: the ByteRefs point into `keys`' string buffers, borrowed for the call.
    unsafe { bee.encode(&inputs, n) }.ok()
}

/// A sort bee in a plan node (compared by identity).
#[derive(Clone)]
pub struct SortBees(pub Arc<SortBee>);

impl PartialEq for SortBees {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl std::fmt::Debug for SortBees {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SortBees(sort #{})", self.0.info().id)
    }
}
