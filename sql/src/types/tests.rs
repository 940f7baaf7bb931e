//! Randomized tests across the value types, all with fixed seeds so failures repeat:
//! decimal arithmetic against plain `i128` arithmetic, parse ∘ format round trips for
//! every type, and no panic on random text fed to every parser or on random operands
//! fed to every operation.

use std::cmp::Ordering;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::number::{format_f32, format_f64, parse_f32, parse_f64};
use super::*;

const LIMIT: i128 = 10i128.pow(38);

/// A decimal with up to `max_digits` digits and a scale up to `max_scale`.
fn random_decimal(rng: &mut StdRng, max_digits: u32, max_scale: u8) -> Decimal {
    let digits = rng.random_range(0..=max_digits);
    let bound = 10i128.pow(digits);
    let unscaled = rng.random_range(-bound + 1..bound.max(1));
    let scale = rng.random_range(0..=max_scale);
    Decimal::new(unscaled, scale).unwrap()
}

/// Rounds `n / d` half away from zero (the reference for decimal rounding).
fn round_div(n: i128, d: i128) -> i128 {
    let (q, r) = (n / d, n % d);
    if 2 * r.abs() >= d.abs() {
        q + if (n < 0) != (d < 0) { -1 } else { 1 }
    } else {
        q
    }
}

fn align(d: &Decimal, scale: u8) -> i128 {
    d.unscaled() * 10i128.pow((scale - d.scale()) as u32)
}

#[test]
fn decimal_arithmetic_matches_i128_reference() {
    let mut rng = StdRng::seed_from_u64(0xBEED8);
    for _ in 0..20_000 {
        let a = random_decimal(&mut rng, 17, 10);
        let b = random_decimal(&mut rng, 17, 10);
        let scale = a.scale().max(b.scale());

        let sum = a.add(&b).unwrap();
        assert_eq!(
            (sum.unscaled(), sum.scale()),
            (align(&a, scale) + align(&b, scale), scale),
            "{a} + {b}"
        );
        let diff = a.sub(&b).unwrap();
        assert_eq!(
            (diff.unscaled(), diff.scale()),
            (align(&a, scale) - align(&b, scale), scale),
            "{a} - {b}"
        );
        let prod = a.mul(&b).unwrap();
        assert_eq!(
            (prod.unscaled(), prod.scale()),
            (a.unscaled() * b.unscaled(), a.scale() + b.scale()),
            "{a} * {b}"
        );
        assert_eq!(
            a.cmp(&b),
            align(&a, scale).cmp(&align(&b, scale)),
            "{a} <=> {b}"
        );

        if b.unscaled() == 0 {
            assert_eq!(a.div(&b), Err(Error::DivisionByZero));
            assert_eq!(a.rem(&b), Err(Error::DivisionByZero));
            continue;
        }
        let q = a.div(&b).unwrap();
        let rscale = a.div_scale(&b);
        assert!(rscale >= scale, "{a} / {b}: scale {rscale}");
        let exp = (rscale - a.scale() + b.scale()) as u32;
        if let Some(n) = a.unscaled().checked_mul(10i128.pow(exp)) {
            let expected = round_div(n, b.unscaled());
            if expected.abs() < LIMIT {
                assert_eq!((q.unscaled(), q.scale()), (expected, rscale), "{a} / {b}");
            }
        }
        let r = a.rem(&b).unwrap();
        assert_eq!(
            (r.unscaled(), r.scale()),
            (align(&a, scale) % align(&b, scale), scale),
            "{a} % {b}"
        );

        let to = rng.random_range(0..=12u8);
        let rescaled = a.rescale(to).unwrap();
        let expected = if to >= a.scale() {
            align(&a, to)
        } else {
            round_div(a.unscaled(), 10i128.pow((a.scale() - to) as u32))
        };
        assert_eq!(
            (rescaled.unscaled(), rescaled.scale()),
            (expected, to),
            "{a} to scale {to}"
        );
    }
}

#[test]
fn decimal_overflow_matches_i128_reference() {
    let mut rng = StdRng::seed_from_u64(38);
    for _ in 0..20_000 {
        // Scale 0, up to 38 digits: sums stay within i128 (< 2 × 10^38).
        let a = random_decimal(&mut rng, 38, 0);
        let b = random_decimal(&mut rng, 38, 0);
        let sum = a.unscaled() + b.unscaled();
        match a.add(&b) {
            Ok(v) => assert_eq!(v.unscaled(), sum),
            Err(e) => {
                assert_eq!(e, Error::NumericOverflow);
                assert!(sum.abs() >= LIMIT, "{a} + {b}");
            }
        }
        let small = random_decimal(&mut rng, 20, 0);
        match (a.mul(&small), a.unscaled().checked_mul(small.unscaled())) {
            (Ok(v), Some(p)) => assert_eq!(v.unscaled(), p),
            (Err(e), p) => {
                assert_eq!(e, Error::NumericOverflow);
                assert!(p.is_none_or(|p| p.abs() >= LIMIT), "{a} * {small}");
            }
            (Ok(v), None) => panic!("{a} * {small} = {v} overflows i128"),
        }
    }
}

#[test]
fn decimal_results_that_need_more_than_38_digits_round_their_fraction() {
    let mut rng = StdRng::seed_from_u64(7);
    for _ in 0..5_000 {
        let a = random_decimal(&mut rng, 38, 38);
        let b = random_decimal(&mut rng, 38, 38);
        // Any result must be within 38 digits, and close to the f64 estimate.
        for (op, r) in [
            ("+", a.add(&b)),
            ("-", a.sub(&b)),
            ("*", a.mul(&b)),
            ("/", a.div(&b)),
        ] {
            let Ok(r) = r else { continue };
            assert!(r.unscaled().abs() < LIMIT && r.scale() <= MAX_SCALE);
            let (x, y) = (a.to_f64(), b.to_f64());
            let expected = match op {
                "+" => x + y,
                "-" => x - y,
                "*" => x * y,
                _ => x / y,
            };
            let got = r.to_f64();
            let tolerance = expected.abs() * 1e-9 + 10f64.powi(-(r.scale() as i32));
            assert!(
                (got - expected).abs() <= tolerance,
                "{a} {op} {b} = {r}, expected about {expected}"
            );
        }
    }
}

#[test]
fn decimal_compares_exactly_with_doubles() {
    let mut rng = StdRng::seed_from_u64(0xF10A7);
    for _ in 0..20_000 {
        // m / 2^k has an exact decimal expansion of at most k fractional digits.
        let m: i64 = rng.random_range(-(1 << 40)..(1 << 40));
        let k = rng.random_range(0..=20);
        let f = m as f64 / (1u64 << k) as f64;
        let exact = Decimal::parse(&format!("{f:.20}")).unwrap();
        assert_eq!(exact.cmp_f64(f), Ordering::Equal, "{f}");
        let d = random_decimal(&mut rng, 30, 25);
        assert_eq!(d.cmp_f64(f), d.cmp(&exact), "{d} vs {f}");
        let nearby = exact
            .add(&Decimal::new(rng.random_range(-3..=3), 25).unwrap())
            .unwrap();
        assert_eq!(nearby.cmp_f64(f), nearby.cmp(&exact), "{nearby} vs {f}");
    }
}

#[test]
fn every_type_round_trips_through_its_text() {
    let mut rng = StdRng::seed_from_u64(0x5EED);
    for _ in 0..10_000 {
        let d = random_decimal(&mut rng, 38, 38);
        let back = Decimal::parse(&d.to_string()).unwrap();
        assert_eq!((back.unscaled(), back.scale()), (d.unscaled(), d.scale()));

        let f = f64::from_bits(rng.random());
        let back = parse_f64(&format_f64(f)).unwrap();
        assert!(
            back.to_bits() == f.to_bits() || (f.is_nan() && back.is_nan()),
            "{f:e}"
        );
        let f = f32::from_bits(rng.random());
        let back = parse_f32(&format_f32(f)).unwrap();
        assert!(
            back.to_bits() == f.to_bits() || (f.is_nan() && back.is_nan()),
            "{f:e}"
        );

        let date = Date(rng.random_range(-730_119..=106_751_982));
        assert_eq!(Date::parse(&date.to_string()), Ok(date));
        let ts = Timestamp(
            rng.random_range(-730_119 * MICROS_PER_DAY..=106_751_983 * MICROS_PER_DAY - 1),
        );
        assert_eq!(Timestamp::parse(&ts.to_string()), Ok(ts), "{ts}");

        let iv = Interval::new(rng.random(), rng.random(), rng.random());
        let back = Interval::parse(&iv.to_string()).unwrap();
        assert_eq!(
            (back.months, back.days, back.micros),
            (iv.months, iv.days, iv.micros),
            "{iv}"
        );

        let values = [
            Value::SmallInt(rng.random()),
            Value::Integer(rng.random()),
            Value::BigInt(rng.random()),
            Value::Boolean(rng.random()),
            Value::Decimal(d),
            Value::Date(date),
            Value::Timestamp(ts),
            Value::Interval(iv),
            Value::Double(rng.random::<f64>() * 1e10),
            Value::Real(rng.random::<f32>()),
        ];
        for v in values {
            let ty = v.data_type().unwrap();
            let text = v.cast(&DataType::Text).unwrap();
            let back = text.cast(&ty).unwrap();
            assert_eq!(back.cmp_sql(&v), Some(Ordering::Equal), "{v:?} via {text}");
        }
    }
}

/// Text made mostly of characters the parsers care about, plus some multi-byte ones.
fn random_text(rng: &mut StdRng) -> String {
    const PIECES: &[&str] = &[
        "0",
        "1",
        "2",
        "5",
        "9",
        "-",
        "+",
        ".",
        ":",
        " ",
        "e",
        "E",
        "T",
        "t",
        "a",
        "n",
        "y",
        "o",
        "day",
        "month",
        "year",
        "hour",
        "ago",
        "@",
        "é",
        "日",
        "\t",
        "inf",
        "NaN",
        "99999999999999999999",
        "2024-02-29",
        "12:30:45.5",
        "1e400",
        "-0",
        "00",
    ];
    let len = rng.random_range(0..12);
    (0..len)
        .map(|_| PIECES[rng.random_range(0..PIECES.len())])
        .collect()
}

#[test]
fn parsers_never_panic_on_random_text() {
    let types = [
        DataType::SmallInt,
        DataType::Integer,
        DataType::BigInt,
        DataType::Real,
        DataType::Double,
        DataType::NUMERIC,
        DataType::decimal(5, 2).unwrap(),
        DataType::Date,
        DataType::Timestamp,
        DataType::Interval,
        DataType::Char(3),
        DataType::Varchar(Some(4)),
        DataType::Text,
        DataType::Boolean,
    ];
    let fields = [
        IntervalField::Year,
        IntervalField::Month,
        IntervalField::Day,
        IntervalField::Hour,
        IntervalField::Minute,
        IntervalField::Second,
    ];
    let mut rng = StdRng::seed_from_u64(99);
    for _ in 0..20_000 {
        let s = random_text(&mut rng);
        for ty in &types {
            if let Ok(v) = Value::parse(&s, ty) {
                // Whatever parses prints and parses again to the same value.
                let again = Value::parse(&v.to_string(), ty).unwrap();
                assert_eq!(again.cmp_sql(&v), Some(Ordering::Equal), "{s:?} as {ty}");
            }
        }
        for field in fields {
            let _ = Interval::parse_with_field(&s, field);
        }
        let _ = DateField::parse(&s);
    }
}

#[test]
fn operations_never_panic_on_random_operands() {
    let mut rng = StdRng::seed_from_u64(4242);
    for _ in 0..20_000 {
        let a = Decimal::new(
            rng.random_range(-LIMIT + 1..LIMIT),
            rng.random_range(0..=38),
        )
        .unwrap();
        let b = Decimal::new(
            rng.random_range(-LIMIT + 1..LIMIT) >> rng.random_range(0..127),
            rng.random_range(0..=38),
        )
        .unwrap();
        let _ = (
            a.add(&b),
            a.sub(&b),
            a.mul(&b),
            a.div(&b),
            a.rem(&b),
            a.cmp(&b),
        );
        let _ = (
            a.rescale(rng.random_range(0..=40)),
            a.apply_typmod(rng.random_range(1..=38), rng.random_range(0..=38)),
        );
        let _ = (a.to_i64_rounded(), a.cmp_f64(f64::from_bits(rng.random())));

        let date = Date(rng.random_range(-730_119..=106_751_982));
        let iv = Interval::new(rng.random(), rng.random(), rng.random());
        let _ = (
            date.add_days(rng.random()),
            date.add_interval(&iv),
            date.sub_interval(&iv),
        );
        let _ = date.add_interval_as_date(&Interval::new(rng.random(), rng.random(), 0));
        let ts =
            Timestamp(rng.random_range(-730_119 * MICROS_PER_DAY..=106_751_982 * MICROS_PER_DAY));
        let other =
            Timestamp(rng.random_range(-730_119 * MICROS_PER_DAY..=106_751_982 * MICROS_PER_DAY));
        let _ = (
            ts.add_interval(&iv),
            ts.sub_interval(&iv),
            ts.sub_timestamp(other),
        );
        let _ = (
            iv.checked_mul_f64(f64::from_bits(rng.random())),
            iv.checked_mul_int(rng.random()),
        );
        let _ = iv.checked_add(&Interval::new(rng.random(), rng.random(), rng.random()));

        let values = [
            Value::Decimal(a),
            Value::Double(f64::from_bits(rng.random())),
            Value::Real(f32::from_bits(rng.random())),
            Value::BigInt(rng.random()),
            Value::Date(date),
            Value::Timestamp(ts),
            Value::Interval(iv),
        ];
        let targets = [
            DataType::SmallInt,
            DataType::Integer,
            DataType::BigInt,
            DataType::Real,
            DataType::Double,
            DataType::NUMERIC,
            DataType::decimal(10, 3).unwrap(),
            DataType::Date,
            DataType::Timestamp,
            DataType::Char(2),
            DataType::Boolean,
        ];
        for v in &values {
            for t in &targets {
                let _ = v.cast(t);
            }
            for w in &values {
                let _ = v.cmp_sql(w);
            }
        }
    }
}

/// `Decimal::sqrt` rounds half up at the asked scale, as PostgreSQL's `sqrt_var`
/// (the roots here are PostgreSQL's), is exact on perfect squares and reaches 38
/// digits without overflowing its 256-bit radicand.
#[test]
fn decimal_sqrt_at_scale() {
    let root = |x: &str, scale: u8| Decimal::parse(x).unwrap().sqrt(scale).unwrap().to_string();
    assert_eq!(root("2", 16), "1.4142135623730950");
    assert_eq!(root("1.6666666666666667", 16), "1.2909944487358056");
    assert_eq!(root("414.2857142857142857", 16), "20.3540097839642960");
    assert_eq!(root("0", 4), "0.0000");
    assert_eq!(root("0.0001", 2), "0.01");
    assert_eq!(root("99999999999999999999999999999999999999", 0), "10000000000000000000");
    for k in 1..2000i64 {
        assert_eq!(root(&(k * k).to_string(), 0), k.to_string());
        assert_eq!(root(&format!("{}.00", k * k), 3), format!("{k}.000"));
    }
}
