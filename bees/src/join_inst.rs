//! The instantiated maker of join bees: the probe loop monomorphized over the key
//! width (`u64`, `u128`) and, for keys of one or two parts, over each part's column
//! type — one loop that reads the key columns, packs, hashes and probes per row,
//! with each part's mask and shift bound at make time. Keys of three or more parts
//! pack column at a time through a monomorphized packer per part, then probe.

use std::ops::{BitOr, Shl};

use crate::join::{JoinData, JoinInput, JoinKeySpec, JoinLoad, JoinTable, NO_ID, float_bits, hash64, hash128};

/// A packed key type.
pub(crate) trait Key: Copy + Eq + Default + Shl<u32, Output = Self> + BitOr<Output = Self> {
    fn from_u64(x: u64) -> Self;
    fn hash(self) -> u64;
    fn slots<'a>(t: &JoinTable<'a>) -> &'a [(Self, u32)];
}

impl Key for u64 {
    #[inline(always)]
    fn from_u64(x: u64) -> u64 {
        x
    }
    #[inline(always)]
    fn hash(self) -> u64 {
        hash64(self)
    }
    fn slots<'a>(t: &JoinTable<'a>) -> &'a [(u64, u32)] {
        match t {
            JoinTable::Narrow(s) => s,
            JoinTable::Wide(_) => &[],
        }
    }
}

impl Key for u128 {
    #[inline(always)]
    fn from_u64(x: u64) -> u128 {
        x as u128
    }
    #[inline(always)]
    fn hash(self) -> u64 {
        hash128(self)
    }
    fn slots<'a>(t: &JoinTable<'a>) -> &'a [(u128, u32)] {
        match t {
            JoinTable::Wide(s) => s,
            JoinTable::Narrow(_) => &[],
        }
    }
}

/// A key column's element type.
pub(crate) trait Load {
    type T: Copy;
    fn slice<'a>(d: &JoinData<'a>) -> &'a [Self::T];
    fn bits(x: Self::T) -> u64;
}

macro_rules! load {
    ($name:ident, $t:ty, $variant:ident, |$x:ident| $bits:expr) => {
        pub(crate) struct $name;
        impl Load for $name {
            type T = $t;
            #[inline(always)]
            fn slice<'a>(d: &JoinData<'a>) -> &'a [$t] {
                match d {
                    JoinData::$variant(s) => s,
                    _ => &[],
                }
            }
            #[inline(always)]
            fn bits($x: $t) -> u64 {
                $bits
            }
        }
    };
}

load!(LBool, bool, Bool, |x| x as u64);
load!(LI16, i16, I16, |x| x as i64 as u64);
load!(LI32, i32, I32, |x| x as i64 as u64);
load!(LI64, i64, I64, |x| x as u64);
load!(LF32, f32, F32, |x| float_bits(x as f64));
load!(LF64, f64, F64, |x| float_bits(x));

/// A part's mask and shift, bound at make time.
#[derive(Clone, Copy)]
pub(crate) struct Bound {
    mask: u64,
    shift: u32,
}

type Kernel = fn(&[Bound], &[JoinInput<'_>], usize, JoinTable<'_>, &mut [u32]);

/// An instantiated join bee.
pub struct Probe {
    parts: Vec<Bound>,
    kernel: Kernel,
    /// For keys of three or more parts: a packer per part.
    packers: Vec<fn(Bound, &JoinInput<'_>, usize, &mut [u128])>,
}

#[inline(always)]
fn find<K: Key>(slots: &[(K, u32)], mask: usize, key: K) -> u32 {
    let mut i = key.hash() as usize & mask;
    loop {
        // SAFETY: `mask` is the slots' length − 1, a power of two (checked by the caller).
        let (k, id) = unsafe { *slots.get_unchecked(i) };
        if id == NO_ID || k == key {
            return id;
        }
        i = (i + 1) & mask;
    }
}

#[inline(always)]
fn is_null(nulls: Option<&[bool]>, k: usize) -> bool {
    // SAFETY: the caller checked every mask holds at least `n` rows, `k < n`.
    nulls.is_some_and(|m| unsafe { *m.get_unchecked(k) })
}

fn probe1<K: Key, L0: Load>(parts: &[Bound], cols: &[JoinInput<'_>], n: usize, table: JoinTable<'_>, ids: &mut [u32]) {
    let slots = K::slots(&table);
    let mask = slots.len() - 1;
    let b0 = parts[0];
    let d0 = &L0::slice(&cols[0].data)[..n];
    let n0 = cols[0].nulls;
    let (mut last_key, mut last_id) = (K::default(), NO_ID);
    for (k, (&x, id)) in d0.iter().zip(ids[..n].iter_mut()).enumerate() {
        if is_null(n0, k) {
            *id = NO_ID;
            continue;
        }
        let key = K::from_u64(L0::bits(x) & b0.mask) << b0.shift;
        if last_id == NO_ID || key != last_key {
            last_id = find(slots, mask, key);
            last_key = key;
            // A key not in the table is looked up again next time (NO_ID is also
            // "no previous key"): the ids are the same either way.
        }
        *id = last_id;
    }
}

fn probe2<K: Key, L0: Load, L1: Load>(parts: &[Bound], cols: &[JoinInput<'_>], n: usize, table: JoinTable<'_>, ids: &mut [u32]) {
    let slots = K::slots(&table);
    let mask = slots.len() - 1;
    let (b0, b1) = (parts[0], parts[1]);
    let d0 = &L0::slice(&cols[0].data)[..n];
    let d1 = &L1::slice(&cols[1].data)[..n];
    let (n0, n1) = (cols[0].nulls, cols[1].nulls);
    let (mut last_key, mut last_id) = (K::default(), NO_ID);
    for k in 0..n {
        if is_null(n0, k) || is_null(n1, k) {
            ids[k] = NO_ID;
            continue;
        }
        let key = (K::from_u64(L0::bits(d0[k]) & b0.mask) << b0.shift) | (K::from_u64(L1::bits(d1[k]) & b1.mask) << b1.shift);
        if last_id == NO_ID || key != last_key {
            last_id = find(slots, mask, key);
            last_key = key;
        }
        ids[k] = last_id;
    }
}

fn pack_col<L: Load>(b: Bound, col: &JoinInput<'_>, n: usize, out: &mut [u128]) {
    let d = &L::slice(&col.data)[..n];
    for (o, &x) in out.iter_mut().zip(d) {
        *o |= ((L::bits(x) & b.mask) as u128) << b.shift;
    }
}

fn probe_n<K: Key>(packed: &[u128], cols: &[JoinInput<'_>], n: usize, table: JoinTable<'_>, ids: &mut [u32]) {
    let slots = K::slots(&table);
    let mask = slots.len() - 1;
    let any_nulls = cols.iter().any(|c| c.nulls.is_some());
    let (mut last_key, mut last_id) = (0u128, NO_ID);
    for k in 0..n {
        if any_nulls && cols.iter().any(|c| is_null(c.nulls, k)) {
            ids[k] = NO_ID;
            continue;
        }
        let p = packed[k];
        if last_id == NO_ID || p != last_key {
            last_id = find(slots, mask, from_u128::<K>(p));
            last_key = p;
        }
        ids[k] = last_id;
    }
}

#[inline(always)]
fn from_u128<K: Key>(p: u128) -> K {
    // A u64 key is the low half; a u128 key the whole.
    (K::from_u64((p >> 64) as u64) << 32 << 32) | K::from_u64(p as u64)
}

macro_rules! with_load {
    ($load:expr, $L:ident => $body:expr) => {
        match $load {
            JoinLoad::Bool => {
                type $L = LBool;
                $body
            }
            JoinLoad::I16 => {
                type $L = LI16;
                $body
            }
            JoinLoad::I32 => {
                type $L = LI32;
                $body
            }
            JoinLoad::I64 => {
                type $L = LI64;
                $body
            }
            JoinLoad::F32 => {
                type $L = LF32;
                $body
            }
            JoinLoad::F64 => {
                type $L = LF64;
                $body
            }
        }
    };
}

fn kernel<K: Key + 'static>(spec: &JoinKeySpec) -> Option<Kernel> {
    Some(match spec.parts.len() {
        1 => with_load!(spec.parts[0].load, A => probe1::<K, A> as Kernel),
        2 => with_load!(spec.parts[0].load, A => with_load!(spec.parts[1].load, B => probe2::<K, A, B> as Kernel)),
        _ => return None,
    })
}

impl Probe {
    /// The kernels for `spec` (checked by the caller).
    pub fn new(spec: &JoinKeySpec) -> Probe {
        let parts: Vec<Bound> = spec.parts.iter().map(|p| Bound { mask: p.slot.mask(), shift: p.offset }).collect();
        let kernel = if spec.wide { kernel::<u128>(spec) } else { kernel::<u64>(spec) };
        let packers = if kernel.is_some() {
            Vec::new()
        } else {
            spec.parts
                .iter()
                .map(|p| with_load!(p.load, A => pack_col::<A> as fn(Bound, &JoinInput<'_>, usize, &mut [u128])))
                .collect()
        };
        // Keys of three or more parts: packed column at a time, then probed.
        let kernel = kernel.unwrap_or(|_, _, _, _, _| unreachable!("wide kernels run through run()"));
        Probe { parts, kernel, packers }
    }

    /// Runs the bee (arguments checked against the spec; `ids` holds `n` entries).
    pub(crate) fn run(&self, cols: &[JoinInput<'_>], n: usize, table: JoinTable<'_>, ids: &mut [u32]) {
        if self.packers.is_empty() {
            return (self.kernel)(&self.parts, cols, n, table, ids);
        }
        let mut packed = vec![0u128; n];
        for ((pack, b), c) in self.packers.iter().zip(&self.parts).zip(cols) {
            pack(*b, c, n, &mut packed);
        }
        match table {
            JoinTable::Narrow(_) => probe_n::<u64>(&packed, cols, n, table, ids),
            JoinTable::Wide(_) => probe_n::<u128>(&packed, cols, n, table, ids),
        }
    }
}
