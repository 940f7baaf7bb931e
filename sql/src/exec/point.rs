//! The point-statement path: a plan that reads a few tuples through an index — a
//! table scan whose access is an index lookup (an equality on every column of a
//! unique index, or any other index equality or range), with at most a projection
//! above it — runs here instead of through the operator tree. That is the shape of
//! `SELECT … FROM t WHERE key = $1`, of the plans UPDATE and DELETE read their target
//! rows with (`UPDATE t SET v = v + $1 WHERE key = $2`), and of a lookup by a
//! non-unique key that names a handful of rows (`SELECT … FROM orders WHERE
//! customer = $1`).
//!
//! The index entries are read first, before anything is decoded or handed on: when
//! the lookup finds more than [`POINT_MAX_ROWS`] of them, the point path declines and
//! the caller runs the plan through the operator tree, which reads many rows in runs
//! and batches (nothing was output, so the only cost is one index descent). A plan the
//! optimizer expects to give more than four times that many rows is not tried at all.
//!
//! What it leaves out is the general path's machinery for many rows, not any of its
//! semantics: no node dispatch or guarded stack step per operator, no index read in
//! runs with its tuple-id and tuple buffers, no batch builder, no closures per
//! operator, and no vectors at all: the key is evaluated and looked up exactly as an
//! index scan does it (`scan::index_range`, with the scan's bounds and direction),
//! each tuple is decoded by the generic decoder straight into values
//! (`tuple_codec::decode_values`, the values the bees' twin puts into vectors), and
//! the scan's filter and the projection (an UPDATE's SET expressions) are computed
//! over those values by the row evaluator (`crate::expr::eval_row`, whose twin and
//! reference is the executor's vectorized evaluator), so rows, their order, value
//! types and errors are the general path's. The filter's conjuncts are tested in
//! order, as the evaluator's AND does, less the equalities the lookup itself
//! guarantees ([`implied_by_key`]): a `key = $1` on a key column the lookup binds by
//! equality, whose index key is exact (integers, dates, timestamps, booleans,
//! decimals at the key scale, text and varchar compared byte for byte), holds for
//! every tuple the lookup finds, so it is not evaluated again; on other types
//! (floats, whose 0 and −0 or NaNs compare otherwise than their bytes, intervals,
//! blank-padded characters) it is.
//!
//! The session setting `point_path = off` sends these plans through the operator
//! tree too, so tests compare both paths (`sql/tests/point_path.rs`).

use beedb_storage::TupleId;
use beedb_storage::heap::HeapFile;

use super::scan::{index_range, tid_to_i64};
use super::tuple_codec::decode_values;
use super::{ExecContext, StatementState, make_batch};
use crate::catalog::TableDef;
use crate::error::{Error, Result};
use crate::expr::{CmpOp, EvalContext, Expr, ExprKind, eval_row};
use crate::plan::{Access, Node, Plan};
use crate::types::Value;
use crate::vector::{Batch, Vector};

/// Most index entries a lookup on the point path takes; with more, the point path
/// declines and the operator tree runs the plan.
pub const POINT_MAX_ROWS: usize = 32;

/// The parts of a point plan.
struct PointPlan<'p> {
    table: &'p TableDef,
    columns: &'p [usize],
    filter: Option<&'p Expr>,
    index: usize,
    eq: &'p [Expr],
    lower: Option<&'p (Expr, bool)>,
    upper: Option<&'p (Expr, bool)>,
    skip_nulls: bool,
    backward: bool,
    /// Whether the access names at most one tuple ([`is_unique_lookup`]).
    unique: bool,
    with_tid: bool,
    /// The projection above the scan, if there is one.
    project: Option<&'p [Expr]>,
}

/// Whether `access` on `table` names at most one tuple: equality on every column of
/// a unique index, no range.
pub(crate) fn is_unique_lookup(table: &TableDef, access: &Access) -> bool {
    match access {
        Access::Heap => false,
        Access::Index { index, eq, lower, upper, .. } => table.indexes.get(*index).is_some_and(|i| {
            i.unique && eq.len() == i.columns.len() && lower.is_none() && upper.is_none()
        }),
    }
}

fn point_plan(plan: &Plan) -> Option<PointPlan<'_>> {
    let (scan, project) = match &plan.node {
        Node::Project { input, exprs } => (&**input, Some(exprs.as_slice())),
        Node::TableScan { .. } => (plan, None),
        _ => return None,
    };
    let Node::TableScan { table, columns, filter, access, with_tid, .. } = &scan.node else {
        return None;
    };
    let Access::Index { index, eq, lower, upper, skip_nulls, backward, any } = access else { return None };
    // An IN list looks several keys up: the executor's index scan does that.
    if !any.is_empty() {
        return None;
    }
    let unique = is_unique_lookup(table, access);
    // A plan expected to give many rows is not tried: it would only be declined.
    if !unique && scan.est.is_some_and(|e| e.rows > (4 * POINT_MAX_ROWS) as f64) {
        return None;
    }
    Some(PointPlan {
        table,
        columns,
        filter: filter.as_ref(),
        index: *index,
        eq,
        lower: lower.as_ref(),
        upper: upper.as_ref(),
        skip_nulls: *skip_nulls,
        backward: *backward,
        unique,
        with_tid: *with_tid,
        project,
    })
}

/// Whether `plan` is a point plan (an index lookup expected to give a few rows): the
/// point path runs it with the generic decoder, so bees attached to it are used only
/// when a lookup by a non-unique key finds more than [`POINT_MAX_ROWS`] entries and
/// the operator tree runs it instead.
pub fn is_point_plan(plan: &Plan) -> bool {
    point_plan(plan).is_some()
}

/// How the point path runs `plan`, when it is a point plan (EXPLAIN VERBOSE shows
/// it): `one lookup in t_pkey`, or for a lookup that may find several rows `lookup in
/// t_a_idx (up to 32 rows, else the operator tree)`.
pub fn point_description(plan: &Plan) -> Option<String> {
    let p = point_plan(plan)?;
    let index = &p.table.indexes[p.index].name;
    Some(if p.unique {
        format!("one lookup in {index}")
    } else {
        format!("lookup in {index} (up to {POINT_MAX_ROWS} rows, else the operator tree)")
    })
}

/// Runs `plan` on the point path when it is a point plan, handing its one-row
/// batches to `sink` (which returns `Ok(false)` to stop); returns whether it ran
/// (when not — not a point plan, or a lookup that found more than [`POINT_MAX_ROWS`]
/// entries — nothing was output and the caller runs the plan through
/// [`super::run`]). Not used under EXPLAIN ANALYZE, whose counters belong to the
/// operators.
pub fn run_point(plan: &Plan, ctx: &ExecContext, sink: &mut dyn FnMut(Batch) -> Result<bool>) -> Result<bool> {
    let Some(p) = point_plan(plan).filter(|_| ctx.profile.is_none()) else { return Ok(false) };
    let types = plan.types();
    lookup(&p, ctx, &mut |row| {
        let mut cols: Vec<Vector> = types.iter().map(|t| Vector::new(*t, 1)).collect();
        for (c, v) in cols.iter_mut().zip(&row) {
            crate::expr::push_value_as(c, v)?;
        }
        sink(make_batch(cols, 1))
    })
}

/// [`run_point`] returning the rows as values (what `super::collect` returns), or
/// `None` when it did not run (`plan` is not a point plan, or its lookup found too
/// many entries).
pub fn collect_point(plan: &Plan, ctx: &ExecContext) -> Result<Option<Vec<Vec<Value>>>> {
    let Some(p) = point_plan(plan).filter(|_| ctx.profile.is_none()) else { return Ok(None) };
    let mut rows = Vec::new();
    Ok(lookup(&p, ctx, &mut |row| {
        rows.push(row);
        Ok(true)
    })?
    .then_some(rows))
}

/// Looks the key of point plan `p` up and hands each tuple it finds that passes the
/// scan's filter to `each` as the plan's output row (the projection's values, or the
/// scan's columns then the tuple id when the scan reports it); `each` returns
/// `Ok(false)` to stop. Returns `Ok(false)`, having called `each` for nothing, when
/// the lookup finds more than [`POINT_MAX_ROWS`] index entries.
///
/// The tuple is decoded into values and the filter and projection are computed by
/// the row evaluator ([`crate::expr::eval_row`]) over them: no one-row vectors, batch
/// or selection vector per tuple (the vectorized evaluator is the row evaluator's
/// twin, and its fallback for the expressions it does not compute itself).
fn lookup(p: &PointPlan<'_>, ctx: &ExecContext, each: &mut dyn FnMut(Vec<Value>) -> Result<bool>) -> Result<bool> {
    ctx.interrupt.check()?;
    let state = StatementState::default();
    let ex = state.exec(ctx, None, None);
    let r = ctx.reader;
    let bounds = (p.lower, p.upper, p.skip_nulls);
    let Some(range) = index_range(&ex, p.table, p.index, p.eq, bounds, p.backward)? else {
        return Ok(true);
    };
    // The tuple ids are copied out and the cursor (and the leaf latch it holds)
    // dropped before the heap is read, as the index scan does.
    let mut first: Option<TupleId> = None;
    let mut more: Vec<TupleId> = Vec::new();
    {
        let mut cursor = range.open(r)?;
        while let Some((_, v)) = cursor.next_entry()? {
            let tid = TupleId::from_bytes(v).ok_or_else(|| Error::internal("malformed index value"))?;
            if first.is_none() {
                first = Some(tid);
            } else if more.len() + 1 < POINT_MAX_ROWS {
                more.push(tid);
            } else {
                return Ok(false);
            }
        }
    }
    let Some(first) = first else { return Ok(true) };
    let heap = HeapFile::open(p.table.heap);
    let ectx = ex.eval_ctx();
    let mut tuple = Vec::new();
    for tid in std::iter::once(first).chain(more) {
        if !heap.get_into(r, tid, &mut tuple)? {
            return Err(Error::internal(format!(
                "index of \"{}\" names tuple {tid}, which does not exist",
                p.table.name
            )));
        }
        let mut scanned = Vec::with_capacity(p.columns.len() + usize::from(p.with_tid));
        decode_values(r, p.table, p.columns, &tuple, &mut scanned)?;
        if p.with_tid {
            scanned.push(Value::BigInt(tid_to_i64(tid)));
        }
        if let Some(f) = p.filter
            && !passes(p, &ectx, f, &scanned)?
        {
            continue;
        }
        let row = match p.project {
            None => scanned,
            Some(exprs) => project(p, exprs, scanned, &ectx)?,
        };
        if !each(row)? {
            break;
        }
    }
    Ok(true)
}

/// The projection `exprs` over the decoded row `scanned`, by the row evaluator. A
/// plain reference to a decoded column of its own type (the value the evaluator
/// would copy) is moved out of `scanned` at its last such use instead: an UPDATE's
/// plan passes every old value on twice, as the new value of an unchanged column and
/// as the old value. Computed expressions are evaluated first, in order (a plain
/// reference never fails, so the first error is the same), since they may read any
/// column.
fn project(p: &PointPlan<'_>, exprs: &[Expr], mut scanned: Vec<Value>, ectx: &EvalContext<'_>) -> Result<Vec<Value>> {
    let plain = |e: &Expr| match e.kind {
        ExprKind::Column(i) if i < p.columns.len() && e.ty == p.table.columns[p.columns[i]].ty => Some(i),
        ExprKind::Column(i) if i == p.columns.len() && p.with_tid && e.ty == crate::types::DataType::BigInt => Some(i),
        _ => None,
    };
    let mut out = Vec::with_capacity(exprs.len());
    for e in exprs {
        out.push(match plain(e) {
            Some(_) => Value::Null,
            None => eval_row(e, &scanned, ectx)?,
        });
    }
    for k in (0..exprs.len()).rev() {
        let Some(i) = plain(&exprs[k]) else { continue };
        // A later use of the same column took the value: copy it from there.
        let later = (k + 1..exprs.len()).find(|&j| plain(&exprs[j]) == Some(i));
        out[k] = match later {
            Some(j) => out[j].clone(),
            None => std::mem::replace(&mut scanned[i], Value::Null),
        };
    }
    Ok(out)
}

/// Whether `row` passes `filter`, a conjunction tested conjunct by conjunct in order
/// (stopping at the first that is not true, as the evaluator's AND does), skipping
/// those the lookup guarantees.
fn passes(p: &PointPlan<'_>, ectx: &EvalContext<'_>, filter: &Expr, row: &[Value]) -> Result<bool> {
    match &filter.kind {
        ExprKind::And(list) => {
            for c in list {
                if !passes(p, ectx, c, row)? {
                    return Ok(false);
                }
            }
            Ok(true)
        }
        _ if implied_by_key(p, filter) => Ok(true),
        _ => Ok(eval_row(filter, row, ectx)? == Value::Boolean(true)),
    }
}
/// Whether conjunct `c` is an equality the index lookup of `p` guarantees for
/// every tuple it finds: `column = key` (either way round) where the column is the
/// index's key column `k`, `key` is the lookup's `k`th equality key expression, both sides
/// have the column's type, and that type's index key is exact — equal keys mean
/// equal values under SQL's `=` (see the module's documentation).
fn implied_by_key(p: &PointPlan<'_>, c: &Expr) -> bool {
    let ExprKind::Compare { op: CmpOp::Eq, left, right } = &c.kind else { return false };
    let (column, key) = match (&left.kind, &right.kind) {
        (ExprKind::Column(i), _) => (*i, &**right),
        (_, ExprKind::Column(i)) => (*i, &**left),
        _ => return false,
    };
    let Some(&tcol) = p.columns.get(column) else { return false };
    let Some(k) = p.table.indexes[p.index].columns.iter().position(|&ic| ic == tcol) else {
        return false;
    };
    let ty = p.table.columns[tcol].ty;
    use crate::types::DataType as T;
    let exact = matches!(
        ty,
        T::Boolean | T::SmallInt | T::Integer | T::BigInt | T::Date | T::Timestamp | T::Decimal { .. } | T::Text | T::Varchar(_)
    );
    exact && left.ty == ty && right.ty == ty && p.eq.get(k) == Some(key)
}
