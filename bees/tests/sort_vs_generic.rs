//! Differential tests of sort bees: every compiled and every instantiated sort bee
//! must write, byte for byte, the normalized keys the generic twin
//! ([`beedb_bees::generic::sort_keys`]) writes, for random specs (every kind, both
//! directions, NULLs first and last) over random columns (NULLs, extremes, NaN and
//! −0, empty strings, long strings sharing their prefix, strings with NUL bytes),
//! for n = 0, 1, 2, 1023, 1024, 1025 and random sizes. And ordering by those keys
//! ([`SortBee::order`], ties by a reference comparator) must give exactly the stable
//! sort by a reference comparator of SQL's rules written here independently.

use std::cmp::Ordering;
use std::sync::OnceLock;

use beedb_bees::abi::{ByteRef, SortArgs, SortColumn};
use beedb_bees::compiled::Jit;
use beedb_bees::spec::{SORT_PREFIX, SortPart, SortSpec, ValueKind, interval_span};
use beedb_bees::{BeeOwner, Maker, SortBee, SortData, SortInput, generic};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

fn jit() -> &'static Jit {
    static JIT: OnceLock<Jit> = OnceLock::new();
    JIT.get_or_init(|| Jit::new(true).expect("host ISA"))
}

const KINDS: [ValueKind; 9] = [
    ValueKind::Bool,
    ValueKind::Int(2),
    ValueKind::Int(4),
    ValueKind::Int(8),
    ValueKind::Float(4),
    ValueKind::Float(8),
    ValueKind::Decimal,
    ValueKind::Interval,
    ValueKind::Bytes,
];

/// One column's values, typed.
enum Col {
    Bool(Vec<bool>),
    I16(Vec<i16>),
    I32(Vec<i32>),
    I64(Vec<i64>),
    F32(Vec<f32>),
    F64(Vec<f64>),
    I128(Vec<i128>),
    Interval(Vec<[u8; 16]>),
    Bytes(Vec<Vec<u8>>, Vec<ByteRef>),
}

struct Column {
    col: Col,
    nulls: Option<Vec<bool>>,
}

impl Column {
    fn input(&self) -> SortInput<'_> {
        let data = match &self.col {
            Col::Bool(d) => SortData::Bool(d),
            Col::I16(d) => SortData::I16(d),
            Col::I32(d) => SortData::I32(d),
            Col::I64(d) => SortData::I64(d),
            Col::F32(d) => SortData::F32(d),
            Col::F64(d) => SortData::F64(d),
            Col::I128(d) => SortData::I128(d),
            Col::Interval(d) => SortData::Interval(d),
            Col::Bytes(_, r) => SortData::Bytes(r),
        };
        SortInput { data, nulls: self.nulls.as_deref() }
    }

    fn raw(&self) -> SortColumn {
        let data = match &self.col {
            Col::Bool(d) => d.as_ptr() as *const u8,
            Col::I16(d) => d.as_ptr() as *const u8,
            Col::I32(d) => d.as_ptr() as *const u8,
            Col::I64(d) => d.as_ptr() as *const u8,
            Col::F32(d) => d.as_ptr() as *const u8,
            Col::F64(d) => d.as_ptr() as *const u8,
            Col::I128(d) => d.as_ptr() as *const u8,
            Col::Interval(d) => d.as_ptr() as *const u8,
            Col::Bytes(_, r) => r.as_ptr() as *const u8,
        };
        SortColumn { data, nulls: self.nulls.as_ref().map_or(std::ptr::null(), |m| m.as_ptr() as *const u8) }
    }

    fn is_null(&self, i: usize) -> bool {
        self.nulls.as_ref().is_some_and(|m| m[i])
    }

    /// SQL's order of two non-NULL values, written independently of the bees.
    fn cmp(&self, a: usize, b: usize) -> Ordering {
        fn fl(x: f64, y: f64) -> Ordering {
            match (x.is_nan(), y.is_nan()) {
                (true, true) => Ordering::Equal,
                (true, false) => Ordering::Greater,
                (false, true) => Ordering::Less,
                _ => x.partial_cmp(&y).unwrap(),
            }
        }
        let span = |s: &[u8; 16]| {
            interval_span(
                i32::from_le_bytes(s[0..4].try_into().unwrap()),
                i32::from_le_bytes(s[4..8].try_into().unwrap()),
                i64::from_le_bytes(s[8..16].try_into().unwrap()),
            )
        };
        match &self.col {
            Col::Bool(d) => d[a].cmp(&d[b]),
            Col::I16(d) => d[a].cmp(&d[b]),
            Col::I32(d) => d[a].cmp(&d[b]),
            Col::I64(d) => d[a].cmp(&d[b]),
            Col::F32(d) => fl(d[a] as f64, d[b] as f64),
            Col::F64(d) => fl(d[a], d[b]),
            Col::I128(d) => d[a].cmp(&d[b]),
            Col::Interval(d) => span(&d[a]).cmp(&span(&d[b])),
            Col::Bytes(v, _) => v[a].cmp(&v[b]),
        }
    }
}

fn pick<T: Copy>(rng: &mut StdRng, pool: &[T]) -> T {
    pool[rng.random_range(0..pool.len())]
}

/// `n` values of `kind` drawn from a few (so that keys tie) and from the extremes.
fn column(rng: &mut StdRng, kind: ValueKind, n: usize) -> Column {
    let few = rng.random_range(1..20i64);
    let mut small = |rng: &mut StdRng| rng.random_range(-few..=few);
    let col = match kind {
        ValueKind::Bool => Col::Bool((0..n).map(|_| rng.random()).collect()),
        ValueKind::Int(2) => Col::I16((0..n).map(|_| if rng.random_bool(0.1) { pick(rng, &[i16::MIN, i16::MAX, 0, -1]) } else { small(rng) as i16 }).collect()),
        ValueKind::Int(4) => Col::I32((0..n).map(|_| if rng.random_bool(0.1) { pick(rng, &[i32::MIN, i32::MAX, 0, -1]) } else { small(rng) as i32 }).collect()),
        ValueKind::Int(_) => Col::I64((0..n).map(|_| if rng.random_bool(0.1) { pick(rng, &[i64::MIN, i64::MAX, 0, -1]) } else { small(rng) * 1_000_000_007 }).collect()),
        ValueKind::Float(4) => Col::F32(
            (0..n)
                .map(|_| {
                    if rng.random_bool(0.2) {
                        pick(rng, &[f32::NAN, -f32::NAN, 0.0, -0.0, f32::INFINITY, f32::NEG_INFINITY, f32::MIN_POSITIVE, -f32::MIN_POSITIVE, f32::MAX, f32::MIN, 1e-45, -1e-45])
                    } else {
                        small(rng) as f32 / 3.0
                    }
                })
                .collect(),
        ),
        ValueKind::Float(_) => Col::F64(
            (0..n)
                .map(|_| {
                    if rng.random_bool(0.2) {
                        pick(rng, &[f64::NAN, -f64::NAN, 0.0, -0.0, f64::INFINITY, f64::NEG_INFINITY, f64::MIN_POSITIVE, -f64::MIN_POSITIVE, f64::MAX, f64::MIN, 5e-324, -5e-324])
                    } else {
                        small(rng) as f64 / 3.0
                    }
                })
                .collect(),
        ),
        ValueKind::Decimal => Col::I128((0..n).map(|_| if rng.random_bool(0.1) { pick(rng, &[i128::MIN, i128::MAX, 0, -1, 1]) } else { small(rng) as i128 * 10i128.pow(30) + small(rng) as i128 }).collect()),
        ValueKind::Interval => Col::Interval(
            (0..n)
                .map(|_| {
                    let (m, d, u): (i32, i32, i64) = if rng.random_bool(0.1) {
                        pick(rng, &[(i32::MIN, i32::MIN, i64::MIN), (i32::MAX, i32::MAX, i64::MAX), (1, 0, 0), (0, 30, 0), (0, 0, 86_400_000_000)])
                    } else {
                        (small(rng) as i32, small(rng) as i32, small(rng) * 3_600_000_000)
                    };
                    let mut b = [0u8; 16];
                    b[0..4].copy_from_slice(&m.to_le_bytes());
                    b[4..8].copy_from_slice(&d.to_le_bytes());
                    b[8..16].copy_from_slice(&u.to_le_bytes());
                    b
                })
                .collect(),
        ),
        ValueKind::Raw(_) => unreachable!("not a sort kind"),
        ValueKind::Bytes => {
            let prefix: Vec<u8> = b"common-prefix-xyz".to_vec();
            let vals: Vec<Vec<u8>> = (0..n)
                .map(|_| match rng.random_range(0..8) {
                    0 => Vec::new(),
                    1 => prefix[..rng.random_range(0..prefix.len())].to_vec(),
                    2 => {
                        let mut v = prefix.clone();
                        v.extend((0..rng.random_range(0..40)).map(|_| pick(rng, b"ab\0\xff")));
                        v
                    }
                    3 => (0..rng.random_range(0..SORT_PREFIX + 3)).map(|_| pick(rng, b"\0\x01a\xfe\xff")).collect(),
                    4 => vec![b'z'; rng.random_range(0..5000)],
                    _ => format!("v{}", small(rng)).into_bytes(),
                })
                .collect();
            let refs = vals.iter().map(|v| ByteRef::of(v)).collect();
            Col::Bytes(vals, refs)
        }
    };
    let nulls = match rng.random_range(0..3) {
        0 => None,
        1 => Some(vec![false; n]),
        _ => Some((0..n).map(|_| rng.random_bool(0.2)).collect()),
    };
    // A NULL row's slot holds anything (the bee must not read a NULL ByteRef).
    let mut c = Column { col, nulls };
    if let (Col::Bytes(_, r), Some(m)) = (&mut c.col, &c.nulls) {
        for (i, &null) in m.iter().enumerate() {
            if null && i % 2 == 0 {
                r[i] = ByteRef { ptr: 8 as *const u8, len: 1 << 40 };
            }
        }
    }
    c
}

fn random_spec(rng: &mut StdRng) -> SortSpec {
    let parts = (0..rng.random_range(1..=5))
        .map(|_| SortPart { kind: pick(rng, &KINDS), desc: rng.random(), nulls_first: rng.random() })
        .collect();
    SortSpec { parts }
}

/// The reference order of rows `a` and `b` on every key.
fn reference(spec: &SortSpec, cols: &[Column], a: u32, b: u32) -> Ordering {
    for (p, c) in spec.parts.iter().zip(cols) {
        let (a, b) = (a as usize, b as usize);
        let o = match (c.is_null(a), c.is_null(b)) {
            (true, true) => Ordering::Equal,
            (true, false) => if p.nulls_first { Ordering::Less } else { Ordering::Greater },
            (false, true) => if p.nulls_first { Ordering::Greater } else { Ordering::Less },
            _ => {
                let o = c.cmp(a, b);
                if p.desc { o.reverse() } else { o }
            }
        };
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

/// The generic twin's keys.
fn twin(spec: &SortSpec, cols: &[Column], n: usize) -> Vec<u8> {
    let raw: Vec<SortColumn> = cols.iter().map(|c| c.raw()).collect();
    let mut keys = vec![0xA5u8; n * spec.stride()];
    let args = SortArgs { cols: raw.as_ptr(), n: n as u64, keys: keys.as_mut_ptr(), stride: spec.stride() as u64 };
    unsafe { generic::sort_keys(spec, &args) };
    keys
}

/// The makers under test.
fn bees(spec: &SortSpec) -> Vec<SortBee> {
    vec![
        SortBee::make(spec.clone(), Maker::Instantiated, None, BeeOwner::Query, String::new()).unwrap(),
        SortBee::make(spec.clone(), Maker::Compiled, Some(jit()), BeeOwner::Query, String::new()).unwrap(),
    ]
}

fn check(seed: u64, spec: &SortSpec, cols: &[Column], n: usize) {
    let want = twin(spec, cols, n);
    let inputs: Vec<SortInput<'_>> = cols.iter().map(|c| c.input()).collect();
    for bee in bees(spec) {
        // The bee writes every byte (the twin's buffer started as garbage).
        let got = unsafe { bee.encode(&inputs, n) }.unwrap();
        if got != want {
            let row = (0..n).find(|&r| got[r * spec.stride()..][..spec.stride()] != want[r * spec.stride()..][..spec.stride()]).unwrap();
            panic!(
                "seed {seed}, {} maker, spec {spec:?}, n {n}: row {row}: {:?} vs twin {:?}",
                bee.maker(),
                &got[row * spec.stride()..][..spec.stride()],
                &want[row * spec.stride()..][..spec.stride()]
            );
        }
        let mut ties = 0;
        let perm = bee.order(&got, n, |a, b| {
            ties += 1;
            reference(spec, cols, a, b)
        });
        let mut expected: Vec<u32> = (0..n as u32).collect();
        expected.sort_by(|&a, &b| reference(spec, cols, a, b));
        assert_eq!(perm, expected, "seed {seed}, {} maker, spec {spec:?}, n {n}: order", bee.maker());
        if !spec.has_ties() {
            assert_eq!(ties, 0);
        }
    }
}

#[test]
fn makers_match_the_twin_and_order_as_sql() {
    for seed in 0..300u64 {
        let mut rng = StdRng::seed_from_u64(seed);
        let spec = random_spec(&mut rng);
        for n in [0, 1, 2, 1023, 1024, 1025, rng.random_range(0..3000)] {
            if n > 1025 && seed % 10 != 0 {
                continue;
            }
            let cols: Vec<Column> = spec.parts.iter().map(|p| column(&mut rng, p.kind, n)).collect();
            check(seed, &spec, &cols, n);
        }
    }
}

/// Every kind alone, in all four directions, over the kind's extremes.
#[test]
fn every_kind_alone_in_every_direction() {
    for (k, &kind) in KINDS.iter().enumerate() {
        for (d, (desc, nulls_first)) in [(false, false), (false, true), (true, false), (true, true)].into_iter().enumerate() {
            let seed = (k * 4 + d) as u64;
            let mut rng = StdRng::seed_from_u64(1000 + seed);
            let spec = SortSpec { parts: vec![SortPart { kind, desc, nulls_first }] };
            for n in [0, 1, 2, 1023, 1024, 1025] {
                let cols = vec![column(&mut rng, kind, n)];
                check(seed, &spec, &cols, n);
            }
        }
    }
}

/// Long keys (more than 32 bytes: the byte-slice order path) and ties on strings
/// longer than the prefix go to the tie comparator, and only those.
#[test]
fn wide_keys_and_string_ties() {
    let spec = SortSpec {
        parts: vec![
            SortPart { kind: ValueKind::Bytes, desc: false, nulls_first: false },
            SortPart { kind: ValueKind::Decimal, desc: true, nulls_first: true },
            SortPart { kind: ValueKind::Bytes, desc: true, nulls_first: false },
        ],
    };
    assert!(spec.stride() > 32);
    let mut rng = StdRng::seed_from_u64(7);
    for n in [0, 1, 2, 1023, 1024, 1025] {
        let cols: Vec<Column> = spec.parts.iter().map(|p| column(&mut rng, p.kind, n)).collect();
        check(7, &spec, &cols, n);
    }
    // Short strings never need the comparator.
    let spec = SortSpec { parts: vec![SortPart { kind: ValueKind::Bytes, desc: false, nulls_first: false }] };
    let vals: Vec<Vec<u8>> = (0..500).map(|i| format!("k{}", i % 7).into_bytes()).collect();
    let refs: Vec<ByteRef> = vals.iter().map(|v| ByteRef::of(v)).collect();
    let bee = SortBee::make(spec, Maker::Instantiated, None, BeeOwner::Query, String::new()).unwrap();
    let keys = unsafe { bee.encode(&[SortInput { data: SortData::Bytes(&refs), nulls: None }], 500) }.unwrap();
    let perm = bee.order(&keys, 500, |_, _| panic!("no tie needs the comparator"));
    assert!(perm.windows(2).all(|w| vals[w[0] as usize] < vals[w[1] as usize] || vals[w[0] as usize] == vals[w[1] as usize] && w[0] < w[1]));
}

/// Columns of the wrong kind or length are refused, not read.
#[test]
fn mismatched_inputs_are_refused() {
    let spec = SortSpec { parts: vec![SortPart { kind: ValueKind::Int(4), desc: false, nulls_first: false }] };
    let bee = SortBee::make(spec, Maker::Instantiated, None, BeeOwner::Query, String::new()).unwrap();
    let v = [1i64, 2];
    assert!(unsafe { bee.encode(&[SortInput { data: SortData::I64(&v), nulls: None }], 2) }.is_err());
    let w = [1i32];
    assert!(unsafe { bee.encode(&[SortInput { data: SortData::I32(&w), nulls: None }], 2) }.is_err());
    assert!(unsafe { bee.encode(&[], 0) }.is_err());
    assert!(SortBee::make(SortSpec { parts: vec![] }, Maker::Instantiated, None, BeeOwner::Query, String::new()).is_err());
}
