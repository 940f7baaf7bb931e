//! Where a hash join's probe key comes from, when it is a stored column: the heap scan
//! below the join's left input that produces it, reached through filters, projections
//! of plain columns and the left inputs of other joins.
//!
//! A hash join that drops its probe rows without a match (inner, right, semi) can have
//! that scan test the column against the build's keys before it decodes the rest of
//! the tuple: TPC-H Q17 joins 6M lineitem rows with 206 parts, and without the test
//! every lineitem row is decoded, batched and probed to keep 6,088 of them. The
//! optimizer marks such joins (`JoinMethod::Hash { key_filter }`, rule
//! `optimizer_join_filter`), EXPLAIN names the column, and the executor finds the scan
//! with the same walk (`exec::key_filter`).
//!
//! The walk stops at anything that could tell a row dropped early from one dropped by
//! the join: a node that is not a filter, a projection or a join's left input; an
//! expression with side effects on the way (`nextval` must run for the rows it ran for
//! before); an index scan (its rows come from the index, not a run of heap tuples).

use std::sync::Arc;

use super::{Access, Node, Plan};
use crate::catalog::TableDef;
use crate::expr::ExprKind;

/// A probe key column traced to the scan that produces it.
#[derive(Debug, Clone, Copy)]
pub struct KeySource<'p> {
    /// The scan's pre-order id relative to the plan the walk started at (0 = that plan).
    pub offset: usize,
    /// The scanned table.
    pub table: &'p Arc<TableDef>,
    /// The table column (not the scan's output position).
    pub column: usize,
}

/// The heap scan under `plan` whose column `col` of `plan`'s output is, unchanged.
pub fn key_source(plan: &Plan, col: usize) -> Option<KeySource<'_>> {
    let (mut node, mut offset, mut col) = (plan, 0usize, col);
    loop {
        match &node.node {
            Node::TableScan { table, columns, filter, access: Access::Heap, .. } => {
                if filter.as_ref().is_some_and(|f| f.has_side_effects()) {
                    return None;
                }
                // Past the table's columns is the tuple id of a `with_tid` scan.
                let &column = columns.get(col)?;
                return Some(KeySource { offset, table, column });
            }
            Node::Filter { input, predicate } => {
                if predicate.has_side_effects() {
                    return None;
                }
                node = input;
            }
            Node::Project { input, exprs } => {
                if exprs.iter().any(|e| e.has_side_effects()) {
                    return None;
                }
                let e = exprs.get(col)?;
                match e.kind {
                    ExprKind::Column(c) if input.schema.get(c).is_some_and(|s| s.ty == e.ty) => col = c,
                    _ => return None,
                }
                node = input;
            }
            // The join's output starts with its left input's columns (every kind); a
            // row whose column holds a value the upper join drops carries it on from
            // the left row it came from, so dropping that left row loses nothing the
            // upper join would keep — whatever this join's kind (a right or full join
            // NULL-extends instead, and a NULL key never matches).
            Node::Join { left, on, left_keys, right_keys, .. } => {
                if col >= left.schema.len()
                    || on.as_ref().is_some_and(|e| e.has_side_effects())
                    || left_keys.iter().chain(right_keys).any(|e| e.has_side_effects())
                {
                    return None;
                }
                node = left;
            }
            _ => return None,
        }
        offset += 1;
    }
}

/// Which integer kind a key type is, for the executor's integer key filter: integers of
/// any width compare by value (SQL equality), dates and timestamps only with their own
/// type. `None` for every other type (no filter).
fn integer_kind(ty: &crate::types::DataType) -> Option<u8> {
    use crate::types::DataType;
    match ty {
        DataType::SmallInt | DataType::Integer | DataType::BigInt => Some(0),
        DataType::Date => Some(1),
        DataType::Timestamp => Some(2),
        _ => None,
    }
}

/// Bytes of an integer type (0 for any other).
fn integer_width(ty: &crate::types::DataType) -> u8 {
    use crate::types::DataType;
    match ty {
        DataType::SmallInt => 2,
        DataType::Integer => 4,
        DataType::BigInt => 8,
        _ => 0,
    }
}

/// The key pairs of a hash join with left input `left` whose probe key is a stored
/// integer column of a heap scan under `left`, with that column: what the executor's
/// key filter can test (`exec::key_filter` holds integer keys only). Each entry is
/// (the key's index in `left_keys`, its source). A key may be the column itself or
/// the column widened to a larger integer type.
pub fn filterable_keys<'p>(
    left: &'p Plan,
    left_keys: &[crate::expr::Expr],
    right_keys: &[crate::expr::Expr],
) -> Vec<(usize, KeySource<'p>)> {
    let mut out = Vec::new();
    for (k, (l, r)) in left_keys.iter().zip(right_keys).enumerate() {
        let Some(kind) = integer_kind(&l.ty) else { continue };
        // The key is a column, or an integer column widened (a smallint joined with
        // an integer): the same value either way. A narrowing cast could fail on a
        // row the filter would drop first, so it gets no filter.
        let c = match &l.kind {
            ExprKind::Column(c) if left.schema.get(*c).is_some_and(|s| s.ty == l.ty) => *c,
            ExprKind::Cast { expr, .. } => match expr.kind {
                ExprKind::Column(c)
                    if left.schema.get(c).is_some_and(|s| s.ty == expr.ty)
                        && integer_kind(&expr.ty) == Some(0)
                        && integer_width(&expr.ty) <= integer_width(&l.ty) =>
                {
                    c
                }
                _ => continue,
            },
            _ => continue,
        };
        if integer_kind(&r.ty) != Some(kind) {
            continue;
        }
        if let Some(src) = key_source(left, c)
            && integer_kind(&src.table.columns[src.column].ty) == Some(kind)
        {
            out.push((k, src));
        }
    }
    out
}
