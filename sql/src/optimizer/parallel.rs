//! Which operators run on several threads (setting `threads`).
//!
//! An Aggregate gets `threads` workers ([`Plan::workers`]) when its input is a
//! pipeline ([`pipeline`]) driven by a heap scan of at least `parallel_min_rows`
//! rows and every one of its aggregates merges exactly ([`combinable`]): each thread
//! then scans its own pages through the pipeline into its own groups, and the groups
//! are merged at the end (`exec/parallel.rs`). The answer is the one a single thread
//! gives, the order of the groups aside (which no ORDER BY asked for).
//!
//! A hash join whose build (right) input is such a pipeline gets `threads` workers
//! too: they scan and filter the build input, each keeping its batches, and the
//! calling thread fills the hash table from them.
//!
//! So does a semi or anti join that holds its left input (`build: left`) when its
//! right input is such a pipeline: the threads scan it and probe the held keys,
//! marking the held rows they match in a shared bitmap, and the calling thread
//! outputs the matched (semi) or unmatched (anti) held rows once they have finished
//! (`exec/join.rs`, `left_build`). EXPLAIN shows `probe workers: N` there.
//!
//! Not yet parallel: filling a hash table, pipelines that end in a sort or the result, floating-point sums and averages (their rounding depends on the order of
//! additions), DISTINCT and ordered aggregates.

use super::{Rules, Stats, deep, map_children};
use crate::exec::combinable;
use crate::plan::pipeline::pipeline;
use crate::plan::{JoinKind, JoinMethod, JoinSide, Node, Plan};

/// Sets [`Plan::workers`] on the aggregates of `plan` that can use several threads.
pub fn plan_workers(plan: Plan, rules: &Rules, stats: &dyn Stats) -> Plan {
    if rules.threads <= 1 {
        return plan;
    }
    let mut plan = map_children(plan, &mut |c| deep(|| plan_workers(c, rules, stats)));
    if let Node::Aggregate { input, groups, aggs, .. } = &plan.node
        && aggs.iter().all(combinable)
        && !groups.iter().any(|g| g.has_side_effects())
        && !aggs.iter().flat_map(|a| a.arg.iter().chain(&a.arg2)).any(|e| e.has_side_effects())
        && let Some(p) = pipeline(input, 0)
        && large(p.scan, rules, stats)
    {
        plan.workers = rules.threads;
    }
    // A hash join whose build input is such a pipeline: the threads scan and filter
    // it, the calling thread fills the hash table.
    if let Node::Join { right, method: JoinMethod::Hash { build: JoinSide::Right, .. }, .. } = &plan.node
        && let Some(p) = pipeline(right, 0)
        && large(p.scan, rules, stats)
    {
        plan.workers = rules.threads;
    }
    // A semi or anti join holding its left rows (`build: left`) whose right input is
    // such a pipeline: the threads run it and probe the held keys, marking the held
    // rows they match; the calling thread then outputs the held rows.
    if let Node::Join { right, kind: JoinKind::Semi | JoinKind::Anti, method: JoinMethod::Hash { build: JoinSide::Left, .. }, .. } = &plan.node
        && let Some(p) = pipeline(right, 0)
        && large(p.scan, rules, stats)
    {
        plan.workers = rules.threads;
    }
    plan
}

/// Whether `scan` (a table scan) reads at least `parallel_min_rows` rows.
fn large(scan: &Plan, rules: &Rules, stats: &dyn Stats) -> bool {
    let Node::TableScan { table, .. } = &scan.node else { return false };
    stats.table_rows(table).unwrap_or(0.0) >= rules.parallel_min_rows as f64
}
