//! Subquery decorrelation: subqueries in WHERE and in the select list become joins, so
//! they run once as part of the plan instead of once per distinct outer value.
//!
//! Rewrites (each exact, for a conjunct of a filter):
//! - `EXISTS (q)` → semi join; `NOT EXISTS (q)` → anti join. A `LIMIT n` (n ≥ 1,
//!   no OFFSET), `ORDER BY`, `DISTINCT` or projection on top of `q` does not change
//!   whether a row exists and is dropped.
//! - `x IN (q)` → semi join on `x = q.col` (a NULL on either side never matches, which
//!   is what a filter needs: NULL and false both reject the row).
//! - correlated `x NOT IN (q)` → NULL-aware anti join: the row survives when no row of
//!   `q` for its correlation values has `x = col OR x IS NULL OR col IS NULL` (so a NULL
//!   in `q`'s result or in `x` gives PostgreSQL's answer: the row is rejected unless
//!   `q` is empty). Uncorrelated `NOT IN` stays: it runs once into a hashed set.
//! - a correlated `EXISTS (q)` or `x [NOT] IN (q)` anywhere else in a filter or a
//!   select list (under OR, NOT, CASE, as a value) → a *mark join*: every row of the
//!   input once, plus a boolean column "has a match", which replaces the subquery
//!   ([`replace_marks`]). IN's three-valued result needs a second mark where NULL and
//!   false differ: `x IN (q)` is true with a row `x = col`, else NULL with a row where
//!   `x` or `col` is NULL, else false (so false for an empty `q`, NULL `x` or not).
//!   Where only truth counts — under AND and OR up to the filter, or a CASE
//!   condition — NULL may be read as false, and one mark on `x = col` suffices; under
//!   one NOT more, NULL may be read as true, and one mark on `x = col OR x IS NULL OR
//!   col IS NULL` suffices (NOT IN's NULL-aware condition).
//! - a correlated scalar subquery `(SELECT f(agg…) FROM … WHERE inner = outer …)`
//!   whose correlation is equalities → a left join with the aggregate grouped by the
//!   inner sides of those equalities (the "group by the correlated columns, then left
//!   join" rewrite). An outer row without a matching group gets the subquery's value
//!   on an empty input (`count` gives 0, the other aggregates NULL), so COUNT over an
//!   empty group still gives 0. Grouping by the correlation keys makes one row per key,
//!   so the "more than one row" error cannot arise.
//! - a correlated scalar subquery without an aggregate (`(SELECT name FROM c WHERE
//!   c.id = o.cid)`) whose correlation is equalities → a left join with its rows
//!   grouped by the correlation keys (each group's row count and value), the value
//!   read through `single_row(rows, value)`, which raises the "more than one row"
//!   error for an evaluated outer row whose group has several ([`unnest_single_row`]).
//!
//! - a scalar subquery with GROUP BY inside (`(SELECT max(y) FROM i WHERE i.k = o.k
//!   GROUP BY z)`, or a grouped derived table under an aggregate) → the correlation's
//!   inner side joins the grouping keys ([`pull_up_through_groups`]), then one of the
//!   forms above; a HAVING over a scalar aggregate makes the value `CASE WHEN having
//!   THEN value END` (NULL for a rejected group, and for no rows unless the empty
//!   input passes it).
//! - a correlated scalar aggregate whose correlation is not all equalities (`i.k <
//!   o.k`, `i.k = o.k AND i.z > o.x`) → its body joined with the *domain*, the distinct
//!   outer values of its parameters, on the correlation, then grouped by the domain
//!   and left-joined back ([`domain_join`]: Neumann and Kemper's dependent join as a
//!   plain join), when a NULL outer value rejects every row.
//!
//! The correlation is found by pulling the conjuncts that use the subquery's
//! parameters up through its filters, inner joins, projections (which then also
//! output the columns those conjuncts read), DISTINCT, ORDER BY and grouped
//! aggregates (equalities only). A conjunct is split with OR factoring first, so
//! `(k = o.k AND a) OR (k = o.k AND b)` (TPC-DS Q41) gives `k = o.k`. Where pulling up
//! is impossible — a parameter under an aggregate's arguments, in GROUP BY or HAVING,
//! under LIMIT/OFFSET, in an outer join's condition, in a select list, in a nested
//! subquery's correlation (correlation skipping a level), non-equality correlation
//! through GROUP BY or of a scalar subquery without an aggregate, or a correlation a
//! NULL outer value does not reject — the subquery stays and is re-executed per
//! distinct outer value; EXPLAIN marks such subplans "correlated: re-executed per
//! outer row". The choice is not cost-based: a join is taken whenever it is exact.
//!
//! Subqueries are processed innermost first (the binder numbers a nested subquery
//! before its parent), so a subquery whose own subqueries became joins can itself be
//! inlined. Subplans no longer referenced are dropped and the rest renumbered.

use crate::binder::{expr_is_volatile, plan_is_volatile};
use crate::binder::query_util::{for_each_child_mut, shift_columns};
use crate::expr::{Expr, ExprKind, SubqueryExpr, SubqueryKind};
use crate::plan::{AggFunc, JoinKind, JoinMethod, Node, OutputColumn, Plan, Schema, Subplan};
use crate::types::{DataType, Value};

use super::and_all;

/// Decorrelates the subqueries of `plan` and of every subplan; returns the plan and
/// the subplans still referenced (renumbered).
pub fn decorrelate(plan: Plan, mut subs: Vec<Subplan>) -> (Plan, Vec<Subplan>) {
    let mut marks = 0;
    for id in 0..subs.len() {
        let p = std::mem::replace(&mut subs[id].plan, Plan::one_row());
        let p = rewrite(p, &subs, &mut marks);
        subs[id].plan = p;
    }
    let plan = rewrite(plan, &subs, &mut marks);
    compact(plan, subs)
}

/// Bottom-up: filters and projections whose expressions hold subqueries get them as
/// joins where possible. `marks` counts the mark joins made so far in the statement
/// (their columns are named `mark1`, `mark2`, … in EXPLAIN).
fn rewrite(plan: Plan, subs: &[Subplan], marks: &mut usize) -> Plan {
    let Plan { node, schema, .. } = plan;
    let node = super::map_node_children(node, &mut |p| rewrite(p, subs, marks));
    match node {
        Node::Filter { input, predicate } if has_subquery(&predicate) => {
            rewrite_filter(*input, predicate, subs, schema, marks)
        }
        Node::Project { input, exprs } if exprs.iter().any(|e| has_correlated_scalar(e) || has_markable(e)) => {
            let mut cur = *input;
            let width = cur.schema.len();
            let exprs: Vec<Expr> = exprs
                .into_iter()
                .map(|e| {
                    let e = replace_scalars(e, &mut cur, subs);
                    replace_marks(e, Truth::Exact, &mut cur, subs, marks)
                })
                .collect();
            // The joins added columns after the input's, which the expressions now
            // read; a row count it did not have would be a bug of the rewrites.
            debug_assert!(cur.schema.len() >= width);
            Plan::new(Node::Project { input: Box::new(cur), exprs }, schema)
        }
        node => Plan::new(node, schema),
    }
}

fn rewrite_filter(
    input: Plan,
    predicate: Expr,
    subs: &[Subplan],
    schema: Schema,
    marks: &mut usize,
) -> Plan {
    let mut parts = Vec::new();
    split_and(predicate, &mut parts);
    let (special, plain): (Vec<Expr>, Vec<Expr>) = parts
        .into_iter()
        .partition(|c| semi_form(c).is_some() || has_correlated_scalar(c) || has_markable(c));
    // Semi and anti joins first: they only remove rows, so the mark joins and left
    // joins above them see fewer.
    let (semis, others): (Vec<Expr>, Vec<Expr>) = special.into_iter().partition(|c| semi_form(c).is_some());
    // The other conjuncts stay directly over the input, where the join rules see them.
    let mut cur = with_filter(input, plain);
    let width = cur.schema.len();
    let mut rest = Vec::new();
    for c in semis.into_iter().chain(others) {
        if let Some(next) = try_semi(&c, &cur, subs) {
            cur = next;
            continue;
        }
        let c = replace_scalars(c, &mut cur, subs);
        rest.push(replace_marks(c, Truth::NullIsFalse, &mut cur, subs, marks));
    }
    let mut out = with_filter(cur, rest);
    if out.schema.len() != width {
        let exprs = (0..width).map(|i| Expr::column(i, out.schema[i].ty)).collect();
        out = Plan::new(Node::Project { input: Box::new(out), exprs }, schema.clone());
    }
    out.schema = schema;
    out
}

fn split_and(e: Expr, out: &mut Vec<Expr>) {
    let ty = e.ty;
    match e.into_kind() {
        ExprKind::And(v) => v.into_iter().for_each(|c| split_and(c, out)),
        kind => out.push(Expr::new(kind, ty)),
    }
}

fn with_filter(input: Plan, preds: Vec<Expr>) -> Plan {
    match and_all(preds) {
        None => input,
        Some(p) => {
            let schema = input.schema.clone();
            Plan::new(Node::Filter { input: Box::new(input), predicate: p }, schema)
        }
    }
}

/// What a conjunct asks of its subquery, when it is a semi/anti-join form.
enum SemiForm<'a> {
    Exists { sub: &'a SubqueryExpr, negated: bool },
    In { sub: &'a SubqueryExpr, x: &'a Expr, rest: &'a [Expr], negated: bool },
}

/// `x = col` for each operand of `x [, rest…] IN (q)` and the subquery's column it
/// pairs with (the subquery's columns start at `nleft`), in order.
fn in_equalities(x: &Expr, rest: &[Expr], nleft: usize, right: &Plan) -> Vec<Expr> {
    std::iter::once(x)
        .chain(rest.iter())
        .enumerate()
        .map(|(i, x)| {
            let col = Expr::column(nleft + i, right.schema[i].ty);
            Expr::new(
                ExprKind::Compare { op: crate::expr::CmpOp::Eq, left: Box::new(x.clone()), right: Box::new(col) },
                DataType::Boolean,
            )
        })
        .collect()
}

/// Whether a subquery row may make `x [, rest…] IN (q)` NULL, given the equalities
/// of [`in_equalities`]: for one operand `x IS NULL OR col IS NULL`, for a row the
/// conjunction of the equalities being NULL.
fn in_unknown(eqs: &[Expr]) -> Expr {
    let is_null = |e: Expr| Expr::new(ExprKind::IsNull { expr: Box::new(e), negated: false }, DataType::Boolean);
    match eqs {
        [Expr { kind: ExprKind::Compare { left, right, .. }, .. }] => Expr::new(
            ExprKind::Or(vec![is_null((**left).clone()), is_null((**right).clone())]),
            DataType::Boolean,
        ),
        _ => is_null(Expr::new(ExprKind::And(eqs.to_vec()), DataType::Boolean)),
    }
}

/// `eq OR unknown` (NOT IN's NULL-aware condition: the row's comparison is not
/// false), flattened.
fn in_not_false(eqs: Vec<Expr>) -> Expr {
    let unknown = in_unknown(&eqs);
    let mut parts = vec![and_all(eqs).expect("an operand")];
    match unknown.into_kind() {
        ExprKind::Or(v) => parts.extend(v),
        kind => parts.push(Expr::new(kind, DataType::Boolean)),
    }
    Expr::new(ExprKind::Or(parts), DataType::Boolean)
}

fn semi_form(c: &Expr) -> Option<SemiForm<'_>> {
    let (inner, not) = match &c.kind {
        ExprKind::Not(e) => (&**e, true),
        _ => (c, false),
    };
    let ExprKind::Subquery(s) = &inner.kind else { return None };
    match &s.kind {
        // Uncorrelated EXISTS runs once; as a join it would pair every row.
        SubqueryKind::Exists if s.correlated.is_empty() => None,
        SubqueryKind::Exists => Some(SemiForm::Exists { sub: s, negated: not }),
        SubqueryKind::In { expr, negated, rest } => {
            let negated = *negated != not;
            // Uncorrelated row NOT IN runs once into a hashed set; one operand becomes
            // an anti join checked against the subquery's emptiness and NULLs
            // ([`null_aware_anti`]), which spills where the set would exceed
            // `memory_limit`.
            if negated && s.correlated.is_empty() && !rest.is_empty() {
                return None;
            }
            Some(SemiForm::In { sub: s, x: expr, rest, negated })
        }
        _ => None,
    }
}

/// The right input of a join that decorrelates subquery `sub` over `cur`, and the
/// join conditions its correlation gives (over `cur`'s columns then the input's);
/// `None` when the correlation cannot be pulled up. For EXISTS, what cannot change
/// whether a row exists is dropped first.
fn subquery_join(sub: &SubqueryExpr, exists: bool, cur: &Plan, subs: &[Subplan]) -> Option<(Plan, Vec<Expr>)> {
    let subplan = subs.get(sub.id)?;
    let base = subplan.param_base;
    if skips_level(sub, base) {
        return None;
    }
    let mut body = subplan.plan.clone();
    if exists {
        body = strip_for_exists(body)?;
    }
    let pulled = pull_up(body, base)?;
    let nleft = cur.schema.len();
    let on = pulled.preds.iter().map(|p| to_join(p, nleft, base, &sub.correlated)).collect();
    Some((pulled.plan, on))
}

/// `cur` semi/anti-joined with the conjunct's subquery, if the conjunct is such a
/// form and the subquery's correlation can be pulled up.
fn try_semi(c: &Expr, cur: &Plan, subs: &[Subplan]) -> Option<Plan> {
    let form = semi_form(c)?;
    let (sub, negated) = match &form {
        SemiForm::Exists { sub, negated } | SemiForm::In { sub, negated, .. } => (*sub, *negated),
    };
    let (right, mut on) = subquery_join(sub, matches!(form, SemiForm::Exists { .. }), cur, subs)?;
    if let SemiForm::In { x, negated: true, .. } = form
        && sub.correlated.is_empty()
    {
        return null_aware_anti(cur, right, x);
    }
    let pulled = Pulled { plan: right, preds: Vec::new() };
    let nleft = cur.schema.len();
    if let SemiForm::In { x, rest, .. } = form {
        let eqs = in_equalities(x, rest, nleft, &pulled.plan);
        if negated {
            on.push(in_not_false(eqs));
        } else {
            // One equality per operand: each becomes a hash key.
            on.extend(eqs);
        }
    }
    let kind = if negated { JoinKind::Anti } else { JoinKind::Semi };
    Some(Plan::new(
        Node::Join {
            left: Box::new(cur.clone()),
            right: Box::new(pulled.plan),
            kind,
            on: and_all(on),
            left_keys: vec![],
            right_keys: vec![],
            method: JoinMethod::NestedLoop,
        },
        cur.schema.clone(),
    ))
}

/// `cur` filtered by the uncorrelated `x NOT IN (q)`, `right` being `q`'s plan, as
/// joins:
///
/// ```text
/// Project cur's columns
///   Filter  n = 0 OR (x IS NOT NULL AND nonnull = n)
///     Nested Loop (inner, one row on the right)
///       Anti Join  x = col          (a hash join: it spills past memory_limit)
///         cur
///         q
///       Aggregate  n: count(*), nonnull: count(col)
///         q
/// ```
///
/// PostgreSQL's NOT IN: every row when `q` is empty; else none where `x` is NULL or
/// `q` has a NULL (the comparison is then never false); else the rows without a
/// match. The anti join alone gives the last case (a NULL never matches), and the
/// one-row aggregate the first two. `q` runs twice, so this is declined (the hashed
/// set stays) when `q` or `x` calls a function whose result may differ between runs.
fn null_aware_anti(cur: &Plan, right: Plan, x: &Expr) -> Option<Plan> {
    if plan_is_volatile(&right) || expr_is_volatile(x) {
        return None;
    }
    let nleft = cur.schema.len();
    let col_ty = right.schema.first()?.ty;
    let eqs = in_equalities(x, &[], nleft, &right);
    let anti = Plan::new(
        Node::Join {
            left: Box::new(cur.clone()),
            right: Box::new(right.clone()),
            kind: JoinKind::Anti,
            on: and_all(eqs),
            left_keys: vec![],
            right_keys: vec![],
            method: JoinMethod::NestedLoop,
        },
        cur.schema.clone(),
    );
    let count = |arg: Option<Expr>| crate::plan::AggCall {
        func: if arg.is_some() { AggFunc::Count } else { AggFunc::CountStar },
        arg,
        arg2: None,
        distinct: false,
        order: Vec::new(),
        ty: DataType::BigInt,
        udf: None,
    };
    let counts = Plan::new(
        Node::Aggregate {
            input: Box::new(right),
            groups: Vec::new(),
            sets: Vec::new(),
            aggs: vec![count(None), count(Some(Expr::column(0, col_ty)))],
            bee: None,
        },
        vec![
            OutputColumn { name: "n".into(), ty: DataType::BigInt },
            OutputColumn { name: "nonnull".into(), ty: DataType::BigInt },
        ],
    );
    let cross = Plan::cross_join(anti, counts);
    let (n, nonnull) = (Expr::column(nleft, DataType::BigInt), Expr::column(nleft + 1, DataType::BigInt));
    let eq = |a: Expr, b: Expr| {
        Expr::new(ExprKind::Compare { op: crate::expr::CmpOp::Eq, left: Box::new(a), right: Box::new(b) }, DataType::Boolean)
    };
    let empty = eq(n.clone(), Expr::literal(Value::BigInt(0), DataType::BigInt));
    let x_not_null = Expr::new(ExprKind::IsNull { expr: Box::new(x.clone()), negated: true }, DataType::Boolean);
    let no_nulls = eq(nonnull, n);
    let keep = Expr::new(
        ExprKind::Or(vec![empty, Expr::new(ExprKind::And(vec![x_not_null, no_nulls]), DataType::Boolean)]),
        DataType::Boolean,
    );
    let filtered = with_filter(cross, vec![keep]);
    let exprs = cur.schema.iter().enumerate().map(|(i, c)| Expr::column(i, c.ty)).collect();
    Some(Plan::new(Node::Project { input: Box::new(filtered), exprs }, cur.schema.clone()))
}

/// An EXISTS subquery without what cannot change whether it has a row.
fn strip_for_exists(plan: Plan) -> Option<Plan> {
    match plan.node {
        Node::Project { input, .. } | Node::Sort { input, .. } | Node::Distinct { input } => strip_for_exists(*input),
        Node::Limit { input, limit, offset } => {
            if offset > 0 || limit == Some(0) {
                return None;
            }
            strip_for_exists(*input)
        }
        node => Some(Plan::new(node, plan.schema)),
    }
}

/// A pulled-up correlation conjunct (over the subquery's output, with its parameters)
/// as a join condition: subquery columns move right of the `nleft` outer columns and
/// parameters become the outer expressions they stand for.
fn to_join(p: &Expr, nleft: usize, base: usize, correlated: &[Expr]) -> Expr {
    let mut e = p.clone();
    fn go(e: &mut Expr, nleft: usize, base: usize, correlated: &[Expr]) {
        match &mut e.kind {
            ExprKind::Column(i) => *i += nleft,
            ExprKind::Param(k) if *k >= base => *e = correlated[*k - base].clone(),
            _ => for_each_child_mut(e, &mut |c| go(c, nleft, base, correlated)),
        }
    }
    go(&mut e, nleft, base, correlated);
    e
}

/// A subquery body without references to its parameters, and the conjuncts that
/// had them, over the body's output columns.
struct Pulled {
    plan: Plan,
    preds: Vec<Expr>,
}

/// A LATERAL subquery in FROM as the right input of a join (the binder's
/// `bind_lateral`): `plan` reads the FROM items before it (the join's `nleft`
/// left columns) as parameters from `base`, standing for `correlated`. Its
/// correlation is pulled up as for EXISTS (through filters, inner joins,
/// projections and ORDER BY), giving the plan without it and the pulled conditions
/// over the join's columns. `None` when it cannot be pulled up (a parameter under
/// an aggregate, LIMIT, DISTINCT, a window, a set operation, in a select list, an
/// outer join's condition or a nested subquery), so the caller refuses the query:
/// no operator runs a subplan per left row. The rows are those of PostgreSQL's
/// nested loop: each left row joined with the subquery's rows for it.
///
/// For an inner join (`inner`), a select list reading the left columns (`SELECT
/// t.a + y …`) is lifted above the join: the third part is then the subquery's
/// columns as expressions over the join's output (left columns, then the plan's),
/// which the caller projects after the join.
pub(crate) fn lateral_join_parts(
    plan: Plan,
    nleft: usize,
    base: usize,
    correlated: &[Expr],
    inner: bool,
) -> Option<(Plan, Vec<Expr>, Option<Vec<Expr>>)> {
    fn has_distinct(p: &Plan) -> bool {
        matches!(p.node, Node::Distinct { .. }) || p.children().iter().any(|c| has_distinct(c))
    }
    let mut plan = plan;
    let mut top = None;
    if inner
        && let Node::Project { exprs, .. } = &plan.node
        && exprs.iter().any(|e| uses_params(e, base))
        && !exprs.iter().any(has_subquery)
    {
        let Node::Project { input, exprs } = plan.node else { unreachable!("matched above") };
        top = Some(exprs);
        plan = *input;
    }
    // Pulled through DISTINCT, a conjunct's columns would join the distinct ones.
    if plan_uses_params(&plan, base) && has_distinct(&plan) {
        return None;
    }
    let pulled = pull_up(plan, base)?;
    if plan_uses_params(&pulled.plan, base) {
        return None;
    }
    let on = pulled.preds.iter().map(|p| to_join(p, nleft, base, correlated)).collect();
    let top = top.map(|exprs: Vec<Expr>| exprs.iter().map(|e| to_join(e, nleft, base, correlated)).collect());
    Some((pulled.plan, on, top))
}

fn pull_up(plan: Plan, base: usize) -> Option<Pulled> {
    if !plan_uses_params(&plan, base) {
        return Some(Pulled { plan, preds: vec![] });
    }
    if matches!(plan.node, Node::Aggregate { .. }) {
        let mut own = false;
        for_each_expr(&plan, &mut |e| own |= uses_params(e, base));
        if own {
            return None;
        }
    }
    let Plan { node, schema, .. } = plan;
    match node {
        Node::Aggregate { input, groups, sets, aggs, .. } => pull_up_through_groups(*input, groups, sets, aggs, schema, base),
        Node::Filter { input, predicate } => {
            if is_grouped(&input) && may_raise(&predicate) {
                return None;
            }
            let inner = pull_up(*input, base)?;
            let mut preds = inner.preds;
            let keep = take_correlated(predicate, base, &mut preds)?;
            Some(Pulled { plan: with_filter(inner.plan, keep), preds })
        }
        Node::TableScan { table, columns, filter: Some(f), access, with_tid, bees } => {
            let mut preds = Vec::new();
            let keep = take_correlated(f, base, &mut preds)?;
            let node = Node::TableScan { table, columns, filter: and_all(keep), access, with_tid, bees };
            Some(Pulled { plan: Plan::new(node, schema), preds })
        }
        Node::Project { input, mut exprs } => {
            if exprs.iter().any(|e| uses_params(e, base)) || is_grouped(&input) && exprs.iter().any(may_raise) {
                return None;
            }
            let inner = pull_up(*input, base)?;
            let mut schema = schema;
            let mut map = vec![usize::MAX; inner.plan.schema.len()];
            let mut used = Vec::new();
            for p in &inner.preds {
                p.columns_used(&mut used);
            }
            for c in used {
                let pos = exprs.iter().position(|e| matches!(e.kind, ExprKind::Column(i) if i == c));
                map[c] = match pos {
                    Some(p) => p,
                    None => {
                        exprs.push(Expr::column(c, inner.plan.schema[c].ty));
                        schema.push(inner.plan.schema[c].clone());
                        exprs.len() - 1
                    }
                };
            }
            let preds = inner.preds.iter().map(|p| remap(p, &map)).collect();
            let node = Node::Project { input: Box::new(inner.plan), exprs };
            Some(Pulled { plan: Plan::new(node, schema), preds })
        }
        Node::Join { left, right, kind, on, left_keys, right_keys, method } => {
            let nleft = left.schema.len();
            let nright = right.schema.len();
            let mut preds = Vec::new();
            let on = match on {
                Some(on) if kind == JoinKind::Inner => and_all(take_correlated(on, base, &mut preds)?),
                Some(on) if uses_params(&on, base) => return None,
                on => on,
            };
            if left_keys.iter().chain(&right_keys).any(|e| uses_params(e, base)) {
                return None;
            }
            let l = pull_up(*left, base)?;
            let r = if kind == JoinKind::Inner {
                pull_up(*right, base)?
            } else if plan_uses_params(&right, base) || matches!(kind, JoinKind::Right | JoinKind::Full) {
                return None;
            } else {
                Pulled { plan: *right, preds: vec![] }
            };
            // A side that had to output more columns would move the other's.
            if l.plan.schema.len() != nleft || r.plan.schema.len() != nright {
                return None;
            }
            preds.extend(l.preds);
            preds.extend(r.preds.iter().map(|p| shift_columns(p, nleft)));
            let node = Node::Join { left: Box::new(l.plan), right: Box::new(r.plan), kind, on, left_keys, right_keys, method };
            Some(Pulled { plan: Plan::new(node, schema), preds })
        }
        Node::Distinct { input } => {
            let inner = pull_up(*input, base)?;
            // DISTINCT now also runs over the columns the pulled conjuncts read. That
            // keeps the rows per outer value only when each conjunct is `column =
            // outer value`: with `created::date = o.day` two timestamps of one day
            // would stay two rows.
            if !inner.preds.iter().all(|p| column_equals_outer(p, base)) {
                return None;
            }
            let schema = inner.plan.schema.clone();
            Some(Pulled { plan: Plan::new(Node::Distinct { input: Box::new(inner.plan) }, schema), preds: inner.preds })
        }
        Node::Sort { input, keys, .. } => {
            if keys.iter().any(|k| uses_params(&k.expr, base)) {
                return None;
            }
            let inner = pull_up(*input, base)?;
            let schema = inner.plan.schema.clone();
            Some(Pulled { plan: Plan::new(Node::Sort { input: Box::new(inner.plan), keys, bee: None }, schema), preds: inner.preds })
        }
        _ => None,
    }
}

/// A correlation pulled up through `GROUP BY`: each conjunct must be `inner = outer`
/// (`equality_keys`), and its inner side becomes a grouping key too (unless it is one
/// already), output after the aggregate's own columns; the conjunct then compares that
/// key. Exact: per outer value `v`, the groups of the rows with `inner = v` are the
/// groups by (keys, inner) whose `inner` equals `v`, with the same rows, so the same
/// aggregates — and a HAVING above sees the same groups. Not for an aggregate without
/// GROUP BY (it makes a row even for a value no input row has) nor for grouping sets.
fn pull_up_through_groups(
    input: Plan,
    mut groups: Vec<Expr>,
    sets: Vec<Vec<usize>>,
    aggs: Vec<crate::plan::AggCall>,
    schema: Schema,
    base: usize,
) -> Option<Pulled> {
    if groups.is_empty() || !sets.is_empty() {
        return None;
    }
    // Every group is aggregated now, not only those of the outer values asked for.
    if plan_may_raise(&input) || groups.iter().any(may_raise) || aggs.iter().any(|a| a.udf.is_some() || a.args().any(may_raise)) {
        return None;
    }
    let inner = pull_up(input, base)?;
    let (keys, outer) = equality_keys(&inner.preds, base)?;
    if keys.iter().any(expr_is_volatile) {
        return None;
    }
    let (ngroups, naggs) = (groups.len(), aggs.len());
    let mut out_schema = schema.clone();
    let mut preds = Vec::with_capacity(keys.len());
    for (key, outer) in keys.into_iter().zip(outer) {
        let pos = match groups.iter().position(|g| *g == key) {
            Some(p) => p,
            None => {
                out_schema.push(OutputColumn { name: format!("key{}", groups.len() - ngroups), ty: key.ty });
                groups.push(key);
                groups.len() - 1
            }
        };
        // Position in the output: a key added here comes after the aggregates.
        let col = if pos < ngroups { pos } else { pos + naggs };
        let ty = groups[pos].ty;
        preds.push(Expr::new(
            ExprKind::Compare { op: crate::expr::CmpOp::Eq, left: Box::new(Expr::column(col, ty)), right: Box::new(outer) },
            DataType::Boolean,
        ));
    }
    // The aggregate's own layout is [keys…, aggregates…]; a projection puts the added
    // keys last, so the columns above keep their positions.
    let added = groups.len() - ngroups;
    let mut agg_schema = schema.slice(0..ngroups).to_vec();
    agg_schema.extend(out_schema.iter().skip(schema.len()).cloned());
    agg_schema.extend(schema.iter().skip(ngroups).cloned());
    let aggregate = Plan::new(Node::Aggregate { input: Box::new(inner.plan), groups, sets, aggs, bee: None }, agg_schema);
    let order: Vec<usize> = (0..ngroups).chain(ngroups + added..ngroups + added + naggs).chain(ngroups..ngroups + added).collect();
    let exprs = order.iter().map(|&i| Expr::column(i, aggregate.schema[i].ty)).collect();
    Some(Pulled { plan: Plan::new(Node::Project { input: Box::new(aggregate), exprs }, out_schema), preds })
}

/// Whether `p` is `column = e` (either way round) with `e` reading no column.
fn column_equals_outer(p: &Expr, base: usize) -> bool {
    let ExprKind::Compare { op: crate::expr::CmpOp::Eq, left, right } = &p.kind else { return false };
    let outer = |e: &Expr| {
        let mut c = Vec::new();
        e.columns_used(&mut c);
        c.is_empty() && uses_params(e, base)
    };
    matches!(left.kind, ExprKind::Column(_)) && outer(right) || matches!(right.kind, ExprKind::Column(_)) && outer(left)
}

/// Whether an expression anywhere in `plan` (its nodes and their inputs) satisfies `f`.
fn tree_has(plan: &Plan, f: &dyn Fn(&Expr) -> bool) -> bool {
    let mut found = false;
    for_each_expr(plan, &mut |e| found |= f(e));
    found || plan.children().into_iter().any(|c| crate::stack::guarded(|| tree_has(c, f)))
}

/// Moves the conjuncts of `e` that use parameters into `preds`; returns the others.
/// `None` when a conjunct with parameters also holds a subquery.
fn take_correlated(e: Expr, base: usize, preds: &mut Vec<Expr>) -> Option<Vec<Expr>> {
    // `(k = $1 AND x) OR (k = $1 AND y)` (TPC-DS Q41) gives `k = $1` a conjunct of its own.
    let mut parts = Vec::new();
    super::conjuncts(e, &mut parts);
    let mut keep = Vec::new();
    for p in parts {
        if !uses_params(&p, base) {
            keep.push(p);
        } else if has_subquery(&p) {
            return None;
        } else {
            preds.push(p);
        }
    }
    Some(keep)
}

fn remap(e: &Expr, map: &[usize]) -> Expr {
    let mut e = e.clone();
    fn go(e: &mut Expr, map: &[usize]) {
        if let ExprKind::Column(i) = &mut e.kind {
            *i = map[*i];
            return;
        }
        for_each_child_mut(e, &mut |c| go(c, map));
    }
    go(&mut e, map);
    e
}

/// What a position in an expression needs of a boolean subexpression there.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Truth {
    /// Only whether it is true (a filter's conjunct, under AND/OR, a CASE
    /// condition): NULL may be given as false.
    NullIsFalse,
    /// Only whether it is false (under one NOT in a `NullIsFalse` position): NULL may
    /// be given as true.
    NullIsTrue,
    /// The three-valued result (a select list, a comparison's operand, …).
    Exact,
}

impl Truth {
    fn negated(self) -> Truth {
        match self {
            Truth::NullIsFalse => Truth::NullIsTrue,
            Truth::NullIsTrue => Truth::NullIsFalse,
            Truth::Exact => Truth::Exact,
        }
    }
}

/// Whether `e` holds a correlated EXISTS or IN subquery (a mark join's candidate).
fn has_markable(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Subquery(s) if matches!(s.kind, SubqueryKind::Exists | SubqueryKind::In { .. }) && !s.correlated.is_empty() => {
            true
        }
        _ => e.children().iter().any(|c| has_markable(c)),
    }
}

/// Replaces each correlated EXISTS and IN subquery of `e` that can be unnested by
/// the mark column(s) of mark joins added to `cur` (see the module comment); `truth`
/// is what `e`'s position needs.
fn replace_marks(mut e: Expr, truth: Truth, cur: &mut Plan, subs: &[Subplan], marks: &mut usize) -> Expr {
    fn go(e: &mut Expr, truth: Truth, cur: &mut Plan, subs: &[Subplan], marks: &mut usize) {
        match &mut e.kind {
            ExprKind::And(v) | ExprKind::Or(v) => v.iter_mut().for_each(|c| go(c, truth, cur, subs, marks)),
            ExprKind::Not(x) => go(x, truth.negated(), cur, subs, marks),
            ExprKind::Case { whens, else_ } => {
                for (cond, value) in whens.iter_mut() {
                    go(cond, Truth::NullIsFalse, cur, subs, marks);
                    go(value, Truth::Exact, cur, subs, marks);
                }
                if let Some(x) = else_ {
                    go(x, Truth::Exact, cur, subs, marks);
                }
            }
            ExprKind::Subquery(s) if !s.correlated.is_empty() => {
                let s = s.clone();
                if let Some(value) = mark_value(&s, truth, cur, subs, marks) {
                    *e = value;
                }
            }
            _ => for_each_child_mut(e, &mut |c| go(c, Truth::Exact, cur, subs, marks)),
        }
    }
    if has_markable(&e) {
        go(&mut e, truth, cur, subs, marks);
    }
    e
}

/// The value of EXISTS or IN subquery `s` as an expression over `cur` after the mark
/// join(s) it adds there; `None` (and `cur` unchanged) when it cannot be unnested.
fn mark_value(s: &SubqueryExpr, truth: Truth, cur: &mut Plan, subs: &[Subplan], marks: &mut usize) -> Option<Expr> {
    let boolean = |kind| Expr::new(kind, DataType::Boolean);
    match &s.kind {
        SubqueryKind::Exists => {
            let (right, on) = subquery_join(s, true, cur, subs)?;
            Some(add_mark(cur, right, on, marks))
        }
        SubqueryKind::In { expr: x, negated, rest } => {
            // NOT IN is NOT (x IN q): its operand's position needs the opposite.
            let truth = if *negated { truth.negated() } else { truth };
            let (right, on) = subquery_join(s, false, cur, subs)?;
            let eqs = in_equalities(x, rest, cur.schema.len(), &right);
            let unknown = in_unknown(&eqs);
            let with = |mut on: Vec<Expr>, c: Expr| {
                on.push(c);
                on
            };
            let value = match truth {
                Truth::NullIsFalse => {
                    let mut on = on;
                    on.extend(eqs);
                    add_mark(cur, right, on, marks)
                }
                Truth::NullIsTrue => add_mark(cur, right, with(on, in_not_false(eqs)), marks),
                Truth::Exact => {
                    // The second join's columns shift nothing of the first's: both
                    // read `cur`'s columns, and each adds its column at the end.
                    let mut on1 = on.clone();
                    on1.extend(eqs);
                    let matched = add_mark(cur, right.clone(), on1, marks);
                    let nleft = cur.schema.len();
                    let shift_right = |e: &Expr| {
                        let mut e = e.clone();
                        fn go(e: &mut Expr, from: usize) {
                            if let ExprKind::Column(i) = &mut e.kind {
                                if *i >= from {
                                    *i += 1;
                                }
                                return;
                            }
                            for_each_child_mut(e, &mut |c| go(c, from));
                        }
                        go(&mut e, nleft - 1);
                        e
                    };
                    let on2: Vec<Expr> = with(on, unknown).iter().map(shift_right).collect();
                    let maybe = add_mark(cur, right, on2, marks);
                    boolean(ExprKind::Case {
                        whens: vec![
                            (matched, Expr::literal(Value::Boolean(true), DataType::Boolean)),
                            (maybe, Expr::literal(Value::Null, DataType::Boolean)),
                        ],
                        else_: Some(Box::new(Expr::literal(Value::Boolean(false), DataType::Boolean))),
                    })
                }
            };
            Some(if *negated { boolean(ExprKind::Not(Box::new(value))) } else { value })
        }
        _ => None,
    }
}

/// Puts a mark join of `cur` with `right` on `on` (over `cur`'s columns, then
/// `right`'s) in `cur`'s place; returns its mark column.
fn add_mark(cur: &mut Plan, right: Plan, on: Vec<Expr>, marks: &mut usize) -> Expr {
    *marks += 1;
    let left = std::mem::replace(cur, Plan::one_row());
    let nleft = left.schema.len();
    let mut schema = left.schema.clone();
    schema.push(OutputColumn { name: format!("mark{marks}"), ty: DataType::Boolean });
    *cur = Plan::new(
        Node::Join {
            left: Box::new(left),
            right: Box::new(right),
            kind: JoinKind::Mark,
            on: and_all(on),
            left_keys: vec![],
            right_keys: vec![],
            method: JoinMethod::NestedLoop,
        },
        schema,
    );
    Expr::column(nleft, DataType::Boolean)
}

/// Replaces each correlated scalar subquery of `e` that can be unnested by a column
/// of a left join added to `cur`.
fn replace_scalars(mut e: Expr, cur: &mut Plan, subs: &[Subplan]) -> Expr {
    fn go(e: &mut Expr, cur: &mut Plan, subs: &[Subplan]) {
        if let ExprKind::Subquery(s) = &e.kind
            && matches!(s.kind, SubqueryKind::Scalar)
            && !s.correlated.is_empty()
            && let Some((plan, value)) = unnest_scalar(s, e.ty, cur, subs)
        {
            *cur = plan;
            *e = value;
            return;
        }
        for_each_child_mut(e, &mut |c| go(c, cur, subs));
    }
    go(&mut e, cur, subs);
    e
}

/// `cur` left-joined with the scalar subquery's aggregate grouped by its correlation
/// keys, and the expression (over the join) that gives the subquery's value.
///
/// The subquery is `[Project over] [HAVING filter over] Aggregate` without GROUP BY
/// (with GROUP BY it may have several rows: [`unnest_single_row`]). A HAVING makes
/// the value NULL for a group it rejects: the value becomes `CASE WHEN having THEN
/// value END`, over the group and over the empty input alike. When the correlation
/// is all equalities, the aggregate is grouped by their inner sides; otherwise by the
/// outer values themselves, joined in as a *domain* ([`domain_join`]).
fn unnest_scalar(s: &SubqueryExpr, ty: DataType, cur: &Plan, subs: &[Subplan]) -> Option<(Plan, Expr)> {
    let subplan = subs.get(s.id)?;
    let base = subplan.param_base;
    if skips_level(s, base) {
        return None;
    }
    let (top, below) = match subplan.plan.node.clone() {
        Node::Project { input, exprs } => (Some(exprs), *input),
        node => (None, Plan::new(node, subplan.plan.schema.clone())),
    };
    let (having, agg) = match below.node {
        Node::Filter { input, predicate } if matches!(input.node, Node::Aggregate { .. }) => (Some(predicate), *input),
        node => (None, Plan::new(node, below.schema)),
    };
    let Node::Aggregate { input, groups, sets, aggs, .. } = agg.node else {
        return unnest_single_row(s, ty, cur, subplan);
    };
    if !groups.is_empty() && sets.is_empty() {
        return unnest_single_row(s, ty, cur, subplan);
    }
    // An application aggregate's value over no rows is unknown here.
    if !groups.is_empty() || !sets.is_empty() || aggs.iter().any(|a| a.udf.is_some() || a.args().any(|x| uses_params(x, base))) {
        return None;
    }
    if having.as_ref().is_some_and(|h| uses_params(h, base) || has_subquery(h)) {
        return None;
    }
    let top = match top {
        Some(t) if t.iter().any(|e| uses_params(e, base) || has_subquery(e)) => return None,
        Some(t) => t,
        None => vec![Expr::column(0, aggs.first()?.ty)],
    };
    if top.len() != 1 {
        return None;
    }
    // The rewrites below compute the aggregates (and a HAVING) for every group or
    // every domain value, not only those an evaluated outer row selects: only
    // expressions that cannot raise an error may run for rows nobody asked about.
    let raises = plan_may_raise(&input)
        || aggs.iter().any(|a| a.args().any(may_raise))
        || top.iter().any(may_raise)
        || having.as_ref().is_some_and(may_raise);
    if having.is_some() && raises {
        return None;
    }
    let value = match having {
        None => top[0].clone(),
        Some(h) => Expr::new(ExprKind::Case { whens: vec![(h, top[0].clone())], else_: None }, top[0].ty),
    };
    let pulled = pull_up(*input, base)?;
    let (agg_input, keys, outer) = match equality_keys(&pulled.preds, base) {
        Some((keys, outer)) => (pulled.plan, keys, outer),
        None if raises => return None,
        None => domain_join(pulled, base, s, cur)?,
    };
    let nkeys = keys.len();
    let mut agg_schema: Vec<OutputColumn> =
        keys.iter().enumerate().map(|(i, k)| OutputColumn { name: format!("key{i}"), ty: k.ty }).collect();
    agg_schema.extend(aggs.iter().enumerate().map(|(i, a)| OutputColumn { name: format!("agg{i}"), ty: a.ty }));
    // The value on an empty input: count and regr_count give 0, every other aggregate NULL.
    let empty: Vec<Expr> = aggs
        .iter()
        .map(|a| match a.func {
            AggFunc::Count | AggFunc::CountStar | AggFunc::RegrCount => Expr::literal(Value::BigInt(0), a.ty),
            _ => Expr::literal(Value::Null, a.ty),
        })
        .collect();
    let empty_value = substitute_columns(&value, &empty);
    let aggregate = Plan::new(Node::Aggregate { input: Box::new(agg_input), groups: keys, sets: Vec::new(), aggs, bee: None }, agg_schema);
    let mut exprs = vec![shift_columns(&value, nkeys)];
    let mut schema = vec![OutputColumn { name: "value".into(), ty: value.ty }];
    for (i, c) in aggregate.schema.iter().take(nkeys).enumerate() {
        exprs.push(Expr::column(i, c.ty));
        schema.push(c.clone());
    }
    let right = Plan::new(Node::Project { input: Box::new(aggregate), exprs }, schema);
    let nleft = cur.schema.len();
    let join = left_join_on_keys(cur, right, outer, base, s);
    let col = Expr::column(nleft, ty);
    let result = if matches!(empty_value.kind, ExprKind::Literal(Value::Null)) {
        col
    } else {
        // A key column is NULL exactly when the outer row found no group.
        let unmatched = Expr::new(
            ExprKind::IsNull { expr: Box::new(Expr::column(nleft + 1, join.schema[nleft + 1].ty)), negated: false },
            DataType::Boolean,
        );
        Expr::new(ExprKind::Case { whens: vec![(unmatched, empty_value)], else_: Some(Box::new(col)) }, ty)
    };
    Some((join, result))
}

/// Correlation that is not all `inner = outer` (`i.z > o.x`, or `i.k = o.k AND i.z >
/// o.x`): the subquery's body joined with the *domain* — the distinct values of the
/// parameters it reads, over `cur` — on the correlation conjuncts, the parameters
/// reading the domain's columns (Neumann and Kemper's dependent join, made a plain
/// join). Returns that join (the body's columns, then the domain's), the domain's
/// columns as grouping keys, and the parameters as the outer values to join them on.
///
/// Exact when: a NULL parameter makes the conjuncts reject every row (then the outer
/// row's group is missing, as its subquery's rows are: the left join on `outer = key`
/// never matches a NULL), and each parameter's type shows equal values alike (the
/// domain keeps one of several equal outer values: `1.0` and `1.00` must not differ
/// to a conjunct). `cur` is read twice (for the domain, and joined), so it must give
/// the same rows both times: no volatile function, no subquery.
fn domain_join(pulled: Pulled, base: usize, s: &SubqueryExpr, cur: &Plan) -> Option<(Plan, Vec<Expr>, Vec<Expr>)> {
    if plan_is_volatile(cur) || tree_has(cur, &|e| has_subquery(e) || e.has_side_effects()) || order_decides(cur) {
        return None;
    }
    let mut params: Vec<usize> = Vec::new();
    for p in &pulled.preds {
        if has_subquery(p) || expr_is_volatile(p) {
            return None;
        }
        param_ids(p, base, &mut params);
    }
    params.sort_unstable();
    params.dedup();
    let n = pulled.plan.schema.len();
    let types: Vec<DataType> = params.iter().map(|&k| s.correlated.get(k - base).map(|e| e.ty)).collect::<Option<_>>()?;
    if params.is_empty() || !types.iter().all(|&t| super::pushdown::equal_values_look_alike(t)) {
        return None;
    }
    // The conjuncts over [body…, domain…].
    let on: Vec<Expr> = pulled.preds.iter().map(|p| params_to_columns(p, base, &params, n)).collect();
    let mut rejected: Vec<usize> = on.iter().flat_map(super::outer_join::null_rejected).collect();
    rejected.sort_unstable();
    if !(n..n + params.len()).all(|c| rejected.binary_search(&c).is_ok()) {
        return None;
    }
    let dschema: Vec<OutputColumn> =
        types.iter().enumerate().map(|(j, &ty)| OutputColumn { name: format!("domain{j}"), ty }).collect();
    let values = params.iter().map(|&k| s.correlated[k - base].clone()).collect();
    let projected = Plan::new(Node::Project { input: Box::new(cur.clone()), exprs: values }, dschema.clone());
    let domain = Plan::new(Node::Distinct { input: Box::new(projected) }, dschema.clone());
    let mut jschema = pulled.plan.schema.clone();
    jschema.extend(dschema);
    let join = Plan::new(
        Node::Join {
            left: Box::new(pulled.plan),
            right: Box::new(domain),
            kind: JoinKind::Inner,
            on: and_all(on),
            left_keys: vec![],
            right_keys: vec![],
            method: JoinMethod::NestedLoop,
        },
        jschema,
    );
    let keys = types.iter().enumerate().map(|(j, &ty)| Expr::column(n + j, ty)).collect();
    let outer = params.iter().zip(&types).map(|(&k, &ty)| Expr::new(ExprKind::Param(k), ty)).collect();
    Some((join, keys, outer))
}

/// Whether `plan`'s rows may differ between two runs because they depend on the
/// order rows arrive in, which two threads' scans do not fix: a LIMIT (ties of its
/// ORDER BY, or none), a window function, an aggregate concatenating in arrival order
/// or an application aggregate. (Float sums merged from two threads may also differ
/// in their last bits; a parameter compared on those bits is not guarded against.)
fn order_decides(plan: &Plan) -> bool {
    let here = match &plan.node {
        Node::Limit { .. } | Node::Window { .. } => true,
        Node::Aggregate { aggs, .. } => aggs.iter().any(|a| a.udf.is_some() || a.func == AggFunc::StringAgg && a.order.is_empty()),
        _ => false,
    };
    here || plan.children().iter().any(|c| order_decides(c))
}

/// Whether `plan` is an aggregate with GROUP BY (through a HAVING filter): what is
/// evaluated over its rows runs, once its correlation is pulled above it, for the
/// groups of every key, not only of the keys an evaluated outer row selects.
fn is_grouped(plan: &Plan) -> bool {
    match &plan.node {
        Node::Aggregate { groups, .. } => !groups.is_empty(),
        Node::Filter { input, .. } => is_grouped(input),
        _ => false,
    }
}

/// Whether evaluating `e` could raise an error (a whitelist: column values,
/// constants, comparisons, boolean logic, CASE, COALESCE, IS NULL, EXTRACT, and
/// `+ - *` and negation on numeric and float values, whose overflow needs magnitudes
/// beyond 10³⁸; integer arithmetic overflows, division divides by zero, casts and
/// functions may refuse their input). A rewrite that evaluates an expression for rows
/// the query as written never evaluates (groups of keys no outer row selects) takes
/// only expressions that cannot raise: PostgreSQL raises an error only for rows it
/// evaluates.
fn may_raise(e: &Expr) -> bool {
    let numeric = matches!(e.ty, DataType::Double | DataType::Real | DataType::Decimal { .. });
    let here = match &e.kind {
        ExprKind::Column(_) | ExprKind::Literal(_) | ExprKind::Param(_) => false,
        ExprKind::Compare { .. }
        | ExprKind::IsDistinctFrom { .. }
        | ExprKind::And(_)
        | ExprKind::Or(_)
        | ExprKind::Not(_)
        | ExprKind::IsNull { .. }
        | ExprKind::IsBool { .. }
        | ExprKind::Case { .. }
        | ExprKind::InList { .. }
        | ExprKind::Coalesce(_)
        | ExprKind::Extract { .. } => false,
        ExprKind::Arith { op: crate::expr::ArithOp::Add | crate::expr::ArithOp::Sub | crate::expr::ArithOp::Mul, .. }
        | ExprKind::Neg(_) => !numeric,
        // Widening casts (the binder's, to a common type or an aggregate's argument type).
        ExprKind::Cast { expr, .. } => {
            use DataType as T;
            let int = |t: DataType| matches!(t, T::SmallInt | T::Integer | T::BigInt);
            !match e.ty {
                T::Text => true,
                T::Double | T::Real => int(expr.ty) || matches!(expr.ty, T::Double | T::Real | T::Decimal { .. }),
                T::BigInt => matches!(expr.ty, T::SmallInt | T::Integer | T::BigInt),
                T::Integer => matches!(expr.ty, T::SmallInt | T::Integer),
                T::Decimal { precision: None, .. } => int(expr.ty) || matches!(expr.ty, T::Decimal { .. }),
                _ => false,
            }
        }
        _ => true,
    };
    here || e.children().iter().any(|c| may_raise(c))
}

/// Whether an expression anywhere in `plan` could raise an error ([`may_raise`]), or
/// it runs an application aggregate.
fn plan_may_raise(plan: &Plan) -> bool {
    let udf_agg = |p: &Plan| matches!(&p.node, Node::Aggregate { aggs, .. } if aggs.iter().any(|a| a.udf.is_some()));
    fn any(p: &Plan, f: &dyn Fn(&Plan) -> bool) -> bool {
        f(p) || p.children().iter().any(|c| any(c, f))
    }
    tree_has(plan, &may_raise) || any(plan, &udf_agg)
}

/// The parameters (from `base`) `e` reads, added to `out`.
fn param_ids(e: &Expr, base: usize, out: &mut Vec<usize>) {
    if let ExprKind::Param(k) = e.kind
        && k >= base
    {
        out.push(k);
    }
    for c in e.children() {
        param_ids(c, base, out);
    }
}

/// `e` with parameter `params[j]` read from column `first + j`.
fn params_to_columns(e: &Expr, base: usize, params: &[usize], first: usize) -> Expr {
    let mut e = e.clone();
    fn go(e: &mut Expr, base: usize, params: &[usize], first: usize) {
        if let ExprKind::Param(k) = e.kind
            && k >= base
            && let Ok(j) = params.binary_search(&k)
        {
            *e = Expr::column(first + j, e.ty);
            return;
        }
        for_each_child_mut(e, &mut |c| go(c, base, params, first));
    }
    go(&mut e, base, params, first);
    e
}

/// A correlated scalar subquery without an aggregate (`(SELECT name FROM c WHERE
/// c.id = o.cid)`), whose correlation is equalities: `cur` left-joined with the
/// subquery's rows grouped by the correlation keys — each group's row count and its
/// value (`min` over the group: the value itself when the group has one row) — and
/// the expression [`Func::SingleRow`](crate::expr::Func::SingleRow) over the join:
/// the value, NULL for an outer row without a group, and PostgreSQL's error 21000
/// for an outer row whose group has more than one row — raised, as when the subquery
/// runs per row, only for outer rows that are evaluated. (DuckDB's "single join" does
/// the same with a join kind of its own.) Grouping gives one row per key, so the
/// join keeps the outer rows one for one.
fn unnest_single_row(s: &SubqueryExpr, ty: DataType, cur: &Plan, subplan: &Subplan) -> Option<(Plan, Expr)> {
    let base = subplan.param_base;
    let plan = subplan.plan.clone();
    // Per outer row, a volatile expression would be evaluated anew; here once per
    // inner row.
    if plan.schema.len() != 1 || plan.schema[0].ty != ty || plan_is_volatile(&plan) {
        return None;
    }
    // Anything below with an effect besides its value — a subquery, or a nested one
    // already turned into `single_row` (whose error must only come from the inner rows
    // the outer value selects) — would run for every inner row once the correlation
    // is pulled above it.
    if tree_has(&plan, &|e| e.has_side_effects()) {
        return None;
    }
    let value_ty = ty;
    let pulled = pull_up(plan, base)?;
    let (keys, outer) = equality_keys(&pulled.preds, base)?;
    let nkeys = keys.len();
    // [value, key…] → grouped by the keys: [key…, count(*), min(value)].
    let mut exprs = vec![Expr::column(0, value_ty)];
    let mut schema = vec![OutputColumn { name: "value".into(), ty: value_ty }];
    for (i, k) in keys.iter().enumerate() {
        exprs.push(k.clone());
        schema.push(OutputColumn { name: format!("key{i}"), ty: k.ty });
    }
    let keyed = Plan::new(Node::Project { input: Box::new(pulled.plan), exprs }, schema);
    let call = |func, arg: Option<Expr>, ty| crate::plan::AggCall {
        func,
        arg,
        arg2: None,
        distinct: false,
        order: Vec::new(),
        ty,
        udf: None,
    };
    let aggs = vec![call(AggFunc::CountStar, None, DataType::BigInt), call(AggFunc::Min, Some(Expr::column(0, value_ty)), value_ty)];
    let mut agg_schema: Vec<OutputColumn> =
        keys.iter().enumerate().map(|(i, k)| OutputColumn { name: format!("key{i}"), ty: k.ty }).collect();
    agg_schema.push(OutputColumn { name: "rows".into(), ty: DataType::BigInt });
    agg_schema.push(OutputColumn { name: "value".into(), ty: value_ty });
    let groups = (0..nkeys).map(|i| Expr::column(1 + i, keys[i].ty)).collect();
    let aggregate = Plan::new(Node::Aggregate { input: Box::new(keyed), groups, sets: Vec::new(), aggs, bee: None }, agg_schema);
    // → [value, key…, rows], the layout `left_join_on_keys` expects.
    let mut exprs = vec![Expr::column(nkeys + 1, value_ty)];
    let mut schema = vec![OutputColumn { name: "value".into(), ty: value_ty }];
    for i in 0..nkeys {
        exprs.push(Expr::column(i, keys[i].ty));
        schema.push(aggregate.schema[i].clone());
    }
    exprs.push(Expr::column(nkeys, DataType::BigInt));
    schema.push(OutputColumn { name: "rows".into(), ty: DataType::BigInt });
    let right = Plan::new(Node::Project { input: Box::new(aggregate), exprs }, schema);
    let nleft = cur.schema.len();
    let join = left_join_on_keys(cur, right, outer, base, s);
    let rows = Expr::column(nleft + 1 + nkeys, DataType::BigInt);
    let value = Expr::column(nleft, value_ty);
    let single = Expr::new(ExprKind::Func { func: crate::expr::Func::SingleRow, args: vec![rows, value] }, value_ty);
    Some((join, single))
}

/// The correlation conjuncts `preds` as `inner = outer` pairs: the inner sides (over
/// the subquery's columns) and the outer ones (parameters and constants only).
/// `None` when a conjunct is anything else, or there is none.
fn equality_keys(preds: &[Expr], base: usize) -> Option<(Vec<Expr>, Vec<Expr>)> {
    let mut keys = Vec::new();
    let mut outer = Vec::new();
    for p in preds {
        let ExprKind::Compare { op: crate::expr::CmpOp::Eq, left, right } = &p.kind else { return None };
        let inner_side = |e: &Expr| !uses_params(e, base) && !has_subquery(e);
        let outer_side = |e: &Expr| {
            let mut c = Vec::new();
            e.columns_used(&mut c);
            c.is_empty() && !has_subquery(e)
        };
        if inner_side(left) && outer_side(right) {
            keys.push((**left).clone());
            outer.push((**right).clone());
        } else if inner_side(right) && outer_side(left) {
            keys.push((**right).clone());
            outer.push((**left).clone());
        } else {
            return None;
        }
    }
    (!keys.is_empty()).then_some((keys, outer))
}

/// `cur` left-joined with `right` (whose columns are `[value, key…, …]`) on each
/// outer expression (over the subquery's parameters, rewritten over `cur`) equal to
/// its key.
fn left_join_on_keys(cur: &Plan, right: Plan, outer: Vec<Expr>, base: usize, s: &SubqueryExpr) -> Plan {
    let nleft = cur.schema.len();
    let on: Vec<Expr> = outer
        .into_iter()
        .enumerate()
        .map(|(i, o)| {
            let o = to_join(&o, 0, base, &s.correlated);
            let k = Expr::column(nleft + 1 + i, right.schema[1 + i].ty);
            Expr::new(ExprKind::Compare { op: crate::expr::CmpOp::Eq, left: Box::new(o), right: Box::new(k) }, DataType::Boolean)
        })
        .collect();
    let mut jschema = cur.schema.clone();
    jschema.extend(right.schema.iter().cloned());
    Plan::new(
        Node::Join {
            left: Box::new(cur.clone()),
            right: Box::new(right),
            kind: JoinKind::Left,
            on: and_all(on),
            left_keys: vec![],
            right_keys: vec![],
            method: JoinMethod::NestedLoop,
        },
        jschema,
    )
}

/// `e` with column `i` replaced by `values[i]`.
fn substitute_columns(e: &Expr, values: &[Expr]) -> Expr {
    let mut e = e.clone();
    fn go(e: &mut Expr, values: &[Expr]) {
        if let ExprKind::Column(i) = e.kind {
            *e = values[i].clone();
            return;
        }
        for_each_child_mut(e, &mut |c| go(c, values));
    }
    go(&mut e, values);
    e
}

/// Whether the subquery refers to a level above its parent (its correlated values use
/// the parent's own parameters): unnesting it would put those parameters into the
/// parent's joins, which would then have to be re-executed whole per outer row.
fn skips_level(s: &SubqueryExpr, base: usize) -> bool {
    s.correlated.iter().any(|e| uses_params(e, base))
}

fn has_subquery(e: &Expr) -> bool {
    matches!(e.kind, ExprKind::Subquery(_)) || e.children().iter().any(|c| has_subquery(c))
}

fn has_correlated_scalar(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Subquery(s) if matches!(s.kind, SubqueryKind::Scalar) && !s.correlated.is_empty() => true,
        _ => e.children().iter().any(|c| has_correlated_scalar(c)),
    }
}

/// Whether `e` reads a correlation parameter (numbered from `base`), including in the
/// correlated values it passes to a nested subquery.
fn uses_params(e: &Expr, base: usize) -> bool {
    matches!(e.kind, ExprKind::Param(k) if k >= base) || e.children().iter().any(|c| uses_params(c, base))
}

fn plan_uses_params(plan: &Plan, base: usize) -> bool {
    let mut found = false;
    for_each_expr(plan, &mut |e| found |= uses_params(e, base));
    found || plan.children().iter().any(|c| plan_uses_params(c, base))
}

/// Calls `f` on every expression of `plan`'s own node (not its children's).
fn for_each_expr(plan: &Plan, f: &mut dyn FnMut(&Expr)) {
    match &plan.node {
        Node::TableScan { filter, access, .. } => {
            filter.iter().for_each(&mut *f);
            if let crate::plan::Access::Index { eq, lower, upper, any, .. } = access {
                eq.iter().for_each(&mut *f);
                any.iter().for_each(&mut *f);
                lower.iter().chain(upper).for_each(|(e, _)| f(e));
            }
        }
        Node::Values { rows } => rows.iter().flatten().for_each(f),
        Node::Filter { predicate, .. } => f(predicate),
        Node::Project { exprs, .. } => exprs.iter().for_each(f),
        Node::Join { on, left_keys, right_keys, .. } => {
            on.iter().chain(left_keys).chain(right_keys).for_each(f);
        }
        Node::Aggregate { groups, aggs, .. } => {
            groups.iter().for_each(&mut *f);
            aggs.iter().flat_map(|a| a.args()).for_each(f);
        }
        Node::Sort { keys, .. } => keys.iter().for_each(|k| f(&k.expr)),
        Node::Window { specs, calls, .. } => {
            for s in specs {
                s.partition.iter().for_each(&mut *f);
                s.order.iter().for_each(|k| f(&k.expr));
                for b in [&s.frame.start, &s.frame.end] {
                    if let crate::plan::FrameBound::Preceding { offset, range_key }
                    | crate::plan::FrameBound::Following { offset, range_key } = b
                    {
                        f(offset);
                        range_key.iter().for_each(&mut *f);
                    }
                }
            }
            calls.iter().flat_map(|c| &c.args).for_each(f);
        }
        Node::Series { args } => args.iter().for_each(f),
        Node::Apply { params, .. } => params.iter().for_each(f),
        Node::Limit { .. }
        | Node::Distinct { .. }
        | Node::SetOp { .. }
        | Node::RecursiveUnion { .. }
        | Node::WorkTableScan { .. }
        | Node::CteScan { .. } => {}
    }
}

/// Every subquery id `e` refers to, directly.
fn subquery_ids(e: &Expr, out: &mut Vec<usize>) {
    if let ExprKind::Subquery(s) = &e.kind {
        out.push(s.id);
    }
    e.children().iter().for_each(|c| subquery_ids(c, out));
}

fn plan_subquery_ids(plan: &Plan, out: &mut Vec<usize>) {
    for_each_expr(plan, &mut |e| subquery_ids(e, out));
    plan.children().iter().for_each(|c| plan_subquery_ids(c, out));
}

fn renumber(plan: &mut Plan, map: &[usize]) {
    fn go(e: &mut Expr, map: &[usize]) {
        if let ExprKind::Subquery(s) = &mut e.kind {
            s.id = map[s.id];
        }
        for_each_child_mut(e, &mut |c| go(c, map));
    }
    plan.for_each_expr_mut(&mut |e| go(e, map));
}

/// Drops the subplans nothing refers to any more and renumbers the rest.
fn compact(mut plan: Plan, subs: Vec<Subplan>) -> (Plan, Vec<Subplan>) {
    let mut used = vec![false; subs.len()];
    let mut stack = Vec::new();
    plan_subquery_ids(&plan, &mut stack);
    while let Some(id) = stack.pop() {
        if id < used.len() && !used[id] {
            used[id] = true;
            plan_subquery_ids(&subs[id].plan, &mut stack);
        }
    }
    if used.iter().all(|&u| u) {
        return (plan, subs);
    }
    let mut map = vec![usize::MAX; subs.len()];
    let mut next = 0;
    for (id, &u) in used.iter().enumerate() {
        if u {
            map[id] = next;
            next += 1;
        }
    }
    let mut kept: Vec<Subplan> = subs.into_iter().zip(&used).filter(|(_, u)| **u).map(|(s, _)| s).collect();
    renumber(&mut plan, &map);
    for s in &mut kept {
        renumber(&mut s.plan, &map);
    }
    (plan, kept)
}
