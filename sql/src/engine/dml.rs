//! INSERT, UPDATE and DELETE.
//!
//! UPDATE and DELETE first compute their rows completely (so a statement never sees
//! its own changes — no Halloween problem), then apply them through the executor's
//! DML primitives, which keep indexes and constraints. INSERT writes each batch as
//! its source produces it, unless the source reads the target table (see
//! [`insert`]).

use std::sync::Arc;

use sqlparser::ast;

use super::Ctx;
use super::plan_cache::CachedPlan;
use super::query::{cast_params, collect_point, optimize, optimize_generic, run, stream, with_bees};
use crate::binder::scope::Scope;
use crate::binder::{Binder, ident, object_name};
use crate::catalog::TableDef;
use crate::error::{Error, Result};
use crate::exec::dml as xdml;
use crate::exec::i64_to_tid;
use crate::exec::spill::HeldBatches;
use beedb_storage::TupleId;
use std::collections::HashSet;
use crate::expr::Expr;
use crate::plan::{Access, BoundQuery, Node, OutputColumn, Plan};
use crate::session::QueryResult;
use crate::types::{DataType, Value};

/// The expression for column `c`'s DEFAULT (NULL when it has none).
pub fn default_expr(binder: &mut Binder<'_>, table: &TableDef, c: usize) -> Result<Expr> {
    let col = &table.columns[c];
    match &col.default {
        None => Ok(Expr::literal(Value::Null, col.ty)),
        Some(text) => {
            let e = crate::parser::parse_expr(text)?;
            binder
                .bind_assignment(Scope::default(), &e, &col.name, col.ty)
                .map_err(|mut err| {
                    err.position = None;
                    err
                })
        }
    }
}

/// A full row of expressions: the given ones, and each missing column's DEFAULT.
fn fill_defaults(binder: &mut Binder<'_>, table: &TableDef, row: Vec<Option<Expr>>) -> Result<Vec<Expr>> {
    row.into_iter()
        .enumerate()
        .map(|(c, e)| match e {
            Some(e) => Ok(e),
            None => default_expr(binder, table, c),
        })
        .collect()
}

/// The value column `c` of `table` gets when a row does not name it: its DEFAULT
/// evaluated once (for COPY and ALTER TABLE ADD COLUMN).
pub fn default_value(ctx: &Ctx<'_>, table: &TableDef, c: usize) -> Result<Value> {
    let catalog = ctx.txn.catalog.clone();
    let mut binder = Binder::new(&catalog, ctx.sql, 0);
    let e = default_expr(&mut binder, table, c)?;
    let col = &table.columns[c];
    let plan = Plan::new(
        Node::Values { rows: vec![vec![e]] },
        vec![OutputColumn { name: col.name.clone(), ty: col.ty }],
    );
    let bq = optimize(plan, binder.into_subqueries(), &ctx.optimizer, &crate::optimizer::NoStats);
    Ok(run(ctx, &bq, &[], None)?.pop().and_then(|mut r| r.pop()).unwrap_or(Value::Null))
}

/// A column's DEFAULT for rows written outside a plan (COPY, ALTER TABLE ADD
/// COLUMN): a value computed once, or — when it calls a sequence function, as a
/// SERIAL or identity column's does — an expression computed for every row, so each
/// row gets its own number.
pub enum RowDefault {
    Once(Value),
    PerRow(Expr),
}

impl RowDefault {
    pub fn of(ctx: &Ctx<'_>, table: &TableDef, c: usize) -> Result<RowDefault> {
        let catalog = ctx.txn.catalog.clone();
        let mut binder = Binder::new(&catalog, ctx.sql, 0);
        let e = default_expr(&mut binder, table, c)?;
        if calls_sequence(&e) {
            if !binder.take_subqueries().is_empty() {
                return Err(Error::not_supported("a subquery in a DEFAULT that calls a sequence function"));
            }
            return Ok(RowDefault::PerRow(e));
        }
        Ok(RowDefault::Once(default_value(ctx, table, c)?))
    }

    /// The value for the next row.
    pub fn next(&self, ctx: &Ctx<'_>) -> Result<Value> {
        match self {
            RowDefault::Once(v) => Ok(v.clone()),
            RowDefault::PerRow(e) => {
                let sequences = ctx.sequences();
                let runner = super::sequence::SequenceRunner(&sequences);
                crate::expr::eval_row(e, &[], &crate::expr::EvalContext { params: &[], subqueries: &runner })
            }
        }
    }
}

/// Whether `e` calls `nextval`, `currval` or `setval`.
fn calls_sequence(e: &Expr) -> bool {
    matches!(&e.kind, crate::expr::ExprKind::Func { func, .. } if func.is_sequence())
        || e.children().into_iter().any(calls_sequence)
}

fn is_default_keyword(e: &ast::Expr) -> bool {
    matches!(e, ast::Expr::Identifier(i) if i.quote_style.is_none() && i.value.eq_ignore_ascii_case("default"))
}

/// Rows written between two checks for a cancel request (`Ctx::interrupt`).
pub(crate) const CHECK_EVERY: usize = 1024;

/// An INSERT bound and optimized: what its executions share, kept in the
/// statement's plan cache (see `plan_cache.rs`).
pub struct InsertPlan {
    table: Arc<TableDef>,
    /// The rows to insert (the table's columns with defaults and assignment casts
    /// applied, then RETURNING's values), optimized, without bees.
    source: Arc<BoundQuery>,
    param_types: Vec<Option<DataType>>,
    /// The columns RETURNING returns.
    returned_columns: Option<Vec<OutputColumn>>,
    conflict: Option<OnConflict>,
    /// DO UPDATE's plan, optimized.
    conflict_update: Option<BoundQuery>,
    /// Whether the source reads the target table (its rows are then held first).
    reads_target: bool,
    /// The table's CHECK constraints, bound (under the catalog the plan is kept for).
    checks: super::check::RowChecks,
    /// One VALUES row without subqueries: its expressions, and RETURNING's over them;
    /// evaluated directly on the point path, without a plan run.
    point_row: Option<(Vec<Expr>, Option<Vec<Expr>>)>,
}

pub fn insert(ctx: &mut Ctx<'_>, ins: &ast::Insert) -> Result<QueryResult> {
    let cached = ctx.plan_cache.and_then(|c| c.get(ctx)).and_then(|p| p.insert);
    let plan = match cached {
        Some(plan) => plan,
        None => bind_insert(ctx, ins)?,
    };
    run_insert(ctx, &plan)
}

/// Binds and optimizes an INSERT, and keeps it in the statement's plan cache.
fn bind_insert(ctx: &mut Ctx<'_>, ins: &ast::Insert) -> Result<Arc<InsertPlan>> {
    let on_conflict = match &ins.on {
        None => None,
        Some(ast::OnInsert::OnConflict(oc)) => Some(oc),
        Some(_) => return Err(Error::not_supported("ON DUPLICATE KEY UPDATE is not supported (use ON CONFLICT)")),
    };
    // Other dialects' clauses sqlparser reads: refused, never ignored.
    if ins.or.is_some() || ins.replace_into {
        return Err(Error::not_supported("INSERT OR … / REPLACE INTO is not supported (use ON CONFLICT)"));
    }
    if ins.ignore || !ins.assignments.is_empty() || ins.output.is_some() || ins.overwrite || ins.partitioned.is_some() {
        return Err(Error::not_supported("this form of INSERT is not supported"));
    }
    let ast::TableObject::TableName(name) = &ins.table else {
        return Err(Error::not_supported("INSERT into a table function"));
    };
    let catalog = ctx.txn.catalog.clone();
    let mut binder = Binder::new(&catalog, ctx.sql, ctx.params.len());
    binder.functions = Some(ctx.functions);
    binder.literal_params = ctx.plan_cache.is_some_and(|c| c.is_shaped());
    let table = binder.table(name)?;
    // Target columns.
    let targets: Vec<usize> = if ins.columns.is_empty() {
        (0..table.columns.len()).collect()
    } else {
        let mut v = Vec::new();
        for c in &ins.columns {
            let n = object_name(c)?;
            let i = table.column_index(&n).ok_or_else(|| {
                Error::undefined_column(&n).with_message(format!(
                    "column \"{n}\" of relation \"{}\" does not exist",
                    table.name
                ))
            })?;
            if v.contains(&i) {
                return Err(Error::semantic("42701", format!("column \"{n}\" specified more than once")));
            }
            v.push(i);
        }
        v
    };
    // GENERATED ALWAYS identity columns take only DEFAULT, unless OVERRIDING SYSTEM
    // VALUE; OVERRIDING USER VALUE puts the DEFAULT in every identity column given
    // a value (`parser::mark_overriding` carries the clause in `settings`).
    let overriding = match ins.settings.as_deref() {
        None => None,
        Some([s]) if s.key.value == "overriding" => Some(s.value.to_string() == "'system'"),
        Some(_) => return Err(Error::not_supported("INSERT … SETTINGS is not supported")),
    };
    let mut always = identity_always(&catalog, &table);
    let user_value: Vec<usize> = match overriding {
        Some(false) => (0..table.columns.len()).filter(|&c| catalog.identity(&table, &table.columns[c].name).is_some()).collect(),
        _ => Vec::new(),
    };
    if overriding.is_some() {
        always.clear();
    }
    let refuse_always = |c: usize| {
        Error::semantic("428C9", format!("cannot insert a non-DEFAULT value into column \"{}\"", table.columns[c].name))
    };
    let source_plan: Plan = match ins.source.as_deref() {
        None => {
            // DEFAULT VALUES
            let row = (0..table.columns.len())
                .map(|c| default_expr(&mut binder, &table, c))
                .collect::<Result<Vec<_>>>()?;
            values_plan(&table, vec![row])
        }
        Some(q) => match (&*q.body, &q.order_by, &q.limit_clause, &q.with) {
            (ast::SetExpr::Values(values), None, None, None) => {
                let mut rows = Vec::with_capacity(values.rows.len());
                let width = values.rows.first().map_or(0, |r| r.content.len());
                if values.rows.iter().any(|r| r.content.len() != width) {
                    return Err(Error::semantic("42601", "VALUES lists must all be the same length"));
                }
                for r in &values.rows {
                    let exprs = &r.content;
                    if exprs.len() > targets.len() {
                        return Err(Error::semantic("42601", "INSERT has more expressions than target columns")
                            .at(crate::parser::span_offset(ctx.sql, sqlparser::ast::Spanned::span(&exprs[targets.len()]))));
                    }
                    if exprs.len() < targets.len() && !ins.columns.is_empty() {
                        return Err(Error::semantic("42601", "INSERT has more target columns than expressions"));
                    }
                    let mut row: Vec<Option<Expr>> = vec![None; table.columns.len()];
                    for (e, &c) in exprs.iter().zip(&targets) {
                        let col = &table.columns[c];
                        if always.contains(&c) && !is_default_keyword(e) {
                            return Err(refuse_always(c));
                        }
                        row[c] = Some(if is_default_keyword(e) || user_value.contains(&c) {
                            default_expr(&mut binder, &table, c)?
                        } else {
                            binder.bind_assignment(Scope::default(), e, &col.name, col.ty)?
                        });
                    }
                    let row = fill_defaults(&mut binder, &table, row)?;
                    rows.push(row);
                }
                values_plan(&table, rows)
            }
            _ => {
                let src = binder.bind_query(q)?;
                if src.schema.len() > targets.len() {
                    return Err(Error::semantic("42601", "INSERT has more expressions than target columns"));
                }
                if src.schema.len() < targets.len() && !ins.columns.is_empty() {
                    return Err(Error::semantic("42601", "INSERT has more target columns than expressions"));
                }
                if let Some(&c) = targets.iter().take(src.schema.len()).find(|c| always.contains(c)) {
                    return Err(refuse_always(c));
                }
                let items = select_items(q);
                let mut exprs: Vec<Option<Expr>> = vec![None; table.columns.len()];
                for (k, &c) in targets.iter().enumerate().take(src.schema.len()) {
                    if user_value.contains(&c) {
                        continue;
                    }
                    let col = &table.columns[c];
                    let b = Expr::column(k, src.schema[k].ty);
                    // A bare NULL or string literal in the SELECT list is of unknown type
                    // and takes the target column's, as in PostgreSQL (`INSERT INTO t
                    // SELECT NULL, …`); any other expression must assignment-cast.
                    let fake = match items.get(k) {
                        Some(e) if crate::binder::is_unknown(e) => (*e).clone(),
                        _ => ast::Expr::Identifier(ast::Ident::new(src.schema[k].name.clone())),
                    };
                    exprs[c] = Some(binder.assign_cast(b, &fake, &col.name, col.ty).map_err(|mut e| {
                        e.position = None;
                        e
                    })?);
                }
                let exprs = fill_defaults(&mut binder, &table, exprs)?;
                let schema = table_schema(&table);
                Plan::new(Node::Project { input: Box::new(src), exprs }, schema)
            }
        },
    };
    let n = table.columns.len();
    let qual = ins.table_alias.as_ref().map(|a| ident(&a.alias)).unwrap_or_else(|| table.name.clone());
    let returning = match &ins.returning {
        Some(items) => Some(binder.bind_returning(table_scope(&table, &qual), items).map_err(|e| {
            // With ON CONFLICT, PostgreSQL knows EXCLUDED but does not let RETURNING see it.
            let missing = "missing FROM-clause entry for table \"excluded\"";
            if on_conflict.is_some() && e.message == missing {
                e.with_message("invalid reference to FROM-clause entry for table \"excluded\"")
            } else {
                e
            }
        })?),
        None => None,
    };
    let (source_plan, returned_columns) = with_returning(source_plan, n, returning);
    let conflict = match on_conflict {
        Some(oc) => Some(bind_on_conflict(&mut binder, &table, &qual, oc, ins.returning.as_deref(), &always, ctx.params.len())?),
        None => None,
    };
    // The parameters must cast (an error here is the statement's, as before).
    cast_with(ctx, &binder.param_types)?;
    let subqueries = binder.take_subqueries();
    let conflict_update = match conflict.as_ref().and_then(|c| c.update.clone()) {
        Some(plan) => Some(optimize(plan, subqueries.clone(), &ctx.optimizer, &crate::optimizer::NoStats)),
        None => None,
    };
    let source = Arc::new(optimize_generic(ctx, source_plan, subqueries));
    let reads_target = super::plan_cache::scanned_tables(&source).contains(&(table.id as u64));
    let point_row = point_row(&source);
    let checks = super::check::RowChecks::of(ctx, &table)?;
    let plan = Arc::new(InsertPlan {
        checks,
        table,
        param_types: binder.param_types.clone(),
        returned_columns,
        conflict,
        conflict_update,
        reads_target,
        point_row,
        source: source.clone(),
    });
    if let Some(cache) = ctx.plan_cache {
        let cached = CachedPlan {
            query: source,
            param_types: binder.param_types.as_slice().into(),
            table: Some(plan.table.clone()),
            insert: Some(plan.clone()),
            checks: None,
        };
        cache.put(ctx, &binder, cached)?;
    }
    Ok(plan)
}

/// The statement's parameters cast to `types`, through its plan cache when it has
/// one (which declines a statement shape whose values do not cast).
fn cast_with(ctx: &Ctx<'_>, types: &[Option<crate::types::DataType>]) -> Result<Vec<Value>> {
    match ctx.plan_cache {
        Some(cache) => cache.cast_params(ctx.params, types),
        None => cast_params(ctx.params, types),
    }
}

/// The expressions of `source` when it is one VALUES row without subqueries (with
/// RETURNING's expressions over that row, if any): the INSERT's point path.
fn point_row(source: &BoundQuery) -> Option<(Vec<Expr>, Option<Vec<Expr>>)> {
    fn has_subquery(e: &Expr) -> bool {
        matches!(e.kind, crate::expr::ExprKind::Subquery(_)) || e.children().into_iter().any(has_subquery)
    }
    let values = |p: &Plan| match &p.node {
        Node::Values { rows } if rows.len() == 1 && !rows[0].iter().any(has_subquery) => Some(rows[0].clone()),
        _ => None,
    };
    if !source.subqueries.is_empty() {
        return None;
    }
    match &source.plan.node {
        Node::Values { .. } => Some((values(&source.plan)?, None)),
        Node::Project { input, exprs } if !exprs.iter().any(has_subquery) => {
            Some((values(input)?, Some(exprs.clone())))
        }
        _ => None,
    }
}

/// Runs a bound INSERT with the statement's parameters.
fn run_insert(ctx: &mut Ctx<'_>, plan: &InsertPlan) -> Result<QueryResult> {
    let InsertPlan { table, returned_columns, conflict, conflict_update, reads_target, .. } = plan;
    let (table, returned_columns, conflict, conflict_update) = (table.clone(), returned_columns.clone(), conflict, conflict_update);
    let n = table.columns.len();
    let params = cast_with(ctx, &plan.param_types)?;
    let checks = &plan.checks;
    let mut foreign_keys = super::fk::Tracker::of(ctx.catalog(), &table)?;
    // Made once the statement proves to write many rows (see FORM_BEE_MIN_ROWS).
    let mut former = None;
    let w = ctx.txn.writer()?;
    let mut count = 0;
    let mut inserted = 0;
    let mut returned = Returned::new(ctx, "INSERT … RETURNING");
    // The tuples this statement inserted or updated: DO UPDATE may not change one
    // twice (21000), as in PostgreSQL. Counted against memory_limit.
    let mut touched: HashSet<TupleId> = HashSet::new();
    let touch = |touched: &mut HashSet<TupleId>, tid: TupleId| -> Result<()> {
        touched.insert(tid);
        check_set_bytes(ctx, touched.capacity() * (std::mem::size_of::<TupleId>() + 1), "INSERT … ON CONFLICT (the rows it wrote)")
    };
    let mut proposed = 0usize;
    let mut put = |row: Vec<Value>| -> Result<()> {
        if proposed % CHECK_EVERY == 0 {
            ctx.interrupt.check()?;
        }
        proposed += 1;
        if proposed == super::FORM_BEE_MIN_ROWS {
            former = ctx.row_former(&table, proposed)?;
        }
        let existing = match &conflict {
            Some(c) => c.conflicting_tuple(w, &table, &row[..n])?,
            None => None,
        };
        let Some(tid) = existing else {
            let tid = checks
                .verify(ctx, &table, &row[..n])
                .and_then(|()| xdml::insert_row_with(w, &table, &row[..n], former.as_mut()))
                .map_err(|e| with_constraint_detail(e, &table, &row[..n]))?;
            if conflict.is_some() {
                touch(&mut touched, tid)?;
            }
            foreign_keys.inserted(&row[..n]);
            count += 1;
            inserted += 1;
            if returned_columns.is_some() {
                returned.push(row[n..].to_vec())?;
            }
            return Ok(());
        };
        // A conflict: DO NOTHING skips the row, DO UPDATE changes the existing one.
        let Some(update) = conflict_update else { return Ok(()) };
        if touched.contains(&tid) {
            return Err(Error::new(
                crate::error::ErrorKind::Data,
                "21000",
                "ON CONFLICT DO UPDATE command cannot affect row a second time",
            ));
        }
        let old = xdml::fetch_row(w, &table, tid)?;
        // $params…, then the existing row, then the proposed one (EXCLUDED).
        let mut conflict_params = params.clone();
        conflict_params.extend(old.iter().cloned());
        conflict_params.extend(row[..n].iter().cloned());
        let Some(out) = run(ctx, update, &conflict_params, None)?.pop() else {
            return Err(Error::internal("ON CONFLICT DO UPDATE computed no row"));
        };
        if out[n] != Value::Boolean(true) {
            return Ok(()); // its WHERE does not hold
        }
        let new_tid = checks
            .verify(ctx, &table, &out[..n])
            .and_then(|()| xdml::update_row_with(w, &table, tid, &old, &out[..n], former.as_mut()))
            .map_err(|e| with_constraint_detail(e, &table, &out[..n]))?;
        foreign_keys.updated(&old, &out[..n]);
        touch(&mut touched, new_tid)?;
        count += 1;
        if returned_columns.is_some() {
            returned.push(out[n + 1..].to_vec())?;
        }
        Ok(())
    };
    // The rows are written as the source produces them, so the statement holds one
    // batch, not its whole result (issue 16). Reads go through the write transaction,
    // which sees its own changes: a source that reads the target table (in FROM or in
    // any subquery) would see the rows this statement adds, so its result is held
    // whole first, against memory_limit, and written afterwards — the statement then
    // reads only the rows that existed before it, as in PostgreSQL.
    if ctx.point_path
        && let Some((values, returning)) = &plan.point_row
    {
        // One VALUES row: its expressions computed here by the row evaluator,
        // without a plan run.
        let sequences = ctx.sequences();
        let runner = super::sequence::SequenceRunner(&sequences);
        let ectx = crate::expr::EvalContext { params: &params, subqueries: &runner };
        let mut row = Vec::with_capacity(n + returning.as_ref().map_or(0, Vec::len));
        for e in values {
            row.push(crate::expr::eval_row(e, &[], &ectx)?);
        }
        if let Some(exprs) = returning {
            let mut out = Vec::with_capacity(exprs.len());
            for e in exprs {
                out.push(crate::expr::eval_row(e, &row, &ectx)?);
            }
            row = out;
        }
        drop(sequences);
        put(row)?;
    } else if *reads_target {
        let bq = with_source_bees(ctx, plan, &params)?;
        held_rows(ctx, &bq, &params)?.drain(|row| put(row))?;
    } else {
        let bq = with_source_bees(ctx, plan, &params)?;
        stream(ctx, &bq, &params, &mut |b| {
            for k in 0..b.rows() {
                put(b.row_values(k))?;
            }
            Ok(true)
        })?;
    }
    drop(put);
    foreign_keys.finish(ctx)?;
    // Counted toward the automatic ANALYZE, which runs deferred, off this
    // statement's path (`analyze.rs`).
    ctx.note_inserts(&table, inserted);
    let returned = returned_columns.map(|c| (c, returned.rows));
    Ok(written(format!("INSERT 0 {count}"), count, returned))
}

/// The rows a write computes before it writes any, in order. Reads go through the
/// write transaction, which sees the statement's own changes, so a statement that
/// reads its target table holds what it read before it writes (the Halloween
/// problem: an updated row would be met again further on in the scan). They are
/// held in memory up to half of `memory_limit`, then in a temporary file
/// ([`HeldBatches`]), so a write of any number of rows runs within the limit.
fn held_rows(ctx: &Ctx<'_>, bq: &BoundQuery, params: &[Value]) -> Result<Held> {
    // A point plan (UPDATE t … WHERE key = $1) finds its few rows before it hands any
    // on: they are held as the values the point path gives, without batches.
    if let Some(rows) = collect_point(ctx, bq, params)? {
        return Ok(Held::Rows(rows));
    }
    let mut held = HeldBatches::new(&bq.plan.types(), ctx.memory_limit / 2);
    stream(ctx, bq, params, &mut |b| {
        held.push(b)?;
        Ok(true)
    })?;
    Ok(Held::Batches(held))
}

/// What [`held_rows`] holds: a point plan's rows (at most
/// [`crate::exec::point::POINT_MAX_ROWS`]), or batches that may spill.
enum Held {
    Rows(Vec<Vec<Value>>),
    Batches(HeldBatches),
}

impl Held {
    fn rows(&self) -> usize {
        match self {
            Held::Rows(rows) => rows.len(),
            Held::Batches(b) => b.rows(),
        }
    }

    /// Hands each row to `f`, in order.
    fn drain(self, mut f: impl FnMut(Vec<Value>) -> Result<()>) -> Result<()> {
        match self {
            Held::Rows(rows) => rows.into_iter().try_for_each(f),
            Held::Batches(held) => held.drain(|b| {
                for k in 0..b.rows() {
                    f(b.row_values(k))?;
                }
                Ok(())
            }),
        }
    }
}

/// Adds one tuple id to `seen` (an UPDATE … FROM or DELETE … USING meets a target
/// row once per row it joins), counting the set against `memory_limit`; whether it
/// was new.
fn first_time(ctx: &Ctx<'_>, seen: &mut HashSet<i64>, t: i64, what: &str) -> Result<bool> {
    if !seen.insert(t) {
        return Ok(false);
    }
    // A hash set's entry: the value and a control byte, at most 8/7 full.
    check_set_bytes(ctx, seen.capacity() * (std::mem::size_of::<i64>() + 1), what)?;
    Ok(true)
}

/// Calls `f(row, tuple id)` for each row an UPDATE or DELETE holds (`held`: the
/// table's `n` columns, then the tuple id, then what the statement computed), in
/// order, checking for cancel as it goes. With `dedupe` (a FROM or USING join, which
/// meets a target row once per row it joins; naming the id set for 53200) only a
/// tuple's first row is passed.
fn each_target_row(
    ctx: &Ctx<'_>,
    held: Held,
    n: usize,
    dedupe: Option<&str>,
    mut f: impl FnMut(Vec<Value>, TupleId) -> Result<()>,
) -> Result<()> {
    let mut seen: HashSet<i64> = HashSet::new();
    let mut i = 0usize;
    held.drain(|row| {
        if i % CHECK_EVERY == 0 {
            ctx.interrupt.check()?;
        }
        i += 1;
        let Value::BigInt(t) = row[n] else {
            return Err(Error::internal("a write lost a tuple id"));
        };
        if let Some(what) = dedupe
            && !first_time(ctx, &mut seen, t, what)?
        {
            return Ok(());
        }
        f(row, i64_to_tid(t))
    })
}

/// 53200 naming `what` when a set of tuple ids a write keeps holds more than
/// `memory_limit` bytes.
fn check_set_bytes(ctx: &Ctx<'_>, bytes: usize, what: &str) -> Result<()> {
    if bytes > ctx.memory_limit {
        return Err(crate::exec::memory_limit_error(what, ctx.memory_limit));
    }
    Ok(())
}

/// The rows a RETURNING clause gives back, counted against `memory_limit` (53200
/// beyond, naming `what`): the result is returned whole.
struct Returned {
    rows: Vec<Vec<Value>>,
    bytes: usize,
    limit: usize,
    what: &'static str,
}

impl Returned {
    fn new(ctx: &Ctx<'_>, what: &'static str) -> Returned {
        Returned { rows: Vec::new(), bytes: 0, limit: ctx.memory_limit, what }
    }

    fn push(&mut self, row: Vec<Value>) -> Result<()> {
        self.bytes += std::mem::size_of::<Vec<Value>>() + row.iter().map(|v| std::mem::size_of::<Value>() + v.heap_bytes()).sum::<usize>();
        if self.bytes > self.limit {
            return Err(crate::exec::memory_limit_error(self.what, self.limit));
        }
        self.rows.push(row);
        Ok(())
    }
}

/// An INSERT's source plan with the session's bees attached (through the plan
/// cache, which keeps them when they do not depend on the parameters).
fn with_source_bees(ctx: &Ctx<'_>, plan: &InsertPlan, params: &[Value]) -> Result<Arc<BoundQuery>> {
    match ctx.plan_cache {
        Some(cache) => cache.attach_bees(ctx, plan.source.clone(), params),
        None => with_bees(ctx, plan.source.clone(), params),
    }
}

/// INSERT's ON CONFLICT clause, bound.
struct OnConflict {
    /// The unique indexes (positions in the table's) whose conflicts it handles: the
    /// one named, those on exactly the columns named, or (DO NOTHING without a
    /// target) all.
    arbiters: Vec<usize>,
    /// DO UPDATE: a plan over parameters — the statement's, then the existing row,
    /// then the proposed row (EXCLUDED) — computing the new row, whether WHERE holds,
    /// and RETURNING's values over the new row. `None` for DO NOTHING.
    update: Option<Plan>,
}

impl OnConflict {
    /// The existing tuple the proposed `row` conflicts with on an arbiter index (a key
    /// with a NULL conflicts with nothing).
    fn conflicting_tuple(&self, w: &beedb_storage::WriteTxn, table: &TableDef, row: &[Value]) -> Result<Option<TupleId>> {
        for &i in &self.arbiters {
            let index = &table.indexes[i];
            if crate::exec::tuple_codec::key_has_null(index, row) {
                continue;
            }
            let key = crate::exec::tuple_codec::index_key(table, index, row)?;
            if let Some(tid) = xdml::find_key(w, index, &key)? {
                return Ok(Some(tid));
            }
        }
        Ok(None)
    }
}

/// Binds `ON CONFLICT [(columns) | ON CONSTRAINT name] DO NOTHING | DO UPDATE SET …
/// [WHERE …]`. In DO UPDATE the target row is `qual` (the table or its alias) and the
/// proposed one `excluded`; RETURNING is bound again over the new row.
#[allow(clippy::too_many_arguments)]
fn bind_on_conflict(
    binder: &mut Binder<'_>,
    table: &Arc<TableDef>,
    qual: &str,
    oc: &ast::OnConflict,
    returning: Option<&[ast::SelectItem]>,
    identity_always: &[usize],
    param_count: usize,
) -> Result<OnConflict> {
    let unique: Vec<usize> = (0..table.indexes.len()).filter(|&i| table.indexes[i].unique).collect();
    let arbiters = match &oc.conflict_target {
        None if matches!(oc.action, ast::OnConflictAction::DoUpdate(_)) => {
            return Err(Error::syntax("ON CONFLICT DO UPDATE requires inference specification or constraint name"));
        }
        None => unique,
        Some(ast::ConflictTarget::Columns(names)) => {
            let mut cols = Vec::with_capacity(names.len());
            for n in names {
                let name = ident(n);
                let c = table.column_index(&name).ok_or_else(|| Error::undefined_column(&name))?;
                if !cols.contains(&c) {
                    cols.push(c);
                }
            }
            let matching: Vec<usize> = unique
                .into_iter()
                .filter(|&i| {
                    let ic = &table.indexes[i].columns;
                    ic.len() == cols.len() && ic.iter().all(|c| cols.contains(c))
                })
                .collect();
            if matching.is_empty() {
                return Err(Error::semantic(
                    "42P10",
                    "there is no unique or exclusion constraint matching the ON CONFLICT specification",
                ));
            }
            matching
        }
        Some(ast::ConflictTarget::OnConstraint(name)) => {
            let name = object_name(name)?;
            match unique.into_iter().find(|&i| table.indexes[i].name == name) {
                Some(i) => vec![i],
                None => {
                    return Err(Error::semantic(
                        "42704",
                        format!("constraint \"{name}\" for table \"{}\" does not exist", table.name),
                    ));
                }
            }
        }
    };
    let ast::OnConflictAction::DoUpdate(du) = &oc.action else {
        return Ok(OnConflict { arbiters, update: None });
    };
    let n = table.columns.len();
    // The target row at 0..n, EXCLUDED at n..2n; as in PostgreSQL both are visible
    // unqualified, so a name both have must be qualified (42702).
    let mut scope = table_scope(table, qual);
    for (c, col) in table.columns.iter().enumerate() {
        scope.columns.push(crate::binder::scope::ScopeColumn {
            table: Some("excluded".into()),
            name: col.name.clone(),
            ty: col.ty,
            expr: Expr::column(n + c, col.ty),
            qualified_only: false,
            unqualified_only: false,
        });
    }
    let mut new: Vec<Option<Expr>> = vec![None; n];
    for a in &du.assignments {
        let ast::AssignmentTarget::ColumnName(cn) = &a.target else {
            return Err(Error::not_supported("tuple assignment in ON CONFLICT DO UPDATE"));
        };
        if cn.0.len() != 1 {
            return Err(Error::not_supported("a qualified column in ON CONFLICT DO UPDATE SET"));
        }
        let cname = object_name(cn)?;
        let c = table.column_index(&cname).ok_or_else(|| {
            Error::undefined_column(&cname)
                .with_message(format!("column \"{cname}\" of relation \"{}\" does not exist", table.name))
        })?;
        if new[c].is_some() {
            return Err(Error::semantic("42601", format!("multiple assignments to same column \"{cname}\"")));
        }
        if identity_always.contains(&c) && !is_default_keyword(&a.value) {
            return Err(Error::semantic("428C9", format!("column \"{cname}\" can only be updated to DEFAULT")));
        }
        let col = &table.columns[c];
        new[c] = Some(if is_default_keyword(&a.value) {
            default_expr(binder, table, c)?
        } else {
            binder.bind_assignment(scope.clone(), &a.value, &col.name, col.ty)?
        });
    }
    let mut exprs: Vec<Expr> = new
        .into_iter()
        .enumerate()
        .map(|(c, e)| e.unwrap_or_else(|| Expr::column(c, table.columns[c].ty)))
        .collect();
    exprs.push(match &du.selection {
        Some(e) => {
            let b = binder.bind_scalar_over(scope.clone(), e, "WHERE")?;
            if b.ty != DataType::Boolean {
                return Err(Error::datatype_mismatch(format!(
                    "argument of WHERE must be type boolean, not type {}",
                    b.ty
                )));
            }
            b
        }
        None => Expr::literal(Value::Boolean(true), DataType::Boolean),
    });
    let mut input_schema = table_schema(table);
    input_schema.extend(table_schema(table));
    let row: Vec<Expr> = (0..2 * n)
        .map(|i| Expr::new(crate::expr::ExprKind::Param(param_count + i), table.columns[i % n].ty))
        .collect();
    let input = Plan::new(Node::Values { rows: vec![row] }, input_schema);
    let mut schema = table_schema(table);
    schema.push(OutputColumn { name: "where".into(), ty: DataType::Boolean });
    let plan = Plan::new(Node::Project { input: Box::new(input), exprs }, schema);
    let returning = match returning {
        Some(items) => Some(binder.bind_returning(table_scope(table, qual), items)?),
        None => None,
    };
    Ok(OnConflict { arbiters, update: Some(with_returning(plan, n, returning).0) })
}

/// The scope of a target table's row (its columns at positions 0..n), under the
/// name `qual` (the table's name or its alias): for RETURNING and ON CONFLICT.
/// Adds PostgreSQL's DETAIL to a constraint violation raised while writing `row`
/// into `table`: `Key (a, b)=(1, x) already exists.` for a unique violation (the
/// index is the one the message names), `Failing row contains (1, null).` for a NOT
/// NULL or CHECK violation. Other errors pass unchanged. (The executor's row writer reports
/// the violation; the row and the table are at hand here.)
pub fn with_constraint_detail(e: Error, table: &TableDef, row: &[Value]) -> Error {
    if e.detail.is_some() {
        return e;
    }
    let text = |v: &Value| match v {
        Value::Null => "null".to_string(),
        Value::Boolean(b) => if *b { "t" } else { "f" }.to_string(),
        v => v.to_string(),
    };
    match e.sqlstate {
        "23505" => {
            let index = table.indexes.iter().find(|i| {
                i.unique && e.message == format!("duplicate key value violates unique constraint \"{}\"", i.name)
            });
            match index {
                Some(i) => {
                    let names: Vec<&str> = i.columns.iter().map(|&c| table.columns[c].name.as_str()).collect();
                    let values: Vec<String> = i.columns.iter().map(|&c| row.get(c).map_or_else(String::new, text)).collect();
                    let detail = format!("Key ({})=({}) already exists.", names.join(", "), values.join(", "));
                    e.with_detail(detail)
                }
                None => e,
            }
        }
        "23502" | "23514" => {
            let values: Vec<String> = row.iter().map(text).collect();
            let detail = format!("Failing row contains ({}).", values.join(", "));
            e.with_detail(detail)
        }
        _ => e,
    }
}

fn table_scope(table: &TableDef, qual: &str) -> Scope {
    let cols: Vec<(String, DataType)> = table.columns.iter().map(|c| (c.name.clone(), c.ty)).collect();
    Scope::relation(Some(qual), &cols, 0)
}

/// A bound RETURNING list: its expressions over the target row and the columns it
/// returns.
type Returning = (Vec<Expr>, Vec<OutputColumn>);

/// `plan` (whose first `width` columns are the target row) with the RETURNING
/// expressions appended to its output, computed in the same run that reads the rows
/// (so a subquery in RETURNING sees the database as the statement started, as in
/// PostgreSQL); and the result columns they make.
fn with_returning(plan: Plan, width: usize, returning: Option<Returning>) -> (Plan, Option<Vec<OutputColumn>>) {
    let keep = plan.schema.len();
    with_returning_after(plan, width, keep, returning)
}

/// [`with_returning`] keeping only the plan's first `keep` columns before the
/// RETURNING values (the FROM items' columns RETURNING read are dropped).
fn with_returning_after(
    plan: Plan,
    width: usize,
    keep: usize,
    returning: Option<Returning>,
) -> (Plan, Option<Vec<OutputColumn>>) {
    let Some((exprs, columns)) = returning else {
        return (plan, None);
    };
    let mut all: Vec<Expr> = plan.schema.iter().take(keep).enumerate().map(|(i, c)| Expr::column(i, c.ty)).collect();
    debug_assert!(all.len() >= width);
    all.extend(exprs);
    let mut schema = plan.schema.slice(0..keep).to_vec();
    schema.extend(columns.iter().cloned());
    (Plan::new(Node::Project { input: Box::new(plan), exprs: all }, schema), Some(columns))
}

/// The result of a write: its command tag and count, and with RETURNING the rows it
/// returned (a result set, as a query's).
fn written(tag: String, count: usize, returned: Option<(Vec<OutputColumn>, Vec<Vec<Value>>)>) -> QueryResult {
    let mut r = affected(tag, count);
    if let Some((columns, rows)) = returned {
        r.columns = columns
            .into_iter()
            .map(|c| crate::session::Column { name: c.name, data_type: c.ty })
            .collect();
        r.rows = rows.into_iter().map(crate::session::Row).collect();
    }
    r
}

/// The positions of `table`'s GENERATED ALWAYS identity columns.
fn identity_always(catalog: &crate::catalog::Catalog, table: &TableDef) -> Vec<usize> {
    (0..table.columns.len())
        .filter(|&c| catalog.identity(table, &table.columns[c].name) == Some(crate::catalog::Identity::Always))
        .collect()
}

fn table_schema(t: &TableDef) -> Vec<OutputColumn> {
    t.columns
        .iter()
        .map(|c| OutputColumn {
            name: c.name.clone(),
            ty: c.ty,
        })
        .collect()
}

fn values_plan(t: &TableDef, rows: Vec<Vec<Expr>>) -> Plan {
    Plan::new(Node::Values { rows }, table_schema(t))
}

pub fn affected(tag: String, n: usize) -> QueryResult {
    let mut r = QueryResult::command(tag);
    r.rows_affected = n as u64;
    r
}

/// A scan of every column of `table` plus the tuple id, joined with the `from`
/// items (`UPDATE … FROM`, `DELETE … USING`; their columns follow the tuple id) and
/// filtered by `selection`, with the scope SET, WHERE and RETURNING are bound in.
fn target_scan(
    binder: &mut Binder<'_>,
    table: &Arc<TableDef>,
    alias: Option<&ast::TableAlias>,
    selection: Option<&ast::Expr>,
    from: &[ast::TableWithJoins],
) -> Result<(Plan, Scope)> {
    let cols: Vec<(String, DataType)> = table.columns.iter().map(|c| (c.name.clone(), c.ty)).collect();
    let qual = alias.map(|a| ident(&a.name)).unwrap_or_else(|| table.name.clone());
    let scope = Scope::relation(Some(&qual), &cols, 0);
    let mut schema = table_schema(table);
    schema.push(OutputColumn {
        name: "tid".into(),
        ty: DataType::BigInt,
    });
    let scan = |filter: Option<Expr>| {
        Plan::new(
            Node::TableScan {
                table: table.clone(),
                columns: (0..table.columns.len()).collect(),
                filter,
                access: Access::Heap,
                with_tid: true,
                bees: None,
            },
            schema.clone(),
        )
    };
    let bind_where = |binder: &mut Binder<'_>, scope: &Scope| -> Result<Option<Expr>> {
        let Some(e) = selection else { return Ok(None) };
        let b = binder.bind_scalar_over(scope.clone(), e, "WHERE")?;
        if b.ty != DataType::Boolean {
            return Err(Error::datatype_mismatch(format!(
                "argument of WHERE must be type boolean, not type {}",
                b.ty
            )));
        }
        Ok(Some(b))
    };
    if from.is_empty() {
        let filter = bind_where(binder, &scope)?;
        return Ok((scan(filter), scope));
    }
    let (joined, scope) = binder.join_dml_from(scan(None), scope, from)?;
    let plan = match bind_where(binder, &scope)? {
        None => joined,
        Some(predicate) => {
            let schema = joined.schema.clone();
            Plan::new(Node::Filter { input: Box::new(joined), predicate }, schema)
        }
    };
    Ok((plan, scope))
}

fn single_table(t: &ast::TableWithJoins) -> Result<(&ast::ObjectName, Option<&ast::TableAlias>)> {
    if !t.joins.is_empty() {
        return Err(Error::not_supported("UPDATE/DELETE with joins"));
    }
    match &t.relation {
        ast::TableFactor::Table { name, alias, .. } => Ok((name, alias.as_ref())),
        _ => Err(Error::not_supported("UPDATE/DELETE of this relation")),
    }
}

pub fn update(ctx: &mut Ctx<'_>, u: &ast::Update) -> Result<QueryResult> {
    // Other dialects' clauses sqlparser reads: refused, never ignored.
    if u.or.is_some() {
        return Err(Error::not_supported("UPDATE OR … is not supported"));
    }
    if !u.order_by.is_empty() || u.limit.is_some() {
        return Err(Error::not_supported("UPDATE … ORDER BY / LIMIT is not supported"));
    }
    if u.output.is_some() {
        return Err(Error::not_supported("UPDATE … OUTPUT is not supported (use RETURNING)"));
    }
    let (table, bq, params, checks) = match cached_write(ctx) {
        Some(cached) => cached,
        None => {
            let (name, alias) = single_table(&u.table)?;
            let catalog = ctx.txn.catalog.clone();
            let mut binder = Binder::new(&catalog, ctx.sql, ctx.params.len());
            binder.functions = Some(ctx.functions);
            binder.literal_params = ctx.plan_cache.is_some_and(|c| c.is_shaped());
            let table = binder.table(name)?;
            let always = identity_always(&catalog, &table);
            let plan = update_plan(&mut binder, &table, alias, u, &always)?;
            let checks = Arc::new(super::check::RowChecks::of(ctx, &table)?);
            plan_write(ctx, binder, table, plan, Some(checks))?
        }
    };
    let n = table.columns.len();
    // Every row is computed before the first is written (see `held_rows`).
    let held = held_rows(ctx, &bq, &params)?;
    let rows = held.rows();
    // Bound with the plan, under the same schema (a cached UPDATE always has them).
    let checks = match checks {
        Some(c) => c,
        None => Arc::new(super::check::RowChecks::of(ctx, &table)?),
    };
    let mut foreign_keys = super::fk::Tracker::of(ctx.catalog(), &table)?;
    let mut former = ctx.row_former(&table, rows)?;
    let w = ctx.txn.writer()?;
    // Each row: the new values, the tuple id, the old values, then what RETURNING computes.
    let returning_at = 2 * n + 1;
    let mut returned = Returned::new(ctx, "UPDATE … RETURNING");
    let mut count = 0;
    // With FROM a target row may join several rows; as in PostgreSQL it is updated
    // once, with the first. Uniqueness is checked row by row, as PostgreSQL does.
    let dedupe = u.from.is_some().then_some("UPDATE … FROM (the rows it changed)");
    each_target_row(ctx, held, n, dedupe, |mut row, t| {
        if u.returning.is_some() {
            returned.push(row.split_off(returning_at))?;
        }
        let old = row.split_off(n + 1);
        row.truncate(n);
        let new = row;
        checks
            .verify(ctx, &table, &new)
            .and_then(|()| xdml::update_row_with(w, &table, t, &old, &new, former.as_mut()))
            .map_err(|e| with_constraint_detail(e, &table, &new))?;
        foreign_keys.updated(&old, &new);
        count += 1;
        Ok(())
    })?;
    let returned = returned.rows;
    foreign_keys.finish(ctx)?;
    ctx.note_changes(&table, count);
    let returned = u.returning.as_ref().map(|_| (bq.plan.schema.iter().skip(returning_at).cloned().collect(), returned));
    Ok(written(format!("UPDATE {count}"), count, returned))
}


/// A write's target table, the plan that reads its rows (with bees), the cast
/// parameter values, and for an UPDATE the table's CHECK constraints, bound.
type WritePlan = (Arc<TableDef>, Arc<BoundQuery>, Vec<Value>, Option<Arc<super::check::RowChecks>>);

/// The cached plan of the running UPDATE or DELETE, with its bees and its cast
/// parameter values, when the statement has one for the transaction's catalog.
fn cached_write(ctx: &Ctx<'_>) -> Option<WritePlan> {
    let plan = ctx.plan_cache?.get(ctx)?;
    let table = plan.table?;
    // An error here (a parameter that does not cast) is found again by binding.
    let params = cast_params(ctx.params, &plan.param_types).ok()?;
    let bq = ctx.plan_cache?.attach_bees(ctx, plan.query, &params).ok()?;
    Some((table, bq, params, plan.checks))
}

/// Optimizes the plan an UPDATE or DELETE reads its rows with, keeps it in the
/// statement's plan cache (with an UPDATE's bound CHECK constraints), and attaches
/// its bees.
fn plan_write(
    ctx: &Ctx<'_>,
    mut binder: Binder<'_>,
    table: Arc<TableDef>,
    plan: Plan,
    checks: Option<Arc<super::check::RowChecks>>,
) -> Result<WritePlan> {
    let params = cast_with(ctx, &binder.param_types)?;
    let generic = Arc::new(optimize_generic(ctx, plan, binder.take_subqueries()));
    if let Some(cache) = ctx.plan_cache {
        let cached = CachedPlan {
            query: generic.clone(),
            param_types: binder.param_types.as_slice().into(),
            table: Some(table.clone()),
            insert: None,
            checks: checks.clone(),
        };
        cache.put(ctx, &binder, cached)?;
    }
    let bq = with_bees(ctx, generic, &params)?;
    Ok((table, bq, params, checks))
}

/// UPDATE's plan: the target rows with their new values, tuple ids and old values.
fn update_plan(
    binder: &mut Binder<'_>,
    table: &Arc<TableDef>,
    alias: Option<&ast::TableAlias>,
    u: &ast::Update,
    identity_always: &[usize],
) -> Result<Plan> {
    let from: &[ast::TableWithJoins] = match &u.from {
        None => &[],
        Some(ast::UpdateTableFromKind::AfterSet(f) | ast::UpdateTableFromKind::BeforeSet(f)) => f,
    };
    let (scan, mut scope) = target_scan(binder, table, alias, u.selection.as_ref(), from)?;
    let n = table.columns.len();
    // RETURNING sees the new values (the update's first n columns) and the FROM
    // items' columns, which the update passes on after the old values.
    let returning = match &u.returning {
        Some(items) => {
            let mut returning_scope = scope.clone();
            for c in returning_scope.columns.iter_mut().skip(n) {
                c.expr = crate::binder::query_util::shift_columns(&c.expr, n);
            }
            Some(binder.bind_returning(returning_scope, items)?)
        }
        None => None,
    };
    // New values: assignments over the old row; then the tuple id and the old row.
    // (The last assignment takes the scope itself: one copy fewer of a wide table's
    // columns per statement.)
    let mut new: Vec<Option<Expr>> = vec![None; n];
    let last = u.assignments.len().saturating_sub(1);
    for (k, a) in u.assignments.iter().enumerate() {
        let ast::AssignmentTarget::ColumnName(cn) = &a.target else {
            return Err(Error::not_supported("tuple assignment in UPDATE"));
        };
        let cname = cn
            .0
            .last()
            .map(|p| match p {
                ast::ObjectNamePart::Identifier(i) => ident(i),
                other => other.to_string(),
            })
            .unwrap_or_default();
        let c = table.column_index(&cname).ok_or_else(|| {
            Error::undefined_column(&cname).with_message(format!(
                "column \"{cname}\" of relation \"{}\" does not exist",
                table.name
            ))
        })?;
        if new[c].is_some() {
            return Err(Error::semantic("42601", format!("multiple assignments to same column \"{cname}\"")));
        }
        let col = &table.columns[c];
        if identity_always.contains(&c) && !is_default_keyword(&a.value) {
            return Err(Error::semantic("428C9", format!("column \"{cname}\" can only be updated to DEFAULT")));
        }
        new[c] = Some(if is_default_keyword(&a.value) {
            default_expr(binder, table, c)?
        } else {
            let over = if k == last { std::mem::take(&mut scope) } else { scope.clone() };
            binder.bind_assignment(over, &a.value, &col.name, col.ty)?
        });
    }
    let mut exprs: Vec<Expr> = new
        .into_iter()
        .enumerate()
        .map(|(c, e)| e.unwrap_or_else(|| Expr::column(c, table.columns[c].ty)))
        .collect();
    exprs.push(Expr::column(n, DataType::BigInt));
    exprs.extend((0..n).map(|c| Expr::column(c, table.columns[c].ty)));
    let mut schema = table_schema(table);
    schema.push(OutputColumn { name: "tid".into(), ty: DataType::BigInt });
    schema.extend(table_schema(table));
    // The FROM items' columns, for RETURNING.
    for (i, c) in scan.schema.iter().enumerate().skip(n + 1) {
        exprs.push(Expr::column(i, c.ty));
        schema.push(c.clone());
    }
    let plan = Plan::new(Node::Project { input: Box::new(scan), exprs }, schema);
    Ok(with_returning_after(plan, n, 2 * n + 1, returning).0)
}

pub fn delete(ctx: &mut Ctx<'_>, d: &ast::Delete) -> Result<QueryResult> {
    if !d.tables.is_empty() {
        return Err(Error::not_supported("DELETE of several tables"));
    }
    // Other dialects' clauses sqlparser reads: refused, never ignored.
    if !d.order_by.is_empty() || d.limit.is_some() {
        return Err(Error::not_supported("DELETE … ORDER BY / LIMIT is not supported"));
    }
    if d.output.is_some() {
        return Err(Error::not_supported("DELETE … OUTPUT is not supported (use RETURNING)"));
    }
    let from = match &d.from {
        ast::FromTable::WithFromKeyword(v) | ast::FromTable::WithoutKeyword(v) => v,
    };
    let [t] = from.as_slice() else {
        return Err(Error::not_supported("DELETE from several tables"));
    };
    let (table, bq, params, _) = match cached_write(ctx) {
        Some(cached) => cached,
        None => {
            let (name, alias) = single_table(t)?;
            let catalog = ctx.txn.catalog.clone();
            let mut binder = Binder::new(&catalog, ctx.sql, ctx.params.len());
            binder.functions = Some(ctx.functions);
            binder.literal_params = ctx.plan_cache.is_some_and(|c| c.is_shaped());
            let table = binder.table(name)?;
            let using = d.using.as_deref().unwrap_or(&[]);
            let (scan, scope) = target_scan(&mut binder, &table, alias, d.selection.as_ref(), using)?;
            let returning = match &d.returning {
                Some(items) => Some(binder.bind_returning(scope, items)?),
                None => None,
            };
            let n = table.columns.len();
            let (plan, _) = with_returning_after(scan, n, n + 1, returning);
            plan_write(ctx, binder, table, plan, None)?
        }
    };
    // Every row is found before the first is deleted (see `held_rows`).
    let held = held_rows(ctx, &bq, &params)?;
    let n = table.columns.len();
    let mut foreign_keys = super::fk::Tracker::of(ctx.catalog(), &table)?;
    let w = ctx.txn.writer()?;
    let mut count = 0;
    // Each row: the deleted values, the tuple id, then what RETURNING computes.
    let mut returned = Returned::new(ctx, "DELETE … RETURNING");
    // A target row joining several USING rows is deleted (and returned) once.
    let dedupe = d.using.is_some().then_some("DELETE … USING (the rows it removed)");
    each_target_row(ctx, held, n, dedupe, |mut row, t| {
        xdml::delete_row(w, &table, t, &row[..n])?;
        foreign_keys.deleted(&row[..n]);
        count += 1;
        if d.returning.is_some() {
            returned.push(row.split_off(n + 1))?;
        }
        Ok(())
    })?;
    let returned = returned.rows;
    foreign_keys.finish(ctx)?;
    ctx.note_deletes(&table, count);
    let returned = d.returning.as_ref().map(|_| (bq.plan.schema.iter().skip(n + 1).cloned().collect(), returned));
    Ok(written(format!("DELETE {count}"), count, returned))
}

/// The expressions of a plain `SELECT`'s list (no set operation around it), in order;
/// empty for any other query or when a `*` makes positions unknowable.
fn select_items(q: &ast::Query) -> Vec<&ast::Expr> {
    let ast::SetExpr::Select(sel) = &*q.body else { return Vec::new() };
    let mut items = Vec::with_capacity(sel.projection.len());
    for item in &sel.projection {
        match item {
            ast::SelectItem::UnnamedExpr(e) | ast::SelectItem::ExprWithAlias { expr: e, .. } => items.push(e),
            _ => return Vec::new(),
        }
    }
    items
}
