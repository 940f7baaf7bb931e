//! Hash aggregation: groups by the normalized key of the group expressions, with
//! count(*), count, sum, avg, min and max (optionally DISTINCT) per group.
//!
//! Result types follow `AggCall.ty`: sum of smallint/integer → bigint (overflow is an
//! error), sum of bigint → numeric, avg of integers and numerics → numeric
//! (`Decimal::div`, PostgreSQL's scale), float sums and averages → real/double.

use rustc_hash::{FxHashMap, FxHashSet};

use super::keys::{cmp_with_value, push_key, row_key};
use super::{Exec, Flow, Out, make_batch};
use crate::error::{Error, Result};
use crate::expr::Expr;
use crate::plan::{AggCall, AggFunc, Plan};
use crate::types::{DataType, Decimal, Interval, Value};
use crate::vector::{BATCH_SIZE, Data, Vector};

pub(super) enum Acc {
    Count(Vec<i64>),
    /// smallint/integer → bigint.
    SumInt(Vec<Option<i64>>),
    /// bigint → numeric (exact in i128).
    SumWide(Vec<Option<i128>>),
    SumDec(Vec<Option<Decimal>>),
    SumFloat(Vec<Option<f64>>),
    SumInterval(Vec<Option<Interval>>),
    AvgWide(Vec<(i128, i64)>),
    AvgDec(Vec<(Decimal, i64)>),
    AvgFloat(Vec<(f64, i64)>),
    AvgInterval(Vec<(Interval, i64)>),
    MinMax {
        max: bool,
        vals: Vec<Value>,
    },
}

fn bigint_overflow() -> Error {
    Error::data("22003", "bigint out of range")
}

impl Acc {
    pub(super) fn new(call: &AggCall) -> Result<Acc> {
        let arg_ty = call.arg.as_ref().map(|a| a.ty);
        Ok(match (call.func, arg_ty) {
            (AggFunc::CountStar | AggFunc::Count, _) => Acc::Count(Vec::new()),
            (AggFunc::Min, _) => Acc::MinMax {
                max: false,
                vals: Vec::new(),
            },
            (AggFunc::Max, _) => Acc::MinMax {
                max: true,
                vals: Vec::new(),
            },
            (AggFunc::Sum, Some(DataType::SmallInt | DataType::Integer)) => Acc::SumInt(Vec::new()),
            (AggFunc::Sum, Some(DataType::BigInt)) => Acc::SumWide(Vec::new()),
            (AggFunc::Sum, Some(DataType::Decimal { .. })) => Acc::SumDec(Vec::new()),
            (AggFunc::Sum, Some(DataType::Real | DataType::Double)) => Acc::SumFloat(Vec::new()),
            (AggFunc::Sum, Some(DataType::Interval)) => Acc::SumInterval(Vec::new()),
            (AggFunc::Avg, Some(DataType::SmallInt | DataType::Integer | DataType::BigInt)) => {
                Acc::AvgWide(Vec::new())
            }
            (AggFunc::Avg, Some(DataType::Decimal { .. })) => Acc::AvgDec(Vec::new()),
            (AggFunc::Avg, Some(DataType::Real | DataType::Double)) => Acc::AvgFloat(Vec::new()),
            (AggFunc::Avg, Some(DataType::Interval)) => Acc::AvgInterval(Vec::new()),
            (f, t) => {
                return Err(Error::internal(format!(
                    "aggregate {f:?} over {}",
                    t.map_or("nothing".to_string(), |t| t.to_string())
                )));
            }
        })
    }

    pub(super) fn push_group(&mut self) {
        match self {
            Acc::Count(v) => v.push(0),
            Acc::SumInt(v) => v.push(None),
            Acc::SumWide(v) => v.push(None),
            Acc::SumDec(v) => v.push(None),
            Acc::SumFloat(v) => v.push(None),
            Acc::SumInterval(v) => v.push(None),
            Acc::AvgWide(v) => v.push((0, 0)),
            Acc::AvgDec(v) => v.push((Decimal::ZERO, 0)),
            Acc::AvgFloat(v) => v.push((0.0, 0)),
            Acc::AvgInterval(v) => v.push((Interval::ZERO, 0)),
            Acc::MinMax { vals, .. } => vals.push(Value::Null),
        }
    }

    /// Adds rows `rows` (indices into `gids` and `arg`) to their groups.
    pub(super) fn update(&mut self, gids: &[u32], arg: Option<&Vector>, rows: &[u32]) -> Result<()> {
        let Some(arg) = arg else {
            // count(*)
            if let Acc::Count(c) = self {
                for &k in rows {
                    c[gids[k as usize] as usize] += 1;
                }
            }
            return Ok(());
        };
        let live = rows
            .iter()
            .map(|&k| k as usize)
            .filter(|&k| !arg.is_null(k));
        macro_rules! each_int {
            ($f:expr) => {
                match &arg.data {
                    Data::I16(d) => {
                        for k in live {
                            $f(gids[k] as usize, d[k] as i64)?;
                        }
                    }
                    Data::I32(d) => {
                        for k in live {
                            $f(gids[k] as usize, d[k] as i64)?;
                        }
                    }
                    Data::I64(d) => {
                        for k in live {
                            $f(gids[k] as usize, d[k])?;
                        }
                    }
                    _ => {
                        return Err(Error::internal(
                            "integer aggregate over a non-integer vector",
                        ))
                    }
                }
            };
        }
        match self {
            Acc::Count(c) => {
                for k in live {
                    c[gids[k] as usize] += 1;
                }
            }
            Acc::SumInt(s) => each_int!(|g: usize, x: i64| -> Result<()> {
                s[g] = Some(
                    s[g].unwrap_or(0)
                        .checked_add(x)
                        .ok_or_else(bigint_overflow)?,
                );
                Ok(())
            }),
            Acc::SumWide(s) => each_int!(|g: usize, x: i64| -> Result<()> {
                s[g] = Some(s[g].unwrap_or(0) + x as i128);
                Ok(())
            }),
            Acc::AvgWide(s) => each_int!(|g: usize, x: i64| -> Result<()> {
                s[g].0 += x as i128;
                s[g].1 += 1;
                Ok(())
            }),
            Acc::SumDec(s) => {
                let Data::Dec(d) = &arg.data else {
                    return Err(Error::internal("numeric sum over a non-numeric vector"));
                };
                for k in live {
                    let g = gids[k] as usize;
                    s[g] = Some(match &s[g] {
                        None => d[k],
                        Some(a) => a.add(&d[k])?,
                    });
                }
            }
            Acc::AvgDec(s) => {
                let Data::Dec(d) = &arg.data else {
                    return Err(Error::internal("numeric avg over a non-numeric vector"));
                };
                for k in live {
                    let g = gids[k] as usize;
                    s[g].0 = s[g].0.add(&d[k])?;
                    s[g].1 += 1;
                }
            }
            Acc::SumFloat(_) | Acc::AvgFloat(_) => {
                let get = |k: usize| -> f64 {
                    match &arg.data {
                        Data::F32(d) => d[k] as f64,
                        Data::F64(d) => d[k],
                        _ => f64::NAN,
                    }
                };
                match self {
                    Acc::SumFloat(s) => {
                        for k in live {
                            let g = gids[k] as usize;
                            s[g] = Some(s[g].unwrap_or(0.0) + get(k));
                        }
                    }
                    Acc::AvgFloat(s) => {
                        for k in live {
                            let g = gids[k] as usize;
                            s[g].0 += get(k);
                            s[g].1 += 1;
                        }
                    }
                    _ => unreachable!(),
                }
            }
            Acc::SumInterval(s) => {
                let Data::Interval(d) = &arg.data else {
                    return Err(Error::internal("interval sum over a non-interval vector"));
                };
                for k in live {
                    let g = gids[k] as usize;
                    s[g] = Some(match &s[g] {
                        None => d[k],
                        Some(a) => a.checked_add(&d[k])?,
                    });
                }
            }
            Acc::AvgInterval(s) => {
                let Data::Interval(d) = &arg.data else {
                    return Err(Error::internal("interval avg over a non-interval vector"));
                };
                for k in live {
                    let g = gids[k] as usize;
                    s[g].0 = s[g].0.checked_add(&d[k])?;
                    s[g].1 += 1;
                }
            }
            Acc::MinMax { max, vals } => {
                for k in live {
                    let g = gids[k] as usize;
                    let better = match &vals[g] {
                        Value::Null => true,
                        cur => {
                            let o = cmp_with_value(arg, k, cur);
                            if *max { o.is_gt() } else { o.is_lt() }
                        }
                    };
                    if better {
                        vals[g] = arg.value(k);
                    }
                }
            }
        }
        Ok(())
    }

    /// The result of group `g` as a value of type `ty`.
    pub(super) fn result(&self, g: usize, ty: &DataType) -> Result<Value> {
        let float = |x: f64| match ty {
            DataType::Real => Value::Real(x as f32),
            _ => Value::Double(x),
        };
        Ok(match self {
            Acc::Count(c) => Value::BigInt(c[g]),
            Acc::SumInt(s) => s[g].map_or(Value::Null, Value::BigInt),
            Acc::SumWide(s) => match s[g] {
                None => Value::Null,
                Some(x) => Value::Decimal(Decimal::new(x, 0)?),
            },
            Acc::SumDec(s) => s[g].map_or(Value::Null, Value::Decimal),
            Acc::SumFloat(s) => s[g].map_or(Value::Null, float),
            Acc::SumInterval(s) => s[g].map_or(Value::Null, Value::Interval),
            Acc::AvgWide(s) => match s[g] {
                (_, 0) => Value::Null,
                (sum, n) => Value::Decimal(Decimal::new(sum, 0)?.div(&Decimal::from_i64(n))?),
            },
            Acc::AvgDec(s) => match s[g] {
                (_, 0) => Value::Null,
                (sum, n) => Value::Decimal(sum.div(&Decimal::from_i64(n))?),
            },
            Acc::AvgFloat(s) => match s[g] {
                (_, 0) => Value::Null,
                (sum, n) => float(sum / n as f64),
            },
            Acc::AvgInterval(s) => match s[g] {
                (_, 0) => Value::Null,
                (sum, n) => Value::Interval(sum.checked_div_f64(n as f64)?),
            },
            Acc::MinMax { vals, .. } => vals[g].clone(),
        })
    }

    fn bytes(&self) -> usize {
        match self {
            Acc::MinMax { vals, .. } => vals.len() * 48,
            _ => 0,
        }
    }
}

#[allow(clippy::too_many_arguments)]
pub(super) fn aggregate(
    ex: &Exec<'_>,
    plan: &Plan,
    id: usize,
    input: &Plan,
    groups: &[Expr],
    aggs: &[AggCall],
    out: Out,
) -> Result<Flow> {
    let group_types: Vec<DataType> = groups.iter().map(|e| e.ty).collect();
    let mut group_cols: Vec<Vector> = group_types.iter().map(|t| Vector::new(*t, 16)).collect();
    let mut map: FxHashMap<Vec<u8>, u32> = FxHashMap::default();
    let mut accs = aggs.iter().map(Acc::new).collect::<Result<Vec<_>>>()?;
    let mut seen: Vec<FxHashSet<(u32, Vec<u8>)>> =
        aggs.iter().map(|_| FxHashSet::default()).collect();
    let mut ngroups = 0usize;
    let mut key_bytes = 0usize;
    if groups.is_empty() {
        ngroups = 1;
        for a in &mut accs {
            a.push_group();
        }
    }
    let mut key = Vec::new();
    ex.node(input, id + 1, None, &mut |b| {
        let n = b.rows();
        if n == 0 {
            return Ok(Flow::Continue);
        }
        let gv = groups
            .iter()
            .map(|e| ex.eval(e, &b))
            .collect::<Result<Vec<_>>>()?;
        let gids: Vec<u32> = if groups.is_empty() {
            vec![0; n]
        } else {
            let mut g = Vec::with_capacity(n);
            for k in 0..n {
                key.clear();
                row_key(&gv, k, &mut key);
                let gid = match map.get(&key) {
                    Some(&gid) => gid,
                    None => {
                        let gid = ngroups as u32;
                        key_bytes += key.len() + 40;
                        map.insert(key.clone(), gid);
                        for (c, v) in group_cols.iter_mut().zip(&gv) {
                            c.push_from(v, k);
                        }
                        for a in &mut accs {
                            a.push_group();
                        }
                        ngroups += 1;
                        gid
                    }
                };
                g.push(gid);
            }
            g
        };
        let all: Vec<u32> = (0..n as u32).collect();
        for (i, call) in aggs.iter().enumerate() {
            let arg = match &call.arg {
                Some(e) if call.func != AggFunc::CountStar => Some(ex.eval(e, &b)?),
                _ => None,
            };
            if call.distinct
                && let Some(a) = &arg
            {
                let mut rows = Vec::new();
                for (k, &g) in gids.iter().enumerate() {
                    if a.is_null(k) {
                        continue;
                    }
                    let mut kb = Vec::new();
                    push_key(a, k, &mut kb);
                    if seen[i].insert((g, kb)) {
                        key_bytes += 64;
                        rows.push(k as u32);
                    }
                }
                accs[i].update(&gids, Some(a), &rows)?;
            } else {
                accs[i].update(&gids, arg.as_ref(), &all)?;
            }
        }
        let bytes = key_bytes
            + group_cols.iter().map(|c| c.heap_bytes()).sum::<usize>()
            + ngroups * (aggs.len() * 24 + 8)
            + accs.iter().map(Acc::bytes).sum::<usize>();
        ex.check_mem("HashAggregate", bytes)?;
        Ok(Flow::Continue)
    })?;
    drop(map);
    drop(seen);
    let types = plan.types();
    let mut start = 0;
    while start < ngroups {
        let end = (start + BATCH_SIZE).min(ngroups);
        let mut cols = Vec::with_capacity(types.len());
        let pos: Vec<u32> = (start as u32..end as u32).collect();
        for (c, t) in group_cols.iter().zip(&types) {
            let mut v = c.gather(&pos);
            v.ty = *t;
            cols.push(v);
        }
        for (i, a) in accs.iter().enumerate() {
            let ty = types[groups.len() + i];
            let mut v = Vector::new(ty, end - start);
            for g in start..end {
                v.push_value(&cast_to(a.result(g, &ty)?, &ty)?);
            }
            cols.push(v);
        }
        if out(make_batch(cols, end - start))? == Flow::Stop {
            return Ok(Flow::Stop);
        }
        start = end;
    }
    Ok(Flow::Continue)
}

/// A result value in the physical form of `ty` (e.g. a bigint count as numeric).
pub(super) fn cast_to(v: Value, ty: &DataType) -> Result<Value> {
    if v.is_null() {
        return Ok(v);
    }
    let same = match (&v, ty) {
        (
            Value::Decimal(_),
            DataType::Decimal {
                precision: None, ..
            },
        ) => true,
        (Value::Decimal(_), DataType::Decimal { .. }) => false,
        _ => v.data_type().is_some_and(|t| {
            crate::vector::PhysicalType::of(&t) == crate::vector::PhysicalType::of(ty)
        }),
    };
    if same { Ok(v) } else { Ok(v.cast(ty)?) }
}
