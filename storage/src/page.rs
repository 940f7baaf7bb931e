//! Pages: the unit of I/O, caching and versioning.
//!
//! Every page, whatever it holds, starts with the same 16-byte header:
//!
//! | offset | size | field          | meaning                                                        |
//! |-------:|-----:|----------------|----------------------------------------------------------------|
//! | 0      | 4    | checksum       | CRC-32 of bytes 4..page_size, set when the page is written to the database file |
//! | 4      | 4    | page_id        | the page's own number: catches misdirected writes and reads     |
//! | 8      | 1    | kind           | [`PageKind`]                                                   |
//! | 9      | 1    | format_version | [`PAGE_FORMAT_VERSION`] of the code that formatted the page     |
//! | 10     | 2    | flags          | kind-specific                                                  |
//! | 12     | 4    | reserved       | zero                                                           |
//! | 16     | …    | body           | laid out by the page's kind (heap, B+tree, overflow, header…)  |
//!
//! All integers are little-endian except where a layout says otherwise (B+tree keys
//! are big-endian so they compare with `memcmp`). The checksum is computed only when a
//! page is written to the database file (a checkpoint, creation) and verified whenever
//! one is read back from it, so a flipped bit on disk is reported with the page number
//! and never used. A page image in the WAL is covered by its frame's checksum instead
//! (`wal.rs`), which leaves out the page's free gap: a commit does not pay for a CRC
//! pass over whole pages, and the checksum field of a page read from the WAL is stale
//! until the checkpoint that writes it stamps it again.

use crate::error::{Error, Result};
use crate::ids::PageId;

/// Default page size: 8 KiB, like PostgreSQL.
pub const DEFAULT_PAGE_SIZE: usize = 8192;
/// Smallest and largest page sizes a database may be created with.
pub const MIN_PAGE_SIZE: usize = 4096;
pub const MAX_PAGE_SIZE: usize = 65536;
/// Size of the common header at the start of every page.
pub const PAGE_HEADER_SIZE: usize = 16;
/// Version of the page layouts written by this build.
pub const PAGE_FORMAT_VERSION: u8 = 1;

const CHECKSUM_OFFSET: usize = 0;
const PAGE_ID_OFFSET: usize = 4;
const KIND_OFFSET: usize = 8;
const FORMAT_OFFSET: usize = 9;
const FLAGS_OFFSET: usize = 10;

/// What a page holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum PageKind {
    /// Page 0: the database header.
    DatabaseHeader = 1,
    /// On the free list, waiting to be reused.
    Free = 2,
    /// Slotted heap page of tuples.
    Heap = 3,
    /// Part of a value stored out of line.
    Overflow = 4,
    /// B+tree leaf.
    BTreeLeaf = 5,
    /// B+tree internal node.
    BTreeInternal = 6,
}

impl PageKind {
    pub fn from_u8(b: u8) -> Option<Self> {
        Some(match b {
            1 => PageKind::DatabaseHeader,
            2 => PageKind::Free,
            3 => PageKind::Heap,
            4 => PageKind::Overflow,
            5 => PageKind::BTreeLeaf,
            6 => PageKind::BTreeInternal,
            _ => return None,
        })
    }
}

/// Checks that a page size is a power of two in the supported range.
pub fn validate_page_size(page_size: usize) -> Result<()> {
    if !(MIN_PAGE_SIZE..=MAX_PAGE_SIZE).contains(&page_size) || !page_size.is_power_of_two() {
        return Err(Error::InvalidArgument(format!(
            "page size {page_size} must be a power of two between {MIN_PAGE_SIZE} and {MAX_PAGE_SIZE}"
        )));
    }
    Ok(())
}

/// Clears `page` and writes a fresh common header for `id` and `kind`.
pub fn format_page(page: &mut [u8], id: PageId, kind: PageKind) {
    page.fill(0);
    page[PAGE_ID_OFFSET..PAGE_ID_OFFSET + 4].copy_from_slice(&id.0.to_le_bytes());
    page[KIND_OFFSET] = kind as u8;
    page[FORMAT_OFFSET] = PAGE_FORMAT_VERSION;
}

/// The kind byte of a formatted page (`None` if it is not a known kind).
pub fn page_kind(page: &[u8]) -> Option<PageKind> {
    PageKind::from_u8(page[KIND_OFFSET])
}

/// Returns the kind of `page`, or a corruption error if it is not `expected`.
pub fn expect_kind(page: &[u8], id: PageId, expected: PageKind) -> Result<()> {
    match page_kind(page) {
        Some(k) if k == expected => Ok(()),
        other => Err(Error::corrupt(
            id,
            format!("expected a {expected:?} page, found {other:?}"),
        )),
    }
}

pub fn page_flags(page: &[u8]) -> u16 {
    read_u16(page, FLAGS_OFFSET)
}

pub fn set_page_flags(page: &mut [u8], flags: u16) {
    write_u16(page, FLAGS_OFFSET, flags);
}

fn compute_checksum(page: &[u8]) -> u32 {
    crc32fast::hash(&page[PAGE_ID_OFFSET..])
}

/// Stamps the checksum; called just before a page image is written to the database file.
pub fn seal_page(page: &mut [u8]) {
    let sum = compute_checksum(page);
    page[CHECKSUM_OFFSET..CHECKSUM_OFFSET + 4].copy_from_slice(&sum.to_le_bytes());
}

/// Verifies a page image read from the database file: checksum, page id, kind and
/// format version.
pub fn verify_page(page: &[u8], id: PageId) -> Result<()> {
    let stored = read_u32(page, CHECKSUM_OFFSET);
    let actual = compute_checksum(page);
    if stored != actual {
        return Err(Error::corrupt(
            id,
            format!("checksum mismatch (stored {stored:#010x}, computed {actual:#010x})"),
        ));
    }
    verify_page_fields(page, id)
}

/// Verifies the common header of a page image whose bytes a checksum other than the
/// page's own already vouched for (a WAL frame's): page id, kind and format version.
pub fn verify_page_fields(page: &[u8], id: PageId) -> Result<()> {
    let stored_id = read_u32(page, PAGE_ID_OFFSET);
    if stored_id != id.0 {
        return Err(Error::corrupt(
            id,
            format!("page claims to be page {stored_id} (misdirected write)"),
        ));
    }
    if page_kind(page).is_none() {
        return Err(Error::corrupt(
            id,
            format!("unknown page kind {}", page[KIND_OFFSET]),
        ));
    }
    if page[FORMAT_OFFSET] > PAGE_FORMAT_VERSION {
        return Err(Error::corrupt(
            id,
            format!(
                "page format version {} is newer than this build's {PAGE_FORMAT_VERSION}",
                page[FORMAT_OFFSET]
            ),
        ));
    }
    Ok(())
}

// Little-endian field access. Callers pass offsets computed from layouts whose bounds
// were checked against the page size, so slicing cannot go out of range on a page
// buffer of the database's page size.

#[inline]
pub fn read_u16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

#[inline]
pub fn write_u16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_le_bytes());
}

#[inline]
pub fn read_u32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

#[inline]
pub fn write_u32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

#[inline]
pub fn read_u64(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

#[inline]
pub fn write_u64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealed_page_verifies_and_flipped_bit_is_detected_with_page_number() {
        let mut page = vec![0u8; DEFAULT_PAGE_SIZE];
        format_page(&mut page, PageId(7), PageKind::Heap);
        page[100] = 42;
        seal_page(&mut page);
        verify_page(&page, PageId(7)).unwrap();
        for bit in [0usize, 37, 4 * 8 + 1, 8191 * 8 + 7] {
            let mut bad = page.clone();
            bad[bit / 8] ^= 1 << (bit % 8);
            let err = verify_page(&bad, PageId(7)).unwrap_err();
            assert!(err.to_string().contains("page 7"), "{err}");
        }
    }

    #[test]
    fn misdirected_page_is_detected() {
        let mut page = vec![0u8; DEFAULT_PAGE_SIZE];
        format_page(&mut page, PageId(3), PageKind::Heap);
        seal_page(&mut page);
        let err = verify_page(&page, PageId(4)).unwrap_err();
        assert!(err.to_string().contains("misdirected"), "{err}");
    }

    #[test]
    fn all_zero_page_is_rejected() {
        let page = vec![0u8; DEFAULT_PAGE_SIZE];
        assert!(verify_page(&page, PageId(0)).is_err());
    }

    #[test]
    fn page_size_validation() {
        assert!(validate_page_size(8192).is_ok());
        assert!(validate_page_size(4096).is_ok());
        assert!(validate_page_size(1000).is_err());
        assert!(validate_page_size(1 << 20).is_err());
    }
}
