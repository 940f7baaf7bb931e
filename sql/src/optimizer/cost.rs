//! The cost model: what each physical operator costs per row, in abstract units (one
//! unit ≈ reading and decoding one heap row in a sequential scan).
//!
//! `scripts/calibrate-costs` measures what the constants stand for on the machine it
//! runs on and prints them beside the ones in use. The index constants come from its
//! run of 2026-11-26 (1,000,000 rows of ~100 bytes, 2-core Xeon @ 2.5 GHz, release
//! build, bees off): a row fetched through an index in random heap order cost 26.5
//! sequential rows (7.8 µs against 254 ns — each fetch looks its page up in the buffer
//! pool and decodes one tuple), in heap order 1.7. The hash and aggregation constants
//! are still design estimates: the script measured them 5–10× below these (probe
//! 0.08, build 0.15, aggregate 0.38), and lowering them changes join orders, which
//! wants a TPC-H run to confirm. Only the ratios matter: they decide build sides, join
//! orders and access paths, never results.

use super::Stats;
use crate::catalog::TableDef;
use crate::plan::{Access, JoinMethod, Node, Plan};

/// Reading one row of a heap in a sequential scan.
pub const SEQ_ROW: f64 = 1.0;
/// Reading one row through an index (descent amortized, random heap access):
/// measured, see the module comment.
pub const INDEX_ROW: f64 = 25.0;
/// Reading one row through an index of a table stored in the index's order
/// (correlation 1): the heap pages come in order, each read once.
pub const INDEX_ROW_IN_ORDER: f64 = 2.0;
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

/// The cost of reading one row of `table` through index `index`: between a random
/// heap access ([`INDEX_ROW`]) and one in order ([`INDEX_ROW_IN_ORDER`]) by the square
/// of the correlation between the index's leading column and the heap order, as
/// PostgreSQL interpolates (no statistics: random).
pub fn index_row(table: &TableDef, index: usize, stats: &dyn Stats) -> f64 {
    let leading = table.indexes.get(index).and_then(|i| i.columns.first().copied());
    let c = leading.and_then(|c| stats.column(table, c)).map_or(0.0, |c| c.correlation);
    let c2 = c * c;
    c2 * INDEX_ROW_IN_ORDER + (1.0 - c2) * INDEX_ROW
}

/// The cost of a hash join of `probe` rows against a table built from `build` rows,
/// producing `out` rows.
pub fn hash_join(probe: f64, build: f64, out: f64) -> f64 {
    probe * HASH_PROBE_ROW + build * HASH_BUILD_ROW + out * JOIN_OUTPUT_ROW
}

/// The cost of an index nested-loop join: one index descent per `outer` row, each
/// finding `per_lookup` rows at `row_cost` apiece (see [`index_row`]), producing `out`.
pub fn index_nested_loop(outer: f64, per_lookup: f64, row_cost: f64, out: f64) -> f64 {
    outer * (INDEX_DESCENT + per_lookup * (row_cost + EVAL_ROW)) + out * JOIN_OUTPUT_ROW
}

/// The cost of a nested-loop join of `left` × `right` rows producing `out` rows.
pub fn nested_loop(left: f64, right: f64, out: f64) -> f64 {
    left * right * NESTED_LOOP_PAIR + left + right + out * JOIN_OUTPUT_ROW
}

/// The cost of `plan` alone (not its inputs), given its estimated output `rows` and
/// its inputs' estimated rows `inputs`.
pub fn node_cost(plan: &Plan, rows: f64, inputs: &[f64], stats: &dyn Stats) -> f64 {
    let input = inputs.first().copied().unwrap_or(0.0);
    match &plan.node {
        Node::TableScan { access, filter, table, .. } => {
            let table_rows = super::cardinality::table_rows(table, stats);
            let read = match access {
                Access::Heap => table_rows * SEQ_ROW,
                // The rows the index bounds select, before the residual filter: at
                // least the output.
                Access::Index { index, .. } => INDEX_DESCENT + rows * index_row(table, *index, stats),
            };
            read + if filter.is_some() { table_rows.min(read) * EVAL_ROW } else { 0.0 }
        }
        Node::Values { rows } => rows.len() as f64 * EVAL_ROW,
        Node::Filter { .. } | Node::Project { .. } => input * EVAL_ROW,
        Node::Join { method, right, .. } => {
            let (l, r) = (inputs[0], inputs[1]);
            match method {
                JoinMethod::NestedLoop => nested_loop(l, r, rows),
                // `r` is the right scan's rows per lookup (`physical` sets its
                // estimate so).
                JoinMethod::IndexNestedLoop { index } => {
                    let row_cost = match &right.node {
                        Node::TableScan { table, .. } => index_row(table, *index, stats),
                        _ => INDEX_ROW,
                    };
                    index_nested_loop(l, r, row_cost, rows)
                }
                JoinMethod::Hash { build, .. } => {
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
        // The right side runs once per input row (its cost is counted once among
        // the inputs; the loop is what this adds).
        Node::Apply { .. } => (input * inputs.get(1).copied().unwrap_or(1.0) + rows) * EVAL_ROW,
        Node::WorkTableScan { .. } | Node::Series { .. } | Node::CteScan { .. } => rows * EVAL_ROW,
    }
}
