//! Aggregate bees on the SQL side: a plain GROUP BY as an [`AggSpec`] (plan time),
//! and its evaluated key and argument vectors as the bee's inputs (run time).
//!
//! A GROUP BY gets a bee when it has no grouping sets, at least one group
//! expression, and every part maps:
//! - group keys (any expression; the bee sees its evaluated vector) of the types the
//!   packed key table packs: `boolean`; `smallint`, `integer`, `date`, `bigint`,
//!   `timestamp`; `real`, `double`; `numeric(p ≤ 18, s)` (an i64 at scale s);
//!   `char(n)`/`varchar(n)` with n ≤ 15 (`char` without trailing blanks); all of
//!   them with a NULL bit each in 128 bits;
//! - aggregates without DISTINCT, ORDER BY or an application function:
//!   `count(*)`, `count(x)` of any type, `sum`/`avg` of integers, of numerics and
//!   of floats, `min`/`max` of booleans, integers, dates, timestamps, floats and
//!   `numeric(p ≤ 18)`.
//!
//! A numeric sum or average takes its argument as scaled i64s (`Dec64` vectors),
//! whatever its declared type: `numeric(p ≤ 18)` columns and the products and sums
//! of such columns (TPC-H Q1's `l_extendedprice * (1 - l_discount)`, typed
//! `numeric`) arrive that way while they fit. The scale is the first batch's; the
//! caller checks that every later batch has it ([`inputs`] gives each batch's).
//!
//! At run time a vector not in the form the bee takes (a numeric vector held as
//! `Dec`, or at another scale; a string longer in bytes than its part) makes the
//! caller hand the aggregation to the generic path from that batch on.

use std::sync::Arc;

use beedb_bees::agg::{AggData, AggInput, AggOp, KeyKind, ValKind};
use beedb_bees::{AggBee, AggSpec};

use crate::expr::Expr;
use crate::plan::{AggCall, AggFunc};
use crate::types::DataType;
use crate::vector::{Data, Vector, dec64_scale};

/// The key part of a group expression of type `ty`.
fn key_kind(ty: &DataType) -> Option<KeyKind> {
    Some(match ty {
        DataType::Boolean => KeyKind::Bool,
        DataType::SmallInt => KeyKind::Int(2),
        DataType::Integer | DataType::Date => KeyKind::Int(4),
        DataType::BigInt | DataType::Timestamp => KeyKind::Int(8),
        DataType::Real => KeyKind::Float(4),
        DataType::Double => KeyKind::Float(8),
        t @ DataType::Decimal { .. } if dec64_scale(t).is_some() => KeyKind::Int(8),
        DataType::Char(n) | DataType::Varchar(Some(n)) if (1..=15).contains(n) => KeyKind::Str(*n as u8),
        _ => return None,
    })
}

/// The kind of a min/max argument of type `ty`.
fn val_kind(ty: &DataType) -> Option<ValKind> {
    Some(match ty {
        DataType::Boolean => ValKind::Bool,
        DataType::SmallInt => ValKind::Int(2),
        DataType::Integer | DataType::Date => ValKind::Int(4),
        DataType::BigInt | DataType::Timestamp => ValKind::Int(8),
        DataType::Real => ValKind::Float(4),
        DataType::Double => ValKind::Float(8),
        t @ DataType::Decimal { .. } if dec64_scale(t).is_some() => ValKind::Int(8),
        _ => return None,
    })
}

/// The op of an aggregate call; `None` when the bee does not do it.
fn op(call: &AggCall) -> Option<AggOp> {
    if call.distinct || !call.order.is_empty() || call.udf.is_some() || call.arg2.is_some() {
        return None;
    }
    let ty = call.arg.as_ref().map(|a| a.ty);
    let int_w = |t: &DataType| match t {
        DataType::SmallInt => Some(2),
        DataType::Integer => Some(4),
        DataType::BigInt => Some(8),
        _ => None,
    };
    let float_w = |t: &DataType| match t {
        DataType::Real => Some(4),
        DataType::Double => Some(8),
        _ => None,
    };
    Some(match (call.func, ty) {
        (AggFunc::CountStar, _) => AggOp::CountStar,
        (AggFunc::Count, Some(_)) => AggOp::Count,
        (AggFunc::Sum, Some(t @ (DataType::SmallInt | DataType::Integer))) => AggOp::SumInt(int_w(&t)?),
        (AggFunc::Sum, Some(DataType::BigInt)) => AggOp::SumWide(8),
        (AggFunc::Avg, Some(t)) if int_w(&t).is_some() => AggOp::AvgInt(int_w(&t)?),
        // Any numeric: its vectors must arrive as scaled i64s, all at one scale.
        (AggFunc::Sum, Some(DataType::Decimal { .. })) => AggOp::SumDec,
        (AggFunc::Avg, Some(DataType::Decimal { .. })) => AggOp::AvgDec,
        (AggFunc::Sum, Some(t)) if float_w(&t).is_some() => AggOp::SumFloat(float_w(&t)?),
        (AggFunc::Avg, Some(t)) if float_w(&t).is_some() => AggOp::AvgFloat(float_w(&t)?),
        (AggFunc::Min, Some(t)) => AggOp::Min(val_kind(&t)?),
        (AggFunc::Max, Some(t)) => AggOp::Max(val_kind(&t)?),
        _ => return None,
    })
}

/// The spec of an aggregate bee for a GROUP BY `groups` computing `aggs`; `None`
/// when some part has no bee form (see the module documentation).
pub fn spec(groups: &[Expr], sets: &[Vec<usize>], aggs: &[AggCall]) -> Option<AggSpec> {
    if !sets.is_empty() || groups.is_empty() {
        return None;
    }
    let spec = AggSpec {
        keys: groups.iter().map(|g| key_kind(&g.ty)).collect::<Option<_>>()?,
        aggs: aggs.iter().map(op).collect::<Option<_>>()?,
    };
    spec.check().ok()?;
    Some(spec)
}

/// One vector's values in the form a bee input takes.
pub enum Owned<'a> {
    Borrowed(AggData<'a>),
}

/// A `numeric(p ≤ 18)` key or min/max input: i64s at its type's scale.
fn dec_data<'a>(v: &'a Vector) -> Option<AggData<'a>> {
    match &v.data {
        Data::Dec64(d) if Some(d.scale) == dec64_scale(&v.ty) => Some(AggData::I64(&d.values)),
        _ => None,
    }
}

fn key_data(v: &Vector, kind: KeyKind) -> Option<Owned<'_>> {
    Some(Owned::Borrowed(match (&v.data, kind) {
        (Data::Bool(d), KeyKind::Bool) => AggData::Bool(d),
        (Data::I16(d), KeyKind::Int(2)) => AggData::I16(d),
        (Data::I32(d), KeyKind::Int(4)) => AggData::I32(d),
        (Data::I64(d), KeyKind::Int(8)) => AggData::I64(d),
        (Data::Dec64(_), KeyKind::Int(8)) => dec_data(v)?,
        (Data::F32(d), KeyKind::Float(4)) => AggData::F32(d),
        (Data::F64(d), KeyKind::Float(8)) => AggData::F64(d),
        // The vector's offsets and bytes as they are: the bee trims `char(n)`'s
        // blanks itself (no per-batch slice of trimmed strings).
        (Data::Str(d), KeyKind::Str(_)) => {
            let (offsets, bytes) = d.raw_parts();
            AggData::StrBuf { offsets, bytes, trim: matches!(v.ty, DataType::Char(_)) }
        }
        _ => return None,
    }))
}

fn arg_data(v: &Vector, op: AggOp) -> Option<Owned<'_>> {
    let data = match (op.input(), &v.data) {
        (None, _) => AggData::None,
        (_, Data::Dec64(d)) if matches!(op, AggOp::SumDec | AggOp::AvgDec) => AggData::I64(&d.values),
        (Some(ValKind::Bool), Data::Bool(d)) => AggData::Bool(d),
        (Some(ValKind::Int(2)), Data::I16(d)) => AggData::I16(d),
        (Some(ValKind::Int(4)), Data::I32(d)) => AggData::I32(d),
        (Some(ValKind::Int(8)), Data::I64(d)) => AggData::I64(d),
        (Some(ValKind::Int(8)), Data::Dec64(_)) => dec_data(v)?,
        (Some(ValKind::Float(4)), Data::F32(d)) => AggData::F32(d),
        (Some(ValKind::Float(8)), Data::F64(d)) => AggData::F64(d),
        _ => return None,
    };
    Some(Owned::Borrowed(data))
}

/// The scale of each numeric sum's or average's argument vector (`None` for the
/// other aggregates): the bee's sums are at the scale of the first batch.
pub fn dec_scales(bee: &AggBee, args: &[Option<&Vector>]) -> Vec<Option<u8>> {
    args.iter()
        .zip(&bee.spec().aggs)
        .map(|(v, op)| match (v, op) {
            (Some(v), AggOp::SumDec | AggOp::AvgDec) => match &v.data {
                Data::Dec64(d) => Some(d.scale),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

/// The inputs' values for `bee`: group key vectors `keys`, one argument vector per
/// aggregate (`None` for count(*)); `None` when a vector is not in the form the
/// spec expects.
pub fn inputs<'a>(bee: &AggBee, keys: &'a [Vector], args: &[Option<&'a Vector>]) -> Option<(Vec<Owned<'a>>, Vec<Owned<'a>>)> {
    let spec = bee.spec();
    let k = keys.iter().zip(&spec.keys).map(|(v, &kind)| key_data(v, kind)).collect::<Option<Vec<_>>>()?;
    let a = args
        .iter()
        .zip(&spec.aggs)
        .map(|(v, &op)| match v {
            Some(v) => arg_data(v, op),
            None if op == AggOp::CountStar => Some(Owned::Borrowed(AggData::None)),
            None => None,
        })
        .collect::<Option<Vec<_>>>()?;
    Some((k, a))
}

/// A bee input over `data` with the NULL mask of `v`.
pub fn input<'a>(data: &'a Owned<'a>, v: Option<&'a Vector>) -> AggInput<'a> {
    AggInput {
        data: match data {
            Owned::Borrowed(d) => *d,
        },
        nulls: v.and_then(|v| v.nulls.as_deref()),
    }
}

/// An aggregate bee in a plan node (compared by identity).
#[derive(Clone)]
pub struct AggBees(pub Arc<AggBee>);

impl PartialEq for AggBees {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl std::fmt::Debug for AggBees {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "AggBees(aggregate #{})", self.0.info().id)
    }
}
