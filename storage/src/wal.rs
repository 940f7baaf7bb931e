//! The write-ahead log: a sidecar file of checksummed page images.
//!
//! BeeDB logs pages (like SQLite's WAL mode), not row changes: a committing transaction
//! appends one *frame* per page it changed, the last frame marked COMMIT. A frame holds
//! the page's image, or (format 3) a *delta*: the byte ranges that changed since the
//! page's previous frame in the log.
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
//! | 8      | 4    | WAL format version (3; 2 and 1 are still read, see below) |
//! | 12     | 4    | page size                                                 |
//! | 16     | 8    | database id (must match the database header's)            |
//! | 24     | 8    | salt of the current generation                            |
//! | 32     | 8    | base LSN: the LSN of frame 0 in this generation           |
//! | 40     | 4    | CRC-32 of bytes 0..40                                     |
//! | 44     | 20   | zero                                                      |
//!
//! Frames start at byte 512 (the header has the first sector), each on a 512-byte
//! boundary: a 64-byte frame header, then the page image with its *hole* left out,
//! zero-padded to the next boundary. The hole is the part of the page its layout
//! declares unused, read from the page's header (`hole_of`): the free gap between the
//! slot array and the data of a heap page or B+tree node, the rest of an overflow page
//! after its data, of a free page after its link, of page 0 after the WAL path. Leaving
//! it out cuts the bytes logged per commit by about half for pages that are half full,
//! and the bytes logged are what a WAL sync pays for; what lies in the gap (the bytes of
//! a removed tuple, say) is never read, and comes back as zeros. The frame with LSN
//! `base + i` is the `i`-th frame. A frame is valid when it carries the header's salt,
//! its LSN is next in sequence, its checksum verifies, and the rebuilt page carries the
//! frame's page id, a known kind and a format version this build reads.
//!
//! The frame checksum covers the frame header and the bytes stored, not the hole, and
//! it is all that vouches for a page image in the WAL: a commit does not stamp the
//! page's own checksum (`crate::page`), which the checkpoint that writes the page into
//! the database file does. Under format 1 (before 2026-11-27) every frame held a sealed
//! page (its own checksum stamped over all its bytes, hole included) and the frame
//! checksum covered the header and that page checksum; the hole was the page's longest
//! run of zero bytes, found by scanning it. Both cost a pass over every byte of every
//! page of every commit. A WAL of format 1 is still recovered and read (frames checked
//! the old way); frames of two formats never share a generation: a store that opens an
//! older one for writing checkpoints it and starts a generation of the current format
//! first.
//!
//! | offset | size | field                                                              |
//! |-------:|-----:|--------------------------------------------------------------------|
//! | 0      | 8    | LSN                                                                |
//! | 8      | 8    | transaction id                                                     |
//! | 16     | 4    | page id                                                            |
//! | 20     | 4    | flags: bit 0 = COMMIT (last frame of a committed transaction), bit 1 = DELTA (format 3) |
//! | 24     | 4    | database size in pages after the transaction (COMMIT frames)       |
//! | 28     | 4    | hole offset: where the left-out zero bytes start (0 = no hole)     |
//! | 32     | 8    | durable LSN: every frame up to it was synced when this was written |
//! | 40     | 8    | database id                                                        |
//! | 48     | 8    | salt of the generation                                             |
//! | 56     | 4    | hole length in bytes                                               |
//! | 60     | 4    | CRC-32 of bytes 0..60 and the stored page bytes (below)            |
//! | 64     | …    | page bytes `0..hole_offset`, then `hole_offset+hole_length..`      |
//!
//! ## Delta frames (format 3)
//! A commit gives [`Wal::append`] each page with its newest committed version (the
//! frame's LSN and the image the buffer pool holds for it). When that version is a frame
//! of the current generation, the page is logged as the byte ranges, outside the new
//! image's hole, that differ from it as the WAL holds it (its hole read as zeros) — if
//! that is at most half of what a full frame would store. The frame header is the same
//! (flags bit 1 set; the hole fields name the new image's hole, zeroed when the delta is
//! applied); the body is:
//!
//! | offset | size | field                                                              |
//! |-------:|-----:|--------------------------------------------------------------------|
//! | 0      | 8    | base LSN: the frame this delta applies to                          |
//! | 8      | 4    | body length in bytes, this header included                         |
//! | 12     | 2    | chain depth: deltas since the page's last full image, this one too |
//! | 14     | 2    | number of ranges                                                   |
//! | 16     | …    | per range: offset (4), length (4), the bytes; ascending, disjoint  |
//!
//! The frame checksum covers the frame header and the whole body. A page's first frame
//! in a generation is always a full image (its base would be the database file's copy,
//! which a crash in the middle of a checkpoint may have torn), and so is a frame whose
//! chain would exceed [`MAX_DELTA_CHAIN`] deltas or a page's worth of delta bytes: a
//! version is rebuilt from one full image and at most 16 deltas. The WAL index keeps,
//! for every frame, its base ([`FrameMeta`]); [`Wal::read_page`] follows the bases down
//! to the full image, then applies the deltas up, checking each frame's checksum, and
//! verifies the rebuilt page's id, kind and version. Recovery accepts a delta only when
//! its base is its page's newest committed frame of the generation and its depth is
//! one more than its base's; otherwise the log ends there, as at a frame that fails its
//! checksum. A damaged base ends the log before any delta on it is reached.
//!
//! Format 2 (2026-11-27, before deltas) is format 3 without delta frames: a format-2
//! WAL is recovered and read, and a store that opens one for writing checkpoints it and
//! starts a format-3 generation first. A build of format 2 refuses a format-3 WAL
//! ("has format version 3, newer than this build's 2").
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
//! Frames are found on 512-byte boundaries, so the search does not need the damaged
//! frame's length; a candidate is read whole and must verify.
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
use crate::page::{
    PAGE_HEADER_SIZE, PageKind, page_kind, read_u16, read_u32, read_u64, verify_page,
    verify_page_fields, write_u16, write_u32, write_u64,
};

pub const WAL_HEADER_BYTES: usize = 64;
pub const FRAME_HEADER_BYTES: usize = 64;
const WAL_MAGIC: &[u8; 8] = b"BeeDBWAL";
/// The format this build writes (see the module documentation).
pub const WAL_FORMAT_VERSION: u32 = 3;
/// The format before delta frames (full images only), still read.
const WAL_FORMAT_V2: u32 = 2;

/// The largest first LSN a WAL header may name: far beyond any count of frames a
/// database can write (one per page write), far enough below `u64::MAX` that no sum
/// of LSNs and frame counts overflows.
const MAX_BASE_LSN: u64 = u64::MAX / 4;
/// The first format, still read (a WAL left by an older build is recovered, then the
/// next generation is written in the current format).
const WAL_FORMAT_V1: u32 = 1;
const FLAG_COMMIT: u32 = 1;
/// A delta frame (format 3): the body holds byte ranges to apply to an earlier frame.
const FLAG_DELTA: u32 = 2;
/// Bytes of a delta frame's body before its ranges: base LSN (8), body length (4),
/// chain depth (2), range count (2).
const DELTA_HEADER_BYTES: usize = 16;
/// Bytes before each range's data: offset (4), length (4).
const RANGE_HEADER_BYTES: usize = 8;
/// A page's frames after its last full image are at most this many deltas, so a read
/// of a WAL version replays at most this many frames over one full image.
pub const MAX_DELTA_CHAIN: u16 = 16;
/// Equal bytes between two changed ranges shorter than this are logged with them (a
/// range header costs 8 bytes).
const RANGE_MERGE_GAP: usize = 16;
const HEADER_CRC_OFFSET: usize = 40;
const FRAME_CRC_OFFSET: usize = 60;
/// Frames start on 512-byte (sector) boundaries; the WAL header has the first sector.
const FRAME_ALIGN: u64 = 512;
const FIRST_FRAME_OFFSET: u64 = FRAME_ALIGN;
/// The part of `image` its layout declares unused, as (offset, length): the free gap
/// between the slot array and the data of a heap page or B+tree node, the rest of an
/// overflow page after its data, of a free page after its link, of page 0 after the WAL
/// path. (0, 0) when there is none, or when the page's header does not describe one
/// consistently (then the whole page is logged). Read from the header in a few
/// instructions, where scanning the page for its longest run of zeros read every byte
/// (a B+tree node also checks that no slot points into its gap: a vectorized minimum
/// over the slot array). Called once per frame written: the hole of a delta's base is
/// the one its frame recorded ([`FrameMeta::hole`]), not read again from its image.
fn hole_of(image: &[u8]) -> (usize, usize) {
    let gap = match page_kind(image) {
        Some(PageKind::Heap) => crate::heap::page::free_gap(image),
        Some(PageKind::BTreeLeaf | PageKind::BTreeInternal) => crate::btree::node::free_gap(image),
        Some(PageKind::Overflow) => crate::heap::overflow::free_gap(image),
        Some(PageKind::Free) => Some(crate::header::free_page_gap(image)),
        Some(PageKind::DatabaseHeader) => crate::header::free_gap(image),
        None => None,
    };
    match gap {
        Some((off, len)) if len > 0 && off >= PAGE_HEADER_SIZE && off + len <= image.len() => {
            (off, len)
        }
        _ => (0, 0),
    }
}

/// Bytes a frame occupies in the file when it stores `stored` bytes of its page.
fn frame_stride(stored: usize) -> u64 {
    ((FRAME_HEADER_BYTES + stored) as u64).div_ceil(FRAME_ALIGN) * FRAME_ALIGN
}

/// A frame header read back from the file.
struct FrameInfo {
    lsn: Lsn,
    txn: TxnId,
    page: PageId,
    flags: u32,
    page_count: u32,
    stride: u64,
    /// For a delta frame: its base frame, chain depth and body length.
    delta: Option<(Lsn, u16, u32)>,
    /// The hole its header names: (offset, length).
    hole: (u32, u32),
}

/// What the WAL index knows of each frame of the generation.
#[derive(Clone, Copy, Debug)]
struct FrameMeta {
    /// Where the frame starts in the file.
    offset: u64,
    /// The frame a delta applies to; [`Lsn::IN_DATABASE_FILE`] for a full image.
    base: Lsn,
    /// Deltas from the last full image to this frame (0 for a full image).
    depth: u16,
    /// Body bytes of those deltas (0 for a full image).
    chain_bytes: u32,
    /// The hole of the page version this frame logs, (offset, length), as its header
    /// names it: where the WAL's copy of the version holds zeros. A delta against this
    /// frame is diffed against it, without reading the base image's header again
    /// ([`hole_of`] walks a B+tree node's slots).
    hole: (u32, u32),
}

impl FrameMeta {
    fn full(offset: u64, hole: (u32, u32)) -> FrameMeta {
        FrameMeta {
            offset,
            base: Lsn::IN_DATABASE_FILE,
            depth: 0,
            chain_bytes: 0,
            hole,
        }
    }
}

/// Appends to `out` the byte ranges of `new[start..end]` that differ from `base` (or,
/// with `base` `None`, from zeros), merging ranges closer than [`RANGE_MERGE_GAP`].
/// Equal 512-byte blocks are skipped with one `memcmp`; a differing block is compared
/// 16 bytes at a time in registers, and a differing 16 bytes gives the ends of its
/// change from the XOR's leading and trailing zero bits.
fn diff_span(new: &[u8], base: Option<&[u8]>, start: usize, end: usize, out: &mut Vec<(u32, u32)>) {
    const BLOCK: usize = 512;
    const CHUNK: usize = 16;
    let word = |b: &[u8], i: usize| u128::from_le_bytes(b[i..i + CHUNK].try_into().expect("16 bytes"));
    let mut push = |lo: usize, hi: usize| match out.last_mut() {
        Some(last) if (last.0 + last.1) as usize + RANGE_MERGE_GAP >= lo => {
            last.1 = hi as u32 - last.0;
        }
        _ => out.push((lo as u32, (hi - lo) as u32)),
    };
    let mut at = start;
    while at < end {
        let block_end = (at + BLOCK).min(end);
        let same = match base {
            Some(b) => new[at..block_end] == b[at..block_end],
            None => new[at..block_end].iter().fold(0u8, |a, &x| a | x) == 0,
        };
        if !same {
            let mut c = at;
            while c + CHUNK <= block_end {
                let x = word(new, c) ^ base.map_or(0, |b| word(b, c));
                if x != 0 {
                    // Little-endian: byte i of the chunk is bits 8i..8i+8.
                    let lo = c + (x.trailing_zeros() / 8) as usize;
                    let hi = c + CHUNK - (x.leading_zeros() / 8) as usize;
                    push(lo, hi);
                }
                c += CHUNK;
            }
            // The tail shorter than a chunk, byte by byte.
            for i in c..block_end {
                if new[i] != base.map_or(0, |b| b[i]) {
                    push(i, i + 1);
                }
            }
        }
        at = block_end;
    }
}

/// The ranges of `new` (outside its hole `new_hole`) that differ from `base` as the WAL
/// holds it (its hole `base_hole` read as zeros, whatever the copy in memory has
/// there), into `out`; the delta body's length, or `None` past `limit` bytes.
fn diff_ranges(
    new: &[u8],
    new_hole: (usize, usize),
    base: &[u8],
    base_hole: (usize, usize),
    limit: usize,
    out: &mut Vec<(u32, u32)>,
) -> Option<usize> {
    out.clear();
    let ps = new.len();
    let (bh_start, bh_end) = (base_hole.0, base_hole.0 + base_hole.1);
    // The spans of `new` to compare: before and after its hole.
    let spans = if new_hole.1 == 0 {
        [(0, ps), (ps, ps)]
    } else {
        [(0, new_hole.0), (new_hole.0 + new_hole.1, ps)]
    };
    for (s, e) in spans {
        if base_hole.1 == 0 {
            diff_span(new, Some(base), s, e, out);
        } else {
            // Where the base had its hole, the WAL's copy holds zeros.
            let (a, b) = (bh_start.clamp(s, e), bh_end.clamp(s, e));
            diff_span(new, Some(base), s, a, out);
            diff_span(new, None, a, b, out);
            diff_span(new, Some(base), b, e, out);
        }
        let bytes = DELTA_HEADER_BYTES + out.iter().map(|r| RANGE_HEADER_BYTES + r.1 as usize).sum::<usize>();
        if bytes > limit {
            return None;
        }
    }
    let bytes = DELTA_HEADER_BYTES + out.iter().map(|r| RANGE_HEADER_BYTES + r.1 as usize).sum::<usize>();
    (bytes <= limit && out.len() <= usize::from(u16::MAX)).then_some(bytes)
}

/// Checks the structure of a delta frame's `body` (read whole, its checksum already
/// verified): the length it records, ranges inside a page of `page_size` bytes, in
/// ascending order and not overlapping, filling the body exactly.
fn delta_body_ok(body: &[u8], page_size: usize) -> bool {
    if body.len() < DELTA_HEADER_BYTES || read_u32(body, 8) as usize != body.len() {
        return false;
    }
    let count = read_u16(body, 14) as usize;
    let mut at = DELTA_HEADER_BYTES;
    let mut prev_end = 0usize;
    for _ in 0..count {
        if at + RANGE_HEADER_BYTES > body.len() {
            return false;
        }
        let (off, len) = (read_u32(body, at) as usize, read_u32(body, at + 4) as usize);
        at += RANGE_HEADER_BYTES;
        if off < prev_end || len == 0 || off + len > page_size || at + len > body.len() {
            return false;
        }
        prev_end = off + len;
        at += len;
    }
    at == body.len()
}

/// Applies a delta frame's `body` (checked by [`delta_body_ok`]) to `image`, the page
/// as of its base frame, then zeroes the new image's hole `(hole_off, hole_len)`.
fn apply_delta(body: &[u8], image: &mut [u8], hole_off: usize, hole_len: usize) {
    let count = read_u16(body, 14) as usize;
    let mut at = DELTA_HEADER_BYTES;
    for _ in 0..count {
        let (off, len) = (read_u32(body, at) as usize, read_u32(body, at + 4) as usize);
        at += RANGE_HEADER_BYTES;
        image[off..off + len].copy_from_slice(&body[at..at + len]);
        at += len;
    }
    image[hole_off..hole_off + hole_len].fill(0);
}
/// The default of `StoreOptions::wal_size_limit`: at a reset, a WAL grown larger than
/// this (by a big transaction) is truncated back; smaller ones keep their size,
/// because overwriting allocated blocks is several times cheaper than extending a file.
pub const DEFAULT_WAL_SIZE_LIMIT: u64 = 64 << 20;

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

/// Checksum of a frame (format 2): CRC-32 of its header (bytes 0..60) and of the page
/// bytes it stores, `image` without the hole `(hole_off, hole_len)`. The page's own
/// checksum is not involved: it is stamped when the page is written to the database file.
fn frame_checksum(header: &[u8], image: &[u8], hole_off: usize, hole_len: usize) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&header[0..FRAME_CRC_OFFSET]);
    h.update(&image[..hole_off]);
    h.update(&image[hole_off + hole_len..]);
    h.finalize()
}

/// Checksum of a frame of format 1: its header and the sealed page image's own checksum
/// (bytes 0..4), which covered the image.
fn frame_checksum_v1(header: &[u8], image: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&header[0..FRAME_CRC_OFFSET]);
    h.update(&image[0..4]);
    h.finalize()
}

/// Checks a frame read back: its header `h` and the page rebuilt from it in `image`
/// (the hole zeroed), under the generation's `format`. The page-id, kind and version
/// checks of [`verify_page_fields`] apply in both formats.
fn check_frame(format: u32, h: &[u8], image: &[u8], page: PageId) -> Result<()> {
    let stored = read_u32(h, FRAME_CRC_OFFSET);
    if format == WAL_FORMAT_V1 {
        if stored != frame_checksum_v1(h, image) {
            return Err(Error::corrupt(page, "WAL frame checksum mismatch"));
        }
        return verify_page(image, page);
    }
    let (hole_off, hole_len) = (read_u32(h, 28) as usize, read_u32(h, 56) as usize);
    let actual = frame_checksum(h, image, hole_off, hole_len);
    if stored != actual {
        return Err(Error::corrupt(
            page,
            format!("WAL frame checksum mismatch (stored {stored:#010x}, computed {actual:#010x})"),
        ));
    }
    verify_page_fields(image, page)
}

/// One page image to log.
pub struct FrameWrite<'a> {
    pub page: PageId,
    /// The page image (its own checksum field is not stamped: see [`crate::page`]).
    pub image: &'a [u8],
    /// The page's newest committed version, when the caller has its image at hand:
    /// its frame's LSN and the image (as committed; what its hole holds does not
    /// matter). The frame is then a delta against it when that is clearly smaller and
    /// the version is a frame of the current generation (see [`Wal::append`]).
    pub base: Option<(Lsn, &'a [u8])>,
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
    /// Valid delta frames found (committed or not).
    pub delta_frames: u64,
}

/// Committed frames by page, for snapshot lookups.
#[derive(Default)]
struct WalIndex {
    /// LSN of frame 0 in the file.
    base: Lsn,
    /// Committed frame LSNs of each page, ascending.
    versions: HashMap<PageId, Vec<Lsn>>,
    /// Every frame of the generation (committed or not), by LSN − base: where it is,
    /// and for a delta, the frame it applies to.
    frames: Vec<FrameMeta>,
    /// Format of the generation's frames: the header's version.
    format: u32,
}

/// Append position; changed only by the one writer (or a checkpoint, which holds the
/// write lock).
struct AppendState {
    /// Next LSN to assign.
    next_lsn: Lsn,
    /// Salt of the current generation: frames with another salt are stale.
    salt: u64,
    /// Where the next frame goes.
    next_offset: u64,
    /// Format of the generation (appending needs [`WAL_FORMAT_VERSION`]).
    format: u32,
    /// Reused for every append, so a commit allocates no frame buffer.
    buffer: Vec<u8>,
    /// Reused for the changed ranges of each delta frame.
    ranges: Vec<(u32, u32)>,
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
    /// Delta frames appended since open.
    pub delta_frames: AtomicU64,
    /// Bytes appended since open (frames with their headers and padding).
    pub bytes_appended: AtomicU64,
}

impl Wal {
    /// Opens (creating if needed) the WAL at `path` and recovers its committed frames.
    /// `first_lsn` is where LSNs start if the log is empty.
    pub fn open(
        fs: &dyn FileSystem,
        path: &Path,
        page_size: usize,
        database_id: u64,
        first_lsn: Lsn,
        read_only: bool,
    ) -> Result<(Wal, RecoveredLog)> {
        let file = fs
            .open(
                path,
                OpenOptions {
                    create: !read_only,
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
        let (salt, base, format) = if header_ok {
            let version = read_u32(&header, 8);
            if version > WAL_FORMAT_VERSION {
                return Err(Error::InvalidArgument(format!(
                    "WAL {} has format version {version}, newer than this build's {WAL_FORMAT_VERSION}",
                    path.display()
                )));
            }
            if version < WAL_FORMAT_V1 {
                return Err(Error::InvalidArgument(format!(
                    "WAL {} has format version {version}, which no build writes",
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
            // LSN 0 names the database file's version of a page, and LSNs count
            // frames one by one from 1: a base outside that range (a header whose
            // checksum matches by accident or by design) would make the frame
            // arithmetic wrap.
            let base = read_u64(&header, 32);
            if base == 0 || base > MAX_BASE_LSN {
                return Err(Error::CorruptWal {
                    frame: 0,
                    page: PageId(0),
                    detail: format!("WAL {} has a first LSN out of range ({base})", path.display()),
                });
            }
            (read_u64(&header, 24), Lsn(base), version)
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
            if !read_only {
                write_header(&*file, page_size, database_id, salt, first_lsn)?;
            }
            (salt, first_lsn, WAL_FORMAT_VERSION)
        };
        let wal = Wal {
            file,
            page_size,
            database_id,
            index: RwLock::new(WalIndex {
                base,
                versions: HashMap::default(),
                frames: Vec::new(),
                format,
            }),
            append: Mutex::new(AppendState {
                next_lsn: base,
                salt,
                next_offset: FIRST_FRAME_OFFSET,
                format,
                buffer: Vec::new(),
                ranges: Vec::new(),
            }),
            written: AtomicU64::new(base.0.saturating_sub(1)),
            durable: AtomicU64::new(base.0.saturating_sub(1)),
            sync_lock: Mutex::new(()),
            generation: RwLock::new(()),
            syncs: AtomicU64::new(0),
            delta_frames: AtomicU64::new(0),
            bytes_appended: AtomicU64::new(0),
        };
        let recovered = wal.recover(len)?;
        if format != WAL_FORMAT_VERSION && !read_only && wal.frame_count() == 0 {
            // An older build's WAL with no frame: start a generation in this build's
            // format now (with frames, the store's recovery checkpoint does it).
            wal.reset(u64::MAX)?;
        }
        Ok((wal, recovered))
    }

    /// Reads and checks the frame at `off`: a full image is rebuilt in `image` (its hole
    /// filled with zeros); a delta's body is read into `body` and its checksum and ranges
    /// checked (applying it needs its base, which recovery checks apart). `None` if there
    /// is no valid frame of this generation there.
    fn read_frame_at(
        &self,
        off: u64,
        len: u64,
        salt: u64,
        format: u32,
        image: &mut [u8],
        body: &mut Vec<u8>,
    ) -> Result<Option<FrameInfo>> {
        let mut h = [0u8; FRAME_HEADER_BYTES];
        if off + FRAME_HEADER_BYTES as u64 > len {
            return Ok(None);
        }
        self.file
            .read_exact_at(&mut h, off)
            .map_err(|e| Error::io("reading a WAL frame header", e))?;
        let hole_off = read_u32(&h, 28) as usize;
        let hole_len = read_u32(&h, 56) as usize;
        let sane_hole = (hole_len == 0 && hole_off == 0)
            || (hole_off >= PAGE_HEADER_SIZE
                && hole_off
                    .checked_add(hole_len)
                    .is_some_and(|e| e <= self.page_size));
        if read_u64(&h, 48) != salt || read_u64(&h, 40) != self.database_id || !sane_hole {
            return Ok(None);
        }
        let page = PageId(read_u32(&h, 16));
        let info = |stride, delta| FrameInfo {
            lsn: Lsn(read_u64(&h, 0)),
            txn: TxnId(read_u64(&h, 8)),
            page,
            flags: read_u32(&h, 20),
            page_count: read_u32(&h, 24),
            stride,
            delta,
            hole: (hole_off as u32, hole_len as u32),
        };
        if read_u32(&h, 20) & FLAG_DELTA != 0 {
            // Deltas exist from format 3 on.
            if format <= WAL_FORMAT_V2 || !self.read_delta_body(&h, off, len, body)? {
                return Ok(None);
            }
            let (base, depth) = (Lsn(read_u64(body, 0)), read_u16(body, 12));
            if base.0 >= read_u64(&h, 0) || depth == 0 || depth > MAX_DELTA_CHAIN {
                return Ok(None);
            }
            return Ok(Some(info(frame_stride(body.len()), Some((base, depth, body.len() as u32)))));
        }
        let stored = self.page_size - hole_len;
        let at = off + FRAME_HEADER_BYTES as u64;
        if at + stored as u64 > len {
            return Ok(None);
        }
        self.read_stored(at, hole_off, hole_len, image)?;
        if check_frame(format, &h, image, page).is_err() {
            return Ok(None);
        }
        Ok(Some(info(frame_stride(stored), None)))
    }

    /// Reads the body of the delta frame whose header `h` is at `off` (in a file of
    /// `len` bytes) into `body`, and checks it: the frame checksum (over the header and
    /// the body) and the body's structure. False when either fails.
    fn read_delta_body(&self, h: &[u8], off: u64, len: u64, body: &mut Vec<u8>) -> Result<bool> {
        let at = off + FRAME_HEADER_BYTES as u64;
        // Frames are padded to 512 bytes: the rest of the first sector holds the body's
        // header and, for most deltas, the whole body, so one read usually does.
        let first = (FRAME_ALIGN as usize - FRAME_HEADER_BYTES).min(len.saturating_sub(at) as usize);
        if first < DELTA_HEADER_BYTES {
            return Ok(false);
        }
        body.resize(first, 0);
        self.file
            .read_exact_at(body, at)
            .map_err(|e| Error::io("reading a WAL frame", e))?;
        let n = read_u32(body, 8) as usize;
        // A delta is never larger than the page it changes (`Wal::append` logs the
        // page whole instead), so a length beyond that is damage, not a frame.
        if n < DELTA_HEADER_BYTES || n > DELTA_HEADER_BYTES + 2 * self.page_size || at + n as u64 > len {
            return Ok(false);
        }
        if n > first {
            body.resize(n, 0);
            self.file
                .read_exact_at(&mut body[first..], at + first as u64)
                .map_err(|e| Error::io("reading a WAL frame", e))?;
        } else {
            body.truncate(n);
        }
        Ok(read_u32(h, FRAME_CRC_OFFSET) == frame_checksum(h, body, 0, 0)
            && delta_body_ok(body, self.page_size))
    }

    /// Reads a frame body stored at `body` with the hole `(hole_off, hole_len)` left
    /// out, and rebuilds the whole page in `image`.
    fn read_stored(
        &self,
        body: u64,
        hole_off: usize,
        hole_len: usize,
        image: &mut [u8],
    ) -> Result<()> {
        let read = |buf: &mut [u8], at: u64| {
            self.file
                .read_exact_at(buf, at)
                .map_err(|e| Error::io("reading a WAL frame", e))
        };
        if hole_len == 0 {
            return read(image, body);
        }
        read(&mut image[..hole_off], body)?;
        image[hole_off..hole_off + hole_len].fill(0);
        read(&mut image[hole_off + hole_len..], body + hole_off as u64)
    }

    /// After recovery stopped at an invalid frame at `stop` (which should have held LSN
    /// `expected`), looks on every later frame boundary for a valid frame of this
    /// generation that records `expected` as already synced. Such a frame proves the bad
    /// frame was durable: corruption, not a torn tail. Headers are screened in chunks;
    /// a candidate is read and checked whole (its checksum covers its page bytes).
    fn find_vouching_frame(
        &self,
        stop: u64,
        len: u64,
        salt: u64,
        format: u32,
        expected: Lsn,
    ) -> Result<Option<u64>> {
        const CHUNK: u64 = 1 << 20;
        let mut chunk = vec![0u8; CHUNK as usize];
        let mut image = vec![0u8; self.page_size];
        let mut body = Vec::new();
        let mut at = stop + FRAME_ALIGN;
        while at + FRAME_HEADER_BYTES as u64 <= len {
            let n = (len - at).min(CHUNK) as usize;
            self.file
                .read_exact_at(&mut chunk[..n], at)
                .map_err(|e| Error::io("scanning the WAL", e))?;
            let mut k = 0usize;
            while k + FRAME_HEADER_BYTES <= n {
                let h = &chunk[k..k + FRAME_HEADER_BYTES];
                if read_u64(h, 48) == salt
                    && read_u64(h, 40) == self.database_id
                    && read_u64(h, 0) > expected.0
                    && read_u64(h, 32) >= expected.0
                    && self
                        .read_frame_at(at + k as u64, len, salt, format, &mut image, &mut body)?
                        .is_some()
                {
                    return Ok(Some(at + k as u64));
                }
                k += FRAME_ALIGN as usize;
            }
            at += CHUNK;
        }
        Ok(None)
    }

    fn recover(&self, len: u64) -> Result<RecoveredLog> {
        let mut out = RecoveredLog {
            frames_in_file: u64::from(len > FIRST_FRAME_OFFSET),
            ..RecoveredLog::default()
        };
        let mut image = vec![0u8; self.page_size];
        let mut body = Vec::new();
        let mut committed: HashMap<PageId, Vec<Lsn>> = HashMap::default();
        let mut frames: Vec<FrameMeta> = Vec::new();
        let mut pending: Vec<(PageId, Lsn)> = Vec::new();
        let mut pending_txn: Option<TxnId> = None;
        let (base, format) = {
            let index = self.index.read();
            (index.base, index.format)
        };
        let salt = self.append.lock().salt;
        let mut off = FIRST_FRAME_OFFSET;
        while let Some(f) = self.read_frame_at(off, len, salt, format, &mut image, &mut body)? {
            if f.lsn.0 != base.0 + frames.len() as u64 {
                break;
            }
            let meta = match f.delta {
                None => FrameMeta::full(off, f.hole),
                Some((b, depth, n)) => {
                    // A delta applies to its page's newest committed frame when its
                    // transaction began, a frame of this generation, one step further
                    // down a bounded chain. Anything else is damage (or a bug): the log
                    // ends here, as at a frame that fails its checksum.
                    let newest = committed.get(&f.page).and_then(|v| v.last()).copied();
                    let bm = b.0.checked_sub(base.0).and_then(|i| frames.get(i as usize)).copied();
                    match bm {
                        Some(bm) if newest == Some(b) && depth == bm.depth + 1 => FrameMeta {
                            offset: off,
                            base: b,
                            depth,
                            chain_bytes: bm.chain_bytes + n,
                            hole: f.hole,
                        },
                        _ => break,
                    }
                }
            };
            out.delta_frames += u64::from(f.delta.is_some());
            frames.push(meta);
            off += f.stride;
            out.max_txn = out.max_txn.max(f.txn);
            if pending_txn != Some(f.txn) {
                out.uncommitted_frames += pending.len() as u64;
                pending.clear();
                pending_txn = Some(f.txn);
            }
            pending.push((f.page, f.lsn));
            if f.flags & FLAG_COMMIT != 0 {
                for (p, l) in pending.drain(..) {
                    committed.entry(p).or_default().push(l);
                }
                out.committed_txns += 1;
                out.page_count = Some(f.page_count);
            }
        }
        out.uncommitted_frames += pending.len() as u64;
        let valid = frames.len() as u64;
        out.frames_in_file = out.frames_in_file.max(valid);

        // Corruption check: does a later frame vouch that the bad one was durable?
        let expected = Lsn(base.0 + valid);
        if let Some(at) = self.find_vouching_frame(off, len, salt, format, expected)? {
            let mut h = [0u8; FRAME_HEADER_BYTES];
            self.file
                .read_exact_at(&mut h, off)
                .map_err(|e| Error::io("reading a WAL frame header", e))?;
            return Err(Error::CorruptWal {
                frame: valid,
                page: PageId(read_u32(&h, 16)),
                detail: format!(
                    "frame {valid} (LSN {expected}, at byte {off}) is damaged, but the frame at \
                     byte {at} records that it had been synced; refusing to drop committed data"
                ),
            });
        }

        // New frames go after the valid ones (open then checkpoints and resets).
        let next = Lsn(base.0 + valid);
        {
            let mut index = self.index.write();
            index.versions = committed;
            index.frames = frames;
        }
        {
            let mut append = self.append.lock();
            append.next_lsn = next;
            append.next_offset = off;
        }
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

    /// Reads the image of `page` in frame `lsn` into `buf` and verifies it: the frame's
    /// checksum, and the page id, kind and version the image carries. A delta frame is
    /// applied to its base, down to the page's last full image (at most
    /// [`MAX_DELTA_CHAIN`] deltas), each frame checked against its checksum.
    pub fn read_page(&self, page: PageId, lsn: Lsn, buf: &mut [u8]) -> Result<()> {
        // The frames to read, newest first: `lsn`, its base, …, the full image.
        let mut chain: Vec<(Lsn, u64)> = Vec::new();
        let (base, format) = {
            let index = self.index.read();
            let mut at = lsn;
            loop {
                let meta = at
                    .0
                    .checked_sub(index.base.0)
                    .and_then(|i| index.frames.get(i as usize).copied());
                let Some(meta) = meta else {
                    return Err(Error::CorruptWal {
                        frame: 0,
                        page: PageId(0),
                        detail: format!("no frame with LSN {at} in the WAL (first is {})", index.base),
                    });
                };
                chain.push((at, meta.offset));
                if meta.base == Lsn::IN_DATABASE_FILE {
                    break;
                }
                at = meta.base;
            }
            (index.base, index.format)
        };
        let bad_header = |l: Lsn, off: u64, h: &[u8]| Error::CorruptWal {
            frame: l.0 - base.0,
            page: PageId(read_u32(h, 16)),
            detail: format!("the frame header at byte {off} does not hold page {page} at LSN {l}"),
        };
        let mut h = [0u8; FRAME_HEADER_BYTES];
        let (full_lsn, off) = *chain.last().expect("a chain has its full image");
        self.file
            .read_exact_at(&mut h, off)
            .map_err(|e| Error::io(format!("reading WAL frame {full_lsn}"), e))?;
        let (hole_off, hole_len) = (read_u32(&h, 28) as usize, read_u32(&h, 56) as usize);
        if read_u64(&h, 0) != full_lsn.0
            || read_u32(&h, 16) != page.0
            || read_u32(&h, 20) & FLAG_DELTA != 0
            || hole_off + hole_len > self.page_size
        {
            return Err(bad_header(full_lsn, off, &h));
        }
        self.read_stored(off + FRAME_HEADER_BYTES as u64, hole_off, hole_len, buf)?;
        check_frame(format, &h, buf, page)?;
        if chain.len() == 1 {
            return Ok(());
        }
        let mut body = Vec::new();
        for k in (0..chain.len() - 1).rev() {
            let (l, off) = chain[k];
            self.file
                .read_exact_at(&mut h, off)
                .map_err(|e| Error::io(format!("reading WAL frame {l}"), e))?;
            let (hole_off, hole_len) = (read_u32(&h, 28) as usize, read_u32(&h, 56) as usize);
            if read_u64(&h, 0) != l.0
                || read_u32(&h, 16) != page.0
                || read_u32(&h, 20) & FLAG_DELTA == 0
                || hole_off + hole_len > self.page_size
            {
                return Err(bad_header(l, off, &h));
            }
            if !self.read_delta_body(&h, off, u64::MAX, &mut body)? || read_u64(&body, 0) != chain[k + 1].0.0 {
                return Err(Error::corrupt(
                    page,
                    format!("WAL delta frame {l} fails its checksum or does not apply to frame {}", chain[k + 1].0),
                ));
            }
            apply_delta(&body, buf, hole_off, hole_len);
        }
        verify_page_fields(buf, page)
    }

    /// Appends frames for `pages` as transaction `txn`; if `commit` is `Some(n)`, the
    /// last frame is the COMMIT frame and records a database size of `n` pages. Returns
    /// the LSN of each frame. Does not sync and does not publish.
    ///
    /// A page given with its `base` (its newest committed version and that version's
    /// image) is logged as a delta against it — the byte ranges that differ, outside the
    /// page's hole — when the base is a frame of this generation, its chain holds fewer
    /// than [`MAX_DELTA_CHAIN`] deltas whose bodies and this one's stay within a page,
    /// and the delta is at most half the bytes a full frame would store. Otherwise, and
    /// for the first frame of a page in a generation (its base is then the database
    /// file's copy), the frame is a full image, so replay never starts from a page that
    /// a crash may have torn in the database file.
    pub fn append(
        &self,
        txn: TxnId,
        pages: &[FrameWrite<'_>],
        commit: Option<u32>,
    ) -> Result<Vec<Lsn>> {
        let mut append = self.append.lock();
        if append.format != WAL_FORMAT_VERSION {
            // `Wal::open` and the store's recovery checkpoint start a generation in this
            // build's format before any write transaction can run.
            return Err(Error::InvalidArgument(format!(
                "the WAL generation has format {}; frames of format {WAL_FORMAT_VERSION} cannot follow",
                append.format
            )));
        }
        let first = append.next_lsn;
        let durable = self.durable.load(Ordering::Acquire);
        // Built by appending into a reused buffer, not zero-filled: once per commit.
        let mut buf = std::mem::take(&mut append.buffer);
        let mut ranges = std::mem::take(&mut append.ranges);
        buf.clear();
        let mut lsns = Vec::with_capacity(pages.len());
        let mut metas = Vec::with_capacity(pages.len());
        let mut deltas = 0u64;
        let start = append.next_offset;
        {
            let index = pages.iter().any(|fw| fw.base.is_some()).then(|| self.index.read());
            for (k, fw) in pages.iter().enumerate() {
                debug_assert_eq!(fw.image.len(), self.page_size);
                let lsn = Lsn(first.0 + k as u64);
                lsns.push(lsn);
                let offset = start + buf.len() as u64;
                let is_commit = commit.is_some() && k == pages.len() - 1;
                let (hole_off, hole_len) = hole_of(fw.image);
                let stored = self.page_size - hole_len;
                let mut delta = None;
                if let (Some((base_lsn, base_image)), Some(index)) = (fw.base, &index) {
                    let base_meta = base_lsn
                        .0
                        .checked_sub(index.base.0)
                        .filter(|_| base_lsn != Lsn::IN_DATABASE_FILE)
                        .and_then(|i| index.frames.get(i as usize).copied());
                    if let Some(bm) = base_meta.filter(|bm| bm.depth < MAX_DELTA_CHAIN) {
                        let limit = (stored / 2).min(self.page_size.saturating_sub(bm.chain_bytes as usize));
                        let base_hole = (bm.hole.0 as usize, bm.hole.1 as usize);
                        if let Some(n) = diff_ranges(fw.image, (hole_off, hole_len), base_image, base_hole, limit, &mut ranges) {
                            delta = Some((base_lsn, bm, n));
                        }
                    }
                }
                let mut h = [0u8; FRAME_HEADER_BYTES];
                write_u64(&mut h, 0, lsn.0);
                write_u64(&mut h, 8, txn.0);
                write_u32(&mut h, 16, fw.page.0);
                let flags = if is_commit { FLAG_COMMIT } else { 0 } | if delta.is_some() { FLAG_DELTA } else { 0 };
                write_u32(&mut h, 20, flags);
                write_u32(&mut h, 24, if is_commit { commit.unwrap_or(0) } else { 0 });
                write_u32(&mut h, 28, hole_off as u32);
                write_u64(&mut h, 32, durable);
                write_u64(&mut h, 40, self.database_id);
                write_u64(&mut h, 48, append.salt);
                write_u32(&mut h, 56, hole_len as u32);
                let frame_start = buf.len();
                buf.extend_from_slice(&h);
                let body_start = buf.len();
                let sum = if let Some((base_lsn, bm, n)) = delta {
                    let mut dh = [0u8; DELTA_HEADER_BYTES];
                    write_u64(&mut dh, 0, base_lsn.0);
                    write_u32(&mut dh, 8, n as u32);
                    write_u16(&mut dh, 12, bm.depth + 1);
                    write_u16(&mut dh, 14, ranges.len() as u16);
                    buf.extend_from_slice(&dh);
                    for &(o, l) in &ranges {
                        buf.extend_from_slice(&o.to_le_bytes());
                        buf.extend_from_slice(&l.to_le_bytes());
                        buf.extend_from_slice(&fw.image[o as usize..(o + l) as usize]);
                    }
                    debug_assert_eq!(buf.len() - body_start, n);
                    metas.push(FrameMeta {
                        offset,
                        base: base_lsn,
                        depth: bm.depth + 1,
                        chain_bytes: bm.chain_bytes + n as u32,
                        hole: (hole_off as u32, hole_len as u32),
                    });
                    deltas += 1;
                    frame_checksum(&h, &buf[body_start..], 0, 0)
                } else {
                    buf.extend_from_slice(&fw.image[..hole_off]);
                    buf.extend_from_slice(&fw.image[hole_off + hole_len..]);
                    metas.push(FrameMeta::full(offset, (hole_off as u32, hole_len as u32)));
                    frame_checksum(&h, fw.image, hole_off, hole_len)
                };
                write_u32(&mut buf[frame_start..], FRAME_CRC_OFFSET, sum);
                let end = frame_start + frame_stride(buf.len() - body_start) as usize;
                buf.resize(end, 0);
            }
        }
        append.ranges = ranges;
        if pages.is_empty() {
            append.buffer = buf;
            return Ok(lsns);
        }
        let written = self.file.write_at(&buf, start);
        let bytes = buf.len() as u64;
        // Keep a commit-sized buffer; drop one grown by a huge spill.
        if buf.capacity() <= 64 * (FRAME_HEADER_BYTES + self.page_size) {
            append.buffer = buf;
        }
        written.map_err(|e| Error::io("appending to the WAL", e))?;
        self.index.write().frames.extend_from_slice(&metas);
        append.next_offset = start + bytes;
        append.next_lsn = Lsn(first.0 + pages.len() as u64);
        self.written.store(append.next_lsn.0 - 1, Ordering::Release);
        self.delta_frames.fetch_add(deltas, Ordering::Relaxed);
        self.bytes_appended.fetch_add(bytes, Ordering::Relaxed);
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
    /// A file longer than `size_limit` bytes is truncated to it first (like SQLite's
    /// `journal_size_limit`); the limit is never below the header's sector.
    pub fn reset(&self, size_limit: u64) -> Result<()> {
        let size_limit = size_limit.max(FIRST_FRAME_OFFSET);
        let _generation = self.generation.write();
        let mut append = self.append.lock();
        let mut index = self.index.write();
        let len = self
            .file
            .len()
            .map_err(|e| Error::io("reading WAL length", e))?;
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
        // Truncate only once the new header is synced: a truncation that reached the
        // disk before it would leave the old generation's first frames valid and its
        // later ones gone, and recovery would replay those old page versions over the
        // newer ones the checkpoint wrote. (The crash tests found this.)
        if len > size_limit {
            self.file
                .set_len(size_limit)
                .map_err(|e| Error::io("truncating the WAL", e))?;
        }
        append.salt = salt;
        append.next_offset = FIRST_FRAME_OFFSET;
        append.format = WAL_FORMAT_VERSION;
        index.format = WAL_FORMAT_VERSION;
        index.versions.clear();
        index.frames.clear();
        index.base = append.next_lsn;
        let last = append.next_lsn.0 - 1;
        self.written.store(last, Ordering::Release);
        self.durable.store(last, Ordering::Release);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::file::MemFileSystem;
    use crate::heap::page as heap_page;
    use crate::page::{PageKind, format_page, seal_page};

    const PS: usize = 4096;

    /// A page of kind Heap whose body is raw bytes (its header describes no gap).
    fn raw_page(id: u32, fill: &[(usize, usize, u8)]) -> Vec<u8> {
        let mut p = vec![0u8; PS];
        format_page(&mut p, PageId(id), PageKind::Heap);
        for &(start, len, byte) in fill {
            p[start..start + len].fill(byte);
        }
        p
    }

    /// A slotted heap page holding `n` tuples of `len` bytes.
    fn heap(id: u32, n: usize, len: usize) -> Vec<u8> {
        heap_sized(PS, id, n, len)
    }

    /// A slotted heap page of `ps` bytes holding `n` tuples of `len` bytes.
    fn heap_sized(ps: usize, id: u32, n: usize, len: usize) -> Vec<u8> {
        let mut p = vec![0u8; ps];
        heap_page::init(&mut p, PageId(id));
        for i in 0..n {
            let mut t = vec![i as u8 + 1; len];
            t[..4].fill(0);
            assert!(heap_page::insert(&mut p, PageId(id), &t).unwrap().is_some());
        }
        p
    }

    /// `image` as recovery rebuilds it: its hole zeroed.
    fn logged(image: &[u8]) -> Vec<u8> {
        let mut p = image.to_vec();
        let (off, len) = hole_of(image);
        p[off..off + len].fill(0);
        p
    }

    fn append_one(wal: &Wal, txn: u64, page: u32, image: &[u8]) -> Lsn {
        let w = [FrameWrite {
            page: PageId(page),
            image,
            base: None,
        }];
        wal.append(TxnId(txn), &w, Some(page + 1)).unwrap()[0]
    }

    fn flip(fs: &MemFileSystem, path: &Path, at: u64) {
        let f = fs.open(path, OpenOptions { create: false, lock_exclusive: false }).unwrap();
        let mut b = [0u8; 1];
        f.read_exact_at(&mut b, at).unwrap();
        f.write_at(&[b[0] ^ 0x20], at).unwrap();
    }

    #[test]
    fn hole_is_the_free_gap_its_layout_declares() {
        // Heap pages: between the slot array and the tuples.
        assert_eq!(hole_of(&heap(1, 0, 0)), (32, PS - 32));
        assert_eq!(hole_of(&heap(1, 3, 100)), (44, PS - 3 * 104 - 44));
        // A header that describes no consistent gap: the whole page is logged.
        assert_eq!(hole_of(&raw_page(1, &[(16, 100, 7)])), (0, 0));
        let mut full = heap(1, 0, 0);
        while heap_page::insert(&mut full, PageId(1), &[0, 0, 0, 0, 9, 9, 9, 9]).unwrap().is_some() {}
        assert!(hole_of(&full).1 < 12, "a full page has less than a tuple and its slot left");
        // B+tree nodes, overflow, free and header pages.
        let mut p = vec![0u8; PS];
        crate::btree::node::init_node(&mut p, PageId(2), 0, 0);
        assert_eq!(hole_of(&p), (36, PS - 36));
        // A leaf with two cells; then its content start moved above one of them, so
        // a cell would lie in the gap: the node is logged whole.
        for (i, key) in [b"a".as_slice(), b"bb"].into_iter().enumerate() {
            assert!(crate::btree::node::insert_leaf_entry(&mut p, PageId(2), i, key, b"v").unwrap());
        }
        let (start, len) = hole_of(&p);
        assert_eq!(start, 36 + 2 * 2);
        let content = start + len;
        assert!(content < PS);
        write_u32(&mut p, PAGE_HEADER_SIZE + 4, content as u32 + 1);
        assert_eq!(hole_of(&p), (0, 0), "a cell below the content start");
        let mut p = vec![0u8; PS];
        format_page(&mut p, PageId(3), PageKind::Overflow);
        write_u32(&mut p, crate::heap::overflow::DATA_LEN_OFFSET, 100);
        assert_eq!(hole_of(&p), (124, PS - 124));
        write_u32(&mut p, crate::heap::overflow::DATA_LEN_OFFSET, PS as u32);
        assert_eq!(hole_of(&p), (0, 0), "a data length past the page");
        let mut p = vec![0u8; PS];
        format_page(&mut p, PageId(4), PageKind::Free);
        assert_eq!(hole_of(&p), (20, PS - 20));
        let mut p = vec![0u8; PS];
        format_page(&mut p, PageId(0), PageKind::DatabaseHeader);
        crate::header::set_wal_path(&mut p, b"/db/x-wal");
        assert_eq!(hole_of(&p), (139, PS - 139));
    }

    #[test]
    fn frames_read_back_and_recover_with_their_holes_zeroed() {
        let fs = MemFileSystem::new();
        let path = Path::new("w");
        // The bytes of a removed tuple stay in the gap of page 3's copy in memory.
        let mut with_garbage = heap(3, 5, 200);
        heap_page::remove(&mut with_garbage, PageId(3), crate::ids::SlotId(4)).unwrap();
        let pages = [
            heap(1, 0, 0),
            heap(2, 18, 200),
            with_garbage,
            raw_page(4, &[(16, 10, 1), (2000, 96, 4)]),
        ];
        assert_ne!(logged(&pages[2]), pages[2], "page 3 has bytes in its gap");
        heap_page::verify(&logged(&pages[2]), PageId(3)).unwrap();
        let lsns = {
            let (wal, _) = Wal::open(&fs, path, PS, 42, Lsn(1), false).unwrap();
            let writes: Vec<FrameWrite<'_>> = pages
                .iter()
                .enumerate()
                .map(|(i, p)| FrameWrite {
                    page: PageId(i as u32 + 1),
                    image: p,
                    base: None,
                })
                .collect();
            let lsns = wal.append(TxnId(1), &writes, Some(5)).unwrap();
            let mut buf = vec![0u8; PS];
            for (i, (lsn, p)) in lsns.iter().zip(&pages).enumerate() {
                wal.read_page(PageId(i as u32 + 1), *lsn, &mut buf).unwrap();
                assert_eq!(buf, logged(p));
            }
            let err = wal.read_page(PageId(2), lsns[0], &mut buf).unwrap_err();
            assert!(err.to_string().contains("does not hold page 2"), "{err}");
            lsns
        };
        let (wal, rec) = Wal::open(&fs, path, PS, 42, Lsn(1), false).unwrap();
        assert_eq!(rec.committed_txns, 1);
        assert_eq!(rec.page_count, Some(5));
        let mut buf = vec![0u8; PS];
        for (i, (lsn, p)) in lsns.iter().zip(&pages).enumerate() {
            assert_eq!(wal.version_for(PageId(i as u32 + 1), *lsn), *lsn);
            wal.read_page(PageId(i as u32 + 1), *lsn, &mut buf).unwrap();
            assert_eq!(buf, logged(p));
        }
    }

    #[test]
    fn bytes_in_the_hole_do_not_change_the_frame() {
        // Two images that differ only inside the gap their layout declares free log the
        // same frame: the hole is neither stored nor checksummed.
        let fs = MemFileSystem::new();
        let a = heap(1, 3, 100);
        let mut b = a.clone();
        let (off, len) = hole_of(&a);
        b[off + len / 2] = 0xAB;
        let (wal, _) = Wal::open(&fs, Path::new("w"), PS, 42, Lsn(1), false).unwrap();
        let mut frames = Vec::new();
        for image in [&a, &b] {
            let lsn = append_one(&wal, 1, 1, image);
            let off = wal.index.read().frames[(lsn.0 - 1) as usize].offset;
            let f = fs.open(Path::new("w"), OpenOptions { create: false, lock_exclusive: false }).unwrap();
            let mut bytes = vec![0u8; frame_stride(PS - len) as usize];
            f.read_exact_at(&mut bytes, off).unwrap();
            frames.push(bytes);
        }
        // Only the LSN (bytes 0..8) and the checksum over the header differ.
        assert_eq!(frames[0][8..60], frames[1][8..60]);
        assert_eq!(frames[0][64..], frames[1][64..]);
    }

    /// Three committed transactions of one frame each; returns the frames' offsets and
    /// stored lengths.
    fn three_frames(fs: &MemFileSystem, path: &Path, sync: bool) -> Vec<(u64, usize)> {
        let (wal, _) = Wal::open(fs, path, PS, 42, Lsn(1), false).unwrap();
        let mut out = Vec::new();
        for i in 0..3u32 {
            let image = heap(i + 1, 2 + i as usize, 300);
            let lsn = append_one(&wal, u64::from(i) + 1, i + 1, &image);
            if sync {
                wal.sync_to(lsn).unwrap();
            }
            let off = wal.index.read().frames[(lsn.0 - 1) as usize].offset;
            out.push((off, PS - hole_of(&image).1));
        }
        out
    }

    #[test]
    fn a_damaged_stored_byte_is_detected_and_never_replayed() {
        let path = Path::new("w");
        // Bytes of the page before its hole, after it (the tuples), and in the frame
        // header: the frame fails its checksum.
        for at in [20u64, 64 + 40, 64 + 300] {
            let fs = MemFileSystem::new();
            let frames = three_frames(&fs, path, false);
            let (off, stored) = frames[1];
            let at = if at == 64 + 300 { 64 + stored as u64 - 5 } else { at };
            flip(&fs, path, off + at);
            // Never synced: a torn tail. Frame 1 and everything after it are dropped.
            let (wal, rec) = Wal::open(&fs, path, PS, 42, Lsn(1), true).unwrap();
            assert_eq!(rec.committed_txns, 1, "byte {at}");
            assert_eq!(wal.version_for(PageId(2), Lsn(10)), Lsn::IN_DATABASE_FILE);
        }
        // Synced, and a later frame says so: corruption, reported with the frame.
        let fs = MemFileSystem::new();
        let frames = three_frames(&fs, path, true);
        let (off, stored) = frames[1];
        flip(&fs, path, off + 64 + stored as u64 - 5);
        let err = Wal::open(&fs, path, PS, 42, Lsn(1), true).err().unwrap();
        assert!(matches!(err, Error::CorruptWal { frame: 1, page: PageId(2), .. }), "{err}");
        // A frame damaged after open is refused when read.
        let fs = MemFileSystem::new();
        three_frames(&fs, path, true);
        let (wal, rec) = Wal::open(&fs, path, PS, 42, Lsn(1), true).unwrap();
        assert_eq!(rec.committed_txns, 3);
        flip(&fs, path, frames[2].0 + 64 + 100);
        let mut buf = vec![0u8; PS];
        wal.read_page(PageId(1), Lsn(1), &mut buf).unwrap();
        let err = wal.read_page(PageId(3), Lsn(3), &mut buf).unwrap_err();
        assert!(err.to_string().contains("checksum mismatch"), "{err}");
    }

    #[test]
    fn padding_after_a_frame_does_not_matter() {
        let fs = MemFileSystem::new();
        let path = Path::new("w");
        let frames = three_frames(&fs, path, true);
        for &(off, stored) in &frames {
            let end = off + (FRAME_HEADER_BYTES + stored) as u64;
            assert!(end < off + frame_stride(stored), "the frame has padding");
            flip(&fs, path, end);
        }
        let (_, rec) = Wal::open(&fs, path, PS, 42, Lsn(1), true).unwrap();
        assert_eq!(rec.committed_txns, 3);
    }

    /// Writes a WAL of format 1 (sealed pages, the frame checksum over the header and
    /// the page checksum) holding `pages` as one committed transaction.
    fn format_1_wal(fs: &MemFileSystem, path: &Path, pages: &[Vec<u8>]) {
        let f = fs.open(path, OpenOptions { create: true, lock_exclusive: false }).unwrap();
        let mut h = [0u8; WAL_HEADER_BYTES];
        h[0..8].copy_from_slice(WAL_MAGIC);
        write_u32(&mut h, 8, WAL_FORMAT_V1);
        write_u32(&mut h, 12, PS as u32);
        write_u64(&mut h, 16, 42);
        write_u64(&mut h, 24, 7);
        write_u64(&mut h, 32, 1);
        let sum = crc32fast::hash(&h[0..HEADER_CRC_OFFSET]);
        write_u32(&mut h, HEADER_CRC_OFFSET, sum);
        f.write_at(&h, 0).unwrap();
        let mut off = FIRST_FRAME_OFFSET;
        for (i, image) in pages.iter().enumerate() {
            let mut image = image.clone();
            seal_page(&mut image);
            // Format 1 left out a run of zeros; the first page logs its gap, the others
            // are whole.
            let (hole_off, hole_len) = if i == 0 { hole_of(&image) } else { (0, 0) };
            let mut fh = [0u8; FRAME_HEADER_BYTES];
            write_u64(&mut fh, 0, 1 + i as u64);
            write_u64(&mut fh, 8, 1);
            write_u32(&mut fh, 16, i as u32 + 1);
            let last = i == pages.len() - 1;
            write_u32(&mut fh, 20, if last { FLAG_COMMIT } else { 0 });
            write_u32(&mut fh, 24, if last { pages.len() as u32 + 1 } else { 0 });
            write_u32(&mut fh, 28, hole_off as u32);
            write_u64(&mut fh, 40, 42);
            write_u64(&mut fh, 48, 7);
            write_u32(&mut fh, 56, hole_len as u32);
            let sum = frame_checksum_v1(&fh, &image);
            write_u32(&mut fh, FRAME_CRC_OFFSET, sum);
            let mut frame = fh.to_vec();
            frame.extend_from_slice(&image[..hole_off]);
            frame.extend_from_slice(&image[hole_off + hole_len..]);
            f.write_at(&frame, off).unwrap();
            off += frame_stride(PS - hole_len);
        }
    }

    #[test]
    fn a_format_1_wal_is_read_and_followed_by_format_2() {
        let path = Path::new("w");
        let pages = [heap(1, 3, 100), heap(2, 5, 200)];
        let fs = MemFileSystem::new();
        format_1_wal(&fs, path, &pages);
        let mut buf = vec![0u8; PS];
        for read_only in [true, false] {
            let (wal, rec) = Wal::open(&fs, path, PS, 42, Lsn(1), read_only).unwrap();
            assert_eq!((rec.committed_txns, rec.page_count), (1, Some(3)));
            for (i, p) in pages.iter().enumerate() {
                let page = PageId(i as u32 + 1);
                wal.read_page(page, wal.version_for(page, Lsn(2)), &mut buf).unwrap();
                assert_eq!(buf[4..], p[4..], "page {page}");
            }
            if !read_only {
                // No format-2 frame may follow format-1 frames in one generation; the
                // store's recovery checkpoint resets first.
                assert!(wal.append(TxnId(2), &[FrameWrite { page: PageId(1), image: &pages[0], base: None }], Some(3)).is_err());
                wal.reset(u64::MAX).unwrap();
                append_one(&wal, 2, 1, &pages[0]);
            }
        }
        let (wal, rec) = Wal::open(&fs, path, PS, 42, Lsn(1), false).unwrap();
        assert_eq!(rec.committed_txns, 1);
        assert_eq!(wal.index.read().format, WAL_FORMAT_VERSION);
        wal.read_page(PageId(1), Lsn(3), &mut buf).unwrap();
        assert_eq!(buf, pages[0]);

        // A damaged format-1 frame is still detected (its page checksum).
        let fs = MemFileSystem::new();
        format_1_wal(&fs, path, &pages);
        flip(&fs, path, FIRST_FRAME_OFFSET + 64 + 30);
        let (_, rec) = Wal::open(&fs, path, PS, 42, Lsn(1), true).unwrap();
        assert_eq!(rec.committed_txns, 0);

        // A format-1 WAL without frames gets a format-2 header when opened for writing.
        let fs = MemFileSystem::new();
        format_1_wal(&fs, path, &[]);
        let (wal, _) = Wal::open(&fs, path, PS, 42, Lsn(1), false).unwrap();
        append_one(&wal, 1, 1, &pages[0]);
        let (_, rec) = Wal::open(&fs, path, PS, 42, Lsn(1), true).unwrap();
        assert_eq!(rec.committed_txns, 1);
    }

    /// A format-1 WAL with no frames at `path`, its header then edited by `edit` and
    /// checksummed again (a header that is well formed but says something wrong).
    fn wal_with_header(fs: &MemFileSystem, path: &Path, edit: impl FnOnce(&mut [u8])) {
        format_1_wal(fs, path, &[]);
        let f = fs.open(path, OpenOptions { create: false, lock_exclusive: false }).unwrap();
        let mut h = [0u8; WAL_HEADER_BYTES];
        f.read_exact_at(&mut h, 0).unwrap();
        edit(&mut h);
        let sum = crc32fast::hash(&h[0..HEADER_CRC_OFFSET]);
        write_u32(&mut h, HEADER_CRC_OFFSET, sum);
        f.write_at(&h, 0).unwrap();
    }

    #[test]
    fn a_header_with_a_first_lsn_out_of_range_is_refused() {
        for base in [0, MAX_BASE_LSN + 1, u64::MAX] {
            let fs = MemFileSystem::new();
            let path = Path::new("w");
            wal_with_header(&fs, path, |h| h[32..40].copy_from_slice(&base.to_le_bytes()));
            let err = Wal::open(&fs, path, PS, 42, Lsn(1), false).err().unwrap();
            assert!(err.to_string().contains("first LSN out of range"), "{base}: {err}");
        }
    }

    #[test]
    fn a_newer_format_is_refused() {
        let fs = MemFileSystem::new();
        let path = Path::new("w");
        wal_with_header(&fs, path, |h| write_u32(h, 8, WAL_FORMAT_VERSION + 1));
        let err = Wal::open(&fs, path, PS, 42, Lsn(1), false).err().unwrap();
        assert!(err.to_string().contains("newer than this build"), "{err}");
        let fs = MemFileSystem::new();
        wal_with_header(&fs, path, |h| write_u32(h, 8, 0));
        let err = Wal::open(&fs, path, PS, 42, Lsn(1), false).err().unwrap();
        assert!(err.to_string().contains("which no build writes"), "{err}");
    }

    /// One seeded change to heap page `page`: a tuple inserted (when it fits), removed,
    /// or rewritten in place with a few bytes changed (as an UPDATE of a fixed-width
    /// column), or, now and then, several at once.
    fn change(rng: &mut rand::rngs::StdRng, page: &mut [u8], id: PageId) {
        use rand::Rng;
        for _ in 0..if rng.random_range(0..8) == 0 { 20 } else { 1 } {
            let live: Vec<(crate::ids::SlotId, Vec<u8>)> = heap_page::live_tuples(page, id)
                .unwrap()
                .map(|(s, t)| (s, t.to_vec()))
                .collect();
            match rng.random_range(0..4) {
                0 | 1 if !live.is_empty() => {
                    let (slot, mut t) = live[rng.random_range(0..live.len())].clone();
                    let at = rng.random_range(4..t.len().max(5));
                    let end = (at + rng.random_range(1..9)).min(t.len());
                    for b in &mut t[at.min(end)..end] {
                        *b = rng.random();
                    }
                    assert!(heap_page::replace(page, id, slot, &t).unwrap());
                }
                2 if !live.is_empty() && rng.random_bool(0.5) => {
                    heap_page::remove(page, id, live[rng.random_range(0..live.len())].0).unwrap();
                }
                _ => {
                    let mut t: Vec<u8> = (0..rng.random_range(8..300)).map(|_| rng.random()).collect();
                    t[..4].fill(0);
                    let _ = heap_page::insert(page, id, &t).unwrap();
                }
            }
        }
    }

    /// One seeded change to B+tree leaf `page`: a cell inserted at a random slot (when
    /// it fits; else a few removed) or removed. A removal leaves the cell's bytes as
    /// garbage and its slot's two bytes in the gap, so the base a delta is diffed
    /// against has bytes in its hole that the WAL's copy holds as zeros.
    fn change_node(rng: &mut rand::rngs::StdRng, page: &mut [u8], id: PageId) {
        use crate::btree::node;
        use rand::Rng;
        for _ in 0..if rng.random_range(0..8) == 0 { 20 } else { 1 } {
            let count = node::NodeRef::new(page, id).unwrap().count();
            if count > 0 && rng.random_bool(0.4) {
                node::remove_cell(page, id, rng.random_range(0..count)).unwrap();
                continue;
            }
            let key: Vec<u8> = (0..rng.random_range(1..40)).map(|_| rng.random()).collect();
            let val: Vec<u8> = (0..rng.random_range(0..9)).map(|_| rng.random()).collect();
            if !node::insert_leaf_entry(page, id, rng.random_range(0..=count), &key, &val).unwrap() {
                for _ in 0..count.min(5) {
                    let n = node::NodeRef::new(page, id).unwrap().count();
                    node::remove_cell(page, id, rng.random_range(0..n)).unwrap();
                }
            }
        }
    }

    /// Seeded transactions over a few heap pages and B+tree leaves of `ps` bytes, each
    /// page logged against its newest committed image as the store does; checkpoints
    /// (resets) now and then. Every version must read back as written, before and after
    /// recovery, and the log must mix full images and deltas, with chains cut at their
    /// bound. Then more transactions append deltas to the recovered log (their bases'
    /// holes as recovery read them from the frame headers), and a second recovery must
    /// read back every version again.
    fn replay_of_deltas_and_full_images(ps: usize, seed: u64) {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let fs = MemFileSystem::new();
        let path = Path::new("w");
        let (wal, _) = Wal::open(&fs, path, ps, 42, Lsn(1), false).unwrap();
        // Heap pages 1–4, B+tree leaves 5–6.
        let ids = [1u32, 2, 3, 4, 5, 6];
        let is_node = |k: usize| ids[k] >= 5;
        let mut pages: Vec<Vec<u8>> = ids
            .iter()
            .map(|&i| {
                if i >= 5 {
                    let mut p = vec![0u8; ps];
                    crate::btree::node::init_node(&mut p, PageId(i), 0, 0);
                    p
                } else {
                    heap_sized(ps, i, 3, 100)
                }
            })
            .collect();
        // Newest committed version of each page: (LSN, image as written).
        let mut newest: Vec<Option<(Lsn, Vec<u8>)>> = vec![None; ids.len()];
        // Every version of the current generation, to read back.
        let mut written: Vec<(PageId, Lsn, Vec<u8>)> = Vec::new();
        let mut max_depth = 0u16;
        let mut node_deltas = 0u64;
        let mut run = |wal: &Wal, txns: std::ops::RangeInclusive<u64>, resets: bool, written: &mut Vec<(PageId, Lsn, Vec<u8>)>| {
            for txn in txns {
                if resets && rng.random_range(0..60) == 0 {
                    wal.reset(u64::MAX).unwrap();
                    newest.iter_mut().for_each(|n| *n = None);
                    written.clear();
                }
                let chosen: Vec<usize> = (0..ids.len()).filter(|_| rng.random_bool(0.6)).collect();
                if chosen.is_empty() {
                    continue;
                }
                for &k in &chosen {
                    if is_node(k) {
                        change_node(&mut rng, &mut pages[k], PageId(ids[k]));
                    } else {
                        change(&mut rng, &mut pages[k], PageId(ids[k]));
                    }
                }
                let writes: Vec<FrameWrite<'_>> = chosen
                    .iter()
                    .map(|&k| FrameWrite {
                        page: PageId(ids[k]),
                        image: &pages[k],
                        base: newest[k].as_ref().map(|(l, img)| (*l, img.as_slice())),
                    })
                    .collect();
                let lsns = wal.append(TxnId(txn), &writes, Some(7)).unwrap();
                drop(writes);
                let published: Vec<(PageId, Lsn)> = chosen.iter().map(|&k| PageId(ids[k])).zip(lsns.iter().copied()).collect();
                wal.publish(&published);
                for (&k, &lsn) in chosen.iter().zip(&lsns) {
                    newest[k] = Some((lsn, pages[k].clone()));
                    written.push((PageId(ids[k]), lsn, logged(&pages[k])));
                    let meta = wal.index.read().frames[(lsn.0 - wal.index.read().base.0) as usize];
                    max_depth = max_depth.max(meta.depth);
                    node_deltas += u64::from(is_node(k) && meta.depth > 0);
                }
            }
        };
        run(&wal, 1..=300, true, &mut written);
        let deltas = wal.delta_frames.load(Ordering::Relaxed);
        assert!(deltas > 100, "{deltas} deltas");
        let mut buf = vec![0u8; ps];
        let check = |wal: &Wal, buf: &mut Vec<u8>, written: &[(PageId, Lsn, Vec<u8>)]| {
            for (page, lsn, image) in written {
                wal.read_page(*page, *lsn, buf).unwrap();
                assert!(buf == image, "page {page} at {lsn}");
            }
        };
        check(&wal, &mut buf, &written);
        drop(wal);
        let (wal, rec) = Wal::open(&fs, path, ps, 42, Lsn(1), false).unwrap();
        assert!(rec.delta_frames > 0 && rec.delta_frames < wal.frame_count(), "{rec:?}");
        check(&wal, &mut buf, &written);
        for (page, lsn, _) in &written {
            assert!(wal.version_for(*page, *lsn) == *lsn);
        }
        // Deltas on the recovered frames, then recovery again.
        let before = wal.delta_frames.load(Ordering::Relaxed);
        run(&wal, 301..=360, false, &mut written);
        assert!(wal.delta_frames.load(Ordering::Relaxed) > before, "deltas on recovered bases");
        check(&wal, &mut buf, &written);
        drop(wal);
        let (wal, _) = Wal::open(&fs, path, ps, 42, Lsn(1), true).unwrap();
        check(&wal, &mut buf, &written);
        drop(run);
        assert_eq!(max_depth, MAX_DELTA_CHAIN, "chains reach their bound and are cut there");
        assert!(node_deltas > 20, "{node_deltas} B+tree node deltas");
    }

    #[test]
    fn a_wal_mixing_full_images_and_deltas_replays_the_pages_written() {
        for seed in 0..6 {
            replay_of_deltas_and_full_images(PS, seed);
        }
        replay_of_deltas_and_full_images(8192, 6);
        replay_of_deltas_and_full_images(65536, 7);
    }

    #[test]
    fn diff_ranges_cover_exactly_the_changed_bytes() {
        let base = heap(1, 3, 100);
        let mut new = base.clone();
        // An 8-byte change inside the third tuple: one range of those 8 bytes.
        let at = PS - 3 * 104 + 20;
        new[at..at + 8].copy_from_slice(&[9; 8]);
        let mut ranges = Vec::new();
        let n = diff_ranges(&new, hole_of(&new), &base, hole_of(&base), PS, &mut ranges).unwrap();
        assert_eq!(ranges, vec![(at as u32, 8)]);
        assert_eq!(n, DELTA_HEADER_BYTES + RANGE_HEADER_BYTES + 8);
        // Bytes in the base's hole count as zeros (the WAL holds zeros there): a tuple
        // inserted over garbage is logged whole even where it equals the garbage.
        let mut garbage = base.clone();
        let (off, len) = hole_of(&garbage);
        garbage[off..off + len].fill(7);
        let mut new = base.clone();
        let t = vec![7u8; 100];
        heap_page::insert(&mut new, PageId(1), &t).unwrap();
        diff_ranges(&new, hole_of(&new), &garbage, hole_of(&garbage), PS, &mut ranges).unwrap();
        let mut rebuilt = logged(&base);
        let mut body = vec![0u8; DELTA_HEADER_BYTES];
        write_u16(&mut body, 14, ranges.len() as u16);
        for &(o, l) in &ranges {
            body.extend_from_slice(&o.to_le_bytes());
            body.extend_from_slice(&l.to_le_bytes());
            body.extend_from_slice(&new[o as usize..(o + l) as usize]);
        }
        let n = body.len() as u32;
        write_u32(&mut body, 8, n);
        assert!(delta_body_ok(&body, PS));
        let (ho, hl) = hole_of(&new);
        apply_delta(&body, &mut rebuilt, ho, hl);
        assert_eq!(rebuilt, logged(&new));
        // Past the limit: no delta.
        assert!(diff_ranges(&new, hole_of(&new), &garbage, hole_of(&garbage), 40, &mut ranges).is_none());
    }

    /// Page 1 full (txn 1), page 1 as a delta (txn 2), page 2 full (txn 3), page 1 as a
    /// delta on txn 2's (txn 4). Returns each frame's offset, synced when `sync`.
    fn chain_of_deltas(fs: &MemFileSystem, path: &Path, sync: bool) -> (Vec<u64>, Vec<Vec<u8>>) {
        let (wal, _) = Wal::open(fs, path, PS, 42, Lsn(1), false).unwrap();
        let mut p1 = heap(1, 4, 100);
        let mut images = vec![p1.clone()];
        let mut offs = Vec::new();
        let mut prev: Option<(Lsn, Vec<u8>)> = None;
        for txn in 1..=4u64 {
            let (page, image) = if txn == 3 {
                (2, heap(2, 2, 50))
            } else {
                if txn > 1 {
                    p1[PS - 50] = txn as u8;
                }
                (1, p1.clone())
            };
            let w = [FrameWrite {
                page: PageId(page),
                image: &image,
                base: if page == 1 { prev.as_ref().map(|(l, i)| (*l, i.as_slice())) } else { None },
            }];
            let lsn = wal.append(TxnId(txn), &w, Some(3)).unwrap()[0];
            wal.publish(&[(PageId(page), lsn)]);
            if sync {
                wal.sync_to(lsn).unwrap();
            }
            let meta = wal.index.read().frames[(lsn.0 - 1) as usize];
            assert_eq!(meta.depth, [0, 1, 0, 2][txn as usize - 1], "txn {txn}");
            offs.push(meta.offset);
            if page == 1 {
                prev = Some((lsn, image.clone()));
            }
            if txn > 1 {
                images.push(image);
            }
        }
        (offs, images)
    }

    #[test]
    fn a_damaged_delta_or_base_is_detected_and_not_replayed() {
        let path = Path::new("w");
        // Intact: four transactions, page 1 read back through its chain.
        let fs = MemFileSystem::new();
        let (_, images) = chain_of_deltas(&fs, path, false);
        let (wal, rec) = Wal::open(&fs, path, PS, 42, Lsn(1), true).unwrap();
        assert_eq!((rec.committed_txns, rec.delta_frames), (4, 2));
        let mut buf = vec![0u8; PS];
        wal.read_page(PageId(1), Lsn(4), &mut buf).unwrap();
        assert_eq!(buf, logged(&images[3]));
        wal.read_page(PageId(1), Lsn(2), &mut buf).unwrap();
        assert_eq!(buf, logged(&images[1]));
        // A byte of a delta's body (its base LSN, a range header, a changed byte) or
        // header: never synced, a torn tail; that frame and all after it are dropped.
        for at in [64 + 2, 64 + 17, 64 + 24, 20] {
            let fs = MemFileSystem::new();
            let (offs, _) = chain_of_deltas(&fs, path, false);
            flip(&fs, path, offs[1] + at);
            let (wal, rec) = Wal::open(&fs, path, PS, 42, Lsn(1), true).unwrap();
            assert_eq!(rec.committed_txns, 1, "byte {at}");
            assert_eq!(wal.version_for(PageId(1), Lsn(10)), Lsn(1));
            assert_eq!(wal.version_for(PageId(2), Lsn(10)), Lsn::IN_DATABASE_FILE);
        }
        // A damaged base: nothing after it either.
        let fs = MemFileSystem::new();
        let (offs, _) = chain_of_deltas(&fs, path, false);
        flip(&fs, path, offs[0] + 64 + 30);
        let (_, rec) = Wal::open(&fs, path, PS, 42, Lsn(1), true).unwrap();
        assert_eq!(rec.committed_txns, 0);
        // Synced, and a later frame vouches for it: corruption, reported.
        let fs = MemFileSystem::new();
        let (offs, _) = chain_of_deltas(&fs, path, true);
        flip(&fs, path, offs[1] + 64 + 24);
        let err = Wal::open(&fs, path, PS, 42, Lsn(1), true).err().unwrap();
        assert!(matches!(err, Error::CorruptWal { frame: 1, page: PageId(1), .. }), "{err}");
        // Damaged after open: reading through the chain refuses the page; a version
        // before the damage still reads.
        let fs = MemFileSystem::new();
        chain_of_deltas(&fs, path, true);
        let (wal, _) = Wal::open(&fs, path, PS, 42, Lsn(1), true).unwrap();
        flip(&fs, path, offs[1] + 64 + 24);
        let err = wal.read_page(PageId(1), Lsn(4), &mut buf).unwrap_err();
        assert!(err.to_string().contains("delta frame 2"), "{err}");
        wal.read_page(PageId(1), Lsn(1), &mut buf).unwrap();
        flip(&fs, path, offs[0] + 64 + 30);
        assert!(wal.read_page(PageId(1), Lsn(4), &mut buf).is_err(), "a damaged base");
        // A delta whose base is not its page's newest committed frame ends the log: here
        // txn 4's delta is edited to name txn 1's frame, its checksum made good again.
        let fs = MemFileSystem::new();
        let (offs, _) = chain_of_deltas(&fs, path, false);
        let f = fs.open(path, OpenOptions { create: false, lock_exclusive: false }).unwrap();
        let mut frame = vec![0u8; 512];
        f.read_exact_at(&mut frame, offs[3]).unwrap();
        write_u64(&mut frame, 64, 1);
        let n = read_u32(&frame, 64 + 8) as usize;
        let sum = frame_checksum(&frame[..64], &frame[64..64 + n], 0, 0);
        write_u32(&mut frame, FRAME_CRC_OFFSET, sum);
        f.write_at(&frame, offs[3]).unwrap();
        let (_, rec) = Wal::open(&fs, path, PS, 42, Lsn(1), true).unwrap();
        assert_eq!(rec.committed_txns, 3);
    }

    #[test]
    fn a_format_2_wal_is_read_and_a_delta_in_it_is_not() {
        let path = Path::new("w");
        let fs = MemFileSystem::new();
        let (_, images) = chain_of_deltas(&fs, path, false);
        wal_with_header_version(&fs, path, WAL_FORMAT_V2);
        // Format 2 had no deltas: the log ends at the first one (frame 1).
        let (wal, rec) = Wal::open(&fs, path, PS, 42, Lsn(1), true).unwrap();
        assert_eq!((rec.committed_txns, rec.delta_frames), (1, 0));
        let mut buf = vec![0u8; PS];
        wal.read_page(PageId(1), Lsn(1), &mut buf).unwrap();
        assert_eq!(buf, logged(&images[0]));
        drop(wal);
        // Opened for writing: no format-3 frame follows format-2 ones; after the reset
        // (the store's recovery checkpoint) the generation is format 3.
        let (wal, _) = Wal::open(&fs, path, PS, 42, Lsn(1), false).unwrap();
        let w = [FrameWrite { page: PageId(1), image: &images[0], base: None }];
        assert!(wal.append(TxnId(9), &w, Some(3)).is_err());
        wal.reset(u64::MAX).unwrap();
        append_one(&wal, 9, 1, &images[0]);
        drop(wal);
        let (wal, rec) = Wal::open(&fs, path, PS, 42, Lsn(1), true).unwrap();
        assert_eq!((rec.committed_txns, wal.index.read().format), (1, WAL_FORMAT_VERSION));
    }

    /// Rewrites the version in the header of the WAL at `path` (checksummed again).
    fn wal_with_header_version(fs: &MemFileSystem, path: &Path, version: u32) {
        let f = fs.open(path, OpenOptions { create: false, lock_exclusive: false }).unwrap();
        let mut h = [0u8; WAL_HEADER_BYTES];
        f.read_exact_at(&mut h, 0).unwrap();
        write_u32(&mut h, 8, version);
        let sum = crc32fast::hash(&h[0..HEADER_CRC_OFFSET]);
        write_u32(&mut h, HEADER_CRC_OFFSET, sum);
        f.write_at(&h, 0).unwrap();
    }
}
