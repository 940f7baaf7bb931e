//! Queries and EXPLAIN.

use std::sync::Arc;

use sqlparser::ast::{self, Statement};

use super::Ctx;
use crate::binder::Binder;
use crate::error::{Error, Result};
use crate::exec::{self, ExecContext, Profile};
use crate::plan::{BoundQuery, Plan, Subplan, explain};
use crate::optimizer;
use crate::session::{Column, QueryResult, Row};
use crate::types::{DataType, Value};

/// Binds and plans a query; returns it with the parameter values cast to the types
/// the binder inferred.
pub fn plan_query(ctx: &Ctx<'_>, q: &ast::Query) -> Result<(BoundQuery, Vec<Value>)> {
    let mut binder = Binder::new(ctx.catalog(), ctx.sql, ctx.params.len());
    binder.bees = Some(ctx.bee_cache);
    let plan = binder.bind_query(q)?;
    let params = cast_params(ctx.params, &binder.param_types)?;
    let subqueries = binder.into_subqueries();
    let bq = optimize_with(ctx, plan, subqueries, &params)?;
    Ok((bq, params))
}

/// The optimized plan, without bees (for callers that run it on the generic path).
pub fn optimize(plan: Plan, subqueries: Vec<Subplan>) -> BoundQuery {
    BoundQuery {
        plan: optimizer::optimize(plan),
        subqueries: subqueries
            .into_iter()
            .map(|s| Subplan {
                plan: optimizer::optimize(s.plan),
                ..s
            })
            .collect(),
    }
}

/// The optimized plan with the bees the session's settings allow attached to its
/// scans ([`crate::bees::attach_query`]); `params` are the (cast) parameter values.
pub fn optimize_with(ctx: &Ctx<'_>, plan: Plan, subqueries: Vec<Subplan>, params: &[Value]) -> Result<BoundQuery> {
    let mut bq = optimize(plan, subqueries);
    let env = crate::bees::BeeEnv {
        cache: ctx.bee_cache,
        settings: ctx.bees,
        statement: ctx.statement_bees,
        params,
    };
    crate::bees::attach_query(&mut bq, &env)?;
    Ok(bq)
}

/// `generic` (a plan without bees) with the bees the session's settings allow: the
/// plan itself when they allow none, else a copy with them attached.
pub fn with_bees(ctx: &Ctx<'_>, generic: Arc<BoundQuery>, params: &[Value]) -> Result<Arc<BoundQuery>> {
    if !ctx.bees.scan() && !ctx.bees.deform() {
        return Ok(generic);
    }
    let mut bq = (*generic).clone();
    let env = crate::bees::BeeEnv {
        cache: ctx.bee_cache,
        settings: ctx.bees,
        statement: ctx.statement_bees,
        params,
    };
    crate::bees::attach_query(&mut bq, &env)?;
    Ok(Arc::new(bq))
}

/// Parameter values cast to the types their uses gave them.
pub fn cast_params(params: &[Value], types: &[Option<DataType>]) -> Result<Vec<Value>> {
    params
        .iter()
        .zip(types)
        .map(|(v, t)| match t {
            Some(t) if v.data_type().as_ref() != Some(t) => Ok(v.cast_for_assignment(t)?),
            Some(_) => Ok(v.clone()),
            // Used without a type context: the binder typed it text.
            None => Ok(v.cast(&DataType::Text)?),
        })
        .collect()
}

pub fn run(ctx: &Ctx<'_>, bq: &BoundQuery, params: &[Value], profile: Option<&Profile>) -> Result<Vec<Vec<Value>>> {
    let ectx = ExecContext {
        reader: ctx.txn.reader(),
        params,
        subqueries: &bq.subqueries,
        memory_limit: ctx.memory_limit,
        profile,
        interrupt: &ctx.interrupt,
    };
    exec::collect(&bq.plan, &ectx)
}

/// Runs `bq`, handing each output batch to `sink` (which returns `Ok(false)` to stop),
/// so a caller that writes rows out (COPY TO) never holds the whole result.
pub fn stream(
    ctx: &Ctx<'_>,
    bq: &BoundQuery,
    params: &[Value],
    sink: &mut dyn FnMut(crate::vector::Batch) -> Result<bool>,
) -> Result<()> {
    let ectx = ExecContext {
        reader: ctx.txn.reader(),
        params,
        subqueries: &bq.subqueries,
        memory_limit: ctx.memory_limit,
        profile: None,
        interrupt: &ctx.interrupt,
    };
    exec::run(&bq.plan, &ectx, sink)
}

pub fn select(ctx: &mut Ctx<'_>, q: &ast::Query) -> Result<QueryResult> {
    let (bq, params) = match ctx.plan_cache {
        Some(cache) => cache.plan_query(ctx, q)?,
        None => {
            let (bq, params) = plan_query(ctx, q)?;
            (Arc::new(bq), params)
        }
    };
    let rows = run(ctx, &bq, &params, None)?;
    Ok(rows_result(&bq.plan, rows))
}

pub fn rows_result(plan: &Plan, rows: Vec<Vec<Value>>) -> QueryResult {
    let columns = plan
        .schema
        .iter()
        .map(|c| Column {
            name: c.name.clone(),
            data_type: c.ty,
        })
        .collect();
    let n = rows.len() as u64;
    QueryResult {
        columns,
        rows: rows.into_iter().map(Row).collect(),
        tag: format!("SELECT {n}"),
        rows_affected: n,
    }
}

pub fn explain(ctx: &mut Ctx<'_>, stmt: &Statement, analyze: bool) -> Result<QueryResult> {
    let Statement::Query(q) = stmt else {
        return Err(Error::not_supported("EXPLAIN of statements other than queries"));
    };
    let (bq, params) = plan_query(ctx, q)?;
    let mut lines = Vec::new();
    if analyze {
        let profile = Profile::default();
        let start = std::time::Instant::now();
        run(ctx, &bq, &params, Some(&profile))?;
        let elapsed = start.elapsed();
        lines.extend(explain::explain(&bq.plan, Some(&profile)));
        for (i, s) in bq.subqueries.iter().enumerate() {
            lines.push(format!("SubPlan {}", i + 1));
            lines.extend(explain::explain(&s.plan, Some(&profile)).into_iter().map(|l| format!("  {l}")));
        }
        lines.push(format!("Execution Time: {:.3} ms", elapsed.as_secs_f64() * 1e3));
    } else {
        lines.extend(explain::explain(&bq.plan, None));
        for (i, s) in bq.subqueries.iter().enumerate() {
            lines.push(format!("SubPlan {}", i + 1));
            lines.extend(explain::explain(&s.plan, None).into_iter().map(|l| format!("  {l}")));
        }
    }
    let n = lines.len() as u64;
    Ok(QueryResult {
        columns: vec![Column {
            name: "QUERY PLAN".into(),
            data_type: DataType::Text,
        }],
        rows: lines.into_iter().map(|l| Row(vec![Value::Text(l)])).collect(),
        tag: "EXPLAIN".into(),
        rows_affected: n,
    })
}
