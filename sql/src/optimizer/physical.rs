//! The last pass: physical choices and estimates.
//!
//! - Every join gets its method: a hash join (building on the right input) when it has
//!   equality keys, a nested loop otherwise.
//! - Rule `optimizer_build_side`: a join whose left input is estimated smaller than
//!   its right swaps them (left and right outer joins trade kinds), so the hash table
//!   holds the smaller input; a projection restores the column order. Semi and anti
//!   joins keep their sides: building on their left input needs the executor's
//!   support (`JoinSide::Left`).
//! - A semi or anti join's right input is narrowed to the columns its keys and `on`
//!   read ([`narrow_semi_build`]): the join outputs only its left columns, and a hash
//!   join's build side should hold nothing it never reads.
//! - Every node gets its estimated rows and cost ([`crate::plan::Estimate`]).

use super::{Rules, Stats, cardinality, cost, remap};
use crate::expr::Expr;
use crate::plan::{Estimate, JoinKind, JoinMethod, JoinSide, Node, Plan};

/// Applies the physical choices to `plan` bottom-up and sets every node's estimates.
pub fn finish(plan: Plan, rules: &Rules, stats: &dyn Stats) -> Plan {
    let plan = super::map_children(plan, &mut |p| finish(p, rules, stats));
    let plan = set_method(plan);
    let plan = narrow_semi_build(plan);
    let plan = if rules.build_side { smaller_on_right(plan, stats) } else { plan };
    estimate(plan, stats)
}

fn set_method(mut plan: Plan) -> Plan {
    if let Node::Join { left_keys, method, .. } = &mut plan.node {
        *method = if left_keys.is_empty() {
            JoinMethod::NestedLoop
        } else {
            JoinMethod::Hash { build: JoinSide::Right }
        };
    }
    plan
}

/// A semi or anti join reads of its right input only the columns of its keys and of
/// `on`: puts a projection of those columns over the right input (TPC-H Q21's EXISTS
/// over lineitem built a hash table of all sixteen lineitem columns and ran out of
/// `memory_limit` at SF 1).
fn narrow_semi_build(mut plan: Plan) -> Plan {
    let Node::Join { left, right, kind: JoinKind::Semi | JoinKind::Anti, on, right_keys, .. } = &mut plan.node else {
        return plan;
    };
    // Subqueries in `on` may read columns through parameters: leave those joins be.
    if on.as_ref().is_some_and(|on| !super::movable(on)) {
        return plan;
    }
    let (nl, nr) = (left.schema.len(), right.schema.len());
    let mut used = Vec::new();
    for k in right_keys.iter() {
        k.columns_used(&mut used);
    }
    if let Some(on) = on {
        let mut both = Vec::new();
        on.columns_used(&mut both);
        used.extend(both.into_iter().filter(|&c| c >= nl).map(|c| c - nl));
    }
    used.sort_unstable();
    used.dedup();
    if used.is_empty() || used.len() == nr {
        return plan;
    }
    let mut right_map = vec![usize::MAX; nr];
    for (new, &old) in used.iter().enumerate() {
        right_map[old] = new;
    }
    for k in right_keys.iter_mut() {
        remap(k, &right_map);
    }
    if let Some(on) = on {
        let both: Vec<usize> = (0..nl).chain(right_map.iter().map(|&m| m.wrapping_add(nl))).collect();
        remap(on, &both);
    }
    let input = std::mem::replace(&mut **right, Plan::new(Node::Values { rows: vec![] }, vec![]));
    let exprs = used.iter().map(|&c| Expr::column(c, input.schema[c].ty)).collect();
    let schema = used.iter().map(|&c| input.schema[c].clone()).collect();
    **right = Plan::new(Node::Project { input: Box::new(input), exprs }, schema);
    plan
}

/// Sets `plan`'s estimates from its inputs' (which are set).
fn estimate(mut plan: Plan, stats: &dyn Stats) -> Plan {
    let children = plan.children();
    let inputs: Vec<f64> = children.iter().map(|c| c.est.map_or(0.0, |e| e.rows)).collect();
    let input_cost: f64 = children.iter().map(|c| c.est.map_or(0.0, |e| e.cost)).sum();
    let rows = cardinality::node_rows(&plan, &inputs, stats);
    let own = cost::node_cost(&plan, rows, &inputs, stats);
    plan.est = Some(Estimate { rows, cost: input_cost + own });
    plan
}

/// Swaps a join's inputs when the left is estimated smaller (see the module comment).
fn smaller_on_right(plan: Plan, stats: &dyn Stats) -> Plan {
    let swap = match &plan.node {
        Node::Join { left, right, kind, .. } => {
            !matches!(kind, JoinKind::Semi | JoinKind::Anti)
                && cardinality::rows(left, stats) < cardinality::rows(right, stats)
        }
        _ => false,
    };
    if !swap {
        return plan;
    }
    let Plan { node, schema, .. } = plan;
    let Node::Join { left, right, kind, on, left_keys, right_keys, method } = node else {
        unreachable!("checked above")
    };
    let (nl, nr) = (left.schema.len(), right.schema.len());
    // Old column (left ++ right) → new column (right ++ left).
    let map: Vec<usize> = (0..nl).map(|c| c + nr).chain(0..nr).collect();
    let on = on.map(|mut e| {
        remap(&mut e, &map);
        e
    });
    let kind = match kind {
        JoinKind::Left => JoinKind::Right,
        JoinKind::Right => JoinKind::Left,
        k => k,
    };
    let mut swapped_schema = right.schema.clone();
    swapped_schema.extend(left.schema.iter().cloned());
    let join = Plan::new(
        Node::Join { left: right, right: left, kind, on, left_keys: right_keys, right_keys: left_keys, method },
        swapped_schema,
    );
    let join = estimate(join, stats);
    let exprs: Vec<Expr> = (0..nl + nr).map(|old| Expr::column(map[old], schema[old].ty)).collect();
    Plan::new(Node::Project { input: Box::new(join), exprs }, schema)
}
