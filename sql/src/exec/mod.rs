//! The executor: push-based, vectorized operators running a [`Plan`].
//!
//! Sources (table scans, VALUES) drive: they produce batches of at most
//! [`BATCH_SIZE`] rows and push them into their consumer, a closure
//! (`&mut dyn FnMut(Batch) -> Result<Flow>`). Streaming operators (filter, project,
//! limit, distinct, the probe side of a join) transform each batch and push it on;
//! blocking operators (hash aggregate, sort, the build side of a join, set
//! operations' right side) materialize their input and emit when it ends. A consumer
//! returning [`Flow::Stop`] stops the sources early (LIMIT).
//!
//! Expressions go through [`crate::expr::eval`] / [`crate::expr::eval_predicate`],
//! except plain column references, literals and parameters, which are gathered or
//! broadcast directly.
//!
//! Operators that hold rows account their bytes against
//! [`ExecContext::memory_limit`]; going over is an error, never an abort.

mod agg;
mod apply;
#[doc(hidden)]
pub use agg::bench as agg_bench;
pub mod dml;
mod external_sort;
pub mod interrupt;
mod join;
mod key_filter;
pub mod key_table;
pub mod keys;
mod parallel;
pub mod point;
mod recursive;
mod scan;
mod series;
mod setop;
mod sort;
pub(crate) mod spill;
#[cfg(test)]
mod tests;
pub mod tuple_codec;
mod window;

use std::cell::RefCell;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use rustc_hash::FxHashMap;

use beedb_storage::TupleId;

use crate::error::{Error, Result};
use crate::expr::{EvalContext, Expr, ExprKind, SubqueryKind, SubqueryResult, SubqueryRunner};
use crate::plan::{CteId, Node, Plan, Subplan, WorkTableId};
use crate::types::Value;
use crate::vector::{BATCH_SIZE, Batch, Data, Vector};

pub use interrupt::{Interrupt, InterruptHandle};
pub use scan::{i64_to_tid, tid_to_i64};
pub(crate) use agg::combinable;

/// What an execution needs besides the plan.
#[derive(Clone, Copy)]
pub struct ExecContext<'a> {
    /// A `ReadTxn` or the `WriteTxn` (shared by the threads of a parallel pipeline).
    pub reader: &'a (dyn beedb_storage::PageRead + Sync),
    /// Statement parameters.
    pub params: &'a [Value],
    /// Subplans referenced by subquery ids in expressions.
    pub subqueries: &'a [Subplan],
    /// Bytes an operator may hold.
    pub memory_limit: usize,
    /// EXPLAIN ANALYZE counters, when wanted.
    pub profile: Option<&'a Profile>,
    /// Checked before each batch an operator pushes: cancel and `statement_timeout`.
    pub interrupt: &'a Interrupt,
    /// The sequences `nextval` / `currval` / `setval` reach (the engine's, for the
    /// statement's transaction and session); `None` where none can be (tests).
    pub sequences: Option<&'a dyn Sequences>,
}

/// Sequence functions as a statement's transaction and session see them
/// (implemented by the engine: `engine::sequence`).
pub trait Sequences {
    /// Calls `func` (`nextval`, `currval`, `setval`) with `args` (the sequence's
    /// name first, none of them NULL).
    fn call(&self, func: crate::expr::Func, args: &[Value]) -> Result<Value>;
}

/// Whether a consumer wants more batches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    Continue,
    Stop,
}

/// Counters of one plan node under EXPLAIN ANALYZE.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NodeProfile {
    /// Rows the node output.
    pub rows: u64,
    /// Batches the node output.
    pub batches: u64,
    /// Times the node was started.
    pub loops: u64,
    /// Time spent in the node *and its inputs* (as PostgreSQL reports it), excluding
    /// the time its consumers spent on its output.
    pub time: Duration,
    /// Tuples a scan dropped because a join's key filter said their key cannot match
    /// (`key_filter`), before decoding them.
    pub key_filtered: u64,
    /// Rows the node wrote to temporary files because its state outgrew
    /// `memory_limit` (a row written again by a deeper split counts again).
    pub spilled_rows: u64,
    /// Bytes of those temporary files.
    pub spilled_bytes: u64,
}

/// Per-node counters of one execution, keyed by the node's pre-order index in the
/// plan tree (the root is 0, then its first child's subtree, then the second's).
/// Each subquery plan (`Subplan`) numbers its nodes anew, so it has a profile of its
/// own ([`Profile::subplan`]), summed over all its executions (its root's `loops`
/// is how many times it ran).
#[derive(Debug, Default)]
pub struct Profile {
    nodes: Mutex<FxHashMap<usize, NodeProfile>>,
    /// The subquery plans' profiles by subplan index, shared by the main plan's
    /// profile and every subplan's (a subquery inside a subquery is indexed in the
    /// statement's one list of subplans too).
    subplans: std::sync::Arc<Mutex<FxHashMap<usize, std::sync::Arc<Profile>>>>,
}

impl Profile {
    pub fn new() -> Profile {
        Profile::default()
    }

    /// The profile of subplan `index`, made on its first execution.
    fn subplan_for_run(&self, index: usize) -> std::sync::Arc<Profile> {
        let mut subs = self.subplans.lock();
        subs.entry(index)
            .or_insert_with(|| {
                std::sync::Arc::new(Profile { nodes: Mutex::default(), subplans: self.subplans.clone() })
            })
            .clone()
    }

    /// The profile of subplan `index` (the statement's subquery list), if it ran.
    pub fn subplan(&self, index: usize) -> Option<std::sync::Arc<Profile>> {
        self.subplans.lock().get(&index).cloned()
    }

    /// The counters of node `id` (pre-order index), if it ran.
    pub fn node(&self, id: usize) -> Option<NodeProfile> {
        self.nodes.lock().get(&id).copied()
    }

    fn record(&self, id: usize, rows: u64, batches: u64, time: Duration) {
        self.record_loops(id, rows, 1, time);
        self.nodes.lock().entry(id).or_default().batches += batches;
    }

    /// Tuples scan `id` dropped by join key filters.
    fn record_key_filtered(&self, id: usize, tuples: u64) {
        self.nodes.lock().entry(id).or_default().key_filtered += tuples;
    }

    /// Rows and bytes node `id` wrote to temporary files.
    fn record_spill(&self, id: usize, rows: u64, bytes: u64) {
        let mut m = self.nodes.lock();
        let e = m.entry(id).or_default();
        e.spilled_rows += rows;
        e.spilled_bytes += bytes;
    }

    /// Counters of a node run `loops` times by its parent (an index nested-loop
    /// join's lookups into its right table).
    fn record_loops(&self, id: usize, rows: u64, loops: u64, time: Duration) {
        let mut m = self.nodes.lock();
        let e = m.entry(id).or_default();
        e.rows += rows;
        e.loops += loops;
        e.time += time;
    }
}

/// Number of nodes in the plan tree (for pre-order ids).
pub fn node_count(plan: &Plan) -> usize {
    crate::stack::guarded(|| 1 + plan.children().iter().map(|c| node_count(c)).sum::<usize>())
}

/// Runs `plan`, pushing every output batch to `sink`; `sink` returns `Ok(false)` to
/// stop early.
pub fn run(
    plan: &Plan,
    ctx: &ExecContext,
    sink: &mut dyn FnMut(Batch) -> Result<bool>,
) -> Result<()> {
    let state = StatementState::default();
    let ex = state.exec(ctx, ctx.profile, None);
    ex.node(plan, 0, None, &mut |b| {
        if b.rows() == 0 {
            return Ok(Flow::Continue);
        }
        Ok(if sink(b)? { Flow::Continue } else { Flow::Stop })
    })?;
    Ok(())
}

/// Runs `plan` and returns all rows as values.
pub fn collect(plan: &Plan, ctx: &ExecContext) -> Result<Vec<Vec<Value>>> {
    let mut rows = Vec::new();
    run(plan, ctx, &mut |b| {
        for k in 0..b.rows() {
            rows.push(b.row_values(k));
        }
        Ok(true)
    })?;
    Ok(rows)
}

/// The bigint column a scan with `with_tid` appends, from tuple ids.
pub(crate) fn tid_vector(tids: &[TupleId]) -> Vector {
    Vector::from_data(
        crate::types::DataType::BigInt,
        Data::I64(tids.iter().map(|t| tid_to_i64(*t)).collect()),
        None,
    )
}

pub(crate) type Out<'o> = &'o mut dyn FnMut(Batch) -> Result<Flow>;

/// One execution of a plan (or of a subquery plan, with its own parameters).
/// What one statement's executors share: uncorrelated subqueries' results, the
/// working tables of running recursive unions, the rows of materialized CTEs. Each
/// entry point (`run`, the point path, each thread of a parallel pipeline) owns one
/// and makes its [`Exec`] from it.
#[derive(Default)]
pub(crate) struct StatementState {
    cache: RefCell<FxHashMap<(usize, u8), SubqueryResult>>,
    work_tables: RefCell<FxHashMap<WorkTableId, std::rc::Rc<Vec<Batch>>>>,
    ctes: RefCell<FxHashMap<CteId, std::rc::Rc<Vec<Batch>>>>,
}

impl StatementState {
    /// An executor over this state with `ctx`'s parameters.
    pub(crate) fn exec<'a>(
        &'a self,
        ctx: &'a ExecContext<'a>,
        profile: Option<&'a Profile>,
        worker: Option<&'a parallel::Worker<'a>>,
    ) -> Exec<'a> {
        Exec {
            ctx,
            params: ctx.params,
            cache: &self.cache,
            work_tables: &self.work_tables,
            ctes: &self.ctes,
            profile,
            worker,
            key_filters: RefCell::new(Vec::new()),
            subtree_sizes: RefCell::new(FxHashMap::default()),
        }
    }
}

pub(crate) struct Exec<'a> {
    ctx: &'a ExecContext<'a>,
    params: &'a [Value],
    /// Results of uncorrelated subqueries, for the whole statement.
    cache: &'a RefCell<FxHashMap<(usize, u8), SubqueryResult>>,
    /// The working tables of the recursive unions running now (`recursive.rs`),
    /// shared with subquery executions.
    work_tables: &'a RefCell<FxHashMap<WorkTableId, std::rc::Rc<Vec<Batch>>>>,
    /// The rows of the materialized CTEs read so far (`Node::CteScan`), for the
    /// whole statement, shared with subquery executions.
    ctes: &'a RefCell<FxHashMap<CteId, std::rc::Rc<Vec<Batch>>>>,
    profile: Option<&'a Profile>,
    /// Set when this executor is one of the threads of a parallel pipeline.
    worker: Option<&'a parallel::Worker<'a>>,
    /// The join key filters of the joins whose probe side runs now, for the scans
    /// they name ([`key_filter`]). Per executor: a subquery's plan numbers its nodes
    /// anew.
    key_filters: RefCell<Vec<key_filter::ScanKeyFilter>>,
    /// Sizes of the subtrees this executor has asked for, by the address of their
    /// root ([`Exec::subtree_size`]).
    subtree_sizes: RefCell<FxHashMap<usize, usize>>,
}

impl SubqueryRunner for Exec<'_> {
    fn sequence(&self, func: crate::expr::Func, args: &[Value]) -> Result<Value> {
        match self.ctx.sequences {
            Some(s) => s.call(func, args),
            None => Err(Error::internal("no sequences in this context")),
        }
    }

    fn run(&self, id: usize, kind: &SubqueryKind, correlated: &[Value]) -> Result<SubqueryResult> {
        let sub = self
            .ctx
            .subqueries
            .get(id)
            .ok_or_else(|| Error::internal(format!("no subplan {id}")))?;
        let cache_key = (
            id,
            match kind {
                SubqueryKind::Scalar => 0u8,
                SubqueryKind::Exists => 1,
                SubqueryKind::In { .. } | SubqueryKind::Quantified { .. } => 2,
            },
        );
        if !sub.correlated
            && let Some(r) = self.cache.borrow().get(&cache_key)
        {
            return Ok(r.clone());
        }
        let mut params: Vec<Value> = self.ctx.params.to_vec();
        params.truncate(sub.param_base.min(params.len()));
        params.extend_from_slice(correlated);
        // EXPLAIN ANALYZE: the subplan's nodes count into its own profile.
        let profile = self.profile.map(|p| p.subplan_for_run(id));
        let ex = Exec {
            ctx: self.ctx,
            params: &params,
            cache: self.cache,
            work_tables: self.work_tables,
            ctes: self.ctes,
            profile: profile.as_deref(),
            worker: None,
            key_filters: RefCell::new(Vec::new()),
            subtree_sizes: RefCell::new(FxHashMap::default()),
        };
        let result = match kind {
            SubqueryKind::Exists => {
                let mut found = false;
                ex.node(&sub.plan, 0, None, &mut |b| {
                    if b.rows() > 0 {
                        found = true;
                        return Ok(Flow::Stop);
                    }
                    Ok(Flow::Continue)
                })?;
                SubqueryResult::Exists(found)
            }
            SubqueryKind::Scalar => {
                let mut value = None;
                let mut many = false;
                ex.node(&sub.plan, 0, None, &mut |b| {
                    let n = b.rows();
                    if n == 0 {
                        return Ok(Flow::Continue);
                    }
                    if value.is_some() || n > 1 {
                        many = true;
                        return Ok(Flow::Stop);
                    }
                    value = Some(
                        b.columns
                            .first()
                            .map_or(Value::Null, |c| c.value(b.position(0))),
                    );
                    Ok(Flow::Continue)
                })?;
                if many {
                    return Err(Error::new(
                        crate::error::ErrorKind::Data,
                        "21000",
                        "more than one row returned by a subquery used as an expression",
                    ));
                }
                SubqueryResult::Scalar(value.unwrap_or(Value::Null))
            }
            SubqueryKind::In { .. } | SubqueryKind::Quantified { .. } => {
                // The whole result is held (and cached) for the statement: it counts
                // against memory_limit like any operator's state.
                // A row `(x, y, …) IN (q)` takes one value per operand from each row,
                // flattened row by row.
                let width = match kind {
                    SubqueryKind::In { rest, .. } => 1 + rest.len(),
                    _ => 1,
                };
                let mut values = Vec::new();
                let mut bytes = 0usize;
                ex.node(&sub.plan, 0, None, &mut |b| {
                    let columns = &b.columns[..width.min(b.columns.len())];
                    if !columns.is_empty() {
                        for k in 0..b.rows() {
                            for c in columns {
                                let v = c.value(b.position(k));
                                bytes += std::mem::size_of::<Value>() + v.heap_bytes();
                                values.push(v);
                            }
                        }
                    }
                    ex.check_mem("IN subquery result", bytes)?;
                    Ok(Flow::Continue)
                })?;
                SubqueryResult::Values(values)
            }
        };
        if !sub.correlated {
            self.cache.borrow_mut().insert(cache_key, result.clone());
        }
        Ok(result)
    }
}

/// The error for `op` needing more than `limit` bytes (`memory_limit`): SQLSTATE
/// 53200, with the setting that would let it run.
pub(crate) fn memory_limit_error(op: &str, limit: usize) -> Error {
    let suggest = (limit.saturating_mul(2) / (1024 * 1024)).max(1);
    Error::limit(format!(
        "memory limit exceeded: {op} needs more than {limit} bytes; raise it with SET memory_limit = '{suggest}MB'"
    ))
}

impl<'a> Exec<'a> {
    /// [`node_count`] of `plan`, memoized: a join, set operation or recursive union
    /// numbers its right input after its left input's nodes, and counting them anew
    /// at every level made a chain of n joins O(n²) (a FROM list of 4,000 tables:
    /// seconds). One walk records the size of every node under the one asked for.
    /// Keys are plan addresses, which stay valid because every plan an executor runs
    /// (the statement's and its subqueries') outlives the executor.
    fn subtree_size(&self, plan: &Plan) -> usize {
        fn fill(plan: &Plan, sizes: &mut FxHashMap<usize, usize>) -> usize {
            crate::stack::guarded(|| {
                let n = 1 + plan.children().iter().map(|c| fill(c, sizes)).sum::<usize>();
                sizes.insert(plan as *const Plan as usize, n);
                n
            })
        }
        let key = plan as *const Plan as usize;
        if let Some(&n) = self.subtree_sizes.borrow().get(&key) {
            debug_assert_eq!(n, node_count(plan), "a memoized subtree size of another plan");
            return n;
        }
        fill(plan, &mut self.subtree_sizes.borrow_mut())
    }

    fn eval_ctx(&self) -> EvalContext<'_> {
        EvalContext {
            params: self.params,
            subqueries: self,
        }
    }

    /// `expr` over the live rows of `batch`, densely.
    pub(crate) fn eval(&self, expr: &Expr, batch: &Batch) -> Result<Vector> {
        match &expr.kind {
            ExprKind::Column(i) => {
                let c = batch
                    .columns
                    .get(*i)
                    .ok_or_else(|| Error::internal(format!("column {i} out of range")))?;
                let mut v = match &batch.sel {
                    None => c.clone(),
                    Some(sel) => c.gather(sel),
                };
                v.ty = expr.ty;
                Ok(v)
            }
            ExprKind::Literal(v) => Ok(Vector::constant(expr.ty, v, batch.rows())),
            ExprKind::Param(n) => {
                let v = self
                    .params
                    .get(*n)
                    .ok_or_else(|| Error::internal(format!("no value for parameter ${}", n + 1)))?;
                Ok(Vector::constant(expr.ty, v, batch.rows()))
            }
            _ => crate::expr::eval(expr, batch, &self.eval_ctx()),
        }
    }

    /// The physical positions of `batch` where `pred` is true.
    pub(crate) fn pred(&self, pred: &Expr, batch: &Batch) -> Result<Vec<u32>> {
        let live = || {
            (0..batch.rows())
                .map(|k| batch.position(k) as u32)
                .collect()
        };
        match &pred.kind {
            ExprKind::Literal(Value::Boolean(true)) => Ok(live()),
            ExprKind::Literal(Value::Boolean(false) | Value::Null) => Ok(Vec::new()),
            ExprKind::Column(i) => {
                let c = &batch.columns[*i];
                let Data::Bool(d) = &c.data else {
                    return Err(Error::internal("predicate column is not boolean"));
                };
                Ok((0..batch.rows())
                    .map(|k| batch.position(k))
                    .filter(|&p| d[p] && !c.is_null(p))
                    .map(|p| p as u32)
                    .collect())
            }
            _ => crate::expr::eval_predicate(pred, batch, &self.eval_ctx()),
        }
    }

    /// Evaluates a constant expression (no columns) to a value.
    pub(crate) fn eval_const(&self, expr: &Expr) -> Result<Value> {
        // A literal or parameter already of the expression's type is the value
        // itself (an index key, per lookup): no one-row vector made and read back.
        let direct = match &expr.kind {
            ExprKind::Literal(v) => Some(v),
            ExprKind::Param(n) => self.params.get(*n),
            _ => None,
        };
        if let Some(v) = direct
            && !v.is_null()
            && v.data_type() == Some(expr.ty)
        {
            return Ok(v.clone());
        }
        let v = self.eval(expr, &Batch::empty_rows(1))?;
        Ok(v.value(0))
    }

    /// Runs `f` with `filters` registered for the scans they name (the probe side of
    /// the join that made them), and unregisters them after.
    fn with_key_filters<R>(&self, filters: &[key_filter::ScanKeyFilter], f: impl FnOnce() -> R) -> R {
        if filters.is_empty() {
            return f();
        }
        let before = self.key_filters.borrow().len();
        self.key_filters.borrow_mut().extend_from_slice(filters);
        let r = f();
        self.key_filters.borrow_mut().truncate(before);
        r
    }

    pub(crate) fn mem_error(&self, op: &str) -> Error {
        memory_limit_error(op, self.ctx.memory_limit)
    }

    /// Counts rows and bytes node `id` wrote to temporary files (EXPLAIN ANALYZE).
    pub(crate) fn record_spill(&self, id: usize, rows: u64, bytes: u64) {
        if let Some(p) = self.profile {
            p.record_spill(id, rows, bytes);
        }
    }

    pub(crate) fn check_mem(&self, op: &str, bytes: usize) -> Result<()> {
        if bytes > self.ctx.memory_limit {
            return Err(self.mem_error(op));
        }
        Ok(())
    }

    /// Runs node `plan` (pre-order id `id`), pushing its output to `out`. Returns
    /// `Stop` when `out` asked to stop. `top_n`, set by a Limit, is how many rows of
    /// this node's output the consumer will read at most: a Sort keeps only those
    /// (top-N), an index scan reads its first run that small, and a Project passes
    /// it on (it keeps every row); other nodes ignore it.
    pub(crate) fn node(
        &self,
        plan: &Plan,
        id: usize,
        top_n: Option<usize>,
        out: Out,
    ) -> Result<Flow> {
        // Every batch any operator pushes checks for a cancel request: a join can
        // emit many batches per input batch, so checking at the sources is not enough.
        // Plans are as deep as the statement (a 2,500-table join): building a node and
        // pushing each batch up one level are both guarded steps (see `crate::stack`).
        let out = &mut |b: Batch| {
            crate::stack::guarded(|| {
                self.ctx.interrupt.check()?;
                out(b)
            })
        };
        let Some(p) = self.profile else {
            return crate::stack::guarded(|| self.node_inner(plan, id, top_n, out));
        };
        let start = Instant::now();
        let mut downstream = Duration::ZERO;
        let (mut rows, mut batches) = (0u64, 0u64);
        let r = crate::stack::guarded(|| self.node_inner(plan, id, top_n, &mut |b: Batch| {
            rows += b.rows() as u64;
            batches += 1;
            let t = Instant::now();
            let f = out(b);
            downstream += t.elapsed();
            f
        }));
        p.record(
            id,
            rows,
            batches,
            start.elapsed().saturating_sub(downstream),
        );
        r
    }

    fn node_inner(&self, plan: &Plan, id: usize, top_n: Option<usize>, out: Out) -> Result<Flow> {
        match &plan.node {
            Node::TableScan {
                table,
                columns,
                filter,
                access,
                with_tid,
                bees,
            } => scan::table_scan(
                self,
                id,
                table,
                columns,
                filter.as_ref(),
                access,
                *with_tid,
                bees.as_ref(),
                top_n,
                out,
            ),
            Node::Values { rows } => self.values(plan, rows, out),
            Node::Filter { input, predicate } => self.node(input, id + 1, None, &mut |mut b| {
                let sel = self.pred(predicate, &b)?;
                if sel.is_empty() {
                    return Ok(Flow::Continue);
                }
                b.sel = Some(sel);
                out(b)
            }),
            Node::Project { input, exprs } => self.node(input, id + 1, top_n, &mut |b| {
                let n = b.rows();
                if n == 0 {
                    return Ok(Flow::Continue);
                }
                let cols = exprs
                    .iter()
                    .map(|e| self.eval(e, &b))
                    .collect::<Result<Vec<_>>>()?;
                out(if cols.is_empty() {
                    Batch::empty_rows(n)
                } else {
                    Batch::new(cols, n)
                })
            }),
            Node::Join { kind, method, .. } => {
                // A join builds on its right input, except semi and anti joins the
                // optimizer gave `build: Left` (their right input is the larger).
                let build_left = matches!(method, crate::plan::JoinMethod::Hash { build: crate::plan::JoinSide::Left, .. });
                if build_left && !matches!(kind, crate::plan::JoinKind::Semi | crate::plan::JoinKind::Anti) {
                    return Err(crate::error::Error::not_supported(
                        "a hash join building on its left input is supported for semi and anti joins only",
                    ));
                }
                let spec = join::JoinSpec::of(plan).ok_or_else(|| Error::internal("a join node without its join"))?;
                match method {
                    crate::plan::JoinMethod::IndexNestedLoop { index } => {
                        join::index_nested_loop(self, plan, id, spec, *index, out)
                    }
                    _ if build_left => join::left_build(self, plan, id, &spec, out),
                    _ => join::join(self, plan, id, spec, out),
                }
            }
            Node::Aggregate {
                input,
                groups,
                sets,
                aggs,
                bee,
            } => agg::aggregate(self, plan, id, input, groups, sets, aggs, bee.as_ref(), out),
            Node::Sort { input, keys, bee } => sort::sort(self, id, input, keys, bee.as_ref(), top_n, out),
            Node::Limit {
                input,
                limit,
                offset,
            } => self.limit(input, id, *limit, *offset, out),
            Node::Distinct { input } => setop::distinct(self, plan, id, input, out),
            Node::Window { input, specs, calls } => window::window(self, plan, id, input, specs, calls, out),
            Node::SetOp {
                op,
                all,
                left,
                right,
            } => setop::set_op(self, plan, id, *op, *all, left, right, out),
            Node::RecursiveUnion {
                work_table,
                distinct,
                base,
                recursive,
                ..
            } => recursive::recursive_union(
                self,
                plan,
                id,
                *work_table,
                *distinct,
                base,
                recursive,
                out,
            ),
            Node::WorkTableScan { work_table, name } => {
                recursive::work_table_scan(self, *work_table, name, out)
            }
            Node::Series { args } => series::generate_series(self, plan, args, out),
            Node::CteScan { cte, name, plan: inner } => self.cte_scan(id, *cte, name, inner, out),
            Node::Apply { input, right, params, param_base, left_join } => {
                apply::apply(self, plan, id, input, right, params, *param_base, *left_join, out)
            }
        }
    }

    /// A materialized CTE's rows: run `inner` (node `id + 1`) into a buffer the first
    /// time any reader of `cte` runs, then push the buffer's batches.
    fn cte_scan(&self, id: usize, cte: CteId, name: &str, inner: &Plan, out: Out) -> Result<Flow> {
        // Not borrowed while the CTE runs: its plan may read other CTEs.
        let held = self.ctes.borrow().get(&cte).cloned();
        let rows = match held {
            Some(rows) => rows,
            None => {
                let types = inner.types();
                let (mut batches, mut bytes) = (Vec::new(), 0usize);
                self.node(inner, id + 1, None, &mut |b| {
                    if b.rows() == 0 {
                        return Ok(Flow::Continue);
                    }
                    let b = dense(b, &types);
                    bytes += b.heap_bytes();
                    batches.push(b);
                    self.check_mem(&format!("materialized CTE \"{name}\""), bytes)?;
                    Ok(Flow::Continue)
                })?;
                let rows = std::rc::Rc::new(batches);
                self.ctes.borrow_mut().insert(cte, rows.clone());
                rows
            }
        };
        for b in rows.iter() {
            if out(b.clone())? == Flow::Stop {
                return Ok(Flow::Stop);
            }
        }
        Ok(Flow::Continue)
    }

    fn values(&self, plan: &Plan, rows: &[Vec<Expr>], out: Out) -> Result<Flow> {
        let types = plan.types();
        let one = Batch::empty_rows(1);
        let mut cols: Vec<Vector> = types
            .iter()
            .map(|t| Vector::new(*t, rows.len().min(BATCH_SIZE)))
            .collect();
        let mut n = 0;
        for row in rows {
            for (k, e) in row.iter().enumerate() {
                let v = self.eval(e, &one)?;
                cols[k].push_from(&v, 0);
            }
            n += 1;
            if n == BATCH_SIZE {
                let full = std::mem::replace(
                    &mut cols,
                    types.iter().map(|t| Vector::new(*t, BATCH_SIZE)).collect(),
                );
                if out(make_batch(full, n))? == Flow::Stop {
                    return Ok(Flow::Stop);
                }
                n = 0;
            }
        }
        if n > 0 {
            return out(make_batch(cols, n));
        }
        Ok(Flow::Continue)
    }

    fn limit(
        &self,
        input: &Plan,
        id: usize,
        limit: Option<u64>,
        offset: u64,
        out: Out,
    ) -> Result<Flow> {
        if limit == Some(0) {
            return Ok(Flow::Continue);
        }
        let top_n = limit.map(|l| l.saturating_add(offset).min(usize::MAX as u64) as usize);
        let mut skip = offset;
        let mut left = limit.unwrap_or(u64::MAX);
        let mut stopped = false;
        self.node(input, id + 1, top_n, &mut |mut b| {
            let n = b.rows() as u64;
            if skip >= n {
                skip -= n;
                return Ok(Flow::Continue);
            }
            let take = (n - skip).min(left);
            if skip > 0 || take < n {
                let sel: Vec<u32> = (skip..skip + take)
                    .map(|k| b.position(k as usize) as u32)
                    .collect();
                b.sel = Some(sel);
            }
            skip = 0;
            left -= take;
            if out(b)? == Flow::Stop {
                stopped = true;
                return Ok(Flow::Stop);
            }
            Ok(if left == 0 {
                Flow::Stop
            } else {
                Flow::Continue
            })
        })?;
        Ok(if stopped { Flow::Stop } else { Flow::Continue })
    }
}

/// A batch of `n` rows from `cols` (no columns: `n` empty rows).
pub(crate) fn make_batch(cols: Vec<Vector>, n: usize) -> Batch {
    if cols.is_empty() {
        Batch::empty_rows(n)
    } else {
        Batch::new(cols, n)
    }
}

/// The live rows of `batch`, densely, with the column types set to `types`.
pub(crate) fn dense(batch: Batch, types: &[crate::types::DataType]) -> Batch {
    let mut b = batch.compact();
    for (c, t) in b.columns.iter_mut().zip(types) {
        c.ty = *t;
    }
    b
}

/// Appends the rows of `src` at `positions` (NULL for `None`) to `dst`.
pub(crate) fn gather_opt(
    src: &Vector,
    positions: &[Option<u32>],
    ty: crate::types::DataType,
) -> Vector {
    let mut out = Vector::new(ty, positions.len());
    for p in positions {
        match p {
            Some(p) => out.push_from(src, *p as usize),
            None => out.push_null(),
        }
    }
    out
}
