//! Function resolution and kernels.

use super::*;

fn f(name: &str, args: Vec<Expr>) -> Expr {
    let types: Vec<DataType> = args.iter().map(|a| a.ty).collect();
    let (func, arg_types, ret) = Func::resolve(name, &types)
        .unwrap_or_else(|e| panic!("{name}: {e}"))
        .unwrap_or_else(|| panic!("{name} unknown"));
    let args = args
        .into_iter()
        .zip(arg_types)
        .map(|(a, t)| if a.ty == t { a } else { cast(a, t, false) })
        .collect();
    Expr::new(ExprKind::Func { func, args }, ret)
}

fn call(name: &str, args: Vec<Expr>) -> Value {
    ok(&f(name, args))
}

fn call_err(name: &str, args: Vec<Expr>) -> String {
    err(&f(name, args))
}

fn dbl(v: f64) -> Expr {
    lit(Value::Double(v), DataType::Double)
}

fn num(s: &str) -> Expr {
    lit(dec(s), DataType::NUMERIC)
}

fn chr(s: &str, n: u32) -> Expr {
    lit(
        Value::Char(format!("{s:<width$}", width = n as usize)),
        DataType::Char(n),
    )
}

#[test]
fn resolution() {
    use DataType as T;
    let r = |name: &str, args: &[DataType]| Func::resolve(name, args);
    assert_eq!(r("nosuch", &[T::Integer]), Ok(None));
    assert_eq!(
        r("length", &[T::Char(3)]),
        Ok(Some((Func::Length, vec![T::Text], T::Integer)))
    );
    assert_eq!(
        r("length", &[T::Integer]).unwrap_err().message,
        "function length(integer) does not exist"
    );
    assert_eq!(r("length", &[T::Integer]).unwrap_err().sqlstate, "42883");
    assert_eq!(
        r("substring", &[T::Varchar(Some(3)), T::Integer, T::BigInt])
            .unwrap_err()
            .message,
        "function substring(character varying, integer, bigint) does not exist"
    );
    assert_eq!(
        r("substr", &[T::Text, T::SmallInt]),
        Ok(Some((Func::Substring, vec![T::Text, T::Integer], T::Text)))
    );
    assert_eq!(
        r("round", &[T::decimal(10, 2).unwrap(), T::Integer]),
        Ok(Some((
            Func::Round,
            vec![T::NUMERIC, T::Integer],
            T::NUMERIC
        )))
    );
    assert_eq!(
        r("round", &[T::Double, T::Integer]).unwrap_err().message,
        "function round(double precision, integer) does not exist"
    );
    assert_eq!(
        r("round", &[T::Integer]),
        Ok(Some((Func::Round, vec![T::Double], T::Double)))
    );
    assert_eq!(
        r("round", &[T::NUMERIC]),
        Ok(Some((Func::Round, vec![T::NUMERIC], T::NUMERIC)))
    );
    assert_eq!(
        r("abs", &[T::SmallInt]),
        Ok(Some((Func::Abs, vec![T::SmallInt], T::SmallInt)))
    );
    assert_eq!(
        r("sqrt", &[T::Real]),
        Ok(Some((Func::Sqrt, vec![T::Double], T::Double)))
    );
    assert_eq!(
        r("power", &[T::Integer, T::NUMERIC]),
        Ok(Some((
            Func::Power,
            vec![T::NUMERIC, T::NUMERIC],
            T::NUMERIC
        )))
    );
    assert_eq!(
        r("pow", &[T::Integer, T::Integer]),
        Ok(Some((Func::Power, vec![T::Double, T::Double], T::Double)))
    );
    assert_eq!(
        r("mod", &[T::SmallInt, T::Integer]),
        Ok(Some((Func::Mod, vec![T::Integer, T::Integer], T::Integer)))
    );
    assert!(r("mod", &[T::Double, T::Double]).is_err());
    assert_eq!(
        r("position", &[T::Text, T::Char(2)]),
        Ok(Some((Func::Position, vec![T::Text, T::Text], T::Integer)))
    );
    assert_eq!(
        r("concat", &[T::Integer, T::Boolean]),
        Ok(Some((
            Func::ConcatAll,
            vec![T::Integer, T::Boolean],
            T::Text
        )))
    );
    assert_eq!(
        r("concat", &[]).unwrap_err().message,
        "function concat() does not exist"
    );
    assert_eq!(
        r("greatest", &[T::Integer, T::BigInt, T::SmallInt]),
        Ok(Some((Func::Greatest, vec![T::BigInt; 3], T::BigInt)))
    );
    assert_eq!(
        r("least", &[T::Integer, T::NUMERIC]),
        Ok(Some((Func::Least, vec![T::NUMERIC; 2], T::NUMERIC)))
    );
    assert!(r("greatest", &[T::Integer, T::Text]).is_err());
    assert_eq!(
        r("nullif", &[T::Integer, T::NUMERIC]),
        Ok(Some((Func::NullIf, vec![T::NUMERIC; 2], T::NUMERIC)))
    );
    assert_eq!(
        r("lpad", &[T::Text, T::Integer, T::Text]),
        Ok(Some((
            Func::Lpad,
            vec![T::Text, T::Integer, T::Text],
            T::Text
        )))
    );
    assert_eq!(
        r("octet_length", &[T::Char(5)]),
        Ok(Some((Func::OctetLength, vec![T::Char(5)], T::Integer)))
    );
    for name in [
        "upper",
        "lower",
        "reverse",
        "char_length",
        "character_length",
        "btrim",
        "ltrim",
        "rtrim",
        "trim",
    ] {
        assert!(r(name, &[T::Text]).unwrap().is_some(), "{name}");
        assert!(r(name, &[T::Date]).is_err(), "{name}");
    }
    for name in ["floor", "ceil", "ceiling", "sign", "trunc"] {
        assert_eq!(
            r(name, &[T::BigInt]).unwrap().unwrap().2,
            T::Double,
            "{name}"
        );
        assert_eq!(
            r(name, &[T::NUMERIC]).unwrap().unwrap().2,
            T::NUMERIC,
            "{name}"
        );
        assert!(r(name, &[T::Text]).is_err(), "{name}");
    }
    assert_eq!(common_type(&[T::Char(2), T::Char(5)]), Some(T::Char(5)));
    assert_eq!(
        common_type(&[T::Varchar(Some(2)), T::Varchar(Some(5))]),
        Some(T::Varchar(Some(5)))
    );
    assert_eq!(common_type(&[T::Char(2), T::Varchar(None)]), Some(T::Text));
    assert_eq!(common_type(&[T::Date, T::Timestamp]), Some(T::Timestamp));
    assert_eq!(common_type(&[T::Integer, T::Real]), Some(T::Real));
    assert_eq!(common_type(&[T::Boolean, T::Integer]), None);
}

#[test]
fn string_functions() {
    let t = tlit;
    assert_eq!(call("upper", vec![t("abcé")]), text("ABCÉ"));
    assert_eq!(call("lower", vec![t("ABC")]), text("abc"));
    assert_eq!(call("length", vec![t("héllo")]), Value::Integer(5));
    assert_eq!(call("length", vec![chr("ab", 3)]), Value::Integer(2));
    assert_eq!(call("octet_length", vec![t("héllo")]), Value::Integer(6));
    assert_eq!(call("octet_length", vec![chr("ab", 3)]), Value::Integer(3));
    assert_eq!(call("length", vec![null(DataType::Text)]), Value::Null);
    // substring: PostgreSQL's rules for starts before 1.
    assert_eq!(call("substring", vec![t("hello"), int(2)]), text("ello"));
    assert_eq!(
        call("substring", vec![t("hello"), int(2), int(3)]),
        text("ell")
    );
    assert_eq!(
        call("substring", vec![t("hello"), int(0), int(3)]),
        text("he")
    );
    assert_eq!(
        call("substring", vec![t("hello"), int(-5), int(3)]),
        text("")
    );
    assert_eq!(call("substring", vec![t("hello"), int(10)]), text(""));
    assert_eq!(
        call("substring", vec![t("héllo"), int(2), int(2)]),
        text("él")
    );
    assert_eq!(
        call_err("substring", vec![t("hello"), int(1), int(-1)]),
        "negative substring length not allowed"
    );
    assert_eq!(
        call("substring", vec![t("hello"), null(DataType::Integer)]),
        Value::Null
    );
    assert_eq!(call("btrim", vec![t("  ab  ")]), text("ab"));
    assert_eq!(call("ltrim", vec![t("  ab  ")]), text("ab  "));
    assert_eq!(call("rtrim", vec![t("  ab  ")]), text("  ab"));
    assert_eq!(call("btrim", vec![t("xxabyx"), t("xy")]), text("ab"));
    assert_eq!(call("ltrim", vec![t("xxabyx"), t("x")]), text("abyx"));
    assert_eq!(
        call("position", vec![t("héllo"), t("llo")]),
        Value::Integer(3)
    );
    assert_eq!(call("strpos", vec![t("hello"), t("z")]), Value::Integer(0));
    assert_eq!(call("position", vec![t("hello"), t("")]), Value::Integer(1));
    assert_eq!(call("repeat", vec![t("ab"), int(3)]), text("ababab"));
    assert_eq!(call("repeat", vec![t("ab"), int(-1)]), text(""));
    assert_eq!(
        call_err("repeat", vec![t("abcdefgh"), int(i32::MAX)]),
        "requested length too large"
    );
    assert_eq!(call("textcat", vec![t("ab"), chr("c", 3)]), text("abc"));
    assert_eq!(
        call("textcat", vec![t("ab"), null(DataType::Text)]),
        Value::Null
    );
    assert_eq!(
        call(
            "concat",
            vec![
                t("a"),
                null(DataType::Text),
                int(1),
                boolean(Some(true)),
                chr("x", 2)
            ]
        ),
        text("a1tx ")
    );
    assert_eq!(
        call(
            "concat",
            vec![null(DataType::Text), lit(dec("1.50"), DataType::NUMERIC)]
        ),
        text("1.50")
    );
    assert_eq!(
        call("replace", vec![t("abcabc"), t("b"), t("XY")]),
        text("aXYcaXYc")
    );
    assert_eq!(call("replace", vec![t("abc"), t(""), t("X")]), text("abc"));
    assert_eq!(call("left", vec![t("héllo"), int(2)]), text("hé"));
    assert_eq!(call("left", vec![t("hello"), int(-2)]), text("hel"));
    assert_eq!(call("left", vec![t("hello"), int(-9)]), text(""));
    assert_eq!(call("right", vec![t("héllo"), int(4)]), text("éllo"));
    assert_eq!(call("right", vec![t("hello"), int(-2)]), text("llo"));
    assert_eq!(call("right", vec![t("hello"), int(9)]), text("hello"));
    assert_eq!(call("lpad", vec![t("hi"), int(5)]), text("   hi"));
    assert_eq!(call("lpad", vec![t("hi"), int(5), t("xy")]), text("xyxhi"));
    assert_eq!(call("lpad", vec![t("hello"), int(2)]), text("he"));
    assert_eq!(call("rpad", vec![t("hi"), int(5), t("xy")]), text("hixyx"));
    assert_eq!(call("rpad", vec![t("hi"), int(5), t("")]), text("hi"));
    assert_eq!(call("rpad", vec![t("hi"), int(-1)]), text(""));
    assert_eq!(
        call_err("lpad", vec![t("hi"), int(i32::MAX)]),
        "requested length too large"
    );
    assert_eq!(call("reverse", vec![t("héllo")]), text("olléh"));
}

#[test]
fn string_functions_over_columns() {
    let s = vector(DataType::Text, &[text("abc"), Value::Null, text("hello")]);
    let n = ints(&[Some(2), Some(1), None]);
    let mut bt = batch(vec![s, n]);
    let e = f(
        "left",
        vec![col(0, DataType::Text), col(1, DataType::Integer)],
    );
    assert_eq!(values(&e, &bt), vec![text("ab"), Value::Null, Value::Null]);
    let e = f(
        "substring",
        vec![col(0, DataType::Text), int(2), col(1, DataType::Integer)],
    );
    bt.sel = Some(vec![0, 2]);
    assert_eq!(values(&e, &bt), vec![text("bc"), Value::Null]);
    let e = f("upper", vec![col(0, DataType::Text)]);
    assert_eq!(values(&e, &bt), vec![text("ABC"), text("HELLO")]);
    let e = f(
        "concat",
        vec![col(0, DataType::Text), col(1, DataType::Integer)],
    );
    assert_eq!(values(&e, &bt), vec![text("abc2"), text("hello")]);
}

#[test]
fn numeric_functions() {
    use DataType as T;
    assert_eq!(call("abs", vec![int(-3)]), Value::Integer(3));
    assert_eq!(call_err("abs", vec![int(i32::MIN)]), "integer out of range");
    assert_eq!(call("abs", vec![dbl(-1.5)]), Value::Double(1.5));
    assert_eq!(call("abs", vec![num("-1.50")]).to_string(), "1.50");
    assert_eq!(
        call("abs", vec![lit(Value::Real(-2.0), T::Real)]),
        Value::Real(2.0)
    );
    assert_eq!(call("round", vec![dbl(2.5)]), Value::Double(2.0));
    assert_eq!(call("round", vec![dbl(3.5)]), Value::Double(4.0));
    assert_eq!(call("round", vec![num("2.5")]).to_string(), "3");
    assert_eq!(call("round", vec![num("-2.5")]).to_string(), "-3");
    assert_eq!(
        call("round", vec![num("1.2345"), int(2)]).to_string(),
        "1.23"
    );
    assert_eq!(
        call("round", vec![num("1.235"), int(2)]).to_string(),
        "1.24"
    );
    assert_eq!(call("round", vec![num("1.5"), int(3)]).to_string(), "1.500");
    assert_eq!(
        call("round", vec![num("1250.5"), int(-2)]).to_string(),
        "1300"
    );
    assert_eq!(
        call("round", vec![num("1249"), int(-2)]).to_string(),
        "1200"
    );
    assert_eq!(call("round", vec![num("1249"), int(-40)]).to_string(), "0");
    assert_eq!(call("round", vec![int(7), int(1)]).to_string(), "7.0");
    assert_eq!(call("round", vec![int(7)]), Value::Double(7.0));
    assert_eq!(call("trunc", vec![dbl(-2.7)]), Value::Double(-2.0));
    assert_eq!(
        call("trunc", vec![num("-2.79"), int(1)]).to_string(),
        "-2.7"
    );
    assert_eq!(
        call("trunc", vec![num("1299.9"), int(-2)]).to_string(),
        "1200"
    );
    assert_eq!(call("trunc", vec![num("2.5")]).to_string(), "2");
    assert_eq!(call("floor", vec![num("-2.5")]).to_string(), "-3");
    assert_eq!(call("floor", vec![num("2.5")]).to_string(), "2");
    assert_eq!(call("ceil", vec![num("2.1")]).to_string(), "3");
    assert_eq!(call("ceiling", vec![num("-2.1")]).to_string(), "-2");
    assert_eq!(call("ceil", vec![num("2")]).to_string(), "2");
    assert_eq!(call("floor", vec![dbl(-0.5)]), Value::Double(-1.0));
    assert_eq!(call("ceil", vec![int(3)]), Value::Double(3.0));
    assert_eq!(call("sqrt", vec![dbl(16.0)]), Value::Double(4.0));
    assert_eq!(call("sqrt", vec![int(2)]), Value::Double(2f64.sqrt()));
    assert_eq!(
        call_err("sqrt", vec![dbl(-1.0)]),
        "cannot take square root of a negative number"
    );
    assert_eq!(call("sqrt", vec![num("2.25")]).to_string(), "1.5");
    assert_eq!(
        call("power", vec![dbl(2.0), dbl(10.0)]),
        Value::Double(1024.0)
    );
    assert_eq!(call("power", vec![int(2), int(-1)]), Value::Double(0.5));
    assert_eq!(
        call_err("power", vec![dbl(0.0), dbl(-1.0)]),
        "zero raised to a negative power is undefined"
    );
    assert_eq!(
        call_err("power", vec![dbl(-8.0), dbl(0.5)]),
        "a negative number raised to a non-integer power yields a complex result"
    );
    assert_eq!(
        call_err("power", vec![dbl(10.0), dbl(400.0)]),
        "value out of range: overflow"
    );
    assert_eq!(call("power", vec![num("1.5"), int(2)]).to_string(), "2.25");
    assert_eq!(
        call("power", vec![num("2"), num("-2")]).to_string(),
        "0.25000000000000000000"
    );
    assert_eq!(call("power", vec![num("4"), num("0.5")]).to_string(), "2");
    assert_eq!(call("sign", vec![dbl(-3.0)]), Value::Double(-1.0));
    assert_eq!(call("sign", vec![num("0.00")]).to_string(), "0");
    assert_eq!(call("sign", vec![num("12.5")]).to_string(), "1");
    assert_eq!(call("mod", vec![int(-7), int(3)]), Value::Integer(-1));
    assert_eq!(call_err("mod", vec![int(7), int(0)]), "division by zero");
    assert_eq!(
        call("mod", vec![lit(Value::BigInt(10), T::BigInt), int(4)]),
        Value::BigInt(2)
    );
    assert_eq!(call("mod", vec![num("7.5"), int(2)]).to_string(), "1.5");
    assert_eq!(call("abs", vec![null(T::Integer)]), Value::Null);
    // Errors only from live, non-NULL rows.
    let bt = batch(vec![ints(&[Some(4), None, Some(0)])]);
    let e = f("mod", vec![int(9), col(0, T::Integer)]);
    assert!(eval(&e, &bt, &ctx()).is_err());
    let mut bt = bt;
    bt.sel = Some(vec![0, 1]);
    assert_eq!(values(&e, &bt), vec![Value::Integer(1), Value::Null]);
}

#[test]
fn comparison_functions() {
    use DataType as T;
    assert_eq!(call("nullif", vec![int(1), int(1)]), Value::Null);
    assert_eq!(call("nullif", vec![int(1), int(2)]), Value::Integer(1));
    assert_eq!(
        call("nullif", vec![int(1), null(T::Integer)]),
        Value::Integer(1)
    );
    assert_eq!(call("nullif", vec![null(T::Integer), int(1)]), Value::Null);
    assert_eq!(call("nullif", vec![chr("a", 3), chr("a", 1)]), Value::Null);
    assert_eq!(
        call("greatest", vec![int(1), int(5), int(3)]),
        Value::Integer(5)
    );
    assert_eq!(
        call("least", vec![int(1), int(5), int(-3)]),
        Value::Integer(-3)
    );
    assert_eq!(
        call("greatest", vec![null(T::Integer), int(2), null(T::Integer)]),
        Value::Integer(2)
    );
    assert_eq!(
        call("least", vec![null(T::Integer), null(T::Integer)]),
        Value::Null
    );
    assert_eq!(
        call("greatest", vec![int(1), lit(dec("1.5"), T::NUMERIC)]).to_string(),
        "1.5"
    );
    assert_eq!(call("greatest", vec![tlit("b"), tlit("ab")]), text("b"));
    match call("greatest", vec![dbl(1.0), dbl(f64::NAN)]) {
        Value::Double(x) => assert!(x.is_nan()),
        v => panic!("{v:?}"),
    }
    let bt = batch(vec![
        ints(&[Some(1), None, Some(7), None]),
        ints(&[Some(4), Some(2), Some(3), None]),
    ]);
    let e = f("greatest", vec![col(0, T::Integer), col(1, T::Integer)]);
    assert_eq!(
        values(&e, &bt),
        vec![
            Value::Integer(4),
            Value::Integer(2),
            Value::Integer(7),
            Value::Null
        ]
    );
    let e = f("nullif", vec![col(0, T::Integer), int(7)]);
    assert_eq!(
        values(&e, &bt),
        vec![Value::Integer(1), Value::Null, Value::Null, Value::Null]
    );
}
