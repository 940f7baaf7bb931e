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
//! WAL header (64 bytes; rewritten and synced at each reset, one sector so a crash
//! leaves the old or the new one whole):
//!
//! | offset | size | field                                                     |
//! |-------:|-----:|-----------------------------------------------------------|
//! | 0      | 8    | magic `BeeDBWAL`                                          |
//! | 8      | 4    | WAL format version                                        |
//! | 12     | 4    | page size                                                 |
//! | 16     | 8    | database id (must match the database header's)            |
//! | 24     | 8    | salt of the current generation                            |
//! | 32     | 8    | base LSN: the LSN of frame 0 in this generation           |
//! | 40     | 4    | CRC-32 of bytes 0..40                                     |
//! | 44     | 20   | zero                                                      |
//!
//! Frame `i` starts at `64 + i × (64 + page_size)` and holds LSN `base + i`: a 64-byte
//! frame header, then the page image, sealed with its page checksum. A frame is valid
//! when it carries the header's salt, its LSN is `base + i`, and its header checksum and
//! the image's page checksum both verify.
//!
//! | offset | size | field                                                              |
//! |-------:|-----:|--------------------------------------------------------------------|
//! | 0      | 8    | LSN                                                                |
//! | 8      | 8    | transaction id                                                     |
//! | 16     | 4    | page id                                                            |
//! | 20     | 4    | flags: bit 0 = COMMIT (last frame of a committed transaction)      |
//! | 24     | 4    | database size in pages after the transaction (COMMIT frames)       |
//! | 28     | 4    | zero                                                               |
//! | 32     | 8    | durable LSN: every frame up to it was synced when this was written |
//! | 40     | 8    | database id                                                        |
//! | 48     | 8    | salt of the generation                                             |
//! | 56     | 4    | CRC-32 of bytes 0..56 and the image's page checksum (bytes 0..4)   |
//! | 60     | 4    | zero                                                               |
//!
//! ## Recovery
//! [`Wal::open`] scans frames from the start while each is valid. Frames of a
//! transaction are contiguous (one writer at a time), so a transaction is committed
//! exactly when its COMMIT frame is reached; frames of a transaction with no COMMIT frame
//! (rolled back after spilling, or cut off by a crash) are ignored. The scan stops at
//! the first invalid frame.
//!
//! An invalid frame is either the torn tail of writes that were never synced (normal
//! after a crash) or real corruption of a durable frame. The *durable LSN* field tells
//! them apart: if any later valid frame says the bad frame's LSN had already been synced
//! when it was written, the bad frame was durable, and recovery fails with
//! [`Error::CorruptWal`] instead of silently dropping committed transactions. (Damage to
//! the very last synced batch cannot be told from a torn write; it is treated as one.)
//!
//! ## Reset
//! When every frame is in the database file and no reader needs one, [`Wal::reset`]
//! starts a new generation: a new salt and base LSN in the header, synced. Frames of the
//! old generation become stale at once (wrong salt), so the file is not truncated but
//! overwritten from the start: rewriting allocated blocks costs a fraction of extending a
//! file (measured here: 1.9 µs against 7.6 µs for a 16 KiB write). LSNs never repeat.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::{Mutex, RwLock};
use rustc_hash::FxHashMap as HashMap;

use crate::error::{Error, Result};
use crate::file::{FileSystem, OpenOptions, StorageFile};
use crate::ids::{Lsn, PageId, TxnId};
use crate::page::{read_u32, read_u64, verify_page, write_u32, write_u64};

pub const WAL_HEADER_BYTES: usize = 64;
pub const FRAME_HEADER_BYTES: usize = 64;
const WAL_MAGIC: &[u8; 8] = b"BeeDBWAL";
const WAL_FORMAT_VERSION: u32 = 1;
const FLAG_COMMIT: u32 = 1;
const HEADER_CRC_OFFSET: usize = 40;
const FRAME_CRC_OFFSET: usize = 56;
/// At a reset, a WAL grown larger than this (by a big transaction) is truncated back;
/// smaller ones keep their size, because overwriting allocated blocks is several times
/// cheaper than extending a file.
const WAL_KEEP_BYTES: u64 = 64 << 20;

/// Writes and syncs the WAL header that starts generation `salt` at LSN `base`.
fn write_header(
    file: &dyn StorageFile,
    page_size: usize,
    database_id: u64,
    salt: u64,
    base: Lsn,
) -> Result<()> {
    let mut h = [0u8; WAL_HEADER_BYTES];
    h[0..8].copy_from_slice(WAL_MAGIC);
    write_u32(&mut h, 8, WAL_FORMAT_VERSION);
    write_u32(&mut h, 12, page_size as u32);
    write_u64(&mut h, 16, database_id);
    write_u64(&mut h, 24, salt);
    write_u64(&mut h, 32, base.0);
    let sum = crc32fast::hash(&h[0..HEADER_CRC_OFFSET]);
    write_u32(&mut h, HEADER_CRC_OFFSET, sum);
    file.write_at(&h, 0)
        .and_then(|_| file.sync())
        .map_err(|e| Error::io("writing the WAL header", e))
}

/// Checksum of a frame: its header (bytes 0..56) and the page image's own checksum,
/// which already covers the image. One CRC pass over the page per commit, not two;
/// recovery verifies both.
fn frame_checksum(header: &[u8], image: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&header[0..FRAME_CRC_OFFSET]);
    h.update(&image[0..4]);
    h.finalize()
}

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
    /// Frame-sized slots in the file, valid or not.
    pub frames_in_file: u64,
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
    /// Salt of the current generation: frames with another salt are stale.
    salt: u64,
    /// Reused for every append, so a commit allocates no frame buffer.
    buffer: Vec<u8>,
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
            &header[0..8] == WAL_MAGIC
                && read_u32(&header, HEADER_CRC_OFFSET)
                    == crc32fast::hash(&header[0..HEADER_CRC_OFFSET])
        };
        let (salt, base) = if header_ok {
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
            (read_u64(&header, 24), Lsn(read_u64(&header, 32)))
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
            let salt = database_id.rotate_left(17) ^ 0x5A17;
            write_header(&*file, page_size, database_id, salt, first_lsn)?;
            (salt, first_lsn)
        };
        let wal = Wal {
            file,
            page_size,
            database_id,
            index: RwLock::new(WalIndex {
                base,
                versions: HashMap::default(),
            }),
            append: Mutex::new(AppendState {
                next_lsn: base,
                salt,
                buffer: Vec::new(),
            }),
            written: AtomicU64::new(base.0.saturating_sub(1)),
            durable: AtomicU64::new(base.0.saturating_sub(1)),
            sync_lock: Mutex::new(()),
            generation: RwLock::new(()),
            syncs: AtomicU64::new(0),
        };
        let recovered = wal.recover(len)?;
        Ok((wal, recovered))
    }

    /// Reads and checks frame `i`. Returns `None` if it is not a valid frame of this
    /// database (bad checksum, wrong database, short).
    fn read_valid_frame(&self, i: u64, len: u64, salt: u64, buf: &mut [u8]) -> Result<Option<()>> {
        let off = WAL_HEADER_BYTES as u64 + i * self.frame_bytes() as u64;
        if off + self.frame_bytes() as u64 > len {
            return Ok(None);
        }
        self.file
            .read_exact_at(buf, off)
            .map_err(|e| Error::io("reading WAL frame", e))?;
        let (header, image) = buf.split_at(FRAME_HEADER_BYTES);
        if read_u32(header, FRAME_CRC_OFFSET) != frame_checksum(header, image)
            || read_u64(header, 40) != self.database_id
            || read_u64(header, 48) != salt
            || verify_page(image, PageId(read_u32(header, 16))).is_err()
        {
            return Ok(None);
        }
        Ok(Some(()))
    }

    fn recover(&self, len: u64) -> Result<RecoveredLog> {
        let mut out = RecoveredLog::default();
        let mut buf = vec![0u8; self.frame_bytes()];
        let frames_in_file =
            len.saturating_sub(WAL_HEADER_BYTES as u64) / self.frame_bytes() as u64;
        out.frames_in_file = frames_in_file;
        let mut committed: HashMap<PageId, Vec<Lsn>> = HashMap::default();
        let mut pending: Vec<(PageId, Lsn)> = Vec::new();
        let mut pending_txn: Option<TxnId> = None;
        let base = self.index.read().base;
        let salt = self.append.lock().salt;
        let mut i = 0u64;
        while i < frames_in_file {
            if self.read_valid_frame(i, len, salt, &mut buf)?.is_none() {
                break;
            }
            let lsn = Lsn(read_u64(&buf, 0));
            if lsn.0 != base.0 + i {
                break;
            }
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
        // Frames of this generation (its salt) hold LSN `base + position`.
        for j in i + 1..frames_in_file {
            if self.read_valid_frame(j, len, salt, &mut buf)?.is_none() {
                continue;
            }
            let lsn_j = read_u64(&buf, 0);
            let expected = base.0 + i;
            if lsn_j != base.0 + j {
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

        // New frames go after the valid ones (open then checkpoints and resets).
        let next = Lsn(base.0 + i);
        self.index.write().versions = committed;
        self.append.lock().next_lsn = next;
        self.written.store(next.0 - 1, Ordering::Release);
        self.durable.store(next.0 - 1, Ordering::Release);
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
        // Built by appending into a reused buffer, not zero-filled: once per commit.
        let mut buf = std::mem::take(&mut append.buffer);
        buf.clear();
        buf.reserve(pages.len() * self.frame_bytes());
        let mut lsns = Vec::with_capacity(pages.len());
        for (k, fw) in pages.iter().enumerate() {
            debug_assert_eq!(fw.image.len(), self.page_size);
            let lsn = Lsn(first.0 + k as u64);
            lsns.push(lsn);
            let is_commit = commit.is_some() && k == pages.len() - 1;
            let mut h = [0u8; FRAME_HEADER_BYTES];
            write_u64(&mut h, 0, lsn.0);
            write_u64(&mut h, 8, txn.0);
            write_u32(&mut h, 16, fw.page.0);
            write_u32(&mut h, 20, if is_commit { FLAG_COMMIT } else { 0 });
            write_u32(&mut h, 24, if is_commit { commit.unwrap_or(0) } else { 0 });
            write_u64(&mut h, 32, durable);
            write_u64(&mut h, 40, self.database_id);
            write_u64(&mut h, 48, append.salt);
            let sum = frame_checksum(&h, fw.image);
            write_u32(&mut h, FRAME_CRC_OFFSET, sum);
            buf.extend_from_slice(&h);
            buf.extend_from_slice(fw.image);
        }
        if pages.is_empty() {
            return Ok(lsns);
        }
        let written = self.file.write_at(&buf, self.offset_of(base, first));
        // Keep a commit-sized buffer; drop one grown by a huge spill.
        if buf.capacity() <= 64 * self.frame_bytes() {
            append.buffer = buf;
        }
        written.map_err(|e| Error::io("appending to the WAL", e))?;
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
        let len = self
            .file
            .len()
            .map_err(|e| Error::io("reading WAL length", e))?;
        if len > WAL_KEEP_BYTES {
            self.file
                .set_len(WAL_KEEP_BYTES)
                .map_err(|e| Error::io("truncating the WAL", e))?;
        }
        // A new salt makes every frame of the old generation stale at once; the header
        // is one sector, so it is written whole or not at all.
        let salt = append.salt.wrapping_add(1);
        write_header(
            &*self.file,
            self.page_size,
            self.database_id,
            salt,
            append.next_lsn,
        )?;
        append.salt = salt;
        index.versions.clear();
        index.base = append.next_lsn;
        let last = append.next_lsn.0 - 1;
        self.written.store(last, Ordering::Release);
        self.durable.store(last, Ordering::Release);
        Ok(())
    }
}
