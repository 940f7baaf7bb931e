//! Query plans: the tree of operators the binder produces and the planner refines
//! (access paths, join keys), and that the executor runs.
//!
//! Every node knows its output [`Plan::schema`]; expressions inside a node refer to
//! the columns of its input by position (for joins: left columns, then right).

pub mod explain;
pub mod key_source;
pub mod pipeline;
pub mod schema;

pub use schema::Schema;

use std::sync::Arc;

use crate::catalog::TableDef;
use crate::expr::Expr;
use crate::types::{DataType, Value};

/// One output column of a plan node.
#[derive(Debug, Clone, PartialEq)]
pub struct OutputColumn {
    pub name: String,
    pub ty: DataType,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JoinKind {
    Inner,
    Left,
    Right,
    Full,
    /// Left rows with at least one match (the output has only the left columns).
    Semi,
    /// Left rows with no match (the output has only the left columns).
    Anti,
    /// Every left row once, with one more column: a non-NULL boolean, whether the row
    /// has at least one match (DuckDB's "mark join"). Decorrelation makes it for an
    /// EXISTS or IN subquery that is not a top-level conjunct of a filter (under OR,
    /// NOT, CASE, in a select list): the subquery becomes that column.
    Mark,
}

impl JoinKind {
    /// Whether the join outputs only its left rows (each once, unchanged), so its
    /// right input is read only for matching: semi, anti and mark joins.
    pub fn is_left_only(self) -> bool {
        matches!(self, JoinKind::Semi | JoinKind::Anti | JoinKind::Mark)
    }

    /// Whether a left row without a match is dropped (inner, right and semi
    /// joins): an empty right side gives no rows.
    pub fn outputs_matched_left_only(self) -> bool {
        matches!(self, JoinKind::Inner | JoinKind::Right | JoinKind::Semi)
    }

    /// Whether right rows without a match are output (right and full joins).
    pub fn outputs_unmatched_right(self) -> bool {
        matches!(self, JoinKind::Right | JoinKind::Full)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetOpKind {
    Union,
    Intersect,
    Except,
}

/// Aggregate functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AggFunc {
    /// `count(*)`
    CountStar,
    Count,
    Sum,
    Avg,
    Min,
    Max,
    /// `string_agg(text, delimiter)`: the non-NULL values in input order.
    StringAgg,
    /// `bool_and` (and its SQL-standard name `every`).
    BoolAnd,
    BoolOr,
    /// `stddev` / `stddev_samp`; numeric for integer and numeric input, double for floats.
    StddevSamp,
    StddevPop,
    /// `variance` / `var_samp`.
    VarSamp,
    VarPop,
    /// Two-argument statistics over (Y, X) pairs with neither NULL, in double precision.
    CovarPop,
    CovarSamp,
    Corr,
    RegrSlope,
    RegrIntercept,
    RegrCount,
    RegrR2,
    RegrAvgX,
    RegrAvgY,
    RegrSxx,
    RegrSyy,
    RegrSxy,
    /// An aggregate the application registered: the function and its arguments are
    /// in [`AggCall::udf`].
    Udf,
}

impl AggFunc {
    /// Whether this is one of the two-argument statistics over (Y, X) pairs.
    pub fn is_pair_statistic(self) -> bool {
        matches!(
            self,
            AggFunc::CovarPop
                | AggFunc::CovarSamp
                | AggFunc::Corr
                | AggFunc::RegrSlope
                | AggFunc::RegrIntercept
                | AggFunc::RegrCount
                | AggFunc::RegrR2
                | AggFunc::RegrAvgX
                | AggFunc::RegrAvgY
                | AggFunc::RegrSxx
                | AggFunc::RegrSyy
                | AggFunc::RegrSxy
        )
    }

    /// The SQL name (EXPLAIN output).
    pub fn name(self) -> &'static str {
        match self {
            AggFunc::CountStar | AggFunc::Count => "count",
            AggFunc::Sum => "sum",
            AggFunc::Avg => "avg",
            AggFunc::Min => "min",
            AggFunc::Max => "max",
            AggFunc::StringAgg => "string_agg",
            AggFunc::BoolAnd => "bool_and",
            AggFunc::BoolOr => "bool_or",
            AggFunc::StddevSamp => "stddev_samp",
            AggFunc::StddevPop => "stddev_pop",
            AggFunc::VarSamp => "var_samp",
            AggFunc::VarPop => "var_pop",
            AggFunc::CovarPop => "covar_pop",
            AggFunc::CovarSamp => "covar_samp",
            AggFunc::Corr => "corr",
            AggFunc::RegrSlope => "regr_slope",
            AggFunc::RegrIntercept => "regr_intercept",
            AggFunc::RegrCount => "regr_count",
            AggFunc::RegrR2 => "regr_r2",
            AggFunc::RegrAvgX => "regr_avgx",
            AggFunc::RegrAvgY => "regr_avgy",
            AggFunc::RegrSxx => "regr_sxx",
            AggFunc::RegrSyy => "regr_syy",
            AggFunc::RegrSxy => "regr_sxy",
            AggFunc::Udf => "udf",
        }
    }
}

/// One aggregate computed by an [`Node::Aggregate`].
#[derive(Debug, Clone, PartialEq)]
pub struct AggCall {
    pub func: AggFunc,
    /// The argument (over the aggregate's input); `None` for `count(*)`.
    pub arg: Option<Expr>,
    /// The second argument of two-argument aggregates (`string_agg`'s delimiter, the
    /// X of `covar_pop(Y, X)` and the other statistics of pairs).
    pub arg2: Option<Expr>,
    pub distinct: bool,
    /// `ORDER BY` inside the call (over the aggregate's input): the order the
    /// accumulator sees its group's rows in. Kept only where the result depends on
    /// it (`string_agg`); empty otherwise.
    pub order: Vec<SortKey>,
    /// The result type.
    pub ty: DataType,
    /// For [`AggFunc::Udf`]: the function and all its arguments (`arg` and `arg2`
    /// are then `None`).
    pub udf: Option<Box<UdfAggCall>>,
}

/// A call of an application-defined aggregate.
#[derive(Debug, Clone, PartialEq)]
pub struct UdfAggCall {
    pub function: crate::expr::udf::AggregateUdf,
    pub args: Vec<Expr>,
}

impl AggCall {
    /// Every argument expression (the ORDER BY keys included).
    pub fn args(&self) -> impl Iterator<Item = &Expr> {
        self.arg
            .iter()
            .chain(&self.arg2)
            .chain(self.udf.iter().flat_map(|u| &u.args))
            .chain(self.order.iter().map(|k| &k.expr))
    }

    pub fn args_mut(&mut self) -> impl Iterator<Item = &mut Expr> {
        self.arg
            .iter_mut()
            .chain(self.arg2.iter_mut())
            .chain(self.udf.iter_mut().flat_map(|u| u.args.iter_mut()))
            .chain(self.order.iter_mut().map(|k| &mut k.expr))
    }

    /// The name EXPLAIN shows.
    pub fn name(&self) -> &str {
        match &self.udf {
            Some(u) => &u.function.name,
            None => self.func.name(),
        }
    }
}

/// Window functions (`f(…) OVER (…)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WindowFunc {
    RowNumber,
    Rank,
    DenseRank,
    PercentRank,
    CumeDist,
    /// `ntile(n)`
    Ntile,
    /// `lag(x [, offset [, default]])`
    Lag,
    Lead,
    FirstValue,
    LastValue,
    /// `nth_value(x, n)`
    NthValue,
    /// An aggregate over the window frame.
    Agg(AggFunc),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameUnits {
    Rows,
    Range,
    Groups,
}

/// One end of a window frame.
#[derive(Debug, Clone, PartialEq)]
pub enum FrameBound {
    UnboundedPreceding,
    /// `offset PRECEDING`: `offset` is a constant (rows or groups: bigint). In RANGE
    /// mode `range_key` is the farthest ORDER BY value the frame reaches (the key
    /// minus the offset when ascending, plus it when descending), over the input.
    Preceding { offset: Expr, range_key: Option<Expr> },
    CurrentRow,
    Following { offset: Expr, range_key: Option<Expr> },
    UnboundedFollowing,
}

#[derive(Debug, Clone, PartialEq)]
pub struct WindowFrame {
    pub units: FrameUnits,
    pub start: FrameBound,
    pub end: FrameBound,
}

/// `OVER (PARTITION BY … ORDER BY … frame)`, over the window node's input.
#[derive(Debug, Clone, PartialEq)]
pub struct WindowSpec {
    pub partition: Vec<Expr>,
    pub order: Vec<SortKey>,
    pub frame: WindowFrame,
}

/// One window function computed by a [`Node::Window`].
#[derive(Debug, Clone, PartialEq)]
pub struct WindowCall {
    pub func: WindowFunc,
    /// Arguments over the window node's input.
    pub args: Vec<Expr>,
    /// Index into the node's `specs`.
    pub spec: usize,
    /// The result type.
    pub ty: DataType,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SortKey {
    pub expr: Expr,
    pub desc: bool,
    pub nulls_first: bool,
}

/// How a table scan reaches its rows.
#[derive(Debug, Clone, PartialEq)]
pub enum Access {
    /// Every page of the heap.
    Heap,
    /// A B+tree: rows whose leading key columns equal `eq` and whose next column lies
    /// within `lower`/`upper`. The bound expressions are constants or parameters.
    /// Rows come in key order (NULLs last), descending with `backward`: an ORDER BY
    /// the index serves needs no sort (`optimizer/index_order.rs`).
    Index {
        index: usize,
        eq: Vec<Expr>,
        lower: Option<(Expr, bool)>,
        upper: Option<(Expr, bool)>,
        /// The next column's NULL keys are left out (the filter has `IS NOT NULL` on
        /// it); implied by `lower` or `upper`.
        skip_nulls: bool,
        backward: bool,
        /// `next column IN (any…)`: when not empty, the scan looks each distinct
        /// non-NULL value up in turn (in key order, reversed with `backward`) as one
        /// more equality after `eq`, and `lower`/`upper` are unused.
        any: Vec<Expr>,
    },
}

/// The optimizer's estimates for one plan node, which EXPLAIN prints. Advisory: the
/// executor never relies on them for correctness.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Estimate {
    /// Rows the node is expected to produce (per execution).
    pub rows: f64,
    /// Total cost of producing them, the node's inputs included, in the cost model's
    /// units (see `optimizer/cost.rs`).
    pub cost: f64,
}

/// The input of a hash join whose rows go into the hash table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JoinSide {
    Left,
    Right,
}

/// How a join finds its matching pairs: the optimizer's physical choice, which the
/// executor follows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JoinMethod {
    /// Every left row is paired with every right row and `on` decides. Used when the
    /// join has no equality keys (non-equi joins, cross products); `left_keys` and
    /// `right_keys` are empty.
    NestedLoop,
    /// A hash table on the `build` input's key values, probed with the other input's
    /// rows; `on` is checked on each pair whose keys are equal. `left_keys` and
    /// `right_keys` are non-empty. The optimizer puts the smaller input on the right,
    /// swapping inputs where the join kind allows, and builds there; `build: Left` is
    /// for semi and anti joins whose right input is much the larger (the executor
    /// holds and marks the left rows, `exec::join::left_build`, and refuses it for
    /// other kinds).
    ///
    /// With `key_filter` (rule `optimizer_join_filter`, for a join that builds on its
    /// right input and drops the probe rows without a match), the executor hands the
    /// build's keys to the heap scans its probe keys come from
    /// ([`key_source::key_source`]): such a scan tests each tuple's key column before
    /// it decodes the rest (`exec::key_filter`).
    ///
    /// `bee` is the join bee that probes the table (`bee_join`, attached with the
    /// other bees after optimization: `bees::attach`).
    Hash { build: JoinSide, key_filter: bool, bee: Option<crate::bees::JoinBees> },
    /// For each left row, the right input's table is looked up through its index
    /// `index`: `right_keys` are columns of the right [`Node::TableScan`] that are the
    /// index's leading columns, in index order, and `left_keys` give their values.
    /// The right scan's filter and `on` are checked on each row found. The right
    /// scan node is not run as such (its `access` names the index, for EXPLAIN).
    /// Inner, left, semi and anti joins only.
    IndexNestedLoop { index: usize },
}

/// A plan node, its output columns and the optimizer's estimates.
#[derive(Debug, PartialEq)]
pub struct Plan {
    pub node: Node,
    /// Shared with the inputs' where it extends them (a join's): see [`schema`].
    pub schema: Schema,
    /// Set by the optimizer's last pass (`None` on plans the optimizer has not seen).
    pub est: Option<Estimate>,
    /// Threads that run this node's input (`optimizer/parallel.rs`): more than one on
    /// an Aggregate whose input is a pipeline over a large heap scan, which each
    /// thread drives over its own share of the pages (`exec/parallel.rs`), and on a hash
    /// Join whose build (right) input is one; 1 elsewhere.
    pub workers: usize,
}

/// Cloned on a guarded stack: a plan may be thousands of nodes deep (a cached plan is
/// cloned to attach each execution's bees).
impl Clone for Plan {
    fn clone(&self) -> Plan {
        crate::stack::guarded(|| Plan {
            node: self.node.clone(),
            schema: self.schema.clone(),
            est: self.est,
            workers: self.workers,
        })
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    /// Rows of a table: the table columns `columns` (in that order), then, if
    /// `with_tid`, the tuple id as a `bigint` (for UPDATE and DELETE). `filter` is over
    /// those output columns.
    TableScan {
        table: Arc<TableDef>,
        columns: Vec<usize>,
        filter: Option<Expr>,
        access: Access,
        with_tid: bool,
        /// The bees the scan uses, decided after planning ([`crate::bees::attach`]);
        /// `None` = the generic decoder and evaluator.
        bees: Option<crate::bees::ScanBees>,
    },
    /// Constant rows (VALUES, SELECT without FROM, system tables). Expressions may use
    /// parameters and subqueries but no columns.
    Values { rows: Vec<Vec<Expr>> },
    Filter { input: Box<Plan>, predicate: Expr },
    Project { input: Box<Plan>, exprs: Vec<Expr> },
    /// `on` is the join condition over left ++ right columns; `left_keys`/`right_keys`
    /// are equality keys the optimizer extracted (over each side's own columns) so the
    /// executor can hash; `on` then holds only the rest. `method` is how the executor
    /// joins (the binder leaves `NestedLoop`; the optimizer's last pass sets it).
    Join {
        left: Box<Plan>,
        right: Box<Plan>,
        kind: JoinKind,
        on: Option<Expr>,
        left_keys: Vec<Expr>,
        right_keys: Vec<Expr>,
        method: JoinMethod,
    },
    /// Output: the group expressions, then the aggregates. With grouping sets
    /// (`GROUPING SETS`, `ROLLUP`, `CUBE`), `sets` lists each set's group
    /// expressions (indexes into `groups`, duplicates of whole sets kept); a row of a
    /// set has NULL for the group expressions it leaves out, and the output has one
    /// more column between the groups and the aggregates: the set's index in `sets`
    /// (an integer), from which `grouping(…)` is computed. Empty `sets`: plain
    /// GROUP BY over all `groups`.
    /// `bee`: the aggregate bee that groups and updates in one pass, decided after
    /// planning ([`crate::bees::attach`]); `None` = the generic path.
    Aggregate {
        input: Box<Plan>,
        groups: Vec<Expr>,
        sets: Vec<Vec<usize>>,
        aggs: Vec<AggCall>,
        bee: Option<crate::bees::AggBees>,
    },
    /// `bee`: the sort bee that orders the rows, decided after planning
    /// ([`crate::bees::attach`]); `None` = the generic comparator.
    Sort { input: Box<Plan>, keys: Vec<SortKey>, bee: Option<crate::bees::SortBees> },
    Limit {
        input: Box<Plan>,
        limit: Option<u64>,
        offset: u64,
    },
    Distinct { input: Box<Plan> },
    /// Output: the input columns, then one column per call. Rows come out ordered
    /// by the last spec's partition and order keys.
    Window {
        input: Box<Plan>,
        specs: Vec<WindowSpec>,
        calls: Vec<WindowCall>,
    },
    SetOp {
        op: SetOpKind,
        all: bool,
        left: Box<Plan>,
        right: Box<Plan>,
    },
    /// `WITH RECURSIVE name AS (base UNION [ALL] recursive)`: runs `base`, then
    /// `recursive` again and again, each time over the rows the previous round
    /// produced (its [`Node::WorkTableScan`] of the same `work_table`), until a
    /// round produces no rows; outputs every round's rows. With `distinct` (UNION)
    /// a row already output anywhere is dropped, so a cycle ends.
    RecursiveUnion {
        work_table: WorkTableId,
        /// The CTE's name, for EXPLAIN and errors.
        name: String,
        distinct: bool,
        base: Box<Plan>,
        recursive: Box<Plan>,
    },
    /// The recursive term's reference to its CTE: the rows of the enclosing
    /// [`Node::RecursiveUnion`]'s previous round. The optimizer treats it as an
    /// opaque relation (as it treats `Values`).
    WorkTableScan { work_table: WorkTableId, name: String },
    /// `generate_series(start, stop, step)` in FROM: a leaf producing the series in
    /// batches as it goes (never held whole). The arguments are evaluated once
    /// (constants, parameters or outer references); the column's type (integer,
    /// bigint, numeric or timestamp, the step then an interval) is the schema's.
    Series { args: Vec<Expr> },
    /// A reference to a materialized CTE (`WITH name AS [MATERIALIZED] (…)`
    /// referenced more than once, or forced): the first execution of any reference
    /// to `cte` in a statement runs `plan` and buffers its rows (counted against
    /// `memory_limit`); every reference, that one included, then reads the buffer.
    /// Each reference holds the same plan (the optimizer treats every copy alike,
    /// and never narrows or filters it from outside), so whichever runs first gives
    /// every reader the same rows.
    CteScan { cte: CteId, name: String, plan: Box<Plan> },
    /// A per-row LATERAL item (a dependent join): for each row of `input`, `params`
    /// are evaluated on it and `right` runs with them as its parameters
    /// `param_base`, `param_base + 1`, … (the outer references a LATERAL subquery or
    /// function made); the output is the input row followed by each row `right`
    /// gives, and with `left_join` the input row with NULLs when it gives none.
    /// Rows with equal `params` in a batch run `right` once. The binder makes it for
    /// what cannot become a join (`Binder::bind_lateral`); the optimizer orders and
    /// narrows neither side across it.
    Apply { input: Box<Plan>, right: Box<Plan>, params: Vec<Expr>, param_base: usize, left_join: bool },
}

/// Names a materialized CTE of a statement: the [`Node::CteScan`]s that read it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CteId(pub usize);

/// Names the working table a [`Node::RecursiveUnion`] shares with the
/// [`Node::WorkTableScan`]s of its recursive term; unique per CTE in a statement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct WorkTableId(pub usize);

impl Plan {
    /// `left × right`: an inner nested-loop join without a condition, whose rows are
    /// `left`'s columns then `right`'s.
    pub fn cross_join(left: Plan, right: Plan) -> Plan {
        Plan::inner_join(left, right, None)
    }

    /// An inner nested-loop join of `left` and `right` on `on` (over `left`'s columns
    /// then `right`'s), before the optimizer extracts keys and chooses its method.
    pub fn inner_join(left: Plan, right: Plan, on: Option<Expr>) -> Plan {
        let schema = left.schema.concat(&right.schema);
        Plan::new(
            Node::Join {
                left: Box::new(left),
                right: Box::new(right),
                kind: JoinKind::Inner,
                on,
                left_keys: vec![],
                right_keys: vec![],
                method: JoinMethod::NestedLoop,
            },
            schema,
        )
    }

    pub fn new(node: Node, schema: impl Into<Schema>) -> Plan {
        Plan { node, schema: schema.into(), est: None, workers: 1 }
    }

    pub fn types(&self) -> Vec<DataType> {
        self.schema.iter().map(|c| c.ty).collect()
    }

    /// A plan producing one row with no columns (`SELECT 1` has it as input).
    pub fn one_row() -> Plan {
        Plan::new(Node::Values { rows: vec![vec![]] }, vec![])
    }

    pub fn children(&self) -> Vec<&Plan> {
        match &self.node {
            Node::TableScan { .. } | Node::Values { .. } | Node::WorkTableScan { .. } | Node::Series { .. } => vec![],
            Node::Filter { input, .. }
            | Node::Project { input, .. }
            | Node::Aggregate { input, .. }
            | Node::Sort { input, .. }
            | Node::Limit { input, .. }
            | Node::Window { input, .. }
            | Node::Distinct { input }
            | Node::CteScan { plan: input, .. } => vec![input],
            Node::Join { left, right, .. } | Node::SetOp { left, right, .. } => {
                vec![left, right]
            }
            Node::RecursiveUnion { base, recursive, .. } => vec![base, recursive],
            Node::Apply { input, right, .. } => vec![input, right],
        }
    }

    /// Calls `f` on every expression of this node and of its inputs (the top-level
    /// expressions; `f` descends into them itself). Plans as deep as the input makes
    /// them (a chain of 5,000 joins) are walked on a guarded stack.
    pub fn for_each_expr_mut(&mut self, f: &mut dyn FnMut(&mut Expr)) {
        self.for_each_own_expr_mut(f);
        for c in self.children_mut() {
            crate::stack::guarded(|| c.for_each_expr_mut(f));
        }
    }

    /// Calls `f` on every expression of this node (not its children's).
    pub fn for_each_own_expr_mut(&mut self, f: &mut dyn FnMut(&mut Expr)) {
        match &mut self.node {
            Node::TableScan { filter, access, .. } => {
                filter.iter_mut().for_each(&mut *f);
                if let Access::Index { eq, lower, upper, any, .. } = access {
                    eq.iter_mut().for_each(&mut *f);
                    any.iter_mut().for_each(&mut *f);
                    for (b, _) in lower.iter_mut().chain(upper.iter_mut()) {
                        f(b);
                    }
                }
            }
            Node::Values { rows } => rows.iter_mut().flatten().for_each(&mut *f),
            Node::Filter { predicate, .. } => f(predicate),
            Node::Project { exprs, .. } => exprs.iter_mut().for_each(&mut *f),
            Node::Join { on, left_keys, right_keys, .. } => {
                on.iter_mut()
                    .chain(left_keys.iter_mut())
                    .chain(right_keys.iter_mut())
                    .for_each(&mut *f);
            }
            Node::Aggregate { groups, aggs, .. } => {
                groups.iter_mut().for_each(&mut *f);
                aggs.iter_mut().flat_map(|a| a.args_mut()).for_each(&mut *f);
            }
            Node::Sort { keys, .. } => keys.iter_mut().for_each(|k| f(&mut k.expr)),
            Node::Window { specs, calls, .. } => for_each_window_expr_mut(specs, calls, f),
            Node::Series { args } => args.iter_mut().for_each(&mut *f),
            Node::Apply { params, .. } => params.iter_mut().for_each(&mut *f),
            Node::Limit { .. }
            | Node::Distinct { .. }
            | Node::SetOp { .. }
            | Node::RecursiveUnion { .. }
            | Node::WorkTableScan { .. }
            | Node::CteScan { .. } => {}
        }
    }

    pub fn children_mut(&mut self) -> Vec<&mut Plan> {
        match &mut self.node {
            Node::TableScan { .. } | Node::Values { .. } | Node::WorkTableScan { .. } | Node::Series { .. } => vec![],
            Node::Filter { input, .. }
            | Node::Project { input, .. }
            | Node::Aggregate { input, .. }
            | Node::Sort { input, .. }
            | Node::Limit { input, .. }
            | Node::Window { input, .. }
            | Node::Distinct { input }
            | Node::CteScan { plan: input, .. } => vec![input],
            Node::Join { left, right, .. } | Node::SetOp { left, right, .. } => {
                vec![left, right]
            }
            Node::RecursiveUnion { base, recursive, .. } => vec![base, recursive],
            Node::Apply { input, right, .. } => vec![input, right],
        }
    }
}

/// Calls `f` on every expression of a [`Node::Window`]: partition and order keys,
/// frame offsets and their RANGE keys, and the calls' arguments.
pub fn for_each_window_expr_mut(specs: &mut [WindowSpec], calls: &mut [WindowCall], f: &mut dyn FnMut(&mut Expr)) {
    for s in specs {
        s.partition.iter_mut().for_each(&mut *f);
        s.order.iter_mut().for_each(|k| f(&mut k.expr));
        for b in [&mut s.frame.start, &mut s.frame.end] {
            if let FrameBound::Preceding { offset, range_key } | FrameBound::Following { offset, range_key } = b {
                f(offset);
                range_key.iter_mut().for_each(&mut *f);
            }
        }
    }
    calls.iter_mut().flat_map(|c| c.args.iter_mut()).for_each(&mut *f);
}

/// A bound query: its plan and the subplans its expressions refer to by id.
#[derive(Debug, Clone)]
pub struct BoundQuery {
    pub plan: Plan,
    pub subqueries: Vec<Subplan>,
}

/// A subquery's plan. Its correlated values arrive as parameters numbered from
/// `param_base` (after the statement's own parameters).
#[derive(Debug, Clone)]
pub struct Subplan {
    pub plan: Plan,
    pub param_base: usize,
    pub correlated: bool,
}

/// A constant as an expression of its own type.
pub fn constant(v: Value, ty: DataType) -> Expr {
    Expr::literal(v, ty)
}
