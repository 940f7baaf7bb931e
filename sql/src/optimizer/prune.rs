//! Rule `optimizer_column_pruning`: every node produces only the columns some node
//! above it reads.
//!
//! The binder gives every table scan all of its table's columns and every join the
//! columns of both inputs; join reordering then restores the FROM order with a
//! projection of all of them. Left alone, TPC-H Q7 decodes all sixteen `lineitem`
//! columns, carries them through three hash joins and builds a hash table holding
//! every column of `orders` (its 79-byte comments included) to read five columns in
//! the end. This pass walks the plan top-down with the set of columns the parent
//! reads, narrows scans to those columns (plus what their filters read), drops
//! projection expressions nobody reads, and renumbers every expression above.
//!
//! What it keeps on purpose:
//! - a projection expression with side effects (an application function, a
//!   sequence call, a subquery), so pruning never changes how often one runs;
//! - every column of `VALUES`, of set operations and recursive unions (their rows'
//!   identity is all their columns) and of `DISTINCT`'s input;
//! - every group key and aggregate of an aggregation, and every window call;
//! - at least one column of a table scan (its narrowest), so a scan whose rows are
//!   only counted still produces rows through the usual decoder;
//! - the root's columns: the statement's result.

use super::{deep, remap};
use crate::expr::{Expr, ExprKind};
use crate::plan::{JoinKind, Node, Plan, Schema, for_each_window_expr_mut};
use crate::vector::PhysicalType;

/// Narrows every node of `plan` to the columns read above it; the root keeps all of
/// its columns.
pub fn prune_columns(plan: Plan) -> Plan {
    let needed = vec![true; plan.schema.len()];
    prune(plan, needed).0
}

/// Columns a join may carry that no node above reads before a projection drops them
/// (see the join case of [`prune_node`]).
const MAX_UNREAD_JOIN_COLUMNS: usize = 64;

/// For each output column of a node before pruning, its position after (`None`:
/// dropped).
type ColumnMap = Vec<Option<usize>>;

fn identity(n: usize) -> ColumnMap {
    (0..n).map(Some).collect()
}

/// Marks every column `e` reads in `needed`.
fn mark(e: &Expr, needed: &mut [bool]) {
    if let ExprKind::Column(i) = e.kind {
        needed[i] = true;
    }
    for c in e.children() {
        deep(|| mark(c, needed));
    }
}

/// Rewrites `e`'s column references through `map` (every column `e` reads was kept).
fn renumber(e: &mut Expr, map: &ColumnMap) {
    let dense: Vec<usize> = map.iter().map(|m| m.unwrap_or(usize::MAX)).collect();
    remap(e, &dense);
}

/// The map of a node that keeps the positions `kept` (ascending) of `n` columns.
fn map_of_kept(n: usize, kept: &[usize]) -> ColumnMap {
    let mut map = vec![None; n];
    for (new, &old) in kept.iter().enumerate() {
        map[old] = Some(new);
    }
    map
}

/// An aggregation reads its input's columns by position and outputs only what it
/// computes, so a projection of plain columns under it (join reordering's column
/// order, narrowed) is work for nothing: the aggregation reads the projection's
/// input instead, through the composed map.
fn skip_narrowing(input: Plan, map: ColumnMap) -> (Plan, ColumnMap) {
    match input.node {
        Node::Project { input: inner, exprs } if exprs.iter().all(|e| matches!(e.kind, ExprKind::Column(_))) => {
            let source: Vec<usize> = exprs
                .iter()
                .map(|e| match e.kind {
                    ExprKind::Column(c) => c,
                    _ => unreachable!("checked: plain columns"),
                })
                .collect();
            (*inner, map.into_iter().map(|m| m.map(|p| source[p])).collect())
        }
        node => (Plan { node, ..input }, map),
    }
}

/// `plan` narrowed to (at least) the columns `needed` marks, and where each of its
/// columns went. The kept columns keep their relative order.
fn prune(plan: Plan, needed: Vec<bool>) -> (Plan, ColumnMap) {
    deep(|| prune_node(plan, needed))
}

fn prune_node(plan: Plan, mut needed: Vec<bool>) -> (Plan, ColumnMap) {
    let Plan { node, schema, est, .. } = plan;
    let n = schema.len();
    let (node, map) = match node {
        Node::TableScan { table, columns, mut filter, access, with_tid, bees } => {
            if let Some(f) = &filter {
                mark(f, &mut needed);
            }
            let ncols = columns.len();
            let mut kept: Vec<usize> = (0..ncols).filter(|&k| needed[k]).collect();
            if kept.is_empty() && ncols > 0 {
                // The narrowest column: rows are still decoded, and cheaply.
                let width = |k: usize| match PhysicalType::of(&table.columns[columns[k]].ty) {
                    PhysicalType::Str | PhysicalType::Dec | PhysicalType::Interval => 2,
                    _ => 1,
                };
                kept.push((0..ncols).min_by_key(|&k| width(k)).unwrap_or(0));
            }
            if with_tid {
                kept.push(ncols);
            }
            let map = map_of_kept(n, &kept);
            if let Some(f) = &mut filter {
                renumber(f, &map);
            }
            let columns = kept.iter().filter(|&&k| k < ncols).map(|&k| columns[k]).collect();
            (Node::TableScan { table, columns, filter, access, with_tid, bees }, map)
        }
        Node::Filter { input, mut predicate } => {
            mark(&predicate, &mut needed);
            let (input, map) = prune(*input, needed);
            renumber(&mut predicate, &map);
            (Node::Filter { input: Box::new(input), predicate }, map)
        }
        Node::Project { input, exprs } => {
            let kept: Vec<usize> =
                (0..exprs.len()).filter(|&i| needed[i] || Expr::has_side_effects(&exprs[i])).collect();
            let mut inner = vec![false; input.schema.len()];
            for &i in &kept {
                mark(&exprs[i], &mut inner);
            }
            let (input, inner_map) = prune(*input, inner);
            let map = map_of_kept(n, &kept);
            let mut exprs: Vec<Expr> =
                exprs.into_iter().enumerate().filter(|(i, _)| map[*i].is_some()).map(|(_, e)| e).collect();
            for e in &mut exprs {
                renumber(e, &inner_map);
            }
            (Node::Project { input: Box::new(input), exprs }, map)
        }
        Node::Join { left, right, kind, mut on, mut left_keys, mut right_keys, method } => {
            let nl = left.schema.len();
            let nr = right.schema.len();
            let outputs_right = !kind.is_left_only();
            // Over left ++ right, as `on` reads them.
            let mut both = vec![false; nl + nr];
            both[..nl].copy_from_slice(&needed[..nl]);
            if outputs_right {
                both[nl..].copy_from_slice(&needed[nl..nl + nr]);
            }
            if let Some(on) = &on {
                mark(on, &mut both);
            }
            let mut need_right = both.split_off(nl);
            let mut need_left = both;
            left_keys.iter().for_each(|k| mark(k, &mut need_left));
            right_keys.iter().for_each(|k| mark(k, &mut need_right));
            let (left, left_map) = prune(*left, need_left);
            let (right, right_map) = prune(*right, need_right);
            let new_nl = left.schema.len();
            left_keys.iter_mut().for_each(|k| renumber(k, &left_map));
            right_keys.iter_mut().for_each(|k| renumber(k, &right_map));
            let combined: ColumnMap = left_map
                .iter()
                .copied()
                .chain(right_map.iter().map(|m| m.map(|p| p + new_nl)))
                .collect();
            if let Some(on) = &mut on {
                renumber(on, &combined);
            }
            let map = match kind {
                // The mark column follows the left columns, always kept.
                JoinKind::Mark => left_map.iter().copied().chain(std::iter::once(Some(new_nl))).collect(),
                _ if outputs_right => combined,
                _ => left_map,
            };
            let node = Node::Join {
                left: Box::new(left),
                right: Box::new(right),
                kind,
                on,
                left_keys,
                right_keys,
                method,
            };
            // A join outputs all the columns its inputs keep, its keys included, which
            // is right for a few joins. In a long chain (a FROM list of 2,000 tables)
            // every join would carry one column of each table below it: quadratic
            // plans and batches. Past `MAX_UNREAD_JOIN_COLUMNS` unread columns, a
            // projection keeps only what is read above.
            let unread = map.iter().zip(&needed).filter(|(m, need)| m.is_some() && !**need).count();
            if unread < MAX_UNREAD_JOIN_COLUMNS {
                (node, map)
            } else {
                let join_schema = kept_schema(&node, &schema, &map);
                let join = Plan { node, schema: join_schema, est: est.clone(), workers: 1 };
                let mut exprs = Vec::new();
                let mut narrowed: ColumnMap = vec![None; n];
                for i in 0..n {
                    if let (Some(p), true) = (map[i], needed[i]) {
                        narrowed[i] = Some(exprs.len());
                        exprs.push(Expr::column(p, schema[i].ty));
                    }
                }
                (Node::Project { input: Box::new(join), exprs }, narrowed)
            }
        }
        Node::Aggregate { input, mut groups, sets, mut aggs, .. } => {
            let mut inner = vec![false; input.schema.len()];
            groups.iter().for_each(|g| mark(g, &mut inner));
            aggs.iter().flat_map(|a| a.args()).for_each(|e| mark(e, &mut inner));
            let (input, inner_map) = prune(*input, inner);
            let (input, inner_map) = skip_narrowing(input, inner_map);
            groups.iter_mut().for_each(|g| renumber(g, &inner_map));
            aggs.iter_mut().flat_map(|a| a.args_mut()).for_each(|e| renumber(e, &inner_map));
            (Node::Aggregate { input: Box::new(input), groups, sets, aggs, bee: None }, identity(n))
        }
        Node::Sort { input, mut keys, .. } => {
            keys.iter().for_each(|k| mark(&k.expr, &mut needed));
            let (input, map) = prune(*input, needed);
            keys.iter_mut().for_each(|k| renumber(&mut k.expr, &map));
            (Node::Sort { input: Box::new(input), keys, bee: None }, map)
        }
        Node::Limit { input, limit, offset } => {
            let (input, map) = prune(*input, needed);
            (Node::Limit { input: Box::new(input), limit, offset }, map)
        }
        Node::Window { input, mut specs, mut calls } => {
            let ni = input.schema.len();
            let mut inner = needed[..ni].to_vec();
            for_each_window_expr_mut(&mut specs, &mut calls, &mut |e| mark(e, &mut inner));
            let (input, inner_map) = prune(*input, inner);
            for_each_window_expr_mut(&mut specs, &mut calls, &mut |e| renumber(e, &inner_map));
            let new_ni = input.schema.len();
            let map = inner_map.iter().copied().chain((0..calls.len()).map(|j| Some(new_ni + j))).collect();
            (Node::Window { input: Box::new(input), specs, calls }, map)
        }
        Node::Distinct { input } => {
            let all = vec![true; input.schema.len()];
            let (input, _) = prune(*input, all);
            (Node::Distinct { input: Box::new(input) }, identity(n))
        }
        Node::SetOp { op, all, left, right } => {
            let (left, _) = prune(*left, vec![true; n]);
            let (right, _) = prune(*right, vec![true; n]);
            (Node::SetOp { op, all, left: Box::new(left), right: Box::new(right) }, identity(n))
        }
        Node::RecursiveUnion { work_table, name, distinct, base, recursive } => {
            let (base, _) = prune(*base, vec![true; n]);
            let (recursive, _) = prune(*recursive, vec![true; n]);
            let node = Node::RecursiveUnion {
                work_table,
                name,
                distinct,
                base: Box::new(base),
                recursive: Box::new(recursive),
            };
            (node, identity(n))
        }
        node @ (Node::Values { .. } | Node::WorkTableScan { .. } | Node::Series { .. }) => (node, identity(n)),
        // A per-row LATERAL keeps its input's columns (its parameters read them) and
        // the right side's (positions after the input's).
        Node::Apply { input, right, params, param_base, left_join } => {
            let (ni, nr) = (input.schema.len(), right.schema.len());
            let (input, _) = prune(*input, vec![true; ni]);
            let (right, _) = prune(*right, vec![true; nr]);
            (Node::Apply { input: Box::new(input), right: Box::new(right), params, param_base, left_join }, identity(n))
        }
        // Every reader of a materialized CTE reads the same buffered rows: its plan
        // keeps all its columns, whichever the reader needs.
        Node::CteScan { cte, name, plan } => {
            let (plan, _) = prune(*plan, vec![true; n]);
            (Node::CteScan { cte, name, plan: Box::new(plan) }, identity(n))
        }
    };
    let schema = kept_schema(&node, &schema, &map);
    (Plan { node, schema, est, workers: 1 }, map)
}

/// The columns of `schema` that `map` keeps. Shared, not copied, where it can be
/// (`plan/schema.rs`): the whole schema when every column stays, and a join's
/// inputs' schemas for a join that outputs both (a copy per join made a long join
/// chain's plan quadratic again).
fn kept_schema(node: &Node, schema: &Schema, map: &ColumnMap) -> Schema {
    if map.iter().all(Option::is_some) {
        return schema.clone();
    }
    if let Node::Join { left, right, kind, .. } = node
        && !kind.is_left_only()
    {
        return left.schema.concat(&right.schema);
    }
    schema.iter().zip(map).filter(|(_, m)| m.is_some()).map(|(c, _)| c.clone()).collect()
}
