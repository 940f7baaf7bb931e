//! Rule `optimizer_semi_pushdown`: a semi or anti join moves below the inner joins
//! (and the preserved side of left joins) of its left input, onto the input whose
//! columns it reads, when that is estimated to leave less work.
//!
//! A semi or anti join is a filter of its left rows by their columns, so it commutes
//! with joins that only pair those rows with others: `(A ⋈ B) ⋉ S` on A's columns is
//! `(A ⋉ S) ⋈ B`. Decorrelation puts it above the whole FROM clause; TPC-H Q18's
//! `o_orderkey IN (SELECT l_orderkey … HAVING sum(l_quantity) > 300)` (57 keys) then
//! filtered the 6M rows of `lineitem ⋈ orders ⋈ customer` after the joins had built
//! a hash table of all 1.5M orders. Below, it filters `orders` first and the joins
//! above see 57 orders.
//!
//! When: at each join it could pass, the semi join moves to the side X it reads if
//! the rows it is expected to let through there, `rows(X) × selectivity`, are fewer
//! than the rows the join produces (which it would probe above). So it stays
//! above joins that discard most of X's rows — TPC-H Q21's EXISTS over `lineitem`
//! stays above the join with one nation's suppliers, which keeps 1 row in 25.
//! Runs after filter pushdown (the join keys are known) and before the magic-set
//! rule, the access paths and the physical choices.

use super::{Stats, cardinality, deep, map_children, remap};
use crate::expr::Expr;
use crate::plan::{JoinKind, Node, Plan};

/// Applies the rule to every semi and anti join of `plan` (bottom-up).
pub fn push_semi_joins(plan: Plan, stats: &dyn Stats) -> Plan {
    let plan = map_children(plan, &mut |p| push_semi_joins(p, stats));
    let Plan { node, schema, est, workers } = plan;
    match node {
        Node::Join { left, right, kind: kind @ (JoinKind::Semi | JoinKind::Anti), on, left_keys, right_keys, method }
            if !left_keys.is_empty() && on.as_ref().is_none_or(super::movable) =>
        {
            let semi = Semi { right: *right, kind, on, left_keys, right_keys };
            match place(*left, semi, stats) {
                Ok(plan) => plan,
                Err((left, s)) => Plan {
                    node: Node::Join {
                        left: Box::new(left),
                        right: Box::new(s.right),
                        kind: s.kind,
                        on: s.on,
                        left_keys: s.left_keys,
                        right_keys: s.right_keys,
                        method,
                    },
                    schema,
                    est,
                    workers,
                },
            }
        }
        node => Plan { node, schema, est, workers },
    }
}

/// A semi or anti join without its left input: `left_keys` are over that input's
/// columns, `on` over them and then the right input's.
struct Semi {
    right: Plan,
    kind: JoinKind,
    on: Option<Expr>,
    left_keys: Vec<Expr>,
    right_keys: Vec<Expr>,
}

impl Semi {
    /// The left input's columns the join reads.
    fn left_columns(&self, nleft: usize) -> Vec<usize> {
        let mut cols = Vec::new();
        for k in &self.left_keys {
            k.columns_used(&mut cols);
        }
        if let Some(on) = &self.on {
            let mut both = Vec::new();
            on.columns_used(&mut both);
            cols.extend(both.into_iter().filter(|&c| c < nleft));
        }
        cols.sort_unstable();
        cols.dedup();
        cols
    }

    /// The join rewritten for a new left input of `new_nleft` columns, where old
    /// left column `c` is `map[c]` (only the columns it reads need an entry).
    fn remapped(mut self, map: &[usize], old_nleft: usize, new_nleft: usize) -> Semi {
        for k in &mut self.left_keys {
            remap(k, map);
        }
        if let Some(on) = &mut self.on {
            let nright = self.right.schema.len();
            let full: Vec<usize> = map.iter().copied().chain((0..nright).map(|r| new_nleft + r)).collect();
            debug_assert_eq!(full.len(), old_nleft + nright);
            remap(on, &full);
        }
        self
    }

    /// The share of `left`'s rows this join keeps: for a semi join, the distinct
    /// keys of the right input over those of the left (at most 1; the least over the
    /// key columns), as PostgreSQL's `eqjoinsel_semi` estimates it; an anti join
    /// keeps the rest (at least 5%). The residual condition is not counted.
    fn selectivity(&self, left: &Plan, stats: &dyn Stats) -> f64 {
        let (l, r) = (cardinality::rows(left, stats), cardinality::rows(&self.right, stats));
        let ndv = |p: &Plan, rows: f64, e: &Expr| match &e.kind {
            crate::expr::ExprKind::Column(c) => cardinality::distinct(p, *c, rows, stats),
            _ => rows.max(1.0),
        };
        let matched = self
            .left_keys
            .iter()
            .zip(&self.right_keys)
            .map(|(lk, rk)| (ndv(&self.right, r, rk) / ndv(left, l, lk)).min(1.0))
            .fold(1.0, f64::min);
        match self.kind {
            JoinKind::Anti => (1.0 - matched).max(0.05),
            _ => matched,
        }
    }

    fn over(self, left: Plan) -> Plan {
        let schema = left.schema.clone();
        Plan::new(
            Node::Join {
                left: Box::new(left),
                right: Box::new(self.right),
                kind: self.kind,
                on: self.on,
                left_keys: self.left_keys,
                right_keys: self.right_keys,
                method: crate::plan::JoinMethod::NestedLoop,
            },
            schema,
        )
    }
}

/// `semi` over `plan`, placed as deep as the rule allows; `Err` gives both back when
/// it stays directly over `plan`.
fn place(plan: Plan, semi: Semi, stats: &dyn Stats) -> Result<Plan, (Plan, Semi)> {
    let width = plan.schema.len();
    let cols = semi.left_columns(width);
    let Plan { node, schema, est, workers } = plan;
    match node {
        Node::Project { input, exprs } => {
            // Through a projection of plain columns (the order a join swap restores).
            let mut map = vec![usize::MAX; width];
            for &c in &cols {
                match exprs[c].kind {
                    crate::expr::ExprKind::Column(i) => map[c] = i,
                    _ => return Err((Plan { node: Node::Project { input, exprs }, schema, est, workers }, semi)),
                }
            }
            let semi = semi.remapped(&map, width, input.schema.len());
            let input = match deep(|| place(*input, semi, stats)) {
                Ok(p) => p,
                Err((input, semi)) => semi.over(input),
            };
            Ok(Plan { node: Node::Project { input: Box::new(input), exprs }, schema, est, workers })
        }
        Node::Join { left, right, kind, on, left_keys, right_keys, method }
            if matches!(kind, JoinKind::Inner | JoinKind::Left | JoinKind::Semi | JoinKind::Anti) =>
        {
            let nl = left.schema.len();
            let to_left = cols.iter().all(|&c| c < nl);
            let to_right = kind == JoinKind::Inner && cols.iter().all(|&c| c >= nl);
            if !to_left && !to_right {
                return Err((
                    Plan { node: Node::Join { left, right, kind, on, left_keys, right_keys, method }, schema, est, workers },
                    semi,
                ));
            }
            let (side, offset) = if to_left { (&*left, 0) } else { (&*right, nl) };
            let map: Vec<usize> = (0..width).map(|c| c.wrapping_sub(offset)).collect();
            let moved = semi.remapped(&map, width, side.schema.len());
            let here = Plan { node: Node::Join { left, right, kind, on, left_keys, right_keys, method }, schema, est, workers };
            let side_ref = if to_left { child(&here, 0) } else { child(&here, 1) };
            let through = cardinality::rows(side_ref, stats) * moved.selectivity(side_ref, stats);
            if through >= cardinality::rows(&here, stats) {
                // Undo the remapping: it stays above this join.
                let side_width = side_ref.schema.len();
                let back: Vec<usize> = (0..side_width).map(|c| c + offset).collect();
                return Err((here, moved.remapped(&back, side_width, width)));
            }
            let Plan { node: Node::Join { left, right, kind, on, left_keys, right_keys, method }, schema, est, workers } = here
            else {
                unreachable!("built as a join above")
            };
            let descend = |p: Plan, s: Semi| match deep(|| place(p, s, stats)) {
                Ok(p) => p,
                Err((p, s)) => s.over(p),
            };
            let (left, right) = if to_left {
                (Box::new(descend(*left, moved)), right)
            } else {
                (left, Box::new(descend(*right, moved)))
            };
            Ok(Plan { node: Node::Join { left, right, kind, on, left_keys, right_keys, method }, schema, est, workers })
        }
        node => Err((Plan { node, schema, est, workers }, semi)),
    }
}

fn child(plan: &Plan, i: usize) -> &Plan {
    plan.children()[i]
}
