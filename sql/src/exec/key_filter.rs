//! Join key filters: a hash join marked `key_filter` (rule `optimizer_join_filter`)
//! hands the heap scans its probe keys come from a compact summary of its build keys,
//! and each such scan tests a tuple's key column before decoding the rest of it
//! (TPC-H Q17 probes 6M lineitem rows to keep 6,088; Q8 and Q9 keep under 1% and 5%).
//! A tuple whose key the build does not hold could only be dropped by the join, so
//! the scan drops it first: no decoding of its other columns, no room in a batch, no
//! probe. This is late materialization for the one column a join decides on.
//!
//! - [`KeyFilter`] summarizes the distinct build keys of one integer key column
//!   (integers by value, dates, timestamps; `plan::key_source` says which joins
//!   qualify): their range, then a bitmap over that range when it is dense enough, or
//!   a hashed bitmap (one hash, 16 bits per key, about 6% false positives) when it is
//!   not. It may let through keys the build lacks (the join drops those), never the
//!   reverse.
//! - The join ([`super::join::join`], or [`super::join::left_build`] for the right input
//!   a semi or anti join streams past the left rows it holds) registers its filters
//!   with the executor for the time that input runs ([`super::Exec::with_key_filters`]); a scan takes those
//!   for its own node id when it starts ([`ScanKeyTest::for_scan`]). The filters are
//!   made once per build, so the threads of a parallel pipeline share them.
//! - A scan stops testing when the test proves not to pay: after
//!   [`TRIAL_TUPLES`] tuples, if more than nine in ten passed.
//!
//! The generic twin is the join itself: with `optimizer_join_filter = off` no join is
//! marked and every row reaches the probe; results are the same (tests run both).

use std::sync::Arc;

use beedb_storage::TupleId;
use beedb_storage::tuple::Attr;

use crate::catalog::TableDef;
use crate::plan::key_source::filterable_keys;
use crate::vector::{Data, Vector};

/// Tuples a scan tests before it judges whether testing pays.
pub const TRIAL_TUPLES: u64 = 1 << 16;

/// Most bits a filter's bitmap holds (16 MiB).
const MAX_BITS: u64 = 1 << 27;

/// A dense bitmap is used when the key range has at most this many values per key.
const DENSE_SPREAD: u64 = 64;

/// Bits per key of a hashed bitmap.
const HASHED_BITS_PER_KEY: u64 = 16;

/// What one build's keys of an integer column are: every key lies in `min..=max`,
/// and its bit (the offset from `min`, or a hash) is set.
#[derive(Debug)]
pub struct KeyFilter {
    min: i64,
    max: i64,
    bits: Vec<u64>,
    /// `Some(shift)`: a key's bit is the top bits of a multiplicative hash (the bitmap
    /// has 2^(64 - shift) bits); `None`: its offset from `min`.
    hashed: Option<u32>,
}

impl KeyFilter {
    /// The filter of the keys in `keys` (a build's distinct keys; NULLs are skipped),
    /// if the column is an integer kind. An empty key set gives a filter that passes
    /// nothing.
    pub fn of(keys: &Vector) -> Option<KeyFilter> {
        let present = |i: usize| !keys.is_null(i);
        let values: Vec<i64> = match &keys.data {
            Data::I16(v) => v.iter().enumerate().filter(|&(i, _)| present(i)).map(|(_, &x)| x as i64).collect(),
            Data::I32(v) => v.iter().enumerate().filter(|&(i, _)| present(i)).map(|(_, &x)| x as i64).collect(),
            Data::I64(v) => v.iter().enumerate().filter(|&(i, _)| present(i)).map(|(_, &x)| x).collect(),
            _ => return None,
        };
        let (Some(&min), Some(&max)) = (values.iter().min(), values.iter().max()) else {
            return Some(KeyFilter { min: 1, max: 0, bits: Vec::new(), hashed: None });
        };
        let n = values.len() as u64;
        let span = (max as i128 - min as i128 + 1) as u128;
        let (nbits, hashed) = if span <= (n.saturating_mul(DENSE_SPREAD)).min(MAX_BITS) as u128 {
            (span as u64, None)
        } else {
            let nbits = n.saturating_mul(HASHED_BITS_PER_KEY).next_power_of_two().clamp(64, MAX_BITS);
            (nbits, Some(64 - nbits.trailing_zeros()))
        };
        let mut f = KeyFilter { min, max, bits: vec![0; nbits.div_ceil(64) as usize], hashed };
        for &x in &values {
            let b = f.bit(x);
            f.bits[b / 64] |= 1 << (b % 64);
        }
        Some(f)
    }

    /// The bit of key `x` (which lies in `min..=max`).
    #[inline]
    fn bit(&self, x: i64) -> usize {
        match self.hashed {
            None => x.wrapping_sub(self.min) as u64 as usize,
            Some(shift) => ((x as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> shift) as usize,
        }
    }

    /// Whether `x` may be one of the keys (always true when it is).
    #[inline]
    pub fn may_contain(&self, x: i64) -> bool {
        if x < self.min || x > self.max {
            return false;
        }
        let b = self.bit(x);
        self.bits[b / 64] & (1 << (b % 64)) != 0
    }

    /// Bytes the filter holds.
    pub fn heap_bytes(&self) -> usize {
        self.bits.len() * 8
    }
}

/// A filter for the scan `scan_id` (pre-order id in the running plan), on table
/// column `column`.
#[derive(Debug, Clone)]
pub(crate) struct ScanKeyFilter {
    pub scan_id: usize,
    pub column: usize,
    pub filter: Arc<KeyFilter>,
}

/// The filters a join marked `key_filter` hands the input it streams: `input` (node
/// `input_id`, joined on `input_keys`) against the keys the join holds of its other
/// input, `other_keys`, whose distinct values are `keys` (one vector per key). The
/// probe (left) input of a join building on its right; the right input of a semi or
/// anti join holding its left (`join::left_build`), whose right rows only mark held
/// rows with equal keys.
pub(super) fn for_input(
    input: &crate::plan::Plan,
    input_id: usize,
    input_keys: &[crate::expr::Expr],
    other_keys: &[crate::expr::Expr],
    keys: &[Vector],
) -> Vec<ScanKeyFilter> {
    filterable_keys(input, input_keys, other_keys)
        .into_iter()
        .filter_map(|(k, src)| {
            let filter = KeyFilter::of(keys.get(k)?)?;
            Some(ScanKeyFilter { scan_id: input_id + src.offset, column: src.column, filter: Arc::new(filter) })
        })
        .collect()
}

/// The key tests one scan runs on its tuples, with the count that decides whether
/// they pay.
pub(super) struct ScanKeyTest {
    filters: Vec<ScanKeyFilter>,
    /// The farthest offset from a tuple's start that a test reads when its key is a
    /// fixed-width column (the tuple's header is read at offset 0): the line
    /// [`ScanKeyTest::retain`] prefetches besides the header's.
    key_offset: usize,
    tested: u64,
    passed: u64,
}

/// How many tuples ahead of the one it tests [`ScanKeyTest::retain`] asks for the
/// next tuple's cache lines. The test reads one or two lines of each tuple and
/// nothing else, so without a prefetch each tuple waits for a miss of its own (66%
/// of a test's time on TPC-H Q17 was the first load of the tuple's header); eight
/// tuples of about 150 bytes ahead is more than a miss's latency of work, and few
/// enough misses in flight for the core's miss buffers.
const PREFETCH_AHEAD: usize = 8;

impl ScanKeyTest {
    /// The tests registered for scan node `id`, if any.
    pub(super) fn for_scan(ex: &super::Exec<'_>, id: usize, table: &TableDef) -> Option<ScanKeyTest> {
        let filters: Vec<ScanKeyFilter> = ex.key_filters.borrow().iter().filter(|f| f.scan_id == id).cloned().collect();
        (!filters.is_empty()).then(|| ScanKeyTest::new(filters, table))
    }

    /// The tests `filters` on tuples of `table`.
    fn new(filters: Vec<ScanKeyFilter>, table: &TableDef) -> ScanKeyTest {
        let key_offset = filters
            .iter()
            .filter(|f| f.column < table.layout.natts())
            .map(|f| match table.layout.placement(f.column) {
                beedb_storage::tuple::AttrPlacement::Fixed { offset, .. } => offset,
                beedb_storage::tuple::AttrPlacement::Variable { .. } => 0,
            })
            .max()
            .unwrap_or(0);
        ScanKeyTest { filters, key_offset, tested: 0, passed: 0 }
    }

    /// Keeps the tuples of `items` (index ranges of `buf`) whose keys pass every
    /// filter, in their order. Returns `false` once testing no longer pays: the caller
    /// drops the test.
    pub(super) fn retain(&mut self, table: &TableDef, items: &mut Vec<(TupleId, usize, usize)>, buf: &[u8]) -> bool {
        let before = items.len();
        let mut kept = 0;
        for k in 0..before {
            if let Some(&(_, s, _)) = items.get(k + PREFETCH_AHEAD) {
                prefetch(buf, s);
                prefetch(buf, s + self.key_offset);
            }
            let (_, s, e) = items[k];
            let tuple = &buf[s..e];
            let passes = self.filters.iter().all(|f| match key_of(table, tuple, f.column) {
                Some(Some(x)) => f.filter.may_contain(x),
                // A NULL key never matches.
                Some(None) => false,
                // Not readable as an integer (a damaged tuple): the decoder reports it.
                None => true,
            });
            if passes {
                items[kept] = items[k];
                kept += 1;
            }
        }
        items.truncate(kept);
        self.tested += before as u64;
        self.passed += kept as u64;
        self.tested < TRIAL_TUPLES || self.passed * 10 <= self.tested * 9
    }
}

/// Asks the CPU to load the cache line holding `buf[at]` (nothing when `at` is past
/// the end): a hint only, it never faults and changes no memory.
#[inline]
fn prefetch(buf: &[u8], at: usize) {
    #[cfg(target_arch = "x86_64")]
    if let Some(b) = buf.get(at) {
        // SAFETY: `b` is a live byte of `buf`; a prefetch neither reads it into the
        // program nor writes anything.
        unsafe { std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(std::ptr::from_ref(b).cast()) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (buf, at);
}

/// The integer in column `column` of stored tuple `tuple` (`Some(None)` for NULL);
/// `None` when it cannot be read as one.
#[inline]
fn key_of(table: &TableDef, tuple: &[u8], column: usize) -> Option<Option<i64>> {
    let b = match table.layout.plain_fixed(tuple, column) {
        Some(b) => b,
        None => match table.layout.attribute(tuple, column).ok()? {
            Attr::Null => return Some(None),
            Attr::Bytes(b) => b,
            Attr::External { .. } => return None,
        },
    };
    Some(Some(match b.len() {
        2 => i16::from_le_bytes(b.try_into().ok()?) as i64,
        4 => i32::from_le_bytes(b.try_into().ok()?) as i64,
        8 => i64::from_le_bytes(b.try_into().ok()?),
        _ => return None,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::DataType;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    fn vector(keys: &[Option<i64>]) -> Vector {
        let data = Data::I64(keys.iter().map(|k| k.unwrap_or(0)).collect());
        let nulls = keys.iter().any(Option::is_none).then(|| keys.iter().map(Option::is_none).collect());
        Vector::from_data(DataType::BigInt, data, nulls)
    }

    #[test]
    fn a_filter_passes_every_key_it_was_made_from() {
        let mut rng = StdRng::seed_from_u64(7);
        for case in 0..200 {
            // Dense ranges, sparse ones (hashed), extremes, negatives, NULLs.
            let n = rng.random_range(1..2000);
            let spread: i64 = [1, 10, 64, 65, 1000, 1 << 40][case % 6];
            let base: i64 = [0, -5_000, i64::MIN / 2, i64::MAX - (n as i64) * spread][case % 4];
            let keys: Vec<Option<i64>> = (0..n)
                .map(|_| (rng.random_range(0..10) > 0).then(|| base.saturating_add(rng.random_range(0..(n as i64).saturating_mul(spread)))))
                .collect();
            let f = KeyFilter::of(&vector(&keys)).unwrap();
            for k in keys.iter().flatten() {
                assert!(f.may_contain(*k), "case {case}: key {k} dropped");
            }
            // Outside the range nothing passes; inside, a hashed filter is selective.
            let present: Vec<i64> = keys.iter().flatten().copied().collect();
            if let (Some(&lo), Some(&hi)) = (present.iter().min(), present.iter().max()) {
                assert!(lo == i64::MIN || !f.may_contain(lo - 1));
                assert!(hi == i64::MAX || !f.may_contain(hi + 1));
            }
        }
        assert!(KeyFilter::of(&vector(&[i64::MIN.into(), i64::MAX.into()])).unwrap().may_contain(i64::MAX));
    }

    #[test]
    fn a_dense_filter_is_exact_and_a_hashed_one_mostly_so() {
        let dense = KeyFilter::of(&vector(&(0..1000).map(|k| Some(k * 3)).collect::<Vec<_>>())).unwrap();
        assert!(dense.hashed.is_none());
        assert_eq!((0..3000).filter(|&k| dense.may_contain(k)).count(), 1000);
        let sparse = KeyFilter::of(&vector(&(0..1000).map(|k| Some(k * 1_000_003)).collect::<Vec<_>>())).unwrap();
        assert!(sparse.hashed.is_some());
        let false_positives = (0..100_000i64).map(|k| k * 7919 + 1).filter(|&k| sparse.may_contain(k) && k % 1_000_003 != 0).count();
        assert!(false_positives < 20_000, "{false_positives} of 100000 passed");
    }

    /// `retain` against a plain filter of the same tuples: every tuple whose keys
    /// (a fixed column and a nullable one after a variable-width column) may be in
    /// the builds is kept, in order, NULL keys never, on runs shorter and longer
    /// than the prefetch distance.
    #[test]
    fn retain_keeps_the_tuples_whose_keys_pass_in_order() {
        use crate::catalog::ColumnDef;
        use crate::exec::tuple_codec::EncodedRow;
        use crate::types::Value;
        let col = |name: &str, ty: DataType, not_null: bool| ColumnDef { name: name.into(), ty, not_null, default: None };
        let cols = vec![
            col("k", DataType::Integer, true),
            col("pad", DataType::Varchar(Some(200)), true),
            col("j", DataType::BigInt, false),
        ];
        let table = TableDef::new(1, "t".into(), cols, beedb_storage::PageId(1), Vec::new()).unwrap();
        let mut rng = StdRng::seed_from_u64(11);
        for n in [0usize, 1, 7, 8, 9, 40, 333] {
            let rows: Vec<(i32, Option<i64>)> =
                (0..n).map(|_| (rng.random_range(0..500), (rng.random_range(0..8) > 0).then(|| rng.random_range(-300..300)))).collect();
            // The tuples one after another, 8-aligned as in a page.
            let mut buf = Vec::new();
            let mut items = Vec::new();
            for (slot, &(k, j)) in rows.iter().enumerate() {
                let pad = "x".repeat(rng.random_range(0..200));
                let row = [Value::Integer(k), Value::Varchar(pad), j.map_or(Value::Null, Value::BigInt)];
                let tuple = table.layout.encode(&EncodedRow::encode(&table, &row).unwrap().attrs()).unwrap();
                buf.resize(buf.len().next_multiple_of(8), 0);
                let s = buf.len();
                buf.extend_from_slice(&tuple);
                items.push((TupleId { page: beedb_storage::PageId(1), slot: beedb_storage::SlotId(slot as u16) }, s, buf.len()));
            }
            let kf = KeyFilter::of(&vector(&(0..250).map(|x| Some(x * 2)).collect::<Vec<_>>())).unwrap();
            let jf = KeyFilter::of(&vector(&(-300..300).filter(|x| x % 3 != 0).map(Some).collect::<Vec<_>>())).unwrap();
            let expected: Vec<_> = items
                .iter()
                .zip(&rows)
                .filter(|(_, (k, j))| kf.may_contain(*k as i64) && j.is_some_and(|j| jf.may_contain(j)))
                .map(|(item, _)| *item)
                .collect();
            let filters = vec![
                ScanKeyFilter { scan_id: 0, column: 0, filter: Arc::new(kf) },
                ScanKeyFilter { scan_id: 0, column: 2, filter: Arc::new(jf) },
            ];
            let mut test = ScanKeyTest::new(filters, &table);
            assert!(test.retain(&table, &mut items, &buf));
            assert_eq!(items, expected, "{n} tuples");
        }
    }

    #[test]
    fn no_keys_pass_nothing_and_other_types_get_no_filter() {
        let f = KeyFilter::of(&vector(&[None, None])).unwrap();
        assert!(!f.may_contain(0) && !f.may_contain(i64::MIN) && !f.may_contain(i64::MAX));
        let text = Vector::from_data(DataType::Text, Data::Str(Default::default()), None);
        assert!(KeyFilter::of(&text).is_none());
    }
}
