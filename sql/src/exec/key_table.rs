//! Typed hash tables for group and join keys: each distinct key gets a dense id
//! (0, 1, 2, … in first-seen order), and the distinct keys are kept as column
//! vectors (the aggregate's group columns).
//!
//! Two layouts, chosen from the key types:
//! - **Packed**: every key column is fixed-width (booleans, integers, dates,
//!   timestamps, floats, decimals of precision ≤ 18, `char(n)`/`varchar(n)` with
//!   n ≤ 15) and all of them with one NULL bit each fit 128 bits. A row's key is
//!   packed column at a time into a `u64` or `u128`, and the table is a flat
//!   open-addressing array of (packed key, id): one hash and one integer comparison per
//!   row, no allocation.
//! - **Generic**: anything else (text, intervals, wide decimals). Row hashes are
//!   computed column at a time; a slot holds (hash, id) and equal hashes are confirmed
//!   by comparing the row with the stored key columns in place. No per-row allocation.
//!
//! Both packed paths (insert and probe) compare each row's packed key with the
//! previous row's first: a run of equal keys — a table stored in key order, such as
//! TPC-H's lineitem by order key — costs one hash probe, not one per row.
//!
//! A packed table whose input brings a value the layout cannot hold (a string longer
//! than expected, a decimal with more digits than its type says) turns itself into a
//! generic table over the keys it holds, keeping their ids.
//!
//! Equality is SQL grouping's, as [`super::keys::push_key`] defines it (that byte key is
//! the generic twin [`ByteKeyTable`], kept for the differential tests): NULL equals
//! NULL, integers of any width by value, decimals by value whatever their scale,
//! `-0.0 = 0.0`, NaN = NaN, `char(n)` without trailing blanks, intervals by span.

use std::hash::Hasher;

use rustc_hash::{FxHashMap, FxHasher};

use super::keys::row_key;
use crate::types::text::bpchar_trim;
use crate::types::{DataType, Decimal};
use crate::vector::{Data, Vector};

/// The id of "no key" (a probe row without a match, a join row with a NULL key).
pub const NO_ID: u32 = u32::MAX;

/// Longest string (in bytes) a packed key holds.
const MAX_PACKED_STR: u8 = 15;

/// How one key column is packed.
#[derive(Debug, Clone, Copy, PartialEq)]
enum SlotKind {
    Bool,
    /// An integer of this many bytes (2, 4 or 8), two's complement.
    Int(u8),
    /// A float as the bits of its f64 value, `-0` and NaN normalized.
    Float,
    /// A decimal as an i64 of unscaled digits at this scale.
    Dec(u8),
    /// A string of at most this many bytes, then its length byte.
    Str(u8),
}

impl SlotKind {
    fn of(ty: &DataType) -> Option<SlotKind> {
        Some(match ty {
            DataType::Boolean => SlotKind::Bool,
            DataType::SmallInt => SlotKind::Int(2),
            DataType::Integer | DataType::Date => SlotKind::Int(4),
            DataType::BigInt | DataType::Timestamp => SlotKind::Int(8),
            DataType::Real | DataType::Double => SlotKind::Float,
            DataType::Decimal {
                precision: Some(p),
                scale,
            } if *p <= 18 => SlotKind::Dec(*scale),
            DataType::Char(n) | DataType::Varchar(Some(n))
                if *n >= 1 && *n <= MAX_PACKED_STR as u32 =>
            {
                SlotKind::Str(*n as u8)
            }
            _ => return None,
        })
    }

    fn bits(self) -> u32 {
        match self {
            SlotKind::Bool => 1,
            SlotKind::Int(b) => b as u32 * 8,
            SlotKind::Float | SlotKind::Dec(_) => 64,
            SlotKind::Str(n) => n as u32 * 8 + 8,
        }
    }
}

/// The packed layout of a key: each column's slot and bit offset; NULL bits follow.
#[derive(Debug, Clone)]
struct Layout {
    slots: Vec<(SlotKind, u32)>,
    null_base: u32,
}

impl Layout {
    /// The packed layout of keys of `types`, with its width in bits, if they fit 128.
    fn of(types: &[DataType]) -> Option<(Layout, u32)> {
        let mut slots = Vec::with_capacity(types.len());
        let mut off = 0u32;
        for t in types {
            let s = SlotKind::of(t)?;
            slots.push((s, off));
            off += s.bits();
        }
        let total = off + types.len() as u32;
        (total <= 128).then_some((
            Layout {
                slots,
                null_base: off,
            },
            total,
        ))
    }

    /// Packs the keys of `cols` (one vector per slot) into `out`. Rows whose value the
    /// layout cannot hold get `bad[k] = true` (`bad` is left empty when none).
    fn pack(&self, cols: &[Vector], n: usize, out: &mut Vec<u128>, bad: &mut Vec<bool>) {
        out.clear();
        out.resize(n, 0);
        bad.clear();
        for (c, (&(kind, off), col)) in self.slots.iter().zip(cols).enumerate() {
            if let Some(nulls) = &col.nulls {
                let bit = 1u128 << (self.null_base + c as u32);
                for (o, &is_null) in out.iter_mut().zip(nulls) {
                    if is_null {
                        *o |= bit;
                    }
                }
            }
            let null = |k: usize| col.is_null(k);
            let mut mark_bad = |k: usize| {
                if bad.is_empty() {
                    bad.resize(n, false);
                }
                bad[k] = true;
            };
            match (&col.data, kind) {
                (Data::Bool(d), SlotKind::Bool) => {
                    for (o, &x) in out.iter_mut().zip(d) {
                        *o |= (x as u128) << off;
                    }
                }
                (Data::I16(d), SlotKind::Int(b)) => {
                    for (o, &x) in out.iter_mut().zip(d) {
                        *o |= int_bits(x as i64, b) << off;
                    }
                }
                (Data::I32(d), SlotKind::Int(b)) if b >= 4 => {
                    for (o, &x) in out.iter_mut().zip(d) {
                        *o |= (int_bits(x as i64, b)) << off;
                    }
                }
                (Data::I64(d), SlotKind::Int(8)) => {
                    for (o, &x) in out.iter_mut().zip(d) {
                        *o |= ((x as u64) as u128) << off;
                    }
                }
                (Data::I32(_) | Data::I64(_), SlotKind::Int(b)) => {
                    // A wider integer in a narrower slot: values out of range cannot
                    // equal any key the slot holds.
                    for (k, o) in out.iter_mut().enumerate() {
                        let x = match &col.data {
                            Data::I32(d) => d[k] as i64,
                            Data::I64(d) => d[k],
                            _ => 0,
                        };
                        if null(k) {
                            continue;
                        }
                        if int_fits(x, b) {
                            *o |= int_bits(x, b) << off;
                        } else {
                            mark_bad(k);
                        }
                    }
                }
                (Data::F32(d), SlotKind::Float) => {
                    for (o, &x) in out.iter_mut().zip(d) {
                        *o |= (float_bits(x as f64) as u128) << off;
                    }
                }
                (Data::F64(d), SlotKind::Float) => {
                    for (o, &x) in out.iter_mut().zip(d) {
                        *o |= (float_bits(x) as u128) << off;
                    }
                }
                (Data::Dec(d), SlotKind::Dec(scale)) => {
                    for (k, (o, x)) in out.iter_mut().zip(d).enumerate() {
                        if null(k) {
                            continue;
                        }
                        match x.to_scaled_i64(scale) {
                            Some(u) => *o |= ((u as u64) as u128) << off,
                            None => mark_bad(k),
                        }
                    }
                }
                (Data::Dec64(d), SlotKind::Dec(scale)) if d.scale == scale => {
                    for (o, &x) in out.iter_mut().zip(&d.values) {
                        *o |= ((x as u64) as u128) << off;
                    }
                }
                (Data::Dec64(d), SlotKind::Dec(scale)) => {
                    for k in 0..n {
                        if null(k) {
                            continue;
                        }
                        match d.get(k).to_scaled_i64(scale) {
                            Some(u) => out[k] |= ((u as u64) as u128) << off,
                            None => mark_bad(k),
                        }
                    }
                }
                (Data::Str(d), SlotKind::Str(w)) => {
                    let trim = matches!(col.ty, DataType::Char(_));
                    for (k, o) in out.iter_mut().enumerate() {
                        if null(k) {
                            continue;
                        }
                        let s = d.get(k);
                        let s = if trim { bpchar_trim(s) } else { s };
                        if s.len() > w as usize {
                            mark_bad(k);
                            continue;
                        }
                        let mut v = 0u128;
                        for (i, &byte) in s.as_bytes().iter().enumerate() {
                            v |= (byte as u128) << (8 * i);
                        }
                        v |= (s.len() as u128) << (8 * w as u32);
                        *o |= v << off;
                    }
                }
                _ => {
                    // A physical type this slot does not take (e.g. a probe key of
                    // another type): no row can match.
                    for k in 0..n {
                        if !null(k) {
                            mark_bad(k);
                        }
                    }
                }
            }
        }
    }
}

fn int_fits(x: i64, bytes: u8) -> bool {
    match bytes {
        2 => i16::try_from(x).is_ok(),
        4 => i32::try_from(x).is_ok(),
        _ => true,
    }
}

#[inline]
fn int_bits(x: i64, bytes: u8) -> u128 {
    let mask = if bytes >= 8 {
        u64::MAX
    } else {
        (1u64 << (bytes as u32 * 8)) - 1
    };
    ((x as u64) & mask) as u128
}

fn float_bits(f: f64) -> u64 {
    if f.is_nan() {
        0x7FF8_0000_0000_0000
    } else if f == 0.0 {
        0
    } else {
        f.to_bits()
    }
}

use beedb_bees::join::mix64;

/// A packed key type: `u64` or `u128`.
trait PackedKey: Copy + Eq + Default {
    fn from_packed(v: u128) -> Self;
    fn hash(self) -> u64;
}

impl PackedKey for u64 {
    #[inline]
    fn from_packed(v: u128) -> u64 {
        v as u64
    }
    #[inline]
    fn hash(self) -> u64 {
        // The join bees' hash (they probe these tables).
        beedb_bees::join::hash64(self)
    }
}

impl PackedKey for u128 {
    #[inline]
    fn from_packed(v: u128) -> u128 {
        v
    }
    #[inline]
    fn hash(self) -> u64 {
        beedb_bees::join::hash128(self)
    }
}

/// Open addressing with linear probing over a power-of-two array, at most half full.
/// `E` is the slot; an empty slot has id [`NO_ID`].
struct Slots<E> {
    slots: Vec<E>,
    mask: usize,
}

impl<E: Copy> Slots<E> {
    fn new(empty: E, cap: usize) -> Slots<E> {
        let cap = cap.next_power_of_two().max(16);
        Slots {
            slots: vec![empty; cap],
            mask: cap - 1,
        }
    }
}

/// Packed keys → ids.
struct PackedTable<K> {
    layout: Layout,
    table: Slots<(K, u32)>,
    len: usize,
    packed: Vec<u128>,
    bad: Vec<bool>,
}

impl<K: PackedKey> PackedTable<K> {
    fn new(layout: Layout) -> PackedTable<K> {
        PackedTable {
            layout,
            table: Slots::new((K::default(), NO_ID), 16),
            len: 0,
            packed: Vec::new(),
            bad: Vec::new(),
        }
    }

    fn grow(&mut self) {
        let mut next = Slots::new((K::default(), NO_ID), self.table.slots.len() * 2);
        for &(key, id) in &self.table.slots {
            if id != NO_ID {
                let mut i = key.hash() as usize & next.mask;
                while next.slots[i].1 != NO_ID {
                    i = (i + 1) & next.mask;
                }
                next.slots[i] = (key, id);
            }
        }
        self.table = next;
    }

    /// The id of `key`, inserting it as id `self.len` if new (second: whether new).
    #[inline]
    fn find_or_insert(&mut self, key: K) -> (u32, bool) {
        if (self.len + 1) * 2 > self.table.slots.len() {
            self.grow();
        }
        let mask = self.table.mask;
        let mut i = key.hash() as usize & mask;
        loop {
            let (k, id) = self.table.slots[i];
            if id == NO_ID {
                let id = self.len as u32;
                self.table.slots[i] = (key, id);
                self.len += 1;
                return (id, true);
            }
            if k == key {
                return (id, false);
            }
            i = (i + 1) & mask;
        }
    }

    #[inline]
    fn find(&self, key: K) -> u32 {
        let mask = self.table.mask;
        let mut i = key.hash() as usize & mask;
        loop {
            let (k, id) = self.table.slots[i];
            if id == NO_ID || k == key {
                return id;
            }
            i = (i + 1) & mask;
        }
    }
}

/// Row hashes → ids, equality confirmed against the stored key columns.
struct GenericTable {
    table: Slots<(u64, u32)>,
    len: usize,
    hashes: Vec<u64>,
}

impl GenericTable {
    fn new() -> GenericTable {
        GenericTable {
            table: Slots::new((0, NO_ID), 16),
            len: 0,
            hashes: Vec::new(),
        }
    }

    fn grow(&mut self) {
        let mut next = Slots::new((0u64, NO_ID), self.table.slots.len() * 2);
        for &(h, id) in &self.table.slots {
            if id != NO_ID {
                let mut i = h as usize & next.mask;
                while next.slots[i].1 != NO_ID {
                    i = (i + 1) & next.mask;
                }
                next.slots[i] = (h, id);
            }
        }
        self.table = next;
    }

    /// Adds a key known to be new as id `self.len`.
    fn insert_new(&mut self, h: u64) -> u32 {
        if (self.len + 1) * 2 > self.table.slots.len() {
            self.grow();
        }
        let mask = self.table.mask;
        let mut i = h as usize & mask;
        while self.table.slots[i].1 != NO_ID {
            i = (i + 1) & mask;
        }
        let id = self.len as u32;
        self.table.slots[i] = (h, id);
        self.len += 1;
        id
    }

    /// The id of the key of row `k` of `cols` with hash `h`, or [`NO_ID`].
    #[inline]
    fn find(&self, h: u64, cols: &[Vector], k: usize, stored: &[Vector]) -> u32 {
        let mask = self.table.mask;
        let mut i = h as usize & mask;
        loop {
            let (sh, id) = self.table.slots[i];
            if id == NO_ID || (sh == h && rows_equal(cols, k, stored, id as usize)) {
                return id;
            }
            i = (i + 1) & mask;
        }
    }
}

/// A decimal's hash by value, whatever its scale (`1.0` and `1.00` alike).
#[inline]
fn dec_hash(d: &Decimal) -> u64 {
    let x = d.normalize();
    let u = x.unscaled();
    (u as u64) ^ ((u >> 64) as u64).rotate_left(29) ^ x.scale() as u64
}

/// Hashes of every row of `cols` (equal keys under the table's equality, equal
/// hashes; NULLs hash alike): what spilling operators split their rows by, so that
/// a key's rows all land in the same part on both sides of a join.
pub fn key_hashes(cols: &[Vector], n: usize, out: &mut Vec<u64>) {
    row_hashes(cols, n, out);
}

/// Hashes of every row of `cols` (equal keys, equal hashes), column at a time.
fn row_hashes(cols: &[Vector], n: usize, out: &mut Vec<u64>) {
    out.clear();
    out.resize(n, 0x9e37_79b9_7f4a_7c15);
    for col in cols {
        let mut add = |k: usize, v: u64| {
            out[k] = mix64(out[k].rotate_left(5) ^ v);
        };
        match &col.data {
            Data::Bool(d) => (0..n).for_each(|k| add(k, d[k] as u64)),
            Data::I16(d) => (0..n).for_each(|k| add(k, d[k] as i64 as u64)),
            Data::I32(d) => (0..n).for_each(|k| add(k, d[k] as i64 as u64)),
            Data::I64(d) => (0..n).for_each(|k| add(k, d[k] as u64)),
            Data::F32(d) => (0..n).for_each(|k| add(k, float_bits(d[k] as f64))),
            Data::F64(d) => (0..n).for_each(|k| add(k, float_bits(d[k]))),
            Data::Dec(d) => (0..n).for_each(|k| add(k, dec_hash(&d[k]))),
            Data::Dec64(d) => (0..n).for_each(|k| add(k, dec_hash(&d.get(k)))),
            Data::Interval(d) => (0..n).for_each(|k| {
                let s = d[k].span_micros();
                add(k, (s as u64) ^ ((s >> 64) as u64).rotate_left(29))
            }),
            Data::Str(d) => {
                let trim = matches!(col.ty, DataType::Char(_));
                (0..n).for_each(|k| {
                    let s = d.get(k);
                    let s = if trim { bpchar_trim(s) } else { s };
                    let mut h = FxHasher::default();
                    h.write(s.as_bytes());
                    add(k, h.finish() ^ s.len() as u64)
                })
            }
        }
        if let Some(nulls) = &col.nulls {
            // NULL positions hold the type's default; give them a hash of their own.
            for (h, &is_null) in out.iter_mut().zip(nulls) {
                if is_null {
                    *h = mix64(*h ^ 0x6e75_6c6c);
                }
            }
        }
    }
}

/// Whether row `i` of `a` and row `j` of `b` hold equal keys (NULL equal to NULL).
fn rows_equal(a: &[Vector], i: usize, b: &[Vector], j: usize) -> bool {
    a.iter().zip(b).all(|(x, y)| values_equal(x, i, y, j))
}

#[inline]
fn values_equal(a: &Vector, i: usize, b: &Vector, j: usize) -> bool {
    match (a.is_null(i), b.is_null(j)) {
        (true, true) => return true,
        (false, false) => {}
        _ => return false,
    }
    fn int(d: &Data, i: usize) -> Option<i64> {
        match d {
            Data::I16(v) => Some(v[i] as i64),
            Data::I32(v) => Some(v[i] as i64),
            Data::I64(v) => Some(v[i]),
            _ => None,
        }
    }
    fn float(d: &Data, i: usize) -> Option<f64> {
        match d {
            Data::F32(v) => Some(v[i] as f64),
            Data::F64(v) => Some(v[i]),
            _ => None,
        }
    }
    match (&a.data, &b.data) {
        (Data::I32(x), Data::I32(y)) => x[i] == y[j],
        (Data::I64(x), Data::I64(y)) => x[i] == y[j],
        (Data::Bool(x), Data::Bool(y)) => x[i] == y[j],
        (Data::Dec(x), Data::Dec(y)) => x[i] == y[j],
        (Data::Dec64(x), Data::Dec64(y)) if x.scale == y.scale => x.values[i] == y.values[j],
        (Data::Dec64(x), Data::Dec64(y)) => x.get(i) == y.get(j),
        (Data::Dec64(x), Data::Dec(y)) => x.get(i) == y[j],
        (Data::Dec(x), Data::Dec64(y)) => x[i] == y.get(j),
        (Data::Interval(x), Data::Interval(y)) => x[i].span_micros() == y[j].span_micros(),
        (Data::Str(x), Data::Str(y)) => {
            let s = x.get(i);
            let t = y.get(j);
            let s = if matches!(a.ty, DataType::Char(_)) {
                bpchar_trim(s)
            } else {
                s
            };
            let t = if matches!(b.ty, DataType::Char(_)) {
                bpchar_trim(t)
            } else {
                t
            };
            s == t
        }
        (x, y) => {
            if let (Some(p), Some(q)) = (int(x, i), int(y, j)) {
                p == q
            } else if let (Some(p), Some(q)) = (float(x, i), float(y, j)) {
                float_bits(p) == float_bits(q)
            } else {
                false
            }
        }
    }
}

/// The join bee slot of a packed slot (strings have none).
fn join_slot(kind: SlotKind) -> Option<beedb_bees::join::JoinSlot> {
    use beedb_bees::join::JoinSlot;
    Some(match kind {
        SlotKind::Bool => JoinSlot::Bool,
        SlotKind::Int(b) => JoinSlot::Int(b),
        SlotKind::Float => JoinSlot::Float,
        SlotKind::Dec(_) => JoinSlot::Int(8),
        SlotKind::Str(_) => return None,
    })
}

/// The spec of a join bee probing a table of keys of `build` types (its packed
/// layout) with keys of `probe` types; `None` when the layout is generic, a slot is
/// a string, or a probe type does not fit its slot (see `sql/src/bees/join.rs`).
pub fn join_key_spec(build: &[DataType], probe: &[DataType]) -> Option<beedb_bees::JoinKeySpec> {
    use beedb_bees::join::{JoinKeyPart, JoinLoad};
    if build.len() != probe.len() {
        return None;
    }
    let (layout, bits) = Layout::of(build)?;
    let mut parts = Vec::with_capacity(build.len());
    for (&(kind, offset), t) in layout.slots.iter().zip(probe) {
        let load = match (t, kind) {
            (DataType::Boolean, SlotKind::Bool) => JoinLoad::Bool,
            (DataType::SmallInt, SlotKind::Int(_)) => JoinLoad::I16,
            (DataType::Integer | DataType::Date, SlotKind::Int(4 | 8)) => JoinLoad::I32,
            (DataType::BigInt | DataType::Timestamp, SlotKind::Int(8)) => JoinLoad::I64,
            (DataType::Real, SlotKind::Float) => JoinLoad::F32,
            (DataType::Double, SlotKind::Float) => JoinLoad::F64,
            (DataType::Decimal { precision: Some(p), scale }, SlotKind::Dec(s)) if *p <= 18 && *scale == s => JoinLoad::I64,
            _ => return None,
        };
        parts.push(JoinKeyPart { load, slot: join_slot(kind)?, offset });
    }
    let spec = beedb_bees::JoinKeySpec { parts, wide: bits > 64 };
    spec.check().ok()?;
    Some(spec)
}

enum Table {
    Packed64(PackedTable<u64>),
    Packed128(PackedTable<u128>),
    Generic(GenericTable),
}

/// Distinct keys of some column types, each with a dense id; see the module docs.
pub struct KeyTable {
    table: Table,
    /// The distinct keys, one vector per key column, row `id` holding key `id`.
    keys: Vec<Vector>,
}

impl KeyTable {
    pub fn new(types: &[DataType]) -> KeyTable {
        let table = match Layout::of(types) {
            Some((layout, bits)) if bits <= 64 => Table::Packed64(PackedTable::new(layout)),
            Some((layout, _)) => Table::Packed128(PackedTable::new(layout)),
            None => Table::Generic(GenericTable::new()),
        };
        KeyTable {
            table,
            keys: types.iter().map(|t| Vector::new(*t, 16)).collect(),
        }
    }

    /// A table that never packs (for tests comparing the two layouts).
    #[cfg(test)]
    pub fn new_generic(types: &[DataType]) -> KeyTable {
        KeyTable {
            table: Table::Generic(GenericTable::new()),
            keys: types.iter().map(|t| Vector::new(*t, 16)).collect(),
        }
    }

    /// Which layout the table uses now (for EXPLAIN-like diagnostics and tests).
    pub fn layout_name(&self) -> &'static str {
        match self.table {
            Table::Packed64(_) => "packed64",
            Table::Packed128(_) => "packed128",
            Table::Generic(_) => "generic",
        }
    }

    /// Number of distinct keys.
    pub fn len(&self) -> usize {
        self.keys.first().map_or(0, |k| k.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The distinct keys (row `id` of each vector is key `id`).
    pub fn keys(&self) -> &[Vector] {
        &self.keys
    }

    pub fn into_keys(self) -> Vec<Vector> {
        self.keys
    }

    /// Bytes held (for memory accounting).
    pub fn heap_bytes(&self) -> usize {
        let slots = match &self.table {
            Table::Packed64(t) => t.table.slots.len() * 16,
            Table::Packed128(t) => t.table.slots.len() * 32,
            Table::Generic(t) => t.table.slots.len() * 16,
        };
        slots + self.keys.iter().map(|k| k.heap_bytes()).sum::<usize>()
    }

    /// Turns a packed table into a generic one over the same keys and ids.
    fn to_generic(&mut self) {
        if matches!(self.table, Table::Generic(_)) {
            return;
        }
        let mut g = GenericTable::new();
        let mut h = Vec::new();
        row_hashes(&self.keys, self.len(), &mut h);
        for &x in &h {
            g.insert_new(x);
        }
        self.table = Table::Generic(g);
    }

    /// The id of each row's key of `cols` (`n` rows) in `ids`, inserting new keys.
    /// With `skip_nulls`, rows with a NULL in any key column get [`NO_ID`] and are not
    /// inserted (join build); otherwise NULL is a key like any other (grouping).
    pub fn insert(&mut self, cols: &[Vector], n: usize, skip_nulls: bool, ids: &mut Vec<u32>) {
        ids.clear();
        ids.reserve(n);
        let null_row = |k: usize| skip_nulls && cols.iter().any(|c| c.is_null(k));
        let any_nulls = skip_nulls && cols.iter().any(|c| c.nulls.is_some());
        macro_rules! packed {
            ($t:expr) => {{
                let t = $t;
                let mut packed = std::mem::take(&mut t.packed);
                let mut bad = std::mem::take(&mut t.bad);
                t.layout.pack(cols, n, &mut packed, &mut bad);
                let fits = bad.is_empty();
                if fits {
                    // The previous row's key and id: rows stored in key order (lineitem
                    // by order key) repeat a key in runs, which then cost one
                    // comparison instead of a probe of a table larger than the caches.
                    let (mut last_key, mut last_id) = (0u128, NO_ID);
                    for (k, &p) in packed.iter().enumerate() {
                        if any_nulls && null_row(k) {
                            ids.push(NO_ID);
                            continue;
                        }
                        if last_id != NO_ID && p == last_key {
                            ids.push(last_id);
                            continue;
                        }
                        let (id, new) = t.find_or_insert(PackedKey::from_packed(p));
                        if new {
                            for (key, c) in self.keys.iter_mut().zip(cols) {
                                key.push_from(c, k);
                            }
                        }
                        (last_key, last_id) = (p, id);
                        ids.push(id);
                    }
                }
                t.packed = packed;
                t.bad = bad;
                fits
            }};
        }
        let done = match &mut self.table {
            Table::Packed64(t) => packed!(t),
            Table::Packed128(t) => packed!(t),
            Table::Generic(_) => false,
        };
        if done {
            return;
        }
        // A value the packed layout cannot hold: continue generically from here.
        self.to_generic();
        let Table::Generic(g) = &mut self.table else {
            unreachable!("to_generic leaves a generic table")
        };
        let mut hashes = std::mem::take(&mut g.hashes);
        row_hashes(cols, n, &mut hashes);
        for (k, &h) in hashes.iter().enumerate() {
            if any_nulls && null_row(k) {
                ids.push(NO_ID);
                continue;
            }
            let mut id = g.find(h, cols, k, &self.keys);
            if id == NO_ID {
                id = g.insert_new(h);
                for (key, c) in self.keys.iter_mut().zip(cols) {
                    key.push_from(c, k);
                }
            }
            ids.push(id);
        }
        g.hashes = hashes;
    }

    /// The id of each row's key of `cols` (`n` rows) in `ids`, [`NO_ID`] when absent
    /// or when a key column is NULL (a join probe: NULL never matches). Only reads
    /// the table, so the threads of a parallel pipeline probe one table at once, each
    /// with its own `scratch`.
    pub fn find(&self, cols: &[Vector], n: usize, ids: &mut Vec<u32>, scratch: &mut ProbeScratch) {
        self.find_where(cols, n, ids, scratch, false);
    }

    /// Like [`KeyTable::find`], but with grouping's equality: a NULL key column
    /// matches a NULL (an aggregate asking which rows belong to groups it holds).
    pub fn find_groups(&self, cols: &[Vector], n: usize, ids: &mut Vec<u32>, scratch: &mut ProbeScratch) {
        self.find_where(cols, n, ids, scratch, true);
    }

    /// [`KeyTable::find`] through join bee `bee` (whose spec came from
    /// [`join_key_spec`] for this table's key types): `false`, with `ids` unspecified,
    /// when the bee does not apply — the table turned generic, or a vector is not of
    /// the type the spec says (a decimal at another scale) — and the caller should
    /// call `find`.
    pub fn find_bee(&self, bee: &beedb_bees::JoinBee, cols: &[Vector], n: usize, ids: &mut Vec<u32>) -> bool {
        use beedb_bees::join::{JoinData, JoinInput, JoinTable};
        let (layout, table) = match &self.table {
            Table::Packed64(t) => (&t.layout, JoinTable::Narrow(&t.table.slots)),
            Table::Packed128(t) => (&t.layout, JoinTable::Wide(&t.table.slots)),
            Table::Generic(_) => return false,
        };
        let parts = &bee.spec().parts;
        if cols.len() != parts.len() || layout.slots.len() != parts.len() {
            return false;
        }
        let mut inputs = Vec::with_capacity(cols.len());
        for ((col, &(kind, off)), part) in cols.iter().zip(&layout.slots).zip(parts) {
            if part.offset != off || join_slot(kind) != Some(part.slot) {
                return false;
            }
            let data = match (&col.data, kind) {
                (Data::Bool(d), _) => JoinData::Bool(d),
                (Data::I16(d), _) => JoinData::I16(d),
                (Data::I32(d), _) => JoinData::I32(d),
                (Data::I64(d), SlotKind::Int(_)) => JoinData::I64(d),
                (Data::F32(d), _) => JoinData::F32(d),
                (Data::F64(d), _) => JoinData::F64(d),
                (Data::Dec64(d), SlotKind::Dec(scale)) if d.scale == scale => JoinData::I64(&d.values),
                _ => return false,
            };
            if data.load() != part.load {
                return false;
            }
            inputs.push(JoinInput { data, nulls: col.nulls.as_deref() });
        }
        bee.probe(&inputs, n, table, ids).is_ok()
    }

    fn find_where(&self, cols: &[Vector], n: usize, ids: &mut Vec<u32>, scratch: &mut ProbeScratch, nulls_match: bool) {
        ids.clear();
        ids.reserve(n);
        let any_nulls = !nulls_match && cols.iter().any(|c| c.nulls.is_some());
        let null_row = |k: usize| any_nulls && cols.iter().any(|c| c.is_null(k));
        macro_rules! packed {
            ($t:expr) => {{
                let t = $t;
                let (packed, bad) = (&mut scratch.packed, &mut scratch.bad);
                t.layout.pack(cols, n, packed, bad);
                // A run of equal keys is looked up once (see `insert`).
                let mut last: Option<(u128, u32)> = None;
                for (k, &p) in packed.iter().enumerate() {
                    if null_row(k) || (!bad.is_empty() && bad[k]) {
                        ids.push(NO_ID);
                    } else {
                        let id = match last {
                            Some((key, id)) if key == p => id,
                            _ => t.find(PackedKey::from_packed(p)),
                        };
                        last = Some((p, id));
                        ids.push(id);
                    }
                }
            }};
        }
        match &self.table {
            Table::Packed64(t) => packed!(t),
            Table::Packed128(t) => packed!(t),
            Table::Generic(g) => {
                let hashes = &mut scratch.hashes;
                row_hashes(cols, n, hashes);
                for (k, &h) in hashes.iter().enumerate() {
                    ids.push(if null_row(k) {
                        NO_ID
                    } else {
                        g.find(h, cols, k, &self.keys)
                    });
                }
            }
        }
    }
}

/// A probe's buffers for [`KeyTable::find`]: packed keys or row hashes of one batch.
#[derive(Default)]
pub struct ProbeScratch {
    packed: Vec<u128>,
    bad: Vec<bool>,
    hashes: Vec<u64>,
}

/// The generic twin: keys encoded as bytes ([`row_key`]) in a hash map. Same ids, same
/// order; kept to check [`KeyTable`] against.
pub struct ByteKeyTable {
    map: FxHashMap<Vec<u8>, u32>,
    keys: Vec<Vector>,
}

impl ByteKeyTable {
    pub fn new(types: &[DataType]) -> ByteKeyTable {
        ByteKeyTable {
            map: FxHashMap::default(),
            keys: types.iter().map(|t| Vector::new(*t, 16)).collect(),
        }
    }

    pub fn keys(&self) -> &[Vector] {
        &self.keys
    }

    pub fn insert(&mut self, cols: &[Vector], n: usize, skip_nulls: bool, ids: &mut Vec<u32>) {
        ids.clear();
        let mut key = Vec::new();
        for k in 0..n {
            key.clear();
            if row_key(cols, k, &mut key) && skip_nulls {
                ids.push(NO_ID);
                continue;
            }
            let next = self.map.len() as u32;
            let id = *self.map.entry(key.clone()).or_insert(next);
            if id == next {
                for (kv, c) in self.keys.iter_mut().zip(cols) {
                    kv.push_from(c, k);
                }
            }
            ids.push(id);
        }
    }

    pub fn find(&self, cols: &[Vector], n: usize, ids: &mut Vec<u32>) {
        ids.clear();
        let mut key = Vec::new();
        for k in 0..n {
            key.clear();
            if row_key(cols, k, &mut key) {
                ids.push(NO_ID);
                continue;
            }
            ids.push(self.map.get(&key).copied().unwrap_or(NO_ID));
        }
    }
}

#[cfg(test)]
mod tests {
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    use super::*;
    use crate::types::{Interval, Value};

    /// A random value of `ty` from a small domain (so keys repeat), NULL one time in 8.
    fn random_value(rng: &mut StdRng, ty: &DataType) -> Value {
        if rng.random_range(0..8) == 0 {
            return Value::Null;
        }
        let small = rng.random_range(-3i64..4);
        match ty {
            DataType::Boolean => Value::Boolean(small > 0),
            DataType::SmallInt => Value::SmallInt(small as i16 * 1000),
            DataType::Integer => Value::Integer(small as i32 * 100_000),
            DataType::Date => Value::Date(crate::types::Date(small as i32)),
            DataType::BigInt => Value::BigInt(small * 10_000_000_000),
            DataType::Timestamp => Value::Timestamp(crate::types::Timestamp(small)),
            DataType::Real => Value::Real([0.0, -0.0, f32::NAN, 1.5, -2.25][rng.random_range(0..5)]),
            DataType::Double => {
                Value::Double([0.0, -0.0, f64::NAN, 1.5, f64::INFINITY][rng.random_range(0..5)])
            }
            DataType::Decimal { precision, scale } => {
                // The same number at several scales: 1.5 = 1.50 = 1.500.
                let extra = rng.random_range(0..3u8);
                let s = match precision {
                    Some(_) => *scale,
                    None => extra,
                };
                let unscaled = small as i128 * 15 * 10i128.pow(s as u32) / 10;
                Value::Decimal(Decimal::new(unscaled, s).unwrap())
            }
            DataType::Interval => Value::Interval(
                // 1 month = 30 days by span.
                [
                    Interval { months: 1, days: 0, micros: 0 },
                    Interval { months: 0, days: 30, micros: 0 },
                    Interval { months: 0, days: small as i32, micros: 0 },
                ][rng.random_range(0..3)],
            ),
            DataType::Char(_) => Value::Char(["a", "a  ", "b", "", " "][rng.random_range(0..5)].into()),
            DataType::Varchar(_) | DataType::Text => {
                Value::Varchar(["a", "a ", "bc", "", "xyz"][rng.random_range(0..5)].into())
            }
        }
    }

    fn random_columns(rng: &mut StdRng, types: &[DataType], n: usize) -> Vec<Vector> {
        types
            .iter()
            .map(|t| {
                let mut v = Vector::new(*t, n);
                for _ in 0..n {
                    v.push_value(&random_value(rng, t));
                }
                v
            })
            .collect()
    }

    fn rows(cols: &[Vector]) -> Vec<Vec<String>> {
        let n = cols.first().map_or(0, |c| c.len());
        (0..n)
            .map(|k| cols.iter().map(|c| format!("{:?}", c.value(k))).collect())
            .collect()
    }

    const TYPES: &[DataType] = &[
        DataType::Boolean,
        DataType::SmallInt,
        DataType::Integer,
        DataType::BigInt,
        DataType::Date,
        DataType::Timestamp,
        DataType::Real,
        DataType::Double,
        DataType::Decimal { precision: Some(15), scale: 2 },
        DataType::Decimal { precision: None, scale: 0 },
        DataType::Decimal { precision: Some(30), scale: 3 },
        DataType::Interval,
        DataType::Char(1),
        DataType::Char(3),
        DataType::Varchar(Some(2)),
        DataType::Varchar(None),
        DataType::Text,
    ];

    /// Inserts and probes `batches` with the typed table (its own layout and forced
    /// generic) and the byte-key twin; ids, keys and probe results must agree.
    fn check(types: &[DataType], batches: &[Vec<Vector>], skip_nulls: bool) {
        let mut typed = KeyTable::new(types);
        let mut generic = KeyTable::new_generic(types);
        let mut twin = ByteKeyTable::new(types);
        let (mut a, mut b, mut c) = (Vec::new(), Vec::new(), Vec::new());
        for cols in batches {
            let n = cols[0].len();
            typed.insert(cols, n, skip_nulls, &mut a);
            generic.insert(cols, n, skip_nulls, &mut b);
            twin.insert(cols, n, skip_nulls, &mut c);
            assert_eq!(a, c, "typed ({}) vs byte keys, types {types:?}", typed.layout_name());
            assert_eq!(b, c, "generic vs byte keys, types {types:?}");
        }
        assert_eq!(rows(typed.keys()), rows(twin.keys()));
        assert_eq!(rows(generic.keys()), rows(twin.keys()));
        for cols in batches {
            let n = cols[0].len();
            typed.find(cols, n, &mut a, &mut ProbeScratch::default());
            generic.find(cols, n, &mut b, &mut ProbeScratch::default());
            twin.find(cols, n, &mut c);
            assert_eq!(a, c, "find: typed ({}) vs byte keys", typed.layout_name());
            assert_eq!(b, c, "find: generic vs byte keys");
        }
    }

    #[test]
    fn typed_keys_match_byte_keys_for_every_type_and_batch_size() {
        let mut rng = StdRng::seed_from_u64(12);
        for batch in [1usize, 2, 1023, 1024, 1025] {
            for t in TYPES {
                let batches: Vec<_> = (0..3).map(|_| random_columns(&mut rng, &[*t], batch)).collect();
                check(&[*t], &batches, false);
                check(&[*t], &batches, true);
            }
            // Combinations: two and three columns, packed (≤ 64 and ≤ 128 bits) and not.
            for _ in 0..20 {
                let k = rng.random_range(2..4);
                let types: Vec<DataType> =
                    (0..k).map(|_| TYPES[rng.random_range(0..TYPES.len())]).collect();
                let batches: Vec<_> =
                    (0..3).map(|_| random_columns(&mut rng, &types, batch)).collect();
                check(&types, &batches, false);
                check(&types, &batches, true);
            }
        }
    }

    /// Keys in runs (as in a table stored in key order), NULL runs included: a run
    /// is looked up once, and the ids must still be the byte-key twin's.
    #[test]
    fn runs_of_equal_keys_match_byte_keys() {
        let mut rng = StdRng::seed_from_u64(21);
        for batch in [1usize, 2, 1023, 1024, 1025] {
            let mut type_sets: Vec<Vec<DataType>> = TYPES.iter().map(|t| vec![*t]).collect();
            for _ in 0..10 {
                let k = rng.random_range(2..4);
                type_sets.push((0..k).map(|_| TYPES[rng.random_range(0..TYPES.len())]).collect());
            }
            for types in &type_sets {
                let batches: Vec<Vec<Vector>> = (0..3)
                    .map(|_| {
                        let distinct = random_columns(&mut rng, types, batch.div_ceil(3).max(1));
                        let mut cols: Vec<Vector> = types.iter().map(|t| Vector::new(*t, batch)).collect();
                        let (mut row, mut left) = (0, 0);
                        for _ in 0..batch {
                            if left == 0 {
                                row = rng.random_range(0..distinct[0].len());
                                left = rng.random_range(1..6);
                            }
                            left -= 1;
                            for (c, d) in cols.iter_mut().zip(&distinct) {
                                c.push_from(d, row);
                            }
                        }
                        cols
                    })
                    .collect();
                check(types, &batches, false);
                check(types, &batches, true);
            }
        }
    }

    #[test]
    fn layouts_follow_the_key_types() {
        use DataType::*;
        assert_eq!(KeyTable::new(&[Integer]).layout_name(), "packed64");
        assert_eq!(KeyTable::new(&[Char(1), Char(1)]).layout_name(), "packed64");
        assert_eq!(KeyTable::new(&[Integer, Date, Integer]).layout_name(), "packed128");
        assert_eq!(
            KeyTable::new(&[Decimal { precision: Some(15), scale: 2 }, Integer]).layout_name(),
            "packed128"
        );
        assert_eq!(KeyTable::new(&[BigInt, BigInt]).layout_name(), "generic");
        assert_eq!(KeyTable::new(&[Text]).layout_name(), "generic");
        assert_eq!(KeyTable::new(&[Interval]).layout_name(), "generic");
    }

    #[test]
    fn empty_input_has_no_keys() {
        for t in TYPES {
            check(&[*t], &[random_columns(&mut StdRng::seed_from_u64(1), &[*t], 0)], false);
            let mut table = KeyTable::new(&[*t]);
            let mut ids = vec![7];
            table.insert(&[Vector::new(*t, 0)], 0, false, &mut ids);
            assert!(ids.is_empty() && table.is_empty());
        }
    }

    /// Values the packed layout cannot hold turn the table generic, keeping ids.
    #[test]
    fn packed_table_turns_generic_on_values_it_cannot_hold() {
        let types = [DataType::Char(1), DataType::Decimal { precision: Some(4), scale: 1 }];
        let batch = |strs: &[&str], decs: &[(i128, u8)]| {
            let mut s = Vector::new(types[0], 0);
            let mut d = Vector::new(types[1], 0);
            for (x, &(u, sc)) in strs.iter().zip(decs) {
                s.push_value(&Value::Char((*x).into()));
                d.push_value(&Value::Decimal(Decimal::new(u, sc).unwrap()));
            }
            vec![s, d]
        };
        let first = batch(&["a", "b", "a"], &[(15, 1), (15, 1), (150, 2)]);
        // 'é' is two bytes; 1.25 has more digits than scale 1.
        let second = batch(&["é", "a", "b"], &[(15, 1), (150, 2), (125, 2)]);
        let mut t = KeyTable::new(&types);
        assert_eq!(t.layout_name(), "packed128");
        let mut ids = Vec::new();
        t.insert(&first, 3, false, &mut ids);
        assert_eq!(ids, [0, 1, 0]);
        t.insert(&second, 3, false, &mut ids);
        assert_eq!(t.layout_name(), "generic");
        assert_eq!(ids, [2, 0, 3]);
        check(&types, &[first, second], false);
    }

    /// A probe key of another integer width than the build key, and values out of the
    /// narrower range.
    #[test]
    fn probe_with_wider_integers() {
        let mut t = KeyTable::new(&[DataType::SmallInt]);
        let build = Vector::from_data(DataType::SmallInt, Data::I16(vec![-1, 7, i16::MAX]), None);
        let mut ids = Vec::new();
        t.insert(&[build], 3, true, &mut ids);
        let probe = Vector::from_data(
            DataType::BigInt,
            Data::I64(vec![7, -1, 65535, i16::MAX as i64, 1 << 40]),
            None,
        );
        t.find(&[probe], 5, &mut ids, &mut ProbeScratch::default());
        assert_eq!(ids, [1, 0, NO_ID, 2, NO_ID]);
    }
}
