//! WindowAgg: window functions over the rows of the node's input.
//!
//! The operator is blocking. It holds every input row (its columns, and per window
//! its partition keys, order keys and RANGE bound keys, per call its arguments, all
//! evaluated batch by batch as the rows arrive), then for each window sorts the row
//! numbers by partition and order keys (as `Sort` does, with `keys::cmp_sort`; two
//! windows with the same keys share one sort), walks each partition and its peer
//! groups (rows equal on every order key) and computes the calls of that window.
//! Rows leave in the order of the last window's sort.
//!
//! Frames: ROWS, RANGE (offsets on numeric, date, timestamp and interval keys; the
//! binder computes "key ± offset" per row as `FrameBound::*::range_key`) and GROUPS.
//! An aggregate adds rows to its running state while the frame only grows at its
//! end (UNBOUNDED PRECEDING or a fixed start: O(n) per partition) and starts again
//! when the frame's start moves (a sliding frame costs O(n · frame size)).
//!
//! Held rows and results count against `memory_limit` (53200).

use std::cmp::Ordering;

use super::agg::{Acc, cast_to};
use super::keys::cmp_sort;
use super::{Exec, Flow, Out, make_batch};
use crate::error::{Error, Result};
use crate::plan::{AggCall, AggFunc, FrameBound, FrameUnits, Plan, WindowCall, WindowFunc, WindowSpec};
use crate::types::{DataType, Value};
use crate::vector::{BATCH_SIZE, Vector};

/// The evaluated inputs of one window spec, one element per held row.
struct SpecKeys {
    partition: Vec<Vector>,
    order: Vec<Vector>,
    /// RANGE offset bounds: the farthest key the frame start / end reaches.
    start_key: Option<Vector>,
    end_key: Option<Vector>,
}

/// A frame bound with its offset evaluated.
#[derive(Clone, Copy)]
enum Bound {
    UnboundedPreceding,
    /// ROWS or GROUPS offset.
    Preceding(usize),
    CurrentRow,
    Following(usize),
    UnboundedFollowing,
    /// RANGE offset: the bound's key per row is in `SpecKeys::{start,end}_key`.
    RangeOffset,
}

fn range_key(b: &FrameBound) -> Option<&crate::expr::Expr> {
    match b {
        FrameBound::Preceding { range_key, .. } | FrameBound::Following { range_key, .. } => range_key.as_ref(),
        _ => None,
    }
}

#[allow(clippy::too_many_arguments)]
pub(super) fn window(
    ex: &Exec<'_>,
    plan: &Plan,
    id: usize,
    input: &Plan,
    specs: &[WindowSpec],
    calls: &[WindowCall],
    out: Out,
) -> Result<Flow> {
    let types = input.types();
    let mut cols: Vec<Vector> = types.iter().map(|t| Vector::new(*t, 0)).collect();
    let new = |e: &crate::expr::Expr| Vector::new(e.ty, 0);
    let mut keys: Vec<SpecKeys> = specs
        .iter()
        .map(|s| SpecKeys {
            partition: s.partition.iter().map(new).collect(),
            order: s.order.iter().map(|k| new(&k.expr)).collect(),
            start_key: range_key(&s.frame.start).map(new),
            end_key: range_key(&s.frame.end).map(new),
        })
        .collect();
    let mut args: Vec<Vec<Vector>> = calls.iter().map(|c| c.args.iter().map(new).collect()).collect();
    let mut n = 0usize;
    let held = |cols: &[Vector], keys: &[SpecKeys], args: &[Vec<Vector>]| -> usize {
        let k: usize = keys
            .iter()
            .map(|s| {
                s.partition
                    .iter()
                    .chain(&s.order)
                    .chain(s.start_key.iter())
                    .chain(s.end_key.iter())
                    .map(Vector::heap_bytes)
                    .sum::<usize>()
            })
            .sum();
        cols.iter().map(Vector::heap_bytes).sum::<usize>() + k + args.iter().flatten().map(Vector::heap_bytes).sum::<usize>()
    };
    ex.node(input, id + 1, None, &mut |b| {
        let rows = b.rows();
        if rows == 0 {
            return Ok(Flow::Continue);
        }
        for (s, k) in specs.iter().zip(keys.iter_mut()) {
            for (e, v) in s.partition.iter().zip(k.partition.iter_mut()) {
                v.extend(&ex.eval(e, &b)?);
            }
            for (e, v) in s.order.iter().zip(k.order.iter_mut()) {
                v.extend(&ex.eval(&e.expr, &b)?);
            }
            if let (Some(e), Some(v)) = (range_key(&s.frame.start), k.start_key.as_mut()) {
                v.extend(&ex.eval(e, &b)?);
            }
            if let (Some(e), Some(v)) = (range_key(&s.frame.end), k.end_key.as_mut()) {
                v.extend(&ex.eval(e, &b)?);
            }
        }
        for (c, vs) in calls.iter().zip(args.iter_mut()) {
            for (e, v) in c.args.iter().zip(vs.iter_mut()) {
                v.extend(&ex.eval(e, &b)?);
            }
        }
        let b = super::dense(b, &types);
        for (c, v) in cols.iter_mut().zip(&b.columns) {
            c.extend(v);
        }
        n += rows;
        ex.check_mem("WindowAgg", held(&cols, &keys, &args) + n * 4)?;
        Ok(Flow::Continue)
    })?;
    let base_bytes = held(&cols, &keys, &args) + n * 8;
    let mut results: Vec<Vec<Value>> = calls.iter().map(|_| Vec::new()).collect();
    let mut result_bytes = 0usize;
    let zeros = vec![0u32; n];
    let mut perm: Vec<u32> = Vec::new();
    for (si, spec) in specs.iter().enumerate() {
        let k = &keys[si];
        let same_sort = si > 0 && specs[si - 1].partition == spec.partition && specs[si - 1].order == spec.order;
        if !same_sort {
            perm = (0..n as u32).collect();
            perm.sort_by(|&a, &b| {
                let (a, b) = (a as usize, b as usize);
                for v in &k.partition {
                    let o = cmp_sort(v, a, v, b, false, false);
                    if o != Ordering::Equal {
                        return o;
                    }
                }
                for (v, sk) in k.order.iter().zip(&spec.order) {
                    let o = cmp_sort(v, a, v, b, sk.desc, sk.nulls_first);
                    if o != Ordering::Equal {
                        return o;
                    }
                }
                Ordering::Equal
            });
        }
        ex.ctx.interrupt.check()?;
        let frame = Frame {
            units: spec.frame.units,
            start: bound(ex, &spec.frame.start, spec.frame.units, "starting")?,
            end: bound(ex, &spec.frame.end, spec.frame.units, "ending")?,
            order_key: k.order.first(),
            desc: spec.order.first().is_some_and(|o| o.desc),
            nulls_first: spec.order.first().is_some_and(|o| o.nulls_first),
            start_key: k.start_key.as_ref(),
            end_key: k.end_key.as_ref(),
        };
        let mine: Vec<usize> = (0..calls.len()).filter(|&c| calls[c].spec == si).collect();
        for &c in &mine {
            results[c] = vec![Value::Null; n];
        }
        // Partitions, then peer groups within each.
        let mut ps = 0;
        while ps < n {
            let mut pe = ps + 1;
            while pe < n
                && k.partition
                    .iter()
                    .all(|v| cmp_sort(v, perm[ps] as usize, v, perm[pe] as usize, false, false) == Ordering::Equal)
            {
                pe += 1;
            }
            let rows = &perm[ps..pe];
            let len = rows.len();
            let mut group_start = vec![0usize];
            let mut group_of = Vec::with_capacity(len);
            group_of.push(0usize);
            for j in 1..len {
                let peer = k.order.iter().zip(&spec.order).all(|(v, sk)| {
                    cmp_sort(v, rows[j - 1] as usize, v, rows[j] as usize, sk.desc, sk.nulls_first) == Ordering::Equal
                });
                if !peer {
                    group_start.push(j);
                }
                group_of.push(group_start.len() - 1);
            }
            let part = Partition { rows, group_start: &group_start, group_of: &group_of };
            for &c in &mine {
                compute(ex, &calls[c], &args[c], &part, &frame, &zeros, &mut results[c])?;
            }
            ex.ctx.interrupt.check()?;
            ps = pe;
        }
        for &c in &mine {
            result_bytes += n * std::mem::size_of::<Value>()
                + results[c].iter().map(Value::heap_bytes).sum::<usize>();
        }
        ex.check_mem("WindowAgg", base_bytes + result_bytes)?;
    }
    // Out in the last window's order: the input columns, then one column per call.
    let out_types = plan.types();
    for chunk in perm.chunks(BATCH_SIZE) {
        let mut out_cols: Vec<Vector> = cols.iter().map(|c| c.gather(chunk)).collect();
        for (c, call) in calls.iter().enumerate() {
            let ty = out_types[types.len() + c];
            let mut v = Vector::new(ty, chunk.len());
            for &r in chunk {
                v.push_value(&cast_to(results[c][r as usize].clone(), &call.ty)?);
            }
            out_cols.push(v);
        }
        if out(make_batch(out_cols, chunk.len()))? == Flow::Stop {
            return Ok(Flow::Stop);
        }
    }
    Ok(Flow::Continue)
}

/// A frame bound's offset, evaluated and checked as PostgreSQL does.
fn bound(ex: &Exec<'_>, b: &FrameBound, units: FrameUnits, which: &str) -> Result<Bound> {
    let (offset, preceding) = match b {
        FrameBound::UnboundedPreceding => return Ok(Bound::UnboundedPreceding),
        FrameBound::CurrentRow => return Ok(Bound::CurrentRow),
        FrameBound::UnboundedFollowing => return Ok(Bound::UnboundedFollowing),
        FrameBound::Preceding { offset, .. } => (offset, true),
        FrameBound::Following { offset, .. } => (offset, false),
    };
    let v = ex.eval_const(offset)?;
    if v.is_null() {
        return Err(Error::data("22004", format!("frame {which} offset must not be null")));
    }
    if units == FrameUnits::Range {
        let negative = match &v {
            Value::Interval(i) => *i < crate::types::Interval::ZERO,
            other => other.cmp_sql(&Value::Integer(0)) == Some(Ordering::Less),
        };
        if negative {
            return Err(Error::data("22013", "invalid preceding or following size in window function"));
        }
        return Ok(Bound::RangeOffset);
    }
    let Value::BigInt(x) = v else {
        return Err(Error::internal(format!("frame offset {v:?} is not a bigint")));
    };
    if x < 0 {
        return Err(Error::data("22013", format!("frame {which} offset must not be negative")));
    }
    let x = usize::try_from(x).unwrap_or(usize::MAX);
    Ok(if preceding { Bound::Preceding(x) } else { Bound::Following(x) })
}

/// One partition in sort order: `rows` are held-row numbers; peer group `g` is
/// `group_start[g]..group_start[g + 1]` (positions in `rows`).
struct Partition<'a> {
    rows: &'a [u32],
    group_start: &'a [usize],
    group_of: &'a [usize],
}

impl Partition<'_> {
    fn group_end(&self, g: usize) -> usize {
        self.group_start.get(g + 1).copied().unwrap_or(self.rows.len())
    }
}

struct Frame<'a> {
    units: FrameUnits,
    start: Bound,
    end: Bound,
    /// The first ORDER BY key (RANGE offsets compare it).
    order_key: Option<&'a Vector>,
    desc: bool,
    nulls_first: bool,
    start_key: Option<&'a Vector>,
    end_key: Option<&'a Vector>,
}

/// `a` against `b` in the window's sort order (NULLs are peers of each other).
fn order_cmp(a: &Value, b: &Value, desc: bool, nulls_first: bool) -> Ordering {
    match (a.is_null(), b.is_null()) {
        (true, true) => Ordering::Equal,
        (true, false) => if nulls_first { Ordering::Less } else { Ordering::Greater },
        (false, true) => if nulls_first { Ordering::Greater } else { Ordering::Less },
        (false, false) => {
            let o = a.cmp_sql(b).unwrap_or(Ordering::Equal);
            if desc { o.reverse() } else { o }
        }
    }
}

impl Frame<'_> {
    /// The frame of the row at position `k` of `p`: positions `start..end`.
    fn of(&self, p: &Partition, k: usize) -> (usize, usize) {
        let len = p.rows.len();
        let g = p.group_of[k];
        let groups = p.group_start.len();
        // RANGE offset: the first position whose key is not before (start) or is
        // after (end) the bound's key, in the sort order. Keys are sorted, so a
        // binary search; a NULL key's bound is NULL and reaches its NULL peers.
        let range = |target: Option<&Vector>, start: bool| -> usize {
            let (Some(key), Some(target)) = (self.order_key, target) else {
                return if start { p.group_start[g] } else { p.group_end(g) };
            };
            let t = target.value(p.rows[k] as usize);
            p.rows.partition_point(|&r| {
                let o = order_cmp(&key.value(r as usize), &t, self.desc, self.nulls_first);
                if start { o == Ordering::Less } else { o != Ordering::Greater }
            })
        };
        let start = match (self.start, self.units) {
            (Bound::UnboundedPreceding, _) => 0,
            (Bound::UnboundedFollowing, _) => len,
            (Bound::CurrentRow, FrameUnits::Rows) => k,
            (Bound::CurrentRow, _) => p.group_start[g],
            (Bound::Preceding(o), FrameUnits::Rows) => k.saturating_sub(o),
            (Bound::Following(o), FrameUnits::Rows) => k.saturating_add(o).min(len),
            (Bound::Preceding(o), _) => p.group_start[g.saturating_sub(o)],
            (Bound::Following(o), _) => match g.checked_add(o) {
                Some(h) if h < groups => p.group_start[h],
                _ => len,
            },
            (Bound::RangeOffset, _) => range(self.start_key, true),
        };
        let end = match (self.end, self.units) {
            (Bound::UnboundedFollowing, _) => len,
            (Bound::UnboundedPreceding, _) => 0,
            (Bound::CurrentRow, FrameUnits::Rows) => k + 1,
            (Bound::CurrentRow, _) => p.group_end(g),
            (Bound::Preceding(o), FrameUnits::Rows) => (k + 1).saturating_sub(o),
            (Bound::Following(o), FrameUnits::Rows) => k.saturating_add(o).saturating_add(1).min(len),
            (Bound::Preceding(o), _) => match g.checked_sub(o) {
                Some(h) => p.group_end(h),
                None => 0,
            },
            (Bound::Following(o), _) => p.group_end(g.saturating_add(o).min(groups - 1)),
            (Bound::RangeOffset, _) => range(self.end_key, false),
        };
        let start = start.min(len);
        (start, end.max(start))
    }
}

fn int_arg(args: &[Vector], i: usize, row: u32) -> Option<i64> {
    match args.get(i).map(|v| v.value(row as usize)) {
        Some(Value::Integer(x)) => Some(x as i64),
        Some(Value::BigInt(x)) => Some(x),
        Some(Value::SmallInt(x)) => Some(x as i64),
        _ => None,
    }
}

/// Computes `call` for every row of partition `p` into `res` (by held-row number).
fn compute(
    ex: &Exec<'_>,
    call: &WindowCall,
    args: &[Vector],
    p: &Partition,
    frame: &Frame,
    zeros: &[u32],
    res: &mut [Value],
) -> Result<()> {
    let rows = p.rows;
    let len = rows.len();
    let value = |j: usize| args[0].value(rows[j] as usize);
    match call.func {
        WindowFunc::RowNumber => {
            for (k, &r) in rows.iter().enumerate() {
                res[r as usize] = Value::BigInt(k as i64 + 1);
            }
        }
        WindowFunc::Rank => {
            for (k, &r) in rows.iter().enumerate() {
                res[r as usize] = Value::BigInt(p.group_start[p.group_of[k]] as i64 + 1);
            }
        }
        WindowFunc::DenseRank => {
            for (k, &r) in rows.iter().enumerate() {
                res[r as usize] = Value::BigInt(p.group_of[k] as i64 + 1);
            }
        }
        WindowFunc::PercentRank => {
            for (k, &r) in rows.iter().enumerate() {
                let rank = p.group_start[p.group_of[k]] as f64;
                res[r as usize] = Value::Double(if len > 1 { rank / (len - 1) as f64 } else { 0.0 });
            }
        }
        WindowFunc::CumeDist => {
            for (k, &r) in rows.iter().enumerate() {
                res[r as usize] = Value::Double(p.group_end(p.group_of[k]) as f64 / len as f64);
            }
        }
        WindowFunc::Ntile => {
            // PostgreSQL's bucketing: the argument is read at the partition's first
            // row (again at the next while it is NULL); the first `total % buckets`
            // buckets get one row more.
            let mut ntile = 0i64;
            let (mut per, mut boundary, mut remainder) = (0i64, 0i64, 0i64);
            for (k, &r) in rows.iter().enumerate() {
                if ntile == 0 {
                    let Some(buckets) = int_arg(args, 0, r) else {
                        continue;
                    };
                    if buckets <= 0 {
                        return Err(Error::data("22014", "argument of ntile must be greater than zero"));
                    }
                    ntile = 1;
                    per = 0;
                    boundary = len as i64 / buckets;
                    if boundary <= 0 {
                        boundary = 1;
                    } else {
                        remainder = len as i64 % buckets;
                        if remainder != 0 {
                            boundary += 1;
                        }
                    }
                }
                per += 1;
                if boundary < per {
                    if remainder != 0 && ntile == remainder {
                        remainder = 0;
                        boundary -= 1;
                    }
                    ntile += 1;
                    per = 1;
                }
                let _ = k;
                res[r as usize] = Value::Integer(ntile as i32);
            }
        }
        WindowFunc::Lag | WindowFunc::Lead => {
            for (k, &r) in rows.iter().enumerate() {
                let offset = if args.len() >= 2 {
                    match int_arg(args, 1, r) {
                        Some(o) => o,
                        None => {
                            res[r as usize] = Value::Null;
                            continue;
                        }
                    }
                } else {
                    1
                };
                let target = if call.func == WindowFunc::Lag {
                    (k as i64).checked_sub(offset)
                } else {
                    (k as i64).checked_add(offset)
                };
                res[r as usize] = match target {
                    Some(j) if j >= 0 && (j as usize) < len => value(j as usize),
                    _ => args.get(2).map_or(Value::Null, |d| d.value(r as usize)),
                };
            }
        }
        WindowFunc::FirstValue | WindowFunc::LastValue | WindowFunc::NthValue => {
            for (k, &r) in rows.iter().enumerate() {
                let (s, e) = frame.of(p, k);
                res[r as usize] = match call.func {
                    WindowFunc::FirstValue if s < e => value(s),
                    WindowFunc::LastValue if s < e => value(e - 1),
                    WindowFunc::NthValue => match int_arg(args, 1, r) {
                        None => Value::Null,
                        Some(nth) if nth <= 0 => {
                            return Err(Error::data("22016", "argument of nth_value must be greater than zero"));
                        }
                        Some(nth) => match s.checked_add(nth as usize - 1) {
                            Some(j) if j < e => value(j),
                            _ => Value::Null,
                        },
                    },
                    _ => Value::Null,
                };
            }
        }
        WindowFunc::Agg(func) => {
            let agg = AggCall {
                udf: None,
                func,
                arg: call.args.first().cloned(),
                arg2: call.args.get(1).cloned(),
                distinct: false,
                order: Vec::new(),
                ty: call.ty,
            };
            let arg = if func == AggFunc::CountStar { None } else { args.first() };
            let arg2 = args.get(1);
            let ty: DataType = call.ty;
            let mut acc: Option<Acc> = None;
            let (mut cs, mut ce) = (0usize, 0usize);
            // Rows added since the last cancel check: sliding frames add many per row.
            let mut work = 0usize;
            for k in 0..len {
                let (s, e) = frame.of(p, k);
                let state = match acc.as_mut() {
                    Some(a) if s == cs && e >= ce => a,
                    _ => {
                        // The frame's start moved (or it shrank): start again.
                        work += e.saturating_sub(s) + 1;
                        if work >= 1 << 16 {
                            ex.ctx.interrupt.check()?;
                            work = 0;
                        }
                        let mut a = Acc::new(&agg)?;
                        a.push_groups(1);
                        cs = s;
                        ce = s;
                        acc.insert(a)
                    }
                };
                if e > ce {
                    state.update(zeros, arg, arg2, Some(&rows[ce..e]))?;
                    ce = e;
                }
                res[rows[k] as usize] = cast_to(state.result(0, &ty)?, &ty)?;
            }
        }
    }
    Ok(())
}
