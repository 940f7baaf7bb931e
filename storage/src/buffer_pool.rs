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
//! threads reading different pages do not contend on one lock.
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
const SPARE_BUFFERS_PER_SHARD: usize = 8;

struct Slot {
    key: VersionKey,
    frame: Frame,
    referenced: AtomicBool,
}

struct Shard {
    slots: Vec<Slot>,
    index: HashMap<VersionKey, usize>,
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
                    index: HashMap::default(),
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
        // Fibonacci hashing spreads consecutive page ids over the shards.
        let h = (page.0 as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 60;
        &self.shards[h as usize % SHARD_COUNT]
    }

    /// Returns the frame for `key` if cached (pinning it: the caller holds the `Arc`).
    pub fn get(&self, key: VersionKey) -> Option<Frame> {
        let mut shard = self.shard(key.0).lock();
        match shard.index.get(&key) {
            Some(&i) => {
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
        if let Some(&i) = shard.index.get(&key) {
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
        shard.index.remove(&old.key);
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
        if shard.index.contains_key(&to) {
            return;
        }
        if let Some(i) = shard.index.remove(&from) {
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
        let i = shard.index.remove(&key)?;
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
