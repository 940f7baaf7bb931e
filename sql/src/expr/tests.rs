//! Tests of the vectorized evaluator: every node kind, NULLs, selections, errors,
//! laziness, functions, subqueries, and a randomized comparison with a row-at-a-time
//! reference built on `Value`.

use std::cell::Cell;
use std::cmp::Ordering;

use super::*;
use crate::types::{Date, Decimal, Interval, Timestamp};
use crate::vector::Vector;

mod functions;
mod random;
mod row;

pub(super) fn ctx() -> EvalContext<'static> {
    EvalContext {
        params: &[],
        subqueries: &NoSubqueries,
    }
}

pub(super) fn col(i: usize, ty: DataType) -> Expr {
    Expr::column(i, ty)
}

pub(super) fn lit(v: Value, ty: DataType) -> Expr {
    Expr::literal(v, ty)
}

pub(super) fn int(i: i32) -> Expr {
    lit(Value::Integer(i), DataType::Integer)
}

pub(super) fn null(ty: DataType) -> Expr {
    lit(Value::Null, ty)
}

pub(super) fn text(s: &str) -> Value {
    Value::Text(s.to_string())
}

pub(super) fn tlit(s: &str) -> Expr {
    lit(text(s), DataType::Text)
}

pub(super) fn dec(s: &str) -> Value {
    Value::Decimal(Decimal::parse(s).unwrap())
}

pub(super) fn boolean(b: Option<bool>) -> Expr {
    match b {
        Some(b) => lit(Value::Boolean(b), DataType::Boolean),
        None => null(DataType::Boolean),
    }
}

pub(super) fn vector(ty: DataType, vals: &[Value]) -> Vector {
    let mut v = Vector::new(ty, vals.len());
    for x in vals {
        v.push_value(x);
    }
    v
}

pub(super) fn ints(vals: &[Option<i32>]) -> Vector {
    let vals: Vec<Value> = vals
        .iter()
        .map(|v| v.map_or(Value::Null, Value::Integer))
        .collect();
    vector(DataType::Integer, &vals)
}

pub(super) fn batch(cols: Vec<Vector>) -> Batch {
    let len = cols.first().map_or(1, |c| c.len());
    Batch::new(cols, len)
}

pub(super) fn values(e: &Expr, b: &Batch) -> Vec<Value> {
    let v = eval(e, b, &ctx()).unwrap_or_else(|err| panic!("{e:?}: {err}"));
    assert_eq!(v.len(), b.rows());
    (0..v.len()).map(|i| v.value(i)).collect()
}

/// `e` (without columns) by the row evaluator, which must agree with its
/// vectorized twin on the value, its variant, or the error.
pub(super) fn one(e: &Expr) -> Result<Value> {
    let row = eval_row(e, &[], &ctx());
    let batch = eval_row_batch(e, &[], &ctx());
    assert_eq!(format!("{row:?}"), format!("{batch:?}"), "the row and vectorized evaluators differ on {e:?}");
    row
}

pub(super) fn ok(e: &Expr) -> Value {
    one(e).unwrap_or_else(|err| panic!("{e:?}: {err}"))
}

pub(super) fn err(e: &Expr) -> String {
    match one(e) {
        Ok(v) => panic!("{e:?} gave {v:?}, expected an error"),
        Err(err) => err.message,
    }
}

pub(super) fn cmp(op: CmpOp, l: Expr, r: Expr) -> Expr {
    Expr::new(
        ExprKind::Compare {
            op,
            left: Box::new(l),
            right: Box::new(r),
        },
        DataType::Boolean,
    )
}

pub(super) fn arith(op: ArithOp, l: Expr, r: Expr, ty: DataType) -> Expr {
    Expr::new(
        ExprKind::Arith {
            op,
            left: Box::new(l),
            right: Box::new(r),
        },
        ty,
    )
}

pub(super) fn and(v: Vec<Expr>) -> Expr {
    Expr::new(ExprKind::And(v), DataType::Boolean)
}

pub(super) fn or(v: Vec<Expr>) -> Expr {
    Expr::new(ExprKind::Or(v), DataType::Boolean)
}

pub(super) fn not(e: Expr) -> Expr {
    Expr::new(ExprKind::Not(Box::new(e)), DataType::Boolean)
}

pub(super) fn cast(e: Expr, ty: DataType, explicit: bool) -> Expr {
    Expr::new(
        ExprKind::Cast {
            expr: Box::new(e),
            explicit,
        },
        ty,
    )
}

fn b(v: Option<bool>) -> Value {
    v.map_or(Value::Null, Value::Boolean)
}

fn date(s: &str) -> Value {
    Value::Date(Date::parse(s).unwrap())
}

fn ts(s: &str) -> Value {
    Value::Timestamp(Timestamp::parse(s).unwrap())
}

fn iv(s: &str) -> Value {
    Value::Interval(Interval::parse(s).unwrap())
}

// ---------------------------------------------------------------------------------

#[test]
fn columns_gather_by_selection() {
    let mut bt = batch(vec![ints(&[Some(1), None, Some(3), Some(4)])]);
    assert_eq!(
        values(&col(0, DataType::Integer), &bt),
        vec![
            Value::Integer(1),
            Value::Null,
            Value::Integer(3),
            Value::Integer(4)
        ]
    );
    bt.sel = Some(vec![1, 3]);
    assert_eq!(
        values(&col(0, DataType::Integer), &bt),
        vec![Value::Null, Value::Integer(4)]
    );
    // Literals broadcast to the live rows.
    assert_eq!(values(&int(7), &bt), vec![Value::Integer(7); 2]);
    bt.sel = Some(vec![]);
    assert_eq!(values(&int(7), &bt), vec![]);
    // A column index beyond the batch is an error, not a panic.
    assert!(eval(&col(5, DataType::Integer), &bt, &ctx()).is_err());
    // A selection beyond the batch too.
    bt.sel = Some(vec![9]);
    assert!(eval(&int(1), &bt, &ctx()).is_err());
}

#[test]
fn integer_arithmetic_and_errors() {
    use ArithOp::*;
    let i = DataType::Integer;
    assert_eq!(ok(&arith(Add, int(2), int(3), i)), Value::Integer(5));
    assert_eq!(ok(&arith(Sub, int(2), int(3), i)), Value::Integer(-1));
    assert_eq!(ok(&arith(Mul, int(-4), int(3), i)), Value::Integer(-12));
    assert_eq!(ok(&arith(Div, int(7), int(-2), i)), Value::Integer(-3));
    assert_eq!(ok(&arith(Mod, int(-7), int(2), i)), Value::Integer(-1));
    assert_eq!(ok(&arith(Add, int(1), null(i), i)), Value::Null);
    assert_eq!(
        err(&arith(Add, int(i32::MAX), int(1), i)),
        "integer out of range"
    );
    assert_eq!(err(&arith(Div, int(1), int(0), i)), "division by zero");
    assert_eq!(err(&arith(Mod, int(1), int(0), i)), "division by zero");
    assert_eq!(
        err(&arith(Div, int(i32::MIN), int(-1), i)),
        "integer out of range"
    );
    let s = |v: i16| lit(Value::SmallInt(v), DataType::SmallInt);
    assert_eq!(
        err(&arith(Mul, s(200), s(200), DataType::SmallInt)),
        "smallint out of range"
    );
    let big = |v: i64| lit(Value::BigInt(v), DataType::BigInt);
    assert_eq!(
        err(&arith(Sub, big(i64::MIN), big(1), DataType::BigInt)),
        "bigint out of range"
    );
    let neg = |e: Expr, ty| Expr::new(ExprKind::Neg(Box::new(e)), ty);
    assert_eq!(ok(&neg(int(5), i)), Value::Integer(-5));
    assert_eq!(err(&neg(int(i32::MIN), i)), "integer out of range");
    assert_eq!(ok(&neg(null(i), i)), Value::Null);
    assert_eq!(
        ok(&neg(lit(dec("1.50"), DataType::NUMERIC), DataType::NUMERIC)),
        dec("-1.50")
    );
}

#[test]
fn null_rows_never_raise() {
    // 10 / x where x is NULL holds 0 physically: no division by zero.
    let bt = batch(vec![ints(&[Some(2), None, Some(5)])]);
    let e = arith(
        ArithOp::Div,
        int(10),
        col(0, DataType::Integer),
        DataType::Integer,
    );
    assert_eq!(
        values(&e, &bt),
        vec![Value::Integer(5), Value::Null, Value::Integer(2)]
    );
    let bt = batch(vec![ints(&[Some(i32::MAX), None])]);
    let e = arith(
        ArithOp::Add,
        col(0, DataType::Integer),
        int(0),
        DataType::Integer,
    );
    assert_eq!(values(&e, &bt)[1], Value::Null);
    // Division by a column of zeros errors only on live rows.
    let mut bt = batch(vec![ints(&[Some(0), Some(2)])]);
    let e = arith(
        ArithOp::Div,
        int(10),
        col(0, DataType::Integer),
        DataType::Integer,
    );
    assert!(eval(&e, &bt, &ctx()).is_err());
    bt.sel = Some(vec![1]);
    assert_eq!(values(&e, &bt), vec![Value::Integer(5)]);
}

#[test]
fn float_arithmetic() {
    use ArithOp::*;
    let d = |v: f64| lit(Value::Double(v), DataType::Double);
    let t = DataType::Double;
    assert_eq!(ok(&arith(Add, d(0.1), d(0.2), t)), Value::Double(0.1 + 0.2));
    assert_eq!(err(&arith(Div, d(1.0), d(0.0), t)), "division by zero");
    assert_eq!(
        err(&arith(Mul, d(1e300), d(1e300), t)),
        "value out of range: overflow"
    );
    assert_eq!(
        err(&arith(Mul, d(1e-300), d(1e-300), t)),
        "value out of range: underflow"
    );
    // Infinity in, infinity out.
    assert_eq!(
        ok(&arith(Add, d(f64::INFINITY), d(1.0), t)),
        Value::Double(f64::INFINITY)
    );
    match ok(&arith(Div, d(f64::NAN), d(0.0), t)) {
        Value::Double(x) => assert!(x.is_nan()),
        v => panic!("{v:?}"),
    }
    let r = |v: f32| lit(Value::Real(v), DataType::Real);
    assert_eq!(
        ok(&arith(Mul, r(1.5), r(2.0), DataType::Real)),
        Value::Real(3.0)
    );
    assert_eq!(
        err(&arith(Mul, r(3e38), r(10.0), DataType::Real)),
        "value out of range: overflow"
    );
}

#[test]
fn numeric_arithmetic() {
    use ArithOp::*;
    let n = |s: &str| lit(dec(s), DataType::NUMERIC);
    let t = DataType::NUMERIC;
    assert_eq!(ok(&arith(Add, n("1.5"), n("2.25"), t)).to_string(), "3.75");
    assert_eq!(ok(&arith(Mul, n("1.5"), n("2.25"), t)).to_string(), "3.375");
    assert_eq!(
        ok(&arith(Div, n("1"), n("3"), t)).to_string(),
        "0.33333333333333333333"
    );
    assert_eq!(ok(&arith(Mod, n("7.5"), n("2"), t)).to_string(), "1.5");
    assert_eq!(err(&arith(Div, n("1"), n("0"), t)), "division by zero");
    // A typed result applies its modifier.
    let t2 = DataType::decimal(5, 1).unwrap();
    assert_eq!(ok(&arith(Add, n("1.25"), n("1"), t2)).to_string(), "2.3");
}

#[test]
fn date_time_arithmetic() {
    use ArithOp::*;
    use DataType as T;
    let d = |s: &str| lit(date(s), T::Date);
    let t = |s: &str| lit(ts(s), T::Timestamp);
    let i = |s: &str| lit(iv(s), T::Interval);
    assert_eq!(
        ok(&arith(Add, d("2024-02-28"), int(2), T::Date)),
        date("2024-03-01")
    );
    assert_eq!(
        ok(&arith(Add, int(1), d("2024-12-31"), T::Date)),
        date("2025-01-01")
    );
    assert_eq!(
        ok(&arith(Sub, d("2024-03-01"), int(1), T::Date)),
        date("2024-02-29")
    );
    assert_eq!(
        ok(&arith(Sub, d("2024-03-01"), d("2024-01-01"), T::Integer)),
        Value::Integer(60)
    );
    assert_eq!(
        ok(&arith(Add, d("2024-01-31"), i("1 month"), T::Timestamp)),
        ts("2024-02-29 00:00:00")
    );
    assert_eq!(
        ok(&arith(
            Sub,
            t("2024-01-01 10:00"),
            i("1 day 1 hour"),
            T::Timestamp
        )),
        ts("2023-12-31 09:00:00")
    );
    assert_eq!(
        ok(&arith(
            Add,
            i("2 hours"),
            t("2024-01-01 10:00"),
            T::Timestamp
        )),
        ts("2024-01-01 12:00:00")
    );
    assert_eq!(
        ok(&arith(Add, i("1 day"), d("2024-01-01"), T::Timestamp)),
        ts("2024-01-02 00:00:00")
    );
    assert_eq!(
        ok(&arith(
            Sub,
            t("2024-01-02 12:00"),
            t("2024-01-01 00:00"),
            T::Interval
        ))
        .to_string(),
        "1 day 12:00:00"
    );
    assert_eq!(
        ok(&arith(Add, i("1 day"), i("2 hours"), T::Interval)).to_string(),
        "1 day 02:00:00"
    );
    assert_eq!(
        ok(&arith(Sub, i("1 day"), i("2 days"), T::Interval)).to_string(),
        "-1 days"
    );
    let dbl = |v: f64| lit(Value::Double(v), T::Double);
    assert_eq!(
        ok(&arith(Mul, i("1 day"), dbl(1.5), T::Interval)).to_string(),
        "1 day 12:00:00"
    );
    assert_eq!(
        ok(&arith(Mul, dbl(2.0), i("1 hour"), T::Interval)).to_string(),
        "02:00:00"
    );
    assert_eq!(
        ok(&arith(Div, i("1 day"), dbl(4.0), T::Interval)).to_string(),
        "06:00:00"
    );
    assert_eq!(
        err(&arith(Div, i("1 day"), dbl(0.0), T::Interval)),
        "division by zero"
    );
    assert_eq!(
        err(&arith(Add, d("294276-12-31"), int(1), T::Date)),
        "date out of range"
    );
    // No such operator: an error, not a panic.
    assert!(one(&arith(Mul, d("2024-01-01"), int(2), T::Date)).is_err());
}

#[test]
fn comparisons_by_type() {
    use CmpOp::*;
    let all = [Eq, NotEq, Lt, LtEq, Gt, GtEq];
    let check = |a: Value, b: Value, ty: DataType| {
        for op in all {
            let want = a
                .cmp_sql(&b)
                .map(|o| Value::Boolean(op.holds(o)))
                .unwrap_or(Value::Null);
            let got = ok(&cmp(op, lit(a.clone(), ty), lit(b.clone(), ty)));
            assert_eq!(got, want, "{a:?} {op:?} {b:?}");
        }
    };
    check(Value::Integer(1), Value::Integer(2), DataType::Integer);
    check(Value::SmallInt(3), Value::SmallInt(3), DataType::SmallInt);
    check(Value::BigInt(-5), Value::BigInt(4), DataType::BigInt);
    check(
        Value::Boolean(false),
        Value::Boolean(true),
        DataType::Boolean,
    );
    check(
        Value::Double(f64::NAN),
        Value::Double(f64::INFINITY),
        DataType::Double,
    );
    check(
        Value::Double(f64::NAN),
        Value::Double(f64::NAN),
        DataType::Double,
    );
    check(Value::Double(-0.0), Value::Double(0.0), DataType::Double);
    check(Value::Real(1.5), Value::Real(f32::NAN), DataType::Real);
    check(dec("1.0"), dec("1.00"), DataType::NUMERIC);
    check(dec("1.05"), dec("1.1"), DataType::NUMERIC);
    check(date("2024-01-01"), date("2023-12-31"), DataType::Date);
    check(
        ts("2024-01-01 00:00:01"),
        ts("2024-01-01"),
        DataType::Timestamp,
    );
    check(iv("1 month"), iv("30 days"), DataType::Interval);
    check(text("abc"), text("abd"), DataType::Text);
    check(text("ab "), text("ab"), DataType::Text);
    check(text("é"), text("z"), DataType::Text);
    check(Value::Integer(1), Value::Null, DataType::Integer);
    // character(n): trailing spaces do not count, also between lengths.
    let c3 = lit(Value::Char("ab ".into()), DataType::Char(3));
    let c5 = lit(Value::Char("ab   ".into()), DataType::Char(5));
    assert_eq!(ok(&cmp(Eq, c3.clone(), c5.clone())), Value::Boolean(true));
    let c_tab = lit(Value::Char("ab\t".into()), DataType::Char(3));
    assert_eq!(ok(&cmp(Lt, c_tab, c5)), Value::Boolean(false));
    assert_eq!(ok(&cmp(Eq, c3, tlit("ab"))), Value::Boolean(true));
}

#[test]
fn column_comparisons_with_nulls_and_selection() {
    let mut bt = batch(vec![
        ints(&[Some(1), None, Some(3), Some(4)]),
        ints(&[Some(1), Some(2), None, Some(5)]),
    ]);
    let i = DataType::Integer;
    let e = cmp(CmpOp::Lt, col(0, i), col(1, i));
    assert_eq!(
        values(&e, &bt),
        vec![b(Some(false)), b(None), b(None), b(Some(true))]
    );
    let e = cmp(CmpOp::GtEq, col(0, i), int(3));
    assert_eq!(
        values(&e, &bt),
        vec![b(Some(false)), b(None), b(Some(true)), b(Some(true))]
    );
    assert_eq!(eval_predicate(&e, &bt, &ctx()).unwrap(), vec![2, 3]);
    let e2 = cmp(CmpOp::Gt, int(3), col(0, i));
    assert_eq!(eval_predicate(&e2, &bt, &ctx()).unwrap(), vec![0]);
    bt.sel = Some(vec![1, 2]);
    assert_eq!(eval_predicate(&e, &bt, &ctx()).unwrap(), vec![2]);
    assert_eq!(values(&e, &bt), vec![b(None), b(Some(true))]);
    // NULL constant: nothing qualifies.
    let e3 = cmp(CmpOp::Eq, col(0, i), null(i));
    assert_eq!(eval_predicate(&e3, &bt, &ctx()).unwrap(), Vec::<u32>::new());
    assert_eq!(values(&e3, &bt), vec![b(None), b(None)]);
}

#[test]
fn string_predicates_fast_path() {
    let names = vector(
        DataType::Char(4),
        &[
            Value::Char("ab  ".into()),
            Value::Char("abc ".into()),
            Value::Null,
            Value::Char("b   ".into()),
        ],
    );
    let mut bt = batch(vec![names]);
    let c = col(0, DataType::Char(4));
    let k = lit(Value::Char("ab".into()), DataType::Char(2));
    assert_eq!(
        eval_predicate(&cmp(CmpOp::Eq, c.clone(), k.clone()), &bt, &ctx()).unwrap(),
        vec![0]
    );
    assert_eq!(
        eval_predicate(&cmp(CmpOp::Gt, c.clone(), k.clone()), &bt, &ctx()).unwrap(),
        vec![1, 3]
    );
    bt.sel = Some(vec![0, 2, 3]);
    assert_eq!(
        eval_predicate(&cmp(CmpOp::NotEq, k, c), &bt, &ctx()).unwrap(),
        vec![3]
    );
}

fn tv(v: Option<bool>) -> Expr {
    boolean(v)
}

#[test]
fn three_valued_logic_tables() {
    let vals = [Some(true), Some(false), None];
    for x in vals {
        for y in vals {
            let and_want = match (x, y) {
                (Some(false), _) | (_, Some(false)) => Some(false),
                (Some(true), Some(true)) => Some(true),
                _ => None,
            };
            let or_want = match (x, y) {
                (Some(true), _) | (_, Some(true)) => Some(true),
                (Some(false), Some(false)) => Some(false),
                _ => None,
            };
            assert_eq!(ok(&and(vec![tv(x), tv(y)])), b(and_want), "{x:?} AND {y:?}");
            assert_eq!(ok(&or(vec![tv(x), tv(y)])), b(or_want), "{x:?} OR {y:?}");
        }
        assert_eq!(ok(&not(tv(x))), b(x.map(|v| !v)));
    }
    // The same over columns, with a selection.
    let bv = |v: &[Option<bool>]| {
        let vals: Vec<Value> = v.iter().map(|x| b(*x)).collect();
        vector(DataType::Boolean, &vals)
    };
    let xs = [
        Some(true),
        Some(true),
        Some(true),
        Some(false),
        Some(false),
        Some(false),
        None,
        None,
        None,
    ];
    let ys = [
        Some(true),
        Some(false),
        None,
        Some(true),
        Some(false),
        None,
        Some(true),
        Some(false),
        None,
    ];
    let bt = batch(vec![bv(&xs), bv(&ys)]);
    let x = col(0, DataType::Boolean);
    let y = col(1, DataType::Boolean);
    let got_and = values(&and(vec![x.clone(), y.clone()]), &bt);
    let got_or = values(&or(vec![x.clone(), y.clone()]), &bt);
    for k in 0..9 {
        assert_eq!(got_and[k], ok(&and(vec![tv(xs[k]), tv(ys[k])])));
        assert_eq!(got_or[k], ok(&or(vec![tv(xs[k]), tv(ys[k])])));
    }
    // Predicates: NULL is false.
    assert_eq!(
        eval_predicate(&and(vec![x.clone(), y.clone()]), &bt, &ctx()).unwrap(),
        vec![0]
    );
    assert_eq!(
        eval_predicate(&or(vec![x.clone(), y.clone()]), &bt, &ctx()).unwrap(),
        vec![0, 1, 2, 3, 6]
    );
    assert_eq!(
        eval_predicate(&not(or(vec![x, y])), &bt, &ctx()).unwrap(),
        vec![4]
    );
}

#[test]
fn and_guards_later_conjuncts() {
    let bt = batch(vec![ints(&[Some(0), Some(5), Some(20), None])]);
    let x = col(0, DataType::Integer);
    // x <> 0 AND 10 / x > 1
    let e = and(vec![
        cmp(CmpOp::NotEq, x.clone(), int(0)),
        cmp(
            CmpOp::Gt,
            arith(ArithOp::Div, int(10), x.clone(), DataType::Integer),
            int(1),
        ),
    ]);
    assert_eq!(eval_predicate(&e, &bt, &ctx()).unwrap(), vec![1]);
    assert_eq!(
        values(&e, &bt),
        vec![b(Some(false)), b(Some(true)), b(Some(false)), b(None)]
    );
    // x = 0 OR 10 / x > 1
    let e = or(vec![
        cmp(CmpOp::Eq, x.clone(), int(0)),
        cmp(
            CmpOp::Gt,
            arith(ArithOp::Div, int(10), x, DataType::Integer),
            int(1),
        ),
    ]);
    assert_eq!(eval_predicate(&e, &bt, &ctx()).unwrap(), vec![0, 1]);
    assert_eq!(
        values(&e, &bt),
        vec![b(Some(true)), b(Some(true)), b(Some(false)), b(None)]
    );
}

#[test]
fn is_null_is_bool_is_distinct() {
    let bt = batch(vec![
        ints(&[Some(1), None, Some(3), None]),
        ints(&[Some(1), Some(2), None, None]),
    ]);
    let i = DataType::Integer;
    let isnull = |e: Expr, negated| {
        Expr::new(
            ExprKind::IsNull {
                expr: Box::new(e),
                negated,
            },
            DataType::Boolean,
        )
    };
    let bools = |v: &[bool]| v.iter().map(|&x| Value::Boolean(x)).collect::<Vec<_>>();
    assert_eq!(
        values(&isnull(col(0, i), false), &bt),
        bools(&[false, true, false, true])
    );
    assert_eq!(
        values(&isnull(col(0, i), true), &bt),
        bools(&[true, false, true, false])
    );
    assert_eq!(ok(&isnull(null(i), false)), Value::Boolean(true));
    let distinct = |negated| {
        Expr::new(
            ExprKind::IsDistinctFrom {
                left: Box::new(col(0, i)),
                right: Box::new(col(1, i)),
                negated,
            },
            DataType::Boolean,
        )
    };
    assert_eq!(
        values(&distinct(false), &bt),
        bools(&[false, true, true, false])
    );
    assert_eq!(
        values(&distinct(true), &bt),
        bools(&[true, false, false, true])
    );
    let isb = |v: Option<bool>, value, negated| {
        ok(&Expr::new(
            ExprKind::IsBool {
                expr: Box::new(tv(v)),
                value,
                negated,
            },
            DataType::Boolean,
        ))
    };
    assert_eq!(isb(Some(true), true, false), Value::Boolean(true));
    assert_eq!(isb(None, true, false), Value::Boolean(false));
    assert_eq!(isb(None, true, true), Value::Boolean(true));
    assert_eq!(isb(Some(false), false, false), Value::Boolean(true));
    assert_eq!(isb(None, false, true), Value::Boolean(true));
    assert_eq!(isb(Some(true), false, true), Value::Boolean(true));
}

fn in_list(e: Expr, list: Vec<Expr>, negated: bool) -> Expr {
    Expr::new(
        ExprKind::InList {
            expr: Box::new(e),
            list,
            negated,
        },
        DataType::Boolean,
    )
}

#[test]
fn in_lists_three_valued() {
    let i = DataType::Integer;
    let bt = batch(vec![ints(&[Some(1), Some(2), None, Some(4)])]);
    let x = col(0, i);
    let small = vec![int(1), int(4)];
    assert_eq!(
        values(&in_list(x.clone(), small.clone(), false), &bt),
        vec![b(Some(true)), b(Some(false)), b(None), b(Some(true))]
    );
    assert_eq!(
        values(&in_list(x.clone(), small, true), &bt),
        vec![b(Some(false)), b(Some(true)), b(None), b(Some(false))]
    );
    let with_null = vec![int(1), null(i)];
    assert_eq!(
        values(&in_list(x.clone(), with_null.clone(), false), &bt),
        vec![b(Some(true)), b(None), b(None), b(None)]
    );
    assert_eq!(
        values(&in_list(x.clone(), with_null, true), &bt),
        vec![b(Some(false)), b(None), b(None), b(None)]
    );
    // Many constants: the sorted path.
    let many: Vec<Expr> = (10..40).rev().chain([4]).map(int).collect();
    assert_eq!(
        values(&in_list(x.clone(), many, false), &bt),
        vec![b(Some(false)), b(Some(false)), b(None), b(Some(true))]
    );
    // Non-constant items.
    let e = in_list(int(2), vec![int(7), x.clone()], false);
    assert_eq!(
        values(&e, &bt),
        vec![b(Some(false)), b(Some(true)), b(None), b(Some(false))]
    );
    // Strings, char padding, many items.
    let names = vector(
        DataType::Char(3),
        &[Value::Char("a  ".into()), Value::Char("zz ".into())],
    );
    let bt2 = batch(vec![names]);
    let items: Vec<Expr> = ["q", "r", "s", "t", "u", "v", "w", "x", "y", "a"]
        .iter()
        .map(|s| lit(Value::Char(s.to_string()), DataType::Char(1)))
        .collect();
    assert_eq!(
        values(&in_list(col(0, DataType::Char(3)), items, false), &bt2),
        vec![b(Some(true)), b(Some(false))]
    );
    let fl = |v: f64| lit(Value::Double(v), DataType::Double);
    assert_eq!(
        ok(&in_list(fl(f64::NAN), vec![fl(1.0), fl(f64::NAN)], false)),
        Value::Boolean(true)
    );
    assert_eq!(
        ok(&in_list(
            fl(-0.0),
            (0..10).map(|v| fl(v as f64)).collect(),
            false
        )),
        Value::Boolean(true)
    );
}

fn case(whens: Vec<(Expr, Expr)>, else_: Option<Expr>, ty: DataType) -> Expr {
    Expr::new(
        ExprKind::Case {
            whens,
            else_: else_.map(Box::new),
        },
        ty,
    )
}

#[test]
fn case_is_lazy() {
    let i = DataType::Integer;
    let mut bt = batch(vec![ints(&[Some(0), Some(5), None, Some(-2)])]);
    let x = col(0, i);
    // CASE WHEN x = 0 THEN 0 ELSE 10 / x END
    let e = case(
        vec![(cmp(CmpOp::Eq, x.clone(), int(0)), int(0))],
        Some(arith(ArithOp::Div, int(10), x.clone(), i)),
        i,
    );
    assert_eq!(
        values(&e, &bt),
        vec![
            Value::Integer(0),
            Value::Integer(2),
            Value::Null,
            Value::Integer(-5)
        ]
    );
    bt.sel = Some(vec![0, 3]);
    assert_eq!(values(&e, &bt), vec![Value::Integer(0), Value::Integer(-5)]);
    bt.sel = None;
    // No ELSE: NULL; first matching WHEN wins.
    let e = case(
        vec![
            (cmp(CmpOp::Gt, x.clone(), int(0)), tlit("pos")),
            (cmp(CmpOp::Gt, x.clone(), int(-10)), tlit("small")),
        ],
        None,
        DataType::Text,
    );
    assert_eq!(
        values(&e, &bt),
        vec![text("small"), text("pos"), Value::Null, text("small")]
    );
    // A THEN on no row is never evaluated (1 / 0 would fail).
    let e = case(
        vec![(
            cmp(CmpOp::Gt, x.clone(), int(100)),
            arith(ArithOp::Div, int(1), int(0), i),
        )],
        Some(int(1)),
        i,
    );
    assert_eq!(values(&e, &bt), vec![Value::Integer(1); 4]);
    // A branch of another physical type is cast to the result type.
    let e = case(
        vec![(
            boolean(Some(true)),
            lit(Value::SmallInt(3), DataType::SmallInt),
        )],
        None,
        i,
    );
    assert_eq!(ok(&e), Value::Integer(3));
    // A NULL condition does not match.
    let e = case(vec![(boolean(None), int(1))], Some(int(2)), i);
    assert_eq!(ok(&e), Value::Integer(2));
}

#[test]
fn coalesce_is_lazy() {
    let i = DataType::Integer;
    let bt = batch(vec![
        ints(&[Some(1), None, None, Some(4)]),
        ints(&[Some(9), Some(2), None, None]),
    ]);
    let e = Expr::new(ExprKind::Coalesce(vec![col(0, i), col(1, i), int(7)]), i);
    assert_eq!(
        values(&e, &bt),
        vec![
            Value::Integer(1),
            Value::Integer(2),
            Value::Integer(7),
            Value::Integer(4)
        ]
    );
    let e = Expr::new(
        ExprKind::Coalesce(vec![int(3), arith(ArithOp::Div, int(1), int(0), i)]),
        i,
    );
    assert_eq!(values(&e, &bt), vec![Value::Integer(3); 4]);
    let e = Expr::new(ExprKind::Coalesce(vec![null(i), null(i)]), i);
    assert_eq!(ok(&e), Value::Null);
}

#[test]
fn casts() {
    use DataType as T;
    let c = |v: Value, from: DataType, to: DataType| one(&cast(lit(v, from), to, true));
    assert_eq!(
        c(Value::Integer(40000), T::Integer, T::SmallInt)
            .unwrap_err()
            .message,
        "smallint out of range"
    );
    assert_eq!(
        c(Value::Integer(7), T::Integer, T::BigInt),
        Ok(Value::BigInt(7))
    );
    assert_eq!(c(dec("2.5"), T::NUMERIC, T::Integer), Ok(Value::Integer(3)));
    assert_eq!(
        c(dec("-2.5"), T::NUMERIC, T::Integer),
        Ok(Value::Integer(-3))
    );
    assert_eq!(
        c(dec("1e20"), T::NUMERIC, T::BigInt).unwrap_err().message,
        "bigint out of range"
    );
    assert_eq!(
        c(Value::Double(2.5), T::Double, T::Integer),
        Ok(Value::Integer(2))
    );
    assert_eq!(
        c(Value::Double(f64::NAN), T::Double, T::Integer)
            .unwrap_err()
            .message,
        "integer out of range"
    );
    assert_eq!(
        c(Value::Integer(7), T::Integer, T::decimal(5, 2).unwrap())
            .unwrap()
            .to_string(),
        "7.00"
    );
    assert!(c(Value::Integer(1000), T::Integer, T::decimal(5, 2).unwrap()).is_err());
    assert_eq!(
        c(Value::Integer(3), T::Integer, T::Double),
        Ok(Value::Double(3.0))
    );
    assert_eq!(
        c(Value::BigInt(3), T::BigInt, T::Real),
        Ok(Value::Real(3.0))
    );
    assert_eq!(c(dec("0.1"), T::NUMERIC, T::Double), Ok(Value::Double(0.1)));
    assert_eq!(
        c(Value::Double(1e300), T::Double, T::Real)
            .unwrap_err()
            .message,
        "value out of range: overflow"
    );
    assert_eq!(
        c(Value::Double(0.1), T::Double, T::NUMERIC)
            .unwrap()
            .to_string(),
        "0.1"
    );
    assert_eq!(
        c(Value::Real(0.5), T::Real, T::Double),
        Ok(Value::Double(0.5))
    );
    assert_eq!(
        c(Value::Double(f64::INFINITY), T::Double, T::NUMERIC)
            .unwrap_err()
            .message,
        "cannot convert infinity to numeric"
    );
    assert_eq!(
        c(dec("1.255"), T::NUMERIC, T::decimal(4, 2).unwrap())
            .unwrap()
            .to_string(),
        "1.26"
    );
    // Text in and out.
    assert_eq!(c(text(" 42 "), T::Text, T::Integer), Ok(Value::Integer(42)));
    assert_eq!(
        c(text("abc"), T::Text, T::Integer).unwrap_err().message,
        "invalid input syntax for type integer: \"abc\""
    );
    assert_eq!(
        c(text("12.50"), T::Text, T::NUMERIC).unwrap().to_string(),
        "12.50"
    );
    assert_eq!(c(text("t"), T::Text, T::Boolean), Ok(Value::Boolean(true)));
    assert_eq!(
        c(text("2024-02-29"), T::Text, T::Date),
        Ok(date("2024-02-29"))
    );
    assert_eq!(c(text("1 day"), T::Text, T::Interval), Ok(iv("1 day")));
    assert_eq!(c(text("1.5"), T::Text, T::Double), Ok(Value::Double(1.5)));
    assert_eq!(c(Value::Integer(-5), T::Integer, T::Text), Ok(text("-5")));
    assert_eq!(
        c(Value::Double(1e20), T::Double, T::Text),
        Ok(text("1e+20"))
    );
    assert_eq!(
        c(Value::Boolean(true), T::Boolean, T::Text),
        Ok(text("true"))
    );
    assert_eq!(
        c(date("2024-01-05"), T::Date, T::Text),
        Ok(text("2024-01-05"))
    );
    assert_eq!(
        c(dec("1.50"), T::NUMERIC, T::Varchar(None)),
        Ok(Value::Varchar("1.50".into()))
    );
    // Strings to strings: explicit cuts, assignment reports.
    assert_eq!(
        c(text("abcdef"), T::Text, T::Varchar(Some(3))),
        Ok(Value::Varchar("abc".into()))
    );
    assert_eq!(
        one(&cast(tlit("abcdef"), T::Varchar(Some(3)), false))
            .unwrap_err()
            .message,
        "value too long for type character varying(3)"
    );
    assert_eq!(
        one(&cast(tlit("abc  "), T::Varchar(Some(3)), false)),
        Ok(Value::Varchar("abc".into()))
    );
    assert_eq!(
        c(text("ab"), T::Text, T::Char(4)),
        Ok(Value::Char("ab  ".into()))
    );
    assert_eq!(
        c(Value::Char("ab  ".into()), T::Char(4), T::Text),
        Ok(text("ab"))
    );
    assert_eq!(
        c(Value::Char(" 7 ".into()), T::Char(3), T::Integer),
        Ok(Value::Integer(7))
    );
    // Dates and timestamps.
    assert_eq!(
        c(date("2024-01-05"), T::Date, T::Timestamp),
        Ok(ts("2024-01-05 00:00"))
    );
    assert_eq!(
        c(ts("2024-01-05 10:30"), T::Timestamp, T::Date),
        Ok(date("2024-01-05"))
    );
    assert_eq!(
        c(ts("1999-12-31 23:59:59"), T::Timestamp, T::Date),
        Ok(date("1999-12-31"))
    );
    // The rare ones, row by row.
    assert_eq!(
        c(Value::Boolean(true), T::Boolean, T::Integer),
        Ok(Value::Integer(1))
    );
    assert_eq!(
        c(Value::Integer(0), T::Integer, T::Boolean),
        Ok(Value::Boolean(false))
    );
    assert_eq!(
        c(date("2024-01-05"), T::Date, T::Integer)
            .unwrap_err()
            .message,
        "cannot cast type date to integer"
    );
    assert_eq!(c(Value::Null, T::Integer, T::Text), Ok(Value::Null));
    // Vectors with NULLs: NULL rows are not converted (0 would be fine anyway, but a
    // NULL text row holds "" which does not parse).
    let v = vector(T::Text, &[text("1"), Value::Null, text("3")]);
    let bt = batch(vec![v]);
    assert_eq!(
        values(&cast(col(0, T::Text), T::Integer, true), &bt),
        vec![Value::Integer(1), Value::Null, Value::Integer(3)]
    );
    let v = vector(
        T::BigInt,
        &[Value::BigInt(1), Value::Null, Value::BigInt(1 << 40)],
    );
    let mut bt = batch(vec![v]);
    assert!(eval(&cast(col(0, T::BigInt), T::Integer, true), &bt, &ctx()).is_err());
    bt.sel = Some(vec![0, 1]);
    assert_eq!(
        values(&cast(col(0, T::BigInt), T::Integer, true), &bt),
        vec![Value::Integer(1), Value::Null]
    );
}

fn like(s: Expr, p: Expr, negated: bool, ci: bool, escape: Option<char>) -> Expr {
    Expr::new(
        ExprKind::Like {
            expr: Box::new(s),
            pattern: Box::new(p),
            negated,
            case_insensitive: ci,
            escape,
        },
        DataType::Boolean,
    )
}

fn likes(s: &str, p: &str) -> bool {
    match ok(&like(tlit(s), tlit(p), false, false, None)) {
        Value::Boolean(b) => b,
        v => panic!("{v:?}"),
    }
}

#[test]
fn like_patterns() {
    assert!(likes("hello", "hello"));
    assert!(!likes("hello", "hell"));
    assert!(likes("hello", "he%"));
    assert!(likes("hello", "%llo"));
    assert!(likes("hello", "%ll%"));
    assert!(likes("hello", "h_llo"));
    assert!(!likes("hello", "h_lo"));
    assert!(likes("hello", "%"));
    assert!(likes("", "%"));
    assert!(!likes("", "_"));
    assert!(likes("", ""));
    assert!(likes("hello", "h%l%o"));
    assert!(likes("hello", "%%%l%%"));
    assert!(likes("abcabcabd", "%abc%abd"));
    assert!(!likes("abcabcabd", "%abc%abe"));
    assert!(likes("mississippi", "m%iss%ppi"));
    assert!(likes("mississippi", "%s_s%"));
    assert!(!likes("mississippi", "%s__s%x"));
    assert!(likes("héllo", "h_llo"));
    assert!(likes("日本語", "_本_"));
    assert!(likes("日本語", "%語"));
    assert!(!likes("日本語", "__"));
    // Escapes: \% is a literal percent, \\ a backslash.
    assert!(likes("100%", "100\\%"));
    assert!(!likes("1000", "100\\%"));
    assert!(likes("a_b", "a\\_b"));
    assert!(!likes("axb", "a\\_b"));
    assert!(likes("a\\b", "a\\\\b"));
    assert_eq!(
        err(&like(tlit("a"), tlit("a\\"), false, false, None)),
        "LIKE pattern must not end with escape character"
    );
    assert_eq!(
        ok(&like(tlit("10%"), tlit("10#%"), false, false, Some('#'))),
        Value::Boolean(true)
    );
    assert_eq!(
        ok(&like(tlit("a\\b"), tlit("a\\b"), false, false, Some('#'))),
        Value::Boolean(true)
    );
    // ILIKE and NOT.
    assert_eq!(
        ok(&like(tlit("HeLLo"), tlit("hel%"), false, true, None)),
        Value::Boolean(true)
    );
    assert_eq!(
        ok(&like(tlit("HeLLo"), tlit("HEL_O"), false, true, None)),
        Value::Boolean(true)
    );
    assert_eq!(
        ok(&like(tlit("ÉTÉ"), tlit("été"), false, true, None)),
        Value::Boolean(true)
    );
    assert_eq!(
        ok(&like(tlit("HeLLo"), tlit("hel%"), false, false, None)),
        Value::Boolean(false)
    );
    assert_eq!(
        ok(&like(tlit("abc"), tlit("a%"), true, false, None)),
        Value::Boolean(false)
    );
    assert_eq!(
        ok(&like(null(DataType::Text), tlit("a%"), false, false, None)),
        Value::Null
    );
    assert_eq!(
        ok(&like(tlit("a"), null(DataType::Text), true, false, None)),
        Value::Null
    );
    // character(n) is matched with its padding, as PostgreSQL's bpcharlike.
    let padded = lit(Value::Char("ab ".into()), DataType::Char(3));
    assert_eq!(
        ok(&like(padded.clone(), tlit("ab"), false, false, None)),
        Value::Boolean(false)
    );
    assert_eq!(
        ok(&like(padded.clone(), tlit("ab%"), false, false, None)),
        Value::Boolean(true)
    );
    assert_eq!(
        ok(&like(padded, tlit("ab_"), false, false, None)),
        Value::Boolean(true)
    );
}

#[test]
fn like_over_columns() {
    let s = vector(
        DataType::Text,
        &[text("apple"), text("banana"), Value::Null, text("apricot")],
    );
    let p = vector(
        DataType::Text,
        &[text("a%"), text("a%"), text("%"), text("%cot")],
    );
    let mut bt = batch(vec![s, p]);
    let e = like(col(0, DataType::Text), tlit("ap%"), false, false, None);
    assert_eq!(eval_predicate(&e, &bt, &ctx()).unwrap(), vec![0, 3]);
    let e = like(
        col(0, DataType::Text),
        col(1, DataType::Text),
        false,
        false,
        None,
    );
    assert_eq!(
        values(&e, &bt),
        vec![b(Some(true)), b(Some(false)), b(None), b(Some(true))]
    );
    bt.sel = Some(vec![1, 3]);
    assert_eq!(values(&e, &bt), vec![b(Some(false)), b(Some(true))]);
}

fn extract(field: DateField, e: Expr) -> Expr {
    Expr::new(
        ExprKind::Extract {
            field,
            expr: Box::new(e),
        },
        DataType::NUMERIC,
    )
}

#[test]
fn extract_fields() {
    use DateField as F;
    let d = lit(date("2024-03-15"), DataType::Date);
    assert_eq!(ok(&extract(F::Year, d.clone())).to_string(), "2024");
    assert_eq!(ok(&extract(F::Month, d.clone())).to_string(), "3");
    assert_eq!(ok(&extract(F::Dow, d.clone())).to_string(), "5");
    assert_eq!(
        err(&extract(F::Hour, d)),
        "unit \"hour\" not supported for type date"
    );
    let t = lit(ts("2024-03-15 10:20:30.5"), DataType::Timestamp);
    assert_eq!(ok(&extract(F::Hour, t.clone())).to_string(), "10");
    assert_eq!(ok(&extract(F::Second, t)).to_string(), "30.500000");
    let i = |s: &str| lit(iv(s), DataType::Interval);
    let x = i("1 year 14 months 3 days 04:05:06.5");
    assert_eq!(ok(&extract(F::Year, x.clone())).to_string(), "2");
    assert_eq!(ok(&extract(F::Month, x.clone())).to_string(), "2");
    assert_eq!(ok(&extract(F::Day, x.clone())).to_string(), "3");
    assert_eq!(ok(&extract(F::Hour, x.clone())).to_string(), "4");
    assert_eq!(ok(&extract(F::Minute, x.clone())).to_string(), "5");
    assert_eq!(ok(&extract(F::Second, x.clone())).to_string(), "6.500000");
    assert_eq!(
        ok(&extract(F::Milliseconds, x.clone())).to_string(),
        "6500.000"
    );
    assert_eq!(
        ok(&extract(F::Microseconds, x.clone())).to_string(),
        "6500000"
    );
    assert_eq!(ok(&extract(F::Quarter, x.clone())).to_string(), "1");
    assert_eq!(
        ok(&extract(F::Epoch, i("1 day"))).to_string(),
        "86400.000000"
    );
    assert_eq!(
        ok(&extract(F::Epoch, i("1 year"))).to_string(),
        "31557600.000000"
    );
    assert_eq!(
        ok(&extract(F::Epoch, i("1 month"))).to_string(),
        "2592000.000000"
    );
    assert_eq!(
        ok(&extract(F::Hour, i("-3 hours -30 minutes"))).to_string(),
        "-3"
    );
    assert_eq!(
        ok(&extract(F::Minute, i("-3 hours -30 minutes"))).to_string(),
        "-30"
    );
    assert_eq!(
        err(&extract(F::Dow, i("1 day"))),
        "unit \"dow\" not supported for type interval"
    );
    assert_eq!(ok(&extract(F::Year, null(DataType::Date))), Value::Null);
}

#[test]
fn params() {
    let params = [Value::Integer(5), Value::Integer(7)];
    let c = EvalContext {
        params: &params,
        subqueries: &NoSubqueries,
    };
    let e = arith(
        ArithOp::Add,
        Expr::new(ExprKind::Param(0), DataType::Integer),
        Expr::new(ExprKind::Param(1), DataType::BigInt),
        DataType::BigInt,
    );
    assert_eq!(eval_row(&e, &[], &c), Ok(Value::BigInt(12)));
    let e = Expr::new(ExprKind::Param(3), DataType::Integer);
    assert_eq!(eval_row(&e, &[], &c).unwrap_err().sqlstate, "42P02");
    // A parameter used in a predicate fast path.
    let bt = batch(vec![ints(&[Some(4), Some(6), Some(8)])]);
    let e = cmp(
        CmpOp::Gt,
        col(0, DataType::Integer),
        Expr::new(ExprKind::Param(0), DataType::Integer),
    );
    assert_eq!(eval_predicate(&e, &bt, &c).unwrap(), vec![1, 2]);
}

#[test]
fn eval_row_uses_column_types() {
    let e = arith(
        ArithOp::Add,
        col(0, DataType::Integer),
        col(1, DataType::Integer),
        DataType::Integer,
    );
    assert_eq!(
        eval_row(&e, &[Value::Integer(1), Value::Integer(2)], &ctx()),
        Ok(Value::Integer(3))
    );
    assert_eq!(
        eval_row(&e, &[Value::Integer(1), Value::Null], &ctx()),
        Ok(Value::Null)
    );
    let isnull = Expr::new(
        ExprKind::IsNull {
            expr: Box::new(col(0, DataType::Date)),
            negated: false,
        },
        DataType::Boolean,
    );
    assert_eq!(
        eval_row(&isnull, &[Value::Null], &ctx()),
        Ok(Value::Boolean(true))
    );
}

/// A subquery runner that answers from a closure and counts its calls.
struct Runner<F: Fn(usize, &[Value]) -> SubqueryResult> {
    f: F,
    calls: Cell<usize>,
}

impl<F: Fn(usize, &[Value]) -> SubqueryResult> SubqueryRunner for Runner<F> {
    fn run(&self, id: usize, _: &SubqueryKind, correlated: &[Value]) -> Result<SubqueryResult> {
        self.calls.set(self.calls.get() + 1);
        Ok((self.f)(id, correlated))
    }
}

fn sub(kind: SubqueryKind, correlated: Vec<Expr>, ty: DataType) -> Expr {
    Expr::new(
        ExprKind::Subquery(Box::new(SubqueryExpr {
            id: 0,
            kind,
            correlated,
        })),
        ty,
    )
}

#[test]
fn uncorrelated_subqueries_run_once() {
    let i = DataType::Integer;
    let bt = batch(vec![ints(&[Some(1), Some(2), None, Some(4)])]);
    let runner = Runner {
        f: |_, _| SubqueryResult::Scalar(Value::Integer(2)),
        calls: Cell::new(0),
    };
    let c = EvalContext {
        params: &[],
        subqueries: &runner,
    };
    let e = cmp(CmpOp::Eq, col(0, i), sub(SubqueryKind::Scalar, vec![], i));
    assert_eq!(eval_predicate(&e, &bt, &c).unwrap(), vec![1]);
    assert_eq!(runner.calls.get(), 1);
    // IN with a typed set, three-valued.
    let set = |vals: Vec<Value>| Runner {
        f: move |_, _| SubqueryResult::Values(vals.clone()),
        calls: Cell::new(0),
    };
    let in_sub = |negated| {
        sub(
            SubqueryKind::In {
                expr: Box::new(col(0, i)),
                negated,
                rest: vec![],
            },
            vec![],
            DataType::Boolean,
        )
    };
    let run = |r: &dyn SubqueryRunner, e: &Expr| {
        let c = EvalContext {
            params: &[],
            subqueries: r,
        };
        let v = eval(e, &bt, &c).unwrap();
        (0..v.len()).map(|k| v.value(k)).collect::<Vec<_>>()
    };
    let r = set(vec![Value::Integer(1), Value::Integer(4)]);
    assert_eq!(
        run(&r, &in_sub(false)),
        vec![b(Some(true)), b(Some(false)), b(None), b(Some(true))]
    );
    let r = set((0..20).map(|k| Value::Integer(k * 2)).collect());
    assert_eq!(
        run(&r, &in_sub(false)),
        vec![b(Some(false)), b(Some(true)), b(None), b(Some(true))]
    );
    let r = set(vec![Value::Integer(1), Value::Null]);
    assert_eq!(
        run(&r, &in_sub(true)),
        vec![b(Some(false)), b(None), b(None), b(None)]
    );
    let r = set(vec![]);
    assert_eq!(run(&r, &in_sub(false)), vec![b(Some(false)); 4]);
    assert_eq!(run(&r, &in_sub(true)), vec![b(Some(true)); 4]);
    // Quantified.
    let q = |op, all| {
        sub(
            SubqueryKind::Quantified {
                expr: Box::new(col(0, i)),
                op,
                all,
            },
            vec![],
            DataType::Boolean,
        )
    };
    let r = set(vec![Value::Integer(2), Value::Integer(3)]);
    assert_eq!(
        run(&r, &q(CmpOp::Lt, true)),
        vec![b(Some(true)), b(Some(false)), b(None), b(Some(false))]
    );
    assert_eq!(
        run(&r, &q(CmpOp::Lt, false)),
        vec![b(Some(true)), b(Some(true)), b(None), b(Some(false))]
    );
    let r = set(vec![]);
    assert_eq!(run(&r, &q(CmpOp::Gt, true)), vec![b(Some(true)); 4]);
    assert_eq!(run(&r, &q(CmpOp::Gt, false)), vec![b(Some(false)); 4]);
    let r = set(vec![Value::Integer(0), Value::Null]);
    assert_eq!(
        run(&r, &q(CmpOp::Gt, true)),
        vec![b(None), b(None), b(None), b(None)]
    );
    assert_eq!(
        run(&r, &q(CmpOp::Gt, false)),
        vec![b(Some(true)), b(Some(true)), b(None), b(Some(true))]
    );
    // EXISTS.
    let r = Runner {
        f: |_, _| SubqueryResult::Exists(true),
        calls: Cell::new(0),
    };
    assert_eq!(
        run(&r, &sub(SubqueryKind::Exists, vec![], DataType::Boolean)),
        vec![b(Some(true)); 4]
    );
    // No rows: the subquery is not run.
    let empty = Batch {
        columns: vec![ints(&[Some(1)])],
        len: 1,
        sel: Some(vec![]),
    };
    let r = Runner {
        f: |_, _| SubqueryResult::Exists(true),
        calls: Cell::new(0),
    };
    let c = EvalContext {
        params: &[],
        subqueries: &r,
    };
    assert_eq!(
        eval(
            &sub(SubqueryKind::Exists, vec![], DataType::Boolean),
            &empty,
            &c
        )
        .unwrap()
        .len(),
        0
    );
    assert_eq!(r.calls.get(), 0);
    // Without a runner: an error.
    assert!(one(&sub(SubqueryKind::Exists, vec![], DataType::Boolean)).is_err());
}

#[test]
fn correlated_subqueries_cache_per_value() {
    let i = DataType::Integer;
    let bt = batch(vec![ints(&[Some(1), Some(2), Some(1), None, Some(2)])]);
    let runner = Runner {
        f: |_, p: &[Value]| match &p[0] {
            Value::Integer(v) => SubqueryResult::Scalar(Value::Integer(v * 10)),
            _ => SubqueryResult::Scalar(Value::Null),
        },
        calls: Cell::new(0),
    };
    let c = EvalContext {
        params: &[],
        subqueries: &runner,
    };
    let e = sub(SubqueryKind::Scalar, vec![col(0, i)], i);
    let v = eval(&e, &bt, &c).unwrap();
    assert_eq!(
        (0..5).map(|k| v.value(k)).collect::<Vec<_>>(),
        vec![
            Value::Integer(10),
            Value::Integer(20),
            Value::Integer(10),
            Value::Null,
            Value::Integer(20)
        ]
    );
    assert_eq!(runner.calls.get(), 3);
    // Correlated EXISTS and IN.
    let runner = Runner {
        f: |_, p: &[Value]| match &p[0] {
            Value::Integer(1) => SubqueryResult::Values(vec![Value::Integer(1)]),
            Value::Integer(_) => SubqueryResult::Values(vec![Value::Null]),
            _ => SubqueryResult::Values(vec![]),
        },
        calls: Cell::new(0),
    };
    let c = EvalContext {
        params: &[],
        subqueries: &runner,
    };
    let e = sub(
        SubqueryKind::In {
            expr: Box::new(col(0, i)),
            negated: true,
            rest: vec![],
        },
        vec![col(0, i)],
        DataType::Boolean,
    );
    let v = eval(&e, &bt, &c).unwrap();
    assert_eq!(
        (0..5).map(|k| v.value(k)).collect::<Vec<_>>(),
        vec![
            b(Some(false)),
            b(None),
            b(Some(false)),
            b(Some(true)),
            b(None)
        ]
    );
    let runner = Runner {
        f: |_, p: &[Value]| SubqueryResult::Exists(p[0] == Value::Integer(2)),
        calls: Cell::new(0),
    };
    let c = EvalContext {
        params: &[],
        subqueries: &runner,
    };
    let e = sub(SubqueryKind::Exists, vec![col(0, i)], DataType::Boolean);
    let mut bt = bt.clone();
    bt.sel = Some(vec![1, 2, 4]);
    assert_eq!(eval_predicate(&e, &bt, &c).unwrap(), vec![1, 4]);
}

#[test]
fn constant_folding_keeps_constants() {
    // An expression of constants over many rows is computed once and broadcast.
    let bt = Batch::empty_rows(3);
    let e = arith(
        ArithOp::Mul,
        arith(ArithOp::Add, int(1), int(2), DataType::Integer),
        int(3),
        DataType::Integer,
    );
    assert_eq!(values(&e, &bt), vec![Value::Integer(9); 3]);
    let e = cmp(CmpOp::Lt, int(1), int(2));
    assert_eq!(eval_predicate(&e, &bt, &ctx()).unwrap(), vec![0, 1, 2]);
    let e = boolean(None);
    assert_eq!(eval_predicate(&e, &bt, &ctx()).unwrap(), Vec::<u32>::new());
}

#[test]
fn mismatched_types_do_not_panic() {
    // The binder should never produce these; they must still be errors, not panics.
    let e = cmp(CmpOp::Eq, int(1), tlit("1"));
    assert!(one(&e).is_err());
    let e = not(int(1));
    assert!(one(&e).is_err());
    let e = lit(Value::Integer(1), DataType::Text);
    assert_eq!(one(&e), Ok(text("1")));
    let e = lit(text("x"), DataType::Integer);
    assert!(one(&e).is_err());
    // Mixed numeric comparison falls back to exact value comparison.
    let e = cmp(CmpOp::Eq, int(1), lit(dec("1.0"), DataType::NUMERIC));
    assert_eq!(one(&e), Ok(Value::Boolean(true)));
    let e = cmp(
        CmpOp::Lt,
        lit(date("2024-01-01"), DataType::Date),
        lit(ts("2024-01-01 00:00:01"), DataType::Timestamp),
    );
    assert_eq!(one(&e), Ok(Value::Boolean(true)));
    let _ = Ordering::Less;
}
