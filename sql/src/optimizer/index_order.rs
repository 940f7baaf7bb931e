//! Rule: index order (`optimizer_index_order`). An index hands out rows in key order,
//! so an ORDER BY it provides needs no sort, and a scan that a LIMIT stops early then
//! reads only the first entries of its range. Two rewrites, each taken only when
//! estimated cheaper than the plan it replaces:
//!
//! - **ORDER BY through an index.** A `Sort` (under an optional `Limit`) over a chain
//!   of projections and filters that ends in a table scan: when the sort keys, less
//!   the columns the scan's filter fixes by equality, are leading columns of an index
//!   after its equality-bound ones, all ascending with NULLS LAST or all descending with
//!   NULLS FIRST (an index keeps NULLs last, so a backward scan meets them first, as
//!   PostgreSQL's default orders want), the scan reads that index forward or backward
//!   and the Sort goes. With a limit of n rows the scan is estimated to read n ÷ (the
//!   share of the index range its filter keeps) entries; without one, the whole range.
//! - **MIN / MAX through an index** (PostgreSQL's `planagg`). A lone `min(x)` or
//!   `max(x)` without GROUP BY over such a chain: the aggregate stays, over `Limit 1`
//!   over a scan in x's order whose filter gains `x IS NOT NULL` (which the index
//!   range applies: no NULL key is read). An empty input still gives NULL, because
//!   the aggregate is still there to say so. Several of them (`min(k), max(k)`)
//!   each get their own ordered `Limit 1`, their one-row aggregates joined side by
//!   side, when the reads together cost less than the one scan they replace.
//!
//! The executor passes a Limit's row count down to the scan (`Exec::node`'s `top_n`),
//! which then reads its first run of index entries that small.

use super::access::{bound_predicates, index_bounds};
use super::cardinality::{rows, selectivity, table_rows};
use super::cost::{EVAL_ROW, INDEX_DESCENT, SORT_COMPARE, index_row, node_cost};
use super::{Stats, and_all, conjuncts, deep, map_node_children};
use crate::expr::{Expr, ExprKind};
use crate::plan::{AggFunc, Node, Plan, SortKey};
use crate::types::DataType;

pub fn order_by_index(plan: Plan, stats: &dyn Stats) -> Plan {
    rewrite(plan, None, stats)
}

/// `limit`: how many rows of `plan`'s output its consumer reads at most (a Limit
/// above it, through projections).
fn rewrite(plan: Plan, limit: Option<f64>, stats: &dyn Stats) -> Plan {
    let Plan { node, schema, est, .. } = plan;
    let node = match node {
        Node::Limit { input, limit: l, offset } => {
            let wanted = l.map(|l| l.saturating_add(offset) as f64);
            let input = deep(|| rewrite(*input, wanted, stats));
            Node::Limit { input: Box::new(input), limit: l, offset }
        }
        Node::Project { input, exprs } => {
            let input = deep(|| rewrite(*input, limit, stats));
            Node::Project { input: Box::new(input), exprs }
        }
        Node::Sort { input, keys, .. } => match ordered(*input, &keys, limit, stats) {
            // The chain down to the scan holds no other sort to look at.
            Ok((ordered, _)) => return ordered,
            Err(input) => Node::Sort { input: Box::new(deep(|| rewrite(input, None, stats))), keys, bee: None },
        },
        Node::Aggregate { input, groups, sets, aggs, bee } if groups.is_empty() && aggs.len() == 1 => {
            match min_max(&input, &aggs[0].func, aggs[0].arg.as_ref(), aggs[0].udf.is_some(), stats) {
                Some((limited, _)) => Node::Aggregate { input: Box::new(limited), groups, sets, aggs, bee },
                None => Node::Aggregate { input: Box::new(deep(|| rewrite(*input, None, stats))), groups, sets, aggs, bee },
            }
        }
        Node::Aggregate { input, groups, sets, aggs, bee } if groups.is_empty() && sets.is_empty() && aggs.len() > 1 => {
            match min_maxes(&input, &aggs, &schema, stats) {
                Some(joined) => return Plan { schema, est, ..joined },
                None => Node::Aggregate { input: Box::new(deep(|| rewrite(*input, None, stats))), groups, sets, aggs, bee },
            }
        }
        node => map_node_children(node, &mut |p| rewrite(p, None, stats)),
    };
    Plan { node, schema, est, workers: 1 }
}

/// Several MIN/MAX without GROUP BY (`SELECT min(k), max(k) FROM t`), as PostgreSQL's
/// `planagg` does with one InitPlan per aggregate: each aggregate over its own
/// `Limit 1` of an index read in its order, and the one-row results joined side by
/// side in the aggregates' order (the Aggregate's output columns). `None` unless
/// every aggregate can read an index and doing so is estimated cheaper than the
/// one scan they would share.
fn min_maxes(input: &Plan, aggs: &[crate::plan::AggCall], schema: &crate::plan::Schema, stats: &dyn Stats) -> Option<Plan> {
    let mut cost = 0.0;
    let mut shared_scan = 0.0;
    let mut joined: Option<Plan> = None;
    for (agg, column) in aggs.iter().zip(schema) {
        let (limited, costs) = min_max(input, &agg.func, agg.arg.as_ref(), agg.udf.is_some(), stats)?;
        cost += costs.index;
        shared_scan = costs.replaced;
        let one = Plan::new(
            Node::Aggregate { input: Box::new(limited), groups: vec![], sets: vec![], aggs: vec![agg.clone()], bee: None },
            vec![column.clone()],
        );
        joined = Some(match joined {
            None => one,
            Some(left) => Plan::cross_join(left, one),
        });
    }
    (cost < shared_scan).then_some(joined?)
}

/// `x IS NOT NULL` added to the filter of a `min(x)`/`max(x)` input's scan, that
/// scan reading x's index in order, under `Limit 1` — or `None` when no index
/// provides x's order or reading it is not estimated cheaper.
fn min_max(input: &Plan, func: &AggFunc, arg: Option<&Expr>, udf: bool, stats: &dyn Stats) -> Option<(Plan, Costs)> {
    let desc = match func {
        AggFunc::Min => false,
        AggFunc::Max => true,
        _ => return None,
    };
    let arg = arg.filter(|a| !udf && matches!(a.kind, ExprKind::Column(_)))?;
    let ExprKind::Column(col) = arg.kind else { return None };
    let scan_col = scan_column(input, col)?;
    let mut candidate = input.clone();
    let Node::TableScan { filter, .. } = &mut scan_mut(&mut candidate)?.node else { return None };
    let not_null = Expr::new(
        ExprKind::IsNull { expr: Box::new(Expr::column(scan_col, arg.ty)), negated: true },
        DataType::Boolean,
    );
    let mut parts = Vec::new();
    if let Some(f) = filter.take() {
        conjuncts(f, &mut parts);
    }
    parts.push(not_null);
    *filter = and_all(parts);
    let key = SortKey { expr: arg.clone(), desc, nulls_first: desc };
    let (ordered, costs) = ordered(candidate, &[key], Some(1.0), stats).ok()?;
    let schema = ordered.schema.clone();
    Some((Plan::new(Node::Limit { input: Box::new(ordered), limit: Some(1), offset: 0 }, schema), costs))
}

/// Follows output column `col` of `plan` down a chain of projections (which must
/// pass it on as a plain column) and filters to a table scan: the column's position
/// in the scan's output.
fn scan_column(plan: &Plan, col: usize) -> Option<usize> {
    match &plan.node {
        // Not the tuple id column.
        Node::TableScan { columns, .. } => (col < columns.len()).then_some(col),
        Node::Filter { input, .. } => deep(|| scan_column(input, col)),
        Node::Project { input, exprs } => match exprs.get(col)?.kind {
            ExprKind::Column(c) => deep(|| scan_column(input, c)),
            _ => None,
        },
        _ => None,
    }
}

/// The table scan at the end of `plan`'s chain of projections and filters.
fn scan_mut(plan: &mut Plan) -> Option<&mut Plan> {
    if matches!(plan.node, Node::TableScan { .. }) {
        return Some(plan);
    }
    match &mut plan.node {
        Node::Filter { input, .. } | Node::Project { input, .. } => deep(|| scan_mut(input)),
        _ => None,
    }
}

/// `input` with its scan reading an index in the order of `keys` (over `input`'s
/// output), so no sort is needed — or `input` unchanged when no index provides
/// that order or reading it is not estimated cheaper than sorting.
/// The estimated costs of an ordered index read and of the scan and sort it replaces.
#[derive(Clone, Copy)]
struct Costs {
    index: f64,
    replaced: f64,
}

fn ordered(mut input: Plan, keys: &[SortKey], limit: Option<f64>, stats: &dyn Stats) -> Result<(Plan, Costs), Plan> {
    let Some(first) = keys.first() else { return Err(input) };
    let desc = first.desc;
    if keys.iter().any(|k| k.desc != desc || k.nulls_first != desc) {
        return Err(input);
    }
    let key_cols: Option<Vec<usize>> = keys
        .iter()
        .map(|k| match k.expr.kind {
            ExprKind::Column(c) => Some(c),
            _ => None,
        })
        .collect();
    let Some(key_cols) = key_cols else { return Err(input) };
    let scan_cols: Option<Vec<usize>> = key_cols.iter().map(|&c| scan_column(&input, c)).collect();
    let Some(scan_cols) = scan_cols else { return Err(input) };
    // Sorting `input` as it is: its rows, and the sort's comparisons (top-N keeps
    // only `limit` rows, so log of that).
    let input_rows = rows(&input, stats);
    let kept = limit.map_or(input_rows, |l| l.min(input_rows));
    let sort_cost = input_rows * kept.max(2.0).log2() * SORT_COMPARE;
    let Some(scan) = scan_mut(&mut input) else { return Err(input) };
    let Some(choice) = best_ordered_index(scan, &scan_cols, desc, limit, sort_cost, stats) else {
        return Err(input);
    };
    if let Node::TableScan { access, .. } = &mut scan.node {
        *access = choice.1;
    }
    Ok((input, choice.0))
}

/// The index access of `scan` that yields its rows ordered by the scan output
/// columns `key_cols` (`desc`: descending), cheapest first, if one is estimated
/// cheaper than the scan as it is plus `sort_cost`.
fn best_ordered_index(
    scan: &Plan,
    key_cols: &[usize],
    desc: bool,
    limit: Option<f64>,
    sort_cost: f64,
    stats: &dyn Stats,
) -> Option<(Costs, crate::plan::Access)> {
    let Node::TableScan { table, columns, filter, with_tid: false, .. } = &scan.node else {
        return None;
    };
    let mut parts = Vec::new();
    if let Some(f) = filter {
        conjuncts(f.clone(), &mut parts);
    }
    let preds = bound_predicates(table, columns, &parts);
    let out_rows = rows(scan, stats);
    let current = node_cost(scan, out_rows, &[], stats) + sort_cost;
    let table_cols: Vec<usize> = key_cols.iter().map(|&c| columns[c]).collect();
    let mut best: Option<(f64, crate::plan::Access)> = None;
    for ix in 0..table.indexes.len() {
        let bounds = index_bounds(table, ix, &preds);
        let index = &table.indexes[ix];
        let fixed = &index.columns[..bounds.eq.len()];
        // Keys on columns the bounds fix to one value order nothing.
        let wanted: Vec<usize> = table_cols.iter().copied().filter(|c| !fixed.contains(c)).collect();
        let rest = &index.columns[bounds.eq.len()..];
        if wanted.is_empty() || wanted.len() > rest.len() || rest[..wanted.len()] != wanted[..] {
            continue;
        }
        // Index entries the bounds select, and the share of them the whole filter keeps.
        let bound_sel = and_all(bounds.used.iter().map(|&k| parts[k].clone()).collect())
            .map_or(1.0, |b| selectivity(&b, scan, stats));
        let selected = (table_rows(table, stats) * bound_sel).max(1.0);
        let kept = (out_rows / selected).clamp(1e-6, 1.0);
        let read = limit.map_or(selected, |l| (l / kept).min(selected));
        let cost = INDEX_DESCENT + read * (index_row(table, ix, stats) + EVAL_ROW);
        if cost < current && best.as_ref().is_none_or(|b| cost < b.0) {
            best = Some((cost, bounds.into_access(ix, desc)));
        }
    }
    best.map(|(index, access)| (Costs { index, replaced: current }, access))
}
