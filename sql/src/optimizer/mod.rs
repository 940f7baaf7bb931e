//! The optimizer: rewrites of a bound plan and the physical choices the executor
//! follows. One file per rule; each rule has a session switch (`SET optimizer_… = off`)
//! so its effect can be measured, as the bee switches do for bees.
//!
//! The passes, in order:
//! 0. `simplify.rs` — constant subexpressions become literals, and a date compared
//!    with a timestamp constant is compared as a date (no cast per row).
//! 1. `join_order.rs` — a tree of inner joins is flattened into its relations and
//!    conditions and rebuilt in the order of least estimated cost (dynamic programming
//!    over subsets, greedy above [`join_order::DP_LIMIT`] relations), with the smaller
//!    input of each join on the right, where the hash table is built.
//! 2. `pushdown.rs` — predicates move down: a filter's conjuncts go below joins to the
//!    side they read (for outer joins only where safe) and into table scans; equalities
//!    across a join's sides become its hash keys.
//! 3. `semi_pushdown.rs` — a semi or anti join moves below the inner joins of its
//!    left input onto the input it filters, when its estimated selectivity beats
//!    those joins' (TPC-H Q18's IN filters `orders` before the joins).
//!    `magic_set.rs` — an aggregate joined on one of its grouping columns gets its
//!    input semi-joined with the keys a selective scan of the other side holds
//!    (the decorrelated subqueries of TPC-H Q2, Q17, Q20 aggregate ~1% of their rows).
//! 4. `access.rs` — a scan whose filter constrains the leading columns of an index
//!    reads through that index.
//! 5. `index_order.rs` — an ORDER BY (with or without LIMIT) or a lone MIN/MAX that
//!    an index's key order provides reads that index in order instead of sorting.
//! 6. `prune.rs` — every node produces only the columns some node above reads:
//!    scans decode fewer columns and hash tables hold fewer.
//! 7. `physical.rs` — every join gets its method (hash or nested loop); a join whose
//!    left input is the smaller swaps its inputs, so the smaller is built; every node gets its estimates
//!    (`cardinality.rs` for rows, `cost.rs` for cost), which EXPLAIN prints.
//! 8. `join_filter.rs` — a hash join that drops its probe rows without a match, whose
//!    integer probe key is a column of a heap scan below it, is marked: the executor
//!    has that scan skip the tuples whose key the build does not hold.
//! 9. `parallel.rs` — an aggregate whose input is a pipeline over a large heap scan
//!    gets `threads` workers (setting `threads`), each driving the pipeline over its
//!    own pages.
//!
//! Before these, `decorrelate.rs` turns subqueries into semi, anti and left joins
//! (switch `optimizer_decorrelate`), so the joins it makes go through the join rules
//! with the others; [`optimize_query`] runs it.
//!
//! Estimates use the relation sizes and column statistics (distinct counts, common
//! values, histograms, NULL fractions) [`Stats`] provides; where it knows none,
//! PostgreSQL's defaults for the case without statistics (`cardinality.rs`).

pub mod access;
pub mod cardinality;
pub mod cost;
pub mod decorrelate;
pub mod index_order;
pub mod join_order;
pub mod magic_set;
pub mod methods;
pub mod parallel;
pub mod physical;
pub mod prune;
pub mod pushdown;
pub mod semi_pushdown;
pub mod simplify;
pub mod join_filter;

use crate::binder::query_util::for_each_child_mut;
use crate::catalog::TableDef;
use crate::expr::{Expr, ExprKind};
use crate::plan::{Node, Plan};
use crate::types::DataType;

/// The optimizer's switches, one per rule (all on by default). Off, a rule leaves the
/// plan as the binder wrote it in that respect: FROM order, filters where they were,
/// heap scans, the right input as build side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rules {
    /// `optimizer_decorrelate`: subqueries become joins ([`decorrelate`]).
    pub decorrelate: bool,
    /// `optimizer_join_order`: inner joins reordered by estimated cost.
    pub join_order: bool,
    /// `optimizer_filter_pushdown`: filters pushed below joins and into scans.
    pub filter_pushdown: bool,
    /// `optimizer_index_access`: scans read through an index where one applies.
    pub index_access: bool,
    /// `optimizer_index_order`: ORDER BY and MIN/MAX read an index in order instead
    /// of sorting ([`index_order`]).
    pub index_order: bool,
    /// `optimizer_index_join`: a join looks the rows of one side up through an index
    /// on its key columns when that is cheaper than hashing (`physical`).
    pub index_join: bool,
    /// `optimizer_build_side`: a join's smaller input becomes the build side (inputs
    /// swapped; semi and anti joins excepted).
    pub build_side: bool,
    /// `optimizer_column_pruning`: every node produces only the columns read above
    /// it ([`prune`]).
    pub column_pruning: bool,
    /// `optimizer_magic_set`: an aggregate joined on one of its grouping columns
    /// reads only the rows whose key a selective scan on the other side has
    /// ([`magic_set`]).
    pub magic_set: bool,
    /// `optimizer_semi_pushdown`: a semi or anti join moves below the inner joins of
    /// its left input onto the input it reads, where it filters more rows than those
    /// joins would discard ([`semi_pushdown`]).
    pub semi_pushdown: bool,
    /// `optimizer_simplify`: constant subexpressions folded into literals, dates
    /// compared as dates ([`simplify`]).
    pub simplify: bool,
    /// `optimizer_join_filter`: a hash join that drops its probe rows without a match
    /// has the heap scan its integer probe key comes from test that key against the
    /// build's keys before decoding the rest of the row ([`join_filter`]).
    pub join_filter: bool,
    /// `enable_seqscan`, `enable_indexscan`, `enable_hashjoin`, `enable_nestloop`:
    /// physical choices forced, as PostgreSQL's settings force them ([`methods`]).
    pub methods: methods::Methods,
    /// `threads`: the most threads one statement's pipeline runs on ([`parallel`]).
    pub threads: usize,
    /// `parallel_min_rows`: a heap scan shorter than this (in estimated rows) runs on
    /// one thread: starting threads and merging their states would cost more than
    /// they save.
    pub parallel_min_rows: u64,
}

/// The machine's cores: `threads`' default.
pub fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, MAX_THREADS)
}

/// The largest `threads` setting.
pub const MAX_THREADS: usize = 64;

/// `parallel_min_rows`' default: a scan of this many rows takes tens of
/// milliseconds, against tens of microseconds to start a thread and merge its
/// aggregate state.
pub const DEFAULT_PARALLEL_MIN_ROWS: u64 = 100_000;

impl Default for Rules {
    fn default() -> Self {
        Rules {
            decorrelate: true,
            join_order: true,
            filter_pushdown: true,
            index_access: true,
            index_order: true,
            index_join: true,
            build_side: true,
            column_pruning: true,
            magic_set: true,
            semi_pushdown: true,
            simplify: true,
            join_filter: true,
            methods: methods::Methods::default(),
            threads: default_threads(),
            parallel_min_rows: DEFAULT_PARALLEL_MIN_ROWS,
        }
    }
}

/// What the optimizer knows about stored relations.
pub trait Stats {
    /// The number of rows in `table`, if known.
    fn table_rows(&self, table: &TableDef) -> Option<f64>;
    /// The statistics of column `column` of `table`, once ANALYZE gathered them.
    fn column(&self, _table: &TableDef, _column: usize) -> Option<&crate::catalog::ColumnStats> {
        None
    }
}

/// No statistics at all: every estimate uses the defaults.
pub struct NoStats;

impl Stats for NoStats {
    fn table_rows(&self, _: &TableDef) -> Option<f64> {
        None
    }
}

/// Runs `f` on a fresh stack segment when the current one runs low: every pass
/// recurses over the plan and its expressions, whose depth the input decides (a chain
/// of 5,000 UNIONs is a plan 5,000 deep).
pub(crate) fn deep<R>(f: impl FnOnce() -> R) -> R {
    stacker::maybe_grow(128 * 1024, 2 * 1024 * 1024, f)
}

/// Optimizes a query and its subplans: decorrelation first (when `rules` allow it),
/// then [`optimize`] on the plan and on each subplan that remains.
pub fn optimize_query(
    plan: Plan,
    subqueries: Vec<crate::plan::Subplan>,
    rules: &Rules,
    stats: &dyn Stats,
) -> crate::plan::BoundQuery {
    let (plan, subqueries) = if rules.decorrelate {
        decorrelate::decorrelate(plan, subqueries)
    } else {
        (plan, subqueries)
    };
    crate::plan::BoundQuery {
        plan: optimize(plan, rules, stats),
        subqueries: subqueries
            .into_iter()
            .map(|s| crate::plan::Subplan { plan: optimize(s.plan, rules, stats), ..s })
            .collect(),
    }
}

/// Applies the rules `rules` allows to `plan` (one query block tree; subplans are
/// optimized separately, by [`optimize_query`]).
pub fn optimize(plan: Plan, rules: &Rules, stats: &dyn Stats) -> Plan {
    let rules = &methods::effective(rules);
    let plan = if rules.simplify { simplify::simplify_plan(plan) } else { plan };
    let plan = if rules.join_order {
        join_order::reorder_joins(plan, stats)
    } else {
        plan
    };
    let plan = pushdown::push_filters(plan, rules.filter_pushdown);
    let plan = if rules.semi_pushdown {
        semi_pushdown::push_semi_joins(plan, stats)
    } else {
        plan
    };
    let plan = if rules.magic_set {
        magic_set::reduce_grouped_inputs(plan, stats)
    } else {
        plan
    };
    let plan = if rules.index_access {
        access::choose_access(plan, stats, !rules.methods.seqscan)
    } else {
        plan
    };
    let plan = if rules.index_order {
        index_order::order_by_index(plan, stats)
    } else {
        plan
    };
    let plan = if rules.column_pruning { prune::prune_columns(plan) } else { plan };
    let plan = physical::finish(plan, rules, stats);
    let plan = join_filter::mark(plan, rules.join_filter);
    parallel::plan_workers(plan, rules, stats)
}

/// Rewrites every column reference of `e` through `map` (old position → new).
pub(crate) fn remap(e: &mut Expr, map: &[usize]) {
    if let ExprKind::Column(i) = &mut e.kind {
        *i = map[*i];
        return;
    }
    for_each_child_mut(e, &mut |c| deep(|| remap(c, map)));
}

pub(crate) fn conjuncts(e: Expr, out: &mut Vec<Expr>) {
    match e.kind {
        ExprKind::And(v) => v.into_iter().for_each(|c| deep(|| conjuncts(c, out))),
        ExprKind::Or(branches) => factor_or(branches, out),
        kind => out.push(Expr::new(kind, e.ty)),
    }
}

/// `(a AND b) OR (a AND c)` → `a AND (b OR c)`: a conjunct every branch has (TPC-H
/// Q19's join condition) becomes a conjunct of its own, so it can be a join key.
fn factor_or(branches: Vec<Expr>, out: &mut Vec<Expr>) {
    let split: Vec<Vec<Expr>> = branches
        .into_iter()
        .map(|b| {
            let mut v = Vec::new();
            match b.kind {
                ExprKind::And(items) => v.extend(items),
                kind => v.push(Expr::new(kind, b.ty)),
            }
            v
        })
        .collect();
    let common: Vec<Expr> = split[0]
        .iter()
        .filter(|c| split[1..].iter().all(|b| b.contains(c)))
        .cloned()
        .collect();
    let rest: Vec<Expr> = split
        .into_iter()
        .map(|b| {
            let left: Vec<Expr> = b.into_iter().filter(|c| !common.contains(c)).collect();
            and_all(left).unwrap_or_else(|| Expr::literal(crate::types::Value::Boolean(true), DataType::Boolean))
        })
        .collect();
    out.extend(common);
    // A branch left empty is TRUE, and so is the whole disjunction.
    if rest.iter().any(|b| matches!(b.kind, ExprKind::Literal(crate::types::Value::Boolean(true)))) {
        return;
    }
    out.push(Expr::new(ExprKind::Or(rest), DataType::Boolean));
}

pub(crate) fn and_all(mut v: Vec<Expr>) -> Option<Expr> {
    match v.len() {
        0 => None,
        1 => v.pop(),
        _ => Some(Expr::new(ExprKind::And(v), DataType::Boolean)),
    }
}

/// Whether evaluating `e` could have side effects on correctness if moved (subqueries
/// are kept in place: they may be correlated or expensive).
pub(crate) fn movable(e: &Expr) -> bool {
    !matches!(e.kind, ExprKind::Subquery(_)) && e.children().iter().all(|c| deep(|| movable(c)))
}

pub(crate) fn columns_of(e: &Expr) -> Vec<usize> {
    fn go(e: &Expr, out: &mut Vec<usize>) {
        if let ExprKind::Column(i) = e.kind
            && !out.contains(&i)
        {
            out.push(i);
        }
        for c in e.children() {
            deep(|| go(c, out));
        }
    }
    let mut v = Vec::new();
    go(e, &mut v);
    v
}

pub(crate) fn unshift(e: &Expr, by: usize) -> Expr {
    let mut e = e.clone();
    fn go(e: &mut Expr, by: usize) {
        if let ExprKind::Column(i) = &mut e.kind {
            *i -= by;
            return;
        }
        for_each_child_mut(e, &mut |c| deep(|| go(c, by)));
    }
    go(&mut e, by);
    e
}

pub(crate) fn filter(input: Plan, preds: Vec<Expr>) -> Plan {
    match and_all(preds) {
        None => input,
        Some(p) => {
            let schema = input.schema.clone();
            Plan::new(
                Node::Filter {
                    input: Box::new(input),
                    predicate: p,
                },
                schema,
            )
        }
    }
}

/// `plan` with `f` applied to each child (left before right), on a guarded stack.
pub(crate) fn map_children(plan: Plan, f: &mut dyn FnMut(Plan) -> Plan) -> Plan {
    let Plan { node, schema, est, workers } = plan;
    Plan { node: map_node_children(node, f), schema, est, workers }
}

/// [`map_children`] for a node taken out of its plan.
pub(crate) fn map_node_children(node: Node, f: &mut dyn FnMut(Plan) -> Plan) -> Node {
    let mut b = |p: Box<Plan>| Box::new(deep(|| f(*p)));
    match node {
        Node::Filter { input, predicate } => Node::Filter { input: b(input), predicate },
        Node::Project { input, exprs } => Node::Project { input: b(input), exprs },
        Node::Aggregate { input, groups, sets, aggs, bee } => Node::Aggregate { input: b(input), groups, sets, aggs, bee },
        Node::Sort { input, keys, bee } => Node::Sort { input: b(input), keys, bee },
        Node::Limit { input, limit, offset } => Node::Limit { input: b(input), limit, offset },
        Node::Distinct { input } => Node::Distinct { input: b(input) },
        Node::Window { input, specs, calls } => Node::Window { input: b(input), specs, calls },
        Node::SetOp { op, all, left, right } => Node::SetOp { op, all, left: b(left), right: b(right) },
        Node::Join { left, right, kind, on, left_keys, right_keys, method } => Node::Join {
            left: b(left),
            right: b(right),
            kind,
            on,
            left_keys,
            right_keys,
            method,
        },
        Node::RecursiveUnion { work_table, name, distinct, base, recursive } => Node::RecursiveUnion {
            work_table,
            name,
            distinct,
            base: b(base),
            recursive: b(recursive),
        },
        Node::CteScan { cte, name, plan } => Node::CteScan { cte, name, plan: b(plan) },
        Node::Apply { input, right, params, param_base, left_join } => {
            Node::Apply { input: b(input), right: b(right), params, param_base, left_join }
        }
        n @ (Node::TableScan { .. } | Node::Values { .. } | Node::WorkTableScan { .. } | Node::Series { .. }) => n,
    }
}

#[cfg(test)]
mod tests;
