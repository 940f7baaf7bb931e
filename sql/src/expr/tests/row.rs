//! Differential test of the row evaluator (`expr/row.rs`) against its twin, the
//! vectorized evaluator over a one-row batch: random well-typed expressions (every
//! node kind, the natively computed ones nested in and around the ones handed to the
//! twin) over random rows of every type, with NULLs, extreme values that overflow
//! (integers at their limits, floats near the largest, 37-digit numerics), zeros that
//! divide, NaN and −0, and parameters. Value, variant and error must be identical.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::*;
use crate::types::{Date, Decimal, Interval, Timestamp};

/// The row's columns, one per type (a column's references carry its type).
const TYPES: [DataType; 16] = [
    DataType::Boolean,
    DataType::SmallInt,
    DataType::Integer,
    DataType::BigInt,
    DataType::Real,
    DataType::Double,
    DataType::Decimal { precision: None, scale: 0 },
    DataType::Decimal { precision: Some(8), scale: 2 },
    DataType::Decimal { precision: Some(30), scale: 5 },
    DataType::Date,
    DataType::Timestamp,
    DataType::Interval,
    DataType::Text,
    DataType::Varchar(Some(8)),
    DataType::Char(4),
    DataType::Varchar(None),
];

const ARITH: [ArithOp; 5] = [ArithOp::Add, ArithOp::Sub, ArithOp::Mul, ArithOp::Div, ArithOp::Mod];
const CMP: [CmpOp; 6] = [CmpOp::Eq, CmpOp::NotEq, CmpOp::Lt, CmpOp::LtEq, CmpOp::Gt, CmpOp::GtEq];

/// The clock for `now()` and `current_date`; no subqueries.
struct Clock;

impl SubqueryRunner for Clock {
    fn run(&self, _: usize, _: &SubqueryKind, _: &[Value]) -> Result<SubqueryResult> {
        Err(crate::error::Error::internal("no subqueries here"))
    }
    fn sequence(&self, func: Func, _: &[Value]) -> Result<Value> {
        Ok(match func {
            Func::CurrentDate => Value::Date(Date(9_000)),
            _ => Value::Timestamp(Timestamp(777_600_000_123_456)),
        })
    }
}

fn value(rng: &mut StdRng, ty: DataType) -> Value {
    if rng.random_bool(0.12) {
        return Value::Null;
    }
    let small = rng.random_bool(0.6);
    match ty {
        DataType::Boolean => Value::Boolean(rng.random()),
        DataType::SmallInt => Value::SmallInt(match rng.random_range(0..4) {
            0 => [i16::MIN, i16::MAX, 0, -1][rng.random_range(0..4)],
            _ if small => rng.random_range(-20..20),
            _ => rng.random(),
        }),
        DataType::Integer => Value::Integer(match rng.random_range(0..4) {
            0 => [i32::MIN, i32::MAX, 0, -1][rng.random_range(0..4)],
            _ if small => rng.random_range(-20..20),
            _ => rng.random(),
        }),
        DataType::BigInt => Value::BigInt(match rng.random_range(0..4) {
            0 => [i64::MIN, i64::MAX, 0, -1][rng.random_range(0..4)],
            _ if small => rng.random_range(-20..20),
            _ => rng.random(),
        }),
        DataType::Real => Value::Real(match rng.random_range(0..6) {
            0 => [f32::NAN, -0.0, 0.0, f32::MAX, f32::MIN_POSITIVE, f32::INFINITY][rng.random_range(0..6)],
            _ => rng.random_range(-100.0..100.0),
        }),
        DataType::Double => Value::Double(match rng.random_range(0..6) {
            0 => [f64::NAN, -0.0, 0.0, 1e308, f64::MIN_POSITIVE, f64::NEG_INFINITY][rng.random_range(0..6)],
            _ => rng.random_range(-1e6..1e6),
        }),
        DataType::Decimal { precision: None, .. } => {
            let s = rng.random_range(0..8);
            let u: i128 = if small { rng.random_range(-100_000..100_000) } else { rng.random_range(-(10i128.pow(37))..10i128.pow(37)) };
            Value::Decimal(Decimal::new(u, s).unwrap())
        }
        DataType::Decimal { precision: Some(p), scale } => {
            let max = 10i128.pow(p as u32) - 1;
            let u = if small { rng.random_range(-1_000..1_000) } else { rng.random_range(-max..=max) };
            Value::Decimal(Decimal::new(u, scale).unwrap())
        }
        DataType::Date => Value::Date(Date(rng.random_range(-800_000..800_000))),
        DataType::Timestamp => Value::Timestamp(Timestamp(rng.random_range(-10i64.pow(15)..10i64.pow(15)))),
        DataType::Interval => {
            Value::Interval(Interval::new(rng.random_range(-30..30), rng.random_range(-40..40), rng.random_range(-10i64.pow(11)..10i64.pow(11))))
        }
        DataType::Text | DataType::Varchar(_) | DataType::Char(_) => {
            let s = ["", "a", "ab", "ab ", "B", "é", "abcd", "12", "-7"][rng.random_range(0..9)].to_string();
            match ty {
                DataType::Char(n) => Value::Char(format!("{s:<w$}", w = n as usize)),
                DataType::Varchar(_) => Value::Varchar(s),
                _ => Value::Text(s),
            }
        }
    }
}

fn numeric(ty: DataType) -> bool {
    matches!(ty, DataType::SmallInt | DataType::Integer | DataType::BigInt | DataType::Real | DataType::Double | DataType::Decimal { .. })
}

fn pick(rng: &mut StdRng) -> DataType {
    TYPES[rng.random_range(0..TYPES.len())]
}

fn pick_numeric(rng: &mut StdRng) -> DataType {
    loop {
        let t = pick(rng);
        if numeric(t) {
            return t;
        }
    }
}

fn b(e: Expr) -> Box<Expr> {
    Box::new(e)
}

/// A leaf of type `ty`: its column, a literal, or its parameter.
fn leaf(rng: &mut StdRng, ty: DataType) -> Expr {
    let i = TYPES.iter().position(|t| *t == ty).unwrap();
    match rng.random_range(0..3) {
        0 => Expr::column(i, ty),
        1 => Expr::literal(value(rng, ty), ty),
        _ => Expr::new(ExprKind::Param(i), ty),
    }
}

/// A random expression of type `ty`, `depth` levels at most.
fn expr_of(rng: &mut StdRng, ty: DataType, depth: u32) -> Expr {
    if depth == 0 || rng.random_bool(0.25) {
        return leaf(rng, ty);
    }
    let d = depth - 1;
    // Forms every type has: CASE, COALESCE, a cast from another type.
    match rng.random_range(0..10) {
        0 => {
            let whens = (0..rng.random_range(1..3)).map(|_| (expr_of(rng, DataType::Boolean, d), expr_of(rng, ty, d))).collect();
            let else_ = rng.random_bool(0.7).then(|| b(expr_of(rng, ty, d)));
            return Expr::new(ExprKind::Case { whens, else_ }, ty);
        }
        1 => return Expr::new(ExprKind::Coalesce(vec![expr_of(rng, ty, d), expr_of(rng, ty, d)]), ty),
        2 => {
            let from = if numeric(ty) { pick_numeric(rng) } else { pick(rng) };
            return Expr::new(ExprKind::Cast { expr: b(expr_of(rng, from, d)), explicit: rng.random() }, ty);
        }
        _ => {}
    }
    match ty {
        DataType::Boolean => match rng.random_range(0..9) {
            0 | 1 => {
                // Mostly operands of one type; sometimes two numeric types.
                let t = pick(rng);
                let u = if numeric(t) && rng.random_bool(0.2) { pick_numeric(rng) } else { t };
                let op = CMP[rng.random_range(0..6)];
                Expr::new(ExprKind::Compare { op, left: b(expr_of(rng, t, d)), right: b(expr_of(rng, u, d)) }, ty)
            }
            2 => Expr::new(ExprKind::And((0..rng.random_range(2..4)).map(|_| expr_of(rng, ty, d)).collect()), ty),
            3 => Expr::new(ExprKind::Or((0..rng.random_range(2..4)).map(|_| expr_of(rng, ty, d)).collect()), ty),
            4 => Expr::new(ExprKind::Not(b(expr_of(rng, ty, d))), ty),
            5 => {
                let t = pick(rng);
                Expr::new(ExprKind::IsNull { expr: b(expr_of(rng, t, d)), negated: rng.random() }, ty)
            }
            6 => Expr::new(ExprKind::IsBool { expr: b(expr_of(rng, ty, d)), value: rng.random(), negated: rng.random() }, ty),
            7 => {
                let t = pick(rng);
                Expr::new(ExprKind::IsDistinctFrom { left: b(expr_of(rng, t, d)), right: b(expr_of(rng, t, d)), negated: rng.random() }, ty)
            }
            _ => {
                let t = pick(rng);
                let list = (0..rng.random_range(1..4)).map(|_| expr_of(rng, t, d)).collect();
                Expr::new(ExprKind::InList { expr: b(expr_of(rng, t, d)), list, negated: rng.random() }, ty)
            }
        },
        DataType::Decimal { .. } => match rng.random_range(0..3) {
            0 => Expr::new(ExprKind::Neg(b(expr_of(rng, ty, d))), ty),
            _ => {
                // Numeric operands of any typmod; the result unconstrained or not.
                let (l, r) = (decimal(rng), decimal(rng));
                let op = ARITH[rng.random_range(0..5)];
                Expr::new(ExprKind::Arith { op, left: b(expr_of(rng, l, d)), right: b(expr_of(rng, r, d)) }, ty)
            }
        },
        t if numeric(t) => match rng.random_range(0..3) {
            0 => Expr::new(ExprKind::Neg(b(expr_of(rng, ty, d))), ty),
            _ => {
                let op = ARITH[rng.random_range(0..5)];
                Expr::new(ExprKind::Arith { op, left: b(expr_of(rng, ty, d)), right: b(expr_of(rng, ty, d)) }, ty)
            }
        },
        DataType::Date => Expr::new(
            ExprKind::Arith { op: ArithOp::Add, left: b(expr_of(rng, ty, d)), right: b(expr_of(rng, DataType::Integer, d)) },
            ty,
        ),
        DataType::Timestamp if rng.random_bool(0.5) => Expr::new(ExprKind::Func { func: Func::Now, args: vec![] }, ty),
        DataType::Interval => Expr::new(ExprKind::Neg(b(expr_of(rng, ty, d))), ty),
        _ => leaf(rng, ty),
    }
}

fn decimal(rng: &mut StdRng) -> DataType {
    [TYPES[6], TYPES[7], TYPES[8]][rng.random_range(0..3)]
}

#[test]
fn row_evaluator_matches_the_vectorized_evaluator() {
    let mut rng = StdRng::seed_from_u64(0x70_77);
    let (mut errors, mut nulls, mut total) = (0, 0, 0);
    for round in 0..4_000 {
        let row: Vec<Value> = TYPES.iter().map(|&t| value(&mut rng, t)).collect();
        let params: Vec<Value> = TYPES.iter().map(|&t| value(&mut rng, t)).collect();
        let ctx = EvalContext { params: &params, subqueries: &Clock };
        for _ in 0..8 {
            let ty = if round % 3 == 0 { DataType::Boolean } else { pick(&mut rng) };
            let depth = rng.random_range(1..5);
            let e = expr_of(&mut rng, ty, depth);
            let by_row = eval_row(&e, &row, &ctx);
            let by_batch = eval_row_batch(&e, &row, &ctx);
            assert_eq!(
                format!("{by_row:?}"),
                format!("{by_batch:?}"),
                "the row evaluator differs from the vectorized one on {e:?} over {row:?} with {params:?}"
            );
            total += 1;
            match by_row {
                Err(_) => errors += 1,
                Ok(Value::Null) => nulls += 1,
                Ok(_) => {}
            }
        }
    }
    // The generator reaches errors, NULLs and values alike (else the test proves little).
    assert!(errors > total / 50 && nulls > total / 20 && errors + nulls < total * 3 / 4, "{errors} errors, {nulls} NULLs of {total}");
}

#[test]
fn row_evaluator_is_lazy_where_the_vectorized_one_is() {
    // `x <> 0 AND 10 / x > 1` and `x = 0 OR 10 / x > 1` never divide by zero.
    let x = || Expr::column(0, DataType::Integer);
    let ten_div_x = || Expr::new(ExprKind::Arith { op: ArithOp::Div, left: b(Expr::literal(Value::Integer(10), DataType::Integer)), right: b(x()) }, DataType::Integer);
    let gt1 = || Expr::new(ExprKind::Compare { op: CmpOp::Gt, left: b(ten_div_x()), right: b(Expr::literal(Value::Integer(1), DataType::Integer)) }, DataType::Boolean);
    let zero = || Expr::literal(Value::Integer(0), DataType::Integer);
    let and = Expr::new(ExprKind::And(vec![Expr::new(ExprKind::Compare { op: CmpOp::NotEq, left: b(x()), right: b(zero()) }, DataType::Boolean), gt1()]), DataType::Boolean);
    let or = Expr::new(ExprKind::Or(vec![Expr::new(ExprKind::Compare { op: CmpOp::Eq, left: b(x()), right: b(zero()) }, DataType::Boolean), gt1()]), DataType::Boolean);
    let row = [Value::Integer(0)];
    assert_eq!(eval_row(&and, &row, &ctx()), Ok(Value::Boolean(false)));
    assert_eq!(eval_row(&or, &row, &ctx()), Ok(Value::Boolean(true)));
    // And without the guard, the error is the twin's.
    assert_eq!(format!("{:?}", eval_row(&gt1(), &row, &ctx())), format!("{:?}", eval_row_batch(&gt1(), &row, &ctx())));
    assert_eq!(eval_row(&gt1(), &row, &ctx()).unwrap_err().sqlstate, "22012");
}
