//! The write-ahead log: a sidecar file of checksummed page images.
//!
//! BeeDB logs whole page images (like SQLite's WAL mode), not row changes: a committing
//! transaction appends one *frame* per page it changed, the last frame marked COMMIT.
//! The WAL doubles as the version store for snapshot reads: a reader with snapshot
//! `S` sees, for each page, the newest committed frame with LSN ≤ `S`, or the database
//! file's copy if there is none. A checkpoint copies committed frames back into the
//! database file and, when no reader needs them, truncates the WAL.
//!
//! ## File layout
//! WAL header (64 bytes, written once at creation and synced):
//!
//! | offset | size | field                                                     |
//! |-------:|-----:|-----------------------------------------------------------|
//! | 0      | 8    | magic `BeeDBWAL`                                          |
//! | 8      | 4    | WAL format version                                        |
//! | 12     | 4    | page size                                                 |
//! | 16     | 8    | database id (must match the database header's)            |
//! | 24     | 4    | CRC-32 of bytes 0..24                                     |
//! | 28     | 36   | zero                                                      |
//!
//! Frame `i` starts at `64 + i × (64 + page_size)`: a 64-byte frame header, then the
//! page image (itself sealed with its page checksum).
//!
//! | offset | size | field                                                              |
//! |-------:|-----:|--------------------------------------------------------------------|
//! | 0      | 8    | LSN; frames of one generation have consecutive LSNs              |
//! | 8      | 8    | transaction id                                                     |
//! | 16     | 4    | page id                                                            |
//! | 20     | 4    | flags: bit 0 = COMMIT (last frame of a committed transaction)      |
//! | 24     | 4    | database size in pages after the transaction (COMMIT frames)       |
//! | 28     | 4    | zero                                                               |
//! | 32     | 8    | durable LSN: every frame up to it was synced when this was written |
//! | 40     | 8    | database id                                                        |
//! | 48     | 4    | CRC-32 of bytes 0..48 and the page image                           |
//! | 52     | 12   | zero                                                               |
//!
//! ## Recovery
//! [`Wal::open`] scans frames from the start while each has a valid checksum, the
//! database id, and the next LSN in sequence. Frames of a transaction are contiguous
//! (one writer at a time), so a transaction is committed exactly when its COMMIT frame
//! is reached; frames of a transaction with no COMMIT frame (rolled back after
//! spilling, or cut off by a crash) are ignored. The scan stops at the first bad frame.
//!
//! A bad frame is either the torn tail of writes that were never synced (normal after a
//! crash) or real corruption of a durable frame. The *durable LSN* field tells them
//! apart: if any later valid frame says the bad frame's LSN had already been synced when
//! it was written, the bad frame was durable, and recovery fails with
//! [`Error::CorruptWal`] instead of silently dropping committed transactions. (Damage to
//! the very last synced batch cannot be told from a torn write; it is treated as one.)
//!
//! Stale frames of an older generation can never continue the sequence: the WAL is
//! truncated and synced when it is reset, and at every open after recovery.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::{Mutex, RwLock};

use crate::error::{Error, Result};
use crate::file::{FileSystem, OpenOptions, StorageFile};
use crate::ids::{Lsn, PageId, TxnId};
use crate::page::{read_u32, read_u64, write_u32, write_u64};

pub const WAL_HEADER_BYTES: usize = 64;
pub const FRAME_HEADER_BYTES: usize = 64;
const WAL_MAGIC: &[u8; 8] = b"BeeDBWAL";
const WAL_FORMAT_VERSION: u32 = 1;
const FLAG_COMMIT: u32 = 1;

/// One page image to log.
pub struct FrameWrite<'a> {
    pub page: PageId,
    /// The sealed page image (`page::seal_page` already applied).
    pub image: &'a [u8],
}

/// What recovery found.
#[derive(Debug, Default, Clone)]
pub struct RecoveredLog {
    /// Committed transactions found.
    pub committed_txns: u64,
    /// Database size in pages after the last committed transaction, if any.
    pub page_count: Option<u32>,
    /// Highest transaction id seen, committed or not.
    pub max_txn: TxnId,
    /// Valid frames ignored because their transaction never committed.
    pub uncommitted_frames: u64,
}

/// Committed frames by page, for snapshot lookups.
#[derive(Default)]
struct WalIndex {
    /// LSN of frame 0 in the file.
    base: Lsn,
    /// Committed frame LSNs of each page, ascending.
    versions: HashMap<PageId, Vec<Lsn>>,
}

/// Append position; changed only by the one writer (or a checkpoint, which holds the
/// write lock).
struct AppendState {
    /// Next LSN to assign.
    next_lsn: Lsn,
}

pub struct Wal {
    file: Arc<dyn StorageFile>,
    page_size: usize,
    database_id: u64,
    index: RwLock<WalIndex>,
    append: Mutex<AppendState>,
    /// Highest LSN whose frame has been written (not necessarily synced).
    written: AtomicU64,
    /// Highest LSN known to be synced.
    durable: AtomicU64,
    /// Serializes syncs; a committer that finds its LSN already durable after taking
    /// it returns at once: that is group commit.
    sync_lock: Mutex<()>,
    /// Held shared by a reader while it resolves a version and reads the frame, and
    /// exclusively by [`Wal::reset`], so a reset never moves a frame under a reader.
    generation: RwLock<()>,
    pub syncs: AtomicU64,
}

impl Wal {
    fn frame_bytes(&self) -> usize {
        FRAME_HEADER_BYTES + self.page_size
    }

    fn offset_of(&self, base: Lsn, lsn: Lsn) -> u64 {
        WAL_HEADER_BYTES as u64 + (lsn.0 - base.0) * self.frame_bytes() as u64
    }

    /// Opens (creating if needed) the WAL at `path` and recovers its committed frames.
    /// `first_lsn` is where LSNs start if the log is empty.
    pub fn open(
        fs: &dyn FileSystem,
        path: &Path,
        page_size: usize,
        database_id: u64,
        first_lsn: Lsn,
    ) -> Result<(Wal, RecoveredLog)> {
        let file = fs
            .open(
                path,
                OpenOptions {
                    create: true,
                    lock_exclusive: false,
                },
            )
            .map_err(|e| Error::io(format!("opening WAL {}", path.display()), e))?;
        let len = file.len().map_err(|e| Error::io("reading WAL length", e))?;
        let mut header = [0u8; WAL_HEADER_BYTES];
        let header_ok = len >= WAL_HEADER_BYTES as u64 && {
            file.read_exact_at(&mut header, 0)
                .map_err(|e| Error::io("reading WAL header", e))?;
            &header[0..8] == WAL_MAGIC && read_u32(&header, 24) == crc32fast::hash(&header[0..24])
        };
        if header_ok {
            let version = read_u32(&header, 8);
            if version > WAL_FORMAT_VERSION {
                return Err(Error::InvalidArgument(format!(
                    "WAL {} has format version {version}, newer than this build's {WAL_FORMAT_VERSION}",
                    path.display()
                )));
            }
            if read_u32(&header, 12) as usize != page_size || read_u64(&header, 16) != database_id {
                return Err(Error::CorruptWal {
                    frame: 0,
                    page: PageId(0),
                    detail: format!(
                        "WAL {} belongs to another database (page size or database id differ)",
                        path.display()
                    ),
                });
            }
        } else if len > (WAL_HEADER_BYTES + FRAME_HEADER_BYTES) as u64 {
            // The header is written and synced before any frame; frames after a bad
            // header mean the header was damaged later.
            return Err(Error::CorruptWal {
                frame: 0,
                page: PageId(0),
                detail: format!("WAL {} has a damaged header", path.display()),
            });
        } else {
            // New, or a creation that crashed before the header was synced.
            let mut h = [0u8; WAL_HEADER_BYTES];
            h[0..8].copy_from_slice(WAL_MAGIC);
            write_u32(&mut h, 8, WAL_FORMAT_VERSION);
            write_u32(&mut h, 12, page_size as u32);
            write_u64(&mut h, 16, database_id);
            let sum = crc32fast::hash(&h[0..24]);
            write_u32(&mut h, 24, sum);
            file.set_len(0)
                .and_then(|_| file.write_at(&h, 0))
                .and_then(|_| file.sync())
                .map_err(|e| Error::io("creating WAL header", e))?;
        }
        let wal = Wal {
            file,
            page_size,
            database_id,
            index: RwLock::new(WalIndex {
                base: first_lsn,
                versions: HashMap::new(),
            }),
            append: Mutex::new(AppendState {
                next_lsn: first_lsn,
            }),
            written: AtomicU64::new(first_lsn.0.saturating_sub(1)),
            durable: AtomicU64::new(first_lsn.0.saturating_sub(1)),
            sync_lock: Mutex::new(()),
            generation: RwLock::new(()),
            syncs: AtomicU64::new(0),
        };
        let recovered = wal.recover(len)?;
        Ok((wal, recovered))
    }

    /// Reads and checks frame `i`. Returns `None` if it is not a valid frame of this
    /// database (bad checksum, wrong database, short).
    fn read_valid_frame(&self, i: u64, len: u64, buf: &mut [u8]) -> Result<Option<()>> {
        let off = WAL_HEADER_BYTES as u64 + i * self.frame_bytes() as u64;
        if off + self.frame_bytes() as u64 > len {
            return Ok(None);
        }
        self.file
            .read_exact_at(buf, off)
            .map_err(|e| Error::io("reading WAL frame", e))?;
        let stored = read_u32(buf, 48);
        let mut h = crc32fast::Hasher::new();
        h.update(&buf[0..48]);
        h.update(&buf[FRAME_HEADER_BYTES..]);
        if stored != h.finalize() || read_u64(buf, 40) != self.database_id {
            return Ok(None);
        }
        Ok(Some(()))
    }

    fn recover(&self, len: u64) -> Result<RecoveredLog> {
        let mut out = RecoveredLog::default();
        let mut buf = vec![0u8; self.frame_bytes()];
        let frames_in_file =
            len.saturating_sub(WAL_HEADER_BYTES as u64) / self.frame_bytes() as u64;
        let mut committed: HashMap<PageId, Vec<Lsn>> = HashMap::new();
        let mut pending: Vec<(PageId, Lsn)> = Vec::new();
        let mut pending_txn: Option<TxnId> = None;
        let mut base: Option<Lsn> = None;
        let mut last_lsn = Lsn(0);
        let mut i = 0u64;
        while i < frames_in_file {
            if self.read_valid_frame(i, len, &mut buf)?.is_none() {
                break;
            }
            let lsn = Lsn(read_u64(&buf, 0));
            match base {
                None => base = Some(lsn),
                Some(b) if lsn.0 != b.0 + i => break,
                Some(_) => {}
            }
            last_lsn = lsn;
            let txn = TxnId(read_u64(&buf, 8));
            let page = PageId(read_u32(&buf, 16));
            let flags = read_u32(&buf, 20);
            out.max_txn = out.max_txn.max(txn);
            if pending_txn != Some(txn) {
                out.uncommitted_frames += pending.len() as u64;
                pending.clear();
                pending_txn = Some(txn);
            }
            pending.push((page, lsn));
            if flags & FLAG_COMMIT != 0 {
                for (p, l) in pending.drain(..) {
                    committed.entry(p).or_default().push(l);
                }
                out.committed_txns += 1;
                out.page_count = Some(read_u32(&buf, 24));
            }
            i += 1;
        }
        out.uncommitted_frames += pending.len() as u64;

        // Corruption check: does any later valid frame vouch that frame `i` was durable?
        // Frame `j` names LSN `lsn_j`, so frame `i` should have held `lsn_j - (j - i)`.
        for j in i + 1..frames_in_file {
            if self.read_valid_frame(j, len, &mut buf)?.is_none() {
                continue;
            }
            let lsn_j = read_u64(&buf, 0);
            let Some(expected) = lsn_j.checked_sub(j - i) else {
                continue;
            };
            if base.is_some_and(|b| b.0 + i != expected) {
                continue; // not of this generation's sequence
            }
            if read_u64(&buf, 32) >= expected {
                let off = WAL_HEADER_BYTES as u64 + i * self.frame_bytes() as u64;
                let mut h = [0u8; FRAME_HEADER_BYTES];
                self.file
                    .read_exact_at(&mut h, off)
                    .map_err(|e| Error::io("reading WAL frame", e))?;
                return Err(Error::CorruptWal {
                    frame: i,
                    page: PageId(read_u32(&h, 16)),
                    detail: format!(
                        "frame {i} (LSN {expected}) fails its checksum, but frame {j} \
                         records that it had been synced; refusing to drop committed data"
                    ),
                });
            }
        }

        if let Some(b) = base {
            let mut index = self.index.write();
            index.base = b;
            index.versions = committed;
            self.append.lock().next_lsn = Lsn(last_lsn.0 + 1);
            self.written.store(last_lsn.0, Ordering::Release);
            self.durable.store(last_lsn.0, Ordering::Release);
        }
        Ok(out)
    }

    /// The committed version of `page` visible at `snapshot`: the newest frame LSN ≤
    /// `snapshot`, or [`Lsn::IN_DATABASE_FILE`].
    pub fn version_for(&self, page: PageId, snapshot: Lsn) -> Lsn {
        let index = self.index.read();
        match index.versions.get(&page) {
            None => Lsn::IN_DATABASE_FILE,
            Some(v) => {
                let n = v.partition_point(|&l| l <= snapshot);
                if n == 0 {
                    Lsn::IN_DATABASE_FILE
                } else {
                    v[n - 1]
                }
            }
        }
    }

    /// Keeps the WAL from being reset while the guard lives: take it before
    /// [`Wal::version_for`] when the frame it names will be read.
    pub fn pin_generation(&self) -> parking_lot::RwLockReadGuard<'_, ()> {
        self.generation.read()
    }

    /// Reads the page image of frame `lsn` into `buf`.
    pub fn read_page(&self, lsn: Lsn, buf: &mut [u8]) -> Result<()> {
        let base = self.index.read().base;
        if lsn < base {
            return Err(Error::CorruptWal {
                frame: 0,
                page: PageId(0),
                detail: format!("frame LSN {lsn} precedes the WAL's first frame {base}"),
            });
        }
        let off = self.offset_of(base, lsn) + FRAME_HEADER_BYTES as u64;
        self.file
            .read_exact_at(buf, off)
            .map_err(|e| Error::io(format!("reading WAL frame {lsn}"), e))
    }

    /// Appends frames for `pages` as transaction `txn`; if `commit` is `Some(n)`, the
    /// last frame is the COMMIT frame and records a database size of `n` pages. Returns
    /// the LSN of each frame. Does not sync and does not publish.
    pub fn append(
        &self,
        txn: TxnId,
        pages: &[FrameWrite<'_>],
        commit: Option<u32>,
    ) -> Result<Vec<Lsn>> {
        let mut append = self.append.lock();
        let base = self.index.read().base;
        let first = append.next_lsn;
        let durable = self.durable.load(Ordering::Acquire);
        let mut buf = vec![0u8; pages.len() * self.frame_bytes()];
        let mut lsns = Vec::with_capacity(pages.len());
        for (k, fw) in pages.iter().enumerate() {
            debug_assert_eq!(fw.image.len(), self.page_size);
            let lsn = Lsn(first.0 + k as u64);
            lsns.push(lsn);
            let frame = &mut buf[k * self.frame_bytes()..(k + 1) * self.frame_bytes()];
            write_u64(frame, 0, lsn.0);
            write_u64(frame, 8, txn.0);
            write_u32(frame, 16, fw.page.0);
            let is_commit = commit.is_some() && k == pages.len() - 1;
            write_u32(frame, 20, if is_commit { FLAG_COMMIT } else { 0 });
            write_u32(frame, 24, if is_commit { commit.unwrap_or(0) } else { 0 });
            write_u64(frame, 32, durable);
            write_u64(frame, 40, self.database_id);
            frame[FRAME_HEADER_BYTES..].copy_from_slice(fw.image);
            let mut h = crc32fast::Hasher::new();
            h.update(&frame[0..48]);
            h.update(&frame[FRAME_HEADER_BYTES..]);
            let sum = h.finalize();
            write_u32(frame, 48, sum);
        }
        if pages.is_empty() {
            return Ok(lsns);
        }
        self.file
            .write_at(&buf, self.offset_of(base, first))
            .map_err(|e| Error::io("appending to the WAL", e))?;
        append.next_lsn = Lsn(first.0 + pages.len() as u64);
        self.written.store(append.next_lsn.0 - 1, Ordering::Release);
        Ok(lsns)
    }

    /// Makes every frame up to `lsn` durable. Concurrent callers share one sync.
    pub fn sync_to(&self, lsn: Lsn) -> Result<()> {
        if self.durable.load(Ordering::Acquire) >= lsn.0 {
            return Ok(());
        }
        let _g = self.sync_lock.lock();
        if self.durable.load(Ordering::Acquire) >= lsn.0 {
            return Ok(());
        }
        let target = self.written.load(Ordering::Acquire);
        self.file
            .sync()
            .map_err(|e| Error::io("syncing the WAL", e))?;
        self.syncs.fetch_add(1, Ordering::Relaxed);
        self.durable.fetch_max(target, Ordering::AcqRel);
        Ok(())
    }

    /// Makes committed frames visible to [`Wal::version_for`].
    pub fn publish(&self, frames: &[(PageId, Lsn)]) {
        let mut index = self.index.write();
        for &(p, l) in frames {
            let v = index.versions.entry(p).or_default();
            debug_assert!(v.last().is_none_or(|&last| last < l));
            v.push(l);
        }
    }

    /// Every page with committed frames and its newest LSN ≤ `upto`.
    pub fn newest_versions(&self, upto: Lsn) -> Vec<(PageId, Lsn)> {
        let index = self.index.read();
        let mut out: Vec<(PageId, Lsn)> = index
            .versions
            .iter()
            .filter_map(|(&p, v)| {
                let n = v.partition_point(|&l| l <= upto);
                (n > 0).then(|| (p, v[n - 1]))
            })
            .collect();
        out.sort_unstable();
        out
    }

    /// Number of frames in the current generation (committed or not).
    pub fn frame_count(&self) -> u64 {
        let base = self.index.read().base;
        self.append.lock().next_lsn.0 - base.0
    }

    pub fn next_lsn(&self) -> Lsn {
        self.append.lock().next_lsn
    }

    pub fn durable_lsn(&self) -> Lsn {
        Lsn(self.durable.load(Ordering::Acquire))
    }

    /// Empties the WAL once everything in it is in the database file: truncates and
    /// syncs the file, and forgets the index. The caller holds the write lock and has
    /// checked that no reader can still need a WAL frame. LSNs keep increasing.
    pub fn reset(&self) -> Result<()> {
        let _generation = self.generation.write();
        let mut append = self.append.lock();
        let mut index = self.index.write();
        self.file
            .set_len(WAL_HEADER_BYTES as u64)
            .and_then(|_| self.file.sync())
            .map_err(|e| Error::io("truncating the WAL", e))?;
        index.versions.clear();
        index.base = append.next_lsn;
        let last = append.next_lsn.0 - 1;
        self.written.store(last, Ordering::Release);
        self.durable.store(last, Ordering::Release);
        append.next_lsn = Lsn(last + 1);
        Ok(())
    }
}
