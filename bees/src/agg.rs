//! Aggregate bees: a GROUP BY's key packing, group lookup and aggregate updates,
//! specialized on the key parts' kinds and the aggregates, in one call per batch.
//!
//! The spec ([`AggSpec`]) knows no SQL: key parts are value kinds of a *packed key*
//! (each part's bits at a constant offset, then one NULL bit per part, at most 128
//! bits in all) and aggregates are updates of dense per-group accumulators
//! ([`AccState`]). The semantics every maker implements, row by row:
//!
//! - **Key**: part `i` of kind `Bool` is 1 bit, `Int(w)` its `w` bytes of two's
//!   complement, `Float(_)` the 64 bits of its value as an f64 with −0 as +0 and
//!   every NaN as one NaN, `Str(w)` its (at most `w`) bytes little-endian then its
//!   length byte. A NULL part is its NULL bit with all value bits 0. Parts follow
//!   one another from bit 0; NULL bits follow the last part. A `Str(w)` value longer
//!   than `w` bytes cannot be packed: the call returns [`AggError::Unpackable`]
//!   **before changing anything**, and the caller groups that batch (and the rest)
//!   some other way.
//! - **Group**: equal packed keys are one group. Groups get dense ids 0, 1, 2, … in
//!   first-seen order; each call appends to `new_rows` the row of each new group's
//!   first occurrence (in id order), so the caller can keep the key values.
//! - **Aggregates**, each over its input column, skipping rows whose input is NULL
//!   (except `CountStar`, which has no input):
//!   `CountStar`/`Count` add 1 (i64); `SumInt` adds into an i64 and fails with
//!   [`AggError::Overflow`] when the sum leaves i64 (the rows before the failing one
//!   are added; the caller must stop); `SumWide`/`SumDec` add into an i128 (cannot
//!   overflow: fewer than 2^64 values of at most 2^63); `AvgInt`/`AvgDec` add into an
//!   i128 and count; `SumFloat`/`AvgFloat` add as f64 (f32 inputs widened) to a sum
//!   starting at +0.0, counting for the average; `Min`/`Max` keep the first value
//!   that no later value beats strictly (floats: NaN largest, −0 = 0, as SQL orders
//!   them). A sum records whether its group saw a value (`has`).
//!
//! Makers: the generic twin ([`crate::agg_generic`], the definition), the
//! instantiated maker ([`crate::agg_instantiated`]).

use std::fmt;
use std::sync::Arc;
use std::time::Instant;

use crate::bee::{BeeInfo, BeeKind, Maker};
use crate::cache::BeeOwner;
use crate::compiled::Jit;

/// One key part's kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KeyKind {
    Bool,
    /// An integer of 2, 4 or 8 bytes (dates, timestamps, scaled decimals too).
    Int(u8),
    /// A float of 4 or 8 bytes.
    Float(u8),
    /// A string of at most this many bytes (1 to 15).
    Str(u8),
}

impl KeyKind {
    pub fn bits(self) -> u32 {
        match self {
            KeyKind::Bool => 1,
            KeyKind::Int(b) => b as u32 * 8,
            KeyKind::Float(_) => 64,
            KeyKind::Str(w) => w as u32 * 8 + 8,
        }
    }
}

/// A min/max input's kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ValKind {
    Bool,
    Int(u8),
    Float(u8),
}

/// One aggregate's update.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AggOp {
    CountStar,
    /// Non-NULL inputs of any type (only the NULL mask is read).
    Count,
    /// An integer of this width into an i64 (overflow is an error).
    SumInt(u8),
    /// An integer of this width into an i128.
    SumWide(u8),
    /// An integer of this width: i128 sum and count.
    AvgInt(u8),
    /// Scaled i64 decimals (one scale, the caller's business) into an i128.
    SumDec,
    /// Scaled i64 decimals: i128 sum and count.
    AvgDec,
    /// A float of this width into an f64.
    SumFloat(u8),
    AvgFloat(u8),
    Min(ValKind),
    Max(ValKind),
}

impl AggOp {
    /// The input column kind the op reads (`None`: no input or only its NULLs).
    pub fn input(self) -> Option<ValKind> {
        match self {
            AggOp::CountStar | AggOp::Count => None,
            AggOp::SumInt(w) | AggOp::SumWide(w) | AggOp::AvgInt(w) => Some(ValKind::Int(w)),
            AggOp::SumDec | AggOp::AvgDec => Some(ValKind::Int(8)),
            AggOp::SumFloat(w) | AggOp::AvgFloat(w) => Some(ValKind::Float(w)),
            AggOp::Min(k) | AggOp::Max(k) => Some(k),
        }
    }
}

/// What an aggregate bee is specialized for.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct AggSpec {
    pub keys: Vec<KeyKind>,
    pub aggs: Vec<AggOp>,
}

impl AggSpec {
    /// Bits of the packed key (parts and NULL bits).
    pub fn key_bits(&self) -> u32 {
        self.keys.iter().map(|k| k.bits()).sum::<u32>() + self.keys.len() as u32
    }

    /// Checks the spec: at least one key part, kinds with valid widths, a key of at
    /// most 128 bits.
    pub fn check(&self) -> Result<(), String> {
        if self.keys.is_empty() {
            return Err("an aggregate bee needs a group key".into());
        }
        let int_ok = |w: u8| matches!(w, 2 | 4 | 8);
        let float_ok = |w: u8| matches!(w, 4 | 8);
        for k in &self.keys {
            let ok = match *k {
                KeyKind::Bool => true,
                KeyKind::Int(w) => int_ok(w),
                KeyKind::Float(w) => float_ok(w),
                KeyKind::Str(w) => (1..=15).contains(&w),
            };
            if !ok {
                return Err(format!("key part {k:?}"));
            }
        }
        for a in &self.aggs {
            let ok = match a.input() {
                None | Some(ValKind::Bool) => true,
                Some(ValKind::Int(w)) => int_ok(w),
                Some(ValKind::Float(w)) => float_ok(w),
            };
            if !ok {
                return Err(format!("aggregate {a:?}"));
            }
        }
        if self.key_bits() > 128 {
            return Err(format!("a packed key of {} bits", self.key_bits()));
        }
        Ok(())
    }

    /// A string naming the spec (cache key).
    pub fn key(&self) -> String {
        format!("agg{:?}{:?}", self.keys, self.aggs)
    }

    /// Each part's bit offset.
    pub(crate) fn offsets(&self) -> Vec<u32> {
        let mut off = 0;
        self.keys
            .iter()
            .map(|k| {
                let o = off;
                off += k.bits();
                o
            })
            .collect()
    }

    /// Bit of part `i`'s NULL flag.
    pub(crate) fn null_bit(&self, i: usize) -> u32 {
        self.keys.iter().map(|k| k.bits()).sum::<u32>() + i as u32
    }
}

/// One input column's values.
#[derive(Clone, Copy, Debug)]
pub enum AggData<'a> {
    /// No values (count's input: only NULLs are read; count(*)).
    None,
    Bool(&'a [bool]),
    I16(&'a [i16]),
    I32(&'a [i32]),
    I64(&'a [i64]),
    F32(&'a [f32]),
    F64(&'a [f64]),
    /// Strings (a `Str` key part), already in the form they compare in.
    Str(&'a [&'a [u8]]),
    /// Strings (a `Str` key part) in one buffer: string `k` is
    /// `bytes[offsets[k]..offsets[k + 1]]`, without its trailing blanks (`b' '`) when
    /// `trim` (SQL's `char(n)`). Packing it needs no per-batch slice of references,
    /// and reads each short string with one unaligned 16-byte load.
    StrBuf { offsets: &'a [u32], bytes: &'a [u8], trim: bool },
}

impl<'a> AggData<'a> {
    /// String `k` of a `Str` or `StrBuf` input, in the form it compares in.
    #[inline]
    pub fn str_at(&self, k: usize) -> &'a [u8] {
        match *self {
            AggData::Str(d) => d[k],
            AggData::StrBuf { offsets, bytes, trim } => {
                let s = &bytes[offsets[k] as usize..offsets[k + 1] as usize];
                if trim { trim_blanks(s) } else { s }
            }
            _ => unreachable!("a string input"),
        }
    }
}

/// `s` without its trailing blanks.
#[inline]
pub(crate) fn trim_blanks(s: &[u8]) -> &[u8] {
    let mut l = s.len();
    while l > 0 && s[l - 1] == b' ' {
        l -= 1;
    }
    &s[..l]
}

impl AggData<'_> {
    fn len(&self) -> Option<usize> {
        Some(match self {
            AggData::None => return None,
            AggData::Bool(d) => d.len(),
            AggData::I16(d) => d.len(),
            AggData::I32(d) => d.len(),
            AggData::I64(d) => d.len(),
            AggData::F32(d) => d.len(),
            AggData::F64(d) => d.len(),
            AggData::Str(d) => d.len(),
            AggData::StrBuf { offsets, .. } => offsets.len().saturating_sub(1),
        })
    }
}

/// One input column: values and, when some row is NULL, a flag per row.
#[derive(Clone, Copy, Debug)]
pub struct AggInput<'a> {
    pub data: AggData<'a>,
    pub nulls: Option<&'a [bool]>,
}

impl<'a> AggInput<'a> {
    pub const NONE: AggInput<'static> = AggInput { data: AggData::None, nulls: None };

    #[inline]
    pub(crate) fn is_null(&self, k: usize) -> bool {
        self.nulls.is_some_and(|n| n[k])
    }
}

/// Why a call did not group its batch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AggError {
    /// An integer sum into an i64 (aggregate `agg`) overflowed: the statement fails.
    Overflow { agg: usize },
    /// A key value the packed layout cannot hold; nothing was changed.
    Unpackable,
    /// Inputs that do not fit the spec (kinds, lengths); nothing was changed.
    Input(String),
}

impl fmt::Display for AggError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AggError::Overflow { agg } => write!(f, "aggregate {agg} overflowed"),
            AggError::Unpackable => f.write_str("a key value the packed layout cannot hold"),
            AggError::Input(s) => f.write_str(s),
        }
    }
}

/// The accumulators of one aggregate, one slot per group.
#[derive(Clone, Debug, PartialEq)]
pub enum AccState {
    Count(Vec<i64>),
    SumI64 { sum: Vec<i64>, has: Vec<bool> },
    SumI128 { sum: Vec<i128>, has: Vec<bool> },
    AvgI128 { sum: Vec<i128>, n: Vec<i64> },
    SumF64 { sum: Vec<f64>, has: Vec<bool> },
    AvgF64 { sum: Vec<f64>, n: Vec<i64> },
    /// min/max of booleans (0/1) and integers.
    BestI64 { v: Vec<i64>, has: Vec<bool> },
    BestF64 { v: Vec<f64>, has: Vec<bool> },
}

impl AccState {
    fn new(op: AggOp) -> AccState {
        match op {
            AggOp::CountStar | AggOp::Count => AccState::Count(Vec::new()),
            AggOp::SumInt(_) => AccState::SumI64 { sum: Vec::new(), has: Vec::new() },
            AggOp::SumWide(_) | AggOp::SumDec => AccState::SumI128 { sum: Vec::new(), has: Vec::new() },
            AggOp::AvgInt(_) | AggOp::AvgDec => AccState::AvgI128 { sum: Vec::new(), n: Vec::new() },
            AggOp::SumFloat(_) => AccState::SumF64 { sum: Vec::new(), has: Vec::new() },
            AggOp::AvgFloat(_) => AccState::AvgF64 { sum: Vec::new(), n: Vec::new() },
            AggOp::Min(ValKind::Float(_)) | AggOp::Max(ValKind::Float(_)) => {
                AccState::BestF64 { v: Vec::new(), has: Vec::new() }
            }
            AggOp::Min(_) | AggOp::Max(_) => AccState::BestI64 { v: Vec::new(), has: Vec::new() },
        }
    }

    fn grow(&mut self, n: usize) {
        match self {
            AccState::Count(v) => v.resize(n, 0),
            AccState::SumI64 { sum, has } => {
                sum.resize(n, 0);
                has.resize(n, false);
            }
            AccState::SumI128 { sum, has } => {
                sum.resize(n, 0);
                has.resize(n, false);
            }
            AccState::AvgI128 { sum, n: c } => {
                sum.resize(n, 0);
                c.resize(n, 0);
            }
            AccState::SumF64 { sum, has } => {
                sum.resize(n, 0.0);
                has.resize(n, false);
            }
            AccState::AvgF64 { sum, n: c } => {
                sum.resize(n, 0.0);
                c.resize(n, 0);
            }
            AccState::BestI64 { v, has } => {
                v.resize(n, 0);
                has.resize(n, false);
            }
            AccState::BestF64 { v, has } => {
                v.resize(n, 0.0);
                has.resize(n, false);
            }
        }
    }

    fn bytes_per_group(&self) -> usize {
        match self {
            AccState::Count(_) => 8,
            AccState::SumI64 { .. } | AccState::BestI64 { .. } | AccState::BestF64 { .. } | AccState::SumF64 { .. } => 9,
            AccState::SumI128 { .. } => 17,
            AccState::AvgI128 { .. } => 24,
            AccState::AvgF64 { .. } => 16,
        }
    }
}

/// SQL's order of floats for min/max: NaN largest (all NaNs equal), −0 = 0.
#[inline]
pub fn float_order(a: f64, b: f64) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        (false, false) => a.partial_cmp(&b).unwrap_or(Ordering::Equal),
    }
}

/// A float as key bits: −0 as +0, every NaN as one NaN.
#[inline]
pub(crate) fn float_bits(f: f64) -> u64 {
    if f.is_nan() {
        0x7FF8_0000_0000_0000
    } else if f == 0.0 {
        0
    } else {
        f.to_bits()
    }
}

/// Murmur3's 64-bit finalizer.
#[inline]
pub(crate) fn mix64(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^ (x >> 33)
}

/// A packed key: `u64` or `u128`.
pub(crate) trait Packed: Copy + Eq + Default + fmt::Debug {
    fn from_u128(v: u128) -> Self;
    fn hash(self) -> u64;
}

impl Packed for u64 {
    #[inline]
    fn from_u128(v: u128) -> u64 {
        v as u64
    }
    #[inline]
    fn hash(self) -> u64 {
        mix64(self)
    }
}

impl Packed for u128 {
    #[inline]
    fn from_u128(v: u128) -> u128 {
        v
    }
    #[inline]
    fn hash(self) -> u64 {
        mix64((self as u64) ^ mix64((self >> 64) as u64).rotate_left(17))
    }
}

pub(crate) const EMPTY: u32 = u32::MAX;

/// One slot of a [`PackedMap`]: `id` is [`EMPTY`] in a free slot. `repr(C)`: the
/// compiled maker's probe reads `key` at offset 0 and `id` at
/// `offset_of!(Slot<K>, id)` in slots of `size_of::<Slot<K>>()` bytes.
#[derive(Clone, Copy, Debug)]
#[repr(C)]
pub(crate) struct Slot<K> {
    pub(crate) key: K,
    pub(crate) id: u32,
}

/// Packed keys → group ids: open addressing, linear probing, at most half full.
#[derive(Clone, Debug)]
pub(crate) struct PackedMap<K> {
    pub(crate) slots: Vec<Slot<K>>,
    pub(crate) mask: usize,
    pub(crate) len: usize,
}

impl<K: Packed> PackedMap<K> {
    pub(crate) fn new() -> PackedMap<K> {
        PackedMap { slots: vec![Slot { key: K::default(), id: EMPTY }; 16], mask: 15, len: 0 }
    }

    fn grow(&mut self) {
        let cap = self.slots.len() * 2;
        let mut next = vec![Slot { key: K::default(), id: EMPTY }; cap];
        let mask = cap - 1;
        for &Slot { key: k, id } in &self.slots {
            if id != EMPTY {
                let mut i = k.hash() as usize & mask;
                while next[i].id != EMPTY {
                    i = (i + 1) & mask;
                }
                next[i] = Slot { key: k, id };
            }
        }
        self.slots = next;
        self.mask = mask;
    }

    /// The id of `key`, inserting it as the next id if new (second: whether new).
    #[inline]
    pub(crate) fn find_or_insert(&mut self, key: K) -> (u32, bool) {
        if (self.len + 1) * 2 > self.slots.len() {
            self.grow();
        }
        let mask = self.mask;
        let mut i = key.hash() as usize & mask;
        loop {
            let Slot { key: k, id } = self.slots[i];
            if id == EMPTY {
                let id = self.len as u32;
                self.slots[i] = Slot { key, id };
                self.len += 1;
                return (id, true);
            }
            if k == key {
                return (id, false);
            }
            i = (i + 1) & mask;
        }
    }

    fn bytes(&self) -> usize {
        self.slots.len() * std::mem::size_of::<Slot<K>>()
    }
}

/// How a table finds groups.
#[derive(Clone, Debug)]
pub(crate) enum KeyMap {
    P64(PackedMap<u64>),
    P128(PackedMap<u128>),
    /// The generic twin's: a standard hash map.
    Std(std::collections::HashMap<u128, u32>),
}

/// What an aggregation holds: the group ids of packed keys, and every aggregate's
/// accumulators (slot `g` is group `g`).
#[derive(Clone, Debug)]
pub struct AggTable {
    pub(crate) map: KeyMap,
    pub accs: Vec<AccState>,
    pub(crate) groups: usize,
    /// Scratch: the batch's packed keys.
    pub(crate) packed: Vec<u128>,
    pub(crate) gids: Vec<u32>,
}

impl AggTable {
    pub(crate) fn new(spec: &AggSpec, map: KeyMap) -> AggTable {
        AggTable {
            map,
            accs: spec.aggs.iter().map(|&a| AccState::new(a)).collect(),
            groups: 0,
            packed: Vec::new(),
            gids: Vec::new(),
        }
    }

    /// Groups so far.
    pub fn groups(&self) -> usize {
        self.groups
    }

    /// Bytes held (for memory accounting).
    pub fn heap_bytes(&self) -> usize {
        let map = match &self.map {
            KeyMap::P64(m) => m.bytes(),
            KeyMap::P128(m) => m.bytes(),
            KeyMap::Std(m) => m.capacity() * 24,
        };
        map + self.groups * self.accs.iter().map(AccState::bytes_per_group).sum::<usize>()
    }

    /// Gives every accumulator `n` groups.
    pub(crate) fn set_groups(&mut self, n: usize) {
        if n != self.groups {
            self.accs.iter_mut().for_each(|a| a.grow(n));
            self.groups = n;
        }
    }

    /// The group ids of the last call's rows.
    pub fn gids(&self) -> &[u32] {
        &self.gids
    }
}

/// Checks the inputs of a call against `spec` (kinds and lengths).
pub(crate) fn check_inputs(spec: &AggSpec, keys: &[AggInput<'_>], args: &[AggInput<'_>], n: usize) -> Result<(), AggError> {
    let bad = |s: String| Err(AggError::Input(s));
    if keys.len() != spec.keys.len() || args.len() != spec.aggs.len() {
        return bad(format!("{} key and {} aggregate inputs for {:?}", keys.len(), args.len(), spec));
    }
    let len_ok = |i: &AggInput<'_>| i.data.len().is_none_or(|l| l == n) && i.nulls.is_none_or(|m| m.len() == n);
    for (k, i) in spec.keys.iter().zip(keys) {
        let ok = matches!(
            (k, i.data),
            (KeyKind::Bool, AggData::Bool(_))
                | (KeyKind::Int(2), AggData::I16(_))
                | (KeyKind::Int(4), AggData::I32(_))
                | (KeyKind::Int(8), AggData::I64(_))
                | (KeyKind::Float(4), AggData::F32(_))
                | (KeyKind::Float(8), AggData::F64(_))
                | (KeyKind::Str(_), AggData::Str(_))
                | (KeyKind::Str(_), AggData::StrBuf { .. })
        );
        let buf_ok = match i.data {
            AggData::StrBuf { offsets, bytes, .. } => {
                // (Safe indexing catches offsets out of order.)
                offsets.last().is_some_and(|&e| e as usize <= bytes.len())
            }
            _ => true,
        };
        if !ok || !len_ok(i) || !buf_ok {
            return bad(format!("a {:?} input for key part {k:?} ({n} rows)", i.data));
        }
    }
    for (a, i) in spec.aggs.iter().zip(args) {
        let ok = match a.input() {
            None => true,
            Some(ValKind::Bool) => matches!(i.data, AggData::Bool(_)),
            Some(ValKind::Int(2)) => matches!(i.data, AggData::I16(_)),
            Some(ValKind::Int(4)) => matches!(i.data, AggData::I32(_)),
            Some(ValKind::Int(_)) => matches!(i.data, AggData::I64(_)),
            Some(ValKind::Float(4)) => matches!(i.data, AggData::F32(_)),
            Some(ValKind::Float(_)) => matches!(i.data, AggData::F64(_)),
        };
        let needs_mask = *a == AggOp::Count;
        if !ok || !len_ok(i) || (needs_mask && matches!(i.data, AggData::None) && i.nulls.is_some_and(|m| m.len() != n)) {
            return bad(format!("a {:?} input for aggregate {a:?} ({n} rows)", i.data));
        }
    }
    Ok(())
}

pub(crate) enum AggRoutine {
    Compiled(crate::compiled::agg::CompiledAgg),
    Instantiated(crate::agg_instantiated::Agg),
}

/// An aggregate bee, ready to call.
pub struct AggBee {
    spec: AggSpec,
    routine: AggRoutine,
    info: Arc<BeeInfo>,
}

impl AggBee {
    /// Makes a bee for `spec` with `maker`.
    /// `jit` is needed for [`Maker::Compiled`].
    pub fn make(spec: AggSpec, maker: Maker, jit: Option<&Jit>, owner: BeeOwner, reason: String) -> Result<AggBee, String> {
        spec.check()?;
        let start = Instant::now();
        let (routine, code_bytes) = match maker {
            Maker::Compiled => {
                let jit = jit.ok_or("no compiler")?;
                let c = crate::compiled::agg::CompiledAgg::new(jit, &spec)?;
                let bytes = c.code_bytes();
                (AggRoutine::Compiled(c), bytes)
            }
            Maker::Instantiated => (AggRoutine::Instantiated(crate::agg_instantiated::Agg::new(&spec)), 0),
        };
        let info = BeeInfo::made(BeeKind::Aggregate, owner, maker, code_bytes, start, reason);
        Ok(AggBee { spec, routine, info })
    }

    pub fn spec(&self) -> &AggSpec {
        &self.spec
    }

    pub fn info(&self) -> &Arc<BeeInfo> {
        &self.info
    }

    pub fn maker(&self) -> Maker {
        self.info.maker
    }

    /// An empty table for this bee's aggregation.
    pub fn table(&self) -> AggTable {
        let map = if self.spec.key_bits() <= 64 {
            KeyMap::P64(PackedMap::new())
        } else {
            KeyMap::P128(PackedMap::new())
        };
        AggTable::new(&self.spec, map)
    }

    /// Adds rows `0..n` of the inputs (one per key part, one per aggregate; a
    /// `CountStar`'s is [`AggInput::NONE`]) to `table`'s groups; appends the first
    /// row of each new group to `new_rows`. The rows' group ids are then in
    /// [`AggTable::gids`].
    pub fn update(
        &self,
        table: &mut AggTable,
        keys: &[AggInput<'_>],
        args: &[AggInput<'_>],
        n: usize,
        new_rows: &mut Vec<u32>,
    ) -> Result<(), AggError> {
        check_inputs(&self.spec, keys, args, n)?;
        self.info.count(n as u64);
        match &self.routine {
            AggRoutine::Compiled(c) => c.run(&self.spec, table, keys, args, n, new_rows),
            AggRoutine::Instantiated(a) => a.run(table, keys, args, n, new_rows),
        }
    }
}

impl fmt::Debug for AggBee {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "AggBee(#{} {})", self.info.id, self.info.maker)
    }
}
