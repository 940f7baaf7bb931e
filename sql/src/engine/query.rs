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
    binder.functions = Some(ctx.functions);
    let plan = binder.bind_query(q)?;
    let params = cast_params(ctx.params, &binder.param_types)?;
    let subqueries = binder.into_subqueries();
    let bq = optimize_with(ctx, plan, subqueries, &params)?;
    Ok((bq, params))
}

/// What the optimizer learns about relations from the engine: the sizes the bee cache
/// has seen (full scans and inserts since the database was opened, seeded from the
/// catalog at open) and the column statistics ANALYZE stored in the catalog.
pub struct EngineStats<'a> {
    pub cache: &'a beedb_bees::BeeCache,
    pub catalog: &'a crate::catalog::Catalog,
}

impl optimizer::Stats for EngineStats<'_> {
    fn table_rows(&self, table: &crate::catalog::TableDef) -> Option<f64> {
        match self.cache.relation_size(table.id as u64) {
            0 => None,
            n => Some(n as f64),
        }
    }

    fn column(&self, table: &crate::catalog::TableDef, column: usize) -> Option<&crate::catalog::ColumnStats> {
        self.catalog.stats.get(&table.id)?.columns.get(column)
    }
}

/// The optimized plan, without bees and without decorrelation (for DML's and DDL's
/// internal plans, which run on the generic path and expect their scan's shape).
pub fn optimize(
    plan: Plan,
    subqueries: Vec<Subplan>,
    rules: &optimizer::Rules,
    stats: &dyn optimizer::Stats,
) -> BoundQuery {
    let rules = optimizer::Rules { decorrelate: false, ..*rules };
    optimizer::optimize_query(plan, subqueries, &rules, stats)
}

/// The optimized plan of a statement, without bees: the session's optimizer rules
/// (decorrelation included) over the relation sizes the engine knows.
pub fn optimize_generic(ctx: &Ctx<'_>, plan: Plan, subqueries: Vec<Subplan>) -> BoundQuery {
    let stats = EngineStats { cache: ctx.bee_cache, catalog: ctx.catalog() };
    optimizer::optimize_query(plan, subqueries, &ctx.optimizer, &stats)
}

/// The optimized plan with the bees the session's settings allow attached to its
/// scans ([`crate::bees::attach_query`]); `params` are the (cast) parameter values.
pub fn optimize_with(ctx: &Ctx<'_>, plan: Plan, subqueries: Vec<Subplan>, params: &[Value]) -> Result<BoundQuery> {
    let mut bq = optimize_generic(ctx, plan, subqueries);
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
/// plan itself when they allow none or it is a point plan (which the point path
/// runs without bees), else a copy with them attached.
pub fn with_bees(ctx: &Ctx<'_>, generic: Arc<BoundQuery>, params: &[Value]) -> Result<Arc<BoundQuery>> {
    if !ctx.bees.scan() && !ctx.bees.deform() && !ctx.bees.sort() && !ctx.bees.join() {
        return Ok(generic);
    }
    // A point plan runs on the point path, which decodes its few tuples with the
    // generic decoder: no bee would be used, so neither copy the plan nor look bees
    // up (Wisconsin q32 spent 20k of its 281k instructions here). Only a lookup by a
    // non-unique key that finds more than `POINT_MAX_ROWS` entries then runs through
    // the operator tree, without bees: a plan expected to give at most 128 rows, which
    // would get no scan bee anyway (fewer than 256 tuples expected), only deform bees.
    if ctx.point_path && generic.subqueries.is_empty() && exec::point::is_point_plan(&generic.plan) {
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

/// What the executor needs to run `bq` in the statement's context.
fn exec_context<'a>(
    ctx: &'a Ctx<'_>,
    bq: &'a BoundQuery,
    params: &'a [Value],
    profile: Option<&'a Profile>,
    sequences: &'a super::sequence::SequenceAccess<'a>,
) -> ExecContext<'a> {
    ExecContext {
        reader: ctx.txn.reader(),
        params,
        subqueries: &bq.subqueries,
        memory_limit: ctx.memory_limit,
        profile,
        interrupt: &ctx.interrupt,
        sequences: Some(sequences),
    }
}

pub fn run(ctx: &Ctx<'_>, bq: &BoundQuery, params: &[Value], profile: Option<&Profile>) -> Result<Vec<Vec<Value>>> {
    let sequences = ctx.sequences();
    let ectx = exec_context(ctx, bq, params, profile, &sequences);
    if ctx.point_path
        && let Some(rows) = exec::point::collect_point(&bq.plan, &ectx)?
    {
        return Ok(rows);
    }
    exec::collect(&bq.plan, &ectx)
}

/// Runs `bq` on the point path ([`exec::point::collect_point`]) when it is a point
/// plan and the session allows it: its rows as values, or `None` (nothing ran).
pub fn collect_point(ctx: &Ctx<'_>, bq: &BoundQuery, params: &[Value]) -> Result<Option<Vec<Vec<Value>>>> {
    if !ctx.point_path {
        return Ok(None);
    }
    let sequences = ctx.sequences();
    let ectx = exec_context(ctx, bq, params, None, &sequences);
    exec::point::collect_point(&bq.plan, &ectx)
}

/// Runs `bq`, handing each output batch to `sink` (which returns `Ok(false)` to stop),
/// so a caller that writes rows out (COPY TO) never holds the whole result.
pub fn stream(
    ctx: &Ctx<'_>,
    bq: &BoundQuery,
    params: &[Value],
    sink: &mut dyn FnMut(crate::vector::Batch) -> Result<bool>,
) -> Result<()> {
    let sequences = ctx.sequences();
    let ectx = exec_context(ctx, bq, params, None, &sequences);
    if ctx.point_path && exec::point::run_point(&bq.plan, &ectx, sink)? {
        return Ok(());
    }
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

/// The output columns of `plan`, as a result describes them.
pub fn columns(plan: &Plan) -> Vec<Column> {
    plan.schema
        .iter()
        .map(|c| Column {
            name: c.name.clone(),
            data_type: c.ty,
        })
        .collect()
}

pub fn rows_result(plan: &Plan, rows: Vec<Vec<Value>>) -> QueryResult {
    let columns = columns(plan);
    let n = rows.len() as u64;
    QueryResult {
        columns,
        rows: rows.into_iter().map(Row).collect(),
        tag: format!("SELECT {n}"),
        rows_affected: n,
    }
}

/// A subplan's heading in EXPLAIN: a correlated one left by decorrelation runs once
/// per distinct set of outer values, which is worth seeing.
fn subplan_title(i: usize, s: &Subplan) -> String {
    if s.correlated {
        format!("SubPlan {} (correlated: re-executed per outer row)", i + 1)
    } else {
        format!("SubPlan {}", i + 1)
    }
}

/// EXPLAIN's options: `EXPLAIN ANALYZE …` or PostgreSQL's `EXPLAIN (ANALYZE, COSTS OFF)`.
pub struct ExplainOptions {
    pub analyze: bool,
    /// `VERBOSE`: also says whether the statement runs on the point path.
    pub verbose: bool,
    /// `FORMAT JSON`: one row holding the plan as a JSON document, PostgreSQL's
    /// layout (`[{"Plan": {...}, ...}]`); otherwise one row per plan line.
    pub json: bool,
    pub text: explain::Options,
}

impl ExplainOptions {
    /// The options of an EXPLAIN statement: the keyword form's `analyze`, then the
    /// parenthesized list (boolean options take `on`/`off`/`true`/`false`/`1`/`0`).
    pub fn parse(analyze: bool, options: Option<&[ast::UtilityOption]>) -> Result<ExplainOptions> {
        let mut o = ExplainOptions { analyze, verbose: false, json: false, text: explain::Options::default() };
        for opt in options.unwrap_or(&[]) {
            let name = opt.name.value.to_ascii_lowercase();
            let arg = opt.arg.as_ref().map(|a| a.to_string().trim_matches('\'').to_ascii_lowercase());
            let flag = || -> Result<bool> {
                match arg.as_deref() {
                    None | Some("on" | "true" | "1") => Ok(true),
                    Some("off" | "false" | "0") => Ok(false),
                    Some(v) => Err(Error::semantic(
                        "22023",
                        format!("{name} requires a Boolean value, not \"{v}\""),
                    )),
                }
            };
            match name.as_str() {
                "analyze" => o.analyze = flag()?,
                "verbose" => o.verbose = flag()?,
                "costs" => o.text.costs = flag()?,
                // Accepted for PostgreSQL's scripts; BeeDB has nothing more to show.
                "summary" | "timing" => {
                    flag()?;
                }
                "format" => match arg.as_deref() {
                    Some("text") => o.json = false,
                    Some("json") => o.json = true,
                    Some(f @ ("xml" | "yaml")) => {
                        return Err(Error::not_supported(format!("EXPLAIN format {f} is not supported")));
                    }
                    _ => {
                        return Err(Error::semantic(
                            "22023",
                            format!("unrecognized value for EXPLAIN option \"format\": \"{}\"", arg.unwrap_or_default()),
                        ));
                    }
                },
                _ => {
                    return Err(Error::semantic("42601", format!("unrecognized EXPLAIN option \"{name}\"")));
                }
            }
        }
        Ok(o)
    }
}

pub fn explain(ctx: &mut Ctx<'_>, stmt: &Statement, options: &ExplainOptions) -> Result<QueryResult> {
    let analyze = options.analyze;
    let Statement::Query(q) = stmt else {
        return Err(Error::not_supported("EXPLAIN of statements other than queries"));
    };
    let (bq, params) = plan_query(ctx, q)?;
    // The plan and each subplan as shown (under ANALYZE each with its own profile;
    // a subplan that never ran gets an empty one, so that each of its nodes says so).
    let mut elapsed = None;
    let (main, subplans) = if analyze {
        let profile = Profile::default();
        let start = std::time::Instant::now();
        run(ctx, &bq, &params, Some(&profile))?;
        elapsed = Some(start.elapsed());
        let never = Profile::default();
        let subplans: Vec<_> = bq
            .subqueries
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let sub = profile.subplan(i);
                explain::shown(&s.plan, Some(sub.as_deref().unwrap_or(&never)))
            })
            .collect();
        (explain::shown(&bq.plan, Some(&profile)), subplans)
    } else {
        (explain::shown(&bq.plan, None), bq.subqueries.iter().map(|s| explain::shown(&s.plan, None)).collect())
    };
    // The point path is how the statement runs, not a plan node: VERBOSE says so
    // (EXPLAIN ANALYZE always runs the operator tree, to count its rows).
    let point_path = (options.verbose && !analyze).then(|| match exec::point::point_description(&bq.plan) {
        Some(how) if ctx.point_path => how,
        Some(_) => "off (point_path = off)".to_string(),
        None => "no (not an index lookup of a few rows)".to_string(),
    });
    let mut lines = Vec::new();
    if options.json {
        use explain::Json;
        let mut doc = vec![("Plan".to_string(), explain::json(&main, &options.text))];
        if !subplans.is_empty() {
            let subs = bq
                .subqueries
                .iter()
                .zip(&subplans)
                .enumerate()
                .map(|(i, (s, shown))| {
                    Json::Object(vec![
                        ("Subplan Name".into(), Json::Str(format!("SubPlan {}", i + 1))),
                        ("Correlated".into(), Json::Bool(s.correlated)),
                        ("Plan".into(), explain::json(shown, &options.text)),
                    ])
                })
                .collect();
            doc.push(("Subplans".into(), Json::Array(subs)));
        }
        if let Some(how) = point_path {
            doc.push(("Point Path".into(), Json::Str(how)));
        }
        if let Some(t) = elapsed {
            doc.push(("Execution Time".into(), Json::fixed(t.as_secs_f64() * 1e3, 3)));
        }
        lines.push(Json::Array(vec![Json::Object(doc)]).pretty());
    } else {
        lines.extend(explain::text(&main, &options.text));
        for (i, (s, shown)) in bq.subqueries.iter().zip(&subplans).enumerate() {
            lines.push(subplan_title(i, s));
            lines.extend(explain::text(shown, &options.text).into_iter().map(|l| format!("  {l}")));
        }
        if let Some(t) = elapsed {
            lines.push(format!("Execution Time: {:.3} ms", t.as_secs_f64() * 1e3));
        }
        if let Some(how) = point_path {
            lines.push(format!("Point Path: {how}"));
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
