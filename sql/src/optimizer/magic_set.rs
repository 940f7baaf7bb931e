//! Rule `optimizer_magic_set`: a grouped input is reduced to the keys its join can
//! match before it is aggregated (a "magic set", DuckDB's delim join in spirit).
//!
//! Decorrelating `l_quantity < (SELECT 0.2 * avg(l_quantity) FROM lineitem WHERE
//! l_partkey = p_partkey)` (TPC-H Q17) makes a join of the outer rows with
//! `lineitem` grouped by `l_partkey`: all 6M rows are aggregated into 200,000
//! groups, of which the join then keeps the ~200 whose key the outer query has
//! (after its filters on `part`). When a join's key on one side is a grouping
//! column of an aggregate, and the other side's key is a column of a filtered table
//! scan whose rows are few, this rule semi-joins the aggregate's input with that
//! scan's key column (a copy of the scan: its table, its filter), as deep in the
//! input as the grouping column can be followed, so the aggregate sees only the
//! rows of groups the join can match:
//!
//! ```text
//! Join (left)  keys: p_partkey = key0          Join (left)  keys: p_partkey = key0
//!   ->  … Seq Scan on part  filter: …            ->  … Seq Scan on part  filter: …
//!   ->  Aggregate  group: l_partkey       ⇒      ->  Aggregate  group: l_partkey
//!         ->  Seq Scan on lineitem                     ->  Join (semi)  keys: l_partkey = p_partkey
//!                                                            ->  Seq Scan on lineitem
//!                                                            ->  Seq Scan on part  filter: …
//! ```
//!
//! Why it is exact: the join keeps only aggregate rows whose key equals some row's
//! key on the other side, and every such key is a value of the scan's column (the
//! column reaches the join through filters, projections of plain columns and the
//! preserved side of joins, which only drop rows, or through an equality key of an
//! inner or semi join, which makes it equal to the other key). A group whose key is
//! in that set keeps all its rows (the semi join filters on the grouping column
//! itself), so its aggregates are unchanged; the groups removed could not have
//! matched. A NULL key never matches on either path.
//!
//! When (by estimate): the scan's rows are at most a quarter of the aggregate's
//! groups, and reading its table again costs no more than the aggregate's input
//! reads already. The semi join builds its hash table on the scan's (few) rows.

use super::{Stats, cardinality, deep, map_children};
use crate::expr::{Expr, ExprKind};
use crate::plan::{JoinKind, JoinMethod, Node, Plan};

/// The rule applies when the magic set is estimated to have at most this share of
/// the aggregate's groups (below it, the semi join's probe of every input row costs
/// about what it saves in the aggregate).
const MAX_KEY_SHARE: f64 = 0.25;

/// Applies the rule to every join of `plan` (bottom-up).
pub fn reduce_grouped_inputs(plan: Plan, stats: &dyn Stats) -> Plan {
    let plan = map_children(plan, &mut |p| reduce_grouped_inputs(p, stats));
    let Plan { node, schema, est, workers } = plan;
    let node = match node {
        Node::Join { left, right, kind, on, left_keys, right_keys, method } if !left_keys.is_empty() => {
            // The aggregate may be on the side whose unmatched rows the join drops.
            let (mut left, mut right) = (left, right);
            if matches!(kind, JoinKind::Inner | JoinKind::Left | JoinKind::Semi) {
                if let Some(reduced) = reduce(&right, &right_keys, &left, &left_keys, stats) {
                    *right = reduced;
                }
            }
            if matches!(kind, JoinKind::Inner | JoinKind::Right) {
                if let Some(reduced) = reduce(&left, &left_keys, &right, &right_keys, stats) {
                    *left = reduced;
                }
            }
            Node::Join { left, right, kind, on, left_keys, right_keys, method }
        }
        node => node,
    };
    Plan { node, schema, est, workers }
}

/// `grouped` with its aggregate's input semi-joined with a magic set, when one of
/// `grouped_keys` is a grouping column and the matching `other_keys` column comes
/// from a scan few enough rows for the rule (see the module comment).
fn reduce(grouped: &Plan, grouped_keys: &[Expr], other: &Plan, other_keys: &[Expr], stats: &dyn Stats) -> Option<Plan> {
    let agg = aggregate_below(grouped)?;
    let groups = cardinality::rows(agg, stats);
    let Node::Aggregate { input, .. } = &agg.node else { return None };
    let input_reads = scanned_rows(input, stats);
    // The best magic set over all key pairs: the fewest estimated rows.
    let mut best: Option<(f64, usize, &Plan, usize)> = None;
    for (gk, ok) in grouped_keys.iter().zip(other_keys) {
        let (ExprKind::Column(gc), ExprKind::Column(oc)) = (&gk.kind, &ok.kind) else { continue };
        if gk.ty != ok.ty {
            continue;
        }
        let Some(input_col) = grouping_column(grouped, *gc) else { continue };
        let mut found = Vec::new();
        sources(other, *oc, &mut found);
        for (scan, col) in found {
            let rows = cardinality::rows(scan, stats);
            if best.as_ref().is_none_or(|b| rows < b.0) {
                best = Some((rows, input_col, scan, col));
            }
        }
    }
    let (rows, input_col, scan, col) = best?;
    let Node::TableScan { table, .. } = &scan.node else { return None };
    if rows > groups * MAX_KEY_SHARE || cardinality::table_rows(table, stats) > input_reads {
        return None;
    }
    let magic = Plan::new(
        Node::Project { input: Box::new(scan.clone()), exprs: vec![Expr::column(col, scan.schema[col].ty)] },
        vec![scan.schema[col].clone()],
    );
    let mut grouped = grouped.clone();
    let agg = aggregate_below_mut(&mut grouped)?;
    let Node::Aggregate { input, .. } = &mut agg.node else { return None };
    let taken = std::mem::replace(&mut **input, Plan::one_row());
    **input = place(taken, input_col, magic);
    Some(grouped)
}

/// The aggregate (plain GROUP BY) whose output `plan` passes on through
/// projections and filters (a HAVING, a decorrelated subquery's value).
fn aggregate_below(plan: &Plan) -> Option<&Plan> {
    match &plan.node {
        Node::Aggregate { sets, .. } if sets.is_empty() => Some(plan),
        Node::Project { input, .. } | Node::Filter { input, .. } => deep(|| aggregate_below(input)),
        _ => None,
    }
}

fn aggregate_below_mut(plan: &mut Plan) -> Option<&mut Plan> {
    if matches!(&plan.node, Node::Aggregate { sets, .. } if sets.is_empty()) {
        return Some(plan);
    }
    match &mut plan.node {
        Node::Project { input, .. } | Node::Filter { input, .. } => deep(|| aggregate_below_mut(input)),
        _ => None,
    }
}

/// The aggregate input's column that output column `col` of `plan` is, when it is
/// a grouping column that is a plain column of the input (passed up unchanged).
fn grouping_column(plan: &Plan, col: usize) -> Option<usize> {
    match &plan.node {
        Node::Aggregate { groups, sets, .. } if sets.is_empty() => match groups.get(col).map(|g| &g.kind) {
            Some(ExprKind::Column(c)) => Some(*c),
            _ => None,
        },
        Node::Filter { input, .. } => deep(|| grouping_column(input, col)),
        Node::Project { input, exprs } => match exprs.get(col).map(|e| &e.kind) {
            Some(ExprKind::Column(c)) => deep(|| grouping_column(input, *c)),
            _ => None,
        },
        _ => None,
    }
}

/// Every table scan (with the column) whose column values include every value of
/// output column `col` of `plan`: followed through filters, projections of plain
/// columns, the preserved side of joins and the equality keys of inner and semi
/// joins. Scans whose filter has side effects are left out (a copy would run them
/// again).
fn sources<'p>(plan: &'p Plan, col: usize, out: &mut Vec<(&'p Plan, usize)>) {
    match &plan.node {
        Node::TableScan { filter, with_tid: false, .. } => {
            if !filter.as_ref().is_some_and(|f| f.has_side_effects()) {
                out.push((plan, col));
            }
        }
        Node::Filter { input, .. } | Node::Sort { input, .. } | Node::Distinct { input } => deep(|| sources(input, col, out)),
        Node::Project { input, exprs } => {
            if let Some(ExprKind::Column(c)) = exprs.get(col).map(|e| &e.kind) {
                deep(|| sources(input, *c, out));
            }
        }
        Node::Join { left, right, kind, left_keys, right_keys, .. } => {
            let nl = left.schema.len();
            let (side, other, c, keys, other_keys) = if col < nl {
                (left, right, col, left_keys, right_keys)
            } else {
                (right, left, col - nl, right_keys, left_keys)
            };
            // The side the column comes from must keep its rows as they are (no
            // NULL-extended rows).
            let preserved = match kind {
                JoinKind::Inner => true,
                JoinKind::Left | JoinKind::Semi | JoinKind::Anti | JoinKind::Mark => col < nl,
                JoinKind::Right => col >= nl,
                JoinKind::Full => false,
            };
            if !preserved {
                return;
            }
            deep(|| sources(side, c, out));
            // Through an equality key the other side's key column holds the same
            // values (inner and semi joins only: an anti join's keys never matched).
            if matches!(kind, JoinKind::Inner | JoinKind::Semi) {
                for (k, o) in keys.iter().zip(other_keys.iter()) {
                    if matches!(k.kind, ExprKind::Column(kc) if kc == c)
                        && let ExprKind::Column(oc) = o.kind
                        && k.ty == o.ty
                    {
                        deep(|| sources(other, oc, out));
                    }
                }
            }
        }
        _ => {}
    }
}

/// The rows the table scans under `plan` read, by their tables' sizes.
fn scanned_rows(plan: &Plan, stats: &dyn Stats) -> f64 {
    let own = match &plan.node {
        Node::TableScan { table, .. } => cardinality::table_rows(table, stats),
        _ => 0.0,
    };
    own + plan.children().iter().map(|c| deep(|| scanned_rows(c, stats))).sum::<f64>()
}

/// `plan` with `magic` semi-joined on its column `col`, placed as deep as the
/// column can be followed to the scan that produces it (through filters,
/// projections of plain columns and the sides of joins whose rows only filtering
/// would remove), so fewer rows reach the joins above it.
fn place(plan: Plan, col: usize, magic: Plan) -> Plan {
    let Plan { node, schema, est, workers } = plan;
    match node {
        Node::Filter { input, predicate } => {
            Plan { node: Node::Filter { input: Box::new(deep(|| place(*input, col, magic))), predicate }, schema, est, workers }
        }
        Node::Project { input, exprs } if matches!(exprs.get(col).map(|e| &e.kind), Some(ExprKind::Column(_))) => {
            let ExprKind::Column(c) = exprs[col].kind else { unreachable!("checked above") };
            Plan { node: Node::Project { input: Box::new(deep(|| place(*input, c, magic))), exprs }, schema, est, workers }
        }
        Node::Join { left, right, kind, on, left_keys, right_keys, method }
            if !matches!(kind, JoinKind::Full)
                && (col < left.schema.len() && kind != JoinKind::Right
                    || col >= left.schema.len() && matches!(kind, JoinKind::Inner | JoinKind::Right)) =>
        {
            let nl = left.schema.len();
            let (left, right) = if col < nl {
                (Box::new(deep(|| place(*left, col, magic))), right)
            } else {
                (left, Box::new(deep(|| place(*right, col - nl, magic))))
            };
            Plan { node: Node::Join { left, right, kind, on, left_keys, right_keys, method }, schema, est, workers }
        }
        node => semi_join(Plan { node, schema, est, workers }, col, magic),
    }
}

/// `plan` semi-joined with the one-column `magic` on `plan`'s column `col`.
fn semi_join(plan: Plan, col: usize, magic: Plan) -> Plan {
    let schema = plan.schema.clone();
    let key_ty = plan.schema[col].ty;
    Plan::new(
        Node::Join {
            left: Box::new(plan),
            right: Box::new(magic),
            kind: JoinKind::Semi,
            on: None,
            left_keys: vec![Expr::column(col, key_ty)],
            right_keys: vec![Expr::column(0, key_ty)],
            method: JoinMethod::NestedLoop,
        },
        schema,
    )
}
