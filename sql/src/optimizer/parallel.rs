//! Which operators run on several threads (setting `threads`).
//!
//! An Aggregate gets `threads` workers ([`Plan::workers`]) when its input is a
//! pipeline ([`pipeline`]) driven by a heap scan of at least `parallel_min_rows`
//! rows and every one of its aggregates merges exactly ([`combinable`]): each thread
//! then scans its own pages through the pipeline into its own groups, and the groups
//! are merged at the end (`exec/parallel.rs`). The answer is the one a single thread
//! gives, the order of the groups aside (which no ORDER BY asked for).
//!
//! Not yet parallel: pipelines that end anywhere else (a sort, a join's build side, the
//! result), floating-point sums and averages (their rounding depends on the order of
//! additions), DISTINCT and ordered aggregates.

use super::{Rules, Stats, deep, map_children};
use crate::exec::combinable;
use crate::plan::pipeline::pipeline;
use crate::plan::{Node, Plan};

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
        && let Node::TableScan { table, .. } = &p.scan.node
        && stats.table_rows(table).unwrap_or(0.0) >= rules.parallel_min_rows as f64
    {
        plan.workers = rules.threads;
    }
    plan
}
