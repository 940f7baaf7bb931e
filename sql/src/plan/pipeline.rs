//! Pipelines: the part of a plan that one heap scan drives, batch by batch, without
//! a blocking operator in between. Several threads can each drive a copy of a
//! pipeline over their own pages of the scan (morsel-driven parallelism, Leis et al.
//! 2014) when nothing in it depends on seeing every row: the optimizer decides where
//! (`optimizer/parallel.rs`), the executor runs it (`exec/parallel.rs`), and both find
//! the pipeline with [`pipeline`].

use super::{Access, JoinKind, JoinMethod, Node, Plan};

/// A pipeline that several threads can drive at once.
pub struct Pipeline<'p> {
    /// The heap scan whose pages the threads share, and its pre-order id.
    pub scan: &'p Plan,
    pub scan_id: usize,
    /// The joins along the pipeline whose right input is built into a hash table (or
    /// held for a nested loop) before the threads start: each join node and its
    /// pre-order id. Index nested-loop joins are not here: each thread
    /// looks its rows up itself.
    pub builds: Vec<(usize, &'p Plan)>,
}

/// The parallel-safe pipeline rooted at `plan` (pre-order id `id`), if it has one:
/// filters and projections, and the probe (left) side of inner, left, right, full,
/// semi and anti joins, down to a heap scan (a right or full join's threads mark the
/// build rows they match, and the calling thread outputs the rows none matched in a
/// last pass, `exec/parallel.rs`); no
/// expression along it with side effects (sequences, application functions,
/// subqueries, which must run once and in order).
pub fn pipeline(plan: &Plan, id: usize) -> Option<Pipeline<'_>> {
    let mut builds = Vec::new();
    let (mut node, mut node_id) = (plan, id);
    loop {
        match &node.node {
            Node::TableScan { access: Access::Heap, with_tid: false, filter, .. } => {
                if filter.as_ref().is_some_and(|f| f.has_side_effects()) {
                    return None;
                }
                return Some(Pipeline { scan: node, scan_id: node_id, builds });
            }
            Node::Filter { input, predicate } => {
                if predicate.has_side_effects() {
                    return None;
                }
                (node, node_id) = (input, node_id + 1);
            }
            Node::Project { input, exprs } => {
                if exprs.iter().any(|e| e.has_side_effects()) {
                    return None;
                }
                (node, node_id) = (input, node_id + 1);
            }
            Node::Join { left, right, kind, on, left_keys, right_keys, method } => {
                if !(matches!(kind, JoinKind::Inner | JoinKind::Left | JoinKind::Right | JoinKind::Full) || kind.is_left_only())
                    || on.as_ref().is_some_and(|e| e.has_side_effects())
                    || left_keys.iter().chain(right_keys).any(|e| e.has_side_effects())
                {
                    return None;
                }
                match method {
                    JoinMethod::Hash { build: super::JoinSide::Right, .. } | JoinMethod::NestedLoop => {
                        builds.push((node_id, node));
                    }
                    JoinMethod::IndexNestedLoop { .. } if kind.outputs_unmatched_right() => return None,
                    JoinMethod::IndexNestedLoop { .. } => {
                        if let Node::TableScan { filter: Some(f), .. } = &right.node
                            && f.has_side_effects()
                        {
                            return None;
                        }
                    }
                    JoinMethod::Hash { build: super::JoinSide::Left, .. } => return None,
                }
                (node, node_id) = (left, node_id + 1);
            }
            _ => return None,
        }
    }
}
