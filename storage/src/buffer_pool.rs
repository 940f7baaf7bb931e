//! The buffer pool: a fixed number of page frames shared by every transaction.
//!
//! A frame holds one *version* of a page, named by `(PageId, Lsn)`: `Lsn(0)` is the
//! version in the main database file, any other LSN names the WAL frame that holds
//! that version (see `wal.rs`). Committed versions never change, so a frame's
//! content is immutable once it is in the pool; only the write transaction's private
//! copies (kept outside the pool, in `store.rs`) are ever modified.
//!
//! Eviction is CLOCK per shard: each frame has a reference bit set on every hit; the
//! hand clears bits and evicts the first frame that is unreferenced and unpinned. A
//! frame is pinned while any page guard holds a clone of its `Arc`, so "pinned" is
//! simply `Arc::strong_count > 1`. The pool is split into shards by page id so that
//! threads reading different pages do not contend on one lock: runs of
//! [`PAGES_PER_RUN`] consecutive pages share a shard, so a sequential scan keeps taking
//! one uncontended, cache-hot lock while two scans of different morsels rarely meet.
//!
//! Each shard finds its frames through a [`SlotIndex`]: database-file versions (the
//! pages scans read) by a direct array indexed by page number, other versions by hash.
//! A hash lookup per page cost two cache misses (control bytes, then the bucket), about
//! 18% of a warm TPC-H Q6; the array is read in page order and the CPU's prefetcher has
//! it in cache before it is asked for.
//!
//! Invariants:
//! 1. A shard never holds more than its capacity of frames.
//! 2. A pinned frame is never evicted.
//! 3. At most one frame per `(PageId, Lsn)` key.

use rustc_hash::FxHashMap as HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::{Mutex, RwLock};

use crate::access::{Frame, PageBuf};
use crate::error::{Error, Result};
use crate::ids::{Lsn, PageId};

/// Identifies one version of one page.
pub type VersionKey = (PageId, Lsn);

const SHARD_COUNT: usize = 16;
/// Consecutive pages that share a shard (see the module documentation).
const PAGES_PER_RUN: u32 = 64;
/// Entries per chunk of a [`SlotIndex`]'s page array (16 KiB each, allocated when a
/// page of its range is first cached, so the array never grows with the file's size
/// alone).
const INDEX_CHUNK: usize = 4096;
const NO_SLOT: u32 = u32::MAX;
/// Bytes of a page [`BufferPool::prefetch`] asks for: its header and slot directory,
/// the first things a scan reads (and missed on). Asking for the whole page at once
/// was no faster on TPC-H Q6, and neither was prefetching each tuple of a page before
/// the scan reads them (Q6, Q21).
const PREFETCH_BYTES: usize = 512;
const SPARE_BUFFERS_PER_SHARD: usize = 8;

struct Slot {
    key: VersionKey,
    frame: Frame,
    referenced: AtomicBool,
}

struct Shard {
    slots: Vec<Slot>,
    index: SlotIndex,
    hand: usize,
    capacity: usize,
    /// Page buffers of evicted frames, reused to avoid an allocation per miss.
    spare: Vec<PageBuf>,
    /// This shard's share of [`PoolStats`], counted under its lock: one shared
    /// atomic counter bounced its cache line between threads on every page read.
    stats: PoolStats,
}

/// Counters for tests, benchmarks and `EXPLAIN`-style reports ([`BufferPool::stats`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PoolStats {
    pub hits: u64,
    pub misses: u64,
    pub evictions: u64,
}

/// See the module documentation.
pub struct BufferPool {
    shards: Vec<Mutex<Shard>>,
    page_size: usize,
    frames_max: usize,
}

impl BufferPool {
    /// A pool of `frames_max` frames (at least one per shard) of `page_size` bytes.
    pub fn new(frames_max: usize, page_size: usize) -> Self {
        let per_shard = frames_max.div_ceil(SHARD_COUNT).max(1);
        let shards = (0..SHARD_COUNT)
            .map(|_| {
                Mutex::new(Shard {
                    slots: Vec::new(),
                    index: SlotIndex::default(),
                    hand: 0,
                    capacity: per_shard,
                    spare: Vec::new(),
                    stats: PoolStats::default(),
                })
            })
            .collect();
        BufferPool {
            shards,
            page_size,
            frames_max: per_shard * SHARD_COUNT,
        }
    }

    /// Hits, misses and evictions so far, summed over the shards.
    pub fn stats(&self) -> PoolStats {
        self.shards.iter().fold(PoolStats::default(), |t, s| {
            let s = s.lock().stats;
            PoolStats {
                hits: t.hits + s.hits,
                misses: t.misses + s.misses,
                evictions: t.evictions + s.evictions,
            }
        })
    }

    pub fn frames_max(&self) -> usize {
        self.frames_max
    }

    pub fn page_size(&self) -> usize {
        self.page_size
    }

    fn shard(&self, page: PageId) -> &Mutex<Shard> {
        &self.shards[(page.0 / PAGES_PER_RUN) as usize % SHARD_COUNT]
    }

    /// Returns the frame for `key` if cached (pinning it: the caller holds the `Arc`).
    pub fn get(&self, key: VersionKey) -> Option<Frame> {
        let mut shard = self.shard(key.0).lock();
        match shard.index.get(key) {
            Some(i) => {
                let frame = {
                    let slot = &shard.slots[i];
                    slot.referenced.store(true, Ordering::Relaxed);
                    slot.frame.clone()
                };
                shard.stats.hits += 1;
                Some(frame)
            }
            None => None,
        }
    }

    /// Asks the CPU to load the bytes of `key`'s frame into its caches, if the frame is
    /// cached (see [`crate::access::PageRead::prefetch_page`]). Counts no hit.
    pub fn prefetch(&self, key: VersionKey) {
        let start = {
            let shard = self.shard(key.0).lock();
            let Some(i) = shard.index.get(key) else { return };
            // A frame being written (only a write transaction's private copies are,
            // and those are not in the pool) is skipped rather than waited for.
            match shard.slots[i].frame.try_read() {
                Some(buf) => buf.as_ptr(),
                None => return,
            }
        };
        crate::prefetch::prefetch_lines(start, PREFETCH_BYTES.min(self.page_size));
    }

    /// Returns the cached frame for `key`, or loads it with `load` (which fills a page
    /// buffer) and caches it. The shard lock is not held during `load`, so two threads
    /// may load the same page at once; the first to finish wins and the other's copy is
    /// dropped.
    pub fn get_or_load(
        &self,
        key: VersionKey,
        load: impl FnOnce(&mut [u8]) -> Result<()>,
    ) -> Result<Frame> {
        if let Some(f) = self.get(key) {
            return Ok(f);
        }
        // A miss reads a page: one more short lock to count it is nothing beside that.
        self.shard(key.0).lock().stats.misses += 1;
        let mut buf = self.take_buffer(key.0);
        load(&mut buf)?;
        self.insert(key, buf)
    }

    /// Caches a page image under `key` (or returns the frame already cached there).
    pub fn insert(&self, key: VersionKey, buf: PageBuf) -> Result<Frame> {
        debug_assert_eq!(buf.len(), self.page_size);
        let mut shard = self.shard(key.0).lock();
        if let Some(i) = shard.index.get(key) {
            let frame = shard.slots[i].frame.clone();
            shard.spare.push(buf);
            return Ok(frame);
        }
        let frame: Frame = Arc::new(RwLock::new(buf));
        let slot = Slot {
            key,
            frame: frame.clone(),
            referenced: AtomicBool::new(true),
        };
        if shard.slots.len() < shard.capacity {
            let i = shard.slots.len();
            shard.slots.push(slot);
            shard.index.insert(key, i);
            return Ok(frame);
        }
        let victim = Self::find_victim(&mut shard).ok_or(Error::PoolExhausted {
            frames: self.frames_max,
        })?;
        let old = std::mem::replace(&mut shard.slots[victim], slot);
        shard.index.remove(old.key);
        shard.index.insert(key, victim);
        shard.stats.evictions += 1;
        // The old frame is unpinned (we checked under the shard lock, and new pins are
        // only taken under it), so we can recycle its buffer.
        Self::recycle(&mut shard, old.frame);
        Ok(frame)
    }

    /// CLOCK: two sweeps at most (the first may only clear reference bits).
    fn find_victim(shard: &mut Shard) -> Option<usize> {
        let n = shard.slots.len();
        for _ in 0..2 * n {
            let i = shard.hand;
            shard.hand = (shard.hand + 1) % n;
            let slot = &shard.slots[i];
            if Arc::strong_count(&slot.frame) > 1 {
                continue;
            }
            if slot.referenced.swap(false, Ordering::Relaxed) {
                continue;
            }
            return Some(i);
        }
        None
    }

    /// Drops the cached version `key` if it is cached and unpinned. Used when a
    /// checkpoint overwrites the database file's version of a page.
    pub fn invalidate(&self, key: VersionKey) {
        let mut shard = self.shard(key.0).lock();
        if let Some(slot) = Self::remove_slot(&mut shard, key) {
            Self::recycle(&mut shard, slot.frame);
        }
    }

    /// Renames a cached version (a checkpoint that folded the WAL into the database file
    /// makes the newest WAL version of a page its database-file version). Does nothing
    /// if `from` is not cached or `to` already is.
    pub fn rekey(&self, from: VersionKey, to: VersionKey) {
        debug_assert_eq!(from.0, to.0, "rekey keeps the page");
        let mut shard = self.shard(from.0).lock();
        if shard.index.get(to).is_some() {
            return;
        }
        if let Some(i) = shard.index.remove(from) {
            shard.slots[i].key = to;
            shard.index.insert(to, i);
        }
    }

    /// A page buffer to fill, recycled from a dropped frame of `page`'s shard when one
    /// is at hand (so steady-state commits allocate and fault in no new memory).
    /// A page buffer holding a copy of `image`: a spare one refilled, or a new one
    /// allocated and copied into without zeroing it first (a write transaction copies
    /// every page it changes).
    pub fn copy_of(&self, page: PageId, image: &[u8]) -> PageBuf {
        debug_assert_eq!(image.len(), self.page_size);
        let spare = self.shard(page).lock().spare.pop();
        match spare {
            Some(mut buf) => {
                buf.copy_from_slice(image);
                buf
            }
            None => image.into(),
        }
    }

    pub fn take_buffer(&self, page: PageId) -> PageBuf {
        self.shard(page)
            .lock()
            .spare
            .pop()
            .unwrap_or_else(|| vec![0u8; self.page_size].into_boxed_slice())
    }

    fn remove_slot(shard: &mut Shard, key: VersionKey) -> Option<Slot> {
        let i = shard.index.remove(key)?;
        let slot = shard.slots.swap_remove(i);
        if i < shard.slots.len() {
            let moved = shard.slots[i].key;
            shard.index.insert(moved, i);
        }
        if shard.hand >= shard.slots.len() {
            shard.hand = 0;
        }
        Some(slot)
    }

    /// Keeps the buffer of an unpinned frame for reuse.
    fn recycle(shard: &mut Shard, frame: Frame) {
        if shard.spare.len() < SPARE_BUFFERS_PER_SHARD
            && let Ok(lock) = Arc::try_unwrap(frame)
        {
            shard.spare.push(lock.into_inner());
        }
    }

    /// Number of frames currently cached.
    pub fn len(&self) -> usize {
        self.shards.iter().map(|s| s.lock().slots.len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Where a shard's frames are: the slot of each cached version. Database-file versions
/// (`Lsn(0)`) are found by page number in chunked arrays; WAL versions, few and
/// short-lived, by hash.
#[derive(Default)]
struct SlotIndex {
    /// By the page's position within its shard ([`SlotIndex::position`]); `NO_SLOT`
    /// where the page is not cached.
    file: Vec<Option<Box<[u32; INDEX_CHUNK]>>>,
    versions: HashMap<VersionKey, usize>,
}

impl SlotIndex {
    /// A page's position among its shard's pages: pages of one shard are the runs
    /// `k * SHARD_COUNT + s` of [`PAGES_PER_RUN`] pages, numbered densely.
    fn position(page: PageId) -> usize {
        let run = page.0 / PAGES_PER_RUN / SHARD_COUNT as u32;
        run as usize * PAGES_PER_RUN as usize + (page.0 % PAGES_PER_RUN) as usize
    }

    fn get(&self, key: VersionKey) -> Option<usize> {
        if key.1 != Lsn::IN_DATABASE_FILE {
            return self.versions.get(&key).copied();
        }
        let p = Self::position(key.0);
        let slot = self.file.get(p / INDEX_CHUNK)?.as_ref()?[p % INDEX_CHUNK];
        (slot != NO_SLOT).then_some(slot as usize)
    }

    fn insert(&mut self, key: VersionKey, slot: usize) {
        if key.1 != Lsn::IN_DATABASE_FILE {
            self.versions.insert(key, slot);
            return;
        }
        let p = Self::position(key.0);
        if self.file.len() <= p / INDEX_CHUNK {
            self.file.resize_with(p / INDEX_CHUNK + 1, || None);
        }
        let chunk = self.file[p / INDEX_CHUNK].get_or_insert_with(|| Box::new([NO_SLOT; INDEX_CHUNK]));
        // A shard's capacity is far below u32::MAX frames.
        chunk[p % INDEX_CHUNK] = slot as u32;
    }

    fn remove(&mut self, key: VersionKey) -> Option<usize> {
        if key.1 != Lsn::IN_DATABASE_FILE {
            return self.versions.remove(&key);
        }
        let p = Self::position(key.0);
        let entry = &mut self.file.get_mut(p / INDEX_CHUNK)?.as_mut()?[p % INDEX_CHUNK];
        let slot = std::mem::replace(entry, NO_SLOT);
        (slot != NO_SLOT).then_some(slot as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(fill: u8) -> PageBuf {
        vec![fill; 4096].into_boxed_slice()
    }

    #[test]
    fn hit_after_insert_and_distinct_versions_coexist() {
        let pool = BufferPool::new(64, 4096);
        pool.insert((PageId(1), Lsn(0)), page(1)).unwrap();
        pool.insert((PageId(1), Lsn(5)), page(2)).unwrap();
        assert_eq!(pool.get((PageId(1), Lsn(0))).unwrap().read()[0], 1);
        assert_eq!(pool.get((PageId(1), Lsn(5))).unwrap().read()[0], 2);
        assert!(pool.get((PageId(1), Lsn(6))).is_none());
    }

    #[test]
    fn stats_count_hits_misses_and_evictions_over_all_shards() {
        let pool = BufferPool::new(16, 4096); // one frame per shard
        let load = |b: &mut [u8]| {
            b[0] = 9;
            Ok(())
        };
        for i in 0..100u32 {
            pool.get_or_load((PageId(i), Lsn(0)), load).unwrap();
        }
        let loaded = pool.stats();
        assert_eq!((loaded.hits, loaded.misses), (0, 100));
        assert_eq!(loaded.evictions, 100 - pool.len() as u64);
        let cached: Vec<u32> = (0..100).filter(|&i| pool.get((PageId(i), Lsn(0))).is_some()).collect();
        assert_eq!(cached.len(), pool.len());
        assert_eq!(pool.stats().hits, cached.len() as u64);
    }

    #[test]
    fn slot_index_agrees_with_a_hash_map() {
        // Pages of every shard, near chunk and run edges and far apart; file and WAL
        // versions of the same pages.
        let pages: Vec<u32> = (0..200)
            .chain([4095, 4096, 4097, 65_535, 65_536, 1 << 20, (1 << 22) + 63])
            .chain((0..50).map(|i| i * PAGES_PER_RUN * SHARD_COUNT as u32 + 7))
            .collect();
        // One index per shard, as the pool keeps them.
        let shard = |p: PageId| (p.0 / PAGES_PER_RUN) as usize % SHARD_COUNT;
        let mut indexes: Vec<SlotIndex> = (0..SHARD_COUNT).map(|_| SlotIndex::default()).collect();
        let mut model: HashMap<VersionKey, usize> = HashMap::default();
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        for step in 0..20_000usize {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let page = PageId(pages[(x >> 8) as usize % pages.len()]);
            let key = (page, Lsn(if x & 3 == 0 { 5 + (x >> 40) % 3 } else { 0 }));
            let index = &mut indexes[shard(page)];
            match (x >> 4) % 3 {
                0 => {
                    index.insert(key, step);
                    model.insert(key, step);
                }
                1 => assert_eq!(index.remove(key), model.remove(&key), "{key:?}"),
                _ => assert_eq!(index.get(key), model.get(&key).copied(), "{key:?}"),
            }
        }
        for (&key, &slot) in &model {
            assert_eq!(indexes[shard(key.0)].get(key), Some(slot));
        }
        // Two pages never share a position within one shard.
        let mut seen = std::collections::HashSet::new();
        for p in 0..(PAGES_PER_RUN * SHARD_COUNT as u32 * 3) {
            let shard = (p / PAGES_PER_RUN) as usize % SHARD_COUNT;
            assert!(seen.insert((shard, SlotIndex::position(PageId(p)))), "page {p}");
        }
    }

    #[test]
    fn capacity_is_never_exceeded() {
        let pool = BufferPool::new(32, 4096);
        for i in 0..1000u32 {
            pool.insert((PageId(i), Lsn(0)), page(0)).unwrap();
            assert!(pool.len() <= pool.frames_max());
        }
    }

    #[test]
    fn pinned_frame_is_not_evicted_and_full_pool_of_pins_errors() {
        let pool = BufferPool::new(16, 4096); // one frame per shard
        // Fill every shard with pinned frames: once a shard is full of pins, inserting
        // another page of that shard fails instead of evicting.
        let mut pins = Vec::new();
        let mut i = 0u32;
        while pool.len() < pool.frames_max() {
            let key = (PageId(i), Lsn(0));
            if let Ok(f) = pool.insert(key, page(7)) {
                pins.push((key, f));
            }
            i += 1;
        }
        // Any new page now has no victim in its shard.
        let err = pool
            .insert((PageId(i + 1000), Lsn(0)), page(0))
            .unwrap_err();
        assert!(matches!(err, Error::PoolExhausted { .. }));
        for (key, _) in &pins {
            assert!(pool.get(*key).is_some(), "pinned frame was evicted");
        }
        drop(pins);
        pool.insert((PageId(i + 1000), Lsn(0)), page(0)).unwrap();
    }

    #[test]
    fn invalidate_removes_only_that_version() {
        let pool = BufferPool::new(64, 4096);
        pool.insert((PageId(3), Lsn(0)), page(1)).unwrap();
        pool.insert((PageId(3), Lsn(9)), page(2)).unwrap();
        pool.invalidate((PageId(3), Lsn(0)));
        assert!(pool.get((PageId(3), Lsn(0))).is_none());
        assert!(pool.get((PageId(3), Lsn(9))).is_some());
    }
}
