//! EXPLAIN: a plan as an indented, PostgreSQL-like tree of lines, with the
//! executor's counters under EXPLAIN ANALYZE.

use super::{Access, AggFunc, FrameBound, FrameUnits, JoinKind, Node, Plan, SetOpKind, WindowFunc};
use crate::exec::Profile;
use crate::expr::{Expr, ExprKind, Func};

/// The lines of the plan tree. Node ids are pre-order indexes, as the executor's
/// [`Profile`] keys them; with a profile each line ends with
/// `(actual rows=N loops=L time=X ms)` (time inclusive of the node's inputs), and for a
/// scan that join key filters thinned, `(removed by key filter: N)`.
pub fn explain(plan: &Plan, profile: Option<&Profile>) -> Vec<String> {
    explain_with(plan, profile, &Options::default())
}

/// What EXPLAIN prints besides the plan's shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// Each node's estimated rows and cost, `(rows=R cost=C)` (`EXPLAIN (COSTS OFF)`
    /// hides them, as in PostgreSQL, so plan shapes can be compared as text).
    pub costs: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options { costs: true }
    }
}

/// [`explain`] with `options`.
pub fn explain_with(plan: &Plan, profile: Option<&Profile>, options: &Options) -> Vec<String> {
    let mut lines = Vec::new();
    let mut id = 0;
    // Under EXPLAIN ANALYZE a CTE's plan is shown under the reader that ran it
    // (with its counters), else under its first reader.
    let mut runners = Vec::new();
    if let Some(p) = profile {
        let mut next = 0;
        cte_runners(plan, p, &mut next, &mut runners);
    }
    let mut ctes_shown = Vec::new();
    walk(plan, profile, options, 0, &mut id, &mut lines, &mut ctes_shown, &runners);
    lines
}

/// The materialized CTEs whose plan ran under one of their readers, with that
/// reader's pre-order id.
fn cte_runners(plan: &Plan, profile: &Profile, id: &mut usize, out: &mut Vec<(super::CteId, usize)>) {
    let my_id = *id;
    *id += 1;
    if let Node::CteScan { cte, .. } = &plan.node
        && profile.node(my_id + 1).is_some()
        && !out.iter().any(|(c, _)| c == cte)
    {
        out.push((*cte, my_id));
    }
    for c in plan.children() {
        stacker::maybe_grow(128 * 1024, 2 * 1024 * 1024, || cte_runners(c, profile, id, out));
    }
}

/// Appends the lines of `plan`'s subtree. A materialized CTE's plan is shown under
/// one reader only (`ctes_shown`: the reader that ran it, from `runners`, else the
/// first); the other readers read its rows.
#[allow(clippy::too_many_arguments)]
fn walk(
    plan: &Plan,
    profile: Option<&Profile>,
    options: &Options,
    depth: usize,
    id: &mut usize,
    lines: &mut Vec<String>,
    ctes_shown: &mut Vec<(super::CteId, usize)>,
    runners: &[(super::CteId, usize)],
) {
    let my_id = *id;
    *id += 1;
    let mut line = String::new();
    if depth > 0 {
        line.push_str(&" ".repeat(2 + 6 * (depth - 1)));
        line.push_str("->  ");
    }
    line.push_str(&describe(plan));
    if options.costs
        && let Some(est) = plan.est
    {
        line.push_str(&format!("  (rows={:.0} cost={:.2})", est.rows.max(1.0), est.cost));
    }
    if let Some(p) = profile {
        match p.node(my_id) {
            Some(n) => {
                line.push_str(&format!(
                    "  (actual rows={} loops={} time={:.3} ms)",
                    n.rows,
                    n.loops,
                    n.time.as_secs_f64() * 1000.0
                ));
                if n.key_filtered > 0 {
                    line.push_str(&format!("  (removed by key filter: {})", n.key_filtered));
                }
                if n.spilled_rows > 0 {
                    line.push_str(&format!(
                        "  (spilled: {} rows, {} kB)",
                        n.spilled_rows,
                        n.spilled_bytes.div_ceil(1024)
                    ));
                }
            }
            None => line.push_str("  (never executed)"),
        }
    }
    lines.push(line);
    if let Node::CteScan { cte, plan: inner, .. } = &plan.node {
        let here = match runners.iter().find(|(c, _)| c == cte) {
            Some(&(_, runner)) => runner == my_id,
            None => !ctes_shown.iter().any(|(c, _)| c == cte),
        };
        if !here {
            *id += crate::exec::node_count(inner);
            return;
        }
        ctes_shown.push((*cte, my_id));
    }
    for c in plan.children() {
        // Deep plans (long UNION chains) recurse on fresh stack segments.
        stacker::maybe_grow(128 * 1024, 2 * 1024 * 1024, || {
            walk(c, profile, options, depth + 1, id, lines, ctes_shown, runners)
        });
    }
}

fn col_name(plan: &Plan, i: usize) -> String {
    plan.schema
        .get(i)
        .map_or_else(|| format!("${i}"), |c| c.name.clone())
}

/// The input columns' names a node's expressions refer to.
fn input_names(plan: &Plan) -> Vec<String> {
    match &plan.node {
        Node::TableScan {
            table,
            columns,
            with_tid,
            ..
        } => {
            let mut v: Vec<String> = columns
                .iter()
                .map(|&c| table.columns[c].name.clone())
                .collect();
            if *with_tid {
                v.push("ctid".into());
            }
            v
        }
        Node::Join { left, right, .. } => {
            let mut v: Vec<String> = (0..left.schema.len()).map(|i| col_name(left, i)).collect();
            v.extend((0..right.schema.len()).map(|i| col_name(right, i)));
            v
        }
        _ => match plan.children().first() {
            Some(c) => (0..c.schema.len()).map(|i| col_name(c, i)).collect(),
            None => Vec::new(),
        },
    }
}

fn describe(plan: &Plan) -> String {
    let names = input_names(plan);
    let e = |x: &Expr| fmt_expr(x, &names);
    let list = |xs: &[Expr], names: &[String]| {
        xs.iter()
            .map(|x| fmt_expr(x, names))
            .collect::<Vec<_>>()
            .join(", ")
    };
    match &plan.node {
        Node::TableScan {
            table,
            filter,
            access,
            bees,
            ..
        } => {
            let mut s = match access {
                Access::Heap => format!("Seq Scan on {}", table.name),
                Access::Index {
                    index,
                    eq,
                    lower,
                    upper,
                    skip_nulls,
                    backward,
                    any,
                } => {
                    let idx = &table.indexes[*index];
                    let dir = if *backward { " Backward" } else { "" };
                    let mut s = format!("Index Scan{dir} using {} on {}", idx.name, table.name);
                    let mut conds = Vec::new();
                    for (k, x) in eq.iter().enumerate() {
                        conds.push(format!(
                            "{} = {}",
                            table.columns[idx.columns[k]].name,
                            fmt_expr(x, &[])
                        ));
                    }
                    if let Some(&c) = idx.columns.get(eq.len())
                        && !any.is_empty()
                    {
                        let values: Vec<String> = any.iter().map(|x| fmt_expr(x, &[])).collect();
                        conds.push(format!("{} = ANY ({})", table.columns[c].name, values.join(", ")));
                    } else if let Some(&c) = idx.columns.get(eq.len()) {
                        let name = &table.columns[c].name;
                        if let Some((x, inc)) = lower {
                            conds.push(format!(
                                "{name} {} {}",
                                if *inc { ">=" } else { ">" },
                                fmt_expr(x, &[])
                            ));
                        }
                        if let Some((x, inc)) = upper {
                            conds.push(format!(
                                "{name} {} {}",
                                if *inc { "<=" } else { "<" },
                                fmt_expr(x, &[])
                            ));
                        }
                        if *skip_nulls && lower.is_none() && upper.is_none() {
                            conds.push(format!("{name} IS NOT NULL"));
                        }
                    }
                    if !conds.is_empty() {
                        s.push_str(&format!("  index cond: {}", conds.join(" AND ")));
                    }
                    s
                }
            };
            let mut filter = filter.as_ref();
            if let Some(b) = bees {
                let p = &b.0;
                let (kind, info) = match &p.scan {
                    Some(bee) => ("scan", bee.info()),
                    None => ("deform", p.relation.deform.info()),
                };
                s.push_str(&format!("  bee: {kind}, {} ({})", info.maker, info.reason));
                if let Some(x) = &p.pushed {
                    s.push_str(&format!("  bee filter: {}", e(x)));
                }
                filter = p.residual.as_ref();
            }
            if let Some(f) = filter {
                s.push_str(&format!("  filter: {}", e(f)));
            }
            s
        }
        Node::Values { rows } => format!("Values ({} rows)", rows.len()),
        Node::Filter { predicate, .. } => format!("Filter  filter: {}", e(predicate)),
        Node::Project { exprs, .. } => format!("Project  {}", list(exprs, &names)),
        Node::Join {
            left,
            right,
            kind,
            on,
            left_keys,
            right_keys,
            method,
        } => {
            let k = match kind {
                JoinKind::Inner => "inner",
                JoinKind::Left => "left",
                JoinKind::Right => "right",
                JoinKind::Full => "full",
                JoinKind::Semi => "semi",
                JoinKind::Anti => "anti",
                JoinKind::Mark => "mark",
            };
            let mut s = if left_keys.is_empty() || *method == super::JoinMethod::NestedLoop {
                format!("Nested Loop ({k})")
            } else {
                let ln: Vec<String> = (0..left.schema.len()).map(|i| col_name(left, i)).collect();
                let rn: Vec<String> = (0..right.schema.len())
                    .map(|i| col_name(right, i))
                    .collect();
                let keys: Vec<String> = left_keys
                    .iter()
                    .zip(right_keys)
                    .map(|(l, r)| format!("{} = {}", fmt_expr(l, &ln), fmt_expr(r, &rn)))
                    .collect();
                match method {
                    super::JoinMethod::IndexNestedLoop { .. } => {
                        format!("Index Nested Loop ({k})  keys: {}", keys.join(", "))
                    }
                    super::JoinMethod::Hash { build, key_filter, bee } => {
                        let mut s = format!("Hash Join ({k})  keys: {}", keys.join(", "));
                        if *build == super::JoinSide::Left {
                            s.push_str("  build: left");
                        }
                        if *key_filter {
                            // The scan columns of the streamed input that test the
                            // held keys (`key_source`).
                            let sources = match build {
                                super::JoinSide::Right => super::key_source::filterable_keys(left, left_keys, right_keys),
                                super::JoinSide::Left => super::key_source::filterable_keys(right, right_keys, left_keys),
                            };
                            let named: Vec<String> = sources
                                .iter()
                                .map(|(_, src)| format!("{}.{}", src.table.name, src.table.columns[src.column].name))
                                .collect();
                            s.push_str(&format!("  key filter: {}", named.join(", ")));
                        }
                        if let Some(b) = bee {
                            let info = b.0.info();
                            s.push_str(&format!("  bee: join, {} ({})", info.maker, info.reason));
                        }
                        s
                    }
                    super::JoinMethod::NestedLoop => format!("Nested Loop ({k})"),
                }
            };
            if let Some(on) = on {
                s.push_str(&format!("  on: {}", e(on)));
            }
            if plan.workers > 1 {
                // A join holding its left rows runs its right input on the workers
                // as the probe, any other hash join as the build.
                let probe = matches!(method, super::JoinMethod::Hash { build: super::JoinSide::Left, .. });
                s.push_str(&format!("  {} workers: {}", if probe { "probe" } else { "build" }, plan.workers));
            }
            s
        }
        Node::Aggregate { groups, sets, aggs, bee, .. } => {
            let mut s = if !sets.is_empty() {
                // One hash table per grouping set, each written as PostgreSQL writes
                // a set: `(a, b)`, `(a)`, `()`.
                let sets: Vec<String> = sets
                    .iter()
                    .map(|set| {
                        let members: Vec<String> = set.iter().map(|&i| fmt_expr(&groups[i], &names)).collect();
                        format!("({})", members.join(", "))
                    })
                    .collect();
                format!("HashAggregate  grouping sets: {}", sets.join(", "))
            } else if groups.is_empty() {
                "Aggregate".to_string()
            } else {
                format!("HashAggregate  group: {}", list(groups, &names))
            };
            let a: Vec<String> = aggs
                .iter()
                .map(|a| {
                    if a.func == AggFunc::CountStar {
                        return "count(*)".to_string();
                    }
                    let f = a.name();
                    let arg = a
                        .args()
                        .take(a.args().count() - a.order.len())
                        .map(|x| fmt_expr(x, &names))
                        .collect::<Vec<_>>()
                        .join(", ");
                    let order = if a.order.is_empty() {
                        String::new()
                    } else {
                        let keys: Vec<String> = a
                            .order
                            .iter()
                            .map(|k| {
                                let mut s = fmt_expr(&k.expr, &names);
                                if k.desc {
                                    s.push_str(" DESC");
                                }
                                if k.nulls_first != k.desc {
                                    s.push_str(if k.nulls_first { " NULLS FIRST" } else { " NULLS LAST" });
                                }
                                s
                            })
                            .collect();
                        format!(" ORDER BY {}", keys.join(", "))
                    };
                    format!("{f}({}{arg}{order})", if a.distinct { "DISTINCT " } else { "" })
                })
                .collect();
            if !a.is_empty() {
                s.push_str(&format!("  aggs: {}", a.join(", ")));
            }
            if let Some(b) = bee {
                let info = b.0.info();
                s.push_str(&format!("  bee: aggregate, {} ({})", info.maker, info.reason));
            }
            if plan.workers > 1 {
                s.push_str(&format!("  workers: {}", plan.workers));
            }
            s
        }
        Node::Sort { keys, bee, .. } => {
            let k: Vec<String> = keys
                .iter()
                .map(|k| {
                    let mut s = e(&k.expr);
                    if k.desc {
                        s.push_str(" DESC");
                    }
                    if k.nulls_first != k.desc {
                        s.push_str(if k.nulls_first {
                            " NULLS FIRST"
                        } else {
                            " NULLS LAST"
                        });
                    }
                    s
                })
                .collect();
            let mut s = format!("Sort  key: {}", k.join(", "));
            if let Some(b) = bee {
                let info = b.0.info();
                s.push_str(&format!("  bee: sort, {} ({})", info.maker, info.reason));
            }
            s
        }
        Node::Limit { limit, offset, .. } => {
            let mut s = "Limit".to_string();
            if let Some(l) = limit {
                s.push_str(&format!("  limit: {l}"));
            }
            if *offset > 0 {
                s.push_str(&format!("  offset: {offset}"));
            }
            s
        }
        Node::Distinct { .. } => "HashDistinct".to_string(),
        Node::Window { specs, calls, .. } => {
            let mut parts = Vec::new();
            for (i, w) in specs.iter().enumerate() {
                let mut s = String::new();
                if !w.partition.is_empty() {
                    s.push_str(&format!("partition: {}  ", list(&w.partition, &names)));
                }
                if !w.order.is_empty() {
                    let k: Vec<String> = w
                        .order
                        .iter()
                        .map(|k| format!("{}{}", e(&k.expr), if k.desc { " DESC" } else { "" }))
                        .collect();
                    s.push_str(&format!("order: {}  ", k.join(", ")));
                }
                let bound = |b: &FrameBound| match b {
                    FrameBound::UnboundedPreceding => "UNBOUNDED PRECEDING".to_string(),
                    FrameBound::Preceding { offset, .. } => format!("{} PRECEDING", e(offset)),
                    FrameBound::CurrentRow => "CURRENT ROW".to_string(),
                    FrameBound::Following { offset, .. } => format!("{} FOLLOWING", e(offset)),
                    FrameBound::UnboundedFollowing => "UNBOUNDED FOLLOWING".to_string(),
                };
                let units = match w.frame.units {
                    FrameUnits::Rows => "ROWS",
                    FrameUnits::Range => "RANGE",
                    FrameUnits::Groups => "GROUPS",
                };
                let c: Vec<String> = calls
                    .iter()
                    .filter(|c| c.spec == i)
                    .map(|c| format!("{}({})", window_func_name(c.func), list(&c.args, &names)))
                    .collect();
                s.push_str(&format!(
                    "frame: {units} BETWEEN {} AND {}  calls: {}",
                    bound(&w.frame.start),
                    bound(&w.frame.end),
                    c.join(", ")
                ));
                parts.push(s);
            }
            format!("WindowAgg  {}", parts.join("; "))
        }
        Node::SetOp { op, all, .. } => {
            let o = match op {
                SetOpKind::Union => "Union",
                SetOpKind::Intersect => "Intersect",
                SetOpKind::Except => "Except",
            };
            format!("{o}{}", if *all { " All" } else { "" })
        }
        Node::RecursiveUnion { name, distinct, .. } => {
            format!("Recursive Union{} on {name}", if *distinct { "" } else { " All" })
        }
        Node::WorkTableScan { name, .. } => format!("WorkTable Scan on {name}"),
        Node::CteScan { cte, name, .. } => format!("CTE Scan on {name}  (materialized CTE {})", cte.0 + 1),
        Node::Series { .. } => "Function Scan on generate_series".to_string(),
    }
}

/// The SQL name of a window function.
pub fn window_func_name(f: WindowFunc) -> &'static str {
    match f {
        WindowFunc::RowNumber => "row_number",
        WindowFunc::Rank => "rank",
        WindowFunc::DenseRank => "dense_rank",
        WindowFunc::PercentRank => "percent_rank",
        WindowFunc::CumeDist => "cume_dist",
        WindowFunc::Ntile => "ntile",
        WindowFunc::Lag => "lag",
        WindowFunc::Lead => "lead",
        WindowFunc::FirstValue => "first_value",
        WindowFunc::LastValue => "last_value",
        WindowFunc::NthValue => "nth_value",
        WindowFunc::Agg(a) => a.name(),
    }
}

/// A short SQL-like rendering of an expression, naming columns by `names`.
pub fn fmt_expr(e: &Expr, names: &[String]) -> String {
    let f = |x: &Expr| stacker::maybe_grow(128 * 1024, 2 * 1024 * 1024, || fmt_expr(x, names));
    match &e.kind {
        ExprKind::Column(i) => names.get(*i).cloned().unwrap_or_else(|| format!("#{i}")),
        ExprKind::Literal(v) => {
            if v.is_null() {
                "NULL".into()
            } else if e.ty.is_string() {
                format!("'{}'", v.to_string().replace('\'', "''"))
            } else {
                v.to_string()
            }
        }
        ExprKind::Param(n) => format!("${}", n + 1),
        ExprKind::Cast { expr, .. } => format!("{}::{}", f(expr), e.ty),
        ExprKind::Neg(x) => format!("-{}", f(x)),
        ExprKind::Arith { op, left, right } => {
            let o = op.symbol();
            format!("({} {o} {})", f(left), f(right))
        }
        ExprKind::Compare { op, left, right } => {
            let o = op.symbol();
            format!("({} {o} {})", f(left), f(right))
        }
        ExprKind::IsDistinctFrom {
            left,
            right,
            negated,
        } => {
            format!(
                "({} IS {}DISTINCT FROM {})",
                f(left),
                if *negated { "NOT " } else { "" },
                f(right)
            )
        }
        ExprKind::And(v) => format!("({})", v.iter().map(f).collect::<Vec<_>>().join(" AND ")),
        ExprKind::Or(v) => format!("({})", v.iter().map(f).collect::<Vec<_>>().join(" OR ")),
        ExprKind::Not(x) => format!("NOT {}", f(x)),
        ExprKind::IsNull { expr, negated } => format!(
            "({} IS {}NULL)",
            f(expr),
            if *negated { "NOT " } else { "" }
        ),
        ExprKind::IsBool {
            expr,
            value,
            negated,
        } => {
            format!(
                "({} IS {}{})",
                f(expr),
                if *negated { "NOT " } else { "" },
                if *value { "TRUE" } else { "FALSE" }
            )
        }
        ExprKind::Case { .. } => "CASE … END".into(),
        ExprKind::InList {
            expr,
            list,
            negated,
        } => format!(
            "({} {}IN ({}))",
            f(expr),
            if *negated { "NOT " } else { "" },
            list.iter().map(f).collect::<Vec<_>>().join(", ")
        ),
        ExprKind::Like {
            expr,
            pattern,
            negated,
            case_insensitive,
            ..
        } => format!(
            "({} {}{} {})",
            f(expr),
            if *negated { "NOT " } else { "" },
            if *case_insensitive { "ILIKE" } else { "LIKE" },
            f(pattern)
        ),
        ExprKind::Coalesce(v) => format!(
            "COALESCE({})",
            v.iter().map(f).collect::<Vec<_>>().join(", ")
        ),
        ExprKind::Func { func: Func::Concat, args } => format!(
            "({})",
            args.iter().map(f).collect::<Vec<_>>().join(" || ")
        ),
        ExprKind::Func { func: Func::CurrentDate, .. } => "CURRENT_DATE".to_string(),
        ExprKind::Func { func, args } => format!(
            "{}({})",
            func.sql_name(),
            args.iter().map(f).collect::<Vec<_>>().join(", ")
        ),
        ExprKind::Udf { udf, args } => format!(
            "{}({})",
            udf.name,
            args.iter().map(f).collect::<Vec<_>>().join(", ")
        ),
        ExprKind::Extract { field, expr } => format!("EXTRACT({field:?} FROM {})", f(expr)),
        ExprKind::Subquery(s) => format!("(SubPlan {})", s.id + 1),
    }
}
