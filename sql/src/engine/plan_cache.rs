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
//! execution's copy of the plan, as before.
//!
//! A cached plan is used only under the very catalog it was bound against (the same
//! `Arc`, which the cache holds so it cannot be reused for another). Every schema
//! change and every statistics change installs a new catalog when it commits (and a
//! transaction that changes its own catalog gets a new copy at its first change), so
//! a plan made before `DROP INDEX`, `ALTER TABLE`, `DROP TABLE` or `ANALYZE` is never
//! used after it. Plans that read something at bind time that a later execution
//! must read again (the clock for `now()`, a system table's rows) are not cached.

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
    slot: Mutex<Option<(Arc<Catalog>, CachedPlan)>>,
}

/// A statement's plan as the cache keeps it.
#[derive(Clone)]
pub struct CachedPlan {
    /// Optimized, without bees.
    pub query: Arc<BoundQuery>,
    /// The types the binder inferred for the parameters.
    pub param_types: Vec<Option<DataType>>,
    /// The table an UPDATE or DELETE writes.
    pub table: Option<Arc<TableDef>>,
}

impl std::fmt::Debug for PlanCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let cached = self.slot.lock().is_some();
        f.debug_struct("PlanCache").field("cached", &cached).finish()
    }
}

impl PlanCache {
    /// The cached plan, when it was made under the transaction's catalog.
    pub fn get(&self, ctx: &Ctx<'_>) -> Option<CachedPlan> {
        let slot = self.slot.lock();
        slot.as_ref()
            .filter(|(catalog, _)| Arc::ptr_eq(catalog, &ctx.txn.catalog))
            .map(|(_, plan)| plan.clone())
    }

    /// Keeps `plan`, made under the transaction's catalog, unless its binder read
    /// something at bind time that the next execution must read again.
    pub fn put(&self, ctx: &Ctx<'_>, binder: &Binder<'_>, plan: CachedPlan) {
        if !binder.reads_at_bind {
            *self.slot.lock() = Some((ctx.txn.catalog.clone(), plan));
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
                let plan = binder.bind_query(q)?;
                let params = query::cast_params(ctx.params, &binder.param_types)?;
                let param_types = binder.param_types.clone();
                let subqueries = binder.take_subqueries();
                let bq = Arc::new(query::optimize(plan, subqueries));
                let cached = CachedPlan {
                    query: bq.clone(),
                    param_types,
                    table: None,
                };
                self.put(ctx, &binder, cached);
                (bq, params)
            }
        };
        Ok((query::with_bees(ctx, generic, &params)?, params))
    }

    /// Whether a plan is cached (for tests).
    #[cfg(test)]
    pub fn is_cached(&self) -> bool {
        self.slot.lock().is_some()
    }
}
