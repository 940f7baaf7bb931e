//! Binding window functions: `f(…) OVER (PARTITION BY … ORDER BY … frame)` and
//! `OVER w` with the SELECT's `WINDOW w AS (…)` clause, as PostgreSQL does.
//!
//! A SELECT computes its window functions over the rows its select list sees: the
//! FROM rows after WHERE, or the groups after GROUP BY and HAVING. While the select
//! list and ORDER BY bind, a [`WindowState`] collects the calls; each call binds to a
//! placeholder column ([`WINDOW_COLUMN_BASE`] + its index) because the width of the
//! window node's input is only known once the whole output has bound (an aggregate
//! bound later adds a column below it). [`Binder::finish_windows`] then puts a
//! [`Node::Window`] under the projection and renumbers the placeholders.
//!
//! Differs from PostgreSQL: frame `EXCLUDE` is not parsed by sqlparser 0.63 (the
//! statement fails with a message saying so); `IGNORE NULLS`, `FILTER` and `DISTINCT`
//! in window calls are refused (PostgreSQL 15 refuses them too, but with other
//! messages for the first two).

use sqlparser::ast;

use super::query_util::for_each_child_mut;
use super::{Binder, ident, is_unknown};
use crate::error::{Error, Result};
use crate::expr::{ArithOp, Expr, ExprKind};
use crate::plan::{
    AggFunc, FrameBound, FrameUnits, Node, OutputColumn, Plan, SortKey, WindowCall, WindowFrame,
    WindowFunc, WindowSpec,
};
use crate::types::{DataType, Value};

/// Window results bind to `Column(WINDOW_COLUMN_BASE + i)` until the window node's
/// input width is known.
const WINDOW_COLUMN_BASE: usize = 1 << 30;

/// The window functions of one SELECT, collected while its output binds.
pub struct WindowState {
    /// Frame depth of the SELECT.
    level: usize,
    /// `WINDOW name AS (…)`, resolved (a definition naming an earlier one is merged).
    named: Vec<(String, ast::WindowSpec)>,
    specs: Vec<WindowSpec>,
    calls: Vec<WindowCall>,
    /// Set while a call's arguments and window bind: a window call there is nested.
    busy: bool,
}

/// The window-only functions (aggregates are window functions too).
pub fn window_func(name: &str) -> Option<WindowFunc> {
    Some(match name {
        "row_number" => WindowFunc::RowNumber,
        "rank" => WindowFunc::Rank,
        "dense_rank" => WindowFunc::DenseRank,
        "percent_rank" => WindowFunc::PercentRank,
        "cume_dist" => WindowFunc::CumeDist,
        "ntile" => WindowFunc::Ntile,
        "lag" => WindowFunc::Lag,
        "lead" => WindowFunc::Lead,
        "first_value" => WindowFunc::FirstValue,
        "last_value" => WindowFunc::LastValue,
        "nth_value" => WindowFunc::NthValue,
        _ => return None,
    })
}

fn windowing(message: impl Into<String>) -> Error {
    Error::semantic("42P20", message)
}

/// Whether `t` converts implicitly to `text` (PostgreSQL's string category).
fn is_string(t: &DataType) -> bool {
    matches!(t, DataType::Text | DataType::Varchar(_) | DataType::Char(_))
}

/// The signature of aggregate `func` called with arguments of types `args`: the
/// types the arguments are cast to and the result type, as PostgreSQL resolves
/// them; `None` when there is no such aggregate (42883).
pub fn aggregate_signature(func: AggFunc, args: &[DataType]) -> Option<(Vec<DataType>, DataType)> {
    use super::types::numeric_rank;
    let same = |ty: DataType| Some((args.to_vec(), ty));
    match (func, args) {
        (AggFunc::CountStar, []) => same(DataType::BigInt),
        (AggFunc::Count, [_]) => same(DataType::BigInt),
        (AggFunc::Sum, [DataType::SmallInt | DataType::Integer]) => same(DataType::BigInt),
        (AggFunc::Sum, [DataType::BigInt | DataType::Decimal { .. }]) => same(DataType::NUMERIC),
        (AggFunc::Sum, [t @ (DataType::Real | DataType::Double | DataType::Interval)]) => same(*t),
        (AggFunc::Avg, [t]) if numeric_rank(t).is_some_and(|r| r <= 4) => same(DataType::NUMERIC),
        (AggFunc::Avg, [DataType::Real | DataType::Double]) => same(DataType::Double),
        (AggFunc::Avg, [DataType::Interval]) => same(DataType::Interval),
        (AggFunc::Min | AggFunc::Max, [t]) if *t != DataType::Boolean => same(*t),
        // string_agg(text, text); varchar and char(n) arguments become text (char
        // loses its padding, as PostgreSQL's bpchar → text cast).
        (AggFunc::StringAgg, [a, b]) if is_string(a) && is_string(b) => {
            Some((vec![DataType::Text, DataType::Text], DataType::Text))
        }
        (AggFunc::BoolAnd | AggFunc::BoolOr, [DataType::Boolean]) => same(DataType::Boolean),
        // Exact (numeric) for integers and numerics, double for floats, as
        // PostgreSQL's numeric_accum / float8_accum families.
        (AggFunc::StddevSamp | AggFunc::StddevPop | AggFunc::VarSamp | AggFunc::VarPop, [t]) => {
            match numeric_rank(t)? {
                1..=4 => same(DataType::NUMERIC),
                _ => same(DataType::Double),
            }
        }
        // The statistics of pairs take double precision arguments (integers and
        // numerics convert implicitly).
        (f, [y, x]) if f.is_pair_statistic() && numeric_rank(y).is_some() && numeric_rank(x).is_some() => Some((
            vec![DataType::Double, DataType::Double],
            if f == AggFunc::RegrCount { DataType::BigInt } else { DataType::Double },
        )),
        _ => None,
    }
}

impl Binder<'_> {
    /// Starts collecting the window calls of SELECT `s` (at the current level).
    pub(super) fn begin_windows(&mut self, s: &ast::Select) -> Result<()> {
        let mut named: Vec<(String, ast::WindowSpec)> = Vec::new();
        for ast::NamedWindowDefinition(name, def) in &s.named_window {
            let n = ident(name);
            let at = crate::parser::span_offset(self.sql, name.span);
            if named.iter().any(|(m, _)| *m == n) {
                return Err(windowing(format!("window \"{n}\" is already defined")).at(at));
            }
            let spec = match def {
                ast::NamedWindowExpr::WindowSpec(w) => merge_named(&named, w).map_err(|e| e.at(at))?,
                ast::NamedWindowExpr::NamedWindow(other) => lookup(&named, other).map_err(|e| e.at(at))?,
            };
            named.push((n, spec));
        }
        self.window = Some(WindowState {
            level: self.frames.len() - 1,
            named,
            specs: Vec::new(),
            calls: Vec::new(),
            busy: false,
        });
        Ok(())
    }

    /// Binds `f(…) OVER …` (`f.over` is set) appearing in `clause`.
    pub(super) fn bind_window_call(
        &mut self,
        f: &ast::Function,
        name: &str,
        e: &ast::Expr,
        clause: &'static str,
    ) -> Result<Expr> {
        let at = self.pos(e);
        if clause == "aggregate" {
            return Err(Error::semantic(
                "42803",
                "aggregate function calls cannot contain window function calls",
            )
            .at(at));
        }
        let level = self.frames.len() - 1;
        match &self.window {
            Some(w) if w.level == level && w.busy => {
                return Err(windowing("window function calls cannot be nested").at(at));
            }
            Some(w) if w.level == level && matches!(clause, "SELECT" | "ORDER BY") => {}
            _ => {
                return Err(windowing(format!("window functions are not allowed in {clause}")).at(at));
            }
        }
        let func = match (window_func(name), super::expr::aggregate_func(name)) {
            (Some(w), _) => w,
            (None, Some(a)) => WindowFunc::Agg(a),
            (None, None) => {
                return Err(Error::semantic(
                    "42809",
                    format!("OVER specified, but {name} is not a window function nor an aggregate function"),
                )
                .at(at));
            }
        };
        if !f.within_group.is_empty() {
            return Err(Error::not_supported("WITHIN GROUP in a window function call").at(at));
        }
        let filter = f.filter.as_deref();
        if filter.is_some() && !matches!(func, WindowFunc::Agg(_)) {
            return Err(Error::not_supported("FILTER is not implemented for non-aggregate window functions").at(at));
        }
        if f.null_treatment.is_some() {
            return Err(Error::not_supported("IGNORE NULLS / RESPECT NULLS").at(at));
        }
        let (args, distinct, star) = self.function_args(f)?;
        if !super::expr::call_order(f).is_empty() {
            return Err(Error::not_supported("aggregate ORDER BY is not implemented for window functions").at(at));
        }
        if distinct {
            return Err(Error::not_supported("DISTINCT is not implemented for window functions").at(at));
        }
        // count(*) FILTER (WHERE c) counts the rows c holds for: count(1) filtered.
        let one = ast::Expr::value(ast::Value::Number("1".into(), false));
        let (args, star) = if star && filter.is_some() && func == WindowFunc::Agg(AggFunc::Count) {
            (vec![&one], false)
        } else {
            (args, star)
        };
        let over = f.over.as_ref().expect("a window call");
        let spec_ast = self.window_spec_ast(over).map_err(|err| err.at(at))?;
        self.window.as_mut().expect("window state").busy = true;
        let r = self.bind_window_parts(func, name, &args, star, filter, &spec_ast, e, clause);
        if let Some(w) = self.window.as_mut() {
            w.busy = false;
        }
        let (func, args, spec, ty) = r?;
        let state = self.window.as_mut().expect("window state");
        let spec = match state.specs.iter().position(|s| *s == spec) {
            Some(i) => i,
            None => {
                state.specs.push(spec);
                state.specs.len() - 1
            }
        };
        let call = WindowCall { func, args, spec, ty };
        let idx = match state.calls.iter().position(|c| *c == call) {
            Some(i) => i,
            None => {
                state.calls.push(call);
                state.calls.len() - 1
            }
        };
        Ok(Expr::column(WINDOW_COLUMN_BASE + idx, ty))
    }

    /// The window clause of a call, named windows resolved.
    fn window_spec_ast(&self, over: &ast::WindowType) -> Result<ast::WindowSpec> {
        let named = &self.window.as_ref().expect("window state").named;
        match over {
            ast::WindowType::NamedWindow(n) => lookup(named, n),
            ast::WindowType::WindowSpec(w) => merge_named(named, w),
        }
    }

    #[allow(clippy::too_many_arguments, clippy::type_complexity)]
    fn bind_window_parts(
        &mut self,
        func: WindowFunc,
        name: &str,
        args: &[&ast::Expr],
        star: bool,
        filter: Option<&ast::Expr>,
        w: &ast::WindowSpec,
        e: &ast::Expr,
        clause: &'static str,
    ) -> Result<(WindowFunc, Vec<Expr>, WindowSpec, DataType)> {
        let at = self.pos(e);
        let mut bound = Vec::with_capacity(args.len());
        for a in args {
            let mut b = self.bind_expr(a, clause)?;
            if is_unknown(a) {
                b = self.cast(b, DataType::Text, false, a)?;
            }
            bound.push(b);
        }
        // FILTER (WHERE c) on an aggregate: its first argument made NULL where c is not
        // true, which every built-in aggregate skips (as in `bind_aggregate_here`).
        if let Some(c) = filter {
            let c = self.bind_bool(c, clause, "FILTER")?;
            if let Some(first) = bound.first_mut() {
                let ty = first.ty;
                let arg = std::mem::replace(first, Expr::literal(Value::Null, ty));
                *first = Expr::new(ExprKind::Case { whens: vec![(c, arg)], else_: None }, ty);
            }
        }
        let types: Vec<DataType> = bound.iter().map(|b| b.ty).collect();
        let no_such = |types: &[DataType]| {
            let list = if star {
                "*".to_string()
            } else {
                types.iter().map(|t| t.to_string()).collect::<Vec<_>>().join(", ")
            };
            Error::undefined_function(format!("function {name}({list}) does not exist")).at(at)
        };
        if star && func != WindowFunc::Agg(AggFunc::Count) {
            return Err(Error::syntax(format!("{name}(*) is only valid for aggregates")).at(at));
        }
        let integer_arg = |this: &mut Self, b: Expr, a: &ast::Expr| -> Result<Expr> {
            if b.ty == DataType::Integer {
                return Ok(b);
            }
            if super::types::is_integer(&b.ty) || is_unknown(a) {
                return this.cast(b, DataType::Integer, false, a);
            }
            Err(no_such(&types))
        };
        let (func, ty) = match func {
            WindowFunc::RowNumber | WindowFunc::Rank | WindowFunc::DenseRank
                if bound.is_empty() =>
            {
                (func, DataType::BigInt)
            }
            WindowFunc::PercentRank | WindowFunc::CumeDist if bound.is_empty() => (func, DataType::Double),
            WindowFunc::Ntile if bound.len() == 1 => {
                let b = bound.pop().expect("one argument");
                bound.push(integer_arg(self, b, args[0])?);
                (func, DataType::Integer)
            }
            WindowFunc::Lag | WindowFunc::Lead if (1..=3).contains(&bound.len()) => {
                if bound.len() >= 2 {
                    let b = bound.remove(1);
                    bound.insert(1, integer_arg(self, b, args[1])?);
                }
                let mut ty = bound[0].ty;
                if bound.len() == 3 {
                    // lag(anycompatible, integer, anycompatible): the value and the
                    // default share a type.
                    let d = bound.pop().expect("three arguments");
                    let v = bound.remove(0);
                    let unified = match (is_unknown(args[0]), is_unknown(args[2])) {
                        (false, true) => Some(v.ty),
                        (true, false) => Some(d.ty),
                        _ => super::types::common_type(&v.ty, &d.ty),
                    };
                    let Some(t) = unified else {
                        return Err(Error::datatype_mismatch(format!(
                            "{name} could not convert type {} to {}",
                            d.ty, v.ty
                        ))
                        .at(at));
                    };
                    let v = self.cast(v, t, false, args[0])?;
                    let d = self.cast(d, t, false, args[2])?;
                    bound.insert(0, v);
                    bound.push(d);
                    ty = t;
                }
                (func, ty)
            }
            WindowFunc::FirstValue | WindowFunc::LastValue if bound.len() == 1 => (func, bound[0].ty),
            WindowFunc::NthValue if bound.len() == 2 => {
                let b = bound.pop().expect("two arguments");
                bound.push(integer_arg(self, b, args[1])?);
                (func, bound[0].ty)
            }
            WindowFunc::Agg(AggFunc::Count) if star && bound.is_empty() => {
                (WindowFunc::Agg(AggFunc::CountStar), DataType::BigInt)
            }
            WindowFunc::Agg(a) if !bound.is_empty() => match aggregate_signature(a, &types) {
                Some((casts, t)) => {
                    let exprs = std::mem::take(&mut bound);
                    for ((b, ty), a) in exprs.into_iter().zip(casts).zip(args) {
                        bound.push(self.cast(b, ty, false, a)?);
                    }
                    (func, t)
                }
                None => return Err(no_such(&types)),
            },
            _ => return Err(no_such(&types)),
        };
        // The window: PARTITION BY, ORDER BY, frame.
        let mut partition = Vec::with_capacity(w.partition_by.len());
        for p in &w.partition_by {
            let b = self.bind_expr(p, clause)?;
            partition.push(if is_unknown(p) { self.cast(b, DataType::Text, false, p)? } else { b });
        }
        let mut order = Vec::with_capacity(w.order_by.len());
        for o in &w.order_by {
            let b = self.bind_expr(&o.expr, clause)?;
            let b = if is_unknown(&o.expr) { self.cast(b, DataType::Text, false, &o.expr)? } else { b };
            order.push(super::query::sort_key(b, &o.options).map_err(|err| err.at(self.pos(&o.expr)))?);
        }
        let frame = self.bind_frame(w.window_frame.as_ref(), &order, at)?;
        Ok((func, bound, WindowSpec { partition, order, frame }, ty))
    }

    /// The frame clause; without one, RANGE UNBOUNDED PRECEDING to CURRENT ROW (the
    /// whole partition when there is no ORDER BY: every row is a peer).
    fn bind_frame(&mut self, f: Option<&ast::WindowFrame>, order: &[SortKey], at: Option<usize>) -> Result<WindowFrame> {
        let Some(f) = f else {
            return Ok(WindowFrame {
                units: FrameUnits::Range,
                start: FrameBound::UnboundedPreceding,
                end: FrameBound::CurrentRow,
            });
        };
        let units = match f.units {
            ast::WindowFrameUnits::Rows => FrameUnits::Rows,
            ast::WindowFrameUnits::Range => FrameUnits::Range,
            ast::WindowFrameUnits::Groups => FrameUnits::Groups,
        };
        use ast::WindowFrameBound as B;
        let end_ast = f.end_bound.clone().unwrap_or(B::CurrentRow);
        // PostgreSQL's grammar checks, in its order.
        match (&f.start_bound, &end_ast) {
            (B::Following(None), _) => return Err(windowing("frame start cannot be UNBOUNDED FOLLOWING").at(at)),
            (_, B::Preceding(None)) => return Err(windowing("frame end cannot be UNBOUNDED PRECEDING").at(at)),
            (B::CurrentRow, B::Preceding(Some(_))) => {
                return Err(windowing("frame starting from current row cannot have preceding rows").at(at));
            }
            (B::Following(Some(_)), B::Preceding(Some(_)) | B::CurrentRow) => {
                return Err(windowing("frame starting from following row cannot have preceding rows").at(at));
            }
            _ => {}
        }
        let has_offset = |b: &B| matches!(b, B::Preceding(Some(_)) | B::Following(Some(_)));
        if units == FrameUnits::Range && (has_offset(&f.start_bound) || has_offset(&end_ast)) && order.len() != 1 {
            return Err(windowing("RANGE with offset PRECEDING/FOLLOWING requires exactly one ORDER BY column").at(at));
        }
        if units == FrameUnits::Groups && order.is_empty() {
            return Err(windowing("GROUPS mode requires an ORDER BY clause").at(at));
        }
        let start = self.bind_bound(&f.start_bound, units, order)?;
        let end = self.bind_bound(&end_ast, units, order)?;
        Ok(WindowFrame { units, start, end })
    }

    fn bind_bound(&mut self, b: &ast::WindowFrameBound, units: FrameUnits, order: &[SortKey]) -> Result<FrameBound> {
        use ast::WindowFrameBound as B;
        let (offset_ast, preceding) = match b {
            B::CurrentRow => return Ok(FrameBound::CurrentRow),
            B::Preceding(None) => return Ok(FrameBound::UnboundedPreceding),
            B::Following(None) => return Ok(FrameBound::UnboundedFollowing),
            B::Preceding(Some(x)) => (&**x, true),
            B::Following(Some(x)) => (&**x, false),
        };
        let at = self.pos(offset_ast);
        let what = match units {
            FrameUnits::Rows => "ROWS",
            FrameUnits::Range => "RANGE",
            FrameUnits::Groups => "GROUPS",
        };
        // The offset may not use columns (of this level: outer ones are constants here).
        let mut refs = Vec::new();
        super::expr::column_refs_of(offset_ast, &mut refs);
        let local = refs
            .iter()
            .any(|(t, n)| matches!(self.frames.last().expect("a frame").scope.resolve(t.as_deref(), n), Ok(Some(_))));
        if local {
            return Err(Error::semantic("42P10", format!("argument of {what} must not contain variables")).at(at));
        }
        let offset = self.bind_expr(offset_ast, "window frame")?;
        let (offset, range_key) = match units {
            FrameUnits::Rows | FrameUnits::Groups => {
                if !(super::types::is_integer(&offset.ty) || is_unknown(offset_ast)) {
                    return Err(Error::datatype_mismatch(format!(
                        "argument of {what} must be type bigint, not type {}",
                        offset.ty
                    ))
                    .at(at));
                }
                (self.cast(offset, DataType::BigInt, false, offset_ast)?, None)
            }
            FrameUnits::Range => {
                let key = &order[0];
                use DataType as T;
                let unknown = is_unknown(offset_ast);
                // The type the offset must have for the key's type (PostgreSQL's
                // in_range support functions), and the type key ± offset is computed in.
                let (offset_ty, sum_ty) = match key.expr.ty {
                    T::SmallInt | T::Integer | T::BigInt if super::types::is_integer(&offset.ty) || unknown => {
                        (T::BigInt, T::NUMERIC)
                    }
                    T::Decimal { .. }
                        if super::types::numeric_rank(&offset.ty).is_some_and(|r| r <= 4) || unknown =>
                    {
                        (T::NUMERIC, T::NUMERIC)
                    }
                    T::Real | T::Double if super::types::numeric_rank(&offset.ty).is_some() || unknown => {
                        (T::Double, T::Double)
                    }
                    T::Date | T::Timestamp if offset.ty == T::Interval || unknown => (T::Interval, T::Timestamp),
                    T::Interval if offset.ty == T::Interval || unknown => (T::Interval, T::Interval),
                    kt => {
                        return Err(Error::not_supported(format!(
                            "RANGE with offset PRECEDING/FOLLOWING is not supported for column type {kt} and offset type {}",
                            if unknown { "unknown".to_string() } else { offset.ty.to_string() }
                        ))
                        .at(at));
                    }
                };
                let offset = self.cast(offset, offset_ty, false, offset_ast)?;
                // The farthest key the bound reaches: before the current key in the
                // sort order for PRECEDING (smaller when ascending), after it for
                // FOLLOWING.
                let add = preceding == key.desc;
                let left = if matches!(key.expr.ty, T::Date | T::Timestamp | T::Interval) || key.expr.ty == sum_ty {
                    key.expr.clone()
                } else {
                    Expr::new(ExprKind::Cast { expr: Box::new(key.expr.clone()), explicit: false }, sum_ty)
                };
                let right = if offset.ty == sum_ty || sum_ty == T::Timestamp || sum_ty == T::Interval {
                    offset.clone()
                } else {
                    Expr::new(ExprKind::Cast { expr: Box::new(offset.clone()), explicit: false }, sum_ty)
                };
                let sum = Expr::new(
                    ExprKind::Arith {
                        op: if add { ArithOp::Add } else { ArithOp::Sub },
                        left: Box::new(left),
                        right: Box::new(right),
                    },
                    sum_ty,
                );
                (offset, Some(sum))
            }
        };
        Ok(if preceding {
            FrameBound::Preceding { offset, range_key }
        } else {
            FrameBound::Following { offset, range_key }
        })
    }

    /// Puts the window node of `state` on `plan` (under the projection of `exprs`)
    /// and points the placeholders in `exprs` at its result columns.
    pub(super) fn finish_windows(plan: Plan, state: WindowState, exprs: &mut [Expr]) -> Plan {
        if state.calls.is_empty() {
            return plan;
        }
        let width = plan.schema.len();
        fn renumber(e: &mut Expr, width: usize) {
            if let ExprKind::Column(i) = &mut e.kind {
                if *i >= WINDOW_COLUMN_BASE {
                    *i = *i - WINDOW_COLUMN_BASE + width;
                }
                return;
            }
            for_each_child_mut(e, &mut |c| crate::stack::guarded(|| renumber(c, width)));
        }
        for e in exprs.iter_mut() {
            renumber(e, width);
        }
        let mut schema = plan.schema.clone();
        schema.extend(state.calls.iter().map(|c| OutputColumn {
            name: crate::plan::explain::window_func_name(c.func).to_string(),
            ty: c.ty,
        }));
        Plan::new(
            Node::Window {
                input: Box::new(plan),
                specs: state.specs,
                calls: state.calls,
            },
            schema,
        )
    }

    /// Takes the window state of the current SELECT.
    pub(super) fn take_windows(&mut self) -> Option<WindowState> {
        self.window.take()
    }
}

fn lookup(named: &[(String, ast::WindowSpec)], n: &ast::Ident) -> Result<ast::WindowSpec> {
    let name = ident(n);
    named
        .iter()
        .find(|(m, _)| *m == name)
        .map(|(_, w)| w.clone())
        .ok_or_else(|| Error::semantic("42704", format!("window \"{name}\" does not exist")))
}

/// `(w ORDER BY … frame)`: window `w` copied and extended, with PostgreSQL's rules.
fn merge_named(named: &[(String, ast::WindowSpec)], w: &ast::WindowSpec) -> Result<ast::WindowSpec> {
    let Some(base_name) = &w.window_name else {
        return Ok(w.clone());
    };
    let base = lookup(named, base_name)?;
    let n = ident(base_name);
    if !w.partition_by.is_empty() {
        return Err(windowing(format!("cannot override PARTITION BY clause of window \"{n}\"")));
    }
    if !w.order_by.is_empty() && !base.order_by.is_empty() {
        return Err(windowing(format!("cannot override ORDER BY clause of window \"{n}\"")));
    }
    if base.window_frame.is_some() {
        return Err(windowing(format!("cannot copy window \"{n}\" because it has a frame clause")));
    }
    Ok(ast::WindowSpec {
        window_name: None,
        partition_by: base.partition_by,
        order_by: if w.order_by.is_empty() { base.order_by } else { w.order_by.clone() },
        window_frame: w.window_frame.clone(),
    })
}
