//! The generic twin of aggregate bees: interprets an [`AggSpec`] row by row, as
//! [`crate::agg`] defines it. The differential tests hold both makers to it.

use std::cmp::Ordering;

use crate::agg::{
    AccState, AggData, AggError, AggInput, AggOp, AggSpec, AggTable, KeyKind, KeyMap, check_inputs, float_bits, float_order,
};

/// An empty table for the twin.
pub fn table(spec: &AggSpec) -> AggTable {
    AggTable::new(spec, KeyMap::Std(Default::default()))
}

/// Row `k`'s packed key; `None` when a value does not fit its part.
pub fn pack(spec: &AggSpec, keys: &[AggInput<'_>], k: usize) -> Option<u128> {
    let offs = spec.offsets();
    let mut key = 0u128;
    for (i, (kind, input)) in spec.keys.iter().zip(keys).enumerate() {
        if input.is_null(k) {
            key |= 1u128 << spec.null_bit(i);
            continue;
        }
        let v: u128 = match (*kind, input.data) {
            (KeyKind::Bool, AggData::Bool(d)) => d[k] as u128,
            (KeyKind::Int(_), AggData::I16(d)) => d[k] as u16 as u128,
            (KeyKind::Int(_), AggData::I32(d)) => d[k] as u32 as u128,
            (KeyKind::Int(_), AggData::I64(d)) => d[k] as u64 as u128,
            (KeyKind::Float(_), AggData::F32(d)) => float_bits(d[k] as f64) as u128,
            (KeyKind::Float(_), AggData::F64(d)) => float_bits(d[k]) as u128,
            (KeyKind::Str(w), d @ (AggData::Str(_) | AggData::StrBuf { .. })) => {
                let s = d.str_at(k);
                if s.len() > w as usize {
                    return None;
                }
                let mut v = 0u128;
                for (j, &b) in s.iter().enumerate() {
                    v |= (b as u128) << (8 * j);
                }
                v | ((s.len() as u128) << (8 * w as u32))
            }
            _ => unreachable!("inputs are checked"),
        };
        key |= v << offs[i];
    }
    Some(key)
}

fn int(d: AggData<'_>, k: usize) -> i64 {
    match d {
        AggData::Bool(d) => d[k] as i64,
        AggData::I16(d) => d[k] as i64,
        AggData::I32(d) => d[k] as i64,
        AggData::I64(d) => d[k],
        _ => unreachable!("inputs are checked"),
    }
}

fn float(d: AggData<'_>, k: usize) -> f64 {
    match d {
        AggData::F32(d) => d[k] as f64,
        AggData::F64(d) => d[k],
        _ => unreachable!("inputs are checked"),
    }
}

/// The twin's [`crate::AggBee::update`].
pub fn update(
    spec: &AggSpec,
    t: &mut AggTable,
    keys: &[AggInput<'_>],
    args: &[AggInput<'_>],
    n: usize,
    new_rows: &mut Vec<u32>,
) -> Result<(), AggError> {
    check_inputs(spec, keys, args, n)?;
    // Every key is packed before anything changes.
    let packed = (0..n).map(|k| pack(spec, keys, k)).collect::<Option<Vec<u128>>>().ok_or(AggError::Unpackable)?;
    let KeyMap::Std(map) = &mut t.map else { unreachable!("the twin's table") };
    let mut gids = Vec::with_capacity(n);
    for (k, &p) in packed.iter().enumerate() {
        let next = map.len() as u32;
        let g = *map.entry(p).or_insert(next);
        if g == next {
            new_rows.push(k as u32);
        }
        gids.push(g);
    }
    let groups = map.len();
    t.set_groups(groups);
    t.gids = gids;
    for k in 0..n {
        let g = t.gids[k] as usize;
        for (a, ((op, input), acc)) in spec.aggs.iter().zip(args).zip(t.accs.iter_mut()).enumerate() {
            if *op != AggOp::CountStar && input.is_null(k) {
                continue;
            }
            match (op, acc) {
                (AggOp::CountStar | AggOp::Count, AccState::Count(c)) => c[g] += 1,
                (AggOp::SumInt(_), AccState::SumI64 { sum, has }) => {
                    sum[g] = sum[g].checked_add(int(input.data, k)).ok_or(AggError::Overflow { agg: a })?;
                    has[g] = true;
                }
                (AggOp::SumWide(_) | AggOp::SumDec, AccState::SumI128 { sum, has }) => {
                    sum[g] += int(input.data, k) as i128;
                    has[g] = true;
                }
                (AggOp::AvgInt(_) | AggOp::AvgDec, AccState::AvgI128 { sum, n }) => {
                    sum[g] += int(input.data, k) as i128;
                    n[g] += 1;
                }
                (AggOp::SumFloat(_), AccState::SumF64 { sum, has }) => {
                    sum[g] += float(input.data, k);
                    has[g] = true;
                }
                (AggOp::AvgFloat(_), AccState::AvgF64 { sum, n }) => {
                    sum[g] += float(input.data, k);
                    n[g] += 1;
                }
                (AggOp::Min(_) | AggOp::Max(_), AccState::BestI64 { v, has }) => {
                    let x = int(input.data, k);
                    let o = x.cmp(&v[g]);
                    let better = if matches!(op, AggOp::Max(_)) { o == Ordering::Greater } else { o == Ordering::Less };
                    if !has[g] || better {
                        v[g] = x;
                        has[g] = true;
                    }
                }
                (AggOp::Min(_) | AggOp::Max(_), AccState::BestF64 { v, has }) => {
                    let x = float(input.data, k);
                    let o = float_order(x, v[g]);
                    let better = if matches!(op, AggOp::Max(_)) { o == Ordering::Greater } else { o == Ordering::Less };
                    if !has[g] || better {
                        v[g] = x;
                        has[g] = true;
                    }
                }
                (op, acc) => unreachable!("{op:?} with {acc:?}"),
            }
        }
    }
    Ok(())
}
