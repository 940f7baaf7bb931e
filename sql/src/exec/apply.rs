//! Per-row LATERAL (`Node::Apply`, a dependent join): for each input row the right
//! plan runs with the row's parameter values, and its rows are appended to the input
//! row (under LEFT, a row without any gets NULLs).
//!
//! The right side's rows stream out as the right plan makes them, so a LIMIT above
//! stops it (`FROM t, LATERAL generate_series(1, t.a * 50000000) LIMIT 1` reads one
//! row of the series). Within one input batch, rows with the same parameter values
//! would run the right plan again for the same rows: the first run of a set that
//! occurs again later in the batch also keeps its rows (counted, up to half of
//! `memory_limit`), and the later rows replay them; a set whose rows do not fit that,
//! or whose right plan calls a volatile function (a sequence's, an application's: each
//! call may differ, as in PostgreSQL, which runs the subquery per row), runs again
//! per row instead. A set that occurs once is never held.

use std::cell::RefCell;
use std::hash::{Hash, Hasher};

use rustc_hash::FxHashMap;

use super::{Exec, Flow, make_batch};
use crate::error::Result;
use crate::expr::Expr;
use crate::plan::Plan;
use crate::types::{DataType, Value};
use crate::vector::{BATCH_SIZE, Batch, Vector};

#[allow(clippy::too_many_arguments)]
pub(super) fn apply(
    ex: &Exec<'_>,
    plan: &Plan,
    id: usize,
    input: &Plan,
    right: &Plan,
    params: &[Expr],
    param_base: usize,
    left_join: bool,
    out: super::Out,
) -> Result<Flow> {
    let nleft = input.schema.len();
    let right_types = right.types();
    let right_id = id + 1 + ex.subtree_size(input);
    // Asked only once a set of values repeats (the walk clones the plan).
    let mut cacheable: Option<bool> = None;
    // Held rows are a cache: they may take half the limit, and past it the right
    // plan runs again (it never fails the statement), leaving the rest to the
    // operators that need memory to run at all.
    let hold_limit = ex.ctx.memory_limit / 2;
    let mut emit = Emitter { types: plan.types(), cols: Vec::new(), n: 0, nleft };
    emit.cols = fresh(&emit.types);
    let flow = ex.node(input, id + 1, None, &mut |b: Batch| {
        let b = b.compact();
        let rows = b.rows();
        if rows == 0 {
            return Ok(Flow::Continue);
        }
        let pcols: Vec<Vector> = params.iter().map(|e| ex.eval(e, &b)).collect::<Result<_>>()?;
        // Each row's set of parameter values, numbered in order of first appearance,
        // and how many rows of the batch have each.
        let mut sets: FxHashMap<ParamKey, usize> = FxHashMap::default();
        let mut set_of: Vec<usize> = Vec::with_capacity(rows);
        let mut values: Vec<Vec<Value>> = Vec::new();
        let mut remaining: Vec<usize> = Vec::new();
        for k in 0..rows {
            let key = ParamKey(pcols.iter().map(|c| c.value(if c.len() == 1 { 0 } else { k })).collect());
            let s = match sets.get(&key) {
                Some(&s) => s,
                None => {
                    values.push(key.0.clone());
                    remaining.push(0);
                    sets.insert(key, values.len() - 1);
                    values.len() - 1
                }
            };
            remaining[s] += 1;
            set_of.push(s);
        }
        let mut held: Vec<Held> = (0..values.len()).map(|_| Held::NotRun).collect();
        let mut held_bytes = 0usize;
        for (k, &s) in set_of.iter().enumerate() {
            remaining[s] -= 1;
            if let Held::Rows(rcols, m) = &held[s] {
                let m = *m;
                if m == 0 && left_join && emit.push(&b, k, None, out)? == Flow::Stop {
                    return Ok(Flow::Stop);
                }
                for j in 0..m {
                    if emit.push(&b, k, Some((rcols, j)), out)? == Flow::Stop {
                        return Ok(Flow::Stop);
                    }
                }
                if remaining[s] == 0 {
                    held_bytes -= bytes(rcols);
                    held[s] = Held::NotRun;
                }
                continue;
            }
            // Keep this run's rows if a later row of the batch has the same values.
            // A set already found too big to hold (or volatile) is not tried again.
            let repeats = remaining[s] > 0;
            let hold = repeats && !matches!(held[s], Held::Rerun) && *cacheable.get_or_insert_with(|| !crate::binder::plan_is_volatile(right));
            let mut keep = hold.then(|| fresh(&right_types));
            let mut all: Vec<Value> = ex.ctx.params.to_vec();
            all.truncate(param_base.min(all.len()));
            all.resize(param_base, Value::Null);
            all.extend(values[s].iter().cloned());
            let sub = Exec {
                ctx: ex.ctx,
                params: &all,
                cache: ex.cache,
                work_tables: ex.work_tables,
                ctes: ex.ctes,
                profile: ex.profile,
                worker: None,
                key_filters: RefCell::new(Vec::new()),
                subtree_sizes: RefCell::new(FxHashMap::default()),
            };
            let mut m = 0usize;
            let mut stopped = false;
            sub.node(right, right_id, None, &mut |rb: Batch| {
                for j in 0..rb.rows() {
                    let p = rb.position(j);
                    m += 1;
                    if emit.push(&b, k, Some((&rb.columns, p)), out)? == Flow::Stop {
                        stopped = true;
                        return Ok(Flow::Stop);
                    }
                    if let Some(rcols) = &mut keep {
                        for (c, v) in rcols.iter_mut().zip(&rb.columns) {
                            c.push_from(v, p);
                        }
                    }
                }
                if keep.as_ref().is_some_and(|rcols| held_bytes + bytes(rcols) > hold_limit) {
                    keep = None;
                }
                Ok(Flow::Continue)
            })?;
            if stopped {
                return Ok(Flow::Stop);
            }
            if m == 0 && left_join && emit.push(&b, k, None, out)? == Flow::Stop {
                return Ok(Flow::Stop);
            }
            held[s] = match keep {
                Some(rcols) => {
                    held_bytes += bytes(&rcols);
                    Held::Rows(rcols, m)
                }
                // Too many to hold: the later rows with these values run it again.
                None if repeats => Held::Rerun,
                None => Held::NotRun,
            };
        }
        Ok(Flow::Continue)
    })?;
    if flow == Flow::Stop || emit.n == 0 {
        return Ok(flow);
    }
    out(make_batch(emit.cols, emit.n))
}

/// What a batch keeps of one set of parameter values' right rows.
enum Held {
    /// Nothing: not run yet, or no later row needs them.
    NotRun,
    /// The right plan's rows (columns, count), for the later rows with these values.
    Rows(Vec<Vector>, usize),
    /// Too many to hold: each later row runs the right plan again.
    Rerun,
}

fn fresh(types: &[DataType]) -> Vec<Vector> {
    types.iter().map(|t| Vector::new(*t, BATCH_SIZE)).collect()
}

fn bytes(cols: &[Vector]) -> usize {
    cols.iter().map(|c| c.heap_bytes()).sum()
}

/// The output batch being filled: left row, right row, pushed out when full.
struct Emitter {
    types: Vec<DataType>,
    cols: Vec<Vector>,
    n: usize,
    nleft: usize,
}

impl Emitter {
    /// Appends left row `k` of `left` joined with right row `right` (`None`: NULLs),
    /// handing a full batch to `out`.
    fn push(&mut self, left: &Batch, k: usize, right: Option<(&[Vector], usize)>, out: &mut dyn FnMut(Batch) -> Result<Flow>) -> Result<Flow> {
        for (c, v) in self.cols.iter_mut().zip(&left.columns) {
            c.push_from(v, k);
        }
        for (i, c) in self.cols[self.nleft..].iter_mut().enumerate() {
            match right {
                Some((rc, j)) => c.push_from(&rc[i], j),
                None => c.push_null(),
            }
        }
        self.n += 1;
        if self.n < BATCH_SIZE {
            return Ok(Flow::Continue);
        }
        let full = std::mem::replace(&mut self.cols, fresh(&self.types));
        self.n = 0;
        out(make_batch(full, BATCH_SIZE))
    }
}

/// A row's parameter values as the key of the right plan's result: equal only when
/// each value is the same representation, not merely equal as SQL compares (`1.0`
/// and `1.00`, `0` and `-0`, `'1 day'` and `'24 hours'` are equal in SQL but may
/// print differently in the right side's rows), and NULL is the same as NULL.
struct ParamKey(Vec<Value>);

fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Real(x), Value::Real(y)) => x.to_bits() == y.to_bits(),
        (Value::Double(x), Value::Double(y)) => x.to_bits() == y.to_bits(),
        (Value::Decimal(x), Value::Decimal(y)) => x.unscaled() == y.unscaled() && x.scale() == y.scale(),
        (Value::Interval(x), Value::Interval(y)) => (x.months, x.days, x.micros) == (y.months, y.days, y.micros),
        _ => a == b,
    }
}

impl PartialEq for ParamKey {
    fn eq(&self, other: &ParamKey) -> bool {
        self.0.len() == other.0.len() && self.0.iter().zip(&other.0).all(|(a, b)| same(a, b))
    }
}

impl Eq for ParamKey {}

impl Hash for ParamKey {
    fn hash<H: Hasher>(&self, h: &mut H) {
        for v in &self.0 {
            std::mem::discriminant(v).hash(h);
            match v {
                Value::Null => {}
                Value::Boolean(x) => x.hash(h),
                Value::SmallInt(x) => x.hash(h),
                Value::Integer(x) => x.hash(h),
                Value::BigInt(x) => x.hash(h),
                Value::Real(x) => x.to_bits().hash(h),
                Value::Double(x) => x.to_bits().hash(h),
                Value::Decimal(x) => (x.unscaled(), x.scale()).hash(h),
                Value::Date(x) => x.hash(h),
                Value::Timestamp(x) => x.hash(h),
                Value::Interval(x) => (x.months, x.days, x.micros).hash(h),
                Value::Char(x) | Value::Varchar(x) | Value::Text(x) => x.hash(h),
            }
        }
    }
}
