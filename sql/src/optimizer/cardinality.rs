//! Cardinality: how many rows each plan node is expected to produce.
//!
//! Relation sizes come from [`Stats`]; an unknown relation counts
//! [`DEFAULT_TABLE_ROWS`]. No column statistics are kept yet, so selectivities are
//! PostgreSQL's defaults for columns without statistics (an equality 0.5%, a range a
//! third), except that an equality on a column that alone forms a unique index selects
//! one row. An equi-join is estimated as a key/foreign-key join: each row of the larger
//! side meets about one row of the smaller, i.e. selectivity 1 / (the smaller side's
//! relation size) — the number of distinct values of a column is taken to be its
//! table's row count, until statistics give distinct counts.

use std::sync::Arc;

use super::Stats;
use crate::catalog::TableDef;
use crate::expr::{CmpOp, Expr, ExprKind};
use crate::plan::{JoinKind, Node, Plan, SetOpKind};
use crate::types::Value;

/// Rows assumed for a table of unknown size (PostgreSQL assumes ten pages).
pub const DEFAULT_TABLE_ROWS: f64 = 1000.0;
/// Selectivity of an equality with a constant on a column without statistics.
pub const EQ_SEL: f64 = 0.005;
/// Selectivity of a one-sided range.
pub const RANGE_SEL: f64 = 1.0 / 3.0;
/// Selectivity of LIKE with a pattern.
pub const MATCH_SEL: f64 = 0.05;
/// Selectivity of any other predicate.
pub const OTHER_SEL: f64 = 1.0 / 3.0;
/// Groups assumed per grouping column without statistics (PostgreSQL's default
/// number of distinct values).
pub const DEFAULT_GROUPS: f64 = 200.0;

/// The rows of `table`.
pub fn table_rows(table: &TableDef, stats: &dyn Stats) -> f64 {
    stats.table_rows(table).unwrap_or(DEFAULT_TABLE_ROWS).max(1.0)
}

/// Where column `col` of `plan`'s output comes from: a stored table's column, when it
/// passes through unchanged.
pub fn origin(plan: &Plan, col: usize) -> Option<(&Arc<TableDef>, usize)> {
    let mut plan = plan;
    let mut col = col;
    loop {
        match &plan.node {
            Node::TableScan { table, columns, .. } => return columns.get(col).map(|&c| (table, c)),
            Node::Filter { input, .. } | Node::Sort { input, .. } | Node::Limit { input, .. } | Node::Distinct { input } => {
                plan = &**input
            }
            Node::Project { input, exprs } => match exprs.get(col).map(|e| &e.kind) {
                Some(ExprKind::Column(c)) => {
                    col = *c;
                    plan = &**input;
                }
                _ => return None,
            },
            Node::Join { left, right, kind, .. } => {
                let n = left.schema.len();
                if col < n {
                    plan = &**left;
                } else if matches!(kind, JoinKind::Semi | JoinKind::Anti) {
                    return None;
                } else {
                    col -= n;
                    plan = &**right;
                }
            }
            _ => return None,
        }
    }
}

/// The distinct values expected in column `col` of `plan`, whose output is `rows`
/// rows: its table's row count (see the module comment), at most `rows`.
pub fn distinct(plan: &Plan, col: usize, rows: f64, stats: &dyn Stats) -> f64 {
    let n = match origin(plan, col) {
        Some((t, _)) => table_rows(t, stats),
        None => rows,
    };
    n.min(rows).max(1.0)
}

/// Whether table column `c` alone forms a unique index.
fn unique_column(table: &TableDef, c: usize) -> bool {
    table.indexes.iter().any(|i| i.unique && i.columns == [c])
}

fn is_constant(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Literal(_) | ExprKind::Param(_) => true,
        ExprKind::Column(_) | ExprKind::Subquery(_) => false,
        _ => e.children().iter().all(|c| super::deep(|| is_constant(c))),
    }
}

/// The fraction of `input`'s rows for which `e` (over `input`'s output) is true.
pub fn selectivity(e: &Expr, input: &Plan, stats: &dyn Stats) -> f64 {
    let s = match &e.kind {
        ExprKind::Literal(Value::Boolean(true)) => 1.0,
        ExprKind::Literal(_) => 0.0,
        ExprKind::And(v) => v.iter().map(|c| super::deep(|| selectivity(c, input, stats))).product(),
        ExprKind::Or(v) => 1.0 - v.iter().map(|c| 1.0 - super::deep(|| selectivity(c, input, stats))).product::<f64>(),
        ExprKind::Not(x) => 1.0 - super::deep(|| selectivity(x, input, stats)),
        ExprKind::Compare { op, left, right } => {
            let column = match (&left.kind, &right.kind) {
                (ExprKind::Column(c), _) if is_constant(right) => Some(*c),
                (_, ExprKind::Column(c)) if is_constant(left) => Some(*c),
                _ => None,
            };
            match op {
                CmpOp::Eq => match column.and_then(|c| origin(input, c)) {
                    Some((t, c)) if unique_column(t, c) => 1.0 / table_rows(t, stats),
                    _ => EQ_SEL,
                },
                CmpOp::NotEq => 1.0 - EQ_SEL,
                _ => RANGE_SEL,
            }
        }
        ExprKind::InList { list, negated, .. } => {
            let s = (list.len() as f64 * EQ_SEL).min(0.5);
            if *negated { 1.0 - s } else { s }
        }
        ExprKind::Like { negated, .. } => {
            if *negated {
                1.0 - MATCH_SEL
            } else {
                MATCH_SEL
            }
        }
        ExprKind::IsNull { negated, .. } => {
            if *negated {
                1.0 - EQ_SEL
            } else {
                EQ_SEL
            }
        }
        _ => OTHER_SEL,
    };
    s.clamp(0.0, 1.0)
}

/// The selectivity of equi-join keys: the most selective key pair's (several keys
/// between the same inputs are usually correlated, as a composite key is).
pub fn keys_selectivity(
    left: &Plan,
    left_rows: f64,
    left_keys: &[Expr],
    right: &Plan,
    right_rows: f64,
    right_keys: &[Expr],
    stats: &dyn Stats,
) -> f64 {
    let ndv = |p: &Plan, rows: f64, e: &Expr| match &e.kind {
        ExprKind::Column(c) => distinct(p, *c, rows, stats),
        _ => rows.max(1.0),
    };
    left_keys
        .iter()
        .zip(right_keys)
        .map(|(l, r)| 1.0 / ndv(left, left_rows, l).min(ndv(right, right_rows, r)).max(1.0))
        .fold(1.0, f64::min)
}

/// Rows assumed for one round of a recursive CTE's working table: the scan has no
/// statistics and its size changes from round to round.
const DEFAULT_WORK_TABLE_ROWS: f64 = 100.0;

/// The rows `plan` produces, given its inputs' estimated rows `inputs` (in
/// [`Plan::children`] order).
pub fn node_rows(plan: &Plan, inputs: &[f64], stats: &dyn Stats) -> f64 {
    let input = inputs.first().copied().unwrap_or(1.0);
    let rows = match &plan.node {
        Node::TableScan { table, filter, .. } => {
            let n = table_rows(table, stats);
            n * filter.as_ref().map_or(1.0, |f| selectivity(f, plan, stats))
        }
        Node::Values { rows } => rows.len() as f64,
        Node::Filter { input: i, predicate } => input * selectivity(predicate, i, stats),
        Node::Project { .. } | Node::Sort { .. } | Node::Window { .. } => input,
        Node::Join { left, right, kind, on, left_keys, right_keys, .. } => {
            let (l, r) = (inputs[0], inputs[1]);
            let keys = keys_selectivity(left, l, left_keys, right, r, right_keys, stats);
            let on = on.as_ref().map_or(1.0, |_| OTHER_SEL);
            let inner = l * r * keys * on;
            match kind {
                JoinKind::Inner => inner,
                JoinKind::Left => inner.max(l),
                JoinKind::Right => inner.max(r),
                JoinKind::Full => inner.max(l + r),
                // The share of left rows with a match: the expected matches per left
                // row, at most one.
                JoinKind::Semi => l * (r * keys * on).min(1.0),
                JoinKind::Anti => l * (1.0 - (r * keys * on).min(1.0)).max(0.05),
            }
        }
        Node::Aggregate { groups, .. } => {
            if groups.is_empty() {
                1.0
            } else {
                let g: f64 = groups
                    .iter()
                    .map(|e| match (&e.kind, plan.children().first()) {
                        (ExprKind::Column(c), Some(i)) => match origin(i, *c) {
                            Some((t, c)) if unique_column(t, c) => table_rows(t, stats),
                            _ => DEFAULT_GROUPS,
                        },
                        _ => DEFAULT_GROUPS,
                    })
                    .product();
                g.min(input)
            }
        }
        Node::Limit { limit, offset, .. } => {
            let after = (input - *offset as f64).max(0.0);
            limit.map_or(after, |l| after.min(l as f64))
        }
        Node::Distinct { .. } => (input / 10.0).max(1.0).min(input),
        Node::SetOp { op, all, .. } => {
            let (l, r) = (inputs[0], inputs[1]);
            let n = match op {
                SetOpKind::Union => l + r,
                SetOpKind::Intersect => l.min(r),
                SetOpKind::Except => l,
            };
            if *all { n } else { (n / 2.0).max(1.0).min(n) }
        }
        // PostgreSQL's guess: the base term's rows and ten rounds of the recursive
        // term's (how many rounds a recursion takes is unknowable before it runs).
        Node::RecursiveUnion { .. } => inputs[0] + 10.0 * inputs[1],
        Node::WorkTableScan { .. } => DEFAULT_WORK_TABLE_ROWS,
    };
    rows.max(0.0)
}

/// The rows `plan` produces: its estimate when the optimizer set one, otherwise
/// estimated from its inputs' (recursively).
pub fn rows(plan: &Plan, stats: &dyn Stats) -> f64 {
    if let Some(e) = plan.est {
        return e.rows;
    }
    let inputs: Vec<f64> = plan.children().iter().map(|c| super::deep(|| rows(c, stats))).collect();
    node_rows(plan, &inputs, stats)
}
