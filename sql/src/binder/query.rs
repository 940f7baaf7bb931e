//! Binding queries: WITH, set operations, SELECT, FROM with joins, ORDER BY, LIMIT,
//! views and system tables.

use std::collections::HashMap;

use sqlparser::ast;

use super::expr::{AggState, output_name};
use super::scope::{Scope, ScopeColumn};
use super::types::common_type;
use super::{Binder, CteDef, Frame, Recursion, ident, is_unknown, object_name};
use crate::error::{Error, Result};
use crate::expr::{CmpOp, Expr, ExprKind};
use crate::plan::{Access, JoinKind, Node, OutputColumn, Plan, Schema, SetOpKind, SortKey, WorkTableId};
use crate::types::{DataType, Value};

/// A select-list item: an expression with its output name, or a column `*` expanded
/// to.
enum Item<'x> {
    Expr(&'x ast::Expr, String),
    Column(Expr, String),
}

fn out(name: impl Into<String>, ty: DataType) -> OutputColumn {
    OutputColumn {
        name: name.into(),
        ty,
    }
}

fn project(input: Plan, exprs: Vec<Expr>, names: Vec<String>) -> Plan {
    let schema = exprs
        .iter()
        .zip(names)
        .map(|(e, n)| out(n, e.ty))
        .collect::<Vec<_>>();
    Plan::new(
        Node::Project {
            input: Box::new(input),
            exprs,
        },
        schema,
    )
}

impl Binder<'_> {
    pub fn bind_query(&mut self, q: &ast::Query) -> Result<Plan> {
        crate::stack::guarded(|| self.bind_query_guarded(q))
    }

    fn bind_query_guarded(&mut self, q: &ast::Query) -> Result<Plan> {
        let first_subquery = self.subqueries.len();
        let pushed = if let Some(with) = &q.with {
            let order = if with.recursive {
                self.with_recursive_order(with)?
            } else {
                (0..with.cte_tables.len()).collect()
            };
            self.ctes.push(HashMap::new());
            for cte in order.into_iter().map(|k| &with.cte_tables[k]) {
                let name = ident(&cte.alias.name);
                if self.ctes.last().expect("pushed").contains_key(&name) {
                    self.ctes.pop();
                    return Err(Error::semantic(
                        "42712",
                        format!("WITH query name \"{name}\" specified more than once"),
                    )
                    .at(crate::parser::span_offset(self.sql, cte.alias.name.span)));
                }
                let mut plan = if with.recursive {
                    self.bind_recursive_cte(cte, &name)?
                } else {
                    self.bind_query(&cte.query)?
                };
                if !cte.alias.columns.is_empty() {
                    if cte.alias.columns.len() > plan.schema.len() {
                        return Err(Error::semantic(
                            "42P10",
                            format!(
                                "WITH query \"{name}\" has {} columns available but {} columns specified",
                                plan.schema.len(),
                                cte.alias.columns.len()
                            ),
                        ));
                    }
                    for (c, a) in plan.schema.iter_mut().zip(&cte.alias.columns) {
                        c.name = ident(&a.name);
                    }
                }
                let materialized = cte.materialized.as_ref().map(|m| matches!(m, ast::CteAsMaterialized::Materialized));
                let correlated = plan_reads_params(&plan, self.param_count);
                let id = crate::plan::CteId(self.next_cte);
                self.next_cte += 1;
                if plan_is_volatile(&plan) || reads_cte(&plan, &self.volatile_ctes) {
                    self.volatile_ctes.insert(id);
                }
                let def = CteDef {
                    plan,
                    id,
                    refs: std::cell::Cell::new(0),
                    materialized,
                    correlated,
                    level: self.frames.len() - 1,
                    recursion: None,
                };
                self.ctes.last_mut().expect("pushed").insert(name, def);
            }
            true
        } else {
            false
        };
        let r = self.bind_query_body(q);
        if pushed {
            let defs = self.ctes.pop().expect("pushed");
            let mut plan = r?;
            self.settle_ctes(defs, &mut plan, first_subquery);
            return Ok(plan);
        }
        r
    }

    /// Decides, once the query of a WITH is bound, which of its CTEs are
    /// materialized, as PostgreSQL 12+ does: one referenced more than once or
    /// calling a volatile function (a sequence, an application function), unless
    /// `NOT MATERIALIZED`, and any `MATERIALIZED` one; a correlated CTE never is.
    /// Then it puts each CTE's plan at its references (`Node::CteScan` placeholders
    /// until now), in `plan`, in the subqueries bound since `first_subquery` and in
    /// the plans of the other CTEs of the list: a materialized CTE's reference holds
    /// the plan, an inlined one's becomes the plan itself, so filters push into it as
    /// into a derived table. The plans are moved, not copied, where a CTE is read
    /// once, so a chain of CTEs each reading the one before settles in linear time
    /// and memory; the CTEs nothing reads are dropped (they never run).
    fn settle_ctes(&mut self, defs: HashMap<String, CteDef>, plan: &mut Plan, first_subquery: usize) {
        use crate::plan::CteId;
        if defs.is_empty() {
            return;
        }
        let mut defs: Vec<CteDef> = defs.into_values().collect();
        // A CTE's plan reads only CTEs bound before it (ids are given in binding order).
        defs.sort_by_key(|d| d.id.0);
        let mut settled: HashMap<CteId, Settled> = defs
            .iter()
            .filter(|d| !d.correlated)
            .map(|d| {
                let materialize = match d.materialized {
                    Some(forced) => forced,
                    None => d.refs.get() > 1 || self.volatile_ctes.contains(&d.id),
                };
                (d.id, Settled { inline: !materialize, uses: 0, plan: None })
            })
            .collect();
        if settled.is_empty() {
            return;
        }
        // The placeholders each CTE's plan must fill: in the query and its subqueries,
        // then in the plans of the CTEs that are read themselves (latest first, so a
        // CTE's count is complete before the CTEs it reads are counted).
        count_cte_scans(plan, &mut settled);
        for s in &self.subqueries[first_subquery..] {
            count_cte_scans(&s.plan, &mut settled);
        }
        for d in defs.iter().rev() {
            if settled.get(&d.id).is_some_and(|s| s.uses > 0) {
                count_cte_scans(&d.plan, &mut settled);
            }
        }
        for d in defs {
            let Some(s) = settled.get(&d.id) else { continue };
            if s.uses == 0 {
                continue;
            }
            let mut p = d.plan;
            fill_cte_scans(&mut p, &mut settled);
            settled.get_mut(&d.id).expect("counted").plan = Some(p);
        }
        fill_cte_scans(plan, &mut settled);
        for s in &mut self.subqueries[first_subquery..] {
            fill_cte_scans(&mut s.plan, &mut settled);
        }
        debug_assert!(settled.values().all(|s| s.uses == 0 && s.plan.is_none()), "a CTE placeholder left unfilled");
    }

    fn bind_query_body(&mut self, q: &ast::Query) -> Result<Plan> {
        if !q.locks.is_empty() {
            return Err(Error::not_supported("FOR UPDATE / FOR SHARE").at(self.pos(q)));
        }
        if let Some(f) = &q.fetch {
            if f.percent {
                return Err(Error::not_supported("FETCH … PERCENT").at(self.pos(q)));
            }
            // FETCH goes with OFFSET, not with LIMIT (PostgreSQL: a syntax error).
            if let Some(ast::LimitClause::LimitOffset { limit: Some(_), .. } | ast::LimitClause::OffsetCommaLimit { .. }) =
                &q.limit_clause
            {
                return Err(Error::syntax("LIMIT and FETCH FIRST cannot be used together").at(self.pos(q)));
            }
        }
        let order: Vec<&ast::OrderByExpr> = match &q.order_by {
            None => vec![],
            Some(ob) => match &ob.kind {
                ast::OrderByKind::Expressions(v) => v.iter().collect(),
                ast::OrderByKind::All(_) => return Err(Error::not_supported("ORDER BY ALL")),
            },
        };
        let mut plan = match &*q.body {
            ast::SetExpr::Select(s) => self.bind_select(s, &order)?,
            other => {
                let plan = self.bind_set_expr(other)?;
                if order.is_empty() {
                    plan
                } else {
                    self.sort_by_output(plan, &order)?
                }
            }
        };
        let mut limit = None;
        let mut offset = 0;
        if let Some(lc) = &q.limit_clause {
            let (l, o) = match lc {
                ast::LimitClause::LimitOffset { limit, offset, limit_by } => {
                    if !limit_by.is_empty() {
                        return Err(Error::not_supported("LIMIT BY"));
                    }
                    (limit.as_ref(), offset.as_ref().map(|o| &o.value))
                }
                ast::LimitClause::OffsetCommaLimit { offset, limit } => (Some(limit), Some(offset)),
            };
            if let Some(e) = l {
                limit = self.const_count(e, "LIMIT")?;
            }
            if let Some(e) = o {
                offset = self.const_count(e, "OFFSET")?.unwrap_or(0);
            }
        }
        if let Some(f) = &q.fetch {
            limit = match &f.quantity {
                None => Some(1),
                Some(e) => self.const_count(e, "FETCH")?,
            };
            if f.with_ties {
                let Some(count) = limit else {
                    return Err(Error::data(
                        "2201W",
                        "row count cannot be null in FETCH FIRST ... WITH TIES clause",
                    )
                    .at(self.pos(q)));
                };
                return with_ties(plan, count, offset).ok_or_else(|| {
                    Error::syntax("WITH TIES cannot be specified without ORDER BY clause").at(self.pos(q))
                });
            }
        }
        if limit.is_some() || offset > 0 || q.limit_clause.is_some() || q.fetch.is_some() {
            let schema = plan.schema.clone();
            plan = Plan::new(
                Node::Limit {
                    input: Box::new(plan),
                    limit,
                    offset,
                },
                schema,
            );
        }
        Ok(plan)
    }

    /// A LIMIT/OFFSET count: a non-negative constant (NULL = none).
    fn const_count(&mut self, e: &ast::Expr, what: &str) -> Result<Option<u64>> {
        let b = self.bind_expr(e, "LIMIT")?;
        let b = self.cast(b, DataType::BigInt, false, e)?;
        match b.kind {
            ExprKind::Literal(Value::Null) => Ok(None),
            ExprKind::Literal(Value::BigInt(n)) if n >= 0 => Ok(Some(n as u64)),
            ExprKind::Literal(Value::BigInt(_)) => Err(Error::data(
                "2201W",
                format!("{what} must not be negative"),
            )
            .at(self.pos(e))),
            _ => Err(Error::not_supported(format!("a {what} that is not a constant")).at(self.pos(e))),
        }
    }

    fn bind_set_expr(&mut self, s: &ast::SetExpr) -> Result<Plan> {
        crate::stack::guarded(|| self.bind_set_expr_guarded(s))
    }

    fn bind_set_expr_guarded(&mut self, s: &ast::SetExpr) -> Result<Plan> {
        match s {
            ast::SetExpr::Select(sel) => self.bind_select(sel, &[]),
            ast::SetExpr::Query(q) => self.bind_query(q),
            ast::SetExpr::Values(v) => self.bind_values(v),
            ast::SetExpr::SetOperation {
                left,
                op,
                set_quantifier,
                right,
            } => {
                let l = self.bind_set_expr(left)?;
                let r = self.bind_set_expr(right)?;
                let kind = match op {
                    ast::SetOperator::Union => SetOpKind::Union,
                    ast::SetOperator::Intersect => SetOpKind::Intersect,
                    ast::SetOperator::Except | ast::SetOperator::Minus => SetOpKind::Except,
                };
                let all = match set_quantifier {
                    ast::SetQuantifier::All => true,
                    ast::SetQuantifier::Distinct | ast::SetQuantifier::None => false,
                    _ => return Err(Error::not_supported("BY NAME set operations")),
                };
                let opname = match kind {
                    SetOpKind::Union => "UNION",
                    SetOpKind::Intersect => "INTERSECT",
                    SetOpKind::Except => "EXCEPT",
                };
                if l.schema.len() != r.schema.len() {
                    return Err(Error::semantic(
                        "42601",
                        format!("each {opname} query must have the same number of columns"),
                    )
                    .at(self.pos(&**right)));
                }
                let mut types = Vec::new();
                for (i, (a, b)) in l.schema.iter().zip(&r.schema).enumerate() {
                    let l_unknown = unknown_column(&l, i) && !typed_item(left, i);
                    let r_unknown = unknown_column(&r, i) && !typed_item(right, i);
                    if l_unknown && !r_unknown {
                        types.push(b.ty);
                        continue;
                    }
                    if r_unknown {
                        types.push(a.ty);
                        continue;
                    }
                    let t = common_type(&a.ty, &b.ty).ok_or_else(|| {
                        Error::datatype_mismatch(format!(
                            "{opname} types {} and {} cannot be matched",
                            super::types::type_name(&a.ty),
                            super::types::type_name(&b.ty)
                        ))
                    })?;
                    types.push(match t {
                        DataType::Char(_) if a.ty != b.ty => DataType::Text,
                        t => t,
                    });
                }
                let l = cast_plan(l, &types);
                let r = cast_plan(r, &types);
                let schema = l.schema.clone();
                Ok(Plan::new(
                    Node::SetOp {
                        op: kind,
                        all,
                        left: Box::new(l),
                        right: Box::new(r),
                    },
                    schema,
                ))
            }
            ast::SetExpr::Table(_) => Err(Error::not_supported("TABLE t")),
            _ => Err(Error::not_supported("this statement inside a query")),
        }
    }

    fn bind_values(&mut self, v: &ast::Values) -> Result<Plan> {
        let width = v.rows.first().map_or(0, |r| r.content.len());
        let mut rows = Vec::with_capacity(v.rows.len());
        for r in &v.rows {
            if r.content.len() != width {
                return Err(Error::semantic("42601", "VALUES lists must all be the same length")
                    .at(self.pos(&r.content[0])));
            }
        }
        // Column types: unify each column across rows.
        let mut cols: Vec<Vec<Expr>> = Vec::with_capacity(width);
        for c in 0..width {
            let items: Vec<&ast::Expr> = v.rows.iter().map(|r| &r.content[c]).collect();
            cols.push(self.bind_unified(&items, "VALUES", "UNION")?);
        }
        for i in 0..v.rows.len() {
            rows.push(cols.iter().map(|c| c[i].clone()).collect::<Vec<_>>());
        }
        let schema = (0..width)
            .map(|c| out(format!("column{}", c + 1), cols[c].first().map_or(DataType::Text, |e| e.ty)))
            .collect::<Vec<_>>();
        Ok(Plan::new(Node::Values { rows }, schema))
    }

    /// ORDER BY over a finished relation (set operations): output names or positions.
    fn sort_by_output(&mut self, plan: Plan, order: &[&ast::OrderByExpr]) -> Result<Plan> {
        let mut keys = Vec::new();
        for o in order {
            let idx = match &o.expr {
                ast::Expr::Value(v) => match &v.value {
                    ast::Value::Number(n, _) => n
                        .parse::<usize>()
                        .ok()
                        .filter(|&i| i >= 1 && i <= plan.schema.len())
                        .map(|i| i - 1),
                    _ => None,
                },
                ast::Expr::Identifier(i) => {
                    let n = ident(i);
                    plan.schema.iter().position(|c| c.name == n)
                }
                _ => None,
            };
            let idx = idx.ok_or_else(|| {
                Error::semantic(
                    "42P10",
                    "invalid ORDER BY over UNION/INTERSECT/EXCEPT: only result column names or positions",
                )
                .at(self.pos(&o.expr))
            })?;
            keys.push(sort_key(Expr::column(idx, plan.schema[idx].ty), &o.options).map_err(|e| e.at(self.pos(&o.expr)))?);
        }
        let schema = plan.schema.clone();
        Ok(Plan::new(
            Node::Sort {
                input: Box::new(plan),
                keys,
                bee: None,
            },
            schema,
        ))
    }

    fn bind_select(&mut self, s: &ast::Select, order: &[&ast::OrderByExpr]) -> Result<Plan> {
        if s.into.is_some() || s.top.is_some() || s.qualify.is_some() {
            return Err(Error::not_supported("this SELECT clause").at(self.pos(s)));
        }
        // FROM
        // A SELECT nested in an aggregated query has its own aggregation state.
        let outer_agg = self.agg.take();
        self.outer_aggs.push(outer_agg);
        // Window functions belong to the SELECT they appear in, never an outer one.
        let outer_window = self.take_windows();
        let from = self.bind_from(&s.from);
        let (mut plan, scope) = match from {
            Ok(x) => x,
            Err(e) => {
                self.agg = self.outer_aggs.pop().expect("pushed");
                self.window = outer_window;
                return Err(e);
            }
        };
        let saved = self.set_scope(scope.clone());
        let r = self.bind_select_rest(s, order, &mut plan, scope);
        self.set_scope(saved);
        self.agg = self.outer_aggs.pop().expect("pushed");
        self.window = outer_window;
        r?;
        Ok(plan)
    }

    fn bind_select_rest(
        &mut self,
        s: &ast::Select,
        order: &[&ast::OrderByExpr],
        plan: &mut Plan,
        scope: Scope,
    ) -> Result<()> {
        if let Some(w) = &s.selection {
            let pred = self.bind_bool_clause(w, "WHERE")?;
            take_plan(plan, |p| {
                let schema = p.schema.clone();
                Plan::new(
                    Node::Filter {
                        input: Box::new(p),
                        predicate: pred,
                    },
                    schema,
                )
            });
        }
        // Select list items (wildcards expanded).
        let mut items: Vec<Item> = Vec::new();
        for it in &s.projection {
            match it {
                ast::SelectItem::UnnamedExpr(e) => items.push(Item::Expr(e, output_name(e))),
                ast::SelectItem::ExprWithAlias { expr, alias } => {
                    items.push(Item::Expr(expr, ident(alias)))
                }
                ast::SelectItem::Wildcard(_) => {
                    if scope.columns.is_empty() {
                        return Err(Error::semantic("42601", "SELECT * with no tables specified is not valid")
                            .at(self.pos(it)));
                    }
                    for &i in &scope.star {
                        let c = &scope.columns[i];
                        items.push(Item::Column(c.expr.clone(), c.name.clone()));
                    }
                }
                ast::SelectItem::QualifiedWildcard(kind, _) => {
                    let ast::SelectItemQualifiedWildcardKind::ObjectName(n) = kind else {
                        return Err(Error::not_supported("expression.*"));
                    };
                    let t = object_name(n)?;
                    if !scope.has_table(&t) {
                        return Err(Scope::missing_table(&t, std::iter::once(&scope)).at(self.pos(it)));
                    }
                    for c in scope.columns.iter().filter(|c| c.table.as_deref() == Some(&t) && !c.unqualified_only) {
                        items.push(Item::Column(c.expr.clone(), c.name.clone()));
                    }
                }
                ast::SelectItem::ExprWithAliases { .. } => {
                    return Err(Error::not_supported("multiple aliases"));
                }
            }
        }
        let group_by: Vec<&ast::Expr> = match &s.group_by {
            ast::GroupByExpr::Expressions(v, mods) => {
                if !mods.is_empty() {
                    return Err(Error::not_supported("GROUP BY modifiers"));
                }
                v.iter().collect()
            }
            ast::GroupByExpr::All(_) => return Err(Error::not_supported("GROUP BY ALL")),
        };
        // GROUPING SETS, ROLLUP, CUBE and `()`: the sets as lists of expressions
        // (`None` for a plain GROUP BY list).
        let grouping_sets = grouping_sets(&group_by)?;
        let aggregating = !group_by.is_empty()
            || s.having.is_some()
            || items.iter().any(|i| matches!(i, Item::Expr(e, _) if self.has_own_aggregate(e)))
            || order.iter().any(|o| self.has_own_aggregate(&o.expr));
        if !aggregating {
            let snapshot = self.snapshot();
            self.begin_windows(s)?;
            match self.bind_output(items_to_vec(&items), s, order, false) {
                Ok((exprs, names, _, keys, hidden, on)) => {
                    return self.finish_select(plan, exprs, names, keys, hidden, on, s);
                }
                // An aggregate in a subquery belongs to this level (`select (select
                // max(o.a)) from t o`): bind the output again as an aggregation.
                Err(_) if self.outer_agg_request == Some(self.frames.len() - 1) => {
                    self.outer_agg_request = None;
                    self.restore(snapshot);
                }
                Err(e) => return Err(e),
            }
        }
        {
            // Groups: an output alias or position, else an expression over FROM; each
            // distinct expression once, the grouping sets as lists of their indexes.
            let mut groups = Vec::new();
            let mut sets = Vec::new();
            match &grouping_sets {
                None => {
                    for g in &group_by {
                        self.bind_group_item(g, &items, &scope, &mut groups)?;
                    }
                }
                Some(expr_sets) => {
                    for set in expr_sets {
                        let mut members = Vec::with_capacity(set.len());
                        for g in set {
                            members.push(self.bind_group_item(g, &items, &scope, &mut groups)?);
                        }
                        members.sort_unstable();
                        members.dedup();
                        sets.push(members);
                    }
                    // One set is a plain GROUP BY (`GROUPING SETS ((a, b))`, `()`).
                    if sets.len() == 1 {
                        sets.clear();
                    }
                }
            }
            // The post-aggregation scope: grouped plain columns stay visible by name.
            let mut post = Scope::default();
            for c in &scope.columns {
                if let Some(gi) = groups.iter().position(|g| *g == c.expr) {
                    let mut c2: ScopeColumn = c.clone();
                    c2.expr = Expr::column(gi, c.ty);
                    post.columns.push(c2);
                }
            }
            self.agg = Some(AggState {
                level: self.frames.len() - 1,
                groups,
                sets,
                aggs: Vec::new(),
                from_scope: scope.clone(),
            });
            self.set_scope(post);
            self.begin_windows(s)?;
            let r = self.bind_output(items_to_vec(&items), s, order, true);
            let state = self.agg.take().expect("aggregate state");
            let (exprs, names, having, keys, hidden, on) = r?;
            // Output names for EXPLAIN: a grouped column keeps its name, an aggregate
            // is named by its function.
            let mut schema: Vec<OutputColumn> = state
                .groups
                .iter()
                .enumerate()
                .map(|(i, g)| match g.kind {
                    ExprKind::Column(c) => out(plan.schema[c].name.clone(), g.ty),
                    _ => out(format!("group{i}"), g.ty),
                })
                .collect();
            if !state.sets.is_empty() {
                schema.push(out("grouping set", DataType::Integer));
            }
            schema.extend(state.aggs.iter().map(|a| {
                out(a.func.name(), a.ty)
            }));
            take_plan(plan, |p| {
                Plan::new(
                    Node::Aggregate {
                        input: Box::new(p),
                        groups: state.groups,
                        sets: state.sets,
                        aggs: state.aggs,
                        bee: None,
                    },
                    schema,
                )
            });
            if let Some(h) = having {
                take_plan(plan, |p| {
                    let schema = p.schema.clone();
                    Plan::new(Node::Filter { input: Box::new(p), predicate: h }, schema)
                });
            }
            self.finish_select(plan, exprs, names, keys, hidden, on, s)?;
        }
        return Ok(());

        fn items_to_vec<'x>(items: &[Item<'x>]) -> Vec<(Option<&'x ast::Expr>, Option<Expr>, String)> {
            items
                .iter()
                .map(|i| match i {
                    Item::Expr(e, n) => (Some(*e), None, n.clone()),
                    Item::Column(c, n) => (None, Some(c.clone()), n.clone()),
                })
                .collect()
        }
    }

    /// Binds one GROUP BY expression — an output column's position or name, else an
    /// expression over FROM — and returns its index in `groups` (added if new).
    fn bind_group_item(
        &mut self,
        g: &ast::Expr,
        items: &[Item<'_>],
        scope: &Scope,
        groups: &mut Vec<Expr>,
    ) -> Result<usize> {
        let target: &ast::Expr = match g {
            ast::Expr::Value(v) => match &v.value {
                ast::Value::Number(n, _) => {
                    let i = n.parse::<usize>().ok().filter(|&i| i >= 1 && i <= items.len()).ok_or_else(|| {
                        Error::semantic("42P10", format!("GROUP BY position {n} is not in select list")).at(self.pos(g))
                    })?;
                    match &items[i - 1] {
                        Item::Expr(e, _) => e,
                        Item::Column(c, _) => return Ok(add_group(groups, c.clone())),
                    }
                }
                _ => g,
            },
            ast::Expr::Identifier(id) if scope.resolve(None, &ident(id))?.is_none() => {
                let n = ident(id);
                match items.iter().find(|i| matches!(i, Item::Expr(_, name) if *name == n)) {
                    Some(Item::Expr(e, _)) => e,
                    _ => g,
                }
            }
            _ => g,
        };
        if self.contains_aggregate(target) {
            return Err(Error::semantic("42803", "aggregate functions are not allowed in GROUP BY").at(self.pos(target)));
        }
        let b = self.bind_expr(target, "GROUP BY")?;
        return Ok(add_group(groups, b));

        fn add_group(groups: &mut Vec<Expr>, b: Expr) -> usize {
            match groups.iter().position(|g| *g == b) {
                Some(i) => i,
                None => {
                    groups.push(b);
                    groups.len() - 1
                }
            }
        }
    }

    /// Binds the select list, HAVING and ORDER BY (over the current scope).
    #[allow(clippy::type_complexity)]
    fn bind_output(
        &mut self,
        items: Vec<(Option<&ast::Expr>, Option<Expr>, String)>,
        s: &ast::Select,
        order: &[&ast::OrderByExpr],
        aggregating: bool,
    ) -> Result<(Vec<Expr>, Vec<String>, Option<Expr>, Vec<SortKey>, usize, Vec<usize>)> {
        let mut exprs = Vec::with_capacity(items.len());
        let mut names = Vec::with_capacity(items.len());
        for (ast_e, pre, name) in &items {
            let b = match (ast_e, pre) {
                (Some(e), _) => self.bind_expr(e, "SELECT")?,
                (None, Some(c)) => {
                    if aggregating {
                        // `*` over an aggregate: each column must be grouped.
                        let st = self.agg.as_ref().expect("aggregating");
                        match st.groups.iter().position(|g| g == c) {
                            Some(i) => Expr::column(i, c.ty),
                            None => {
                                let col = st.from_scope.columns.iter().find(|x| x.expr == *c);
                                let full = col
                                    .map(|x| match &x.table {
                                        Some(t) => format!("{t}.{}", x.name),
                                        None => x.name.clone(),
                                    })
                                    .unwrap_or_else(|| name.clone());
                                return Err(Error::semantic(
                                    "42803",
                                    format!("column \"{full}\" must appear in the GROUP BY clause or be used in an aggregate function"),
                                ));
                            }
                        }
                    } else {
                        c.clone()
                    }
                }
                (None, None) => unreachable!("an item is an expression or a column"),
            };
            exprs.push(b);
            names.push(name.clone());
        }
        let having = match &s.having {
            Some(h) => Some(self.bind_bool_clause(h, "HAVING")?),
            None => None,
        };
        // ORDER BY: output position, output name, else an expression (hidden column).
        // (DISTINCT ON may order by what it does not output, as in PostgreSQL.)
        let distinct = matches!(s.distinct, Some(ast::Distinct::Distinct));
        let visible = exprs.len();
        let mut keys = Vec::new();
        for o in order {
            let by_output = match &o.expr {
                ast::Expr::Value(v) => match &v.value {
                    ast::Value::Number(n, _) => Some(
                        n.parse::<usize>()
                            .ok()
                            .filter(|&i| i >= 1 && i <= visible)
                            .map(|i| i - 1)
                            .ok_or_else(|| {
                                Error::semantic("42P10", format!("ORDER BY position {n} is not in select list"))
                                    .at(self.pos(&o.expr))
                            })?,
                    ),
                    _ => None,
                },
                ast::Expr::Identifier(i) => {
                    let n = ident(i);
                    let matches: Vec<usize> = names[..visible]
                        .iter()
                        .enumerate()
                        .filter(|(_, x)| **x == n)
                        .map(|(i, _)| i)
                        .collect();
                    match matches.len() {
                        0 => None,
                        1 => Some(matches[0]),
                        _ if matches.iter().all(|&m| exprs[m] == exprs[matches[0]]) => Some(matches[0]),
                        _ => {
                            return Err(Error::semantic(
                                "42702",
                                format!("ORDER BY \"{n}\" is ambiguous"),
                            )
                            .at(self.pos(&o.expr)));
                        }
                    }
                }
                _ => None,
            };
            let idx = match by_output {
                Some(i) => i,
                None => {
                    let b = self.bind_expr(&o.expr, "ORDER BY")?;
                    match exprs.iter().position(|e| *e == b) {
                        Some(i) => i,
                        None => {
                            if distinct {
                                return Err(Error::semantic(
                                    "42P10",
                                    "for SELECT DISTINCT, ORDER BY expressions must appear in select list",
                                )
                                .at(self.pos(&o.expr)));
                            }
                            exprs.push(b);
                            names.push(format!("?sort{}", exprs.len()));
                            exprs.len() - 1
                        }
                    }
                }
            };
            keys.push(sort_key(Expr::column(idx, exprs[idx].ty), &o.options).map_err(|e| e.at(self.pos(&o.expr)))?);
        }
        let on = match &s.distinct {
            Some(ast::Distinct::On(list)) => self.bind_distinct_on(list, &mut exprs, &mut names, visible, &keys)?,
            _ => Vec::new(),
        };
        let hidden = exprs.len() - visible;
        Ok((exprs, names, having, keys, hidden, on))
    }

    /// The output columns of `DISTINCT ON (…)`, read as ORDER BY items are (a position,
    /// an output name, else an expression added as a hidden column), and PostgreSQL's
    /// rule: the ORDER BY items that are DISTINCT ON expressions come first, and a
    /// DISTINCT ON expression missing from ORDER BY is allowed only when every ORDER BY
    /// item is one (42P10).
    fn bind_distinct_on(
        &mut self,
        list: &[ast::Expr],
        exprs: &mut Vec<Expr>,
        names: &mut Vec<String>,
        visible: usize,
        keys: &[SortKey],
    ) -> Result<Vec<usize>> {
        let mut on = Vec::with_capacity(list.len());
        for e in list {
            let by_output = match e {
                ast::Expr::Value(v) => match &v.value {
                    ast::Value::Number(n, _) => Some(
                        n.parse::<usize>().ok().filter(|&i| i >= 1 && i <= visible).map(|i| i - 1).ok_or_else(|| {
                            Error::semantic("42P10", format!("DISTINCT ON position {n} is not in select list"))
                                .at(self.pos(e))
                        })?,
                    ),
                    _ => None,
                },
                ast::Expr::Identifier(i) => {
                    let n = ident(i);
                    names[..visible].iter().position(|x| *x == n)
                }
                _ => None,
            };
            let idx = match by_output {
                Some(i) => i,
                None => {
                    let b = self.bind_expr(e, "DISTINCT ON")?;
                    match exprs.iter().position(|x| *x == b) {
                        Some(i) => i,
                        None => {
                            exprs.push(b);
                            names.push(format!("?distinct{}", exprs.len()));
                            exprs.len() - 1
                        }
                    }
                }
            };
            if !on.contains(&idx) {
                on.push(idx);
            }
        }
        let mismatch = || {
            Error::semantic("42P10", "SELECT DISTINCT ON expressions must match initial ORDER BY expressions")
                .at(self.pos(&list[0]))
        };
        let key_column = |k: &SortKey| match k.expr.kind {
            ExprKind::Column(i) => i,
            _ => usize::MAX,
        };
        let mut skipped = false;
        for k in keys {
            if on.contains(&key_column(k)) {
                if skipped {
                    return Err(mismatch());
                }
            } else {
                skipped = true;
            }
        }
        if skipped && on.iter().any(|i| !keys.iter().any(|k| key_column(k) == *i)) {
            return Err(mismatch());
        }
        Ok(on)
    }

    fn finish_select(
        &mut self,
        plan: &mut Plan,
        exprs: Vec<Expr>,
        names: Vec<String>,
        keys: Vec<SortKey>,
        hidden: usize,
        on: Vec<usize>,
        s: &ast::Select,
    ) -> Result<()> {
        let mut exprs = exprs;
        let visible = exprs.len() - hidden;
        if let Some(w) = self.take_windows() {
            take_plan(plan, |p| Self::finish_windows(p, w, &mut exprs));
        }
        take_plan(plan, |p| project(p, exprs, names));
        match &s.distinct {
            None | Some(ast::Distinct::All) => {}
            Some(ast::Distinct::Distinct) => take_plan(plan, |p| {
                let schema = p.schema.clone();
                Plan::new(Node::Distinct { input: Box::new(p) }, schema)
            }),
            Some(ast::Distinct::On(_)) => take_plan(plan, |p| distinct_on(p, &on, &keys)),
        }
        if !keys.is_empty() {
            take_plan(plan, |p| {
                let schema = p.schema.clone();
                Plan::new(Node::Sort { input: Box::new(p), keys, bee: None }, schema)
            });
        }
        if hidden > 0 || !on.is_empty() {
            take_plan(plan, |p| {
                let exprs = (0..visible).map(|i| Expr::column(i, p.schema[i].ty)).collect();
                let names = p.schema.iter().take(visible).map(|c| c.name.clone()).collect();
                project(p, exprs, names)
            });
        }
        Ok(())
    }

    fn bind_bool_clause(&mut self, e: &ast::Expr, clause: &'static str) -> Result<Expr> {
        if clause == "WHERE" && self.contains_aggregate(e) {
            return Err(Error::semantic("42803", "aggregate functions are not allowed in WHERE").at(self.pos(e)));
        }
        let b = self.bind_expr(e, clause)?;
        if is_unknown(e) {
            return self.cast(b, DataType::Boolean, false, e);
        }
        if b.ty != DataType::Boolean {
            return Err(Error::datatype_mismatch(format!(
                "argument of {clause} must be type boolean, not type {}",
                b.ty
            ))
            .at(self.pos(e)));
        }
        Ok(b)
    }

    /// FROM: the cross product of its items, each with its joins.
    fn bind_from(&mut self, from: &[ast::TableWithJoins]) -> Result<(Plan, Scope)> {
        if from.is_empty() {
            return Ok((Plan::one_row(), Scope::default()));
        }
        let mut acc: Option<(Plan, Scope)> = None;
        for twj in from {
            // `…, LATERAL (q) x`: joined with everything before it; so is a function
            // after other items, implicitly LATERAL as in PostgreSQL (`FROM t,
            // generate_series(1, t.a)`; one reading none of them becomes a plain join).
            let after_lateral = (is_lateral_subquery(&twj.relation) || is_function(&twj.relation)) && acc.is_some();
            let (mut plan, mut scope) = match acc.take() {
                Some((lp, ls)) if after_lateral => self.bind_lateral(lp, ls, &twj.relation, JoinKind::Inner, LateralCond::None)?,
                taken => {
                    acc = taken;
                    let before = acc.as_ref().map(|(_, s)| s);
                    self.bind_factor_after(&twj.relation, before)?
                }
            };
            for j in &twj.joins {
                // A function is implicitly LATERAL where a LATERAL item may be.
                // RIGHT and FULL joins bind the item as a plain one (PostgreSQL refuses
                // a reference to the items before it there: `bind_factor_after`).
                if (is_lateral_subquery(&j.relation) && !is_right_or_full(&j.join_operator))
                    || (is_function(&j.relation) && lateral_join_kind(&j.join_operator).is_some())
                {
                    let (kind, cond) = lateral_join_kind(&j.join_operator).ok_or_else(|| self.lateral_join_error(&j.relation))?;
                    let (p, s) = self.bind_lateral(plan, scope, &j.relation, kind, cond)?;
                    plan = p;
                    scope = s;
                    continue;
                }
                let (rp, rs) = self.bind_factor_after(&j.relation, Some(&scope))?;
                check_distinct_names(&scope, &rs)?;
                let (p, s) = self.bind_join(plan, scope, rp, rs, &j.join_operator)?;
                plan = p;
                scope = s;
            }
            acc = Some(match acc {
                None => (plan, scope),
                Some(_) if after_lateral => unreachable!("taken for the LATERAL join"),
                Some((lp, ls)) => {
                    check_distinct_names(&ls, &scope)?;
                    let nleft = lp.schema.len();
                    // The left scope moves into the combined one: cloning it at every
                    // FROM item made a list of n items O(n²).
                    let (p, ls) = join_plans(lp, ls, plan, Scope::default(), JoinKind::Inner, None);
                    (p, combine_scopes(ls, &scope, nleft))
                }
            });
        }
        let (p, s) = acc.expect("at least one FROM item");
        Ok((p, s))
    }

    /// The target of `UPDATE … FROM` or `DELETE … USING` (`target`, with its scope)
    /// joined with the other FROM items: an inner join without a condition (the
    /// statement's WHERE, bound over the returned scope, joins them); the target's
    /// columns come first.
    pub fn join_dml_from(&mut self, target: Plan, target_scope: Scope, from: &[ast::TableWithJoins]) -> Result<(Plan, Scope)> {
        let (plan, scope) = self.bind_from(from)?;
        check_distinct_names(&target_scope, &scope)?;
        let combined = combine_scopes(target_scope.clone(), &scope, target.schema.len());
        let (p, _) = join_plans(target, target_scope, plan, scope, JoinKind::Inner, None);
        Ok((p, combined))
    }

    /// `LATERAL (q) alias` joined (`kind`, `cond`) to the FROM items before it (`lp`,
    /// `ls`), which `q` may read: `q` is bound as a subquery of a level whose scope
    /// is theirs (their columns become parameters), then its correlation is pulled
    /// up into the join's condition (`decorrelate::lateral_join_parts`), so the
    /// result is an ordinary join of the left items with `q` without it. A
    /// correlation that cannot be pulled up runs per left row: one correlated scalar
    /// subquery per column for a query of one row at most (`lateral_single_row`),
    /// else a [`Node::Apply`] (`lateral_apply`).
    fn bind_lateral(
        &mut self,
        lp: Plan,
        ls: Scope,
        f: &ast::TableFactor,
        kind: JoinKind,
        cond: LateralCond<'_>,
    ) -> Result<(Plan, Scope)> {
        if let Some(clause) = unsupported_factor_clause(f) {
            return Err(Error::not_supported(format!("{clause} is not supported")).at(self.pos(f)));
        }
        // A LATERAL function runs per left row as `SELECT * FROM f(…)` would.
        let converted;
        let (subquery, alias) = match f {
            ast::TableFactor::Derived { subquery, alias, .. } => (&**subquery, alias.as_ref()),
            _ => match function_as_query(f) {
                Some(c) => {
                    converted = c;
                    (&converted.0, Some(&converted.1))
                }
                None => return Err(Error::not_supported("LATERAL functions in FROM are not supported").at(self.pos(f))),
            },
        };
        if alias.is_none() {
            return Err(Error::syntax("subquery in FROM must have an alias").at(self.pos(f)));
        }
        let snapshot = self.snapshot();
        let (correlated, rp, rs) = self.bind_lateral_right(&ls, subquery, alias)?;
        let nleft = lp.schema.len();
        let right_schema = rp.schema.clone();
        let inner = kind == JoinKind::Inner;
        let Some((right, mut conds, top)) =
            crate::optimizer::decorrelate::lateral_join_parts(rp, nleft, self.param_count, &correlated, inner)
        else {
            self.restore(snapshot);
            if let Some(bound) = self.lateral_single_row(lp.clone(), &ls, subquery, &rs, right_schema, kind, cond)? {
                return Ok(bound);
            }
            return self.lateral_apply(lp, &ls, subquery, alias, kind, cond);
        };
        let (scope, on_cond) = self.lateral_condition(&ls, &rs, nleft, kind, cond)?;
        let Some(top) = top else {
            conds.extend(on_cond);
            let (p, _) = join_plans(lp, ls, right, rs, kind, crate::optimizer::and_all(conds));
            return Ok((p, scope));
        };
        // The subquery's select list read the left columns: computed above the join
        // (an inner join, so its ON condition may filter after it). Without a FROM
        // clause (one row of no columns) there is nothing to join.
        let p = if right.schema.is_empty() && conds.is_empty() && matches!(&right.node, Node::Values { rows } if rows.len() == 1) {
            lp
        } else if right.schema.is_empty() {
            return Err(Error::not_supported("a LATERAL subquery without columns is not supported").at(self.pos(f)));
        } else {
            join_plans(lp, ls, right, rs, kind, crate::optimizer::and_all(conds)).0
        };
        let mut exprs: Vec<Expr> = (0..nleft).map(|i| Expr::column(i, p.schema[i].ty)).collect();
        exprs.extend(top);
        let schema = p.schema.slice(0..nleft).concat(&right_schema);
        let mut p = Plan::new(Node::Project { input: Box::new(p), exprs }, schema);
        if let Some(c) = on_cond {
            let schema = p.schema.clone();
            p = Plan::new(Node::Filter { input: Box::new(p), predicate: c }, schema);
        }
        Ok((p, scope))
    }

    /// A LATERAL item's query bound as the right side of its join: a subquery whose
    /// outer scope is the FROM items before it (`ls`; the columns of theirs it reads
    /// are its `correlated` parameters, numbered from `param_count`), aliased. It
    /// becomes the join's right input, not a subplan. The Apply form and the form
    /// that pulls the correlation up into a join both start here.
    fn bind_lateral_right(&mut self, ls: &Scope, q: &ast::Query, alias: Option<&ast::TableAlias>) -> Result<(Vec<Expr>, Plan, Scope)> {
        let saved = self.set_scope(ls.clone());
        let r = self.bind_subquery(q, "FROM");
        self.set_scope(saved);
        let (id, correlated, plan) = r?;
        if id + 1 == self.subqueries.len() {
            self.subqueries.pop();
        }
        let (rp, rs) = self.alias_relation(plan, alias, None)?;
        Ok((correlated, rp, rs))
    }

    /// The scope of the FROM items before a LATERAL item (`ls`, `nleft` columns)
    /// joined (`kind`) with it (`rs`), and the join's condition bound over that
    /// scope's columns (left, then right): the ON condition, or USING's and
    /// NATURAL's equalities (whose columns the scope then merges, as `bind_join`
    /// does). `None` for a CROSS JOIN, a comma and `ON true`.
    fn lateral_condition(&mut self, ls: &Scope, rs: &Scope, nleft: usize, kind: JoinKind, cond: LateralCond<'_>) -> Result<(Scope, Option<Expr>)> {
        let mut scope = combine_scopes(ls.clone(), rs, nleft);
        mark_nullable(&mut scope, ls, rs, kind);
        let bound = match cond {
            LateralCond::None => None,
            LateralCond::On(e) if matches!(e, ast::Expr::Value(v) if v.value == ast::Value::Boolean(true)) => None,
            LateralCond::On(e) => {
                if self.contains_aggregate(e) {
                    return Err(Error::semantic("42803", "aggregate functions are not allowed in JOIN conditions").at(self.pos(e)));
                }
                let saved = self.set_scope(scope.clone());
                let r = self.bind_bool_clause(e, "JOIN/ON");
                self.set_scope(saved);
                Some(r?)
            }
            LateralCond::Using(cols) => {
                let names: Vec<String> = cols.iter().map(object_name).collect::<Result<_>>()?;
                using_join(&mut scope, ls, rs, nleft, kind, &names)?
            }
            LateralCond::Natural => {
                let names = natural_columns(ls, rs);
                using_join(&mut scope, ls, rs, nleft, kind, &names)?
            }
        };
        Ok((scope, bound))
    }

    fn lateral_join_error(&self, f: &ast::TableFactor) -> Error {
        Error::not_supported("LATERAL with a join other than CROSS JOIN, [INNER] JOIN or LEFT JOIN is not supported")
            .at(self.pos(f))
    }

    /// A LATERAL subquery or function that neither becomes a join nor returns one row
    /// at most: a [`Node::Apply`] that runs it per left row (per distinct set of the
    /// left values it reads, in a batch). An inner join's condition filters the
    /// Apply's rows; a LEFT join's filters the right side's rows per left row (a left
    /// row none of whose right rows pass it gets NULLs), so it reads the left columns
    /// as more parameters of the Apply.
    fn lateral_apply(
        &mut self,
        lp: Plan,
        ls: &Scope,
        q: &ast::Query,
        alias: Option<&ast::TableAlias>,
        kind: JoinKind,
        cond: LateralCond<'_>,
    ) -> Result<(Plan, Scope)> {
        let left_join = match kind {
            JoinKind::Inner => false,
            JoinKind::Left => true,
            _ => return Err(Error::internal("a LATERAL join other than inner or left")),
        };
        let (mut params, mut rp, rs) = self.bind_lateral_right(ls, q, alias)?;
        let nleft = lp.schema.len();
        let (scope, bound) = self.lateral_condition(ls, &rs, nleft, kind, cond)?;
        let param_base = self.param_count;
        if let (true, Some(c)) = (left_join, &bound) {
            let predicate = over_right_side(c, nleft, param_base, &mut params);
            let schema = rp.schema.clone();
            rp = Plan::new(Node::Filter { input: Box::new(rp), predicate }, schema);
        }
        let mut schema = lp.schema.clone();
        schema.extend(rp.schema.iter().cloned());
        let node = Node::Apply { input: Box::new(lp), right: Box::new(rp), params, param_base, left_join };
        let mut p = Plan::new(node, schema);
        if let (false, Some(predicate)) = (left_join, bound) {
            let schema = p.schema.clone();
            p = Plan::new(Node::Filter { input: Box::new(p), predicate }, schema);
        }
        Ok((p, scope))
    }

    /// A LATERAL subquery that `lateral_join_parts` cannot pull up but that returns
    /// exactly one row (aggregates without GROUP BY, HAVING or LIMIT) or at most one
    /// (LIMIT 1 / FETCH FIRST ROW ONLY: the top row per left row): bound as one
    /// correlated scalar subquery per column in a projection over the left items, so
    /// each runs once per distinct set of left values, as every correlated subquery
    /// does (and the optimizer may decorrelate it). At most one row under an inner
    /// join also filters the left rows by EXISTS (the query); under LEFT JOIN a left
    /// row without one gets NULLs, as the scalar subqueries give. With more than one
    /// column and LIMIT 1 every column's subquery orders by the query's ORDER BY and
    /// then by all the columns, so that all pick the same row among ties. `None` for
    /// other shapes, and for LEFT JOIN with an ON condition other than `true`.
    #[allow(clippy::too_many_arguments)]
    fn lateral_single_row(
        &mut self,
        lp: Plan,
        ls: &Scope,
        q: &ast::Query,
        rs: &Scope,
        right_schema: Schema,
        kind: JoinKind,
        cond: LateralCond<'_>,
    ) -> Result<Option<(Plan, Scope)>> {
        let ast::SetExpr::Select(sel) = &*q.body else { return Ok(None) };
        if !q.locks.is_empty() || sel.top.is_some() || sel.into.is_some() {
            return Ok(None);
        }
        let mut items: Vec<(&ast::Expr, Option<&ast::Ident>)> = Vec::new();
        for item in &sel.projection {
            match item {
                ast::SelectItem::UnnamedExpr(e) => items.push((e, None)),
                ast::SelectItem::ExprWithAlias { expr, alias } => items.push((expr, Some(alias))),
                _ => return Ok(None),
            }
        }
        if items.len() != right_schema.len() || items.is_empty() {
            return Ok(None);
        }
        let one = |e: &ast::Expr| matches!(e, ast::Expr::Value(v) if matches!(&v.value, ast::Value::Number(n, _) if n == "1"));
        let grouped = !matches!(&sel.group_by, ast::GroupByExpr::Expressions(v, m) if v.is_empty() && m.is_empty());
        let exactly_one = !grouped
            && sel.having.is_none()
            && q.limit_clause.is_none()
            && q.fetch.is_none()
            // Every column: one without an aggregate (an outer value, `SELECT t.a,
            // count(*) …`) would lose the aggregation in its own subquery.
            && items.iter().all(|(e, _)| self.contains_aggregate(e));
        let at_most_one = match (&q.limit_clause, &q.fetch) {
            (Some(ast::LimitClause::LimitOffset { limit: Some(l), offset: None, limit_by }), None) => limit_by.is_empty() && one(l),
            (None, Some(f)) => !f.percent && !f.with_ties && f.quantity.as_ref().is_none_or(one),
            _ => false,
        };
        let several = items.len() > 1;
        if !(exactly_one || at_most_one) || (at_most_one && several && sel.distinct.is_some()) {
            return Ok(None);
        }
        if matches!(sel.distinct, Some(ast::Distinct::On(_))) {
            return Ok(None);
        }
        let left = match kind {
            JoinKind::Inner => false,
            JoinKind::Left => true,
            _ => return Ok(None),
        };
        // A LEFT join's condition filters the right rows per left row: the Apply's.
        if left && !cond.is_true() {
            return Ok(None);
        }
        // The ORDER BY with output names and positions replaced by the expressions they
        // name, then every column (so that ties pick the same row in every subquery).
        let order = if at_most_one && several {
            let mut order: Vec<ast::OrderByExpr> = match &q.order_by {
                None => Vec::new(),
                Some(ob) => match &ob.kind {
                    ast::OrderByKind::Expressions(v) => v.clone(),
                    ast::OrderByKind::All(_) => return Ok(None),
                },
            };
            for o in &mut order {
                let named = match &o.expr {
                    ast::Expr::Identifier(id) => {
                        items.iter().find(|(_, a)| a.is_some_and(|a| ident(a) == ident(id))).map(|(e, _)| (*e).clone())
                    }
                    ast::Expr::Value(v) => match &v.value {
                        ast::Value::Number(n, _) => n.parse::<usize>().ok().and_then(|k| items.get(k.wrapping_sub(1))).map(|(e, _)| (*e).clone()),
                        _ => None,
                    },
                    _ => None,
                };
                if let Some(e) = named {
                    o.expr = e;
                }
            }
            order.extend(items.iter().map(|(e, _)| ast::OrderByExpr {
                expr: (*e).clone(),
                options: ast::OrderByOptions { sort: None, nulls_first: None },
                with_fill: None,
            }));
            Some(ast::OrderBy { kind: ast::OrderByKind::Expressions(order), interpolate: None })
        } else {
            None
        };
        let nleft = lp.schema.len();
        let saved = self.set_scope(ls.clone());
        let r = (|| -> Result<(Option<Expr>, Vec<Expr>)> {
            let filter = if at_most_one && !left {
                Some(self.bind_expr(&ast::Expr::Exists { subquery: Box::new(q.clone()), negated: false }, "FROM")?)
            } else {
                None
            };
            let mut values = Vec::with_capacity(items.len());
            for (k, item) in sel.projection.iter().enumerate() {
                let mut qk = q.clone();
                if let ast::SetExpr::Select(s) = &mut *qk.body {
                    s.projection = vec![item.clone()];
                }
                if exactly_one {
                    qk.order_by = None;
                } else if let Some(order) = &order {
                    qk.order_by = Some(order.clone());
                }
                let v = self.bind_expr(&ast::Expr::Subquery(Box::new(qk)), "FROM")?;
                if v.ty != right_schema[k].ty {
                    return Err(Error::internal("a LATERAL column bound to another type"));
                }
                values.push(v);
            }
            Ok((filter, values))
        })();
        self.set_scope(saved);
        let (filter, values) = r?;
        let mut p = lp;
        if let Some(predicate) = filter {
            let schema = p.schema.clone();
            p = Plan::new(Node::Filter { input: Box::new(p), predicate }, schema);
        }
        let mut exprs: Vec<Expr> = (0..nleft).map(|i| Expr::column(i, p.schema[i].ty)).collect();
        exprs.extend(values);
        let schema = p.schema.slice(0..nleft).concat(&right_schema);
        let mut p = Plan::new(Node::Project { input: Box::new(p), exprs }, schema);
        let (scope, bound) = self.lateral_condition(ls, rs, nleft, kind, cond)?;
        if let Some(predicate) = bound {
            let schema = p.schema.clone();
            p = Plan::new(Node::Filter { input: Box::new(p), predicate }, schema);
        }
        Ok(Some((p, scope)))
    }

    /// `bind_factor` for a FROM item after others (`before`: their scope) where a
    /// LATERAL reference may not be (the right side of a RIGHT or FULL join). A
    /// function (implicitly LATERAL in PostgreSQL: `t RIGHT JOIN generate_series(1,
    /// t.a) ON …`) or a LATERAL subquery reading those items fails to bind with
    /// 42P01 / 42703; when it does bind over the earlier items, the error is
    /// PostgreSQL's for a LATERAL reference there (42P10, at the reference).
    fn bind_factor_after(&mut self, f: &ast::TableFactor, before: Option<&Scope>) -> Result<(Plan, Scope)> {
        let r = self.bind_factor(f);
        let (Err(e), Some(before)) = (&r, before) else {
            return r;
        };
        if !matches!(e.sqlstate, "42P01" | "42703") {
            return r;
        }
        let converted;
        let q = match f {
            ast::TableFactor::Derived { lateral: true, subquery, .. } => &**subquery,
            ast::TableFactor::Table { args: Some(_), .. } | ast::TableFactor::Function { .. } => match function_as_query(f) {
                Some(c) => {
                    converted = c;
                    &converted.0
                }
                None => return r,
            },
            _ => return r,
        };
        let snapshot = self.snapshot();
        let saved = self.set_scope(before.clone());
        let bound = self.bind_subquery(q, "FROM");
        self.set_scope(saved);
        self.restore(snapshot);
        let Ok((_, correlated, _)) = bound else { return r };
        // The FROM item the first reference reads (PostgreSQL names the first).
        let table = correlated.iter().find_map(|x| before.columns.iter().find(|c| c.expr == *x).and_then(|c| c.table.clone()));
        match table {
            Some(t) => Err(Error::semantic("42P10", format!("invalid reference to FROM-clause entry for table \"{t}\""))
                .with_detail("The combining JOIN type must be INNER or LEFT for a LATERAL reference.")
                .at(e.position)),
            None => r,
        }
    }

    fn bind_factor(&mut self, f: &ast::TableFactor) -> Result<(Plan, Scope)> {
        crate::stack::guarded(|| self.bind_factor_guarded(f))
    }

    fn bind_factor_guarded(&mut self, f: &ast::TableFactor) -> Result<(Plan, Scope)> {
        if let Some(clause) = unsupported_factor_clause(f) {
            return Err(Error::not_supported(format!("{clause} is not supported")).at(self.pos(f)));
        }
        match f {
            ast::TableFactor::Table { name, alias, args: Some(args), .. } => {
                let n = object_name(name)?;
                if n != "generate_series" {
                    return Err(Error::not_supported(format!("table function {n} is not supported")).at(self.pos(f)));
                }
                let plan = self.bind_series(&args.args, f)?;
                // An alias without column names names the column too, as PostgreSQL
                // does for a function returning a scalar (`generate_series(1, 3) AS g`).
                let mut plan = plan;
                if let Some(a) = alias
                    && a.columns.is_empty()
                {
                    plan.schema.to_mut()[0].name = ident(&a.name);
                }
                self.alias_relation(plan, alias.as_ref(), Some("generate_series".to_string()))
            }
            ast::TableFactor::Table { name, alias, .. } => {
                let n = object_name(name)?;
                let (plan, default_alias) = self.relation_plan(&n, name)?;
                self.alias_relation(plan, alias.as_ref(), Some(default_alias))
            }
            ast::TableFactor::Derived {
                lateral,
                subquery,
                alias,
                ..
            } => {
                // LATERAL after other FROM items is `bind_lateral`'s; first in its
                // FROM clause there is nothing before it to read: a plain subquery.
                let _ = lateral;
                if alias.is_none() {
                    return Err(Error::syntax("subquery in FROM must have an alias").at(self.pos(f)));
                }
                // A derived table sees no columns of its own query level.
                let saved = self.set_scope(Scope::default());
                let r = self.bind_query(subquery);
                self.set_scope(saved);
                let plan = r?;
                self.alias_relation(plan, alias.as_ref(), None)
            }
            ast::TableFactor::NestedJoin {
                table_with_joins,
                alias,
            } => {
                if alias.is_some() {
                    return Err(Error::not_supported("alias on a parenthesized join"));
                }
                self.bind_from(std::slice::from_ref(table_with_joins))
            }
            // `LATERAL f(…)` where it reads nothing before it (first in FROM, or on
            // the right of a RIGHT or FULL join): `SELECT * FROM f(…)`, as a derived
            // table.
            ast::TableFactor::Function { lateral: true, .. } => match function_as_query(f) {
                Some((q, alias)) => {
                    let saved = self.set_scope(Scope::default());
                    let r = self.bind_query(&q);
                    self.set_scope(saved);
                    self.alias_relation(r?, Some(&alias), None)
                }
                None => Err(Error::not_supported("LATERAL functions in FROM are not supported").at(self.pos(f))),
            },
            other => Err(Error::not_supported(format!("FROM item {other} is not supported")).at(self.pos(f))),
        }
    }

    /// `generate_series(start, stop [, step])` in FROM: the arguments see no columns
    /// of this FROM clause (no LATERAL) but may refer to outer queries; their types
    /// choose integer, bigint, numeric or timestamp (with an interval step), as
    /// PostgreSQL resolves the function.
    fn bind_series(&mut self, args: &[ast::FunctionArg], f: &ast::TableFactor) -> Result<Plan> {
        let mut exprs = Vec::with_capacity(args.len());
        let mut asts = Vec::with_capacity(args.len());
        for a in args {
            let ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) = a else {
                return Err(Error::not_supported("named arguments of generate_series").at(self.pos(f)));
            };
            let saved = self.set_scope(Scope::default());
            let r = self.bind_expr(e, "FROM");
            self.set_scope(saved);
            exprs.push(r?);
            asts.push(e);
        }
        use super::types::numeric_rank;
        let types: Vec<DataType> = exprs.iter().map(|e| e.ty).collect();
        let unknown: Vec<bool> = asts.iter().map(|e| super::is_unknown(e)).collect();
        // Untyped literals take the type of the others (`generate_series('2024-01-01',
        // timestamp '…', '1 day')`).
        let known_ts = types.iter().zip(&unknown).any(|(t, u)| !u && matches!(t, DataType::Timestamp | DataType::Date));
        let ints = types.iter().zip(&unknown).all(|(t, u)| *u || numeric_rank(t).is_some_and(|r| r <= 4));
        let casts: Option<(Vec<DataType>, DataType)> = match types.len() {
            2 | 3 if known_ts => {
                let ok = types.iter().zip(&unknown).take(2).all(|(t, u)| *u || matches!(t, DataType::Timestamp | DataType::Date))
                    && types.len() == 3
                    && (unknown[2] || types[2] == DataType::Interval);
                ok.then(|| (vec![DataType::Timestamp, DataType::Timestamp, DataType::Interval], DataType::Timestamp))
            }
            2 | 3 if ints && unknown.iter().any(|u| !u) => {
                let ty = if types.iter().zip(&unknown).any(|(t, u)| !u && matches!(t, DataType::Decimal { .. })) {
                    DataType::NUMERIC
                } else if types.iter().zip(&unknown).any(|(t, u)| !u && *t == DataType::BigInt) {
                    DataType::BigInt
                } else {
                    DataType::Integer
                };
                Some((vec![ty; types.len()], ty))
            }
            _ => None,
        };
        let Some((casts, ty)) = casts else {
            let list: Vec<String> = types
                .iter()
                .zip(&unknown)
                .map(|(t, u)| if *u { "unknown".to_string() } else { super::types::type_name(t) })
                .collect();
            return Err(Error::undefined_function(format!("function generate_series({}) does not exist", list.join(", ")))
                .at(self.pos(f)));
        };
        let mut bound = Vec::with_capacity(exprs.len());
        for ((e, t), a) in exprs.into_iter().zip(casts).zip(asts) {
            bound.push(self.cast(e, t, false, a)?);
        }
        Ok(Plan::new(
            Node::Series { args: bound },
            vec![OutputColumn { name: "generate_series".to_string(), ty }],
        ))
    }

    fn alias_relation(
        &mut self,
        mut plan: Plan,
        alias: Option<&ast::TableAlias>,
        default: Option<String>,
    ) -> Result<(Plan, Scope)> {
        let name = alias.map(|a| ident(&a.name)).or(default.clone());
        if let Some(a) = alias {
            if a.columns.len() > plan.schema.len() {
                return Err(Error::semantic(
                    "42P10",
                    format!(
                        "table \"{}\" has {} columns available but {} columns specified",
                        ident(&a.name),
                        plan.schema.len(),
                        a.columns.len()
                    ),
                ));
            }
            for (c, n) in plan.schema.iter_mut().zip(&a.columns) {
                c.name = ident(&n.name);
            }
        }
        let cols: Vec<(String, DataType)> = plan.schema.iter().map(|c| (c.name.clone(), c.ty)).collect();
        let mut scope = Scope::relation(name.as_deref(), &cols, 0);
        if let (Some(n), Node::TableScan { table, columns, .. }) = (&name, &plan.node) {
            for (c, &i) in plan.schema.iter().zip(columns) {
                if table.columns[i].not_null {
                    scope.never_null.push((n.clone(), c.name.clone()));
                }
            }
        }
        if let (Some(real), Some(alias)) = (default, name)
            && real != alias
        {
            scope.aliases.push((real, alias));
        }
        Ok((plan, scope))
    }

    /// The plan of a named relation: CTE, table, view or system table.
    fn relation_plan(&mut self, n: &str, at: &ast::ObjectName) -> Result<(Plan, String)> {
        let short = n.rsplit('.').next().unwrap_or(n).to_string();
        if let Some(cte) = self.lookup_cte(n) {
            if let Some(recursion) = cte.recursion.clone() {
                return self.recursive_reference(n, recursion, cte.level, at).map(|p| (p, short));
            }
            cte.refs.set(cte.refs.get() + 1);
            let (id, level) = (cte.id, cte.level);
            if cte.correlated {
                // Inlined at every reference, as bound: a copy of the plan.
                let mut plan = cte.plan.clone();
                if level + 1 < self.frames.len() {
                    // Referenced from a deeper level: the CTE's correlated parameters
                    // are its own level's; pass them down as this level's.
                    let pc = self.param_count;
                    plan.for_each_expr_mut(&mut |e| self.lift_params(e, level, pc));
                }
                return Ok((plan, short));
            }
            // A reader of the CTE until its WITH decides whether it is materialized
            // (and puts the CTE's plan here: `settle_ctes`). The plan reads no outer
            // column, so there is nothing to pass down from a deeper level.
            let schema = cte.plan.schema.clone();
            let scan = Node::CteScan { cte: id, name: short.clone(), plan: Box::new(cte_placeholder(schema.clone())) };
            return Ok((Plan::new(scan, schema), short));
        }
        if let Some(t) = self.catalog.table(n) {
            let columns: Vec<usize> = (0..t.columns.len()).collect();
            let schema = t.columns.iter().map(|c| out(c.name.clone(), c.ty)).collect::<Vec<_>>();
            return Ok((
                Plan::new(
                    Node::TableScan {
                        table: t.clone(),
                        columns,
                        filter: None,
                        access: Access::Heap,
                        with_tid: false,
                        bees: None,
                    },
                    schema,
                ),
                short,
            ));
        }
        if let Some(v) = self.catalog.view(n).cloned() {
            return Ok((self.bind_view(&v)?, short));
        }
        if let Some(p) = super::system::system_table(self.catalog, self.bees, n) {
            self.reads_at_bind = true;
            return Ok((p, short));
        }
        Err(Error::undefined_table(n).at(self.pos(at)))
    }

    /// The order to bind the CTEs of a `WITH RECURSIVE` in: each after the other CTEs
    /// of the list it refers to, since under RECURSIVE a CTE sees every CTE of its
    /// list, later ones too (as in PostgreSQL), and otherwise in the written order.
    /// CTEs that refer to each other in a cycle are 0A000, as in PostgreSQL. A
    /// reference is any relation of that name in the CTE's query.
    fn with_recursive_order(&self, with: &ast::With) -> Result<Vec<usize>> {
        let names: Vec<String> = with.cte_tables.iter().map(|c| ident(&c.alias.name)).collect();
        for (k, name) in names.iter().enumerate() {
            if names[..k].contains(name) {
                return Err(Error::semantic(
                    "42712",
                    format!("WITH query name \"{name}\" specified more than once"),
                )
                .at(crate::parser::span_offset(self.sql, with.cte_tables[k].alias.name.span)));
            }
        }
        // uses[k]: the other CTEs of the list that CTE k refers to.
        let uses: Vec<Vec<usize>> = with
            .cte_tables
            .iter()
            .enumerate()
            .map(|(k, cte)| {
                let mut used = Vec::new();
                let _ = ast::visit_relations(&*cte.query, |relation: &ast::ObjectName| {
                    if let [ast::ObjectNamePart::Identifier(i)] = relation.0.as_slice()
                        && let Some(j) = names.iter().position(|n| *n == ident(i))
                        && j != k
                        && !used.contains(&j)
                    {
                        used.push(j);
                    }
                    std::ops::ControlFlow::<()>::Continue(())
                });
                used
            })
            .collect();
        let mut order = Vec::with_capacity(names.len());
        let mut bound = vec![false; names.len()];
        while order.len() < names.len() {
            let next = (0..names.len()).find(|&k| !bound[k] && uses[k].iter().all(|&j| bound[j]));
            let Some(k) = next else {
                let k = (0..names.len()).find(|&k| !bound[k]).expect("an unbound CTE");
                return Err(Error::not_supported("mutual recursion between WITH items is not implemented")
                    .at(crate::parser::span_offset(self.sql, with.cte_tables[k].alias.name.span)));
            };
            bound[k] = true;
            order.push(k);
        }
        Ok(order)
    }

    /// A `WITH RECURSIVE` CTE's query (PostgreSQL's rules, `parse_cte.c`): when it
    /// refers to its own CTE it must be `base UNION [ALL] recursive` with the
    /// reference in the recursive term, once, not inside a subquery, an outer join's
    /// nullable side, INTERSECT, EXCEPT or an aggregate (42P19); the columns' types
    /// are the base term's, and the recursive term's must resolve to them (42804).
    /// A CTE that does not refer to itself binds as a plain CTE.
    fn bind_recursive_cte(&mut self, cte: &ast::Cte, name: &str) -> Result<Plan> {
        let q = &cte.query;
        let snapshot = self.snapshot();
        let refs_before = self.recursive_refs.len();
        let level = self.frames.len() - 1;
        let placeholder = |recursion| CteDef {
            plan: Plan::one_row(),
            // Never read: a reference while the query binds goes by `recursion`.
            id: crate::plan::CteId(usize::MAX),
            refs: std::cell::Cell::new(0),
            materialized: None,
            correlated: false,
            level,
            recursion: Some(recursion),
        };
        let ast::SetExpr::SetOperation { left, op: ast::SetOperator::Union, set_quantifier, right } = &*q.body
        else {
            self.define_cte(name, placeholder(Recursion::NotUnionForm));
            let r = self.bind_query(q).map_err(|e| {
                if e.message == not_union_form(name) {
                    // PostgreSQL points at the CTE's query, not at the reference.
                    Error { position: self.pos(&**q), ..e }
                } else {
                    e
                }
            });
            self.undefine_cte(name);
            return r;
        };
        if q.with.is_some() {
            return Err(Error::not_supported("WITH inside a WITH RECURSIVE query").at(self.pos(&**q)));
        }
        let distinct = match set_quantifier {
            ast::SetQuantifier::All => false,
            ast::SetQuantifier::Distinct | ast::SetQuantifier::None => true,
            _ => return Err(Error::not_supported("BY NAME set operations")),
        };

        self.define_cte(name, placeholder(Recursion::BaseTerm));
        let base = self.bind_set_expr(left);
        let mut base = match base {
            Ok(b) => b,
            Err(e) => {
                self.undefine_cte(name);
                return Err(e);
            }
        };
        if cte.alias.columns.len() > base.schema.len() {
            self.undefine_cte(name);
            return Err(Error::semantic(
                "42P10",
                format!(
                    "WITH query \"{name}\" has {} columns available but {} columns specified",
                    base.schema.len(),
                    cte.alias.columns.len()
                ),
            ));
        }
        for (c, a) in base.schema.iter_mut().zip(&cte.alias.columns) {
            c.name = ident(&a.name);
        }
        let work_table = WorkTableId(self.next_work_table);
        self.next_work_table += 1;
        self.define_cte(
            name,
            placeholder(Recursion::RecursiveTerm { work_table, schema: base.schema.clone() }),
        );
        let recursive = self.bind_set_expr(right);
        self.undefine_cte(name);
        let recursive = recursive?;
        let refs: Vec<Option<usize>> = self
            .recursive_refs
            .drain(refs_before..)
            .filter(|(w, _)| *w == work_table)
            .map(|(_, at)| at)
            .collect();
        if refs.is_empty() {
            // Not recursive after all: bind it as any CTE, from a clean state.
            self.restore(snapshot);
            return self.bind_query(q);
        }
        let not_implemented = |what: &str| Error::not_supported(format!("{what} in a recursive query is not implemented"));
        if q.order_by.is_some() {
            return Err(not_implemented("ORDER BY").at(self.pos(&**q)));
        }
        if let Some(lc) = &q.limit_clause {
            let offset = match lc {
                ast::LimitClause::LimitOffset { offset, .. } => offset.is_some(),
                ast::LimitClause::OffsetCommaLimit { .. } => true,
            };
            return Err(not_implemented(if offset { "OFFSET" } else { "LIMIT" }).at(self.pos(&**q)));
        }
        if q.fetch.is_some() {
            return Err(not_implemented("LIMIT").at(self.pos(&**q)));
        }
        if !q.locks.is_empty() {
            return Err(not_implemented("FOR UPDATE/SHARE").at(self.pos(&**q)));
        }
        let invalid = |message: String| Error::semantic("42P19", message);
        if refs.len() > 1 {
            return Err(invalid(format!("recursive reference to query \"{name}\" must not appear more than once")).at(refs[1]));
        }
        if let Some(place) = misplaced_reference(&recursive, work_table, Place::default()) {
            let message = match place {
                Misplaced::OuterJoin => format!("recursive reference to query \"{name}\" must not appear within an outer join"),
                Misplaced::SetOp(op) => format!("recursive reference to query \"{name}\" must not appear within {op}"),
                Misplaced::Aggregate => "aggregate functions are not allowed in a recursive query's recursive term".to_string(),
            };
            return Err(invalid(message).at(refs[0]));
        }
        if base.schema.len() != recursive.schema.len() {
            return Err(Error::semantic("42601", "each UNION query must have the same number of columns")
                .at(self.pos(&**right)));
        }
        // The working table has the base term's types; the union's (PostgreSQL's
        // rule for UNION) must be the same, or the rows of later rounds would not fit.
        let base_types = base.types();
        for (i, (b, r)) in base.schema.iter().zip(&recursive.schema).enumerate() {
            if unknown_column(&recursive, i) {
                continue;
            }
            let overall = match common_type(&b.ty, &r.ty) {
                Some(DataType::Char(_)) if b.ty != r.ty => DataType::Text,
                Some(t) => t,
                None => {
                    return Err(Error::datatype_mismatch(format!(
                        "UNION types {} and {} cannot be matched",
                        super::types::type_name(&b.ty),
                        super::types::type_name(&r.ty)
                    ))
                    .at(self.pos(&**right)));
                }
            };
            if overall != b.ty {
                return Err(Error::datatype_mismatch(format!(
                    "recursive query \"{name}\" column {} has type {} in non-recursive term but type {} overall",
                    i + 1,
                    super::types::type_name(&b.ty),
                    super::types::type_name(&overall)
                ))
                .at(self.pos(&**left)));
            }
        }
        let recursive = cast_plan(recursive, &base_types);
        let schema = base.schema.clone();
        Ok(Plan::new(
            Node::RecursiveUnion {
                work_table,
                name: name.to_string(),
                distinct,
                base: Box::new(base),
                recursive: Box::new(recursive),
            },
            schema,
        ))
    }

    /// Makes `def` the CTE `name` of the innermost WITH (a recursive CTE's
    /// placeholder while its own query binds).
    fn define_cte(&mut self, name: &str, def: CteDef) {
        self.ctes.last_mut().expect("a WITH is binding").insert(name.to_string(), def);
    }

    fn undefine_cte(&mut self, name: &str) {
        self.ctes.last_mut().expect("a WITH is binding").remove(name);
    }

    /// A reference to the recursive CTE `name` from inside its own query.
    fn recursive_reference(
        &mut self,
        name: &str,
        recursion: Recursion,
        level: usize,
        at: &ast::ObjectName,
    ) -> Result<Plan> {
        let pos = self.pos(at);
        let invalid = |message: String| Error::semantic("42P19", message).at(pos);
        match recursion {
            Recursion::NotUnionForm => Err(invalid(not_union_form(name))),
            Recursion::BaseTerm => Err(invalid(format!(
                "recursive reference to query \"{name}\" must not appear within its non-recursive term"
            ))),
            Recursion::RecursiveTerm { .. } if level + 1 < self.frames.len() => Err(invalid(format!(
                "recursive reference to query \"{name}\" must not appear within a subquery"
            ))),
            Recursion::RecursiveTerm { work_table, schema } => {
                self.recursive_refs.push((work_table, pos));
                Ok(Plan::new(Node::WorkTableScan { work_table, name: name.to_string() }, schema))
            }
        }
    }

    /// Rewrites the correlated parameters in `e` (numbered from `param_count`) from
    /// level `from` to the current level.
    fn lift_params(&mut self, e: &mut Expr, from: usize, param_count: usize) {
        if let ExprKind::Param(i) = e.kind
            && i >= param_count
        {
            *e = self.lift(e.clone(), from);
            return;
        }
        for_each_child_mut(e, &mut |c| self.lift_params(c, from, param_count));
    }

    fn bind_view(&mut self, v: &crate::catalog::ViewDef) -> Result<Plan> {
        if self.views.contains(&v.name) {
            return Err(Error::semantic("42P17", format!("infinite recursion detected in rules for relation \"{}\"", v.name)));
        }
        if self.views.len() >= crate::parser::MAX_VIEW_DEPTH {
            return Err(Error::new(
                crate::error::ErrorKind::Limit,
                "54001",
                format!(
                    "statement is too deeply nested: views nested more than {} deep (at view \"{}\")",
                    crate::parser::MAX_VIEW_DEPTH,
                    v.name
                ),
            ));
        }
        let stmts = crate::parser::parse(&v.query)?;
        let Some(ast::Statement::Query(q)) = stmts.first() else {
            return Err(Error::internal(format!("view \"{}\" is not a query", v.name)));
        };
        // The view's text has its own positions: bind it as a barrier frame and drop
        // positions from its errors.
        let saved_sql = self.sql;
        // SAFETY of lifetimes: the view text lives for this call only; positions into
        // it are meaningless for the statement, so errors lose them.
        self.frames.push(Frame {
            scope: Scope::default(),
            outer_refs: Vec::new(),
            barrier: true,
            clause: "",
        });
        self.views.push(v.name.clone());
        let saved_ctes = std::mem::take(&mut self.ctes);
        let r = self.bind_view_query(q);
        self.ctes = saved_ctes;
        self.views.pop();
        self.frames.pop();
        self.sql = saved_sql;
        let mut plan = r.map_err(|mut e| {
            e.position = None;
            e
        })?;
        for (c, n) in plan.schema.iter_mut().zip(&v.columns) {
            c.name = n.clone();
        }
        Ok(plan)
    }

    fn bind_view_query(&mut self, q: &ast::Query) -> Result<Plan> {
        let saved = self.sql;
        self.sql = "";
        let r = self.bind_query(q);
        self.sql = saved;
        r
    }

    fn bind_join(
        &mut self,
        lp: Plan,
        ls: Scope,
        rp: Plan,
        rs: Scope,
        op: &ast::JoinOperator,
    ) -> Result<(Plan, Scope)> {
        use ast::JoinOperator as J;
        let (kind, constraint) = match op {
            J::Join(c) | J::Inner(c) => (JoinKind::Inner, Some(c)),
            J::Left(c) | J::LeftOuter(c) => (JoinKind::Left, Some(c)),
            J::Right(c) | J::RightOuter(c) => (JoinKind::Right, Some(c)),
            J::FullOuter(c) => (JoinKind::Full, Some(c)),
            J::CrossJoin(_) => (JoinKind::Inner, None),
            _ => return Err(Error::not_supported("this join type")),
        };
        let nleft = lp.schema.len();
        // The combined scope: right columns shifted past the left ones.
        let mut scope = combine_scopes(ls.clone(), &rs, nleft);
        mark_nullable(&mut scope, &ls, &rs, kind);
        let using: Vec<String> = match constraint {
            Some(ast::JoinConstraint::Using(cols)) => cols
                .iter()
                .map(object_name)
                .collect::<Result<_>>()?,
            Some(ast::JoinConstraint::Natural) => natural_columns(&ls, &rs),
            _ => vec![],
        };
        let on = match constraint {
            Some(ast::JoinConstraint::On(e)) => {
                if self.contains_aggregate(e) {
                    return Err(Error::semantic("42803", "aggregate functions are not allowed in JOIN conditions").at(self.pos(e)));
                }
                let saved = self.set_scope(scope.clone());
                let r = self.bind_bool_clause(e, "JOIN/ON");
                self.set_scope(saved);
                Some(r?)
            }
            Some(ast::JoinConstraint::Using(_)) | Some(ast::JoinConstraint::Natural) => {
                using_join(&mut scope, &ls, &rs, nleft, kind, &using)?
            }
            Some(ast::JoinConstraint::None) | None => {
                if constraint.is_some() && kind != JoinKind::Inner {
                    return Err(Error::syntax("join requires an ON or USING condition"));
                }
                None
            }
        };
        let (plan, _) = join_plans(lp, ls, rp, rs, kind, on);
        Ok((plan, scope))
    }
}

/// Table names (or aliases) may appear once per FROM clause.
fn check_distinct_names(left: &Scope, right: &Scope) -> Result<()> {
    for c in &right.columns {
        if let Some(t) = c.table.as_deref()
            && left.has_table(t) {
                return Err(Error::semantic(
                    "42712",
                    format!("table name \"{t}\" specified more than once"),
                ));
            }
    }
    Ok(())
}

/// Records in `scope` (of `left` joined with `right`) the tables an outer join of
/// `kind` makes nullable (for `count(t.*)`).
fn mark_nullable(scope: &mut Scope, left: &Scope, right: &Scope, kind: JoinKind) {
    let sides: &[&Scope] = match kind {
        JoinKind::Left => &[right],
        JoinKind::Right => &[left],
        JoinKind::Full => &[left, right],
        _ => &[],
    };
    for side in sides {
        for t in side.tables() {
            if !scope.nullable.contains(&t) {
                scope.nullable.push(t);
            }
        }
    }
}

/// The scope of `left` joined with `right`: right columns move past the left ones.
fn combine_scopes(left: Scope, right: &Scope, nleft: usize) -> Scope {
    let mut scope = left;
    let left_entries = scope.columns.len();
    for c in &right.columns {
        let mut c2 = c.clone();
        c2.expr = shift_columns(&c.expr, nleft);
        scope.columns.push(c2);
    }
    scope.star.extend(right.star.iter().map(|&i| i + left_entries));
    scope.aliases.extend(right.aliases.iter().cloned());
    scope.nullable.extend(right.nullable.iter().cloned());
    scope.never_null.extend(right.never_null.iter().cloned());
    scope
}

/// Whether select-list item `i` of a set operation's arm `s` (a plain SELECT) has a
/// type of its own in the SQL: `'a'::text` binds to the same text literal as `'a'`,
/// but only the bare literal takes its type from the other arm (PostgreSQL's
/// "unknown"), so `SELECT 1 UNION SELECT 'a'::text` is a type mismatch.
fn typed_item(s: &ast::SetExpr, i: usize) -> bool {
    let ast::SetExpr::Select(sel) = s else { return false };
    match sel.projection.get(i) {
        Some(ast::SelectItem::UnnamedExpr(e)) | Some(ast::SelectItem::ExprWithAlias { expr: e, .. }) => {
            !super::is_unknown(e)
        }
        _ => false,
    }
}

/// Whether output column `i` of `plan` is an untyped literal (a string or NULL in a
/// select list), whose type a set operation takes from the other side.
fn unknown_column(plan: &Plan, i: usize) -> bool {
    match &plan.node {
        Node::Project { exprs, .. } => matches!(
            &exprs[i].kind,
            ExprKind::Literal(Value::Null) | ExprKind::Literal(Value::Text(_))
        ) && exprs[i].ty == DataType::Text,
        _ => false,
    }
}

/// The error for a `WITH RECURSIVE` CTE that refers to itself without being
/// `base UNION [ALL] recursive`.
fn not_union_form(name: &str) -> String {
    format!("recursive query \"{name}\" does not have the form non-recursive-term UNION [ALL] recursive-term")
}

/// What encloses a node of a recursive term, for [`misplaced_reference`].
#[derive(Clone, Copy, Default)]
struct Place {
    nullable: bool,
    set_op: Option<&'static str>,
    aggregate: bool,
}

/// Why a recursive reference may not be where it is.
enum Misplaced {
    OuterJoin,
    SetOp(&'static str),
    Aggregate,
}

/// Whether the scan of `work_table` in the recursive term `plan` stands where
/// PostgreSQL refuses it: on an outer join's nullable side, in INTERSECT or EXCEPT,
/// or under an aggregate.
fn misplaced_reference(plan: &Plan, work_table: WorkTableId, place: Place) -> Option<Misplaced> {
    crate::stack::guarded(|| match &plan.node {
        Node::WorkTableScan { work_table: w, .. } if *w == work_table => {
            if place.nullable {
                Some(Misplaced::OuterJoin)
            } else if let Some(op) = place.set_op {
                Some(Misplaced::SetOp(op))
            } else if place.aggregate {
                Some(Misplaced::Aggregate)
            } else {
                None
            }
        }
        Node::Join { left, right, kind, .. } => {
            let (left_nullable, right_nullable) = match kind {
                JoinKind::Left => (false, true),
                JoinKind::Right => (true, false),
                JoinKind::Full => (true, true),
                _ => (false, false),
            };
            misplaced_reference(left, work_table, Place { nullable: place.nullable || left_nullable, ..place })
                .or_else(|| misplaced_reference(right, work_table, Place { nullable: place.nullable || right_nullable, ..place }))
        }
        // PostgreSQL refuses the reference in INTERSECT ALL, in EXCEPT ALL and on
        // EXCEPT's right side, and allows it in INTERSECT and on EXCEPT's left.
        Node::SetOp { op: op @ (SetOpKind::Intersect | SetOpKind::Except), all, left, right } => {
            let (name, left_refused, right_refused) = match op {
                SetOpKind::Intersect => ("INTERSECT", *all, *all),
                _ => ("EXCEPT", *all, true),
            };
            let side = |refused: bool| if refused { Place { set_op: Some(name), ..place } } else { place };
            misplaced_reference(left, work_table, side(left_refused))
                .or_else(|| misplaced_reference(right, work_table, side(right_refused)))
        }
        Node::Aggregate { input, .. } => misplaced_reference(input, work_table, Place { aggregate: true, ..place }),
        _ => plan.children().into_iter().find_map(|c| misplaced_reference(c, work_table, place)),
    })
}

/// The most grouping sets a GROUP BY may have, as in PostgreSQL (54001 beyond).
pub const MAX_GROUPING_SETS: usize = 4096;

/// GROUP BY's grouping sets, each a list of expressions, in PostgreSQL's order:
/// the items' sets crossed (`GROUP BY a, ROLLUP (b, c)` is `(a, b, c), (a, b),
/// (a)`), `ROLLUP (a, b)` is `(a, b), (a), ()`, `CUBE (a, b)` every subset, larger
/// first, `()` the empty set; duplicate sets are kept. `None` when the list holds
/// only plain expressions.
fn grouping_sets<'a>(group_by: &[&'a ast::Expr]) -> Result<Option<Vec<Vec<&'a ast::Expr>>>> {
    let is_set_form = |e: &ast::Expr| {
        matches!(e, ast::Expr::GroupingSets(_) | ast::Expr::Rollup(_) | ast::Expr::Cube(_))
            || matches!(e, ast::Expr::Tuple(t) if t.is_empty())
    };
    if !group_by.iter().any(|e| is_set_form(e)) {
        return Ok(None);
    }
    let too_many = || {
        Error::new(
            crate::error::ErrorKind::Limit,
            "54001",
            format!("too many grouping sets present (maximum {MAX_GROUPING_SETS})"),
        )
    };
    // Counted before they are built: CUBE of 40 columns must not try 2^40 sets.
    let mut count = 1usize;
    for e in group_by {
        count = count.saturating_mul(count_sets(e)?);
    }
    if count > MAX_GROUPING_SETS {
        return Err(too_many());
    }
    let mut sets: Vec<Vec<&ast::Expr>> = vec![Vec::new()];
    for e in group_by {
        let item = item_sets(e);
        let mut crossed = Vec::with_capacity(sets.len() * item.len());
        for s in &sets {
            for t in &item {
                let mut u = s.clone();
                u.extend(t.iter().copied());
                crossed.push(u);
            }
        }
        sets = crossed;
    }
    return Ok(Some(sets));

    /// ROLLUP and CUBE inside GROUPING SETS reach here as calls of functions of
    /// those names: their arguments, each element a list (a row `(a, b)` is one
    /// element of two expressions).
    fn nested(e: &ast::Expr) -> Option<(bool, Vec<Vec<&ast::Expr>>)> {
        let ast::Expr::Function(f) = e else { return None };
        let name = f.name.to_string().to_lowercase();
        let cube = match name.as_str() {
            "rollup" => false,
            "cube" => true,
            _ => return None,
        };
        let ast::FunctionArguments::List(l) = &f.args else { return None };
        let mut elements = Vec::new();
        for a in &l.args {
            let ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(x)) = a else { return None };
            elements.push(match x {
                ast::Expr::Tuple(t) => t.iter().collect(),
                x => vec![x],
            });
        }
        Some((cube, elements))
    }

    /// How many sets `e` gives; a CUBE of more than 12 elements is PostgreSQL's
    /// 54000.
    fn count_sets(e: &ast::Expr) -> Result<usize> {
        let cube = |n: usize| {
            if n > 12 {
                return Err(Error::new(crate::error::ErrorKind::Limit, "54000", "CUBE is limited to 12 elements"));
            }
            Ok(1usize << n)
        };
        Ok(match e {
            ast::Expr::GroupingSets(list) => {
                let mut sum = 0usize;
                for s in list {
                    sum += match s.as_slice() {
                        [one] => match nested(one) {
                            Some((true, el)) => cube(el.len())?,
                            Some((false, el)) => el.len() + 1,
                            None => 1,
                        },
                        _ => 1,
                    };
                }
                sum
            }
            ast::Expr::Rollup(el) => el.len() + 1,
            ast::Expr::Cube(el) => cube(el.len())?,
            _ => 1,
        })
    }

    fn rollup<'a>(elements: &[Vec<&'a ast::Expr>]) -> Vec<Vec<&'a ast::Expr>> {
        (0..=elements.len()).rev().map(|n| elements[..n].concat()).collect()
    }

    fn cube<'a>(elements: &[Vec<&'a ast::Expr>]) -> Vec<Vec<&'a ast::Expr>> {
        // Subsets by descending size, each size in the elements' order, as
        // PostgreSQL lists them.
        let n = elements.len();
        let mut masks: Vec<usize> = (0..1usize << n).collect();
        masks.sort_by_key(|&m| (std::cmp::Reverse(m.count_ones()), (0..n).map(|i| m >> (n - 1 - i) & 1 == 0).collect::<Vec<_>>()));
        masks
            .into_iter()
            .map(|m| (0..n).filter(|&i| m >> i & 1 == 1).flat_map(|i| elements[i].iter().copied()).collect())
            .collect()
    }

    fn item_sets(e: &ast::Expr) -> Vec<Vec<&ast::Expr>> {
        match e {
            ast::Expr::GroupingSets(list) => list
                .iter()
                .flat_map(|s| match s.as_slice() {
                    [one] => match nested(one) {
                        Some((true, el)) => cube(&el),
                        Some((false, el)) => rollup(&el),
                        None => vec![vec![one]],
                    },
                    _ => vec![s.iter().collect()],
                })
                .collect(),
            ast::Expr::Rollup(el) => rollup(&el.iter().map(|x| x.iter().collect()).collect::<Vec<_>>()),
            ast::Expr::Cube(el) => cube(&el.iter().map(|x| x.iter().collect()).collect::<Vec<_>>()),
            ast::Expr::Tuple(t) if t.is_empty() => vec![Vec::new()],
            e => vec![vec![e]],
        }
    }
}

fn take_plan(plan: &mut Plan, f: impl FnOnce(Plan) -> Plan) {
    let p = std::mem::replace(plan, Plan::one_row());
    *plan = f(p);
}

fn cast_to(e: Expr, t: DataType) -> Expr {
    if e.ty == t {
        e
    } else {
        Expr::new(ExprKind::Cast { expr: Box::new(e), explicit: false }, t)
    }
}

/// Wraps `plan` in a projection casting its columns to `types` where they differ.
pub(super) fn cast_plan(plan: Plan, types: &[DataType]) -> Plan {
    if plan.schema.iter().zip(types).all(|(c, t)| c.ty == *t) {
        return plan;
    }
    let exprs: Vec<Expr> = plan
        .schema
        .iter()
        .enumerate()
        .zip(types)
        .map(|((i, c), t)| cast_to(Expr::column(i, c.ty), *t))
        .collect();
    let names = plan.schema.iter().map(|c| c.name.clone()).collect();
    project(plan, exprs, names)
}

/// `e` with every column reference moved up by `by` (right side of a join).
pub fn shift_columns(e: &Expr, by: usize) -> Expr {
    let mut e = e.clone();
    shift_in_place(&mut e, by);
    e
}

fn shift_in_place(e: &mut Expr, by: usize) {
    if let ExprKind::Column(i) = &mut e.kind {
        *i += by;
        return;
    }
    for_each_child_mut(e, &mut |c| shift_in_place(c, by));
}

/// Calls `f` on each direct child of `e`, mutably.
pub fn for_each_child_mut(e: &mut Expr, f: &mut dyn FnMut(&mut Expr)) {
    use crate::expr::SubqueryKind;
    match &mut e.kind {
        ExprKind::Column(_) | ExprKind::Literal(_) | ExprKind::Param(_) => {}
        ExprKind::Cast { expr, .. }
        | ExprKind::Neg(expr)
        | ExprKind::Not(expr)
        | ExprKind::IsNull { expr, .. }
        | ExprKind::IsBool { expr, .. }
        | ExprKind::Extract { expr, .. } => f(expr),
        ExprKind::Arith { left, right, .. }
        | ExprKind::Compare { left, right, .. }
        | ExprKind::IsDistinctFrom { left, right, .. } => {
            f(left);
            f(right);
        }
        ExprKind::And(v) | ExprKind::Or(v) | ExprKind::Coalesce(v) => v.iter_mut().for_each(f),
        ExprKind::Udf { args, .. } => args.iter_mut().for_each(f),
        ExprKind::Func { args, .. } => args.iter_mut().for_each(f),
        ExprKind::Case { whens, else_ } => {
            for (a, b) in whens {
                f(a);
                f(b);
            }
            if let Some(x) = else_ {
                f(x);
            }
        }
        ExprKind::InList { expr, list, .. } => {
            f(expr);
            list.iter_mut().for_each(f);
        }
        ExprKind::Like { expr, pattern, .. } => {
            f(expr);
            f(pattern);
        }
        ExprKind::Subquery(s) => {
            s.correlated.iter_mut().for_each(&mut *f);
            match &mut s.kind {
                SubqueryKind::In { expr, rest, .. } => {
                    f(expr);
                    rest.iter_mut().for_each(f);
                }
                SubqueryKind::Quantified { expr, .. } => f(expr),
                _ => {}
            }
        }
    }
}

/// Whether a FROM item is `LATERAL (subquery)`.
fn is_lateral_subquery(f: &ast::TableFactor) -> bool {
    matches!(f, ast::TableFactor::Derived { lateral: true, .. } | ast::TableFactor::Function { lateral: true, .. })
}

/// A LATERAL item's join condition, as written.
#[derive(Clone, Copy)]
enum LateralCond<'q> {
    /// A comma or CROSS JOIN.
    None,
    On(&'q ast::Expr),
    Using(&'q [ast::ObjectName]),
    Natural,
}

impl LateralCond<'_> {
    /// No condition, or `ON true`.
    fn is_true(&self) -> bool {
        match self {
            LateralCond::None => true,
            LateralCond::On(e) => matches!(e, ast::Expr::Value(v) if v.value == ast::Value::Boolean(true)),
            _ => false,
        }
    }
}

/// The join a LATERAL item may be on the right of, as PostgreSQL allows: `[INNER]
/// JOIN` and `LEFT [OUTER] JOIN` with ON, USING or NATURAL, and `CROSS JOIN`.
fn lateral_join_kind(op: &ast::JoinOperator) -> Option<(JoinKind, LateralCond<'_>)> {
    use ast::JoinOperator as J;
    let (kind, c) = match op {
        J::Join(c) | J::Inner(c) => (JoinKind::Inner, c),
        J::Left(c) | J::LeftOuter(c) => (JoinKind::Left, c),
        J::CrossJoin(_) => return Some((JoinKind::Inner, LateralCond::None)),
        _ => return None,
    };
    let cond = match c {
        ast::JoinConstraint::On(e) => LateralCond::On(e),
        ast::JoinConstraint::Using(cols) => LateralCond::Using(cols),
        ast::JoinConstraint::Natural => LateralCond::Natural,
        ast::JoinConstraint::None => return None,
    };
    Some((kind, cond))
}

/// A RIGHT or FULL join, whose right side may not read the items before it.
fn is_right_or_full(op: &ast::JoinOperator) -> bool {
    use ast::JoinOperator as J;
    matches!(op, J::Right(_) | J::RightOuter(_) | J::FullOuter(_))
}

/// The columns NATURAL joins on: the names both sides' `*` has.
fn natural_columns(ls: &Scope, rs: &Scope) -> Vec<String> {
    ls.star
        .iter()
        .map(|&i| ls.columns[i].name.clone())
        .filter(|n| rs.star.iter().any(|&j| rs.columns[j].name == *n))
        .collect()
}

/// `USING (names)` (or NATURAL's columns) of a join of `ls` (`nleft` columns) with
/// `rs`, of `kind`: the equalities of each name's column on both sides (cast to
/// their common type), over the joined columns; `scope` (their combined scope)
/// gets each name once as the merged column (the left one, the right one under
/// RIGHT, COALESCE of both under FULL), first in `*`, the sides' own reachable by
/// qualified names only. 42703 for a name one side lacks.
fn using_join(scope: &mut Scope, ls: &Scope, rs: &Scope, nleft: usize, kind: JoinKind, names: &[String]) -> Result<Option<Expr>> {
    let mut conds = Vec::new();
    let mut merged_cols = Vec::new();
    let mut hidden_idx = Vec::new();
    for n in names {
        // The column an unqualified name finds on each side (after an earlier
        // USING, the merged column).
        let li = ls.columns.iter().position(|c| c.name == *n && !c.qualified_only);
        let ri = rs.columns.iter().position(|c| c.name == *n && !c.qualified_only);
        let (Some(li), Some(ri)) = (li, ri) else {
            return Err(Error::semantic(
                "42703",
                format!("column \"{n}\" specified in USING clause does not exist in {} table", if li.is_none() { "left" } else { "right" }),
            ));
        };
        let l = ls.columns[li].expr.clone();
        let r = shift_columns(&rs.columns[ri].expr, nleft);
        let t = common_type(&l.ty, &r.ty)
            .ok_or_else(|| Error::undefined_function(format!("operator does not exist: {} = {}", l.ty, r.ty)))?;
        let lc = cast_to(l, t);
        let rc = cast_to(r, t);
        conds.push(Expr::new(
            ExprKind::Compare { op: CmpOp::Eq, left: Box::new(lc.clone()), right: Box::new(rc.clone()) },
            DataType::Boolean,
        ));
        let merged = match kind {
            JoinKind::Right => rc,
            JoinKind::Full => Expr::new(ExprKind::Coalesce(vec![lc, rc]), t),
            _ => lc,
        };
        merged_cols.push(ScopeColumn {
            table: None,
            name: n.clone(),
            ty: t,
            expr: merged,
            qualified_only: false,
            unqualified_only: true,
        });
        hidden_idx.push(li);
        hidden_idx.push(ls.columns.len() + ri);
    }
    for &i in &hidden_idx {
        scope.columns[i].qualified_only = true;
    }
    // `*`: merged columns first, then the others of each side.
    let base = scope.columns.len();
    let mut star: Vec<usize> = (base..base + merged_cols.len()).collect();
    star.extend(scope.star.iter().copied().filter(|i| !hidden_idx.contains(i)));
    scope.columns.extend(merged_cols);
    scope.star = star;
    Ok(match conds.len() {
        0 => None,
        1 => conds.pop(),
        _ => Some(Expr::new(ExprKind::And(conds), DataType::Boolean)),
    })
}

/// `cond`, bound over a LATERAL join's row (`nleft` left columns, then the right
/// item's), as a condition over the right item's rows alone, for a LEFT join's
/// Apply to filter them per left row: a left column it reads becomes one more
/// parameter of the Apply (appended to `params`, numbered from `param_base`), a
/// right column moves to its place in the right item. Correlated subqueries in it
/// pass the new parameters on as any other parameter.
fn over_right_side(cond: &Expr, nleft: usize, param_base: usize, params: &mut Vec<Expr>) -> Expr {
    fn go(e: &mut Expr, nleft: usize, param_base: usize, params: &mut Vec<Expr>) {
        match e.kind {
            ExprKind::Column(i) if i < nleft => {
                let k = match params.iter().position(|p| p.kind == ExprKind::Column(i)) {
                    Some(k) => k,
                    None => {
                        params.push(Expr::column(i, e.ty));
                        params.len() - 1
                    }
                };
                e.kind = ExprKind::Param(param_base + k);
            }
            ExprKind::Column(i) => e.kind = ExprKind::Column(i - nleft),
            _ => for_each_child_mut(e, &mut |c| crate::stack::guarded(|| go(c, nleft, param_base, params))),
        }
    }
    let mut e = cond.clone();
    go(&mut e, nleft, param_base, params);
    e
}

/// Whether `f` is a function in FROM (`generate_series(…)`).
fn is_function(f: &ast::TableFactor) -> bool {
    matches!(f, ast::TableFactor::Table { args: Some(_), .. })
}

/// `[LATERAL] f(args) [alias]` as the query `SELECT * FROM f(args) [alias]`, with
/// the alias the LATERAL item gets around it: the function's alias without column
/// names, or the function's name (PostgreSQL's default alias of a function).
fn function_as_query(f: &ast::TableFactor) -> Option<(ast::Query, ast::TableAlias)> {
    let (name, args, alias) = match f {
        ast::TableFactor::Function { name, args, alias, with_ordinality: false, .. } => (name, args.clone(), alias),
        ast::TableFactor::Table { name, args: Some(a), alias, .. } => (name, a.args.clone(), alias),
        _ => return None,
    };
    let mut statements = crate::parser::parse("SELECT * FROM generate_series(1, 1)").ok()?;
    let ast::Statement::Query(mut q) = statements.pop()? else { return None };
    let ast::SetExpr::Select(sel) = &mut *q.body else { return None };
    let ast::TableFactor::Table { name: n, args: Some(a), alias: al, .. } = &mut sel.from.first_mut()?.relation else {
        return None;
    };
    *n = name.clone();
    a.args = args;
    *al = alias.clone();
    let outer_name = match alias {
        Some(a) => a.name.clone(),
        None => ast::Ident::new(object_name(name).ok()?),
    };
    let outer = ast::TableAlias { explicit: true, name: outer_name, columns: Vec::new(), at: None };
    Some((*q, outer))
}

fn join_plans(lp: Plan, ls: Scope, rp: Plan, _rs: Scope, kind: JoinKind, on: Option<Expr>) -> (Plan, Scope) {
    let mut schema = lp.schema.clone();
    schema.extend(rp.schema.iter().cloned());
    let plan = Plan::new(
        Node::Join {
            left: Box::new(lp),
            right: Box::new(rp),
            kind,
            on,
            left_keys: vec![],
            right_keys: vec![],
            method: crate::plan::JoinMethod::NestedLoop,
        },
        schema,
    );
    (plan, ls)
}

/// `ORDER BY … OFFSET offset FETCH FIRST count ROWS WITH TIES`: the rows after
/// the first `offset` up to row `offset + count` of the order, and every later row
/// tied with that one on all ORDER BY keys. The query's Sort (under the projections
/// that end it) becomes a window numbering the rows (`row_number()`) and ranking
/// them (`rank()`, the position of a row's first peer) in the same order, filtered
/// on `row_number > offset AND rank <= offset + count`, the two numbers projected
/// away. The window holds its whole input (as the Sort did; within memory_limit)
/// and reads it to the end. `None` when the query has no ORDER BY.
fn with_ties(mut plan: Plan, count: u64, offset: u64) -> Option<Plan> {
    use crate::plan::{FrameBound, FrameUnits, WindowCall, WindowFrame, WindowFunc, WindowSpec};
    fn sort_under_projections(plan: &mut Plan) -> Option<&mut Plan> {
        if matches!(plan.node, Node::Sort { .. }) {
            return Some(plan);
        }
        match &mut plan.node {
            Node::Project { input, .. } => sort_under_projections(input),
            _ => None,
        }
    }
    take_plan(sort_under_projections(&mut plan)?, |sort| {
        let Node::Sort { input, keys, .. } = sort.node else { unreachable!("checked to be a Sort") };
        let width = input.schema.len();
        let spec = WindowSpec {
            partition: Vec::new(),
            order: keys,
            frame: WindowFrame {
                units: FrameUnits::Rows,
                start: FrameBound::UnboundedPreceding,
                end: FrameBound::CurrentRow,
            },
        };
        let call = |func| WindowCall { func, args: Vec::new(), spec: 0, ty: DataType::BigInt };
        let mut schema = input.schema.clone();
        schema.push(out("row_number", DataType::BigInt));
        schema.push(out("rank", DataType::BigInt));
        let numbered = Plan::new(
            Node::Window {
                input,
                specs: vec![spec],
                calls: vec![call(WindowFunc::RowNumber), call(WindowFunc::Rank)],
            },
            schema.clone(),
        );
        let bigint = |n: u64| Expr::literal(Value::BigInt(n.min(i64::MAX as u64) as i64), DataType::BigInt);
        let compare = |op, column: usize, n: u64| {
            Expr::new(
                ExprKind::Compare {
                    op,
                    left: Box::new(Expr::column(column, DataType::BigInt)),
                    right: Box::new(bigint(n)),
                },
                DataType::Boolean,
            )
        };
        let predicate = Expr::new(
            ExprKind::And(vec![
                compare(CmpOp::Gt, width, offset),
                compare(CmpOp::LtEq, width + 1, offset.saturating_add(count)),
            ]),
            DataType::Boolean,
        );
        let kept = Plan::new(Node::Filter { input: Box::new(numbered), predicate }, schema.clone());
        let exprs = (0..width).map(|i| Expr::column(i, schema[i].ty)).collect();
        let names = schema.iter().take(width).map(|c| c.name.clone()).collect();
        project(kept, exprs, names)
    });
    Some(plan)
}

/// A sort key from ORDER BY's options. `USING <` / `USING >` are ascending and
/// descending (as PostgreSQL's btree ordering operators); other operators are errors.
/// `DISTINCT ON (on)`: the first row of each group of rows equal on the `on` columns
/// (NULLs equal), first in the order of `keys` (ORDER BY), as the rows numbered 1 by
/// `row_number() OVER (PARTITION BY on ORDER BY keys)`. The number is one column past
/// `plan`'s, dropped by the projection that ends the SELECT. Rows tied on every key
/// leave the choice to the sort, as in PostgreSQL.
fn distinct_on(plan: Plan, on: &[usize], keys: &[SortKey]) -> Plan {
    use crate::plan::{FrameBound, FrameUnits, WindowCall, WindowFrame, WindowFunc, WindowSpec};
    let width = plan.schema.len();
    let spec = WindowSpec {
        partition: on.iter().map(|&i| Expr::column(i, plan.schema[i].ty)).collect(),
        order: keys.to_vec(),
        frame: WindowFrame {
            units: FrameUnits::Rows,
            start: FrameBound::UnboundedPreceding,
            end: FrameBound::CurrentRow,
        },
    };
    let call = WindowCall {
        func: WindowFunc::RowNumber,
        args: Vec::new(),
        spec: 0,
        ty: DataType::BigInt,
    };
    let mut schema = plan.schema.clone();
    schema.push(OutputColumn {
        name: "row_number".into(),
        ty: DataType::BigInt,
    });
    let numbered = Plan::new(
        Node::Window {
            input: Box::new(plan),
            specs: vec![spec],
            calls: vec![call],
        },
        schema.clone(),
    );
    let first = Expr::new(
        ExprKind::Compare {
            op: CmpOp::Eq,
            left: Box::new(Expr::column(width, DataType::BigInt)),
            right: Box::new(Expr::literal(Value::BigInt(1), DataType::BigInt)),
        },
        DataType::Boolean,
    );
    Plan::new(
        Node::Filter {
            input: Box::new(numbered),
            predicate: first,
        },
        schema,
    )
}

pub(super) fn sort_key(expr: Expr, o: &ast::OrderByOptions) -> Result<SortKey> {
    let desc = match &o.sort {
        None | Some(ast::OrderBySort::Asc) => false,
        Some(ast::OrderBySort::Desc) => true,
        Some(ast::OrderBySort::Using(op)) => {
            // `OPERATOR(pg_catalog.>)` names the operator with a schema.
            let name = op.0.last().map(|p| p.to_string()).unwrap_or_default();
            match name.as_str() {
                "<" => false,
                ">" => true,
                _ => {
                    return Err(Error::semantic(
                        "42809",
                        format!("operator {name} is not a valid ordering operator"),
                    ));
                }
            }
        }
    };
    Ok(SortKey {
        expr,
        desc,
        nulls_first: o.nulls_first.unwrap_or(desc),
    })
}

/// Whether `plan` reads a parameter numbered from `param_count` on: a column of an
/// outer query.
fn plan_reads_params(plan: &Plan, param_count: usize) -> bool {
    fn expr(e: &Expr, param_count: usize) -> bool {
        matches!(e.kind, ExprKind::Param(i) if i >= param_count)
            || e.children().into_iter().any(|c| crate::stack::guarded(|| expr(c, param_count)))
    }
    let mut found = false;
    let mut p = plan.clone();
    p.for_each_expr_mut(&mut |e| found |= expr(e, param_count));
    found
}

/// Whether `plan` calls a volatile function (a sequence's, an application's), which
/// PostgreSQL takes as a reason to run a CTE once.
pub(crate) fn plan_is_volatile(plan: &Plan) -> bool {
    let mut found = false;
    let mut p = plan.clone();
    p.for_each_expr_mut(&mut |e| found |= expr_is_volatile(e));
    found
}

/// Whether `e` calls an application function or a sequence (its value may differ
/// between two evaluations).
pub(crate) fn expr_is_volatile(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Udf { .. } => true,
        ExprKind::Func { func, .. } if func.is_sequence() => true,
        _ => e.children().into_iter().any(|c| crate::stack::guarded(|| expr_is_volatile(c))),
    }
}

/// What `settle_ctes` knows of one CTE of the WITH it settles.
struct Settled {
    /// Inlined: each reference becomes the plan itself.
    inline: bool,
    /// The placeholders still to fill.
    uses: usize,
    /// The CTE's plan, its own references filled, until the last use takes it.
    plan: Option<Plan>,
}

/// The plan a `Node::CteScan` holds until its CTE's WITH settles: no rows, with the
/// CTE's columns, and `workers` 0, which no real plan has.
fn cte_placeholder(schema: Schema) -> Plan {
    let mut p = Plan::new(Node::Values { rows: Vec::new() }, schema);
    p.workers = 0;
    p
}

/// Whether `plan` holds a `Node::CteScan` of one of `ctes`.
fn reads_cte(plan: &Plan, ctes: &std::collections::HashSet<crate::plan::CteId>) -> bool {
    crate::stack::guarded(|| match &plan.node {
        Node::CteScan { cte, .. } if ctes.contains(cte) => true,
        _ => plan.children().into_iter().any(|c| reads_cte(c, ctes)),
    })
}

/// Counts the placeholders of the CTEs `settled` in `plan` (an inner WITH's CTE
/// plans, settled before, are searched too: they may read an outer CTE).
fn count_cte_scans(plan: &Plan, settled: &mut HashMap<crate::plan::CteId, Settled>) {
    crate::stack::guarded(|| {
        if let Node::CteScan { cte, .. } = &plan.node
            && let Some(s) = settled.get_mut(cte)
        {
            s.uses += 1;
            return;
        }
        for c in plan.children() {
            count_cte_scans(c, settled);
        }
    })
}

/// Puts the plans of the CTEs `settled` at their placeholders in `plan`: moved at a
/// CTE's last use, copied before it; an inlined CTE's `Node::CteScan` becomes the
/// plan's node (keeping the reference's schema). The plans put in are complete and
/// not searched again.
fn fill_cte_scans(plan: &mut Plan, settled: &mut HashMap<crate::plan::CteId, Settled>) {
    crate::stack::guarded(|| {
        if let Node::CteScan { cte, plan: inner, .. } = &mut plan.node
            && let Some(s) = settled.get_mut(cte)
        {
            debug_assert_eq!(inner.workers, 0, "a CTE's placeholder");
            s.uses -= 1;
            let p = if s.uses == 0 { s.plan.take() } else { s.plan.clone() };
            let p = p.expect("a CTE's plan is settled before the plans that read it");
            if s.inline {
                plan.node = p.node;
            } else {
                **inner = p;
            }
            return;
        }
        for c in plan.children_mut() {
            fill_cte_scans(c, settled);
        }
    })
}

/// The clause of FROM item `f` that BeeDB parses but does not implement, if it has
/// one: refused (0A000) rather than ignored, so that no query returns rows its clause
/// should have changed (`TABLESAMPLE` returning every row, `WITH ORDINALITY` without
/// its column).
fn unsupported_factor_clause(f: &ast::TableFactor) -> Option<&'static str> {
    match f {
        ast::TableFactor::Table { with_hints, version, with_ordinality, partitions, json_path, sample, index_hints, .. } => {
            if sample.is_some() {
                Some("TABLESAMPLE")
            } else if *with_ordinality {
                Some("WITH ORDINALITY")
            } else if !with_hints.is_empty() {
                Some("a table hint (WITH (...)) in FROM")
            } else if version.is_some() {
                Some("a table version clause (FOR SYSTEM_TIME, AT, BEFORE) in FROM")
            } else if !partitions.is_empty() {
                Some("PARTITION (...) in FROM")
            } else if json_path.is_some() {
                Some("a JSON path on a FROM item")
            } else if !index_hints.is_empty() {
                Some("an index hint in FROM")
            } else {
                None
            }
        }
        ast::TableFactor::Derived { sample: Some(_), .. } => Some("TABLESAMPLE"),
        ast::TableFactor::Function { with_ordinality: true, .. } => Some("WITH ORDINALITY"),
        _ => None,
    }
}
