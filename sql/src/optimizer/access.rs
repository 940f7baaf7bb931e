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
use crate::catalog::TableDef;
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

/// A conjunct of a scan's filter that can bound an index: `column op constant`, as
/// (table column, operator with the column on the left, the constant, the conjunct's
/// position in the filter's conjuncts).
pub(crate) struct BoundPredicate {
    column: usize,
    /// `None`: `column IS NOT NULL`.
    op: Option<CmpOp>,
    value: Expr,
    conjunct: usize,
    /// `column IN (any…)` (a list of constants, or equalities of one column ORed):
    /// `op` is `None` and `value` unused.
    any: Vec<Expr>,
}

/// The conjuncts of `parts` (a scan's filter over its output `columns` of `table`)
/// that can bound an index.
pub(crate) fn bound_predicates(table: &TableDef, columns: &[usize], parts: &[Expr]) -> Vec<BoundPredicate> {
    let mut preds = Vec::new();
    for (k, p) in parts.iter().enumerate() {
        if let ExprKind::IsNull { expr, negated: true } = &p.kind
            && let ExprKind::Column(c) = expr.kind
        {
            let value = Expr::literal(crate::types::Value::Null, expr.ty);
            preds.push(BoundPredicate { column: columns[c], op: None, value, conjunct: k, any: Vec::new() });
            continue;
        }
        if let Some((c, list)) = in_list(p)
            && table.columns[columns[c]].ty == list[0].ty
        {
            let value = Expr::literal(crate::types::Value::Null, list[0].ty);
            preds.push(BoundPredicate { column: columns[c], op: None, value, conjunct: k, any: list });
            continue;
        }
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
        preds.push(BoundPredicate { column: tcol, op: Some(op), value: val, conjunct: k, any: Vec::new() });
    }
    preds
}

/// Longest IN list (or OR of equalities) an index scan looks up key by key; a
/// longer one is a filter over whatever access the rest of the predicate gives.
const MAX_INDEX_KEYS: usize = 1_000;

/// `p` as `column IN (constants…)`: a non-negated IN list of bound values (literals,
/// parameters) of the column's type, or a disjunction of `column = constant` on one
/// column; its scan column and the values.
fn in_list(p: &Expr) -> Option<(usize, Vec<Expr>)> {
    let same_type = |c: &Expr, v: &Expr| c.ty == v.ty && is_bound(v);
    match &p.kind {
        ExprKind::InList { expr, list, negated: false } => {
            let ExprKind::Column(c) = expr.kind else { return None };
            (!list.is_empty() && list.len() <= MAX_INDEX_KEYS && list.iter().all(|v| same_type(expr, v)))
                .then(|| (c, list.clone()))
        }
        ExprKind::Or(branches) if branches.len() <= MAX_INDEX_KEYS => {
            let mut column = None;
            let mut values = Vec::with_capacity(branches.len());
            for b in branches {
                // Each branch `column = constant`, or itself an IN list, on one column.
                let (col, mut vs) = match &b.kind {
                    ExprKind::Compare { op: CmpOp::Eq, left, right } => match (&left.kind, &right.kind) {
                        (ExprKind::Column(c), _) if same_type(left, right) => (*c, vec![(**right).clone()]),
                        (_, ExprKind::Column(c)) if same_type(right, left) => (*c, vec![(**left).clone()]),
                        _ => return None,
                    },
                    ExprKind::InList { .. } => in_list(b)?,
                    _ => return None,
                };
                if column.is_some_and(|c| c != col) {
                    return None;
                }
                column = Some(col);
                values.append(&mut vs);
            }
            (values.len() <= MAX_INDEX_KEYS).then_some(()).and(column.map(|c| (c, values)))
        }
        _ => None,
    }
}

/// What a filter's bound predicates constrain of one index: equalities on its
/// leading columns, then a range on the next one.
pub(crate) struct IndexBounds {
    pub eq: Vec<Expr>,
    /// The next column equals one of these (an IN list); then no range.
    pub any: Vec<Expr>,
    pub lower: Option<(Expr, bool)>,
    pub upper: Option<(Expr, bool)>,
    /// `IS NOT NULL` on the next column.
    pub skip_nulls: bool,
    /// The filter conjuncts the bounds come from.
    pub used: Vec<usize>,
}

impl IndexBounds {
    /// How much of the index the bounds constrain (0: nothing).
    fn score(&self) -> usize {
        self.eq.len() * 2 + usize::from(!self.any.is_empty()) * 2 + usize::from(self.lower.is_some()) + usize::from(self.upper.is_some())
    }

    pub fn into_access(self, index: usize, backward: bool) -> Access {
        let skip_nulls = self.skip_nulls;
        Access::Index { index, eq: self.eq, lower: self.lower, upper: self.upper, skip_nulls, backward, any: self.any }
    }
}

/// What `preds` bound of index `ix` of `table`.
pub(crate) fn index_bounds(table: &TableDef, ix: usize, preds: &[BoundPredicate]) -> IndexBounds {
    let index = &table.indexes[ix];
    let mut eq = Vec::new();
    let mut used = Vec::new();
    for &kc in &index.columns {
        match preds.iter().find(|p| p.column == kc && p.op == Some(CmpOp::Eq)) {
            Some(p) => {
                eq.push(p.value.clone());
                used.push(p.conjunct);
            }
            None => break,
        }
    }
    let mut lower = None;
    let mut upper = None;
    let mut skip_nulls = false;
    // An IN list on the next column: each of its keys looked up (the range
    // conjuncts on that column stay in the filter).
    if let Some(&next) = index.columns.get(eq.len())
        && let Some(p) = preds.iter().find(|p| p.column == next && !p.any.is_empty())
    {
        used.push(p.conjunct);
        return IndexBounds { eq, any: p.any.clone(), lower, upper, skip_nulls, used };
    }
    if eq.len() < index.columns.len() {
        let next = index.columns[eq.len()];
        for p in preds.iter().filter(|p| p.column == next) {
            if p.op != Some(CmpOp::Eq) {
                used.push(p.conjunct);
            }
            let v = p.value.clone();
            match p.op {
                Some(CmpOp::Gt) => lower = tighter(lower, (v, false), Ordering::Greater),
                Some(CmpOp::GtEq) => lower = tighter(lower, (v, true), Ordering::Greater),
                Some(CmpOp::Lt) => upper = tighter(upper, (v, false), Ordering::Less),
                Some(CmpOp::LtEq) => upper = tighter(upper, (v, true), Ordering::Less),
                None => skip_nulls = true,
                _ => {}
            }
        }
    }
    IndexBounds { eq, any: Vec::new(), lower, upper, skip_nulls, used }
}

/// Chooses each filtered scan's access path; with `prefer_index` (`enable_seqscan =
/// off`) the best candidate index is taken whatever it is estimated to cost.
pub fn choose_access(plan: Plan, stats: &dyn Stats, prefer_index: bool) -> Plan {
    let plan = map_children(plan, &mut |p| choose_access(p, stats, prefer_index));
    let Plan { node, schema, .. } = plan;
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
    let preds = bound_predicates(&table, &columns, &parts);
    // (score, index, its bounds, fully constrained unique)
    let mut best: Option<(usize, usize, IndexBounds, bool)> = None;
    for (ix, index) in table.indexes.iter().enumerate() {
        let bounds = index_bounds(&table, ix, &preds);
        let full_unique = index.unique && bounds.eq.len() == index.columns.len();
        let score = bounds.score() + if full_unique { 100 } else { 0 };
        if score > 0 && best.as_ref().is_none_or(|b| score > b.0) {
            best = Some((score, ix, bounds, full_unique));
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
    if let Some((_, ix, bounds, full_unique)) = best
        && (full_unique || prefer_index || index_pays(&scan, ix, &parts, &bounds.used, stats))
        && let Node::TableScan { access: a, .. } = &mut scan.node
    {
        *a = bounds.into_access(ix, false);
    }
    scan
}

/// Whether reading `scan`'s table through index `ix`, whose bounds come from the
/// conjuncts `used` of `parts`, is estimated cheaper than reading the whole heap.
pub(crate) fn index_pays(scan: &Plan, ix: usize, parts: &[Expr], used: &[usize], stats: &dyn Stats) -> bool {
    let Node::TableScan { table, .. } = &scan.node else { return false };
    let rows = table_rows(table, stats);
    let bounds = and_all(used.iter().map(|&k| parts[k].clone()).collect());
    let selected = rows * bounds.map_or(1.0, |b| selectivity(&b, scan, stats));
    // One descent per key of an IN list.
    let descents = used.iter().filter_map(|&k| in_list(&parts[k])).map(|(_, l)| l.len()).max().unwrap_or(1);
    descents as f64 * INDEX_DESCENT + selected * index_row(table, ix, stats) < rows * SEQ_ROW
}
