//! Rule `optimizer_join_filter`: marks the hash joins whose probe-side scans test the
//! join key before decoding a tuple (`JoinMethod::Hash { key_filter }`).
//!
//! A mark is given to a join that builds on its right input, drops its probe rows
//! without a match (inner, right and semi joins: a left, full, anti or mark join keeps
//! or decides on every probe row), and has an integer probe key that is a stored
//! column of a heap scan below its left input ([`crate::plan::key_source`]); and to a
//! semi or anti join that holds its left rows (`JoinSide::Left`) with such a key
//! below its right input, whose rows only mark the held rows of equal keys. What the
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
            } => worth(left, left_keys, right_keys),
            // A semi or anti join holding its left rows streams its right input past
            // them: a right row whose key no held row has marks nothing.
            Node::Join {
                right,
                kind: JoinKind::Semi | JoinKind::Anti,
                left_keys,
                right_keys,
                method: JoinMethod::Hash { build: JoinSide::Left, .. },
                ..
            } => worth(right, right_keys, left_keys),
            _ => false,
        };
    if let Node::Join { method: JoinMethod::Hash { key_filter, .. }, .. } = &mut plan.node {
        *key_filter = wanted;
    }
    plan
}

/// Whether the streamed input `input` of a join, joined on `keys` against `other`,
/// is worth a key filter: long enough, with a key its scans can test.
fn worth(input: &Plan, keys: &[crate::expr::Expr], other: &[crate::expr::Expr]) -> bool {
    input.est.is_none_or(|e| e.rows >= MIN_PROBE_ROWS) && !filterable_keys(input, keys, other).is_empty()
}
