//! Differential tests of aggregate bees: every aggregate bee must give, call for
//! call, what the generic twin ([`beedb_bees::agg_generic`]) gives — the same result
//! (done, overflow, unpackable), group ids, new-group rows and accumulators — for
//! random specs over every key kind and every aggregate op, over random columns
//! (NULLs or none, type extremes, NaN of both signs, ±0, strings up to and over
//! their part's width), with few and many groups and batches of 0, 1, 2, 1023,
//! 1024, 1025 and random sizes.

use beedb_bees::agg::{AccState, AggData, AggError, AggInput, AggOp, KeyKind, ValKind};
use std::sync::OnceLock;

use beedb_bees::compiled::Jit;
use beedb_bees::{AggBee, AggSpec, AggTable, BeeOwner, Maker, agg_generic};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

fn jit() -> &'static Jit {
    static JIT: OnceLock<Jit> = OnceLock::new();
    JIT.get_or_init(|| Jit::new(true).expect("host ISA"))
}

const KEYS: [KeyKind; 8] = [
    KeyKind::Bool,
    KeyKind::Int(2),
    KeyKind::Int(4),
    KeyKind::Int(8),
    KeyKind::Float(4),
    KeyKind::Float(8),
    KeyKind::Str(1),
    KeyKind::Str(7),
];

fn ops() -> Vec<AggOp> {
    let mut v = vec![AggOp::CountStar, AggOp::Count, AggOp::SumDec, AggOp::AvgDec];
    for w in [2, 4, 8] {
        v.extend([AggOp::SumInt(w), AggOp::SumWide(w), AggOp::AvgInt(w)]);
        v.extend([AggOp::Min(ValKind::Int(w)), AggOp::Max(ValKind::Int(w))]);
    }
    for w in [4, 8] {
        v.extend([AggOp::SumFloat(w), AggOp::AvgFloat(w), AggOp::Min(ValKind::Float(w)), AggOp::Max(ValKind::Float(w))]);
    }
    v.extend([AggOp::Min(ValKind::Bool), AggOp::Max(ValKind::Bool)]);
    v
}

/// One column's values.
enum Col {
    None,
    Bool(Vec<bool>),
    I16(Vec<i16>),
    I32(Vec<i32>),
    I64(Vec<i64>),
    F32(Vec<f32>),
    F64(Vec<f64>),
    Str(Vec<Vec<u8>>),
}

struct Column {
    col: Col,
    nulls: Option<Vec<bool>>,
    refs: Vec<&'static [u8]>,
    /// The strings in one buffer (`AggData::StrBuf`), when `buf` is set: padded
    /// with blanks (trimmed by the bee) when `trim`.
    buf: Option<(Vec<u32>, Vec<u8>, bool)>,
}

/// Values drawn from a small domain (`few`: many repeats, few groups) or anywhere,
/// extremes included.
fn int(rng: &mut StdRng, few: bool, min: i64, max: i64) -> i64 {
    if few {
        return rng.random_range(-2..3);
    }
    match rng.random_range(0..8) {
        0 => min,
        1 => max,
        2 => 0,
        _ => rng.random_range(min..=max),
    }
}

fn float(rng: &mut StdRng, few: bool) -> f64 {
    let specials = [0.0, -0.0, f64::NAN, -f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 1.5, -1.5, f64::MIN_POSITIVE / 4.0];
    if few || rng.random_bool(0.3) {
        return specials[rng.random_range(0..if few { 4 } else { specials.len() })];
    }
    rng.random_range(-1e6..1e6)
}

fn column(rng: &mut StdRng, kind: Option<(char, u8)>, n: usize, few: bool, small: bool) -> Column {
    let nulls = rng.random_bool(0.5).then(|| {
        let p = [0.0, 0.1, 0.9, 1.0][rng.random_range(0..4)];
        (0..n).map(|_| rng.random_bool(p)).collect::<Vec<bool>>()
    });
    // Overflow only sometimes: small values otherwise.
    let lim = |min: i64, max: i64| if small { (-1000, 1000) } else { (min, max) };
    let col = match kind {
        None => Col::None,
        Some(('b', _)) => Col::Bool((0..n).map(|_| rng.random_bool(0.5)).collect()),
        Some(('i', 2)) => {
            let (a, b) = lim(i16::MIN as i64, i16::MAX as i64);
            Col::I16((0..n).map(|_| int(rng, few, a, b) as i16).collect())
        }
        Some(('i', 4)) => {
            let (a, b) = lim(i32::MIN as i64, i32::MAX as i64);
            Col::I32((0..n).map(|_| int(rng, few, a, b) as i32).collect())
        }
        Some(('i', _)) => {
            let (a, b) = lim(i64::MIN, i64::MAX);
            Col::I64((0..n).map(|_| int(rng, few, a, b)).collect())
        }
        Some(('f', 4)) => Col::F32((0..n).map(|_| float(rng, few) as f32).collect()),
        Some(('f', _)) => Col::F64((0..n).map(|_| float(rng, few)).collect()),
        Some(('s', w)) => Col::Str(
            (0..n)
                .map(|_| {
                    let len = if few { rng.random_range(0..2) } else { rng.random_range(0..=w as usize) };
                    // Now and then one byte too long: unpackable.
                    let len = if rng.random_bool(0.0005) { w as usize + 1 } else { len };
                    (0..len).map(|_| [0u8, b'a', b'b', 0xFF][rng.random_range(0..4)]).collect()
                })
                .collect(),
        ),
        _ => unreachable!(),
    };
    let refs = match &col {
        // SAFETY (test): the strings live as long as the column; refs never outlive it.
        Col::Str(s) => s.iter().map(|v| unsafe { std::mem::transmute::<&[u8], &'static [u8]>(v.as_slice()) }).collect(),
        _ => Vec::new(),
    };
    // Now and then the strings in one buffer, padded with blanks (char(n)) or not.
    let buf = match &col {
        Col::Str(v) if rng.random_bool(0.5) => {
            let trim = rng.random_bool(0.5);
            let (mut offsets, mut bytes) = (vec![0u32], Vec::new());
            for s in v {
                bytes.extend_from_slice(s);
                if trim {
                    // A value of the twin's form has no trailing blank to lose.
                    let pad = rng.random_range(0..3);
                    bytes.extend(std::iter::repeat_n(b' ', pad));
                }
                offsets.push(bytes.len() as u32);
            }
            Some((offsets, bytes, trim))
        }
        _ => None,
    };
    Column { col, nulls, refs, buf }
}

impl Column {
    fn input(&self) -> AggInput<'_> {
        let data = match &self.col {
            Col::None => AggData::None,
            Col::Bool(d) => AggData::Bool(d),
            Col::I16(d) => AggData::I16(d),
            Col::I32(d) => AggData::I32(d),
            Col::I64(d) => AggData::I64(d),
            Col::F32(d) => AggData::F32(d),
            Col::F64(d) => AggData::F64(d),
            Col::Str(_) => match &self.buf {
                Some((offsets, bytes, trim)) => AggData::StrBuf { offsets, bytes, trim: *trim },
                None => AggData::Str(&self.refs),
            },
        };
        AggInput { data, nulls: self.nulls.as_deref() }
    }
}

fn key_kind(k: KeyKind) -> (char, u8) {
    match k {
        KeyKind::Bool => ('b', 1),
        KeyKind::Int(w) => ('i', w),
        KeyKind::Float(w) => ('f', w),
        KeyKind::Str(w) => ('s', w),
    }
}

fn op_kind(op: AggOp) -> Option<(char, u8)> {
    match op {
        AggOp::CountStar => None,
        // count reads only NULLs: give it some other column now and then.
        AggOp::Count => Some(('i', 4)),
        _ => match op.input().unwrap() {
            ValKind::Bool => Some(('b', 1)),
            ValKind::Int(w) => Some(('i', w)),
            ValKind::Float(w) => Some(('f', w)),
        },
    }
}

/// Accumulators equal, floats by bits (NaN payloads included).
fn same(a: &[AccState], b: &[AccState]) -> bool {
    fn bits(v: &[f64]) -> Vec<u64> {
        v.iter().map(|x| x.to_bits()).collect()
    }
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| match (x, y) {
            (AccState::SumF64 { sum: s1, has: h1 }, AccState::SumF64 { sum: s2, has: h2 }) => bits(s1) == bits(s2) && h1 == h2,
            (AccState::AvgF64 { sum: s1, n: n1 }, AccState::AvgF64 { sum: s2, n: n2 }) => bits(s1) == bits(s2) && n1 == n2,
            (AccState::BestF64 { v: s1, has: h1 }, AccState::BestF64 { v: s2, has: h2 }) => bits(s1) == bits(s2) && h1 == h2,
            _ => x == y,
        })
}

fn run_case(rng: &mut StdRng, round: usize, makers: &[Maker]) -> (usize, usize, usize) {
    let all_ops = ops();
    // A spec whose key fits 128 bits.
    let spec = loop {
        let keys: Vec<KeyKind> = (0..rng.random_range(1..5)).map(|_| KEYS[rng.random_range(0..KEYS.len())]).collect();
        let aggs: Vec<AggOp> = (0..rng.random_range(0..7)).map(|_| all_ops[rng.random_range(0..all_ops.len())]).collect();
        let spec = AggSpec { keys, aggs };
        if spec.check().is_ok() {
            break spec;
        }
    };
    let bees: Vec<AggBee> =
        makers.iter().map(|&m| AggBee::make(spec.clone(), m, Some(jit()), BeeOwner::Query, "test".into()).unwrap()).collect();
    let mut tables: Vec<AggTable> = bees.iter().map(|b| b.table()).collect();
    let mut twin = agg_generic::table(&spec);
    let few = rng.random_bool(0.5);
    let small = rng.random_bool(0.8);
    let (mut done, mut overflow, mut unpackable) = (0, 0, 0);
    for call in 0..rng.random_range(1..5) {
        let n = [0, 1, 2, 1023, 1024, 1025, rng.random_range(0..3000)][rng.random_range(0..7)];
        let keys: Vec<Column> = spec.keys.iter().map(|&k| column(rng, Some(key_kind(k)), n, few, small)).collect();
        let args: Vec<Column> = spec.aggs.iter().map(|&a| column(rng, op_kind(a), n, few, small)).collect();
        let key_in: Vec<AggInput<'_>> = keys.iter().map(Column::input).collect();
        let arg_in: Vec<AggInput<'_>> = args.iter().map(Column::input).collect();
        let mut want_rows = Vec::new();
        let want = agg_generic::update(&spec, &mut twin, &key_in, &arg_in, n, &mut want_rows);
        for (bee, table) in bees.iter().zip(tables.iter_mut()) {
            let mut rows = Vec::new();
            let got = bee.update(table, &key_in, &arg_in, n, &mut rows);
            let ctx = || format!("round {round} call {call} n {n} {:?} {spec:?}", bee.maker());
            match (&want, &got) {
                (Ok(()), Ok(())) => {
                    assert_eq!(rows, want_rows, "{}", ctx());
                    assert_eq!(table.gids(), twin.gids(), "{}", ctx());
                    assert_eq!(table.groups(), twin.groups(), "{}", ctx());
                    assert!(same(&table.accs, &twin.accs), "{}: {:?} vs {:?}", ctx(), table.accs, twin.accs);
                }
                // Which aggregate is reported may differ (row order vs aggregate order).
                (Err(AggError::Overflow { .. }), Err(AggError::Overflow { .. })) => {}
                (Err(AggError::Unpackable), Err(AggError::Unpackable)) => {
                    assert!(rows.is_empty(), "{}", ctx());
                    assert!(same(&table.accs, &twin.accs), "{}", ctx());
                }
                _ => panic!("{}: twin {want:?}, bee {got:?}", ctx()),
            }
        }
        match want {
            Ok(()) => done += 1,
            Err(AggError::Overflow { .. }) => {
                overflow += 1;
                break;
            }
            Err(AggError::Unpackable) => {
                unpackable += 1;
                break;
            }
            Err(e) => panic!("round {round}: {e}"),
        }
    }
    (done, overflow, unpackable)
}

#[test]
fn instantiated_matches_the_twin() {
    let mut rng = StdRng::seed_from_u64(0xa66b_ee);
    let (mut done, mut overflow, mut unpackable) = (0, 0, 0);
    for round in 0..1500 {
        let (d, o, u) = run_case(&mut rng, round, &[Maker::Instantiated]);
        done += d;
        overflow += o;
        unpackable += u;
    }
    // Every outcome was reached.
    assert!(done > 100 && overflow > 0 && unpackable > 0, "{done} {overflow} {unpackable}");
}

#[test]
fn both_makers_match_the_twin() {
    let mut rng = StdRng::seed_from_u64(0xc0_a66b_ee);
    let (mut done, mut overflow, mut unpackable) = (0, 0, 0);
    for round in 0..1500 {
        let (d, o, u) = run_case(&mut rng, round, &[Maker::Compiled, Maker::Instantiated]);
        done += d;
        overflow += o;
        unpackable += u;
    }
    assert!(done > 100 && overflow > 0 && unpackable > 0, "{done} {overflow} {unpackable}");
}

/// Many groups: the compiled probe walks long collision runs and the map grows
/// while the batch is being added.
#[test]
fn compiled_many_groups_and_wide_keys() {
    for spec in [
        AggSpec { keys: vec![KeyKind::Int(8)], aggs: vec![AggOp::CountStar, AggOp::SumWide(8), AggOp::Max(ValKind::Int(8))] },
        AggSpec { keys: vec![KeyKind::Int(8), KeyKind::Int(4), KeyKind::Bool], aggs: vec![AggOp::AvgInt(4), AggOp::Min(ValKind::Float(8))] },
    ] {
        let bee = AggBee::make(spec.clone(), Maker::Compiled, Some(jit()), BeeOwner::Query, String::new()).unwrap();
        let mut t = bee.table();
        let mut twin = agg_generic::table(&spec);
        let n = 50_000;
        let k8: Vec<i64> = (0..n as i64).map(|i| (i * 7919) % 20_011 - 10_000).collect();
        let k4: Vec<i32> = (0..n as i32).map(|i| i % 3).collect();
        let kb: Vec<bool> = (0..n).map(|i| i % 5 == 0).collect();
        let f: Vec<f64> = (0..n).map(|i| if i % 97 == 0 { f64::NAN } else { (i % 1000) as f64 - 500.0 }).collect();
        let keys: Vec<AggInput<'_>> = vec![
            AggInput { data: AggData::I64(&k8), nulls: None },
            AggInput { data: AggData::I32(&k4), nulls: None },
            AggInput { data: AggData::Bool(&kb), nulls: None },
        ];
        let args: Vec<AggInput<'_>> = spec
            .aggs
            .iter()
            .map(|a| match a.input() {
                None => AggInput::NONE,
                Some(ValKind::Int(8)) => AggInput { data: AggData::I64(&k8), nulls: None },
                Some(ValKind::Int(_)) => AggInput { data: AggData::I32(&k4), nulls: None },
                _ => AggInput { data: AggData::F64(&f), nulls: None },
            })
            .collect();
        let (mut r1, mut r2) = (Vec::new(), Vec::new());
        bee.update(&mut t, &keys[..spec.keys.len()], &args, n, &mut r1).unwrap();
        agg_generic::update(&spec, &mut twin, &keys[..spec.keys.len()], &args, n, &mut r2).unwrap();
        assert_eq!(r1, r2);
        assert_eq!(t.gids(), twin.gids());
        assert!(t.groups() > 10_000);
        assert!(same(&t.accs, &twin.accs));
    }
}

#[test]
fn wrong_inputs_are_refused_without_change() {
    let spec = AggSpec { keys: vec![KeyKind::Int(4)], aggs: vec![AggOp::SumInt(4)] };
    let bee = AggBee::make(spec.clone(), Maker::Instantiated, None, BeeOwner::Query, String::new()).unwrap();
    let mut t = bee.table();
    let k = [1i32, 2];
    let wrong = [1i64, 2];
    let mut rows = Vec::new();
    let key = AggInput { data: AggData::I32(&k), nulls: None };
    let bad = AggInput { data: AggData::I64(&wrong), nulls: None };
    assert!(matches!(bee.update(&mut t, &[key], &[bad], 2, &mut rows), Err(AggError::Input(_))));
    assert!(matches!(bee.update(&mut t, &[key], &[key], 3, &mut rows), Err(AggError::Input(_))));
    assert_eq!((t.groups(), rows.len()), (0, 0));
    bee.update(&mut t, &[key], &[key], 2, &mut rows).unwrap();
    assert_eq!((t.groups(), rows), (2, vec![0, 1]));
    // Too wide a key is refused at make time.
    let wide = AggSpec { keys: vec![KeyKind::Int(8), KeyKind::Int(8), KeyKind::Str(1)], aggs: vec![] };
    assert!(AggBee::make(wide, Maker::Instantiated, None, BeeOwner::Query, String::new()).is_err());
}

#[test]
fn bigint_sum_overflow_is_reported() {
    let spec = AggSpec { keys: vec![KeyKind::Bool], aggs: vec![AggOp::CountStar, AggOp::SumInt(8)] };
    for (maker, jit) in [(Maker::Instantiated, None), (Maker::Compiled, Some(jit()))] {
        let bee = AggBee::make(spec.clone(), maker, jit, BeeOwner::Query, String::new()).unwrap();
        let mut t = bee.table();
        let k = [true, true];
        let v = [i64::MAX, 1];
        let r = bee.update(
            &mut t,
            &[AggInput { data: AggData::Bool(&k), nulls: None }],
            &[AggInput::NONE, AggInput { data: AggData::I64(&v), nulls: None }],
            2,
            &mut Vec::new(),
        );
        assert_eq!(r, Err(AggError::Overflow { agg: 1 }), "{maker:?}");
    }
}

/// Time per row of each maker on a Q1-like batch stream (`cargo test --release
/// --test agg_vs_generic -- --ignored --nocapture makers_cost`): the bee's call
/// alone, inputs made once.
#[test]
#[ignore]
fn makers_cost() {
    let q1 = AggSpec {
        keys: vec![KeyKind::Str(1), KeyKind::Str(1)],
        aggs: vec![AggOp::SumDec, AggOp::SumDec, AggOp::SumDec, AggOp::AvgDec, AggOp::AvgDec, AggOp::CountStar],
    };
    let ints = AggSpec { keys: vec![KeyKind::Int(8)], aggs: vec![AggOp::SumDec, AggOp::AvgInt(4), AggOp::CountStar] };
    let mut rng = StdRng::seed_from_u64(5);
    let n = 1024;
    for (name, spec, groups) in [("q1", &q1, 4i64), ("int8 key, 100k groups", &ints, 100_000), ("int8 key, 8 groups", &ints, 8)] {
        let batches: Vec<(Vec<u32>, Vec<u8>, Vec<u32>, Vec<u8>, Vec<i64>, Vec<i64>, Vec<i32>)> = (0..1000)
            .map(|_| {
                let (mut o1, mut b1, mut o2, mut b2) = (vec![0u32], Vec::new(), vec![0u32], Vec::new());
                let (mut k, mut d, mut q) = (Vec::new(), Vec::new(), Vec::new());
                for _ in 0..n {
                    let f = [b'A', b'N', b'R'][rng.random_range(0..3)];
                    b1.push(f);
                    o1.push(b1.len() as u32);
                    b2.push(if f == b'N' && rng.random_bool(0.5) { b'F' } else { b'O' });
                    o2.push(b2.len() as u32);
                    k.push(rng.random_range(0..groups) * 7919);
                    d.push(rng.random_range(90_000..10_500_000));
                    q.push(rng.random_range(1..50));
                }
                (o1, b1, o2, b2, k, d, q)
            })
            .collect();
        for maker in [Maker::Instantiated, Maker::Compiled] {
            let bee = AggBee::make(spec.clone(), maker, Some(jit()), BeeOwner::Query, String::new()).unwrap();
            let mut best = f64::MAX;
            for _ in 0..5 {
                let mut t = bee.table();
                let mut rows = Vec::new();
                let t0 = std::time::Instant::now();
                for (o1, b1, o2, b2, k, d, q) in &batches {
                    let keys: Vec<AggInput<'_>> = if spec.keys.len() == 2 {
                        vec![
                            AggInput { data: AggData::StrBuf { offsets: o1, bytes: b1, trim: true }, nulls: None },
                            AggInput { data: AggData::StrBuf { offsets: o2, bytes: b2, trim: true }, nulls: None },
                        ]
                    } else {
                        vec![AggInput { data: AggData::I64(k), nulls: None }]
                    };
                    let args: Vec<AggInput<'_>> = spec
                        .aggs
                        .iter()
                        .map(|a| match a {
                            AggOp::CountStar => AggInput::NONE,
                            AggOp::AvgInt(4) => AggInput { data: AggData::I32(q), nulls: None },
                            _ => AggInput { data: AggData::I64(d), nulls: None },
                        })
                        .collect();
                    rows.clear();
                    bee.update(&mut t, &keys, &args, n, &mut rows).unwrap();
                }
                best = best.min(t0.elapsed().as_secs_f64() * 1e9 / (1000.0 * n as f64));
            }
            println!("{name}: {maker:?} {best:.2} ns/row (best of 5)");
        }
    }
}
