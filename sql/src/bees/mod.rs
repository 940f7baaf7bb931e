//! The SQL engine's side of the bee module (`beedb-bees`, which knows no SQL):
//! translating tables and filters into bee specs ([`translate`]), deciding per table
//! scan which bees it uses ([`attach`]), and moving bee output into column vectors
//! ([`output`]).
//!
//! With bees on, a table scan uses
//! - a **scan bee** when a leading run of its filter's conjuncts is expressible
//!   ([`translate::split`]): the bee evaluates them on the stored tuples and decodes
//!   only the scan's columns of the tuples that pass; the generic evaluator applies
//!   the rest (the *residual*) to the batch;
//! - otherwise the relation's **deform bee** to decode its columns;
//! - the generic decoder for tuples a bee hands back (written before an `ADD
//!   COLUMN`, or holding an out-of-line value the bee must read);
//! - no bee at all for an index lookup expected to read fewer than
//!   `MIN_INDEX_SCAN_BEE_TUPLES` tuples (a point query): there no bee pays for itself.
//!
//! INSERT, UPDATE and COPY encode rows with the relation's **form bee**
//! ([`crate::exec::dml`]).
//!
//! A Sort node gets a **sort bee** ([`sort`]) when every key's type has a kind: it
//! encodes the keys into normalized keys that sort by memcmp (`exec/sort.rs`).
//!
//! A plain GROUP BY gets an **aggregate bee** ([`agg`]) when its key types pack and
//! every aggregate is one the bee does: it packs the keys, finds the groups and
//! updates the accumulators in one call per batch (`exec/agg.rs`).

pub mod agg;
pub mod form;
pub mod join;
pub mod output;
pub mod sort;
pub mod translate;

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

use beedb_bees::cache::RelationBees;
use beedb_bees::spec::{Pred, ScanSpec};
use beedb_bees::{AggBee, BeeCache, BeeOwner, MakerChoice, ScanBee, SortBee};

pub use agg::AggBees;
pub use join::JoinBees;
pub use sort::SortBees;

use crate::catalog::TableDef;
use crate::error::{Error, Result};
use crate::expr::{Expr, ExprKind};
use crate::plan::{BoundQuery, Node, Plan};
use crate::optimizer::and_all;
use crate::types::Value;

/// The bee settings of a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BeeSettings {
    /// `bees`: the master switch.
    pub enabled: bool,
    /// `bee_deform`, `bee_form`, `bee_scan`: one switch per bee kind.
    pub deform: bool,
    pub form: bool,
    pub scan: bool,
    /// `bee_sort`.
    pub sort: bool,
    /// `bee_agg`.
    pub agg: bool,
    /// `bee_join`.
    pub join: bool,
    /// `bee_maker`: auto, compiled or instantiated.
    pub maker: MakerChoice,
}

impl Default for BeeSettings {
    fn default() -> Self {
        BeeSettings {
            enabled: true,
            deform: true,
            form: true,
            scan: true,
            sort: true,
            agg: true,
            join: true,
            maker: MakerChoice::Auto,
        }
    }
}

impl BeeSettings {
    pub fn deform(&self) -> bool {
        self.enabled && self.deform
    }

    pub fn form(&self) -> bool {
        self.enabled && self.form
    }

    pub fn scan(&self) -> bool {
        self.enabled && self.scan
    }

    pub fn sort(&self) -> bool {
        self.enabled && self.sort
    }

    pub fn agg(&self) -> bool {
        self.enabled && self.agg
    }

    pub fn join(&self) -> bool {
        self.enabled && self.join
    }
}

/// The query bees of a prepared statement: made at its first execution, reused by
/// the next ones, freed with the statement.
#[derive(Debug)]
pub struct StatementBees {
    pub id: u64,
    bees: Mutex<HashMap<String, Arc<ScanBee>>>,
    sorts: Mutex<HashMap<String, Arc<SortBee>>>,
    aggs: Mutex<HashMap<String, Arc<AggBee>>>,
    joins: Mutex<HashMap<String, Arc<beedb_bees::JoinBee>>>,
}

impl StatementBees {
    pub fn new() -> StatementBees {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        StatementBees {
            id: NEXT.fetch_add(1, Ordering::Relaxed),
            bees: Mutex::new(HashMap::new()),
            sorts: Mutex::new(HashMap::new()),
            aggs: Mutex::new(HashMap::new()),
            joins: Mutex::new(HashMap::new()),
        }
    }
}

impl Default for StatementBees {
    fn default() -> Self {
        StatementBees::new()
    }
}

/// The bees one table scan uses, decided at plan time.
pub struct ScanBeePlan {
    /// Where the scan reports the relation's size (the policy's expected tuples).
    pub cache: Arc<BeeCache>,
    /// The relation's bees (its deform bee decodes when there is no scan bee).
    pub relation: Arc<RelationBees>,
    /// The scan bee, when part of the filter was pushed into one.
    pub scan: Option<Arc<ScanBee>>,
    /// The pushed conjuncts (for tuples the bee hands back, and for EXPLAIN).
    pub pushed: Option<Expr>,
    /// The conjuncts left to the generic evaluator.
    pub residual: Option<Expr>,
    /// Variable attributes the deform bee must walk.
    pub var_limit: usize,
}

/// A [`ScanBeePlan`] in a plan node (compared by identity).
#[derive(Clone)]
pub struct ScanBees(pub Arc<ScanBeePlan>);

impl PartialEq for ScanBees {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl fmt::Debug for ScanBees {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0.scan {
            Some(s) => write!(f, "ScanBees(scan #{})", s.info().id),
            None => write!(f, "ScanBees(deform #{})", self.0.relation.deform.info().id),
        }
    }
}

/// What deciding bees needs.
pub struct BeeEnv<'a> {
    pub cache: &'a Arc<BeeCache>,
    pub settings: BeeSettings,
    pub statement: Option<&'a StatementBees>,
    /// Parameter values of this execution.
    pub params: &'a [Value],
}

fn internal(e: String) -> Error {
    Error::internal(format!("bee module: {e}"))
}

/// The relation bees of `table`, made (or fetched) for about `expected` tuples.
pub fn relation_bees(
    cache: &BeeCache,
    table: &TableDef,
    expected: u64,
    maker: MakerChoice,
) -> Result<Arc<RelationBees>> {
    cache
        .relation(
            table.id as u64,
            &table.name,
            translate::relation_spec(table),
            expected,
            maker,
        )
        .map_err(internal)
}

/// Decides the bees of every table scan in `bq` (main plan and subplans).
pub fn attach_query(bq: &mut BoundQuery, env: &BeeEnv<'_>) -> Result<()> {
    attach(&mut bq.plan, env)?;
    for s in &mut bq.subqueries {
        attach(&mut s.plan, env)?;
    }
    Ok(())
}

/// Decides the bees of every table scan in `plan`.
pub fn attach(plan: &mut Plan, env: &BeeEnv<'_>) -> Result<()> {
    attach_within(plan, env, None)
}

/// [`attach`], where at most `wanted` rows of `plan`'s output are read (a Limit
/// above it, through projections; the executor stops the scan there too).
fn attach_within(plan: &mut Plan, env: &BeeEnv<'_>, wanted: Option<u64>) -> Result<()> {
    // What this node's children are asked for: a Limit's rows, passed on through
    // projections; a scan keeps what it was asked for.
    let wanted = match &plan.node {
        Node::Limit { limit, offset, .. } => limit.map(|l| l.saturating_add(*offset)),
        Node::Project { .. } | Node::TableScan { .. } => wanted,
        _ => None,
    };
    let est_rows = plan.est.map(|e| e.rows);
    if let Node::TableScan {
        table,
        columns,
        filter,
        bees,
        access,
        ..
    } = &mut plan.node
    {
        *bees = scan_bees(table, columns, filter.as_ref(), access, wanted, est_rows, env)?;
        return Ok(());
    }
    if let Node::Sort { keys, bee, .. } = &mut plan.node {
        *bee = sort_bee(keys, plan.est.map(|e| e.rows), env)?;
    }
    let (workers, groups_est) = (plan.workers, plan.est.map(|e| e.rows));
    if let Node::Aggregate { input, groups, sets, aggs, bee } = &mut plan.node {
        *bee = if workers > 1 && groups_est.is_none_or(|g| g > MAX_PARALLEL_AGG_BEE_GROUPS) {
            None
        } else {
            agg_bee(groups, sets, aggs, input.est.map(|e| e.rows), env)?
        };
    }
    if let Node::Join { left, right, left_keys, right_keys, method: crate::plan::JoinMethod::Hash { build, bee, .. }, .. } = &mut plan.node {
        // The table holds the build side's keys; the other side probes it.
        let (build_keys, probe_keys, probe) = match build {
            crate::plan::JoinSide::Right => (&*right_keys, &*left_keys, &**left),
            crate::plan::JoinSide::Left => (&*left_keys, &*right_keys, &**right),
        };
        *bee = join_bee(build_keys, probe_keys, probe.est.map(|e| e.rows), env)?;
    }
    // The right scan of an index nested-loop join is not run as a scan: the join
    // fetches its rows one lookup at a time, generically.
    if let Node::Join { left, method: crate::plan::JoinMethod::IndexNestedLoop { .. }, .. } = &mut plan.node {
        return crate::stack::guarded(|| attach_within(left, env, None));
    }
    for c in plan.children_mut() {
        crate::stack::guarded(|| attach_within(c, env, wanted))?;
    }
    Ok(())
}

/// Scan bees one prepared statement keeps (one per distinct parameter value).
const MAX_STATEMENT_SCAN_BEES: usize = 16;

/// Index scans expected to read fewer tuples than this get no scan bee.
const MIN_INDEX_SCAN_BEE_TUPLES: u64 = 256;

/// Tuples a scan is expected to read, for the maker policy: the relation's size for
/// a heap scan; one tuple for equality on every column of a unique index; for other
/// index scans, the optimizer's estimate of the rows the scan gives (`est_rows`, from
/// the table's statistics) when it made one, else PostgreSQL's default selectivities
/// (0.5% for an equality or a two-sided range, a third for a one-sided range).
/// Without this, every index lookup of a large relation would pay for making a bee
/// to read a few tuples — and, as a parameter's value is baked into a scan bee, a
/// prepared lookup would make one per value it is run with.
fn expected_tuples(table: &TableDef, relation_size: u64, access: &crate::plan::Access, est_rows: Option<f64>) -> u64 {
    match access {
        crate::plan::Access::Heap => relation_size,
        crate::plan::Access::Index { index, eq, .. }
            if table.indexes.get(*index).is_some_and(|i| i.unique && eq.len() == i.columns.len()) =>
        {
            1
        }
        crate::plan::Access::Index { lower, upper, .. } => match (est_rows, lower, upper) {
            (Some(rows), _, _) => (rows.max(0.0).ceil() as u64).max(1),
            (None, Some(_), None) | (None, None, Some(_)) => relation_size / 3,
            (None, _, _) => (relation_size / 200).max(1),
        },
    }
}

fn scan_bees(
    table: &TableDef,
    columns: &[usize],
    filter: Option<&Expr>,
    access: &crate::plan::Access,
    wanted: Option<u64>,
    est_rows: Option<f64>,
    env: &BeeEnv<'_>,
) -> Result<Option<ScanBees>> {
    let s = env.settings;
    if !s.scan() && !s.deform() {
        return Ok(None);
    }
    let relation_size = env.cache.relation_size(table.id as u64);
    let mut expected = expected_tuples(table, relation_size, access, est_rows);
    // An index scan under a Limit stops after about that many entries, more when its
    // filter rejects some: allow one kept in sixteen (a heap scan reads whole pages
    // and is left to its relation size).
    if let (Some(w), crate::plan::Access::Index { .. }) = (wanted, access) {
        expected = expected.min(w.saturating_mul(16));
    }
    // An index lookup expected to read a handful of tuples is cheaper to filter and
    // decode generically than through a bee (measured: making an instantiated scan
    // bee costs more instructions than a point query's whole execution, and the
    // deform bee's output buffers and lookup cost more than decoding one tuple: with
    // it, a TP1 transaction ran 239k instructions against 207k with bees off).
    if matches!(access, crate::plan::Access::Index { .. }) && expected < MIN_INDEX_SCAN_BEE_TUPLES {
        return Ok(None);
    }
    let relation = relation_bees(env.cache, table, relation_size, s.maker)?;
    if s.scan()
        && let Some(f) = filter
    {
        let conjuncts = match &f.kind {
            ExprKind::And(v) => v.clone(),
            _ => vec![f.clone()],
        };
        let cols = translate::ScanCols {
            table,
            columns,
            params: env.params,
        };
        let (pushed, residual) = translate::split(conjuncts, &cols);
        if !pushed.is_empty() {
            let (exprs, mut preds): (Vec<Expr>, Vec<Pred>) = pushed.into_iter().unzip();
            let predicate = if preds.len() == 1 {
                preds.pop().unwrap()
            } else {
                Pred::And(preds)
            };
            let spec = ScanSpec {
                relation: relation.spec.clone(),
                predicate: Some(predicate),
                outputs: columns.to_vec(),
            };
            let bee = match env.statement {
                Some(st) => {
                    let key = format!("{}|{}", s.maker, spec.key());
                    let mut map = st.bees.lock();
                    match map.get(&key) {
                        Some(b) if !env.cache.outgrown(b, expected, s.maker) => b.clone(),
                        _ => {
                            let b = env
                                .cache
                                .scan(spec, BeeOwner::Statement(st.id), expected, s.maker)
                                .map_err(internal)?;
                            // A parameter's value is baked into the bee, so a statement
                            // run with many values would keep a bee per value: keep
                            // the last few only.
                            if map.len() >= MAX_STATEMENT_SCAN_BEES {
                                map.clear();
                            }
                            map.insert(key, b.clone());
                            b
                        }
                    }
                }
                None => env
                    .cache
                    .scan(spec, BeeOwner::Query, expected, s.maker)
                    .map_err(internal)?,
            };
            return Ok(Some(ScanBees(Arc::new(ScanBeePlan {
                cache: env.cache.clone(),
                relation,
                scan: Some(bee),
                pushed: and_all(exprs),
                residual: and_all(residual),
                var_limit: 0,
            }))));
        }
    }
    if !s.deform() {
        return Ok(None);
    }
    // The deform bee writes each attribute once: a scan naming a column twice keeps
    // the generic decoder.
    let mut seen = vec![false; table.columns.len()];
    for &c in columns {
        if std::mem::replace(&mut seen[c], true) {
            return Ok(None);
        }
    }
    let var_limit = beedb_bees::generic::var_walk_len(&relation.spec, columns.iter().copied());
    Ok(Some(ScanBees(Arc::new(ScanBeePlan {
        cache: env.cache.clone(),
        relation,
        scan: None,
        pushed: None,
        residual: filter.cloned(),
        var_limit,
    }))))
}

/// Rows a sort is expected to see when the optimizer left no estimate.
const UNKNOWN_SORT_ROWS: u64 = 1000;

/// The sort bee of a Sort node over `keys` expected to see about `rows` rows; `None`
/// when sort bees are off or a key's type has no kind.
fn sort_bee(keys: &[crate::plan::SortKey], rows: Option<f64>, env: &BeeEnv<'_>) -> Result<Option<SortBees>> {
    let s = env.settings;
    if !s.sort() {
        return Ok(None);
    }
    let Some(spec) = sort::spec(keys) else {
        return Ok(None);
    };
    let expected = rows.map_or(UNKNOWN_SORT_ROWS, |r| r.max(0.0) as u64);
    let bee = match env.statement {
        Some(st) => {
            let key = format!("{}|{}", s.maker, spec.key());
            let mut map = st.sorts.lock();
            match map.get(&key) {
                Some(b) if !env.cache.sort_outgrown(b, expected, s.maker) => b.clone(),
                _ => {
                    let b = env.cache.sort(spec, BeeOwner::Statement(st.id), expected, s.maker).map_err(internal)?;
                    map.insert(key, b.clone());
                    b
                }
            }
        }
        None => env.cache.sort(spec, BeeOwner::Query, expected, s.maker).map_err(internal)?,
    };
    Ok(Some(SortBees(bee)))
}

/// Most groups a parallel aggregation (more than one worker) is expected to make for
/// it to get an aggregate bee. Each thread's bee state is converted into the generic
/// state before the threads' states merge, at a cost per group: with 100,000 groups of
/// 400,000 rows on two threads the bee ran 454M instructions against 429M without
/// (callgrind), while with few groups the conversion is negligible. Merging the
/// threads' bee tables directly would lift this.
const MAX_PARALLEL_AGG_BEE_GROUPS: f64 = 10_000.0;

/// The aggregate bee of an Aggregate node expected to read about `rows` input rows;
/// `None` when aggregate bees are off or some part has no bee form.
fn agg_bee(
    groups: &[Expr],
    sets: &[Vec<usize>],
    aggs: &[crate::plan::AggCall],
    rows: Option<f64>,
    env: &BeeEnv<'_>,
) -> Result<Option<AggBees>> {
    let s = env.settings;
    if !s.agg() {
        return Ok(None);
    }
    let Some(spec) = agg::spec(groups, sets, aggs) else {
        return Ok(None);
    };
    let expected = rows.map_or(UNKNOWN_SORT_ROWS, |r| r.max(0.0) as u64);
    let bee = match env.statement {
        Some(st) => {
            let key = format!("{}|{}", s.maker, spec.key());
            let mut map = st.aggs.lock();
            match map.get(&key) {
                Some(b) if !env.cache.agg_outgrown(b, expected, s.maker) => b.clone(),
                _ => {
                    let b = env.cache.agg(spec, BeeOwner::Statement(st.id), expected, s.maker).map_err(internal)?;
                    map.insert(key, b.clone());
                    b
                }
            }
        }
        None => env.cache.agg(spec, BeeOwner::Query, expected, s.maker).map_err(internal)?,
    };
    Ok(Some(AggBees(bee)))
}

/// Rows a join's probe side is expected to have when the optimizer left no estimate.
const UNKNOWN_PROBE_ROWS: u64 = 1000;

/// The join bee of a hash join whose table holds `build_keys` and is probed with
/// `probe_keys` (about `rows` rows); `None` when join bees are off or the keys do
/// not pack ([`join::spec`]).
fn join_bee(build_keys: &[Expr], probe_keys: &[Expr], rows: Option<f64>, env: &BeeEnv<'_>) -> Result<Option<JoinBees>> {
    let s = env.settings;
    if !s.join() {
        return Ok(None);
    }
    let build: Vec<crate::types::DataType> = build_keys.iter().map(|e| e.ty).collect();
    let probe: Vec<crate::types::DataType> = probe_keys.iter().map(|e| e.ty).collect();
    let Some(spec) = join::spec(&build, &probe) else {
        return Ok(None);
    };
    let expected = rows.map_or(UNKNOWN_PROBE_ROWS, |r| r.max(0.0) as u64);
    let bee = match env.statement {
        Some(st) => {
            let key = format!("{}|{}", s.maker, spec.key());
            let mut map = st.joins.lock();
            match map.get(&key) {
                Some(b) if !env.cache.join_outgrown(b, expected, s.maker) => b.clone(),
                _ => {
                    let b = env.cache.join(spec, BeeOwner::Statement(st.id), expected, s.maker).map_err(internal)?;
                    map.insert(key, b.clone());
                    b
                }
            }
        }
        None => env.cache.join(spec, BeeOwner::Query, expected, s.maker).map_err(internal)?,
    };
    Ok(Some(JoinBees(bee)))
}
