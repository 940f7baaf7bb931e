//! Rule: filter pushdown (`optimizer_filter_pushdown`). A filter's conjuncts move
//! below joins to the side they read — for outer joins only to the side whose rows
//! they merely filter — and below projections of plain columns, into table scans.
//! Equalities between the two sides of a join become its hash keys whether or not
//! the rule is on (the keys are what makes a hash join possible at all). A
//! disjunction across an inner join's sides also filters each side by what it implies
//! there ([`implied_by_branches`]). A conjunct over an aggregate's group keys goes
//! below the aggregate, and a conjunct over a set operation into both of its arms,
//! when it is deterministic ([`pure`]) and, where equal values are merged (grouping,
//! UNION, INTERSECT, EXCEPT), reads only columns whose equal values are identical
//! ([`sees_only_what_equality_sees`]): so a plan does not depend on whether the filter
//! was written inside or outside a grouped or UNIONed subquery.

use super::{and_all, columns_of, conjuncts, deep, filter, map_children, movable, unshift};
use crate::binder::query_util::for_each_child_mut;
use crate::expr::{CmpOp, Expr, ExprKind};
use crate::plan::{JoinKind, Node, Plan};

/// Pushes every filter as far down as it goes (`push` on), or only turns join
/// equalities into keys (`push` off).
pub fn push_filters(plan: Plan, push: bool) -> Plan {
    if push {
        push_into(plan, Vec::new())
    } else {
        keys_only(plan)
    }
}

/// Join equalities become keys; nothing moves.
fn keys_only(plan: Plan) -> Plan {
    let plan = map_children(plan, &mut keys_only);
    let Plan { node, schema, est, workers } = plan;
    match node {
        Node::Join { left, right, kind, on, mut left_keys, mut right_keys, method } => {
            let nleft = left.schema.len();
            let mut residual = Vec::new();
            if let Some(on) = on {
                let mut parts = Vec::new();
                conjuncts(on, &mut parts);
                for p in parts {
                    match key_pair(&p, nleft) {
                        Some((l, r)) => {
                            left_keys.push(l);
                            right_keys.push(r);
                        }
                        None => residual.push(p),
                    }
                }
            }
            Plan {
                node: Node::Join { left, right, kind, on: and_all(residual), left_keys, right_keys, method },
                schema,
                est,
                workers,
            }
        }
        node => Plan { node, schema, est, workers },
    }
}

/// Transitive comparisons across a join's keys (see [`implied_comparisons`]). Sides:
/// an inner join both ways; a semi join both ways (a left row can only match a
/// right row that passes); an anti or mark join and a left join from the left input
/// to the right only (the left rows all stay, but right rows that cannot match any of
/// them are not needed); a right join the mirror; a full join neither.
fn transfer_across_keys(kind: JoinKind, left_keys: &[Expr], right_keys: &[Expr], nleft: usize, to_left: &mut Vec<Expr>, to_right: &mut Vec<Expr>) {
    let (left_to_right, right_to_left) = match kind {
        JoinKind::Inner | JoinKind::Semi => (true, true),
        JoinKind::Left | JoinKind::Anti | JoinKind::Mark => (true, false),
        JoinKind::Right => (false, true),
        JoinKind::Full => (false, false),
    };
    // Over the join's columns: the left input's, then the right's.
    let equal: Vec<(usize, usize)> = left_keys
        .iter()
        .zip(right_keys)
        .filter_map(|(l, r)| match (&l.kind, &r.kind) {
            (ExprKind::Column(a), ExprKind::Column(b)) if l.ty == r.ty => Some((*a, nleft + *b)),
            _ => None,
        })
        .collect();
    if equal.is_empty() {
        return;
    }
    let mut preds = to_left.clone();
    preds.extend(to_right.iter().map(|p| crate::binder::query_util::shift_columns(p, nleft)));
    let accept = |from: usize, to: usize| {
        (left_to_right && from < nleft && to >= nleft) || (right_to_left && from >= nleft && to < nleft)
    };
    for q in implied_comparisons(&preds, &equal, accept) {
        match columns_of(&q)[..] {
            [c] if c < nleft => to_left.push(q),
            _ => to_right.push(unshift(&q, nleft)),
        }
    }
}

/// Transitive comparisons, as SQLite's "transitive constraints": columns known equal
/// (`equal`, pairs of plain columns of one type, so equal values compare alike) share
/// every comparison with a constant that one of them has — `a.x = b.y AND b.y <
/// 100000` implies `a.x < 100000`, so Wisconsin's join reads both tables through
/// their index range instead of one of them whole. Returns, for each `c op k` in
/// `preds` (`k` a deterministic non-NULL constant) and each column `d` equal to `c`
/// (through any chain of `equal`) with `accept(c, d)`, the conjunct `d op k` when
/// `preds` does not already hold it. Each derived conjunct restates what the join
/// already guarantees, so estimates see a smaller input, not a new condition (a
/// join's estimate clamps distinct counts to its filtered inputs).
pub(super) fn implied_comparisons(preds: &[Expr], equal: &[(usize, usize)], accept: impl Fn(usize, usize) -> bool) -> Vec<Expr> {
    // Equivalence classes by repeated merging (a handful of keys per query).
    let mut classes: Vec<Vec<usize>> = Vec::new();
    for &(a, b) in equal {
        let ia = classes.iter().position(|c| c.contains(&a));
        let ib = classes.iter().position(|c| c.contains(&b));
        match (ia, ib) {
            (Some(i), Some(j)) if i == j => {}
            (Some(i), Some(j)) => {
                let moved = classes.remove(i.max(j));
                classes[i.min(j)].extend(moved);
            }
            (Some(i), None) => classes[i].push(b),
            (None, Some(j)) => classes[j].push(a),
            (None, None) => classes.push(vec![a, b]),
        }
    }
    let mut derived: Vec<Expr> = Vec::new();
    for p in preds {
        let Some((col, column_left)) = column_compared_with_constant(p) else { continue };
        let Some(class) = classes.iter().find(|c| c.contains(&col)) else { continue };
        for &other in class {
            if other == col || !accept(col, other) {
                continue;
            }
            let ExprKind::Compare { op, left, right } = &p.kind else { continue };
            let q = if column_left {
                Expr::new(ExprKind::Compare { op: *op, left: Box::new(Expr::column(other, left.ty)), right: right.clone() }, p.ty)
            } else {
                Expr::new(ExprKind::Compare { op: *op, left: left.clone(), right: Box::new(Expr::column(other, right.ty)) }, p.ty)
            };
            if !preds.contains(&q) && !derived.contains(&q) {
                derived.push(q);
            }
        }
    }
    derived
}

/// `column op constant` (either way round; `op` a comparison): the column, and
/// whether it is the left operand.
fn column_compared_with_constant(p: &Expr) -> Option<(usize, bool)> {
    let ExprKind::Compare { left, right, .. } = &p.kind else { return None };
    let constant = |e: &Expr| e.is_constant() && pure(e) && !matches!(e.kind, ExprKind::Literal(ref v) if v.is_null());
    match (&left.kind, &right.kind) {
        (ExprKind::Column(c), _) if constant(right) => Some((*c, true)),
        (_, ExprKind::Column(c)) if constant(left) => Some((*c, false)),
        _ => None,
    }
}

/// `p` as a (left key, right key) pair when it is a movable equality between an
/// expression of the left input and one of the right input.
fn key_pair(p: &Expr, nleft: usize) -> Option<(Expr, Expr)> {
    if !movable(p) {
        return None;
    }
    let ExprKind::Compare { op: CmpOp::Eq, left: a, right: b } = &p.kind else {
        return None;
    };
    let ca = columns_of(a);
    let cb = columns_of(b);
    let a_left = !ca.is_empty() && ca.iter().all(|&c| c < nleft);
    let a_right = !ca.is_empty() && ca.iter().all(|&c| c >= nleft);
    let b_left = !cb.is_empty() && cb.iter().all(|&c| c < nleft);
    let b_right = !cb.is_empty() && cb.iter().all(|&c| c >= nleft);
    if a_left && b_right {
        return Some(((**a).clone(), unshift(b, nleft)));
    }
    if a_right && b_left {
        return Some(((**b).clone(), unshift(a, nleft)));
    }
    None
}

/// Pushes `preds` (over `plan`'s output) as far down as they go.
fn push_into(plan: Plan, preds: Vec<Expr>) -> Plan {
    let Plan { node, schema, .. } = plan;
    match node {
        Node::Filter { input, predicate } => {
            let mut all = preds;
            conjuncts(predicate, &mut all);
            deep(|| push_into(*input, all))
        }
        Node::TableScan {
            table,
            columns,
            filter: f,
            access,
            with_tid,
            bees,
        } => {
            let mut all = Vec::new();
            if let Some(f) = f {
                conjuncts(f, &mut all);
            }
            all.extend(preds);
            // Conjuncts a scan bee can evaluate first, with bees on or off, so both
            // paths evaluate the same conjuncts on the same rows.
            crate::bees::translate::order_conjuncts(&mut all, &table, &columns);
            Plan::new(
                Node::TableScan {
                    table,
                    columns,
                    filter: and_all(all),
                    access,
                    with_tid,
                    bees,
                },
                schema,
            )
        }
        Node::Join {
            left,
            right,
            kind,
            on,
            mut left_keys,
            mut right_keys,
            method,
        } => {
            let nleft = left.schema.len();
            let mut to_left = Vec::new();
            let mut to_right = Vec::new();
            let mut keep = Vec::new();
            let mut on_parts = Vec::new();
            if let Some(on) = on {
                conjuncts(on, &mut on_parts);
            }
            // WHERE conjuncts: below an inner join they may go anywhere; below an
            // outer join only to the preserved side.
            for p in preds {
                let cols = columns_of(&p);
                let left_only = cols.iter().all(|&c| c < nleft);
                let right_only = cols.iter().all(|&c| c >= nleft);
                let mov = movable(&p) && !cols.is_empty();
                match kind {
                    JoinKind::Inner if mov && left_only => to_left.push(p),
                    JoinKind::Inner if mov && right_only => to_right.push(unshift(&p, nleft)),
                    JoinKind::Inner if mov => on_parts.push(p),
                    JoinKind::Left | JoinKind::Semi | JoinKind::Anti | JoinKind::Mark if mov && left_only => to_left.push(p),
                    JoinKind::Right if mov && right_only => to_right.push(unshift(&p, nleft)),
                    _ => keep.push(p),
                }
            }
            // ON conjuncts: equalities across the sides become keys; one-sided ones
            // go to the side whose rows they only filter (never the preserved side).
            let mut residual = Vec::new();
            for p in on_parts {
                let cols = columns_of(&p);
                let left_only = !cols.is_empty() && cols.iter().all(|&c| c < nleft);
                let right_only = !cols.is_empty() && cols.iter().all(|&c| c >= nleft);
                if let Some((l, r)) = key_pair(&p, nleft) {
                    left_keys.push(l);
                    right_keys.push(r);
                    continue;
                }
                if movable(&p) {
                    match kind {
                        JoinKind::Inner | JoinKind::Semi | JoinKind::Anti | JoinKind::Mark if right_only => {
                            to_right.push(unshift(&p, nleft));
                            continue;
                        }
                        JoinKind::Left if right_only => {
                            to_right.push(unshift(&p, nleft));
                            continue;
                        }
                        JoinKind::Inner if left_only => {
                            to_left.push(p);
                            continue;
                        }
                        JoinKind::Right if left_only => {
                            to_left.push(p);
                            continue;
                        }
                        _ => {}
                    }
                }
                if kind == JoinKind::Inner {
                    // (a1 AND b1) OR (a2 AND b2) with a1, a2 over the left input only:
                    // `a1 OR a2` holds for every joined row, so it can filter the left
                    // input early (TPC-H Q7's nation pairs). The condition stays here.
                    if let Some(l) = implied_by_branches(&p, |c| c < nleft) {
                        to_left.push(l);
                    }
                    if let Some(r) = implied_by_branches(&p, |c| c >= nleft) {
                        to_right.push(unshift(&r, nleft));
                    }
                }
                residual.push(p);
            }
            transfer_across_keys(kind, &left_keys, &right_keys, nleft, &mut to_left, &mut to_right);
            let left = deep(|| push_into(*left, to_left));
            let right = deep(|| push_into(*right, to_right));
            let join = Plan::new(
                Node::Join {
                    left: Box::new(left),
                    right: Box::new(right),
                    kind,
                    on: and_all(residual),
                    left_keys,
                    right_keys,
                    method,
                },
                schema,
            );
            filter(join, keep)
        }
        Node::Project { input, exprs } => {
            // A conjunct over plain column outputs can go below the projection.
            let mut below = Vec::new();
            let mut keep = Vec::new();
            for p in preds {
                match substitute(&p, &exprs) {
                    Some(q) if movable(&p) => below.push(q),
                    _ => keep.push(p),
                }
            }
            let input = deep(|| push_into(*input, below));
            filter(
                Plan::new(
                    Node::Project {
                        input: Box::new(input),
                        exprs,
                    },
                    schema,
                ),
                keep,
            )
        }
        Node::Aggregate { input, groups, sets, aggs, bee } => {
            // A conjunct over group keys only (a HAVING on them, or a WHERE over a
            // grouped subquery) keeps or drops whole groups, and so the same rows
            // below the aggregate: it goes there, on the group expressions. Not with
            // grouping sets (a key is NULL in the sets that leave it out), nor
            // without GROUP BY (an empty input still makes its one row).
            let mut below = Vec::new();
            let mut keep = Vec::new();
            for p in preds {
                let safe = sets.is_empty() && !groups.is_empty() && pure(&p) && sees_only_what_equality_sees(&p, &schema);
                match safe.then(|| substitute_with(&p, &groups, |_| true)).flatten().filter(pure) {
                    Some(q) => below.push(q),
                    None => keep.push(p),
                }
            }
            let input = deep(|| push_into(*input, below));
            let node = Node::Aggregate { input: Box::new(input), groups, sets, aggs, bee };
            filter(Plan::new(node, schema), keep)
        }
        Node::SetOp { op, all, left, right } => {
            // Every set operation keeps or drops rows by their values, so a
            // deterministic conjunct filters both inputs alike: into each arm, on the
            // arm's own column (the binder cast both arms to the output's types).
            let mut into = Vec::new();
            let mut keep = Vec::new();
            let same_types = |arm: &Plan| arm.schema.iter().zip(&schema).all(|(a, o)| a.ty == o.ty);
            let arms_ok = same_types(&left) && same_types(&right);
            let dedupes = !(matches!(op, crate::plan::SetOpKind::Union) && all);
            for p in preds {
                if arms_ok && pure(&p) && (!dedupes || sees_only_what_equality_sees(&p, &schema)) {
                    into.push(p)
                } else {
                    keep.push(p)
                }
            }
            let left = deep(|| push_into(*left, into.clone()));
            let right = deep(|| push_into(*right, into));
            filter(Plan::new(Node::SetOp { op, all, left: Box::new(left), right: Box::new(right) }, schema), keep)
        }
        other => {
            let plan = Plan::new(other, schema);
            let plan = map_children(plan, &mut |p| push_into(p, Vec::new()));
            filter(plan, preds)
        }
    }
}

/// Whether every column conjunct `p` reads (of `schema`) has a type whose equal
/// values look the same to any expression. Grouping, DISTINCT-style set operations
/// and EXCEPT/INTERSECT keep one of several equal values (`1.0` and `1.00` of an
/// unconstrained numeric, `0.0` and `-0.0`): a conjunct that can tell them apart
/// (`x::text = '1.00'`) would choose differently below them than above.
fn sees_only_what_equality_sees(p: &Expr, schema: &crate::plan::Schema) -> bool {
    super::columns_of(p).iter().all(|&i| schema.get(i).is_some_and(|c| equal_values_look_alike(c.ty)))
}

/// Whether two equal values of type `ty` look the same to every expression (not so
/// for an unconstrained numeric's `1.0` and `1.00`, a float's `0.0` and `-0.0`, char
/// padding or intervals): only then may one of several equal values stand for all.
pub(crate) fn equal_values_look_alike(ty: crate::types::DataType) -> bool {
    use crate::types::DataType as T;
    matches!(
        ty,
        T::Boolean | T::SmallInt | T::Integer | T::BigInt | T::Text | T::Varchar(_) | T::Date | T::Timestamp
            | T::Decimal { precision: Some(_), .. }
    )
}

/// Whether conjunct `p` gives the same answer wherever it is evaluated, once per
/// row: no subquery, sequence or application function.
fn pure(p: &Expr) -> bool {
    movable(p) && !crate::binder::expr_is_volatile(p)
}

/// For a disjunction whose every branch has conjuncts reading only columns `on_side`
/// accepts, the disjunction of those conjuncts (per branch, ANDed): a predicate every
/// row satisfying `p` satisfies, over that side alone. `None` when `p` is not a
/// disjunction or a branch has no such conjunct.
fn implied_by_branches(p: &Expr, on_side: impl Fn(usize) -> bool) -> Option<Expr> {
    let ExprKind::Or(branches) = &p.kind else { return None };
    let mut implied = Vec::with_capacity(branches.len());
    for b in branches {
        let parts: Vec<&Expr> = match &b.kind {
            ExprKind::And(items) => items.iter().collect(),
            _ => vec![b],
        };
        let side: Vec<Expr> = parts
            .into_iter()
            .filter(|c| {
                let cols = columns_of(c);
                !cols.is_empty() && cols.iter().all(|&i| on_side(i)) && movable(c)
            })
            .cloned()
            .collect();
        implied.push(and_all(side)?);
    }
    Some(Expr::new(ExprKind::Or(implied), p.ty))
}

/// `p` rewritten over a projection's input, when every column it reads is a plain
/// column or constant of the projection.
fn substitute(p: &Expr, exprs: &[Expr]) -> Option<Expr> {
    substitute_with(p, exprs, |x| matches!(x.kind, ExprKind::Column(_) | ExprKind::Literal(_)))
}

/// `p` with each column `i` it reads replaced by `exprs[i]`, when every column it
/// reads is within `exprs` and `accept`ed.
fn substitute_with(p: &Expr, exprs: &[Expr], accept: impl Fn(&Expr) -> bool) -> Option<Expr> {
    let mut ok = true;
    let mut q = p.clone();
    fn go(e: &mut Expr, exprs: &[Expr], accept: &dyn Fn(&Expr) -> bool, ok: &mut bool) {
        if let ExprKind::Column(i) = e.kind {
            match exprs.get(i) {
                Some(x) if accept(x) => *e = x.clone(),
                _ => *ok = false,
            }
            return;
        }
        for_each_child_mut(e, &mut |c| deep(|| go(c, exprs, accept, ok)));
    }
    go(&mut q, exprs, &accept, &mut ok);
    ok.then_some(q)
}


