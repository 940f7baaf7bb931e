//! Rule: index access (`optimizer_index_access`). A scan whose filter has equalities
//! on the leading columns of an index (and optionally a range on the next one) reads
//! through that index; the index with the most constrained columns wins, a unique
//! index fully constrained by equalities above all.

use std::cmp::Ordering;

use super::{conjuncts, map_children};
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

pub fn choose_access(plan: Plan) -> Plan {
    let plan = map_children(plan, &mut choose_access);
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
    // For each conjunct: (table column, op, bound expr).
    let mut preds: Vec<(usize, CmpOp, Expr)> = Vec::new();
    for p in &parts {
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
        preds.push((tcol, op, val));
    }
    let mut best: Option<(usize, usize, Access)> = None;
    for (ix, index) in table.indexes.iter().enumerate() {
        let mut eq = Vec::new();
        for &kc in &index.columns {
            match preds.iter().find(|(c, op, _)| *c == kc && *op == CmpOp::Eq) {
                Some((_, _, v)) => eq.push(v.clone()),
                None => break,
            }
        }
        let mut lower = None;
        let mut upper = None;
        if eq.len() < index.columns.len() {
            let next = index.columns[eq.len()];
            for (c, op, v) in &preds {
                if *c != next {
                    continue;
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
        if score > 0 && best.as_ref().is_none_or(|(s, _, _)| score > *s) {
            best = Some((score, ix, Access::Index { index: ix, eq, lower, upper }));
        }
    }
    let access = best.map(|(_, _, a)| a).unwrap_or(Access::Heap);
    Plan::new(
        Node::TableScan {
            table,
            columns,
            filter: Some(f),
            access,
            with_tid,
            bees,
        },
        schema,
    )
}
