//! Hash aggregation: groups by the normalized key of the group expressions, with
//! count(*), count, sum, avg, min, max, string_agg, bool_and/bool_or, the variances
//! and standard deviations and the statistics of (Y, X) pairs (optionally DISTINCT)
//! per group, over grouping sets, and `string_agg(… ORDER BY …)` (its rows held,
//! then sorted per group).
//!
//! Result types follow `AggCall.ty`: sum of smallint/integer → bigint (overflow is an
//! error), sum of bigint → numeric, avg of integers and numerics → numeric
//! (`Decimal::div`, PostgreSQL's scale), float sums and averages → real/double.

use std::cmp::Ordering;
use std::sync::Arc;

use beedb_bees::agg::AccState;
use beedb_bees::{AggBee, AggTable};
use rustc_hash::FxHashSet;

use super::key_table::{KeyTable, NO_ID, ProbeScratch, key_hashes};
use super::spill::{BatchFile, MAX_LEVELS, Partitions};
use super::keys::{cmp_with_value, float_cmp, push_key};
use super::{Exec, Flow, Out, make_batch};
use crate::error::{Error, Result};
use crate::expr::Expr;
use crate::plan::{AggCall, AggFunc, Plan};
use crate::types::{DataType, Decimal, Interval, Value};
use crate::vector::{BATCH_SIZE, Data, PhysicalType, Vector};

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
    /// min/max of a fixed-width type: the best value per group in a vector of the
    /// argument's type, NULL until the group sees a value.
    MinMaxFixed {
        max: bool,
        best: Vector,
    },
    /// min/max of strings: values, replaced only when a better one comes.
    MinMax {
        max: bool,
        vals: Vec<Value>,
    },
    /// string_agg: per group the text so far (NULL until a non-NULL value), values
    /// appended in input order; `bytes` is their total length (memory_limit).
    StringAgg {
        texts: Vec<Option<String>>,
        bytes: usize,
    },
    /// string_agg(DISTINCT …): per group its distinct (value, delimiter) pairs,
    /// joined in sorted order at the end, as PostgreSQL sorts a DISTINCT aggregate's
    /// input.
    StringAggDistinct {
        parts: Vec<Vec<(String, String)>>,
        bytes: usize,
    },
    /// Variance and standard deviation of integers and numerics, exactly: count, sum
    /// and sum of squares (PostgreSQL's numeric_accum), finished as
    /// `numeric_stddev_internal` does.
    VarExact {
        func: AggFunc,
        vals: Vec<(i64, Decimal, Decimal)>,
    },
    /// Variance and standard deviation of floats: N, Sx and Sxx kept by the
    /// Youngs-Cramer update, as PostgreSQL's float8_accum (no cancellation of
    /// large, nearly equal sums).
    VarFloat {
        func: AggFunc,
        vals: Vec<[f64; 3]>,
    },
    /// Statistics of (Y, X) pairs: N, Sx, Sxx, Sy, Syy, Sxy by the Youngs-Cramer
    /// update, as PostgreSQL's float8_regr_accum.
    Regr {
        func: AggFunc,
        vals: Vec<[f64; 6]>,
    },
    /// bool_and (`and`) / bool_or: NULL until a non-NULL value.
    Bool {
        and: bool,
        vals: Vec<Option<bool>>,
    },
    /// An application-defined aggregate: its states, `None` until a group's first row.
    Udf {
        function: crate::expr::udf::AggregateUdf,
        states: Vec<Option<crate::expr::udf::AggregateState>>,
    },
}

fn bigint_overflow() -> Error {
    Error::data("22003", "bigint out of range")
}

/// `a + b` exactly as [`Decimal::add`] gives it, without its general path when both
/// have the same scale and the sum stays within 38 digits (every sum of a typed
/// numeric column until it grows that large).
#[inline]
fn dec_add(a: &Decimal, b: &Decimal) -> Result<Decimal> {
    if a.scale() == b.scale()
        && let Some(sum) = a.unscaled().checked_add(b.unscaled())
        && let Ok(d) = Decimal::new(sum, a.scale())
    {
        return Ok(d);
    }
    Ok(a.add(b)?)
}

/// Calls `f(k)` for every row `k` of `rows` (all `n` rows when `None`) where `arg` is
/// not NULL.
#[inline]
fn each_live(
    arg: &Vector,
    rows: Option<&[u32]>,
    f: impl FnMut(usize) -> Result<()>,
) -> Result<()> {
    match (rows, &arg.nulls) {
        (None, None) => (0..arg.len()).try_for_each(f),
        (None, Some(nulls)) => (0..arg.len()).filter(|&k| !nulls[k]).try_for_each(f),
        (Some(rows), _) => rows
            .iter()
            .map(|&k| k as usize)
            .filter(|&k| !arg.is_null(k))
            .try_for_each(f),
    }
}

impl Acc {
    pub(super) fn new(call: &AggCall) -> Result<Acc> {
        let arg_ty = call.arg.as_ref().map(|a| a.ty);
        let min_max = |max: bool| match arg_ty.map(|t| PhysicalType::of(&t)) {
            Some(PhysicalType::Str) | None => Acc::MinMax {
                max,
                vals: Vec::new(),
            },
            Some(_) => Acc::MinMaxFixed {
                max,
                best: Vector::new(arg_ty.unwrap_or(DataType::BigInt), 16),
            },
        };
        Ok(match (call.func, arg_ty) {
            (AggFunc::Udf, _) => match &call.udf {
                Some(u) => Acc::Udf {
                    function: u.function.clone(),
                    states: Vec::new(),
                },
                None => {
                    return Err(Error::internal(
                        "application aggregate without its function",
                    ));
                }
            },
            (AggFunc::CountStar | AggFunc::Count, _) => Acc::Count(Vec::new()),
            (AggFunc::Min, _) => min_max(false),
            (AggFunc::Max, _) => min_max(true),
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
            (AggFunc::StringAgg, Some(DataType::Text)) if call.distinct => Acc::StringAggDistinct {
                parts: Vec::new(),
                bytes: 0,
            },
            (AggFunc::StringAgg, Some(DataType::Text)) => Acc::StringAgg {
                texts: Vec::new(),
                bytes: 0,
            },
            (AggFunc::BoolAnd, Some(DataType::Boolean)) => Acc::Bool {
                and: true,
                vals: Vec::new(),
            },
            (AggFunc::BoolOr, Some(DataType::Boolean)) => Acc::Bool {
                and: false,
                vals: Vec::new(),
            },
            (
                f @ (AggFunc::StddevSamp | AggFunc::StddevPop | AggFunc::VarSamp | AggFunc::VarPop),
                Some(DataType::Real | DataType::Double),
            ) => Acc::VarFloat {
                func: f,
                vals: Vec::new(),
            },
            (f @ (AggFunc::StddevSamp | AggFunc::StddevPop | AggFunc::VarSamp | AggFunc::VarPop), _) => {
                Acc::VarExact {
                    func: f,
                    vals: Vec::new(),
                }
            }
            (f, Some(DataType::Double)) if f.is_pair_statistic() => Acc::Regr {
                func: f,
                vals: Vec::new(),
            },
            (f, t) => {
                return Err(Error::internal(format!(
                    "aggregate {f:?} over {}",
                    t.map_or("nothing".to_string(), |t| t.to_string())
                )));
            }
        })
    }

    /// Adds `n` new groups, each with no input yet.
    pub(super) fn push_groups(&mut self, n: usize) {
        match self {
            Acc::Count(v) => v.resize(v.len() + n, 0),
            Acc::SumInt(v) => v.resize(v.len() + n, None),
            Acc::SumWide(v) => v.resize(v.len() + n, None),
            Acc::SumDec(v) => v.resize(v.len() + n, None),
            Acc::SumFloat(v) => v.resize(v.len() + n, None),
            Acc::SumInterval(v) => v.resize(v.len() + n, None),
            Acc::AvgWide(v) => v.resize(v.len() + n, (0, 0)),
            Acc::AvgDec(v) => v.resize(v.len() + n, (Decimal::ZERO, 0)),
            Acc::AvgFloat(v) => v.resize(v.len() + n, (0.0, 0)),
            Acc::AvgInterval(v) => v.resize(v.len() + n, (Interval::ZERO, 0)),
            Acc::MinMaxFixed { best, .. } => {
                for _ in 0..n {
                    best.push_null();
                }
            }
            Acc::MinMax { vals, .. } => vals.resize(vals.len() + n, Value::Null),
            Acc::StringAgg { texts, .. } => texts.resize(texts.len() + n, None),
            Acc::StringAggDistinct { parts, .. } => parts.resize(parts.len() + n, Vec::new()),
            Acc::Bool { vals, .. } => vals.resize(vals.len() + n, None),
            Acc::VarExact { vals, .. } => vals.resize(vals.len() + n, (0, Decimal::ZERO, Decimal::ZERO)),
            Acc::VarFloat { vals, .. } => vals.resize(vals.len() + n, [0.0; 3]),
            Acc::Regr { vals, .. } => vals.resize(vals.len() + n, [0.0; 6]),
            Acc::Udf { states, .. } => states.resize_with(states.len() + n, || None),
        }
    }

    /// Adds rows `rows` (all rows of the batch when `None`) to their groups `gids`;
    /// `arg2` is the second argument of two-argument aggregates.
    pub(super) fn update(
        &mut self,
        gids: &[u32],
        arg: Option<&Vector>,
        arg2: Option<&Vector>,
        rows: Option<&[u32]>,
    ) -> Result<()> {
        let Some(arg) = arg else {
            // count(*)
            if let Acc::Count(c) = self {
                match rows {
                    None => gids.iter().for_each(|&g| c[g as usize] += 1),
                    Some(rows) => rows.iter().for_each(|&k| c[gids[k as usize] as usize] += 1),
                }
            }
            return Ok(());
        };
        macro_rules! each_int {
            ($f:expr) => {
                match &arg.data {
                    Data::I16(d) => each_live(arg, rows, |k| $f(gids[k] as usize, d[k] as i64)),
                    Data::I32(d) => each_live(arg, rows, |k| $f(gids[k] as usize, d[k] as i64)),
                    Data::I64(d) => each_live(arg, rows, |k| $f(gids[k] as usize, d[k])),
                    _ => Err(Error::internal("integer aggregate over a non-integer vector")),
                }
            };
        }
        match self {
            Acc::Udf { .. } => Err(Error::internal(
                "application aggregate updated as a built-in one",
            )),
            Acc::Count(c) => each_live(arg, rows, |k| {
                c[gids[k] as usize] += 1;
                Ok(())
            }),
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
                let add = |slot: &mut Option<Decimal>, x: Decimal| -> Result<()> {
                    *slot = Some(match slot {
                        None => x,
                        Some(a) => dec_add(a, &x)?,
                    });
                    Ok(())
                };
                match &arg.data {
                    Data::Dec(d) => each_live(arg, rows, |k| add(&mut s[gids[k] as usize], d[k])),
                    Data::Dec64(d) => each_live(arg, rows, |k| {
                        let slot = &mut s[gids[k] as usize];
                        // A sum already at the vector's scale takes the integer
                        // addition.
                        if let Some(a) = slot
                            && a.scale() == d.scale
                            && let Some(sum) = a.add_scaled_i64(d.values[k])
                        {
                            *a = sum;
                            return Ok(());
                        }
                        add(slot, d.get(k))
                    }),
                    _ => Err(Error::internal("numeric sum over a non-numeric vector")),
                }
            }
            Acc::AvgDec(s) => {
                let add = |slot: &mut (Decimal, i64), x: Decimal| -> Result<()> {
                    slot.0 = dec_add(&slot.0, &x)?;
                    slot.1 += 1;
                    Ok(())
                };
                match &arg.data {
                    Data::Dec(d) => each_live(arg, rows, |k| add(&mut s[gids[k] as usize], d[k])),
                    Data::Dec64(d) => each_live(arg, rows, |k| {
                        let slot = &mut s[gids[k] as usize];
                        if slot.0.scale() == d.scale
                            && let Some(sum) = slot.0.add_scaled_i64(d.values[k])
                        {
                            slot.0 = sum;
                            slot.1 += 1;
                            return Ok(());
                        }
                        add(slot, d.get(k))
                    }),
                    _ => Err(Error::internal("numeric avg over a non-numeric vector")),
                }
            }
            Acc::SumFloat(s) => match &arg.data {
                Data::F32(d) => each_live(arg, rows, |k| {
                    let g = gids[k] as usize;
                    s[g] = Some(s[g].unwrap_or(0.0) + d[k] as f64);
                    Ok(())
                }),
                Data::F64(d) => each_live(arg, rows, |k| {
                    let g = gids[k] as usize;
                    s[g] = Some(s[g].unwrap_or(0.0) + d[k]);
                    Ok(())
                }),
                _ => Err(Error::internal("float sum over a non-float vector")),
            },
            Acc::AvgFloat(s) => match &arg.data {
                Data::F32(d) => each_live(arg, rows, |k| {
                    let g = gids[k] as usize;
                    s[g].0 += d[k] as f64;
                    s[g].1 += 1;
                    Ok(())
                }),
                Data::F64(d) => each_live(arg, rows, |k| {
                    let g = gids[k] as usize;
                    s[g].0 += d[k];
                    s[g].1 += 1;
                    Ok(())
                }),
                _ => Err(Error::internal("float avg over a non-float vector")),
            },
            Acc::SumInterval(s) => {
                let Data::Interval(d) = &arg.data else {
                    return Err(Error::internal("interval sum over a non-interval vector"));
                };
                each_live(arg, rows, |k| {
                    let g = gids[k] as usize;
                    s[g] = Some(match &s[g] {
                        None => d[k],
                        Some(a) => a.checked_add(&d[k])?,
                    });
                    Ok(())
                })
            }
            Acc::AvgInterval(s) => {
                let Data::Interval(d) = &arg.data else {
                    return Err(Error::internal("interval avg over a non-interval vector"));
                };
                each_live(arg, rows, |k| {
                    let g = gids[k] as usize;
                    s[g].0 = s[g].0.checked_add(&d[k])?;
                    s[g].1 += 1;
                    Ok(())
                })
            }
            Acc::MinMaxFixed { max, best } => {
                let max = *max;
                let Some(best_nulls) = best.nulls.as_mut() else {
                    // Every group has a value already pushed as NULL; no mask means no
                    // groups.
                    return Ok(());
                };
                macro_rules! fixed {
                    ($d:expr, $b:expr, $cmp:expr) => {
                        each_live(arg, rows, |k| {
                            let g = gids[k] as usize;
                            let o: Ordering = $cmp(&$d[k], &$b[g]);
                            if best_nulls[g] || (if max { o.is_gt() } else { o.is_lt() }) {
                                $b[g] = $d[k];
                                best_nulls[g] = false;
                            }
                            Ok(())
                        })
                    };
                }
                match (&arg.data, &mut best.data) {
                    (Data::Bool(d), Data::Bool(b)) => fixed!(d, b, bool::cmp),
                    (Data::I16(d), Data::I16(b)) => fixed!(d, b, i16::cmp),
                    (Data::I32(d), Data::I32(b)) => fixed!(d, b, i32::cmp),
                    (Data::I64(d), Data::I64(b)) => fixed!(d, b, i64::cmp),
                    (Data::F32(d), Data::F32(b)) => {
                        fixed!(d, b, |x: &f32, y: &f32| float_cmp(*x as f64, *y as f64))
                    }
                    (Data::F64(d), Data::F64(b)) => {
                        fixed!(d, b, |x: &f64, y: &f64| float_cmp(*x, *y))
                    }
                    (Data::Dec(d), Data::Dec(b)) => fixed!(d, b, Decimal::cmp),
                    (Data::Dec64(d), Data::Dec64(b)) if d.scale == b.scale => {
                        fixed!(d.values, b.values, i64::cmp)
                    }
                    (Data::Dec64(_) | Data::Dec(_), Data::Dec64(_) | Data::Dec(_)) => {
                        // Scales differ: keep the best values as decimals.
                        best.data.widen_dec();
                        let Data::Dec(b) = &mut best.data else {
                            return Err(Error::internal("min/max state is not numeric"));
                        };
                        let d = arg.data.wide_dec();
                        let Data::Dec(d) = d.as_ref() else {
                            return Err(Error::internal("min/max input is not numeric"));
                        };
                        fixed!(d, b, Decimal::cmp)
                    }
                    (Data::Interval(d), Data::Interval(b)) => fixed!(d, b, Interval::cmp),
                    _ => Err(Error::internal("min/max over a vector of another type")),
                }
            }
            Acc::MinMax { max, vals } => each_live(arg, rows, |k| {
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
                Ok(())
            }),
            Acc::StringAgg { texts, bytes } => {
                let Data::Str(d) = &arg.data else {
                    return Err(Error::internal("string_agg over a non-text vector"));
                };
                // A NULL delimiter adds nothing (PostgreSQL's string_agg_transfn);
                // the first value of a group gets none.
                let delim = |k: usize| match arg2 {
                    Some(v) if !v.is_null(k) => match &v.data {
                        Data::Str(s) => s.get(k),
                        _ => "",
                    },
                    _ => "",
                };
                each_live(arg, rows, |k| {
                    let g = gids[k] as usize;
                    let value = d.get(k);
                    match &mut texts[g] {
                        None => {
                            *bytes += value.len();
                            texts[g] = Some(value.to_string());
                        }
                        Some(t) => {
                            let sep = delim(k);
                            *bytes += sep.len() + value.len();
                            t.push_str(sep);
                            t.push_str(value);
                        }
                    }
                    Ok(())
                })
            }
            Acc::StringAggDistinct { parts, bytes } => {
                let Data::Str(d) = &arg.data else {
                    return Err(Error::internal("string_agg over a non-text vector"));
                };
                each_live(arg, rows, |k| {
                    let sep = match arg2 {
                        Some(v) if !v.is_null(k) => match &v.data {
                            Data::Str(s) => s.get(k),
                            _ => "",
                        },
                        _ => "",
                    };
                    *bytes += d.get(k).len() + sep.len() + 48;
                    parts[gids[k] as usize].push((d.get(k).to_string(), sep.to_string()));
                    Ok(())
                })
            }
            Acc::VarExact { vals, .. } => {
                let mut add = |g: usize, x: Decimal| -> Result<()> {
                    let (n, sx, sxx) = &mut vals[g];
                    *n += 1;
                    *sx = dec_add(sx, &x)?;
                    *sxx = dec_add(sxx, &x.mul(&x)?)?;
                    Ok(())
                };
                match &arg.data {
                    Data::Dec(d) => each_live(arg, rows, |k| add(gids[k] as usize, d[k])),
                    Data::Dec64(d) => each_live(arg, rows, |k| add(gids[k] as usize, d.get(k))),
                    _ => each_int!(|g: usize, x: i64| add(g, Decimal::from_i64(x))),
                }
            }
            Acc::VarFloat { vals, .. } => match &arg.data {
                Data::F32(d) => each_live(arg, rows, |k| youngs_cramer(&mut vals[gids[k] as usize], d[k] as f64)),
                Data::F64(d) => each_live(arg, rows, |k| youngs_cramer(&mut vals[gids[k] as usize], d[k])),
                _ => Err(Error::internal("float variance over a non-float vector")),
            },
            Acc::Regr { vals, .. } => {
                let (Data::F64(ys), Some(xv)) = (&arg.data, arg2) else {
                    return Err(Error::internal("pair statistic without two double arguments"));
                };
                let Data::F64(xs) = &xv.data else {
                    return Err(Error::internal("pair statistic over a non-double vector"));
                };
                // Pairs with a NULL on either side are skipped.
                each_live(arg, rows, |k| {
                    if xv.is_null(k) {
                        return Ok(());
                    }
                    youngs_cramer_pair(&mut vals[gids[k] as usize], ys[k], xs[k])
                })
            }
            Acc::Bool { and, vals } => {
                let and = *and;
                let Data::Bool(d) = &arg.data else {
                    return Err(Error::internal("bool_and/bool_or over a non-boolean vector"));
                };
                each_live(arg, rows, |k| {
                    let g = gids[k] as usize;
                    vals[g] = Some(match vals[g] {
                        None => d[k],
                        Some(v) if and => v && d[k],
                        Some(v) => v || d[k],
                    });
                    Ok(())
                })
            }
        }
    }

    /// Folds `other`'s groups into this accumulator's: group `g` of `other` into
    /// group `into[g]` here. Only for the kinds [`combinable`] accepts.
    fn merge(&mut self, other: Acc, into: &[u32], call: &AggCall) -> Result<()> {
        let to = |g: usize| into[g] as usize;
        match (self, other) {
            (Acc::Count(a), Acc::Count(b)) => b.into_iter().enumerate().for_each(|(g, x)| a[to(g)] += x),
            (Acc::SumInt(a), Acc::SumInt(b)) => {
                for (g, x) in b.into_iter().enumerate() {
                    if let Some(x) = x {
                        let t = &mut a[to(g)];
                        *t = Some(t.unwrap_or(0).checked_add(x).ok_or_else(bigint_overflow)?);
                    }
                }
            }
            (Acc::SumWide(a), Acc::SumWide(b)) => {
                for (g, x) in b.into_iter().enumerate() {
                    if let Some(x) = x {
                        let t = &mut a[to(g)];
                        *t = Some(t.unwrap_or(0) + x);
                    }
                }
            }
            (Acc::SumDec(a), Acc::SumDec(b)) => {
                for (g, x) in b.into_iter().enumerate() {
                    if let Some(x) = x {
                        let t = &mut a[to(g)];
                        *t = Some(match t {
                            None => x,
                            Some(y) => dec_add(y, &x)?,
                        });
                    }
                }
            }
            (Acc::SumInterval(a), Acc::SumInterval(b)) => {
                for (g, x) in b.into_iter().enumerate() {
                    if let Some(x) = x {
                        let t = &mut a[to(g)];
                        *t = Some(match t {
                            None => x,
                            Some(y) => y.checked_add(&x)?,
                        });
                    }
                }
            }
            (Acc::AvgWide(a), Acc::AvgWide(b)) => {
                for (g, (sum, n)) in b.into_iter().enumerate() {
                    let t = &mut a[to(g)];
                    t.0 += sum;
                    t.1 += n;
                }
            }
            (Acc::AvgDec(a), Acc::AvgDec(b)) => {
                for (g, (sum, n)) in b.into_iter().enumerate() {
                    let t = &mut a[to(g)];
                    t.0 = dec_add(&t.0, &sum)?;
                    t.1 += n;
                }
            }
            (Acc::AvgInterval(a), Acc::AvgInterval(b)) => {
                for (g, (sum, n)) in b.into_iter().enumerate() {
                    let t = &mut a[to(g)];
                    t.0 = t.0.checked_add(&sum)?;
                    t.1 += n;
                }
            }
            (Acc::VarExact { vals: a, .. }, Acc::VarExact { vals: b, .. }) => {
                for (g, (n, sx, sxx)) in b.into_iter().enumerate() {
                    let t = &mut a[to(g)];
                    t.0 += n;
                    t.1 = dec_add(&t.1, &sx)?;
                    t.2 = dec_add(&t.2, &sxx)?;
                }
            }
            (Acc::Bool { and, vals: a }, Acc::Bool { vals: b, .. }) => {
                for (g, x) in b.into_iter().enumerate() {
                    if let Some(x) = x {
                        let t = &mut a[to(g)];
                        *t = Some(match *t {
                            None => x,
                            Some(y) if *and => y && x,
                            Some(y) => y || x,
                        });
                    }
                }
            }
            // Min and max: the other thread's best values are one more input.
            (me @ Acc::MinMaxFixed { .. }, Acc::MinMaxFixed { best, .. }) => me.update(into, Some(&best), None, None)?,
            (me @ Acc::MinMax { .. }, Acc::MinMax { vals, .. }) => {
                let ty = call.arg.as_ref().map_or(DataType::Text, |a| a.ty);
                let mut best = Vector::new(ty, vals.len());
                for v in &vals {
                    best.push_value(v);
                }
                me.update(into, Some(&best), None, None)?
            }
            _ => return Err(Error::internal("aggregate states of different kinds merged")),
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
            Acc::Udf { function, states } => {
                let v = function.function.finish(states[g].as_ref())?;
                crate::expr::udf::fit_result(&function.name, v, ty)?
            }
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
            Acc::MinMaxFixed { best, .. } => best.value(g),
            Acc::MinMax { vals, .. } => vals[g].clone(),
            Acc::StringAgg { texts, .. } => texts[g].clone().map_or(Value::Null, Value::Text),
            Acc::StringAggDistinct { parts, .. } => {
                // Byte order is the C collation's order (NULL delimiters sort as "",
                // not last as in PostgreSQL; only the delimiter's text can differ).
                let mut sorted: Vec<&(String, String)> = parts[g].iter().collect();
                sorted.sort();
                let mut out = String::new();
                for (i, (value, sep)) in sorted.into_iter().enumerate() {
                    if i > 0 {
                        out.push_str(sep);
                    }
                    out.push_str(value);
                }
                if parts[g].is_empty() { Value::Null } else { Value::Text(out) }
            }
            Acc::Bool { vals, .. } => vals[g].map_or(Value::Null, Value::Boolean),
            Acc::VarExact { func, vals } => {
                let (n, sx, sxx) = &vals[g];
                exact_variance(*func, *n, sx, sxx)?.map_or(Value::Null, Value::Decimal)
            }
            Acc::VarFloat { func, vals } => {
                let [n, _, sxx] = vals[g];
                let sample = matches!(func, AggFunc::StddevSamp | AggFunc::VarSamp);
                if n == 0.0 || (sample && n <= 1.0) {
                    Value::Null
                } else {
                    let var = if sample { sxx / (n - 1.0) } else { sxx / n };
                    Value::Double(match func {
                        AggFunc::StddevSamp | AggFunc::StddevPop => var.sqrt(),
                        _ => var,
                    })
                }
            }
            Acc::Regr { func, vals } => pair_statistic(*func, &vals[g]),
        })
    }

    fn bytes(&self) -> usize {
        match self {
            Acc::MinMax { vals, .. } => vals.len() * 48,
            Acc::MinMaxFixed { best, .. } => best.heap_bytes(),
            Acc::StringAgg { texts, bytes } => texts.len() * 24 + bytes,
            Acc::StringAggDistinct { parts, bytes } => parts.len() * 24 + bytes,
            Acc::Bool { vals, .. } => vals.len(),
            Acc::VarExact { vals, .. } => vals.len() * 40,
            Acc::VarFloat { vals, .. } => vals.len() * 24,
            Acc::Regr { vals, .. } => vals.len() * 48,
            // The states live in the application; count the references.
            Acc::Udf { states, .. } => states.len() * 16,
            _ => 0,
        }
    }
}

fn float_overflow() -> Error {
    Error::data("22003", "value out of range: overflow")
}

/// Adds `x` to a float variance state `[N, Sx, Sxx]` by the Youngs-Cramer update,
/// operation for operation as PostgreSQL's float8_accum (so results agree to the
/// bit): an overflow from finite inputs is an error, infinite or NaN inputs make
/// Sxx NaN.
fn youngs_cramer(s: &mut [f64; 3], x: f64) -> Result<()> {
    let [n0, sx0, _] = *s;
    let n = n0 + 1.0;
    let sx = sx0 + x;
    let mut sxx = s[2];
    if n0 > 0.0 {
        let tmp = x * n - sx;
        sxx += tmp * tmp / (n * n0);
        if sx.is_infinite() || sxx.is_infinite() {
            if !sx0.is_infinite() && !x.is_infinite() {
                return Err(float_overflow());
            }
            sxx = f64::NAN;
        }
    } else if x.is_nan() || x.is_infinite() {
        sxx = f64::NAN;
    }
    *s = [n, sx, sxx];
    Ok(())
}

/// Adds the pair (`y`, `x`) to `[N, Sx, Sxx, Sy, Syy, Sxy]` as PostgreSQL's
/// float8_regr_accum does.
fn youngs_cramer_pair(s: &mut [f64; 6], y: f64, x: f64) -> Result<()> {
    let [n0, sx0, mut sxx, sy0, mut syy, mut sxy] = *s;
    let n = n0 + 1.0;
    let sx = sx0 + x;
    let sy = sy0 + y;
    if n0 > 0.0 {
        let tmp_x = x * n - sx;
        let tmp_y = y * n - sy;
        let scale = 1.0 / (n * n0);
        sxx += tmp_x * tmp_x * scale;
        syy += tmp_y * tmp_y * scale;
        sxy += tmp_x * tmp_y * scale;
        if sx.is_infinite() || sxx.is_infinite() || sy.is_infinite() || syy.is_infinite() || sxy.is_infinite() {
            let finite_x = !sx0.is_infinite() && !x.is_infinite();
            let finite_y = !sy0.is_infinite() && !y.is_infinite();
            if ((sx.is_infinite() || sxx.is_infinite()) && finite_x)
                || ((sy.is_infinite() || syy.is_infinite()) && finite_y)
                || (sxy.is_infinite() && finite_x && finite_y)
            {
                return Err(float_overflow());
            }
            for v in [&mut sxx, &mut syy, &mut sxy] {
                if v.is_infinite() {
                    *v = f64::NAN;
                }
            }
        }
    } else {
        if x.is_nan() || x.is_infinite() {
            sxx = f64::NAN;
            sxy = f64::NAN;
        }
        if y.is_nan() || y.is_infinite() {
            syy = f64::NAN;
            sxy = f64::NAN;
        }
    }
    *s = [n, sx, sxx, sy, syy, sxy];
    Ok(())
}

/// The final value of a statistic of pairs from `[N, Sx, Sxx, Sy, Syy, Sxy]`, as
/// PostgreSQL 15's float8_covar_pop, float8_corr, float8_regr_slope, … compute it.
fn pair_statistic(func: AggFunc, s: &[f64; 6]) -> Value {
    let [n, sx, sxx, sy, syy, sxy] = *s;
    if func == AggFunc::RegrCount {
        return Value::BigInt(n as i64);
    }
    let needs = if func == AggFunc::CovarSamp { 2.0 } else { 1.0 };
    if n < needs {
        return Value::Null;
    }
    let v = match func {
        AggFunc::CovarPop => sxy / n,
        AggFunc::CovarSamp => sxy / (n - 1.0),
        // Per the standard, NULL when either variable is constant.
        AggFunc::Corr if sxx == 0.0 || syy == 0.0 => return Value::Null,
        AggFunc::Corr => sxy / (sxx * syy).sqrt(),
        AggFunc::RegrSlope | AggFunc::RegrIntercept | AggFunc::RegrR2 if sxx == 0.0 => {
            return Value::Null;
        }
        AggFunc::RegrSlope => sxy / sxx,
        AggFunc::RegrIntercept => (sy - sx * sxy / sxx) / n,
        // A horizontal line fits perfectly.
        AggFunc::RegrR2 if syy == 0.0 => 1.0,
        AggFunc::RegrR2 => (sxy * sxy) / (sxx * syy),
        AggFunc::RegrAvgX => sx / n,
        AggFunc::RegrAvgY => sy / n,
        AggFunc::RegrSxx => sxx,
        AggFunc::RegrSyy => syy,
        _ => sxy,
    };
    Value::Double(v)
}

/// Variance or standard deviation from the exact count, sum and sum of squares, as
/// PostgreSQL's `numeric_stddev_internal`: `(N·Σx² − (Σx)²) / (N·(N−1))` (or `N²`)
/// at division's result scale, the root at that same scale; 0 when the numerator is
/// not positive; NULL for no rows (or one, for the sample forms).
fn exact_variance(func: AggFunc, n: i64, sx: &Decimal, sxx: &Decimal) -> Result<Option<Decimal>> {
    let sample = matches!(func, AggFunc::StddevSamp | AggFunc::VarSamp);
    if n == 0 || (sample && n <= 1) {
        return Ok(None);
    }
    let count = Decimal::from_i64(n);
    let numerator = count.mul(sxx)?.sub(&sx.mul(sx)?)?;
    if numerator.unscaled() <= 0 {
        return Ok(Some(Decimal::ZERO));
    }
    let n = n as i128;
    let denominator = Decimal::new(if sample { n * (n - 1) } else { n * n }, 0)?;
    let variance = numerator.div(&denominator)?;
    Ok(Some(match func {
        AggFunc::StddevSamp | AggFunc::StddevPop => variance.sqrt(numerator.div_scale(&denominator))?,
        _ => variance,
    }))
}

/// One grouping set's share of an aggregation: its hash table over the group
/// expressions it keeps, and its own groups' accumulators.
struct SetState {
    /// The group expressions (indexes into the node's `groups`) this set groups by;
    /// the others are NULL in its rows.
    members: Vec<usize>,
    /// Whether `members` is every group expression in order (plain GROUP BY): the
    /// evaluated group vectors then serve as the key as they are.
    all: bool,
    table: KeyTable,
    accs: Vec<Acc>,
    /// Per DISTINCT aggregate: the (group, argument key) pairs seen.
    seen: Vec<FxHashSet<(u32, Vec<u8>)>>,
    ngroups: usize,
    distinct_bytes: usize,
    /// Per aggregate with an ORDER BY: its input rows, held until the input ends,
    /// then sorted and fed to the accumulator (empty for the others).
    ordered: Vec<Vec<OrderedRow>>,
    /// What `ordered` holds, counted against memory_limit.
    ordered_bytes: usize,
    /// The group keys of an aggregate bee's groups settled for output only
    /// ([`Grouping::settle`] without an index): `table` is then empty.
    output_keys: Option<Vec<Vector>>,
}

impl SetState {
    /// Folds another thread's state of the same set into this one (parallel
    /// aggregation, whose aggregates are all [`combinable`]: no DISTINCT or ORDER BY
    /// rows to carry over).
    fn merge(&mut self, other: SetState, aggs: &[AggCall]) -> Result<()> {
        let into: Vec<u32> = if self.members.is_empty() {
            vec![0; other.ngroups]
        } else {
            let n = other.ngroups;
            let keys = match other.output_keys {
                Some(keys) => keys,
                None => other.table.into_keys(),
            };
            let mut ids = Vec::with_capacity(n);
            self.table.insert(&keys, n, false, &mut ids);
            if self.table.len() > self.ngroups {
                for a in &mut self.accs {
                    a.push_groups(self.table.len() - self.ngroups);
                }
                self.ngroups = self.table.len();
            }
            ids
        };
        for ((acc, from), call) in self.accs.iter_mut().zip(other.accs).zip(aggs) {
            acc.merge(from, &into, call)?;
        }
        Ok(())
    }
}

/// One input row of an aggregate with ORDER BY (`string_agg(x, ',' ORDER BY y)`).
struct OrderedRow {
    group: u32,
    arg: Value,
    arg2: Value,
    keys: Vec<Value>,
}

/// An aggregate's arguments evaluated over one input batch: for a built-in one its
/// arguments and its ORDER BY keys.
enum Args {
    Builtin(Option<Vector>, Option<Vector>, Vec<Vector>),
    Udf(Vec<Vec<Value>>),
}

/// `a` against `b` under the ORDER BY `keys` (NULLs placed as each key says).
fn cmp_order_keys(a: &[Value], b: &[Value], keys: &[crate::plan::SortKey]) -> Ordering {
    for ((x, y), k) in a.iter().zip(b).zip(keys) {
        let o = match (x.is_null(), y.is_null()) {
            (true, true) => Ordering::Equal,
            (true, false) => if k.nulls_first { Ordering::Less } else { Ordering::Greater },
            (false, true) => if k.nulls_first { Ordering::Greater } else { Ordering::Less },
            (false, false) => {
                let o = x.cmp_sql(y).unwrap_or(Ordering::Equal);
                if k.desc { o.reverse() } else { o }
            }
        };
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

/// Feeds an ORDER BY aggregate's held rows to its accumulator, each group's rows in
/// the call's order (a stable sort: rows tied on every key keep their input order).
fn feed_ordered(acc: &mut Acc, call: &AggCall, mut rows: Vec<OrderedRow>) -> Result<()> {
    rows.sort_by(|x, y| x.group.cmp(&y.group).then_with(|| cmp_order_keys(&x.keys, &y.keys, &call.order)));
    let Some(arg_ty) = call.arg.as_ref().map(|e| e.ty) else {
        return Err(Error::internal("an aggregate with ORDER BY but no argument"));
    };
    for chunk in rows.chunks(BATCH_SIZE) {
        let gids: Vec<u32> = chunk.iter().map(|r| r.group).collect();
        let mut arg = Vector::new(arg_ty, chunk.len());
        chunk.iter().for_each(|r| arg.push_value(&r.arg));
        let arg2 = call.arg2.as_ref().map(|e| {
            let mut v = Vector::new(e.ty, chunk.len());
            chunk.iter().for_each(|r| v.push_value(&r.arg2));
            v
        });
        acc.update(&gids, Some(&arg), arg2.as_ref(), None)?;
    }
    Ok(())
}

/// Hash aggregation. With grouping sets (`sets` not empty) the input is read once:
/// each row is added to one group of every set (one hash lookup and one update of
/// each aggregate per set), and each set keeps its own table and accumulators, so
/// time and memory grow with the number of sets; the output is each set's groups in
/// turn, with NULL for the group expressions the set leaves out and the set's index
/// in the column after the groups (`grouping()` is computed from it above).
///
/// **Over `memory_limit`** a plain GROUP BY spills (hybrid hash aggregation): once
/// its state passes a threshold ([`Spill::threshold`]) it admits no new group. The
/// rows of the groups it holds still update them in place; the rows of any other
/// group go, as input rows, to temporary files split by a hash of their group key
/// ([`Partitions`]). When the input ends the held groups are output and dropped,
/// and each file is aggregated alone the same way (splitting again by other hash
/// bits if it too outgrows the limit). A group's rows are therefore all in memory
/// or all in one file, in their input order, so every aggregate (DISTINCT, ORDER
/// BY, string_agg and application aggregates too) gives what it gives in memory;
/// only the order of the groups differs. Grouping sets and aggregates without
/// GROUP BY do not spill.
#[allow(clippy::too_many_arguments)]
pub(super) fn aggregate(
    ex: &Exec<'_>,
    plan: &Plan,
    id: usize,
    input: &Plan,
    groups: &[Expr],
    sets: &[Vec<usize>],
    aggs: &[AggCall],
    bee: Option<&crate::bees::AggBees>,
    out: Out,
) -> Result<Flow> {
    let plain: Vec<Vec<usize>>;
    let set_lists: &[Vec<usize>] = if sets.is_empty() {
        plain = vec![(0..groups.len()).collect()];
        &plain
    } else {
        sets
    };
    let cx = Cx {
        plan,
        id,
        groups,
        sets,
        set_lists,
        aggs,
        spill: (sets.is_empty() && !groups.is_empty()).then(|| Spill {
            input_types: input.types(),
            growing: aggs.iter().any(|c| !combinable(c)),
        }),
        // The bee's spec exists only for a plain GROUP BY (no sets).
        bee: bee.filter(|_| sets.is_empty() && !groups.is_empty()).map(|b| b.0.clone()),
    };
    let make = || Grouping::new(&cx);
    let each = |ex: &Exec<'_>, g: &mut Grouping, b| add_batch(ex, &cx, g, 0, b, None);
    // The optimizer gave the input several threads only when it is a pipeline over a
    // large scan and every aggregate merges exactly (`combinable`).
    let parallel = (plan.workers > 1)
        .then(|| crate::plan::pipeline::pipeline(input, id + 1))
        .flatten();
    let serial = || -> Result<Grouping> {
        let mut g = make()?;
        ex.node(input, id + 1, None, &mut |b| {
            add_batch(ex, &cx, &mut g, 0, b, None)?;
            Ok(Flow::Continue)
        })?;
        Ok(g)
    };
    let partial = match parallel {
        Some(p) => match super::parallel::run_pipeline(ex, &p, input, id + 1, plan.workers, &make, &each) {
            Ok(partial) => Some(partial),
            // A pipeline's join builds are held in memory for its threads to share:
            // one too large for that runs again on one thread, where it can spill.
            Err(e) if e.sqlstate == "53200" => None,
            Err(e) => return Err(e),
        },
        None => None,
    };
    match partial {
        Some(partial) => {
            let mut partial = partial.into_iter();
            let mut held = partial.next().ok_or_else(|| Error::internal("a parallel aggregate without threads"))?;
            let mut spilled = Vec::new();
            held.settle(cx.aggs)?;
            spilled.extend(held.spill.take());
            for mut other in partial {
                // Merging reads only the other state's keys and accumulators.
                other.settle_for_output(cx.aggs)?;
                spilled.extend(other.spill.take());
                for (into, from) in held.states.iter_mut().zip(other.states) {
                    into.merge(from, aggs)?;
                }
            }
            if spilled.is_empty() {
                return finish(ex, &cx, held, 0, out);
            }
            // A group the merged state holds may have rows in another thread's
            // files: every spilled row goes through the merged state once more,
            // updating the groups it holds and spilling the others again.
            held.spill = Some(Partitions::new(&cx.record_types(), 1, ex.ctx.memory_limit / 8));
            // Parallel aggregates are all combinable: a held group's state does not
            // grow with its rows, so the merged state stays as large as it is.
            held.spilled_at = usize::MAX;
            for parts in spilled {
                let files = parts.finish_recorded(ex, id)?;
                for file in files.into_iter().flatten() {
                    feed_part(ex, &cx, &mut held, 1, file)?;
                }
            }
            finish(ex, &cx, held, 1, out)
        }
        None => finish(ex, &cx, serial()?, 0, out),
    }
}

/// What an aggregation node is: its plan's pieces, and whether and how it spills.
struct Cx<'p> {
    plan: &'p Plan,
    id: usize,
    groups: &'p [Expr],
    sets: &'p [Vec<usize>],
    set_lists: &'p [Vec<usize>],
    aggs: &'p [AggCall],
    /// `None` when the node cannot spill (grouping sets, no GROUP BY).
    spill: Option<Spill>,
    /// The aggregate bee, when `bee_agg` gave the node one (plain GROUP BY only).
    bee: Option<Arc<AggBee>>,
}

impl Cx<'_> {
    /// What a spilled record holds: the group keys, then the input row.
    fn record_types(&self) -> Vec<DataType> {
        self.spill.as_ref().map_or_else(Vec::new, |s| s.record_types(self))
    }
}

/// How an aggregation spills.
struct Spill {
    /// The input's column types: what the temporary files hold.
    input_types: Vec<DataType>,
    /// Whether some aggregate's state grows with its group's rows (string_agg,
    /// DISTINCT, ORDER BY, application aggregates): the held groups keep growing
    /// after spilling starts, so it starts earlier.
    growing: bool,
}

impl Spill {
    fn record_types(&self, cx: &Cx<'_>) -> Vec<DataType> {
        cx.groups.iter().map(|e| e.ty).chain(self.input_types.iter().copied()).collect()
    }

    /// The state's bytes at which it stops admitting groups: well below the limit,
    /// which stays a hard one for what the held groups still add.
    fn threshold(&self, memory_limit: usize) -> usize {
        if self.growing { memory_limit / 2 } else { memory_limit / 4 * 3 }
    }
}

/// What one thread holds of an aggregation: its sets' states, and once it has
/// spilled, the rows of the groups it does not hold.
struct Grouping {
    states: Vec<SetState>,
    gids: Vec<u32>,
    spill: Option<Partitions>,
    /// The states' bytes when spilling started: the batch that crossed the
    /// threshold may have grown a hash table past the limit itself, and the held
    /// groups may stay that large (but grow no further past the limit).
    spilled_at: usize,
    ids: Vec<u32>,
    hashes: Vec<u64>,
    scratch: ProbeScratch,
    /// While the aggregate bee groups: its table and the group keys. Its state moves
    /// into `states[0]` ([`Grouping::settle`]) before anything else reads the
    /// states (spilling, merging threads, output) or when an input batch is not in
    /// the form the bee takes; the generic path goes on from there.
    bee: Option<BeeState>,
}

/// An aggregate bee's grouping in progress.
struct BeeState {
    bee: Arc<AggBee>,
    table: AggTable,
    /// The distinct keys, one vector per group expression, row `g` holding group `g`.
    keys: Vec<Vector>,
    new_rows: Vec<u32>,
    /// Per numeric sum or average, the scale of its sums (the first batch's).
    scales: Vec<Option<u8>>,
}

impl Grouping {
    fn new(cx: &Cx<'_>) -> Result<Grouping> {
        let (states, gids) = new_states(cx.groups, cx.set_lists, cx.aggs)?;
        let bee = cx.bee.as_ref().map(|b| BeeState {
            bee: b.clone(),
            table: b.table(),
            keys: cx.groups.iter().map(|e| Vector::new(e.ty, 16)).collect(),
            new_rows: Vec::new(),
            scales: vec![None; cx.aggs.len()],
        });
        Ok(Grouping { states, gids, spill: None, spilled_at: 0, ids: Vec::new(), hashes: Vec::new(), scratch: ProbeScratch::default(), bee })
    }

    /// Moves the bee's groups and accumulators into the generic state (which holds
    /// nothing yet): the keys into the key table, in group order (so the ids stay),
    /// each accumulator into the [`Acc`] the generic path would have built.
    fn settle(&mut self, aggs: &[AggCall]) -> Result<()> {
        self.settle_into(aggs, true)
    }

    /// [`Grouping::settle`] when the state is only output next: the keys are kept
    /// as they are, without building the key table's index (a second hash table of
    /// every group).
    fn settle_for_output(&mut self, aggs: &[AggCall]) -> Result<()> {
        self.settle_into(aggs, false)
    }

    fn settle_into(&mut self, aggs: &[AggCall], index: bool) -> Result<()> {
        let Some(b) = self.bee.take() else {
            return Ok(());
        };
        let st = &mut self.states[0];
        let n = b.table.groups();
        if n == 0 {
            return Ok(());
        }
        if index {
            let mut ids = Vec::with_capacity(n);
            st.table.insert(&b.keys, n, false, &mut ids);
            if st.table.len() != n || ids.iter().enumerate().any(|(g, &id)| id as usize != g) {
                return Err(Error::internal("aggregate bee groups differ from the key table's"));
            }
        } else {
            st.output_keys = Some(b.keys);
        }
        for (((acc, state), call), scale) in st.accs.iter_mut().zip(b.table.accs).zip(aggs).zip(b.scales) {
            *acc = acc_of(state, call, scale, n)?;
        }
        st.ngroups = n;
        Ok(())
    }
}

/// The generic accumulator of `call` holding a bee's accumulator `state` of `n`
/// groups (a numeric sum's at `sum_scale`): the same values the generic updates
/// would have left.
fn acc_of(state: AccState, call: &AggCall, sum_scale: Option<u8>, n: usize) -> Result<Acc> {
    let arg_ty = call.arg.as_ref().map(|a| a.ty);
    let scale = arg_ty.as_ref().and_then(crate::vector::dec64_scale);
    let dec = |sum: i128| -> Result<Decimal> { Ok(Decimal::new(sum, sum_scale.unwrap_or(0))?) };
    let opt = |has: Vec<bool>| has.into_iter();
    Ok(match (Acc::new(call)?, state) {
        (Acc::Count(_), AccState::Count(c)) => Acc::Count(c),
        (Acc::SumInt(_), AccState::SumI64 { sum, has }) => {
            Acc::SumInt(sum.into_iter().zip(opt(has)).map(|(s, h)| h.then_some(s)).collect())
        }
        (Acc::SumWide(_), AccState::SumI128 { sum, has }) => {
            Acc::SumWide(sum.into_iter().zip(opt(has)).map(|(s, h)| h.then_some(s)).collect())
        }
        (Acc::SumDec(_), AccState::SumI128 { sum, has }) => Acc::SumDec(
            sum.into_iter().zip(opt(has)).map(|(s, h)| if h { dec(s).map(Some) } else { Ok(None) }).collect::<Result<_>>()?,
        ),
        (Acc::AvgWide(_), AccState::AvgI128 { sum, n }) => Acc::AvgWide(sum.into_iter().zip(n).collect()),
        (Acc::AvgDec(_), AccState::AvgI128 { sum, n }) => Acc::AvgDec(
            sum.into_iter()
                .zip(n)
                .map(|(s, c)| Ok((if c == 0 { Decimal::ZERO } else { dec(s)? }, c)))
                .collect::<Result<_>>()?,
        ),
        (Acc::SumFloat(_), AccState::SumF64 { sum, has }) => {
            Acc::SumFloat(sum.into_iter().zip(opt(has)).map(|(s, h)| h.then_some(s)).collect())
        }
        (Acc::AvgFloat(_), AccState::AvgF64 { sum, n }) => Acc::AvgFloat(sum.into_iter().zip(n).collect()),
        (Acc::MinMaxFixed { max, best }, AccState::BestI64 { v, has }) => {
            let data = match (&best.data, scale) {
                (Data::Bool(_), _) => Data::Bool(v.iter().map(|&x| x != 0).collect()),
                (Data::I16(_), _) => Data::I16(v.iter().map(|&x| x as i16).collect()),
                (Data::I32(_), _) => Data::I32(v.iter().map(|&x| x as i32).collect()),
                (Data::I64(_), _) => Data::I64(v),
                (Data::Dec64(_), Some(scale)) => Data::Dec64(crate::vector::Dec64Vec { scale, values: v }),
                _ => return Err(Error::internal("an aggregate bee's min/max of another type")),
            };
            Acc::MinMaxFixed { max, best: Vector { ty: best.ty, data, nulls: Some(has.iter().map(|&h| !h).collect()) } }
        }
        (Acc::MinMaxFixed { max, best }, AccState::BestF64 { v, has }) => {
            let data = match &best.data {
                Data::F32(_) => Data::F32(v.iter().map(|&x| x as f32).collect()),
                Data::F64(_) => Data::F64(v),
                _ => return Err(Error::internal("an aggregate bee's min/max of another type")),
            };
            Acc::MinMaxFixed { max, best: Vector { ty: best.ty, data, nulls: Some(has.iter().map(|&h| !h).collect()) } }
        }
        _ => return Err(Error::internal(format!("an aggregate bee's state for {:?} over {n} groups", call.func))),
    })
}

/// Adds input batch `b` to `g`: to its groups, or once it spills, the rows of
/// groups it does not hold to its files (split at `level`), as records of their
/// group keys then their columns. `keys` are the batch's group keys when they were
/// evaluated before (a spilled record's): a key is evaluated once per row.
fn add_batch(
    ex: &Exec<'_>,
    cx: &Cx<'_>,
    g: &mut Grouping,
    level: u32,
    b: crate::vector::Batch,
    keys: Option<Vec<Vector>>,
) -> Result<()> {
    if b.rows() == 0 {
        return Ok(());
    }
    let eval_keys = |b: &crate::vector::Batch| cx.groups.iter().map(|e| ex.eval(e, b)).collect::<Result<Vec<_>>>();
    let Some(spill) = &cx.spill else {
        let keys = eval_keys(&b)?;
        let bytes = accumulate(ex, cx.aggs, &mut g.states, &mut g.gids, b, keys, None)?;
        return ex.check_mem("HashAggregate", bytes);
    };
    let Some(parts) = &mut g.spill else {
        let keys = match keys {
            Some(keys) => keys,
            None => eval_keys(&b)?,
        };
        let bytes = accumulate_in(ex, cx, g, b, keys)?;
        if bytes > spill.threshold(ex.ctx.memory_limit) && level < MAX_LEVELS {
            // Spilling reads the generic state.
            g.settle(cx.aggs)?;
            g.spill = Some(Partitions::new(&spill.record_types(cx), level, ex.ctx.memory_limit / 8));
            g.spilled_at = bytes;
            return Ok(());
        }
        return ex.check_mem("HashAggregate", bytes);
    };
    // Spilling: rows are picked by position, so the batch is made dense first.
    let b = super::dense(b, &spill.input_types);
    let n = b.rows();
    let keys = match keys {
        Some(keys) => keys,
        None => eval_keys(&b)?,
    };
    g.states[0].table.find_groups(&keys, n, &mut g.ids, &mut g.scratch);
    let (mut held, mut new) = (Vec::with_capacity(n), Vec::new());
    for (k, &id) in g.ids.iter().enumerate() {
        if id == NO_ID { new.push(k as u32) } else { held.push(k as u32) }
    }
    if new.is_empty() {
        let bytes = accumulate(ex, cx.aggs, &mut g.states, &mut g.gids, b, keys, None)?;
        return if bytes > g.spilled_at { ex.check_mem("HashAggregate", bytes + parts.heap_bytes()) } else { Ok(()) };
    }
    key_hashes(&keys, n, &mut g.hashes);
    let gather = |cols: &[Vector]| cols.iter().map(|c| c.gather(&held)).collect::<Vec<Vector>>();
    let (held_keys, held_cols) = (gather(&keys), gather(&b.columns));
    let mut record = keys;
    record.extend(b.columns);
    parts.push(&record, &new, &g.hashes)?;
    let pending = parts.heap_bytes();
    if held.is_empty() {
        return ex.check_mem("HashAggregate", pending);
    }
    let rows = if held_cols.is_empty() { crate::vector::Batch::empty_rows(held.len()) } else { make_batch(held_cols, held.len()) };
    let bytes = accumulate(ex, cx.aggs, &mut g.states, &mut g.gids, rows, held_keys, None)?;
    if bytes > g.spilled_at {
        ex.check_mem("HashAggregate", bytes + pending)?;
    }
    Ok(())
}

/// Feeds a spilled part's records (group keys, then the row's columns) to `g`,
/// checking for a cancel at each.
fn feed_part(ex: &Exec<'_>, cx: &Cx<'_>, g: &mut Grouping, level: u32, file: BatchFile) -> Result<()> {
    let mut reader = file.into_reader()?;
    while let Some(b) = reader.next_batch()? {
        ex.ctx.interrupt.check()?;
        let (n, mut keys) = (b.rows(), b.columns);
        let cols = keys.split_off(cx.groups.len());
        let rows = if cols.is_empty() { crate::vector::Batch::empty_rows(n) } else { make_batch(cols, n) };
        add_batch(ex, cx, g, level, rows, Some(keys))?;
    }
    Ok(())
}

/// Outputs the groups `g` holds, then aggregates each of its files alone
/// (splitting at `level + 1` when one outgrows the limit in turn).
fn finish(ex: &Exec<'_>, cx: &Cx<'_>, mut g: Grouping, level: u32, out: Out) -> Result<Flow> {
    g.settle_for_output(cx.aggs)?;
    let files = g.spill.map(|p| p.finish_recorded(ex, cx.id)).transpose()?;
    if emit(cx.plan, cx.groups, cx.sets, cx.aggs, g.states, out)? == Flow::Stop {
        return Ok(Flow::Stop);
    }
    let Some(files) = files else {
        return Ok(Flow::Continue);
    };
    for file in files.into_iter().flatten() {
        let mut part = Grouping::new(cx)?;
        feed_part(ex, cx, &mut part, level + 1, file)?;
        if finish(ex, cx, part, level + 1, out)? == Flow::Stop {
            return Ok(Flow::Stop);
        }
    }
    Ok(Flow::Continue)
}

/// Whether the states several threads make of `call` merge into exactly the state
/// one thread would have made (so a parallel aggregate gives one thread's answer):
/// counts, integer, numeric and interval sums and averages, min, max, bool_and/or,
/// exact variances. Not floating-point sums (the order of additions changes the
/// rounding), nor DISTINCT, ORDER BY, string_agg or application aggregates.
pub(crate) fn combinable(call: &AggCall) -> bool {
    !call.distinct
        && call.order.is_empty()
        && call.udf.is_none()
        && matches!(
            Acc::new(call),
            Ok(Acc::Count(_)
                | Acc::SumInt(_)
                | Acc::SumWide(_)
                | Acc::SumDec(_)
                | Acc::SumInterval(_)
                | Acc::AvgWide(_)
                | Acc::AvgDec(_)
                | Acc::AvgInterval(_)
                | Acc::MinMaxFixed { .. }
                | Acc::MinMax { .. }
                | Acc::Bool { .. }
                | Acc::VarExact { .. })
        )
}

/// The empty state of each grouping set, and the group-id buffer.
fn new_states(groups: &[Expr], set_lists: &[Vec<usize>], aggs: &[AggCall]) -> Result<(Vec<SetState>, Vec<u32>)> {
    let mut states = Vec::with_capacity(set_lists.len());
    for members in set_lists {
        let types: Vec<DataType> = members.iter().map(|&i| groups[i].ty).collect();
        // An ORDER BY aggregate with DISTINCT gets its distinct rows (deduplicated
        // here) in its order: its accumulator is the plain one.
        let mut accs = aggs
            .iter()
            .map(|call| {
                if call.distinct && !call.order.is_empty() {
                    Acc::new(&AggCall { distinct: false, ..call.clone() })
                } else {
                    Acc::new(call)
                }
            })
            .collect::<Result<Vec<_>>>()?;
        // A set without group expressions has its one group even over no rows.
        let ngroups = if members.is_empty() {
            accs.iter_mut().for_each(|a| a.push_groups(1));
            1
        } else {
            0
        };
        states.push(SetState {
            all: members.len() == groups.len() && members.iter().enumerate().all(|(i, &m)| i == m),
            members: members.clone(),
            table: KeyTable::new(&types),
            accs,
            seen: aggs.iter().map(|_| FxHashSet::default()).collect(),
            ngroups,
            distinct_bytes: 0,
            ordered: aggs.iter().map(|_| Vec::new()).collect(),
            ordered_bytes: 0,
            output_keys: None,
        });
    }
    Ok((states, Vec::new()))
}

/// Adds input batch `b`, whose group keys are `gv` (evaluated once per row: a key
/// may call a sequence or a volatile function), to every set's groups; returns the
/// bytes the states hold.
fn accumulate(
    ex: &Exec<'_>,
    aggs: &[AggCall],
    states: &mut [SetState],
    gids: &mut Vec<u32>,
    b: crate::vector::Batch,
    gv: Vec<Vector>,
    args: Option<Vec<Args>>,
) -> Result<usize> {
        let n = b.rows();
        if n == 0 {
            return Ok(0);
        }
        let args = match args {
            Some(args) => args,
            None => eval_args(ex, aggs, &b)?,
        };
        accumulate_args(aggs, states, gids, n, gv, args)
}

/// [`accumulate`] with the arguments evaluated (`n` rows).
fn accumulate_args(
    aggs: &[AggCall],
    states: &mut [SetState],
    gids: &mut Vec<u32>,
    n: usize,
    gv: Vec<Vector>,
    args: Vec<Args>,
) -> Result<usize> {
        let mut bytes = 0;
        for st in states.iter_mut() {
            if st.members.is_empty() {
                gids.clear();
                gids.resize(n, 0);
            } else {
                if st.all {
                    st.table.insert(&gv, n, false, gids);
                } else {
                    let cols: Vec<Vector> = st.members.iter().map(|&i| gv[i].clone()).collect();
                    st.table.insert(&cols, n, false, gids);
                }
                if st.table.len() > st.ngroups {
                    for a in &mut st.accs {
                        a.push_groups(st.table.len() - st.ngroups);
                    }
                    st.ngroups = st.table.len();
                }
            }
            for (i, (call, arg)) in aggs.iter().zip(&args).enumerate() {
                match arg {
                    Args::Udf(values) => {
                        let (Some(udf), Acc::Udf { states, .. }) = (&call.udf, &mut st.accs[i]) else {
                            return Err(Error::internal("application aggregate without its state"));
                        };
                        udf.function.function.update(states, &gids[..n], values)?;
                    }
                    Args::Builtin(Some(a), arg2, keys) if !call.order.is_empty() => {
                        // Held until the input ends; NULL values are skipped now, as
                        // string_agg skips them.
                        for (k, &g) in gids.iter().enumerate() {
                            if a.is_null(k) {
                                continue;
                            }
                            if call.distinct {
                                let mut kb = Vec::new();
                                push_key(a, k, &mut kb);
                                if let Some(a2) = arg2 {
                                    push_key(a2, k, &mut kb);
                                }
                                if !st.seen[i].insert((g, kb)) {
                                    continue;
                                }
                                st.distinct_bytes += 64;
                            }
                            let row = OrderedRow {
                                group: g,
                                arg: a.value(k),
                                arg2: arg2.as_ref().map_or(Value::Null, |v| v.value(k)),
                                keys: keys.iter().map(|v| v.value(k)).collect(),
                            };
                            st.ordered_bytes += std::mem::size_of::<OrderedRow>()
                                + std::mem::size_of::<Value>() * row.keys.len()
                                + row.arg.heap_bytes()
                                + row.arg2.heap_bytes()
                                + row.keys.iter().map(Value::heap_bytes).sum::<usize>();
                            st.ordered[i].push(row);
                        }
                    }
                    Args::Builtin(Some(a), arg2, _) if call.distinct => {
                        // DISTINCT is over all arguments (string_agg(DISTINCT x, d) sees
                        // each (x, d) pair once), as in PostgreSQL.
                        let mut rows = Vec::new();
                        for (k, &g) in gids.iter().enumerate() {
                            if a.is_null(k) {
                                continue;
                            }
                            let mut kb = Vec::new();
                            push_key(a, k, &mut kb);
                            if let Some(a2) = arg2 {
                                push_key(a2, k, &mut kb);
                            }
                            if st.seen[i].insert((g, kb)) {
                                st.distinct_bytes += 64;
                                rows.push(k as u32);
                            }
                        }
                        st.accs[i].update(gids, Some(a), arg2.as_ref(), Some(&rows))?;
                    }
                    Args::Builtin(a, arg2, _) => st.accs[i].update(gids, a.as_ref(), arg2.as_ref(), None)?,
                }
            }
            bytes += st.distinct_bytes
                + st.ordered_bytes
                + st.table.heap_bytes()
                + st.ngroups * (aggs.len() * 24 + 8)
                + st.accs.iter().map(Acc::bytes).sum::<usize>();
        }
        Ok(bytes)
}

/// The aggregates' arguments over batch `b`, each evaluated once.
fn eval_args(ex: &Exec<'_>, aggs: &[AggCall], b: &crate::vector::Batch) -> Result<Vec<Args>> {
    let n = b.rows();
    aggs.iter()
        .map(|call| {
            Ok(match &call.udf {
                Some(udf) => Args::Udf(
                    udf.args
                        .iter()
                        .map(|e| ex.eval(e, b).map(|v| (0..n).map(|k| v.value(k)).collect()))
                        .collect::<Result<Vec<Vec<Value>>>>()?,
                ),
                None => Args::Builtin(
                    match &call.arg {
                        Some(e) if call.func != AggFunc::CountStar => Some(ex.eval(e, b)?),
                        _ => None,
                    },
                    call.arg2.as_ref().map(|e| ex.eval(e, b)).transpose()?,
                    call.order.iter().map(|k| ex.eval(&k.expr, b)).collect::<Result<Vec<_>>>()?,
                ),
            })
        })
        .collect()
}

/// Adds batch `b` with group keys `keys` to `g`'s groups (not spilling): through
/// the aggregate bee while `g` has one and the batch's vectors are in the form it
/// takes, otherwise (after settling the bee's state) generically. Returns the bytes
/// the state holds.
fn accumulate_in(ex: &Exec<'_>, cx: &Cx<'_>, g: &mut Grouping, b: crate::vector::Batch, keys: Vec<Vector>) -> Result<usize> {
    if g.bee.is_none() {
        return accumulate(ex, cx.aggs, &mut g.states, &mut g.gids, b, keys, None);
    }
    let n = b.rows();
    let args = eval_args(ex, cx.aggs, &b)?;
    accumulate_bee(cx.aggs, g, n, keys, args)
}

/// Adds `n` rows (group keys `keys`, arguments `args`) through `g`'s bee, or when
/// the bee does not take them, after settling, generically.
fn accumulate_bee(aggs: &[AggCall], g: &mut Grouping, n: usize, keys: Vec<Vector>, args: Vec<Args>) -> Result<usize> {
    let Some(bs) = &mut g.bee else {
        return accumulate_args(aggs, &mut g.states, &mut g.gids, n, keys, args);
    };
    let done = {
        let vecs: Vec<Option<&Vector>> = args
            .iter()
            .map(|a| match a {
                Args::Builtin(a, _, _) => a.as_ref(),
                Args::Udf(_) => None,
            })
            .collect();
        // A numeric sum's batches must all have its scale.
        let scales = crate::bees::agg::dec_scales(&bs.bee, &vecs);
        let same_scales = scales.iter().zip(&bs.scales).all(|(s, t)| s.is_none() || t.is_none() || s == t);
        match crate::bees::agg::inputs(&bs.bee, &keys, &vecs).filter(|_| same_scales) {
            None => false,
            Some((kd, ad)) => {
                let ki: Vec<_> = kd.iter().zip(&keys).map(|(d, v)| crate::bees::agg::input(d, Some(v))).collect();
                let ai: Vec<_> = ad.iter().zip(&vecs).map(|(d, v)| crate::bees::agg::input(d, *v)).collect();
                bs.new_rows.clear();
                match bs.bee.update(&mut bs.table, &ki, &ai, n, &mut bs.new_rows) {
                    Ok(()) => {
                        for (t, s) in bs.scales.iter_mut().zip(scales) {
                            *t = t.or(s);
                        }
                        true
                    }
                    Err(beedb_bees::agg::AggError::Overflow { .. }) => return Err(bigint_overflow()),
                    // Nothing changed: the generic path takes over.
                    Err(_) => false,
                }
            }
        }
    };
    if done {
        for &k in &bs.new_rows {
            for (key, c) in bs.keys.iter_mut().zip(&keys) {
                key.push_from(c, k as usize);
            }
        }
        let ngroups = bs.table.groups();
        return Ok(bs.table.heap_bytes()
            + bs.keys.iter().map(|k| k.heap_bytes()).sum::<usize>()
            + ngroups * (aggs.len() * 24 + 8));
    }
    g.settle(aggs)?;
    accumulate_args(aggs, &mut g.states, &mut g.gids, n, keys, args)
}

/// The grouping code driven without an executor, for the benchmarks of aggregate
/// bees against the generic path (`sql/benches/bees.rs`): a plain GROUP BY's state,
/// fed evaluated key and argument vectors.
#[doc(hidden)]
pub mod bench {
    use super::*;

    pub struct BenchGrouping {
        aggs: Vec<AggCall>,
        g: Grouping,
    }

    impl BenchGrouping {
        /// A GROUP BY over keys of `key_types` computing `aggs`, through `bee` if any.
        pub fn new(key_types: &[DataType], aggs: Vec<AggCall>, bee: Option<Arc<AggBee>>) -> Result<BenchGrouping> {
            let groups: Vec<Expr> = key_types.iter().enumerate().map(|(i, t)| Expr::column(i, *t)).collect();
            let sets = vec![(0..groups.len()).collect::<Vec<_>>()];
            let (states, gids) = new_states(&groups, &sets, &aggs)?;
            let bee = bee.map(|b| BeeState {
                table: b.table(),
                bee: b,
                keys: key_types.iter().map(|t| Vector::new(*t, 16)).collect(),
                new_rows: Vec::new(),
                scales: vec![None; aggs.len()],
            });
            let g = Grouping { states, gids, spill: None, spilled_at: 0, ids: Vec::new(), hashes: Vec::new(), scratch: ProbeScratch::default(), bee };
            Ok(BenchGrouping { aggs, g })
        }

        /// Adds `n` rows: group keys, and per aggregate its argument (`None` for count(*)).
        pub fn add(&mut self, n: usize, keys: Vec<Vector>, args: Vec<Option<Vector>>) -> Result<usize> {
            let args = args.into_iter().map(|a| Args::Builtin(a, None, Vec::new())).collect();
            accumulate_bee(&self.aggs, &mut self.g, n, keys, args)
        }

        /// Every group's key values and results, in group order.
        pub fn finish(mut self) -> Result<Vec<Vec<Value>>> {
            self.g.settle(&self.aggs)?;
            let st = &self.g.states[0];
            let keys = st.table.keys();
            (0..st.ngroups)
                .map(|g| {
                    let mut row: Vec<Value> = keys.iter().map(|k| k.value(g)).collect();
                    for (a, call) in st.accs.iter().zip(&self.aggs) {
                        row.push(a.result(g, &call.ty)?);
                    }
                    Ok(row)
                })
                .collect()
        }
    }
}

/// Outputs every set's groups.
fn emit(plan: &Plan, groups: &[Expr], sets: &[Vec<usize>], aggs: &[AggCall], states: Vec<SetState>, out: Out) -> Result<Flow> {
    let types = plan.types();
    // Aggregates follow the groups and, with grouping sets, the set's index.
    let first_agg = groups.len() + usize::from(!sets.is_empty());
    for (set_index, st) in states.into_iter().enumerate() {
        drop(st.seen);
        let ngroups = st.ngroups;
        let members = st.members;
        let mut accs = st.accs;
        for ((acc, call), rows) in accs.iter_mut().zip(aggs).zip(st.ordered) {
            if !call.order.is_empty() {
                feed_ordered(acc, call, rows)?;
            }
        }
        let keys = match st.output_keys {
            Some(keys) => keys,
            None => st.table.into_keys(),
        };
        let mut start = 0;
        while start < ngroups {
            let end = (start + BATCH_SIZE).min(ngroups);
            let mut cols = Vec::with_capacity(types.len());
            let pos: Vec<u32> = (start as u32..end as u32).collect();
            for (g, t) in types[..groups.len()].iter().enumerate() {
                let v = match members.iter().position(|&m| m == g) {
                    Some(p) => {
                        let mut v = keys[p].gather(&pos);
                        v.ty = *t;
                        v
                    }
                    None => Vector::constant(*t, &Value::Null, end - start),
                };
                cols.push(v);
            }
            if !sets.is_empty() {
                cols.push(Vector::constant(DataType::Integer, &Value::Integer(set_index as i32), end - start));
            }
            for (i, a) in accs.iter().enumerate() {
                let ty = types[first_agg + i];
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

#[cfg(test)]
mod tests {
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    use super::*;

    /// sum, avg, min and max over scaled-integer decimal vectors give exactly what
    /// they give over the same values as `Decimal`s: random groups, NULLs, row
    /// selections, values at the edge of numeric(18, s), and batches of two scales
    /// into one group (a sum computed, then a column).
    #[test]
    fn scaled_decimal_aggregates_match_wide() {
        let mut rng = StdRng::seed_from_u64(1819);
        for round in 0..300 {
            let groups = rng.random_range(1..5usize);
            let funcs = [AggFunc::Sum, AggFunc::Avg, AggFunc::Min, AggFunc::Max];
            let func = funcs[rng.random_range(0..funcs.len())];
            let in_ty = DataType::decimal(18, rng.random_range(0..4)).unwrap();
            let out_ty = match func {
                AggFunc::Min | AggFunc::Max => in_ty,
                _ => DataType::NUMERIC,
            };
            let call = AggCall {
                func,
                arg: Some(crate::expr::Expr::column(0, in_ty)),
                arg2: None,
                distinct: false,
                order: Vec::new(),
                ty: out_ty,
                udf: None,
            };
            let (mut narrow, mut wide) = (Acc::new(&call).unwrap(), Acc::new(&call).unwrap());
            narrow.push_groups(groups);
            wide.push_groups(groups);
            for _ in 0..rng.random_range(1..4) {
                let len = [1, 2, 1023, 1024, 1025][rng.random_range(0..5)];
                // Each batch at its own scale, as computed decimals may be.
                let scale = rng.random_range(0..4u8);
                let ty = DataType::decimal(18, scale as u32).unwrap();
                let mut v = Vector::new(ty, len);
                for _ in 0..len {
                    if rng.random_bool(0.1) {
                        v.push_null();
                        continue;
                    }
                    let u: i64 = match rng.random_range(0..4) {
                        0 => 999_999_999_999_999_999,
                        1 => -999_999_999_999_999_999,
                        _ => rng.random_range(-100_000..100_000),
                    };
                    v.push_value(&Value::Decimal(Decimal::new(u as i128, scale).unwrap()));
                }
                assert!(matches!(v.data, Data::Dec64(_)));
                let mut w = v.clone();
                w.data.widen_dec();
                let gids: Vec<u32> = (0..len).map(|_| rng.random_range(0..groups as u32)).collect();
                let rows: Option<Vec<u32>> = rng
                    .random_bool(0.5)
                    .then(|| (0..len as u32).filter(|_| rng.random_bool(0.7)).collect());
                let a = narrow.update(&gids, Some(&v), None, rows.as_deref());
                let b = wide.update(&gids, Some(&w), None, rows.as_deref());
                assert_eq!(
                    a.as_ref().map_err(|e| e.to_string()),
                    b.as_ref().map_err(|e| e.to_string()),
                    "round {round}"
                );
                if a.is_err() {
                    break;
                }
            }
            for g in 0..groups {
                let x = narrow.result(g, &out_ty).map(|v| v.to_string()).map_err(|e| e.to_string());
                let y = wide.result(g, &out_ty).map(|v| v.to_string()).map_err(|e| e.to_string());
                assert_eq!(x, y, "round {round}, {func:?}, group {g}");
            }
        }
    }

    /// The shortcut gives `Decimal::add`'s result (value and scale) or its error,
    /// including sums that reach 38 digits and operands of different scales.
    #[test]
    fn dec_add_is_decimal_add() {
        let mut rng = StdRng::seed_from_u64(22003);
        let near = 10i128.pow(38) - 1;
        for _ in 0..20_000 {
            let pick = |rng: &mut StdRng| -> Decimal {
                let scale = rng.random_range(0..4u8);
                let u = match rng.random_range(0..3) {
                    0 => rng.random_range(-1_000_000i128..1_000_000),
                    1 => near - rng.random_range(0..1000i128),
                    _ => -(near - rng.random_range(0..1000i128)),
                };
                Decimal::new(u, scale).unwrap()
            };
            let (a, b) = (pick(&mut rng), pick(&mut rng));
            match (dec_add(&a, &b), a.add(&b)) {
                (Ok(x), Ok(y)) => {
                    assert_eq!((x.unscaled(), x.scale()), (y.unscaled(), y.scale()), "{a} + {b}")
                }
                (Err(x), Err(y)) => {
                    assert_eq!((x.sqlstate, x.message.clone()), {
                        let y = Error::from(y);
                        (y.sqlstate, y.message)
                    })
                }
                (x, y) => panic!("{a} + {b}: {x:?} vs {y:?}"),
            }
        }
    }
}
