//! Rule: join order (`optimizer_join_order`). A tree of inner joins (with the filters
//! between them) is flattened into its relations and conditions, and rebuilt as the
//! tree of least estimated cost: dynamic programming over subsets of relations
//! (bushy trees; a split whose sides no condition connects is considered only when a
//! subset has no connected split, i.e. cross products only where the query has them),
//! and above [`DP_LIMIT`] relations a greedy merge of the pair with the smallest
//! result. Each join puts its smaller input on the right, where the hash table is
//! built. Each condition goes to the lowest join (or relation) that has its columns;
//! pushdown and the physical pass take it from there. The result does not depend on
//! the order of the relations in FROM, except between plans of equal estimated cost.

use super::{Stats, and_all, deep, cardinality, columns_of, conjuncts, cost, filter, map_children, remap};
use crate::binder::query_util::shift_columns;
use crate::expr::{CmpOp, Expr, ExprKind};
use crate::plan::{JoinKind, Node, Plan};
use crate::types::DataType;
use std::collections::HashMap;

/// Relations above which the greedy search replaces dynamic programming (whose
/// work grows as 3^n).
pub const DP_LIMIT: usize = 12;

/// A set of the flattened relations, one bit each.
type RelSet = u128;

/// Relations above which the FROM order is kept: a [`RelSet`] holds no more.
pub const REORDER_LIMIT: usize = RelSet::BITS as usize - 1;

/// Flattens a tree of inner joins and the filters between them into its relations
/// and its conditions (over the combined columns, left to right).
fn flatten_inner(plan: Plan, offset: usize, rels: &mut Vec<Plan>, conds: &mut Vec<Expr>, stats: &dyn Stats) {
    let inner_join = |p: &Plan| matches!(&p.node, Node::Join { kind: JoinKind::Inner, .. });
    let is_flattenable = inner_join(&plan)
        || matches!(&plan.node, Node::Filter { input, .. } if inner_join(input));
    if !is_flattenable {
        rels.push(reorder_joins(plan, stats));
        return;
    }
    match plan.node {
        Node::Filter { input, predicate } => {
            let mut p = predicate;
            if offset > 0 {
                p = shift_columns(&p, offset);
            }
            conjuncts(p, conds);
            deep(|| flatten_inner(*input, offset, rels, conds, stats));
        }
        Node::Join { left, right, on, left_keys, right_keys, .. } => {
            let nleft = left.schema.len();
            if let Some(on) = on {
                let on = if offset > 0 { shift_columns(&on, offset) } else { on };
                conjuncts(on, conds);
            }
            // Keys (from an earlier rewrite) become equalities again.
            for (l, r) in left_keys.into_iter().zip(right_keys) {
                let eq = Expr::new(
                    ExprKind::Compare {
                        op: CmpOp::Eq,
                        left: Box::new(shift_columns(&l, offset)),
                        right: Box::new(shift_columns(&r, offset + nleft)),
                    },
                    DataType::Boolean,
                );
                conds.push(eq);
            }
            deep(|| flatten_inner(*left, offset, rels, conds, stats));
            deep(|| flatten_inner(*right, offset + nleft, rels, conds, stats));
        }
        _ => unreachable!("checked above"),
    }
}


/// One condition of the flattened join: the relations it reads and its selectivity.
struct Cond {
    expr: Expr,
    rels: RelSet,
    sel: f64,
    /// An equality between columns of two relations: a possible hash key.
    equi: bool,
}

/// How a subset of relations is best joined.
#[derive(Clone, Copy)]
struct Best {
    cost: f64,
    rows: f64,
    /// The left and right subsets (0 for a single relation).
    left: RelSet,
    right: RelSet,
}

/// Reorders every tree of two or more inner joins in `plan` (see the module comment).
pub fn reorder_joins(plan: Plan, stats: &dyn Stats) -> Plan {
    let is_inner = |p: &Plan| matches!(&p.node, Node::Join { kind: JoinKind::Inner, .. });
    let is_tree = is_inner(&plan) || matches!(&plan.node, Node::Filter { input, .. } if is_inner(input));
    if !is_tree {
        return map_children(plan, &mut |p| reorder_joins(p, stats));
    }
    let schema = plan.schema.clone();
    let mut rels = Vec::new();
    let mut exprs = Vec::new();
    flatten_inner(plan, 0, &mut rels, &mut exprs, stats);
    // Comparisons shared through equal columns, before the relations are estimated
    // (`a.x = b.y AND b.y < 10` also filters a: `pushdown::implied_comparisons`).
    let types: Vec<DataType> = rels.iter().flat_map(|r| r.schema.iter().map(|c| c.ty)).collect();
    let equal: Vec<(usize, usize)> = exprs
        .iter()
        .filter_map(|e| match &e.kind {
            ExprKind::Compare { op: CmpOp::Eq, left, right } if super::movable(e) => match (&left.kind, &right.kind) {
                (ExprKind::Column(a), ExprKind::Column(b)) if types.get(*a) == types.get(*b) => Some((*a, *b)),
                _ => None,
            },
            _ => None,
        })
        .collect();
    let implied = super::pushdown::implied_comparisons(&exprs, &equal, |_, _| true);
    exprs.extend(implied);
    if rels.len() > REORDER_LIMIT {
        // Beyond a bitmask's reach: keep the FROM order.
        let tree = left_deep(rels);
        return with_rows(filter(tree, exprs), stats);
    }
    let n = rels.len();
    let mut starts = Vec::with_capacity(n);
    let mut off = 0;
    for r in &rels {
        starts.push(off);
        off += r.schema.len();
    }
    let rel_of = |c: usize| starts.iter().rposition(|&s| s <= c).expect("a relation");
    let base: Vec<f64> = rels.iter().map(|r| cardinality::rows(r, stats).max(1.0)).collect();

    // Conditions: local ones scale their relation; the others connect relations.
    let mut local: Vec<Vec<Expr>> = vec![Vec::new(); n];
    let mut rows1 = base.clone();
    let mut conds: Vec<Cond> = Vec::new();
    let mut constant = Vec::new();
    for e in exprs {
        let cols = columns_of(&e);
        let mut mask: RelSet = 0;
        for &c in &cols {
            mask |= 1 << rel_of(c);
        }
        if mask == 0 || !super::movable(&e) {
            constant.push(e);
            continue;
        }
        if mask.count_ones() == 1 {
            let r = mask.trailing_zeros() as usize;
            let over = super::unshift(&e, starts[r]);
            rows1[r] *= cardinality::selectivity(&over, &rels[r], stats);
            local[r].push(e);
            continue;
        }
        let sel = join_selectivity(&e, &rels, &starts, &base, rel_of, stats);
        let equi = mask.count_ones() == 2
            && matches!(&e.kind, ExprKind::Compare { op: CmpOp::Eq, left, right }
                if !columns_of(left).is_empty() && !columns_of(right).is_empty());
        conds.push(Cond { expr: e, rels: mask, sel, equi });
    }
    let rows1: Vec<f64> = rows1.into_iter().map(|r| r.max(1.0)).collect();

    let order = if n <= DP_LIMIT {
        dynamic(n, &rows1, &conds)
    } else {
        greedy(n, &rows1, &conds)
    };
    let full = ((1 as RelSet) << n) - 1;

    // The relations in the new tree's order, and old column → new column.
    let mut leaves = Vec::with_capacity(n);
    leaf_order(full, &order, &mut leaves);
    let width = |r: usize| if r + 1 < n { starts[r + 1] - starts[r] } else { off - starts[r] };
    let mut map = vec![0usize; off];
    // Where each relation's columns begin in the new layout (for a relation without
    // columns, where they would: `map` has no entry for it).
    let mut new_starts = vec![0usize; n];
    let mut pos = 0;
    for &r in &leaves {
        new_starts[r] = pos;
        for k in 0..width(r) {
            map[starts[r] + k] = pos;
            pos += 1;
        }
    }
    let mut b = Builder {
        order: &order,
        slots: rels.into_iter().map(Some).collect(),
        conds: conds.into_iter().map(|c| (c.rels, Some(c.expr))).collect(),
        local,
        starts: &starts,
        new_starts: &new_starts,
        map: &map,
    };
    let tree = b.build(full);
    let mut rest = constant;
    rest.extend(b.conds.into_iter().filter_map(|(_, e)| e));
    for e in &mut rest {
        remap(e, &map);
    }
    let tree = filter(tree, rest);
    let tree = if map.iter().enumerate().all(|(i, &m)| i == m) {
        tree
    } else {
        let exprs = (0..off).map(|old| Expr::column(map[old], schema[old].ty)).collect();
        Plan::new(Node::Project { input: Box::new(tree), exprs }, schema)
    };
    with_rows(tree, stats)
}

/// `plan` with its estimated rows noted, so the join tree around it (an enclosing
/// query's join order) reads them instead of estimating the subtree again: without
/// this, nested join trees cost time quadratic in their depth. The physical pass
/// sets every node's final estimates.
fn with_rows(mut plan: Plan, stats: &dyn Stats) -> Plan {
    let rows = cardinality::rows(&plan, stats);
    plan.est = Some(crate::plan::Estimate { rows, cost: 0.0 });
    plan
}

/// The relations of `set` in the order the tree lists them.
fn leaf_order(set: RelSet, order: &HashMap<RelSet, Best>, out: &mut Vec<usize>) {
    if set.count_ones() == 1 {
        out.push(set.trailing_zeros() as usize);
        return;
    }
    let b = order[&set];
    leaf_order(b.left, order, out);
    leaf_order(b.right, order, out);
}

/// Builds the join tree of the chosen splits.
struct Builder<'a> {
    order: &'a HashMap<RelSet, Best>,
    slots: Vec<Option<Plan>>,
    /// Cross-relation conditions (original layout), taken when placed.
    conds: Vec<(RelSet, Option<Expr>)>,
    /// Each relation's own conditions (original layout).
    local: Vec<Vec<Expr>>,
    starts: &'a [usize],
    new_starts: &'a [usize],
    map: &'a [usize],
}

impl Builder<'_> {
    /// The first new column of `set`'s subtree (its columns are contiguous; a
    /// relation without columns, `SELECT FROM t`, starts where the next one does).
    fn offset(&self, set: RelSet) -> usize {
        let mut first = Vec::new();
        leaf_order(set, self.order, &mut first);
        self.new_starts[first[0]]
    }

    fn build(&mut self, set: RelSet) -> Plan {
        if set.count_ones() == 1 {
            let r = set.trailing_zeros() as usize;
            let plan = self.slots[r].take().expect("each relation once");
            let own: Vec<Expr> = std::mem::take(&mut self.local[r])
                .into_iter()
                .map(|e| super::unshift(&e, self.starts[r]))
                .collect();
            return filter(plan, own);
        }
        let best = self.order[&set];
        let left = self.build(best.left);
        let right = self.build(best.right);
        let base = self.offset(set);
        let mut on = Vec::new();
        for (mask, e) in &mut self.conds {
            if *mask & !set == 0 && e.is_some() {
                let mut e = e.take().expect("checked");
                remap(&mut e, self.map);
                on.push(super::unshift(&e, base));
            }
        }
        Plan::inner_join(left, right, and_all(on))
    }
}

/// The relations joined in FROM order.
fn left_deep(rels: Vec<Plan>) -> Plan {
    let mut it = rels.into_iter();
    let mut tree = it.next().expect("a relation");
    for right in it {
        tree = Plan::cross_join(tree, right);
    }
    tree
}

/// The selectivity of a condition across relations: an equality of two columns as a
/// key join ([`cardinality::distinct`]), anything else the default.
fn join_selectivity(
    e: &Expr,
    rels: &[Plan],
    starts: &[usize],
    base: &[f64],
    rel_of: impl Fn(usize) -> usize,
    stats: &dyn Stats,
) -> f64 {
    if let ExprKind::Compare { op: CmpOp::Eq, left, right } = &e.kind
        && let (ExprKind::Column(a), ExprKind::Column(b)) = (&left.kind, &right.kind)
    {
        let (ra, rb) = (rel_of(*a), rel_of(*b));
        let na = cardinality::distinct(&rels[ra], a - starts[ra], base[ra], stats);
        let nb = cardinality::distinct(&rels[rb], b - starts[rb], base[rb], stats);
        return 1.0 / na.min(nb).max(1.0);
    }
    if matches!(&e.kind, ExprKind::Compare { op: CmpOp::Eq, .. }) {
        return cardinality::EQ_SEL;
    }
    cardinality::OTHER_SEL
}

/// The estimated rows of joining the relations of `set`.
fn set_rows(set: RelSet, rows1: &[f64], conds: &[Cond]) -> f64 {
    let mut r: f64 = (0..rows1.len()).filter(|&i| set & (1 << i) != 0).map(|i| rows1[i]).product();
    // Several conditions between the same relations: the most selective counts
    // (composite keys are correlated).
    let mut seen: Vec<(RelSet, f64)> = Vec::new();
    for c in conds.iter().filter(|c| c.rels & !set == 0) {
        match seen.iter_mut().find(|(m, _)| *m == c.rels) {
            Some((_, s)) => *s = s.min(c.sel),
            None => seen.push((c.rels, c.sel)),
        }
    }
    for (_, s) in seen {
        r *= s;
    }
    r.max(1.0)
}

/// Whether an equality joins `a` and `b` (so their join can hash).
fn connected(a: RelSet, b: RelSet, conds: &[Cond]) -> bool {
    conds.iter().any(|c| c.equi && c.rels & !(a | b) == 0 && c.rels & a != 0 && c.rels & b != 0)
}

/// The cost of joining `a` and `b` (already costed) into `out` rows, smaller side
/// built.
fn join_cost(a: &Best, b: &Best, out: f64, keyed: bool) -> f64 {
    let (probe, build) = if a.rows >= b.rows { (a.rows, b.rows) } else { (b.rows, a.rows) };
    let own = if keyed { cost::hash_join(probe, build, out) } else { cost::nested_loop(probe, build, out) };
    a.cost + b.cost + own
}

/// The best split of every subset, by dynamic programming over subsets.
fn dynamic(n: usize, rows1: &[f64], conds: &[Cond]) -> HashMap<RelSet, Best> {
    let size = 1usize << n; // n <= DP_LIMIT
    let mut best: Vec<Option<Best>> = vec![None; size];
    for (i, &r) in rows1.iter().enumerate() {
        best[1 << i] = Some(Best { cost: 0.0, rows: r, left: 0, right: 0 });
    }
    let mut sets: Vec<RelSet> = (1..size as RelSet).filter(|s| s.count_ones() >= 2).collect();
    sets.sort_by_key(|s| s.count_ones());
    for set in sets {
        let rows = set_rows(set, rows1, conds);
        let mut found: Option<Best> = None;
        for pass_connected in [true, false] {
            let mut sub = (set - 1) & set;
            while sub > 0 {
                let other = set & !sub;
                // Each unordered split once.
                if sub > other {
                    if let (Some(a), Some(b)) = (best[sub as usize], best[other as usize]) {
                        let keyed = connected(sub, other, conds);
                        if keyed == pass_connected || !pass_connected {
                            let c = join_cost(&a, &b, rows, keyed);
                            if found.is_none_or(|f| c < f.cost) {
                                let (l, r) = if a.rows >= b.rows { (sub, other) } else { (other, sub) };
                                found = Some(Best { cost: c, rows, left: l, right: r });
                            }
                        }
                    }
                }
                sub = (sub - 1) & set;
            }
            if found.is_some() {
                break;
            }
        }
        best[set as usize] = found;
    }
    // The splits the best tree uses.
    let mut out = HashMap::new();
    let mut todo = vec![((1 as RelSet) << n) - 1];
    while let Some(set) = todo.pop() {
        let b = best[set as usize].expect("every subset has a plan");
        out.insert(set, b);
        if b.left != 0 {
            todo.push(b.left);
            todo.push(b.right);
        }
    }
    out
}

/// Greedy joining for many relations: repeatedly the pair of components (connected
/// ones first) whose join is cheapest. Each pair is costed once and again only when
/// one of its components changes, so the search costs O(n²) pair estimates.
fn greedy(n: usize, rows1: &[f64], conds: &[Cond]) -> HashMap<RelSet, Best> {
    let mut memo: HashMap<RelSet, Best> = HashMap::new();
    let mut comps: Vec<Option<RelSet>> = (0..n).map(|i| Some((1 as RelSet) << i)).collect();
    for (i, &r) in rows1.iter().enumerate() {
        memo.insert(1 << i, Best { cost: 0.0, rows: r, left: 0, right: 0 });
    }
    // (connected by an equality, cost) of joining components i < j.
    let price = |memo: &HashMap<RelSet, Best>, a: RelSet, b: RelSet| {
        let keyed = connected(a, b, conds);
        let rows = set_rows(a | b, rows1, conds);
        (keyed, join_cost(&memo[&a], &memo[&b], rows, keyed))
    };
    let mut pairs: Vec<Vec<(bool, f64)>> = vec![vec![(false, 0.0); n]; n];
    for i in 0..n {
        for j in i + 1..n {
            pairs[i][j] = price(&memo, 1 << i, 1 << j);
        }
    }
    for _ in 1..n {
        let mut pick: Option<(bool, f64, usize, usize)> = None;
        for i in 0..n {
            if comps[i].is_none() {
                continue;
            }
            for j in i + 1..n {
                if comps[j].is_none() {
                    continue;
                }
                let (keyed, c) = pairs[i][j];
                let better = match pick {
                    None => true,
                    Some((k, pc, _, _)) => (keyed && !k) || (keyed == k && c < pc),
                };
                if better {
                    pick = Some((keyed, c, i, j));
                }
            }
        }
        let (_, c, i, j) = pick.expect("two components");
        let (a, b) = (comps[i].expect("live"), comps[j].expect("live"));
        let set = a | b;
        let rows = set_rows(set, rows1, conds);
        let (l, r) = if memo[&a].rows >= memo[&b].rows { (a, b) } else { (b, a) };
        memo.insert(set, Best { cost: c, rows, left: l, right: r });
        comps[j] = None;
        comps[i] = Some(set);
        for k in (0..n).filter(|&k| k != i && comps[k].is_some()) {
            let (lo, hi) = if k < i { (k, i) } else { (i, k) };
            pairs[lo][hi] = price(&memo, comps[lo].expect("live"), comps[hi].expect("live"));
        }
    }
    memo
}
