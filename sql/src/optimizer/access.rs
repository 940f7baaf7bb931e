//! Rule: index access (`optimizer_index_access`). A scan whose filter has equalities
//! on the leading columns of an index (and optionally a range on the next one) may
//! read through that index; the index with the most constrained columns is the
//! candidate, a unique index fully constrained by equalities above all. The
//! candidate is taken when it is estimated cheaper than reading the heap: the rows
//! its bounds select (from column statistics, see `cardinality`) each cost a random
//! heap access, less when the table is stored in the index's order (the leading
//! column's correlation), against one sequential row for every row of the table. A
//! fully constrained unique index is always taken.

use std::cmp::Ordering;

use super::cardinality::{selectivity, table_rows};
use super::cost::{INDEX_DESCENT, SEQ_ROW, index_row};
use super::{Stats, and_all, conjuncts, map_children};
use crate::expr::{CmpOp, Expr, ExprKind};
use crate::plan::{Access, Node, Plan};

/// Of two bounds on one side of a range, the one that admits fewer values: for lower
/// bounds (`wins` = Greater) the larger, for upper bounds the smaller; at equal values
/// the exclusive one. Bounds that are not both literals (parameters) keep the first:
/// the filter still checks both, so either is correct, only less narrow.
fn tighter(old: Option<(Expr, bool)>, new: (Expr, bool), wins: Ordering) -> Option<(Expr, bool)> {
    let Some(old) = old else { return Some(new) };
    let (ExprKind::Literal(a), ExprKind::Literal(b)) = (&old.0.kind, &new.0.kind) else {
        return Some(old);
    };
    match b.cmp_sql(a) {
        Some(o) if o == wins => Some(new),
        Some(Ordering::Equal) if old.1 && !new.1 => Some(new),
        _ => Some(old),
    }
}

/// Whether `e` is a constant for the scan (literals and parameters).
fn is_bound(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Literal(_) | ExprKind::Param(_) => true,
        ExprKind::Column(_) | ExprKind::Subquery(_) => false,
        _ => e.children().iter().all(|c| super::deep(|| is_bound(c))),
    }
}

pub fn choose_access(plan: Plan, stats: &dyn Stats) -> Plan {
    let plan = map_children(plan, &mut |p| choose_access(p, stats));
    let Plan { node, schema, est: _ } = plan;
    let Node::TableScan {
        table,
        columns,
        filter: Some(f),
        access: Access::Heap,
        with_tid,
        bees,
    } = node
    else {
        return Plan::new(node, schema);
    };
    let mut parts = Vec::new();
    conjuncts(f.clone(), &mut parts);
    // For each conjunct: (table column, op, bound expr, its position in `parts`).
    let mut preds: Vec<(usize, CmpOp, Expr, usize)> = Vec::new();
    for (k, p) in parts.iter().enumerate() {
        let ExprKind::Compare { op, left, right } = &p.kind else { continue };
        let (col, op, val) = match (&left.kind, &right.kind) {
            (ExprKind::Column(c), _) if is_bound(right) => (*c, *op, (**right).clone()),
            (_, ExprKind::Column(c)) if is_bound(left) => (*c, op.flip(), (**left).clone()),
            _ => continue,
        };
        if op == CmpOp::NotEq {
            continue;
        }
        let tcol = columns[col];
        // The key must compare exactly as the column: same type on both sides.
        if table.columns[tcol].ty != left.ty || left.ty != right.ty {
            continue;
        }
        preds.push((tcol, op, val, k));
    }
    // (score, index, access, the conjuncts its bounds come from, fully constrained unique)
    let mut best: Option<(usize, usize, Access, Vec<usize>, bool)> = None;
    for (ix, index) in table.indexes.iter().enumerate() {
        let mut eq = Vec::new();
        let mut used = Vec::new();
        for &kc in &index.columns {
            match preds.iter().find(|(c, op, _, _)| *c == kc && *op == CmpOp::Eq) {
                Some((_, _, v, k)) => {
                    eq.push(v.clone());
                    used.push(*k);
                }
                None => break,
            }
        }
        let mut lower = None;
        let mut upper = None;
        if eq.len() < index.columns.len() {
            let next = index.columns[eq.len()];
            for (c, op, v, k) in &preds {
                if *c != next {
                    continue;
                }
                if *op != CmpOp::Eq {
                    used.push(*k);
                }
                match op {
                    CmpOp::Gt => lower = tighter(lower, (v.clone(), false), Ordering::Greater),
                    CmpOp::GtEq => lower = tighter(lower, (v.clone(), true), Ordering::Greater),
                    CmpOp::Lt => upper = tighter(upper, (v.clone(), false), Ordering::Less),
                    CmpOp::LtEq => upper = tighter(upper, (v.clone(), true), Ordering::Less),
                    _ => {}
                }
            }
        }
        let score = eq.len() * 2 + usize::from(lower.is_some()) + usize::from(upper.is_some());
        let full_unique = index.unique && eq.len() == index.columns.len();
        let score = score + if full_unique { 100 } else { 0 };
        if score > 0 && best.as_ref().is_none_or(|b| score > b.0) {
            best = Some((score, ix, Access::Index { index: ix, eq, lower, upper }, used, full_unique));
        }
    }
    let mut scan = Plan::new(
        Node::TableScan {
            table,
            columns,
            filter: Some(f),
            access: Access::Heap,
            with_tid,
            bees,
        },
        schema,
    );
    if let Some((_, ix, access, used, full_unique)) = best
        && (full_unique || index_pays(&scan, ix, &parts, &used, stats))
        && let Node::TableScan { access: a, .. } = &mut scan.node
    {
        *a = access;
    }
    scan
}

/// Whether reading `scan`'s table through index `ix`, whose bounds come from the
/// conjuncts `used` of `parts`, is estimated cheaper than reading the whole heap.
fn index_pays(scan: &Plan, ix: usize, parts: &[Expr], used: &[usize], stats: &dyn Stats) -> bool {
    let Node::TableScan { table, .. } = &scan.node else { return false };
    let rows = table_rows(table, stats);
    let bounds = and_all(used.iter().map(|&k| parts[k].clone()).collect());
    let selected = rows * bounds.map_or(1.0, |b| selectivity(&b, scan, stats));
    INDEX_DESCENT + selected * index_row(table, ix, stats) < rows * SEQ_ROW
}
