//! Rule `optimizer_reduce_outer_joins`: an outer join whose NULL-extended rows a
//! condition above it rejects is the inner join (or, for a full join, the one-sided
//! outer join) it gives the same rows as — PostgreSQL's `reduce_outer_joins`.
//!
//! `a LEFT JOIN b ON a.x = b.y WHERE b.z < 10`: a row of `a` without a match gets
//! NULL for `b.z`, `NULL < 10` is not true, so the WHERE drops every such row and
//! the left join returns exactly what the inner join returns. As an inner join it
//! joins the others in the join order search (its inputs may swap or move), and
//! pushdown may send `b.z < 10` into `b`'s scan, which below a left join it may not.
//! The same holds for the left joins decorrelation makes: TPC-H Q17's
//! `l_quantity < (SELECT 0.2 * avg(…) …)` becomes a left join with the per-key
//! averages, and the comparison rejects its unmatched rows.
//!
//! Which conditions count: those that cannot be true when a column of the nullable
//! side is NULL ([`null_rejected`]): a comparison, LIKE, IN or arithmetic over that
//! column, `IS NOT NULL`, `IS TRUE`, `IS FALSE`, an AND with such a conjunct, an OR
//! whose every branch is one. Not `IS NULL`, `IS DISTINCT FROM`, COALESCE, CASE or
//! function calls (a function may turn NULL into a value). They come from a filter
//! above the join, the ON condition of an inner join above it, or the ON condition
//! of an outer or semi join whose matched side the join is on, reaching down through
//! projections of plain or strict expressions, sorts, and the side of a join whose
//! rows pass through unchanged. The rule never changes which rows a query returns.

use super::deep;
use crate::expr::{Expr, ExprKind};
use crate::plan::{JoinKind, Node, Plan};

/// Applies the rule to the whole plan (run before join ordering, so the inner joins
/// it makes are reordered with the others).
pub fn reduce_outer_joins(plan: Plan) -> Plan {
    reduce(plan, &[])
}

/// `plan` with its outer joins reduced, given the output columns of `plan` that a
/// condition above rejects when NULL (`nonnull`).
fn reduce(plan: Plan, nonnull: &[usize]) -> Plan {
    let Plan { node, schema, est, workers } = plan;
    let node = match node {
        Node::Filter { input, predicate } => {
            let below = set(nonnull.iter().copied().chain(null_rejected(&predicate)).collect());
            Node::Filter { input: Box::new(deep(|| reduce(*input, &below))), predicate }
        }
        Node::Join { left, right, kind, on, left_keys, right_keys, method } => {
            let nleft = left.schema.len();
            let on_left_only = kind.is_left_only();
            let on_rejects = on_rejected(on.as_ref(), &left_keys, &right_keys, nleft);
            // Columns of the join's output that must not be NULL (the left-only joins'
            // outputs are the left columns, and a mark join's one more is never NULL).
            let left_needed = nonnull.iter().any(|&c| c < nleft);
            let right_needed = !on_left_only && nonnull.iter().any(|&c| c >= nleft);
            let kind = match kind {
                JoinKind::Left if right_needed => JoinKind::Inner,
                JoinKind::Right if left_needed => JoinKind::Inner,
                JoinKind::Full if left_needed && right_needed => JoinKind::Inner,
                JoinKind::Full if left_needed => JoinKind::Left,
                JoinKind::Full if right_needed => JoinKind::Right,
                k => k,
            };
            let from_above_left: Vec<usize> = nonnull.iter().copied().filter(|&c| c < nleft).collect();
            let from_above_right: Vec<usize> = if on_left_only {
                Vec::new()
            } else {
                nonnull.iter().filter(|&&c| c >= nleft).map(|&c| c - nleft).collect()
            };
            let on_left: Vec<usize> = on_rejects.iter().copied().filter(|&c| c < nleft).collect();
            let on_right: Vec<usize> = on_rejects.iter().filter(|&&c| c >= nleft).map(|&c| c - nleft).collect();
            // What reaches each input: a side whose rows pass through the join (its
            // preserved side, or either side of an inner join) gets the conditions
            // above on its columns; a side whose rows count only when they match gets
            // the join's own ON condition on its columns (a row the ON condition
            // rejects never matches, so reducing the joins that made it loses nothing).
            // A mark join's right side gets nothing: a NULL key there decides whether
            // the mark is false or NULL. An anti join's right side neither: its rows
            // are never output, and some anti joins are NOT IN's, where they count.
            let (to_left, to_right) = match kind {
                JoinKind::Inner => (set([from_above_left, on_left].concat()), set([from_above_right, on_right].concat())),
                JoinKind::Left => (from_above_left, on_right),
                JoinKind::Right => (on_left, from_above_right),
                JoinKind::Full => (Vec::new(), Vec::new()),
                JoinKind::Semi => (from_above_left, on_right),
                JoinKind::Anti | JoinKind::Mark => (from_above_left, Vec::new()),
            };
            Node::Join {
                left: Box::new(deep(|| reduce(*left, &to_left))),
                right: Box::new(deep(|| reduce(*right, &to_right))),
                kind,
                on,
                left_keys,
                right_keys,
                method,
            }
        }
        Node::Project { input, exprs } => {
            // An output column computed by a strict expression is NULL when any of
            // its inputs is: rejecting the output rejects those inputs.
            let below = set(nonnull.iter().filter_map(|&c| exprs.get(c)).flat_map(strict_columns).collect());
            Node::Project { input: Box::new(deep(|| reduce(*input, &below))), exprs }
        }
        Node::Sort { input, keys, bee } => Node::Sort { input: Box::new(deep(|| reduce(*input, nonnull))), keys, bee },
        // Anything else (an aggregate, a limit, a set operation…) does not pass its
        // rows through one for one: its inputs are reduced on their own.
        node => super::map_node_children(node, &mut |p| reduce(p, &[])),
    };
    Plan { node, schema, est, workers }
}

/// The join's columns (left then right) that its ON condition and keys reject when
/// NULL: such a row of either input never matches.
fn on_rejected(on: Option<&Expr>, left_keys: &[Expr], right_keys: &[Expr], nleft: usize) -> Vec<usize> {
    let mut out = on.map(null_rejected).unwrap_or_default();
    // Hash keys compare with `=`: a NULL key matches nothing.
    out.extend(left_keys.iter().flat_map(strict_columns));
    out.extend(right_keys.iter().flat_map(strict_columns).map(|c| c + nleft));
    set(out)
}

/// The columns of which any one being NULL makes the predicate `p` not true (NULL or
/// false), found conservatively from its shape (sorted, without repeats).
pub(crate) fn null_rejected(p: &Expr) -> Vec<usize> {
    match &p.kind {
        ExprKind::And(items) => set(items.iter().flat_map(|i| deep(|| null_rejected(i))).collect()),
        ExprKind::Or(branches) => {
            // Rejected only when every branch rejects it.
            let mut sets = branches.iter().map(|b| deep(|| null_rejected(b)));
            let Some(first) = sets.next() else { return Vec::new() };
            sets.fold(first, |acc, s| acc.into_iter().filter(|c| s.binary_search(c).is_ok()).collect())
        }
        // NOT p is NULL when p is NULL (not when p is false).
        ExprKind::Not(inner) => strict_columns(inner),
        ExprKind::IsNull { expr, negated: true } => strict_columns(expr),
        // `x IS TRUE` and `x IS FALSE` are false for a NULL x; their negations true.
        ExprKind::IsBool { expr, negated: false, .. } => strict_columns(expr),
        _ => strict_columns(p),
    }
}

/// The columns of which any one being NULL makes `e` NULL: `e` is built only of
/// operators that return NULL for a NULL operand (sorted, without repeats).
pub(crate) fn strict_columns(e: &Expr) -> Vec<usize> {
    let mut out = Vec::new();
    let mut add = |x: &Expr| out.extend(deep(|| strict_columns(x)));
    match &e.kind {
        ExprKind::Column(c) => return vec![*c],
        ExprKind::Cast { expr, .. } | ExprKind::Neg(expr) | ExprKind::Not(expr) | ExprKind::Extract { expr, .. } => add(expr),
        ExprKind::Arith { left, right, .. } | ExprKind::Compare { left, right, .. } => {
            add(left);
            add(right);
        }
        // `x IN (…)` is NULL for a NULL x whatever the list holds.
        ExprKind::InList { expr, .. } => add(expr),
        ExprKind::Like { expr, pattern, .. } => {
            add(expr);
            add(pattern);
        }
        // A CASE each of whose results is NULL when the column is (or is always
        // NULL) is NULL then, whichever branch is taken: decorrelation writes
        // `CASE WHEN key IS NULL THEN <the subquery's value over no rows> ELSE value
        // END`, and for `avg(…) * 0.2` that value over no rows is NULL.
        ExprKind::Case { whens, else_ } => {
            let arms = whens.iter().map(|(_, then)| then).chain(else_.as_deref());
            let mut common: Option<Vec<usize>> = None;
            for arm in arms.filter(|a| !always_null(a)) {
                let cols = deep(|| strict_columns(arm));
                common = Some(match common {
                    None => cols,
                    Some(acc) => acc.into_iter().filter(|c| cols.binary_search(c).is_ok()).collect(),
                });
            }
            return common.unwrap_or_default();
        }
        // Literals, parameters, and everything that may turn a NULL into a value:
        // IS [NOT] NULL / TRUE, IS DISTINCT FROM, AND, OR, COALESCE, function calls,
        // subqueries.
        _ => {}
    }
    set(out)
}

/// Whether `e` is NULL whatever its inputs: a NULL literal, or an operator that is
/// NULL for a NULL operand applied to one.
fn always_null(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Literal(crate::types::Value::Null) => true,
        ExprKind::Cast { expr, .. } | ExprKind::Neg(expr) | ExprKind::Extract { expr, .. } => deep(|| always_null(expr)),
        ExprKind::Arith { left, right, .. } | ExprKind::Compare { left, right, .. } => {
            deep(|| always_null(left)) || deep(|| always_null(right))
        }
        _ => false,
    }
}

/// `v` sorted, without repeats.
fn set(mut v: Vec<usize>) -> Vec<usize> {
    v.sort_unstable();
    v.dedup();
    v
}
