//! The last pass: physical choices and estimates.
//!
//! - Every join gets its method: a hash join (building on the right input) when it has
//!   equality keys, a nested loop otherwise.
//! - Rule `optimizer_index_join`: a hash join one of whose inputs is a table scan
//!   with an index on its key columns becomes an index nested-loop join when one
//!   lookup per row of the other input is estimated cheaper ([`index_join`]). The
//!   index's leading columns may also be columns the scan's filter pins to a constant
//!   (`s_w_id = $1`), looked up with the join keys ([`pinned_columns`]).
//! - Rule `optimizer_build_side`: a join whose left input is estimated smaller than
//!   its right swaps them (left and right outer joins trade kinds), so the hash table
//!   holds the smaller input; a projection restores the column order. Semi, anti and
//!   mark joins keep their sides; a semi or anti hash join whose right input is
//!   estimated more than twice its left builds on its left input instead
//!   (`JoinSide::Left`: the left rows are held and marked by the streaming right rows).
//! - A semi, anti or mark join's right input is narrowed to the columns its keys and `on`
//!   read ([`narrow_semi_build`]): the join outputs only its left columns, and a hash
//!   join's build side should hold nothing it never reads.
//! - The method switches ([`super::methods`]): with `enable_hashjoin = off` an index
//!   nested loop is taken whatever it costs, and a hash join left over becomes a
//!   nested loop; with `enable_nestloop = off` no index nested loop is considered.
//! - Every node gets its estimated rows and cost ([`crate::plan::Estimate`]).

use super::{Rules, Stats, cardinality, cost, remap};
use crate::expr::{Expr, ExprKind};
use crate::plan::{Estimate, JoinKind, JoinMethod, JoinSide, Node, Plan};

/// Applies the physical choices to `plan` bottom-up and sets every node's estimates.
pub fn finish(plan: Plan, rules: &Rules, stats: &dyn Stats) -> Plan {
    let plan = super::map_children(plan, &mut |p| finish(p, rules, stats));
    let plan = set_method(plan);
    let plan = if rules.index_join { index_join(plan, rules, stats) } else { plan };
    let plan = if !rules.methods.hashjoin && rules.methods.nestloop { super::methods::without_hash(plan) } else { plan };
    let plan = narrow_semi_build(plan);
    let plan = if rules.build_side { smaller_on_right(plan, stats) } else { plan };
    merge_projections(estimate(plan, stats))
}

/// A projection over a projection of plain columns (join reordering and a swap of
/// inputs each restore a column order) becomes one projection, which costs what the
/// two did less the inner one's own work.
fn merge_projections(plan: Plan) -> Plan {
    let Plan { node, schema, mut est, .. } = plan;
    let node = match node {
        Node::Project { input, mut exprs } => match input.node {
            Node::Project { input: inner, exprs: inner_exprs }
                if inner_exprs.iter().all(|e| matches!(e.kind, ExprKind::Column(_))) =>
            {
                let map: Vec<usize> = inner_exprs
                    .iter()
                    .map(|e| match e.kind {
                        ExprKind::Column(c) => c,
                        _ => 0,
                    })
                    .collect();
                for e in &mut exprs {
                    remap(e, &map);
                }
                if let (Some(e), Some(i), Some(ii)) = (est.as_mut(), input.est, inner.est) {
                    e.cost -= i.cost - ii.cost;
                }
                Node::Project { input: inner, exprs }
            }
            other => Node::Project { input: Box::new(Plan { node: other, schema: input.schema, est: input.est, workers: 1 }), exprs },
        },
        node => node,
    };
    Plan { node, schema, est, workers: 1 }
}

fn set_method(mut plan: Plan) -> Plan {
    if let Node::Join { left_keys, method, .. } = &mut plan.node {
        *method = if left_keys.is_empty() {
            JoinMethod::NestedLoop
        } else {
            JoinMethod::Hash { build: JoinSide::Right, key_filter: false, bee: None }
        };
    }
    plan
}

/// A semi, anti or mark join reads of its right input only the columns of its keys and of
/// `on`: puts a projection of those columns over the right input (TPC-H Q21's EXISTS
/// over lineitem built a hash table of all sixteen lineitem columns and ran out of
/// `memory_limit` at SF 1).
fn narrow_semi_build(mut plan: Plan) -> Plan {
    // An index nested-loop join keeps no build side: nothing to narrow.
    let Node::Join { left, right, kind: JoinKind::Semi | JoinKind::Anti | JoinKind::Mark, on, right_keys, method, .. } =
        &mut plan.node
    else {
        return plan;
    };
    if matches!(method, JoinMethod::IndexNestedLoop { .. }) {
        return plan;
    }
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
    // The projection's estimates: its input's rows, and their cost plus one
    // evaluation per row (as `estimate` would set them).
    let est = input.est.map(|e| Estimate { rows: e.rows, cost: e.cost + e.rows * cost::EVAL_ROW });
    **right = Plan { node: Node::Project { input: Box::new(input), exprs }, schema, est, workers: 1 };
    plan
}

/// Sets `plan`'s estimates from its inputs' (which are set). The right scan of an
/// index nested-loop join is estimated per lookup (as PostgreSQL shows an inner index
/// scan per loop); the join's rows come from the whole right table.
fn estimate(mut plan: Plan, stats: &dyn Stats) -> Plan {
    if let Node::Join { left, right, method: JoinMethod::IndexNestedLoop { .. }, .. } = &plan.node {
        let (l, per_lookup) = (left.est.map_or(0.0, |e| e.rows), right.est.map_or(0.0, |e| e.rows));
        let rows = cardinality::node_rows(&plan, &[l, cardinality::node_rows(right, &[], stats)], stats);
        let own = cost::node_cost(&plan, rows, &[l, per_lookup], stats);
        plan.est = Some(Estimate { rows, cost: left.est.map_or(0.0, |e| e.cost) + own });
        return plan;
    }
    let children = plan.children();
    let inputs: Vec<f64> = children.iter().map(|c| c.est.map_or(0.0, |e| e.rows)).collect();
    let mut input_cost: f64 = children.iter().map(|c| c.est.map_or(0.0, |e| e.cost)).sum();
    let rows = cardinality::node_rows(&plan, &inputs, stats);
    // A Limit over a pipeline (projections and filters over a scan) stops it early:
    // it pays its share of the input's cost. Over anything that must read its whole
    // input first (sort, aggregate, join build) it pays all of it.
    if let Node::Limit { input, .. } = &plan.node
        && streams(input)
        && inputs[0] > 0.0
    {
        input_cost *= (rows / inputs[0]).min(1.0);
    }
    let own = cost::node_cost(&plan, rows, &inputs, stats);
    plan.est = Some(Estimate { rows, cost: input_cost + own });
    plan
}

/// Whether `plan` hands out rows as it reads them, from a table scan through
/// projections and filters only.
fn streams(plan: &Plan) -> bool {
    match &plan.node {
        Node::TableScan { .. } => true,
        Node::Project { input, .. } | Node::Filter { input, .. } => super::deep(|| streams(input)),
        _ => false,
    }
}

/// How many times larger than its left input a semi or anti join's right input must
/// be estimated before the join builds on the left: holding the left rows (all
/// columns) costs more per row than holding only the right keys.
const LEFT_BUILD_RATIO: f64 = 2.0;

/// Swaps a join's inputs when the left is estimated smaller (see the module comment);
/// a semi or anti hash join, whose sides cannot swap, builds on its left input
/// instead ([`JoinSide::Left`]).
fn smaller_on_right(mut plan: Plan, stats: &dyn Stats) -> Plan {
    if let Node::Join { left, right, kind: JoinKind::Semi | JoinKind::Anti, method, .. } = &mut plan.node
        && matches!(method, JoinMethod::Hash { build: JoinSide::Right, .. })
        && cardinality::rows(left, stats) * LEFT_BUILD_RATIO < cardinality::rows(right, stats)
    {
        *method = JoinMethod::Hash { build: JoinSide::Left, key_filter: false, bee: None };
        return plan;
    }
    let swap = match &plan.node {
        Node::Join { left, right, kind, method, .. } => {
            !kind.is_left_only()
                && !matches!(method, JoinMethod::IndexNestedLoop { .. })
                && cardinality::rows(left, stats) < cardinality::rows(right, stats)
        }
        _ => false,
    };
    if !swap {
        return plan;
    }
    swap_inputs(plan, stats)
}

/// A join with its inputs swapped (left and right outer joins trade kinds), under a
/// projection that restores the column order. `plan` is a join other than semi or
/// anti; anything else comes back as it is.
fn swap_inputs(plan: Plan, stats: &dyn Stats) -> Plan {
    let Plan { node, schema, est, .. } = plan;
    let Node::Join { left, right, kind, on, left_keys, right_keys, method } = node else {
        return Plan { node, schema, est, workers: 1 };
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

/// Rule `optimizer_index_join`: a hash join whose right input (or, for an inner join,
/// left input) is a table scan with an index on its join key columns becomes an index
/// nested-loop join when that is estimated cheaper — one index lookup per row of the
/// other input instead of reading the whole table (Wisconsin's joinAselB: 1,000 rows
/// of one side against a million-row table). Decided before the build side, with
/// the hash join costed on its cheaper orientation.
fn index_join(plan: Plan, rules: &Rules, stats: &dyn Stats) -> Plan {
    let Node::Join { left, right, kind, left_keys, right_keys, method: JoinMethod::Hash { .. }, .. } = &plan.node else {
        return plan;
    };
    if left_keys.is_empty() || !(matches!(kind, JoinKind::Inner | JoinKind::Left) || kind.is_left_only()) {
        return plan;
    }
    let est = |p: &Plan| p.est.unwrap_or_default();
    let (l, r) = (est(left), est(right));
    let out = cardinality::rows(&plan, stats);
    let (probe, build) = if rules.build_side && *kind == JoinKind::Inner { (l.rows.max(r.rows), l.rows.min(r.rows)) } else { (l.rows, r.rows) };
    // `enable_hashjoin = off`: any index nested loop beats the hash join.
    let hash = if rules.methods.hashjoin { l.cost + r.cost + cost::hash_join(probe, build, out) } else { f64::INFINITY };
    let inl = |outer: crate::plan::Estimate, lk: &Lookup| outer.cost + cost::index_nested_loop(outer.rows, lk.per_lookup, lk.row_cost, out);
    // The right input looked up per left row; for an inner join also the other way.
    let as_is = lookup(right, right_keys, left_keys, stats).map(|lk| (inl(l, &lk), lk, false));
    let swapped = if *kind == JoinKind::Inner { lookup(left, left_keys, right_keys, stats) } else { None };
    let swapped = swapped.map(|lk| (inl(r, &lk), lk, true));
    let best = match (as_is, swapped) {
        (Some(a), Some(b)) => Some(if b.0 < a.0 { b } else { a }),
        (a, b) => a.or(b),
    };
    match best {
        Some((c, lk, false)) if c < hash => lk.apply(plan),
        Some((c, lk, true)) if c < hash => {
            let mut p = swap_inputs(plan, stats);
            if let Node::Project { input, .. } = &mut p.node {
                let join = std::mem::replace(&mut **input, Plan::one_row());
                **input = estimate(lk.apply(join), stats);
            }
            p
        }
        _ => plan,
    }
}

/// How a join's right input can be looked up through an index.
struct Lookup {
    index: usize,
    /// Key pairs added to the join's (outer constant, inner column): index columns the
    /// inner scan's filter pins to a constant ([`pinned_columns`]), looked up with the
    /// join keys.
    extra: Vec<(Expr, Expr)>,
    /// The key positions (the join's keys, then `extra`) in index column order.
    order: Vec<usize>,
    /// Right rows fetched per lookup, and the cost of fetching one.
    per_lookup: f64,
    row_cost: f64,
}

impl Lookup {
    /// `join` as an index nested-loop join: keys in index order, the right scan
    /// naming the index and estimated per lookup.
    fn apply(self, mut join: Plan) -> Plan {
        if let Node::Join { right, left_keys, right_keys, method, .. } = &mut join.node {
            for (outer, inner) in self.extra {
                left_keys.push(outer);
                right_keys.push(inner);
            }
            *left_keys = self.order.iter().map(|&k| left_keys[k].clone()).collect();
            *right_keys = self.order.iter().map(|&k| right_keys[k].clone()).collect();
            *method = JoinMethod::IndexNestedLoop { index: self.index };
            if let Node::TableScan { access, .. } = &mut right.node {
                *access = crate::plan::Access::Index {
                    index: self.index,
                    eq: Vec::new(),
                    lower: None,
                    upper: None,
                    skip_nulls: false,
                    any: Vec::new(),
                    backward: false,
                };
            }
            right.est = Some(Estimate {
                rows: self.per_lookup,
                cost: cost::INDEX_DESCENT + self.per_lookup * self.row_cost,
            });
        }
        join
    }
}

/// Whether `inner` (one input of a join) is a table scan with an index whose leading
/// columns are exactly the `inner_keys` columns (each a plain column of the same type
/// as its `outer_keys` counterpart), or, failing that, those columns together with
/// columns the scan's filter pins to a constant ([`pinned_columns`]: TPC-C's
/// StockLevel joins `stock` on `s_i_id = ol_i_id` with `s_w_id = $1`, and the primary
/// key is `(s_w_id, s_i_id)`); and what a lookup costs.
fn lookup(inner: &Plan, inner_keys: &[Expr], outer_keys: &[Expr], stats: &dyn Stats) -> Option<Lookup> {
    let Node::TableScan { table, columns, with_tid: false, .. } = &inner.node else { return None };
    let mut key_cols = Vec::with_capacity(inner_keys.len());
    for (ok, ik) in outer_keys.iter().zip(inner_keys) {
        let ExprKind::Column(c) = ik.kind else { return None };
        let tc = *columns.get(c)?;
        if ok.ty != table.columns[tc].ty || ik.ty != ok.ty || key_cols.contains(&tc) {
            return None;
        }
        key_cols.push(tc);
    }
    let n = key_cols.len();
    let exact = table
        .indexes
        .iter()
        .enumerate()
        .filter(|(_, i)| i.columns.len() >= n && i.columns[..n].iter().all(|c| key_cols.contains(c)))
        .min_by_key(|(_, i)| i.columns.len());
    // Failing an index on the join keys alone: one whose leading columns are the join
    // keys and pinned columns, all join keys among them.
    let (index, idx, extra) = match exact {
        Some((index, idx)) => (index, idx, Vec::new()),
        None => {
            // (scan column, table column, constant), join key columns left out.
            let pinned: Vec<(usize, usize, Expr)> = pinned_columns(inner)
                .into_iter()
                .filter(|(_, tc, _)| !key_cols.contains(tc))
                .collect();
            if pinned.is_empty() {
                return None;
            }
            let is_pinned = |c: &usize| pinned.iter().any(|p| p.1 == *c);
            let (index, idx, m) = table
                .indexes
                .iter()
                .enumerate()
                .filter_map(|(x, i)| {
                    let m = i.columns.iter().take_while(|c| key_cols.contains(c) || is_pinned(c)).count();
                    key_cols.iter().all(|k| i.columns[..m].contains(k)).then_some((x, i, m))
                })
                .min_by_key(|(_, i, m)| (i.columns.len() - m, i.columns.len()))?;
            let mut extra = Vec::new();
            for c in &idx.columns[..m] {
                if let Some((sc, tc, k)) = pinned.iter().find(|p| p.1 == *c) {
                    key_cols.push(*tc);
                    extra.push((k.clone(), Expr::column(*sc, table.columns[*tc].ty)));
                }
            }
            (index, idx, extra)
        }
    };
    let n = key_cols.len();
    let order: Vec<usize> = idx.columns[..n].iter().map(|c| key_cols.iter().position(|k| k == c).unwrap_or(0)).collect();
    let table_rows = cardinality::table_rows(table, stats);
    let per_lookup = if idx.unique && idx.columns.len() == n {
        1.0
    } else {
        let distinct: f64 = inner_keys
            .iter()
            .chain(extra.iter().map(|(_, e)| e))
            .map(|k| match k.kind {
                ExprKind::Column(c) => cardinality::distinct(inner, c, table_rows, stats),
                _ => 1.0,
            })
            .product();
        (table_rows / distinct.max(1.0)).max(1.0)
    };
    Some(Lookup { index, extra, order, per_lookup, row_cost: cost::index_row(table, index, stats) })
}

/// The columns of a table scan's output its filter pins to one value: conjuncts
/// `column = constant` (a non-NULL literal or a parameter, of the column's type), for
/// integer and date columns only, where `=` is identity and an index lookup finds
/// exactly the rows the comparison keeps (the filter stays on the scan anyway). As
/// (scan column, table column, the constant).
fn pinned_columns(scan: &Plan) -> Vec<(usize, usize, Expr)> {
    use crate::expr::CmpOp;
    use crate::types::DataType;
    let Node::TableScan { table, columns, filter: Some(f), .. } = &scan.node else { return Vec::new() };
    let mut parts = Vec::new();
    super::conjuncts(f.clone(), &mut parts);
    let constant = |e: &Expr| match &e.kind {
        ExprKind::Literal(v) => !v.is_null(),
        ExprKind::Param(_) => true,
        _ => false,
    };
    let mut out: Vec<(usize, usize, Expr)> = Vec::new();
    for p in parts {
        let ExprKind::Compare { op: CmpOp::Eq, left, right } = &p.kind else { continue };
        let (c, k) = match (&left.kind, &right.kind) {
            (ExprKind::Column(c), _) if constant(right) => (*c, (**right).clone()),
            (_, ExprKind::Column(c)) if constant(left) => (*c, (**left).clone()),
            _ => continue,
        };
        let Some(&tc) = columns.get(c) else { continue };
        let ty = table.columns[tc].ty;
        let exact = matches!(ty, DataType::SmallInt | DataType::Integer | DataType::BigInt | DataType::Date);
        if exact && ty == k.ty && !out.iter().any(|(x, ..)| *x == c) {
            out.push((c, tc, k));
        }
    }
    out
}
