//! DISTINCT and the set operations, by the normalized row key (NULLs equal).
//!
//! DISTINCT and UNION stream: a row goes out the first time its key is seen.
//! INTERSECT and EXCEPT count the right side's keys, then stream the left side:
//! INTERSECT ALL emits a left row while the right count lasts (min of the counts),
//! EXCEPT ALL emits it once the right count is used up (difference of the counts).

use rustc_hash::{FxHashMap, FxHashSet};

use super::keys::row_key;
use super::{Exec, Flow, Out};
use crate::error::Result;
use crate::plan::{Node, Plan, SetOpKind};
use crate::types::DataType;
use crate::vector::Batch;

/// Rows of `b` whose key is new to `seen`, as a narrowed selection.
pub(super) fn first_seen(
    ex: &Exec<'_>,
    op: &str,
    b: Batch,
    types: &[DataType],
    seen: &mut FxHashSet<Vec<u8>>,
    bytes: &mut usize,
) -> Result<Option<Batch>> {
    let mut b = super::dense(b, types);
    let mut sel = Vec::new();
    let mut key = Vec::new();
    for k in 0..b.len {
        key.clear();
        row_key(&b.columns, k, &mut key);
        if !seen.contains(&key) {
            *bytes += key.len() + 40;
            seen.insert(key.clone());
            sel.push(k as u32);
        }
    }
    ex.check_mem(op, *bytes)?;
    if sel.is_empty() {
        return Ok(None);
    }
    if sel.len() < b.len {
        b.sel = Some(sel);
    }
    Ok(Some(b))
}

/// `UNION ALL`, and the chain of `UNION ALL`s below it on the left (`a UNION ALL b
/// UNION ALL c …` binds as `((a ∪ b) ∪ c) …`), run as one n-ary append: each arm's
/// batches go straight to `out`, in the order the nested operators would give them.
/// Pushing each batch up through one operator per arm above it made a statement of
/// n arms cost O(n²) (8,000 arms: seconds before the first row). The chain's inner
/// nodes get their row counts in EXPLAIN ANALYZE from the arms below them.
fn union_all(ex: &Exec<'_>, plan: &Plan, id: usize, types: &[DataType], out: Out) -> Result<Flow> {
    // The spine: this node, then each left input that is itself a UNION ALL of the
    // same column types (pre-order ids id, id + 1, …).
    let mut spine: Vec<&Plan> = vec![plan];
    while let Node::SetOp { op: SetOpKind::Union, all: true, left, .. } = &spine[spine.len() - 1].node
        && matches!(left.node, Node::SetOp { op: SetOpKind::Union, all: true, .. })
        && left.types() == types
    {
        spine.push(left);
    }
    // The arms in output order: the deepest left input, then the right inputs from
    // the bottom of the spine up, each with its pre-order id.
    let mut arms: Vec<(&Plan, usize)> = Vec::with_capacity(spine.len() + 1);
    let mut next_id = id + spine.len();
    for (depth, node) in spine.iter().enumerate().rev() {
        let Node::SetOp { left, right, .. } = &node.node else {
            unreachable!("the spine holds set operations only");
        };
        if depth == spine.len() - 1 {
            arms.push((left, next_id));
            next_id += ex.subtree_size(left);
        }
        arms.push((right, next_id));
        next_id += ex.subtree_size(right);
    }
    // Rows and batches each arm produced, for the spine's profile.
    let mut produced: Vec<(u64, u64)> = Vec::with_capacity(arms.len());
    let mut flow = Flow::Continue;
    for &(arm, arm_id) in &arms {
        let (mut rows, mut batches) = (0u64, 0u64);
        flow = ex.node(arm, arm_id, None, &mut |b| {
            if b.rows() == 0 {
                return Ok(Flow::Continue);
            }
            rows += b.rows() as u64;
            batches += 1;
            out(super::dense(b, types))
        })?;
        produced.push((rows, batches));
        if flow == Flow::Stop {
            break;
        }
    }
    // The spine node at depth d (d ≥ 1) output what its arms produced: the deepest
    // left input and the right inputs of the nodes at depth ≥ d (arms 0 ..= spine.len() - d).
    if let Some(p) = ex.profile {
        let (mut rows, mut batches) = (0u64, 0u64);
        for (k, &(r, b)) in produced.iter().enumerate() {
            rows += r;
            batches += b;
            let depth = spine.len() as isize - k as isize;
            if k >= 1 && depth >= 1 && (depth as usize) < spine.len() {
                p.record(id + depth as usize, rows, batches, std::time::Duration::ZERO);
            }
        }
    }
    Ok(flow)
}

pub(super) fn distinct(
    ex: &Exec<'_>,
    plan: &Plan,
    id: usize,
    input: &Plan,
    out: Out,
) -> Result<Flow> {
    let types = plan.types();
    let mut seen = FxHashSet::default();
    let mut bytes = 0;
    ex.node(input, id + 1, None, &mut |b| {
        if b.rows() == 0 {
            return Ok(Flow::Continue);
        }
        match first_seen(ex, "Distinct", b, &types, &mut seen, &mut bytes)? {
            Some(b) => out(b),
            None => Ok(Flow::Continue),
        }
    })
}

#[allow(clippy::too_many_arguments)]
pub(super) fn set_op(
    ex: &Exec<'_>,
    plan: &Plan,
    id: usize,
    op: SetOpKind,
    all: bool,
    left: &Plan,
    right: &Plan,
    out: Out,
) -> Result<Flow> {
    let types = plan.types();
    if op == SetOpKind::Union && all {
        return union_all(ex, plan, id, &types, out);
    }
    let left_id = id + 1;
    let right_id = left_id + ex.subtree_size(left);
    match op {
        SetOpKind::Union => {
            let mut seen = FxHashSet::default();
            let mut bytes = 0;
            for (side, sid) in [(left, left_id), (right, right_id)] {
                let f = ex.node(side, sid, None, &mut |b| {
                    if b.rows() == 0 {
                        return Ok(Flow::Continue);
                    }
                    match first_seen(ex, "Union", b, &types, &mut seen, &mut bytes)? {
                        Some(b) => out(b),
                        None => Ok(Flow::Continue),
                    }
                })?;
                if f == Flow::Stop {
                    return Ok(Flow::Stop);
                }
            }
            Ok(Flow::Continue)
        }
        SetOpKind::Intersect | SetOpKind::Except => {
            let name = if op == SetOpKind::Intersect {
                "Intersect"
            } else {
                "Except"
            };
            let mut counts: FxHashMap<Vec<u8>, i64> = FxHashMap::default();
            let mut bytes = 0usize;
            let mut key = Vec::new();
            ex.node(right, right_id, None, &mut |b| {
                let b = super::dense(b, &types);
                for k in 0..b.len {
                    key.clear();
                    row_key(&b.columns, k, &mut key);
                    match counts.get_mut(&key) {
                        Some(c) => *c += 1,
                        None => {
                            bytes += key.len() + 48;
                            counts.insert(key.clone(), 1);
                        }
                    }
                }
                ex.check_mem(name, bytes)?;
                Ok(Flow::Continue)
            })?;
            // Keys already emitted (the non-ALL forms output each row once).
            let mut emitted: FxHashSet<Vec<u8>> = FxHashSet::default();
            ex.node(left, left_id, None, &mut |b| {
                let mut b = super::dense(b, &types);
                let mut sel = Vec::new();
                for k in 0..b.len {
                    key.clear();
                    row_key(&b.columns, k, &mut key);
                    let keep = match (op, all) {
                        (SetOpKind::Intersect, true) => match counts.get_mut(&key) {
                            Some(c) if *c > 0 => {
                                *c -= 1;
                                true
                            }
                            _ => false,
                        },
                        (SetOpKind::Except, true) => match counts.get_mut(&key) {
                            Some(c) if *c > 0 => {
                                *c -= 1;
                                false
                            }
                            _ => true,
                        },
                        (SetOpKind::Intersect, false) => {
                            counts.contains_key(&key) && !emitted.contains(&key) && {
                                emitted.insert(key.clone());
                                true
                            }
                        }
                        _ => {
                            !counts.contains_key(&key) && !emitted.contains(&key) && {
                                bytes += key.len() + 40;
                                emitted.insert(key.clone());
                                true
                            }
                        }
                    };
                    if keep {
                        sel.push(k as u32);
                    }
                }
                ex.check_mem(name, bytes)?;
                if sel.is_empty() {
                    return Ok(Flow::Continue);
                }
                if sel.len() < b.len {
                    b.sel = Some(sel);
                }
                out(b)
            })
        }
    }
}
