//! The optimizer: rule-based rewrites of a bound plan before execution.
//!
//! 1. Predicates move down: a filter's conjuncts go below joins to the side they
//!    read (for inner joins, and to the preserved side's opposite only when safe), and
//!    into table scans.
//! 2. Join keys: equalities between an expression of the left input and one of the
//!    right input become hash-join keys.
//! 3. Access paths: a scan whose filter has equalities (or a range) on the leading
//!    columns of an index reads through that index.
//!
//! Before these, `decorrelate` turns subqueries into semi, anti and left joins
//! (switch: `SET optimizer_decorrelate = off`).
//!
//! Cost-based choices (join order, index vs heap by selectivity) come later.

pub mod decorrelate;

use crate::binder::query_util::{for_each_child_mut, shift_columns};
use crate::expr::{CmpOp, Expr, ExprKind};
use crate::plan::{Access, JoinKind, Node, Plan};
use crate::types::DataType;

/// Which optimizer rules a session runs (each can be switched off with `SET`, so its
/// effect can be measured).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rules {
    /// `optimizer_decorrelate`: subqueries become joins ([`decorrelate`]).
    pub decorrelate: bool,
}

impl Default for Rules {
    fn default() -> Rules {
        Rules { decorrelate: true }
    }
}

/// Optimizes a query and its subplans: decorrelation first (so the joins it makes
/// go through the join rules with the others), then the rewrites of [`optimize`].
pub fn optimize_query(plan: Plan, subqueries: Vec<crate::plan::Subplan>, rules: &Rules) -> crate::plan::BoundQuery {
    let (plan, subqueries) = if rules.decorrelate {
        decorrelate::decorrelate(plan, subqueries)
    } else {
        (plan, subqueries)
    };
    crate::plan::BoundQuery {
        plan: optimize(plan),
        subqueries: subqueries
            .into_iter()
            .map(|s| crate::plan::Subplan { plan: optimize(s.plan), ..s })
            .collect(),
    }
}

/// Applies the rewrites to `plan`.
pub fn optimize(plan: Plan) -> Plan {
    let plan = reorder_joins(plan);
    let plan = push_filters(plan);
    choose_access(plan)
}

/// Rewrites every column reference of `e` through `map` (old position → new).
fn remap(e: &mut Expr, map: &[usize]) {
    if let ExprKind::Column(i) = &mut e.kind {
        *i = map[*i];
        return;
    }
    for_each_child_mut(e, &mut |c| remap(c, map));
}

/// Flattens a tree of inner joins and the filters between them into its relations
/// and its conditions (over the combined columns, left to right).
fn flatten_inner(plan: Plan, offset: usize, rels: &mut Vec<Plan>, conds: &mut Vec<Expr>) {
    let inner_join = |p: &Plan| matches!(&p.node, Node::Join { kind: JoinKind::Inner, left_keys, .. } if left_keys.is_empty());
    let is_flattenable = inner_join(&plan)
        || matches!(&plan.node, Node::Filter { input, .. } if inner_join(input));
    if !is_flattenable {
        rels.push(reorder_joins(plan));
        return;
    }
    match plan.node {
        Node::Filter { input, predicate } => {
            let mut p = predicate;
            if offset > 0 {
                p = shift_columns(&p, offset);
            }
            conjuncts(p, conds);
            flatten_inner(*input, offset, rels, conds);
        }
        Node::Join { left, right, on, .. } => {
            let nleft = left.schema.len();
            if let Some(on) = on {
                let on = if offset > 0 { shift_columns(&on, offset) } else { on };
                conjuncts(on, conds);
            }
            flatten_inner(*left, offset, rels, conds);
            flatten_inner(*right, offset + nleft, rels, conds);
        }
        _ => unreachable!("checked above"),
    }
}

/// Orders a chain of three or more inner joins so that each relation joins the ones
/// before it through an equality when one exists (instead of a cross product in the
/// order of the FROM clause). A heuristic until the cost-based optimizer: no
/// statistics, the first relation stays first.
fn reorder_joins(plan: Plan) -> Plan {
    let is_chain = match &plan.node {
        Node::Join { kind: JoinKind::Inner, left_keys, .. } => left_keys.is_empty(),
        Node::Filter { input, .. } => {
            matches!(&input.node, Node::Join { kind: JoinKind::Inner, left_keys, .. } if left_keys.is_empty())
        }
        _ => false,
    };
    if !is_chain {
        return map_children(plan, reorder_joins);
    }
    let schema = plan.schema.clone();
    let mut rels = Vec::new();
    let mut conds = Vec::new();
    flatten_inner(plan, 0, &mut rels, &mut conds);
    // Column ranges of each relation in the original layout.
    let mut starts = Vec::with_capacity(rels.len());
    let mut off = 0;
    for r in &rels {
        starts.push(off);
        off += r.schema.len();
    }
    let rel_of = |c: usize| starts.iter().rposition(|&s| s <= c).expect("a relation");
    // Which pairs of relations an equality connects.
    let mut links: Vec<(usize, usize)> = Vec::new();
    for c in &conds {
        if let ExprKind::Compare { op: CmpOp::Eq, left, right } = &c.kind {
            let (a, b) = (columns_of(left), columns_of(right));
            if a.is_empty() || b.is_empty() {
                continue;
            }
            let ra: Vec<usize> = a.iter().map(|&x| rel_of(x)).collect();
            let rb: Vec<usize> = b.iter().map(|&x| rel_of(x)).collect();
            if ra.iter().all(|&r| r == ra[0]) && rb.iter().all(|&r| r == rb[0]) && ra[0] != rb[0] {
                links.push((ra[0], rb[0]));
            }
        }
    }
    let n = rels.len();
    let mut order = vec![0usize];
    let mut used = vec![false; n];
    used[0] = true;
    while order.len() < n {
        let next = (0..n)
            .filter(|&r| !used[r])
            .find(|&r| links.iter().any(|&(a, b)| (a == r && used[b]) || (b == r && used[a])))
            .or_else(|| (0..n).find(|&r| !used[r]))
            .expect("a relation left");
        used[next] = true;
        order.push(next);
    }
    // Old column → new column.
    let mut map = vec![0usize; off];
    let mut pos = 0;
    for &r in &order {
        for k in 0..rels[r].schema.len() {
            map[starts[r] + k] = pos;
            pos += 1;
        }
    }
    let mut slots: Vec<Option<Plan>> = rels.into_iter().map(Some).collect();
    let mut tree = slots[order[0]].take().expect("first relation");
    for &r in &order[1..] {
        let right = slots[r].take().expect("each relation once");
        let mut js = tree.schema.clone();
        js.extend(right.schema.iter().cloned());
        tree = Plan::new(
            Node::Join {
                left: Box::new(tree),
                right: Box::new(right),
                kind: JoinKind::Inner,
                on: None,
                left_keys: vec![],
                right_keys: vec![],
            },
            js,
        );
    }
    for c in &mut conds {
        remap(c, &map);
    }
    let tree = filter(tree, conds);
    let identity = map.iter().enumerate().all(|(i, &m)| i == m);
    if identity {
        return tree;
    }
    let exprs = (0..off).map(|old| Expr::column(map[old], schema[old].ty)).collect();
    Plan::new(Node::Project { input: Box::new(tree), exprs }, schema)
}

fn conjuncts(e: Expr, out: &mut Vec<Expr>) {
    match e.kind {
        ExprKind::And(v) => v.into_iter().for_each(|c| conjuncts(c, out)),
        ExprKind::Or(branches) => factor_or(branches, out),
        kind => out.push(Expr::new(kind, e.ty)),
    }
}

/// `(a AND b) OR (a AND c)` → `a AND (b OR c)`: a conjunct every branch has (TPC-H
/// Q19's join condition) becomes a conjunct of its own, so it can be a join key.
fn factor_or(branches: Vec<Expr>, out: &mut Vec<Expr>) {
    let split: Vec<Vec<Expr>> = branches
        .into_iter()
        .map(|b| {
            let mut v = Vec::new();
            match b.kind {
                ExprKind::And(items) => v.extend(items),
                kind => v.push(Expr::new(kind, b.ty)),
            }
            v
        })
        .collect();
    let common: Vec<Expr> = split[0]
        .iter()
        .filter(|c| split[1..].iter().all(|b| b.contains(c)))
        .cloned()
        .collect();
    let rest: Vec<Expr> = split
        .into_iter()
        .map(|b| {
            let left: Vec<Expr> = b.into_iter().filter(|c| !common.contains(c)).collect();
            and_all(left).unwrap_or_else(|| Expr::literal(crate::types::Value::Boolean(true), DataType::Boolean))
        })
        .collect();
    out.extend(common);
    // A branch left empty is TRUE, and so is the whole disjunction.
    if rest.iter().any(|b| matches!(b.kind, ExprKind::Literal(crate::types::Value::Boolean(true)))) {
        return;
    }
    out.push(Expr::new(ExprKind::Or(rest), DataType::Boolean));
}

pub(crate) fn and_all(mut v: Vec<Expr>) -> Option<Expr> {
    match v.len() {
        0 => None,
        1 => v.pop(),
        _ => Some(Expr::new(ExprKind::And(v), DataType::Boolean)),
    }
}

/// Whether evaluating `e` could have side effects on correctness if moved (subqueries
/// are kept in place: they may be correlated or expensive).
fn movable(e: &Expr) -> bool {
    !matches!(e.kind, ExprKind::Subquery(_)) && e.children().iter().all(|c| movable(c))
}

fn columns_of(e: &Expr) -> Vec<usize> {
    let mut v = Vec::new();
    e.columns_used(&mut v);
    v
}

fn unshift(e: &Expr, by: usize) -> Expr {
    let mut e = e.clone();
    fn go(e: &mut Expr, by: usize) {
        if let ExprKind::Column(i) = &mut e.kind {
            *i -= by;
            return;
        }
        for_each_child_mut(e, &mut |c| go(c, by));
    }
    go(&mut e, by);
    e
}

fn filter(input: Plan, preds: Vec<Expr>) -> Plan {
    match and_all(preds) {
        None => input,
        Some(p) => {
            let schema = input.schema.clone();
            Plan::new(
                Node::Filter {
                    input: Box::new(input),
                    predicate: p,
                },
                schema,
            )
        }
    }
}

/// Pushes `preds` (over `plan`'s output) as far down as they go.
fn push_into(plan: Plan, preds: Vec<Expr>) -> Plan {
    let Plan { node, schema } = plan;
    match node {
        Node::Filter { input, predicate } => {
            let mut all = preds;
            conjuncts(predicate, &mut all);
            push_into(*input, all)
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
                    JoinKind::Left | JoinKind::Semi | JoinKind::Anti if mov && left_only => to_left.push(p),
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
                if movable(&p) {
                    if let ExprKind::Compare { op: CmpOp::Eq, left: a, right: b } = &p.kind {
                        let ca = columns_of(a);
                        let cb = columns_of(b);
                        let a_left = !ca.is_empty() && ca.iter().all(|&c| c < nleft);
                        let a_right = !ca.is_empty() && ca.iter().all(|&c| c >= nleft);
                        let b_left = !cb.is_empty() && cb.iter().all(|&c| c < nleft);
                        let b_right = !cb.is_empty() && cb.iter().all(|&c| c >= nleft);
                        if a_left && b_right {
                            left_keys.push((**a).clone());
                            right_keys.push(unshift(b, nleft));
                            continue;
                        }
                        if a_right && b_left {
                            left_keys.push((**b).clone());
                            right_keys.push(unshift(a, nleft));
                            continue;
                        }
                    }
                    match kind {
                        JoinKind::Inner | JoinKind::Semi | JoinKind::Anti if right_only => {
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
                residual.push(p);
            }
            let left = push_into(*left, to_left);
            let right = push_into(*right, to_right);
            let join = Plan::new(
                Node::Join {
                    left: Box::new(left),
                    right: Box::new(right),
                    kind,
                    on: and_all(residual),
                    left_keys,
                    right_keys,
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
            let input = push_into(*input, below);
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
        other => {
            let plan = Plan::new(other, schema);
            let plan = map_children(plan, push_filters);
            filter(plan, preds)
        }
    }
}

/// `p` rewritten over a projection's input, when every column it reads is a plain
/// column or constant of the projection.
fn substitute(p: &Expr, exprs: &[Expr]) -> Option<Expr> {
    let mut ok = true;
    let mut q = p.clone();
    fn go(e: &mut Expr, exprs: &[Expr], ok: &mut bool) {
        if let ExprKind::Column(i) = e.kind {
            match exprs.get(i) {
                Some(x) if matches!(x.kind, ExprKind::Column(_) | ExprKind::Literal(_)) => *e = x.clone(),
                _ => *ok = false,
            }
            return;
        }
        for_each_child_mut(e, &mut |c| go(c, exprs, ok));
    }
    go(&mut q, exprs, &mut ok);
    ok.then_some(q)
}

fn push_filters(plan: Plan) -> Plan {
    push_into(plan, Vec::new())
}

fn map_children(plan: Plan, f: fn(Plan) -> Plan) -> Plan {
    let Plan { node, schema } = plan;
    let b = |p: Box<Plan>| Box::new(f(*p));
    let node = match node {
        Node::Filter { input, predicate } => Node::Filter { input: b(input), predicate },
        Node::Project { input, exprs } => Node::Project { input: b(input), exprs },
        Node::Aggregate { input, groups, aggs } => Node::Aggregate { input: b(input), groups, aggs },
        Node::Sort { input, keys } => Node::Sort { input: b(input), keys },
        Node::Limit { input, limit, offset } => Node::Limit { input: b(input), limit, offset },
        Node::Distinct { input } => Node::Distinct { input: b(input) },
        Node::SetOp { op, all, left, right } => Node::SetOp { op, all, left: b(left), right: b(right) },
        Node::Join { left, right, kind, on, left_keys, right_keys } => Node::Join {
            left: b(left),
            right: b(right),
            kind,
            on,
            left_keys,
            right_keys,
        },
        n @ (Node::TableScan { .. } | Node::Values { .. }) => n,
    };
    Plan::new(node, schema)
}

/// Whether `e` is a constant for the scan (literals and parameters).
fn is_bound(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Literal(_) | ExprKind::Param(_) => true,
        ExprKind::Column(_) | ExprKind::Subquery(_) => false,
        _ => e.children().iter().all(|c| is_bound(c)),
    }
}

fn choose_access(plan: Plan) -> Plan {
    let plan = map_children(plan, choose_access);
    let Plan { node, schema } = plan;
    let Node::TableScan {
        table,
        columns,
        filter: Some(f),
        access: Access::Heap,
        with_tid,
        bees,
    } = node
    else {
        return Plan::new(node, schema);
    };
    let mut parts = Vec::new();
    conjuncts(f.clone(), &mut parts);
    // For each conjunct: (table column, op, bound expr).
    let mut preds: Vec<(usize, CmpOp, Expr)> = Vec::new();
    for p in &parts {
        let ExprKind::Compare { op, left, right } = &p.kind else { continue };
        let (col, op, val) = match (&left.kind, &right.kind) {
            (ExprKind::Column(c), _) if is_bound(right) => (*c, *op, (**right).clone()),
            (_, ExprKind::Column(c)) if is_bound(left) => (*c, op.flip(), (**left).clone()),
            _ => continue,
        };
        if op == CmpOp::NotEq {
            continue;
        }
        let tcol = columns[col];
        // The key must compare exactly as the column: same type on both sides.
        if table.columns[tcol].ty != left.ty || left.ty != right.ty {
            continue;
        }
        preds.push((tcol, op, val));
    }
    let mut best: Option<(usize, usize, Access)> = None;
    for (ix, index) in table.indexes.iter().enumerate() {
        let mut eq = Vec::new();
        for &kc in &index.columns {
            match preds.iter().find(|(c, op, _)| *c == kc && *op == CmpOp::Eq) {
                Some((_, _, v)) => eq.push(v.clone()),
                None => break,
            }
        }
        let mut lower = None;
        let mut upper = None;
        if eq.len() < index.columns.len() {
            let next = index.columns[eq.len()];
            for (c, op, v) in &preds {
                if *c != next {
                    continue;
                }
                match op {
                    CmpOp::Gt => lower = Some((v.clone(), false)),
                    CmpOp::GtEq => lower = Some((v.clone(), true)),
                    CmpOp::Lt => upper = Some((v.clone(), false)),
                    CmpOp::LtEq => upper = Some((v.clone(), true)),
                    _ => {}
                }
            }
        }
        let score = eq.len() * 2 + usize::from(lower.is_some()) + usize::from(upper.is_some());
        let full_unique = index.unique && eq.len() == index.columns.len();
        let score = score + if full_unique { 100 } else { 0 };
        if score > 0 && best.as_ref().is_none_or(|(s, _, _)| score > *s) {
            best = Some((score, ix, Access::Index { index: ix, eq, lower, upper }));
        }
    }
    let access = best.map(|(_, _, a)| a).unwrap_or(Access::Heap);
    Plan::new(
        Node::TableScan {
            table,
            columns,
            filter: Some(f),
            access,
            with_tid,
            bees,
        },
        schema,
    )
}
