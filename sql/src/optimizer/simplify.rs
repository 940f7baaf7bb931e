//! Expression simplification, the first rule: what the binder wrote as computation
//! on constants becomes a literal, and a date column compared with a timestamp
//! constant is compared as a date.
//!
//! Why: the binder keeps `date '1994-01-01' + interval '1' year` as an addition (its
//! type is `timestamp`, as in PostgreSQL), so `l_shipdate < date '1994-01-01' +
//! interval '1' year` — TPC-H Q4–Q7, Q10, Q12, Q14, Q15, Q20 — compares
//! `l_shipdate::timestamp` with it: a cast of every row, a predicate no scan bee
//! compiles, and a bound the estimator cannot read. The evaluator already computes a
//! constant subexpression once per batch; folding it here once per plan also lets
//! estimates, index bounds and scan bees see the value.
//!
//! Folding evaluates with no parameters and no subqueries, so it only touches
//! expressions [`Expr::is_constant`] admits (no columns, parameters, subqueries,
//! application functions, sequences or clocks; `now()` stays the transaction's time at
//! execution). An expression whose evaluation fails (`1 / 0`) is left as it is, so
//! the error comes at execution, where a lazy `CASE` or an empty input may never
//! evaluate it.

use super::deep;
use crate::binder::query_util::for_each_child_mut;
use crate::expr::{CmpOp, EvalContext, Expr, ExprKind, NoSubqueries, eval_row};
use crate::plan::Plan;
use crate::types::{DataType, Date, Timestamp, Value};

/// Simplifies every expression of `plan` (not its subplans, which [`super::optimize`]
/// reaches separately).
pub fn simplify_plan(mut plan: Plan) -> Plan {
    plan.for_each_expr_mut(&mut |e| {
        simplify(e);
    });
    plan
}

/// Simplifies `e` bottom-up; returns whether `e` is a constant (see the module doc).
pub fn simplify(e: &mut Expr) -> bool {
    let mut children_constant = true;
    for_each_child_mut(e, &mut |c| children_constant &= deep(|| simplify(c)));
    if children_constant && !e.varies_itself() {
        if !matches!(e.kind, ExprKind::Literal(_)) {
            let ctx = EvalContext { params: &[], subqueries: &NoSubqueries };
            if let Ok(v) = eval_row(e, &[], &ctx) {
                *e = Expr::literal(v, e.ty);
            }
        }
        return true;
    }
    if let ExprKind::Compare { op, left, right } = &mut e.kind
        && let Some(rewritten) = date_comparison(*op, left, right)
    {
        *e = rewritten;
    }
    false
}

/// `d::timestamp <op> T`, with `d` a date and `T` a timestamp literal, as a comparison
/// of `d` with a date literal (either operand order); `None` when it does not apply.
fn date_comparison(op: CmpOp, left: &Expr, right: &Expr) -> Option<Expr> {
    let (op, cast, constant) = match (&left.kind, &right.kind) {
        (ExprKind::Cast { .. }, ExprKind::Literal(_)) => (op, left, right),
        (ExprKind::Literal(_), ExprKind::Cast { .. }) => (op.flip(), right, left),
        _ => return None,
    };
    let ExprKind::Cast { expr: date, .. } = &cast.kind else { return None };
    let ExprKind::Literal(Value::Timestamp(t)) = &constant.kind else { return None };
    if cast.ty != DataType::Timestamp || date.ty != DataType::Date {
        return None;
    }
    let (op, day) = date_bound(op, *t)?;
    Some(Expr::new(
        ExprKind::Compare {
            op,
            left: Box::new((**date).clone()),
            right: Box::new(Expr::literal(Value::Date(day), DataType::Date)),
        },
        DataType::Boolean,
    ))
}

/// The comparison with a date equivalent to `d::timestamp <op> t` for every date
/// `d`. At midnight `t` is a day and the operator stays; between two midnights
/// `d::timestamp < t` holds for the days up to `t`'s own (`d <= day`), and
/// `d::timestamp > t` for the days after it. Equality with a time that is not
/// midnight has no such form (it is always false, but NULL for a NULL `d`): `None`.
fn date_bound(op: CmpOp, t: Timestamp) -> Option<(CmpOp, Date)> {
    let day = t.date();
    if t.time_of_day() == 0 {
        return Some((op, day));
    }
    match op {
        CmpOp::Lt | CmpOp::LtEq => Some((CmpOp::LtEq, day)),
        CmpOp::Gt | CmpOp::GtEq => Some((CmpOp::Gt, day)),
        CmpOp::Eq | CmpOp::NotEq => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::ArithOp;
    use crate::types::Interval;

    fn date_col() -> Expr {
        Expr::column(0, DataType::Date)
    }

    fn cast_ts(e: Expr) -> Expr {
        Expr::new(ExprKind::Cast { expr: Box::new(e), explicit: false }, DataType::Timestamp)
    }

    fn cmp(op: CmpOp, l: Expr, r: Expr) -> Expr {
        Expr::new(ExprKind::Compare { op, left: Box::new(l), right: Box::new(r) }, DataType::Boolean)
    }

    fn day(s: &str) -> Date {
        match Value::Text(s.into()).cast(&DataType::Date).unwrap() {
            Value::Date(d) => d,
            v => panic!("{v:?}"),
        }
    }

    fn ts(s: &str) -> Value {
        Value::Text(s.into()).cast(&DataType::Timestamp).unwrap()
    }

    #[test]
    fn constant_arithmetic_becomes_a_literal() {
        // date '1994-01-01' + interval '1 year'
        let mut e = Expr::new(
            ExprKind::Arith {
                op: ArithOp::Add,
                left: Box::new(Expr::literal(Value::Date(day("1994-01-01")), DataType::Date)),
                right: Box::new(Expr::literal(
                    Value::Interval(Interval { months: 12, days: 0, micros: 0 }),
                    DataType::Interval,
                )),
            },
            DataType::Timestamp,
        );
        assert!(simplify(&mut e));
        assert_eq!(e, Expr::literal(ts("1995-01-01"), DataType::Timestamp));
    }

    #[test]
    fn failing_constants_stay_for_execution() {
        let int = |v| Expr::literal(Value::Integer(v), DataType::Integer);
        let div = Expr::new(
            ExprKind::Arith { op: ArithOp::Div, left: Box::new(int(1)), right: Box::new(int(0)) },
            DataType::Integer,
        );
        let mut e = div.clone();
        assert!(simplify(&mut e));
        assert_eq!(e, div);
    }

    #[test]
    fn columns_and_parameters_are_not_constant() {
        let mut e = cmp(CmpOp::Lt, Expr::column(0, DataType::Integer), Expr::new(ExprKind::Param(0), DataType::Integer));
        let before = e.clone();
        assert!(!simplify(&mut e));
        assert_eq!(e, before);
    }

    #[test]
    fn date_against_midnight_keeps_the_operator() {
        for op in [CmpOp::Eq, CmpOp::NotEq, CmpOp::Lt, CmpOp::LtEq, CmpOp::Gt, CmpOp::GtEq] {
            let mut e = cmp(op, cast_ts(date_col()), Expr::literal(ts("1995-01-01"), DataType::Timestamp));
            simplify(&mut e);
            assert_eq!(e, cmp(op, date_col(), Expr::literal(Value::Date(day("1995-01-01")), DataType::Date)));
            // The literal on the left: the operator flips.
            let mut e = cmp(op, Expr::literal(ts("1995-01-01"), DataType::Timestamp), cast_ts(date_col()));
            simplify(&mut e);
            assert_eq!(e, cmp(op.flip(), date_col(), Expr::literal(Value::Date(day("1995-01-01")), DataType::Date)));
        }
    }

    #[test]
    fn date_against_a_time_of_day() {
        let t = || Expr::literal(ts("1995-01-01 12:00"), DataType::Timestamp);
        let d = || Expr::literal(Value::Date(day("1995-01-01")), DataType::Date);
        for (op, want) in [
            (CmpOp::Lt, CmpOp::LtEq),
            (CmpOp::LtEq, CmpOp::LtEq),
            (CmpOp::Gt, CmpOp::Gt),
            (CmpOp::GtEq, CmpOp::Gt),
        ] {
            let mut e = cmp(op, cast_ts(date_col()), t());
            simplify(&mut e);
            assert_eq!(e, cmp(want, date_col(), d()), "{op:?}");
        }
        for op in [CmpOp::Eq, CmpOp::NotEq] {
            let mut e = cmp(op, cast_ts(date_col()), t());
            let before = e.clone();
            simplify(&mut e);
            assert_eq!(e, before);
        }
        // Before the epoch the day is still the one the time falls in.
        let mut e = cmp(CmpOp::Lt, cast_ts(date_col()), Expr::literal(ts("1969-12-31 23:00"), DataType::Timestamp));
        simplify(&mut e);
        let want = Expr::literal(Value::Date(day("1969-12-31")), DataType::Date);
        assert_eq!(e, cmp(CmpOp::LtEq, date_col(), want));
    }
}
