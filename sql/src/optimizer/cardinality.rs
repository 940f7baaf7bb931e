//! Cardinality: how many rows each plan node is expected to produce.
//!
//! Relation sizes come from [`Stats`]; an unknown relation counts
//! [`DEFAULT_TABLE_ROWS`]. A column with statistics (ANALYZE, run automatically after
//! bulk writes; see `catalog::ColumnStats`) is estimated as PostgreSQL's `selfuncs.c`
//! does: an equality from the most common values, or else from the distinct count of
//! the rest; a range from the common values and the equi-depth histogram, with linear
//! interpolation inside a bucket; two range bounds on one column as one range (not
//! as independent predicates); IS NULL from the NULL fraction; an equi-join as
//! (1 − n₁)(1 − n₂) / max(d₁, d₂) for NULL fractions n and distinct counts d;
//! groups from the product of the grouping columns' distinct counts. A column
//! without statistics gets PostgreSQL's defaults (an equality 0.5%, a range a third),
//! except that an equality on a column that alone forms a unique index selects one
//! row, and its distinct count is taken to be its table's row count (so an equi-join
//! of two such columns is estimated as a key/foreign-key join).

use std::sync::Arc;

use std::cmp::Ordering;

use super::Stats;
use crate::catalog::{ColumnStats, TableDef};
use crate::expr::{CmpOp, Expr, ExprKind};
use crate::plan::{JoinKind, Node, Plan, SetOpKind};
use crate::types::Value;

/// Rows assumed for a table of unknown size (PostgreSQL assumes ten pages).
pub const DEFAULT_TABLE_ROWS: f64 = 1000.0;
/// Selectivity of an equality with a constant on a column without statistics.
pub const EQ_SEL: f64 = 0.005;
/// Selectivity of a one-sided range.
pub const RANGE_SEL: f64 = 1.0 / 3.0;
/// Selectivity of LIKE with a pattern.
pub const MATCH_SEL: f64 = 0.05;
/// Selectivity of a range bounded on both sides, for a column without statistics
/// (PostgreSQL's `DEFAULT_RANGE_INEQ_SEL`).
pub const RANGE_PAIR_SEL: f64 = 0.005;
/// Selectivity of any other predicate.
pub const OTHER_SEL: f64 = 1.0 / 3.0;
/// Groups assumed per grouping column without statistics (PostgreSQL's default
/// number of distinct values).
pub const DEFAULT_GROUPS: f64 = 200.0;

/// The rows of `table`.
pub fn table_rows(table: &TableDef, stats: &dyn Stats) -> f64 {
    stats.table_rows(table).unwrap_or(DEFAULT_TABLE_ROWS).max(1.0)
}

/// Where column `col` of `plan`'s output comes from: a stored table's column, when it
/// passes through unchanged.
pub fn origin(plan: &Plan, col: usize) -> Option<(&Arc<TableDef>, usize)> {
    let mut plan = plan;
    let mut col = col;
    loop {
        match &plan.node {
            Node::TableScan { table, columns, .. } => return columns.get(col).map(|&c| (table, c)),
            Node::Filter { input, .. } | Node::Sort { input, .. } | Node::Limit { input, .. } | Node::Distinct { input } => {
                plan = &**input
            }
            Node::Project { input, exprs } => match exprs.get(col).map(|e| &e.kind) {
                Some(ExprKind::Column(c)) => {
                    col = *c;
                    plan = &**input;
                }
                _ => return None,
            },
            Node::Join { left, right, kind, .. } => {
                let n = left.schema.len();
                if col < n {
                    plan = &**left;
                } else if kind.is_left_only() {
                    return None;
                } else {
                    col -= n;
                    plan = &**right;
                }
            }
            _ => return None,
        }
    }
}

/// The statistics of column `col` of `plan`'s output, when it is a stored column that
/// was analyzed.
pub fn column_stats<'a>(plan: &'a Plan, col: usize, stats: &'a dyn Stats) -> Option<&'a ColumnStats> {
    let (t, c) = origin(plan, col)?;
    stats.column(t, c)
}

/// The distinct values expected in column `col` of `plan`, whose output is `rows`
/// rows: from its statistics, else its table's row count (see the module comment);
/// at most `rows`.
pub fn distinct(plan: &Plan, col: usize, rows: f64, stats: &dyn Stats) -> f64 {
    let n = match origin(plan, col) {
        Some((t, c)) => match stats.column(t, c) {
            Some(cs) => cs.distinct_in(table_rows(t, stats)),
            None => table_rows(t, stats),
        },
        None => rows,
    };
    n.min(rows).max(1.0)
}

/// The distinct count of column `col` of `plan` when statistics give it (clamped to
/// `rows`), with its NULL fraction.
fn known_distinct(plan: &Plan, col: usize, rows: f64, stats: &dyn Stats) -> Option<(f64, f64)> {
    let (t, c) = origin(plan, col)?;
    let cs = stats.column(t, c)?;
    Some((cs.distinct_in(table_rows(t, stats)).min(rows).max(1.0), cs.null_frac))
}

/// The value of a constant expression, when it is a literal (possibly cast); `None`
/// for parameters and anything computed.
fn constant_value(e: &Expr) -> Option<Value> {
    match &e.kind {
        ExprKind::Literal(v) => Some(v.clone()),
        ExprKind::Cast { expr, .. } => constant_value(expr)?.cast(&e.ty).ok(),
        _ => None,
    }
}

fn sql_eq(a: &Value, b: &Value) -> bool {
    a.cmp_sql(b) == Some(Ordering::Equal)
}

/// The fraction of rows where a column with statistics `cs` equals `v` (`None`: a
/// value not known when planning, such as a parameter).
pub fn eq_selectivity(cs: &ColumnStats, v: Option<&Value>, table_rows: f64) -> f64 {
    let ndv = cs.distinct_in(table_rows).max(1.0);
    let Some(v) = v else {
        return (1.0 - cs.null_frac) / ndv;
    };
    if v.is_null() {
        return 0.0;
    }
    if let Some((_, f)) = cs.mcv.iter().find(|(m, _)| sql_eq(m, v)) {
        return *f;
    }
    // A value outside the range seen holds (almost) no rows.
    let below = matches!(v.cmp_sql(&cs.min), Some(Ordering::Less));
    let above = matches!(v.cmp_sql(&cs.max), Some(Ordering::Greater));
    if below || above {
        return 1.0 / table_rows.max(1.0);
    }
    let mcv_total: f64 = cs.mcv.iter().map(|m| m.1).sum();
    let others = (ndv - cs.mcv.len() as f64).max(1.0);
    let s = (1.0 - cs.null_frac - mcv_total).max(0.0) / others;
    // No value outside the common ones is more common than the least common of them.
    match cs.mcv.last() {
        Some((_, least)) => s.min(*least),
        None => s,
    }
}

/// A value as a number on a line, for interpolating inside a histogram bucket:
/// numbers as themselves, dates and timestamps as days and microseconds, strings by
/// their first eight bytes.
fn scalar(v: &Value) -> Option<f64> {
    Some(match v {
        Value::SmallInt(x) => *x as f64,
        Value::Integer(x) => *x as f64,
        Value::BigInt(x) => *x as f64,
        Value::Real(x) => *x as f64,
        Value::Double(x) => *x,
        Value::Decimal(d) => d.to_f64(),
        Value::Date(d) => d.0 as f64,
        Value::Timestamp(t) => t.0 as f64,
        Value::Char(s) | Value::Varchar(s) | Value::Text(s) => {
            let mut b = [0u8; 8];
            for (d, s) in b.iter_mut().zip(s.as_bytes()) {
                *d = *s;
            }
            u64::from_be_bytes(b) as f64
        }
        _ => return None,
    })
}

/// The fraction of `histogram`'s rows below `v` (0 to 1).
fn histogram_fraction_below(histogram: &[Value], v: &Value) -> f64 {
    let buckets = (histogram.len() - 1) as f64;
    let lt = |b: &Value| matches!(b.cmp_sql(v), Some(Ordering::Less));
    // The first bound not below v.
    let i = histogram.partition_point(lt);
    if i == 0 {
        return 0.0;
    }
    if i == histogram.len() {
        return 1.0;
    }
    let (lo, hi) = (&histogram[i - 1], &histogram[i]);
    let within = match (scalar(lo), scalar(hi), scalar(v)) {
        (Some(l), Some(h), Some(x)) if h > l => ((x - l) / (h - l)).clamp(0.0, 1.0),
        _ => 0.5,
    };
    ((i - 1) as f64 + within) / buckets
}

/// The fraction of rows where `column op v` holds, for a column with statistics
/// `cs` and a range operator (`<`, `<=`, `>`, `>=`); `None` for a value not known
/// when planning.
pub fn range_selectivity(cs: &ColumnStats, op: CmpOp, v: Option<&Value>) -> f64 {
    let nonnull = 1.0 - cs.null_frac;
    let Some(v) = v.filter(|v| !v.is_null()) else {
        return if v.is_some() { 0.0 } else { nonnull * RANGE_SEL };
    };
    let holds = |x: &Value| match x.cmp_sql(v) {
        Some(o) => match op {
            CmpOp::Lt => o == Ordering::Less,
            CmpOp::LtEq => o != Ordering::Greater,
            CmpOp::Gt => o == Ordering::Greater,
            CmpOp::GtEq => o != Ordering::Less,
            _ => false,
        },
        None => false,
    };
    let mcv_part: f64 = cs.mcv.iter().filter(|(m, _)| holds(m)).map(|m| m.1).sum();
    let mcv_total: f64 = cs.mcv.iter().map(|m| m.1).sum();
    let rest = (nonnull - mcv_total).max(0.0);
    let hist_part = if cs.histogram.len() >= 2 {
        let below = histogram_fraction_below(&cs.histogram, v);
        match op {
            CmpOp::Lt | CmpOp::LtEq => below,
            _ => 1.0 - below,
        }
    } else if cs.mcv.is_empty() {
        // One value or no storable ones: the minimum and the maximum decide.
        let all = holds(&cs.min) as u8 + holds(&cs.max) as u8;
        all as f64 / 2.0
    } else {
        0.0
    };
    (mcv_part + hist_part * rest).clamp(0.0, 1.0)
}

/// A comparison of a column with a constant, seen from the column: `(column, op,
/// constant)`, with the operator flipped when the column is on the right.
fn column_comparison<'e>(op: CmpOp, left: &'e Expr, right: &'e Expr) -> Option<(usize, CmpOp, &'e Expr)> {
    match (&left.kind, &right.kind) {
        (ExprKind::Column(c), _) if is_constant(right) => Some((*c, op, right)),
        (_, ExprKind::Column(c)) if is_constant(left) => Some((*c, op.flip(), left)),
        _ => None,
    }
}

fn is_range(op: CmpOp) -> bool {
    matches!(op, CmpOp::Lt | CmpOp::LtEq | CmpOp::Gt | CmpOp::GtEq)
}

/// The selectivity of a conjunction: range bounds on one column are taken together
/// as one range (the tightest lower bound and the tightest upper bound: `u > 999990
/// AND u > 5` is the first alone, `u > 10 AND u < 20` the rows between), every
/// other conjunct as independent.
fn conjunction_selectivity(conjuncts: &[Expr], input: &Plan, stats: &dyn Stats) -> f64 {
    // Per column: the smallest selectivity of a lower bound and of an upper bound.
    let mut ranges: Vec<(usize, Option<f64>, Option<f64>)> = Vec::new();
    let mut s = 1.0;
    for c in conjuncts {
        if let ExprKind::Compare { op, left, right } = &c.kind
            && let Some((col, op, _)) = column_comparison(*op, left, right)
            && is_range(op)
        {
            let sel = super::deep(|| selectivity(c, input, stats));
            let entry = match ranges.iter_mut().find(|r| r.0 == col) {
                Some(e) => e,
                None => {
                    ranges.push((col, None, None));
                    ranges.last_mut().expect("just pushed")
                }
            };
            let bound = if matches!(op, CmpOp::Gt | CmpOp::GtEq) { &mut entry.1 } else { &mut entry.2 };
            *bound = Some(bound.map_or(sel, |b: f64| b.min(sel)));
            continue;
        }
        s *= super::deep(|| selectivity(c, input, stats));
    }
    for (col, lo, hi) in ranges {
        s *= match (lo, hi) {
            (Some(lo), Some(hi)) => match column_stats(input, col, stats) {
                // P(lo < x < hi) = P(x > lo) + P(x < hi) − P(x not NULL).
                Some(cs) => (lo + hi - (1.0 - cs.null_frac)).max(1e-10),
                None => RANGE_PAIR_SEL,
            },
            (Some(one), None) | (None, Some(one)) => one,
            (None, None) => 1.0,
        };
    }
    s
}

/// Whether table column `c` alone forms a unique index.
fn unique_column(table: &TableDef, c: usize) -> bool {
    table.indexes.iter().any(|i| i.unique && i.columns == [c])
}

fn is_constant(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Literal(_) | ExprKind::Param(_) => true,
        ExprKind::Column(_) | ExprKind::Subquery(_) => false,
        _ => e.children().iter().all(|c| super::deep(|| is_constant(c))),
    }
}

/// The fraction of `input`'s rows for which `e` (over `input`'s output) is true.
pub fn selectivity(e: &Expr, input: &Plan, stats: &dyn Stats) -> f64 {
    let s = match &e.kind {
        ExprKind::Literal(Value::Boolean(true)) => 1.0,
        ExprKind::Literal(_) => 0.0,
        ExprKind::And(v) => conjunction_selectivity(v, input, stats),
        ExprKind::Or(v) => 1.0 - v.iter().map(|c| 1.0 - super::deep(|| selectivity(c, input, stats))).product::<f64>(),
        ExprKind::Not(x) => 1.0 - super::deep(|| selectivity(x, input, stats)),
        ExprKind::Compare { op, left, right } => match column_comparison(*op, left, right) {
            Some((col, op, constant)) => {
                let value = constant_value(constant);
                let origin = origin(input, col);
                let cs = origin.and_then(|(t, c)| stats.column(t, c));
                match (op, origin, cs) {
                    (CmpOp::Eq, Some((t, c)), _) if unique_column(t, c) => 1.0 / table_rows(t, stats),
                    (CmpOp::Eq, Some((t, _)), Some(cs)) => eq_selectivity(cs, value.as_ref(), table_rows(t, stats)),
                    (CmpOp::NotEq, Some((t, _)), Some(cs)) => {
                        1.0 - cs.null_frac - eq_selectivity(cs, value.as_ref(), table_rows(t, stats))
                    }
                    (_, _, Some(cs)) => range_selectivity(cs, op, value.as_ref()),
                    (CmpOp::Eq, ..) => EQ_SEL,
                    (CmpOp::NotEq, ..) => 1.0 - EQ_SEL,
                    _ => RANGE_SEL,
                }
            }
            None => match op {
                CmpOp::Eq => EQ_SEL,
                CmpOp::NotEq => 1.0 - EQ_SEL,
                _ => RANGE_SEL,
            },
        },
        ExprKind::InList { expr, list, negated } => {
            let column = match &expr.kind {
                ExprKind::Column(c) => origin(input, *c).and_then(|(t, c)| Some((t, stats.column(t, c)?))),
                _ => None,
            };
            match column {
                Some((t, cs)) => {
                    let rows = table_rows(t, stats);
                    let s: f64 = list.iter().map(|e| eq_selectivity(cs, constant_value(e).as_ref(), rows)).sum();
                    let s = s.min(1.0 - cs.null_frac);
                    if *negated { 1.0 - cs.null_frac - s } else { s }
                }
                None => {
                    let s = (list.len() as f64 * EQ_SEL).min(0.5);
                    if *negated { 1.0 - s } else { s }
                }
            }
        }
        ExprKind::Like { negated, .. } => {
            if *negated {
                1.0 - MATCH_SEL
            } else {
                MATCH_SEL
            }
        }
        ExprKind::IsNull { expr, negated } => {
            let null_frac = match &expr.kind {
                ExprKind::Column(c) => column_stats(input, *c, stats).map(|cs| cs.null_frac),
                _ => None,
            };
            match (null_frac, negated) {
                (Some(f), false) => f,
                (Some(f), true) => 1.0 - f,
                (None, false) => EQ_SEL,
                (None, true) => 1.0 - EQ_SEL,
            }
        }
        _ => OTHER_SEL,
    };
    s.clamp(0.0, 1.0)
}

/// The selectivity of equi-join keys: the most selective key pair's (several keys
/// between the same inputs are usually correlated, as a composite key is). A pair of
/// columns with statistics is (1 − n₁)(1 − n₂) / max(d₁, d₂) (every value of the side
/// with fewer values finds its match, PostgreSQL's `eqjoinsel` without common values);
/// otherwise 1 / the smaller distinct count, which for columns without statistics is
/// the smaller table's size (a key/foreign-key join).
pub fn keys_selectivity(
    left: &Plan,
    left_rows: f64,
    left_keys: &[Expr],
    right: &Plan,
    right_rows: f64,
    right_keys: &[Expr],
    stats: &dyn Stats,
) -> f64 {
    let ndv = |p: &Plan, rows: f64, e: &Expr| match &e.kind {
        ExprKind::Column(c) => distinct(p, *c, rows, stats),
        _ => rows.max(1.0),
    };
    let known = |p: &Plan, rows: f64, e: &Expr| match &e.kind {
        ExprKind::Column(c) => known_distinct(p, *c, rows, stats),
        _ => None,
    };
    left_keys
        .iter()
        .zip(right_keys)
        .map(|(l, r)| match (known(left, left_rows, l), known(right, right_rows, r)) {
            (Some((dl, nl)), Some((dr, nr))) => (1.0 - nl) * (1.0 - nr) / dl.max(dr),
            _ => 1.0 / ndv(left, left_rows, l).min(ndv(right, right_rows, r)).max(1.0),
        })
        .fold(1.0, f64::min)
}

/// Rows assumed for one round of a recursive CTE's working table: the scan has no
/// statistics and its size changes from round to round.
const DEFAULT_WORK_TABLE_ROWS: f64 = 100.0;

/// The rows `plan` produces, given its inputs' estimated rows `inputs` (in
/// [`Plan::children`] order).
pub fn node_rows(plan: &Plan, inputs: &[f64], stats: &dyn Stats) -> f64 {
    let input = inputs.first().copied().unwrap_or(1.0);
    let rows = match &plan.node {
        Node::TableScan { table, filter, .. } => {
            let n = table_rows(table, stats);
            n * filter.as_ref().map_or(1.0, |f| selectivity(f, plan, stats))
        }
        Node::Values { rows } => rows.len() as f64,
        Node::Filter { input: i, predicate } => input * selectivity(predicate, i, stats),
        Node::Project { .. } | Node::Sort { .. } | Node::Window { .. } => input,
        Node::Join { left, right, kind, on, left_keys, right_keys, .. } => {
            let (l, r) = (inputs[0], inputs[1]);
            let keys = keys_selectivity(left, l, left_keys, right, r, right_keys, stats);
            let on = on.as_ref().map_or(1.0, |_| OTHER_SEL);
            let inner = l * r * keys * on;
            match kind {
                JoinKind::Inner => inner,
                JoinKind::Left => inner.max(l),
                JoinKind::Right => inner.max(r),
                JoinKind::Full => inner.max(l + r),
                // The share of left rows with a match: the expected matches per left
                // row, at most one.
                JoinKind::Semi => l * (r * keys * on).min(1.0),
                JoinKind::Anti => l * (1.0 - (r * keys * on).min(1.0)).max(0.05),
                JoinKind::Mark => l,
            }
        }
        Node::Aggregate { groups, sets, .. } => {
            let per_group: Vec<f64> = groups
                .iter()
                .map(|e| match (&e.kind, plan.children().first()) {
                    (ExprKind::Column(c), Some(i)) => match origin(i, *c) {
                        Some((t, c)) if unique_column(t, c) => table_rows(t, stats),
                        // NULL forms a group of its own.
                        Some((t, c)) => match stats.column(t, c) {
                            Some(cs) => cs.distinct_in(table_rows(t, stats)) + (cs.null_frac > 0.0) as u8 as f64,
                            None => DEFAULT_GROUPS,
                        },
                        None => DEFAULT_GROUPS,
                    },
                    _ => DEFAULT_GROUPS,
                })
                .collect();
            // Each set's groups: the product of its expressions' (1 for none), at most
            // the input rows; grouping sets add up.
            let set_rows = |members: &mut dyn Iterator<Item = usize>| -> f64 {
                let mut any = false;
                let g: f64 = members.inspect(|_| any = true).map(|i| per_group[i]).product();
                if any { g.min(input) } else { 1.0 }
            };
            if sets.is_empty() {
                set_rows(&mut (0..groups.len()))
            } else {
                sets.iter().map(|s| set_rows(&mut s.iter().copied())).sum()
            }
        }
        Node::Limit { limit, offset, .. } => {
            let after = (input - *offset as f64).max(0.0);
            limit.map_or(after, |l| after.min(l as f64))
        }
        Node::Distinct { .. } => (input / 10.0).max(1.0).min(input),
        Node::SetOp { op, all, .. } => {
            let (l, r) = (inputs[0], inputs[1]);
            let n = match op {
                SetOpKind::Union => l + r,
                SetOpKind::Intersect => l.min(r),
                SetOpKind::Except => l,
            };
            if *all { n } else { (n / 2.0).max(1.0).min(n) }
        }
        // PostgreSQL's guess: the base term's rows and ten rounds of the recursive
        // term's (how many rounds a recursion takes is unknowable before it runs).
        Node::RecursiveUnion { .. } => inputs[0] + 10.0 * inputs[1],
        // Each input row with the right side's rows (at least itself under LEFT).
        Node::Apply { left_join, .. } => inputs[0] * if *left_join { inputs[1].max(1.0) } else { inputs[1] },
        Node::WorkTableScan { .. } => DEFAULT_WORK_TABLE_ROWS,
        Node::CteScan { .. } => inputs[0],
        Node::Series { args } => series_rows(args),
    };
    rows.max(0.0)
}

/// The rows of `generate_series(args)`: counted when its bounds and step are integer
/// constants (as PostgreSQL's support function for it does since version 12), else
/// PostgreSQL's estimate for a set-returning function, 1000.
fn series_rows(args: &[Expr]) -> f64 {
    let int = |e: &Expr| match constant_value(e)? {
        Value::SmallInt(v) => Some(v as f64),
        Value::Integer(v) => Some(v as f64),
        Value::BigInt(v) => Some(v as f64),
        _ => None,
    };
    let bounds = match args {
        [start, stop] => int(start).zip(int(stop)).map(|(a, b)| (a, b, 1.0)),
        [start, stop, step] => match (int(start), int(stop), int(step)) {
            (Some(a), Some(b), Some(s)) if s != 0.0 => Some((a, b, s)),
            _ => None,
        },
        _ => None,
    };
    match bounds {
        Some((start, stop, step)) => (((stop - start) / step).floor() + 1.0).max(0.0),
        None => 1000.0,
    }
}

/// The rows `plan` produces: its estimate when the optimizer set one, otherwise
/// estimated from its inputs' (recursively).
pub fn rows(plan: &Plan, stats: &dyn Stats) -> f64 {
    if let Some(e) = plan.est {
        return e.rows;
    }
    let inputs: Vec<f64> = plan.children().iter().map(|c| super::deep(|| rows(c, stats))).collect();
    node_rows(plan, &inputs, stats)
}
