//! The point-statement path: a plan that reads at most one tuple — a table scan
//! whose access is an equality on every column of a unique index, with at most a
//! projection above it — runs here instead of through the operator tree. That is
//! the shape of `SELECT … FROM t WHERE key = $1` and of the plans UPDATE and DELETE
//! read their target row with (`UPDATE t SET v = v + $1 WHERE key = $2`).
//!
//! What it leaves out is the general path's machinery for many rows, not any of its
//! semantics: no node dispatch or guarded stack step per operator, no index read in
//! runs with its tuple-id and tuple buffers, no batch builder, no closures per
//! operator. The key is evaluated and looked up exactly as an index scan does it
//! (`scan::index_range`), the tuple is decoded by the generic decoder (the bees'
//! twin) into one-row vectors, and the scan's filter and the projection are
//! evaluated by the executor's own evaluator (`Exec::pred`, `Exec::eval`) over them,
//! so rows, value types and errors are the general path's. A unique index holds at
//! most one entry for a key without NULLs (an equality with NULL finds nothing), but
//! every entry the key finds is read, so the result would stay right even if it
//! held more. The filter's conjuncts are tested in order, as the evaluator's AND
//! does, less the equalities the lookup itself guarantees ([`implied_by_key`]): a
//! `key = $1` on a key column whose index key is exact (integers, dates, timestamps,
//! booleans, decimals at the key scale, text and varchar compared byte for byte)
//! holds for every tuple the lookup finds, so it is not evaluated again; on other
//! types (floats, whose 0 and −0 or NaNs compare otherwise than their bytes,
//! intervals, blank-padded characters) it is.
//!
//! The session setting `point_path = off` sends these plans through the operator
//! tree too, so tests compare both paths (`sql/tests/point_path.rs`).

use beedb_storage::TupleId;
use beedb_storage::heap::HeapFile;

use super::scan::index_range;
use super::tuple_codec::RowDecoder;
use super::{Exec, ExecContext, StatementState, make_batch, tid_vector};
use crate::catalog::TableDef;
use crate::error::{Error, Result};
use crate::expr::{CmpOp, Expr, ExprKind};
use crate::plan::{Access, Node, Plan};
use crate::types::Value;
use crate::vector::Batch;

/// The parts of a point plan.
struct PointPlan<'p> {
    table: &'p TableDef,
    columns: &'p [usize],
    filter: Option<&'p Expr>,
    index: usize,
    eq: &'p [Expr],
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
    if !is_unique_lookup(table, access) {
        return None;
    }
    let Access::Index { index, eq, .. } = access else { return None };
    Some(PointPlan {
        table,
        columns,
        filter: filter.as_ref(),
        index: *index,
        eq,
        with_tid: *with_tid,
        project,
    })
}

/// The name of the unique index a point plan looks its key up in, when `plan` is
/// one (EXPLAIN VERBOSE shows it).
pub fn point_index_name(plan: &Plan) -> Option<&str> {
    let p = point_plan(plan)?;
    Some(p.table.indexes[p.index].name.as_str())
}

/// Runs `plan` on the point path when it is a point plan, handing its one-row
/// batches to `sink` (which returns `Ok(false)` to stop); returns whether it was one
/// (when not, nothing ran and the caller runs the plan through [`super::run`]).
/// Not used under EXPLAIN ANALYZE, whose counters belong to the operators.
pub fn run_point(plan: &Plan, ctx: &ExecContext, sink: &mut dyn FnMut(Batch) -> Result<bool>) -> Result<bool> {
    let Some(p) = point_plan(plan).filter(|_| ctx.profile.is_none()) else { return Ok(false) };
    lookup(&p, ctx, &mut |ex, scanned| {
        let out = match p.project {
            None => scanned,
            Some(exprs) => {
                let cols = exprs.iter().map(|e| ex.eval(e, &scanned)).collect::<Result<Vec<_>>>()?;
                make_batch(cols, 1)
            }
        };
        sink(out)
    })?;
    Ok(true)
}

/// [`run_point`] returning the rows as values (what `super::collect` returns), or
/// `None` when `plan` is not a point plan. A projected column that is a plain
/// reference to a scanned one of the same type is taken as a value straight from the
/// decoded tuple (an UPDATE's plan passes every old value on so): the operator tree
/// would copy its vector first and read the same value out of the copy.
pub fn collect_point(plan: &Plan, ctx: &ExecContext) -> Result<Option<Vec<Vec<Value>>>> {
    let Some(p) = point_plan(plan).filter(|_| ctx.profile.is_none()) else { return Ok(None) };
    let mut rows = Vec::new();
    lookup(&p, ctx, &mut |ex, scanned| {
        let row = match p.project {
            None => scanned.row_values(0),
            Some(exprs) => exprs
                .iter()
                .map(|e| match e.kind {
                    ExprKind::Column(i) if scanned.columns.get(i).is_some_and(|c| c.ty == e.ty) => {
                        Ok(scanned.columns[i].value(0))
                    }
                    _ => Ok(ex.eval(e, &scanned)?.value(0)),
                })
                .collect::<Result<Vec<_>>>()?,
        };
        rows.push(row);
        Ok(true)
    })?;
    Ok(Some(rows))
}

/// Looks the key of point plan `p` up and hands each tuple it finds that passes the
/// scan's filter to `each` as a one-row batch of the scan's output (its columns, then
/// the tuple id when the scan reports it); `each` returns `Ok(false)` to stop.
fn lookup(p: &PointPlan<'_>, ctx: &ExecContext, each: &mut dyn FnMut(&Exec<'_>, Batch) -> Result<bool>) -> Result<()> {
    ctx.interrupt.check()?;
    let state = StatementState::default();
    let ex = state.exec(ctx, None, None);
    let r = ctx.reader;
    let Some(range) = index_range(&ex, p.table, p.index, p.eq, (None, None, false), false)? else {
        return Ok(());
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
            } else {
                more.push(tid);
            }
        }
    }
    let Some(first) = first else { return Ok(()) };
    let heap = HeapFile::open(p.table.heap);
    let decoder = RowDecoder::new(p.table, p.columns);
    let mut tuple = Vec::new();
    for tid in std::iter::once(first).chain(more) {
        if !heap.get_into(r, tid, &mut tuple)? {
            return Err(Error::internal(format!(
                "index of \"{}\" names tuple {tid}, which does not exist",
                p.table.name
            )));
        }
        let mut cols = decoder.new_vectors(1);
        decoder.decode_into(r, p.table, &tuple, &mut cols)?;
        if p.with_tid {
            cols.push(tid_vector(&[tid]));
        }
        let scanned = make_batch(cols, 1);
        if let Some(f) = p.filter
            && !passes(p, &ex, f, &scanned)?
        {
            continue;
        }
        if !each(&ex, scanned)? {
            break;
        }
    }
    Ok(())
}

/// Whether the one row of `scanned` passes `filter`, a conjunction tested conjunct by
/// conjunct in order (stopping at the first that is not true, as the evaluator's AND
/// does), skipping those the lookup guarantees.
fn passes(p: &PointPlan<'_>, ex: &Exec<'_>, filter: &Expr, scanned: &Batch) -> Result<bool> {
    match &filter.kind {
        ExprKind::And(list) => {
            for c in list {
                if !passes(p, ex, c, scanned)? {
                    return Ok(false);
                }
            }
            Ok(true)
        }
        _ if implied_by_key(p, filter) => Ok(true),
        _ => Ok(!ex.pred(filter, scanned)?.is_empty()),
    }
}

/// Whether conjunct `c` is an equality the unique-index lookup of `p` guarantees for
/// every tuple it finds: `column = key` (either way round) where the column is the
/// index's key column `k`, `key` is the lookup's `k`th key expression, both sides
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
