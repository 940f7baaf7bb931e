//! Join bees: a hash join's probe — reading each key column, packing the row's key,
//! hashing it and looking it up in the build's table — fused into one loop
//! specialized on the key columns' types.
//!
//! The bee module knows no SQL: a [`JoinKeySpec`] lists the key parts as the probe
//! side holds them ([`JoinLoad`]: the element type of its column) and how each is
//! packed into the build's key ([`JoinSlot`] at a bit offset), and whether packed keys
//! are `u64` or `u128`. The table is the build's: an open-addressing array of
//! `(packed key, id)` slots, a power of two long, at most half full, empty slots
//! holding [`NO_ID`] — the SQL engine's packed key table, which hashes with
//! [`hash64`] / [`hash128`] so that the bee and the engine agree.
//!
//! # Semantics (what every maker implements; [`probe_generic`] is the definition)
//!
//! For each row `k < n`:
//! - if any part's column is NULL at `k` (its NULL mask, when it has one), `ids[k] =
//!   NO_ID` (a NULL key never matches, whatever the join type);
//! - else the packed key is the OR over parts of `bits(value) << offset`, where `bits`
//!   is: `Bool` → 0 or 1; integers → the value sign-extended to 64 bits, masked to the
//!   slot's width; floats → the bits of the value as an f64, with every NaN as
//!   `0x7FF8_0000_0000_0000` and −0 as 0 (so NaN = NaN and −0 = 0, as grouping has it);
//! - `ids[k]` is the id of the slot holding that key, found by linear probing from
//!   `hash(key) & (len − 1)`, or `NO_ID` at the first empty slot.
//!
//! NULL bits of the engine's layout are never set in a probe key: rows with a NULL
//! are decided before packing, and a join's build table holds no NULL keys. The join
//! type needs nothing more of the bee: inner, outer, semi and anti joins all read the
//! ids (the caller marks matched build rows of right and full joins after checking
//! the residual condition on each pair).
//!
//! A maker may look a run of equal keys up once (rows stored in key order): the ids
//! are the same.

use std::fmt;
use std::sync::Arc;
use std::time::Instant;

use crate::bee::{BeeInfo, BeeKind, Maker};
use crate::cache::BeeOwner;
use crate::compiled::Jit;

/// The id of "no match".
pub const NO_ID: u32 = u32::MAX;

/// The element type of a probe key column.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum JoinLoad {
    Bool,
    I16,
    I32,
    I64,
    F32,
    F64,
}

/// How a key part is packed into the build's key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum JoinSlot {
    /// One bit.
    Bool,
    /// A two's complement integer of this many bytes (2, 4 or 8).
    Int(u8),
    /// 64 bits of an f64, NaN and −0 normalized.
    Float,
}

impl JoinSlot {
    pub fn bits(self) -> u32 {
        match self {
            JoinSlot::Bool => 1,
            JoinSlot::Int(b) => b as u32 * 8,
            JoinSlot::Float => 64,
        }
    }

    /// The mask of the slot's bits (before shifting).
    pub fn mask(self) -> u64 {
        match self {
            JoinSlot::Int(b) if b < 8 => (1u64 << (b as u32 * 8)) - 1,
            JoinSlot::Bool => 1,
            _ => u64::MAX,
        }
    }
}

/// One key part: the probe column's type, its slot, and the slot's bit offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct JoinKeyPart {
    pub load: JoinLoad,
    pub slot: JoinSlot,
    pub offset: u32,
}

/// What a join bee is specialized for.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct JoinKeySpec {
    pub parts: Vec<JoinKeyPart>,
    /// Packed keys are `u128` (else `u64`).
    pub wide: bool,
}

impl JoinKeySpec {
    /// Checks the spec: 1 to 8 parts, each load fitting its slot (an integer no wider
    /// than the slot, a float in a float slot, a bool in a bool slot), every slot
    /// inside the key's width.
    pub fn check(&self) -> Result<(), String> {
        if self.parts.is_empty() || self.parts.len() > 8 {
            return Err(format!("a join key of {} parts", self.parts.len()));
        }
        let width = if self.wide { 128 } else { 64 };
        for p in &self.parts {
            let ok = match (p.load, p.slot) {
                (JoinLoad::Bool, JoinSlot::Bool) => true,
                (JoinLoad::I16, JoinSlot::Int(2 | 4 | 8)) => true,
                (JoinLoad::I32, JoinSlot::Int(4 | 8)) => true,
                (JoinLoad::I64, JoinSlot::Int(8)) => true,
                (JoinLoad::F32 | JoinLoad::F64, JoinSlot::Float) => true,
                _ => false,
            };
            if !ok {
                return Err(format!("a {:?} key column in a {:?} slot", p.load, p.slot));
            }
            if p.offset + p.slot.bits() > width {
                return Err(format!("a {:?} slot at bit {} of a {width}-bit key", p.slot, p.offset));
            }
        }
        Ok(())
    }

    /// A text key for caches.
    pub fn key(&self) -> String {
        let parts: Vec<String> = self.parts.iter().map(|p| format!("{:?}:{:?}@{}", p.load, p.slot, p.offset)).collect();
        format!("join{}[{}]", if self.wide { 128 } else { 64 }, parts.join(","))
    }
}

/// Murmur3's 64-bit finalizer: every input bit affects every output bit.
#[inline(always)]
pub fn mix64(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^ (x >> 33)
}

/// The hash of a `u64` packed key.
#[inline(always)]
pub fn hash64(k: u64) -> u64 {
    mix64(k)
}

/// The hash of a `u128` packed key.
#[inline(always)]
pub fn hash128(k: u128) -> u64 {
    mix64((k as u64) ^ mix64((k >> 64) as u64).rotate_left(17))
}

/// An f64's bits with NaN and −0 normalized.
#[inline(always)]
pub fn float_bits(f: f64) -> u64 {
    if f.is_nan() {
        0x7FF8_0000_0000_0000
    } else if f == 0.0 {
        0
    } else {
        f.to_bits()
    }
}

/// A probe key column's values.
#[derive(Clone, Copy, Debug)]
pub enum JoinData<'a> {
    Bool(&'a [bool]),
    I16(&'a [i16]),
    I32(&'a [i32]),
    I64(&'a [i64]),
    F32(&'a [f32]),
    F64(&'a [f64]),
}

impl JoinData<'_> {
    pub fn load(&self) -> JoinLoad {
        match self {
            JoinData::Bool(_) => JoinLoad::Bool,
            JoinData::I16(_) => JoinLoad::I16,
            JoinData::I32(_) => JoinLoad::I32,
            JoinData::I64(_) => JoinLoad::I64,
            JoinData::F32(_) => JoinLoad::F32,
            JoinData::F64(_) => JoinLoad::F64,
        }
    }

    pub fn len(&self) -> usize {
        match self {
            JoinData::Bool(d) => d.len(),
            JoinData::I16(d) => d.len(),
            JoinData::I32(d) => d.len(),
            JoinData::I64(d) => d.len(),
            JoinData::F32(d) => d.len(),
            JoinData::F64(d) => d.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Row `k`'s bits before masking (see the module's semantics).
    #[inline]
    pub fn bits(&self, k: usize) -> u64 {
        match self {
            JoinData::Bool(d) => d[k] as u64,
            JoinData::I16(d) => d[k] as i64 as u64,
            JoinData::I32(d) => d[k] as i64 as u64,
            JoinData::I64(d) => d[k] as u64,
            JoinData::F32(d) => float_bits(d[k] as f64),
            JoinData::F64(d) => float_bits(d[k]),
        }
    }
}

/// One probe key column: its values and, when some row may be NULL, a flag per row.
#[derive(Clone, Copy, Debug)]
pub struct JoinInput<'a> {
    pub data: JoinData<'a>,
    pub nulls: Option<&'a [bool]>,
}

/// The build's table: `(packed key, id)` slots.
#[derive(Clone, Copy, Debug)]
pub enum JoinTable<'a> {
    Narrow(&'a [(u64, u32)]),
    Wide(&'a [(u128, u32)]),
}

impl JoinTable<'_> {
    fn len(&self) -> usize {
        match self {
            JoinTable::Narrow(s) => s.len(),
            JoinTable::Wide(s) => s.len(),
        }
    }
}

/// Checks a call's arguments against `spec` (the contract every maker relies on).
fn check_call(spec: &JoinKeySpec, cols: &[JoinInput<'_>], n: usize, table: &JoinTable<'_>) -> Result<(), String> {
    if cols.len() != spec.parts.len() {
        return Err(format!("{} key columns for {} parts", cols.len(), spec.parts.len()));
    }
    for (c, p) in cols.iter().zip(&spec.parts) {
        if c.data.load() != p.load {
            return Err(format!("a {:?} column for a {:?} part", c.data.load(), p.load));
        }
        if c.data.len() < n || c.nulls.is_some_and(|m| m.len() < n) {
            return Err(format!("a key column of {} rows for {n} rows", c.data.len()));
        }
    }
    match (table, spec.wide) {
        (JoinTable::Narrow(_), false) | (JoinTable::Wide(_), true) => {}
        _ => return Err("a table of another key width".into()),
    }
    let len = table.len();
    if len == 0 || !len.is_power_of_two() {
        return Err(format!("a table of {len} slots"));
    }
    Ok(())
}

/// The generic twin: the ids of rows `0..n` of `cols` in `table`, interpreting
/// `spec` part by part and row by row.
pub fn probe_generic(spec: &JoinKeySpec, cols: &[JoinInput<'_>], n: usize, table: JoinTable<'_>, ids: &mut Vec<u32>) -> Result<(), String> {
    check_call(spec, cols, n, &table)?;
    ids.clear();
    for k in 0..n {
        if cols.iter().any(|c| c.nulls.is_some_and(|m| m[k])) {
            ids.push(NO_ID);
            continue;
        }
        let mut key = 0u128;
        for (c, p) in cols.iter().zip(&spec.parts) {
            key |= ((c.data.bits(k) & p.slot.mask()) as u128) << p.offset;
        }
        ids.push(match table {
            JoinTable::Narrow(s) => lookup(s, key as u64, hash64(key as u64)),
            JoinTable::Wide(s) => lookup(s, key, hash128(key)),
        });
    }
    Ok(())
}

fn lookup<K: Copy + Eq>(slots: &[(K, u32)], key: K, h: u64) -> u32 {
    let mask = slots.len() - 1;
    let mut i = h as usize & mask;
    loop {
        let (k, id) = slots[i];
        if id == NO_ID || k == key {
            return id;
        }
        i = (i + 1) & mask;
    }
}

/// The packed key of row `k` (no part NULL), as the twin computes it (for tests and
/// for [`JoinTableBuf`]).
pub fn pack_generic(spec: &JoinKeySpec, cols: &[JoinInput<'_>], k: usize) -> u128 {
    let mut key = 0u128;
    for (c, p) in cols.iter().zip(&spec.parts) {
        key |= ((c.data.bits(k) & p.slot.mask()) as u128) << p.offset;
    }
    key
}

/// A table of packed keys built outside the SQL engine (tests, benchmarks): the
/// engine's layout of slots, hashing and growth.
pub struct JoinTableBuf {
    wide: bool,
    narrow: Vec<(u64, u32)>,
    wide_slots: Vec<(u128, u32)>,
    len: usize,
}

impl JoinTableBuf {
    pub fn new(wide: bool) -> JoinTableBuf {
        let mut t = JoinTableBuf { wide, narrow: Vec::new(), wide_slots: Vec::new(), len: 0 };
        t.resize(16);
        t
    }

    fn cap(&self) -> usize {
        if self.wide { self.wide_slots.len() } else { self.narrow.len() }
    }

    fn resize(&mut self, cap: usize) {
        let old_n = std::mem::replace(&mut self.narrow, if self.wide { Vec::new() } else { vec![(0, NO_ID); cap] });
        let old_w = std::mem::replace(&mut self.wide_slots, if self.wide { vec![(0, NO_ID); cap] } else { Vec::new() });
        for (k, id) in old_n.into_iter().filter(|e| e.1 != NO_ID) {
            Self::place(&mut self.narrow, k, hash64(k), id);
        }
        for (k, id) in old_w.into_iter().filter(|e| e.1 != NO_ID) {
            Self::place(&mut self.wide_slots, k, hash128(k), id);
        }
    }

    fn place<K: Copy>(slots: &mut [(K, u32)], key: K, h: u64, id: u32) {
        let mask = slots.len() - 1;
        let mut i = h as usize & mask;
        while slots[i].1 != NO_ID {
            i = (i + 1) & mask;
        }
        slots[i] = (key, id);
    }

    /// The id of packed key `key`, inserted as the next id if new.
    pub fn insert(&mut self, key: u128) -> u32 {
        let found = match self.table() {
            JoinTable::Narrow(s) => lookup(s, key as u64, hash64(key as u64)),
            JoinTable::Wide(s) => lookup(s, key, hash128(key)),
        };
        if found != NO_ID {
            return found;
        }
        if (self.len + 1) * 2 > self.cap() {
            let cap = self.cap() * 2;
            self.resize(cap);
        }
        let id = self.len as u32;
        if self.wide {
            Self::place(&mut self.wide_slots, key, hash128(key), id);
        } else {
            Self::place(&mut self.narrow, key as u64, hash64(key as u64), id);
        }
        self.len += 1;
        id
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn table(&self) -> JoinTable<'_> {
        if self.wide { JoinTable::Wide(&self.wide_slots) } else { JoinTable::Narrow(&self.narrow) }
    }
}

/// The routine a maker made.
pub(crate) enum JoinRoutine {
    Instantiated(crate::join_inst::Probe),
    Compiled(#[allow(dead_code)] Box<crate::compiled::CompiledCode>, crate::compiled::join::JoinFn),
}

/// A join bee: probes a build's packed key table with a batch of key columns.
pub struct JoinBee {
    spec: JoinKeySpec,
    routine: JoinRoutine,
    info: Arc<BeeInfo>,
}

impl JoinBee {
    /// Makes a bee for `spec` with `maker` (`jit` is needed for [`Maker::Compiled`]).
    pub fn make(spec: JoinKeySpec, maker: Maker, jit: Option<&Jit>, owner: BeeOwner, reason: String) -> Result<JoinBee, String> {
        spec.check()?;
        let start = Instant::now();
        let (routine, code_bytes) = match maker {
            Maker::Compiled => {
                let jit = jit.ok_or("the compiled maker is not available")?;
                let (code, f) = crate::compiled::join::compile_join(jit, &spec)?;
                let bytes = code.code_bytes;
                (JoinRoutine::Compiled(Box::new(code), f), bytes)
            }
            Maker::Instantiated => (JoinRoutine::Instantiated(crate::join_inst::Probe::new(&spec)), 0),
        };
        let info = BeeInfo::made(BeeKind::Join, owner, maker, code_bytes, start, reason);
        Ok(JoinBee { spec, routine, info })
    }

    pub fn spec(&self) -> &JoinKeySpec {
        &self.spec
    }

    pub fn info(&self) -> &Arc<BeeInfo> {
        &self.info
    }

    pub fn maker(&self) -> Maker {
        self.info.maker
    }

    /// The ids of rows `0..n` of `cols` in `table` (see the module's semantics).
    /// `table` must be at most half full (it always has an empty slot).
    pub fn probe(&self, cols: &[JoinInput<'_>], n: usize, table: JoinTable<'_>, ids: &mut Vec<u32>) -> Result<(), String> {
        check_call(&self.spec, cols, n, &table)?;
        self.info.count(n as u64);
        ids.clear();
        ids.resize(n, NO_ID);
        match &self.routine {
            JoinRoutine::Instantiated(p) => p.run(cols, n, table, ids),
            JoinRoutine::Compiled(_, f) => crate::compiled::join::call(*f, &self.spec, cols, n, table, ids),
        }
        Ok(())
    }
}

impl fmt::Debug for JoinBee {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "JoinBee(#{} {})", self.info.id, self.info.maker)
    }
}
