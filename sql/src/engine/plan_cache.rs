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
//! A cached plan is used only under the schema it was bound against: the catalog's
//! schema generation (`Catalog::schema_gen`), which every schema change replaces
//! (and a transaction that changes its own catalog gets a new one at each change),
//! so a plan made before `DROP INDEX`, `ALTER TABLE` or `DROP TABLE` is never used
//! after it. A change of statistics alone (`ANALYZE`, the automatic ANALYZE after
//! writes, a row count stored by COPY) keeps the schema generation: a plan is made
//! again only when the statistics of a relation it reads moved enough to change
//! it ([`stats_moved`]: known or not, row count or a column's distinct count by more
//! than 2×, a column's NULL or common-value fraction by more than 0.1, its
//! correlation by more than 0.3), compared with the statistics it was made under —
//! so small moves never add up unseen. That is the question PostgreSQL answers by
//! invalidating every plan of a relation at each ANALYZE and DuckDB by rebinding on
//! a changed catalog entry, asked per plan: the automatic ANALYZE that a growing
//! `history` table triggers every 10% no longer makes the statements on other tables
//! (or the INSERT into it, which reads none) plan again. Nor is a plan used under
//! other optimizer switches than it was made under, or once a relation it reads has
//! changed size (the live count the engine keeps between ANALYZEs) by more than 2×
//! (or become known) since: the join order and build sides were chosen for the old
//! sizes. Plans that read something at bind time that a later execution must read
//! again (a system table's rows, application functions) are not cached.

use std::sync::Arc;

use parking_lot::Mutex;
use sqlparser::ast;

use super::Ctx;
use super::query;
use crate::binder::Binder;
use crate::catalog::{Catalog, TableDef, TableStats};
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
    /// The statement is a shape (`shape.rs`): its parameters stand for literals, and
    /// a plan is kept (and run) only when their values could not have changed it.
    shaped: bool,
}

/// A cached plan with what it was made under.
struct Slot {
    /// The catalog the plan was made under (its schema generation and statistics).
    made: Arc<Catalog>,
    /// The last catalog the plan was found valid under (`made` at first): the same
    /// catalog again needs no new comparison of statistics.
    checked: Arc<Catalog>,
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

/// Whether no literal's value could have changed `bq`, the plan of a statement
/// shape: it reads no table, or one table (no subplans) by an index lookup with
/// equalities only, on a unique index's every column, or on an index whose leading
/// column has no statistics (a literal and a parameter are then estimated alike) or
/// has no common values and nearly as many distinct values as rows. For such a
/// column a literal is estimated at one row in ndv — as a parameter is — or, outside
/// the values seen, at one row: never more rows than the lookup the generic plan
/// chose, so the literal would have chosen it too. Anything else — a range, an IN
/// list, a join, a column with common values whose literal could be estimated at
/// many rows — could plan differently for some value, so the shape is not used.
fn value_insensitive(ctx: &Ctx<'_>, bq: &BoundQuery) -> bool {
    use crate::plan::{Access, Node};
    if !bq.subqueries.is_empty() {
        return false;
    }
    let mut scans = 0;
    let mut todo: Vec<&crate::plan::Plan> = vec![&bq.plan];
    while let Some(p) = todo.pop() {
        if let Node::TableScan { table, access, .. } = &p.node {
            scans += 1;
            let Access::Index { index, eq, lower, upper, any, .. } = access else { return false };
            if scans > 1 || !any.is_empty() || lower.is_some() || upper.is_some() || eq.is_empty() {
                return false;
            }
            if !crate::exec::point::is_unique_lookup(table, access) {
                let Some(&column) = table.indexes.get(*index).and_then(|i| i.columns.first()) else { return false };
                if let Some(stats) = ctx.catalog().stats.get(&table.id)
                    && let Some(cs) = stats.columns.get(column)
                {
                    let rows = stats.rows as f64;
                    if !cs.mcv.is_empty() || cs.distinct_in(rows) < 0.9 * rows {
                        return false;
                    }
                }
            }
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

/// Whether `then`, a relation's statistics a plan was made under, and `now`, its
/// statistics since, differ enough that the optimizer might choose otherwise: known
/// or not (with column statistics or not), the row count or a column's distinct
/// count by more than 2×, a column's NULL fraction or the share of its common values
/// by more than 0.1, its correlation with heap order by more than 0.3. Smaller moves
/// change estimates by less than the optimizer's choices are sensitive to (its
/// access and join choices compare costs that differ by far more), and a generic
/// plan, whose parameters are estimated from distinct counts, does not read the
/// common values or histogram bounds at all.
pub(crate) fn stats_moved(then: Option<&TableStats>, now: Option<&TableStats>) -> bool {
    let (then, now) = match (then, now) {
        (None, None) => return false,
        (Some(a), Some(b)) => (a, b),
        _ => return true,
    };
    if std::ptr::eq(then, now) {
        return false;
    }
    if size_moved(then.rows, now.rows) || then.columns.len() != now.columns.len() {
        return true;
    }
    let ratio_moved = |a: f64, b: f64| {
        let (a, b) = (a.max(1.0), b.max(1.0));
        a > 2.0 * b || b > 2.0 * a
    };
    then.columns.iter().zip(&now.columns).any(|(a, b)| {
        let common = |c: &crate::catalog::ColumnStats| c.mcv.iter().map(|m| m.1).sum::<f64>();
        ratio_moved(a.distinct_in(then.rows as f64), b.distinct_in(now.rows as f64))
            || (a.null_frac - b.null_frac).abs() > 0.1
            || (common(a) - common(b)).abs() > 0.1
            || (a.correlation - b.correlation).abs() > 0.3
    })
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
    /// The types the binder inferred for the parameters (shared: the plan is
    /// cloned out of the cache at each execution).
    pub param_types: Arc<[Option<DataType>]>,
    /// The table an INSERT, UPDATE or DELETE writes.
    pub table: Option<Arc<TableDef>>,
    /// An INSERT: the whole statement bound (its source is `query`).
    pub insert: Option<Arc<super::dml::InsertPlan>>,
    /// An UPDATE: the table's CHECK constraints, bound once for every execution
    /// (an INSERT keeps them in its `InsertPlan`).
    pub checks: Option<Arc<super::check::RowChecks>>,
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
        let mut slot = self.slot.lock();
        let slot = slot.as_mut()?;
        let catalog = &ctx.txn.catalog;
        let valid = slot.rules == ctx.optimizer
            && (Arc::ptr_eq(&slot.checked, catalog)
                || slot.made.schema_gen == catalog.schema_gen
                    && !slot.sizes.iter().any(|&(id, _)| {
                        let id = id as u32;
                        stats_moved(slot.made.stats.get(&id), catalog.stats.get(&id))
                    }))
            && !slot.sizes.iter().any(|&(id, then)| size_moved(then, ctx.bee_cache.relation_size(id)));
        if !valid {
            return None;
        }
        if !Arc::ptr_eq(&slot.checked, catalog) {
            slot.checked = catalog.clone();
        }
        Some(slot.plan.clone())
    }

    /// The plan cache of a statement shape ([`super::shape`]).
    pub fn shaped() -> PlanCache {
        PlanCache { shaped: true, ..Default::default() }
    }

    /// Whether this is a statement shape's cache.
    pub fn is_shaped(&self) -> bool {
        self.shaped
    }

    /// [`query::cast_params`]; for a shape, a value that does not cast declines the
    /// shape for this execution (the statement with its literals reports the error).
    pub fn cast_params(&self, params: &[Value], types: &[Option<DataType>]) -> Result<Vec<Value>> {
        query::cast_params(params, types).map_err(|e| if self.shaped { super::shape::declined_values() } else { e })
    }

    /// Keeps `plan`, made under the transaction's catalog, unless its binder read
    /// something at bind time that the next execution must read again. A shape's
    /// plan that its literals' values could have changed ([`value_insensitive`]) is
    /// refused before it runs: the shape is declined.
    pub fn put(&self, ctx: &Ctx<'_>, binder: &Binder<'_>, plan: CachedPlan) -> Result<()> {
        if self.shaped && !value_insensitive(ctx, &plan.query) {
            return Err(super::shape::declined_shape());
        }
        if !binder.reads_at_bind {
            let sizes = scanned_tables(&plan.query)
                .into_iter()
                .map(|id| (id, ctx.bee_cache.relation_size(id)))
                .collect();
            self.kept.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            *self.slot.lock() = Some(Slot {
                made: ctx.txn.catalog.clone(),
                checked: ctx.txn.catalog.clone(),
                rules: ctx.optimizer,
                sizes,
                plan,
            });
        }
        Ok(())
    }

    /// The plan of `q` for this execution, with its bees, and the parameter values
    /// cast to the types the binder inferred: the cached plan when it was made under
    /// the transaction's catalog, else a new one (cached when it may be reused).
    pub fn plan_query(&self, ctx: &Ctx<'_>, q: &ast::Query) -> Result<(Arc<BoundQuery>, Vec<Value>)> {
        let (generic, params) = match self.get(ctx) {
            Some(plan) => (plan.query, self.cast_params(ctx.params, &plan.param_types)?),
            None => {
                let mut binder = Binder::new(ctx.catalog(), ctx.sql, ctx.params.len());
                binder.bees = Some(ctx.bee_cache);
                binder.functions = Some(ctx.functions);
                binder.literal_params = self.shaped;
                let plan = binder.bind_query(q)?;
                let params = self.cast_params(ctx.params, &binder.param_types)?;
                let param_types: Arc<[Option<DataType>]> = binder.param_types.as_slice().into();
                let subqueries = binder.take_subqueries();
                let bq = Arc::new(query::optimize_generic(ctx, plan, subqueries));
                let cached = CachedPlan {
                    query: bq.clone(),
                    param_types,
                    table: None,
                    insert: None,
                    checks: None,
                };
                self.put(ctx, &binder, cached)?;
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
