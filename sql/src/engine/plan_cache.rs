//! The plan cache of a statement: the bound, optimized plan of a query, kept across
//! executions of one [`crate::Statement`] (prepared, or cached by text by
//! `Connection::execute`).
//!
//! The plan kept is generic: parameters stay `$n` references in it (the binder sees
//! only their number and the optimizer never their values), so, unlike PostgreSQL,
//! which compares custom plans made for the values against a generic one, BeeDB has
//! no parameter-sensitive choice to revisit: the access path is chosen from the
//! predicate's shape and the catalog, never from a parameter's value. The one thing
//! made per value — a scan bee with the value baked in — is attached to each
//! execution's copy of the plan. A plan whose scans use no scan bee (only relation
//! bees, which do not depend on parameter values: every point lookup, since an index
//! scan expected to read a handful of tuples gets none) is kept with its bees
//! attached too, so an execution neither copies the plan nor looks its bees up again.
//!
//! A cached plan is used only under the very catalog it was bound against (the same
//! `Arc`, which the cache holds so it cannot be reused for another). Every schema
//! change and every statistics change installs a new catalog when it commits (and a
//! transaction that changes its own catalog gets a new copy at its first change), so
//! a plan made before `DROP INDEX`, `ALTER TABLE`, `DROP TABLE` or `ANALYZE` is never
//! used after it. Nor is a plan used under other optimizer switches than it was made
//! under, or once a relation it reads has changed size by more than 2× (or become
//! known) since: the join order and build sides were chosen for the old sizes. Plans
//! that read something at bind time that a later execution must read again (the
//! clock for `now()`, a system table's rows) are not cached.

use std::sync::Arc;

use parking_lot::Mutex;
use sqlparser::ast;

use super::Ctx;
use super::query;
use crate::binder::Binder;
use crate::catalog::{Catalog, TableDef};
use crate::error::Result;
use crate::plan::BoundQuery;
use crate::types::{DataType, Value};

/// One statement's cached plan (empty until its first execution).
#[derive(Default)]
pub struct PlanCache {
    slot: Mutex<Option<Slot>>,
    /// The cached plan with its bees, when they do not depend on parameter values.
    attached: Mutex<Option<Attached>>,
    /// Plans kept so far (for tests: how often the statement was planned again).
    kept: std::sync::atomic::AtomicUsize,
}

/// A cached plan with what it was made under.
struct Slot {
    catalog: Arc<Catalog>,
    rules: crate::optimizer::Rules,
    /// The size of each relation the plan reads, as the optimizer saw it.
    sizes: Vec<(u64, u64)>,
    plan: CachedPlan,
}

/// A plan with its bees attached, and what they were attached under.
struct Attached {
    /// The generic plan they were attached to (compared by identity: a new plan
    /// after a schema, statistics or size change makes this one stale).
    generic: Arc<BoundQuery>,
    settings: crate::bees::BeeSettings,
    query: Arc<BoundQuery>,
}

/// Whether `bq`'s bees may serve every execution: no scan has a scan bee (which
/// bakes parameter values in), so its bees are the relations' own.
fn bees_are_parameter_free(bq: &BoundQuery) -> bool {
    let mut todo: Vec<&crate::plan::Plan> = vec![&bq.plan];
    todo.extend(bq.subqueries.iter().map(|s| &s.plan));
    while let Some(p) = todo.pop() {
        if let crate::plan::Node::TableScan { bees: Some(b), .. } = &p.node
            && b.0.scan.is_some()
        {
            return false;
        }
        todo.extend(p.children());
    }
    true
}

/// Whether a relation's size moved far enough from what a plan was made for that
/// its join order or build sides may be wrong: unknown to known, or by more than 2×.
fn size_moved(then: u64, now: u64) -> bool {
    match (then, now) {
        (0, 0) => false,
        (0, _) | (_, 0) => true,
        (a, b) => a > 2 * b || b > 2 * a,
    }
}

/// The ids of the relations `bq` scans (plan and subplans). Iterative: a plan may be
/// thousands of nodes deep.
pub(super) fn scanned_tables(bq: &BoundQuery) -> Vec<u64> {
    let mut out = Vec::new();
    let mut todo: Vec<&crate::plan::Plan> = vec![&bq.plan];
    todo.extend(bq.subqueries.iter().map(|s| &s.plan));
    while let Some(p) = todo.pop() {
        if let crate::plan::Node::TableScan { table, .. } = &p.node
            && !out.contains(&(table.id as u64))
        {
            out.push(table.id as u64);
        }
        todo.extend(p.children());
    }
    out
}

/// A statement's plan as the cache keeps it.
#[derive(Clone)]
pub struct CachedPlan {
    /// Optimized, without bees.
    pub query: Arc<BoundQuery>,
    /// The types the binder inferred for the parameters.
    pub param_types: Vec<Option<DataType>>,
    /// The table an INSERT, UPDATE or DELETE writes.
    pub table: Option<Arc<TableDef>>,
    /// An INSERT: the whole statement bound (its source is `query`).
    pub insert: Option<Arc<super::dml::InsertPlan>>,
}

impl std::fmt::Debug for PlanCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let cached = self.slot.lock().is_some();
        f.debug_struct("PlanCache").field("cached", &cached).finish()
    }
}

impl PlanCache {
    /// The cached plan, when it was made under the transaction's catalog and the
    /// session's optimizer rules, and no relation it reads changed size by more than
    /// [`size_moved`] allows.
    pub fn get(&self, ctx: &Ctx<'_>) -> Option<CachedPlan> {
        let slot = self.slot.lock();
        let slot = slot.as_ref()?;
        let valid = Arc::ptr_eq(&slot.catalog, &ctx.txn.catalog)
            && slot.rules == ctx.optimizer
            && !slot.sizes.iter().any(|&(id, then)| size_moved(then, ctx.bee_cache.relation_size(id)));
        valid.then(|| slot.plan.clone())
    }

    /// Keeps `plan`, made under the transaction's catalog, unless its binder read
    /// something at bind time that the next execution must read again.
    pub fn put(&self, ctx: &Ctx<'_>, binder: &Binder<'_>, plan: CachedPlan) {
        if !binder.reads_at_bind {
            let sizes = scanned_tables(&plan.query)
                .into_iter()
                .map(|id| (id, ctx.bee_cache.relation_size(id)))
                .collect();
            self.kept.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            *self.slot.lock() = Some(Slot {
                catalog: ctx.txn.catalog.clone(),
                rules: ctx.optimizer,
                sizes,
                plan,
            });
        }
    }

    /// The plan of `q` for this execution, with its bees, and the parameter values
    /// cast to the types the binder inferred: the cached plan when it was made under
    /// the transaction's catalog, else a new one (cached when it may be reused).
    pub fn plan_query(&self, ctx: &Ctx<'_>, q: &ast::Query) -> Result<(Arc<BoundQuery>, Vec<Value>)> {
        let (generic, params) = match self.get(ctx) {
            Some(plan) => (plan.query, query::cast_params(ctx.params, &plan.param_types)?),
            None => {
                let mut binder = Binder::new(ctx.catalog(), ctx.sql, ctx.params.len());
                binder.bees = Some(ctx.bee_cache);
                binder.functions = Some(ctx.functions);
                let plan = binder.bind_query(q)?;
                let params = query::cast_params(ctx.params, &binder.param_types)?;
                let param_types = binder.param_types.clone();
                let subqueries = binder.take_subqueries();
                let bq = Arc::new(query::optimize_generic(ctx, plan, subqueries));
                let cached = CachedPlan {
                    query: bq.clone(),
                    param_types,
                    table: None,
                    insert: None,
                };
                self.put(ctx, &binder, cached);
                (bq, params)
            }
        };
        Ok((self.attach_bees(ctx, generic, &params)?, params))
    }

    /// `generic` with the session's bees attached ([`query::with_bees`]); the copy
    /// made for an earlier execution when its bees did not depend on the parameters.
    pub fn attach_bees(&self, ctx: &Ctx<'_>, generic: Arc<BoundQuery>, params: &[Value]) -> Result<Arc<BoundQuery>> {
        if let Some(a) = self.attached.lock().as_ref()
            && Arc::ptr_eq(&a.generic, &generic)
            && a.settings == ctx.bees
        {
            return Ok(a.query.clone());
        }
        let query = query::with_bees(ctx, generic.clone(), params)?;
        if !Arc::ptr_eq(&query, &generic) && bees_are_parameter_free(&query) {
            *self.attached.lock() = Some(Attached {
                generic,
                settings: ctx.bees,
                query: query.clone(),
            });
        }
        Ok(query)
    }

    /// Whether a plan is cached (for tests).
    #[cfg(test)]
    pub fn is_cached(&self) -> bool {
        self.slot.lock().is_some()
    }

    /// How many plans were kept so far (for tests).
    #[cfg(test)]
    pub fn plans_kept(&self) -> usize {
        self.kept.load(std::sync::atomic::Ordering::Relaxed)
    }
}
