//! The cost model: what each physical operator costs per row, in abstract units (one
//! unit ≈ reading and decoding one heap row in a sequential scan).
//!
//! The constants are first estimates from the executor's design (hash insertion
//! costs more than a probe; a row fetched through an index costs a random page
//! access), not yet calibrated by measurement on this machine; calibrating them is
//! open work (issue 11, item 2). Only their ratios matter: they decide build sides,
//! join orders and access paths, never results.

use crate::plan::{Access, JoinMethod, Node, Plan};

/// Reading one row of a heap in a sequential scan.
pub const SEQ_ROW: f64 = 1.0;
/// Reading one row through an index (descent amortized, random heap access).
pub const INDEX_ROW: f64 = 4.0;
/// Descending an index once.
pub const INDEX_DESCENT: f64 = 20.0;
/// Evaluating a predicate or expression list on one row.
pub const EVAL_ROW: f64 = 0.1;
/// Inserting one row into a join's hash table (hashing, copying its columns).
pub const HASH_BUILD_ROW: f64 = 1.5;
/// Probing a hash table with one row.
pub const HASH_PROBE_ROW: f64 = 0.5;
/// Checking one pair of rows in a nested-loop join.
pub const NESTED_LOOP_PAIR: f64 = 0.05;
/// Producing one output row of a join.
pub const JOIN_OUTPUT_ROW: f64 = 0.1;
/// Adding one row to a hash aggregate or distinct.
pub const AGG_ROW: f64 = 1.0;
/// One comparison of a sort.
pub const SORT_COMPARE: f64 = 0.2;

/// The cost of a hash join of `probe` rows against a table built from `build` rows,
/// producing `out` rows.
pub fn hash_join(probe: f64, build: f64, out: f64) -> f64 {
    probe * HASH_PROBE_ROW + build * HASH_BUILD_ROW + out * JOIN_OUTPUT_ROW
}

/// The cost of a nested-loop join of `left` × `right` rows producing `out` rows.
pub fn nested_loop(left: f64, right: f64, out: f64) -> f64 {
    left * right * NESTED_LOOP_PAIR + left + right + out * JOIN_OUTPUT_ROW
}

/// The cost of `plan` alone (not its inputs), given its estimated output `rows`, its
/// inputs' estimated rows `inputs` and, for scans, the table's row count.
pub fn node_cost(plan: &Plan, rows: f64, inputs: &[f64], table_rows: f64) -> f64 {
    let input = inputs.first().copied().unwrap_or(0.0);
    match &plan.node {
        Node::TableScan { access, filter, .. } => {
            let read = match access {
                Access::Heap => table_rows * SEQ_ROW,
                // The rows the index bounds select, before the residual filter: at
                // least the output.
                Access::Index { .. } => INDEX_DESCENT + rows * INDEX_ROW,
            };
            read + if filter.is_some() { table_rows.min(read) * EVAL_ROW } else { 0.0 }
        }
        Node::Values { rows } => rows.len() as f64 * EVAL_ROW,
        Node::Filter { .. } | Node::Project { .. } => input * EVAL_ROW,
        Node::Join { method, .. } => {
            let (l, r) = (inputs[0], inputs[1]);
            match method {
                JoinMethod::NestedLoop => nested_loop(l, r, rows),
                JoinMethod::Hash { build } => {
                    let (probe, built) = match build {
                        crate::plan::JoinSide::Right => (l, r),
                        crate::plan::JoinSide::Left => (r, l),
                    };
                    hash_join(probe, built, rows)
                }
            }
        }
        Node::Aggregate { .. } | Node::Distinct { .. } => input * AGG_ROW,
        Node::Sort { .. } => input * input.max(2.0).log2() * SORT_COMPARE,
        // A sort per window, then each function once per row.
        Node::Window { specs, calls, .. } => {
            specs.len() as f64 * input * input.max(2.0).log2() * SORT_COMPARE
                + calls.len() as f64 * input * EVAL_ROW
        }
        Node::Limit { .. } => 0.0,
        Node::SetOp { .. } => inputs.iter().sum::<f64>() * AGG_ROW,
        // Each row output is hashed (UNION) or copied into the next round's table.
        Node::RecursiveUnion { .. } => rows * AGG_ROW,
        Node::WorkTableScan { .. } => rows * EVAL_ROW,
    }
}
