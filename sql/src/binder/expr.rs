//! Binding expressions: names, literals, operators, functions, aggregates and
//! subqueries, with PostgreSQL's implicit casts.

use sqlparser::ast::{self, BinaryOperator as Op, UnaryOperator};

use super::scope::Scope;
use super::types::{common_type, implicit_castable, is_integer, numeric_rank, type_name};
use super::{Binder, ident, is_unknown};
use crate::error::{Error, Result};
use crate::expr::{ArithOp, CmpOp, Expr, ExprKind, Func, SubqueryExpr, SubqueryKind};
use crate::plan::{AggCall, AggFunc};
use crate::types::{DataType, DateField, Decimal, Interval, Value};

/// The span of an expression, as sqlparser's `Spanned::span` computes it (the union of
/// its parts' spans, an empty span standing for none), without recursing over the
/// shapes that chain: a chain of operators is a tree as deep as it is long (thousands
/// of levels within the parser's limits), and `span()` takes a stack frame per level
/// on whatever stack the caller has left. Those shapes are walked with a heap stack;
/// any other node's own `span()` runs on the guarded stack.
pub(crate) fn expr_span(e: &ast::Expr) -> sqlparser::tokenizer::Span {
    use sqlparser::ast::Spanned;
    use sqlparser::tokenizer::Span;
    let mut span = Span::empty();
    let mut todo = vec![e];
    while let Some(e) = todo.pop() {
        match e {
            ast::Expr::BinaryOp { left, right, .. }
            | ast::Expr::IsDistinctFrom(left, right)
            | ast::Expr::IsNotDistinctFrom(left, right)
            | ast::Expr::AnyOp { left, right, .. }
            | ast::Expr::AllOp { left, right, .. }
            | ast::Expr::Like { expr: left, pattern: right, .. }
            | ast::Expr::ILike { expr: left, pattern: right, .. }
            | ast::Expr::SimilarTo { expr: left, pattern: right, .. }
            | ast::Expr::AtTimeZone { timestamp: left, time_zone: right } => {
                todo.push(right);
                todo.push(left);
            }
            ast::Expr::Between { expr, low, high, .. } => {
                todo.push(high);
                todo.push(low);
                todo.push(expr);
            }
            ast::Expr::InList { expr, list, .. } => {
                todo.extend(list.iter().rev());
                todo.push(expr);
            }
            ast::Expr::IsFalse(x)
            | ast::Expr::IsNotFalse(x)
            | ast::Expr::IsTrue(x)
            | ast::Expr::IsNotTrue(x)
            | ast::Expr::IsNull(x)
            | ast::Expr::IsNotNull(x)
            | ast::Expr::IsUnknown(x)
            | ast::Expr::IsNotUnknown(x)
            | ast::Expr::Nested(x)
            | ast::Expr::UnaryOp { expr: x, .. }
            | ast::Expr::Cast { expr: x, .. } => todo.push(x),
            other => span = span.union(&crate::stack::guarded(|| other.span())),
        }
    }
    span
}

/// The aggregation a SELECT is binding its output expressions over.
pub struct AggState {
    /// Frame depth of the aggregating query.
    pub level: usize,
    /// Group expressions, over the FROM scope.
    pub groups: Vec<Expr>,
    /// The grouping sets (indexes into `groups`); empty for a plain GROUP BY. With
    /// sets the aggregation's output has the set's index after the groups.
    pub sets: Vec<Vec<usize>>,
    pub aggs: Vec<AggCall>,
    /// The FROM scope (for matching expressions against group expressions).
    pub from_scope: Scope,
}

impl AggState {
    /// The aggregation's output column of its first aggregate: after the groups
    /// and, with grouping sets, the set's index.
    pub fn first_agg_column(&self) -> usize {
        self.groups.len() + usize::from(!self.sets.is_empty())
    }
}

pub fn aggregate_func(name: &str) -> Option<AggFunc> {
    Some(match name {
        "count" => AggFunc::Count,
        "sum" => AggFunc::Sum,
        "avg" => AggFunc::Avg,
        "min" => AggFunc::Min,
        "max" => AggFunc::Max,
        "string_agg" => AggFunc::StringAgg,
        "bool_and" | "every" => AggFunc::BoolAnd,
        "bool_or" => AggFunc::BoolOr,
        "stddev" | "stddev_samp" => AggFunc::StddevSamp,
        "stddev_pop" => AggFunc::StddevPop,
        "variance" | "var_samp" => AggFunc::VarSamp,
        "var_pop" => AggFunc::VarPop,
        "covar_pop" => AggFunc::CovarPop,
        "covar_samp" => AggFunc::CovarSamp,
        "corr" => AggFunc::Corr,
        "regr_slope" => AggFunc::RegrSlope,
        "regr_intercept" => AggFunc::RegrIntercept,
        "regr_count" => AggFunc::RegrCount,
        "regr_r2" => AggFunc::RegrR2,
        "regr_avgx" => AggFunc::RegrAvgX,
        "regr_avgy" => AggFunc::RegrAvgY,
        "regr_sxx" => AggFunc::RegrSxx,
        "regr_syy" => AggFunc::RegrSyy,
        "regr_sxy" => AggFunc::RegrSxy,
        _ => return None,
    })
}

/// The `ORDER BY` inside a call's argument list (`string_agg(x, ',' ORDER BY y)`).
pub(super) fn call_order(f: &ast::Function) -> &[ast::OrderByExpr] {
    match &f.args {
        ast::FunctionArguments::List(l) => l
            .clauses
            .iter()
            .find_map(|c| match c {
                ast::FunctionArgumentClause::OrderBy(o) => Some(o.as_slice()),
                _ => None,
            })
            .unwrap_or(&[]),
        _ => &[],
    }
}

fn func_name(f: &ast::Function) -> String {
    f.name
        .0
        .last()
        .map(|p| match p {
            ast::ObjectNamePart::Identifier(i) => ident(i),
            other => other.to_string(),
        })
        .unwrap_or_default()
}

/// The plain arguments of a call (`f(a, b)`), for looking at their columns.
fn plain_args(f: &ast::Function) -> Vec<&ast::Expr> {
    match &f.args {
        ast::FunctionArguments::List(l) => l
            .args
            .iter()
            .filter_map(|a| match a {
                ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(x)) => Some(x),
                _ => None,
            })
            .collect(),
        _ => vec![],
    }
}

/// The column references in `e` outside subqueries, as (qualifier, name).
fn column_refs(e: &ast::Expr, out: &mut Vec<(Option<String>, String)>) {
    visit(e, &mut |x| match x {
        ast::Expr::Identifier(i) => out.push((None, ident(i))),
        ast::Expr::CompoundIdentifier(parts) if parts.len() >= 2 => {
            let n = parts.len();
            out.push((Some(ident(&parts[n - 2])), ident(&parts[n - 1])));
        }
        _ => {}
    });
}

/// The column references in `e` outside subqueries, as (qualifier, name).
pub(super) fn column_refs_of(e: &ast::Expr, out: &mut Vec<(Option<String>, String)>) {
    column_refs(e, out)
}

/// Calls `f` on `e` and its sub-expressions, not descending into subqueries.
fn visit(e: &ast::Expr, f: &mut dyn FnMut(&ast::Expr)) {
    // A chain of operators is a tree as deep as it is long.
    crate::stack::guarded(|| visit_guarded(e, f))
}

fn visit_guarded(e: &ast::Expr, f: &mut dyn FnMut(&ast::Expr)) {
    f(e);
    use ast::Expr as E;
    match e {
        E::BinaryOp { left, right, .. } => {
            visit(left, f);
            visit(right, f);
        }
        E::UnaryOp { expr, .. }
        | E::Nested(expr)
        | E::IsNull(expr)
        | E::IsNotNull(expr)
        | E::IsTrue(expr)
        | E::IsNotTrue(expr)
        | E::IsFalse(expr)
        | E::IsNotFalse(expr)
        | E::IsUnknown(expr)
        | E::IsNotUnknown(expr)
        | E::Cast { expr, .. }
        | E::Extract { expr, .. }
        | E::Ceil { expr, .. }
        | E::Floor { expr, .. }
        | E::Collate { expr, .. } => visit(expr, f),
        E::IsDistinctFrom(a, b) | E::IsNotDistinctFrom(a, b) => {
            visit(a, f);
            visit(b, f);
        }
        E::InList { expr, list, .. } => {
            visit(expr, f);
            list.iter().for_each(|x| visit(x, f));
        }
        E::InSubquery { expr, .. } => visit(expr, f),
        E::Between {
            expr, low, high, ..
        } => {
            visit(expr, f);
            visit(low, f);
            visit(high, f);
        }
        E::Like { expr, pattern, .. } | E::ILike { expr, pattern, .. } => {
            visit(expr, f);
            visit(pattern, f);
        }
        E::Position { expr, r#in } => {
            visit(expr, f);
            visit(r#in, f);
        }
        E::Substring {
            expr,
            substring_from,
            substring_for,
            ..
        } => {
            visit(expr, f);
            if let Some(x) = substring_from {
                visit(x, f);
            }
            if let Some(x) = substring_for {
                visit(x, f);
            }
        }
        E::Trim {
            expr, trim_what, ..
        } => {
            visit(expr, f);
            if let Some(x) = trim_what {
                visit(x, f);
            }
        }
        E::Case {
            operand,
            conditions,
            else_result,
            ..
        } => {
            if let Some(x) = operand {
                visit(x, f);
            }
            for c in conditions {
                visit(&c.condition, f);
                visit(&c.result, f);
            }
            if let Some(x) = else_result {
                visit(x, f);
            }
        }
        E::Function(func) => {
            if let ast::FunctionArguments::List(l) = &func.args {
                for a in &l.args {
                    if let ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(x)) = a {
                        visit(x, f);
                    }
                }
            }
            // An aggregate in an inline window's PARTITION BY or ORDER BY makes the
            // query aggregate (`rank() over (order by sum(x))`).
            if let Some(ast::WindowType::WindowSpec(w)) = &func.over {
                w.partition_by.iter().for_each(|x| visit(x, f));
                w.order_by.iter().for_each(|o| visit(&o.expr, f));
            }
        }
        E::AnyOp { left, .. } | E::AllOp { left, .. } => visit(left, f),
        _ => {}
    }
}

fn cmp_op(op: &Op) -> Option<CmpOp> {
    Some(match op {
        Op::Eq => CmpOp::Eq,
        Op::NotEq => CmpOp::NotEq,
        Op::Lt => CmpOp::Lt,
        Op::LtEq => CmpOp::LtEq,
        Op::Gt => CmpOp::Gt,
        Op::GtEq => CmpOp::GtEq,
        _ => return None,
    })
}

fn arith_op(op: &Op) -> Option<ArithOp> {
    Some(match op {
        Op::Plus => ArithOp::Add,
        Op::Minus => ArithOp::Sub,
        Op::Multiply => ArithOp::Mul,
        Op::Divide => ArithOp::Div,
        Op::Modulo => ArithOp::Mod,
        _ => return None,
    })
}


/// The type of a numeric literal: integer, bigint or numeric.
fn number_literal(text: &str) -> Result<Value> {
    if let Ok(i) = text.parse::<i32>() {
        return Ok(Value::Integer(i));
    }
    if let Ok(i) = text.parse::<i64>() {
        return Ok(Value::BigInt(i));
    }
    // Beyond numeric's 38 digits the value cannot be held exactly, and a double would
    // silently change it (`…890 - …889` would be 0): refuse. A literal cast straight to
    // a float type (`1e300::float8`) never comes here; see `float_literal`.
    let out_of_range = || {
        Error::data(
            "22003",
            format!(
                "numeric literal {text} is out of range: BeeDB's numeric holds at most 38 digits \
                 (cast it to double precision, as in 1e300::float8, if an approximate value will do)"
            ),
        )
    };
    let d = Decimal::parse(text).map_err(|_| out_of_range())?;
    // `Decimal::parse` rounds to 38 digits and 38 fraction digits, as a cast does; a
    // literal must not change silently (`1e-50` was 0, and a 42-digit fraction compared
    // equal to 0). PostgreSQL keeps such literals exact; BeeDB's numeric cannot, so it
    // refuses them like a literal with too many integer digits. Trailing zeros are no
    // digits of the value here (but `Decimal::parse` refuses a literal of more than 38
    // digits, zeros included, as out of range).
    if significant_digits(text).is_some_and(|lit| Some(lit) != significant_digits(&d.to_string())) {
        return Err(Error::data(
            "22003",
            format!(
                "numeric literal {text} cannot be held exactly: BeeDB's numeric holds at most 38 \
                 significant digits, at most 38 of them after the point (cast it to double \
                 precision, as in 1e-50::float8, if an approximate value will do)"
            ),
        ));
    }
    Ok(Value::Decimal(d))
}

/// The value of a decimal numeral (`digits[.digits][e[±]digits]`, or the digits after
/// a `-`) as its significant digits and the power of ten of the last one: `(b"15", -1)`
/// for `1.50`, `(b"", 0)` for zero; `None` for anything else.
fn significant_digits(text: &str) -> Option<(Vec<u8>, i64)> {
    let text = text.strip_prefix('-').unwrap_or(text);
    let (mantissa, exponent) = match text.find(['e', 'E']) {
        Some(at) => (&text[..at], text[at + 1..].parse::<i64>().ok()?),
        None => (text, 0),
    };
    let mut digits = Vec::with_capacity(mantissa.len());
    let mut fraction = 0i64;
    let mut point = false;
    for b in mantissa.bytes() {
        match b {
            b'0'..=b'9' => {
                if !(digits.is_empty() && b == b'0') {
                    digits.push(b);
                }
                fraction += point as i64;
            }
            b'.' if !point => point = true,
            _ => return None,
        }
    }
    let mut power = exponent.checked_sub(fraction)?;
    while digits.last() == Some(&b'0') {
        digits.pop();
        power += 1;
    }
    if digits.is_empty() {
        power = 0;
    }
    Some((digits, power))
}

/// A numeric literal (or a negated one) that is the operand of a cast to `ty`, when `ty`
/// is a float type: the value is parsed as a double directly, as PostgreSQL's numeric
/// to float conversion would give it, so that literals past numeric's 38 digits
/// (`1.5e300::float8`) still work where they are meant approximately.
fn float_literal(e: &ast::Expr, ty: &DataType) -> Option<f64> {
    if !matches!(ty, DataType::Double | DataType::Real) {
        return None;
    }
    let (negative, v) = match e {
        ast::Expr::Value(v) => (false, v),
        ast::Expr::UnaryOp { op: UnaryOperator::Minus, expr } => match &**expr {
            ast::Expr::Value(v) => (true, v),
            _ => return None,
        },
        _ => return None,
    };
    let ast::Value::Number(n, _) = &v.value else {
        return None;
    };
    let f = n.parse::<f64>().ok().filter(|f| f.is_finite())?;
    Some(if negative { -f } else { f })
}

/// A numeric literal that BeeDB's numeric cannot hold (more than 38 digits, or digits
/// it would round away), as a double. PostgreSQL's numeric holds it exactly, and where
/// the literal meets a float type (a cast, a float column it is stored in or compared
/// with, arithmetic with a float) it becomes that float: there BeeDB binds it as
/// float8 directly, the same answer. Anywhere else it stays an error (22003), never a
/// silent double. `None` for any other expression and for literals numeric holds.
pub(super) fn wide_literal(e: &ast::Expr) -> Option<f64> {
    let text = match e {
        ast::Expr::Value(v) => match &v.value {
            ast::Value::Number(n, _) => n.clone(),
            _ => return None,
        },
        ast::Expr::UnaryOp { op: UnaryOperator::Minus, expr } => match &**expr {
            ast::Expr::Value(v) => match &v.value {
                ast::Value::Number(n, _) => format!("-{n}"),
                _ => return None,
            },
            _ => return None,
        },
        _ => return None,
    };
    if number_literal(&text).is_ok() {
        return None;
    }
    text.parse::<f64>().ok().filter(|f| f.is_finite())
}

/// `sign (a ^ b ^ …)` as sqlparser parsed `- a ^ b ^ …` (without parentheses),
/// rewritten to PostgreSQL's reading `((sign a) ^ b) ^ …`: the sign goes onto the
/// leftmost operand of the chain of `^` (which associates to the left).
fn sign_onto_power_base(sign: UnaryOperator, power: &ast::Expr) -> ast::Expr {
    match power {
        ast::Expr::BinaryOp { left, op: Op::PGExp, right } => ast::Expr::BinaryOp {
            left: Box::new(sign_onto_power_base(sign, left)),
            op: Op::PGExp,
            right: right.clone(),
        },
        base => ast::Expr::UnaryOp { op: sign, expr: Box::new(base.clone()) },
    }
}

impl Binder<'_> {
    /// The FROM scope of query level `level` (under an aggregation: the scope its
    /// aggregate arguments see).
    fn from_scope_at(&self, level: usize) -> &Scope {
        if let Some(a) = &self.agg
            && a.level == level
        {
            return &a.from_scope;
        }
        for a in self.outer_aggs.iter().flatten() {
            if a.level == level {
                return &a.from_scope;
            }
        }
        &self.frames[level].scope
    }

    /// The query level an aggregate over `args` belongs to, as in SQL: the innermost
    /// level any column of its arguments comes from; the current level when the
    /// arguments have no columns.
    fn agg_level(&self, args: &[&ast::Expr]) -> usize {
        let top = self.frames.len() - 1;
        let mut refs = Vec::new();
        for a in args {
            column_refs(a, &mut refs);
        }
        let mut best: Option<usize> = None;
        for (t, n) in &refs {
            let mut level = top;
            loop {
                if matches!(self.from_scope_at(level).resolve(t.as_deref(), n), Ok(Some(_))) {
                    best = best.max(Some(level));
                    break;
                }
                if level == 0 || self.frames[level].barrier {
                    break;
                }
                level -= 1;
            }
            if best == Some(top) {
                break;
            }
        }
        best.unwrap_or(top)
    }

    /// Whether `f` names an aggregate, built in or registered by the application.
    fn names_aggregate(&self, f: &ast::Function) -> bool {
        let name = func_name(f);
        aggregate_func(&name).is_some()
            || self
                .functions
                .is_some_and(|fs| fs.has_aggregate_named(&name))
    }

    /// Whether `e` contains an aggregate call outside subqueries.
    pub(super) fn contains_aggregate(&self, e: &ast::Expr) -> bool {
        let mut found = false;
        visit(e, &mut |x| {
            if let ast::Expr::Function(f) = x
                && f.over.is_none()
                && self.names_aggregate(f)
            {
                found = true;
            }
        });
        found
    }

    /// Whether `e` calls an aggregate that belongs to the current level (not one over
    /// only outer columns, not one inside a subquery).
    pub(super) fn has_own_aggregate(&self, e: &ast::Expr) -> bool {
        let top = self.frames.len() - 1;
        let mut found = false;
        visit(e, &mut |x| {
            // grouping() makes its level aggregate as an aggregate does.
            if let ast::Expr::Function(f) = x
                && f.over.is_none()
                && (self.names_aggregate(f) || func_name(f) == "grouping")
                && self.agg_level(&plain_args(f)) == top
            {
                found = true;
            }
        });
        found
    }

    fn in_agg_level(&self) -> bool {
        self.agg
            .as_ref()
            .is_some_and(|a| a.level == self.frames.len() - 1)
    }

    /// Binds a scalar expression. `clause` names where it appears, for messages
    /// such as "aggregate functions are not allowed in WHERE".
    pub fn bind_expr(&mut self, e: &ast::Expr, clause: &'static str) -> Result<Expr> {
        if self.in_agg_level()
            && let Some(b) = self.match_group(e)? {
                return Ok(b);
            }
        // Expressions nest as deep as the parser allows: recurse on fresh stack
        // segments rather than overflow the caller's stack.
        stacker::maybe_grow(256 * 1024, 4 * 1024 * 1024, || self.bind_expr_inner(e, clause)).map_err(|err| {
            // The innermost expression's position wins: take it once, not again at
            // every level of a chain thousands deep on the way out (each a walk of
            // the whole subtree).
            if err.position.is_some() { err } else { err.at(self.pos_expr(e)) }
        })
    }

    /// Byte offset of an expression in the statement text: [`Binder::pos`] for
    /// expressions, through [`expr_span`] (which does not recurse over operator
    /// chains).
    fn pos_expr(&self, e: &ast::Expr) -> Option<usize> {
        crate::parser::span_offset(self.sql, expr_span(e))
    }

    /// Above an aggregation: `e` as a reference to a group expression, if it is one.
    fn match_group(&mut self, e: &ast::Expr) -> Result<Option<Expr>> {
        if matches!(e, ast::Expr::Value(_)) {
            return Ok(None);
        }
        if let ast::Expr::Function(f) = e
            && (f.over.is_some() || self.names_aggregate(f) || func_name(f) == "grouping") {
                return Ok(None);
            }
        let state = self.agg.take().expect("in aggregate level");
        let saved = self.set_scope(state.from_scope.clone());
        let r = self.bind_expr_inner(e, "GROUP BY");
        self.set_scope(saved);
        let found = match r {
            Ok(b) => state
                .groups
                .iter()
                .position(|g| *g == b)
                .map(|i| Expr::column(i, b.ty)),
            Err(_) => None,
        };
        self.agg = Some(state);
        Ok(found)
    }

    fn bind_expr_inner(&mut self, e: &ast::Expr, clause: &'static str) -> Result<Expr> {
        use ast::Expr as E;
        match e {
            E::Identifier(i) => self.bind_column(None, &ident(i), e),
            E::CompoundIdentifier(parts) => {
                let names: Vec<String> = parts.iter().map(ident).collect();
                match names.as_slice() {
                    [t, c] => self.bind_column(Some(t), c, e),
                    [s, t, c] if s == "public" || s == "main" => self.bind_column(Some(t), c, e),
                    _ => Err(Error::not_supported(format!(
                        "column reference {}",
                        names.join(".")
                    ))),
                }
            }
            E::Value(v) => self.bind_value(&v.value),
            E::Nested(inner) => self.bind_expr(inner, clause),
            E::TypedString(ts) => {
                let ty = super::types::data_type(&ts.data_type)?;
                let text = match &ts.value.value {
                    ast::Value::SingleQuotedString(s) => s.clone(),
                    other => other.to_string(),
                };
                Ok(Expr::literal(Value::parse(&text, &ty)?, ty))
            }
            E::Interval(iv) => self.bind_interval(iv),
            E::Cast {
                expr,
                data_type,
                kind,
                ..
            } => {
                if !matches!(kind, ast::CastKind::Cast | ast::CastKind::DoubleColon) {
                    let name = if matches!(kind, ast::CastKind::TryCast) { "TRY_CAST" } else { "SAFE_CAST" };
                    return Err(Error::not_supported(name));
                }
                let ty = super::types::data_type(data_type)?;
                let b = match float_literal(expr, &ty) {
                    Some(f) => Expr::literal(Value::Double(f), DataType::Double),
                    None => self.bind_expr(expr, clause)?,
                };
                if !self.castable(&b.ty, &ty, expr) {
                    return Err(Error::semantic(
                        "42846",
                        format!("cannot cast type {} to {}", b.ty, ty),
                    ));
                }
                self.cast(b, ty, true, expr)
            }
            // PostgreSQL binds a prefix sign tighter than `^` (`- 2 ^ 2` is 4);
            // sqlparser binds `^` tighter: move the sign onto the leftmost operand of
            // the `^` chain it parsed, as PostgreSQL's grammar would have put it.
            E::UnaryOp { op: op @ (UnaryOperator::Minus | UnaryOperator::Plus), expr: inner }
                if matches!(&**inner, E::BinaryOp { op: Op::PGExp, .. }) =>
            {
                let rewritten = sign_onto_power_base(*op, inner);
                self.bind_expr(&rewritten, clause)
            }
            E::UnaryOp { op, expr } => match op {
                UnaryOperator::Not => {
                    let b = self.bind_bool(expr, clause, "NOT")?;
                    Ok(Expr::new(ExprKind::Not(Box::new(b)), DataType::Boolean))
                }
                UnaryOperator::Minus => {
                    if let E::Value(v) = &**expr
                        && let ast::Value::Number(n, _) = &v.value {
                            return Ok(super::literal(number_literal(&format!("-{n}"))?));
                        }
                    let b = self.bind_expr(expr, clause)?;
                    let b = if is_unknown(expr) { self.cast(b, DataType::NUMERIC, false, expr)? } else { b };
                    if numeric_rank(&b.ty).is_none() && b.ty != DataType::Interval {
                        return Err(Error::undefined_function(format!(
                            "operator does not exist: - {}",
                            b.ty
                        )));
                    }
                    let ty = b.ty;
                    Ok(Expr::new(ExprKind::Neg(Box::new(b)), ty))
                }
                UnaryOperator::Plus => {
                    let b = self.bind_expr(expr, clause)?;
                    if numeric_rank(&b.ty).is_none() && b.ty != DataType::Interval {
                        return Err(Error::undefined_function(format!(
                            "operator does not exist: + {}",
                            b.ty
                        )));
                    }
                    Ok(b)
                }
                other => Err(Error::not_supported(format!("operator {other}"))),
            },
            E::BinaryOp { left, op, right } => self.bind_binary(left, op, right, clause),
            E::IsNull(x) | E::IsNotNull(x) => {
                let b = self.bind_expr(x, clause)?;
                Ok(Expr::new(
                    ExprKind::IsNull {
                        expr: Box::new(b),
                        negated: matches!(e, E::IsNotNull(_)),
                    },
                    DataType::Boolean,
                ))
            }
            E::IsTrue(x) | E::IsNotTrue(x) | E::IsFalse(x) | E::IsNotFalse(x) => {
                let b = self.bind_bool(x, clause, "IS")?;
                Ok(Expr::new(
                    ExprKind::IsBool {
                        expr: Box::new(b),
                        value: matches!(e, E::IsTrue(_) | E::IsNotTrue(_)),
                        negated: matches!(e, E::IsNotTrue(_) | E::IsNotFalse(_)),
                    },
                    DataType::Boolean,
                ))
            }
            E::IsUnknown(x) | E::IsNotUnknown(x) => {
                let b = self.bind_bool(x, clause, "IS")?;
                Ok(Expr::new(
                    ExprKind::IsNull {
                        expr: Box::new(b),
                        negated: matches!(e, E::IsNotUnknown(_)),
                    },
                    DataType::Boolean,
                ))
            }
            E::IsDistinctFrom(a, b) | E::IsNotDistinctFrom(a, b) => {
                let (l, r) = self.bind_pair(a, b, clause, "IS DISTINCT FROM")?;
                Ok(Expr::new(
                    ExprKind::IsDistinctFrom {
                        left: Box::new(l),
                        right: Box::new(r),
                        negated: matches!(e, E::IsNotDistinctFrom(..)),
                    },
                    DataType::Boolean,
                ))
            }
            E::Between {
                expr,
                negated,
                low,
                high,
            } => {
                let (x1, lo) = self.bind_pair(expr, low, clause, ">=")?;
                let (x2, hi) = self.bind_pair(expr, high, clause, "<=")?;
                let cmp = |op, a: Expr, b: Expr| {
                    Expr::new(
                        ExprKind::Compare {
                            op,
                            left: Box::new(a),
                            right: Box::new(b),
                        },
                        DataType::Boolean,
                    )
                };
                Ok(if *negated {
                    Expr::new(
                        ExprKind::Or(vec![cmp(CmpOp::Lt, x1, lo), cmp(CmpOp::Gt, x2, hi)]),
                        DataType::Boolean,
                    )
                } else {
                    Expr::new(
                        ExprKind::And(vec![cmp(CmpOp::GtEq, x1, lo), cmp(CmpOp::LtEq, x2, hi)]),
                        DataType::Boolean,
                    )
                })
            }
            E::InList {
                expr,
                list,
                negated,
            } if self.row_items(expr).is_some() => {
                // `row IN (row1, row2, …)` is `row = row1 OR row = row2 …`, as in
                // PostgreSQL (each comparison three-valued).
                let mut alternatives = Vec::with_capacity(list.len());
                for item in list {
                    alternatives.push(self.bind_row_compare(CmpOp::Eq, expr, item, clause)?);
                }
                let any = Expr::new(ExprKind::Or(alternatives), DataType::Boolean);
                Ok(if *negated { Expr::new(ExprKind::Not(Box::new(any)), DataType::Boolean) } else { any })
            }
            E::InList {
                expr,
                list,
                negated,
            } => {
                let mut all: Vec<&ast::Expr> = vec![expr];
                all.extend(list.iter());
                let mut bound = self.bind_unified(&all, clause, "IN")?;
                let x = bound.remove(0);
                Ok(Expr::new(
                    ExprKind::InList {
                        expr: Box::new(x),
                        list: bound,
                        negated: *negated,
                    },
                    DataType::Boolean,
                ))
            }
            E::Like {
                negated,
                expr,
                pattern,
                escape_char,
                any,
            }
            | E::ILike {
                negated,
                expr,
                pattern,
                escape_char,
                any,
            } => {
                if *any {
                    return Err(Error::not_supported("LIKE ANY"));
                }
                let x = self.bind_expr(expr, clause)?;
                let p = self.bind_expr(pattern, clause)?;
                // `char(n) LIKE` matches the blank-padded value (PostgreSQL's
                // bpcharlike); any other operand is text.
                let x = if matches!(x.ty, DataType::Char(_)) {
                    x
                } else {
                    self.text_operand(x, expr, "~~")?
                };
                let p = self.text_operand(p, pattern, "~~")?;
                let escape = match escape_char.as_deref() {
                    None => None,
                    Some(E::Value(v)) => match &v.value {
                        ast::Value::SingleQuotedString(s) => {
                            let mut cs = s.chars();
                            match (cs.next(), cs.next()) {
                                (None, _) => None,
                                (Some(c), None) => Some(c),
                                _ => {
                                    return Err(Error::data(
                                        "22025",
                                        "invalid escape string",
                                    ));
                                }
                            }
                        }
                        _ => return Err(Error::not_supported("non-literal ESCAPE")),
                    },
                    Some(_) => return Err(Error::not_supported("non-literal ESCAPE")),
                };
                Ok(Expr::new(
                    ExprKind::Like {
                        expr: Box::new(x),
                        pattern: Box::new(p),
                        negated: *negated,
                        case_insensitive: matches!(e, E::ILike { .. }),
                        escape: escape.or(Some('\\')),
                    },
                    DataType::Boolean,
                ))
            }
            E::Case {
                operand,
                conditions,
                else_result,
                ..
            } => self.bind_case(operand.as_deref(), conditions, else_result.as_deref(), clause),
            E::Function(f) => self.bind_function(f, e, clause),
            E::Extract { field, expr, .. } => {
                let name = field.to_string();
                let b = self.bind_expr(expr, clause)?;
                let field = DateField::parse(&name).ok_or_else(|| {
                    Error::semantic(
                        "22023",
                        format!("unit \"{}\" not recognized for type {}", name.to_lowercase(), b.ty),
                    )
                })?;
                let b = if is_unknown(expr) { self.cast(b, DataType::Timestamp, false, expr)? } else { b };
                if !matches!(b.ty, DataType::Date | DataType::Timestamp | DataType::Interval) {
                    return Err(Error::undefined_function(format!(
                        "function extract(unknown, {}) does not exist",
                        b.ty
                    )));
                }
                Ok(Expr::new(
                    ExprKind::Extract {
                        field,
                        expr: Box::new(b),
                    },
                    DataType::NUMERIC,
                ))
            }
            E::Substring {
                expr,
                substring_from,
                substring_for,
                ..
            } => {
                let one = ast::Expr::value(ast::Value::Number("1".into(), false));
                let mut args: Vec<&ast::Expr> = vec![expr];
                match substring_from {
                    Some(x) => args.push(x),
                    None => args.push(&one),
                }
                if let Some(x) = substring_for {
                    args.push(x);
                }
                self.call_scalar("substring", &args, clause)
            }
            E::Trim {
                expr,
                trim_where,
                trim_what,
                trim_characters,
            } => {
                if trim_characters.is_some() {
                    return Err(Error::not_supported("trim with a character list"));
                }
                let name = match trim_where {
                    None | Some(ast::TrimWhereField::Both) => "btrim",
                    Some(ast::TrimWhereField::Leading) => "ltrim",
                    Some(ast::TrimWhereField::Trailing) => "rtrim",
                };
                let mut args: Vec<&ast::Expr> = vec![expr];
                if let Some(w) = trim_what {
                    args.push(w);
                }
                self.call_scalar(name, &args, clause)
            }
            E::Position { expr, r#in } => self.call_scalar("strpos", &[r#in, expr], clause),
            E::Ceil { expr, field } | E::Floor { expr, field } => {
                if !matches!(field, ast::CeilFloorKind::DateTimeField(ast::DateTimeField::NoDateTime)) {
                    return Err(Error::not_supported("CEIL/FLOOR with a field or scale"));
                }
                let name = if matches!(e, E::Ceil { .. }) { "ceil" } else { "floor" };
                self.call_scalar(name, &[expr], clause)
            }
            E::Exists { subquery, negated } => {
                let (id, correlated, _) = self.bind_subquery(subquery, clause)?;
                let s = Expr::new(
                    ExprKind::Subquery(Box::new(SubqueryExpr {
                        id,
                        kind: SubqueryKind::Exists,
                        correlated,
                    })),
                    DataType::Boolean,
                );
                Ok(if *negated {
                    Expr::new(ExprKind::Not(Box::new(s)), DataType::Boolean)
                } else {
                    s
                })
            }
            E::Subquery(q) => {
                let (id, correlated, plan) = self.bind_subquery(q, clause)?;
                if plan.schema.len() != 1 {
                    return Err(Error::semantic("42601", "subquery must return only one column"));
                }
                Ok(Expr::new(
                    ExprKind::Subquery(Box::new(SubqueryExpr {
                        id,
                        kind: SubqueryKind::Scalar,
                        correlated,
                    })),
                    plan.schema[0].ty,
                ))
            }
            E::InSubquery {
                expr,
                subquery,
                negated,
            } if self.row_items(expr).is_some() => {
                let items = self.row_items(expr).expect("a row");
                self.bind_in_row(&items, subquery, *negated, clause)
            }
            E::InSubquery {
                expr,
                subquery,
                negated,
            } => {
                let x = self.bind_expr(expr, clause)?;
                self.bind_quantified(x, expr, subquery, None, false, *negated, clause)
            }
            E::AnyOp {
                left,
                compare_op,
                right,
                ..
            }
            | E::AllOp {
                left,
                compare_op,
                right,
            } => {
                let op = cmp_op(compare_op)
                    .ok_or_else(|| Error::not_supported(format!("{compare_op} ANY/ALL")))?;
                let E::Subquery(q) = &**right else {
                    return Err(Error::not_supported("ANY/ALL over an array is not supported"));
                };
                if let Some(items) = self.row_items(left) {
                    // `row = ANY (q)` is `row IN (q)`, `row <> ALL (q)` is `row NOT IN (q)`.
                    return match (op, matches!(e, E::AllOp { .. })) {
                        (CmpOp::Eq, false) => self.bind_in_row(&items, q, false, clause),
                        (CmpOp::NotEq, true) => self.bind_in_row(&items, q, true, clause),
                        _ => Err(Error::not_supported(format!(
                            "row comparison with {} {} (subquery) is not supported",
                            op.symbol(),
                            if matches!(e, E::AllOp { .. }) { "ALL" } else { "ANY" }
                        ))),
                    };
                }
                let x = self.bind_expr(left, clause)?;
                self.bind_quantified(x, left, q, Some(op), matches!(e, E::AllOp { .. }), false, clause)
            }
            other => Err(Error::not_supported(format!("expression {other} is not supported"))),
        }
    }

    fn bind_column(&mut self, table: Option<&str>, name: &str, e: &ast::Expr) -> Result<Expr> {
        if let Some(b) = self.resolve_column(table, name)? {
            return Ok(b);
        }
        let top = self.frames.len() - 1;
        for a in self.outer_aggs.iter().flatten() {
            if a.level < top
                && let Ok(Some(c)) = a.from_scope.resolve(table, name)
            {
                let full = match table.or(c.table.as_deref()) {
                    Some(t) => format!("{t}.{name}"),
                    None => name.to_string(),
                };
                return Err(Error::semantic(
                    "42803",
                    format!("subquery uses ungrouped column \"{full}\" from outer query"),
                )
                .at(self.pos_expr(e)));
            }
        }
        if let Some(state) = &self.agg
            && state.level == self.frames.len() - 1 && state.from_scope.resolve(table, name)?.is_some() {
                let q = table.map(|t| t.to_string()).or_else(|| {
                    state.from_scope.resolve(None, name).ok().flatten().and_then(|c| c.table.clone())
                });
                let full = match q {
                    Some(t) => format!("{t}.{name}"),
                    None => name.to_string(),
                };
                return Err(Error::semantic(
                    "42803",
                    format!("column \"{full}\" must appear in the GROUP BY clause or be used in an aggregate function"),
                )
                .at(self.pos_expr(e)));
            }
        match table {
            Some(t) if !self.any_level_has_table(t) => {
                Err(super::scope::Scope::missing_table(t, self.frames.iter().map(|f| &f.scope)))
            }
            Some(t) => Err(Error::semantic("42703", format!("column {t}.{name} does not exist"))),
            None => Err(Error::undefined_column(name)),
        }
    }

    fn any_level_has_table(&self, t: &str) -> bool {
        self.frames.iter().any(|f| f.scope.has_table(t))
    }

    fn bind_value(&mut self, v: &ast::Value) -> Result<Expr> {
        use ast::Value as V;
        Ok(match v {
            V::Number(n, _) => super::literal(number_literal(n)?),
            V::SingleQuotedString(s)
            | V::EscapedStringLiteral(s)
            | V::TripleSingleQuotedString(s)
            | V::UnicodeStringLiteral(s) => Expr::literal(Value::Text(s.clone()), DataType::Text),
            V::DollarQuotedString(d) => Expr::literal(Value::Text(d.value.clone()), DataType::Text),
            V::Boolean(b) => Expr::literal(Value::Boolean(*b), DataType::Boolean),
            V::Null => Expr::literal(Value::Null, DataType::Text),
            V::Placeholder(p) => {
                let n = if p == "?" {
                    self.next_question += 1;
                    self.next_question
                } else {
                    p.trim_start_matches('$').parse::<usize>().map_err(|_| {
                        Error::syntax(format!("invalid parameter \"{p}\""))
                    })?
                };
                if n == 0 || n > self.param_count {
                    return Err(Error::semantic(
                        "42P02",
                        format!("there is no parameter ${n}"),
                    ));
                }
                let ty = self.param_types[n - 1].unwrap_or(DataType::Text);
                Expr::new(ExprKind::Param(n - 1), ty)
            }
            other => return Err(Error::not_supported(format!("literal {other}"))),
        })
    }

    fn bind_interval(&mut self, iv: &ast::Interval) -> Result<Expr> {
        let text = match &*iv.value {
            ast::Expr::Value(v) => match &v.value {
                ast::Value::SingleQuotedString(s) => s.clone(),
                ast::Value::Number(n, _) => n.clone(),
                other => other.to_string(),
            },
            other => {
                return Err(Error::not_supported(format!("INTERVAL {other}")));
            }
        };
        let field = iv.last_field.as_ref().or(iv.leading_field.as_ref());
        let value = match field {
            None => Interval::parse(&text)?,
            Some(f) => {
                let name = f.to_string().to_lowercase();
                use crate::types::IntervalField as F;
                let field = match name.as_str() {
                    "year" | "years" => F::Year,
                    "month" | "months" => F::Month,
                    "day" | "days" => F::Day,
                    "hour" | "hours" => F::Hour,
                    "minute" | "minutes" => F::Minute,
                    "second" | "seconds" => F::Second,
                    _ => return Err(Error::not_supported(format!("interval field {name}"))),
                };
                Interval::parse_with_field(&text, field)?
            }
        };
        Ok(Expr::literal(Value::Interval(value), DataType::Interval))
    }

    fn castable(&self, from: &DataType, to: &DataType, _at: &ast::Expr) -> bool {
        if from == to || from.is_string() || to.is_string() {
            return true;
        }
        if numeric_rank(from).is_some() && numeric_rank(to).is_some() {
            return true;
        }
        matches!(
            (from, to),
            (DataType::Date, DataType::Timestamp)
                | (DataType::Timestamp, DataType::Date)
                | (DataType::Integer, DataType::Boolean)
                | (DataType::Boolean, DataType::Integer)
        )
    }

    /// Binds a boolean operand (an untyped literal is read as boolean).
    pub(super) fn bind_bool(&mut self, e: &ast::Expr, clause: &'static str, op: &str) -> Result<Expr> {
        let b = self.bind_expr(e, clause)?;
        if is_unknown(e) {
            return self.cast(b, DataType::Boolean, false, e);
        }
        if b.ty != DataType::Boolean {
            return Err(Error::datatype_mismatch(format!(
                "argument of {op} must be type boolean, not type {}",
                b.ty
            ))
            .at(self.pos_expr(e)));
        }
        Ok(b)
    }

    /// Casts `b` to text for a string operator (char loses its padding).
    fn text_operand(&mut self, b: Expr, e: &ast::Expr, op: &str) -> Result<Expr> {
        if b.ty.is_string() && b.ty != DataType::Char(0) {
            if let DataType::Char(_) = b.ty {
                return self.cast(b, DataType::Text, false, e);
            }
            return Ok(b);
        }
        if is_unknown(e) {
            return self.cast(b, DataType::Text, false, e);
        }
        Err(Error::undefined_function(format!(
            "operator does not exist: {} {op} unknown",
            b.ty
        )))
    }

    /// Binds two operands and brings them to a common type.
    fn bind_pair(
        &mut self,
        a: &ast::Expr,
        b: &ast::Expr,
        clause: &'static str,
        op: &str,
    ) -> Result<(Expr, Expr)> {
        let mut v = self.bind_unified(&[a, b], clause, op)?;
        let r = v.pop().expect("two");
        let l = v.pop().expect("two");
        Ok((l, r))
    }

    /// Binds the operands of one operator (or the items of a list whose types unify).
    /// A numeric literal numeric cannot hold ([`wide_literal`]) binds as float8 when
    /// another operand is of a float type (`1e300 * 2.0::float8`, `f < 1e300` over a
    /// float column), as PostgreSQL casts it there; otherwise it is its 22003 error.
    fn bind_operands(&mut self, items: &[&ast::Expr], clause: &'static str) -> Result<Vec<Expr>> {
        let mut bound = Vec::with_capacity(items.len());
        let mut wide = None;
        for e in items {
            match wide_literal(e) {
                Some(f) => {
                    wide = wide.or(Some(*e));
                    bound.push(Expr::literal(Value::Double(f), DataType::Double));
                }
                None => bound.push(self.bind_expr(e, clause)?),
            }
        }
        if let Some(e) = wide {
            let float = |ty: &DataType| matches!(ty, DataType::Double | DataType::Real);
            let meets_float = bound.iter().zip(items).any(|(b, e)| wide_literal(e).is_none() && float(&b.ty));
            if !meets_float {
                // The literal's own error (22003, with its position).
                self.bind_expr(e, clause)?;
            }
        }
        Ok(bound)
    }

    /// Binds expressions and casts them all to one type (untyped literals adopt the
    /// type of the others; all untyped → text).
    pub fn bind_unified(
        &mut self,
        items: &[&ast::Expr],
        clause: &'static str,
        op: &str,
    ) -> Result<Vec<Expr>> {
        let bound = self.bind_operands(items, clause)?;
        let mut target: Option<DataType> = None;
        for (b, e) in bound.iter().zip(items) {
            if is_unknown(e) {
                continue;
            }
            target = Some(match target {
                None => b.ty,
                Some(t) => common_type(&t, &b.ty).ok_or_else(|| {
                    let msg = if op == "CASE" || op == "UNION" || op == "COALESCE" {
                        if op == "CASE" {
                            format!("{op} types {} and {} cannot be matched", type_name(&b.ty), type_name(&t))
                        } else {
                            format!("{op} types {} and {} cannot be matched", type_name(&t), type_name(&b.ty))
                        }
                    } else {
                        format!("operator does not exist: {} {op} {}", t, b.ty)
                    };
                    Error::undefined_function(msg).at(self.pos_expr(*e))
                })?,
            });
        }
        let target = target.unwrap_or(DataType::Text);
        // Comparing char with char keeps char (blank-padded semantics).
        let all_char = bound
            .iter()
            .zip(items)
            .all(|(b, e)| is_unknown(e) || matches!(b.ty, DataType::Char(_)));
        bound
            .into_iter()
            .zip(items)
            .map(|(b, e)| {
                if all_char && matches!(b.ty, DataType::Char(_)) {
                    Ok(b)
                } else if all_char && is_unknown(e) {
                    // PostgreSQL types the literal `bpchar` without a length: it is
                    // compared blank-padded, never cut or rejected for its length.
                    let t = match (target, &b.kind) {
                        (DataType::Char(n), ExprKind::Literal(Value::Text(s))) => {
                            DataType::Char(n.max(s.chars().count() as u32))
                        }
                        (t, _) => t,
                    };
                    self.cast(b, t, false, e)
                } else {
                    self.cast(b, target, false, e)
                }
            })
            .collect()
    }

    fn bind_binary(
        &mut self,
        left: &ast::Expr,
        op: &Op,
        right: &ast::Expr,
        clause: &'static str,
    ) -> Result<Expr> {
        match op {
            Op::And | Op::Or => {
                let mut items = Vec::new();
                for side in [left, right] {
                    let b = self.bind_bool(side, clause, if *op == Op::And { "AND" } else { "OR" })?;
                    match (op, b.into_kind()) {
                        (Op::And, ExprKind::And(v)) | (Op::Or, ExprKind::Or(v)) => items.extend(v),
                        (_, kind) => items.push(Expr::new(kind, DataType::Boolean)),
                    }
                }
                let kind = if *op == Op::And {
                    ExprKind::And(items)
                } else {
                    ExprKind::Or(items)
                };
                Ok(Expr::new(kind, DataType::Boolean))
            }
            Op::PGExp => self.call_scalar("power", &[left, right], clause),
            Op::StringConcat => {
                let l = self.bind_expr(left, clause)?;
                let r = self.bind_expr(right, clause)?;
                let l = self.cast(l, DataType::Text, false, left)?;
                let r = self.cast(r, DataType::Text, false, right)?;
                Ok(Expr::new(
                    ExprKind::Func {
                        func: Func::Concat,
                        args: vec![l, r],
                    },
                    DataType::Text,
                ))
            }
            _ => {
                if let Some(c) = cmp_op(op)
                    && (self.row_items(left).is_some() || self.row_items(right).is_some())
                {
                    return self.bind_row_compare(c, left, right, clause);
                }
                if let Some(c) = cmp_op(op) {
                    let (l, r) = self.bind_pair(left, right, clause, c.symbol())?;
                    return Ok(Expr::new(
                        ExprKind::Compare {
                            op: c,
                            left: Box::new(l),
                            right: Box::new(r),
                        },
                        DataType::Boolean,
                    ));
                }
                if let Some(a) = arith_op(op) {
                    return self.bind_arith(a, left, right, clause);
                }
                Err(Error::not_supported(format!("operator {op}")))
            }
        }
    }

    fn bind_arith(
        &mut self,
        op: ArithOp,
        left: &ast::Expr,
        right: &ast::Expr,
        clause: &'static str,
    ) -> Result<Expr> {
        let mut bound = self.bind_operands(&[left, right], clause)?;
        let mut r = bound.pop().expect("two");
        let mut l = bound.pop().expect("two");
        let (lu, ru) = (is_unknown(left), is_unknown(right));
        // Untyped literals take the other side's type (or a sensible one for dates).
        let guess = |this: &Expr, other: &DataType| -> DataType {
            match other {
                DataType::Date | DataType::Timestamp => match &this.kind {
                    ExprKind::Literal(Value::Text(s)) if s.trim().parse::<i64>().is_ok() => {
                        DataType::Integer
                    }
                    _ => DataType::Interval,
                },
                t if numeric_rank(t).is_some() => *t,
                DataType::Interval => DataType::Interval,
                _ => DataType::NUMERIC,
            }
        };
        if lu && !ru {
            let t = guess(&l, &r.ty);
            l = self.cast(l, t, false, left)?;
        } else if ru && !lu {
            let t = guess(&r, &l.ty);
            r = self.cast(r, t, false, right)?;
        } else if lu && ru {
            l = self.cast(l, DataType::NUMERIC, false, left)?;
            r = self.cast(r, DataType::NUMERIC, false, right)?;
        }
        let undefined = |l: &DataType, r: &DataType| {
            Error::undefined_function(format!(
                "operator does not exist: {l} {} {r}",
                op.symbol()
            ))
        };
        let mk = |l: Expr, r: Expr, ty: DataType| {
            Expr::new(
                ExprKind::Arith {
                    op,
                    left: Box::new(l),
                    right: Box::new(r),
                },
                ty,
            )
        };
        use DataType as T;
        let (lt, rt) = (l.ty, r.ty);
        if numeric_rank(&lt).is_some() && numeric_rank(&rt).is_some() {
            let t = common_type(&lt, &rt).expect("numeric types have a common type");
            let l = self.cast(l, t, false, left)?;
            let r = self.cast(r, t, false, right)?;
            // PostgreSQL's numeric operators give unconstrained numeric whatever the
            // operands' typmods: numeric(17,2) / numeric(17,2) is 0.899…, not 0.90
            // (TPC-DS Q75 lost a row to that), and numeric(3,2) + numeric(3,2) may
            // pass 9.99.
            let result = if matches!(t, T::Decimal { .. }) { T::NUMERIC } else { t };
            return Ok(mk(l, r, result));
        }
        match (op, lt, rt) {
            (ArithOp::Add, T::Date, t) | (ArithOp::Sub, T::Date, t) if is_integer(&t) => {
                let r = self.cast(r, T::Integer, false, right)?;
                Ok(mk(l, r, T::Date))
            }
            (ArithOp::Add, t, T::Date) if is_integer(&t) => {
                let l = self.cast(l, T::Integer, false, left)?;
                Ok(mk(l, r, T::Date))
            }
            (ArithOp::Sub, T::Date, T::Date) => Ok(mk(l, r, T::Integer)),
            (ArithOp::Add | ArithOp::Sub, T::Date | T::Timestamp, T::Interval) => {
                Ok(mk(l, r, T::Timestamp))
            }
            (ArithOp::Add, T::Interval, T::Date | T::Timestamp) => Ok(mk(l, r, T::Timestamp)),
            (ArithOp::Sub, T::Timestamp, T::Timestamp) => Ok(mk(l, r, T::Interval)),
            (ArithOp::Sub, T::Timestamp, T::Date) => {
                let r = self.cast(r, T::Timestamp, false, right)?;
                Ok(mk(l, r, T::Interval))
            }
            (ArithOp::Sub, T::Date, T::Timestamp) => {
                let l = self.cast(l, T::Timestamp, false, left)?;
                Ok(mk(l, r, T::Interval))
            }
            (ArithOp::Add | ArithOp::Sub, T::Interval, T::Interval) => Ok(mk(l, r, T::Interval)),
            (ArithOp::Mul | ArithOp::Div, T::Interval, t) if numeric_rank(&t).is_some() => {
                let r = self.cast(r, T::Double, false, right)?;
                Ok(mk(l, r, T::Interval))
            }
            (ArithOp::Mul, t, T::Interval) if numeric_rank(&t).is_some() => {
                let l = self.cast(l, T::Double, false, left)?;
                Ok(mk(l, r, T::Interval))
            }
            _ => Err(undefined(&lt, &rt)),
        }
    }

    fn bind_case(
        &mut self,
        operand: Option<&ast::Expr>,
        conditions: &[ast::CaseWhen],
        else_result: Option<&ast::Expr>,
        clause: &'static str,
    ) -> Result<Expr> {
        let mut conds = Vec::with_capacity(conditions.len());
        for c in conditions {
            let cond = match operand {
                Some(x) => {
                    let (l, r) = self.bind_pair(x, &c.condition, clause, "=")?;
                    Expr::new(
                        ExprKind::Compare {
                            op: CmpOp::Eq,
                            left: Box::new(l),
                            right: Box::new(r),
                        },
                        DataType::Boolean,
                    )
                }
                None => self.bind_bool(&c.condition, clause, "CASE/WHEN")?,
            };
            conds.push(cond);
        }
        let mut results: Vec<&ast::Expr> = conditions.iter().map(|c| &c.result).collect();
        if let Some(e) = else_result {
            results.push(e);
        }
        let mut bound = self.bind_unified(&results, clause, "CASE")?;
        let ty = bound.first().map(|b| b.ty).unwrap_or(DataType::Text);
        let else_ = else_result.map(|_| Box::new(bound.pop().expect("else bound")));
        let whens = conds.into_iter().zip(bound).collect();
        Ok(Expr::new(ExprKind::Case { whens, else_ }, ty))
    }

    /// The fields of a row constructor — `(a, b, …)` or `ROW(a, …)` — or `None` for
    /// any other expression.
    pub(super) fn row_items<'e>(&self, e: &'e ast::Expr) -> Option<Vec<&'e ast::Expr>> {
        match e {
            ast::Expr::Tuple(items) if !items.is_empty() => Some(items.iter().collect()),
            ast::Expr::Function(f) if func_name(f) == "row" && f.over.is_none() => {
                self.function_args(f).ok().filter(|(args, d, s)| !args.is_empty() && !d && !s).map(|(a, ..)| a)
            }
            _ => None,
        }
    }

    /// A row comparison `(a, b, …) op (c, d, …)` or `(a, b, …) op (SELECT x, y, …)`
    /// with PostgreSQL's semantics: `=` holds when every pair is equal (false when a
    /// pair is unequal, else NULL when a pair has a NULL), `<>` is its negation, and
    /// `<`, `<=`, `>`, `>=` compare pair by pair from the left, the first pair that
    /// is unequal or has a NULL deciding (NULL for a NULL). Bound as the pairs'
    /// comparisons: `a = c AND b = d`, `a <> c OR b <> d`, and
    /// `a < c OR (a = c AND b < d)` (the same truth table, three-valued), so filters
    /// and index rules see ordinary comparisons. A row subquery is one scalar
    /// subquery per column (each NULL without a row, 21000 with more than one).
    fn bind_row_compare(&mut self, op: CmpOp, left: &ast::Expr, right: &ast::Expr, clause: &'static str) -> Result<Expr> {
        let boolean = |kind| Expr::new(kind, DataType::Boolean);
        let cmp = |op, l: &Expr, r: &Expr| {
            boolean(ExprKind::Compare { op, left: Box::new(l.clone()), right: Box::new(r.clone()) })
        };
        let (l_items, r_items) = (self.row_items(left), self.row_items(right));
        let pairs: Vec<(Expr, Expr)> = match (l_items, r_items) {
            (Some(ls), Some(rs)) => {
                if ls.len() != rs.len() {
                    return Err(Error::semantic("42601", "unequal number of entries in row expressions"));
                }
                ls.iter().zip(&rs).map(|(l, r)| self.bind_pair(l, r, clause, op.symbol())).collect::<Result<_>>()?
            }
            (Some(items), None) | (None, Some(items)) => {
                let row_on_left = self.row_items(left).is_some();
                let other = if row_on_left { right } else { left };
                let ast::Expr::Subquery(q) = other else {
                    let b = self.bind_expr(other, clause)?;
                    let (lt, rt) = if row_on_left { ("record".to_string(), b.ty.to_string()) } else { (b.ty.to_string(), "record".to_string()) };
                    return Err(Error::undefined_function(format!("operator does not exist: {lt} {} {rt}", op.symbol())));
                };
                let values = self.bind_row_subquery(q, items.len(), clause)?;
                let mut pairs = Vec::with_capacity(items.len());
                for (item, v) in items.iter().zip(values) {
                    let x = self.bind_expr(item, clause)?;
                    let target = if is_unknown(item) {
                        v.ty
                    } else {
                        common_type(&x.ty, &v.ty).ok_or_else(|| {
                            Error::undefined_function(format!("operator does not exist: {} {} {}", x.ty, op.symbol(), v.ty))
                        })?
                    };
                    let x = self.cast(x, target, false, item)?;
                    let v = if v.ty == target { v } else { Expr::new(ExprKind::Cast { expr: Box::new(v), explicit: false }, target) };
                    pairs.push(if row_on_left { (x, v) } else { (v, x) });
                }
                pairs
            }
            (None, None) => unreachable!("called for a row"),
        };
        Ok(match op {
            CmpOp::Eq => boolean(ExprKind::And(pairs.iter().map(|(l, r)| cmp(CmpOp::Eq, l, r)).collect())),
            CmpOp::NotEq => boolean(ExprKind::Or(pairs.iter().map(|(l, r)| cmp(CmpOp::NotEq, l, r)).collect())),
            _ => {
                let strict = match op {
                    CmpOp::LtEq => CmpOp::Lt,
                    CmpOp::GtEq => CmpOp::Gt,
                    other => other,
                };
                let (last_l, last_r) = pairs.last().expect("a non-empty row");
                let mut acc = cmp(op, last_l, last_r);
                for (l, r) in pairs.iter().rev().skip(1) {
                    acc = boolean(ExprKind::Or(vec![
                        cmp(strict, l, r),
                        boolean(ExprKind::And(vec![cmp(CmpOp::Eq, l, r), acc])),
                    ]));
                }
                acc
            }
        })
    }

    /// A row subquery's `n` columns, each as a scalar subquery over the same plan
    /// (the first bound, the others a projection of a copy of it).
    fn bind_row_subquery(&mut self, q: &ast::Query, n: usize, clause: &'static str) -> Result<Vec<Expr>> {
        let (id, correlated, plan) = self.bind_subquery(q, clause)?;
        if plan.schema.len() != n {
            return Err(Error::semantic(
                "42601",
                if plan.schema.len() > n { "subquery has too many columns" } else { "subquery has too few columns" },
            ));
        }
        let mut out = Vec::with_capacity(n);
        for i in 0..n {
            let sid = if i == 0 {
                id
            } else {
                let base = &self.subqueries[id];
                let (param_base, is_correlated) = (base.param_base, base.correlated);
                let projected = crate::plan::Plan::new(
                    crate::plan::Node::Project { input: Box::new(plan.clone()), exprs: vec![Expr::column(i, plan.schema[i].ty)] },
                    vec![plan.schema[i].clone()],
                );
                self.subqueries.push(crate::plan::Subplan { plan: projected, param_base, correlated: is_correlated });
                self.subqueries.len() - 1
            };
            if i == 0 {
                let first = std::mem::replace(&mut self.subqueries[id].plan, crate::plan::Plan::one_row());
                self.subqueries[id].plan = crate::plan::Plan::new(
                    crate::plan::Node::Project { input: Box::new(first), exprs: vec![Expr::column(0, plan.schema[0].ty)] },
                    vec![plan.schema[0].clone()],
                );
            }
            out.push(Expr::new(
                ExprKind::Subquery(Box::new(SubqueryExpr { id: sid, kind: SubqueryKind::Scalar, correlated: correlated.clone() })),
                plan.schema[i].ty,
            ));
        }
        Ok(out)
    }

    /// `(a, b, …) [NOT] IN (SELECT x, y, …)`: one subquery of kind `In` with the
    /// further operands in `rest`; each pair gets a common type (the subquery's
    /// columns cast in a projection where needed), as for one operand.
    fn bind_in_row(&mut self, items: &[&ast::Expr], q: &ast::Query, negated: bool, clause: &'static str) -> Result<Expr> {
        let bound: Vec<Expr> = items.iter().map(|e| self.bind_expr(e, clause)).collect::<Result<_>>()?;
        let (id, correlated, plan) = self.bind_subquery(q, clause)?;
        if plan.schema.len() != items.len() {
            return Err(Error::semantic(
                "42601",
                if plan.schema.len() > items.len() { "subquery has too many columns" } else { "subquery has too few columns" },
            ));
        }
        let mut targets = Vec::with_capacity(items.len());
        for ((x, e), col) in bound.iter().zip(items).zip(&plan.schema) {
            targets.push(if is_unknown(e) {
                col.ty
            } else {
                common_type(&x.ty, &col.ty).ok_or_else(|| {
                    Error::undefined_function(format!("operator does not exist: {} = {}", x.ty, col.ty))
                })?
            });
        }
        if targets.iter().zip(&plan.schema).any(|(t, c)| *t != c.ty) {
            let sub = &mut self.subqueries[id];
            let input = std::mem::replace(&mut sub.plan, crate::plan::Plan::one_row());
            let exprs = input
                .schema
                .iter()
                .zip(&targets)
                .enumerate()
                .map(|(i, (c, t))| {
                    let col = Expr::column(i, c.ty);
                    if c.ty == *t { col } else { Expr::new(ExprKind::Cast { expr: Box::new(col), explicit: false }, *t) }
                })
                .collect();
            let schema = input
                .schema
                .iter()
                .zip(&targets)
                .map(|(c, t)| crate::plan::OutputColumn { name: c.name.clone(), ty: *t })
                .collect::<Vec<_>>();
            sub.plan = crate::plan::Plan::new(crate::plan::Node::Project { input: Box::new(input), exprs }, schema);
        }
        let mut xs = Vec::with_capacity(items.len());
        for ((x, e), t) in bound.into_iter().zip(items).zip(&targets) {
            xs.push(self.cast(x, *t, false, e)?);
        }
        let mut xs = xs.into_iter();
        let first = xs.next().expect("a non-empty row");
        Ok(Expr::new(
            ExprKind::Subquery(Box::new(SubqueryExpr {
                id,
                kind: SubqueryKind::In { expr: Box::new(first), negated, rest: xs.collect() },
                correlated,
            })),
            DataType::Boolean,
        ))
    }

    fn bind_quantified(
        &mut self,
        x: Expr,
        x_ast: &ast::Expr,
        q: &ast::Query,
        op: Option<CmpOp>,
        all: bool,
        negated: bool,
        clause: &'static str,
    ) -> Result<Expr> {
        let (id, correlated, plan) = self.bind_subquery(q, clause)?;
        if plan.schema.len() != 1 {
            return Err(Error::semantic(
                "42601",
                if plan.schema.len() > 1 { "subquery has too many columns" } else { "subquery has too few columns" },
            ));
        }
        let st = plan.schema[0].ty;
        let target = if is_unknown(x_ast) {
            st
        } else {
            common_type(&x.ty, &st).ok_or_else(|| {
                Error::undefined_function(format!(
                    "operator does not exist: {} = {}",
                    x.ty, st
                ))
            })?
        };
        if target != st {
            // Cast the subquery's column by wrapping its plan in a projection.
            let sub = &mut self.subqueries[id];
            let input = std::mem::replace(&mut sub.plan, crate::plan::Plan::one_row());
            let name = input.schema[0].name.clone();
            let cast = Expr::new(
                ExprKind::Cast {
                    expr: Box::new(Expr::column(0, st)),
                    explicit: false,
                },
                target,
            );
            sub.plan = crate::plan::Plan::new(
                crate::plan::Node::Project {
                    input: Box::new(input),
                    exprs: vec![cast],
                },
                vec![crate::plan::OutputColumn { name, ty: target }],
            );
        }
        let x = self.cast(x, target, false, x_ast)?;
        let kind = match op {
            None => SubqueryKind::In {
                expr: Box::new(x),
                negated,
                rest: Vec::new(),
            },
            Some(op) => SubqueryKind::Quantified {
                expr: Box::new(x),
                op,
                all,
            },
        };
        Ok(Expr::new(
            ExprKind::Subquery(Box::new(SubqueryExpr {
                id,
                kind,
                correlated,
            })),
            DataType::Boolean,
        ))
    }

    pub(super) fn function_args<'f>(&self, f: &'f ast::Function) -> Result<(Vec<&'f ast::Expr>, bool, bool)> {
        match &f.args {
            ast::FunctionArguments::None => Ok((vec![], false, false)),
            ast::FunctionArguments::Subquery(_) => {
                Err(Error::not_supported("a subquery as a function argument"))
            }
            ast::FunctionArguments::List(l) => {
                // ORDER BY is read by `call_order`; its callers say where it may be.
                if l.clauses.iter().any(|c| !matches!(c, ast::FunctionArgumentClause::OrderBy(_))) {
                    return Err(Error::not_supported("clauses in a function argument list"));
                }
                let distinct = matches!(l.duplicate_treatment, Some(ast::DuplicateTreatment::Distinct));
                let mut star = false;
                let mut args = Vec::new();
                for a in &l.args {
                    match a {
                        ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => args.push(e),
                        ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Wildcard) => star = true,
                        _ => return Err(Error::not_supported("named or qualified-wildcard arguments")),
                    }
                }
                Ok((args, distinct, star))
            }
        }
    }

    /// `count(t.*)`: PostgreSQL counts the rows whose row value of `t` is not NULL,
    /// which is every row unless `t` is on the nullable side of an outer join, where
    /// the rows in which `t` had no match are left out (a matched row of NULLs
    /// counts). So: `count(*)`, or on a nullable side `count(t.c)` of a column `c`
    /// that never holds NULL in `t` (a NOT NULL column); without one, 0A000.
    fn bind_count_row(
        &mut self,
        f: &ast::Function,
        table: &str,
        filter: Option<&ast::Expr>,
        e: &ast::Expr,
        clause: &'static str,
    ) -> Result<Expr> {
        if matches!(&f.args, ast::FunctionArguments::List(l) if l.duplicate_treatment == Some(ast::DuplicateTreatment::Distinct)) {
            return Err(Error::not_supported("count(DISTINCT t.*)").at(self.pos_expr(e)));
        }
        if !call_order(f).is_empty() {
            return Err(Error::not_supported("ORDER BY in count(t.*)").at(self.pos_expr(e)));
        }
        let level = self.frames.len() - 1;
        let scope = self.from_scope_at(level);
        if !scope.has_table(table) {
            if (0..level).any(|l| self.from_scope_at(l).has_table(table)) {
                return Err(Error::not_supported("count(t.*) of an outer query's table").at(self.pos_expr(e)));
            }
            return Err(super::scope::Scope::missing_table(table, std::iter::once(scope)).at(self.pos_expr(e)));
        }
        let one = ast::Expr::value(ast::Value::Number("1".into(), false));
        if !scope.nullable.iter().any(|t| t == table) {
            // count(*) FILTER (WHERE c) is count(1) filtered, as in `bind_function`.
            return match filter {
                Some(_) => self.bind_aggregate(AggFunc::Count, None, "count", &[&one], false, false, filter, e, clause),
                None => self.bind_aggregate(AggFunc::Count, None, "count", &[], false, true, None, e, clause),
            };
        }
        let marker = scope
            .never_null
            .iter()
            .filter(|(t, _)| t == table)
            .find(|(_, c)| matches!(scope.resolve(Some(table), c), Ok(Some(_))))
            .map(|(_, c)| c.clone());
        let Some(column) = marker else {
            return Err(Error::not_supported(format!(
                "count({table}.*) over the nullable side of an outer join, where \"{table}\" has no NOT NULL column,"
            ))
            .at(self.pos_expr(e)));
        };
        let quoted = |n: &str| ast::Ident::with_quote('"', n);
        let x = ast::Expr::CompoundIdentifier(vec![quoted(table), quoted(&column)]);
        self.bind_aggregate(AggFunc::Count, None, "count", &[&x], false, false, filter, e, clause)
    }

    fn bind_function(&mut self, f: &ast::Function, e: &ast::Expr, clause: &'static str) -> Result<Expr> {
        let name = func_name(f);
        if name == "grouping" && f.over.is_none() {
            return self.bind_grouping(f, e, clause);
        }
        if f.over.is_some() {
            if self
                .functions
                .is_some_and(|fs| fs.has_aggregate_named(&name))
            {
                return Err(Error::not_supported(format!(
                    "application-defined aggregate {name} used as a window function"
                ))
                .at(self.pos_expr(e)));
            }
            return self.bind_window_call(f, &name, e, clause);
        }
        if super::window::window_func(&name).is_some() {
            return Err(Error::semantic("42809", format!("window function {name} requires an OVER clause")).at(self.pos_expr(e)));
        }
        if !f.within_group.is_empty() {
            return Err(Error::not_supported("WITHIN GROUP"));
        }
        let filter = f.filter.as_deref();
        if name == "count"
            && let Some(table) = count_row_arg(f)
            && self.functions.is_none_or(|fs| fs.aggregate(&name, 1).is_none())
        {
            return self.bind_count_row(f, &table?, filter, e, clause);
        }
        let (args, distinct, star) = self.function_args(f)?;
        if let Some(fs) = self.functions
            && !star
        {
            if let Some(udf) = fs.aggregate(&name, args.len()) {
                if distinct {
                    return Err(Error::not_supported(format!(
                        "DISTINCT in a call of the application's aggregate {name}"
                    ))
                    .at(self.pos_expr(e)));
                }
                // An application's aggregate may look at NULL inputs, so FILTER cannot
                // be had by handing it NULLs for the rows filtered out.
                if filter.is_some() {
                    return Err(Error::not_supported(format!(
                        "FILTER in a call of the application's aggregate {name}"
                    ))
                    .at(self.pos_expr(e)));
                }
                if !call_order(f).is_empty() {
                    return Err(Error::not_supported(format!(
                        "ORDER BY in a call of the application's aggregate {name}"
                    ))
                    .at(self.pos_expr(e)));
                }
                let call = crate::plan::UdfAggCall {
                    function: udf.clone(),
                    args: Vec::new(),
                };
                return self.bind_aggregate(
                    AggFunc::Udf,
                    Some(call),
                    &name,
                    &args,
                    false,
                    false,
                    None,
                    e,
                    clause,
                );
            }
            if let Some(udf) = fs.scalar(&name, args.len()) {
                if distinct {
                    return Err(Error::semantic(
                        "42809",
                        format!("DISTINCT specified, but {name} is not an aggregate function"),
                    ));
                }
                return self.bind_udf_scalar(udf.clone(), &args, clause, e);
            }
        }
        if name == "generate_series" {
            return Err(Error::not_supported("set-returning functions outside FROM are not supported")
                .with_hint("Call generate_series in FROM: SELECT g FROM generate_series(1, 3) AS g.")
                .at(self.pos_expr(e)));
        }
        if let Some(func) = aggregate_func(&name) {
            // count(*) FILTER (WHERE c) counts the rows c holds for: count(1) filtered.
            let one = ast::Expr::value(ast::Value::Number("1".into(), false));
            if star && filter.is_some() && func == AggFunc::Count {
                return self.bind_aggregate(func, None, &name, &[&one], distinct, false, filter, e, clause);
            }
            return self.bind_aggregate(func, None, &name, &args, distinct, star, filter, e, clause);
        }
        if filter.is_some() {
            return Err(Error::semantic(
                "42809",
                format!("FILTER specified, but {name} is not an aggregate function"),
            )
            .at(self.pos_expr(e)));
        }
        if star {
            return Err(Error::syntax(format!("{name}(*) is only valid for aggregates")));
        }
        if distinct {
            return Err(Error::semantic(
                "42809",
                format!("DISTINCT specified, but {name} is not an aggregate function"),
            ));
        }
        if !call_order(f).is_empty() {
            return Err(Error::semantic(
                "42809",
                format!("ORDER BY specified, but {name} is not an aggregate function"),
            )
            .at(self.pos_expr(e)));
        }
        match name.as_str() {
            // PostgreSQL's version() names the server; BeeDB names itself.
            "version" if args.is_empty() => {
                return Ok(Expr::literal(
                    Value::Text(format!(
                        "BeeDB {} on {}-{}, {}-bit",
                        env!("CARGO_PKG_VERSION"),
                        std::env::consts::ARCH,
                        std::env::consts::OS,
                        usize::BITS
                    )),
                    DataType::Text,
                ));
            }
            // The clock: the time the transaction started, as in PostgreSQL, read
            // at execution (`Func::Now`), so a plan that reads it can be cached.
            // BeeDB has no time zones: the time is UTC, as a `timestamp`
            // (PostgreSQL's `current_timestamp` is `timestamptz`).
            "current_timestamp" | "now" | "localtimestamp" | "current_date" if args.is_empty() => {
                let (func, ty) = if name == "current_date" {
                    (crate::expr::Func::CurrentDate, DataType::Date)
                } else {
                    (crate::expr::Func::Now, DataType::Timestamp)
                };
                return Ok(Expr::new(ExprKind::Func { func, args: Vec::new() }, ty));
            }
            "date_part" if args.len() == 2 => {
                let unit = match args[0] {
                    ast::Expr::Value(v) => match &v.value {
                        ast::Value::SingleQuotedString(s) => s.clone(),
                        _ => return Err(Error::not_supported("date_part with a non-literal unit")),
                    },
                    _ => return Err(Error::not_supported("date_part with a non-literal unit")),
                };
                let b = self.bind_expr(args[1], clause)?;
                let b = if is_unknown(args[1]) { self.cast(b, DataType::Timestamp, false, args[1])? } else { b };
                let field = DateField::parse(&unit).ok_or_else(|| {
                    Error::semantic("22023", format!("unit \"{}\" not recognized for type {}", unit.to_lowercase(), b.ty))
                })?;
                if !matches!(b.ty, DataType::Date | DataType::Timestamp | DataType::Interval) {
                    return Err(Error::undefined_function(format!("function date_part(unknown, {}) does not exist", b.ty)));
                }
                let x = Expr::new(ExprKind::Extract { field, expr: Box::new(b) }, DataType::NUMERIC);
                return Ok(Expr::new(ExprKind::Cast { expr: Box::new(x), explicit: true }, DataType::Double));
            }
            "nextval" | "currval" | "setval" | "lastval" => return self.bind_sequence_call(&name, &args, clause),
            "coalesce" => {
                if args.is_empty() {
                    return Err(Error::syntax("coalesce needs at least one argument"));
                }
                let bound = self.bind_unified(&args, clause, "COALESCE")?;
                let ty = bound[0].ty;
                return Ok(Expr::new(ExprKind::Coalesce(bound), ty));
            }
            "nullif" | "greatest" | "least" => {
                if args.is_empty() || (name == "nullif" && args.len() != 2) {
                    return Err(Error::undefined_function(format!(
                        "function {name} does not exist with {} arguments",
                        args.len()
                    )));
                }
                let bound = self.bind_unified(&args, clause, if name == "nullif" { "=" } else { "CASE" })?;
                let types: Vec<DataType> = bound.iter().map(|b| b.ty).collect();
                let (func, _, ret) = crate::expr::Func::resolve(&name, &types)?
                    .ok_or_else(|| Error::undefined_function(format!("function {name} does not exist")))?;
                return Ok(Expr::new(ExprKind::Func { func, args: bound }, ret));
            }
            _ => {}
        }
        self.call_scalar(&name, &args, clause)
    }

    /// `nextval(name)`, `currval(name)`, `setval(name, value [, is_called])`,
    /// `lastval()`: the
    /// name is text (PostgreSQL's `regclass`, looked up when the call runs), the
    /// value `bigint`; the result is `bigint`. Never folded or cached as a constant.
    fn bind_sequence_call(&mut self, name: &str, args: &[&ast::Expr], clause: &'static str) -> Result<Expr> {
        let mut bound = Vec::with_capacity(args.len());
        let mut types = Vec::with_capacity(args.len());
        for a in args {
            let b = self.bind_expr(a, clause)?;
            types.push(if is_unknown(a) { "unknown".to_string() } else { b.ty.to_string() });
            bound.push(b);
        }
        let arity_ok = match name {
            "setval" => matches!(args.len(), 2 | 3),
            "lastval" => args.is_empty(),
            _ => args.len() == 1,
        };
        let wanted = [DataType::Text, DataType::BigInt, DataType::Boolean];
        let types_ok = bound.iter().zip(args).zip(wanted).all(|((b, a), want)| {
            is_unknown(a)
                || match want {
                    DataType::Text => matches!(b.ty, DataType::Text | DataType::Varchar(_) | DataType::Char(_)),
                    DataType::BigInt => matches!(b.ty, DataType::SmallInt | DataType::Integer | DataType::BigInt),
                    _ => b.ty == want,
                }
        });
        if !arity_ok || !types_ok {
            return Err(Error::undefined_function(format!("function {name}({}) does not exist", types.join(", "))));
        }
        let mut cast = Vec::with_capacity(bound.len());
        for ((b, a), want) in bound.into_iter().zip(args).zip(wanted) {
            cast.push(self.cast(b, want, false, a)?);
        }
        let func = match name {
            "nextval" => crate::expr::Func::NextVal,
            "currval" => crate::expr::Func::CurrVal,
            "lastval" => crate::expr::Func::LastVal,
            _ => crate::expr::Func::SetVal,
        };
        Ok(Expr::new(ExprKind::Func { func, args: cast }, DataType::BigInt))
    }

    /// "function f(types) does not exist" for a name no function has. Above an
    /// aggregation the arguments are typed over the FROM columns, so an ungrouped
    /// argument does not hide the real error.
    fn unknown_function(&mut self, name: &str, args: &[&ast::Expr], clause: &'static str) -> Error {
        let state = if self.in_agg_level() { self.agg.take() } else { None };
        let saved = state.as_ref().map(|s| self.set_scope(s.from_scope.clone()));
        let mut types = Vec::new();
        let mut failed = None;
        for a in args {
            match self.bind_expr(a, clause) {
                Ok(_) if is_unknown(a) => types.push("unknown".to_string()),
                Ok(b) => types.push(b.ty.to_string()),
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        if let Some(s) = saved {
            self.set_scope(s);
        }
        if state.is_some() {
            self.agg = state;
        }
        failed.unwrap_or_else(|| {
            Error::undefined_function(format!("function {name}({}) does not exist", types.join(", ")))
        })
    }

    /// Binds a call of the scalar function `name`.
    fn call_scalar(&mut self, name: &str, args: &[&ast::Expr], clause: &'static str) -> Result<Expr> {
        if matches!(crate::expr::Func::resolve(name, &[]), Ok(None)) {
            return Err(self.unknown_function(name, args, clause));
        }
        let bound: Vec<Expr> = args
            .iter()
            .map(|a| self.bind_expr(a, clause))
            .collect::<Result<_>>()?;
        let types: Vec<DataType> = bound.iter().map(|b| b.ty).collect();
        let mut resolved = crate::expr::Func::resolve(name, &types);
        // An untyped NULL fits any argument type: try the common ones.
        if resolved.as_ref().map_or(true, |r| r.is_none()) {
            for guess in [DataType::Integer, DataType::NUMERIC, DataType::Double] {
                let retry: Vec<DataType> = bound
                    .iter()
                    .zip(args)
                    .map(|(b, a)| match &b.kind {
                        ExprKind::Literal(Value::Null) if is_unknown(a) => guess,
                        _ => b.ty,
                    })
                    .collect();
                if retry != types
                    && let Ok(Some(r)) = crate::expr::Func::resolve(name, &retry) {
                        resolved = Ok(Some(r));
                        break;
                    }
            }
        }
        let arg_list = || -> String {
            bound
                .iter()
                .zip(args)
                .map(|(b, a)| if is_unknown(a) { "unknown".to_string() } else { b.ty.to_string() })
                .collect::<Vec<_>>()
                .join(", ")
        };
        let resolved = match resolved {
            Err(e) if e.sqlstate == "42883" => {
                return Err(Error::undefined_function(format!("function {name}({}) does not exist", arg_list())));
            }
            r => r?,
        };
        let Some((func, casts, ret)) = resolved else {
            let list: Vec<String> = bound
                .iter()
                .zip(args)
                .map(|(b, a)| if is_unknown(a) { "unknown".to_string() } else { b.ty.to_string() })
                .collect();
            return Err(Error::undefined_function(format!(
                "function {name}({}) does not exist",
                list.join(", ")
            )));
        };
        let mut out = Vec::with_capacity(bound.len());
        for ((b, a), t) in bound.into_iter().zip(args).zip(casts) {
            let acceptable = b.ty == t || is_unknown(a) || implicit_castable(&b.ty, &t) || (b.ty.is_string() && t.is_string());
            if !acceptable {
                return Err(Error::undefined_function(format!(
                    "function {name}({}) does not exist",
                    types.iter().map(|t| t.to_string()).collect::<Vec<_>>().join(", ")
                )));
            }
            out.push(self.cast(b, t, false, a)?);
        }
        Ok(Expr::new(ExprKind::Func { func, args: out }, ret))
    }

    /// `grouping(a, b, …)`: an integer whose bits, one per argument with the last
    /// argument in the lowest bit, are 1 in the rows of grouping sets that leave
    /// that argument out (PostgreSQL's bit order). Each argument must be a group
    /// expression of this level (42803). Without grouping sets it is 0; with them,
    /// a CASE over the aggregation's set index column, one branch per distinct value.
    fn bind_grouping(&mut self, f: &ast::Function, e: &ast::Expr, clause: &'static str) -> Result<Expr> {
        match &self.agg {
            Some(a) if a.level == usize::MAX => {
                return Err(Error::semantic("42803", "aggregate function calls cannot be nested").at(self.pos_expr(e)));
            }
            Some(_) if !self.in_agg_level() => {
                return Err(Error::not_supported(
                    "grouping() in a subquery over the enclosing query's grouping columns",
                )
                .at(self.pos_expr(e)));
            }
            Some(_) => {}
            // The output of a level that does not aggregate: the arguments are an
            // outer level's (else grouping() would have made this level aggregate).
            None if matches!(clause, "SELECT" | "HAVING" | "ORDER BY") => {
                return Err(Error::not_supported(
                    "grouping() in a subquery over the enclosing query's grouping columns",
                )
                .at(self.pos_expr(e)));
            }
            None => {
                return Err(Error::semantic("42803", format!("grouping operations are not allowed in {clause}"))
                    .at(self.pos_expr(e)));
            }
        }
        let ast::FunctionArguments::List(list) = &f.args else {
            return Err(Error::syntax("grouping() needs at least one argument").at(self.pos_expr(e)));
        };
        if f.filter.is_some() || list.duplicate_treatment.is_some() || !list.clauses.is_empty() {
            return Err(Error::syntax("grouping() takes only expressions").at(self.pos_expr(e)));
        }
        let args = plain_args(f);
        if args.is_empty() || args.len() != list.args.len() {
            return Err(Error::syntax("grouping() takes one or more expressions").at(self.pos_expr(e)));
        }
        if args.len() >= 32 {
            return Err(Error::semantic("54023", "GROUPING must have fewer than 32 arguments").at(self.pos_expr(e)));
        }
        let mut members = Vec::with_capacity(args.len());
        for a in &args {
            match self.match_group(a)? {
                Some(Expr { kind: ExprKind::Column(g), .. }) => members.push(g),
                _ => {
                    return Err(Error::semantic(
                        "42803",
                        "arguments to GROUPING must be grouping expressions of the associated query level",
                    )
                    .at(self.pos_expr(*a)));
                }
            }
        }
        let state = self.agg.as_ref().expect("in aggregate level");
        let value = |mask: i32| Expr::literal(Value::Integer(mask), DataType::Integer);
        // Each distinct value with the sets (by index) that give it.
        let mut values: Vec<(i32, Vec<Expr>)> = Vec::new();
        for (i, set) in state.sets.iter().enumerate() {
            let mask = members.iter().fold(0i32, |m, g| (m << 1) | i32::from(!set.contains(g)));
            let id = value(i as i32);
            match values.iter_mut().find(|(v, _)| *v == mask) {
                Some((_, ids)) => ids.push(id),
                None => values.push((mask, vec![id])),
            }
        }
        let Some((last, _)) = values.pop() else {
            return Ok(value(0));
        };
        if values.is_empty() {
            return Ok(value(last));
        }
        let set_column = Expr::column(state.groups.len(), DataType::Integer);
        let whens = values
            .into_iter()
            .map(|(mask, ids)| {
                let test = Expr::new(
                    ExprKind::InList { expr: Box::new(set_column.clone()), list: ids, negated: false },
                    DataType::Boolean,
                );
                (test, value(mask))
            })
            .collect();
        Ok(Expr::new(ExprKind::Case { whens, else_: Some(Box::new(value(last))) }, DataType::Integer))
    }

    #[allow(clippy::too_many_arguments)]
    fn bind_aggregate(
        &mut self,
        func: AggFunc,
        udf: Option<crate::plan::UdfAggCall>,
        name: &str,
        args: &[&ast::Expr],
        distinct: bool,
        star: bool,
        filter: Option<&ast::Expr>,
        e: &ast::Expr,
        clause: &'static str,
    ) -> Result<Expr> {
        let nested = self.agg.as_ref().is_some_and(|a| a.level == usize::MAX);
        // The level is the innermost one whose columns the arguments, the FILTER or
        // the ORDER BY use.
        let mut level_exprs: Vec<&ast::Expr> = if star { Vec::new() } else { args.to_vec() };
        level_exprs.extend(filter);
        if let ast::Expr::Function(f) = e {
            level_exprs.extend(call_order(f).iter().map(|o| &o.expr));
        }
        if !level_exprs.is_empty() && !nested {
            let level = self.agg_level(&level_exprs);
            if level < self.frames.len() - 1 {
                return self.bind_outer_aggregate(level, func, udf, name, args, distinct, star, filter, e);
            }
        }
        if !self.in_agg_level() {
            // In an aggregate's FILTER PostgreSQL names the clause, not the nesting.
            let msg = if clause != "FILTER" && self.agg.as_ref().is_some_and(|a| a.level == usize::MAX) {
                "aggregate function calls cannot be nested".to_string()
            } else {
                format!("aggregate functions are not allowed in {clause}")
            };
            return Err(Error::semantic("42803", msg).at(self.pos_expr(e)));
        }
        self.bind_aggregate_here(func, udf, name, args, distinct, star, filter, e)
    }

    /// An aggregate whose arguments use only columns of the enclosing level `level`:
    /// it is computed by that level's aggregation and arrives here as an outer
    /// reference. A level that does not aggregate yet binds its output again as an
    /// aggregation (`outer_agg_request`).
    #[allow(clippy::too_many_arguments)]
    fn bind_outer_aggregate(
        &mut self,
        level: usize,
        func: AggFunc,
        udf: Option<crate::plan::UdfAggCall>,
        name: &str,
        args: &[&ast::Expr],
        distinct: bool,
        star: bool,
        filter: Option<&ast::Expr>,
        e: &ast::Expr,
    ) -> Result<Expr> {
        let slot = self
            .outer_aggs
            .iter()
            .position(|s| s.as_ref().is_some_and(|s| s.level == level));
        let Some(slot) = slot else {
            let clause = self.frames[level + 1].clause;
            if matches!(clause, "SELECT" | "ORDER BY") {
                self.outer_agg_request = Some(level);
            }
            return Err(Error::semantic("42803", format!("aggregate functions are not allowed in {clause}")).at(self.pos_expr(e)));
        };
        let state = self.outer_aggs[slot].take();
        let inner_frames = self.frames.split_off(level + 1);
        let inner_agg = std::mem::replace(&mut self.agg, state);
        let r = self.bind_aggregate_here(func, udf, name, args, distinct, star, filter, e);
        self.outer_aggs[slot] = std::mem::replace(&mut self.agg, inner_agg);
        self.frames.extend(inner_frames);
        let b = r?;
        Ok(self.lift(b, level))
    }

    /// An aggregate of the aggregation in `self.agg`, which is at the current level.
    #[allow(clippy::too_many_arguments)]
    fn bind_aggregate_here(
        &mut self,
        func: AggFunc,
        udf: Option<crate::plan::UdfAggCall>,
        name: &str,
        args: &[&ast::Expr],
        distinct: bool,
        star: bool,
        filter: Option<&ast::Expr>,
        e: &ast::Expr,
    ) -> Result<Expr> {
        let func = match (func, star, args.len()) {
            (AggFunc::Count, true, 0) => AggFunc::CountStar,
            (AggFunc::Udf, false, _) => func,
            (_, false, 1..=2) => func,
            _ => {
                return Err(Error::undefined_function(format!(
                    "function {name}({}) does not exist",
                    if star { "*".to_string() } else { format!("{} arguments", args.len()) }
                ))
                .at(self.pos_expr(e)));
            }
        };
        let mut bound = Vec::with_capacity(args.len());
        let order_ast = match e {
            ast::Expr::Function(f) => call_order(f),
            _ => &[],
        };
        let mut order = Vec::with_capacity(order_ast.len());
        if func != AggFunc::CountStar || !order_ast.is_empty() {
            // Bind the arguments over the FROM scope, outside aggregate mode.
            let mut state = self.agg.take().expect("aggregate state");
            let saved = self.set_scope(state.from_scope.clone());
            let level = state.level;
            state.level = usize::MAX; // nested aggregates are an error
            self.agg = Some(state);
            let r = if func == AggFunc::CountStar {
                Ok(Vec::new())
            } else {
                args.iter().map(|a| self.bind_expr(a, "aggregate")).collect::<Result<Vec<_>>>()
            };
            let condition = filter.map(|c| self.bind_bool(c, "FILTER", "FILTER")).transpose();
            let keys = order_ast
                .iter()
                .map(|o| {
                    let b = self.bind_expr(&o.expr, "aggregate")?;
                    super::query::sort_key(b, &o.options).map_err(|err| err.at(self.pos_expr(&o.expr)))
                })
                .collect::<Result<Vec<_>>>();
            self.set_scope(saved);
            let mut state = self.agg.take().expect("aggregate state");
            state.level = level;
            self.agg = Some(state);
            let r = r?;
            // With DISTINCT the rows are sorted by the arguments, so the ORDER BY may
            // name only those (PostgreSQL's rule).
            for (k, o) in keys?.into_iter().zip(order_ast) {
                if distinct && !r.contains(&k.expr) {
                    return Err(Error::semantic(
                        "42P10",
                        "in an aggregate with DISTINCT, ORDER BY expressions must appear in argument list",
                    )
                    .at(self.pos_expr(&o.expr)));
                }
                order.push(k);
            }
            // Only string_agg's result depends on the order its rows come in.
            if func != AggFunc::StringAgg {
                order.clear();
            }
            for (b, a) in r.into_iter().zip(args) {
                bound.push(if is_unknown(a) { self.cast(b, DataType::Text, false, a)? } else { b });
            }
            // FILTER (WHERE c): every built-in aggregate skips NULL inputs (the pair
            // statistics skip a pair with either NULL), so the first argument made NULL
            // where c is not true drops exactly those rows.
            if let (Some(c), Some(first)) = (condition?, bound.first_mut()) {
                let ty = first.ty;
                let arg = std::mem::replace(first, Expr::literal(Value::Null, ty));
                *first = Expr::new(ExprKind::Case { whens: vec![(c, arg)], else_: None }, ty);
            }
        }
        let types: Vec<DataType> = bound.iter().map(|b| b.ty).collect();
        if let Some(mut udf) = udf {
            let ty = udf
                .function
                .function
                .return_type(&types)
                .map_err(|err| err.at(self.pos_expr(e)))?;
            udf.args = bound;
            // Such a function can be replaced between two executions: plan it each time.
            self.reads_at_bind = true;
            return Ok(self.add_aggregate(AggCall {
                udf: Some(Box::new(udf)),
                func,
                arg: None,
                arg2: None,
                distinct,
                order: Vec::new(),
                ty,
            }));
        }
        // The same signatures as the aggregate used as a window function.
        let Some((casts, ty)) = super::window::aggregate_signature(func, &types) else {
            // Untyped literals are `unknown` in the message, as PostgreSQL prints them.
            let list = if star {
                "*".to_string()
            } else {
                types
                    .iter()
                    .zip(args)
                    .map(|(t, a)| if is_unknown(a) { "unknown".to_string() } else { t.to_string() })
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            return Err(Error::undefined_function(format!("function {name}({list}) does not exist")).at(self.pos_expr(e)));
        };
        let mut cast_args = Vec::with_capacity(bound.len());
        for ((b, t), a) in bound.into_iter().zip(casts).zip(args) {
            cast_args.push(self.cast(b, t, false, a)?);
        }
        let mut cast_args = cast_args.into_iter();
        let call = AggCall {
            udf: None,
            func,
            arg: cast_args.next(),
            arg2: cast_args.next(),
            distinct,
            order,
            ty,
        };
        Ok(self.add_aggregate(call))
    }

    /// Adds `call` to the aggregation at this level (once: equal calls share one
    /// result) and returns the reference to its result.
    fn add_aggregate(&mut self, call: AggCall) -> Expr {
        let ty = call.ty;
        let state = self.agg.as_mut().expect("aggregate state");
        let ng = state.first_agg_column();
        let idx = match state.aggs.iter().position(|a| *a == call) {
            Some(i) => i,
            None => {
                state.aggs.push(call);
                state.aggs.len() - 1
            }
        };
        Expr::column(ng + idx, ty)
    }

    /// Binds a call of an application-defined scalar function: arguments keep their
    /// types (untyped literals are text); the function declares its result type.
    fn bind_udf_scalar(
        &mut self,
        udf: crate::expr::udf::ScalarUdf,
        args: &[&ast::Expr],
        clause: &'static str,
        e: &ast::Expr,
    ) -> Result<Expr> {
        let mut bound = Vec::with_capacity(args.len());
        for a in args {
            let b = self.bind_expr(a, clause)?;
            bound.push(if is_unknown(a) {
                self.cast(b, DataType::Text, false, a)?
            } else {
                b
            });
        }
        let types: Vec<DataType> = bound.iter().map(|b| b.ty).collect();
        let ty = udf
            .function
            .return_type(&types)
            .map_err(|err| err.at(self.pos_expr(e)))?;
        // Such a function can be replaced between two executions: plan it each time.
        self.reads_at_bind = true;
        Ok(Expr::new(ExprKind::Udf { udf, args: bound }, ty))
    }
}

/// The output name PostgreSQL gives an unaliased select item.
pub fn output_name(e: &ast::Expr) -> String {
    use ast::Expr as E;
    match e {
        E::Identifier(i) => ident(i),
        E::CompoundIdentifier(parts) => parts.last().map(ident).unwrap_or_default(),
        E::Function(f) => func_name(f),
        E::Nested(x) => output_name(x),
        E::Cast { expr, data_type, .. } => match **expr {
            E::Value(_) => super::types::data_type(data_type)
                .map(|t| match t {
                    DataType::Integer => "int4".into(),
                    DataType::BigInt => "int8".into(),
                    DataType::SmallInt => "int2".into(),
                    DataType::Double => "float8".into(),
                    DataType::Real => "float4".into(),
                    DataType::Boolean => "bool".into(),
                    DataType::Decimal { .. } => "numeric".into(),
                    DataType::Char(_) => "bpchar".into(),
                    DataType::Varchar(_) => "varchar".into(),
                    DataType::Timestamp => "timestamp".into(),
                    t => t.to_string(),
                })
                .unwrap_or_else(|_| "?column?".into()),
            _ => output_name(expr),
        },
        E::Case { .. } => "case".into(),
        E::Extract { .. } => "extract".into(),
        E::Substring { .. } => "substring".into(),
        E::Trim { .. } => "btrim".into(),
        E::Position { .. } => "position".into(),
        E::Exists { .. } => "exists".into(),
        E::Subquery(q) => match &*q.body {
            ast::SetExpr::Select(s) => match s.projection.first() {
                Some(ast::SelectItem::UnnamedExpr(x)) => output_name(x),
                Some(ast::SelectItem::ExprWithAlias { alias, .. }) => ident(alias),
                _ => "?column?".into(),
            },
            _ => "?column?".into(),
        },
        E::Interval(_) => "interval".into(),
        E::TypedString(ts) => super::types::data_type(&ts.data_type)
            .map(|t| match t {
                DataType::Timestamp => "timestamp".to_string(),
                t => t.to_string(),
            })
            .unwrap_or_else(|_| "?column?".into()),
        E::Value(v) if matches!(v.value, ast::Value::Boolean(_)) => "bool".into(),
        _ => "?column?".into(),
    }
}

/// The table of a `count(t.*)` call's one argument, if that is its argument.
fn count_row_arg(f: &ast::Function) -> Option<Result<String>> {
    let ast::FunctionArguments::List(l) = &f.args else { return None };
    match l.args.as_slice() {
        [ast::FunctionArg::Unnamed(ast::FunctionArgExpr::QualifiedWildcard(n))] => Some(super::object_name(n)),
        _ => None,
    }
}
