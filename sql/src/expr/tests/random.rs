//! Randomized comparison of the vectorized evaluator with a row-at-a-time reference
//! built on `Value::cmp_sql` and checked integer arithmetic.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::*;
use crate::vector::Data;

/// Every arithmetic operator.
const ARITH_OPS: [ArithOp; 5] = [
    ArithOp::Add,
    ArithOp::Sub,
    ArithOp::Mul,
    ArithOp::Div,
    ArithOp::Mod,
];

/// Every comparison operator.
const CMP_OPS: [CmpOp; 6] = [
    CmpOp::Eq,
    CmpOp::NotEq,
    CmpOp::Lt,
    CmpOp::LtEq,
    CmpOp::Gt,
    CmpOp::GtEq,
];

fn random_vector(rng: &mut StdRng, ty: DataType, len: usize, nonzero: bool) -> Vector {
    let mut vals = Vec::with_capacity(len);
    for _ in 0..len {
        if rng.random_bool(0.15) {
            vals.push(Value::Null);
            continue;
        }
        let small = rng.random_bool(0.7);
        let v = match ty {
            DataType::SmallInt => {
                let x: i16 = if small {
                    rng.random_range(-50..50)
                } else {
                    rng.random()
                };
                Value::SmallInt(if nonzero && x == 0 { 1 } else { x })
            }
            DataType::Integer => {
                let x: i32 = if small {
                    rng.random_range(-50..50)
                } else {
                    rng.random()
                };
                Value::Integer(if nonzero && x == 0 { 1 } else { x })
            }
            DataType::BigInt => {
                let x: i64 = if small {
                    rng.random_range(-50..50)
                } else {
                    rng.random()
                };
                Value::BigInt(if nonzero && x == 0 { 1 } else { x })
            }
            DataType::Double => {
                let x: f64 = match rng.random_range(0..10) {
                    0 => f64::NAN,
                    1 => -0.0,
                    _ => rng.random_range(-10..10) as f64 / 4.0,
                };
                Value::Double(x)
            }
            DataType::Decimal { .. } => {
                let unscaled: i128 = rng.random_range(-5000..5000);
                let scale: u8 = rng.random_range(0..4);
                let mut d = Decimal::new(unscaled, scale).unwrap();
                if nonzero && d.unscaled() == 0 {
                    d = Decimal::from_i64(1);
                }
                Value::Decimal(d)
            }
            DataType::Text => {
                let n = rng.random_range(0..3);
                let s: String = (0..n)
                    .map(|_| ['a', 'b', ' ', 'é'][rng.random_range(0..4)])
                    .collect();
                Value::Text(s)
            }
            DataType::Char(k) => {
                let n = rng.random_range(0..=k as usize);
                let s: String = (0..n)
                    .map(|_| ['a', 'b', ' '][rng.random_range(0..3)])
                    .collect();
                Value::Char(format!("{s:<w$}", w = k as usize))
            }
            _ => unreachable!(),
        };
        vals.push(v);
    }
    vector(ty, &vals)
}

fn random_sel(rng: &mut StdRng, len: usize) -> Option<Vec<u32>> {
    if rng.random_bool(0.5) {
        return None;
    }
    Some((0..len as u32).filter(|_| rng.random_bool(0.6)).collect())
}

/// Reference integer arithmetic through i128 with the type's range.
fn ref_arith(op: ArithOp, a: &Value, b: &Value, ty: DataType) -> Result<Value, ()> {
    let as_i128 = |v: &Value| match v {
        Value::SmallInt(x) => *x as i128,
        Value::Integer(x) => *x as i128,
        Value::BigInt(x) => *x as i128,
        _ => unreachable!(),
    };
    if a.is_null() || b.is_null() {
        return Ok(Value::Null);
    }
    let (x, y) = (as_i128(a), as_i128(b));
    let r = match op {
        ArithOp::Add => x + y,
        ArithOp::Sub => x - y,
        ArithOp::Mul => x * y,
        ArithOp::Div => {
            if y == 0 {
                return Err(());
            }
            x / y
        }
        ArithOp::Mod => {
            if y == 0 {
                return Err(());
            }
            x % y
        }
    };
    match ty {
        DataType::SmallInt => i16::try_from(r).map(Value::SmallInt).map_err(|_| ()),
        DataType::Integer => i32::try_from(r).map(Value::Integer).map_err(|_| ()),
        _ => i64::try_from(r).map(Value::BigInt).map_err(|_| ()),
    }
}

#[test]
fn random_comparisons_match_reference() {
    let mut rng = StdRng::seed_from_u64(0xbee);
    let types = [
        DataType::SmallInt,
        DataType::Integer,
        DataType::BigInt,
        DataType::Double,
        DataType::NUMERIC,
        DataType::Text,
        DataType::Char(3),
    ];
    let ops = CMP_OPS;
    for round in 0..300 {
        let ty = types[round % types.len()];
        let len = rng.random_range(0..40);
        let a = random_vector(&mut rng, ty, len, false);
        let bv = random_vector(&mut rng, ty, len, false);
        let konst = random_vector(&mut rng, ty, 1, false).value(0);
        let mut bt = Batch::new(vec![a, bv], len);
        bt.sel = random_sel(&mut rng, len);
        let op = ops[rng.random_range(0..ops.len())];
        let rows: Vec<usize> = (0..bt.rows()).map(|k| bt.position(k)).collect();
        // column vs column
        let e = cmp(op, col(0, ty), col(1, ty));
        let got = values(&e, &bt);
        let want: Vec<Value> = rows
            .iter()
            .map(|&p| {
                let (x, y) = (bt.columns[0].value(p), bt.columns[1].value(p));
                x.cmp_sql(&y)
                    .map_or(Value::Null, |o| Value::Boolean(op.holds(o)))
            })
            .collect();
        assert_eq!(got, want, "{ty} {op:?}");
        let pred = eval_predicate(&e, &bt, &ctx()).unwrap();
        let want_pred: Vec<u32> = rows
            .iter()
            .zip(&want)
            .filter(|(_, v)| **v == Value::Boolean(true))
            .map(|(p, _)| *p as u32)
            .collect();
        assert_eq!(pred, want_pred, "{ty} {op:?}");
        // column vs constant, both orders, value and predicate paths
        for flipped in [false, true] {
            let k = lit(konst.clone(), ty);
            let e = if flipped {
                cmp(op, k, col(0, ty))
            } else {
                cmp(op, col(0, ty), k)
            };
            let want: Vec<Value> = rows
                .iter()
                .map(|&p| {
                    let x = bt.columns[0].value(p);
                    let r = if flipped {
                        konst.cmp_sql(&x)
                    } else {
                        x.cmp_sql(&konst)
                    };
                    r.map_or(Value::Null, |o| Value::Boolean(op.holds(o)))
                })
                .collect();
            assert_eq!(values(&e, &bt), want, "{ty} {op:?} const");
            let want_pred: Vec<u32> = rows
                .iter()
                .zip(&want)
                .filter(|(_, v)| **v == Value::Boolean(true))
                .map(|(p, _)| *p as u32)
                .collect();
            assert_eq!(
                eval_predicate(&e, &bt, &ctx()).unwrap(),
                want_pred,
                "{ty} {op:?} const"
            );
        }
        // IN list of the constant and a column value
        let e = in_list_expr(col(0, ty), vec![lit(konst.clone(), ty), col(1, ty)]);
        let want: Vec<Value> = rows
            .iter()
            .map(|&p| {
                let x = bt.columns[0].value(p);
                let items = [konst.clone(), bt.columns[1].value(p)];
                if x.is_null() {
                    return Value::Null;
                }
                if items
                    .iter()
                    .any(|i| x.cmp_sql(i) == Some(std::cmp::Ordering::Equal))
                {
                    Value::Boolean(true)
                } else if items.iter().any(|i| i.is_null()) {
                    Value::Null
                } else {
                    Value::Boolean(false)
                }
            })
            .collect();
        assert_eq!(values(&e, &bt), want, "{ty} IN");
    }
}

fn in_list_expr(e: Expr, list: Vec<Expr>) -> Expr {
    Expr::new(
        ExprKind::InList {
            expr: Box::new(e),
            list,
            negated: false,
        },
        DataType::Boolean,
    )
}

#[test]
fn random_integer_arithmetic_matches_reference() {
    let mut rng = StdRng::seed_from_u64(42);
    let types = [DataType::SmallInt, DataType::Integer, DataType::BigInt];
    let ops = ARITH_OPS;
    for round in 0..600 {
        let ty = types[round % 3];
        let op = ops[rng.random_range(0..ops.len())];
        let len = rng.random_range(1..12);
        let divides = matches!(op, ArithOp::Div | ArithOp::Mod);
        let a = random_vector(&mut rng, ty, len, false);
        let nonzero = divides && rng.random_bool(0.9);
        let bv = random_vector(&mut rng, ty, len, nonzero);
        let mut bt = Batch::new(vec![a, bv], len);
        bt.sel = random_sel(&mut rng, len);
        let rows: Vec<usize> = (0..bt.rows()).map(|k| bt.position(k)).collect();
        let e = arith(op, col(0, ty), col(1, ty), ty);
        let want: Result<Vec<Value>, ()> = rows
            .iter()
            .map(|&p| ref_arith(op, &bt.columns[0].value(p), &bt.columns[1].value(p), ty))
            .collect();
        match (eval(&e, &bt, &ctx()), want) {
            (Ok(v), Ok(want)) => {
                let got: Vec<Value> = (0..v.len()).map(|k| v.value(k)).collect();
                assert_eq!(got, want, "{ty} {op:?}");
            }
            (Err(_), Err(())) => {}
            (got, want) => panic!("{ty} {op:?}: got {got:?}, want {want:?}"),
        }
    }
}

#[test]
fn random_numeric_arithmetic_and_casts_match_values() {
    let mut rng = StdRng::seed_from_u64(7);
    let ops = ARITH_OPS;
    for _ in 0..200 {
        let op = ops[rng.random_range(0..ops.len())];
        let len = rng.random_range(1..10);
        let a = random_vector(&mut rng, DataType::NUMERIC, len, false);
        let bv = random_vector(&mut rng, DataType::NUMERIC, len, true);
        let bt = Batch::new(vec![a, bv], len);
        let e = arith(
            op,
            col(0, DataType::NUMERIC),
            col(1, DataType::NUMERIC),
            DataType::NUMERIC,
        );
        let got = values(&e, &bt);
        for (k, g) in got.iter().enumerate() {
            let (x, y) = (bt.columns[0].value(k), bt.columns[1].value(k));
            let want = match (&x, &y) {
                (Value::Decimal(x), Value::Decimal(y)) => Value::Decimal(match op {
                    ArithOp::Add => x.add(y).unwrap(),
                    ArithOp::Sub => x.sub(y).unwrap(),
                    ArithOp::Mul => x.mul(y).unwrap(),
                    ArithOp::Div => x.div(y).unwrap(),
                    ArithOp::Mod => x.rem(y).unwrap(),
                }),
                _ => Value::Null,
            };
            assert_eq!(g.to_string(), want.to_string());
        }
        // Casts agree with Value::cast.
        for to in [
            DataType::Integer,
            DataType::SmallInt,
            DataType::Double,
            DataType::Text,
            DataType::decimal(6, 1).unwrap(),
        ] {
            let e = cast(col(0, DataType::NUMERIC), to, true);
            let got = eval(&e, &bt, &ctx());
            let want: Result<Vec<Value>, _> =
                (0..len).map(|k| bt.columns[0].value(k).cast(&to)).collect();
            match (got, want) {
                (Ok(v), Ok(w)) => {
                    let g: Vec<Value> = (0..v.len()).map(|k| v.value(k)).collect();
                    assert_eq!(g, w, "cast to {to}");
                }
                (Err(_), Err(_)) => {}
                (g, w) => panic!("cast to {to}: {g:?} vs {w:?}"),
            }
        }
    }
}

/// A decimal of type `numeric(p, s)`: mostly small, some at the edge of the
/// precision (so products and sums leave the i64 range), NULLs.
fn random_typed_decimal(rng: &mut StdRng, p: u8, s: u8) -> Value {
    if rng.random_bool(0.15) {
        return Value::Null;
    }
    let limit = 10i128.pow(p as u32);
    let unscaled = match rng.random_range(0..4) {
        0 => limit - 1 - rng.random_range(0..3),
        1 => -(limit - 1),
        2 => 0,
        _ => rng.random_range(-5000..5000i128).clamp(-(limit - 1), limit - 1),
    };
    Value::Decimal(Decimal::new(unscaled, s).unwrap())
}

/// The same values as [`Data::Dec`]: what the generic decimal path reads.
fn as_wide(v: &Vector) -> Vector {
    let mut w = v.clone();
    w.data.widen_dec();
    w
}

/// Scaled-integer decimal vectors (`numeric(p, s)`, p ≤ 18) give exactly the answers
/// of the same values held as `Decimal`s: values, scales, NULLs and errors, for
/// arithmetic (column and constant operands, chains that leave the i64 range),
/// comparisons, negation, casts and IN lists, with and without a selection.
#[test]
fn random_scaled_decimals_match_wide_decimals() {
    let mut rng = StdRng::seed_from_u64(1818);
    let ops = ARITH_OPS;
    let cmps = CMP_OPS;
    let n = DataType::NUMERIC;
    for round in 0..400 {
        let len = [1, 2, 7, 1023, 1024, 1025][rng.random_range(0..6)];
        let types: Vec<DataType> = (0..2)
            .map(|_| {
                let p = rng.random_range(1..=18u8);
                let s = rng.random_range(0..=p.min(6));
                DataType::decimal(p as u32, s as u32).unwrap()
            })
            .collect();
        let cols: Vec<Vector> = types
            .iter()
            .map(|ty| {
                let DataType::Decimal { precision: Some(p), scale } = *ty else { unreachable!() };
                let vals: Vec<Value> = (0..len).map(|_| random_typed_decimal(&mut rng, p, scale)).collect();
                vector(*ty, &vals)
            })
            .collect();
        assert!(cols.iter().all(|c| matches!(c.data, Data::Dec64(_))));
        let narrow = Batch {
            sel: random_sel(&mut rng, len),
            ..Batch::new(cols.clone(), len)
        };
        let wide = Batch {
            columns: cols.iter().map(as_wide).collect(),
            ..narrow.clone()
        };
        let konst = lit(dec(["0.05", "1", "-7.125", "99999999999.99", "0"][rng.random_range(0..5)]), n);
        let (a, b) = (col(0, types[0]), col(1, types[1]));
        let mut exprs = Vec::new();
        for op in ops {
            exprs.push(arith(op, a.clone(), b.clone(), n));
            exprs.push(arith(op, a.clone(), konst.clone(), n));
            exprs.push(arith(op, konst.clone(), b.clone(), n));
        }
        // Chains: Q1's shape, and a product of products that overflows an i64.
        let one_minus = arith(ArithOp::Sub, lit(dec("1"), n), b.clone(), n);
        let price = arith(ArithOp::Mul, a.clone(), one_minus, n);
        exprs.push(arith(ArithOp::Mul, price.clone(), arith(ArithOp::Add, lit(dec("1"), n), b.clone(), n), n));
        exprs.push(arith(ArithOp::Mul, arith(ArithOp::Mul, a.clone(), a.clone(), n), arith(ArithOp::Mul, b.clone(), b.clone(), n), n));
        for op in cmps {
            exprs.push(cmp(op, a.clone(), b.clone()));
            exprs.push(cmp(op, a.clone(), konst.clone()));
            exprs.push(cmp(op, konst.clone(), b.clone()));
            exprs.push(cmp(op, price.clone(), a.clone()));
        }
        exprs.push(Expr::new(ExprKind::Neg(Box::new(a.clone())), types[0]));
        for to in [
            n,
            types[0],
            types[1],
            DataType::decimal(18, 2).unwrap(),
            DataType::decimal(4, 0).unwrap(),
            DataType::Double,
            DataType::BigInt,
            DataType::Text,
        ] {
            exprs.push(cast(a.clone(), to, true));
            exprs.push(cast(price.clone(), to, true));
        }
        exprs.push(in_list_expr(a.clone(), vec![konst.clone(), b.clone(), lit(dec("0"), n)]));
        for e in &exprs {
            let got = eval(e, &narrow, &ctx());
            let want = eval(e, &wide, &ctx());
            match (got, want) {
                (Ok(g), Ok(w)) => {
                    assert_eq!(g.len(), w.len());
                    for k in 0..g.len() {
                        let (x, y) = (g.value(k), w.value(k));
                        assert_eq!(
                            (x.to_string(), x.is_null()),
                            (y.to_string(), y.is_null()),
                            "round {round}, row {k}: {e:?}"
                        );
                    }
                }
                (Err(g), Err(w)) => assert_eq!(g.to_string(), w.to_string(), "round {round}: {e:?}"),
                (g, w) => panic!("round {round}: {e:?}: {g:?} vs {w:?}"),
            }
            if e.ty == DataType::Boolean {
                let got = eval_predicate(e, &narrow, &ctx()).map_err(|e| e.to_string());
                let want = eval_predicate(e, &wide, &ctx()).map_err(|e| e.to_string());
                assert_eq!(got, want, "round {round}: predicate {e:?}");
            }
        }
    }
}
