//! Rule `optimizer_join_filter`: marks the hash joins whose probe-side scans test the
//! join key before decoding a tuple (`JoinMethod::Hash { key_filter }`).
//!
//! A mark is given to a join that builds on its right input, drops its probe rows
//! without a match (inner, right and semi joins: a left, full, anti or mark join keeps
//! or decides on every probe row), and has an integer probe key that is a stored
//! column of a heap scan below its left input ([`crate::plan::key_source`]). What the
//! test costs when it filters nothing (a few nanoseconds a tuple) the executor stops
//! paying after a first stretch of the scan (`exec::key_filter`), so no estimate of
//! its selectivity is needed here; a probe side estimated below
//! [`MIN_PROBE_ROWS`] rows is left alone, where there is nothing to win.

use crate::plan::key_source::filterable_keys;
use crate::plan::{JoinKind, JoinMethod, JoinSide, Node, Plan};

/// Probe rows below which a join is not marked.
pub const MIN_PROBE_ROWS: f64 = 1000.0;

/// Sets every hash join's `key_filter` in `plan`: as this rule decides with `on`, off
/// everywhere without it.
pub fn mark(plan: Plan, on: bool) -> Plan {
    let mut plan = super::map_children(plan, &mut |p| mark(p, on));
    let wanted = on
        && match &plan.node {
            Node::Join {
                left,
                kind: JoinKind::Inner | JoinKind::Right | JoinKind::Semi,
                left_keys,
                right_keys,
                method: JoinMethod::Hash { build: JoinSide::Right, .. },
                ..
            } => {
                left.est.is_none_or(|e| e.rows >= MIN_PROBE_ROWS) && !filterable_keys(left, left_keys, right_keys).is_empty()
            }
            _ => false,
        };
    if let Node::Join { method: JoinMethod::Hash { key_filter, .. }, .. } = &mut plan.node {
        *key_filter = wanted;
    }
    plan
}
