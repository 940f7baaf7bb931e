//! Differential tests of join bees: every join bee (each maker that exists) must
//! give, id for id, what the generic twin ([`beedb_bees::join::probe_generic`]) gives,
//! for random key specs (one to four parts of every column type and slot width, u64
//! and u128 keys) over random build and probe columns (NULL masks or none, few
//! distinct values so keys repeat and run, values missing from the build, type
//! extremes, NaN of both signs, ±0), for n = 0, 1, 2, 1023, 1024, 1025 and random
//! sizes, empty builds included. Independently of the twin, every id must name a
//! build key equal to the probe row's key, and a row without an id must have no
//! equal build key.

use std::collections::HashMap;
use std::sync::OnceLock;

use beedb_bees::compiled::Jit;
use beedb_bees::join::{
    JoinData, JoinInput, JoinKeyPart, JoinKeySpec, JoinLoad, JoinSlot, JoinTableBuf, NO_ID, pack_generic, probe_generic,
};
use beedb_bees::{BeeOwner, JoinBee, Maker};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

fn jit() -> &'static Jit {
    static JIT: OnceLock<Jit> = OnceLock::new();
    JIT.get_or_init(|| Jit::new(true).expect("host ISA"))
}

/// One column's values, owned.
#[derive(Clone)]
enum Col {
    Bool(Vec<bool>),
    I16(Vec<i16>),
    I32(Vec<i32>),
    I64(Vec<i64>),
    F32(Vec<f32>),
    F64(Vec<f64>),
}

impl Col {
    fn data(&self) -> JoinData<'_> {
        match self {
            Col::Bool(v) => JoinData::Bool(v),
            Col::I16(v) => JoinData::I16(v),
            Col::I32(v) => JoinData::I32(v),
            Col::I64(v) => JoinData::I64(v),
            Col::F32(v) => JoinData::F32(v),
            Col::F64(v) => JoinData::F64(v),
        }
    }
}

/// A random part: a load and a slot it fits.
fn random_part(rng: &mut StdRng) -> (JoinLoad, JoinSlot) {
    match rng.random_range(0..9) {
        0 => (JoinLoad::Bool, JoinSlot::Bool),
        1 => (JoinLoad::I16, JoinSlot::Int([2, 4, 8][rng.random_range(0..3)])),
        2 | 3 => (JoinLoad::I32, JoinSlot::Int([4, 8][rng.random_range(0..2)])),
        4 | 5 => (JoinLoad::I64, JoinSlot::Int(8)),
        6 => (JoinLoad::F32, JoinSlot::Float),
        _ => (JoinLoad::F64, JoinSlot::Float),
    }
}

/// A random spec whose slots fit 128 bits (u64 when they fit 64).
fn random_spec(rng: &mut StdRng) -> JoinKeySpec {
    loop {
        let nparts = [1, 1, 2, 2, 3, 4][rng.random_range(0..6)];
        let mut parts = Vec::new();
        let mut off = 0;
        for _ in 0..nparts {
            let (load, slot) = random_part(rng);
            parts.push(JoinKeyPart { load, slot, offset: off });
            off += slot.bits();
        }
        // The engine's layout adds a NULL bit per part after the slots.
        let total = off + nparts as u32;
        if total <= 128 {
            let spec = JoinKeySpec { parts, wide: total > 64 };
            spec.check().unwrap();
            return spec;
        }
    }
}

/// A value from a small domain (so keys repeat) or, now and then, an extreme.
fn random_col(rng: &mut StdRng, load: JoinLoad, n: usize, domain: i64) -> Col {
    let mut small = || rng.random_range(-domain..=domain);
    match load {
        JoinLoad::Bool => Col::Bool((0..n).map(|_| small() > 0).collect()),
        JoinLoad::I16 => Col::I16((0..n).map(|_| match small() { 0 => i16::MIN, 1 => i16::MAX, x => (x as i16).wrapping_mul(311) }).collect()),
        JoinLoad::I32 => Col::I32((0..n).map(|_| match small() { 0 => i32::MIN, 1 => i32::MAX, x => (x as i32).wrapping_mul(100_003) }).collect()),
        JoinLoad::I64 => Col::I64((0..n).map(|_| match small() { 0 => i64::MIN, 1 => i64::MAX, x => x.wrapping_mul(10_000_000_019) }).collect()),
        JoinLoad::F32 => Col::F32(
            (0..n)
                .map(|_| match small() { 0 => f32::NAN, 1 => -f32::NAN, 2 => -0.0, 3 => 0.0, 4 => f32::INFINITY, x => x as f32 * 1.5 })
                .collect(),
        ),
        JoinLoad::F64 => Col::F64(
            (0..n)
                .map(|_| match small() { 0 => f64::NAN, 1 => -f64::NAN, 2 => -0.0, 3 => 0.0, 4 => f64::NEG_INFINITY, x => x as f64 * 0.1 })
                .collect(),
        ),
    }
}

fn random_nulls(rng: &mut StdRng, n: usize) -> Option<Vec<bool>> {
    match rng.random_range(0..3) {
        0 => None,
        1 => Some(vec![false; n]),
        _ => Some((0..n).map(|_| rng.random_range(0..6) == 0).collect()),
    }
}

/// Random columns for `spec`, with runs of equal rows now and then.
fn random_batch(rng: &mut StdRng, spec: &JoinKeySpec, n: usize, domain: i64) -> (Vec<Col>, Vec<Option<Vec<bool>>>) {
    let mut cols: Vec<Col> = spec.parts.iter().map(|p| random_col(rng, p.load, n, domain)).collect();
    let nulls: Vec<Option<Vec<bool>>> = spec.parts.iter().map(|_| random_nulls(rng, n)).collect();
    if rng.random_range(0..2) == 0 && n > 1 {
        // Runs: copy row k−1 to row k for about half the rows.
        for k in 1..n {
            if rng.random_range(0..2) == 0 {
                for c in cols.iter_mut() {
                    match c {
                        Col::Bool(v) => v[k] = v[k - 1],
                        Col::I16(v) => v[k] = v[k - 1],
                        Col::I32(v) => v[k] = v[k - 1],
                        Col::I64(v) => v[k] = v[k - 1],
                        Col::F32(v) => v[k] = v[k - 1],
                        Col::F64(v) => v[k] = v[k - 1],
                    }
                }
            }
        }
    }
    (cols, nulls)
}

fn inputs<'a>(cols: &'a [Col], nulls: &'a [Option<Vec<bool>>]) -> Vec<JoinInput<'a>> {
    cols.iter().zip(nulls).map(|(c, m)| JoinInput { data: c.data(), nulls: m.as_deref() }).collect()
}

fn bees(spec: &JoinKeySpec) -> Vec<JoinBee> {
    vec![
        JoinBee::make(spec.clone(), Maker::Instantiated, None, BeeOwner::Query, String::new()).unwrap(),
        JoinBee::make(spec.clone(), Maker::Compiled, Some(jit()), BeeOwner::Query, String::new()).unwrap(),
    ]
}

/// Builds a table of the build rows' keys (NULL keys skipped) and probes it with
/// the probe rows: every bee must agree with the twin and with a reference map.
fn check(spec: &JoinKeySpec, build: (&[Col], &[Option<Vec<bool>>]), nb: usize, probe: (&[Col], &[Option<Vec<bool>>]), np: usize) -> (usize, usize) {
    let bin = inputs(build.0, build.1);
    let mut table = JoinTableBuf::new(spec.wide);
    let mut reference: HashMap<u128, u32> = HashMap::new();
    for k in 0..nb {
        if bin.iter().any(|c| c.nulls.is_some_and(|m| m[k])) {
            continue;
        }
        let key = pack_generic(spec, &bin, k);
        let id = table.insert(key);
        assert_eq!(*reference.entry(key).or_insert(id), id);
    }
    let pin = inputs(probe.0, probe.1);
    let mut want = vec![7u32; 3];
    probe_generic(spec, &pin, np, table.table(), &mut want).unwrap();
    assert_eq!(want.len(), np);
    let (mut hits, mut misses) = (0, 0);
    for (k, &id) in want.iter().enumerate() {
        let null = pin.iter().any(|c| c.nulls.is_some_and(|m| m[k]));
        let expect = if null { NO_ID } else { reference.get(&pack_generic(spec, &pin, k)).copied().unwrap_or(NO_ID) };
        assert_eq!(id, expect, "twin vs reference, row {k}, spec {spec:?}");
        if id == NO_ID { misses += 1 } else { hits += 1 }
    }
    for bee in bees(spec) {
        let mut got = vec![3u32; 5];
        bee.probe(&pin, np, table.table(), &mut got).unwrap();
        assert_eq!(got, want, "{} bee vs twin, spec {spec:?}", bee.maker());
    }
    (hits, misses)
}

#[test]
fn join_bees_match_the_twin_on_random_keys() {
    let mut rng = StdRng::seed_from_u64(0x701e);
    let (mut hits, mut misses) = (0, 0);
    for round in 0..400 {
        let spec = random_spec(&mut rng);
        let sizes = [0usize, 1, 2, 1023, 1024, 1025, rng.random_range(0..3000)];
        let nb = sizes[rng.random_range(0..sizes.len())];
        let np = sizes[round % sizes.len()];
        let domain = [1, 3, 20, 1000][rng.random_range(0..4)];
        let (bc, bn) = random_batch(&mut rng, &spec, nb, domain);
        let pd = domain + rng.random_range(0..2);
        let (pc, pn) = random_batch(&mut rng, &spec, np, pd);
        let (h, m) = check(&spec, (&bc, &bn), nb, (&pc, &pn), np);
        hits += h;
        misses += m;
    }
    assert!(hits > 10_000 && misses > 10_000, "{hits} hits, {misses} misses");
}

#[test]
fn floats_match_by_value_nan_and_zero_included() {
    let spec = JoinKeySpec { parts: vec![JoinKeyPart { load: JoinLoad::F64, slot: JoinSlot::Float, offset: 0 }], wide: false };
    let build = [Col::F64(vec![f64::NAN, 0.0, 1.5])];
    let probe = [Col::F64(vec![-f64::NAN, -0.0, 1.5, 2.5])];
    let mut table = JoinTableBuf::new(false);
    let bin = inputs(&build, &[None]);
    for k in 0..3 {
        table.insert(pack_generic(&spec, &bin, k));
    }
    for bee in bees(&spec) {
        let mut ids = Vec::new();
        bee.probe(&inputs(&probe, &[None]), 4, table.table(), &mut ids).unwrap();
        assert_eq!(ids, [0, 1, 2, NO_ID]);
    }
}

#[test]
fn a_narrower_probe_integer_matches_a_wider_slot_by_value() {
    // An i16 probe column against an 8-byte slot (a bigint build key): sign-extended.
    let spec = JoinKeySpec { parts: vec![JoinKeyPart { load: JoinLoad::I16, slot: JoinSlot::Int(8), offset: 0 }], wide: false };
    let mut table = JoinTableBuf::new(false);
    for x in [-1i64, 7, 40_000] {
        table.insert(x as u64 as u128);
    }
    let probe = [Col::I16(vec![7, -1, 0, i16::MIN])];
    for bee in bees(&spec) {
        let mut ids = Vec::new();
        bee.probe(&inputs(&probe, &[Some(vec![false, false, false, true])]), 4, table.table(), &mut ids).unwrap();
        assert_eq!(ids, [1, 0, NO_ID, NO_ID]);
    }
}

#[test]
fn calls_that_break_the_contract_are_refused() {
    let spec = JoinKeySpec { parts: vec![JoinKeyPart { load: JoinLoad::I32, slot: JoinSlot::Int(4), offset: 0 }], wide: false };
    let bee = JoinBee::make(spec.clone(), Maker::Instantiated, None, BeeOwner::Query, String::new()).unwrap();
    let narrow = JoinTableBuf::new(false);
    let wide = JoinTableBuf::new(true);
    let mut ids = Vec::new();
    let c = [Col::I64(vec![1, 2])];
    assert!(bee.probe(&inputs(&c, &[None]), 2, narrow.table(), &mut ids).is_err(), "wrong column type");
    let c = [Col::I32(vec![1, 2])];
    assert!(bee.probe(&inputs(&c, &[None]), 3, narrow.table(), &mut ids).is_err(), "too few rows");
    assert!(bee.probe(&inputs(&c, &[None]), 2, wide.table(), &mut ids).is_err(), "wrong table width");
    assert!(bee.probe(&inputs(&c, &[None]), 2, narrow.table(), &mut ids).is_ok());
    // Specs that cannot be: a wider load than its slot, a slot past the key's width.
    let bad = JoinKeySpec { parts: vec![JoinKeyPart { load: JoinLoad::I64, slot: JoinSlot::Int(4), offset: 0 }], wide: false };
    assert!(JoinBee::make(bad, Maker::Instantiated, None, BeeOwner::Query, String::new()).is_err());
    let bad = JoinKeySpec { parts: vec![JoinKeyPart { load: JoinLoad::I64, slot: JoinSlot::Int(8), offset: 8 }], wide: false };
    assert!(JoinBee::make(bad, Maker::Instantiated, None, BeeOwner::Query, String::new()).is_err());
}
