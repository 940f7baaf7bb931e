//! Differential tests of both makers: every compiled and every instantiated scan,
//! deform and form bee must agree with the generic twin ([`beedb_bees::generic`]) on
//! every input, malformed tuples included — consumed and produced counts, `sel`,
//! every output slot and NULL byte of the rows produced, every byte of a formed
//! buffer. The Cranelift verifier is on. Seeds are fixed; a failure names its seed.

use std::sync::{Arc, OnceLock};

use beedb_bees::abi::{ByteRef, ColumnOut, FormArgs, Progress, RunArgs, Stop};
use beedb_bees::compiled::{self, CompiledCode, FormFn, Jit, ScanFn};
use beedb_bees::{generic, instantiated};
use beedb_bees::spec::{CmpOp, Const, Pred, RelationSpec, ScanSpec, ValueKind};
use beedb_storage::PageId;
use beedb_storage::tuple::{AttrValue, ColumnFormat, TupleLayout};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

fn jit() -> &'static Jit {
    static JIT: OnceLock<Jit> = OnceLock::new();
    JIT.get_or_init(|| Jit::new(true).expect("host ISA"))
}

const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<Jit>();
    send_sync::<CompiledCode>();
};

// ----- Random relations and data -----

const KINDS: [ValueKind; 14] = [
    ValueKind::Bool,
    ValueKind::Int(2),
    ValueKind::Int(4),
    ValueKind::Int(8),
    ValueKind::Float(4),
    ValueKind::Float(8),
    ValueKind::Decimal,
    ValueKind::Interval,
    ValueKind::Raw(1),
    ValueKind::Raw(2),
    ValueKind::Raw(4),
    ValueKind::Raw(8),
    ValueKind::Raw(16),
    ValueKind::Bytes,
];

/// A stored value as the tests model it.
#[derive(Clone, Debug)]
enum V {
    Null,
    Fixed(Vec<u8>),
    Var(Vec<u8>),
    Ext(u32, u32),
}

struct Rel {
    spec: Arc<RelationSpec>,
    /// Per attribute: a few values rows draw from (so predicates hit).
    pools: Vec<Vec<V>>,
}

fn relation(kinds: &[ValueKind], nullable: &[bool]) -> Arc<RelationSpec> {
    let cols: Vec<ColumnFormat> = kinds
        .iter()
        .zip(nullable)
        .map(|(k, &n)| match k.stored_width() {
            Some(w) => ColumnFormat::fixed(w as u8, n),
            None => ColumnFormat::variable(n),
        })
        .collect();
    Arc::new(RelationSpec::new(TupleLayout::new(&cols).unwrap(), kinds.to_vec()).unwrap())
}

fn random_rel(rng: &mut StdRng, natts: usize) -> Rel {
    let kinds: Vec<ValueKind> = (0..natts)
        .map(|_| {
            if rng.random_bool(0.25) {
                ValueKind::Bytes
            } else {
                KINDS[rng.random_range(0..KINDS.len())]
            }
        })
        .collect();
    let nullable: Vec<bool> = (0..natts).map(|_| rng.random_bool(0.5)).collect();
    let spec = relation(&kinds, &nullable);
    let pools = kinds
        .iter()
        .map(|&k| (0..6).map(|_| fresh_value(rng, k)).collect())
        .collect();
    Rel { spec, pools }
}

fn int_bytes(v: i64, w: usize) -> Vec<u8> {
    v.to_le_bytes()[..w].to_vec()
}

fn fresh_value(rng: &mut StdRng, kind: ValueKind) -> V {
    match kind {
        ValueKind::Bool => V::Fixed(vec![[0u8, 1, 1, 0, 2, 0xFF][rng.random_range(0..6)]]),
        ValueKind::Int(w) => {
            let w = w as usize;
            let bits = 8 * w as u32;
            let min = if w == 8 {
                i64::MIN
            } else {
                -(1i64 << (bits - 1))
            };
            let max = if w == 8 {
                i64::MAX
            } else {
                (1i64 << (bits - 1)) - 1
            };
            let v = match rng.random_range(0..8) {
                0 => 0,
                1 => -1,
                2 => min,
                3 => max,
                4 | 5 => rng.random_range(-5..=5),
                _ => rng.random::<i64>(),
            };
            V::Fixed(int_bytes(v, w))
        }
        ValueKind::Float(4) => {
            let specials = [
                f32::NAN,
                f32::from_bits(0xFFC0_0000),
                f32::from_bits(0x7F80_0001),
                0.0,
                -0.0,
                f32::INFINITY,
                f32::NEG_INFINITY,
                1.0,
                -1.5,
                f32::MIN,
                f32::MAX,
                f32::MIN_POSITIVE,
                0.1,
            ];
            let f = match rng.random_range(0..4) {
                0 | 1 => specials[rng.random_range(0..specials.len())],
                2 => rng.random_range(-4..=4) as f32,
                _ => f32::from_bits(rng.random()),
            };
            V::Fixed(f.to_le_bytes().to_vec())
        }
        ValueKind::Float(_) => {
            let specials = [
                f64::NAN,
                f64::from_bits(0xFFF8_0000_0000_0000),
                f64::from_bits(0x7FF0_0000_0000_0001),
                0.0,
                -0.0,
                f64::INFINITY,
                f64::NEG_INFINITY,
                1.0,
                -1.5,
                f64::MIN,
                f64::MAX,
                f64::MIN_POSITIVE,
                0.1,
                0.1f32 as f64,
            ];
            let f = match rng.random_range(0..4) {
                0 | 1 => specials[rng.random_range(0..specials.len())],
                2 => rng.random_range(-4..=4) as f64,
                _ => f64::from_bits(rng.random()),
            };
            V::Fixed(f.to_le_bytes().to_vec())
        }
        ValueKind::Decimal => {
            let v: i128 = match rng.random_range(0..7) {
                0 => i128::MIN,
                1 => i128::MAX,
                2 => 0,
                3 => -1,
                4 => rng.random_range(-5..=5),
                5 => rng.random::<i64>() as i128,
                _ => rng.random(),
            };
            V::Fixed(v.to_le_bytes().to_vec())
        }
        ValueKind::Interval => {
            // Spans that tie across fields ('1 month' = '30 days'), and the extremes.
            let (m, d, us): (i32, i32, i64) = match rng.random_range(0..6) {
                0 => (1, 0, 0),
                1 => (0, 30, 0),
                2 => (0, 1, -86_400_000_000),
                3 => (i32::MIN, i32::MIN, i64::MIN),
                4 => (i32::MAX, i32::MAX, i64::MAX),
                _ => (rng.random_range(-30..30), rng.random_range(-60..60), rng.random_range(-5..5) * 3_600_000_000),
            };
            let mut b = m.to_le_bytes().to_vec();
            b.extend_from_slice(&d.to_le_bytes());
            b.extend_from_slice(&us.to_le_bytes());
            V::Fixed(b)
        }
        ValueKind::Raw(w) => V::Fixed((0..w).map(|_| rng.random()).collect()),
        ValueKind::Bytes => V::Var(random_bytes(rng)),
    }
}

fn random_bytes(rng: &mut StdRng) -> Vec<u8> {
    let len = match rng.random_range(0..100) {
        0..10 => 0,
        10..40 => rng.random_range(1..=8),
        40..70 => rng.random_range(9..=40),
        70..82 => rng.random_range(250..=260),
        82..85 => rng.random_range(1000..=5000),
        _ => rng.random_range(40..=253),
    };
    if rng.random_bool(0.2) {
        (0..len).map(|_| rng.random()).collect()
    } else {
        (0..len).map(|_| b"aab"[rng.random_range(0..3)]).collect()
    }
}

/// A row: pool values mostly, fresh ones sometimes, NULLs and out-of-line values
/// (about `ext_p` of the rows have one).
fn random_row(rng: &mut StdRng, rel: &Rel, null_p: f64, ext_p: f64) -> Vec<V> {
    let nbytes = rel
        .spec
        .kinds()
        .iter()
        .filter(|&&k| k == ValueKind::Bytes)
        .count()
        .max(1) as f64;
    (0..rel.spec.natts())
        .map(|a| {
            let kind = rel.spec.kind(a);
            if rel.spec.nullable(a) && rng.random_bool(null_p) {
                V::Null
            } else if kind == ValueKind::Bytes && rng.random_bool(ext_p / nbytes) {
                V::Ext(rng.random(), rng.random())
            } else if rng.random_bool(0.6) {
                rel.pools[a][rng.random_range(0..rel.pools[a].len())].clone()
            } else {
                fresh_value(rng, kind)
            }
        })
        .collect()
}

fn encode(rel: &RelationSpec, row: &[V]) -> Vec<u8> {
    let vals: Vec<AttrValue<'_>> = row
        .iter()
        .map(|v| match v {
            V::Null => AttrValue::Null,
            V::Fixed(b) => AttrValue::Fixed(b),
            V::Var(b) => AttrValue::Variable(b),
            V::Ext(len, page) => AttrValue::External {
                len: *len,
                first_page: PageId(*page),
            },
        })
        .collect();
    rel.layout().encode(&vals).unwrap()
}

fn corrupt(rng: &mut StdRng, t: &mut Vec<u8>) {
    for _ in 0..rng.random_range(1..=3) {
        match rng.random_range(0..7) {
            0 if !t.is_empty() => {
                let i = rng.random_range(0..t.len());
                t[i] ^= 1 << rng.random_range(0..8);
            }
            1 if !t.is_empty() => {
                let i = rng.random_range(0..t.len());
                t[i] = [0x00, 0xFD, 0xFE, 0xFF, rng.random()][rng.random_range(0..5)];
            }
            2 => {
                let len = rng.random_range(0..=t.len());
                t.truncate(len);
            }
            3 => t.extend((0..rng.random_range(1..20)).map(|_| rng.random::<u8>())),
            4 if t.len() >= 4 => {
                let natts = u16::from_le_bytes([t[2], t[3]]);
                let d = rng.random_range(-2i32..=2) as u16;
                t[2..4].copy_from_slice(&natts.wrapping_add(d).to_le_bytes());
            }
            5 if t.len() >= 2 => t[rng.random_range(0..2)] ^= 1 << rng.random_range(0..8),
            _ if !t.is_empty() => {
                // A byte in the variable region, where prefixes live.
                let i = rng.random_range(t.len() / 2..t.len());
                t[i] = [0xFD, 0xFE, 0xFF, 0x00, 0x01][rng.random_range(0..5)];
            }
            _ => {}
        }
    }
}

/// `n` stored tuples: mostly valid, some (`odd`) with out-of-line values or written
/// under an older (shorter) layout, `bad` of them corrupted.
fn random_tuples(rng: &mut StdRng, rel: &Rel, n: usize, bad: f64, odd: f64) -> Vec<Vec<u8>> {
    let null_p = [0.0, 0.1, 0.5][rng.random_range(0..3)];
    (0..n)
        .map(|_| {
            let row = random_row(rng, rel, null_p, odd);
            let mut t = if rng.random_bool(odd) {
                let k = rng.random_range(0..rel.spec.natts());
                encode(&rel.spec, &row[..k])
            } else {
                encode(&rel.spec, &row)
            };
            if rng.random_bool(bad) {
                corrupt(rng, &mut t);
            }
            t
        })
        .collect()
}

// ----- Random predicates and specs -----

fn sign_extend(b: &[u8]) -> i64 {
    let mut x = [0u8; 8];
    x[..b.len()].copy_from_slice(b);
    let shift = 64 - 8 * b.len() as u32;
    (i64::from_le_bytes(x) << shift) >> shift
}

/// A constant of `kind`: one from the data or one at a type limit.
fn random_const(rng: &mut StdRng, rel: &Rel, attr: usize) -> Const {
    let kind = rel.spec.kind(attr);
    if rng.random_bool(0.5) {
        let v = &rel.pools[attr][rng.random_range(0..rel.pools[attr].len())];
        match (kind, v) {
            (ValueKind::Bool, V::Fixed(b)) => return Const::Bool(b[0] != 0),
            (ValueKind::Int(_), V::Fixed(b)) => return Const::Int(sign_extend(b)),
            (ValueKind::Float(4), V::Fixed(b)) => {
                let f = f32::from_le_bytes(b[..4].try_into().unwrap());
                return if rng.random_bool(0.5) {
                    Const::F32(f)
                } else {
                    Const::F64(f as f64)
                };
            }
            (ValueKind::Float(_), V::Fixed(b)) => {
                return Const::F64(f64::from_le_bytes(b[..8].try_into().unwrap()));
            }
            (ValueKind::Decimal, V::Fixed(b)) => {
                return Const::I128(i128::from_le_bytes(b[..16].try_into().unwrap()));
            }
            (ValueKind::Interval, V::Fixed(b)) => {
                return Const::I128(beedb_bees::spec::stored_interval_span(b[..16].try_into().unwrap()));
            }
            (ValueKind::Bytes, V::Var(b)) => {
                let mut b = b.clone();
                match rng.random_range(0..4) {
                    0 if !b.is_empty() => b.truncate(rng.random_range(0..b.len())),
                    1 => b.push(rng.random()),
                    2 if !b.is_empty() => {
                        let i = rng.random_range(0..b.len());
                        b[i] = b[i].wrapping_add(1);
                    }
                    _ => {}
                }
                return Const::Bytes(b);
            }
            _ => {}
        }
    }
    let f64s = [
        f64::NAN,
        -f64::NAN,
        0.0,
        -0.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        1.0,
        0.1,
        1e300,
        -1e300,
        f64::MIN_POSITIVE,
        f64::MAX,
    ];
    match kind {
        ValueKind::Bool => Const::Bool(rng.random()),
        ValueKind::Int(w) => {
            let bits = 8 * w as u32;
            let lim = if w == 8 {
                i64::MAX
            } else {
                (1i64 << (bits - 1)) - 1
            };
            Const::Int(
                [
                    i64::MIN,
                    i64::MAX,
                    0,
                    -1,
                    1,
                    lim,
                    lim.wrapping_add(1),
                    -lim - 1,
                    (-lim).wrapping_sub(2),
                ][rng.random_range(0..9)],
            )
        }
        ValueKind::Float(4) if rng.random_bool(0.5) => Const::F32(
            [
                f32::NAN,
                0.0,
                -0.0,
                f32::INFINITY,
                f32::NEG_INFINITY,
                1.0,
                0.1,
                f32::MAX,
            ][rng.random_range(0..8)],
        ),
        ValueKind::Float(_) => Const::F64(f64s[rng.random_range(0..f64s.len())]),
        ValueKind::Decimal => Const::I128(
            [
                i128::MIN,
                i128::MAX,
                0,
                -1,
                1,
                i64::MAX as i128 + 1,
                i64::MIN as i128,
            ][rng.random_range(0..7)],
        ),
        ValueKind::Bytes => Const::Bytes(match rng.random_range(0..6) {
            0 => vec![],
            1 => b"a".to_vec(),
            2 => b"aab".to_vec(),
            3 => vec![b'a'; rng.random_range(15..=18)],
            4 => vec![0xFF; rng.random_range(1..30)],
            _ => random_bytes(rng),
        }),
        ValueKind::Interval => Const::I128(
            [
                0,
                30 * 86_400_000_000,
                -1,
                beedb_bees::spec::interval_span(i32::MIN, i32::MIN, i64::MIN),
                beedb_bees::spec::interval_span(i32::MAX, i32::MAX, i64::MAX),
                i128::MAX,
            ][rng.random_range(0..6)],
        ),
        ValueKind::Raw(_) => unreachable!("Raw compares with nothing"),
    }
}

fn random_leaf(rng: &mut StdRng, rel: &Rel) -> Pred {
    let attr = rng.random_range(0..rel.spec.natts());
    let kind = rel.spec.kind(attr);
    if matches!(kind, ValueKind::Raw(_)) || rng.random_bool(0.1) {
        return Pred::IsNull { attr };
    }
    match rng.random_range(0..10) {
        // Lists short enough to unroll, and (one in four) past IN_LIST_INLINE_MAX: a
        // set probe in both makers.
        0 | 1 => Pred::InList {
            attr,
            values: (0..{
                let most = if rng.random_bool(0.25) { 40 } else { 5 };
                rng.random_range(1..=most)
            })
                .map(|_| random_const(rng, rel, attr))
                .collect(),
        },
        2 | 3 if kind == ValueKind::Bytes => Pred::Prefix {
            attr,
            prefix: match random_const(rng, rel, attr) {
                Const::Bytes(b) => {
                    let l = rng.random_range(0..=b.len());
                    b[..l].to_vec()
                }
                _ => unreachable!(),
            },
        },
        _ => Pred::Cmp {
            attr,
            op: [
                CmpOp::Eq,
                CmpOp::Ne,
                CmpOp::Lt,
                CmpOp::Le,
                CmpOp::Gt,
                CmpOp::Ge,
            ][rng.random_range(0..6)],
            value: random_const(rng, rel, attr),
        },
    }
}

fn random_pred(rng: &mut StdRng, rel: &Rel, depth: u32) -> Pred {
    if depth == 0 || rng.random_bool(0.35) {
        return random_leaf(rng, rel);
    }
    match rng.random_range(0..5) {
        0 | 1 => Pred::And(
            (0..rng.random_range(1..=4))
                .map(|_| random_pred(rng, rel, depth - 1))
                .collect(),
        ),
        2 | 3 => Pred::Or(
            (0..rng.random_range(1..=4))
                .map(|_| random_pred(rng, rel, depth - 1))
                .collect(),
        ),
        _ => Pred::Not(Box::new(random_pred(rng, rel, depth - 1))),
    }
}

fn random_scan(rng: &mut StdRng, rel: &Rel) -> ScanSpec {
    let natts = rel.spec.natts();
    let predicate = rng.random_bool(0.85).then(|| random_pred(rng, rel, 3));
    let outputs = (0..rng.random_range(0..=12usize.min(2 * natts)))
        .map(|_| rng.random_range(0..natts))
        .collect();
    ScanSpec {
        relation: rel.spec.clone(),
        predicate,
        outputs,
    }
}

// ----- Running both and comparing -----

/// Output buffers of one call (garbage-filled, identically for both makers).
struct Outs {
    data: Vec<Vec<u8>>,
    nulls: Vec<Vec<u8>>,
    sel: Vec<u32>,
}

impl Outs {
    fn new(spec: &ScanSpec, rows: usize, cap: usize) -> Outs {
        let rel = &spec.relation;
        Outs {
            data: spec
                .outputs
                .iter()
                .map(|&a| vec![0xA5; rows * rel.kind(a).out_width()])
                .collect(),
            nulls: spec.outputs.iter().map(|_| vec![0x5A; rows]).collect(),
            sel: vec![u32::MAX; cap],
        }
    }

    fn columns(&mut self, spec: &ScanSpec, skip: &[bool]) -> Vec<ColumnOut> {
        spec.outputs
            .iter()
            .enumerate()
            .map(|(k, &a)| {
                if skip.get(k).copied().unwrap_or(false) {
                    ColumnOut::SKIP
                } else {
                    ColumnOut {
                        data: self.data[k].as_mut_ptr(),
                        // NOT NULL columns get no NULL bytes: writing them would crash.
                        nulls: if spec.relation.nullable(a) {
                            self.nulls[k].as_mut_ptr()
                        } else {
                            std::ptr::null_mut()
                        },
                    }
                }
            })
            .collect()
    }
}

struct Call<'a> {
    spec: &'a ScanSpec,
    f: ScanFn,
    tuples: &'a [ByteRef],
    row0: usize,
    cap: usize,
    var_limit: u64,
    skip: &'a [bool],
}

/// Runs one call of both makers and compares everything; returns (consumed, produced).
fn run_both(c: &Call<'_>, ctx: &str) -> (usize, usize) {
    let rows = c.row0 + c.cap;
    let mut go = Outs::new(c.spec, rows, c.cap);
    let mut co = Outs::new(c.spec, rows, c.cap);
    let gcols = go.columns(c.spec, c.skip);
    let ccols = co.columns(c.spec, c.skip);
    let args = |cols: &[ColumnOut], sel: &mut Vec<u32>| RunArgs {
        tuples: c.tuples.as_ptr(),
        n: c.tuples.len() as u64,
        outs: cols.as_ptr(),
        row0: c.row0 as u64,
        cap: c.cap as u64,
        sel: sel.as_mut_ptr(),
        var_limit: c.var_limit,
        produced: u64::MAX,
    };
    let mut io = Outs::new(c.spec, rows, c.cap);
    let icols = io.columns(c.spec, c.skip);
    let mut ga = args(&gcols, &mut go.sel);
    let mut ca = args(&ccols, &mut co.sel);
    let mut ia = args(&icols, &mut io.sel);
    let inst = instantiated::Scan::new(c.spec);
    // SAFETY: buffers sized for row0 + cap rows and cap sel entries.
    let gc = unsafe { generic::run(c.spec, &mut ga) } as usize;
    let cc = unsafe { (c.f)(&mut ca) } as usize;
    let ic = unsafe { inst.run(&mut ia) } as usize;
    let gp = ga.produced as usize;
    for (maker, consumed, produced, out) in [
        ("compiled", cc, ca.produced as usize, &co),
        ("instantiated", ic, ia.produced as usize, &io),
    ] {
        assert_eq!(
            (consumed, produced),
            (gc, gp),
            "{ctx}: (consumed, produced) {maker} vs generic"
        );
        assert_eq!(out.sel, go.sel, "{ctx}: {maker} sel");
        // Row row0 + produced of a call that fell back is unspecified (a partly
        // written row).
        let partial = (gp < c.cap).then_some(c.row0 + gp);
        for (k, &a) in c.spec.outputs.iter().enumerate() {
            let w = c.spec.relation.kind(a).out_width();
            for row in 0..rows {
                if Some(row) == partial {
                    continue;
                }
                assert_eq!(
                    out.data[k][row * w..(row + 1) * w],
                    go.data[k][row * w..(row + 1) * w],
                    "{ctx}: {maker} output {k} (attribute {a}, {:?}) row {row}",
                    c.spec.relation.kind(a)
                );
                assert_eq!(
                    out.nulls[k][row], go.nulls[k][row],
                    "{ctx}: {maker} NULL byte of output {k} row {row}"
                );
            }
        }
    }
    STATS.with(|s| {
        let mut s = s.borrow_mut();
        s.calls += 1;
        s.rows += gp;
        s.dropped += gc - gp;
        match Progress::classify(c.tuples.len(), gc, gp, c.cap).stop {
            Stop::Done => s.done += 1,
            Stop::Full => s.full += 1,
            Stop::Fallback => s.fallback += 1,
        }
    });
    (gc, gp)
}

/// What the calls of one test saw (to check the tests cover every outcome).
#[derive(Default, Debug)]
struct Stats {
    calls: usize,
    rows: usize,
    dropped: usize,
    done: usize,
    full: usize,
    fallback: usize,
}

thread_local! {
    static STATS: std::cell::RefCell<Stats> = std::cell::RefCell::default();
}

/// Checks the calls of this test (thread) so far produced rows, dropped tuples and
/// ended in every way.
fn assert_coverage(what: &str, with_predicates: bool) {
    STATS.with(|s| {
        let s = s.borrow();
        eprintln!("{what}: {s:?}");
        assert!(
            s.rows > 0
                && (s.dropped > 0 || !with_predicates)
                && s.done > 0
                && s.full > 0
                && s.fallback > 0,
            "{what}: calls did not cover every outcome: {s:?}"
        );
    });
}

fn refs(tuples: &[Vec<u8>]) -> Vec<ByteRef> {
    tuples.iter().map(|t| ByteRef::of(t)).collect()
}

fn random_cap(rng: &mut StdRng, n: usize) -> usize {
    match rng.random_range(0..6) {
        0 => 0,
        1 => 1,
        2 => rng.random_range(2..10),
        _ => n + rng.random_range(0..3),
    }
}

/// Calls both makers like a caller would: after a fallback, on from the next tuple;
/// after a full buffer, on from where it stopped.
fn drive(
    rng: &mut StdRng,
    spec: &ScanSpec,
    f: ScanFn,
    tuples: &[Vec<u8>],
    deform: bool,
    ctx: &str,
) {
    let refs = refs(tuples);
    let mut start = 0;
    for call in 0..12 {
        let rest = &refs[start..];
        let cap = random_cap(rng, rest.len());
        let skip: Vec<bool> = if deform {
            let p = [0.0, 0.3, 1.0][rng.random_range(0..3)];
            spec.outputs.iter().map(|_| rng.random_bool(p)).collect()
        } else {
            vec![]
        };
        let vcount = spec.relation.layout().variable_count() as u64;
        let var_limit = match rng.random_range(0..4) {
            0 => u64::MAX,
            1 => vcount,
            _ => rng.random_range(0..=vcount + 1),
        };
        let c = Call {
            spec,
            f,
            tuples: rest,
            row0: rng.random_range(0..3),
            cap,
            var_limit,
            skip: &skip,
        };
        let (consumed, produced) = run_both(&c, &format!("{ctx} call {call} from {start}"));
        if start + consumed >= refs.len() {
            break;
        }
        start += if produced == cap {
            consumed
        } else {
            consumed + 1
        };
    }
}

fn compile(spec: &ScanSpec) -> (CompiledCode, ScanFn) {
    compiled::compile_scan(jit(), spec).unwrap_or_else(|e| panic!("compile {spec:?}: {e}"))
}

// ----- Tests -----

#[test]
fn scans_of_random_relations() {
    for seed in 0..400u64 {
        let mut rng = StdRng::seed_from_u64(seed);
        let natts = if seed % 10 == 9 {
            rng.random_range(60..=100)
        } else {
            rng.random_range(1..=24)
        };
        let rel = random_rel(&mut rng, natts);
        let n = rng.random_range(0..=120);
        let tuples = random_tuples(&mut rng, &rel, n, 0.08, 0.03);
        for s in 0..4 {
            let spec = random_scan(&mut rng, &rel);
            let (_code, f) = compile(&spec);
            drive(
                &mut rng,
                &spec,
                f,
                &tuples,
                spec.is_deform(),
                &format!("seed {seed} spec {s} {spec:?}"),
            );
        }
    }
    assert_coverage("scans_of_random_relations", true);
}

#[test]
fn predicates_on_clean_data() {
    // Few corrupted tuples: the predicate decides most tuples.
    for seed in 1000..1300u64 {
        let mut rng = StdRng::seed_from_u64(seed);
        let natts = rng.random_range(1..=12);
        let rel = random_rel(&mut rng, natts);
        let tuples = random_tuples(&mut rng, &rel, 200, 0.0, 0.03);
        for s in 0..5 {
            let spec = random_scan(&mut rng, &rel);
            let (_code, f) = compile(&spec);
            let refs = refs(&tuples);
            let c = Call {
                spec: &spec,
                f,
                tuples: &refs,
                row0: 1,
                cap: 250,
                var_limit: 0,
                skip: &[],
            };
            run_both(&c, &format!("seed {seed} spec {s} {spec:?}"));
        }
    }
}

#[test]
fn deform_with_skips_and_var_limits() {
    for seed in 2000..2300u64 {
        let mut rng = StdRng::seed_from_u64(seed);
        let natts = if seed % 6 == 0 {
            rng.random_range(60..=110)
        } else {
            rng.random_range(1..=20)
        };
        let rel = random_rel(&mut rng, natts);
        let spec = ScanSpec::deform(rel.spec.clone());
        assert!(spec.is_deform());
        let (code, f) = compile(&spec);
        assert!(code.code_bytes > 0);
        let n = rng.random_range(0..=150);
        let tuples = random_tuples(&mut rng, &rel, n, 0.08, 0.03);
        for round in 0..3 {
            drive(
                &mut rng,
                &spec,
                f,
                &tuples,
                true,
                &format!("seed {seed} round {round} deform {:?}", rel.spec),
            );
        }
    }
    assert_coverage("deform_with_skips_and_var_limits", false);
}

#[test]
fn batch_size_and_cap_boundaries() {
    let mut rng = StdRng::seed_from_u64(300);
    let rel = random_rel(&mut rng, 9);
    let tuples = random_tuples(&mut rng, &rel, 1025, 0.0, 0.0);
    let refs = refs(&tuples);
    let specs = [
        ScanSpec::deform(rel.spec.clone()),
        ScanSpec {
            relation: rel.spec.clone(),
            predicate: None,
            outputs: vec![8, 0, 3, 3],
        },
        ScanSpec {
            relation: rel.spec.clone(),
            predicate: Some(random_pred(&mut rng, &rel, 2)),
            outputs: vec![1, 2, 5],
        },
    ];
    for spec in &specs {
        let (_code, f) = compile(spec);
        for n in [0usize, 1, 1023, 1024, 1025] {
            for cap in [0usize, 1, 7, 1023, n, n + 1] {
                let c = Call {
                    spec,
                    f,
                    tuples: &refs[..n],
                    row0: 3,
                    cap,
                    var_limit: u64::MAX,
                    skip: &[],
                };
                let (consumed, produced) = run_both(&c, &format!("n {n} cap {cap} {spec:?}"));
                assert!(produced <= cap && consumed <= n);
                if spec.predicate.is_none() {
                    assert_eq!(produced, cap.min(n), "clean tuples, no predicate");
                }
            }
        }
    }
}

#[test]
fn float_decimal_int_and_bool_edges() {
    // Every operator against every edge constant, on columns holding edge values.
    let kinds = [
        ValueKind::Float(4),
        ValueKind::Float(8),
        ValueKind::Decimal,
        ValueKind::Int(2),
        ValueKind::Int(4),
        ValueKind::Int(8),
        ValueKind::Bool,
    ];
    let mut rng = StdRng::seed_from_u64(400);
    let spec = relation(&kinds, &[true, false, true, false, true, false, true]);
    let rel = Rel {
        spec: spec.clone(),
        pools: kinds
            .iter()
            .map(|&k| (0..12).map(|_| fresh_value(&mut rng, k)).collect())
            .collect(),
    };
    let tuples = random_tuples(&mut rng, &rel, 300, 0.0, 0.03);
    let refs = refs(&tuples);
    for attr in 0..kinds.len() {
        for _ in 0..24 {
            let value = random_const(&mut rng, &rel, attr);
            for op in [
                CmpOp::Eq,
                CmpOp::Ne,
                CmpOp::Lt,
                CmpOp::Le,
                CmpOp::Gt,
                CmpOp::Ge,
            ] {
                let spec = ScanSpec {
                    relation: spec.clone(),
                    predicate: Some(Pred::Cmp {
                        attr,
                        op,
                        value: value.clone(),
                    }),
                    outputs: vec![attr],
                };
                let (_code, f) = compile(&spec);
                let c = Call {
                    spec: &spec,
                    f,
                    tuples: &refs,
                    row0: 0,
                    cap: 400,
                    var_limit: 0,
                    skip: &[],
                };
                run_both(&c, &format!("{spec:?}"));
            }
        }
    }
}

#[test]
fn string_comparisons_prefixes_and_in_lists() {
    let mut rng = StdRng::seed_from_u64(500);
    let kinds = [ValueKind::Bytes, ValueKind::Int(4), ValueKind::Bytes];
    let spec = relation(&kinds, &[true, false, false]);
    // Values around the inline limit (16) and the prefix forms (253/254).
    let mut pool: Vec<V> = [0usize, 1, 2, 7, 8, 9, 15, 16, 17, 24, 253, 254, 300]
        .iter()
        .map(|&l| V::Var((0..l).map(|i| b"ab"[(i * 7 / 5) % 2]).collect()))
        .collect();
    pool.push(V::Var(vec![0xFF; 5]));
    let rel = Rel {
        spec: spec.clone(),
        pools: vec![pool.clone(), vec![V::Fixed(vec![1, 0, 0, 0])], pool],
    };
    let tuples = random_tuples(&mut rng, &rel, 300, 0.0, 0.03);
    let refs = refs(&tuples);
    for round in 0..60 {
        let attr = [0, 2][round % 2];
        let k = match random_const(&mut rng, &rel, attr) {
            Const::Bytes(b) => b,
            _ => unreachable!(),
        };
        let mut preds: Vec<Pred> = [
            CmpOp::Eq,
            CmpOp::Ne,
            CmpOp::Lt,
            CmpOp::Le,
            CmpOp::Gt,
            CmpOp::Ge,
        ]
        .into_iter()
        .map(|op| Pred::Cmp {
            attr,
            op,
            value: Const::Bytes(k.clone()),
        })
        .collect();
        preds.push(Pred::Prefix {
            attr,
            prefix: k.clone(),
        });
        preds.push(Pred::InList {
            attr,
            values: vec![Const::Bytes(k.clone()), random_const(&mut rng, &rel, attr)],
        });
        // A list long enough for the set probe.
        let mut long = vec![Const::Bytes(k.clone())];
        long.extend((0..20).map(|_| random_const(&mut rng, &rel, attr)));
        preds.push(Pred::InList { attr, values: long });
        for p in preds {
            let spec = ScanSpec {
                relation: spec.clone(),
                predicate: Some(p),
                outputs: vec![2, 0, 1],
            };
            let (_code, f) = compile(&spec);
            let c = Call {
                spec: &spec,
                f,
                tuples: &refs,
                row0: 0,
                cap: 300,
                var_limit: 0,
                skip: &[],
            };
            run_both(&c, &format!("round {round} {spec:?}"));
        }
    }
}

#[test]
fn out_of_line_values_fall_back_only_when_read() {
    let kinds = [
        ValueKind::Bytes,
        ValueKind::Bytes,
        ValueKind::Int(8),
        ValueKind::Bytes,
    ];
    let spec = relation(&kinds, &[true, true, false, true]);
    let v = |s: &str| V::Var(s.as_bytes().to_vec());
    let row = |a: V, b: V, d: V| encode(&spec, &[a, b, V::Fixed(7i64.to_le_bytes().to_vec()), d]);
    let tuples = vec![
        row(v("x"), v("y"), v("z")),
        row(V::Ext(10, 3), v("y"), v("z")), // attribute 0 out of line
        row(v("x"), V::Ext(10, 3), v("z")), // attribute 1 out of line
        row(v("x"), v("y"), V::Ext(10, 3)), // attribute 3 out of line
        row(V::Null, v("y"), V::Null),
    ];
    let refs = refs(&tuples);
    let cases: Vec<(Option<Pred>, Vec<usize>)> = vec![
        (None, vec![2]),
        (None, vec![0]),
        (None, vec![3]),
        (Some(Pred::IsNull { attr: 1 }), vec![2]),
        (
            Some(Pred::Or(vec![
                Pred::Cmp {
                    attr: 2,
                    op: CmpOp::Eq,
                    value: Const::Int(7),
                },
                Pred::Prefix {
                    attr: 1,
                    prefix: b"y".to_vec(),
                },
            ])),
            vec![0],
        ),
        (
            Some(Pred::Cmp {
                attr: 1,
                op: CmpOp::Eq,
                value: Const::Bytes(b"y".to_vec()),
            }),
            vec![0, 3],
        ),
        (
            Some(Pred::Cmp {
                attr: 1,
                op: CmpOp::Ne,
                value: Const::Bytes(b"y".to_vec()),
            }),
            vec![0],
        ),
    ];
    for (predicate, outputs) in cases {
        let spec = ScanSpec {
            relation: spec.clone(),
            predicate,
            outputs,
        };
        let (_code, f) = compile(&spec);
        for start in 0..refs.len() {
            let c = Call {
                spec: &spec,
                f,
                tuples: &refs[start..],
                row0: 0,
                cap: 10,
                var_limit: 0,
                skip: &[],
            };
            run_both(&c, &format!("from {start} {spec:?}"));
        }
    }
    // Deform: an out-of-line value falls back only if its column is wanted and walked.
    let spec = ScanSpec::deform(spec.clone());
    let (_code, f) = compile(&spec);
    for skip in [
        vec![false; 4],
        vec![true, false, false, false],
        vec![false, true, false, true],
    ] {
        for var_limit in 0..=3 {
            let c = Call {
                spec: &spec,
                f,
                tuples: &refs,
                row0: 0,
                cap: 10,
                var_limit,
                skip: &skip,
            };
            run_both(&c, &format!("deform skip {skip:?} var_limit {var_limit}"));
        }
    }
}

#[test]
fn relations_without_attributes_or_variable_region() {
    let empty = relation(&[], &[]);
    let t = encode(&empty, &[]);
    let tuples = vec![t.clone(), t.clone(), vec![0, 0, 1, 0], t];
    let refs = refs(&tuples);
    let spec = ScanSpec::deform(empty.clone());
    let (_code, f) = compile(&spec);
    let c = Call {
        spec: &spec,
        f,
        tuples: &refs,
        row0: 0,
        cap: 10,
        var_limit: 5,
        skip: &[],
    };
    assert_eq!(run_both(&c, "empty relation"), (2, 2));
    let (_code, f) = compiled::compile_form(jit(), &empty).unwrap();
    let mut rng = StdRng::seed_from_u64(1);
    form_case(&mut rng, &empty, f, "empty relation");
}

#[test]
fn invalid_specs_are_refused() {
    let rel = relation(&[ValueKind::Int(4), ValueKind::Raw(8)], &[false, true]);
    let bad = [
        ScanSpec {
            relation: rel.clone(),
            predicate: None,
            outputs: vec![2],
        },
        ScanSpec {
            relation: rel.clone(),
            predicate: Some(Pred::Cmp {
                attr: 1,
                op: CmpOp::Eq,
                value: Const::Int(1),
            }),
            outputs: vec![],
        },
        ScanSpec {
            relation: rel.clone(),
            predicate: Some(Pred::And(vec![])),
            outputs: vec![],
        },
        ScanSpec {
            relation: rel.clone(),
            predicate: Some(Pred::Prefix {
                attr: 0,
                prefix: vec![],
            }),
            outputs: vec![],
        },
    ];
    for spec in &bad {
        assert!(compiled::compile_scan(jit(), spec).is_err(), "{spec:?}");
    }
}

#[test]
fn very_wide_relation() {
    let mut rng = StdRng::seed_from_u64(800);
    let rel = random_rel(&mut rng, 300);
    let tuples = random_tuples(&mut rng, &rel, 60, 0.1, 0.05);
    let deform = ScanSpec::deform(rel.spec.clone());
    let (_code, f) = compile(&deform);
    for round in 0..4 {
        drive(
            &mut rng,
            &deform,
            f,
            &tuples,
            true,
            &format!("wide deform round {round}"),
        );
    }
    for s in 0..4 {
        let spec = random_scan(&mut rng, &rel);
        let (_code, f) = compile(&spec);
        drive(
            &mut rng,
            &spec,
            f,
            &tuples,
            false,
            &format!("wide scan {s} {spec:?}"),
        );
    }
    let (_code, f) = compiled::compile_form(jit(), &rel.spec).unwrap();
    for case in 0..4 {
        form_case(&mut rng, &rel.spec, f, &format!("wide form case {case}"));
    }
}

#[test]
fn one_bee_runs_on_many_threads() {
    let mut rng = StdRng::seed_from_u64(900);
    let rel = random_rel(&mut rng, 12);
    let tuples = random_tuples(&mut rng, &rel, 500, 0.02, 0.02);
    let spec = random_scan(&mut rng, &rel);
    let (code, f) = compile(&spec);
    let code = Arc::new(code);
    std::thread::scope(|s| {
        for t in 0..4u64 {
            let (spec, tuples, _code) = (&spec, &tuples, code.clone());
            s.spawn(move || {
                let mut rng = StdRng::seed_from_u64(t);
                for r in 0..20 {
                    drive(
                        &mut rng,
                        spec,
                        f,
                        tuples,
                        false,
                        &format!("thread {t} round {r}"),
                    );
                }
            });
        }
    });
}

// ----- Form bees -----

/// One form call on random rows of `rel` (in slot format), both makers, compared.
fn form_case(rng: &mut StdRng, rel: &RelationSpec, f: FormFn, ctx: &str) {
    let natts = rel.natts();
    let n = [0usize, 1, 2, 5, 40, 200][rng.random_range(0..6)];
    let row0 = rng.random_range(0..3);
    let rows = row0 + n;
    let null_p = [0.0, 0.2, 0.7][rng.random_range(0..3)];
    // Values of Bytes inputs live here.
    let mut store: Vec<Vec<u8>> = Vec::new();
    let mut data: Vec<Vec<u8>> = Vec::new();
    let mut nulls: Vec<Vec<u8>> = Vec::new();
    let mut cells: Vec<Vec<(bool, Vec<u8>)>> = Vec::new();
    for a in 0..natts {
        let kind = rel.kind(a);
        let col: Vec<(bool, Vec<u8>)> = (0..rows)
            .map(|_| {
                let null = rel.nullable(a) && rng.random_bool(null_p);
                let v = match fresh_value(rng, kind) {
                    V::Fixed(b) => b,
                    V::Var(b) => b,
                    _ => unreachable!(),
                };
                (null, v)
            })
            .collect();
        cells.push(col);
    }
    for (a, col) in cells.iter().enumerate() {
        let kind = rel.kind(a);
        let w = kind.out_width();
        let mut d = vec![0u8; rows * w];
        let mut nb = vec![0u8; rows];
        for (r, (null, v)) in col.iter().enumerate() {
            nb[r] = if *null { [1u8, 7, 0xFF][r % 3] } else { 0 };
            let slot = &mut d[r * w..(r + 1) * w];
            if kind == ValueKind::Bytes {
                let br = if *null {
                    // Never read: garbage that would crash or overflow if it were.
                    ByteRef {
                        ptr: 16 as *const u8,
                        len: usize::MAX - r,
                    }
                } else {
                    store.push(v.clone());
                    let s = store.last().unwrap();
                    ByteRef {
                        ptr: if s.is_empty() && r % 2 == 0 {
                            std::ptr::null()
                        } else {
                            s.as_ptr()
                        },
                        len: s.len(),
                    }
                };
                slot[..8].copy_from_slice(&(br.ptr as usize).to_le_bytes());
                slot[8..].copy_from_slice(&br.len.to_le_bytes());
            } else if *null {
                slot.iter_mut().for_each(|b| *b = rng.random());
            } else {
                slot.copy_from_slice(v);
            }
        }
        data.push(d);
        nulls.push(nb);
    }
    let ins: Vec<ColumnOut> = (0..natts)
        .map(|a| ColumnOut {
            data: data[a].as_mut_ptr(),
            nulls: if rel.nullable(a) {
                nulls[a].as_mut_ptr()
            } else {
                std::ptr::null_mut()
            },
        })
        .collect();
    let full: usize = (0..n)
        .map(|r| {
            let vals: Vec<AttrValue<'_>> = (0..natts)
                .map(|a| match &cells[a][row0 + r] {
                    (true, _) => AttrValue::Null,
                    (false, v) if rel.kind(a) == ValueKind::Bytes => AttrValue::Variable(v),
                    (false, v) => AttrValue::Fixed(v),
                })
                .collect();
            rel.layout().encoded_len(&vals).unwrap().next_multiple_of(8)
        })
        .sum();
    let buf_cap = match rng.random_range(0..3) {
        0 => full + 8,
        1 => rng.random_range(0..=full + 8),
        _ => full / 2,
    };
    let max_tuple = [u64::MAX, 8192, 600, 64][rng.random_range(0..4)];
    let mut gbuf = vec![0xC3u8; buf_cap];
    let mut cbuf = gbuf.clone();
    let mut gends = vec![0xEEEE_EEEEu64; n];
    let mut cends = gends.clone();
    let args = |buf: &mut Vec<u8>, ends: &mut Vec<u64>| FormArgs {
        ins: ins.as_ptr(),
        row0: row0 as u64,
        n: n as u64,
        buf: buf.as_mut_ptr(),
        buf_cap: buf_cap as u64,
        ends: ends.as_mut_ptr(),
        max_tuple,
    };
    let mut ibuf = gbuf.clone();
    let mut iends = gends.clone();
    let mut ga = args(&mut gbuf, &mut gends);
    let mut ca = args(&mut cbuf, &mut cends);
    let mut ia = args(&mut ibuf, &mut iends);
    // SAFETY: inputs hold row0 + n rows, buf buf_cap bytes, ends n entries.
    let g = unsafe { generic::form(rel, &mut ga) };
    let c = unsafe { f(&mut ca) };
    let i = unsafe { instantiated::Form::new(rel).run(&mut ia) };
    assert_eq!(
        c, g,
        "{ctx}: rows formed (n {n}, buf_cap {buf_cap}, max_tuple {max_tuple})"
    );
    assert_eq!(i, g, "{ctx}: rows formed by the instantiated bee");
    assert_eq!(iends, gends, "{ctx}: instantiated ends");
    if ibuf != gbuf {
        let at = ibuf.iter().zip(&gbuf).position(|(x, y)| x != y).unwrap();
        panic!("{ctx}: instantiated buffer differs at byte {at} (ends {gends:?})");
    }
    FORM_STATS.with(|s| {
        let (rows, stopped, complete) = s.get();
        let early = g < n as u64;
        s.set((
            rows + g as usize,
            stopped + early as usize,
            complete + !early as usize,
        ));
    });
    assert_eq!(cends, gends, "{ctx}: ends");
    if cbuf != gbuf {
        let at = cbuf.iter().zip(&gbuf).position(|(x, y)| x != y).unwrap();
        panic!("{ctx}: buffers differ at byte {at} (ends {gends:?})");
    }
}

thread_local! {
    /// Rows formed, calls that stopped early, calls that formed every row.
    static FORM_STATS: std::cell::Cell<(usize, usize, usize)> = const { std::cell::Cell::new((0, 0, 0)) };
}

#[test]
fn form_matches_the_generic_encoder() {
    for seed in 3000..3400u64 {
        let mut rng = StdRng::seed_from_u64(seed);
        let natts = if seed % 10 == 0 {
            rng.random_range(60..=110)
        } else {
            rng.random_range(1..=20)
        };
        let rel = random_rel(&mut rng, natts);
        let (code, f) = compiled::compile_form(jit(), &rel.spec).unwrap();
        assert!(code.code_bytes > 0);
        for case in 0..4 {
            form_case(
                &mut rng,
                &rel.spec,
                f,
                &format!("seed {seed} case {case} {:?}", rel.spec),
            );
        }
    }
    let (rows, stopped, complete) = FORM_STATS.get();
    eprintln!("form: {rows} rows formed, {stopped} calls stopped early, {complete} complete");
    assert!(rows > 0 && stopped > 0 && complete > 0);
}

#[test]
fn form_refuses_values_over_4_gib() {
    // Storage's encoder refuses a value longer than u32::MAX; the bee stops before
    // the row, without reading the value.
    let rel = relation(&[ValueKind::Int(4), ValueKind::Bytes], &[false, true]);
    let (_code, f) = compiled::compile_form(jit(), &rel).unwrap();
    let ints = [5i32, 6, 7];
    let small = b"hello";
    let refs = [
        ByteRef::of(small),
        ByteRef {
            ptr: 16 as *const u8,
            len: 1 << 32,
        },
        ByteRef::of(small),
    ];
    let nulls = [0u8; 3];
    let ins = [
        ColumnOut {
            data: ints.as_ptr() as *mut u8,
            nulls: std::ptr::null_mut(),
        },
        ColumnOut {
            data: refs.as_ptr() as *mut u8,
            nulls: nulls.as_ptr() as *mut u8,
        },
    ];
    let mut buf = vec![0u8; 256];
    let mut ends = [0u64; 3];
    let mut args = FormArgs {
        ins: ins.as_ptr(),
        row0: 0,
        n: 3,
        buf: buf.as_mut_ptr(),
        // Claims room for the long value: only its length may stop the bee.
        buf_cap: u64::MAX,
        ends: ends.as_mut_ptr(),
        max_tuple: u64::MAX,
    };
    // SAFETY: the bee stops before row 1 (the only one that would not fit in buf).
    let formed = unsafe { f(&mut args) };
    assert_eq!(formed, 1);
    let t = rel
        .layout()
        .encode(&[
            AttrValue::Fixed(&5i32.to_le_bytes()),
            AttrValue::Variable(small),
        ])
        .unwrap();
    assert_eq!(ends[0] as usize, t.len());
    assert_eq!(&buf[..t.len()], &t[..]);
}

#[test]
fn formed_tuples_scan_back() {
    // Round trip: form with the compiled bee, deform with the compiled bee.
    let mut rng = StdRng::seed_from_u64(700);
    // (No Bool: a deform normalizes stored bytes like 2 to 1.)
    let kinds = [
        ValueKind::Bytes,
        ValueKind::Int(8),
        ValueKind::Float(8),
        ValueKind::Bytes,
        ValueKind::Decimal,
    ];
    let spec = relation(&kinds, &[true, false, true, false, true]);
    let (_fc, form) = compiled::compile_form(jit(), &spec).unwrap();
    let deform = ScanSpec::deform(spec.clone());
    let (_dc, scan) = compile(&deform);
    let rel = Rel {
        spec: spec.clone(),
        pools: kinds
            .iter()
            .map(|&k| vec![fresh_value(&mut rng, k)])
            .collect(),
    };
    let tuples = random_tuples(&mut rng, &rel, 50, 0.0, 0.03);
    // Re-form each tuple from its deformed values and compare bytes.
    let refs = refs(&tuples);
    let mut outs = Outs::new(&deform, 50, 50);
    let cols = outs.columns(&deform, &[]);
    let mut ra = RunArgs {
        tuples: refs.as_ptr(),
        n: 50,
        outs: cols.as_ptr(),
        row0: 0,
        cap: 50,
        sel: outs.sel.as_mut_ptr(),
        var_limit: u64::MAX,
        produced: 0,
    };
    // SAFETY: sized for 50 rows.
    let consumed = unsafe { scan(&mut ra) };
    // Tuples with out-of-line values fall back; form what was produced.
    let produced = ra.produced as usize;
    assert!(consumed as usize >= produced);
    let mut buf = vec![0x77u8; 64 * 1024];
    let mut ends = vec![0u64; produced];
    let mut fa = FormArgs {
        ins: cols.as_ptr(),
        row0: 0,
        n: produced as u64,
        buf: buf.as_mut_ptr(),
        buf_cap: buf.len() as u64,
        ends: ends.as_mut_ptr(),
        max_tuple: u64::MAX,
    };
    // SAFETY: inputs are the 50-row deform outputs.
    let formed = unsafe { form(&mut fa) } as usize;
    assert_eq!(formed, produced);
    let mut start = 0usize;
    for (&end, &idx) in ends.iter().zip(&outs.sel[..produced]) {
        let s = start.next_multiple_of(8);
        let (end, idx) = (end as usize, idx as usize);
        assert_eq!(&buf[s..end], &tuples[idx][..], "tuple {idx}");
        start = end;
    }
}

// ----- Cost (run with `--release -- --ignored --nocapture`) -----

fn min_median(mut v: Vec<f64>) -> (f64, f64) {
    v.sort_by(f64::total_cmp);
    (v[0], v[v.len() / 2])
}

/// Compile times per bee, code sizes, and ns per tuple against the generic twin.
#[test]
#[ignore]
fn compile_cost() {
    use std::time::Instant;
    let jit = Jit::new(false).unwrap();
    let kinds = [
        ValueKind::Int(4),
        ValueKind::Int(8),
        ValueKind::Bytes,
        ValueKind::Decimal,
        ValueKind::Float(8),
        ValueKind::Bool,
        ValueKind::Bytes,
        ValueKind::Int(2),
        ValueKind::Float(4),
    ];
    let spec = relation(
        &kinds,
        &[false, false, false, true, false, false, true, false, true],
    );
    let deform = ScanSpec::deform(spec.clone());
    let scan = ScanSpec {
        relation: spec.clone(),
        predicate: Some(Pred::And(vec![
            Pred::Cmp {
                attr: 0,
                op: CmpOp::Le,
                value: Const::Int(45),
            },
            Pred::Cmp {
                attr: 2,
                op: CmpOp::Eq,
                value: Const::Bytes(b"F".to_vec()),
            },
            Pred::Cmp {
                attr: 4,
                op: CmpOp::Gt,
                value: Const::F64(1.5),
            },
        ])),
        outputs: vec![1, 3, 4],
    };
    let runs = 41;
    let report = |name: &str, f: &mut dyn FnMut() -> (CompiledCode, usize)| {
        let mut times = Vec::new();
        let mut bytes = 0;
        for _ in 0..runs {
            let (code, b) = f();
            times.push(code.compile_time.as_secs_f64() * 1e6);
            bytes = b;
        }
        let (min, med) = min_median(times);
        eprintln!("{name}: compile min {min:.0} µs, median {med:.0} µs, {bytes} bytes of code");
    };
    report("deform 9 columns", &mut || {
        let (c, _) = compiled::compile_scan(&jit, &deform).unwrap();
        let b = c.code_bytes;
        (c, b)
    });
    report("scan, 3-leaf predicate, 3 outputs", &mut || {
        let (c, _) = compiled::compile_scan(&jit, &scan).unwrap();
        let b = c.code_bytes;
        (c, b)
    });
    report("form 9 columns", &mut || {
        let (c, _) = compiled::compile_form(&jit, &spec).unwrap();
        let b = c.code_bytes;
        (c, b)
    });

    // Run time on 100K tuples, cache-resident batches of 1024.
    let mut rng = StdRng::seed_from_u64(9);
    let rel = Rel {
        spec: spec.clone(),
        pools: kinds
            .iter()
            .map(|&k| match k {
                ValueKind::Bytes => vec![
                    V::Var(b"F".to_vec()),
                    V::Var(b"O".to_vec()),
                    V::Var(b"some text here".to_vec()),
                ],
                ValueKind::Int(w) => (0..90)
                    .map(|i| V::Fixed(int_bytes(i, w as usize)))
                    .collect(),
                k => (0..6).map(|_| fresh_value(&mut rng, k)).collect(),
            })
            .collect(),
    };
    let tuples = random_tuples(&mut rng, &rel, 1024, 0.0, 0.0);
    let refs = refs(&tuples);
    for (name, s) in [("deform", &deform), ("scan", &scan)] {
        let (_code, f) = compiled::compile_scan(&jit, s).unwrap();
        let mut outs = Outs::new(s, 1024, 1024);
        let cols = outs.columns(s, &[]);
        let mut time = |compiled: bool| {
            let mut best = f64::MAX;
            for _ in 0..15 {
                let t0 = Instant::now();
                for _ in 0..100 {
                    let mut a = RunArgs {
                        tuples: refs.as_ptr(),
                        n: 1024,
                        outs: cols.as_ptr(),
                        row0: 0,
                        cap: 1024,
                        sel: outs.sel.as_mut_ptr(),
                        var_limit: u64::MAX,
                        produced: 0,
                    };
                    // SAFETY: buffers sized for 1024 rows.
                    let c = unsafe {
                        if compiled {
                            f(&mut a)
                        } else {
                            generic::run(s, &mut a)
                        }
                    };
                    assert_eq!(c, 1024);
                }
                best = best.min(t0.elapsed().as_secs_f64() * 1e9 / (100.0 * 1024.0));
            }
            best
        };
        let g = time(false);
        let c = time(true);
        eprintln!(
            "{name}: generic {g:.1} ns/tuple, compiled {c:.1} ns/tuple ({:.1}x)",
            g / c
        );
    }
    // Form: the deformed rows back into tuples.
    let (_dcode, d) = compiled::compile_scan(&jit, &deform).unwrap();
    let (_fcode, f) = compiled::compile_form(&jit, &spec).unwrap();
    let mut outs = Outs::new(&deform, 1024, 1024);
    let cols = outs.columns(&deform, &[]);
    let mut a = RunArgs {
        tuples: refs.as_ptr(),
        n: 1024,
        outs: cols.as_ptr(),
        row0: 0,
        cap: 1024,
        sel: outs.sel.as_mut_ptr(),
        var_limit: u64::MAX,
        produced: 0,
    };
    // SAFETY: buffers sized for 1024 rows.
    assert_eq!(unsafe { d(&mut a) }, 1024);
    let mut buf = vec![0u8; 1 << 20];
    let mut ends = vec![0u64; 1024];
    let mut time = |compiled: bool| {
        let mut best = f64::MAX;
        for _ in 0..15 {
            let t0 = Instant::now();
            for _ in 0..100 {
                let mut fa = FormArgs {
                    ins: cols.as_ptr(),
                    row0: 0,
                    n: 1024,
                    buf: buf.as_mut_ptr(),
                    buf_cap: buf.len() as u64,
                    ends: ends.as_mut_ptr(),
                    max_tuple: u64::MAX,
                };
                // SAFETY: inputs hold 1024 rows; buf and ends are large enough.
                let k = unsafe {
                    if compiled {
                        f(&mut fa)
                    } else {
                        generic::form(&spec, &mut fa)
                    }
                };
                assert_eq!(k, 1024);
            }
            best = best.min(t0.elapsed().as_secs_f64() * 1e9 / (100.0 * 1024.0));
        }
        best
    };
    let g = time(false);
    let c = time(true);
    eprintln!(
        "form: generic {g:.1} ns/row, compiled {c:.1} ns/row ({:.1}x)",
        g / c
    );
}

/// A long IN list is a set probe in compiled code: the code is the same size for 10
/// members or 100,000 (so making the bee costs the same), the policy's predicted size
/// (`Pred::code_nodes`) does not grow, and the results match the generic twin.
#[test]
fn in_lists_of_10_to_100000_members_make_bees_of_one_size() {
    let mut rng = StdRng::seed_from_u64(1600);
    let kinds = [ValueKind::Int(4), ValueKind::Bytes, ValueKind::Float(8), ValueKind::Decimal];
    let spec = relation(&kinds, &[true, true, true, true]);
    let pools = kinds
        .iter()
        .map(|&k| (0..6).map(|_| fresh_value(&mut rng, k)).collect())
        .collect();
    let rel = Rel {
        spec: spec.clone(),
        pools,
    };
    let tuples = random_tuples(&mut rng, &rel, 200, 0.0, 0.0);
    let refs = refs(&tuples);
    for attr in 0..kinds.len() {
        let mut sizes = Vec::new();
        for n in [10usize, 100, 1_000, 10_000, 100_000] {
            let values: Vec<Const> = (0..n)
                .map(|i| match kinds[attr] {
                    ValueKind::Int(_) => Const::Int(i as i64 * 7 - 50),
                    ValueKind::Bytes => Const::Bytes(format!("member {i}").into_bytes()),
                    ValueKind::Float(_) => Const::F64(i as f64 / 4.0 - 3.0),
                    _ => Const::I128(i as i128 * 1000 - 2000),
                })
                .chain((0..5).map(|_| random_const(&mut rng, &rel, attr)))
                .collect();
            let pred = Pred::InList { attr, values };
            assert_eq!(pred.code_nodes(), 2, "the predicted size does not grow with the list");
            let spec = ScanSpec {
                relation: spec.clone(),
                predicate: Some(pred),
                outputs: vec![0, 1, 2, 3],
            };
            let (code, f) = compile(&spec);
            sizes.push(code.code_bytes);
            let c = Call {
                spec: &spec,
                f,
                tuples: &refs,
                row0: 0,
                cap: 200,
                var_limit: 0,
                skip: &[],
            };
            run_both(&c, &format!("attr {attr}, {n} members"));
        }
        assert!(
            sizes.iter().all(|&s| s == sizes[0]),
            "attribute {attr}: code bytes by list length {sizes:?}"
        );
    }
}

/// Build time of IN-list bees (issue 16: a 10,000-string list took 103 s to compile,
/// 30,000 aborted). Both makers, lists of 10 and 100,000 members of each kind: the
/// per-member cost of making the 100,000-member bee is at most `K` times that of the
/// 10-member one — a ratio of times measured in the same run (the fastest of five
/// makes each), not a wall-clock bound.
///
/// Why `K` = 50: a build linear in its members has a ratio of about 1 or below (the
/// compiled maker's fixed code generation, ~0.75 ms, is spread over 10 members, so its
/// ratio is about 0.005). Measured on a loaded 2-core machine, the largest was 5.3
/// (instantiated, 30-byte strings, whose 10-member set takes under 1 µs: a set of
/// 100,000 strings leaves the caches, and its per-member cost grows from about 70 ns
/// at 1,000 members to 180–430 ns at 100,000 and 1.3 µs at 1M). A quadratic build, as
/// the unrolled code was, gives about 10,000 (its cost per member grows with the
/// list), and anything growing as n^1.5 or faster passes 50. So 50 leaves about 9×
/// headroom over the worst noise seen and still fails every such regression.
#[test]
fn in_list_bees_build_in_time_linear_in_their_members() {
    const K: f64 = 50.0;
    let kinds = [ValueKind::Int(4), ValueKind::Bytes, ValueKind::Float(8), ValueKind::Decimal];
    let spec = relation(&kinds, &[true, true, true, true]);
    for attr in 0..kinds.len() {
        let scan = |n: usize| ScanSpec {
            relation: spec.clone(),
            predicate: Some(Pred::InList {
                attr,
                values: (0..n)
                    .map(|i| match kinds[attr] {
                        ValueKind::Int(_) => Const::Int(i as i64 * 7 - 50),
                        ValueKind::Bytes => Const::Bytes(format!("member {i} of a longer string").into_bytes()),
                        ValueKind::Float(_) => Const::F64(i as f64 / 4.0 - 3.0),
                        _ => Const::I128(i as i128 * 1000 - 2000),
                    })
                    .collect(),
            }),
            outputs: vec![0, 1, 2, 3],
        };
        let specs = [scan(10), scan(100_000)];
        for maker in ["compiled", "instantiated"] {
            let secs: Vec<f64> = specs
                .iter()
                .map(|s| {
                    (0..5)
                        .map(|_| {
                            let t = std::time::Instant::now();
                            if maker == "compiled" {
                                std::hint::black_box(compile(s));
                            } else {
                                std::hint::black_box(instantiated::Scan::new(s));
                            }
                            t.elapsed().as_secs_f64()
                        })
                        .fold(f64::MAX, f64::min)
                })
                .collect();
            let ratio = (secs[1] / 100_000.0) / (secs[0] / 10.0);
            eprintln!("{maker}, attr {attr}: make 10 / 100,000 members: {secs:?} s; per-member ratio {ratio:.4}");
            assert!(
                ratio <= K,
                "{maker} bee, attr {attr}: a 100,000-member IN list costs {ratio:.1}x per member the 10-member one ({secs:?} s)"
            );
        }
    }
}
